//! Helpers for the adapter's tests against fakekube: a server with the `sandboxes` namespace,
//! tokens limited to the seed's Role, providers pointed at it, an admin kube-rs client for what a
//! cluster operator would do (templates, warm pools), and a log capture.

#![allow(missing_docs)]
#![allow(
    dead_code,
    reason = "each test binary includes this module and uses a different subset of it"
)]

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use fakekube::{FakeKube, Rule, Token};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Client, Config};
use serde_json::{Value, json};

/// The namespace every test works in.
pub const NS: &str = "sandboxes";

/// How long a test waits for anything.
pub const WAIT: Duration = Duration::from_secs(60);

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

/// A kube-rs client with fakekube's admin token, built from the kubeconfig it writes, for what
/// a cluster operator would do.
pub async fn admin(kube: &FakeKube) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&kube.kubeconfig()).expect("the kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs accepts the kubeconfig");
    Client::try_from(config).expect("kube-rs builds a client")
}

/// An agent-sandbox kind (`v1beta1`) in the `sandboxes` namespace.
fn agent_sandbox(client: &Client, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1beta1", kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    Api::namespaced_with(client.clone(), NS, &resource)
}

/// The Sandboxes in the `sandboxes` namespace.
pub fn sandboxes(client: &Client) -> Api<DynamicObject> {
    agent_sandbox(client, "agents.x-k8s.io", "Sandbox", "sandboxes")
}

/// Creates `object` through `api`.
async fn create(api: &Api<DynamicObject>, object: Value) -> DynamicObject {
    let object: DynamicObject = serde_json::from_value(object).expect("a Kubernetes object");
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating in {}: {e}", api.resource_url()))
}

/// The keep-alive loop the warm pool's template runs.
pub const TEMPLATE_LOOP: &str = "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done";

/// Creates the SandboxTemplate `python` and the SandboxWarmPool `python-warm` with `replicas`
/// members, and waits until they are ready.
pub async fn warm_pool(kube: &FakeKube, replicas: u32) {
    let admin = admin(kube).await;
    let group = "extensions.agents.x-k8s.io";
    create(
        &agent_sandbox(&admin, group, "SandboxTemplate", "sandboxtemplates"),
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
    create(
        &agent_sandbox(&admin, group, "SandboxWarmPool", "sandboxwarmpools"),
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
