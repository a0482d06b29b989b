//! The connection memory benchmark: how many bytes the fake holds for each open connection, at
//! two stages of an exec's life, with `n` connections open at once (`-- --n 2000`, default
//! 2,000; `-- --quick`: 500):
//!
//! 1. **idle**: TLS handshake done (ALPN `http/1.1`), no request sent yet: what a connection
//!    waiting for its exec request holds (rustls state and buffers, hyper's HTTP/1 connection
//!    task, the listener's bookkeeping);
//! 2. **exec**: a WebSocket exec (`v5.channel.k8s.io`, stdin, stdout and stderr) of `cat` in a
//!    running pod, once its initial message arrived: all of the above after the upgrade, plus
//!    the WebSocket reader and writer, the exec session, its channels and the `cat` process in
//!    the runtime waiting on its stdin.
//!
//! What it counts: the fake runs in this process, under `dhat`'s global allocator, and the
//! client in a child process (this binary again, with `--client`), so no client allocation is
//! counted. Each stage reports (bytes allocated and not freed with `n` connections open, minus
//! before) / `n`: bytes as requested from the allocator, not RSS, once the fake's heap stopped
//! moving; then the client closes them and the bench reports what the fake did not give back.
//! `-- --dhat FILE` also writes dhat's heap profile (per allocation site, at the peak: the
//! exec stage, or the idle one with `-- --idle-only`), for `dh_view.html`.
//! Run with `cargo bench -p fakekube --bench connmem`.

#[path = "support/client_tls.rs"]
mod client_tls;
#[path = "support/rss.rs"]
mod rss;

use client_tls::client_tls;
use fakekube::FakeKube;
use futures_util::{StreamExt, stream};
use rustls_pki_types::ServerName;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// Connections open at once per stage; `--quick`: 500.
const N: usize = 2000;
/// Connections being opened at once.
const OPENING: usize = 32;

/// Anything that can fail in the benchmark, reported and ending the run.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The value after `flag` on the command line.
fn arg(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2).find(|w| w[0] == flag).map(|w| w[1].clone())
}

fn main() -> Result<(), BoxError> {
    if std::env::args().any(|a| a == "--client") {
        return client_main();
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let idle_only = std::env::args().any(|a| a == "--idle-only");
    let n: usize = arg("--n")
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 500 } else { N });
    let _profiler = match arg("--dhat") {
        Some(file) => dhat::Profiler::builder().file_name(file).build(),
        None => dhat::Profiler::builder().testing().build(),
    };
    let server = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let kube = server.block_on(async {
        FakeKube::builder()
            .idle_timeout(Duration::from_secs(3600))
            .header_read_timeout(Duration::from_secs(3600))
            .start()
            .await
    })?;
    kube.create(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "bench", "namespace": "default" },
        "spec": { "containers": [ { "name": "main", "image": "busybox:1.36" } ] }
    }))?;
    server.block_on(
        kube.wait_for("pods", "default", "bench", Duration::from_secs(30), |p| {
            p.and_then(|p| p.pointer("/status/phase"))
                .and_then(serde_json::Value::as_str)
                == Some("Running")
        }),
    )?;
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--client", "--n", &n.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut to_client = child.stdin.take().ok_or("the client's stdin")?;
    let mut from_client = BufReader::new(child.stdout.take().ok_or("the client's stdout")?);
    // The token and CA go through a pipe, never on a command line.
    let hello = serde_json::json!({
        "addr": kube.addr().to_string(),
        "token": kube.token(),
        "ca": kube.ca_pem(),
    });
    writeln!(to_client, "{hello}")?;
    println!(
        "fakekube connection memory: {n} connections at once, bytes the fake holds per connection"
    );
    println!("(allocated and not freed in the fake's process; the client is another process)");
    let mut line = String::new();
    let stages = if idle_only { 1 } else { 2 };
    for label in [
        "idle: TLS done, no request yet",
        "exec: WebSocket v5 `cat` waiting on stdin",
    ]
    .into_iter()
    .take(stages)
    {
        expect(&mut from_client, &mut line, "ready")?;
        let before = settle();
        writeln!(to_client, "open")?;
        expect(&mut from_client, &mut line, "open")?;
        let open = settle();
        report(label, n, &before, &open);
        writeln!(to_client, "close")?;
        expect(&mut from_client, &mut line, "closed")?;
        let after = settle();
        println!(
            "  after closing: {:+.1} KiB still held",
            (after.curr_bytes as f64 - before.curr_bytes as f64) / 1024.0
        );
    }
    drop(to_client);
    child.wait()?;
    server.block_on(kube.shutdown());
    Ok(())
}

/// Reads the client's next line, which must be `want`.
fn expect(from: &mut impl BufRead, line: &mut String, want: &str) -> Result<(), BoxError> {
    line.clear();
    from.read_line(line)?;
    if line.trim() != want {
        return Err(format!("the client said {line:?}, not {want:?}").into());
    }
    Ok(())
}

