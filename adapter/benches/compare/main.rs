//! The same work through every client, side by side, in one run, on one release `fakekube`
//! binary and one pod (a Sandbox's, created through the adapter): the round trip of
//! `exec true` and the throughput of 100 MiB of stdout (`head -c 104857600 /dev/zero`),
//! through the adapter (`exec` and `exec_stream`), kube-rs (`Api::<Pod>::exec`), the Python
//! `kubernetes` client (a loop inside one Python process) and kubectl 1.33 (a process per
//! exec), with a raw rustls loopback copy as the limit of throughput; and fakekube's start in
//! process beside the binary's start as a user runs it (spawned until `kubectl get ns`
//! answers). Each row gives its median, p90 and its ratio to the adapter's median.
//!
//! `cargo bench -p agentsandbox --bench compare` (`-- --quick` for fewer iterations; the
//! counts are printed), after `cargo build --release -p fakekube --bin fakekube` and
//! `ci/python-venv.sh`; ci/bench.sh does both. A client that is not installed gets a row saying
//! so. The clients and the server share the machine's cores.

#[path = "../../../fakekube/benches/support/client_tls.rs"]
mod client_tls;
#[path = "../support/fakekube_process.rs"]
mod fakekube_process;
#[path = "../../../fakekube/benches/support/raw_tls.rs"]
mod raw_tls;

mod clients;
mod start;
mod table;

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use clients::Target;
use fakekube_process::FakeKubeProcess;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use sandbox_contract::{CreateRequest, Provider, SandboxId};
use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};
use table::{Kind, Row, Section};

/// Anything that can fail in the benchmark, reported and ending the run.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The namespace of the bench's sandbox.
const NS: &str = "sandboxes";

/// Bytes of stdout in a throughput run: 100 MiB.
const BYTES: usize = 100 << 20;

/// How many times each thing is done.
#[derive(Clone, Copy)]
struct Counts {
    /// Untimed execs of `true` before the timed ones, per client.
    warm_up: usize,
    /// Timed execs of `true` per client (and raw TLS echoes).
    round_trips: usize,
    /// Timed execs of `true` through kubectl, a process each.
    kubectl_round_trips: usize,
    /// Throughput runs per client.
    transfers: usize,
    /// In-process starts of fakekube.
    starts: usize,
    /// Starts of the fakekube binary (and `kubectl get ns` against a running one).
    process_starts: usize,
}

impl Counts {
    /// The counts of a full run.
    const FULL: Counts = Counts {
        warm_up: 10,
        round_trips: 300,
        kubectl_round_trips: 50,
        transfers: 5,
        starts: 50,
        process_starts: 10,
    };
    /// The counts of `--quick`.
    const QUICK: Counts = Counts {
        warm_up: 5,
        round_trips: 100,
        kubectl_round_trips: 15,
        transfers: 3,
        starts: 20,
        process_starts: 5,
    };
}

