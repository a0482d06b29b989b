//! The state every request handler shares: the store, the authenticators and the authorizer,
//! the faults, the nodes and the server's own settings. Built once by whoever starts the server
//! (`fakekube`'s builder).

use crate::authn::Authenticator;
use crate::authz::Authorizer;
use crate::discovery::Version;
use crate::faults::Faults;
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What every request handler shares.
#[derive(Debug)]
pub struct Shared {
    /// The objects.
    pub store: Arc<Store>,
    /// Who a request is made by.
    pub authn: Arc<Authenticator>,
    /// What it may do.
    pub authz: Arc<Authorizer>,
    /// The Kubernetes version it answers `/version` with.
    pub version: Version,
    /// `host:port`, for `/api`'s serverAddressByClientCIDRs.
    pub address: String,
    /// The injected faults.
    pub faults: Arc<Faults>,
    /// Fires when the server stops: watches and exec sessions end.
    pub shutdown: CancellationToken,
    /// How often an idle watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
    /// `--max-requests-inflight`.
    pub inflight: crate::inflight::Inflight,
    /// The nodes' kubelets, which serve the pod streams, logs and the node proxy.
    pub nodes: Arc<dyn crate::nodes::Nodes>,
}
