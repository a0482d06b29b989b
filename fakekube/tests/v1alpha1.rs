//! The deprecated `v1alpha1` versions of the agent-sandbox CRDs, served beside the stored
//! `v1beta1` with upstream's conversion, as a client sees them: round trips, reads of objects
//! written at the other version, lists, watches, patches, the status subresource, the
//! deprecation warning, discovery and the CRDs' stored versions. The kubelet is off; the
//! controllers run, as the conversion webhook runs in their deployment.

mod support;

use fakekube::FakeKube;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use support::{Client, read_lines};

const ALPHA: &str = "/apis/agents.x-k8s.io/v1alpha1/namespaces/default/sandboxes";
const BETA: &str = "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes";
const EXT_ALPHA: &str = "/apis/extensions.agents.x-k8s.io/v1alpha1/namespaces/default";
const EXT_BETA: &str = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default";
const STATE: &str = "api.agents.x-k8s.io/v1alpha1-sandbox-state";
const MERGE: &str = "application/merge-patch+json";

/// How long a test waits for the controllers before it fails: generous, since a loaded machine
/// is slow, and every wait returns as soon as its condition holds.
const WAIT: std::time::Duration = std::time::Duration::from_secs(60);

async fn start() -> (FakeKube, Client) {
    support::start(FakeKube::builder().kubelet(false)).await
}

/// A `v1alpha1` Sandbox with `replicas`, a label, an annotation and a volume claim template.
fn alpha_sandbox(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "agents.x-k8s.io/v1alpha1",
        "kind": "Sandbox",
        "metadata": { "name": name, "labels": { "team": "a" }, "annotations": { "note": "kept" } },
        "spec": {
            "replicas": replicas,
            "podTemplate": {
                "metadata": { "labels": { "app": "agent" } },
                "spec": { "containers": [{ "name": "c", "image": "busybox" }] },
            },
            "volumeClaimTemplates": [{ "metadata": { "name": "workspace" },
                "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } }],
            "shutdownPolicy": "Retain",
        },
    })
}

/// The `v1alpha1` form a stored `v1beta1` object keeps in `key`.
fn state(obj: &Value, key: &str) -> Value {
    let text = obj["metadata"]["annotations"][key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} on {obj}"));
    serde_json::from_str(text).expect("the state is JSON")
}

