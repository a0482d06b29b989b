//! The cassette format: JSON Lines, a [`Header`] line, then one [`Record`] a line
//! (`CASSETTE.md` describes it for readers; `cassette.schema.json` is its JSON Schema).
//!
//! Exchanges carry ids in the order their requests arrived; a streamed response's events and
//! an upgraded connection's frames follow their exchange's line and name it by id. Times (`t`)
//! are seconds since the recording started, to the microsecond.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` of every cassette's header.
pub const FORMAT: &str = "fakekube-cassette";

/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;

/// The client name of exchanges recorded without one (a proxy that was given no name).
pub const DEFAULT_CLIENT: &str = "default";

/// The first line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version, [`VERSION`] for this crate.
    pub version: u32,
    /// When the recording started (RFC 3339, UTC); every `t` counts from it.
    pub recorded_at: String,
}

/// One line after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Record {
    /// A request and its response (the response's head only, for streams and upgrades).
    Exchange(Box<Exchange>),
    /// One line of a streamed response body (a watch event).
    Event(Event),
    /// One message of an upgraded connection, in either direction.
    Frame(Frame),
    /// The end of a streamed response or an upgraded connection.
    End(End),
}

/// A request and its response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// The exchange's number: requests are numbered in the order they arrived, from 1.
    pub id: u64,
    /// Which of the recording's clients sent it (each proxy of a recording has a name).
    #[serde(default = "default_client", skip_serializing_if = "is_default_client")]
    pub client: String,
    /// When the request arrived.
    pub t: f64,
    /// The client's HTTP version: `1.1` or `2`.
    pub http: String,
    /// What the client asked.
    pub request: Request,
    /// What the server answered.
    pub response: Response,
    /// Seconds until the whole answer was read (until its head, for streams and upgrades).
    pub took: f64,
}

/// The request of an exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The HTTP method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string as sent, without the `?`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query: String,
    /// The headers that matter (never `Authorization`), lower-case names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The body.
    #[serde(flatten)]
    pub body: Body,
}

/// The response of an exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The headers that matter, lower-case names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The body, when it was read whole.
    #[serde(flatten)]
    pub body: Body,
    /// How the rest of the answer is recorded, when it is not a whole body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<Stream>,
}

/// How a response that is not one whole body is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// A streamed body (a watch, a followed log), one [`Event`] per line.
    Lines,
    /// An upgraded WebSocket connection (exec, attach, port-forward), one [`Frame`] per
    /// message, the Kubernetes channel split from the payload.
    Websocket,
    /// An upgraded connection of another protocol (SPDY/3.1), one [`Frame`] per chunk of bytes
    /// as it was read, without channels.
    Raw,
}

/// A body: JSON when it parses as JSON, else text when it is UTF-8, else base64. An empty
/// body has none of the three.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// The body as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// The body as text or base64.
    #[serde(flatten)]
    pub payload: Payload,
}

/// Bytes: text when they are UTF-8 and mostly printable, else base64; a long run of a short
/// unit (a megabyte of zeros, a repeating test pattern) is the unit and the length it repeats
/// to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Payload {
    /// The bytes (or the repeating unit), when UTF-8 and mostly printable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The bytes (or the repeating unit) in standard base64, otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
    /// When set, the bytes are the unit repeated, cut to this many bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated_to: Option<u64>,
}

/// One line of a streamed body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The exchange it belongs to.
    pub exchange: u64,
    /// When it arrived.
    pub t: f64,
    /// The line, without its newline.
    #[serde(flatten)]
    pub body: Body,
}

/// One message (or chunk) of an upgraded connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// The exchange it belongs to.
    pub exchange: u64,
    /// When it arrived.
    pub t: f64,
    /// Who sent it.
    pub from: Side,
    /// The Kubernetes stream channel (the first byte of a binary WebSocket message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<u8>,
    /// `text` for a WebSocket text message (binary messages leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opcode: Option<Opcode>,
    /// The payload, after the channel byte.
    #[serde(flatten)]
    pub data: Payload,
    /// A WebSocket close message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close: Option<Close>,
}

/// The kind of a WebSocket data message that is not binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Opcode {
    /// A text message (the `base64.channel.k8s.io` protocols use them).
    Text,
}

