//! No credential leaves fakekube in its logs, its errors or a `Debug` output: every token and
//! key a run handles (the admin token, static tokens, TokenRequest and token-Secret tokens, a
//! client certificate's key, refused and forged tokens) is looked for in everything fakekube
//! logged at trace level and in every error and `Debug` text the run produced.
//!
//! One test in its own binary, since it installs the process-wide log subscriber.

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenReview};
use k8s_openapi::api::core::v1::{Pod, Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything fakekube logs, kept in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn client(kubeconfig: &str) -> Client {
    let kc = Kubeconfig::from_yaml(kubeconfig).expect("the kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kube accepts the kubeconfig");
    Client::try_from(config).expect("a client")
}

#[tokio::test]
async fn no_token_or_key_appears_in_logs_errors_or_debug_output() {
    let logs = Captured::default();
    let writer = logs.clone();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "fakekube=trace,fakekube_runtime=trace",
        ))
        .with_writer(move || writer.clone())
        .init();

    let builder = fakekube::FakeKube::builder()
        .admin_token("fixed-admin-secret-0001")
        .token(fakekube::Token::new("static-secret-0002", "carol"));
    let mut texts = vec![format!("{builder:?}")];
    let kube = builder.start().await.expect("fakekube starts");
    let admin = client(&kube.kubeconfig()).await;
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({ "metadata": { "name": "leaky" } })).expect("an SA"),
    )
    .await
    .expect("created");
    let request: TokenRequest = serde_json::from_value(json!({ "spec": {} })).expect("a request");
    let bound = sas
        .create_token_request("leaky", &PostParams::default(), &request)
        .await
        .expect("issued")
        .status
        .and_then(|s| s.token)
        .expect("a token");
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "default");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": { "name": "leaky-token", "annotations": { "kubernetes.io/service-account.name": "leaky" } },
                "type": "kubernetes.io/service-account-token",
            }))
            .expect("a Secret"),
        )
        .await
        .expect("created");
    let filled = kube
        .wait_for(
            "secrets",
            "default",
            "leaky-token",
            Duration::from_secs(60),
            |s| s.is_some_and(|s| s.pointer("/data/token").is_some()),
        )
        .await
        .expect("filled")
        .expect("present");
    let legacy: Secret = serde_json::from_value(filled).expect("a Secret");
    let legacy = String::from_utf8(legacy.data.expect("data")["token"].0.clone()).expect("text");
    let cert = kube.client_certificate("mallory", &["devs"]);
    texts.push(format!("{cert:?}"));

    // Refused credentials of every kind, and the errors they produce.
    let mut forged = bound.clone();
    forged.push('x');
    for token in ["bogus-secret-0003", forged.as_str()] {
        let pods: Api<Pod> =
            Api::default_namespaced(client(&kube.kubeconfig_with_token(token)).await);
        texts.push(format!("{:?}", pods.list(&ListParams::default()).await));
    }
    let reviews: Api<TokenReview> = Api::all(admin.clone());
    let review: TokenReview =
        serde_json::from_value(json!({ "spec": { "token": forged } })).expect("a review");
    let answered = reviews
        .create(&PostParams::default(), &review)
        .await
        .expect("a review");
    texts.push(format!("{:?}", answered.status));
    let as_cert: Api<Secret> =
        Api::default_namespaced(client(&kube.kubeconfig_with_client_certificate(&cert)).await);
    texts.push(format!("{:?}", as_cert.list(&ListParams::default()).await));
    sas.delete("leaky", &DeleteParams::default())
        .await
        .expect("deleted");
    for token in [bound.as_str(), legacy.as_str()] {
        let pods: Api<Pod> =
            Api::default_namespaced(client(&kube.kubeconfig_with_token(token)).await);
        texts.push(format!("{:?}", pods.list(&ListParams::default()).await));
    }
    texts.push(format!("{kube:?}"));
    texts.push(format!(
        "{:?}",
        fakekube::Token::new("static-secret-0002", "carol")
    ));
    let status = kube
        .create(json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "x", "namespace": "missing" } }))
        .expect_err("no such namespace");
    texts.push(format!("{status} {status:?}"));
    kube.shutdown().await;

    let logged = String::from_utf8_lossy(&logs.0.lock().expect("the log buffer")).into_owned();
    assert!(!logged.is_empty(), "fakekube logged at trace level");
    let key_body: String = cert
        .key_pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let secrets = [
        ("the admin token", "fixed-admin-secret-0001".to_string()),
        ("a static token", "static-secret-0002".to_string()),
        ("a refused token", "bogus-secret-0003".to_string()),
        ("a TokenRequest token", bound.clone()),
        ("a forged token", forged.clone()),
        ("a token Secret's token", legacy.clone()),
        ("a client key", key_body),
    ];
    for (what, secret) in &secrets {
        // The signature part alone is as secret as the whole token.
        let tail = secret.rsplit('.').next().unwrap_or(secret);
        for (place, text) in std::iter::once(("the logs", &logged))
            .chain(texts.iter().map(|t| ("an error or Debug output", t)))
        {
            assert!(
                !text.contains(secret.as_str()) && !text.contains(tail),
                "{what} appears in {place}"
            );
        }
    }
}
