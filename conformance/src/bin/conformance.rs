//! The main job: the conformance suite against the agent-sandbox adapter.
//!
//! By default it starts fakekube in-process, creates what a cluster operator would (the
//! `sandboxes` namespace, the SandboxTemplate and SandboxWarmPool of
//! `fixtures/live/warm-pool.yaml`), points the adapter at it as
//! two pools — direct Sandboxes with a volume and `ports.expose`, and the warm pool — runs the
//! suite against both, prints the capability table and the counts, and checks that nothing is
//! left behind. With `--kubeconfig PATH` (or `KUBECONFIG`) it runs against that cluster
//! instead, which must already have the namespace, template and warm pool (`ci/kind-up.sh`).
//!
//! Every other argument is libtest's: filters, `--exact`, `--list`, `--ignored`,
//! `--test-threads`, `--format json`. It exits 0 only when every trial that ran passed.

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use async_trait::async_trait;
use fakekube::FakeKube;
use sandbox_conformance::{Arguments, Fault, Faults, Fixtures, Report, Suite};
use sandbox_contract::{Capabilities, Capability, Error, Provider};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

// The pools and the cluster objects are the live runs' (fixtures/live/), so the main job, the
// live tests and ci/kind-up.sh agree on names.
/// The direct pool: Sandboxes with a volume at /workspace and ports.expose.
const DIRECT_POOL: &str = include_str!("../../../fixtures/live/pools/direct.yaml");
/// The warm pool: claims on the SandboxWarmPool of fixtures/live/warm-pool.yaml.
const WARM_POOL_CONFIG: &str = include_str!("../../../fixtures/live/pools/warm.yaml");
/// The SandboxTemplate and SandboxWarmPool a cluster operator creates (ci/kind-up.sh does).
const CLUSTER_OBJECTS: &str = include_str!("../../../fixtures/live/warm-pool.yaml");
/// The namespace the pools use.
const NAMESPACE: &str = "sandboxes";
/// The SandboxWarmPool of the warm pool, and so its only template.
const WARM_POOL: &str = "live-warm";
/// Members of the warm pool on fakekube: enough for the trials that create several sandboxes
/// at once to adopt rather than wait for replenishment.
const WARM_REPLICAS: u32 = 16;
/// An image fakekube's kubelet is told does not exist.
const MISSING_IMAGE: &str = "registry.invalid/does-not-exist:0";

const USAGE: &str = "\
conformance: the capability conformance suite against the agent-sandbox adapter

USAGE: conformance [--kubeconfig PATH] [--json PATH] [--junit PATH] [LIBTEST OPTIONS] [FILTERS]

  --kubeconfig PATH  run against this cluster instead of an embedded fakekube (also KUBECONFIG
                     when set; --fake forces the embedded fakekube)
  --fake             use the embedded fakekube even when KUBECONFIG is set
  --fast             with --kubeconfig: the cluster is a fakekube process, so use its short
                     waits (TTL backstop, timeouts); its faults cannot be switched from here
  --json PATH        write the JSON report
  --junit PATH       write the JUnit XML report
  -h, --help         this text, then libtest's options

Without --kubeconfig the run needs nothing but this binary. Exit status 0 means every trial that
ran passed.
";

/// This binary's own options; the rest go to libtest.
#[derive(Debug, Default)]
struct Options {
    kubeconfig: Option<PathBuf>,
    fake: bool,
    fast: bool,
    json: Option<PathBuf>,
    junit: Option<PathBuf>,
    rest: Vec<String>,
}

fn parse_options(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options::default();
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--kubeconfig" => o.kubeconfig = Some(PathBuf::from(value("--kubeconfig")?)),
            "--json" => o.json = Some(PathBuf::from(value("--json")?)),
            "--junit" => o.junit = Some(PathBuf::from(value("--junit")?)),
            "--fake" => o.fake = true,
            "--fast" => o.fast = true,
            _ => o.rest.push(a),
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let mut argv = std::env::args();
    let program = argv.next().unwrap_or_else(|| "conformance".into());
    let options = match parse_options(argv) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("conformance: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if options.rest.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}\nLIBTEST OPTIONS:\n");
    }
    // libtest-mimic parses the rest as cargo test would (and prints its help or an error).
    let mut libtest = Arguments::from_iter(std::iter::once(program).chain(options.rest.clone()));
    // The trials wait on a server, not on the CPU: run several at once unless told otherwise.
    if libtest.test_threads.is_none() {
        libtest.test_threads = Some(8);
    }
    let kubeconfig = match (&options.kubeconfig, options.fake) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => std::env::var_os("KUBECONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        (None, true) => None,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("conformance: starting a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = match kubeconfig {
        Some(path) => run_against_cluster(&runtime, &path, &options, &libtest),
        None => run_against_fakekube(&runtime, &options, &libtest),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("conformance: {e}");
            ExitCode::FAILURE
        }
    }
}

