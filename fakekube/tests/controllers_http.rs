//! fakekube's agent-sandbox controllers as a client of an API server over HTTPS, as upstream's
//! controller manager is: a fakekube started without controllers of its own, and
//! `fakekube_controllers::agent_sandbox` driven through `client::http::HttpClient` (list+watch
//! caches, writes as requests) against it. Nothing here reaches the server's store.

mod support;

use fakekube_controllers::agent_sandbox::{self, Config};
use fakekube_machinery::client::Kind;
use fakekube_machinery::client::http::{HttpClient, Watched};
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the agent-sandbox controllers read and follow.
const WATCHED: [Kind; 8] = [
    Kind::Sandbox,
    Kind::SandboxTemplate,
    Kind::SandboxWarmPool,
    Kind::SandboxClaim,
    Kind::Pod,
    Kind::Service,
    Kind::PersistentVolumeClaim,
    Kind::NetworkPolicy,
];

fn ready(sandbox: Option<&Value>) -> bool {
    sandbox
        .and_then(|s| s.pointer("/status/conditions"))
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_controller_over_https_makes_a_sandbox_ready_with_its_pod_and_service() {
    let kube = fakekube::FakeKube::builder()
        .controllers(false)
        .start()
        .await
        .expect("fakekube starts");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kube.kubeconfig()).expect("the kubeconfig is written");
    let shutdown = CancellationToken::new();
    let watched = WATCHED
        .into_iter()
        .map(|kind| Watched {
            kind,
            field_selector: String::new(),
        })
        .collect();
    let api = HttpClient::start(
        &kubeconfig,
        "agent-sandbox-controller/fakekube",
        watched,
        shutdown.clone(),
    )
    .expect("the client starts");
    assert!(
        api.synced(Duration::from_secs(30)).await,
        "every watched kind is listed"
    );
    let mut controllers = agent_sandbox::spawn(api.clone(), Config::default(), shutdown.clone())
        .expect("the controllers' thread starts");

    let mut sandbox = support::sandbox("over-https");
    sandbox["spec"]["service"] = serde_json::json!(true);
    let created = fakekube::Client::create(api.as_ref(), Kind::Sandbox, "default", sandbox)
        .expect("the Sandbox is created through the API");
    assert_eq!(created["metadata"]["name"], "over-https");

    let waited = kube
        .wait_for(
            "sandboxes",
            "default",
            "over-https",
            Duration::from_secs(60),
            ready,
        )
        .await;
    // The controllers' thread is joined when dropped: stop it before any assertion can fail.
    shutdown.cancel();
    controllers.stop();
    let sandbox = waited
        .expect("the Sandbox becomes Ready")
        .expect("the Sandbox exists");
    let uid = sandbox["metadata"]["uid"].clone();
    let pod = kube
        .wait_for(
            "pods",
            "default",
            "over-https",
            Duration::from_secs(60),
            |p| p.is_some(),
        )
        .await
        .expect("the Sandbox's Pod is read")
        .expect("the Sandbox has its Pod");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], uid);
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "Sandbox");
    let service = kube
        .wait_for(
            "services",
            "default",
            "over-https",
            Duration::from_secs(60),
            |s| s.is_some(),
        )
        .await
        .expect("the Sandbox's Service is read")
        .expect("the Sandbox has its Service");
    assert_eq!(service["metadata"]["ownerReferences"][0]["uid"], uid);
    assert_eq!(
        sandbox["status"]["serviceFQDN"],
        "over-https.default.svc.cluster.local"
    );

    kube.shutdown().await;
}
