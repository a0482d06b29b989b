//! `fakekube`: runs the fake API server until SIGINT or SIGTERM and writes a kubeconfig for it.

use clap::Parser;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

/// A TLS fake Kubernetes API server with the agent-sandbox kinds, for tests.
///
/// Prints `fakekube listening on https://127.0.0.1:PORT` as its first line on stdout once it
/// serves, and exits 0 on SIGINT or SIGTERM.
#[derive(Debug, Parser)]
#[command(name = "fakekube", version)]
struct Args {
    /// Write a kubeconfig for the server (CA, admin token, namespace `default`) to this path.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    address: IpAddr,
    /// Use this admin token instead of a random one.
    #[arg(long, env = "FAKEKUBE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Kubernetes minor version to report from /version (kubectl's dispatcher picks its binary by it).
    #[arg(long, default_value_t = 33)]
    kubernetes_minor: u32,
    /// Extra namespaces to create at start (repeatable).
    #[arg(long = "namespace", value_name = "NAME")]
    namespaces: Vec<String>,
    /// Run only the API server: no agent-sandbox controllers and no kubelet (like envtest).
    #[arg(long)]
    api_only: bool,
    /// Seconds a list's continue token stays valid.
    #[arg(long, default_value_t = 300)]
    compaction_window_secs: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FAKEKUBE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args = Args::parse();
    let mut builder = fakekube::FakeKube::builder()
        .bind(SocketAddr::new(args.address, args.port))
        .kubernetes_minor(args.kubernetes_minor)
        .compaction_window(std::time::Duration::from_secs(args.compaction_window_secs))
        .controllers(!args.api_only)
        .kubelet(!args.api_only);
    if let Some(t) = args.token {
        builder = builder.admin_token(t);
    }
    for ns in args.namespaces {
        builder = builder.namespace(ns);
    }
    let kube = match builder.start().await {
        Ok(k) => k,
        Err(e) => {
            eprintln!("fakekube: {}", error_chain(&e));
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = &args.kubeconfig
        && let Err(e) = std::fs::write(path, kube.kubeconfig())
    {
        eprintln!("fakekube: writing {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    println!("fakekube listening on {}", kube.base_url());
    use std::io::Write;
    let _ = std::io::stdout().flush();
    wait_for_signal().await;
    kube.shutdown().await;
    ExitCode::SUCCESS
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
