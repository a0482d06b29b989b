//! The pure part of the remote-command protocol: subprotocol negotiation, channel frames in the
//! binary and base64 framings, the v5 CLOSE message, the resize JSON stream and the status
//! payloads written on the error channel. No I/O here; the session drives it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// Channel 0: the process's standard input (client to server).
pub const STDIN: u8 = 0;
/// Channel 1: standard output (server to client).
pub const STDOUT: u8 = 1;
/// Channel 2: standard error (server to client).
pub const STDERR: u8 = 2;
/// Channel 3: the error channel, where the status goes.
pub const ERROR: u8 = 3;
/// Channel 4: terminal resize events (client to server, tty only).
pub const RESIZE: u8 = 4;
/// Channel 255: v5's CLOSE message, `[255, channel]`.
pub const CLOSE: u8 = 255;

pub use crate::subprotocol::{BEARER_PREFIX, Offered, offered};

/// A remote-command WebSocket subprotocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `v5.channel.k8s.io`: binary framing, JSON status, half-close with `[255, ch]`.
    V5,
    /// `v4.channel.k8s.io`: binary framing, JSON status.
    V4,
    /// `v4.base64.channel.k8s.io`: base64 text framing, JSON status.
    V4Base64,
    /// `channel.k8s.io`: binary framing; the error channel carries text, and only on failure.
    Channel,
    /// `base64.channel.k8s.io`: base64 text framing with the v1 error channel.
    Base64,
    /// No subprotocol offered at all: served as `channel.k8s.io`, with no protocol header.
    Unnamed,
}

/// The subprotocols the server speaks, in the order a name is looked up (the client's order
/// decides which one wins).
const SUPPORTED: [Protocol; 5] = [
    Protocol::V5,
    Protocol::V4,
    Protocol::V4Base64,
    Protocol::Channel,
    Protocol::Base64,
];

impl Protocol {
    /// The exact name echoed in `Sec-WebSocket-Protocol` (empty for [`Protocol::Unnamed`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::V5 => "v5.channel.k8s.io",
            Protocol::V4 => "v4.channel.k8s.io",
            Protocol::V4Base64 => "v4.base64.channel.k8s.io",
            Protocol::Channel => "channel.k8s.io",
            Protocol::Base64 => "base64.channel.k8s.io",
            Protocol::Unnamed => "",
        }
    }

    /// Whether frames are base64 text (`'0'+ch` then padded base64) rather than binary.
    pub fn is_base64(self) -> bool {
        matches!(self, Protocol::V4Base64 | Protocol::Base64)
    }

    /// How the status is written on the error channel under this subprotocol.
    pub fn status_style(self) -> StatusStyle {
        match self {
            Protocol::V5 => StatusStyle::Translated,
            Protocol::V4 | Protocol::V4Base64 => StatusStyle::Json,
            Protocol::Channel | Protocol::Base64 | Protocol::Unnamed => StatusStyle::Text,
        }
    }

    /// Whether the client may half-close a channel with `[255, ch]` (v5 only).
    pub fn has_close(self) -> bool {
        self == Protocol::V5
    }
}

/// A remote-command protocol over SPDY, chosen at the upgrade with `X-Stream-Protocol-Version`
/// (one SPDY stream per channel, named by its `streamtype` header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamProtocol {
    /// `v4.channel.k8s.io`: JSON `Status` on the error stream.
    V4,
    /// `v3.channel.k8s.io`: adds the resize stream.
    V3,
    /// `v2.channel.k8s.io`.
    V2,
    /// `channel.k8s.io` (also what a client that offers nothing gets).
    V1,
}

impl StreamProtocol {
    /// The names the server speaks, in the order it prefers them (the client's order decides).
    pub const NAMES: [&'static str; 4] = [
        "v4.channel.k8s.io",
        "v3.channel.k8s.io",
        "v2.channel.k8s.io",
        "channel.k8s.io",
    ];

    /// The protocol of a negotiated name (`None`, nothing negotiated: v1, as the kubelet
    /// falls back).
    pub fn from_name(name: Option<&str>) -> Self {
        match name {
            Some("v4.channel.k8s.io") => StreamProtocol::V4,
            Some("v3.channel.k8s.io") => StreamProtocol::V3,
            Some("v2.channel.k8s.io") => StreamProtocol::V2,
            _ => StreamProtocol::V1,
        }
    }

