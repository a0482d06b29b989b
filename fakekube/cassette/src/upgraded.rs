//! Upgraded connections during a replay: the recorded frames in order, the server's sent
//! (paced, names mapped) and the client's awaited and compared; a client frame that differs
//! stops the replay with both frames side by side.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;

use crate::format::{Frame, Opcode, Recorded, Side, Stream};
use crate::normalize::Bindings;
use crate::player::Shared;
use crate::relay::NO_STATUS;
use crate::sidebyside;

/// The channel of the Kubernetes stream protocols that carries the command's status.
const STATUS_CHANNEL: u8 = 3;

/// Replays the upgraded connection of `recorded` once the client's upgrade completes.
pub(crate) async fn replay(
    on_upgrade: OnUpgrade,
    kind: Stream,
    recorded: Arc<Recorded>,
    shared: Arc<Shared>,
) {
    let Ok(io) = on_upgrade.await else {
        return;
    };
    match kind {
        Stream::Websocket => websocket(TokioIo::new(io), &recorded, &shared).await,
        _ => raw(TokioIo::new(io), &recorded, &shared).await,
    }
}

async fn websocket(io: TokioIo<hyper::upgrade::Upgraded>, recorded: &Recorded, shared: &Shared) {
    let ws = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
    let (mut tx, mut rx) = ws.split();
    let origin = Instant::now();
    let base = recorded.exchange.t + recorded.exchange.took;
    // Once the server has sent the command's status or its close, what the client still sends
    // races with it (stdin being written when the command exits): a client that saw the end
    // first sends less, so its frames are no longer awaited or compared.
    let mut server_done = false;
    for (index, frame) in recorded.frames.iter().enumerate() {
        match frame.from {
            Side::Server => {
                if !shared.pace(origin, frame.t - base).await {
                    return;
                }
                server_done |= frame.close.is_some() || frame.channel == Some(STATUS_CHANNEL);
                let message = server_message(frame, &mut shared.book().bindings);
                // A client that left early is not a difference the replay can show.
                let _ = tx.send(message).await;
            }
            Side::Client if server_done => {}
            Side::Client => {
                let live = loop {
                    let next = tokio::select! {
                        next = rx.next() => next,
                        () = shared.stop.cancelled() => return,
                    };
                    match next {
                        Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                        Some(Ok(message)) => break Some(message),
                        _ => break None,
                    }
                };
                let verdict = check(frame, live.as_ref(), &mut shared.book().bindings);
                if let Err((live_lines, expected)) = verdict {
                    shared.fail(sidebyside::frame(recorded, index, &live_lines, &expected));
                    return;
                }
                if live.is_none() {
                    return;
                }
            }
        }
    }
    if recorded.end.as_ref().map(|e| e.by) == Some(Side::Server) {
        let _ = tx.close().await;
        return;
    }
    loop {
        tokio::select! {
            next = rx.next() => if !matches!(next, Some(Ok(_))) { return },
            () = shared.stop.cancelled() => return,
        }
    }
}

/// The recorded server frame as a message in this run's terms.
fn server_message(frame: &Frame, bindings: &mut Bindings) -> Message {
    if let Some(close) = &frame.close {
        return Message::Close((close.code != NO_STATUS).then(|| CloseFrame {
            code: close.code.into(),
            reason: close.reason.clone().into(),
        }));
    }
    let payload = match frame.data.whole_text() {
        Some(text) => Bytes::from(bindings.answer(text)),
        None => frame.data.to_bytes(),
    };
    match (frame.opcode, frame.channel) {
        (Some(Opcode::Text), _) => {
            Message::Text(String::from_utf8_lossy(&payload).into_owned().into())
        }
        (None, Some(channel)) => {
            let mut data = Vec::with_capacity(payload.len() + 1);
            data.push(channel);
            data.extend_from_slice(&payload);
            Message::Binary(data.into())
        }
        (None, None) => Message::Binary(payload),
    }
}

