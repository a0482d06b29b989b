//! `pods/portforward` as the API server serves it: RBAC authorizes the request (`get` for a
//! WebSocket `GET`, `create` for a SPDY `POST`), then the kubelet's handler
//! (`fakekube_kubelet::portforward`, re-exported here) checks the pod and forwards.

pub(crate) use fakekube_kubelet::portforward::*;

use crate::authz::Caller;
use crate::rbac::Attributes;
use crate::route::ResourcePath;
use crate::state::Shared;
use crate::status::ApiError;
use axum::response::Response;
use http::{Method, request::Parts};
use std::sync::Arc;

/// Serves a `pods/portforward` request: authorization, the pod checks, then the upgrade the
/// client asked for, or the Status that explains why not.
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    caller: &Caller,
    parts: Parts,
    rp: &ResourcePath,
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
        subresource: "portforward",
        namespace: &rp.namespace,
        name: &rp.name,
    })?;
    serve_authorized(&shared.pod_access, parts, rp).await
}