    /// How the status is written on the error stream.
    pub fn status_style(self) -> StatusStyle {
        if self == StreamProtocol::V4 {
            StatusStyle::Json
        } else {
            StatusStyle::Text
        }
    }

    /// Whether a terminal's resize stream exists (v3 and later).
    pub fn has_resize(self) -> bool {
        matches!(self, StreamProtocol::V4 | StreamProtocol::V3)
    }
}

/// How a session reports the process's end on the error channel, whatever carries it
/// (a WebSocket subprotocol, or a SPDY stream protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusStyle {
    /// v5 over WebSocket, answered by the API server's stream translator: the JSON `Status`,
    /// always sent, with the translator's wording of a non-zero exit.
    Translated,
    /// v4 (WebSocket or SPDY), answered by the kubelet: the JSON `Status`, always sent.
    Json,
    /// v1 to v3: nothing on success, the failure's message text otherwise.
    Text,
}

/// Why no subprotocol could be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NegotiateError {
    /// The client offered subprotocols and none is served (the handshake's 403).
    #[error("none of the offered subprotocols is supported: {offered:?}")]
    NoMatch {
        /// What the client offered.
        offered: Vec<String>,
    },
}

/// Chooses the subprotocol: the first offered entry the server speaks, in the client's order.
/// `allow_v5 = false` ignores `v5.channel.k8s.io`, as an API server older than 1.30 does.
/// Nothing offered is [`Protocol::Unnamed`].
pub fn negotiate(offered: &[String], allow_v5: bool) -> Result<Protocol, NegotiateError> {
    if offered.is_empty() {
        return Ok(Protocol::Unnamed);
    }
    offered
        .iter()
        .find_map(|name| {
            SUPPORTED
                .iter()
                .copied()
                .filter(|p| allow_v5 || *p != Protocol::V5)
                .find(|p| p.as_str() == name)
        })
        .ok_or_else(|| NegotiateError::NoMatch {
            offered: offered.to_vec(),
        })
}

/// One encoded WebSocket message: its payload and whether it goes as a text frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// `true` for a text frame (the base64 framings), `false` for binary.
    pub text: bool,
    /// The message payload, channel marker included.
    pub data: Vec<u8>,
}

/// Encodes `payload` for `channel` in `protocol`'s framing (server to client).
pub fn encode(protocol: Protocol, channel: u8, payload: &[u8]) -> Encoded {
    if protocol.is_base64() {
        let mut data = Vec::with_capacity(1 + payload.len().div_ceil(3) * 4);
        data.push(b'0'.wrapping_add(channel));
        let mut text = String::new();
        STANDARD.encode_string(payload, &mut text);
        data.extend_from_slice(text.as_bytes());
        Encoded { text: true, data }
    } else {
        let mut data = Vec::with_capacity(1 + payload.len());
        data.push(channel);
        data.extend_from_slice(payload);
        Encoded { text: false, data }
    }
}

/// What one client message means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// Bytes for a channel (0 stdin, 4 resize, or any other number, which the session drops).
    Data {
        /// The channel number.
        channel: u8,
        /// The decoded payload.
        payload: Vec<u8>,
    },
    /// v5's CLOSE of one channel.
    Close(u8),
    /// An empty message (no channel byte): ignored, as real servers do.
    Empty,
}

/// Why a client message could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A base64 framing message whose first byte is not a channel digit.
    #[error("the channel marker {0:#04x} is not a digit")]
    BadChannelDigit(u8),
    /// A base64 framing message whose payload is not valid base64.
    #[error("the payload is not valid base64")]
    BadBase64,
    /// A v5 CLOSE message that is not exactly `[255, ch]` with `ch` a known channel.
    #[error("malformed CLOSE message of {len} bytes")]
    BadClose {
        /// The message length.
        len: usize,
    },
}

/// Decodes one client message (text or binary frame alike) in `protocol`'s framing.
pub fn decode(protocol: Protocol, message: &[u8]) -> Result<Inbound, DecodeError> {
    let Some((&first, rest)) = message.split_first() else {
        return Ok(Inbound::Empty);
    };
    if protocol.is_base64() {
        if !first.is_ascii_digit() {
            return Err(DecodeError::BadChannelDigit(first));
        }
        let payload = STANDARD.decode(rest).map_err(|_| DecodeError::BadBase64)?;
        return Ok(Inbound::Data {
            channel: first - b'0',
            payload,
        });
    }
    if first == CLOSE && protocol.has_close() {
        return match rest {
            [ch] if *ch <= RESIZE => Ok(Inbound::Close(*ch)),
            _ => Err(DecodeError::BadClose { len: message.len() }),
        };
    }
    Ok(Inbound::Data {
        channel: first,
        payload: rest.to_vec(),
    })
}

