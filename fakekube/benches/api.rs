//! The fakekube API benchmark: how long a server takes to start (TLS material included) and to
//! answer a new client's first request, and how many GETs and LISTs it serves per second to
//! kube-rs clients, over HTTP/1.1 (kube's own connector) and HTTP/2 (a kube client on an
//! h2-only connector), from 1 and 16 concurrent tasks.
//!
//! Run with `cargo bench -p fakekube --bench api`; it prints a table and takes about 30 s
//! (`-- --quick`: 20 starts and 1 s cells, about 10 s).
//! Client and server share one process and one tokio runtime, so the figures are what a test
//! suite sees, not what a dedicated server could do.

#[path = "support/percentile.rs"]
mod percentile;

use fakekube::FakeKube;
use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube::client::ConfigExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use percentile::percentile;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// How many server starts are timed; `--quick`: [`QUICK_STARTS`].
const STARTS: usize = 50;
/// How long each throughput cell runs; `--quick`: [`QUICK_RUN`].
const RUN: Duration = Duration::from_secs(3);
/// [`STARTS`] under `--quick`.
const QUICK_STARTS: usize = 20;
/// [`RUN`] under `--quick`.
const QUICK_RUN: Duration = Duration::from_secs(1);
/// How long each cell warms up (connections, pools) before it is measured.
const WARM_UP: Duration = Duration::from_millis(300);
/// How many pods the LIST returns.
const LISTED_PODS: usize = 100;
/// The concurrency levels measured.
const CONCURRENCY: [usize; 2] = [1, 16];

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
    let (count, run) = if quick {
        (QUICK_STARTS, QUICK_RUN)
    } else {
        (STARTS, RUN)
    };
    let (starts, answered) = time_starts(count).await?;
    println!(
        "fakekube API benchmark ({} cores, client and server in one process; {} s per cell)",
        cores(),
        run.as_secs()
    );
    println!();
    println!(
        "server start, TLS material included ({count} starts): {}",
        spread(&starts)
    );
    println!(
        "server start to /version answered, a new client's TLS connection included: {}",
        spread(&answered)
    );
    println!();

    let kube = FakeKube::builder().start().await?;
    let setup = client_http1(&kube).await?;
    let pods: Api<Pod> = Api::default_namespaced(setup);
    for i in 0..LISTED_PODS {
        pods.create(&PostParams::default(), &pod(&format!("bench-{i:03}"))?)
            .await?;
    }
    let clients: [(&str, Client); 2] = [
        ("HTTP/1.1", client_http1(&kube).await?),
        ("HTTP/2", client_http2(&kube).await?),
    ];

    println!(
        "{:<9} {:<24} {:>5} {:>10} {:>10} {:>10}",
        "protocol", "operation", "tasks", "req/s", "p50", "p99"
    );
    for (proto, client) in &clients {
        for op in [Op::Get, Op::List, Op::ListUnparsed] {
            for tasks in CONCURRENCY {
                let cell = measure(client, op, tasks, run).await?;
                println!(
                    "{:<9} {:<24} {:>5} {:>10.0} {:>10} {:>10}",
                    proto,
                    op.label(),
                    tasks,
                    cell.per_second,
                    fmt_duration(cell.p50),
                    fmt_duration(cell.p99),
                );
            }
        }
    }
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

/// Times `count` server starts, each followed by an untimed shutdown: until `start` returns,
/// and until a new kube client has its answer to `GET /version` (the client made from the
/// server's kubeconfig, its TLS connection and the request included).
async fn time_starts(count: usize) -> Result<(Vec<Duration>, Vec<Duration>), BoxError> {
    let mut started = Vec::with_capacity(count);
    let mut answered = Vec::with_capacity(count);
    for _ in 0..count {
        let t = Instant::now();
        let kube = FakeKube::builder().start().await?;
        started.push(t.elapsed());
        client_http1(&kube).await?.apiserver_version().await?;
        answered.push(t.elapsed());
        kube.shutdown().await;
    }
    Ok((started, answered))
}

/// The median, p90, least and greatest of `samples`, for a line of the table.
fn spread(samples: &[Duration]) -> String {
    format!(
        "median {}, p90 {}, min {}, max {}",
        fmt_duration(percentile(samples, 50.0)),
        fmt_duration(percentile(samples, 90.0)),
        fmt_duration(percentile(samples, 0.0)),
        fmt_duration(percentile(samples, 100.0)),
    )
}

/// A duration in the unit that suits it.
fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// A Pod for the LIST to return.
fn pod(name: &str) -> Result<Pod, BoxError> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "labels": { "app": "bench" } },
        "spec": { "containers": [{ "name": "main", "image": "busybox:1.36" }] },
    }))?)
}

