//! Exec over WebSocket: every channel's bytes in messages prefixed with the channel number
//! (binary, or base64 text for the base64 subprotocols), the initial empty message real servers
//! send, Pongs for Pings, v5's CLOSE of stdin, and Close 1000 at the end. A client's Close
//! frame ends stdin but not the session: kube-rs under v4 closes on stdin EOF and keeps
//! reading, so output and the status still follow.

use super::super::codec::{self, Inbound, Protocol};
use super::super::session::{Closer, FromClient, Link, Out, Streams, Transport, WRITER_ITEMS};
use crate::websocket::{self, FrameError, Message, ReadError, Reader, Writer};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, mpsc, oneshot};

/// Pongs waiting to be written; Pings beyond them are not answered.
const PENDING_PONGS: usize = 4;

/// An upgraded WebSocket connection and its negotiated subprotocol.
#[derive(Debug)]
pub struct WebSocket<S> {
    /// The connection.
    io: S,
    /// The subprotocol.
    protocol: Protocol,
    /// The streams asked for (the initial message goes on the lowest output channel).
    streams: Streams,
}

impl<S> WebSocket<S> {
    /// The transport for `io`, speaking `protocol`.
    pub fn new(io: S, protocol: Protocol, streams: Streams) -> Self {
        WebSocket {
            io,
            protocol,
            streams,
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Send + 'static> Transport for WebSocket<S> {
    fn start(self, client: FromClient, hold_first: Duration) -> Link {
        let (rd, wr) = tokio::io::split(self.io);
        let controls = Arc::new(Controls::default());
        let (out_tx, out_rx) = mpsc::channel::<Out>(WRITER_ITEMS);
        let first = if self.streams.stdout {
            codec::STDOUT
        } else if self.streams.stderr {
            codec::STDERR
        } else {
            codec::ERROR
        };
        let (greet_tx, greeted) = oneshot::channel();
        let writer = tokio::spawn(write_loop(
            Writer::new(wr),
            self.protocol,
            (first, hold_first, greet_tx),
            controls.clone(),
            out_rx,
        ));
        let reader = tokio::spawn(read_loop(Reader::new(rd), self.protocol, controls, client));
        Link {
            out: out_tx,
            writer,
            reader,
            greeted: Some(greeted),
        }
    }
}

/// What the reader asks the writer to send before the session's output.
#[derive(Debug)]
enum Control {
    /// A Pong with this payload.
    Pong(Vec<u8>),
    /// The client sent a message larger than the server reads (its size): a Status on the
    /// error channel, then Close 1009 (message too big), and the end.
    TooLarge(u64),
}

/// The reader's requests to the writer, written before the session's output. A queue and a
/// wake-up rather than a channel: a tokio channel allocates room for 32 items up front, and
/// every open session has one of these, nearly always empty.
#[derive(Debug, Default)]
struct Controls {
    /// The requests not yet written, oldest first.
    queue: Mutex<VecDeque<Control>>,
    /// Wakes the writer when a request arrives.
    arrived: Notify,
}

impl Controls {
    /// Queues a Pong, unless [`PENDING_PONGS`] wait already (that Ping is not answered).
    fn pong(&self, payload: Vec<u8>) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.len() >= PENDING_PONGS {
            return;
        }
        queue.push_back(Control::Pong(payload));
        drop(queue);
        self.arrived.notify_one();
    }

    /// Queues the refusal of a message that is too large (always: it is the reader's last).
    fn too_large(&self, size: u64) {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(Control::TooLarge(size));
        self.arrived.notify_one();
    }

    /// The oldest request, when there is one.
    fn take(&self) -> Option<Control> {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
    }

    /// Whether no request waits.
    fn is_empty(&self) -> bool {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// The next request, once there is one. Dropping it loses nothing: the request stays
    /// queued for the next call.
    async fn next(&self) -> Control {
        loop {
            if let Some(c) = self.take() {
                return c;
            }
            self.arrived.notified().await;
        }
    }
}

/// Reads the socket until the client goes: answers Pings, feeds stdin and resize, handles
/// CLOSE and Close.
async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: Reader<R>,
    protocol: Protocol,
    controls: Arc<Controls>,
    mut client: FromClient,
) {
    let mut closed = false;
    loop {
        let message = match reader.next().await {
            Ok(Some(m)) => m,
            Ok(None) => break,
            Err(ReadError::Frame(FrameError::TooLarge(size))) => {
                controls.too_large(size);
                break;
            }
            Err(e) => {
                tracing::debug!(error = %e, "exec: reading the client");
                break;
            }
        };
        let data = match message {
            Message::Ping(p) => {
                if !closed {
                    controls.pong(p);
                }
                continue;
            }
            Message::Pong => continue,
            Message::Close(code) => {
                tracing::debug!(?code, "exec: the client sent Close");
                closed = true;
                client.closed();
                continue;
            }
            Message::Text(d) | Message::Binary(d) => d,
        };
        if closed {
            continue;
        }
        match codec::decode(protocol, &data) {
            Ok(Inbound::Data {
                channel: codec::STDIN,
                payload,
            }) => client.stdin(payload).await,
            Ok(Inbound::Data {
                channel: codec::RESIZE,
                payload,
            }) => client.resize(&payload),
            Ok(Inbound::Close(codec::STDIN)) => client.end_stdin(),
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "exec: undecodable client message dropped"),
        }
    }
}