/// A terminal size sent on the resize channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct TermSize {
    /// Columns.
    #[serde(rename = "Width")]
    pub width: u16,
    /// Rows.
    #[serde(rename = "Height")]
    pub height: u16,
}

/// The most resize bytes buffered while waiting for the end of a JSON value.
const RESIZE_BUFFER_LIMIT: usize = 64 * 1024;

/// Decodes the resize channel as one continuous JSON stream, as real servers do: a value may
/// span messages and one message may hold several values. After invalid JSON the stream is
/// dead and everything later is ignored (the real decoder goroutine stops too).
#[derive(Debug, Default)]
pub struct ResizeDecoder {
    /// Bytes of an incomplete value.
    pending: Vec<u8>,
    /// Set once the stream held invalid JSON.
    broken: bool,
}

impl ResizeDecoder {
    /// Feeds bytes; returns the sizes completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<TermSize> {
        if self.broken {
            return Vec::new();
        }
        self.pending.extend_from_slice(bytes);
        let mut sizes = Vec::new();
        let mut consumed = 0;
        {
            let mut stream =
                serde_json::Deserializer::from_slice(&self.pending).into_iter::<TermSize>();
            loop {
                match stream.next() {
                    Some(Ok(size)) => {
                        sizes.push(size);
                        consumed = stream.byte_offset();
                    }
                    Some(Err(e)) if e.is_eof() => break,
                    Some(Err(_)) => {
                        self.broken = true;
                        break;
                    }
                    None => {
                        consumed = self.pending.len();
                        break;
                    }
                }
            }
        }
        if self.broken || self.pending.len() - consumed > RESIZE_BUFFER_LIMIT {
            self.broken = true;
            self.pending = Vec::new();
        } else {
            self.pending.drain(..consumed);
        }
        sizes
    }

    /// Whether the stream held invalid JSON (later bytes are ignored).
    #[cfg(test)]
    pub fn is_broken(&self) -> bool {
        self.broken
    }
}

/// `Success`, as `json.Marshal(metav1.Status)` writes it.
pub fn status_success() -> Value {
    json!({ "metadata": {}, "status": "Success" })
}

/// The message of a non-zero exit: what the API server's v5 translator writes, or what the
/// kubelet writes for the v4 and older protocols (naming the command).
pub fn exit_message(style: StatusStyle, code: i32, argv: &[String]) -> String {
    if style == StatusStyle::Translated {
        format!(
            "command terminated with non-zero exit code: command terminated with exit code {code}"
        )
    } else {
        format!(
            "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
            argv.join(" ")
        )
    }
}

/// `NonZeroExitCode` with the `ExitCode` cause that client-go, Python and kube-rs read.
pub fn status_exit(message: &str, code: i32) -> Value {
    json!({
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "NonZeroExitCode",
        "details": { "causes": [ { "reason": "ExitCode", "message": code.to_string() } ] },
    })
}

/// `InternalError` (`apierrors.NewInternalError`) for an exec that failed without an exit code.
pub fn status_internal(cause: &str) -> Value {
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("Internal error occurred: {cause}"),
        "reason": "InternalError",
        "details": { "causes": [ { "message": cause } ] },
        "code": 500,
    })
}

