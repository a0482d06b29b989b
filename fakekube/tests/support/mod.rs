//! A small HTTPS client for the integration tests: one TLS connection per request, the fake's CA
//! trusted, HTTP/1.1 or HTTP/2 as asked.

#![allow(
    dead_code,
    reason = "each test binary includes this module and uses a different subset of it"
)]

pub mod kubectl;
pub mod process;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, ServerName, pem::PemObject};
use serde_json::Value;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Starts the fakekube `builder` describes and a client for it: each test file keeps its own
/// settings and shares the rest.
pub async fn start(builder: fakekube::Builder) -> (fakekube::FakeKube, Client) {
    let kube = builder.start().await.expect("fakekube starts");
    let client = Client::new(&kube);
    (kube, client)
}

/// Starts the API server alone (no controllers, no kubelet) with namespace `sb`, and a client:
/// for the tests of what clients write, not of what controllers do.
pub async fn start_api_server() -> (fakekube::FakeKube, Client) {
    start(
        fakekube::FakeKube::builder()
            .namespace("sb")
            .controllers(false)
            .kubelet(false),
    )
    .await
}

/// How long [`Client::read_modify_put`] keeps retrying a write that conflicts with another
/// writer's: a controller settles long before this.
pub const CONFLICTS_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// The protocol a request goes over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    H1,
    H2,
}

/// A response with its body read.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON (Null when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// A client for one fakekube server.
#[derive(Clone)]
pub struct Client {
    addr: std::net::SocketAddr,
    config: Arc<rustls::ClientConfig>,
    token: Option<String>,
}

