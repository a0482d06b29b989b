//! Transports: how messages travel. A [`Transport`] is a pair of channels of whole messages
//! (JSON texts); tasks move them over newline-delimited byte streams (a child's stdin and
//! stdout, this process's stdio, any `AsyncRead`/`AsyncWrite`) or over a WebSocket, one text
//! frame per message.
//!
//! The protocol logic in `client` and `server` sees only the channels, so tests drive it with
//! [`Transport::pair`] and can put a [`Transport::filter`] between the two ends.

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{WebSocketStream, tungstenite};

/// The largest message either end accepts, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// Why a transport could not be opened or stopped carrying messages.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// Reading or writing the byte stream failed.
    #[error("reading or writing the provider's stream")]
    Io(#[source] std::io::Error),
    /// A line was longer than [`MAX_MESSAGE_BYTES`].
    #[error("a message is longer than {MAX_MESSAGE_BYTES} bytes")]
    TooLong,
    /// A line or frame was not UTF-8.
    #[error("a message is not UTF-8")]
    NotUtf8,
    /// The WebSocket failed (handshake, framing, connection).
    #[error("the WebSocket failed")]
    WebSocket(#[source] Box<tungstenite::Error>),
    /// The URL given is not a `ws://HOST:PORT` URL.
    #[error("`{0}` is not a ws:// URL with a host and port")]
    BadUrl(String),
    /// A WebSocket binary frame arrived; messages are text frames.
    #[error("the peer sent a binary frame; messages are text frames")]
    BinaryFrame,
}

/// Which way a message went, for [`Transport::filter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From this end to the peer.
    Sent,
    /// From the peer to this end.
    Received,
}

/// One end of a message channel to the peer.
///
/// Messages are sent whole, in order, without waiting (the sending side is unbounded); the
/// receiving side yields each message the peer sent, then an error if the stream broke, then
/// ends.
#[derive(Debug)]
pub struct Transport {
    /// Messages to send.
    pub(crate) outgoing: mpsc::UnboundedSender<String>,
    /// Messages received.
    pub(crate) incoming: mpsc::UnboundedReceiver<Result<String, TransportError>>,
}

impl Transport {
    /// Returns a transport over these channels: what is sent on `outgoing` goes to the peer, and
    /// what the peer sends arrives on `incoming`.
    pub fn from_channels(
        outgoing: mpsc::UnboundedSender<String>,
        incoming: mpsc::UnboundedReceiver<Result<String, TransportError>>,
    ) -> Self {
        Transport { outgoing, incoming }
    }

    /// Returns two transports connected to each other, in memory.
    pub fn pair() -> (Transport, Transport) {
        let (a_tx, a_rx) = mpsc::unbounded_channel::<String>();
        let (b_tx, b_rx) = mpsc::unbounded_channel::<String>();
        let (a_in_tx, a_in_rx) = mpsc::unbounded_channel();
        let (b_in_tx, b_in_rx) = mpsc::unbounded_channel();
        tokio::spawn(relay(a_rx, b_in_tx));
        tokio::spawn(relay(b_rx, a_in_tx));
        (
            Transport::from_channels(a_tx, a_in_rx),
            Transport::from_channels(b_tx, b_in_rx),
        )
    }

