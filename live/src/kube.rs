//! A small read-only Kubernetes client for the run's own observations: the server's version,
//! the warm pool, objects by name, and what is left behind.
//!
//! It is separate from the adapter on purpose: the adapter is what the run tests, and the run
//! must see the cluster through its own eyes (with `LIVE_OBSERVER_KUBECONFIG`, another token
//! than the pool's). It reads a kubeconfig's current context (server, CA, bearer token or
//! token file) and sends GETs over TLS verified against that CA, one connection per request.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// How long opening a connection (TCP and TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one request may take once connected.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response body read.
const MAX_BODY: usize = 64 << 20;

/// Why an observation failed. Never holds a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeError {
    /// The kubeconfig cannot be used.
    #[error("kubeconfig {origin}: {message}")]
    Kubeconfig {
        /// Where it came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// Nothing answered at the server's address (refused, unresolvable, timed out).
    #[error("cannot reach {server}: {message}")]
    Unreachable {
        /// The server URL.
        server: String,
        /// The network error.
        message: String,
    },
    /// The TLS handshake failed, for example a certificate the kubeconfig's CA did not sign.
    #[error("TLS with {server} failed: {message}")]
    Tls {
        /// The server URL.
        server: String,
        /// The TLS error.
        message: String,
    },
    /// The server answered with an error status.
    #[error("GET {path}: HTTP {code}: {message}")]
    Status {
        /// The request path.
        path: String,
        /// The HTTP status.
        code: u16,
        /// The `Status` message, or the start of the body.
        message: String,
    },
    /// The exchange broke, or the answer was not the JSON expected.
    #[error("GET {path}: {message}")]
    Protocol {
        /// The request path.
        path: String,
        /// What went wrong.
        message: String,
    },
}

impl KubeError {
    /// Returns whether nothing answered at the server's address.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, KubeError::Unreachable { .. })
    }

    /// Returns whether the server answered 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, KubeError::Status { code: 404, .. })
    }
}

/// The current context of a kubeconfig, as far as the observer needs it.
#[derive(Clone)]
pub struct Kubeconfig {
    /// The API server URL.
    pub server: String,
    /// The CA certificates, PEM.
    pub ca_pem: Vec<u8>,
    /// The bearer token.
    pub token: SecretString,
    /// The context's namespace, if it names one.
    pub namespace: Option<String>,
}