fn tls_config(ca_pem: &str, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots
            .add(cert.expect("CA PEM parses"))
            .expect("CA is a valid trust anchor");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

impl Client {
    /// A client for `kube` with its admin token.
    pub fn new(kube: &fakekube::FakeKube) -> Self {
        Client {
            addr: kube.addr(),
            config: tls_config(kube.ca_pem(), &[b"http/1.1"]),
            token: Some(kube.token().to_string()),
        }
    }

    /// A client for the server a kubeconfig the binary wrote names, with its CA and token.
    pub fn from_kubeconfig(text: &str) -> Self {
        use base64::Engine;
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.trim().strip_prefix(key))
                .map(|v| v.trim().to_string())
                .unwrap_or_else(|| panic!("the kubeconfig has no {key}"))
        };
        let server = field("server:");
        let addr = server
            .trim_start_matches("https://")
            .parse()
            .expect("the server is an address");
        let ca = base64::engine::general_purpose::STANDARD
            .decode(field("certificate-authority-data:"))
            .expect("the CA is base64");
        let ca = String::from_utf8(ca).expect("the CA is PEM");
        Client {
            addr,
            config: tls_config(&ca, &[b"http/1.1"]),
            token: Some(field("token:")),
        }
    }

    /// The bearer token it sends (empty for none).
    pub fn token(&self) -> &str {
        self.token.as_deref().unwrap_or("")
    }

    /// The same client with another token (or none).
    pub fn with_token(&self, token: Option<&str>) -> Self {
        Client {
            token: token.map(str::to_string),
            ..self.clone()
        }
    }

    /// The same client talking to another listener of the server (the kubelet's API).
    pub fn at(&self, addr: std::net::SocketAddr) -> Self {
        Client {
            addr,
            ..self.clone()
        }
    }

    /// The same client negotiating HTTP/2 through ALPN.
    pub fn h2(&self, ca_pem: &str) -> Self {
        Client {
            config: tls_config(ca_pem, &[b"h2"]),
            ..self.clone()
        }
    }

    /// Opens a TLS connection and returns it with the negotiated ALPN protocol.
    pub async fn connect(&self) -> (tokio_rustls::client::TlsStream<TcpStream>, Proto) {
        let tcp = TcpStream::connect(self.addr).await.expect("connect");
        let name = ServerName::try_from("127.0.0.1").expect("server name");
        let tls = TlsConnector::from(self.config.clone())
            .connect(name, tcp)
            .await
            .expect("TLS handshake");
        let proto = match tls.get_ref().1.alpn_protocol() {
            Some(b"h2") => Proto::H2,
            _ => Proto::H1,
        };
        (tls, proto)
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Request<Full<Bytes>> {
        self.request_with(method, path, content_type, &[], body)
    }

    fn request_with(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string());
        if let Some(ct) = content_type {
            b = b.header("content-type", ct);
        }
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        if let Some(t) = &self.token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        b.body(Full::new(Bytes::from(body))).expect("request")
    }

    /// Sends a request and returns the response head and its body stream.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> http::Response<hyper::body::Incoming> {
        let (tls, proto) = self.connect().await;
        let req = self.request(method, path, content_type, body);
        match proto {
            Proto::H1 => {
                let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                    .await
                    .expect("h1 handshake");
                tokio::spawn(conn);
                send.send_request(req).await.expect("h1 request")
            }
            Proto::H2 => {
                let (mut send, conn) = hyper::client::conn::http2::handshake(
                    hyper_util::rt::TokioExecutor::new(),
                    TokioIo::new(tls),
                )
                .await
                .expect("h2 handshake");
                tokio::spawn(conn);
                send.send_request(req).await.expect("h2 request")
            }
        }
    }

    /// Sends a request with extra headers (`Accept`, `User-Agent`) and returns the response
    /// head and its body stream, over HTTP/1.1.
    pub async fn send_with(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> http::Response<hyper::body::Incoming> {
        let (tls, _) = self.connect().await;
        let req = self.request_with(method, path, content_type, headers, body);
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .expect("h1 handshake");
        tokio::spawn(conn);
        send.send_request(req).await.expect("h1 request")
    }

    /// Sends a request with extra headers and reads the whole response.
    pub async fn call_with(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        let resp = self
            .send_with(method, path, headers, content_type, body)
            .await;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    /// Sends a request and reads the whole response.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        let resp = self.send(method, path, content_type, body).await;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    /// GET.
    pub async fn get(&self, path: &str) -> Reply {
        self.call(Method::GET, path, None, Vec::new()).await
    }

    /// A method with a JSON body.
    pub async fn json(&self, method: Method, path: &str, body: &Value) -> Reply {
        self.call(
            method,
            path,
            Some("application/json"),
            serde_json::to_vec(body).expect("json"),
        )
        .await
    }

    /// Reads the object at `get_path`, changes it with `change` and PUTs it to `put_path` (its
    /// own path or a subresource's); while the PUT is refused with 409 Conflict because another
    /// writer (a controller) changed the object since the read, reads it again and retries, as
    /// a client of a cluster does (client-go's `retry.RetryOnConflict`). Returns the first
    /// reply that is not a conflict; panics after [`CONFLICTS_FOR`] of conflicts.
    pub async fn read_modify_put(
        &self,
        get_path: &str,
        put_path: &str,
        change: impl Fn(&mut Value),
    ) -> Reply {
        let deadline = tokio::time::Instant::now() + CONFLICTS_FOR;
        loop {
            let read = self.get(get_path).await;
            assert_eq!(
                read.status,
                StatusCode::OK,
                "GET {get_path}: {}",
                read.json()
            );
            let mut object = read.json();
            change(&mut object);
            let put = self.json(Method::PUT, put_path, &object).await;
            if put.status != StatusCode::CONFLICT {
                return put;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "PUT {put_path} still conflicts after {CONFLICTS_FOR:?}: {}",
                put.json()
            );
        }
    }

    /// PATCH with a content type.
    pub async fn patch(&self, path: &str, content_type: &str, body: &Value) -> Reply {
        self.call(
            Method::PATCH,
            path,
            Some(content_type),
            serde_json::to_vec(body).expect("json"),
        )
        .await
    }
}

/// Reads newline-delimited JSON from a streaming body until `n` lines arrived or the stream ends.
pub async fn read_lines(
    body: &mut hyper::body::Incoming,
    n: usize,
    buf: &mut Vec<u8>,
) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            out.push(serde_json::from_slice(&line).expect("watch line is JSON"));
            if out.len() == n {
                return out;
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    buf.extend_from_slice(data);
                }
            }
            _ => return out,
        }
    }
}

/// A minimal Sandbox.
pub fn sandbox(name: &str) -> Value {
    serde_json::json!({
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": { "name": name },
        "spec": { "podTemplate": { "spec": { "containers": [ { "name": "c", "image": "busybox" } ] } } },
    })
}

/// The collection path of Sandboxes in `ns`.
pub fn sandboxes(ns: &str) -> String {
    format!("/apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes")
}
