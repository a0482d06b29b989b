//! The state every request handler shares: the store, the authenticators and the authorizer,
//! the faults, the kubelet and the server's own settings. Built once by [`Builder::start`](crate::Builder::start).

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
pub(crate) struct Shared {
    pub(crate) store: Arc<Store>,
    /// Who a request is made by.
    pub(crate) authn: Arc<Authenticator>,
    /// What it may do.
    pub(crate) authz: Arc<Authorizer>,
    pub(crate) version: Version,
    /// `host:port`, for `/api`'s serverAddressByClientCIDRs.
    pub(crate) address: String,
    pub(crate) faults: Arc<Faults>,
    /// Fires when the server stops: watches and exec sessions end.
    pub(crate) shutdown: CancellationToken,
    /// How often an idle watch that allows bookmarks gets one.
    pub(crate) bookmark_interval: Duration,
    /// `--max-requests-inflight`.
    pub(crate) inflight: crate::inflight::Inflight,
    /// What the pod stream handlers need (the kubelet, the faults, the shutdown).
    pub(crate) pod_access: Arc<crate::pod_access::PodAccess>,
}