/// A WebSocket close message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Close {
    /// The close code (1000 is a normal close).
    pub code: u16,
    /// The reason, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// Who sent a frame, or ended a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The client (through the proxy).
    Client,
    /// The API server.
    Server,
}

/// The end of a streamed body or an upgraded connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// The exchange it belongs to.
    pub exchange: u64,
    /// When it ended.
    pub t: f64,
    /// Who ended it.
    pub by: Side,
}

fn default_client() -> String {
    DEFAULT_CLIENT.to_owned()
}

fn is_default_client(client: &str) -> bool {
    client == DEFAULT_CLIENT
}

/// A duration as the format's seconds, to the microsecond.
pub(crate) fn seconds(duration: Duration) -> f64 {
    // Whole microseconds print without float noise (1.5e-5 prints as 0.000015).
    let micros = duration.as_micros().min(u128::from(u64::MAX >> 11));
    (micros as f64) / 1_000_000.0
}

/// The format's seconds as a duration (negative or not finite is zero).
pub(crate) fn duration(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO)
}

/// The shortest payload written as a repeated unit.
const MIN_REPEATED: usize = 512;

/// The longest unit a repeated payload is written with.
const MAX_UNIT: usize = 256;

impl Payload {
    /// Keeps `bytes` as text when they are UTF-8 and mostly printable, else as base64; as a
    /// unit and a length when they repeat a unit of up to 256 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Payload {
        if bytes.len() >= MIN_REPEATED
            && let Some(unit) = (1..=MAX_UNIT).find(|&n| bytes[n..] == bytes[..bytes.len() - n])
        {
            return Payload {
                repeated_to: Some(bytes.len() as u64),
                ..Payload::plain(&bytes[..unit])
            };
        }
        Payload::plain(bytes)
    }

    fn plain(bytes: &[u8]) -> Payload {
        if bytes.is_empty() {
            return Payload::default();
        }
        let control = bytes
            .iter()
            .filter(|b| (**b < 0x20 && !matches!(**b, b'\n' | b'\r' | b'\t')) || **b == 0x7f)
            .count();
        match std::str::from_utf8(bytes) {
            Ok(text) if control * 8 <= bytes.len() => Payload {
                text: Some(text.to_owned()),
                ..Payload::default()
            },
            _ => Payload {
                base64: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
                ..Payload::default()
            },
        }
    }

    /// The whole payload as text, when it was kept as text and not as a repeated unit.
    pub fn whole_text(&self) -> Option<&str> {
        match self.repeated_to {
            None => self.text.as_deref(),
            Some(_) => None,
        }
    }

    /// The bytes again; base64 that does not decode gives its text as bytes.
    pub fn to_bytes(&self) -> Bytes {
        let unit = if let Some(text) = &self.text {
            Bytes::from(text.clone())
        } else {
            match &self.base64 {
                Some(b64) => base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_or_else(|_| Bytes::from(b64.clone()), Bytes::from),
                None => Bytes::new(),
            }
        };
        match self.repeated_to {
            Some(length) if !unit.is_empty() => {
                let length = usize::try_from(length).unwrap_or(usize::MAX);
                Bytes::from(
                    unit.iter()
                        .copied()
                        .cycle()
                        .take(length)
                        .collect::<Vec<u8>>(),
                )
            }
            _ => unit,
        }
    }
}

impl Body {
    /// Keeps `bytes` as JSON when `content_type` allows JSON and they parse, else as a payload.
    pub fn from_bytes(bytes: &[u8], content_type: Option<&str>) -> Body {
        let json_allowed = content_type.is_none_or(|ct| {
            let ct = ct.to_ascii_lowercase();
            !ct.contains("protobuf") && !ct.contains("yaml") && !ct.starts_with("text/")
        });
        if json_allowed
            && !bytes.is_empty()
            && let Ok(value) = serde_json::from_slice::<Value>(bytes)
            && !value.is_null()
        {
            return Body {
                body: Some(value),
                payload: Payload::default(),
            };
        }
        Body {
            body: None,
            payload: Payload::from_bytes(bytes),
        }
    }

