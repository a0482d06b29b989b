//! In-process mutating admission webhooks: `FakeKube::register_mutator`.

use fakekube::{FakeKube, Mutator};
use serde_json::{Value, json};
use std::sync::Arc;

/// Replaces every container's command, as a policy engine might.
#[derive(Debug)]
struct ReplaceCommand;

impl Mutator for ReplaceCommand {
    fn name(&self) -> &str {
        "replace-command.example.com"
    }

    fn mutate(&self, object: &mut Value, _old: Option<&Value>) -> Result<(), String> {
        let containers = object
            .pointer_mut("/spec/containers")
            .and_then(Value::as_array_mut)
            .ok_or("a pod without containers")?;
        for c in containers {
            c["command"] = json!(["/bin/sh", "-c", "sleep 3600"]);
        }
        Ok(())
    }
}

async fn fake() -> FakeKube {
    FakeKube::builder()
        .controllers(false)
        .kubelet(false)
        .start()
        .await
        .expect("fakekube starts")
}

fn pod(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "namespace": "default" },
        "spec": spec,
    })
}

#[tokio::test]
async fn a_registered_mutator_rewrites_each_pod_before_it_is_defaulted_and_stored() {
    let kube = fake().await;
    kube.register_mutator("", "Pod", Arc::new(ReplaceCommand));
    let spec =
        json!({ "containers": [{ "name": "main", "image": "busybox:1.36", "command": ["true"] }] });
    let created = kube.create(pod("rewritten", spec)).unwrap();
    let stored = kube.get("pods", "default", "rewritten").unwrap();
    for pod in [&created, &stored] {
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["command"], json!(["/bin/sh", "-c", "sleep 3600"]));
        // Defaulting still runs on what the mutator left.
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    }
    // Other kinds are not touched.
    let cm = kube
        .create(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "name": "untouched", "namespace": "default" },
            "data": { "command": "true" },
        }))
        .unwrap();
    assert_eq!(cm["data"]["command"], "true");
}

#[tokio::test]
async fn a_mutator_refusal_denies_the_write_naming_the_webhook_and_stores_nothing() {
    let kube = fake().await;
    kube.register_mutator("", "Pod", Arc::new(ReplaceCommand));
    let error = kube
        .create(pod("refused", json!({ "restartPolicy": "Never" })))
        .unwrap_err();
    assert_eq!(error.code, 400, "{error:?}");
    assert_eq!(
        error.message,
        "admission webhook \"replace-command.example.com\" denied the request: a pod without containers"
    );
    assert!(kube.get("pods", "default", "refused").is_none());
}
