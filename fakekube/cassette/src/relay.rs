//! Upgraded connections through the recording proxy: each message (WebSocket) or chunk (any
//! other protocol, such as SPDY/3.1) is forwarded and recorded as a frame with its direction,
//! channel and time, then the end with who ended it.

use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, ReadHalf, WriteHalf};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_util::sync::CancellationToken;

use crate::format::{Close, End, Frame, Opcode, Payload, Record, Side};
use crate::recorder::Recorder;

/// How long the other direction may finish after one ended (a close handshake).
const LINGER: Duration = Duration::from_secs(1);

/// The close code that stands for a close message without a status.
pub(crate) const NO_STATUS: u16 = 1005;

/// Where a relay records.
#[derive(Clone)]
pub(crate) struct Tape {
    pub(crate) recorder: Recorder,
    pub(crate) exchange: u64,
}

impl Tape {
    fn frame(&self, from: Side, frame: FrameParts) {
        self.recorder.write(&Record::Frame(Frame {
            exchange: self.exchange,
            t: self.recorder.now(),
            from,
            channel: frame.channel,
            opcode: frame.opcode,
            data: frame.data,
            close: frame.close,
        }));
    }

    fn end(&self, by: Side) {
        self.recorder.write(&Record::End(End {
            exchange: self.exchange,
            t: self.recorder.now(),
            by,
        }));
    }
}

/// A frame's fields other than where and when.
struct FrameParts {
    channel: Option<u8>,
    opcode: Option<Opcode>,
    data: Payload,
    close: Option<Close>,
}

/// How a WebSocket message is recorded (`None` for pings and pongs, which are not).
fn parts(recorder: &Recorder, message: &Message) -> Option<FrameParts> {
    let none = FrameParts {
        channel: None,
        opcode: None,
        data: Payload::default(),
        close: None,
    };
    match message {
        Message::Binary(bytes) => Some(match bytes.split_first() {
            Some((channel, rest)) => FrameParts {
                channel: Some(*channel),
                data: recorder.payload(rest),
                ..none
            },
            None => none,
        }),
        Message::Text(text) => Some(FrameParts {
            opcode: Some(Opcode::Text),
            data: recorder.payload(text.as_bytes()),
            ..none
        }),
        Message::Close(close) => Some(FrameParts {
            close: Some(match close {
                Some(frame) => Close {
                    code: u16::from(frame.code),
                    reason: recorder.redactor().text(&frame.reason),
                },
                None => Close {
                    code: NO_STATUS,
                    reason: String::new(),
                },
            }),
            ..none
        }),
        Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => None,
    }
}

/// Relays WebSocket messages between the client and the cluster until either side ends.
pub(crate) async fn websocket(
    client: Upgraded,
    cluster: Upgraded,
    tape: Tape,
    stop: CancellationToken,
) {
    let client = WebSocketStream::from_raw_socket(TokioIo::new(client), Role::Server, None).await;
    let cluster = WebSocketStream::from_raw_socket(TokioIo::new(cluster), Role::Client, None).await;
    let (client_tx, client_rx) = client.split();
    let (cluster_tx, cluster_rx) = cluster.split();
    let up = tokio::spawn(pump_messages(
        client_rx,
        cluster_tx,
        tape.clone(),
        Side::Client,
    ));
    let down = tokio::spawn(pump_messages(
        cluster_rx,
        client_tx,
        tape.clone(),
        Side::Server,
    ));
    finish(up, down, tape, stop).await;
}

/// Forwards messages from `rx` to `tx`, recording them as sent by `from`, until a close
/// message or the end of `rx`.
async fn pump_messages<R, T>(mut rx: R, mut tx: T, tape: Tape, from: Side)
where
    R: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
    T: futures_util::Sink<Message> + Unpin,
{
    while let Some(Ok(message)) = rx.next().await {
        let close = message.is_close();
        if let Some(frame) = parts(&tape.recorder, &message) {
            tape.frame(from, frame);
            if tx.send(message).await.is_err() {
                break;
            }
        }
        if close {
            break;
        }
    }
    let _ = tx.close().await;
}

/// Relays bytes between the client and the cluster until either side ends, recording each
/// chunk as it was read.
pub(crate) async fn raw(client: Upgraded, cluster: Upgraded, tape: Tape, stop: CancellationToken) {
    let (client_rx, client_tx) = tokio::io::split(TokioIo::new(client));
    let (cluster_rx, cluster_tx) = tokio::io::split(TokioIo::new(cluster));
    let up = tokio::spawn(pump_bytes(
        client_rx,
        cluster_tx,
        tape.clone(),
        Side::Client,
    ));
    let down = tokio::spawn(pump_bytes(
        cluster_rx,
        client_tx,
        tape.clone(),
        Side::Server,
    ));
    finish(up, down, tape, stop).await;
}

async fn pump_bytes(
    mut rx: ReadHalf<TokioIo<Upgraded>>,
    mut tx: WriteHalf<TokioIo<Upgraded>>,
    tape: Tape,
    from: Side,
) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match rx.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        tape.frame(
            from,
            FrameParts {
                channel: None,
                opcode: None,
                data: tape.recorder.payload(&buffer[..n]),
                close: None,
            },
        );
        if tx.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
    let _ = tx.shutdown().await;
}

/// Waits for the first direction to end, gives the other a moment to finish (a close
/// handshake), and records who ended the connection; `stop` cuts both at once.
async fn finish(
    mut up: tokio::task::JoinHandle<()>,
    mut down: tokio::task::JoinHandle<()>,
    tape: Tape,
    stop: CancellationToken,
) {
    let (by, other) = tokio::select! {
        _ = &mut up => (Side::Client, down),
        _ = &mut down => (Side::Server, up),
        () = stop.cancelled() => {
            up.abort();
            down.abort();
            tape.end(Side::Client);
            return;
        }
    };
    let abort = other.abort_handle();
    if tokio::time::timeout(LINGER, other).await.is_err() {
        abort.abort();
    }
    tape.end(by);
}