    /// Returns a transport carrying newline-delimited messages over a byte stream: each
    /// message is one line of JSON (which never holds a raw newline) ended by `\n`.
    ///
    /// Blank lines are skipped and a `\r` before the `\n` is dropped. The tasks end when the
    /// reader reaches its end, or when the transport is dropped (the writer is then shut
    /// down, so a child reading it sees end of input).
    pub fn lines<R, W>(reader: R, writer: W) -> Transport
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (out_tx, out_rx) = mpsc::unbounded_channel::<String>();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        tokio::spawn(write_lines(writer, out_rx));
        tokio::spawn(read_lines(reader, in_tx));
        Transport::from_channels(out_tx, in_rx)
    }

    /// Returns a transport over this process's standard input and output, for a provider
    /// written in Rust that a runner starts with `--provider-cmd`.
    pub fn stdio() -> Transport {
        Transport::lines(tokio::io::stdin(), tokio::io::stdout())
    }

    /// Returns a transport over an open WebSocket: one text frame per message.
    pub fn websocket<S>(socket: WebSocketStream<S>) -> Transport
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<String>();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        let (mut sink, mut stream) = socket.split();
        tokio::spawn(async move {
            while let Some(text) = out_rx.recv().await {
                if sink.send(Frame::text(text)).await.is_err() {
                    return;
                }
            }
            let _ = sink.close().await;
        });
        tokio::spawn(async move {
            while let Some(frame) = stream.next().await {
                let item = match frame {
                    Ok(Frame::Text(text)) => Ok(text.as_str().to_owned()),
                    Ok(Frame::Binary(_)) => Err(TransportError::BinaryFrame),
                    Ok(Frame::Close(_)) => break,
                    Ok(_) => continue,
                    Err(e) => Err(TransportError::WebSocket(Box::new(e))),
                };
                let stop = item.is_err();
                if in_tx.send(item).is_err() || stop {
                    break;
                }
            }
        });
        Transport::from_channels(out_tx, in_rx)
    }

    /// Connects to a provider listening at `url` (`ws://HOST:PORT`, any path) and returns the
    /// transport.
    pub async fn connect_websocket(url: &str) -> Result<Transport, TransportError> {
        let rest = url
            .strip_prefix("ws://")
            .ok_or_else(|| TransportError::BadUrl(url.to_owned()))?;
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.is_empty() || !authority.contains(':') {
            return Err(TransportError::BadUrl(url.to_owned()));
        }
        let tcp = TcpStream::connect(authority)
            .await
            .map_err(TransportError::Io)?;
        tcp.set_nodelay(true).map_err(TransportError::Io)?;
        let (socket, _) =
            tokio_tungstenite::client_async_with_config(url, tcp, Some(websocket_config()))
                .await
                .map_err(|e| TransportError::WebSocket(Box::new(e)))?;
        Ok(Transport::websocket(socket))
    }

    /// Accepts a WebSocket on a TCP connection a listener accepted, and returns the transport
    /// (the provider's side of [`connect_websocket`](Transport::connect_websocket)).
    pub async fn accept_websocket(tcp: TcpStream) -> Result<Transport, TransportError> {
        tcp.set_nodelay(true).map_err(TransportError::Io)?;
        let socket = tokio_tungstenite::accept_async_with_config(tcp, Some(websocket_config()))
            .await
            .map_err(|e| TransportError::WebSocket(Box::new(e)))?;
        Ok(Transport::websocket(socket))
    }

    /// Returns a transport that passes every message through `f` first, in either
    /// [`Direction`]; `f` may change it, or drop it by returning `None`.
    ///
    /// For watching a conversation (a log of every message) and for tests that break the
    /// protocol on purpose.
    pub fn filter<F>(self, f: F) -> Transport
    where
        F: FnMut(Direction, String) -> Option<String> + Send + 'static,
    {
        let f = std::sync::Arc::new(std::sync::Mutex::new(f));
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<String>();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        let Transport {
            outgoing,
            mut incoming,
        } = self;
        let sent = f.clone();
        tokio::spawn(async move {
            while let Some(text) = out_rx.recv().await {
                let passed = sent.lock().ok().and_then(|mut f| f(Direction::Sent, text));
                if let Some(text) = passed
                    && outgoing.send(text).is_err()
                {
                    return;
                }
            }
        });
        tokio::spawn(async move {
            while let Some(item) = incoming.recv().await {
                let item = match item {
                    Ok(text) => {
                        match f.lock().ok().and_then(|mut f| f(Direction::Received, text)) {
                            Some(text) => Ok(text),
                            None => continue,
                        }
                    }
                    Err(e) => Err(e),
                };
                if in_tx.send(item).is_err() {
                    return;
                }
            }
        });
        Transport::from_channels(out_tx, in_rx)
    }
}

/// The WebSocket limits: messages up to [`MAX_MESSAGE_BYTES`].
fn websocket_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES))
}

/// Moves messages from one channel to the other, as received items.
async fn relay(
    mut from: mpsc::UnboundedReceiver<String>,
    to: mpsc::UnboundedSender<Result<String, TransportError>>,
) {
    while let Some(text) = from.recv().await {
        if to.send(Ok(text)).is_err() {
            return;
        }
    }
}