/// Waits until the fake's heap stops moving (its tasks have caught up), and returns its size.
fn settle() -> dhat::HeapStats {
    let mut last = dhat::HeapStats::get();
    let began = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = dhat::HeapStats::get();
        if now.curr_bytes.abs_diff(last.curr_bytes) < 64 * 1024
            || began.elapsed() > Duration::from_secs(30)
        {
            return now;
        }
        last = now;
    }
}

/// Prints one stage's bytes per connection.
fn report(label: &str, n: usize, before: &dhat::HeapStats, open: &dhat::HeapStats) {
    let bytes = open.curr_bytes as f64 - before.curr_bytes as f64;
    let blocks = open.curr_blocks as f64 - before.curr_blocks as f64;
    println!();
    println!(
        "{label}: {:.0} B per connection in {:.1} blocks ({:.1} MiB for {n}; process RSS {} MiB)",
        bytes / n as f64,
        blocks / n as f64,
        bytes / f64::from(1 << 20),
        rss_mib(),
    );
}

/// The resident set of this process, in MiB (with dhat's own records).
fn rss_mib() -> u64 {
    rss::resident_bytes("self").map_or(0, |bytes| bytes >> 20)
}

/// The client process: reads where to connect from stdin, then per stage says `ready`, opens
/// its connections on `open` and says `open`, closes them on `close` and says `closed`.
fn client_main() -> Result<(), BoxError> {
    let n: usize = arg("--n").and_then(|v| v.parse().ok()).unwrap_or(N);
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = String::new();
    input.read_line(&mut line)?;
    let hello: serde_json::Value = serde_json::from_str(&line)?;
    let field = |k: &str| {
        hello[k]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("no {k} from the server"))
    };
    let target = Target {
        addr: field("addr")?.parse()?,
        token: field("token")?,
        tls: client_tls(&field("ca")?)?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut wait_for = |want: &str| -> Result<(), BoxError> {
        line.clear();
        input.read_line(&mut line)?;
        if line.trim() != want {
            return Err(format!("the server said {line:?}, not {want:?}").into());
        }
        Ok(())
    };
    let say = |what: &str| -> Result<(), BoxError> {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{what}")?;
        out.flush()?;
        Ok(())
    };
    runtime.block_on(async {
        // A few execs first, so that state made once (caches, pools) is not counted.
        for _ in 0..3 {
            let mut ws = open_exec(&target).await?;
            ws.close(None).await?;
            while ws.next().await.is_some() {}
        }
        Ok::<_, BoxError>(())
    })?;

    say("ready")?;
    wait_for("open")?;
    let idle = runtime.block_on(async {
        let mut idle = Vec::with_capacity(n);
        let mut opening = stream::iter(0..n)
            .map(|_| open_tls(&target))
            .buffer_unordered(OPENING);
        while let Some(c) = opening.next().await {
            idle.push(c?);
        }
        Ok::<_, BoxError>(idle)
    })?;
    say("open")?;
    wait_for("close")?;
    drop(idle);
    say("closed")?;

    say("ready")?;
    if wait_for("open").is_err() {
        // The server measures the idle stage only (`--idle-only`) and closed the pipe.
        return Ok(());
    }
    let mut execs = runtime.block_on(async {
        let mut execs = Vec::with_capacity(n);
        let mut opening = stream::iter(0..n)
            .map(|_| open_exec(&target))
            .buffer_unordered(OPENING);
        while let Some(ws) = opening.next().await {
            execs.push(ws?);
        }
        Ok::<_, BoxError>(execs)
    })?;
    say("open")?;
    wait_for("close")?;
    runtime.block_on(async {
        for ws in &mut execs {
            ws.close(None).await?;
        }
        for ws in &mut execs {
            while ws.next().await.is_some() {}
        }
        Ok::<_, BoxError>(())
    })?;
    drop(execs);
    say("closed")?;
    Ok(())
}

/// Where and how the client connects.
struct Target {
    addr: SocketAddr,
    token: String,
    tls: TlsConnector,
}

/// A TLS connection to the fake, handshake done, nothing sent.
async fn open_tls(target: &Target) -> Result<TlsStream<TcpStream>, BoxError> {
    let tcp = TcpStream::connect(target.addr).await?;
    tcp.set_nodelay(true)?;
    Ok(target
        .tls
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?)
}

/// An exec of `cat` with stdin, once its initial message arrived.
async fn open_exec(target: &Target) -> Result<WebSocketStream<TlsStream<TcpStream>>, BoxError> {
    let stream = open_tls(target).await?;
    let url = format!(
        "wss://{}/api/v1/namespaces/default/pods/bench/exec?stdin=true&stdout=true&stderr=true&command=cat",
        target.addr
    );
    let mut req = url.into_client_request()?;
    req.headers_mut()
        .insert("sec-websocket-protocol", "v5.channel.k8s.io".parse()?);
    req.headers_mut()
        .insert("authorization", format!("Bearer {}", target.token).parse()?);
    let (mut ws, _) = tokio_tungstenite::client_async(req, stream).await?;
    match ws.next().await {
        Some(Ok(Message::Binary(_))) => Ok(ws),
        other => Err(format!("expected the initial message, got {other:?}").into()),
    }
}
