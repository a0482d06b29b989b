//! The adapter against fakekube through a kubeconfig whose user authenticates with a client
//! certificate (`client-certificate-data` and `client-key-data`), as kind's kubeconfig does.

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use base64::Engine;
use fakekube::FakeKube;
use sandbox_contract::Provider;

#[tokio::test]
async fn a_client_certificate_kubeconfig_authenticates_against_fakekube() {
    let kube = FakeKube::builder()
        .namespace("sandboxes")
        .start()
        .await
        .unwrap();
    let identity = kube.client_certificate("alice", &["system:masters"]);
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n    certificate-authority-data: {}\nusers:\n- name: alice\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: fake\n  context: {{cluster: fake, user: alice, namespace: sandboxes}}\ncurrent-context: fake\n",
        kube.base_url(),
        b64(kube.ca_pem()),
        b64(&identity.cert_pem),
        b64(&identity.key_pem),
    );
    let pool =
        PoolConfig::from_yaml("name: k8s\ntrust: private\nconfig:\n  namespace: sandboxes\n")
            .unwrap();
    let provider = AgentSandbox::connect(
        pool,
        ConnectOptions::from_env()
            .with_kubeconfig_yaml(text)
            .with_env(|_| None)
            .with_service_account_dir("/nonexistent"),
    )
    .await
    .unwrap();
    assert!(provider.health().await.unwrap().is_healthy());
    assert_eq!(provider.list().await.unwrap(), Vec::new());
    let problems = provider.preflight().await.unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let shown = format!("{provider:?}");
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    kube.shutdown().await;
}