fn suite_with_reports(options: &Options) -> Suite {
    let mut suite = Suite::new();
    if let Some(p) = &options.json {
        suite = suite.write_json(p);
    }
    if let Some(p) = &options.junit {
        suite = suite.write_junit(p);
    }
    suite
}

fn opt_in(list: &[Capability]) -> Capabilities {
    let mut c = Capabilities::new();
    for cap in list {
        c.insert(*cap);
    }
    c
}

/// The suite's faults, over fakekube's fault switches.
struct FakeFaults(Arc<FakeKube>);

#[async_trait]
impl Faults for FakeFaults {
    fn supports(&self, _fault: Fault) -> bool {
        true
    }

    async fn inject(&self, fault: Fault) -> Result<(), Error> {
        match fault {
            Fault::BreakExecConnections => self.0.faults().drop_exec_after_bytes(Some(0)),
            Fault::FailListPages => self.0.faults().fail_continued_lists(true),
        }
        Ok(())
    }

    async fn clear(&self, fault: Fault) -> Result<(), Error> {
        match fault {
            Fault::BreakExecConnections => self.0.faults().drop_exec_after_bytes(None),
            Fault::FailListPages => self.0.faults().fail_continued_lists(false),
        }
        Ok(())
    }
}

/// Fixtures sized for fakekube: it starts pods in milliseconds and its TTL backstop fires on
/// time (shutdownTime has one-second precision), so waits are short.
fn fast_fixtures() -> Fixtures {
    Fixtures {
        op_timeout: Duration::from_secs(20),
        trial_timeout: Duration::from_secs(60),
        stream_gap: Duration::from_millis(100),
        exec_timeout: Duration::from_millis(300),
        ttl: Duration::from_secs(1),
        ttl_backstop_wait: Some(Duration::from_millis(1500)),
        delete_wait: Duration::from_secs(10),
        list_count: 7,
        ..Fixtures::default()
    }
}

/// [`fast_fixtures`] with the fault switches of an in-process fakekube.
fn fake_fixtures(kube: &Arc<FakeKube>) -> Fixtures {
    Fixtures {
        faults: Some(Arc::new(FakeFaults(kube.clone())) as Arc<dyn Faults>),
        ..fast_fixtures()
    }
}

fn run_against_fakekube(
    runtime: &tokio::runtime::Runtime,
    options: &Options,
    args: &Arguments,
) -> Result<ExitCode, String> {
    let started = Instant::now();
    let (kube, direct, warm) = runtime.block_on(async {
        let kube = FakeKube::builder()
            .namespace(NAMESPACE)
            .start()
            .await
            .map_err(|e| format!("starting fakekube: {e}"))?;
        kube.images().mark_missing(MISSING_IMAGE);
        create_warm_pool(&kube).await?;
        let kube = Arc::new(kube);
        let connect = |yaml: &'static str| {
            let kube = kube.clone();
            async move {
                let pool = PoolConfig::from_yaml(yaml).map_err(|e| format!("pool config: {e}"))?;
                let options = ConnectOptions::from_env()
                    .with_kubeconfig_yaml(kube.kubeconfig())
                    .with_env(|_| None)
                    .with_service_account_dir("/nonexistent")
                    .with_page_size(5)
                    .with_ready_timeout(Duration::from_secs(20));
                AgentSandbox::connect(pool, options)
                    .await
                    .map_err(|e| format!("connecting the adapter: {e}"))
            }
        };
        let direct = connect(DIRECT_POOL).await?;
        let warm = connect(WARM_POOL_CONFIG).await?;
        Ok::<_, String>((kube, direct, warm))
    })?;
    eprintln!(
        "fakekube at {} (started with its pools in {:?})",
        kube.base_url(),
        started.elapsed()
    );
    let direct_fixtures = Fixtures {
        volume_path: Some("/workspace".into()),
        missing_image: Some(MISSING_IMAGE.into()),
        opt_in: opt_in(&[Capability::PortsExpose, Capability::Stdin, Capability::Ttl]),
        id_prefix: "d".into(),
        ..fake_fixtures(&kube)
    };
    let warm_fixtures = Fixtures {
        template: Some(WARM_POOL.into()),
        opt_in: opt_in(&[Capability::Stdin, Capability::Ttl]),
        id_prefix: "w".into(),
        ..fake_fixtures(&kube)
    };
    let report = suite_with_reports(options)
        .pool(
            "direct",
            Arc::new(direct) as Arc<dyn Provider>,
            direct_fixtures,
        )
        .pool("warm", Arc::new(warm) as Arc<dyn Provider>, warm_fixtures)
        .run(args);
    if args.list {
        return Ok(ExitCode::SUCCESS);
    }
    let leaks = runtime.block_on(leak_check(&kube));
    println!(
        "\nwall time: {:.2?} (fakekube start and pools included)",
        started.elapsed()
    );
    match &leaks {
        Ok(()) => {
            println!("leak check: nothing left (no Sandbox, SandboxClaim, Pod, Service or PVC)")
        }
        Err(left) => println!("leak check FAILED: still present: {left}"),
    }
    Ok(verdict(&report, leaks.is_ok()))
}