/// The operation a cell measures.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// GET of one pod.
    Get,
    /// LIST of every pod in the namespace.
    List,
    /// The same LIST, its body read but not parsed: the server and the connection without
    /// the client's decoding of 100 pods (which is most of a LIST's time once the server
    /// answers from its cache of written revisions).
    ListUnparsed,
}

impl Op {
    /// The table's label.
    fn label(self) -> String {
        match self {
            Op::Get => "GET pod".into(),
            Op::List => format!("LIST {LISTED_PODS} pods"),
            Op::ListUnparsed => format!("LIST {LISTED_PODS}, unparsed"),
        }
    }

    /// Runs the operation once.
    async fn once(self, pods: &Api<Pod>, client: &Client) -> Result<(), kube::Error> {
        match self {
            Op::Get => pods.get("bench-000").await.map(drop),
            Op::List => {
                let list = pods.list(&ListParams::default()).await?;
                debug_assert_eq!(list.items.len(), LISTED_PODS);
                Ok(())
            }
            Op::ListUnparsed => {
                let request = http::Request::get(format!(
                    "/api/v1/namespaces/{}/pods",
                    client.default_namespace()
                ))
                .body(Vec::new())
                .map_err(kube::Error::HttpError)?;
                let body = client.request_text(request).await?;
                debug_assert!(body.starts_with(r#"{"kind":"PodList""#));
                Ok(())
            }
        }
    }
}

/// The result of one throughput cell.
struct Cell {
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

/// Runs `op` from `tasks` concurrent tasks sharing `client` for `run`, after a warm-up.
async fn measure(client: &Client, op: Op, tasks: usize, run: Duration) -> Result<Cell, BoxError> {
    let run_for = |client: Client, how_long: Duration| async move {
        let pods: Api<Pod> = Api::default_namespaced(client.clone());
        let mut latencies = Vec::new();
        let end = Instant::now() + how_long;
        while Instant::now() < end {
            let t = Instant::now();
            op.once(&pods, &client).await?;
            latencies.push(t.elapsed());
        }
        Ok::<_, kube::Error>(latencies)
    };
    let spawn_all = |how_long: Duration| {
        (0..tasks)
            .map(|_| tokio::spawn(run_for(client.clone(), how_long)))
            .collect::<Vec<_>>()
    };
    for handle in spawn_all(WARM_UP) {
        handle.await??;
    }
    let began = Instant::now();
    let mut latencies = Vec::new();
    for handle in spawn_all(run) {
        latencies.extend(handle.await??);
    }
    let elapsed = began.elapsed().as_secs_f64();
    Ok(Cell {
        per_second: latencies.len() as f64 / elapsed,
        p50: percentile(&latencies, 50.0),
        p99: percentile(&latencies, 99.0),
    })
}

/// kube's config for `kube`, from the kubeconfig the server writes.
async fn config(kube: &FakeKube) -> Result<Config, BoxError> {
    let kubeconfig = Kubeconfig::from_yaml(&kube.kubeconfig())?;
    Ok(Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

/// A kube client as kube builds it: its rustls connector speaks HTTP/1.1 only.
async fn client_http1(kube: &FakeKube) -> Result<Client, BoxError> {
    Ok(Client::try_from(config(kube).await?)?)
}

/// A kube client over an HTTP/2-only connection pool (kube itself offers no HTTP/2), built
/// from kube's own TLS settings, base-URI and auth layers.
async fn client_http2(kube: &FakeKube) -> Result<Client, BoxError> {
    let config = config(kube).await?;
    let mut tls = config.rustls_client_config()?;
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let connector = H2Connector {
        tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
        addr: kube.addr(),
    };
    let hyper_client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build::<_, kube::client::Body>(connector);
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .map_err(BoxError::from)
        .service(hyper_client);
    Ok(Client::new(service, config.default_namespace))
}

/// Connects to the server over TLS and insists on ALPN `h2`.
#[derive(Clone)]
struct H2Connector {
    tls: tokio_rustls::TlsConnector,
    addr: SocketAddr,
}

impl tower::Service<Uri> for H2Connector {
    type Response = H2Stream;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<H2Stream, std::io::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let tls = self.tls.clone();
        let addr = self.addr;
        Box::pin(async move {
            let tcp = TcpStream::connect(addr).await?;
            tcp.set_nodelay(true)?;
            let name = rustls_pki_types::ServerName::IpAddress(addr.ip().into());
            let stream = tls.connect(name, tcp).await?;
            if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
                return Err(std::io::Error::other("the server did not choose HTTP/2"));
            }
            Ok(H2Stream(TokioIo::new(stream)))
        })
    }
}

/// A TLS connection on which HTTP/2 was negotiated.
struct H2Stream(TokioIo<tokio_rustls::client::TlsStream<TcpStream>>);

impl Connection for H2Stream {
    fn connected(&self) -> Connected {
        Connected::new().negotiated_h2()
    }
}

impl hyper::rt::Read for H2Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for H2Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
}
