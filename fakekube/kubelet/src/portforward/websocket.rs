//! Port-forwarding over WebSocket channels (`v4.channel.k8s.io`, its base64 variant, or no
//! subprotocol), as the kubelet serves kube-rs and the Python client: the ports come from the
//! query, port *i* has data channel `2i` and error channel `2i+1`, and the first message of
//! each channel is the port, little-endian. One connection to each pod port is made at once; a
//! refused port gets the kubelet's message on its error channel. The client's Close ends what
//! it sends to every port; the pod's end of every port ends the session with Close 1000.

use super::codec;
use crate::exec::codec::{self as channels, Inbound, Protocol};
use crate::kubelet::PortForwardTarget;
use crate::websocket::{self, Message, Reader, Writer};
use bytes::Bytes;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

/// Chunks buffered toward the client, and toward each pod port.
const CHUNKS: usize = 16;
/// How long the end waits for the client's Close.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// What the client has done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// Still sending.
    Open,
    /// It sent Close: nothing more comes, though it may still read.
    Closed,
    /// The connection ended.
    Gone,
}

/// What goes to the client.
#[derive(Debug)]
enum ToClient {
    /// A message on a channel.
    Data(u8, Bytes),
    /// A Pong with the Ping's payload.
    Pong(Vec<u8>),
    /// Close 1000, then nothing more.
    Close,
}

/// Serves the ports `ports` of the pod over `io`, in `framing` (the binary or base64 channel
/// framing), until every port is over, the client goes, or the pod stops.
pub async fn serve<S>(io: S, framing: Protocol, ports: Vec<u16>, target: PortForwardTarget)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (rd, wr) = tokio::io::split(io);
    let (to_client, to_client_rx) = mpsc::channel::<ToClient>(CHUNKS);
    let mut writer = tokio::spawn(write_loop(Writer::new(wr), framing, to_client_rx));
    let mut ports_tasks = JoinSet::new();
    let mut to_pod = Vec::with_capacity(ports.len());
    for (i, port) in ports.iter().copied().enumerate() {
        let data = u8::try_from(2 * i).unwrap_or(u8::MAX - 1);
        let prefix = Bytes::copy_from_slice(&codec::port_prefix(port));
        let _ = to_client.send(ToClient::Data(data, prefix.clone())).await;
        let _ = to_client.send(ToClient::Data(data + 1, prefix)).await;
        let (tx, rx) = mpsc::channel::<Bytes>(CHUNKS);
        to_pod.push(tx);
        ports_tasks.spawn(forward(port, data, rx, to_client.clone(), target.clone()));
    }
    let (peer_tx, mut peer) = watch::channel(Peer::Open);
    let reader = tokio::spawn(read_loop(
        Reader::new(rd),
        framing,
        to_pod,
        to_client.clone(),
        peer_tx,
    ));
    let ports_over = async { while ports_tasks.join_next().await.is_some() {} };
    let client_gone = tokio::select! {
        () = ports_over => false,
        _ = peer.wait_for(|p| *p == Peer::Gone) => true,
        () = target.cancel.cancelled() => false,
    };
    if !client_gone {
        let _ = to_client.send(ToClient::Close).await;
        let _ = tokio::time::timeout(CLOSE_WAIT, &mut writer).await;
        let _ = tokio::time::timeout(CLOSE_WAIT, peer.wait_for(|p| *p != Peer::Open)).await;
    }
    reader.abort();
    writer.abort();
}

/// Connects to the pod's port and copies both ways: the client's chunks in, the port's bytes
/// out on channel `data`; a refused port is reported on channel `data + 1`.
async fn forward(
    port: u16,
    data: u8,
    mut from_client: mpsc::Receiver<Bytes>,
    to_client: mpsc::Sender<ToClient>,
    target: PortForwardTarget,
) {
    let conn = match target.network.connect(port) {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(port, error = %e, "portforward: the port refuses");
            let message = Bytes::from(codec::refused(port, &target));
            let _ = to_client.send(ToClient::Data(data + 1, message)).await;
            return;
        }
    };
    let (mut rd, mut wr) = tokio::io::split(conn);
    let up = tokio::spawn(async move {
        while let Some(chunk) = from_client.recv().await {
            if wr.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = wr.shutdown().await;
    });
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        match rd.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let chunk = Bytes::copy_from_slice(&buf[..n]);
                if to_client.send(ToClient::Data(data, chunk)).await.is_err() {
                    break;
                }
            }
        }
    }
    up.abort();
}

/// Reads the client's messages: data for each port, Pings; a Close ends what every port gets.
async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: Reader<R>,
    framing: Protocol,
    mut to_pod: Vec<mpsc::Sender<Bytes>>,
    to_client: mpsc::Sender<ToClient>,
    peer: watch::Sender<Peer>,
) {
    loop {
        let data = match reader.next().await {
            Ok(Some(Message::Binary(d) | Message::Text(d))) => d,
            Ok(Some(Message::Ping(p))) => {
                let _ = to_client.try_send(ToClient::Pong(p));
                continue;
            }
            Ok(Some(Message::Pong)) => continue,
            Ok(Some(Message::Close(_))) => {
                // Nothing more comes from the client: every port's sending side ends.
                to_pod.clear();
                peer.send_replace(Peer::Closed);
                continue;
            }
            Ok(None) | Err(_) => break,
        };
        match channels::decode(framing, &data) {
            Ok(Inbound::Data { channel, payload }) if channel % 2 == 0 => {
                let Some(tx) = to_pod.get(usize::from(channel / 2)) else {
                    continue;
                };
                if !payload.is_empty() && tx.send(Bytes::from(payload)).await.is_err() {
                    tracing::debug!(channel, "portforward: the port no longer takes data");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "portforward: undecodable message dropped"),
        }
    }
    peer.send_replace(Peer::Gone);
}

/// Writes messages to the client until told to close (or every sender is gone), then Close
/// 1000.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: Writer<W>,
    framing: Protocol,
    mut items: mpsc::Receiver<ToClient>,
) {
    while let Some(item) = items.recv().await {
        let sent = match item {
            ToClient::Data(channel, payload) => {
                let e = channels::encode(framing, channel, &payload);
                let op = if e.text {
                    websocket::OP_TEXT
                } else {
                    websocket::OP_BINARY
                };
                writer.send(op, &e.data).await
            }
            ToClient::Pong(p) => writer.send(websocket::OP_PONG, &p).await,
            ToClient::Close => break,
        };
        if sent.is_err() || (items.is_empty() && writer.flush().await.is_err()) {
            return;
        }
    }
    if writer.close(1000).await.is_ok() {
        let _ = writer.flush().await;
    }
    let _ = writer.shutdown().await;
}