fn warning(reply: &support::Reply) -> Option<String> {
    reply
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

#[tokio::test]
async fn a_sandbox_created_at_v1alpha1_is_stored_as_v1beta1_and_reads_back_unchanged() {
    let (kube, c) = start().await;
    let created = c.json(Method::POST, ALPHA, &alpha_sandbox("s", 0)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json());
    assert_eq!(
        warning(&created).as_deref(),
        Some(
            "299 - \"agents.x-k8s.io/v1alpha1 Sandbox is deprecated; use agents.x-k8s.io/v1beta1 Sandbox instead\""
        )
    );
    let created = created.json();
    let beta = c.get(&format!("{BETA}/s")).await;
    assert_eq!(beta.status, StatusCode::OK);
    assert_eq!(warning(&beta), None, "v1beta1 is not deprecated");
    let beta = beta.json();
    let kept = state(&beta, STATE);
    insta::assert_json_snapshot!(
        "sandbox_created_at_v1alpha1",
        json!({
            "created (v1alpha1)": created,
            "stored (v1beta1) spec": beta["spec"],
            "stored labels": beta["metadata"]["labels"],
            "state annotation spec": kept["spec"],
        }),
        {
            ".*.metadata.uid" => "[uid]",
            ".*.metadata.creationTimestamp" => "[time]",
            ".*.metadata.resourceVersion" => "[rv]",
            ".*.metadata.managedFields[].time" => "[time]",
        }
    );
    assert_eq!(beta["spec"]["operatingMode"], "Suspended");
    assert_eq!(beta["metadata"]["annotations"]["note"], "kept");
    assert_eq!(kept["apiVersion"], "agents.x-k8s.io/v1alpha1");
    assert_eq!(kept["spec"]["replicas"], 0);
    assert!(kept["metadata"]["annotations"].get(STATE).is_none());
    let alpha = c.get(&format!("{ALPHA}/s")).await.json();
    assert_eq!(alpha["apiVersion"], "agents.x-k8s.io/v1alpha1");
    assert_eq!(alpha["spec"], created["spec"], "a lossless round trip");
    assert_eq!(
        alpha["metadata"]["annotations"],
        json!({ "note": "kept" }),
        "the state annotation does not reach a v1alpha1 client"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_sandbox_written_at_either_version_is_listed_and_patched_at_the_other() {
    let (kube, c) = start().await;
    let mut beta = support::sandbox("b");
    beta["spec"]["operatingMode"] = json!("Suspended");
    assert_eq!(
        c.json(Method::POST, BETA, &beta).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        c.json(Method::POST, ALPHA, &alpha_sandbox("a", 1))
            .await
            .status,
        StatusCode::CREATED
    );
    let list = c.get(ALPHA).await;
    assert!(warning(&list).is_some(), "a list is warned too");
    let list = list.json();
    assert_eq!(list["apiVersion"], "agents.x-k8s.io/v1alpha1");
    let replicas: Vec<(String, Value)> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            assert_eq!(i["apiVersion"], "agents.x-k8s.io/v1alpha1");
            (
                i["metadata"]["name"].as_str().unwrap_or("").to_string(),
                i["spec"]["replicas"].clone(),
            )
        })
        .collect();
    assert_eq!(
        replicas,
        [("a".to_string(), json!(1)), ("b".to_string(), json!(0))]
    );
    let modes: Vec<Value> = c.get(BETA).await.json()["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["spec"]["operatingMode"].clone())
        .collect();
    assert_eq!(modes, [json!("Running"), json!("Suspended")]);

    // A merge patch at v1alpha1 suspends "a"; at v1beta1 it resumes "b".
    let patched = c
        .patch(
            &format!("{ALPHA}/a"),
            MERGE,
            &json!({ "spec": { "replicas": 0 } }),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.json());
    assert_eq!(patched.json()["spec"]["replicas"], 0);
    let a = c.get(&format!("{BETA}/a")).await.json();
    assert_eq!(a["spec"]["operatingMode"], "Suspended");
    let resumed = c
        .patch(
            &format!("{BETA}/b"),
            MERGE,
            &json!({ "spec": { "operatingMode": "Running" } }),
        )
        .await;
    assert_eq!(resumed.status, StatusCode::OK);
    let b = c.get(&format!("{ALPHA}/b")).await.json();
    assert_eq!(b["spec"]["replicas"], 1);

    // Server-side apply at v1alpha1 owns fields of that version.
    let applied = c
        .patch(
            &format!("{ALPHA}/b?fieldManager=alpha-client&force=true"),
            "application/apply-patch+yaml",
            &json!({ "apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox",
                "metadata": { "name": "b" }, "spec": { "replicas": 0 } }),
        )
        .await;
    assert_eq!(applied.status, StatusCode::OK, "{}", applied.json());
    let applied = applied.json();
    assert_eq!(applied["spec"]["replicas"], 0);
    let manager = applied["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .find(|m| m["manager"] == "alpha-client")
        .cloned()
        .expect("the applier's entry");
    assert_eq!(manager["apiVersion"], "agents.x-k8s.io/v1alpha1");
    let b = c.get(&format!("{BETA}/b")).await.json();
    assert_eq!(b["spec"]["operatingMode"], "Suspended");
    kube.shutdown().await;
}

#[tokio::test]
async fn the_v1alpha1_scale_subresource_suspends_a_sandbox() {
    let (kube, c) = start().await;
    c.json(Method::POST, ALPHA, &alpha_sandbox("s", 1)).await;
    let scale = c.get(&format!("{ALPHA}/s/scale")).await;
    assert_eq!(scale.status, StatusCode::OK, "{}", scale.json());
    let scale = scale.json();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 1);
    // The Scale carries the Sandbox's resourceVersion, and the controllers write the Sandbox's
    // status apart from this test: the write is a read-modify-write, retried on a conflict.
    let path = format!("{ALPHA}/s/scale");
    let put = c
        .read_modify_put(&path, &path, |scale| scale["spec"]["replicas"] = json!(0))
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.json());
    assert_eq!(put.json()["spec"]["replicas"], 0);
    let beta = c.get(&format!("{BETA}/s")).await.json();
    assert_eq!(beta["spec"]["operatingMode"], "Suspended");
    let none = c.get(&format!("{BETA}/s/scale")).await;
    assert_eq!(none.status, StatusCode::NOT_FOUND, "v1beta1 has no scale");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_v1alpha1_watch_sees_objects_written_at_v1beta1_in_v1alpha1() {
    let (kube, c) = start().await;
    let resp = c
        .send(Method::GET, &format!("{ALPHA}?watch=1"), None, Vec::new())
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let mut beta = support::sandbox("w");
    beta["spec"]["operatingMode"] = json!("Suspended");
    assert_eq!(
        c.json(Method::POST, BETA, &beta).await.status,
        StatusCode::CREATED
    );
    let lines = read_lines(&mut body, 1, &mut buf).await;
    let added = lines.first().expect("an event");
    assert_eq!(added["type"], "ADDED");
    assert_eq!(added["object"]["apiVersion"], "agents.x-k8s.io/v1alpha1");
    assert_eq!(added["object"]["spec"]["replicas"], 0);
    assert!(added["object"]["spec"].get("operatingMode").is_none());
    kube.shutdown().await;
}

#[tokio::test]
async fn a_status_written_at_v1alpha1_reaches_v1beta1_without_its_alpha_only_fields() {
    let (kube, c) = start().await;
    c.json(Method::POST, ALPHA, &alpha_sandbox("s", 0)).await;
    // The controllers write the status apart from this test: let them finish their first
    // round, and retry the read-modify-write should one of theirs still come in between.
    assert!(kube.controllers_settled(WAIT).await);
    let written = c
        .read_modify_put(
            &format!("{ALPHA}/s"),
            &format!("{ALPHA}/s/status"),
            |alpha| {
                alpha["status"]["serviceFQDN"] = json!("s.default.svc.cluster.local");
                alpha["status"]["replicas"] = json!(0);
            },
        )
        .await;
    assert_eq!(written.status, StatusCode::OK, "{}", written.json());
    let written = written.json();
    assert_eq!(written["apiVersion"], "agents.x-k8s.io/v1alpha1");
    assert_eq!(
        written["status"]["serviceFQDN"],
        "s.default.svc.cluster.local"
    );
    // The controllers own the status from here on; the state annotation keeps what was sent.
    let beta = c.get(&format!("{BETA}/s")).await.json();
    assert!(beta["status"].get("replicas").is_none(), "no v1beta1 field");
    assert_eq!(
        state(&beta, STATE)["status"]["serviceFQDN"],
        "s.default.svc.cluster.local"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_claim_without_a_named_pool_points_at_a_shadow_pool_and_reads_back_as_sent() {
    let (kube, c) = start().await;
    let claim = json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1alpha1", "kind": "SandboxClaim",
        "metadata": { "name": "c" },
        "spec": { "sandboxTemplateRef": { "name": "t" } },
    });
    let created = c
        .json(Method::POST, &format!("{EXT_ALPHA}/sandboxclaims"), &claim)
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json());
    assert_eq!(
        warning(&created).as_deref(),
        Some(
            "299 - \"extensions.agents.x-k8s.io/v1alpha1 SandboxClaim is deprecated; use extensions.agents.x-k8s.io/v1beta1 SandboxClaim instead\""
        )
    );
    let created = created.json();
    assert_eq!(
        created["spec"]["warmpool"], "default",
        "the v1alpha1 default"
    );
    let beta = c.get(&format!("{EXT_BETA}/sandboxclaims/c")).await.json();
    assert_eq!(
        beta["spec"]["warmPoolRef"],
        json!({ "name": "shadow-pool-t" })
    );
    let alpha = c.get(&format!("{EXT_ALPHA}/sandboxclaims/c")).await.json();
    assert_eq!(alpha["spec"]["sandboxTemplateRef"], json!({ "name": "t" }));
    assert_eq!(alpha["spec"]["warmpool"], "default");
    // No one creates the shadow pool: the v1beta1 controller finds no pool, as upstream's does.
    let ready = |c: &Value| {
        c["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Ready")
            .cloned()
    };
    kube.wait_for("sandboxclaims", "default", "c", WAIT, |c| {
        c.and_then(ready).is_some()
    })
    .await
    .expect("the claim is reconciled");
    let alpha = c.get(&format!("{EXT_ALPHA}/sandboxclaims/c")).await.json();
    let condition = ready(&alpha).expect("Ready at v1alpha1 too");
    assert_eq!(condition["reason"], "WarmPoolNotFound");
    assert_eq!(
        condition["message"],
        "SandboxWarmPool \"shadow-pool-t\" not found"
    );
    kube.shutdown().await;
}

/// Plays the kubelet: the pod `name` runs, ready, at `ip`.
async fn run_pod(c: &Client, name: &str, ip: &str) {
    let pod = format!("/api/v1/namespaces/default/pods/{name}");
    c.patch(&pod, MERGE, &json!({ "spec": { "nodeName": "node-a" } }))
        .await;
    let r = c
        .patch(
            &format!("{pod}/status"),
            MERGE,
            &json!({ "status": {
                "phase": "Running",
                "conditions": [
                    { "type": "PodScheduled", "status": "True" },
                    { "type": "Ready", "status": "True" },
                ],
                "podIP": ip,
                "podIPs": [{ "ip": ip }],
            } }),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
}

async fn wait(kube: &FakeKube, resource: &str, name: &str, pred: impl Fn(&Value) -> bool) -> Value {
    match kube
        .wait_for(resource, "default", name, WAIT, |o| o.is_some_and(&pred))
        .await
    {
        Ok(v) => v.unwrap_or_default(),
        Err(e) => panic!("{resource}/{name}: {e}; last seen {:?}", e.last),
    }
}

#[tokio::test]
async fn a_v1alpha1_claim_on_a_v1alpha1_pool_adopts_a_warm_member_and_reads_back_as_sent() {
    let (kube, c) = start().await;
    let template = json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1alpha1", "kind": "SandboxTemplate",
        "metadata": { "name": "t" },
        "spec": { "podTemplate": { "spec": { "containers": [{ "name": "c", "image": "busybox" }] } } },
    });
    let r = c
        .json(
            Method::POST,
            &format!("{EXT_ALPHA}/sandboxtemplates"),
            &template,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let pool = json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1alpha1", "kind": "SandboxWarmPool",
        "metadata": { "name": "wp" },
        "spec": { "replicas": 1, "sandboxTemplateRef": { "name": "t" } },
    });
    let r = c
        .json(
            Method::POST,
            &format!("{EXT_ALPHA}/sandboxwarmpools"),
            &pool,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    wait(&kube, "sandboxwarmpools", "wp", |p| {
        p["status"]["replicas"] == 1
    })
    .await;
    let members = c.get(BETA).await.json();
    let member = members["items"][0]["metadata"]["name"]
        .as_str()
        .expect("a member")
        .to_string();
    assert!(member.starts_with("wp-"), "{member}");
    wait(&kube, "pods", &member, |_| true).await;
    run_pod(&c, &member, "10.0.7.1").await;
    wait(&kube, "sandboxwarmpools", "wp", |p| {
        p["status"]["readyReplicas"] == 1
    })
    .await;

    let claim = json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1alpha1", "kind": "SandboxClaim",
        "metadata": { "name": "mine" },
        "spec": { "sandboxTemplateRef": { "name": "t" }, "warmpool": "wp" },
    });
    let r = c
        .json(Method::POST, &format!("{EXT_ALPHA}/sandboxclaims"), &claim)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    wait(&kube, "sandboxclaims", "mine", |c| {
        c["status"]["sandbox"]["name"] == member.as_str()
    })
    .await;
    let beta = c
        .get(&format!("{EXT_BETA}/sandboxclaims/mine"))
        .await
        .json();
    assert_eq!(beta["spec"]["warmPoolRef"], json!({ "name": "wp" }));
    let alpha = c
        .get(&format!("{EXT_ALPHA}/sandboxclaims/mine"))
        .await
        .json();
    assert_eq!(alpha["spec"]["warmpool"], "wp");
    assert_eq!(alpha["spec"]["sandboxTemplateRef"], json!({ "name": "t" }));
    assert_eq!(alpha["status"]["sandbox"]["name"], member.as_str());
    assert_eq!(alpha["status"]["sandbox"]["podIPs"], json!(["10.0.7.1"]));
    let pool = c
        .get(&format!("{EXT_ALPHA}/sandboxwarmpools/wp"))
        .await
        .json();
    assert_eq!(pool["spec"]["replicas"], 1);
    assert!(pool["metadata"].get("annotations").is_none());
    kube.shutdown().await;
}

