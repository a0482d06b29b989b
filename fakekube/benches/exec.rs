//! The exec benchmark: how long an exec of `true` takes end to end (TLS connection, WebSocket
//! upgrade, the session, the status and the closing handshake), and how fast stdout flows from
//! `head -c 100000000 /dev/zero` through a session, each next to a raw TLS baseline over
//! loopback measured in the same run: a TLS connection with a one-byte echo, and a plain copy of
//! the same 100 MB over TLS.
//!
//! The client is a minimal WebSocket client (tokio-tungstenite over tokio-rustls, trusting the
//! server's CA) offering `v5.channel.k8s.io`. Run with `cargo bench -p fakekube --bench exec`
//! (`-- --quick` for fewer runs); it prints a table and takes a few seconds. Client and server
//! share one process and one tokio runtime, as in a test suite. The raw TLS baseline is
//! `support/raw_tls.rs`, shared with the adapter's `compare` bench.

#[path = "support/percentile.rs"]
mod percentile;
#[path = "support/raw_tls.rs"]
mod raw_tls;
#[path = "support/ws_exec.rs"]
mod ws_exec;

#[path = "support/client_tls.rs"]
mod client_tls;

use client_tls::client_tls;
use fakekube::FakeKube;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use percentile::percentile;
use raw_tls::RawServer;
use std::time::{Duration, Instant};
use ws_exec::{Endpoint, exec};

/// How many execs of `true` are timed (after [`WARM_UP`] untimed ones); `--quick`: 100.
const ROUND_TRIPS: usize = 500;
/// Untimed execs first.
const WARM_UP: usize = 10;
/// Bytes of output in the throughput runs.
const BIG: usize = 100_000_000;
/// Throughput runs per row (the median is reported); `--quick`: 2.
const RUNS: usize = 5;

/// Anything that can fail in the benchmark, reported and ending the run.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), BoxError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> Result<(), BoxError> {
    let began = Instant::now();
    let quick = std::env::args().any(|a| a == "--quick");
    let (round_trips, runs) = if quick { (100, 2) } else { (ROUND_TRIPS, RUNS) };
    let kube = FakeKube::builder().start().await?;
    create_pod(&kube).await?;
    let tls = client_tls(kube.ca_pem())?;
    let authority = kube.addr().to_string();
    let to = Endpoint {
        tls: &tls,
        authority: &authority,
        host: "127.0.0.1",
        token: Some(kube.token()),
    };
    let raw = RawServer::start(BIG).await?;

    println!(
        "fakekube exec benchmark ({} cores, client and server in one process{})",
        cores(),
        if quick { ", --quick" } else { "" }
    );
    println!();
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>10}",
        "round trip", "median", "p90", "min", "max"
    );
    let mut execs = Vec::with_capacity(round_trips);
    for i in 0..WARM_UP + round_trips {
        let t = Instant::now();
        let got = exec(&to, "default", "bench", None, &["true"]).await?;
        if got.status != r#"{"metadata":{},"status":"Success"}"# {
            return Err(format!("exec of true ended with {:?}", got.status).into());
        }
        if i >= WARM_UP {
            execs.push(t.elapsed());
        }
    }
    print_latency(&format!("exec `true` ({round_trips} runs)"), &execs);
    let mut echoes = Vec::with_capacity(round_trips);
    for i in 0..WARM_UP + round_trips {
        let t = Instant::now();
        raw.echo().await?;
        if i >= WARM_UP {
            echoes.push(t.elapsed());
        }
    }
    print_latency(
        &format!("raw TLS connect + 1-byte echo ({round_trips} runs)"),
        &echoes,
    );

    println!();
    println!(
        "{:<44} {:>10} {:>10} {:>10}",
        format!("throughput (100 MB, {runs} runs)"),
        "median",
        "best",
        "time"
    );
    let command = ["head", "-c", "100000000", "/dev/zero"];
    let mut exec_runs = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let got = exec(&to, "default", "bench", None, &command).await?;
        let took = t.elapsed();
        if got.stdout_bytes != BIG {
            return Err(format!("exec delivered {} bytes", got.stdout_bytes).into());
        }
        exec_runs.push(took);
    }
    print_throughput("exec stdout, WebSocket v5 over TLS", &exec_runs);
    let mut raw_runs = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let n = raw.copy().await?;
        let took = t.elapsed();
        if n != BIG {
            return Err(format!("the raw copy delivered {n} bytes").into());
        }
        raw_runs.push(took);
    }
    print_throughput("raw TLS copy, 32 KiB writes", &raw_runs);

    kube.shutdown().await;
    println!();
    println!(
        "total benchmark time {:.1} s",
        began.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The number of CPUs the runtime may use.
fn cores() -> usize {
    std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1)
}

/// Creates pod `bench` and waits until it runs.
async fn create_pod(kube: &FakeKube) -> Result<(), BoxError> {
    let kubeconfig = Kubeconfig::from_yaml(&kube.kubeconfig())?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let pods: Api<Pod> = Api::default_namespaced(Client::try_from(config)?);
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "bench" },
        "spec": { "containers": [ { "name": "main", "image": "busybox:1.36" } ] }
    }))?;
    pods.create(&PostParams::default(), &pod).await?;
    kube.wait_for("pods", "default", "bench", Duration::from_secs(30), |p| {
        p.and_then(|p| p.pointer("/status/phase"))
            .and_then(serde_json::Value::as_str)
            == Some("Running")
    })
    .await?;
    Ok(())
}

/// Prints one latency row.
fn print_latency(label: &str, times: &[Duration]) {
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>10}",
        label,
        fmt_duration(percentile(times, 50.0)),
        fmt_duration(percentile(times, 90.0)),
        fmt_duration(percentile(times, 0.0)),
        fmt_duration(percentile(times, 100.0)),
    );
}

/// Prints one throughput row (MB/s of [`BIG`] bytes).
fn print_throughput(label: &str, times: &[Duration]) {
    let mbps = |d: Duration| BIG as f64 / 1e6 / d.as_secs_f64().max(1e-9);
    let median = percentile(times, 50.0);
    let best = percentile(times, 0.0);
    println!(
        "{:<44} {:>7.0} MB/s {:>5.0} MB/s {:>10}",
        label,
        mbps(median),
        mbps(best),
        fmt_duration(median),
    );
}

/// A duration in the unit that reads best.
fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}
