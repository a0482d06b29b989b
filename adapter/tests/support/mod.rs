//! Helpers for the adapter's tests against fakekube: a server with the `sandboxes` namespace,
//! tokens limited to the seed's Role, providers pointed at it, an admin client for the objects
//! a cluster operator would create (templates, warm pools), and a log capture.

#![allow(dead_code, missing_docs)]

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use bytes::Bytes;
use fakekube::{FakeKube, Rule, Token};
use http::{Method, Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};

/// The namespace every test works in.
pub const NS: &str = "sandboxes";

/// How long a test waits for anything.
pub const WAIT: Duration = Duration::from_secs(20);

/// Starts fakekube with the `sandboxes` namespace.
pub async fn fake() -> FakeKube {
    fake_with(FakeKube::builder()).await
}

/// Starts fakekube from `builder`, adding the `sandboxes` namespace.
pub async fn fake_with(builder: fakekube::Builder) -> FakeKube {
    capture_logs();
    builder
        .namespace(NS)
        .start()
        .await
        .expect("fakekube starts")
}

/// The seed's Role, exactly, bound in the `sandboxes` namespace.
pub fn seed_role() -> Vec<Rule> {
    vec![
        Rule::new(
            ["agents.x-k8s.io"],
            ["sandboxes"],
            ["get", "list", "create", "patch", "delete"],
        )
        .in_namespaces([NS]),
        Rule::new(
            ["extensions.agents.x-k8s.io"],
            ["sandboxclaims"],
            ["get", "list", "create", "patch", "delete"],
        )
        .in_namespaces([NS]),
        Rule::new(
            ["extensions.agents.x-k8s.io"],
            ["sandboxwarmpools"],
            ["get"],
        )
        .in_namespaces([NS]),
        Rule::new([""], ["pods"], ["get"]).in_namespaces([NS]),
        Rule::new([""], ["pods/exec"], ["get", "create"]).in_namespaces([NS]),
    ]
}

/// Adds a token with exactly the seed's Role and returns its secret.
pub fn role_token(kube: &FakeKube, secret: &str) -> String {
    kube.add_token(Token::new(secret, "differently").with_rules(seed_role()));
    secret.to_owned()
}

/// A direct pool's YAML with extra `config` lines (each indented by two spaces).
pub fn pool_yaml(name: &str, config: &[&str]) -> String {
    let mut yaml = format!("name: {name}\ntrust: private\nconfig:\n  namespace: {NS}\n");
    for line in config {
        yaml.push_str("  ");
        yaml.push_str(line);
        yaml.push('\n');
    }
    yaml
}

/// Connects a provider for `yaml` to `kube` with `token`.
pub async fn provider_with(kube: &FakeKube, yaml: &str, token: &str) -> AgentSandbox {
    let pool = PoolConfig::from_yaml(yaml).expect("pool config");
    AgentSandbox::connect(pool, options(kube, token))
        .await
        .expect("provider connects")
}

/// Connect options pointing at `kube` with `token`, waiting at most [`WAIT`].
pub fn options(kube: &FakeKube, token: &str) -> ConnectOptions {
    ConnectOptions::from_env()
        .with_kubeconfig_yaml(kube.kubeconfig_with_token(token))
        .with_env(|_| None)
        .with_service_account_dir("/nonexistent")
        .with_ready_timeout(WAIT)
}

/// A provider for a direct pool with `config` lines and a Role token.
pub async fn direct(kube: &FakeKube, config: &[&str]) -> AgentSandbox {
    let token = role_token(kube, "role-token-direct");
    provider_with(kube, &pool_yaml("direct", config), &token).await
}

/// Captures every log line of the process into [`logs`].
pub fn capture_logs() {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(|| LogWriter)
            .try_init();
    });
}

/// Everything logged so far.
pub fn logs() -> String {
    String::from_utf8_lossy(&LOGS.lock().expect("log capture lock")).into_owned()
}

static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Appends to [`LOGS`].
struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock()
            .expect("log capture lock")
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A client with the admin token, for what an operator would create.
pub struct Admin {
    tls: tokio_rustls::TlsConnector,
    addr: std::net::SocketAddr,
    token: String,
}

