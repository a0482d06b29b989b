//! The listener: TLS with ALPN (h2, http/1.1), one task per connection serving a [`Router`]
//! (with upgrades, for exec), graceful shutdown. It knows nothing of what the router serves; it
//! only hands each request the client certificate its connection presented
//! ([`PeerCertificate`]), which the TLS configuration verified (or, for a kubelet's, only
//! requested: see [`crate::tls::kubelet_serving`]).
//!
//! It keeps the transport's [`Limits`] as the API server's Go HTTP server keeps them: a
//! connection that takes too long to send a request's headers is closed (the header-read
//! timeout: slow clients cannot hold connections forever), one idle too long without a
//! request is closed gracefully (the idle timeout), a request target longer than [`MAX_URI`]
//! (63 KiB, near the most the `http` crate holds) is answered 414 on both HTTP versions (and
//! HTTP/2 takes header blocks up to Go's 1 MiB, so the connection stays up).

use axum::Router;
use axum::body::Body;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rustls_pki_types::CertificateDer;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// The certificate (DER) a client presented in the TLS handshake, in the extensions of every
/// request of that connection: verified against the server's trust anchors when the TLS
/// configuration verifies client certificates (the API server's), merely proven to be the
/// client's when it only requests them (a kubelet's, [`crate::tls::kubelet_serving`], whose
/// authentication verifies it per request).
#[derive(Debug, Clone)]
pub struct PeerCertificate(pub Arc<CertificateDer<'static>>);

/// Put in a response's extensions by the router: drop the request's connection (HTTP/1.1) or
/// stream (HTTP/2) instead of answering (an injected fault, decided once the caller is known).
#[derive(Debug, Clone, Copy)]
pub struct ResetConnection;

/// The error that makes hyper drop a request's connection (or stream) without an answer.
#[derive(Debug, thiserror::Error)]
#[error("the connection was reset by an injected fault")]
struct ResetByFault;

/// The transport's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How long a client may take from the first byte of a request's headers to the last
    /// (and from the TLS handshake to its first request).
    pub header_read_timeout: Duration,
    /// How long a connection may stay without a request in flight and without a byte read.
    pub idle_timeout: Duration,
    /// Requests served at once, long-running ones not counted (0: no limit); checked by the
    /// dispatcher, which knows who asks and what is long-running.
    pub max_inflight: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(90),
            max_inflight: 0,
        }
    }
}

/// The longest request target (path and query) served; longer ones get 414 with a Status.
/// Go's server allows 1 MiB of request line and headers together, but the `http` crate holds
/// no URI past [`HTTP_MAX_URI`] bytes: the limit is as near that as leaves a band of targets
/// hyper parses and fakekube answers 414 with a Status on both HTTP versions. Past the band
/// the stack refuses the request itself: HTTP/1.1 gets hyper's bare 414 (431 past its 400 KiB
/// buffer), HTTP/2 a reset stream (`PROTOCOL_ERROR`) on a connection that stays up.
pub const MAX_URI: usize = HTTP_MAX_URI - 1024;

/// The longest URI the `http` crate holds (`u16::MAX - 1` bytes), and so hyper parses.
pub const HTTP_MAX_URI: usize = u16::MAX as usize - 1;

/// The largest HTTP/2 header block taken (Go's 1 MiB), so that an over-long URL reaches the
/// 414 answer instead of breaking the connection (hyper's default of 16 KiB would refuse the
/// header block and, past it by far, close the connection).
const MAX_HEADER_LIST: u32 = 1 << 20;

