//! The run against an in-process fakekube: start it with the warm pool a cluster operator would
//! make, connect the adapter as two pools, run the suite with fakekube's fault switches and
//! clock (and, with `--chaos-seed`, under chaos: see `chaos`; with `--pods-ignore-sigterm`,
//! with pods that ignore SIGTERM: see `sigterm`), then check that nothing is left.
//!
//! The adapter reads fakekube's clock for the `shutdownTime` it writes, and the suite moves
//! that clock instead of waiting out the TTL backstop (its TTL trials then run last, alone).
//! Under `--record` the suite is not given the clock: the cassette is replayed through a
//! kubeconfig, where the suite cannot move a clock and waits in real time, so the recording
//! waits too.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentsandbox::{AgentSandbox, Clock, ConnectOptions, PoolConfig};
use fakekube::{Chaos, FakeKube};
use sandbox_conformance::explained::{Counted, Explained, Tally};
use sandbox_conformance::{Arguments, ClusterClock, Fault, Faults, Fixtures};
use sandbox_contract::{Error, Provider, async_trait};
use serde_json::json;

use crate::chaos;
use crate::error::RunError;
use crate::options::Options;
use crate::pools::{
    CLUSTER_OBJECTS, DIRECT_POOL, MISSING_IMAGE, NAMESPACE, WARM_POOL, WARM_POOL_CONFIG,
    WARM_TEMPLATE, direct_fixtures, fast_fixtures, on_fakekube_clock, warm_fixtures,
};
use crate::record::Recording;
use crate::sigterm;
use crate::{finish, suite_with_reports};

/// Members of the warm pool on fakekube: enough for the trials that create several sandboxes
/// at once to adopt rather than wait for replenishment.
const WARM_REPLICAS: u32 = 16;

