//! The Kubernetes REST client: hyper over tokio-rustls (ring), bearer tokens from
//! [`Credentials`] and, when the kubeconfig gives one, a client certificate (from a
//! [`CertSlot`], read at every handshake), JSON in and out, and `metav1.Status` bodies turned into [`KubeError`]s that
//! map onto the contract's error codes.
//!
//! Like client-go, it offers HTTP/2 by ALPN and sends every API request over one multiplexed
//! connection when the server agrees (HTTP/1.1 with a connection pool when it does not). The
//! `pods/exec` WebSocket needs an HTTP/1.1 upgrade, so it gets a connection of its own that
//! offers only `http/1.1`, opened while the caller looks up the pod; see [`crate::exec`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::ClientConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use sandbox_contract::Error;
use secrecy::ExposeSecret;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::credentials::{CredentialError, Credentials};
use crate::identity::{CertSlot, SlotResolver};
use crate::retry::Retries;

/// The largest response body read, in bytes (a page of a list is far smaller).
const MAX_BODY: usize = 64 << 20;

/// The User-Agent sent with every request.
const USER_AGENT: &str = concat!("agentsandbox/", env!("CARGO_PKG_VERSION"));

/// The cause of a failure, kept as the error's [`source`](std::error::Error::source).
pub(crate) type Cause = Box<dyn std::error::Error + Send + Sync>;

