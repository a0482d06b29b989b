//! `pods/portforward`: connections to a pod's ports through the API server's connection, as on
//! a cluster (no pod IP is ever dialled): each forwarded connection reaches the pod's
//! [`PodNetwork`](fakekube_runtime::PodNetwork), where `nc -l` or `httpd` listen.
//!
//! Three ways in, each authorized as exec is (`get` for a WebSocket `GET`, `create` for a SPDY
//! `POST`) after the pod checks (404, `pod x does not have a host assigned`, and the kubelet's
//! `pod not found ("x_ns")` for a pod whose sandbox is not running):
//!
//! - SPDY (`POST`, `Upgrade: SPDY/3.1`, `X-Stream-Protocol-Version: portforward.k8s.io`):
//!   kubectl up to 1.30 by default, and every kubectl's fallback; one pair of streams (error,
//!   data) per local connection ([`spdy`]).
//! - SPDY tunnelled in WebSocket (`GET`, subprotocol `SPDY/3.1+portforward.k8s.io`): kubectl
//!   1.31 and later by default, 1.30 with `KUBECTL_PORT_FORWARD_WEBSOCKETS=true`; the same
//!   streams, in binary messages.
//! - WebSocket channels (`GET`, `v4.channel.k8s.io`, `v4.base64.channel.k8s.io` or no
//!   subprotocol, `?ports=…`): kube-rs and the Python client; two channels per port
//!   ([`websocket`]).
//!
//! # Layout
//!
//! - [`codec`]: subprotocols, the ports query, port prefixes, stream pairing, error wording
//!   (pure).
//! - [`spdy`]: stream pairs over SPDY, direct or tunnelled.
//! - [`websocket`]: channel pairs over WebSocket.
//!
//! # Known limitations
//!
//! - Only TCP; a pod listens only through the runtime's `PodNetwork` (`nc`, `httpd`, or a
//!   test's program).
//! - A WebSocket's offer is refused with 403 and an empty body when nothing fits, as the
//!   kubelet's WebSocket server does; the API server in front would say the same.

pub mod codec;
pub mod spdy;
pub mod websocket;

use crate::exec::codec::{Protocol, offered};
use crate::kubelet::PortForwardTarget;
use crate::pod_access::PodAccess;
use crate::route::ResourcePath;
use crate::status::ApiError;
use crate::{upgrade, websocket as ws};
use axum::body::Body;
use axum::response::Response;
use codec::WsProtocol;
use http::{Method, StatusCode, header, request::Parts};
use hyper_util::rt::TokioIo;
use std::sync::Arc;

/// Whether a resource path is `pods/portforward` of a core pod.
pub fn is_portforward(rp: &ResourcePath) -> bool {
    rp.pod_stream() == Some(crate::route::PodStream::PortForward)
}

/// Serves an authorized port-forward request (the API server's `pods/portforward`, or the
/// kubelet's own `/portForward`, authorized as `nodes/proxy`): the pod checks, then the upgrade.
pub async fn serve_authorized(
    streams: &Arc<PodAccess>,
    mut parts: Parts,
    rp: &ResourcePath,
) -> Result<Response, ApiError> {
    let target = resolve(streams, rp)?;
    let shutdown = streams.shutdown.clone();
    if parts.method == Method::POST && upgrade::is_spdy(&parts.headers) {
        let offered = upgrade::offered_stream_protocols(&parts.headers);
        let name = match upgrade::negotiate_stream_protocol(&offered, &[codec::SPDY_PROTOCOL]) {
            Ok(name) => name,
            Err(refused) => return Ok(*refused),
        };
        let on_upgrade = upgrade::take(&mut parts)?;
        tokio::spawn(async move {
            match on_upgrade.await {
                Ok(io) => {
                    tokio::select! {
                        () = spdy::serve(TokioIo::new(io), target) => {}
                        () = shutdown.cancelled() => {}
                    }
                }
                Err(e) => tracing::debug!(error = %e, "portforward: the upgrade failed"),
            }
        });
        return Ok(upgrade::spdy_switch(name));
    }
    if parts.method != Method::GET || !upgrade::is_websocket(&parts.headers) {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    let key = upgrade::websocket_key(&parts.headers)?;
    let lines: Vec<&str> = parts
        .headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let Some(protocol) = codec::negotiate(&offered(&lines).protocols) else {
        tracing::debug!(?lines, "portforward: no subprotocol served");
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::FORBIDDEN;
        return Ok(resp);
    };
    let ports = if protocol == WsProtocol::Tunnel {
        Vec::new()
    } else {
        codec::parse_ports(parts.uri.query()).map_err(|e| ApiError::bad_request(e.to_string()))?
    };
    let on_upgrade = upgrade::take(&mut parts)?;
    tokio::spawn(async move {
        let io = match on_upgrade.await {
            Ok(io) => TokioIo::new(io),
            Err(e) => {
                tracing::debug!(error = %e, "portforward: the upgrade failed");
                return;
            }
        };
        let session = async move {
            match protocol {
                WsProtocol::Tunnel => spdy::serve(ws::tunnel(io), target).await,
                WsProtocol::Base64 => websocket::serve(io, Protocol::V4Base64, ports, target).await,
                WsProtocol::Binary | WsProtocol::Unnamed => {
                    websocket::serve(io, Protocol::V4, ports, target).await
                }
            }
        };
        tokio::select! {
            () = session => {}
            () = shutdown.cancelled() => {}
        }
    });
    Ok(upgrade::websocket_switch(&key, protocol.name()))
}

/// Asks the kubelet for the pod's network, with the API server's errors; without a kubelet, no
/// pod runs anywhere.
fn resolve(streams: &PodAccess, rp: &ResourcePath) -> Result<PortForwardTarget, ApiError> {
    match streams.kubelet.as_ref() {
        Some(kubelet) => kubelet.portforward_target(&rp.namespace, &rp.name),
        None => {
            streams.pod(&rp.namespace, &rp.name)?;
            Err(ApiError::internal(
                "error dialing backend: this fakekube runs without a kubelet",
            ))
        }
    }
}

#[cfg(test)]
mod tests;
