//! Port-forwarding over SPDY (`portforward.k8s.io`), directly (a `POST` upgrade) or tunnelled in
//! a WebSocket: for each local connection the client opens an error stream and a data stream,
//! both with the remote `port` and a `requestID`; once both arrived the pair is forwarded to
//! the pod's port. A refused port is reported on the error stream; otherwise bytes flow both
//! ways, each side's end passed on, and both streams are finished when the forwarding is over.

use super::codec::{self, parse_port_header, request_id};
use crate::kubelet::PortForwardTarget;
use crate::spdy::{Connection, Stream, StreamReader, StreamWriter};
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How long the second stream of a pair may take (the kubelet's `streamCreationTimeout`).
pub const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the end of a connection waits for the client to close.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// How long the client may still send after the pod's side of a connection ended.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The two streams of one forwarded connection, as they arrive.
#[derive(Debug)]
struct Pair {
    /// `streamtype: error`.
    error: Option<Stream>,
    /// `streamtype: data`.
    data: Option<Stream>,
    /// When the pair gives up waiting for its other stream.
    deadline: Instant,
}

/// Whether a stream the client opens may be accepted: a `port` header of 1 to 65535 and a
/// `streamtype` of `error` or `data` (others are refused, as the kubelet refuses them).
fn acceptable(headers: &crate::spdy::headers::Headers) -> bool {
    parse_port_header(headers.get("port")).is_some()
        && matches!(headers.get("streamtype"), Some("error" | "data"))
}

/// Serves a port-forward SPDY connection on `io` until the client closes it or the pod stops.
pub async fn serve<S>(io: S, target: PortForwardTarget)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let mut conn = Connection::start(io, Box::new(acceptable));
    let mut pairs: HashMap<String, Pair> = HashMap::new();
    let mut forwards = JoinSet::new();
    loop {
        let next_deadline = pairs.values().map(|p| p.deadline).min();
        let expired = async {
            match next_deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            stream = conn.accept() => {
                let Some(stream) = stream else { break };
                if let Some((error, data)) = file(&mut pairs, stream).await {
                    forwards.spawn(forward(error, data, target.clone()));
                }
            }
            () = expired => {
                let now = Instant::now();
                let late: Vec<String> = pairs
                    .iter()
                    .filter(|(_, p)| p.deadline <= now)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in late {
                    if let Some(Pair { error: Some(error), .. }) = pairs.remove(&id) {
                        let (_, w) = error.split();
                        let _ = w.write(format!("(request={id}) timed out waiting for streams").as_bytes()).await;
                        let _ = w.finish().await;
                    }
                }
            }
            Some(_) = forwards.join_next(), if !forwards.is_empty() => {}
            () = target.cancel.cancelled() => {
                forwards.abort_all();
                conn.finish(CLOSE_WAIT).await;
                return;
            }
        }
    }
    forwards.abort_all();
}

/// Files `stream` under its request; returns the pair once both streams are there.
async fn file(pairs: &mut HashMap<String, Pair>, stream: Stream) -> Option<(Stream, Stream)> {
    let data = stream.headers().get("streamtype") == Some("data");
    let id = request_id(stream.headers().get("requestid"), data, stream.id());
    let pair = pairs.entry(id.clone()).or_insert_with(|| Pair {
        error: None,
        data: None,
        deadline: Instant::now() + STREAM_CREATION_TIMEOUT,
    });
    let slot = if data {
        &mut pair.data
    } else {
        &mut pair.error
    };
    if slot.is_some() {
        let kind = if data { "data" } else { "error" };
        let message =
            format!("error processing stream for request {id}: {kind} stream already assigned");
        tracing::debug!(%message, "portforward");
        if let Some(error) = &pair.error {
            let _ = error.writer().write(message.as_bytes()).await;
        }
        return None;
    }
    *slot = Some(stream);
    if pair.error.is_some() && pair.data.is_some() {
        let pair = pairs.remove(&id)?;
        return pair.error.zip(pair.data);
    }
    None
}

/// Forwards one pair to the pod's port, then finishes both streams.
async fn forward(error: Stream, data: Stream, target: PortForwardTarget) {
    let port = parse_port_header(data.headers().get("port")).unwrap_or(0);
    let (_, error) = error.split();
    let (data_in, data_out) = data.split();
    match target.network.connect(port) {
        Err(e) => {
            tracing::debug!(port, error = %e, "portforward: the port refuses");
            let _ = error.write(codec::refused(port, &target).as_bytes()).await;
        }
        Ok(conn) => {
            tokio::select! {
                () = pump(conn, data_in, &data_out, &error) => {}
                () = target.cancel.cancelled() => {}
            }
        }
    }
    let _ = data_out.finish().await;
    let _ = error.finish().await;
}

/// Copies the client's data into the pod's connection and the connection's bytes back. The
/// client's FIN shuts the connection's write side, and the pod's bytes keep flowing until it
/// ends. The pod's end finishes both streams at once (older kubectl waits for the error
/// stream's end before it closes the local connection), and the client then has
/// [`CLOSE_GRACE`] to finish sending, as containerd gives the other direction a second.
async fn pump<C>(conn: C, mut data_in: StreamReader, data_out: &StreamWriter, error: &StreamWriter)
where
    C: AsyncRead + AsyncWrite,
{
    let (mut rd, mut wr) = tokio::io::split(conn);
    let up = async {
        while let Some(chunk) = data_in.recv().await {
            if wr.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = wr.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if data_out.write(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    tokio::pin!(up, down);
    tokio::select! {
        () = &mut down => {
            let _ = data_out.finish().await;
            let _ = error.finish().await;
            let _ = tokio::time::timeout(CLOSE_GRACE, &mut up).await;
        }
        () = &mut up => down.await,
    }
}
