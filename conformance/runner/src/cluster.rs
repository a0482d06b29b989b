//! The run against the cluster a kubeconfig names, which already has the namespace, template
//! and warm pool (`ci/kind-up.sh` makes them; `ci/live.sh` applies them to a fakekube process).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use sandbox_conformance::Arguments;
use sandbox_contract::Provider;

use crate::error::RunError;
use crate::options::Options;
use crate::pools::{
    DIRECT_POOL, WARM_POOL_CONFIG, cluster_fixtures, direct_fixtures, fast_fixtures, warm_fixtures,
};
use crate::record::Recording;
use crate::{suite_with_reports, verdict};

/// Runs the suite against the adapter on the cluster of the kubeconfig at `path`, then checks
/// that the pools left nothing behind.
pub(crate) fn run(
    runtime: &tokio::runtime::Runtime,
    path: &Path,
    options: &Options,
    args: &Arguments,
) -> Result<ExitCode, RunError> {
    let started = Instant::now();
    let recording = match &options.record {
        Some(cassette) => {
            let upstream = fakekube_cassette::Kubeconfig::from_path(path)
                .map_err(RunError::RecordKubeconfig)?;
            Some(runtime.block_on(Recording::start(cassette, &upstream))?)
        }
        None => None,
    };
    let connect_options = || match &recording {
        Some(r) => r.connect_options(),
        None => ConnectOptions::from_env().with_kubeconfig_path(path.to_path_buf()),
    };
    let (direct, warm) = runtime.block_on(async {
        Ok::<_, RunError>((
            connect(connect_options(), DIRECT_POOL).await?,
            connect(connect_options(), WARM_POOL_CONFIG).await?,
        ))
    })?;
    let base = if options.fast {
        fast_fixtures()
    } else {
        cluster_fixtures()
    };
    let report = suite_with_reports(options)
        .pool(
            "direct",
            Arc::new(direct.clone()) as Arc<dyn Provider>,
            direct_fixtures(base.clone()),
        )
        .pool(
            "warm",
            Arc::new(warm.clone()) as Arc<dyn Provider>,
            warm_fixtures(base),
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
    if let Some(recording) = recording {
        runtime.block_on(recording.finish())?;
    }
    println!("\nwall time: {:.2?}", started.elapsed());
    if left.is_empty() {
        println!("leak check: the pools left nothing behind");
    } else {
        println!("leak check FAILED: still present: {}", left.join(", "));
    }
    Ok(verdict(&report, left.is_empty()))
}

/// Connects the adapter with `options` (the cluster's kubeconfig, or the recording proxy's) as
/// the pool `yaml` describes.
async fn connect(options: ConnectOptions, yaml: &str) -> Result<AgentSandbox, RunError> {
    let pool = PoolConfig::from_yaml(yaml).map_err(RunError::PoolConfig)?;
    let options = options.with_page_size(5);
    AgentSandbox::connect(pool, options)
        .await
        .map_err(RunError::Connect)
}
