//! What the cassette tests share: a scripted API server over TLS (the cluster to record), a
//! small HTTPS client that reads the kubeconfigs the proxy and the replay write, and the
//! markers every secret of the scripted server is made of.

pub mod schema;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

/// The scripted server's bearer token.
pub const UPSTREAM_TOKEN: &str = "MARKER-upstream-token-4f1c";
/// A Secret's `data` value (before base64).
pub const SECRET_DATA: &str = "MARKER-secret-data-77a2";
/// A Secret's `stringData` value.
pub const STRING_DATA: &str = "MARKER-string-data-19bd";
/// The token a TokenRequest answers.
pub const ISSUED_TOKEN: &str = "MARKER-issued-token-c3e0";
/// The token a client asks a TokenReview about.
pub const REVIEWED_TOKEN: &str = "MARKER-reviewed-token-5d88";

type Body = BoxBody<Bytes, Infallible>;

fn full(value: Value) -> Body {
    Full::new(Bytes::from(value.to_string())).boxed()
}

fn answer(status: u16, value: Value) -> Response<Body> {
    let mut response = Response::new(full(value));
    *response.status_mut() = StatusCode::from_u16(status).expect("test support");
    response.headers_mut().insert(
        "content-type",
        "application/json".parse().expect("test support"),
    );
    response
}

/// The scripted cluster: a TLS server on loopback with its own CA.
pub struct Upstream {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// Its CA certificate.
    pub ca_pem: String,
    /// A client key the kubeconfig carries (never used by the server, only scanned for).
    pub client_key_pem: String,
    /// A client certificate for that key.
    pub client_cert_pem: String,
}

impl Upstream {
    /// Starts the server.
    pub async fn start() -> Upstream {
        let ca_key = rcgen::KeyPair::generate().expect("test support");
        let mut ca = rcgen::CertificateParams::default();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).expect("test support");
        let ca_pem = ca_cert.pem();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate().expect("test support");
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("test support");
        params.subject_alt_names.push(rcgen::SanType::IpAddress(
            "127.0.0.1".parse().expect("test support"),
        ));
        let cert = params.signed_by(&key, &issuer).expect("test support");
        let client_key = rcgen::KeyPair::generate().expect("test support");
        let client_cert = rcgen::CertificateParams::default()
            .signed_by(&client_key, &issuer)
            .expect("test support");
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("test support")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).expect("test support"),
        )
        .expect("test support");
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("test support");
        let port = listener.local_addr().expect("test support").port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(|r| async move {
                        Ok::<_, Infallible>(route(r).await)
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection_with_upgrades(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Upstream {
            url: format!("https://127.0.0.1:{port}"),
            ca_pem,
            client_key_pem: client_key.serialize_pem(),
            client_cert_pem: client_cert.pem(),
        }
    }

    /// A kubeconfig for the server with the marker token and the client certificate.
    pub fn kubeconfig(&self) -> String {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: {}\n    certificate-authority-data: {}\nusers:\n- name: u\n  user:\n    token: {UPSTREAM_TOKEN}\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n    namespace: ns\n",
            self.url,
            b64(&self.ca_pem),
            b64(&self.client_cert_pem),
            b64(&self.client_key_pem),
        )
    }
}

