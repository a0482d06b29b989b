//! Exec over WebSocket: every channel's bytes in messages prefixed with the channel number
//! (binary, or base64 text for the base64 subprotocols), the initial empty message real servers
//! send, Pongs for Pings, v5's CLOSE of stdin, and Close 1000 at the end. A client's Close
//! frame ends stdin but not the session: kube-rs under v4 closes on stdin EOF and keeps
//! reading, so output and the status still follow.

use super::super::codec::{self, Inbound, Protocol};
use super::super::session::{Closer, FromClient, Link, Out, Streams, Transport, WRITER_ITEMS};
use crate::websocket::{self, Message, Reader, Writer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

/// Pongs waiting to be written; Pings beyond them are not answered.
const PENDING_PONGS: usize = 4;

/// An upgraded WebSocket connection and its negotiated subprotocol.
#[derive(Debug)]
pub(crate) struct WebSocket<S> {
    /// The connection.
    io: S,
    /// The subprotocol.
    protocol: Protocol,
    /// The streams asked for (the initial message goes on the lowest output channel).
    streams: Streams,
}

impl<S> WebSocket<S> {
    /// The transport for `io`, speaking `protocol`.
    pub(crate) fn new(io: S, protocol: Protocol, streams: Streams) -> Self {
        WebSocket {
            io,
            protocol,
            streams,
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Send + 'static> Transport for WebSocket<S> {
    fn start(self, client: FromClient) -> Link {
        let (rd, wr) = tokio::io::split(self.io);
        let (pong_tx, pong_rx) = mpsc::channel::<Vec<u8>>(PENDING_PONGS);
        let (out_tx, out_rx) = mpsc::channel::<Out>(WRITER_ITEMS);
        let first = if self.streams.stdout {
            codec::STDOUT
        } else if self.streams.stderr {
            codec::STDERR
        } else {
            codec::ERROR
        };
        let writer = tokio::spawn(write_loop(
            Writer::new(wr),
            self.protocol,
            first,
            pong_rx,
            out_rx,
        ));
        let reader = tokio::spawn(read_loop(Reader::new(rd), self.protocol, pong_tx, client));
        Link {
            out: out_tx,
            writer,
            reader,
        }
    }
}

/// Reads the socket until the client goes: answers Pings, feeds stdin and resize, handles
/// CLOSE and Close.
async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: Reader<R>,
    protocol: Protocol,
    pong: mpsc::Sender<Vec<u8>>,
    mut client: FromClient,
) {
    let mut closed = false;
    loop {
        let message = match reader.next().await {
            Ok(Some(m)) => m,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(error = %e, "exec: reading the client");
                break;
            }
        };
        let data = match message {
            Message::Ping(p) => {
                if !closed {
                    let _ = pong.try_send(p);
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

/// Writes the initial empty message, then Pongs (first) and the session's output; returns the
/// closer once Close was written, or `None` when the socket failed or the session dropped it.
async fn write_loop<W: AsyncWrite + Send + Unpin + 'static>(
    mut writer: Writer<W>,
    protocol: Protocol,
    first: u8,
    mut pongs: mpsc::Receiver<Vec<u8>>,
    mut items: mpsc::Receiver<Out>,
) -> Option<Closer> {
    if send(&mut writer, protocol, first, &[]).await.is_err() || writer.flush().await.is_err() {
        return None;
    }
    let mut pongs_open = true;
    loop {
        let result = tokio::select! {
            biased;
            p = pongs.recv(), if pongs_open => match p {
                Some(p) => writer.send(websocket::OP_PONG, &p).await,
                None => { pongs_open = false; continue; }
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
        if pongs.is_empty() && items.is_empty() && writer.flush().await.is_err() {
            return None;
        }
    }
}

/// Writes `payload` as one message on `channel`, in `protocol`'s framing.
async fn send<W: AsyncWrite + Unpin>(
    writer: &mut Writer<W>,
    protocol: Protocol,
    channel: u8,
    payload: &[u8],
) -> std::io::Result<()> {
    let e = codec::encode(protocol, channel, payload);
    let op = if e.text {
        websocket::OP_TEXT
    } else {
        websocket::OP_BINARY
    };
    writer.send(op, &e.data).await
}