#[tokio::test]
async fn a_template_and_a_pool_written_at_v1beta1_read_at_v1alpha1() {
    let (kube, c) = start().await;
    let template = json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
        "metadata": { "name": "t" },
        "spec": { "podTemplate": { "spec": { "containers": [{ "name": "c", "image": "busybox" }] } },
            "volumeClaimTemplatesPolicy": "Allowed" },
    });
    let r = c
        .json(
            Method::POST,
            &format!("{EXT_BETA}/sandboxtemplates"),
            &template,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let alpha = c
        .get(&format!("{EXT_ALPHA}/sandboxtemplates/t"))
        .await
        .json();
    assert_eq!(
        alpha["metadata"]["annotations"]["api.agents.x-k8s.io/v1beta1-volume-claim-templates-policy"],
        "Allowed"
    );
    let pool = json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
        "metadata": { "name": "p" },
        "spec": { "sandboxTemplateRef": { "name": "t" }, "replicas": 0 },
    });
    let r = c
        .json(Method::POST, &format!("{EXT_BETA}/sandboxwarmpools"), &pool)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let alpha = c
        .get(&format!("{EXT_ALPHA}/sandboxwarmpools/p"))
        .await
        .json();
    assert_eq!(alpha["apiVersion"], "extensions.agents.x-k8s.io/v1alpha1");
    assert_eq!(
        alpha["spec"],
        json!({ "replicas": 0, "sandboxTemplateRef": { "name": "t" } })
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_state_annotation_that_is_not_json_fails_every_v1alpha1_read_of_it() {
    let (kube, c) = start().await;
    let mut broken = support::sandbox("x");
    broken["metadata"]["annotations"] = json!({ STATE: "{" });
    assert_eq!(
        c.json(Method::POST, BETA, &broken).await.status,
        StatusCode::CREATED
    );
    for path in [format!("{ALPHA}/x"), ALPHA.to_string()] {
        let r = c.get(&path).await;
        assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        let message = r.json()["message"].as_str().unwrap_or("").to_string();
        assert!(
            message.starts_with(
                "conversion webhook for agents.x-k8s.io/v1beta1, Kind=Sandbox failed: failed to unmarshal v1alpha1 Sandbox state: "
            ),
            "{message}"
        );
    }
    assert_eq!(c.get(&format!("{BETA}/x")).await.status, StatusCode::OK);
    kube.shutdown().await;
}

#[tokio::test]
async fn discovery_serves_both_versions_and_prefers_v1beta1() {
    let (kube, c) = start().await;
    for group in ["agents.x-k8s.io", "extensions.agents.x-k8s.io"] {
        let doc = c.get(&format!("/apis/{group}")).await.json();
        let versions: Vec<&str> = doc["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .filter_map(|v| v["version"].as_str())
            .collect();
        assert_eq!(versions, ["v1beta1", "v1alpha1"], "{group}");
        assert_eq!(doc["preferredVersion"]["version"], "v1beta1");
        let alpha = c.get(&format!("/apis/{group}/v1alpha1")).await;
        assert_eq!(alpha.status, StatusCode::OK);
        assert!(
            alpha.json()["resources"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        );
    }
    let openapi = c.get("/openapi/v3/apis/agents.x-k8s.io/v1alpha1").await;
    assert_eq!(openapi.status, StatusCode::OK);
    let schemas = openapi.json()["components"]["schemas"].clone();
    assert!(
        schemas
            .as_object()
            .is_some_and(|s| s.keys().any(|k| k.ends_with("v1alpha1.Sandbox"))),
        "{schemas}"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn writes_at_v1alpha1_leave_v1beta1_the_only_stored_version() {
    let (kube, c) = start().await;
    c.json(Method::POST, ALPHA, &alpha_sandbox("s", 1)).await;
    let crd = c
        .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sandboxes.agents.x-k8s.io")
        .await
        .json();
    assert_eq!(crd["status"]["storedVersions"], json!(["v1beta1"]));
    kube.shutdown().await;
}

#[tokio::test]
async fn without_the_controllers_a_v1alpha1_request_fails_as_with_the_webhook_down() {
    let kube = FakeKube::builder()
        .controllers(false)
        .kubelet(false)
        .start()
        .await
        .expect("fakekube starts");
    let c = Client::new(&kube);
    let r = c.json(Method::POST, ALPHA, &alpha_sandbox("s", 1)).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.json()["message"],
        "conversion webhook for agents.x-k8s.io/v1alpha1, Kind=Sandbox failed: Post \"https://agent-sandbox-webhook-service.agent-sandbox-system.svc:443/convert?timeout=30s\": service \"agent-sandbox-webhook-service\" not found"
    );
    assert_eq!(
        c.get(BETA).await.json()["items"],
        json!([]),
        "nothing stored"
    );
    kube.shutdown().await;
}

/// kubectl 1.33 names the deprecated version with `<plural>.<version>.<group>`, prints the
/// server's deprecation warning, and reads an object it applied at `v1alpha1` at the
/// preferred `v1beta1` by default.
#[test]
fn kubectl_reads_and_writes_the_deprecated_version_with_its_warning() {
    let Some(bin) = support::kubectl::installed(33) else {
        return;
    };
    let process = support::process::Process::start(&[]);
    let k = support::kubectl::Kubectl {
        bin,
        kubeconfig: process.kubeconfig.clone(),
    };
    let manifest = process.dir().join("alpha.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: agents.x-k8s.io/v1alpha1\nkind: Sandbox\nmetadata:\n  name: s\nspec:\n  replicas: 0\n  podTemplate:\n    spec:\n      containers:\n      - name: c\n        image: busybox\n",
    )
    .expect("a manifest");
    let manifest = manifest.to_string_lossy().into_owned();
    let warning = "Warning: agents.x-k8s.io/v1alpha1 Sandbox is deprecated; use agents.x-k8s.io/v1beta1 Sandbox instead";
    k.run(&["apply", "-f", &manifest])
        .success()
        .stderr_has(warning)
        .stdout_is("sandbox.agents.x-k8s.io/s created\n");
    k.run(&[
        "get",
        "sandboxes.v1alpha1.agents.x-k8s.io",
        "s",
        "-o",
        "jsonpath={.apiVersion} {.spec.replicas}",
    ])
    .success()
    .stderr_has(warning)
    .stdout_is("agents.x-k8s.io/v1alpha1 0");
    k.run(&[
        "get",
        "sandboxes",
        "s",
        "-o",
        "jsonpath={.apiVersion} {.spec.operatingMode}",
    ])
    .success()
    .stdout_is("agents.x-k8s.io/v1beta1 Suspended");
    k.run(&["apply", "-f", &manifest])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/s unchanged\n");
    let table = k
        .run(&["get", "sandboxes.v1alpha1.agents.x-k8s.io"])
        .success();
    let header: Vec<&str> = table
        .stdout
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "AGE"], "v1alpha1 has no printer columns");
}

/// kube-rs with a `DynamicObject` at `v1alpha1`: create, get and list in that version.
#[tokio::test]
async fn kube_rs_uses_the_deprecated_version_through_a_dynamic_object() {
    use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
    let (kube, _) = start().await;
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&kube.kubeconfig()).expect("the kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("kube accepts the kubeconfig");
    let client = kube::Client::try_from(config).expect("kube builds a client");
    let alpha = ApiResource {
        group: "agents.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "agents.x-k8s.io/v1alpha1".into(),
        kind: "Sandbox".into(),
        plural: "sandboxes".into(),
    };
    let api: Api<DynamicObject> = Api::default_namespaced_with(client, &alpha);
    let obj: DynamicObject =
        serde_json::from_value(alpha_sandbox("k", 1)).expect("a DynamicObject");
    let created = api
        .create(&PostParams::default(), &obj)
        .await
        .expect("created at v1alpha1");
    assert_eq!(created.data["spec"]["replicas"], 1);
    let got = api.get("k").await.expect("read at v1alpha1");
    assert_eq!(
        got.types.map(|t| t.api_version).as_deref(),
        Some("agents.x-k8s.io/v1alpha1")
    );
    assert_eq!(got.data["spec"]["shutdownPolicy"], "Retain");
    let list = api
        .list(&ListParams::default())
        .await
        .expect("listed at v1alpha1");
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].data["spec"]["replicas"], 1);
    kube.shutdown().await;
}