fn main() -> Result<(), BoxError> {
    let quick = std::env::args().any(|a| a == "--quick");
    let counts = if quick { Counts::QUICK } else { Counts::FULL };
    let bin = FakeKubeProcess::binary().ok_or(
        "the release fakekube binary is not built: cargo build --release -p fakekube --bin fakekube",
    )?;
    let load_before = table::load_average();
    let began = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let cache = tempfile::tempdir()?;

    let server = FakeKubeProcess::start(&bin, &[NS])?;
    let kubeconfig = server.kubeconfig_path().to_owned();
    let kubeconfig_yaml = std::fs::read_to_string(&kubeconfig)?;
    let (adapter, id, target, pods) = runtime.block_on(setup(&kubeconfig_yaml))?;
    let kubectl = Path::new(clients::KUBECTL).is_file();
    let python = clients::python();
    let python_runs = match &python {
        Some(py) => Some(clients::python_runs(
            py,
            &kubeconfig,
            &target,
            (counts.warm_up, counts.round_trips, counts.transfers),
            BYTES,
        )?),
        None => None,
    };
    let python_label = |what: &str| match &python_runs {
        Some(runs) => format!("Python client {} {what}", runs.version),
        None => format!("Python client {what}"),
    };
    let no_python = "no venv: run ci/python-venv.sh";
    let no_kubectl = format!("{} is not installed", clients::KUBECTL);

    // Round trips of `exec true`.
    let truth = ["true".to_owned()];
    let mut trips = Vec::new();
    trips.push(Row::measured(
        "adapter exec",
        runtime.block_on(time_async(counts.warm_up, counts.round_trips, || {
            clients::adapter_exec(&adapter, &id, &truth)
        }))?,
    ));
    trips.push(Row::measured(
        "adapter exec_stream",
        runtime.block_on(time_async(counts.warm_up, counts.round_trips, || {
            clients::adapter_stream(&adapter, &id, &truth)
        }))?,
    ));
    trips.push(Row::measured(
        "kube-rs Api::<Pod>::exec",
        runtime.block_on(time_async(counts.warm_up, counts.round_trips, || {
            clients::kube_exec(&pods, &target, &truth)
        }))?,
    ));
    trips.push(match &python_runs {
        Some(runs) => Row::measured(python_label("(one process)"), runs.round_trips.clone()),
        None => Row::skipped(python_label("(one process)"), no_python),
    });
    trips.push(if kubectl {
        Row::measured(
            "kubectl 1.33 exec (a process each)",
            time_sync(1, counts.kubectl_round_trips, || {
                clients::kubectl_exec(&kubeconfig, cache.path(), &target, &truth)
            })?,
        )
    } else {
        Row::skipped("kubectl 1.33 exec (a process each)", no_kubectl.clone())
    });
    let raw = runtime.block_on(raw_tls::RawServer::start(BYTES))?;
    trips.push(Row::measured(
        "raw TLS connect + 1-byte echo (the floor)",
        runtime.block_on(time_async(counts.warm_up, counts.round_trips, || async {
            raw.echo().await.map(|()| 0)
        }))?,
    ));

    // Throughput of BYTES of stdout.
    let zeros = clients::zeros(BYTES);
    let check = |who: &str, got: usize| -> Result<usize, BoxError> {
        if got == BYTES {
            Ok(got)
        } else {
            Err(format!("{who}: {got} bytes arrived, not {BYTES}").into())
        }
    };
    let mut flows = Vec::new();
    flows.push(Row::measured(
        "adapter exec_stream",
        runtime.block_on(time_async(0, counts.transfers, || async {
            check(
                "adapter exec_stream",
                clients::adapter_stream(&adapter, &id, &zeros).await?,
            )
        }))?,
    ));
    flows.push(Row::measured(
        "adapter exec (output gathered)",
        runtime.block_on(time_async(0, counts.transfers, || async {
            check(
                "adapter exec",
                clients::adapter_exec(&adapter, &id, &zeros).await?,
            )
        }))?,
    ));
    flows.push(Row::measured(
        "kube-rs Api::<Pod>::exec",
        runtime.block_on(time_async(0, counts.transfers, || async {
            check("kube-rs", clients::kube_exec(&pods, &target, &zeros).await?)
        }))?,
    ));
    flows.push(match &python_runs {
        Some(runs) => Row::measured(
            python_label("(frames read from its WebSocket)"),
            runs.transfers.clone(),
        ),
        None => Row::skipped(python_label("(frames read from its WebSocket)"), no_python),
    });
    flows.push(if kubectl {
        Row::measured(
            "kubectl 1.33 exec, stdout piped",
            time_sync(0, counts.transfers, || {
                check(
                    "kubectl",
                    clients::kubectl_exec(&kubeconfig, cache.path(), &target, &zeros)?,
                )
            })?,
        )
    } else {
        Row::skipped("kubectl 1.33 exec, stdout piped", no_kubectl.clone())
    });
    flows.push(Row::measured(
        "raw rustls loopback copy (the limit)",
        runtime.block_on(time_async(0, counts.transfers, || async {
            check("raw TLS", raw.copy().await?)
        }))?,
    ));

    // Starts.
    let mut starts = vec![Row::measured(
        "in process: builder -> GET /version answered",
        runtime.block_on(start::in_process(counts.starts))?,
    )];
    let process = start::process(&bin, counts.process_starts, cache.path())?;
    starts.push(Row::measured(
        "binary: spawned -> URL printed",
        process.listening,
    ));
    let kubectl_label = "binary: spawned -> `kubectl get ns` answered";
    let alone_label = "`kubectl get ns` alone, server running";
    match process.answered {
        Some(answered) => {
            starts.push(Row::measured(kubectl_label, answered));
            starts.push(Row::measured(
                alone_label,
                time_sync(1, counts.process_starts, || {
                    clients::kubectl_get_ns(&kubeconfig, cache.path()).map(|()| 0)
                })?,
            ));
        }
        None => {
            starts.push(Row::skipped(kubectl_label, no_kubectl.clone()));
            starts.push(Row::skipped(alone_label, no_kubectl));
        }
    }

    let fake_rss = peak_rss_mib(server.pid());
    runtime.block_on(async { adapter.delete(&id).await })?;
    drop(server);

    println!(
        "side by side: one fakekube binary (release), one pod ({}/{}, container {}); {} cores",
        target.namespace,
        target.pod,
        target.container,
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    println!(
        "load average (1/5/15 min): {load_before} before the run, {} after",
        table::load_average()
    );
    println!(
        "counts{}: {} round trips after {} untimed (kubectl {}), {} transfers of {} MiB, {} \
         in-process starts, {} process starts",
        if quick { " (--quick)" } else { "" },
        counts.round_trips,
        counts.warm_up,
        counts.kubectl_round_trips,
        counts.transfers,
        BYTES >> 20,
        counts.starts,
        counts.process_starts
    );
    println!("ratio: the row's median time / the first row's (the adapter); below 1 is faster");
    println!();
    for section in [
        Section {
            title: "exec `true` round trip".to_owned(),
            kind: Kind::Latency,
            rows: trips,
        },
        Section {
            title: format!("{} MiB of stdout (head -c {BYTES} /dev/zero)", BYTES >> 20),
            kind: Kind::Throughput(BYTES),
            rows: flows,
        },
        Section {
            title: "fakekube start".to_owned(),
            kind: Kind::Plain,
            rows: starts,
        },
    ] {
        section.print();
        println!();
    }
    match fake_rss {
        Some(rss) => println!("peak RSS of the fakekube process: {rss:.0} MiB"),
        None => println!("peak RSS of the fakekube process: unreadable"),
    }
    println!(
        "total benchmark time {:.1} s",
        began.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Connects the adapter to the server, creates the bench's sandbox through it, and finds the
/// sandbox's pod with kube-rs (whose pod API is returned for its rows).
async fn setup(kubeconfig: &str) -> Result<(AgentSandbox, SandboxId, Target, Api<Pod>), BoxError> {
    let pool = PoolConfig::from_yaml(
        "name: compare\ntrust: private\nconfig:\n  namespace: sandboxes\n  features: exec,exec.stream\n",
    )?;
    let options = ConnectOptions::from_env()
        .with_kubeconfig_yaml(kubeconfig)
        .with_env(|_| None)
        .with_service_account_dir("/nonexistent")
        .with_ready_timeout(Duration::from_secs(60));
    let adapter = AgentSandbox::connect(pool, options).await?;
    let id = SandboxId::new("compare")?;
    adapter.create(CreateRequest::new(id.clone())).await?;

    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::from_yaml(kubeconfig)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(kube::Client::try_from(config)?, NS);
    let list = pods.list(&ListParams::default()).await?;
    let [pod] = list.items.as_slice() else {
        return Err(format!("{} pods in {NS}, not the sandbox's one", list.items.len()).into());
    };
    let container = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .map(|c| c.name.clone())
        .ok_or("the sandbox's pod has no container")?;
    let target = Target {
        namespace: NS.to_owned(),
        pod: pod.metadata.name.clone().ok_or("the pod has no name")?,
        container,
    };
    Ok((adapter, id, target, pods))
}

/// Runs `f` `warm_up` times untimed, then `n` times timed.
async fn time_async<F, Fut>(warm_up: usize, n: usize, mut f: F) -> Result<Vec<Duration>, BoxError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<usize, BoxError>>,
{
    for _ in 0..warm_up {
        f().await?;
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let began = Instant::now();
        f().await?;
        times.push(began.elapsed());
    }
    Ok(times)
}

/// Runs `f` `warm_up` times untimed, then `n` times timed, on this thread.
fn time_sync(
    warm_up: usize,
    n: usize,
    mut f: impl FnMut() -> Result<usize, BoxError>,
) -> Result<Vec<Duration>, BoxError> {
    for _ in 0..warm_up {
        f()?;
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let began = Instant::now();
        f()?;
        times.push(began.elapsed());
    }
    Ok(times)
}

/// The peak resident set of process `pid`, from `/proc`.
fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
