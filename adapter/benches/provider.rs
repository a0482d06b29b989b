//! The adapter against an in-process fakekube, in release: create → ready (direct and warm
//! pool), exec `true` round trip, and 1,000 sandboxes created, exec'd and deleted at once
//! (nothing lost, nothing left, the process's peak RSS).
//!
//! `cargo bench -p agentsandbox --bench provider` (ci/bench.sh runs it). Client and server
//! share the process and its 2 cores, so the figures are upper bounds for either side alone.

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use fakekube::FakeKube;
use sandbox_contract::{CreateRequest, ExecRequest, Provider, SandboxId};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const NS: &str = "sandboxes";

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(i).copied().unwrap_or_default()
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

async fn provider(kube: &FakeKube, yaml: &str) -> AgentSandbox {
    let pool = PoolConfig::from_yaml(yaml).expect("pool config");
    let options = ConnectOptions::from_env()
        .with_kubeconfig_yaml(kube.kubeconfig())
        .with_env(|_| None)
        .with_service_account_dir("/nonexistent")
        .with_ready_timeout(Duration::from_secs(60));
    AgentSandbox::connect(pool, options)
        .await
        .expect("adapter connects")
}

async fn warm_pool(kube: &FakeKube, replicas: u32) {
    kube.create(json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
        "metadata": { "name": "bench", "namespace": NS },
        "spec": { "podTemplate": { "spec": { "containers": [ { "name": "main", "image": "debian:bookworm-slim",
            "command": ["/bin/sh", "-c", "while true; do sleep 3600; done"] } ] } } },
    }))
    .expect("template");
    kube.create(json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
        "metadata": { "name": "bench-warm", "namespace": NS },
        "spec": { "replicas": replicas, "sandboxTemplateRef": { "name": "bench" } },
    }))
    .expect("warm pool");
    kube.wait_for(
        "sandboxwarmpools",
        NS,
        "bench-warm",
        Duration::from_secs(30),
        |p| {
            p.and_then(|p| p.pointer("/status/readyReplicas"))
                .and_then(serde_json::Value::as_u64)
                == Some(u64::from(replicas))
        },
    )
    .await
    .expect("warm pool fills");
}

async fn create_to_ready(p: &AgentSandbox, prefix: &str, n: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let id = SandboxId::new(format!("{prefix}-{i}")).expect("id");
        let started = Instant::now();
        p.create(CreateRequest::new(id.clone()))
            .await
            .expect("create");
        samples.push(started.elapsed());
        p.delete(&id).await.expect("delete");
    }
    samples
}

fn row(what: &str, samples: &mut [Duration]) {
    let (p50, p90) = (percentile(samples, 0.5), percentile(samples, 0.9));
    println!(
        "{what:<44} {:>10.2?} {:>10.2?} {:>6}",
        p50,
        p90,
        samples.len()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let kube = FakeKube::builder()
        .namespace(NS)
        .start()
        .await
        .expect("fakekube starts");
    let direct = provider(
        &kube,
        "name: direct\ntrust: private\nconfig:\n  namespace: sandboxes\n",
    )
    .await;
    warm_pool(&kube, 4).await;
    let warm = provider(
        &kube,
        "name: warm\ntrust: private\nconfig:\n  namespace: sandboxes\n  warmPool: bench-warm\n",
    )
    .await;

    println!("agentsandbox against an in-process fakekube (2 cores shared by both)\n");
    println!(
        "{:<44} {:>10} {:>10} {:>6}",
        "operation", "median", "p90", "n"
    );
    row(
        "create -> ready, direct Sandbox",
        &mut create_to_ready(&direct, "bd", 200).await,
    );
    row(
        "create -> ready, warm pool claim (adoption)",
        &mut create_to_ready(&warm, "bw", 200).await,
    );

    let id = SandboxId::new("bexec").expect("id");
    direct
        .create(CreateRequest::new(id.clone()))
        .await
        .expect("create");
    let mut execs = Vec::new();
    for _ in 0..500 {
        let started = Instant::now();
        let out = direct
            .exec(&id, ExecRequest::new(["true"]))
            .await
            .expect("exec");
        assert_eq!(out.exit_code, 0);
        execs.push(started.elapsed());
    }
    row("exec `true` round trip", &mut execs);
    direct.delete(&id).await.expect("delete");

    // 1,000 sandboxes created, exec'd and deleted concurrently.
    let n = 1000;
    let direct = Arc::new(direct);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let p = direct.clone();
        tasks.spawn(async move {
            let id = SandboxId::new(format!("many-{i}")).expect("id");
            p.create(CreateRequest::new(id.clone())).await?;
            let out = p
                .exec(&id, ExecRequest::new(["sh", "-c", "echo $HOSTNAME"]))
                .await?;
            let ok = out.exit_code == 0 && !out.stdout.is_empty();
            p.delete(&id).await?;
            Ok::<bool, sandbox_contract::Error>(ok)
        });
    }
    let (mut ok, mut failed) = (0, Vec::new());
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(true)) => ok += 1,
            Ok(Ok(false)) => failed.push("exec output wrong".to_string()),
            Ok(Err(e)) => failed.push(e.to_string()),
            Err(e) => failed.push(e.to_string()),
        }
    }
    let elapsed = started.elapsed();
    // Only the warm pool's own members may remain.
    let left: Vec<String> = kube
        .leaks()
        .into_iter()
        .filter(|l| !l.contains("/bench-warm-"))
        .collect();
    println!(
        "\n{n} sandboxes created, exec'd and deleted at once: {ok} ok, {} failed, {} left, in {elapsed:.2?}",
        failed.len(),
        left.len()
    );
    if let Some(first) = failed.first() {
        println!("first failure: {first}");
    }
    if let Some(rss) = peak_rss_mib() {
        println!("peak RSS of the process (fakekube and adapter together): {rss:.0} MiB");
    }
    kube.shutdown().await;
}
