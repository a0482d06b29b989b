//! The adapter's `isolation: microvm` pools against a cluster with and without the Kata
//! RuntimeClass they name: the API server's RuntimeClass admission refuses the Sandbox's pod
//! when the class is missing (403, `pod rejected: RuntimeClass "kata-qemu" not found`), which
//! the adapter reports at once as `invalid_request` and cleans up after; with the class, the
//! sandbox runs and its pod carries the class's overhead.

#![allow(missing_docs)]

mod support;

use sandbox_contract::{Capability, CreateRequest, ErrorCode, Provider, SandboxId, SandboxState};
use serde_json::json;
use support::*;

const POOL: [&str; 2] = ["isolation: microvm", "runtimeClassName: kata-qemu"];

fn id(s: &str) -> SandboxId {
    SandboxId::new(s).expect("valid sandbox id")
}

#[tokio::test]
async fn a_microvm_pool_without_its_runtime_class_fails_at_once_with_invalid_request() {
    let kube = fake().await;
    let p = direct(&kube, &POOL).await;
    let caps = p.info().await.unwrap().capabilities;
    assert!(caps.contains(Capability::IsolationMicrovm));
    let error = p
        .create(CreateRequest::new(id("sb-kata")))
        .await
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidRequest, "{error}");
    assert!(
        error.to_string().contains(
            "pods \"sb-kata\" is forbidden: pod rejected: RuntimeClass \"kata-qemu\" not found"
        ),
        "{error}"
    );
    kube.wait_for("sandboxes", NS, "sb-kata", WAIT, |s| s.is_none())
        .await
        .unwrap();
    assert!(kube.get("pods", NS, "sb-kata").is_none());
}

#[tokio::test]
async fn a_microvm_pool_with_its_runtime_class_runs_and_the_pod_carries_the_overhead() {
    let kube = fake().await;
    kube.create(json!({
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": { "name": "kata-qemu" },
        "handler": "kata-qemu",
        "overhead": { "podFixed": { "cpu": "250m", "memory": "160Mi" } },
    }))
    .unwrap();
    let p = direct(&kube, &POOL).await;
    let sandbox = p.create(CreateRequest::new(id("sb-kata"))).await.unwrap();
    assert_eq!(sandbox.state, SandboxState::Running);
    let pod = kube.get("pods", NS, "sb-kata").expect("the pod");
    assert_eq!(pod["spec"]["runtimeClassName"], "kata-qemu");
    assert_eq!(
        pod["spec"]["overhead"],
        json!({ "cpu": "250m", "memory": "160Mi" })
    );
    p.delete(&id("sb-kata")).await.unwrap();
}