/// Runs the suite against the adapter on a fresh in-process fakekube.
pub(crate) fn run(
    runtime: &tokio::runtime::Runtime,
    options: &Options,
    args: &Arguments,
) -> Result<ExitCode, RunError> {
    let started = Instant::now();
    let (kube, direct, warm, recording, rewritten) = runtime.block_on(async {
        let mut builder = FakeKube::builder().namespace(NAMESPACE);
        if options.pods_ignore_sigterm {
            builder = builder.auto_advance_clock(sigterm::QUIET);
        }
        let kube = Arc::new(builder.start().await.map_err(RunError::StartFakekube)?);
        // Before the warm pool, so that its pods too ignore SIGTERM.
        let rewritten = options
            .pods_ignore_sigterm
            .then(|| sigterm::register(&kube));
        kube.images().mark_missing(MISSING_IMAGE);
        create_warm_pool(&kube).await?;
        let recording = match &options.record {
            Some(cassette) => {
                let upstream = fakekube_cassette::Kubeconfig::from_yaml(&kube.kubeconfig(), None)
                    .map_err(RunError::RecordKubeconfig)?;
                Some(Recording::start(cassette, &upstream).await?)
            }
            None => None,
        };
        let kubeconfig = match &recording {
            Some(r) => r.connect_options(),
            None => ConnectOptions::from_env().with_kubeconfig_yaml(kube.kubeconfig()),
        };
        let clock = {
            let kube = kube.clone();
            Clock::from_fn(move || kube.now())
        };
        let kubeconfig = kubeconfig.with_clock(clock);
        let direct = connect(kubeconfig.clone(), DIRECT_POOL).await?;
        let warm = connect(kubeconfig, WARM_POOL_CONFIG).await?;
        Ok::<_, RunError>((kube, direct, warm, recording, rewritten))
    })?;
    let watched = rewritten.map(|created| {
        println!(
            "pods ignore SIGTERM: each pod's command is rewritten to a loop that ignores it; the clock jumps to the next deadline after {:?} without a change",
            sigterm::QUIET
        );
        let _entered = runtime.enter();
        sigterm::watch(kube.clone(), NAMESPACE, created)
    });
    eprintln!(
        "fakekube at {} (started with its pools in {:?})",
        kube.base_url(),
        started.elapsed()
    );
    let tally = Tally::default();
    let direct: Arc<dyn Provider> = Arc::new(Counted::new(direct, tally.clone()));
    let warm: Arc<dyn Provider> = Arc::new(Counted::new(warm, tally.clone()));
    let chaos = options.chaos_seed.map(|seed| Chaos {
        seed,
        rates: chaos::rates(options.chaos_rate.unwrap_or(chaos::DEFAULT_RATE)),
    });
    if let Some(c) = &chaos {
        println!(
            "chaos: seed {}, rate {} per fault and occasion (rerun with --chaos-seed {} --chaos-rate {})",
            c.seed, c.rates.reset, c.seed, c.rates.reset
        );
        kube.faults().chaos(Some(*c));
    }
    let clock = recording
        .is_none()
        .then(|| Arc::new(FakeClock(kube.clone())) as Arc<dyn ClusterClock>);
    let with_faults = || {
        let fixtures = Fixtures {
            faults: Some(Arc::new(FakeFaults(kube.clone())) as Arc<dyn Faults>),
            ..fast_fixtures()
        };
        match &clock {
            Some(clock) => on_fakekube_clock(fixtures, clock.clone()),
            None => fixtures,
        }
    };
    let report = suite_with_reports(options)
        .pool("direct", direct.clone(), direct_fixtures(with_faults()))
        .pool("warm", warm.clone(), warm_fixtures(with_faults()))
        .run(args);
    if args.list {
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(recording) = recording {
        runtime.block_on(recording.finish())?;
    }
    let chaos_clean = chaos.map(|_| {
        kube.faults().chaos(None);
        chaos_summary(
            runtime,
            &kube,
            &report,
            &tally,
            &[direct.clone(), warm.clone()],
            &options.chaos_explains,
        )
    });
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
    if let Some(watched) = watched {
        runtime.block_on(watched.report(Duration::from_secs(10)));
    }
    let code = finish(&report, options, leaks.is_ok())?;
    Ok(match chaos_clean {
        // Under chaos a trial may fail with a code a fault explains; nothing else may.
        Some(clean) if clean && leaks.is_ok() => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
        None => code,
    })
}

/// After a run under chaos (stopped by now): prints the faults injected by kind, then the
/// calls, trials and reconcile ([`chaos::summary`]). Returns whether every failure is
/// explained and the reconcile found only the run's own.
fn chaos_summary(
    runtime: &tokio::runtime::Runtime,
    kube: &FakeKube,
    report: &sandbox_conformance::Report,
    tally: &Tally,
    providers: &[Arc<dyn Provider>],
    explained: &Explained,
) -> bool {
    let injected = kube.faults().chaos_injected();
    let faults: Vec<String> = injected.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!(
        "\nchaos: {} faults injected: {}",
        injected.values().sum::<u64>(),
        faults.join(", ")
    );
    chaos::summary(runtime, report, tally, providers, explained)
}

/// Connects the adapter with `options` (fakekube's kubeconfig, or the recording proxy's) as
/// the pool `yaml` describes, with fakekube's short waits and a page size small enough that
/// the list trials page.
async fn connect(options: ConnectOptions, yaml: &str) -> Result<AgentSandbox, RunError> {
    let pool = PoolConfig::from_yaml(yaml).map_err(RunError::PoolConfig)?;
    let options = options
        .with_env(|_| None)
        .with_service_account_dir("/nonexistent")
        .with_page_size(5)
        .with_ready_timeout(fast_fixtures().ready_timeout());
    AgentSandbox::connect(pool, options)
        .await
        .map_err(RunError::Connect)
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

/// The suite's clock hook, over fakekube's clock (which the adapter reads too, so a TTL set
/// after a move is counted from the moved time).
struct FakeClock(Arc<FakeKube>);

#[async_trait]
impl ClusterClock for FakeClock {
    async fn advance(&self, by: Duration) -> Result<(), Error> {
        self.0.advance_clock(by);
        Ok(())
    }
}

/// Creates the SandboxTemplate and the SandboxWarmPool of fixtures/live/warm-pool.yaml (with
/// [`WARM_REPLICAS`] members) and waits until the pool is full.
async fn create_warm_pool(kube: &FakeKube) -> Result<(), RunError> {
    for doc in CLUSTER_OBJECTS.split("\n---\n") {
        let mut object: serde_json::Value =
            serde_saphyr::from_str(doc).map_err(RunError::ClusterObjects)?;
        if object.get("kind").and_then(serde_json::Value::as_str) == Some("SandboxWarmPool") {
            object["spec"]["replicas"] = json!(WARM_REPLICAS);
        }
        kube.create(object).map_err(RunError::CreateClusterObject)?;
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
    .map_err(|e| RunError::WarmPoolNotFilled(Box::new(e)))
}

/// The default `terminationGracePeriodSeconds` of a pod.
const POD_GRACE: Duration = Duration::from_secs(30);

/// Removes the warm pool and its template (their members are the operator's, not the run's),
/// then checks that nothing of the run is left; the error lists what is.
async fn leak_check(kube: &FakeKube) -> Result<(), String> {
    kube.delete("sandboxwarmpools", NAMESPACE, WARM_POOL)
        .map_err(|e| e.to_string())?;
    kube.delete("sandboxtemplates", NAMESPACE, WARM_TEMPLATE)
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
        // A pod being deleted waits for its main process, as on a cluster. The sandboxes' loop
        // ends at once on SIGTERM, but one deleted in the instant before its shell set the trap
        // (a create undone at once) ignores it, as pid 1 does, until its grace period runs out:
        // skip that on fakekube's clock rather than wait 30 s.
        let terminating = left.iter().any(|l| {
            let mut parts = l.splitn(3, '/');
            let (res, ns, name) = (
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
            );
            res == "pods"
                && kube
                    .get(res, ns, name)
                    .is_some_and(|p| p.pointer("/metadata/deletionTimestamp").is_some())
        });
        if terminating {
            kube.advance_clock(POD_GRACE);
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
