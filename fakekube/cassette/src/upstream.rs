//! The recording proxy's client to the cluster it records: TLS verified against the
//! kubeconfig's CA, the kubeconfig's token or client certificate, HTTP/2 when the server
//! offers it (one multiplexed connection, HTTP/1.1 with a pool otherwise), and a connection of
//! its own, HTTP/1.1 only, for each upgrade.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, Uri};
use http_body_util::{Empty, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use secrecy::{ExposeSecret, SecretString};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::kubeconfig::Kubeconfig;
use crate::tls::{self, ClientAuth, H2, HTTP11, TlsError};

/// Why the cluster could not be asked. No variant carries a credential.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The server URL does not parse.
    #[error("the server URL `{0}` does not parse")]
    Url(String, #[source] http::uri::InvalidUri),
    /// The server URL's host is not a name TLS can check.
    #[error("the server URL `{0}` has no usable host")]
    Host(String),
    /// The TLS client could not be set up.
    #[error("setting up TLS to the cluster")]
    Tls(#[source] TlsError),
    /// The request could not be built.
    #[error("building the request to the cluster")]
    Build(#[source] http::Error),
    /// The request failed (connection, TLS or HTTP).
    #[error("asking the cluster")]
    Send(#[source] hyper_util::client::legacy::Error),
    /// The connection for an upgrade could not be opened.
    #[error("connecting to the cluster for an upgrade")]
    Connect(#[source] io::Error),
    /// The upgrade's HTTP/1.1 exchange failed.
    #[error("asking the cluster for an upgrade")]
    Upgrade(#[source] hyper::Error),
}

/// The cluster a kubeconfig names, ready to be asked: the recording proxy's client, and the
/// client fakekube's kubelet joins a cluster with.
pub struct Upstream {
    scheme_authority: String,
    prefix: String,
    host_header: HeaderValue,
    client: Client<Connector, Full<Bytes>>,
    upgrades: Connector,
    token: Option<SecretString>,
}

impl Upstream {
    /// Sets up the client for the cluster of `kubeconfig`.
    pub fn new(kubeconfig: &Kubeconfig) -> Result<Upstream, UpstreamError> {
        let server = kubeconfig.server.clone();
        let uri: Uri = server
            .parse()
            .map_err(|e| UpstreamError::Url(server.clone(), e))?;
        let authority = uri
            .authority()
            .ok_or_else(|| UpstreamError::Host(server.clone()))?
            .clone();
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = kubeconfig.tls_server_name.as_deref().unwrap_or(host);
        let server_name = ServerName::try_from(name.to_owned())
            .map_err(|_| UpstreamError::Host(server.clone()))?;
        let port = authority.port_u16().unwrap_or(443);
        let auth = match (&kubeconfig.client_cert_pem, &kubeconfig.client_key_pem) {
            (Some(cert), Some(key)) => Some((cert.as_slice(), key.expose_secret().as_bytes())),
            _ => None,
        };
        let config = |alpn: &[&[u8]]| {
            tls::client_config(
                &kubeconfig.ca_pem,
                auth.map(|(cert_pem, key_pem)| ClientAuth { cert_pem, key_pem }),
                alpn,
            )
            .map_err(UpstreamError::Tls)
        };
        let connector = |config| Connector {
            addr: format!("{host}:{port}"),
            name: server_name.clone(),
            config,
        };
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector(config(&[H2, HTTP11])?));
        Ok(Upstream {
            scheme_authority: format!("https://{authority}"),
            prefix: uri.path().trim_end_matches('/').to_owned(),
            host_header: HeaderValue::from_str(authority.as_str())
                .map_err(|_| UpstreamError::Host(server.clone()))?,
            client,
            upgrades: connector(config(&[HTTP11])?),
            token: kubeconfig.token.clone(),
        })
    }

    /// The path (with query) on the cluster for a client's `path_and_query`.
    fn path(&self, path_and_query: &str) -> String {
        format!("{}{path_and_query}", self.prefix)
    }

    /// Adds the kubeconfig's bearer token, if it has one.
    fn authorize(&self, headers: &mut HeaderMap) {
        if let Some(token) = &self.token
            && let Ok(mut value) =
                HeaderValue::from_str(&format!("Bearer {}", token.expose_secret()))
        {
            value.set_sensitive(true);
            headers.insert(http::header::AUTHORIZATION, value);
        }
    }

    /// Sends a whole request; `headers` are the client's, already stripped of hop-by-hop and
    /// credential headers.
    pub async fn send(
        &self,
        method: http::Method,
        path_and_query: &str,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<Response<Incoming>, UpstreamError> {
        self.authorize(&mut headers);
        let uri = format!("{}{}", self.scheme_authority, self.path(path_and_query));
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .body(Full::new(body))
            .map_err(UpstreamError::Build)?;
        *request.headers_mut() = headers;
        self.client
            .request(request)
            .await
            .map_err(UpstreamError::Send)
    }

    /// Sends an upgrade request over a connection of its own; the caller takes the upgraded
    /// connection from the response with [`hyper::upgrade::on`].
    pub(crate) async fn upgrade(
        &self,
        method: http::Method,
        path_and_query: &str,
        mut headers: HeaderMap,
    ) -> Result<Response<Incoming>, UpstreamError> {
        self.authorize(&mut headers);
        headers.insert(http::header::HOST, self.host_header.clone());
        let mut request = Request::builder()
            .method(method)
            .uri(self.path(path_and_query))
            .body(Empty::<Bytes>::new())
            .map_err(UpstreamError::Build)?;
        *request.headers_mut() = headers;
        let tls = self
            .upgrades
            .connect()
            .await
            .map_err(UpstreamError::Connect)?;
        let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
            .handshake(TokioIo::new(tls))
            .await
            .map_err(UpstreamError::Upgrade)?;
        tokio::spawn(async move {
            if let Err(e) = connection.with_upgrades().await {
                tracing::debug!(error = %e, "upgrade connection to the cluster");
            }
        });
        sender
            .send_request(request)
            .await
            .map_err(UpstreamError::Upgrade)
    }
}

/// Opens TLS connections to the cluster.
#[derive(Clone)]
struct Connector {
    addr: String,
    name: ServerName<'static>,
    config: Arc<ClientConfig>,
}

impl Connector {
    async fn connect(&self) -> io::Result<TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(&self.addr).await?;
        tcp.set_nodelay(true)?;
        TlsConnector::from(self.config.clone())
            .connect(self.name.clone(), tcp)
            .await
    }
}

impl tower::Service<Uri> for Connector {
    type Response = Tls;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Tls>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(Tls(TokioIo::new(this.connect().await?))) })
    }
}

/// A TLS connection that tells hyper's pool whether ALPN chose HTTP/2.
struct Tls(TokioIo<TlsStream<TcpStream>>);

impl Connection for Tls {
    fn connected(&self) -> Connected {
        let connected = Connected::new();
        if self.0.inner().get_ref().1.alpn_protocol() == Some(H2) {
            connected.negotiated_h2()
        } else {
            connected
        }
    }
}

impl hyper::rt::Read for Tls {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Tls {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }
}
