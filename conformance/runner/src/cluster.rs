//! The run against a cluster: the fixtures' two pools (which `ci/kind-up.sh` makes) or the
//! `--pools` file's, each checked by a preflight before any trial; with `--chaos`, under the
//! cluster's faults (see `chaos`).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use sandbox_conformance::explained::{Counted, Tally};
use sandbox_conformance::{Arguments, Fixtures};
use sandbox_contract::Provider;

use crate::chaos;
use crate::error::RunError;
use crate::options::Options;
use crate::pools::{
    DIRECT_POOL, WARM_POOL_CONFIG, cluster_fixtures, direct_fixtures, fast_fixtures, load_pools,
    pool_fixtures, warm_fixtures,
};
use crate::record::Recording;
use crate::{finish, suite_with_reports};

/// Runs the suite against the adapter on the cluster of `kubeconfig` (or of `KUBECONFIG`, or
/// the in-cluster service account, when `None`), then checks that the pools left nothing.
pub(crate) fn run(
    runtime: &tokio::runtime::Runtime,
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    options: &Options,
    args: &Arguments,
) -> Result<ExitCode, RunError> {
    let started = Instant::now();
    let recording = match &options.record {
        Some(cassette) => {
            let path = kubeconfig
                .map(Path::to_path_buf)
                .or_else(|| std::env::var_os("KUBECONFIG").map(Into::into))
                .ok_or(RunError::RecordNeedsKubeconfig)?;
            let upstream = fakekube_cassette::Kubeconfig::from_path(&path)
                .map_err(RunError::RecordKubeconfig)?;
            Some(runtime.block_on(Recording::start(cassette, &upstream))?)
        }
        None => None,
    };
    let mut base = if options.fast {
        fast_fixtures()
    } else {
        cluster_fixtures()
    };
    if let Some(gap) = options.stream_gap {
        base.stream_gap = gap;
    }
    let pools: Vec<(PoolConfig, Fixtures)> = match &options.pools {
        Some(path) => load_pools(path)?
            .into_iter()
            .map(|pool| {
                let fixtures = pool_fixtures(&pool, base.clone());
                (pool, fixtures)
            })
            .collect(),
        None => vec![
            (
                PoolConfig::from_yaml(DIRECT_POOL).map_err(RunError::PoolConfig)?,
                direct_fixtures(base.clone()),
            ),
            (
                PoolConfig::from_yaml(WARM_POOL_CONFIG).map_err(RunError::PoolConfig)?,
                warm_fixtures(base),
            ),
        ],
    };
    let providers = runtime.block_on(async {
        let mut providers = Vec::new();
        for (pool, fixtures) in &pools {
            let options = match &recording {
                Some(r) => r.connect_options(),
                None => connect_options(kubeconfig, context),
            };
            // A sandbox that does not get ready fails with the adapter's code, not the trial's
            // clock.
            let options = options.with_ready_timeout(fixtures.ready_timeout());
            providers.push(connect(options, pool.clone()).await?);
        }
        Ok::<_, RunError>(providers)
    })?;
    if options.chaos && !args.list {
        println!(
            "chaos: the cluster injects faults this run neither controls nor sees (a fakekube \
             process started with --chaos-seed prints them when it stops); a trial may fail only \
             with a code a fault explains"
        );
    }
    if !args.list {
        preflight(runtime, &providers, options.chaos)?;
    }
    let tally = Tally::default();
    let counted: Vec<Arc<dyn Provider>> = providers
        .iter()
        .map(|p| Arc::new(Counted::new(p.clone(), tally.clone())) as Arc<dyn Provider>)
        .collect();
    let mut suite = suite_with_reports(options);
    for ((pool, fixtures), provider) in pools.into_iter().zip(&counted) {
        suite = suite.pool(&pool.name, provider.clone(), fixtures);
    }
    let report = suite.run(args);
    if args.list {
        return Ok(ExitCode::SUCCESS);
    }
    let explained = options
        .chaos
        .then(|| chaos::summary(runtime, &report, &tally, &counted, &options.chaos_explains));
    // Under chaos a list may fail with an explained code: it is asked again.
    let tries = if options.chaos { CHAOS_TRIES } else { 1 };
    let left = runtime.block_on(async {
        let mut left = Vec::new();
        for p in &providers {
            let mut listed = p.list_created().await;
            for _ in 1..tries {
                if listed.is_ok() {
                    break;
                }
                listed = p.list_created().await;
            }
            match listed {
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
    if let Some(recording) = recording {
        runtime.block_on(recording.finish())?;
    }
    println!("\nwall time: {:.2?}", started.elapsed());
    if left.is_empty() {
        println!("leak check: the pools left nothing behind");
    } else {
        println!("leak check FAILED: still present: {}", left.join(", "));
    }
    let code = finish(&report, options, left.is_empty())?;
    Ok(match explained {
        // Under chaos a trial may fail with a code a fault explains; nothing else may.
        Some(clean) if clean && left.is_empty() => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
        None => code,
    })
}

/// How many times a run under `--chaos` asks the preflight, and the leak check's list, before
/// it takes a failure as the answer: each fault strikes a request only now and then.
const CHAOS_TRIES: usize = 10;

/// Checks every pool before any trial; prints each problem with its fix and fails when there
/// is any. Under `chaos` a pool's preflight is asked again (up to [`CHAOS_TRIES`] times) while
/// it fails or finds a problem, since a fault may be the cause.
fn preflight(
    runtime: &tokio::runtime::Runtime,
    providers: &[AgentSandbox],
    chaos: bool,
) -> Result<(), RunError> {
    let tries = if chaos { CHAOS_TRIES } else { 1 };
    let problems = runtime.block_on(async {
        let mut problems = Vec::new();
        for provider in providers {
            let mut found = provider.preflight().await;
            for _ in 1..tries {
                if found.as_ref().is_ok_and(Vec::is_empty) {
                    break;
                }
                found = provider.preflight().await;
            }
            problems.extend(found.map_err(RunError::Preflight)?);
        }
        Ok::<_, RunError>(problems)
    })?;
    for problem in &problems {
        eprintln!(
            "conformance: preflight: {}\n    fix: {}",
            problem.problem, problem.fix
        );
    }
    if problems.is_empty() {
        eprintln!(
            "preflight: {} pool(s) ready (namespace, warm pool, permissions)",
            providers.len()
        );
        Ok(())
    } else {
        Err(RunError::PreflightFailed(problems.len()))
    }
}

/// The adapter's way to the cluster of `kubeconfig` (or `KUBECONFIG`, or the in-cluster
/// service account), in `context` when given.
fn connect_options(kubeconfig: Option<&Path>, context: Option<&str>) -> ConnectOptions {
    let mut options = ConnectOptions::from_env();
    if let Some(path) = kubeconfig {
        options = options.with_kubeconfig_path(path.to_path_buf());
    }
    if let Some(name) = context {
        options = options.with_context(name);
    }
    options
}

/// Connects the adapter as `pool` with `options` (the cluster's, or the recording proxy's).
async fn connect(options: ConnectOptions, pool: PoolConfig) -> Result<AgentSandbox, RunError> {
    AgentSandbox::connect(pool, options.with_page_size(5))
        .await
        .map_err(RunError::Connect)
}
