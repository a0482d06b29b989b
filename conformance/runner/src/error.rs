//! Why a run could not start, each variant named for the step that failed and keeping its
//! cause; [`with_causes`] prints the whole chain.

use std::error::Error;

/// A step before the trials that failed; the run then exits 2 without running any trial.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    /// The tokio runtime could not be built.
    #[error("starting a runtime")]
    Runtime(#[source] std::io::Error),
    /// The embedded fakekube did not start.
    #[error("starting fakekube")]
    StartFakekube(#[source] fakekube::Error),
    /// A pool config of `fixtures/live/pools/` does not read.
    #[error("pool config")]
    PoolConfig(#[source] agentsandbox::ConfigError),
    /// The adapter could not be set up for a pool.
    #[error("connecting the adapter")]
    Connect(#[source] agentsandbox::SetupError),
    /// `fixtures/live/warm-pool.yaml` does not read.
    #[error("fixtures/live/warm-pool.yaml")]
    ClusterObjects(#[source] serde_saphyr::Error),
    /// fakekube refused an object of `fixtures/live/warm-pool.yaml`.
    #[error("creating fixtures/live/warm-pool.yaml")]
    CreateClusterObject(#[source] fakekube::StatusError),
    /// `--record` against a cluster named by neither `--kubeconfig` nor `KUBECONFIG`.
    #[error("--record needs the cluster's kubeconfig: give --kubeconfig or set KUBECONFIG")]
    RecordNeedsKubeconfig,
    /// The kubeconfig to record through could not be read.
    #[error("the kubeconfig to record")]
    RecordKubeconfig(#[source] fakekube_cassette::KubeconfigError),
    /// The cassette could not be written.
    #[error("recording")]
    Record(#[source] fakekube_cassette::RecordError),
    /// The recording proxy could not start.
    #[error("starting the recording proxy")]
    RecordProxy(#[source] fakekube_cassette::ProxyError),
    /// The warm pool did not reach its replicas in time.
    #[error("the warm pool did not fill")]
    WarmPoolNotFilled(#[source] Box<fakekube::WaitTimeout>),
    /// The `--pools` file could not be read.
    #[error("reading the pools file {path}")]
    ReadPools {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The `--pools` file is not a list of pools.
    #[error("the pools file {path} {message}")]
    Pools {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A pool of the `--pools` file is wrong.
    #[error("the pools file {path}: pool {index}")]
    PoolEntry {
        /// The file.
        path: String,
        /// The pool's place in the list, from 0.
        index: usize,
        /// What is wrong.
        #[source]
        source: agentsandbox::ConfigError,
    },
    /// The preflight could not ask the cluster.
    #[error("the preflight")]
    Preflight(#[source] agentsandbox::PreflightError),
    /// The preflight found problems; each was printed with its fix.
    #[error("the preflight found {0} problem(s); no trial ran")]
    PreflightFailed(usize),
    /// The provider command could not be started.
    #[error("starting the provider")]
    SpawnProvider(#[source] sandbox_protocol::SpawnError),
    /// The provider's WebSocket could not be opened.
    #[error("connecting to the provider")]
    ProviderUrl(#[source] sandbox_protocol::TransportError),
    /// The provider did not complete `initialize`.
    #[error("initializing the provider")]
    Initialize(#[source] sandbox_protocol::ConnectError),
    /// The Markdown table could not be written.
    #[error("writing the Markdown table to {path}")]
    WriteMarkdown {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// `error` and each of its causes, joined with `: `.
pub(crate) fn with_causes(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_causes_prints_every_cause_of_the_chain() {
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "address in use");
        let error = RunError::Runtime(io);
        assert_eq!(with_causes(&error), "starting a runtime: address in use");
    }
}
