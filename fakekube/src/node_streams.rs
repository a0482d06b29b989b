//! The API server's way to the in-process kubelet: [`Nodes`] over the kubelet's
//! [`PodAccess`], as kube-apiserver reaches a node's kubelet over its port. The API server has
//! authorized each request before it gets here; the kubelet's handlers check the pod and serve.

use crate::pod_access::PodAccess;
use crate::query::Query;
use crate::route::{PodStream, ResourcePath};
use crate::status::ApiError;
use axum::response::Response;
use fakekube_apiserver::nodes::{Nodes, Pending};
use fakekube_kubelet::{exec, kubelet_api, logs, portforward};
use http::request::Parts;
use std::sync::Arc;

/// The embedded fake's node: its kubelet (when it runs), reached in process.
#[derive(Debug)]
pub(crate) struct InProcess(pub(crate) Arc<PodAccess>);

impl Nodes for InProcess {
    fn stream(
        &self,
        parts: Parts,
        rp: ResourcePath,
        stream: PodStream,
    ) -> Pending<Result<Response, ApiError>> {
        let access = self.0.clone();
        Box::pin(async move {
            match stream {
                PodStream::Exec => {
                    exec::serve_authorized(&access, parts, &rp, exec::Kind::Exec).await
                }
                PodStream::Attach => {
                    exec::serve_authorized(&access, parts, &rp, exec::Kind::Attach).await
                }
                PodStream::PortForward => portforward::serve_authorized(&access, parts, &rp).await,
            }
        })
    }

    fn logs(&self, rp: &ResourcePath, query: &Query) -> Result<Response, ApiError> {
        logs::serve(&self.0, rp, query)
    }

    fn proxy(&self, parts: Parts, node: &str, path: &str) -> Pending<Response> {
        let access = self.0.clone();
        let (node, path) = (node.to_string(), path.to_string());
        Box::pin(async move { kubelet_api::proxy(&access, parts, &node, &path).await })
    }
}
