//! How the API server reaches the nodes' kubelets (kube-apiserver's kubelet client): the pod
//! subresources it hands to the pod's kubelet once it has authorized them (`pods/exec`,
//! `pods/attach`, `pods/portforward`, `pods/log`) and the node proxy
//! (`/api/v1/nodes/<node>/proxy/...`). The API server knows no kubelet: whoever runs it beside
//! one (the `fakekube` crate, over its in-process kubelet) gives it a [`Nodes`].

use crate::query::Query;
use crate::route::{PodStream, ResourcePath};
use crate::status::ApiError;
use axum::response::Response;
use http::request::Parts;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// A response still to come (an upgraded stream is answered once the pod is checked).
pub type Pending<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The kubelets of the cluster's nodes, as the API server reaches them.
pub trait Nodes: Send + Sync + fmt::Debug {
    /// Serves an authorized `pods/exec`, `pods/attach` or `pods/portforward` request.
    fn stream(
        &self,
        parts: Parts,
        rp: ResourcePath,
        stream: PodStream,
    ) -> Pending<Result<Response, ApiError>>;

    /// Serves an authorized `pods/log` request.
    fn logs(&self, rp: &ResourcePath, query: &Query) -> Result<Response, ApiError>;

    /// Serves an authorized node proxy request for `path` on node `node`.
    fn proxy(&self, parts: Parts, node: &str, path: &str) -> Pending<Response>;
}
