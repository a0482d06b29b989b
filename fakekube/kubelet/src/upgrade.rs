//! HTTP/1.1 connection upgrades as the streaming subresources (`pods/exec`, `pods/attach`,
//! `pods/portforward`) meet them: recognising a WebSocket or a SPDY request, the SPDY
//! handshake's choice of stream protocol (`X-Stream-Protocol-Version`, in the client's order,
//! 403 when none fits), the WebSocket key checks, the `101 Switching Protocols` replies, and
//! taking the connection from hyper once the reply is out.

use crate::response::json_response;
use crate::status::ApiError;
use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts};

/// `X-Stream-Protocol-Version`: a stream protocol the client offers, and the one chosen.
pub const STREAM_PROTOCOL_VERSION: &str = "x-stream-protocol-version";
/// `X-Accepted-Stream-Protocol-Versions`: what the server offers, on a refused handshake.
const ACCEPTED_STREAM_PROTOCOL_VERSIONS: &str = "x-accepted-stream-protocol-versions";
/// The `Upgrade` token of SPDY as Kubernetes speaks it.
pub const SPDY_31: &str = "SPDY/3.1";

pub use crate::subprotocol::{has_token, is_websocket};

/// Whether the request asks to upgrade to SPDY (any version: an unsupported one is refused
/// by the caller's checks, as the API server refuses it).
pub fn is_spdy(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::UPGRADE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().to_ascii_lowercase().starts_with("spdy/"))
}

/// Every stream protocol the client offers, in its order (one per header line, or several
/// separated by commas).
pub fn offered_stream_protocols(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(STREAM_PROTOCOL_VERSION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// The SPDY handshake's choice: the first offered protocol the server speaks; `Ok(None)` when
/// the client offered none (an old client: the caller falls back to its first protocol
/// version); `Err` with the 403 reply (a Status, and the protocols the server speaks in
/// `X-Accepted-Stream-Protocol-Versions`) when nothing matches.
pub fn negotiate_stream_protocol(
    offered: &[String],
    supported: &[&'static str],
) -> Result<Option<&'static str>, Box<Response>> {
    if offered.is_empty() {
        return Ok(None);
    }
    if let Some(p) = offered
        .iter()
        .find_map(|o| supported.iter().copied().find(|s| s == o))
    {
        return Ok(Some(p));
    }
    let message = format!(
        "unable to upgrade: unable to negotiate protocol: client supports [{}], server supports [{}]",
        offered.join(" "),
        supported.join(" ")
    );
    let mut resp = json_response(
        StatusCode::FORBIDDEN,
        &ApiError::new(StatusCode::FORBIDDEN, "Forbidden", message).to_status(),
    );
    for s in supported {
        resp.headers_mut().append(
            ACCEPTED_STREAM_PROTOCOL_VERSIONS,
            HeaderValue::from_static(s),
        );
    }
    Err(Box::new(resp))
}

/// The `Sec-WebSocket-Key` of a WebSocket upgrade whose version is 13, or the Status that says
/// what is wrong.
pub fn websocket_key(headers: &HeaderMap) -> Result<Vec<u8>, ApiError> {
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|k| k.as_bytes().to_vec())
        .ok_or_else(|| ApiError::bad_request("Upgrade request required"))?;
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_none_or(|v| v.as_bytes() != b"13")
    {
        return Err(ApiError::bad_request(
            "websocket: unsupported version: 13 not found in 'Sec-Websocket-Version' header",
        ));
    }
    Ok(key)
}

/// Takes the pending upgrade from the request (resolves to the connection once the 101 reply
/// is written).
pub fn take(parts: &mut Parts) -> Result<hyper::upgrade::OnUpgrade, ApiError> {
    parts
        .extensions
        .remove::<hyper::upgrade::OnUpgrade>()
        .ok_or_else(|| ApiError::bad_request("Upgrade request required"))
}

/// `101 Switching Protocols` to WebSocket, echoing `protocol` when one was chosen.
pub fn websocket_switch(key: &[u8], protocol: Option<&str>) -> Response {
    let mut resp = switch("websocket");
    let h = resp.headers_mut();
    if let Ok(v) =
        HeaderValue::from_str(&tokio_tungstenite::tungstenite::handshake::derive_accept_key(key))
    {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Some(p) = protocol.filter(|p| !p.is_empty())
        && let Ok(v) = HeaderValue::from_str(p)
    {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, v);
    }
    resp
}

/// `101 Switching Protocols` to SPDY/3.1, naming the chosen stream protocol when there is one.
pub fn spdy_switch(protocol: Option<&'static str>) -> Response {
    let mut resp = switch(SPDY_31);
    if let Some(p) = protocol {
        resp.headers_mut()
            .insert(STREAM_PROTOCOL_VERSION, HeaderValue::from_static(p));
    }
    resp
}

/// An empty `101` with `Connection: Upgrade` and `Upgrade: <upgrade>`.
fn switch(upgrade: &'static str) -> Response {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static(upgrade));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(lines: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in lines {
            h.append(*n, HeaderValue::from_static(v));
        }
        h
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn spdy_and_websocket_requests_are_told_apart_by_their_headers() {
        let spdy = headers(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]);
        assert!(is_spdy(&spdy) && !is_websocket(&spdy));
        let ws = headers(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket"),
        ]);
        assert!(is_websocket(&ws) && !is_spdy(&ws));
    }

    #[test]
    fn stream_protocols_are_read_from_every_line_in_order() {
        let h = headers(&[
            (STREAM_PROTOCOL_VERSION, "v4.channel.k8s.io"),
            (STREAM_PROTOCOL_VERSION, "v3.channel.k8s.io, channel.k8s.io"),
        ]);
        assert_eq!(
            offered_stream_protocols(&h),
            strings(&["v4.channel.k8s.io", "v3.channel.k8s.io", "channel.k8s.io"])
        );
    }

    #[test]
    fn the_handshake_picks_in_client_order_and_refuses_with_403_and_what_it_speaks() {
        let supported = ["v4.channel.k8s.io", "channel.k8s.io"];
        let got = negotiate_stream_protocol(
            &strings(&["v5.channel.k8s.io", "channel.k8s.io", "v4.channel.k8s.io"]),
            &supported,
        );
        assert_eq!(got.ok(), Some(Some("channel.k8s.io")));
        assert_eq!(negotiate_stream_protocol(&[], &supported).ok(), Some(None));
        let refused = negotiate_stream_protocol(&strings(&["v9"]), &supported).err();
        let resp = refused.expect("refused");
        assert_eq!(resp.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            resp.headers()
                .get_all(ACCEPTED_STREAM_PROTOCOL_VERSIONS)
                .iter()
                .count(),
            2
        );
    }

    #[test]
    fn the_spdy_reply_names_the_protocol_and_the_upgrade() {
        let resp = spdy_switch(Some("portforward.k8s.io"));
        assert_eq!(resp.status(), StatusCode::SWITCHING_PROTOCOLS);
        assert_eq!(
            resp.headers().get(header::UPGRADE).map(|v| v.as_bytes()),
            Some(&b"SPDY/3.1"[..])
        );
        assert_eq!(
            resp.headers()
                .get(STREAM_PROTOCOL_VERSION)
                .map(|v| v.as_bytes()),
            Some(&b"portforward.k8s.io"[..])
        );
    }
}
