//! Why a run could not start, each variant named for the step that failed and keeping its
//! cause; [`with_causes`] prints the whole chain.

use std::error::Error;

/// A step before the trials that failed; the run then exits 1 without running any trial.
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
