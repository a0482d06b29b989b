//! The pure part of port-forwarding: which WebSocket subprotocol a client gets, the `ports`
//! of a WebSocket request, the port prefix of each channel's first message, how SPDY stream
//! pairs are keyed, and how failures are worded (as the kubelet and containerd word them).

use crate::kubelet::PortForwardTarget;

/// The SPDY stream protocol of port-forwarding (`X-Stream-Protocol-Version`).
pub const SPDY_PROTOCOL: &str = "portforward.k8s.io";

/// What a port-forward WebSocket carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WsProtocol {
    /// `SPDY/3.1+portforward.k8s.io`: SPDY framing tunnelled in binary messages (kubectl 1.30
    /// with `KUBECTL_PORT_FORWARD_WEBSOCKETS=true`, 1.31 and later by default).
    Tunnel,
    /// `v4.channel.k8s.io`: two channels per port in binary messages (kube-rs, Python).
    Binary,
    /// `v4.base64.channel.k8s.io`: the same in base64 text messages.
    Base64,
    /// No subprotocol offered: binary channels, no protocol header in the reply.
    Unnamed,
}

impl WsProtocol {
    /// The name echoed in `Sec-WebSocket-Protocol` (`None` for [`WsProtocol::Unnamed`]).
    pub fn name(self) -> Option<&'static str> {
        match self {
            WsProtocol::Tunnel => Some("SPDY/3.1+portforward.k8s.io"),
            WsProtocol::Binary => Some("v4.channel.k8s.io"),
            WsProtocol::Base64 => Some("v4.base64.channel.k8s.io"),
            WsProtocol::Unnamed => None,
        }
    }
}

/// The subprotocol for what the client offered, in its order (as the API server's tunnelling
/// handler and the kubelet choose); `None` when nothing offered is served.
pub fn negotiate(offered: &[String]) -> Option<WsProtocol> {
    if offered.is_empty() {
        return Some(WsProtocol::Unnamed);
    }
    let served = [WsProtocol::Tunnel, WsProtocol::Binary, WsProtocol::Base64];
    offered
        .iter()
        .find_map(|o| served.into_iter().find(|p| p.name() == Some(o.as_str())))
}

/// Why the ports of a WebSocket request are not usable (the kubelet's wording).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortsError {
    /// No `ports` at all.
    #[error("query parameter \"port\" is required")]
    Missing,
    /// An empty value.
    #[error("query parameter \"port\" cannot be empty")]
    Empty,
    /// A value that is not a port number.
    #[error(
        "unable to parse \"{0}\" as a port: strconv.ParseUint: parsing \"{1}\": invalid syntax"
    )]
    NotANumber(String, String),
    /// Port 0.
    #[error("port \"{0}\" must be > 0")]
    Zero(String),
}

/// The ports of a WebSocket port-forward: every `ports` (or `port`) value, each a
/// comma-separated list, in order.
pub fn parse_ports(query: Option<&str>) -> Result<Vec<u16>, PortsError> {
    let values: Vec<String> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .filter(|(k, _)| k == "ports" || k == "port")
        .map(|(_, v)| v.into_owned())
        .collect();
    if values.is_empty() {
        return Err(PortsError::Missing);
    }
    let mut ports = Vec::new();
    for value in values {
        if value.is_empty() {
            return Err(PortsError::Empty);
        }
        for p in value.split(',') {
            let port: u16 = p
                .trim()
                .parse()
                .map_err(|_| PortsError::NotANumber(value.clone(), p.to_string()))?;
            if port == 0 {
                return Err(PortsError::Zero(value.clone()));
            }
            ports.push(port);
        }
    }
    Ok(ports)
}

/// A port as the `port` header of a SPDY stream gives it: 1 to 65535.
pub fn parse_port_header(value: Option<&str>) -> Option<u16> {
    value?.parse::<u16>().ok().filter(|p| *p != 0)
}

/// The first message of each channel of a WebSocket port-forward: the port, little-endian.
pub fn port_prefix(port: u16) -> [u8; 2] {
    port.to_le_bytes()
}

/// The key that pairs a SPDY data stream with its error stream: the `requestID` header, or
/// for a client too old to send one, the error stream's id (the data stream's id minus 2).
pub fn request_id(header: Option<&str>, data: bool, stream_id: u32) -> String {
    match header.filter(|h| !h.is_empty()) {
        Some(id) => id.to_string(),
        None if data => stream_id.saturating_sub(2).to_string(),
        None => stream_id.to_string(),
    }
}

/// What the error stream says when nothing listens on the port (the kubelet's prefix around
/// containerd's message).
pub fn refused(port: u16, target: &PortForwardTarget) -> String {
    format!(
        "error forwarding port {port} to pod {sandbox}, uid : failed to execute portforward in network namespace \"{netns}\": failed to connect to localhost:{port} inside namespace \"{sandbox}\", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 dial tcp6: address localhost: no suitable address found ",
        sandbox = target.sandbox_id,
        netns = target.netns,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn the_tunnel_and_the_v4_channels_are_chosen_in_client_order() {
        assert_eq!(
            negotiate(&strings(&["SPDY/3.1+portforward.k8s.io"])),
            Some(WsProtocol::Tunnel)
        );
        assert_eq!(
            negotiate(&strings(&["v5.channel.k8s.io", "v4.channel.k8s.io"])),
            Some(WsProtocol::Binary)
        );
        assert_eq!(
            negotiate(&strings(&["v4.base64.channel.k8s.io", "v4.channel.k8s.io"])),
            Some(WsProtocol::Base64)
        );
        assert_eq!(negotiate(&[]), Some(WsProtocol::Unnamed));
        assert_eq!(negotiate(&strings(&["v5.channel.k8s.io"])), None);
    }

    #[test]
    fn ports_come_from_every_value_comma_separated_and_bad_ones_are_worded_as_the_kubelet_does() {
        assert_eq!(parse_ports(Some("&ports=80%2C1234")), Ok(vec![80, 1234]));
        assert_eq!(parse_ports(Some("ports=80&ports=81")), Ok(vec![80, 81]));
        assert_eq!(parse_ports(None), Err(PortsError::Missing));
        assert_eq!(parse_ports(Some("ports=")), Err(PortsError::Empty));
        assert_eq!(
            parse_ports(Some("ports=80,x")).map_err(|e| e.to_string()),
            Err("unable to parse \"80,x\" as a port: strconv.ParseUint: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            parse_ports(Some("ports=0")),
            Err(PortsError::Zero("0".into()))
        );
        assert_eq!(parse_port_header(Some("8080")), Some(8080));
        assert_eq!(parse_port_header(Some("0")), None);
        assert_eq!(parse_port_header(Some("70000")), None);
        assert_eq!(parse_port_header(None), None);
    }

    #[test]
    fn streams_pair_by_request_id_or_by_consecutive_ids() {
        assert_eq!(request_id(Some("7"), true, 99), "7");
        assert_eq!(request_id(None, false, 5), "5");
        assert_eq!(request_id(Some(""), true, 7), "5");
        assert_eq!(port_prefix(8080), [0x90, 0x1f]);
    }
}