impl fmt::Debug for Kubeconfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kubeconfig")
            .field("server", &self.server)
            .field("token", &"[REDACTED]")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Kubeconfig {
    /// Reads the kubeconfig at `path`.
    pub fn from_path(path: &Path) -> Result<Kubeconfig, KubeError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| KubeError::Kubeconfig {
            origin: origin.clone(),
            message: format!("cannot be read: {e}"),
        })?;
        Kubeconfig::parse(&text, &origin, path.parent())
    }

    /// Reads kubeconfig text; relative file paths in it are taken from `base`.
    pub fn parse(text: &str, origin: &str, base: Option<&Path>) -> Result<Kubeconfig, KubeError> {
        let fail = |message: &str| KubeError::Kubeconfig {
            origin: origin.to_owned(),
            message: message.to_owned(),
        };
        // The parser's own error may quote the document, and so the token: say only where.
        let doc: Value =
            serde_saphyr::from_str(text).map_err(|_| fail("is not valid YAML or JSON"))?;
        let contexts = doc.get("contexts").and_then(Value::as_array);
        let current = doc
            .get("current-context")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let context = match (current, contexts) {
            (Some(name), Some(list)) => named(list, name),
            (None, Some(list)) if list.len() == 1 => list.first(),
            _ => None,
        }
        .and_then(|entry| entry.get("context"))
        .ok_or_else(|| fail("has no current context"))?;
        let cluster_name = context
            .get("cluster")
            .and_then(Value::as_str)
            .ok_or_else(|| fail("the current context names no cluster"))?;
        let cluster = doc
            .get("clusters")
            .and_then(Value::as_array)
            .and_then(|list| named(list, cluster_name))
            .and_then(|entry| entry.get("cluster"))
            .ok_or_else(|| fail("the current context's cluster is not in clusters"))?;
        let server = cluster
            .get("server")
            .and_then(Value::as_str)
            .filter(|s| s.starts_with("https://"))
            .ok_or_else(|| fail("the cluster's server is missing or not https://"))?
            .to_owned();
        if cluster
            .get("insecure-skip-tls-verify")
            .and_then(Value::as_bool)
            == Some(true)
        {
            return Err(fail(
                "insecure-skip-tls-verify is set; the live run always verifies TLS",
            ));
        }
        let ca_pem = if let Some(data) = cluster
            .get("certificate-authority-data")
            .and_then(Value::as_str)
        {
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|_| fail("certificate-authority-data is not base64"))?
        } else if let Some(file) = cluster.get("certificate-authority").and_then(Value::as_str) {
            let path = resolve(base, file);
            std::fs::read(&path).map_err(|e| KubeError::Kubeconfig {
                origin: origin.to_owned(),
                message: format!(
                    "certificate-authority {} cannot be read: {e}",
                    path.display()
                ),
            })?
        } else {
            return Err(fail(
                "the cluster has no certificate-authority(-data); TLS is always verified",
            ));
        };
        let user_name = context
            .get("user")
            .and_then(Value::as_str)
            .ok_or_else(|| fail("the current context names no user"))?;
        let user = doc
            .get("users")
            .and_then(Value::as_array)
            .and_then(|list| named(list, user_name))
            .and_then(|entry| entry.get("user"))
            .ok_or_else(|| fail("the current context's user is not in users"))?;
        let token = if let Some(token) = user.get("token").and_then(Value::as_str) {
            token.trim().to_owned()
        } else if let Some(file) = user.get("tokenFile").and_then(Value::as_str) {
            let path = resolve(base, file);
            std::fs::read_to_string(&path)
                .map_err(|e| KubeError::Kubeconfig {
                    origin: origin.to_owned(),
                    message: format!("tokenFile {} cannot be read: {e}", path.display()),
                })?
                .trim()
                .to_owned()
        } else if user.get("client-certificate-data").is_some()
            || user.get("client-certificate").is_some()
            || user.get("exec").is_some()
        {
            return Err(fail(
                "the user authenticates with a client certificate or an exec plugin; \
                 the live run needs a bearer token (ci/kind-up.sh writes kubeconfigs with one)",
            ));
        } else {
            return Err(fail("the user has no token or tokenFile"));
        };
        if token.is_empty() {
            return Err(fail("the user's token is empty"));
        }
        let namespace = context
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        Ok(Kubeconfig {
            server,
            ca_pem,
            token: SecretString::from(token),
            namespace,
        })
    }
}

/// The entry of a kubeconfig list (`clusters`, `users`, `contexts`) with this `name`.
fn named<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter()
        .find(|entry| entry.get("name").and_then(Value::as_str) == Some(name))
}

/// A path from a kubeconfig, relative to the kubeconfig's directory.
fn resolve(base: Option<&Path>, file: &str) -> PathBuf {
    let path = PathBuf::from(file);
    match base {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }
}

/// Where to connect for a server URL: host, port and the path prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Address {
    /// The host, without IPv6 brackets.
    host: String,
    /// The port.
    port: u16,
    /// The URL's path, without a trailing slash (usually empty).
    prefix: String,
}

/// Splits an `https://` server URL.
fn address(server: &str) -> Result<Address, String> {
    let uri: http::Uri = server
        .parse()
        .map_err(|_| format!("the server {server} is not a URL"))?;
    if uri.scheme_str() != Some("https") {
        return Err(format!("the server {server} is not https://"));
    }
    let host = uri
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("the server {server} has no host"))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    Ok(Address {
        host,
        port: uri.port_u16().unwrap_or(443),
        prefix: uri.path().trim_end_matches('/').to_owned(),
    })
}

/// The read-only client of the run's observations.
#[derive(Clone)]
pub struct KubeClient {
    /// The server URL, for messages.
    server: String,
    /// Where to connect.
    address: Address,
    /// The name the certificate must carry.
    server_name: ServerName<'static>,
    /// TLS verified against the kubeconfig's CA.
    tls: TlsConnector,
    /// The bearer token.
    token: SecretString,
}

