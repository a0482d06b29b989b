//! The `fakekube record` and `fakekube replay` subcommands: their arguments (for clap) and
//! what they run until told to stop.

use std::future::Future;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::format::{Cassette, DEFAULT_CLIENT};
use crate::kubeconfig::Kubeconfig;
use crate::player::Pacing;
use crate::proxy::{Proxy, causes};
use crate::recorder::Recorder;
use crate::replay::{Replay, ReplayOptions, ReplaySummary};

/// Records a client's exchanges with a cluster: serves a TLS proxy on loopback, writes a
/// kubeconfig for it, and records everything through it into a cassette until SIGINT or
/// SIGTERM.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// The kubeconfig of the cluster to record (its current context; token or client
    /// certificate).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: PathBuf,
    /// Where to write the cassette (JSON Lines).
    #[arg(long, value_name = "PATH")]
    pub cassette: PathBuf,
    /// Write the kubeconfig clients use to reach the proxy to this path.
    #[arg(long, value_name = "PATH")]
    pub client_kubeconfig: Option<PathBuf>,
    /// The name the client's exchanges are recorded under.
    #[arg(long, default_value = DEFAULT_CLIENT)]
    pub client: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub address: IpAddr,
}

/// Serves a cassette back: answers each request with the recorded exchange it matches, and
/// stops (exit status 1) at the first request that matches none, printing it beside the
/// nearest recorded one.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The cassette to serve.
    #[arg(value_name = "CASSETTE")]
    pub cassette: PathBuf,
    /// Write a kubeconfig for the recorded client `default` (or the only client) to this path.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Write a kubeconfig for each recorded client to DIR/CLIENT.kubeconfig.
    #[arg(long, value_name = "DIR")]
    pub kubeconfig_dir: Option<PathBuf>,
    /// Send streamed events and frames as fast as the client reads, not at the recorded pace.
    #[arg(long)]
    pub fast: bool,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub address: IpAddr,
}

/// Runs `fakekube record` until `stop` completes. Prints `fakekube record listening on URL`
/// once it serves, and what it recorded when it stops.
pub async fn record(args: RecordArgs, stop: impl Future<Output = ()>) -> ExitCode {
    let fail = |what: &str, e: &dyn std::error::Error| {
        eprintln!("fakekube record: {what}: {}", causes(e));
        ExitCode::FAILURE
    };
    let upstream = match Kubeconfig::from_path(&args.kubeconfig) {
        Ok(k) => k,
        Err(e) => return fail(&args.kubeconfig.display().to_string(), &e),
    };
    let recorder = match Recorder::create(&args.cassette) {
        Ok(r) => r,
        Err(e) => return fail("the cassette", &e),
    };
    let bind = SocketAddr::new(args.address, args.port);
    let proxy = match Proxy::start(&upstream, &recorder, &args.client, bind).await {
        Ok(p) => p,
        Err(e) => return fail("starting the proxy", &e),
    };
    if let Some(path) = &args.client_kubeconfig
        && let Err(e) = std::fs::write(path, proxy.kubeconfig())
    {
        return fail(&format!("writing {}", path.display()), &e);
    }
    println!(
        "fakekube record listening on {}, recording {} into {}",
        proxy.base_url(),
        upstream.server(),
        args.cassette.display()
    );
    let _ = std::io::stdout().flush();
    stop.await;
    proxy.shutdown().await;
    match recorder.finish() {
        Ok(summary) => {
            println!("fakekube record: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => fail("the cassette", &e),
    }
}

/// Runs `fakekube replay` until `stop` completes or a request matches nothing. Prints
/// `fakekube replay listening on URL` once it serves.
pub async fn replay(args: ReplayArgs, stop: impl Future<Output = ()>) -> ExitCode {
    let fail = |what: &str, e: &dyn std::error::Error| {
        eprintln!("fakekube replay: {what}: {}", causes(e));
        ExitCode::FAILURE
    };
    let cassette = match Cassette::load(&args.cassette) {
        Ok(c) => c,
        Err(e) => return fail(&args.cassette.display().to_string(), &e),
    };
    let options = ReplayOptions {
        bind: SocketAddr::new(args.address, args.port),
        pacing: if args.fast {
            Pacing::Immediate
        } else {
            Pacing::Recorded
        },
    };
    let replay = match Replay::start(&cassette, options).await {
        Ok(r) => r,
        Err(e) => return fail("starting", &e),
    };
    if let Err((path, e)) = write_kubeconfigs(&replay, &args) {
        return fail(&format!("writing {}", path.display()), &e);
    }
    println!(
        "fakekube replay listening on {}, serving {} exchanges of {}",
        replay.base_url(),
        cassette.exchanges.len(),
        args.cassette.display()
    );
    let _ = std::io::stdout().flush();
    let failed = tokio::select! {
        () = stop => None,
        message = replay.failed() => Some(message),
    };
    let summary = replay.shutdown().await;
    if let Some(message) = failed {
        eprint!("{message}");
    }
    println!("fakekube replay: {}", describe(&summary));
    if summary.failure.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Writes the kubeconfigs the arguments ask for.
fn write_kubeconfigs(replay: &Replay, args: &ReplayArgs) -> Result<(), (PathBuf, std::io::Error)> {
    let write =
        |path: &Path, text: &str| std::fs::write(path, text).map_err(|e| (path.to_path_buf(), e));
    if let Some(path) = &args.kubeconfig {
        let clients: Vec<&str> = replay.clients().collect();
        let client = if clients.contains(&DEFAULT_CLIENT) {
            DEFAULT_CLIENT
        } else {
            clients.first().copied().unwrap_or(DEFAULT_CLIENT)
        };
        if let Some(text) = replay.kubeconfig(client) {
            write(path, text)?;
        }
    }
    if let Some(dir) = &args.kubeconfig_dir {
        std::fs::create_dir_all(dir).map_err(|e| (dir.clone(), e))?;
        for client in replay.clients() {
            if let Some(text) = replay.kubeconfig(client) {
                write(&dir.join(format!("{client}.kubeconfig")), text)?;
            }
        }
    }
    Ok(())
}

/// One line on how a replay went.
fn describe(summary: &ReplaySummary) -> String {
    let p = &summary.progress;
    format!(
        "{} {} recorded exchanges served, {} answered again, {} recorded reads passed over, {} never asked for",
        if summary.failure.is_some() {
            "stopped at a request that matched nothing;"
        } else {
            "done;"
        },
        p.served,
        p.repeated,
        p.skipped,
        p.unused
    )
}
