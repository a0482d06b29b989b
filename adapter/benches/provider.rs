//! The adapter against an in-process fakekube, in release: create → ready (direct and warm
//! pool), exec `true` round trip, one command through an already open shell session next to
//! a fresh exec of the same command, and 1,000 sandboxes created, exec'd and deleted at once
//! (nothing lost, nothing left), in this process and then against the fakekube binary, whose
//! peak RSS is then its own.
//!
//! `cargo bench -p agentsandbox --bench provider` (ci/bench.sh runs it, after building the
//! release fakekube binary); `-- --quick` times 50 creates and 100 round trips instead of 200
//! and 500 (the 1,000 sandboxes stay); `-- --creates-only` stops after the create -> ready
//! rows. Client and server share the 2 cores, so the figures are upper bounds for either side
//! alone.

#[path = "support/fakekube_process.rs"]
mod fakekube_process;
#[path = "support/many.rs"]
mod many;

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use fakekube::FakeKube;
use fakekube_process::FakeKubeProcess;
use many::many;
use sandbox_contract::{CreateRequest, ExecEvent, ExecRequest, Provider, SandboxId};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const NS: &str = "sandboxes";

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(i).copied().unwrap_or_default()
}

/// The peak resident set of process `pid` (`self` for this one), from `/proc`.
fn peak_rss_mib(pid: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

const DIRECT: &str = "name: direct\ntrust: private\nconfig:\n  namespace: sandboxes\n  features: exec,exec.stream,files,stdin\n";

async fn provider(kube: &FakeKube, yaml: &str) -> AgentSandbox {
    provider_for(&kube.kubeconfig(), yaml).await
}

async fn provider_for(kubeconfig: &str, yaml: &str) -> AgentSandbox {
    let pool = PoolConfig::from_yaml(yaml).expect("pool config");
    let options = ConnectOptions::from_env()
        .with_kubeconfig_yaml(kubeconfig)
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
    let quick = std::env::args().any(|a| a == "--quick");
    let creates_only = std::env::args().any(|a| a == "--creates-only");
    let (creates, round_trips) = if quick { (50, 100) } else { (200, 500) };
    let kube = FakeKube::builder()
        .namespace(NS)
        .start()
        .await
        .expect("fakekube starts");
    let direct = provider(&kube, DIRECT).await;
    warm_pool(&kube, 4).await;
    let warm = provider(
        &kube,
        "name: warm\ntrust: private\nconfig:\n  namespace: sandboxes\n  warmPool: bench-warm\n",
    )
    .await;

    println!(
        "agentsandbox against an in-process fakekube ({} cores shared by both{})\n",
        std::thread::available_parallelism().map_or(1, usize::from),
        if quick { ", --quick" } else { "" }
    );
    println!(
        "{:<44} {:>10} {:>10} {:>6}",
        "operation", "median", "p90", "n"
    );
    row(
        "create -> ready, direct Sandbox",
        &mut create_to_ready(&direct, "bd", creates).await,
    );
    // The direct Sandboxes deleted last are still being torn down (pods ending, garbage
    // collected): the next row starts once they are gone, so it does not time their teardown.
    let left = left_after_cleanup(&kube).await;
    if left > 0 {
        println!("({left} objects of the direct Sandboxes were still there after 10 s)");
    }
    row(
        "create -> ready, warm pool claim (adoption)",
        &mut create_to_ready(&warm, "bw", creates).await,
    );

    if creates_only {
        kube.shutdown().await;
        return;
    }

    let id = SandboxId::new("bexec").expect("id");
    direct
        .create(CreateRequest::new(id.clone()))
        .await
        .expect("create");
    let mut execs = Vec::new();
    for _ in 0..round_trips {
        let started = Instant::now();
        let out = direct
            .exec(&id, ExecRequest::new(["true"]))
            .await
            .expect("exec");
        assert_eq!(out.exit_code, 0);
        execs.push(started.elapsed());
    }
    row("exec `true` round trip", &mut execs);
    let (mut fresh, mut session) = shell_round_trips(&direct, &id, round_trips).await;
    row("exec `sh -c 'echo x'`, fresh exec", &mut fresh);
    row("`echo x` through an open `sh` session", &mut session);
    direct.delete(&id).await.expect("delete");

    // 1,000 sandboxes created, exec'd and deleted concurrently, first against the fake in this
    // process, then (when it is built) against the fakekube binary, whose RSS is its own.
    let direct = Arc::new(direct);
    let outcome = many(&direct, 1000).await;
    let left = left_after_cleanup(&kube).await;
    outcome.print("in this process", left);
    if let Some(rss) = peak_rss_mib("self") {
        println!("peak RSS of this process (fakekube and adapter together): {rss:.0} MiB");
    }
    kube.shutdown().await;
    match FakeKubeProcess::binary() {
        Some(bin) => {
            let child = FakeKubeProcess::start(&bin, &[NS]).expect("the fakekube binary starts");
            println!(
                "\nthe fakekube binary printed its URL {:.1?} after its spawn",
                child.listening_after()
            );
            let kubeconfig =
                std::fs::read_to_string(child.kubeconfig_path()).expect("the kubeconfig");
            let p = Arc::new(provider_for(&kubeconfig, DIRECT).await);
            let outcome = many(&p, 1000).await;
            let left = p
                .list_created()
                .await
                .expect("list what the pool created")
                .len();
            outcome.print("against the fakekube binary", left);
            match peak_rss_mib(&child.pid().to_string()) {
                Some(rss) => println!("peak RSS of the fakekube process alone: {rss:.0} MiB"),
                None => println!("peak RSS of the fakekube process: unreadable"),
            }
        }
        None => println!(
            "\nthe fakekube binary is not built (cargo build --release -p fakekube; ci/bench.sh does): \
             its own RSS is not measured"
        ),
    }
}

/// Round trips of one command: `n` fresh execs of `sh -c 'echo x'`, then `n` writes of
/// `echo x` to one `sh` kept open (exec_stream with streamed stdin), each timed from the write
/// to its answer.
async fn shell_round_trips(
    p: &AgentSandbox,
    id: &SandboxId,
    n: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut fresh = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let out = p
            .exec(id, ExecRequest::new(["sh", "-c", "echo x"]))
            .await
            .expect("exec");
        assert_eq!(&out.stdout[..], b"x\n");
        fresh.push(started.elapsed());
    }
    let mut session = p
        .exec_stream(id, ExecRequest::new(["sh"]).with_streamed_stdin())
        .await
        .expect("exec_stream");
    let mut stdin = session.take_stdin().expect("a stdin handle");
    let mut open = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        stdin.send("echo x\n").await.expect("stdin send");
        let mut got = Vec::new();
        while got.len() < 2 {
            match session.next_event().await {
                Some(Ok(ExecEvent::Stdout(chunk))) => got.extend_from_slice(&chunk),
                other => panic!("expected the answer, got {other:?}"),
            }
        }
        assert_eq!(got, b"x\n");
        open.push(started.elapsed());
    }
    stdin.send("exit 0\n").await.expect("stdin send");
    while let Some(event) = session.next_event().await {
        if matches!(event, Ok(ExecEvent::Exit(_)) | Err(_)) {
            break;
        }
    }
    (fresh, open)
}

/// What the 1,000-sandbox run left in the in-process fake, the warm pool's own members aside,
/// once the cluster has had up to 10 s to finish what the deletes started: garbage collection
/// and pods' graceful termination go on after the calls return, as on a cluster, and the
/// controllers run on their own thread.
async fn left_after_cleanup(kube: &FakeKube) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = kube
            .leaks()
            .into_iter()
            .filter(|l| !l.contains("/bench-warm-"))
            .count();
        if left == 0 || Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