impl fmt::Debug for KubeClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeClient")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl KubeClient {
    /// A client for the current context of the kubeconfig at `path`.
    pub fn from_path(path: &Path) -> Result<KubeClient, KubeError> {
        KubeClient::new(Kubeconfig::from_path(path)?)
    }

    /// A client for `config`.
    pub fn new(config: Kubeconfig) -> Result<KubeClient, KubeError> {
        let fail = |message: String| KubeError::Kubeconfig {
            origin: config.server.clone(),
            message,
        };
        let address = address(&config.server).map_err(fail)?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&config.ca_pem) {
            let cert = cert.map_err(|e| fail(format!("the CA is not PEM: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| fail(format!("the CA certificate is not usable: {e}")))?;
        }
        if roots.is_empty() {
            return Err(fail("the CA holds no certificate".to_owned()));
        }
        let tls =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| fail(format!("TLS setup: {e}")))?
                .with_root_certificates(roots)
                .with_no_client_auth();
        let server_name = ServerName::try_from(address.host.clone())
            .map_err(|_| fail(format!("{} is not a valid TLS server name", address.host)))?;
        Ok(KubeClient {
            server: config.server,
            address,
            server_name,
            tls: TlsConnector::from(Arc::new(tls)),
            token: config.token,
        })
    }

    /// Returns the server URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// GETs `path` (from the API root, with its query) and decodes the JSON answer.
    pub async fn get(&self, path: &str) -> Result<Value, KubeError> {
        let protocol = |message: String| KubeError::Protocol {
            path: path.to_owned(),
            message,
        };
        let stream = tokio::time::timeout(
            CONNECT_TIMEOUT,
            TcpStream::connect((self.address.host.as_str(), self.address.port)),
        )
        .await
        .map_err(|_| KubeError::Unreachable {
            server: self.server.clone(),
            message: format!("no connection within {}s", CONNECT_TIMEOUT.as_secs()),
        })?
        .map_err(|e| KubeError::Unreachable {
            server: self.server.clone(),
            message: e.to_string(),
        })?;
        let tls = tokio::time::timeout(
            CONNECT_TIMEOUT,
            self.tls.connect(self.server_name.clone(), stream),
        )
        .await
        .map_err(|_| KubeError::Unreachable {
            server: self.server.clone(),
            message: format!("no TLS handshake within {}s", CONNECT_TIMEOUT.as_secs()),
        })?
        .map_err(|e| KubeError::Tls {
            server: self.server.clone(),
            message: e.to_string(),
        })?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| protocol(format!("HTTP handshake: {e}")))?;
        let driver = tokio::spawn(connection);
        let request = http::Request::get(format!("{}{path}", self.address.prefix))
            .header(http::header::HOST, self.host_header())
            .header(http::header::ACCEPT, "application/json")
            .header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", self.token.expose_secret()),
            )
            .body(Empty::<Bytes>::new())
            .map_err(|_| protocol("the request path is not valid".to_owned()))?;
        let exchange = async {
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| protocol(format!("request failed: {e}")))?;
            let status = response.status().as_u16();
            let body = Limited::new(response.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| protocol(format!("reading the answer: {e}")))?
                .to_bytes();
            Ok::<_, KubeError>((status, body))
        };
        let outcome = tokio::time::timeout(REQUEST_TIMEOUT, exchange).await;
        driver.abort();
        let (status, body) = outcome
            .map_err(|_| protocol(format!("no answer within {}s", REQUEST_TIMEOUT.as_secs())))??;
        if !(200..300).contains(&status) {
            return Err(KubeError::Status {
                path: path.to_owned(),
                code: status,
                message: status_message(&body),
            });
        }
        serde_json::from_slice(&body).map_err(|e| protocol(format!("the answer is not JSON: {e}")))
    }

    /// GETs `path`, with `None` for a 404.
    pub async fn get_opt(&self, path: &str) -> Result<Option<Value>, KubeError> {
        match self.get(path).await {
            Ok(value) => Ok(Some(value)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists every item of the collection at `path`, page by page.
    pub async fn list(&self, path: &str) -> Result<Vec<Value>, KubeError> {
        let mut items = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let mut url = format!("{path}?limit=250");
            if let Some(token) = &next {
                url.push_str("&continue=");
                url.extend(form_escape(token));
            }
            let page = self.get(&url).await?;
            if let Some(list) = page.get("items").and_then(Value::as_array) {
                items.extend(list.iter().cloned());
            }
            next = page
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            if next.is_none() {
                return Ok(items);
            }
        }
    }

    /// The `Host` header for the server.
    fn host_header(&self) -> String {
        let host = if self.address.host.contains(':') {
            format!("[{}]", self.address.host)
        } else {
            self.address.host.clone()
        };
        if self.address.port == 443 {
            host
        } else {
            format!("{host}:{}", self.address.port)
        }
    }
}

/// Percent-encodes a query value.
fn form_escape(value: &str) -> impl Iterator<Item = char> + '_ {
    value.bytes().flat_map(|b| {
        let keep = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~');
        let chars: Vec<char> = if keep {
            vec![char::from(b)]
        } else {
            format!("%{b:02X}").chars().collect()
        };
        chars.into_iter()
    })
}

