//! `pods/exec` and `pods/attach` as the API server serves them: RBAC authorizes the request
//! (`get` for a WebSocket `GET`, `create` for a SPDY `POST`), then the kubelet's handler
//! (`fakekube_kubelet::exec`, re-exported here) checks the pod and runs the session, as the
//! API server hands such a request to the node's kubelet.

pub(crate) use fakekube_kubelet::exec::*;

use crate::authz::Caller;
use crate::rbac::Attributes;
use crate::route::ResourcePath;
use crate::state::Shared;
use crate::status::ApiError;
use axum::response::Response;
use http::{Method, request::Parts};
use std::sync::Arc;

/// Serves a `pods/exec` or `pods/attach` request: authorization, the pod checks, then the
/// WebSocket or SPDY upgrade, or the Status that explains why not.
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    caller: &Caller,
    parts: Parts,
    rp: &ResourcePath,
    kind: Kind,
) -> Result<Response, ApiError> {
    let verb = match parts.method {
        Method::GET => "get",
        Method::POST => "create",
        ref m => return Err(ApiError::method_not_allowed(m.as_str(), "pods")),
    };
    caller.authorize(&Attributes {
        verb,
        group: "",
        resource: "pods",
        subresource: kind.as_str(),
        namespace: &rp.namespace,
        name: &rp.name,
    })?;
    serve_authorized(&shared.pod_access, parts, rp, kind).await
}