impl Admin {
    pub fn new(kube: &FakeKube) -> Self {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(kube.ca_pem().as_bytes()) {
            roots
                .add(cert.expect("fakekube CA PEM"))
                .expect("fakekube CA");
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        Admin {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            addr: kube.addr(),
            token: kube.token().to_owned(),
        }
    }

    /// Sends one request and returns the status and the JSON body.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let tcp = tokio::net::TcpStream::connect(self.addr)
            .await
            .expect("connect to fakekube");
        let name = ServerName::try_from("127.0.0.1").expect("server name");
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .expect("TLS handshake with fakekube");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .expect("HTTP/1.1 handshake");
        tokio::spawn(conn);
        let bytes = body
            .map(|b| Bytes::from(serde_json::to_vec(b).expect("JSON body")))
            .unwrap_or_default();
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "127.0.0.1")
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .header(header::CONTENT_TYPE, content_type)
            .header(header::ACCEPT, "application/json")
            .body(Full::new(bytes))
            .expect("request");
        let response = sender
            .send_request(request)
            .await
            .expect("response from fakekube");
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("response body")
            .to_bytes();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    /// Creates an object; panics unless the server answers 201.
    pub async fn create(&self, collection: &str, object: Value) -> Value {
        let (status, body) = self
            .request(Method::POST, collection, "application/json", Some(&object))
            .await;
        assert_eq!(status, 201, "creating in {collection}: {body}");
        body
    }

    /// Merge-patches an object.
    pub async fn patch(&self, path: &str, patch: Value) -> Value {
        let (status, body) = self
            .request(
                Method::PATCH,
                path,
                "application/merge-patch+json",
                Some(&patch),
            )
            .await;
        assert_eq!(status, 200, "patching {path}: {body}");
        body
    }
}

/// The keep-alive loop the warm pool's template runs.
pub const TEMPLATE_LOOP: &str = "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done";

/// Creates the SandboxTemplate `python` and the SandboxWarmPool `python-warm` with `replicas`
/// members, and waits until they are ready.
pub async fn warm_pool(kube: &FakeKube, replicas: u32) {
    let admin = Admin::new(kube);
    admin
        .create(
            &format!("/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{NS}/sandboxtemplates"),
            json!({
                "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
                "kind": "SandboxTemplate",
                "metadata": {"name": "python"},
                "spec": {
                    "envVarsInjectionPolicy": "Allowed",
                    "podTemplate": {"spec": {"containers": [{
                        "name": "main",
                        "image": "python:3.13-slim",
                        "command": ["/bin/sh", "-c", TEMPLATE_LOOP],
                    }]}}
                }
            }),
        )
        .await;
    admin
        .create(
            &format!("/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{NS}/sandboxwarmpools"),
            json!({
                "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
                "kind": "SandboxWarmPool",
                "metadata": {"name": "python-warm"},
                "spec": {"replicas": replicas, "sandboxTemplateRef": {"name": "python"}}
            }),
        )
        .await;
    kube.wait_for("sandboxwarmpools", NS, "python-warm", WAIT, |pool| {
        pool.and_then(|p| p.pointer("/status/readyReplicas"))
            .and_then(Value::as_u64)
            == Some(u64::from(replicas))
    })
    .await
    .expect("the warm pool fills");
}

/// A warm-pool provider with a Role token.
pub async fn warm(kube: &FakeKube, extra: &[&str]) -> AgentSandbox {
    let token = role_token(kube, "role-token-warm");
    let mut lines = vec!["warmPool: python-warm"];
    lines.extend_from_slice(extra);
    provider_with(kube, &pool_yaml("warm", &lines), &token).await
}

/// Keeps only this pool's own labels and annotations, and the spec, of a stored object, for
/// snapshots.
pub fn sent_shape(object: &Value) -> Value {
    let ours = |map: Option<&Value>| -> Value {
        let mut kept = serde_json::Map::new();
        if let Some(map) = map.and_then(Value::as_object) {
            for (k, v) in map {
                if k.contains("sandbox.differently.dev") {
                    kept.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(kept)
    };
    json!({
        "apiVersion": object["apiVersion"],
        "kind": object["kind"],
        "metadata": {
            "name": object["metadata"]["name"],
            "labels": ours(object["metadata"].get("labels")),
            "annotations": ours(object["metadata"].get("annotations")),
        },
        "spec": object["spec"],
    })
}