/// Compares the client's message with the recorded client frame, learning bindings; on a
/// difference, both as lines.
fn check(
    frame: &Frame,
    live: Option<&Message>,
    bindings: &mut Bindings,
) -> Result<(), (Vec<String>, Vec<String>)> {
    let expected = frame_lines(frame);
    let Some(live) = live else {
        // A client that closes the connection instead of sending the close message is fine.
        if frame.close.is_some() {
            return Ok(());
        }
        return Err((
            vec!["(the client ended the connection)".to_owned()],
            expected,
        ));
    };
    let (channel, opcode, payload, close) = match live {
        Message::Binary(b) => match b.split_first() {
            Some((c, rest)) => (Some(*c), None, rest.to_vec(), None),
            None => (None, None, Vec::new(), None),
        },
        Message::Text(t) => (None, Some(Opcode::Text), t.as_bytes().to_vec(), None),
        Message::Close(c) => (
            None,
            None,
            Vec::new(),
            Some(c.as_ref().map_or(NO_STATUS, |c| u16::from(c.code))),
        ),
        _ => (None, None, Vec::new(), None),
    };
    let mut c = bindings.compare();
    let recorded_close = frame.close.as_ref().map(|c| c.code);
    let mut same = channel == frame.channel && opcode == frame.opcode && close == recorded_close;
    if same && close.is_none() {
        same = match (frame.data.whole_text(), std::str::from_utf8(&payload)) {
            (Some(recorded), Ok(text)) => c.text(recorded, text),
            _ => frame.data.to_bytes() == payload,
        };
    }
    if same {
        let learned = c.learned();
        bindings.learn(learned);
        return Ok(());
    }
    let live_frame = Frame {
        exchange: frame.exchange,
        t: 0.0,
        from: Side::Client,
        channel,
        opcode,
        data: crate::format::Payload::from_bytes(&payload),
        close: close.map(|code| crate::format::Close {
            code,
            reason: String::new(),
        }),
    };
    Err((frame_lines(&live_frame), expected))
}

/// A frame as lines for the side-by-side message.
fn frame_lines(frame: &Frame) -> Vec<String> {
    let mut out = vec![match frame.from {
        Side::Client => "from the client".to_owned(),
        Side::Server => "from the server".to_owned(),
    }];
    if let Some(close) = &frame.close {
        out.push(format!("close {}", close.code));
        return out;
    }
    out.push(match (frame.opcode, frame.channel) {
        (Some(Opcode::Text), _) => "text message".to_owned(),
        (None, Some(c)) => format!("channel {c}"),
        (None, None) => "binary message".to_owned(),
    });
    match frame.data.whole_text() {
        Some(text) => out.extend(text.lines().map(|l| format!("{l:?}"))),
        None => out.push(format!("({} bytes, not text)", frame.data.to_bytes().len())),
    }
    out
}

/// Replays a connection of another protocol chunk by chunk: the server's chunks are sent, and
/// as many bytes as the client sent are read (not compared: such protocols carry
/// connection-specific state).
async fn raw(io: TokioIo<hyper::upgrade::Upgraded>, recorded: &Recorded, shared: &Shared) {
    let (mut rx, mut tx) = tokio::io::split(io);
    let origin = Instant::now();
    let base = recorded.exchange.t + recorded.exchange.took;
    for frame in &recorded.frames {
        let bytes = frame.data.to_bytes();
        match frame.from {
            Side::Server => {
                if !shared.pace(origin, frame.t - base).await {
                    return;
                }
                if tx.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            Side::Client => {
                let mut buffer = vec![0u8; bytes.len()];
                let read = tokio::select! {
                    read = rx.read_exact(&mut buffer) => read,
                    () = shared.stop.cancelled() => return,
                };
                if read.is_err() {
                    return;
                }
            }
        }
    }
    if recorded.end.as_ref().map(|e| e.by) == Some(Side::Server) {
        let _ = tx.shutdown().await;
        return;
    }
    let mut sink = [0u8; 4096];
    loop {
        tokio::select! {
            n = rx.read(&mut sink) => if !matches!(n, Ok(n) if n > 0) { return },
            () = shared.stop.cancelled() => return,
        }
    }
}