    /// The bytes to send: JSON re-encoded compactly, or the payload's bytes.
    pub fn to_bytes(&self) -> Bytes {
        match &self.body {
            Some(value) => Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
            None => self.payload.to_bytes(),
        }
    }

    /// Whether there is no body.
    pub fn is_empty(&self) -> bool {
        self.body.is_none() && self.payload.text.is_none() && self.payload.base64.is_none()
    }
}

/// An exchange as read back, with what followed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The exchange.
    pub exchange: Exchange,
    /// Its line in the cassette (the header is line 1).
    pub line: usize,
    /// The lines of its streamed body, in order.
    pub events: Vec<Event>,
    /// The messages of its upgraded connection, in order.
    pub frames: Vec<Frame>,
    /// How its stream or connection ended; `None` when the recording stopped first.
    pub end: Option<End>,
}

/// A cassette read back: its header and its exchanges in request order.
#[derive(Debug, Clone, PartialEq)]
pub struct Cassette {
    /// The header line.
    pub header: Header,
    /// The exchanges, by id.
    pub exchanges: Vec<Recorded>,
}

/// Why a cassette cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// The file could not be read.
    #[error("reading the cassette")]
    Read(#[source] std::io::Error),
    /// The file is empty.
    #[error("the cassette is empty: it has no header line")]
    Empty,
    /// The first line is not a header.
    #[error("line 1 is not a cassette header")]
    Header(#[source] serde_json::Error),
    /// The header names another format.
    #[error("line 1 says format `{0}`, not `fakekube-cassette`")]
    Format(String),
    /// The header names a version this crate does not read.
    #[error("the cassette is version {0}; this fakekube reads version 1")]
    Version(u32),
    /// A line is not a record.
    #[error("line {line} is not a cassette record")]
    Record {
        /// The line number.
        line: usize,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// A line names an exchange that no earlier line recorded.
    #[error("line {line} belongs to exchange {exchange}, which no earlier line records")]
    Orphan {
        /// The line number.
        line: usize,
        /// The exchange it names.
        exchange: u64,
    },
    /// Two lines record the same exchange.
    #[error("line {line} records exchange {exchange} again")]
    Duplicate {
        /// The line number.
        line: usize,
        /// The exchange.
        exchange: u64,
    },
}

impl Cassette {
    /// Reads the cassette at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Cassette, CassetteError> {
        let text = std::fs::read_to_string(path).map_err(CassetteError::Read)?;
        Cassette::parse(&text)
    }

    /// Parses a cassette's text.
    pub fn parse(text: &str) -> Result<Cassette, CassetteError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or(CassetteError::Empty)?;
        let header: Header = serde_json::from_str(first).map_err(CassetteError::Header)?;
        if header.format != FORMAT {
            return Err(CassetteError::Format(header.format));
        }
        if header.version != VERSION {
            return Err(CassetteError::Version(header.version));
        }
        let mut exchanges: BTreeMap<u64, Recorded> = BTreeMap::new();
        for (index, text) in lines {
            let line = index + 1;
            let record: Record = serde_json::from_str(text)
                .map_err(|source| CassetteError::Record { line, source })?;
            let exchange = match record {
                Record::Exchange(exchange) => {
                    if exchanges.contains_key(&exchange.id) {
                        return Err(CassetteError::Duplicate {
                            line,
                            exchange: exchange.id,
                        });
                    }
                    exchanges.insert(
                        exchange.id,
                        Recorded {
                            exchange: *exchange,
                            line,
                            events: Vec::new(),
                            frames: Vec::new(),
                            end: None,
                        },
                    );
                    continue;
                }
                Record::Event(Event { exchange, .. })
                | Record::Frame(Frame { exchange, .. })
                | Record::End(End { exchange, .. }) => exchange,
            };
            let recorded = exchanges
                .get_mut(&exchange)
                .ok_or(CassetteError::Orphan { line, exchange })?;
            match record {
                Record::Event(event) => recorded.events.push(event),
                Record::Frame(frame) => recorded.frames.push(frame),
                Record::End(end) => recorded.end = Some(end),
                Record::Exchange(_) => {}
            }
        }
        Ok(Cassette {
            header,
            exchanges: exchanges.into_values().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_megabyte_of_zeros_is_one_unit_and_a_length() {
        let zeros = vec![0u8; 1 << 20];
        let payload = Payload::from_bytes(&zeros);
        assert_eq!(payload.base64.as_deref(), Some("AA=="));
        assert_eq!(payload.repeated_to, Some(1 << 20));
        assert_eq!(payload.to_bytes(), zeros);
        assert_eq!(payload.whole_text(), None);
    }

    #[test]
    fn a_repeating_pattern_keeps_its_phase() {
        let bytes: Vec<u8> = (0..4096u32).map(|i| ((i + 100) % 251) as u8).collect();
        let payload = Payload::from_bytes(&bytes);
        assert_eq!(payload.repeated_to, Some(4096));
        assert_eq!(payload.to_bytes(), bytes);
    }

    #[test]
    fn printable_text_stays_text_and_control_bytes_become_base64() {
        let text = Payload::from_bytes(b"hello\nworld\n");
        assert_eq!(text.whole_text(), Some("hello\nworld\n"));
        let control = Payload::from_bytes(b"\x00\x01\x02ab");
        assert!(control.text.is_none());
        assert_eq!(control.to_bytes(), &b"\x00\x01\x02ab"[..]);
        let binary = Payload::from_bytes(&[0xff, 0xfe]);
        assert_eq!(binary.base64.as_deref(), Some("//4="));
    }

    #[test]
    fn bodies_are_json_when_they_parse_and_the_type_allows() {
        let json = Body::from_bytes(br#"{"a":1}"#, Some("application/json"));
        assert_eq!(json.body, Some(serde_json::json!({"a": 1})));
        let yaml = Body::from_bytes(b"a: 1", Some("application/yaml"));
        assert_eq!(yaml.payload.whole_text(), Some("a: 1"));
        let proto = Body::from_bytes(b"{}", Some("application/vnd.kubernetes.protobuf"));
        assert!(proto.body.is_none());
        assert!(Body::from_bytes(b"", None).is_empty());
    }

    #[test]
    fn a_cassette_reads_back_with_frames_under_their_exchange() {
        let text = concat!(
            r#"{"format":"fakekube-cassette","version":1,"recorded_at":"2025-01-01T00:00:00Z"}"#,
            "\n",
            r#"{"type":"exchange","id":2,"t":0.5,"http":"1.1","request":{"method":"GET","path":"/x"},"response":{"status":101,"stream":"websocket"},"took":0.1}"#,
            "\n",
            r#"{"type":"frame","exchange":2,"t":0.7,"from":"server","channel":1,"text":"hi"}"#,
            "\n",
            r#"{"type":"end","exchange":2,"t":0.8,"by":"server"}"#,
            "\n",
            r#"{"type":"exchange","id":1,"client":"observer","t":0.1,"http":"2","request":{"method":"GET","path":"/y"},"response":{"status":200,"body":{"a":1}},"took":0.1}"#,
            "\n",
        );
        let cassette = Cassette::parse(text).unwrap();
        assert_eq!(cassette.exchanges.len(), 2);
        assert_eq!(cassette.exchanges[0].exchange.client, "observer");
        assert_eq!(cassette.exchanges[1].frames.len(), 1);
        assert_eq!(
            cassette.exchanges[1].end.as_ref().map(|e| e.by),
            Some(Side::Server)
        );
        assert_eq!(cassette.exchanges[1].line, 2);
    }

    #[test]
    fn a_record_of_an_unknown_exchange_or_version_is_refused() {
        let header = r#"{"format":"fakekube-cassette","version":1,"recorded_at":"x"}"#;
        let orphan = format!(
            "{header}\n{}",
            r#"{"type":"end","exchange":9,"t":1,"by":"client"}"#
        );
        assert!(matches!(
            Cassette::parse(&orphan),
            Err(CassetteError::Orphan {
                line: 2,
                exchange: 9
            })
        ));
        let v2 = r#"{"format":"fakekube-cassette","version":2,"recorded_at":"x"}"#;
        assert!(matches!(
            Cassette::parse(v2),
            Err(CassetteError::Version(2))
        ));
        assert!(matches!(Cassette::parse(""), Err(CassetteError::Empty)));
    }
}
