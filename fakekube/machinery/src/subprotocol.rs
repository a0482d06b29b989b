//! The headers of an upgrade request as the API server and the kubelet both read them:
//! whether a request asks for a WebSocket, and its `Sec-WebSocket-Protocol` entries with the
//! bearer token a browser-style client carries in them
//! (k8s.io/apiserver/pkg/authentication/request/websocket).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, HeaderName, header};

/// The prefix of the subprotocol entry that carries a bearer token (unpadded base64url).
pub const BEARER_PREFIX: &str = "base64url.bearer.authorization.k8s.io.";

/// Whether `name`'s comma-separated values include `token` (case-insensitive).
pub fn has_token(headers: &HeaderMap, name: HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Whether the request asks to upgrade to WebSocket.
pub fn is_websocket(headers: &HeaderMap) -> bool {
    has_token(headers, header::CONNECTION, "upgrade")
        && has_token(headers, header::UPGRADE, "websocket")
}

/// Every `Sec-WebSocket-Protocol` header line that is valid text.
pub fn protocol_lines(headers: &HeaderMap) -> Vec<&str> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// The bearer token carried in a `base64url.bearer.authorization.k8s.io.` subprotocol entry of
/// a WebSocket upgrade request, when there is a valid one alongside a real subprotocol.
pub fn protocol_token(headers: &HeaderMap) -> Option<String> {
    if !is_websocket(headers) {
        return None;
    }
    offered(&protocol_lines(headers)).token
}

/// The subprotocol entries a client offered, with the bearer-token entry taken out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offered {
    /// The entries to negotiate from, in the client's order.
    pub protocols: Vec<String>,
    /// The token from a `base64url.bearer.authorization.k8s.io.` entry, when one was present,
    /// valid, and accompanied by at least one real subprotocol (as the API server requires).
    pub token: Option<String>,
    /// Whether a bearer-token entry was present at all (valid or not).
    pub had_token_entry: bool,
}

/// Splits `Sec-WebSocket-Protocol` header lines into entries.
///
/// Without a bearer-token entry only the first line counts (the WebSocket servers of the API
/// server and kubelet read only that one); with one, the API server's authenticator first joins
/// every line minus the token entry, and that joined list is what is negotiated.
pub fn offered(lines: &[&str]) -> Offered {
    let split = |line: &str| -> Vec<String> {
        line.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let all: Vec<String> = lines.iter().flat_map(|l| split(l)).collect();
    let token_entries: Vec<&String> = all
        .iter()
        .filter(|p| p.starts_with(BEARER_PREFIX))
        .collect();
    if token_entries.is_empty() {
        return Offered {
            protocols: lines.first().map(|l| split(l)).unwrap_or_default(),
            token: None,
            had_token_entry: false,
        };
    }
    let token = token_entries.first().and_then(|entry| {
        let encoded = entry.get(BEARER_PREFIX.len()..).unwrap_or("");
        let raw = URL_SAFE_NO_PAD.decode(encoded.as_bytes()).ok()?;
        let text = String::from_utf8(raw).ok()?;
        (!text.is_empty()).then_some(text)
    });
    let protocols: Vec<String> = all
        .iter()
        .filter(|p| !p.starts_with(BEARER_PREFIX))
        .cloned()
        .collect();
    Offered {
        token: if protocols.is_empty() { None } else { token },
        protocols,
        had_token_entry: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn only_the_first_protocol_header_line_counts_without_a_token() {
        let o = offered(&[" v5.channel.k8s.io ,v4.channel.k8s.io", "channel.k8s.io"]);
        assert_eq!(
            o.protocols,
            strings(&["v5.channel.k8s.io", "v4.channel.k8s.io"])
        );
        assert_eq!(o.token, None);
        assert!(!o.had_token_entry);
    }

    #[test]
    fn a_bearer_protocol_entry_is_removed_and_decoded() {
        let entry = format!("{BEARER_PREFIX}{}", URL_SAFE_NO_PAD.encode("s3cr3t"));
        let o = offered(&[&format!("{entry}, v4.channel.k8s.io"), "channel.k8s.io"]);
        assert_eq!(o.token.as_deref(), Some("s3cr3t"));
        assert_eq!(
            o.protocols,
            strings(&["v4.channel.k8s.io", "channel.k8s.io"])
        );
    }

    #[test]
    fn a_bearer_protocol_entry_alone_or_malformed_yields_no_token() {
        let entry = format!("{BEARER_PREFIX}{}", URL_SAFE_NO_PAD.encode("s3cr3t"));
        let alone = offered(&[&entry]);
        assert_eq!(alone.token, None);
        assert!(alone.had_token_entry);
        let bad = offered(&[&format!("{BEARER_PREFIX}!!!, v5.channel.k8s.io")]);
        assert_eq!(bad.token, None);
        assert_eq!(bad.protocols, strings(&["v5.channel.k8s.io"]));
    }
}