/// The scripted API.
async fn route(mut request: Request<Incoming>) -> Response<Body> {
    let authorized = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {UPSTREAM_TOKEN}"));
    if !authorized {
        return answer(401, json!({"kind": "Status", "code": 401}));
    }
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or("").to_owned();
    let method = request.method().clone();
    if path.ends_with("/exec") {
        return exec(&mut request);
    }
    let body: Value = {
        let bytes = request
            .into_body()
            .collect()
            .await
            .expect("test support")
            .to_bytes();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    match (method.as_str(), path.as_str()) {
        ("GET", "/version") => answer(200, json!({"gitVersion": "v1.33.0"})),
        ("GET", "/api/v1/namespaces/ns/secrets/s") => answer(
            200,
            json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"},
                "data": {"key": b64(SECRET_DATA)}, "stringData": {"other": STRING_DATA}}),
        ),
        ("POST", "/api/v1/namespaces/ns/secrets") => answer(201, body),
        ("POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token") => answer(
            201,
            json!({"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "spec": body["spec"].clone(), "status": {"token": ISSUED_TOKEN,
                "expirationTimestamp": "2030-01-01T00:00:00Z"}}),
        ),
        ("POST", "/apis/authentication.k8s.io/v1/tokenreviews") => {
            let mut review = body;
            review["status"] = json!({"authenticated": true, "user": {"username": "u"}});
            answer(201, review)
        }
        ("GET", "/api/v1/namespaces/ns/configmaps/leaky") => answer(
            200,
            json!({"kind": "ConfigMap", "data": {"seen": format!("Bearer {UPSTREAM_TOKEN}")}}),
        ),
        ("POST", "/api/v1/namespaces/ns/configmaps") => {
            let mut object = body;
            object["metadata"]["uid"] = json!("5f0c2e8a-1b2c-4d3e-8f90-a1b2c3d4e5f6");
            object["metadata"]["resourceVersion"] = json!("17");
            object["metadata"]["creationTimestamp"] = json!("2025-03-04T05:06:07Z");
            answer(201, object)
        }
        ("GET", p) if p.starts_with("/api/v1/namespaces/ns/configmaps/") => {
            let name = p.rsplit('/').next().unwrap_or("");
            answer(
                200,
                json!({"kind": "ConfigMap", "metadata": {"name": name},
                    "data": {"next": "/api/v1/namespaces/ns/configmaps/b"}}),
            )
        }
        ("GET", "/api/v1/namespaces/ns/pods") if query.contains("watch=1") => watch(),
        _ => answer(
            404,
            json!({"kind": "Status", "code": 404, "reason": "NotFound"}),
        ),
    }
}

/// Three watch events, a chunk each, then the end of the stream.
fn watch() -> Response<Body> {
    let events: Vec<Result<Frame<Bytes>, Infallible>> = ["a", "b", "c"]
        .iter()
        .map(|name| {
            let line =
                json!({"type": "ADDED", "object": {"kind": "Pod", "metadata": {"name": name}}});
            Ok(Frame::data(Bytes::from(format!("{line}\n"))))
        })
        .collect();
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(futures_util::stream::iter(
        events,
    ))));
    response.headers_mut().insert(
        "content-type",
        "application/json;stream=watch"
            .parse()
            .expect("test support"),
    );
    response
}