/// The message of an error answer: the `Status` message, else the start of the body.
fn status_message(body: &[u8]) -> String {
    if let Ok(status) = serde_json::from_slice::<Value>(body)
        && let Some(message) = status.get("message").and_then(Value::as_str)
    {
        return message.to_owned();
    }
    String::from_utf8_lossy(body).chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "live-secret-token-123";

    fn kubeconfig(user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: live\n\
             clusters:\n- name: kind\n  cluster:\n    server: https://127.0.0.1:6443\n    \
             certificate-authority-data: {}\n\
             users:\n- name: runner\n  user:\n{user}\n\
             contexts:\n- name: other\n  context: {{cluster: nowhere, user: nobody}}\n\
             - name: live\n  context: {{cluster: kind, user: runner, namespace: sandboxes}}\n",
            base64::engine::general_purpose::STANDARD.encode("PEM BYTES")
        )
    }

    #[test]
    fn parse_reads_the_current_context_s_server_ca_token_and_namespace() {
        let config = Kubeconfig::parse(&kubeconfig(&format!("    token: {TOKEN}")), "t", None)
            .expect("parses");
        assert_eq!(config.server, "https://127.0.0.1:6443");
        assert_eq!(config.ca_pem, b"PEM BYTES");
        assert_eq!(config.token.expose_secret(), TOKEN);
        assert_eq!(config.namespace.as_deref(), Some("sandboxes"));
    }

    #[test]
    fn parse_reads_a_token_file_relative_to_the_kubeconfig() {
        let dir = std::env::temp_dir().join(format!("live-kube-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("token"), format!("{TOKEN}\n")).expect("token file");
        let config = Kubeconfig::parse(&kubeconfig("    tokenFile: token"), "t", Some(&dir))
            .expect("parses");
        assert_eq!(config.token.expose_secret(), TOKEN);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parse_refuses_client_certificates_saying_a_token_is_needed() {
        let error = Kubeconfig::parse(
            &kubeconfig("    client-certificate-data: AAAA\n    client-key-data: BBBB"),
            "kind.kubeconfig",
            None,
        )
        .expect_err("refused");
        assert!(error.to_string().contains("bearer token"), "{error}");
        assert!(error.to_string().contains("kind.kubeconfig"), "{error}");
    }

    #[test]
    fn parse_refuses_insecure_skip_tls_verify() {
        let text = kubeconfig(&format!("    token: {TOKEN}")).replace(
            "    certificate-authority-data:",
            "    insecure-skip-tls-verify: true\n    certificate-authority-data:",
        );
        let error = Kubeconfig::parse(&text, "t", None).expect_err("refused");
        assert!(error.to_string().contains("insecure-skip-tls-verify"));
    }

    #[test]
    fn parse_errors_never_quote_the_token() {
        let broken = format!("users: [{{name: a, user: {{token: {TOKEN}}}}}\n  : : [");
        let error = Kubeconfig::parse(&broken, "t", None).expect_err("not YAML");
        assert!(!error.to_string().contains(TOKEN));
        let no_context = format!("users: [{{name: a, user: {{token: {TOKEN}}}}}]\n");
        let error = Kubeconfig::parse(&no_context, "t", None).expect_err("no context");
        assert!(!error.to_string().contains(TOKEN), "{error}");
        assert!(error.to_string().contains("no current context"), "{error}");
    }

    #[test]
    fn debug_output_redacts_the_token() {
        let config = Kubeconfig::parse(&kubeconfig(&format!("    token: {TOKEN}")), "t", None)
            .expect("parses");
        let text = format!("{config:?}");
        assert!(!text.contains(TOKEN), "{text}");
        assert!(text.contains("[REDACTED]"));
    }

    #[test]
    fn address_splits_host_port_and_prefix() {
        assert_eq!(
            address("https://127.0.0.1:6443"),
            Ok(Address {
                host: "127.0.0.1".into(),
                port: 6443,
                prefix: String::new()
            })
        );
        assert_eq!(
            address("https://[::1]/k8s/"),
            Ok(Address {
                host: "::1".into(),
                port: 443,
                prefix: "/k8s".into()
            })
        );
        assert!(address("http://127.0.0.1:6443").is_err());
        assert!(address("not a url").is_err());
    }

    #[test]
    fn status_message_prefers_the_status_message() {
        assert_eq!(
            status_message(
                br#"{"kind":"Status","message":"sandboxes.agents.x-k8s.io \"x\" not found"}"#
            ),
            "sandboxes.agents.x-k8s.io \"x\" not found"
        );
        assert_eq!(status_message(b"plain failure"), "plain failure");
    }

    #[test]
    fn form_escape_encodes_everything_but_unreserved_characters() {
        let escaped: String = form_escape("a+b/c=d~").collect();
        assert_eq!(escaped, "a%2Bb%2Fc%3Dd~");
    }

    /// The test CA, the server certificate it signed for 127.0.0.1, and its key.
    const CA: &str = include_str!("../testdata/ca.pem");
    const SERVER_CERT: &str = include_str!("../testdata/server.pem");
    const SERVER_KEY: &str = include_str!("../testdata/server.key");
    const OTHER_CA: &str = include_str!("../testdata/other-ca.pem");

    /// Answers one request head the way the tests want.
    fn answer(head: &str) -> (u16, String) {
        if !head.contains(&format!("authorization: Bearer {TOKEN}\r\n")) {
            return (
                401,
                r#"{"kind":"Status","message":"Unauthorized"}"#.to_owned(),
            );
        }
        let path = head.split(' ').nth(1).unwrap_or("");
        match path {
            "/version" => (200, r#"{"gitCommit":"0000000000"}"#.to_owned()),
            "/things?limit=250" => (
                200,
                r#"{"items":[{"n":1}],"metadata":{"continue":"a+b"}}"#.to_owned(),
            ),
            "/things?limit=250&continue=a%2Bb" => {
                (200, r#"{"items":[{"n":2}],"metadata":{}}"#.to_owned())
            }
            _ => (
                404,
                r#"{"kind":"Status","message":"things \"x\" not found"}"#.to_owned(),
            ),
        }
    }

    /// Starts a TLS server on 127.0.0.1 that answers with [`answer`]; returns its port.
    async fn serve() -> u16 {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(SERVER_CERT.as_bytes())
                .collect::<Result<_, _>>()
                .expect("server certificate");
        let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(SERVER_KEY.as_bytes())
            .expect("server key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    use tokio::io::{AsyncReadExt, AsyncWriteExt};
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let (code, body) = answer(&String::from_utf8_lossy(&head));
                    let response = format!(
                        "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tls.write_all(response.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        port
    }

    fn client(port: u16, ca: &str, token: &str) -> KubeClient {
        KubeClient::new(Kubeconfig {
            server: format!("https://127.0.0.1:{port}"),
            ca_pem: ca.as_bytes().to_vec(),
            token: SecretString::from(token.to_owned()),
            namespace: None,
        })
        .expect("client")
    }

    #[tokio::test]
    async fn get_decodes_json_over_tls_verified_against_the_ca() {
        let port = serve().await;
        let version = client(port, CA, TOKEN).get("/version").await.expect("GET");
        assert_eq!(version["gitCommit"], "0000000000");
    }

    #[tokio::test]
    async fn a_server_the_ca_did_not_sign_is_a_tls_error_not_unreachable() {
        let port = serve().await;
        let error = client(port, OTHER_CA, TOKEN)
            .get("/version")
            .await
            .expect_err("refused");
        assert!(matches!(error, KubeError::Tls { .. }), "{error}");
        assert!(!error.is_unreachable());
    }

    #[tokio::test]
    async fn get_opt_gives_none_for_404_and_errors_keep_the_status_message() {
        let port = serve().await;
        let c = client(port, CA, TOKEN);
        assert_eq!(c.get_opt("/things/x").await.expect("GET"), None);
        let error = client(port, CA, "wrong")
            .get("/version")
            .await
            .expect_err("401");
        assert!(
            matches!(error, KubeError::Status { code: 401, .. }),
            "{error}"
        );
        assert!(error.to_string().contains("Unauthorized"), "{error}");
        assert!(!error.to_string().contains("wrong"), "{error}");
    }

    #[tokio::test]
    async fn list_follows_continue_tokens_to_the_last_page() {
        let port = serve().await;
        let items = client(port, CA, TOKEN).list("/things").await.expect("list");
        assert_eq!(
            items,
            vec![serde_json::json!({"n": 1}), serde_json::json!({"n": 2})]
        );
    }

    #[tokio::test]
    async fn get_from_a_closed_port_is_unreachable() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let error = client(port, CA, TOKEN)
            .get("/version")
            .await
            .expect_err("nothing listens");
        assert!(error.is_unreachable(), "{error}");
    }
}