fn verdict(report: &Report, clean: bool) -> ExitCode {
    if report.has_failed() || !clean {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Creates the SandboxTemplate and the SandboxWarmPool of fixtures/live/warm-pool.yaml (with
/// [`WARM_REPLICAS`] members) and waits until the pool is full.
async fn create_warm_pool(kube: &FakeKube) -> Result<(), String> {
    for doc in CLUSTER_OBJECTS.split("\n---\n") {
        let mut object: serde_json::Value = serde_saphyr::from_str(doc)
            .map_err(|e| format!("fixtures/live/warm-pool.yaml: {e}"))?;
        if object.get("kind").and_then(serde_json::Value::as_str) == Some("SandboxWarmPool") {
            object["spec"]["replicas"] = json!(WARM_REPLICAS);
        }
        kube.create(object)
            .map_err(|e| format!("creating fixtures/live/warm-pool.yaml: {e}"))?;
    }
    kube.wait_for(
        "sandboxwarmpools",
        NAMESPACE,
        WARM_POOL,
        Duration::from_secs(20),
        |p| {
            p.and_then(|p| p.pointer("/status/readyReplicas"))
                .and_then(serde_json::Value::as_u64)
                == Some(u64::from(WARM_REPLICAS))
        },
    )
    .await
    .map(|_| ())
    .map_err(|e| format!("the warm pool did not fill: {e}"))
}

/// Removes the warm pool and its template (their members are the operator's, not the run's),
/// then checks that nothing of the run is left.
async fn leak_check(kube: &FakeKube) -> Result<(), String> {
    kube.delete("sandboxwarmpools", NAMESPACE, WARM_POOL)
        .map_err(|e| e.to_string())?;
    kube.delete("sandboxtemplates", NAMESPACE, "live-debian")
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = kube.leaks();
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(left.join(", "));
        }
        // Deletion of pods by garbage collection is synchronous in fakekube; anything still
        // here after a moment is a leak. Wait for the next change rather than a fixed time.
        let probe = left[0].clone();
        let mut parts = probe.splitn(3, '/');
        let (res, ns, name) = (
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        let _ = kube
            .wait_for(res, ns, name, Duration::from_millis(500), |o| o.is_none())
            .await;
    }
}

fn run_against_cluster(
    runtime: &tokio::runtime::Runtime,
    path: &std::path::Path,
    options: &Options,
    args: &Arguments,
) -> Result<ExitCode, String> {
    let started = Instant::now();
    let (direct, warm) = runtime.block_on(async {
        let connect = |yaml: &'static str| {
            let path = path.to_path_buf();
            async move {
                let pool = PoolConfig::from_yaml(yaml).map_err(|e| format!("pool config: {e}"))?;
                let options = ConnectOptions::from_env()
                    .with_kubeconfig_path(path)
                    .with_page_size(5);
                AgentSandbox::connect(pool, options)
                    .await
                    .map_err(|e| format!("connecting the adapter: {e}"))
            }
        };
        Ok::<_, String>((
            connect(DIRECT_POOL).await?,
            connect(WARM_POOL_CONFIG).await?,
        ))
    })?;
    let cluster = if options.fast {
        fast_fixtures()
    } else {
        Fixtures {
            op_timeout: Duration::from_secs(180),
            ttl: Duration::from_secs(5),
            ttl_backstop_wait: Some(Duration::from_secs(90)),
            ..Fixtures::default()
        }
    };
    let report = suite_with_reports(options)
        .pool(
            "direct",
            Arc::new(direct.clone()) as Arc<dyn Provider>,
            Fixtures {
                volume_path: Some("/workspace".into()),
                missing_image: Some(MISSING_IMAGE.into()),
                opt_in: opt_in(&[Capability::PortsExpose, Capability::Stdin, Capability::Ttl]),
                id_prefix: "d".into(),
                ..cluster.clone()
            },
        )
        .pool(
            "warm",
            Arc::new(warm.clone()) as Arc<dyn Provider>,
            Fixtures {
                template: Some(WARM_POOL.into()),
                opt_in: opt_in(&[Capability::Stdin, Capability::Ttl]),
                id_prefix: "w".into(),
                ..cluster
            },
        )
        .run(args);
    if args.list {
        return Ok(ExitCode::SUCCESS);
    }
    let left = runtime.block_on(async {
        let mut left = Vec::new();
        for p in [&direct, &warm] {
            match p.list_created().await {
                Ok(objects) => left.extend(
                    objects
                        .into_iter()
                        .map(|o| format!("{:?}/{}", o.kind, o.name)),
                ),
                Err(e) => left.push(format!("(listing failed: {e})")),
            }
        }
        left
    });
    println!("\nwall time: {:.2?}", started.elapsed());
    if left.is_empty() {
        println!("leak check: the pools left nothing behind");
    } else {
        println!("leak check FAILED: still present: {}", left.join(", "));
    }
    Ok(verdict(&report, left.is_empty()))
}