/// Accepts connections until `shutdown` fires, then waits (up to `grace`) for open connections.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    shutdown: CancellationToken,
    grace: Duration,
    limits: Limits,
) {
    let graceful = GracefulShutdown::new();
    loop {
        let (tcp, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept");
                    continue;
                }
            },
        };
        // Without this, a response split across segments waits on the peer's delayed ACK.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "TCP_NODELAY");
        }
        let acceptor = acceptor.clone();
        let router = router.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "TLS handshake timed out");
                        return;
                    }
                };
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout);
            builder
                .http2()
                .timer(TokioTimer::new())
                .max_header_list_size(MAX_HEADER_LIST);
            let peer_certificate = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|chain| chain.first())
                .map(|c| PeerCertificate(Arc::new(c.clone().into_owned())));
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
            let activity = Activity::new(h2);
            let counted = activity.clone();
            let svc = tower::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                let router = router.clone();
                let guard = counted.request();
                if let Some(c) = &peer_certificate {
                    req.extensions_mut().insert(c.clone());
                }
                async move {
                    if let Some(refused) = uri_too_long(req.uri()) {
                        return Ok(refused);
                    }
                    // Over HTTP/2 the request's body outlives a handler that stops reading it
                    // (a 413): the answer's body drains it once sent (see `Held`).
                    let (response, request_body) = if h2 {
                        let (parts, body) = req.into_parts();
                        let shared = SharedBody(Arc::new(Mutex::new(body)));
                        let kept = shared.0.clone();
                        let req = http::Request::from_parts(parts, Body::new(shared));
                        (router.oneshot(req).await, Some(kept))
                    } else {
                        (router.oneshot(req).await, None)
                    };
                    let response = response.map_err(|e| match e {})?;
                    if response.extensions().get::<ResetConnection>().is_some() {
                        // hyper closes an HTTP/1.1 connection, or resets an HTTP/2 stream,
                        // whose service fails.
                        return Err(ResetByFault);
                    }
                    Ok::<_, ResetByFault>(response.map(|body| {
                        Body::new(Held {
                            inner: body,
                            _guard: guard,
                            request_body,
                        })
                    }))
                }
            });
            let io = Watched {
                inner: tls,
                activity: activity.clone(),
            };
            let conn = builder
                .serve_connection_with_upgrades(TokioIo::new(io), TowerToHyperService::new(svc));
            // Boxed: held inline, the connection (with its TLS stream) would take room in this
            // task's future beside what the handshake left there, per open connection.
            let conn = Box::pin(watcher.watch(conn.into_owned()));
            tokio::select! {
                result = conn => {
                    if let Err(e) = result {
                        tracing::debug!(%peer, error = %e, "connection");
                    }
                }
                expired = activity.expired(&limits) => match expired {
                    Expired::Headers => {
                        tracing::debug!(%peer, "request headers not read in time: closed");
                    }
                    Expired::Idle => tracing::debug!(%peer, "idle connection: closed"),
                },
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("connections still open after the grace period");
    }
}

/// What a connection has been doing: requests in flight, bytes read since the last one ended.
#[derive(Debug, Clone)]
struct Activity(Arc<ActivityInner>);

#[derive(Debug)]
struct ActivityInner {
    /// Whether the connection speaks HTTP/2 (whose frames between requests, PINGs and
    /// window updates, start no request: only the idle timeout applies).
    h2: bool,
    /// Requests whose headers were read and whose answer is not done.
    in_flight: AtomicUsize,
    /// Bytes read since the connection was last quiet.
    read: AtomicU64,
    /// When the connection was last quiet (accepted, or its last request ended), and when
    /// its first byte after that arrived.
    quiet: Mutex<(Instant, Option<Instant>)>,
}

/// Why a connection is closed.
enum Expired {
    /// A request's headers took too long.
    Headers,
    /// No request for too long.
    Idle,
}

impl Activity {
    fn new(h2: bool) -> Self {
        Activity(Arc::new(ActivityInner {
            h2,
            in_flight: AtomicUsize::new(0),
            read: AtomicU64::new(0),
            quiet: Mutex::new((Instant::now(), None)),
        }))
    }

    /// A request's headers were read: it is in flight until the returned guard goes (with the
    /// request, when its handler is done).
    fn request(&self) -> InFlight {
        self.0.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }

    /// Bytes arrived.
    fn read(&self, n: usize) {
        if n == 0 {
            return;
        }
        if self.0.read.fetch_add(n as u64, Ordering::SeqCst) == 0 {
            let mut q = self.0.quiet.lock().unwrap_or_else(|p| p.into_inner());
            q.1.get_or_insert_with(Instant::now);
        }
    }

