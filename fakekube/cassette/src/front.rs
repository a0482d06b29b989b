//! The loopback TLS listener that the recording proxy and the replay both serve on: its own CA,
//! ALPN h2 and http/1.1, HTTP/1.1 upgrades, one task per connection, a shutdown that stops
//! accepting and cuts what is still open after a short grace.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt as _;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::tls::{self, TlsError};

/// The body of every answer the front gives.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// How long open connections may finish after a shutdown.
const GRACE: Duration = Duration::from_millis(500);

/// Why a listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// TLS material could not be made.
    #[error("making TLS material")]
    Tls(#[source] TlsError),
    /// The address could not be bound.
    #[error("binding {0}")]
    Bind(SocketAddr, #[source] std::io::Error),
}

/// A running listener.
pub(crate) struct Front {
    /// `https://127.0.0.1:PORT`.
    pub(crate) url: String,
    /// The PEM of the CA that signed its certificate.
    pub(crate) ca_pem: String,
    /// Fires on shutdown; long-running tasks (streams, upgraded connections) watch it.
    pub(crate) stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Front {
    /// Binds `addr` and serves `handle` on every request until [`Front::shutdown`] (or the
    /// cancellation of `stop`).
    pub(crate) async fn start<H, F>(
        name: &str,
        addr: SocketAddr,
        stop: CancellationToken,
        handle: H,
    ) -> Result<Front, ListenError>
    where
        H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
        F: Future<Output = Response<Body>> + Send + 'static,
    {
        let identity = tls::loopback_identity(name).map_err(ListenError::Tls)?;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| ListenError::Bind(addr, e))?;
        let local = listener
            .local_addr()
            .map_err(|e| ListenError::Bind(addr, e))?;
        let host = match local.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        let acceptor = TlsAcceptor::from(identity.config);
        let task = tokio::spawn(serve(listener, acceptor, stop.clone(), handle));
        Ok(Front {
            url: format!("https://{host}:{}", local.port()),
            ca_pem: identity.ca_pem,
            stop,
            task,
        })
    }

    /// Stops accepting, gives open connections a short grace, and waits for the listener.
    pub(crate) async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

async fn serve<H, F>(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    stop: CancellationToken,
    handle: H,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    loop {
        let (tcp, peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept");
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let handle = handle.clone();
        let watcher = graceful.watcher();
        let stop = stop.clone();
        tokio::spawn(async move {
            let tls = tokio::select! {
                () = stop.cancelled() => return,
                tls = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)) => match tls {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake");
                        return;
                    }
                    Err(_) => return,
                },
            };
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new());
            builder.http2().timer(TokioTimer::new());
            let service = hyper::service::service_fn(move |request| {
                let answer = handle(request);
                async move { Ok::<_, Infallible>(answer.await) }
            });
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            if let Err(e) = watcher.watch(connection.into_owned()).await {
                tracing::debug!(%peer, error = %e, "connection");
            }
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(GRACE, graceful.shutdown()).await;
}

/// A whole body.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(bytes.into()).boxed()
}

/// A `metav1.Status` of a failure with `code`, `reason` and `message`.
pub(crate) fn status_body(code: u16, reason: &str, message: &str) -> String {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
    .to_string()
}

/// A JSON `metav1.Status` answer with `code`, `reason` and `message`.
pub(crate) fn status(code: u16, reason: &str, message: &str) -> Response<Body> {
    let mut response = Response::new(full(status_body(code, reason, message)));
    *response.status_mut() =
        http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// The bearer token of a request, if it has one.
pub(crate) fn bearer(request: &Request<Incoming>) -> Option<&str> {
    request
        .headers()
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// A random token for a client kubeconfig.
pub(crate) fn random_token(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// The request's HTTP version as the cassette writes it.
pub(crate) fn version_name(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_10 => "1.0",
        _ => "1.1",
    }
}

/// Keeps an `Arc` alive for a handler closure.
pub(crate) fn handler<S, H, F>(
    state: Arc<S>,
    f: H,
) -> impl Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static
where
    S: Send + Sync + 'static,
    H: Fn(Arc<S>, Request<Incoming>) -> F + Copy + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    move |request| f(state.clone(), request)
}