/// Writes each message as a line, then shuts the writer down.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut messages: mpsc::UnboundedReceiver<String>,
) {
    while let Some(text) = messages.recv().await {
        let mut line = text.into_bytes();
        line.push(b'\n');
        if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

/// Reads lines as messages until the end of the stream or the first error.
async fn read_lines<R: AsyncRead + Unpin>(
    reader: R,
    messages: mpsc::UnboundedSender<Result<String, TransportError>>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    loop {
        let item = match next_line(&mut reader).await {
            Ok(Some(line)) if line.is_empty() => continue,
            Ok(Some(line)) => Ok(line),
            Ok(None) => return,
            Err(e) => Err(e),
        };
        let stop = item.is_err();
        if messages.send(item).is_err() || stop {
            return;
        }
    }
}

/// Reads one line without its `\n` (and `\r`), refusing lines over [`MAX_MESSAGE_BYTES`];
/// `None` at the end of the stream (a last line without `\n` still counts).
async fn next_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> Result<Option<String>, TransportError> {
    let mut line = Vec::new();
    loop {
        let buffer = reader.fill_buf().await.map_err(TransportError::Io)?;
        if buffer.is_empty() {
            if line.is_empty() {
                return Ok(None);
            }
            break;
        }
        let (taken, done) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        line.extend_from_slice(&buffer[..taken]);
        reader.consume(taken);
        if line.len() > MAX_MESSAGE_BYTES + 2 {
            return Err(TransportError::TooLong);
        }
        if done {
            break;
        }
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| TransportError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_split_on_newlines_and_skip_blank_lines() {
        let input: &[u8] = b"{\"a\":1}\r\n\n{\"b\":2}\n{\"c\":3}";
        let (_sink, sink_rx) = tokio::io::duplex(64);
        let mut transport = Transport::lines(input, sink_rx);
        let mut got = Vec::new();
        while let Some(item) = transport.incoming.recv().await {
            got.push(item.unwrap());
        }
        assert_eq!(got, [r#"{"a":1}"#, r#"{"b":2}"#, r#"{"c":3}"#]);
    }

    #[tokio::test]
    async fn lines_are_written_one_message_per_line() {
        let (reader, writer) = tokio::io::duplex(1024);
        let transport = Transport::lines(tokio::io::empty(), writer);
        transport.outgoing.send("{\"x\":1}".into()).unwrap();
        transport.outgoing.send("{\"y\":2}".into()).unwrap();
        drop(transport);
        let mut text = String::new();
        let mut reader = BufReader::new(reader);
        while reader.read_line(&mut text).await.unwrap() > 0 {}
        assert_eq!(text, "{\"x\":1}\n{\"y\":2}\n");
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_an_error_then_the_end() {
        let input: &[u8] = b"\xff\xfe\n{}\n";
        let mut transport = Transport::lines(input, tokio::io::sink());
        assert!(matches!(
            transport.incoming.recv().await,
            Some(Err(TransportError::NotUtf8))
        ));
        assert!(transport.incoming.recv().await.is_none());
    }

    #[tokio::test]
    async fn a_pair_carries_messages_both_ways_and_a_filter_can_drop_them() {
        let (a, b) = Transport::pair();
        let mut b = b.filter(|direction, text| {
            (direction == Direction::Sent || !text.contains("drop")).then_some(text)
        });
        a.outgoing.send("drop me".into()).unwrap();
        a.outgoing.send("keep me".into()).unwrap();
        assert_eq!(b.incoming.recv().await.unwrap().unwrap(), "keep me");
        b.outgoing.send("back".into()).unwrap();
        let mut a = a;
        assert_eq!(a.incoming.recv().await.unwrap().unwrap(), "back");
    }

    #[tokio::test]
    async fn websocket_urls_must_be_ws_with_a_port() {
        for url in [
            "wss://127.0.0.1:1",
            "http://127.0.0.1:1",
            "ws://127.0.0.1/x",
            "ws://",
        ] {
            assert!(
                matches!(
                    Transport::connect_websocket(url).await,
                    Err(TransportError::BadUrl(_))
                ),
                "{url}"
            );
        }
    }
}