    /// Resolves when the connection has been without a request in flight for longer than a
    /// limit allows: past the header-read timeout since bytes of a request began to arrive,
    /// past the idle timeout with no byte at all.
    async fn expired(&self, limits: &Limits) -> Expired {
        loop {
            let wait = {
                let q = *self.0.quiet.lock().unwrap_or_else(|p| p.into_inner());
                if self.0.in_flight.load(Ordering::SeqCst) > 0 {
                    limits.header_read_timeout.min(limits.idle_timeout)
                } else {
                    match q.1.filter(|_| !self.0.h2) {
                        Some(first) => {
                            let left = limits.header_read_timeout.saturating_sub(first.elapsed());
                            if left.is_zero() {
                                return Expired::Headers;
                            }
                            left
                        }
                        None => {
                            let left = limits.idle_timeout.saturating_sub(q.0.elapsed());
                            if left.is_zero() {
                                return Expired::Idle;
                            }
                            left
                        }
                    }
                }
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// A request in flight on a connection; when it goes (with the answer's body, once sent), the
/// connection is quiet again if no other request is in flight.
#[derive(Debug)]
struct InFlight(Activity);

/// An answer's body holding its request's [`InFlight`] until it is sent or dropped, and over
/// HTTP/2 the request's own body, which it drains once the answer is sent.
struct Held {
    inner: Body,
    _guard: InFlight,
    request_body: Option<Arc<Mutex<hyper::body::Incoming>>>,
}

/// The most of an unread HTTP/2 request body drained after its answer (a 413's).
const DRAIN_BYTES: usize = 64 << 20;
/// The longest an unread HTTP/2 request body is drained after its answer.
const DRAIN_TIME: Duration = Duration::from_secs(10);

impl Drop for Held {
    /// An HTTP/2 request body its handler left unread (a 413's) is read to its end and dropped,
    /// at most [`DRAIN_BYTES`] for [`DRAIN_TIME`]: a client still uploading when the answer
    /// came (curl) then ends its stream and reads the answer. Dropped at once instead, the
    /// stream would be reset under the upload and curl would report no status at all; past the
    /// bound it is reset with NO_ERROR, as RFC 9113 8.1 lets a server do.
    fn drop(&mut self) {
        let Some(body) = self.request_body.take() else {
            return;
        };
        let at_end = {
            let read = body.lock().unwrap_or_else(|p| p.into_inner());
            hyper::body::Body::is_end_stream(&*read)
        };
        if at_end {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(drain(SharedBody(body)));
        }
    }
}

/// Reads `body` to its end and drops what it reads, within [`DRAIN_BYTES`] and [`DRAIN_TIME`].
async fn drain(mut body: SharedBody) {
    use http_body_util::BodyExt;
    let read = async {
        let mut left = DRAIN_BYTES;
        while let Some(Ok(frame)) = body.frame().await {
            let n = frame.data_ref().map_or(0, bytes::Bytes::len);
            left = left.saturating_sub(n);
            if left == 0 {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, read).await;
}

/// A request body shared with the answer's [`Held`], so that it outlives the handler.
struct SharedBody(Arc<Mutex<hyper::body::Incoming>>);

impl hyper::body::Body for SharedBody {
    type Data = bytes::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let mut body = self.0.lock().unwrap_or_else(|p| p.into_inner());
        Pin::new(&mut *body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        let body = self.0.lock().unwrap_or_else(|p| p.into_inner());
        body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        let body = self.0.lock().unwrap_or_else(|p| p.into_inner());
        body.size_hint()
    }
}

impl hyper::body::Body for Held {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let inner = &self.0.0;
        if inner.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            let mut q = inner.quiet.lock().unwrap_or_else(|p| p.into_inner());
            inner.read.store(0, Ordering::SeqCst);
            *q = (Instant::now(), None);
        }
    }
}

/// A connection's byte stream, counting what it reads.
struct Watched<S> {
    inner: S,
    activity: Activity,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.activity.read(n);
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// 414 for a request target longer than [`MAX_URI`], as a Status; `None` for any other.
pub fn uri_too_long(uri: &http::Uri) -> Option<http::Response<Body>> {
    let len = uri.path_and_query().map_or(0, |p| p.as_str().len());
    if len <= MAX_URI {
        return None;
    }
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("the request URI of {len} bytes is longer than the limit of {MAX_URI} bytes"),
        "reason": "RequestURITooLong",
        "code": 414,
    });
    let mut r = http::Response::new(Body::from(status.to_string()));
    *r.status_mut() = http::StatusCode::URI_TOO_LONG;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(len: usize) -> String {
        let mut t = "/api/v1/pods?pad=".to_owned();
        t.push_str(&"x".repeat(len - t.len()));
        t
    }

    #[test]
    fn the_http_crate_holds_a_uri_of_http_max_uri_bytes_and_not_one_more() {
        assert!(target(HTTP_MAX_URI).parse::<http::Uri>().is_ok());
        assert!(target(HTTP_MAX_URI + 1).parse::<http::Uri>().is_err());
    }

    #[test]
    fn a_target_of_max_uri_bytes_is_served_and_one_byte_more_is_refused_with_a_status() {
        let at: http::Uri = target(MAX_URI).parse().unwrap();
        assert!(uri_too_long(&at).is_none());
        let past: http::Uri = target(MAX_URI + 1).parse().unwrap();
        let refused = uri_too_long(&past).expect("a 414");
        assert_eq!(refused.status(), http::StatusCode::URI_TOO_LONG);
    }
}