/// A v5 exec that echoes stdin to stdout until stdin closes, then reports success and closes.
fn exec(request: &mut Request<Incoming>) -> Response<Body> {
    let key = request
        .headers()
        .get("sec-websocket-key")
        .cloned()
        .expect("an exec has a WebSocket key");
    let on_upgrade = hyper::upgrade::on(request);
    tokio::spawn(async move {
        let io = on_upgrade.await.expect("test support");
        let mut ws = WebSocketStream::from_raw_socket(TokioIo::new(io), Role::Server, None).await;
        while let Some(Ok(message)) = ws.next().await {
            let Message::Binary(data) = message else {
                continue;
            };
            match data.first() {
                Some(0) => {
                    let mut out = vec![1u8];
                    out.extend_from_slice(&data[1..]);
                    ws.send(Message::Binary(out.into()))
                        .await
                        .expect("test support");
                }
                Some(255) => break,
                _ => {}
            }
        }
        let mut status = vec![3u8];
        status.extend_from_slice(br#"{"metadata":{},"status":"Success"}"#);
        ws.send(Message::Binary(status.into()))
            .await
            .expect("test support");
        let _ = ws.close(None).await;
        while let Some(Ok(_)) = ws.next().await {}
    });
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    Response::builder()
        .status(101)
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-accept", accept)
        .header("sec-websocket-protocol", "v5.channel.k8s.io")
        .body(full(Value::Null).boxed())
        .expect("test support")
}

/// A client of a kubeconfig the proxy or the replay wrote.
pub struct Client {
    host: String,
    port: u16,
    ca_pem: String,
    token: String,
}

impl Client {
    /// Reads the server, CA and token of `kubeconfig`.
    pub fn new(kubeconfig: &str) -> Client {
        let doc: Value = serde_saphyr::from_str(kubeconfig).expect("test support");
        let server = doc["clusters"][0]["cluster"]["server"]
            .as_str()
            .expect("test support");
        let ca = doc["clusters"][0]["cluster"]["certificate-authority-data"]
            .as_str()
            .expect("test support");
        let (host, port) = server
            .trim_start_matches("https://")
            .rsplit_once(':')
            .expect("test support");
        Client {
            host: host.to_owned(),
            port: port.parse().expect("test support"),
            ca_pem: String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(ca)
                    .expect("test support"),
            )
            .expect("test support"),
            token: doc["users"][0]["user"]["token"]
                .as_str()
                .expect("test support")
                .to_owned(),
        }
    }

    /// The client's token (to check it never reaches a cassette).
    pub fn token(&self) -> &str {
        &self.token
    }

    async fn tls(&self, alpn: &[&[u8]]) -> tokio_rustls::client::TlsStream<TcpStream> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            roots
                .add(cert.expect("test support"))
                .expect("test support");
        }
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("test support")
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .expect("test support");
        tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(
                ServerName::try_from(self.host.clone()).expect("test support"),
                tcp,
            )
            .await
            .expect("test support")
    }

    /// Sends a request over HTTP/1.1 (or HTTP/2 when `h2`) and reads the whole answer.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        h2: bool,
    ) -> (u16, Value) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", format!("{}:{}", self.host, self.port))
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(
                body.map(|b| b.to_string()).unwrap_or_default(),
            )))
            .expect("test support");
        let response = if h2 {
            let tls = self.tls(&[b"h2"]).await;
            let (mut sender, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                    .await
                    .expect("test support");
            tokio::spawn(conn);
            let mut request = request;
            request.headers_mut().remove("host");
            *request.uri_mut() = format!("https://{}:{}{path}", self.host, self.port)
                .parse()
                .expect("test support");
            sender.send_request(request).await.expect("test support")
        } else {
            let tls = self.tls(&[b"http/1.1"]).await;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .expect("test support");
            tokio::spawn(conn);
            sender.send_request(request).await.expect("test support")
        };
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("test support")
            .to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// GETs `path` over HTTP/1.1.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.send("GET", path, None, false).await
    }

    /// POSTs `body` to `path` over HTTP/1.1.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send("POST", path, Some(body), false).await
    }

    /// Reads a watch to its end, line by line.
    pub async fn watch(&self, path: &str) -> Vec<Value> {
        let tls = self.tls(&[b"http/1.1"]).await;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .expect("test support");
        tokio::spawn(conn);
        let request = Request::builder()
            .uri(path)
            .header("host", format!("{}:{}", self.host, self.port))
            .header("authorization", format!("Bearer {}", self.token))
            .body(Full::new(Bytes::new()))
            .expect("test support");
        let response = sender.send_request(request).await.expect("test support");
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("test support")
            .to_bytes();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(|l| serde_json::from_str(l).expect("test support"))
            .collect()
    }

    /// Runs the echo exec: sends each of `stdin` on channel 0, closes stdin, and returns what
    /// came back as (channel, payload) until the server closed.
    pub async fn exec(&self, path: &str, stdin: &[&str]) -> Vec<(u8, String)> {
        let tls = self.tls(&[b"http/1.1"]).await;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .expect("test support");
        tokio::spawn(conn.with_upgrades());
        let request = Request::builder()
            .uri(path)
            .header("host", format!("{}:{}", self.host, self.port))
            .header("authorization", format!("Bearer {}", self.token))
            .header("connection", "Upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header(
                "sec-websocket-key",
                tokio_tungstenite::tungstenite::handshake::client::generate_key(),
            )
            .header("sec-websocket-protocol", "v5.channel.k8s.io")
            .body(Full::new(Bytes::new()))
            .expect("test support");
        let response = sender.send_request(request).await.expect("test support");
        assert_eq!(response.status(), 101, "the exec upgrades");
        let io = hyper::upgrade::on(response).await.expect("test support");
        let mut ws = WebSocketStream::from_raw_socket(TokioIo::new(io), Role::Client, None).await;
        for chunk in stdin {
            let mut data = vec![0u8];
            data.extend_from_slice(chunk.as_bytes());
            ws.send(Message::Binary(data.into()))
                .await
                .expect("test support");
        }
        ws.send(Message::Binary(vec![255u8, 0].into()))
            .await
            .expect("test support");
        let mut got = Vec::new();
        while let Some(Ok(message)) = ws.next().await {
            if let Message::Binary(data) = message
                && let Some((channel, rest)) = data.split_first()
            {
                got.push((*channel, String::from_utf8_lossy(rest).into_owned()));
            }
        }
        got
    }
}