/// Writes the initial empty message (after `hold_first`), then Pongs (first) and the session's
/// output; returns the
/// closer once Close was written, or `None` when the socket failed or the session dropped it.
async fn write_loop<W: AsyncWrite + Send + Unpin + 'static>(
    mut writer: Writer<W>,
    protocol: Protocol,
    (first, hold_first, greeted): (u8, Duration, oneshot::Sender<()>),
    controls: Arc<Controls>,
    mut items: mpsc::Receiver<Out>,
) -> Option<Closer> {
    if !hold_first.is_zero() {
        tokio::time::sleep(hold_first).await;
    }
    if send(&mut writer, protocol, first, &[]).await.is_err() || writer.flush().await.is_err() {
        return None;
    }
    let _ = greeted.send(());
    loop {
        let result = tokio::select! {
            biased;
            c = controls.next() => match c {
                Control::Pong(p) => writer.send(websocket::OP_PONG, &p).await,
                Control::TooLarge(size) => {
                    refuse_too_large(&mut writer, protocol, size).await;
                    return None;
                }
            },
            item = items.recv() => match item {
                Some(Out::Data(channel, payload)) => {
                    send(&mut writer, protocol, channel, &payload).await
                }
                Some(Out::End) => {
                    let r = match writer.close(1000).await {
                        Ok(()) => writer.flush().await,
                        Err(e) => Err(e),
                    };
                    return r.ok().map(|()| -> Closer {
                        Box::pin(async move {
                            let _ = writer.shutdown().await;
                        })
                    });
                }
                Some(Out::Drop) | None => {
                    let _ = writer.flush().await;
                    return None;
                }
            },
        };
        if result.is_err() {
            return None;
        }
        if controls.is_empty() && items.is_empty() && writer.flush().await.is_err() {
            return None;
        }
    }
}

/// Answers a client message past [`websocket::MAX_MESSAGE`]: a Status saying so on the error
/// channel, then Close with 1009 (message too big), as RFC 6455 has an endpoint refuse it.
async fn refuse_too_large<W: AsyncWrite + Unpin>(
    writer: &mut Writer<W>,
    protocol: Protocol,
    size: u64,
) {
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "the client sent a WebSocket message of {size} bytes, larger than the limit of {} bytes",
            websocket::MAX_MESSAGE
        ),
        "reason": "RequestEntityTooLarge",
        "code": 413,
    });
    if let Some(payload) = codec::error_channel_payload(protocol.status_style(), &status) {
        let _ = send(writer, protocol, codec::ERROR, &payload).await;
    }
    let _ = writer.close(1009).await;
    let _ = writer.flush().await;
    let _ = writer.shutdown().await;
}

/// Writes `payload` as one message on `channel`, in `protocol`'s framing.
async fn send<W: AsyncWrite + Unpin>(
    writer: &mut Writer<W>,
    protocol: Protocol,
    channel: u8,
    payload: &[u8],
) -> std::io::Result<()> {
    if !protocol.is_base64() {
        return writer
            .send_parts(websocket::OP_BINARY, &[channel], payload)
            .await;
    }
    let e = codec::encode(protocol, channel, payload);
    let op = if e.text {
        websocket::OP_TEXT
    } else {
        websocket::OP_BINARY
    };
    writer.send(op, &e.data).await
}
