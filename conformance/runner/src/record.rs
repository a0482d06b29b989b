//! `--record PATH`: the adapter reaches the cluster (or the embedded fakekube) through a
//! recording proxy (`fakekube-cassette`) that writes every exchange to a cassette, which
//! `fakekube replay PATH` serves back later in place of the cluster.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use agentsandbox::ConnectOptions;
use fakekube_cassette::format::DEFAULT_CLIENT;
use fakekube_cassette::{Kubeconfig, Proxy, RecordSummary, Recorder};

use crate::error::RunError;

/// A recording in progress.
pub(crate) struct Recording {
    recorder: Recorder,
    proxy: Proxy,
}

impl Recording {
    /// Starts recording into `cassette` the exchanges with the cluster `upstream` names.
    pub(crate) async fn start(
        cassette: &Path,
        upstream: &Kubeconfig,
    ) -> Result<Recording, RunError> {
        let recorder = Recorder::create(cassette).map_err(RunError::Record)?;
        let bind = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let proxy = Proxy::start(upstream, &recorder, DEFAULT_CLIENT, bind)
            .await
            .map_err(RunError::RecordProxy)?;
        Ok(Recording { recorder, proxy })
    }

    /// The adapter's connect options, through the proxy.
    pub(crate) fn connect_options(&self) -> ConnectOptions {
        ConnectOptions::from_env().with_kubeconfig_yaml(self.proxy.kubeconfig())
    }

    /// Stops the proxy, closes the cassette and prints what it holds.
    pub(crate) async fn finish(self) -> Result<RecordSummary, RunError> {
        self.proxy.shutdown().await;
        let summary = self.recorder.finish().map_err(RunError::Record)?;
        println!("recorded {summary}");
        Ok(summary)
    }
}
