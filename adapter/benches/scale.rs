//! Scale: 1,000 and then 10,000 sandboxes created, exec'd once and deleted at once through the
//! adapter, each run against a fresh release fakekube binary: how many were served, how many
//! were left, the wall time of each and their ratio (the budget is 12x for 10x the sandboxes),
//! the fake's peak RSS (the budget is 1 GiB) and the load average around each run.
//!
//! `cargo bench -p agentsandbox --bench scale` after `cargo build --release -p fakekube --bin
//! fakekube` (ci/bench.sh runs it, except with `--quick`); `-- --sandboxes N` sets the larger
//! run. It exits non-zero when a sandbox failed or was left behind; the budgets (wall time,
//! RSS) are reported, not judged. The adapter and the fake share the machine's cores.

#[path = "support/fakekube_process.rs"]
mod fakekube_process;
#[path = "support/many.rs"]
mod many;

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use fakekube_process::FakeKubeProcess;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const NS: &str = "sandboxes";

const DIRECT: &str = "name: direct\ntrust: private\nconfig:\n  namespace: sandboxes\n  features: exec,exec.stream,files,stdin\n";

/// The fake's RSS budget.
const RSS_BUDGET_MIB: f64 = 1024.0;

/// The peak resident set of process `pid`, from `/proc`.
fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// One run's figures.
struct Run {
    elapsed: Duration,
    clean: bool,
}

/// `n` sandboxes at once against a fresh fakekube process.
async fn run(bin: &Path, n: usize) -> Run {
    let child = FakeKubeProcess::start(bin, &[NS]).expect("the fakekube binary starts");
    println!(
        "\n{n} sandboxes: the fakekube binary printed its URL {:.1?} after its spawn",
        child.listening_after()
    );
    let kubeconfig = std::fs::read_to_string(child.kubeconfig_path()).expect("the kubeconfig");
    let pool = PoolConfig::from_yaml(DIRECT).expect("pool config");
    let options = ConnectOptions::from_env()
        .with_kubeconfig_yaml(&kubeconfig)
        .with_env(|_| None)
        .with_service_account_dir("/nonexistent")
        .with_ready_timeout(Duration::from_secs(600));
    let p = Arc::new(
        AgentSandbox::connect(pool, options)
            .await
            .expect("adapter connects"),
    );
    let before = load();
    let outcome = many::many(&p, n).await;
    let left = p
        .list_created()
        .await
        .expect("list what the pool created")
        .len();
    outcome.print("against the fakekube binary", left);
    match peak_rss_mib(child.pid()) {
        Some(rss) => println!(
            "peak RSS of the fakekube process: {rss:.0} MiB ({} the {RSS_BUDGET_MIB:.0} MiB budget)",
            if rss < RSS_BUDGET_MIB {
                "within"
            } else {
                "over"
            }
        ),
        None => println!("peak RSS of the fakekube process: unreadable"),
    }
    println!("load average before: {before}, after: {}", load());
    Run {
        elapsed: outcome.elapsed,
        clean: outcome.failed.is_empty() && outcome.ok == n && left == 0,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let large = args
        .iter()
        .position(|a| a == "--sandboxes")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse::<usize>().expect("--sandboxes takes a number"))
        .unwrap_or(10_000);
    let small = 1_000.min(large);
    let Some(bin) = FakeKubeProcess::binary() else {
        eprintln!(
            "the fakekube binary is not built: cargo build --release -p fakekube --bin fakekube"
        );
        std::process::exit(2);
    };
    println!(
        "agentsandbox against the fakekube binary ({} cores shared by both)",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let first = run(&bin, small).await;
    let second = run(&bin, large).await;
    let ratio = second.elapsed.as_secs_f64() / first.elapsed.as_secs_f64().max(1e-9);
    let budget = 12.0 * large as f64 / small as f64 / 10.0;
    println!(
        "\n{large} took {ratio:.1}x the time of {small} (budget {budget:.0}x): {:.2?} against {:.2?}",
        second.elapsed, first.elapsed
    );
    if !first.clean || !second.clean {
        eprintln!("scale run failed: a sandbox was lost or left behind");
        std::process::exit(1);
    }
}
