//! The benches' minimal exec client: tokio-tungstenite over a TLS connection the caller's
//! connector makes, offering `v5.channel.k8s.io`, reading stdout's byte count and the status
//! channel until the server's Close. Shared by fakekube's `exec` and `cluster` benches (each
//! includes this file with `#[path]`), so that an exec is measured the same way in both.

use futures_util::StreamExt;
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// Anything that can fail in an exec.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Where an exec goes and who makes it.
pub struct Endpoint<'a> {
    /// The TLS connector trusting the server.
    pub tls: &'a TlsConnector,
    /// `host:port` to connect to.
    pub authority: &'a str,
    /// The name the server's certificate is checked for.
    pub host: &'a str,
    /// The bearer token, if the TLS connector does not carry a client certificate.
    pub token: Option<&'a str>,
}

/// What one exec returned.
pub struct Ran {
    /// Bytes received on stdout.
    pub stdout_bytes: usize,
    /// The channel-3 payload (the status).
    pub status: String,
}

/// One exec of `command` in `namespace`/`pod` (in `container` when given): connect, upgrade,
/// read until the server's Close.
pub async fn exec(
    to: &Endpoint<'_>,
    namespace: &str,
    pod: &str,
    container: Option<&str>,
    command: &[&str],
) -> Result<Ran, BoxError> {
    let tcp = TcpStream::connect(to.authority).await?;
    tcp.set_nodelay(true)?;
    let stream = to
        .tls
        .connect(ServerName::try_from(to.host.to_string())?, tcp)
        .await?;
    let mut url = format!(
        "wss://{}/api/v1/namespaces/{namespace}/pods/{pod}/exec?stdout=true&stderr=true",
        to.authority
    );
    if let Some(container) = container {
        url.push_str("&container=");
        url.extend(form_urlencoded::byte_serialize(container.as_bytes()));
    }
    for c in command {
        url.push_str("&command=");
        url.extend(form_urlencoded::byte_serialize(c.as_bytes()));
    }
    let mut req = url.into_client_request()?;
    req.headers_mut()
        .insert("sec-websocket-protocol", "v5.channel.k8s.io".parse()?);
    if let Some(token) = to.token {
        req.headers_mut()
            .insert("authorization", format!("Bearer {token}").parse()?);
    }
    let (mut ws, _) = tokio_tungstenite::client_async(req, stream).await?;
    let mut ran = Ran {
        stdout_bytes: 0,
        status: String::new(),
    };
    while let Some(m) = ws.next().await {
        if let Message::Binary(b) = m? {
            match b.split_first() {
                Some((1, rest)) => ran.stdout_bytes += rest.len(),
                Some((3, rest)) => ran.status.push_str(&String::from_utf8_lossy(rest)),
                _ => {}
            }
        }
    }
    Ok(ran)
}