/// The error-channel payload for `status`: the JSON Status for v4 and v5; for the older
/// protocols nothing on success and the message text on failure.
pub fn error_channel_payload(style: StatusStyle, status: &Value) -> Option<Vec<u8>> {
    if style != StatusStyle::Text {
        return Some(serde_json::to_vec(status).unwrap_or_default());
    }
    if status.get("status").and_then(Value::as_str) == Some("Success") {
        return None;
    }
    Some(
        status
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .as_bytes()
            .to_vec(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn spdy_stream_protocols_map_to_their_status_style_and_resize() {
        let v4 = StreamProtocol::from_name(Some("v4.channel.k8s.io"));
        assert_eq!(v4.status_style(), StatusStyle::Json);
        assert!(v4.has_resize());
        let v2 = StreamProtocol::from_name(Some("v2.channel.k8s.io"));
        assert_eq!(v2.status_style(), StatusStyle::Text);
        assert!(!v2.has_resize());
        assert_eq!(StreamProtocol::from_name(None), StreamProtocol::V1);
        for name in StreamProtocol::NAMES {
            assert_ne!(
                StreamProtocol::from_name(Some(name)) == StreamProtocol::V1,
                name != "channel.k8s.io"
            );
        }
    }

    #[test]
    fn negotiation_picks_the_first_supported_entry_in_client_order() {
        let got = negotiate(&strings(&["v4.channel.k8s.io", "v5.channel.k8s.io"]), true);
        assert_eq!(got, Ok(Protocol::V4));
        let got = negotiate(
            &strings(&["x-unknown", "base64.channel.k8s.io", "v5.channel.k8s.io"]),
            true,
        );
        assert_eq!(got, Ok(Protocol::Base64));
    }

    #[test]
    fn negotiation_without_v5_falls_to_v4_or_refuses_a_v5_only_offer() {
        let offer = strings(&["v5.channel.k8s.io", "v4.channel.k8s.io"]);
        assert_eq!(negotiate(&offer, false), Ok(Protocol::V4));
        assert_eq!(negotiate(&offer, true), Ok(Protocol::V5));
        assert!(matches!(
            negotiate(&strings(&["v5.channel.k8s.io"]), false),
            Err(NegotiateError::NoMatch { .. })
        ));
    }

    #[test]
    fn negotiation_of_nothing_is_the_unnamed_protocol_and_of_junk_is_refused() {
        assert_eq!(negotiate(&[], true), Ok(Protocol::Unnamed));
        assert_eq!(
            negotiate(&strings(&["v6.channel.k8s.io", "V5.CHANNEL.K8S.IO"]), true),
            Err(NegotiateError::NoMatch {
                offered: strings(&["v6.channel.k8s.io", "V5.CHANNEL.K8S.IO"])
            })
        );
    }

    #[test]
    fn binary_frames_are_a_channel_byte_and_the_payload() {
        assert_eq!(
            encode(Protocol::V5, STDOUT, b"hi"),
            Encoded {
                text: false,
                data: b"\x01hi".to_vec()
            }
        );
        assert_eq!(
            encode(Protocol::V4, ERROR, b""),
            Encoded {
                text: false,
                data: vec![3]
            }
        );
    }

    #[test]
    fn base64_frames_are_a_digit_and_padded_base64_text() {
        assert_eq!(
            encode(Protocol::V4Base64, STDERR, b"hi"),
            Encoded {
                text: true,
                data: b"2aGk=".to_vec()
            }
        );
        assert_eq!(
            encode(Protocol::Base64, STDOUT, b""),
            Encoded {
                text: true,
                data: b"1".to_vec()
            }
        );
        assert_eq!(
            decode(Protocol::V4Base64, b"0aGk="),
            Ok(Inbound::Data {
                channel: 0,
                payload: b"hi".to_vec()
            })
        );
        assert_eq!(
            decode(Protocol::Base64, b"xaGk="),
            Err(DecodeError::BadChannelDigit(b'x'))
        );
        assert_eq!(
            decode(Protocol::Base64, b"0a*k="),
            Err(DecodeError::BadBase64)
        );
    }

    #[test]
    fn v5_close_is_exactly_two_bytes_naming_a_known_channel() {
        assert_eq!(decode(Protocol::V5, &[255, 0]), Ok(Inbound::Close(0)));
        assert_eq!(
            decode(Protocol::V5, &[255, 0, 0]),
            Err(DecodeError::BadClose { len: 3 })
        );
        assert_eq!(
            decode(Protocol::V5, &[255]),
            Err(DecodeError::BadClose { len: 1 })
        );
        assert_eq!(
            decode(Protocol::V5, &[255, 9]),
            Err(DecodeError::BadClose { len: 2 })
        );
    }

    #[test]
    fn channel_255_is_plain_data_before_v5() {
        assert_eq!(
            decode(Protocol::V4, &[255, 0]),
            Ok(Inbound::Data {
                channel: 255,
                payload: vec![0]
            })
        );
        assert_eq!(decode(Protocol::V4, &[]), Ok(Inbound::Empty));
    }

    #[test]
    fn resize_values_may_span_messages_and_share_one() {
        let mut d = ResizeDecoder::default();
        assert_eq!(d.push(b"{\"Width\":120,"), vec![]);
        assert_eq!(
            d.push(b"\"Height\":40}\n{\"Width\":80,\"Height\":24}{\"Wid"),
            vec![
                TermSize {
                    width: 120,
                    height: 40
                },
                TermSize {
                    width: 80,
                    height: 24
                }
            ]
        );
        assert_eq!(
            d.push(b"th\":1,\"Height\":2}"),
            vec![TermSize {
                width: 1,
                height: 2
            }]
        );
        assert!(!d.is_broken());
    }

    #[test]
    fn resize_junk_breaks_the_stream_for_good() {
        let mut d = ResizeDecoder::default();
        assert_eq!(d.push(b"{\"Width\":-1,\"Height\":2}"), vec![]);
        assert!(d.is_broken());
        assert_eq!(d.push(b"{\"Width\":1,\"Height\":2}"), vec![]);
    }

    #[test]
    fn status_payloads_are_worded_as_json_marshal_writes_them() {
        assert_eq!(
            serde_json::to_string(&status_success()).ok(),
            Some(r#"{"metadata":{},"status":"Success"}"#.to_string())
        );
        let msg = exit_message(
            StatusStyle::Translated,
            3,
            &strings(&["sh", "-c", "exit 3"]),
        );
        assert_eq!(
            serde_json::to_string(&status_exit(&msg, 3)).ok(),
            Some(
                r#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: command terminated with exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#
                    .to_string()
            )
        );
        assert_eq!(
            exit_message(StatusStyle::Json, 3, &strings(&["sh", "-c", "exit 3"])),
            "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3"
        );
        assert_eq!(
            serde_json::to_string(&status_internal("boom")).ok(),
            Some(
                r#"{"metadata":{},"status":"Failure","message":"Internal error occurred: boom","reason":"InternalError","details":{"causes":[{"message":"boom"}]},"code":500}"#
                    .to_string()
            )
        );
    }

    #[test]
    fn v1_error_channel_is_silent_on_success_and_text_on_failure() {
        assert_eq!(
            error_channel_payload(Protocol::Channel.status_style(), &status_success()),
            None
        );
        assert_eq!(
            error_channel_payload(
                Protocol::Base64.status_style(),
                &status_exit("it failed", 2)
            ),
            Some(b"it failed".to_vec())
        );
        assert!(error_channel_payload(Protocol::V4.status_style(), &status_success()).is_some());
    }

    fn any_protocol() -> impl Strategy<Value = Protocol> {
        prop_oneof![
            Just(Protocol::V5),
            Just(Protocol::V4),
            Just(Protocol::V4Base64),
            Just(Protocol::Channel),
            Just(Protocol::Base64),
            Just(Protocol::Unnamed),
        ]
    }

    proptest! {
        #[test]
        fn frames_round_trip_through_encode_and_decode(
            protocol in any_protocol(),
            channel in 0u8..=9,
            payload in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            let e = encode(protocol, channel, &payload);
            prop_assert_eq!(e.text, protocol.is_base64());
            if e.text {
                prop_assert!(std::str::from_utf8(&e.data).is_ok());
            }
            prop_assert_eq!(
                decode(protocol, &e.data),
                Ok(Inbound::Data { channel, payload })
            );
        }

        #[test]
        fn junk_in_decodes_or_errs_without_panicking(
            protocol in any_protocol(),
            junk in proptest::collection::vec(any::<u8>(), 0..256),
        ) {
            match decode(protocol, &junk) {
                Ok(Inbound::Empty) => prop_assert!(junk.is_empty()),
                Ok(Inbound::Close(ch)) => prop_assert_eq!(junk, vec![CLOSE, ch]),
                Ok(Inbound::Data { .. }) | Err(_) => {}
            }
        }

        #[test]
        fn junk_in_the_resize_stream_never_panics_and_stays_bounded(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..128), 0..16),
        ) {
            let mut d = ResizeDecoder::default();
            for c in &chunks {
                let _ = d.push(c);
                prop_assert!(d.pending.len() <= RESIZE_BUFFER_LIMIT + 128);
            }
        }

        #[test]
        fn negotiation_returns_an_offered_protocol(
            offer in proptest::collection::vec(
                prop_oneof![
                    Just("v5.channel.k8s.io".to_string()),
                    Just("v4.channel.k8s.io".to_string()),
                    Just("base64.channel.k8s.io".to_string()),
                    "[a-z.0-9]{0,20}",
                ],
                1..5,
            ),
            allow_v5 in any::<bool>(),
        ) {
            if let Ok(p) = negotiate(&offer, allow_v5) {
                prop_assert!(offer.iter().any(|o| o == p.as_str()));
                prop_assert!(allow_v5 || p != Protocol::V5);
            }
        }
    }
}
