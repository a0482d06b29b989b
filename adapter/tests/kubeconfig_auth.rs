//! The adapter against fakekube through kubeconfigs that authenticate as kubectl does beyond
//! tokens: an `exec` credential plugin (a small script printing an `ExecCredential`). The
//! client-certificate counterpart is `client_certificate.rs`, which needs fakekube's client
//! certificates. Neither the token nor a key appears in any output.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use base64::Engine;
use fakekube::{FakeKube, Token};
use sandbox_contract::Provider;

/// Writes a kubeconfig for `kube` whose user runs `plugin`.
fn exec_kubeconfig(kube: &FakeKube, dir: &Path, plugin: &Path) -> std::path::PathBuf {
    let ca = base64::engine::general_purpose::STANDARD.encode(kube.ca_pem());
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: plugged\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      args: [--for, fake]\n      interactiveMode: Never\ncontexts:\n- name: fake\n  context: {{cluster: fake, user: plugged, namespace: sandboxes}}\ncurrent-context: fake\n",
        kube.base_url(),
        plugin.display()
    );
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).expect("kubeconfig written");
    path
}

/// Writes a plugin script answering `token`, counting its runs in `dir/runs`.
fn plugin(dir: &Path, token: &str) -> std::path::PathBuf {
    let path = dir.join("get-token");
    let runs = dir.join("runs");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho run >> '{}'\nprintf '%s' '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{token}\",\"expirationTimestamp\":\"2999-01-01T00:00:00Z\"}}}}'\n",
            runs.display()
        ),
    )
    .expect("plugin written");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// Connects the adapter with the kubeconfig at `path` as a direct pool in `sandboxes`.
async fn connect(path: &Path) -> AgentSandbox {
    let pool =
        PoolConfig::from_yaml("name: k8s\ntrust: private\nconfig:\n  namespace: sandboxes\n")
            .expect("pool config");
    AgentSandbox::connect(
        pool,
        ConnectOptions::from_env()
            .with_kubeconfig_path(path)
            .with_env(|_| None)
            .with_service_account_dir("/nonexistent"),
    )
    .await
    .expect("the adapter connects")
}

#[tokio::test]
async fn an_exec_plugin_kubeconfig_authenticates_against_fakekube() {
    let kube = FakeKube::builder()
        .namespace("sandboxes")
        .token(Token::new("plugin-s3cr3t-token", "plugged"))
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = exec_kubeconfig(
        &kube,
        dir.path(),
        &plugin(dir.path(), "plugin-s3cr3t-token"),
    );
    let provider = connect(&kubeconfig).await;
    assert!(provider.health().await.unwrap().is_healthy());
    assert_eq!(provider.list().await.unwrap(), Vec::new());
    let runs = std::fs::read_to_string(dir.path().join("runs")).unwrap();
    assert_eq!(
        runs.lines().count(),
        1,
        "the token is cached until it expires"
    );
    assert!(!format!("{provider:?}").contains("plugin-s3cr3t-token"));
    kube.shutdown().await;
}

#[tokio::test]
async fn a_refused_plugin_token_is_asked_again_once_and_never_shown() {
    let kube = FakeKube::builder()
        .namespace("sandboxes")
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = exec_kubeconfig(&kube, dir.path(), &plugin(dir.path(), "wrong-s3cr3t-token"));
    let provider = connect(&kubeconfig).await;
    let error = provider.list().await.unwrap_err();
    assert!(error.is_unauthenticated(), "{error}");
    let health = provider.health().await.unwrap();
    assert!(!health.is_healthy());
    let shown = format!("{error} {error:?} {health:?}");
    assert!(!shown.contains("wrong-s3cr3t-token"), "{shown}");
    let runs = std::fs::read_to_string(dir.path().join("runs")).unwrap();
    assert!(runs.lines().count() >= 2, "a 401 runs the plugin again");
    kube.shutdown().await;
}
