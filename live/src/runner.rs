//! A live run's phases: find the cluster (or skip), set up the two pools, run the conformance
//! suite on them, run the live checks in order, and print the timings.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use libtest_mimic::Arguments;
use sandbox_conformance::explained::{Counted, Explained, Tally, Verdicts};
use sandbox_conformance::{Fixtures, Suite};
use sandbox_contract::{Capabilities, Capability, Provider};

use crate::checks::{self, State, Testbed};
use crate::leaks::Observed;
use crate::observer::Observer;
use crate::recording::Recording;
use crate::settings::{Backend, Settings};
use crate::timings::{self, Timings};

/// The direct pool's config (namespace and image replaced from the settings).
const DIRECT_POOL: &str = include_str!("../../fixtures/live/pools/direct.yaml");

/// The warm pool's config (namespace and warm pool replaced from the settings).
const WARM_POOL: &str = include_str!("../../fixtures/live/pools/warm.yaml");

/// The trials the conformance phase runs at once unless `--test-threads` says otherwise: the
/// trials wait on the cluster, not on the CPU.
const SUITE_THREADS: usize = 8;

/// Why a run does not go ahead.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stop {
    /// No cluster to run against: skipped, or failed under `LIVE_REQUIRE_CLUSTER=1`.
    NoCluster(String),
    /// A cluster answered but the run cannot work with it.
    Broken(String),
}

/// What the phases share once the cluster is found.
struct Live {
    /// What the checks run on (pools, observer, settings).
    testbed: Arc<Testbed>,
    /// The server's version, for the header.
    version: String,
    /// The recording of the run's exchanges (`LIVE_RECORD`), if asked for.
    recording: Option<Recording>,
}