/// A failed call to the API server, named for the step that failed. Causes are kept as
/// sources; none of them carries the token or a request's query.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KubeError {
    /// The server answered with an error status (its `metav1.Status`, when it sent one).
    #[error("{message} ({code} {reason})")]
    Api {
        /// The HTTP status.
        code: u16,
        /// The Status `reason` (`NotFound`, `Forbidden`...), or the HTTP reason phrase.
        reason: String,
        /// The Status `message`, or a sentence saying what failed.
        message: String,
        /// The delay the server asked for (Retry-After), if any.
        retry_after: Option<Duration>,
    },
    /// The server could not be reached, or the connection broke before the answer's head.
    #[error("cannot reach the API server")]
    Transport(#[source] Cause),
    /// The body of an answer could not be read: the connection broke, or it was larger than
    /// [`MAX_BODY`].
    #[error("cannot read the API server's answer")]
    ReadBody(#[source] Cause),
    /// The answer was not the JSON the API promises.
    #[error("unexpected answer from the API server")]
    Decode(#[source] serde_json::Error),
    /// A request body could not be encoded as JSON.
    #[error("cannot encode a request body")]
    Encode(#[source] serde_json::Error),
    /// A request could not be built; `part` names what was refused.
    #[error("cannot build a request: {part}")]
    BuildRequest {
        /// The refused part (`the path`, `the token`...).
        part: &'static str,
        /// Why.
        #[source]
        source: http::Error,
    },
    /// No token could be had.
    #[error("no credentials")]
    Credentials(#[from] CredentialError),
}

impl KubeError {
    /// Returns the HTTP status of an API error.
    pub(crate) fn code(&self) -> Option<u16> {
        match self {
            KubeError::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Returns whether the server said the object does not exist.
    pub(crate) fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// Returns whether the server said the object already exists or changed meanwhile.
    pub(crate) fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }
}

impl From<KubeError> for Error {
    /// Maps the failure to the contract's code; the message is the failure and its causes.
    fn from(error: KubeError) -> Self {
        match error {
            KubeError::Api {
                code,
                message,
                retry_after,
                ..
            } => match code {
                400 | 422 => Error::invalid_request(message),
                401 => Error::unauthenticated(
                    "the API server refused the token (401), also after reading it again",
                ),
                403 => Error::permission_denied(message),
                404 => Error::not_found(message),
                409 => Error::conflict(message),
                410 => Error::unavailable(format!(
                    "{message} (410: the list changed too much while paging; retry)"
                )),
                429 => Error::rate_limited(message, retry_after),
                500 => Error::internal(message),
                _ if code >= 500 => Error::unavailable(message),
                _ => Error::internal(format!("unexpected status {code}: {message}")),
            },
            KubeError::Transport(_) | KubeError::ReadBody(_) => {
                Error::unavailable(with_causes(&error))
            }
            KubeError::Decode(_) | KubeError::Encode(_) | KubeError::BuildRequest { .. } => {
                Error::internal(with_causes(&error))
            }
            KubeError::Credentials(e) => Error::unauthenticated(with_causes(&e)),
        }
    }
}

/// Why the CA certificates cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CaError {
    /// The text is not PEM.
    #[error("the CA file is not PEM")]
    NotPem(#[source] rustls_pki_types::pem::Error),
    /// A certificate could not be added to the trusted roots.
    #[error("the CA certificate is not usable")]
    Unusable(#[source] rustls::Error),
    /// The PEM holds no certificate.
    #[error("the CA file holds no certificate")]
    Empty,
    /// rustls refused the protocol versions.
    #[error("TLS setup")]
    Protocols(#[source] rustls::Error),
}

/// Builds the rustls configuration trusting exactly the PEM certificates in `ca_pem`, and
/// presenting the client certificate `identity` holds at each handshake, when given.
pub(crate) fn tls_config(
    ca_pem: &[u8],
    identity: Option<CertSlot>,
) -> Result<Arc<ClientConfig>, CaError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots
            .add(cert.map_err(CaError::NotPem)?)
            .map_err(CaError::Unusable)?;
    }
    if roots.is_empty() {
        return Err(CaError::Empty);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(CaError::Protocols)?
        .with_root_certificates(roots);
    let config = match identity {
        Some(slot) => builder.with_client_cert_resolver(Arc::new(SlotResolver(slot))),
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// Why an API server URL cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServerUrlError {
    /// It does not parse as a URL.
    #[error("`{0}` is not a URL")]
    NotAUrl(String, #[source] http::uri::InvalidUri),
    /// It is not `https://` (TLS is always verified).
    #[error("`{0}` is not an https:// URL")]
    NotHttps(String),
    /// It names no host.
    #[error("`{0}` has no host")]
    NoHost(String),
    /// Its host is neither a DNS name nor an IP address.
    #[error("`{0}` is not a valid server name")]
    BadServerName(String, #[source] rustls_pki_types::InvalidDnsNameError),
}

/// Opens TLS connections to the API server for hyper's pool.
#[derive(Clone)]
pub(crate) struct Connector {
    /// The TLS client.
    tls: tokio_rustls::TlsConnector,
    /// The name the certificate must carry.
    server_name: ServerName<'static>,
    /// `host:port` to connect to.
    addr: String,
}

impl tower::Service<Uri> for Connector {
    type Response = TokioIo<TlsConn>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let tcp = TcpStream::connect(&this.addr).await?;
            tcp.set_nodelay(true)?;
            let tls = this.tls.connect(this.server_name.clone(), tcp).await?;
            Ok(TokioIo::new(TlsConn(tls)))
        })
    }
}

/// A TLS connection to the API server.
pub(crate) struct TlsConn(tokio_rustls::client::TlsStream<TcpStream>);

impl AsyncRead for TlsConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}

impl Connection for TlsConn {
    fn connected(&self) -> Connected {
        let connected = Connected::new();
        if self.0.get_ref().1.alpn_protocol() == Some(b"h2") {
            connected.negotiated_h2()
        } else {
            connected
        }
    }
}

/// Which client a request goes through.
enum Via<'a> {
    /// The pooled client of API requests.
    Api,
    /// The connection of an upgrade.
    Upgrade(&'a mut hyper::client::conn::http1::SendRequest<Full<Bytes>>),
}

/// How many upgrade connections (`pods/exec`) a client opens at once: each holds its turn from
/// its TCP connect until the server answers the upgrade, so a burst of a thousand execs waits
/// here, not as a thousand TLS handshakes and requests queued on the API server. A running
/// exec holds no turn.
const UPGRADES_AT_ONCE: usize = 64;

/// A connection opened for an upgrade by [`KubeClient::connect_for_upgrade`], with its turn.
pub(crate) struct UpgradeConnection(TokioIo<TlsConn>, tokio::sync::OwnedSemaphorePermit);

/// The pooled client of API requests. Until a first request has its connection, requests wait
/// for it: hyper learns only from the TLS handshake that a connection is HTTP/2 and can carry
/// them all, and would otherwise open one connection per request of a burst at start.
struct ApiClient {
    http: Client<Connector, Full<Bytes>>,
    /// Whether a request has gone through.
    connected: AtomicBool,
    /// Held by the request that opens the first connection.
    first: tokio::sync::Mutex<()>,
}

impl ApiClient {
    async fn request(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        if self.connected.load(Ordering::Acquire) {
            return self.http.request(request).await;
        }
        let _first = self.first.lock().await;
        let response = self.http.request(request).await;
        if response.is_ok() {
            self.connected.store(true, Ordering::Release);
        }
        response
    }
}

/// A client of one API server with one token source.
#[derive(Clone)]
pub(crate) struct KubeClient {
    /// The server URL without a trailing `/` (it may carry a path prefix).
    base: String,
    /// The client of API requests: HTTP/2 when the server offers it, else pooled HTTP/1.1.
    api: Arc<ApiClient>,
    /// Opens the connections of upgrades (`pods/exec`): HTTP/1.1 only.
    upgrades: Connector,
    /// The turns of upgrades being opened ([`UPGRADES_AT_ONCE`]).
    upgrade_turns: Arc<tokio::sync::Semaphore>,
    /// Where the token comes from.
    credentials: Arc<Credentials>,
}

impl std::fmt::Debug for KubeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClient")
            .field("base", &self.base)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

impl KubeClient {
    /// Builds a client of `server` (an `https://` URL) trusting `tls`.
    pub(crate) fn new(
        server: &str,
        tls: Arc<ClientConfig>,
        credentials: Arc<Credentials>,
    ) -> Result<Self, ServerUrlError> {
        let uri: Uri = server
            .parse()
            .map_err(|e| ServerUrlError::NotAUrl(server.to_owned(), e))?;
        if uri.scheme_str() != Some("https") {
            return Err(ServerUrlError::NotHttps(server.to_owned()));
        }
        let host = uri
            .host()
            .ok_or_else(|| ServerUrlError::NoHost(server.to_owned()))?;
        let port = uri.port_u16().unwrap_or(443);
        let bare_host = host.trim_start_matches('[').trim_end_matches(']');
        let server_name = ServerName::try_from(bare_host.to_owned())
            .map_err(|e| ServerUrlError::BadServerName(host.to_owned(), e))?;
        let addr = if bare_host.contains(':') {
            format!("[{bare_host}]:{port}")
        } else {
            format!("{bare_host}:{port}")
        };
        let connector = |alpn: &[&[u8]]| {
            let mut config = ClientConfig::clone(&tls);
            config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
            Connector {
                tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
                server_name: server_name.clone(),
                addr: addr.clone(),
            }
        };
        let http = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .timer(TokioTimer::new())
            .build(connector(&[b"h2", b"http/1.1"]));
        Ok(KubeClient {
            base: server.trim_end_matches('/').to_owned(),
            api: Arc::new(ApiClient {
                http,
                connected: AtomicBool::new(false),
                first: tokio::sync::Mutex::new(()),
            }),
            upgrades: connector(&[b"http/1.1"]),
            upgrade_turns: Arc::new(tokio::sync::Semaphore::new(UPGRADES_AT_ONCE)),
            credentials,
        })
    }

    /// Builds the full URI of `path_and_query` (which starts with `/`).
    fn uri(&self, path_and_query: &str) -> Result<Uri, KubeError> {
        format!("{}{path_and_query}", self.base)
            .parse()
            .map_err(|e: http::uri::InvalidUri| KubeError::BuildRequest {
                part: "the path",
                source: e.into(),
            })
    }

    /// Sends one request with the current token; after a 401 it reads the token again and
    /// retries once. Throttled and unavailable answers that say when to come back, and GETs
    /// whose connection broke, are sent again as client-go sends them (see [`crate::retry`]).
    /// Returns the response of the last attempt.
    pub(crate) async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &HeaderMap,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Response<Incoming>, KubeError> {
        let uri = self.uri(path_and_query)?;
        let mut retries = Retries::default();
        loop {
            let sent = self
                .send_via(Via::Api, method.clone(), uri.clone(), headers, body.clone())
                .await;
            let wait = match &sent {
                Ok(response) => retries.after_answer(response.status(), response.headers()),
                Err(KubeError::Transport(cause)) => retries.after_failure(&method, cause.as_ref()),
                Err(_) => None,
            };
            let Some(wait) = wait else {
                return sent;
            };
            tracing::debug!(
                %method,
                path = path_only(path_and_query),
                wait_ms = wait.as_millis() as u64,
                "sending the request again"
            );
            if let Ok(response) = sent {
                // Read the refusal so its connection can carry the retry.
                let _ = read_body(response.into_body()).await;
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// Opens an HTTP/1.1 connection for [`send_upgrade`](Self::send_upgrade). Callers start it
    /// while they look up what the upgrade is for, so the TLS handshake overlaps that lookup.
    /// Waits for a turn first ([`UPGRADES_AT_ONCE`]).
    pub(crate) async fn connect_for_upgrade(&self) -> Result<UpgradeConnection, KubeError> {
        let turn = Arc::clone(&self.upgrade_turns)
            .acquire_owned()
            .await
            .map_err(|e| KubeError::Transport(e.into()))?;
        let io = tower::Service::call(&mut self.upgrades.clone(), Uri::default())
            .await
            .map_err(|e| KubeError::Transport(e.into()))?;
        Ok(UpgradeConnection(io, turn))
    }

    /// Sends a GET that asks for an upgrade (its `Connection` and `Upgrade` headers are in
    /// `headers`) over `connection`, with the token handling of [`send`](Self::send).
    pub(crate) async fn send_upgrade(
        &self,
        connection: UpgradeConnection,
        path_and_query: &str,
        headers: &HeaderMap,
    ) -> Result<Response<Incoming>, KubeError> {
        let full = self.uri(path_and_query)?;
        // On a connection of its own the request names only its path, and the Host header
        // says where it goes.
        let target: Uri = full
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|e: http::uri::InvalidUri| KubeError::BuildRequest {
                part: "the path",
                source: e.into(),
            })?;
        let mut headers = headers.clone();
        if let Some(authority) = full.authority()
            && let Ok(host) = HeaderValue::from_str(authority.as_str())
        {
            headers.insert(header::HOST, host);
        }
        // The turn is given back once the server has answered, when this returns.
        let UpgradeConnection(io, _turn) = connection;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| KubeError::Transport(e.into()))?;
        tokio::spawn(async move {
            if let Err(e) = conn.with_upgrades().await {
                tracing::debug!(error = %e, "exec connection");
            }
        });
        self.send_via(
            Via::Upgrade(&mut sender),
            Method::GET,
            target,
            &headers,
            None,
        )
        .await
    }

    /// Sends a request `via` a client with the current token; after a 401 it reads the token
    /// again and retries once. Returns the response of the last attempt.
    async fn send_via(
        &self,
        mut via: Via<'_>,
        method: Method,
        uri: Uri,
        headers: &HeaderMap,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Response<Incoming>, KubeError> {
        for attempt in 0..2 {
            let request = self
                .request(attempt, &method, uri.clone(), headers, body.clone())
                .await?;
            let response = match &mut via {
                Via::Api => self
                    .api
                    .request(request)
                    .await
                    .map_err(|e| KubeError::Transport(e.into()))?,
                Via::Upgrade(sender) => {
                    sender
                        .ready()
                        .await
                        .map_err(|e| KubeError::Transport(e.into()))?;
                    sender
                        .send_request(request)
                        .await
                        .map_err(|e| KubeError::Transport(e.into()))?
                }
            };
            if response.status() == StatusCode::UNAUTHORIZED && attempt == 0 {
                // Read the refusal so its connection can carry the retry.
                let _ = read_body(response.into_body()).await;
                continue;
            }
            return Ok(response);
        }
        Err(unauthorized())
    }

    /// Builds attempt `attempt` of a request: the current token on the first, a token read
    /// again after a 401 on the second.
    async fn request(
        &self,
        attempt: u32,
        method: &Method,
        uri: Uri,
        headers: &HeaderMap,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Request<Full<Bytes>>, KubeError> {
        let token = if attempt == 0 {
            self.credentials.token().await?
        } else {
            tracing::debug!("the API server answered 401; reading the token again");
            self.credentials.refresh().await?
        };
        let mut request = Request::builder()
            .method(method.clone())
            .uri(uri)
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, USER_AGENT);
        if let Some(token) = token {
            let mut auth = HeaderValue::from_str(&format!("Bearer {}", token.expose_secret()))
                .map_err(|e| KubeError::BuildRequest {
                    part: "the token",
                    source: e.into(),
                })?;
            auth.set_sensitive(true);
            request = request.header(header::AUTHORIZATION, auth);
        }
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let full = match body {
            Some((content_type, bytes)) => {
                request = request.header(header::CONTENT_TYPE, content_type);
                Full::new(bytes)
            }
            None => Full::new(Bytes::new()),
        };
        request
            .body(full)
            .map_err(|source| KubeError::BuildRequest {
                part: "the headers",
                source,
            })
    }

    /// Sends a request and returns the body of a successful answer, or the Status as an error.
    pub(crate) async fn call(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Bytes, KubeError> {
        tracing::debug!(%method, path = path_only(path_and_query), "API request");
        let response = self
            .send(method, path_and_query, &HeaderMap::new(), body)
            .await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = read_body(response.into_body()).await?;
        if status.is_success() {
            Ok(body)
        } else {
            let error = status_error(status, &headers, &body);
            tracing::debug!(code = status.as_u16(), "API request failed");
            Err(error)
        }
    }

    /// GETs `path` and decodes the JSON answer.
    pub(crate) async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, KubeError> {
        decode(&self.call(Method::GET, path, None).await?)
    }

    /// POSTs `object` as JSON to `path` and decodes the answer.
    pub(crate) async fn create<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        object: &B,
    ) -> Result<T, KubeError> {
        let body = encode(object)?;
        decode(
            &self
                .call(Method::POST, path, Some(("application/json", body)))
                .await?,
        )
    }

    /// Sends a JSON merge patch to `path` and decodes the answer.
    pub(crate) async fn merge_patch<T: DeserializeOwned>(
        &self,
        path: &str,
        patch: &serde_json::Value,
    ) -> Result<T, KubeError> {
        let body = encode(patch)?;
        decode(
            &self
                .call(
                    Method::PATCH,
                    path,
                    Some(("application/merge-patch+json", body)),
                )
                .await?,
        )
    }

    /// DELETEs `path` (background propagation); a missing object is success.
    pub(crate) async fn delete(&self, path: &str) -> Result<(), KubeError> {
        let body = Bytes::from_static(
            br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}"#,
        );
        match self
            .call(Method::DELETE, path, Some(("application/json", body)))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Reads a response body, refusing more than [`MAX_BODY`] bytes.
pub(crate) async fn read_body(body: Incoming) -> Result<Bytes, KubeError> {
    Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .map_err(KubeError::ReadBody)
}

/// Encodes a request body.
fn encode<B: Serialize>(object: &B) -> Result<Bytes, KubeError> {
    serde_json::to_vec(object)
        .map(Bytes::from)
        .map_err(KubeError::Encode)
}

/// Decodes a JSON answer.
fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, KubeError> {
    serde_json::from_slice(body).map_err(KubeError::Decode)
}

/// Returns the path of a request without its query (which may hold exec arguments).
pub(crate) fn path_only(path_and_query: &str) -> &str {
    path_and_query
        .split_once('?')
        .map_or(path_and_query, |(path, _)| path)
}

/// The error of a request refused twice with 401.
fn unauthorized() -> KubeError {
    KubeError::Api {
        code: 401,
        reason: "Unauthorized".to_owned(),
        message: "the API server refused the token".to_owned(),
        retry_after: None,
    }
}

/// `error` and each of its causes, joined with `: ` (the form a contract error's message takes).
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// Turns an error answer into a [`KubeError::Api`], from its `metav1.Status` when it has one.
pub(crate) fn status_error(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> KubeError {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let field = |name: &str| {
        parsed
            .as_ref()
            .and_then(|v| v.get(name))
            .and_then(serde_json::Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let reason = field("reason").unwrap_or_else(|| {
        status
            .canonical_reason()
            .unwrap_or("Unknown")
            .replace(' ', "")
    });
    let message = field("message").unwrap_or_else(|| {
        format!(
            "the API server answered {} {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        )
        .trim_end()
        .to_owned()
    });
    let retry_after = headers
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or_else(|| {
            parsed
                .as_ref()
                .and_then(|v| v.pointer("/details/retryAfterSeconds"))
                .and_then(serde_json::Value::as_u64)
        })
        .map(Duration::from_secs);
    KubeError::Api {
        code: status.as_u16(),
        reason,
        message: cut(&message, 1024),
        retry_after,
    }
}

/// Cuts `text` to at most `max` characters.
pub(crate) fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_contract::ErrorCode;

    fn api(code: u16) -> KubeError {
        KubeError::Api {
            code,
            reason: "R".into(),
            message: "m".into(),
            retry_after: None,
        }
    }

    #[test]
    fn status_codes_map_to_the_contract_codes() {
        let table: Vec<(u16, ErrorCode)> = [400, 401, 403, 404, 409, 410, 422, 429, 500, 503, 504]
            .into_iter()
            .map(|code| (code, Error::from(api(code)).code()))
            .collect();
        assert_eq!(
            table,
            [
                (400, ErrorCode::InvalidRequest),
                (401, ErrorCode::Unauthenticated),
                (403, ErrorCode::PermissionDenied),
                (404, ErrorCode::NotFound),
                (409, ErrorCode::Conflict),
                (410, ErrorCode::Unavailable),
                (422, ErrorCode::InvalidRequest),
                (429, ErrorCode::RateLimited),
                (500, ErrorCode::Internal),
                (503, ErrorCode::Unavailable),
                (504, ErrorCode::Unavailable),
            ]
        );
    }

    #[test]
    fn forbidden_status_message_names_what_was_refused() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"sandboxes.agents.x-k8s.io is forbidden: User \"u\" cannot list resource \"sandboxes\"","reason":"Forbidden","code":403}"#;
        let error = Error::from(status_error(StatusCode::FORBIDDEN, &HeaderMap::new(), body));
        assert!(error.is_permission_denied());
        assert!(
            error
                .message()
                .contains("cannot list resource \"sandboxes\"")
        );
    }

    #[test]
    fn retry_after_comes_from_the_header_or_the_details() {
        let mut headers = HeaderMap::new();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("3"));
        let error = Error::from(status_error(StatusCode::TOO_MANY_REQUESTS, &headers, b""));
        assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
        let body = br#"{"kind":"Status","reason":"TooManyRequests","message":"slow down","details":{"retryAfterSeconds":7},"code":429}"#;
        let error = Error::from(status_error(
            StatusCode::TOO_MANY_REQUESTS,
            &HeaderMap::new(),
            body,
        ));
        assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
        assert_eq!(error.message(), "slow down");
    }

    #[test]
    fn a_body_that_is_not_a_status_still_gives_a_message() {
        let error = status_error(StatusCode::BAD_GATEWAY, &HeaderMap::new(), b"<html>");
        let KubeError::Api {
            code,
            reason,
            message,
            retry_after,
        } = error
        else {
            panic!("not an API error: {error:?}");
        };
        assert_eq!(
            (code, reason.as_str(), message.as_str(), retry_after),
            (
                502,
                "BadGateway",
                "the API server answered 502 Bad Gateway",
                None
            )
        );
    }

    #[test]
    fn a_failure_keeps_its_cause_and_the_contract_error_shows_the_chain() {
        let bad_json = serde_json::from_slice::<serde_json::Value>(b"{").unwrap_err();
        let cause = bad_json.to_string();
        let error = KubeError::Decode(bad_json);
        assert_eq!(
            std::error::Error::source(&error).map(ToString::to_string),
            Some(cause.clone())
        );
        assert_eq!(error.to_string(), "unexpected answer from the API server");
        let contract = Error::from(error);
        assert_eq!(contract.code(), ErrorCode::Internal);
        assert_eq!(
            contract.message(),
            format!("unexpected answer from the API server: {cause}")
        );
    }

    #[test]
    fn a_token_that_is_no_header_value_is_refused_without_echoing_it() {
        let bad = HeaderValue::from_str("Bearer s3cr3t\n").unwrap_err();
        let error = KubeError::BuildRequest {
            part: "the token",
            source: bad.into(),
        };
        let message = Error::from(error).message().to_owned();
        assert!(
            message.starts_with("cannot build a request: the token"),
            "{message}"
        );
        assert!(!message.contains("s3cr3t"), "{message}");
    }

    #[test]
    fn path_only_drops_the_query() {
        assert_eq!(
            path_only("/api/v1/pods/x/exec?command=env"),
            "/api/v1/pods/x/exec"
        );
        assert_eq!(path_only("/api"), "/api");
    }

    #[test]
    fn tls_config_refuses_text_that_holds_no_certificate() {
        assert!(matches!(
            tls_config(b"not a pem", None),
            Err(CaError::Empty)
        ));
    }

    /// A CA, a serving certificate for 127.0.0.1 and a client certificate for `client`, all
    /// PEM: (ca, server cert, server key, client cert, client key).
    fn pki() -> (String, String, String, String, String) {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair, SanType,
        };
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::default();
        ca.distinguished_name.push(DnType::CommonName, "test-ca");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
        let issuer = Issuer::new(ca, ca_key);
        let server_key = KeyPair::generate().unwrap();
        let mut server = CertificateParams::default();
        server.subject_alt_names = vec![SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into())];
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_pem = server.signed_by(&server_key, &issuer).unwrap().pem();
        let client_key = KeyPair::generate().unwrap();
        let mut client = CertificateParams::default();
        client.distinguished_name.push(DnType::CommonName, "client");
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_pem = client.signed_by(&client_key, &issuer).unwrap().pem();
        (
            ca_pem,
            server_pem,
            server_key.serialize_pem(),
            client_pem,
            client_key.serialize_pem(),
        )
    }

    /// Serves HTTPS on 127.0.0.1 requiring a client certificate signed by `ca_pem`; answers
    /// every request `{}`.
    async fn serve_requiring_client_certificates(
        ca_pem: &str,
        cert_pem: &str,
        key_pem: &str,
    ) -> std::net::SocketAddr {
        use rustls_pki_types::PrivateKeyDer;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(cert_pem.as_bytes())
                .map(Result::unwrap)
                .collect();
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(|_request| async {
                        Ok::<_, std::convert::Infallible>(Response::new(Full::new(
                            Bytes::from_static(b"{}"),
                        )))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn the_client_certificate_is_presented_to_a_server_that_requires_one() {
        let (ca, server_cert, server_key, client_cert, client_key) = pki();
        let addr = serve_requiring_client_certificates(&ca, &server_cert, &server_key).await;
        let url = format!("https://{addr}");
        let credentials = || Arc::new(Credentials::new(crate::credentials::TokenSource::None));
        let identity = crate::identity::filled_slot(
            crate::identity::certified_key(client_cert.as_bytes(), client_key.as_bytes()).unwrap(),
        );
        let with = KubeClient::new(
            &url,
            tls_config(ca.as_bytes(), Some(identity)).unwrap(),
            credentials(),
        )
        .unwrap();
        let body: serde_json::Value = with.get("/api").await.unwrap();
        assert_eq!(body, serde_json::json!({}));
        let without = KubeClient::new(
            &url,
            tls_config(ca.as_bytes(), None).unwrap(),
            credentials(),
        )
        .unwrap();
        let error = without.get::<serde_json::Value>("/api").await.unwrap_err();
        assert!(matches!(error, KubeError::Transport(_)), "{error:?}");
        let message = with_causes(&error);
        assert!(!message.contains("PRIVATE KEY"), "{message}");
    }

    #[tokio::test]
    async fn no_more_than_the_allowed_upgrade_connections_are_opened_at_once() {
        let (ca, server_cert, server_key, client_cert, client_key) = pki();
        let addr = serve_requiring_client_certificates(&ca, &server_cert, &server_key).await;
        let identity = crate::identity::filled_slot(
            crate::identity::certified_key(client_cert.as_bytes(), client_key.as_bytes()).unwrap(),
        );
        let client = KubeClient::new(
            &format!("https://{addr}"),
            tls_config(ca.as_bytes(), Some(identity)).unwrap(),
            Arc::new(Credentials::new(crate::credentials::TokenSource::None)),
        )
        .unwrap();
        let mut open = Vec::new();
        for _ in 0..UPGRADES_AT_ONCE {
            open.push(client.connect_for_upgrade().await.unwrap());
        }
        assert_eq!(client.upgrade_turns.available_permits(), 0);
        let next = tokio::spawn({
            let client = client.clone();
            async move { client.connect_for_upgrade().await.map(|_| ()) }
        });
        open.pop();
        next.await.unwrap().unwrap();
        drop(open);
        assert_eq!(client.upgrade_turns.available_permits(), UPGRADES_AT_ONCE);
    }
}
