//! The run against a provider in any language, through the provider protocol: started as a
//! command (stdio) or reached at a WebSocket URL.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox_conformance::Arguments;
use sandbox_contract::Provider;
use sandbox_protocol::{ProviderProcess, RemoteProvider, Transport};

use crate::error::RunError;
use crate::options::Options;
use crate::pools::remote_fixtures;
use crate::{finish, suite_with_reports};

/// How long the provider has to answer `initialize`.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a provider command has to exit once its stdin is closed, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(10);

/// Where the provider is.
pub(crate) enum Endpoint<'a> {
    /// A command to start, speaking on its stdio.
    Command(&'a str),
    /// A WebSocket URL.
    Url(&'a str),
}

/// Runs the suite against the provider at `endpoint`, then checks it lists no sandbox.
pub(crate) fn run(
    runtime: &tokio::runtime::Runtime,
    endpoint: Endpoint<'_>,
    options: &Options,
    args: &Arguments,
) -> Result<ExitCode, RunError> {
    let started = Instant::now();
    let (mut child, remote) = runtime.block_on(async {
        let (child, transport) = match endpoint {
            Endpoint::Url(url) => (
                None,
                Transport::connect_websocket(url)
                    .await
                    .map_err(RunError::ProviderUrl)?,
            ),
            Endpoint::Command(command) => {
                let (child, transport) =
                    ProviderProcess::spawn(command).map_err(RunError::SpawnProvider)?;
                (Some(child), transport)
            }
        };
        let remote = RemoteProvider::connect(transport, INITIALIZE_TIMEOUT)
            .await
            .map_err(RunError::Initialize)?;
        Ok::<_, RunError>((child, remote))
    })?;
    let negotiated = remote.negotiated().clone();
    eprintln!(
        "provider {} (protocol version {}) declares {}",
        negotiated.info.name, negotiated.protocol_version, negotiated.info.capabilities
    );
    let report = suite_with_reports(options)
        .pool(
            &negotiated.info.name,
            Arc::new(remote.clone()) as Arc<dyn Provider>,
            remote_fixtures(),
        )
        .run(args);
    if args.list {
        return Ok(ExitCode::SUCCESS);
    }
    let left = runtime.block_on(remote.list());
    drop(remote);
    if let Some(child) = child.as_mut() {
        // The provider's stdin is closed now; give it time to clean up, then kill it.
        runtime.block_on(async {
            if tokio::time::timeout(EXIT_GRACE, child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        });
    }
    println!("\nwall time: {:.2?}", started.elapsed());
    let clean = match &left {
        Ok(list) if list.is_empty() => {
            println!("leak check: the provider lists no sandbox");
            true
        }
        Ok(list) => {
            let ids: Vec<String> = list.iter().map(|s| s.id.to_string()).collect();
            println!(
                "leak check FAILED: the provider still lists {}",
                ids.join(", ")
            );
            false
        }
        Err(e) => {
            println!("leak check FAILED: listing the provider's sandboxes: {e}");
            false
        }
    };
    finish(&report, options, clean)
}