/// Runs the live tests with `args` (libtest's arguments): the conformance suite on the
/// `direct` and `warm` pools, then the live checks, then the timings table.
///
/// Without `KUBECONFIG`, or when its server does not answer, prints why and succeeds,
/// unless `LIVE_REQUIRE_CLUSTER=1`, which makes that a failure.
pub fn run(args: &Arguments) -> ExitCode {
    let settings = Settings::from_env();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("live: FAILED: cannot start a tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let live = match runtime.block_on(prepare(&settings)) {
        Ok(live) => live,
        Err(Stop::NoCluster(reason)) if !settings.require_cluster => {
            println!("live: skipped: {reason}");
            println!(
                "live: start a cluster with ci/kind-up.sh and export the KUBECONFIG it prints \
                 (LIVE_REQUIRE_CLUSTER=1 makes this a failure)"
            );
            return ExitCode::SUCCESS;
        }
        Err(Stop::NoCluster(reason)) => {
            eprintln!("live: FAILED: {reason} (LIVE_REQUIRE_CLUSTER=1 requires a cluster)");
            return ExitCode::FAILURE;
        }
        Err(Stop::Broken(reason)) => {
            eprintln!("live: FAILED: {reason}");
            return ExitCode::FAILURE;
        }
    };
    let testbed = live.testbed.clone();
    if !args.list {
        print_header(&live);
    }
    if testbed.chaos.is_some() && !args.list {
        println!(
            "live: LIVE_CHAOS=1: the cluster injects faults this run neither controls nor sees \
             (a fakekube process started with --chaos-seed prints them when it stops); a trial or \
             check may fail only with a code a fault explains, and nothing may be left after the \
             reconcile"
        );
    }

    let started = Instant::now();
    let mut suite_args = args.clone();
    if suite_args.test_threads.is_none() {
        suite_args.test_threads = Some(SUITE_THREADS);
    }
    let report = Suite::new()
        .pool(
            "direct",
            testbed.direct.clone(),
            direct_fixtures(&testbed.settings, testbed.backend),
        )
        .pool(
            "warm",
            testbed.warm.clone(),
            shared_fixtures(testbed.backend),
        )
        .run(&suite_args);
    let suite_took = started.elapsed();

    let started = Instant::now();
    let mut check_args = args.clone();
    check_args.test_threads = Some(1);
    let timings = Timings::default();
    let trials = checks::trials(testbed.clone(), runtime.handle().clone(), timings.clone());
    if !args.list {
        println!("\nlive: the seed's live checks, in order");
    }
    let conclusion = libtest_mimic::run(&check_args, trials);
    let written = write_checks_json(&testbed.settings, &timings);
    let recorded = finish_recording(&runtime, live.recording);
    if !args.list {
        println!(
            "\nlive: checks and timings against {}",
            testbed.observer.server()
        );
        print!("{}", timings::table(&timings.rows()));
        println!(
            "live: conformance suite {:.1} s, live checks {:.1} s",
            suite_took.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
    }
    // Under chaos a suite trial may fail with a code a fault explains (the checks' trials
    // sort theirs themselves).
    let suite_failed = match &testbed.chaos {
        Some(tally) if !args.list => !chaos_summary(&report, &timings, tally, &testbed.explained),
        _ => report.has_failed(),
    };
    if suite_failed || conclusion.has_failed() || !written || !recorded {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Under `LIVE_CHAOS=1`: prints the pools' calls by operation and outcome, the suite's trials
/// and the live checks by verdict. Returns whether every failed suite trial is explained.
fn chaos_summary(
    report: &sandbox_conformance::Report,
    timings: &Timings,
    tally: &Tally,
    explained: &Explained,
) -> bool {
    println!(
        "live: chaos: {} pool calls, by operation and outcome:",
        tally.total()
    );
    for line in tally.lines() {
        println!("  {line}");
    }
    let suite = Verdicts::of(report, explained);
    println!("live: chaos: suite trials: {}", suite.summary());
    for (name, message) in &suite.unexplained {
        println!("  UNEXPLAINED {name}: {message}");
    }
    let mut checks = Verdicts::default();
    for row in timings.rows() {
        match &row.outcome {
            timings::Outcome::Passed => checks.passed += 1,
            timings::Outcome::Explained(message) | timings::Outcome::Failed(message) => {
                checks.failed(&row.name, message, explained);
            }
            timings::Outcome::Skipped(_) => {}
        }
    }
    println!("live: chaos: live checks: {}", checks.summary());
    suite.unexplained.is_empty()
}

/// Writes the live checks' outcomes to `LIVE_CHECKS_JSON`, if set; false when that fails.
fn write_checks_json(settings: &Settings, timings: &Timings) -> bool {
    let Some(path) = &settings.checks_json else {
        return true;
    };
    let json = timings::to_json(&timings.rows());
    match std::fs::write(path, format!("{json:#}\n")) {
        Ok(()) => true,
        Err(e) => {
            eprintln!(
                "live: FAILED: writing LIVE_CHECKS_JSON {}: {e}",
                path.display()
            );
            false
        }
    }
}

/// Closes the recording, if the run made one, and says what it holds; false when that fails.
fn finish_recording(runtime: &tokio::runtime::Runtime, recording: Option<Recording>) -> bool {
    let Some(recording) = recording else {
        return true;
    };
    match runtime.block_on(recording.finish()) {
        Ok(summary) => {
            println!("live: recorded {summary}");
            true
        }
        Err(e) => {
            eprintln!("live: FAILED: {e}");
            false
        }
    }
}

/// Prints what the run is against.
fn print_header(live: &Live) {
    let testbed = &live.testbed;
    println!(
        "live: server {} ({}, {}), namespace {}",
        testbed.observer.server(),
        live.version,
        testbed.backend.as_str(),
        testbed.settings.namespace
    );
    println!(
        "live: pools `direct` (image {}, 1Gi volume at /workspace, ports.expose) and `warm` \
         (SandboxWarmPool {})",
        testbed.settings.image, testbed.settings.warm_pool
    );
    if testbed.backend == Backend::Fakekube {
        println!(
            "live: fakekube: cluster DNS is not checked{}",
            if testbed.settings.missing_image_marked {
                ""
            } else {
                ", and the missing-image checks are skipped (image not marked missing)"
            }
        );
    }
    if !testbed.baseline.is_empty() {
        println!(
            "live: left in the namespace before this run (ignored by the leak check): {}",
            testbed
                .baseline
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// Finds the cluster and sets up the pools and the observer.
async fn prepare(settings: &Settings) -> Result<Live, Stop> {
    let Some(kubeconfig) = settings.kubeconfig.clone() else {
        return Err(Stop::NoCluster("KUBECONFIG is not set".to_owned()));
    };
    if !kubeconfig.exists() {
        return Err(Stop::NoCluster(format!(
            "KUBECONFIG names {}, which does not exist",
            kubeconfig.display()
        )));
    }
    let observer_path = settings.observer().cloned().unwrap_or(kubeconfig.clone());
    let recording = match &settings.record {
        Some(cassette) => Some(
            Recording::start(
                cassette,
                &kubeconfig,
                settings.observer_kubeconfig.as_deref(),
            )
            .await
            .map_err(Stop::Broken)?,
        ),
        None => None,
    };
    let (kubeconfig, observer_path) = match &recording {
        Some(r) => (
            r.kubeconfig().to_path_buf(),
            r.observer().unwrap_or(r.kubeconfig()).to_path_buf(),
        ),
        None => (kubeconfig, observer_path),
    };
    let observer = Observer::from_kubeconfig(&observer_path, &settings.namespace)
        .await
        .map_err(|e| Stop::Broken(e.report()))?;
    observer
        .reach()
        .await
        .map_err(|e| Stop::NoCluster(e.report()))?;
    let version = observer
        .version()
        .await
        .map_err(|e| Stop::Broken(e.report()))?;
    let backend = Backend::from_git_commit(&version.git_commit);
    let chaos = settings.chaos.then(Tally::default);
    let explained = match &settings.chaos_explains {
        Some(list) => {
            Explained::parse(list).map_err(|e| Stop::Broken(format!("LIVE_CHAOS_EXPLAINS: {e}")))?
        }
        None => Explained::default(),
    };
    let direct = connect(direct_pool(settings)?, &kubeconfig, backend, chaos.as_ref()).await?;
    let warm = connect(warm_pool(settings)?, &kubeconfig, backend, chaos.as_ref()).await?;
    let baseline = Observed::list(&observer)
        .await
        .map_err(|e| {
            Stop::Broken(format!(
                "the observer cannot list the namespace {} ({}); on kind, export \
                 LIVE_OBSERVER_KUBECONFIG as ci/kind-up.sh prints it",
                settings.namespace,
                e.report()
            ))
        })?
        .leftovers();
    let testbed = Testbed {
        direct,
        warm,
        observer,
        settings: settings.clone(),
        backend,
        run_token: run_token(),
        baseline: baseline.into_iter().collect::<BTreeSet<_>>(),
        state: Mutex::new(State::default()),
        chaos,
        explained,
    };
    Ok(Live {
        testbed: Arc::new(testbed),
        version: version.git_version,
        recording,
    })
}

/// The direct pool's config with the settings' namespace and image.
fn direct_pool(settings: &Settings) -> Result<PoolConfig, Stop> {
    let mut pool = PoolConfig::from_yaml(DIRECT_POOL)
        .map_err(|e| Stop::Broken(format!("fixtures/live/pools/direct.yaml: {e}")))?;
    pool.config.namespace = Some(settings.namespace.clone());
    pool.config.image = settings.image.clone();
    Ok(pool)
}

/// The warm pool's config with the settings' namespace and warm pool.
fn warm_pool(settings: &Settings) -> Result<PoolConfig, Stop> {
    let mut pool = PoolConfig::from_yaml(WARM_POOL)
        .map_err(|e| Stop::Broken(format!("fixtures/live/pools/warm.yaml: {e}")))?;
    pool.config.namespace = Some(settings.namespace.clone());
    pool.config.warm_pool = Some(settings.warm_pool.clone());
    Ok(pool)
}

/// How many times a run under `LIVE_CHAOS=1` asks a pool's health before it takes a failure
/// as the answer: each fault strikes a request only now and then.
const CHAOS_TRIES: usize = 10;

/// Sets up a pool's provider from `kubeconfig` (`KUBECONFIG`'s, or the recording proxy's) and
/// checks that it is healthy; under chaos (`tally`), its calls are counted there.
async fn connect(
    pool: PoolConfig,
    kubeconfig: &std::path::Path,
    backend: Backend,
    tally: Option<&Tally>,
) -> Result<Arc<dyn Provider>, Stop> {
    let name = pool.name.clone();
    let options = ConnectOptions::from_env()
        .with_kubeconfig_path(kubeconfig)
        .with_ready_timeout(Fixtures::ready_timeout_within(backend.op_timeout()));
    let provider = AgentSandbox::connect(pool, options)
        .await
        .map_err(|e| Stop::Broken(format!("pool {name}: {e}")))?;
    let provider: Arc<dyn Provider> = match tally {
        Some(tally) => Arc::new(Counted::new(provider, tally.clone())),
        None => Arc::new(provider),
    };
    let tries = if tally.is_some() { CHAOS_TRIES } else { 1 };
    let mut health = provider.health().await;
    for _ in 1..tries {
        if health.as_ref().is_ok_and(|h| h.is_healthy()) {
            break;
        }
        health = provider.health().await;
    }
    let health = health.map_err(|e| Stop::Broken(format!("pool {name}: health: {e}")))?;
    if !health.is_healthy() {
        return Err(Stop::Broken(format!(
            "pool {name} is not healthy: {} (did ci/kind-up.sh, or ci/live.sh's fixtures, run?)",
            health.message.unwrap_or_default()
        )));
    }
    Ok(provider)
}

/// The suite's fixtures for the direct pool.
fn direct_fixtures(settings: &Settings, backend: Backend) -> Fixtures {
    let mut opt_in = Capabilities::new();
    opt_in.insert(Capability::PortsExpose);
    let missing = backend == Backend::Cluster || settings.missing_image_marked;
    Fixtures {
        volume_path: Some("/workspace".to_owned()),
        missing_image: missing.then(|| settings.missing_image.clone()),
        opt_in,
        ..shared_fixtures(backend)
    }
}

/// The suite's fixtures for the warm pool, and what both pools' fixtures share: the waits of
/// the backend.
fn shared_fixtures(backend: Backend) -> Fixtures {
    Fixtures {
        op_timeout: backend.op_timeout(),
        trial_timeout: backend.check_timeout() * 2,
        ttl: backend.ttl(),
        ttl_backstop_wait: Some(backend.ttl_backstop_wait()),
        delete_wait: backend.cleanup_wait(),
        ..Fixtures::default()
    }
}

/// A short token that makes this run's sandbox ids unique: base 36 of the time and process.
fn run_token() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos();
    let mut n = (nanos ^ (u128::from(std::process::id()) << 64)) % 36u128.pow(6);
    let mut token = String::new();
    for _ in 0..6 {
        let digit = u32::try_from(n % 36).unwrap_or(0);
        token.push(char::from_digit(digit, 36).unwrap_or('0'));
        n /= 36;
    }
    token
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_fixtures_parse_and_take_the_settings() {
        let settings = Settings::from_lookup(|name| match name {
            "LIVE_NAMESPACE" => Some("live-ns".to_owned()),
            "LIVE_IMAGE" => Some("busybox:1.37".to_owned()),
            "LIVE_WARM_POOL" => Some("other-warm".to_owned()),
            _ => None,
        });
        let direct = direct_pool(&settings).expect("direct pool");
        assert_eq!(direct.config.namespace.as_deref(), Some("live-ns"));
        assert_eq!(direct.config.image, "busybox:1.37");
        let caps = direct.config.capabilities();
        for cap in [
            Capability::PortsExpose,
            Capability::LifecycleStopStart,
            Capability::Stdin,
            Capability::Ttl,
        ] {
            assert!(caps.contains(cap), "direct lacks {cap:?}");
        }
        assert!(direct.validate().is_ok());
        let warm = warm_pool(&settings).expect("warm pool");
        assert_eq!(warm.config.warm_pool.as_deref(), Some("other-warm"));
        assert!(
            !warm
                .config
                .capabilities()
                .contains(Capability::LifecycleStopStart)
        );
        assert!(warm.validate().is_ok());
    }

    #[test]
    fn run_token_is_six_lowercase_base36_characters() {
        let token = run_token();
        assert_eq!(token.len(), 6);
        assert!(
            token
                .chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        );
    }

    #[test]
    fn only_a_real_cluster_or_a_marked_fakekube_gets_the_missing_image_trial() {
        let fixtures = |backend, marked| {
            let mut settings = Settings::from_lookup(|_| None);
            settings.missing_image_marked = marked;
            direct_fixtures(&settings, backend).missing_image
        };
        assert!(fixtures(Backend::Cluster, false).is_some());
        assert!(fixtures(Backend::Fakekube, false).is_none());
        assert!(fixtures(Backend::Fakekube, true).is_some());
    }
}
