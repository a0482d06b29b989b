//! The emulated agent-sandbox controllers, observed through the API as a client sees them.
//! The kubelet is off: the tests play it by writing pod status. Every wait is driven by the
//! store's change notifications (`FakeKube::wait_for`), never by a fixed sleep.

mod support;

use fakekube::FakeKube;
use http::Method;
use serde_json::{Value, json};
use std::time::Duration;
use support::Client;

/// How long a test waits for a condition before it fails: generous, since a loaded machine is
/// slow, and every wait returns as soon as its condition holds.
const WAIT: Duration = Duration::from_secs(60);
const SB: &str = "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes";
const EXT: &str = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default";
const HASH_LABEL: &str = "agents.x-k8s.io/sandbox-name-hash";
const POOL_LABEL: &str = "agents.x-k8s.io/warm-pool-sandbox";
const REF_HASH_LABEL: &str = "agents.x-k8s.io/sandbox-template-ref-hash";
const MERGE: &str = "application/merge-patch+json";

async fn start() -> (FakeKube, Client) {
    support::start(FakeKube::builder().kubelet(false)).await
}

/// FNV-1a, 8 hex digits, written independently of the server's.
fn fnv(s: &str) -> String {
    let h = s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("{h:08x}")
}

fn cond<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// `(status, reason, message)` of a condition.
fn cond_of(obj: &Value, kind: &str) -> Option<(String, String, String)> {
    cond(obj, kind).map(|c| {
        (
            c["status"].as_str().unwrap_or("").to_string(),
            c["reason"].as_str().unwrap_or("").to_string(),
            c["message"].as_str().unwrap_or("").to_string(),
        )
    })
}

fn has_reason(obj: Option<&Value>, kind: &str, reason: &str) -> bool {
    obj.and_then(|o| cond(o, kind))
        .is_some_and(|c| c["reason"] == reason)
}

fn triple(status: &str, reason: &str, message: &str) -> Option<(String, String, String)> {
    Some((status.into(), reason.into(), message.into()))
}

async fn wait(
    kube: &FakeKube,
    resource: &str,
    name: &str,
    what: &str,
    pred: impl Fn(Option<&Value>) -> bool,
) -> Value {
    match kube.wait_for(resource, "default", name, WAIT, pred).await {
        Ok(v) => v.unwrap_or(Value::Null),
        Err(e) => panic!(
            "{what}: {e}; last seen: {:#}",
            e.last.clone().unwrap_or_default()
        ),
    }
}

/// The Event with `reason` about the object named `involved`, once written.
async fn event(kube: &FakeKube, involved: &str, reason: &str) -> Value {
    kube.wait_for_event("default", involved, reason, WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn wait_gone(kube: &FakeKube, resource: &str, name: &str) {
    wait(
        kube,
        resource,
        name,
        &format!("{resource}/{name} to go"),
        |o| o.is_none(),
    )
    .await;
}

async fn post(c: &Client, path: &str, body: Value) -> Value {
    let reply = c.json(Method::POST, path, &body).await;
    assert!(
        reply.status.is_success(),
        "POST {path}: {} {}",
        reply.status,
        reply.json()
    );
    reply.json()
}

async fn merge(c: &Client, path: &str, body: Value) -> Value {
    let reply = c.patch(path, MERGE, &body).await;
    assert!(
        reply.status.is_success(),
        "PATCH {path}: {} {}",
        reply.status,
        reply.json()
    );
    reply.json()
}

async fn delete(c: &Client, path: &str) {
    let reply = c.call(Method::DELETE, path, None, Vec::new()).await;
    assert!(reply.status.is_success(), "DELETE {path}: {}", reply.status);
}

async fn list(c: &Client, path: &str) -> Vec<Value> {
    c.get(path).await.json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Plays the kubelet: the Pod is scheduled on `node`, Running, Ready, with `ip`.
async fn run_pod(c: &Client, name: &str, ip: &str, node: &str) {
    let pod = format!("/api/v1/namespaces/default/pods/{name}");
    merge(c, &pod, json!({ "spec": { "nodeName": node } })).await;
    merge(
        c,
        &format!("{pod}/status"),
        json!({ "status": {
            "phase": "Running",
            "conditions": [
                { "type": "PodScheduled", "status": "True" },
                { "type": "Ready", "status": "True" },
            ],
            "podIP": ip,
            "podIPs": [ { "ip": ip } ],
        } }),
    )
    .await;
}

/// Plays the kubelet once a terminating Pod's containers have stopped: it deletes the Pod with
/// grace period 0, which removes it.
async fn finish_pod(c: &Client, name: &str) {
    let path = format!("/api/v1/namespaces/default/pods/{name}?gracePeriodSeconds=0");
    delete(c, &path).await;
}

fn sandbox(name: &str, spec_extra: Value) -> Value {
    let mut spec = json!({
        "podTemplate": {
            "metadata": {
                "labels": { "app": "demo", "agents.x-k8s.io/claim-uid": "forged" },
                "annotations": { "note": "hi", "opentelemetry.io/trace-context": "t" },
            },
            "spec": { "containers": [ {
                "name": "main", "image": "busybox",
                "ports": [ { "containerPort": 8888 }, { "containerPort": 22, "name": "ssh" } ],
            } ] },
        },
    });
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        s.extend(extra.clone());
    }
    json!({ "apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": { "name": name }, "spec": spec })
}

fn ready_true(o: Option<&Value>) -> bool {
    o.and_then(|o| cond(o, "Ready"))
        .is_some_and(|c| c["status"] == "True")
}

#[tokio::test]
async fn sandbox_gets_a_pod_named_after_it_with_filtered_labels_the_name_hash_and_an_owner() {
    let (kube, c) = start().await;
    let created = post(&c, SB, sandbox("my-sandbox", json!({}))).await;
    let pod = wait(&kube, "pods", "my-sandbox", "the pod", |o| o.is_some()).await;
    assert_eq!(fnv("my-sandbox"), "374de8f5");
    let labels = &pod["metadata"]["labels"];
    assert_eq!(labels[HASH_LABEL], "374de8f5");
    assert_eq!(labels["app"], "demo");
    assert!(
        labels.get("agents.x-k8s.io/claim-uid").is_none(),
        "{labels}"
    );
    let ann = &pod["metadata"]["annotations"];
    assert_eq!(ann["note"], "hi");
    assert_eq!(ann["agents.x-k8s.io/propagated-labels"], "app");
    assert_eq!(ann["agents.x-k8s.io/propagated-annotations"], "note");
    assert!(ann.get("opentelemetry.io/trace-context").is_none());
    assert_eq!(
        pod["metadata"]["ownerReferences"],
        json!([{
            "apiVersion": "agents.x-k8s.io/v1beta1",
            "kind": "Sandbox",
            "name": "my-sandbox",
            "uid": created["metadata"]["uid"],
            "controller": true,
            "blockOwnerDeletion": true,
        }])
    );
    let sb = wait(&kube, "sandboxes", "my-sandbox", "first status", |o| {
        o.and_then(|o| cond(o, "Ready")).is_some()
    })
    .await;
    assert_eq!(
        sb["metadata"]["annotations"]["agents.x-k8s.io/pod-name"],
        "my-sandbox"
    );
    assert_eq!(
        sb["status"]["selector"],
        "agents.x-k8s.io/sandbox-name-hash=374de8f5"
    );
    let types: Vec<&str> = sb["status"]["conditions"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(types, ["Suspended", "PodScheduled", "Ready"]);
    assert_eq!(
        cond_of(&sb, "Suspended"),
        triple("False", "NotSuspended", "Sandbox is not suspended")
    );
    assert_eq!(
        cond_of(&sb, "PodScheduled"),
        triple(
            "Unknown",
            "PodSchedulingUnknown",
            "Pod has not reported a PodScheduled condition yet"
        )
    );
    assert_eq!(
        cond_of(&sb, "Ready"),
        triple(
            "False",
            "DependenciesNotReady",
            "Pod exists with phase: Pending"
        )
    );
    assert!(
        sb["status"]["conditions"]
            .as_array()
            .is_some_and(|a| a.iter().all(|c| c["observedGeneration"] == 1))
    );
    assert!(sb["status"].get("serviceFQDN").is_none());
}

#[tokio::test]
async fn sandbox_is_ready_when_its_pod_runs_ready_with_ips_and_reports_them() {
    let (kube, c) = start().await;
    post(&c, SB, sandbox("sb1", json!({}))).await;
    wait(&kube, "pods", "sb1", "the pod", |o| o.is_some()).await;
    run_pod(&c, "sb1", "10.1.2.3", "node-a").await;
    let sb = wait(&kube, "sandboxes", "sb1", "Ready", ready_true).await;
    assert_eq!(
        cond_of(&sb, "Ready"),
        triple("True", "DependenciesReady", "Pod is Ready")
    );
    assert_eq!(
        cond_of(&sb, "PodScheduled"),
        triple("True", "PodScheduled", "")
    );
    assert_eq!(sb["status"]["podIPs"], json!(["10.1.2.3"]));
    assert_eq!(sb["status"]["nodeName"], "node-a");
}

#[tokio::test]
async fn volume_claim_templates_make_pvcs_named_template_dash_sandbox_mounted_in_the_pod() {
    let (kube, c) = start().await;
    let vct = json!({ "volumeClaimTemplates": [ {
        "metadata": { "name": "data", "labels": { "tier": "disk" }, "annotations": { "a": "b" } },
        "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } },
    } ] });
    let created = post(&c, SB, sandbox("sb2", vct)).await;
    let pvc = wait(
        &kube,
        "persistentvolumeclaims",
        "data-sb2",
        "the PVC",
        |o| o.is_some(),
    )
    .await;
    assert_eq!(pvc["metadata"]["labels"]["tier"], "disk");
    assert_eq!(pvc["metadata"]["labels"][HASH_LABEL], fnv("sb2"));
    assert_eq!(pvc["metadata"]["annotations"]["a"], "b");
    assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "1Gi");
    assert_eq!(
        pvc["metadata"]["ownerReferences"][0]["uid"],
        created["metadata"]["uid"]
    );
    let pod = wait(&kube, "pods", "sb2", "the pod", |o| o.is_some()).await;
    let volumes = pod["spec"]["volumes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        volumes
            .iter()
            .any(|v| v["name"] == "data" && v["persistentVolumeClaim"]["claimName"] == "data-sb2"),
        "{volumes:?}"
    );
}

#[tokio::test]
async fn service_true_makes_a_headless_service_false_deletes_it_and_unset_keeps_it() {
    let (kube, c) = start().await;
    post(&c, SB, sandbox("web", json!({ "service": true }))).await;
    let svc = wait(&kube, "services", "web", "the service", |o| o.is_some()).await;
    assert_eq!(svc["spec"]["clusterIP"], "None");
    assert_eq!(svc["spec"]["selector"], json!({ HASH_LABEL: fnv("web") }));
    assert_eq!(svc["metadata"]["labels"], json!({ HASH_LABEL: fnv("web") }));
    let ports: Vec<(String, i64)> = svc["spec"]["ports"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap_or("").to_string(),
                        p["targetPort"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        ports,
        [("ssh".to_string(), 22), ("p-8888-tcp".to_string(), 8888)]
    );
    assert_eq!(svc["metadata"]["ownerReferences"][0]["kind"], "Sandbox");
    run_pod(&c, "web", "10.0.0.9", "n").await;
    let sb = wait(&kube, "sandboxes", "web", "Ready", ready_true).await;
    assert_eq!(
        cond_of(&sb, "Ready"),
        triple("True", "DependenciesReady", "Pod is Ready; Service Exists")
    );
    assert_eq!(sb["status"]["service"], "web");
    assert_eq!(sb["status"]["serviceFQDN"], "web.default.svc.cluster.local");

    // Unset: the Service stays and is still reported.
    merge(
        &c,
        &format!("{SB}/web"),
        json!({ "spec": { "service": null } }),
    )
    .await;
    wait(&kube, "sandboxes", "web", "generation 2 observed", |o| {
        o.and_then(|o| cond(o, "Ready"))
            .is_some_and(|c| c["observedGeneration"] == 2)
    })
    .await;
    assert!(kube.get("services", "default", "web").is_some());
    let sb = kube.get("sandboxes", "default", "web").unwrap_or_default();
    assert_eq!(sb["status"]["service"], "web");

    // False: the Service goes and the status forgets it.
    merge(
        &c,
        &format!("{SB}/web"),
        json!({ "spec": { "service": false } }),
    )
    .await;
    wait_gone(&kube, "services", "web").await;
    let sb = wait(&kube, "sandboxes", "web", "service status cleared", |o| {
        o.is_some_and(|o| o["status"].get("serviceFQDN").is_none())
    })
    .await;
    assert!(sb["status"].get("service").is_none());
    assert_eq!(
        cond_of(&sb, "Ready"),
        triple("True", "DependenciesReady", "Pod is Ready")
    );
}

#[tokio::test]
async fn suspending_deletes_the_pod_and_keeps_service_and_pvcs_and_resuming_makes_a_new_pod() {
    let (kube, c) = start().await;
    let vct = json!({ "service": true, "volumeClaimTemplates": [ {
        "metadata": { "name": "home" },
        "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } },
    } ] });
    post(&c, SB, sandbox("susp", vct)).await;
    let first = wait(&kube, "pods", "susp", "the pod", |o| o.is_some()).await;
    run_pod(&c, "susp", "10.0.0.5", "n1").await;
    wait(&kube, "sandboxes", "susp", "Ready", ready_true).await;

    merge(
        &c,
        &format!("{SB}/susp"),
        json!({ "spec": { "operatingMode": "Suspended" } }),
    )
    .await;
    // The pod terminates (no kubelet here ends it): the sandbox says so and keeps its IPs.
    let pod = wait(&kube, "pods", "susp", "a terminating pod", |o| {
        o.is_some_and(|o| o["metadata"].get("deletionTimestamp").is_some())
    })
    .await;
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
    let sb = wait(&kube, "sandboxes", "susp", "suspending", |o| {
        has_reason(o, "Suspended", "PodTerminating")
    })
    .await;
    assert_eq!(
        cond_of(&sb, "Suspended"),
        triple(
            "False",
            "PodTerminating",
            "Pod is terminating. Sandbox is suspending"
        )
    );
    assert_eq!(
        cond_of(&sb, "Ready"),
        triple("False", "SandboxSuspended", "Sandbox is suspending")
    );
    assert_eq!(sb["status"]["podIPs"], json!(["10.0.0.5"]));
    finish_pod(&c, "susp").await;
    wait_gone(&kube, "pods", "susp").await;
    let sb = wait(&kube, "sandboxes", "susp", "suspended", |o| {
        o.and_then(|o| cond(o, "Suspended"))
            .is_some_and(|c| c["status"] == "True")
    })
    .await;
    assert_eq!(
        cond_of(&sb, "Suspended"),
        triple(
            "True",
            "PodTerminated",
            "Pod has been terminated. Sandbox is suspended"
        )
    );
    assert_eq!(
        cond_of(&sb, "Ready"),
        triple("False", "SandboxSuspended", "Sandbox is suspended")
    );
    assert!(cond(&sb, "PodScheduled").is_none());
    assert!(sb["status"].get("podIPs").is_none());
    assert!(
        sb["metadata"]["annotations"]
            .get("agents.x-k8s.io/pod-name")
            .is_none()
    );
    assert_eq!(sb["status"]["service"], "susp");
    assert!(kube.get("services", "default", "susp").is_some());
    assert!(
        kube.get("persistentvolumeclaims", "default", "home-susp")
            .is_some()
    );

    merge(
        &c,
        &format!("{SB}/susp"),
        json!({ "spec": { "operatingMode": "Running" } }),
    )
    .await;
    let second = wait(&kube, "pods", "susp", "a new pod", |o| o.is_some()).await;
    assert_ne!(second["metadata"]["uid"], first["metadata"]["uid"]);
    let sb = wait(&kube, "sandboxes", "susp", "not suspended", |o| {
        o.and_then(|o| cond(o, "Suspended"))
            .is_some_and(|c| c["reason"] == "NotSuspended")
    })
    .await;
    assert_eq!(
        cond(&sb, "Suspended").map(|c| &c["observedGeneration"]),
        Some(&json!(3))
    );
}

#[tokio::test]
async fn expired_retained_sandbox_loses_pod_and_service_keeps_conditions_and_revives_later() {
    let (kube, c) = start().await;
    post(&c, SB, sandbox("exp", json!({ "service": true }))).await;
    wait(&kube, "pods", "exp", "the pod", |o| o.is_some()).await;
    run_pod(&c, "exp", "10.0.0.7", "n").await;
    wait(&kube, "sandboxes", "exp", "Ready", ready_true).await;

    merge(
        &c,
        &format!("{SB}/exp"),
        json!({ "spec": { "shutdownTime": "2020-01-01T00:00:00Z" } }),
    )
    .await;
    wait(&kube, "pods", "exp", "a terminating pod", |o| {
        o.is_some_and(|o| o["metadata"].get("deletionTimestamp").is_some())
    })
    .await;
    finish_pod(&c, "exp").await;
    wait_gone(&kube, "pods", "exp").await;
    wait_gone(&kube, "services", "exp").await;
    let sb = wait(&kube, "sandboxes", "exp", "status cleared", |o| {
        o.is_some_and(|o| o["status"].get("selector").is_none())
    })
    .await;
    assert_eq!(
        cond_of(&sb, "Ready"),
        triple("False", "SandboxExpired", "Sandbox has expired")
    );
    let keys: Vec<&String> = sb["status"]
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["conditions"]);
    assert!(cond(&sb, "PodScheduled").is_none());

    merge(
        &c,
        &format!("{SB}/exp"),
        json!({ "spec": { "shutdownTime": "2999-01-01T00:00:00Z" } }),
    )
    .await;
    wait(&kube, "pods", "exp", "a revived pod", |o| o.is_some()).await;
    wait(&kube, "services", "exp", "a revived service", |o| {
        o.is_some()
    })
    .await;
}

#[tokio::test]
async fn shutdown_time_with_delete_policy_removes_the_sandbox_and_its_children_when_it_passes() {
    // On a manual clock, the shutdown time passes only once the PVC is there, however slowly
    // the machine lets the controllers make it.
    let (kube, c) = start_on_a_manual_clock().await;
    let at = whole_second_after(&kube, 2);
    let vct = json!({
        "shutdownTime": at,
        "shutdownPolicy": "Delete",
        "volumeClaimTemplates": [ {
            "metadata": { "name": "d" },
            "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } },
        } ],
    });
    post(&c, SB, sandbox("doomed", vct)).await;
    wait(
        &kube,
        "persistentvolumeclaims",
        "d-doomed",
        "the PVC",
        |o| o.is_some(),
    )
    .await;
    settle(&kube).await;
    kube.advance_clock(Duration::from_secs(3));
    wait_gone(&kube, "sandboxes", "doomed").await;
    wait_gone(&kube, "pods", "doomed").await;
    wait_gone(&kube, "persistentvolumeclaims", "d-doomed").await;
    assert_eq!(kube.leaks(), Vec::<String>::new());
}

/// Waits until the controllers (on their own thread) have nothing left to do at the current
/// time, so moving a manual clock next is not raced by a reconcile still due before it.
async fn settle(kube: &FakeKube) {
    assert!(
        kube.controllers_settled(WAIT).await,
        "the controllers did not settle"
    );
}

async fn start_on_a_manual_clock() -> (FakeKube, Client) {
    support::start(FakeKube::builder().kubelet(false).manual_clock()).await
}

/// The whole second at or before the cluster's time, plus `secs`, as `shutdownTime` is written.
fn whole_second_after(kube: &FakeKube, secs: i64) -> String {
    let now = time::OffsetDateTime::from(kube.now());
    let at = now.replace_nanosecond(0).unwrap_or(now) + time::Duration::seconds(secs);
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn expired(o: Option<&Value>) -> bool {
    has_reason(o, "Ready", "SandboxExpired")
}

#[tokio::test]
async fn a_quiet_sandbox_is_looked_at_again_two_seconds_after_its_last_pass_not_at_its_shutdown_time()
 {
    let (kube, c) = start_on_a_manual_clock().await;
    // At most 1 s away: upstream's pass before it asks to look again after max(remaining, 2 s).
    let at = whole_second_after(&kube, 1);
    post(&c, SB, sandbox("quiet", json!({ "shutdownTime": at }))).await;
    wait(&kube, "pods", "quiet", "the pod", |o| o.is_some()).await;
    settle(&kube).await;

    kube.advance_clock(Duration::from_millis(1500));
    // A barrier: once the controllers have made another Sandbox's pod, they have looked at
    // their deadlines on the advanced clock.
    post(&c, SB, sandbox("barrier", json!({}))).await;
    wait(&kube, "pods", "barrier", "the barrier's pod", |o| {
        o.is_some()
    })
    .await;
    let sb = c.get(&format!("{SB}/quiet")).await.json();
    assert!(
        !expired(Some(&sb)),
        "expired before its re-check: {:#}",
        sb["status"]
    );

    kube.advance_clock(Duration::from_millis(500));
    wait(
        &kube,
        "sandboxes",
        "quiet",
        "expiry at the re-check",
        expired,
    )
    .await;
}

#[tokio::test]
async fn a_change_to_a_sandbox_after_its_shutdown_time_expires_it_at_once() {
    let (kube, c) = start_on_a_manual_clock().await;
    let at = whole_second_after(&kube, 1);
    post(&c, SB, sandbox("touched", json!({ "shutdownTime": at }))).await;
    wait(&kube, "pods", "touched", "the pod", |o| o.is_some()).await;
    settle(&kube).await;
    kube.advance_clock(Duration::from_millis(1500));
    merge(
        &c,
        &format!("{SB}/touched"),
        json!({ "metadata": { "labels": { "touched": "yes" } } }),
    )
    .await;
    wait(
        &kube,
        "sandboxes",
        "touched",
        "expiry on the change",
        expired,
    )
    .await;
}

fn template(name: &str, spec_extra: Value) -> Value {
    let mut spec = json!({
        "podTemplate": {
            "metadata": { "labels": { "role": "agent" } },
            "spec": { "containers": [ { "name": "main", "image": "busybox", "env": [ { "name": "BASE", "value": "1" } ] } ] },
        },
    });
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        s.extend(extra.clone());
    }
    json!({ "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate", "metadata": { "name": name }, "spec": spec })
}

fn pool(name: &str, template: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
        "kind": "SandboxWarmPool",
        "metadata": { "name": name },
        "spec": { "replicas": replicas, "sandboxTemplateRef": { "name": template } },
    })
}

fn claim(name: &str, pool: &str, spec_extra: Value) -> Value {
    let mut spec = json!({ "warmPoolRef": { "name": pool } });
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        s.extend(extra.clone());
    }
    json!({
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
        "kind": "SandboxClaim",
        "metadata": { "name": name, "labels": { "agents.x-k8s.io/created-by": "python-client" } },
        "spec": spec,
    })
}

/// The pool's members, as listed by its label.
async fn members(c: &Client, pool: &str) -> Vec<Value> {
    list(
        c,
        &format!("{SB}?labelSelector={POOL_LABEL}%3D{}", fnv(pool)),
    )
    .await
}

fn name_of(v: &Value) -> String {
    v["metadata"]["name"].as_str().unwrap_or("").to_string()
}

#[tokio::test]
async fn template_gets_its_ref_hash_label_and_a_managed_network_policy_until_unmanaged() {
    let (kube, c) = start().await;
    post(
        &c,
        &format!("{EXT}/sandboxtemplates"),
        template("py", json!({})),
    )
    .await;
    let tpl = wait(&kube, "sandboxtemplates", "py", "the label", |o| {
        o.is_some_and(|o| o["metadata"]["labels"][REF_HASH_LABEL] == fnv("py"))
    })
    .await;
    let np = wait(
        &kube,
        "networkpolicies",
        "py-network-policy",
        "the policy",
        |o| o.is_some(),
    )
    .await;
    assert_eq!(
        np["spec"]["podSelector"],
        json!({ "matchLabels": { REF_HASH_LABEL: fnv("py") } })
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(
        np["spec"]["egress"][0]["to"][0]["ipBlock"]["except"][3],
        "169.254.0.0/16"
    );
    assert_eq!(
        np["metadata"]["ownerReferences"][0]["uid"],
        tpl["metadata"]["uid"]
    );
    merge(
        &c,
        &format!("{EXT}/sandboxtemplates/py"),
        json!({ "spec": { "networkPolicyManagement": "Unmanaged" } }),
    )
    .await;
    wait_gone(&kube, "networkpolicies", "py-network-policy").await;
}

#[tokio::test]
async fn warm_pool_keeps_its_replicas_as_labelled_owned_members_and_reports_status_and_scale() {
    let (kube, c) = start().await;
    post(
        &c,
        &format!("{EXT}/sandboxtemplates"),
        template("t", json!({})),
    )
    .await;
    let p = post(&c, &format!("{EXT}/sandboxwarmpools"), pool("wp", "t", 2)).await;
    let status = wait(&kube, "sandboxwarmpools", "wp", "two members", |o| {
        o.is_some_and(|o| o["status"]["replicas"] == 2)
    })
    .await;
    assert_eq!(
        status["status"]["selector"],
        format!("{POOL_LABEL}={}", fnv("wp"))
    );
    assert_eq!(status["status"]["observedGeneration"], 1);
    assert!(status["status"].get("readyReplicas").is_none());
    let ms = members(&c, "wp").await;
    assert_eq!(ms.len(), 2);
    for m in &ms {
        let name = name_of(m);
        assert!(name.starts_with("wp-") && name.len() == 8, "{name}");
        let l = &m["metadata"]["labels"];
        assert_eq!(l[REF_HASH_LABEL], fnv("t"));
        assert_eq!(l["agents.x-k8s.io/launch-type"], "warm");
        assert_eq!(l["agents.x-k8s.io/created-by"], "controller");
        assert!(l["agents.x-k8s.io/sandbox-template-hash"].is_string());
        assert_eq!(
            m["metadata"]["annotations"]["agents.x-k8s.io/sandbox-template-ref"],
            "t"
        );
        assert_eq!(
            m["metadata"]["ownerReferences"][0]["uid"],
            p["metadata"]["uid"]
        );
        assert_eq!(
            m["metadata"]["ownerReferences"][0]["kind"],
            "SandboxWarmPool"
        );
        let pt = &m["spec"]["podTemplate"];
        assert_eq!(
            pt["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"],
            "true"
        );
        assert_eq!(pt["metadata"]["labels"]["role"], "agent");
        assert_eq!(pt["spec"]["automountServiceAccountToken"], false);
        assert_eq!(pt["spec"]["dnsPolicy"], "None");
    }
    let scale = c
        .get(&format!("{EXT}/sandboxwarmpools/wp/scale"))
        .await
        .json();
    assert_eq!(scale["status"]["replicas"], 2);
    assert_eq!(
        scale["status"]["selector"],
        format!("{POOL_LABEL}={}", fnv("wp"))
    );
    for (i, m) in ms.iter().enumerate() {
        let name = name_of(m);
        wait(&kube, "pods", &name, "member pod", |o| o.is_some()).await;
        let pod = kube.get("pods", "default", &name).unwrap_or_default();
        assert_eq!(pod["metadata"]["labels"][POOL_LABEL], fnv("wp"));
        run_pod(&c, &name, &format!("10.0.1.{i}"), "n").await;
    }
    wait(&kube, "sandboxwarmpools", "wp", "two ready", |o| {
        o.is_some_and(|o| o["status"]["readyReplicas"] == 2)
    })
    .await;
}

/// The template `t` (no extras) and the warm pool `wp` of one member, once the pool counts it.
async fn one_member_pool(kube: &FakeKube, c: &Client) {
    post(
        c,
        &format!("{EXT}/sandboxtemplates"),
        template("t", json!({})),
    )
    .await;
    post(c, &format!("{EXT}/sandboxwarmpools"), pool("wp", "t", 1)).await;
    wait(kube, "sandboxwarmpools", "wp", "a member", |o| {
        o.is_some_and(|o| o["status"]["replicas"] == 1)
    })
    .await;
}

#[tokio::test]
async fn warm_members_carry_upstreams_template_hashes() {
    let (kube, c) = start().await;
    one_member_pool(&kube, &c).await;
    let ms = members(&c, "wp").await;
    let labels = &ms[0]["metadata"]["labels"];
    // FNV-1a of the bytes Go's json.Marshal writes for this template's blueprint and pod
    // template (derived by hand in the controllers' gojson tests).
    assert_eq!(labels["agents.x-k8s.io/sandbox-template-hash"], "aa03a9d3");
    assert_eq!(
        labels["agents.x-k8s.io/sandbox-pod-template-hash"],
        "0ecad490"
    );
}

#[tokio::test]
async fn a_member_not_ready_is_deleted_when_the_pool_looks_again_two_seconds_after_its_grace() {
    let (kube, c) = start_on_a_manual_clock().await;
    one_member_pool(&kube, &c).await;
    let member = members(&c, "wp").await.remove(0);
    let stuck = name_of(&member);
    wait(&kube, "pods", &stuck, "the member's pod", |o| o.is_some()).await;

    // The grace is 5 min; the pool asked to look again 5 min 2 s after the member's
    // creationTimestamp (whole seconds, as its age is counted).
    let created = member["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
        })
        .expect("a creationTimestamp");
    let just_before = std::time::SystemTime::from(created) + Duration::from_millis(301_900);
    settle(&kube).await;
    kube.advance_clock(
        just_before
            .duration_since(kube.now())
            .expect("the clock is before the look"),
    );
    post(&c, SB, sandbox("barrier", json!({}))).await;
    wait(&kube, "pods", "barrier", "the barrier's pod", |o| {
        o.is_some()
    })
    .await;
    assert!(
        kube.get("sandboxes", "default", &stuck).is_some(),
        "the member went before the pool's post-grace look"
    );

    kube.advance_clock(Duration::from_millis(100));
    wait_gone(&kube, "sandboxes", &stuck).await;
}

#[tokio::test]
async fn warm_pool_scales_down_deleting_not_ready_members_first() {
    let (kube, c) = start().await;
    post(
        &c,
        &format!("{EXT}/sandboxtemplates"),
        template("t", json!({})),
    )
    .await;
    post(&c, &format!("{EXT}/sandboxwarmpools"), pool("wp", "t", 3)).await;
    wait(&kube, "sandboxwarmpools", "wp", "three members", |o| {
        o.is_some_and(|o| o["status"]["replicas"] == 3)
    })
    .await;
    let ms = members(&c, "wp").await;
    let keep = name_of(&ms[1]);
    wait(&kube, "pods", &keep, "member pod", |o| o.is_some()).await;
    run_pod(&c, &keep, "10.0.2.1", "n").await;
    wait(&kube, "sandboxwarmpools", "wp", "one ready", |o| {
        o.is_some_and(|o| o["status"]["readyReplicas"] == 1)
    })
    .await;
    let reply = c
        .patch(
            &format!("{EXT}/sandboxwarmpools/wp/scale"),
            MERGE,
            &json!({ "spec": { "replicas": 1 } }),
        )
        .await;
    assert!(reply.status.is_success(), "{}", reply.json());
    let p = wait(&kube, "sandboxwarmpools", "wp", "one member", |o| {
        o.is_some_and(|o| o["status"]["replicas"] == 1)
    })
    .await;
    assert_eq!(p["status"]["observedGeneration"], 2);
    let left: Vec<String> = members(&c, "wp").await.iter().map(name_of).collect();
    assert_eq!(left, [keep]);
}

/// A template, a pool of one, and its member running Ready on `node`; returns the member.
async fn ready_pool(kube: &FakeKube, c: &Client, tpl_extra: Value) -> Value {
    post(
        c,
        &format!("{EXT}/sandboxtemplates"),
        template("t", tpl_extra),
    )
    .await;
    post(c, &format!("{EXT}/sandboxwarmpools"), pool("wp", "t", 1)).await;
    wait(kube, "sandboxwarmpools", "wp", "a member", |o| {
        o.is_some_and(|o| o["status"]["replicas"] == 1)
    })
    .await;
    let m = members(c, "wp")
        .await
        .into_iter()
        .next()
        .unwrap_or_default();
    let name = name_of(&m);
    wait(kube, "pods", &name, "member pod", |o| o.is_some()).await;
    run_pod(c, &name, "10.0.3.1", "node-w").await;
    wait(kube, "sandboxwarmpools", "wp", "member ready", |o| {
        o.is_some_and(|o| o["status"]["readyReplicas"] == 1)
    })
    .await;
    kube.get("sandboxes", "default", &name).unwrap_or_default()
}

#[tokio::test]
async fn claim_adopts_a_ready_member_without_restarting_its_pod_and_the_pool_replaces_it() {
    let (kube, c) = start().await;
    let member = ready_pool(&kube, &c, json!({})).await;
    let name = name_of(&member);
    let pod_before = kube.get("pods", "default", &name).unwrap_or_default();
    let cl = post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim("mine", "wp", json!({})),
    )
    .await;
    let got = wait(&kube, "sandboxclaims", "mine", "claim Ready", ready_true).await;
    assert_eq!(got["status"]["sandbox"]["name"], name.as_str());
    assert_eq!(got["status"]["sandbox"]["podIPs"], json!(["10.0.3.1"]));
    assert_eq!(
        cond_of(&got, "Ready"),
        triple("True", "DependenciesReady", "Pod is Ready")
    );
    assert_eq!(
        cond(&got, "Ready").map(|c| &c["observedGeneration"]),
        Some(&json!(1))
    );
    assert_eq!(
        got["metadata"]["annotations"]["agents.x-k8s.io/sandbox-name"],
        name.as_str()
    );

    let sb = kube.get("sandboxes", "default", &name).unwrap_or_default();
    assert_eq!(
        sb["metadata"]["ownerReferences"],
        json!([{
            "apiVersion": "extensions.agents.x-k8s.io/v1beta1",
            "kind": "SandboxClaim",
            "name": "mine",
            "uid": cl["metadata"]["uid"],
            "controller": true,
            "blockOwnerDeletion": true,
        }])
    );
    let l = &sb["metadata"]["labels"];
    assert!(l.get(POOL_LABEL).is_none());
    assert!(l.get("agents.x-k8s.io/sandbox-template-hash").is_none());
    assert_eq!(l["agents.x-k8s.io/claim-uid"], cl["metadata"]["uid"]);
    assert_eq!(l["agents.x-k8s.io/created-by"], "python-client");
    assert_eq!(l["agents.x-k8s.io/launch-type"], "warm");
    assert_eq!(l[REF_HASH_LABEL], fnv("t"));
    let pt = &sb["spec"]["podTemplate"]["metadata"];
    assert!(pt.get("annotations").is_none(), "{pt}");
    assert_eq!(pt["labels"]["role"], "agent");
    assert_eq!(
        pt["labels"]["agents.x-k8s.io/claim-uid"],
        cl["metadata"]["uid"]
    );

    let pod = wait(&kube, "pods", &name, "pod relabelled", |o| {
        o.is_some_and(|p| p["metadata"]["labels"].get(POOL_LABEL).is_none())
    })
    .await;
    assert_eq!(pod["metadata"]["uid"], pod_before["metadata"]["uid"]);
    assert!(
        pod["metadata"]["annotations"]
            .get("cluster-autoscaler.kubernetes.io/safe-to-evict")
            .is_none()
    );
    assert_eq!(
        pod["metadata"]["labels"]["agents.x-k8s.io/created-by"],
        "python-client"
    );
    assert_eq!(pod["metadata"]["labels"][REF_HASH_LABEL], fnv("t"));

    wait(&kube, "sandboxwarmpools", "wp", "a replacement", |o| {
        o.is_some_and(|o| {
            o["status"]["replicas"] == 1 && o["status"].get("readyReplicas").is_none()
        })
    })
    .await;
    let fresh: Vec<String> = members(&c, "wp").await.iter().map(name_of).collect();
    assert_eq!(fresh.len(), 1);
    assert_ne!(fresh[0], name);
}

#[tokio::test]
async fn claim_with_env_cold_starts_a_sandbox_named_after_it_when_the_template_allows() {
    let (kube, c) = start().await;
    post(
        &c,
        &format!("{EXT}/sandboxtemplates"),
        template("t", json!({ "envVarsInjectionPolicy": "Allowed" })),
    )
    .await;
    post(&c, &format!("{EXT}/sandboxwarmpools"), pool("wp", "t", 0)).await;
    let cl = post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim(
            "cold",
            "wp",
            json!({ "env": [ { "name": "TOKEN", "value": "x" } ] }),
        ),
    )
    .await;
    let sb = wait(&kube, "sandboxes", "cold", "the cold sandbox", |o| {
        o.is_some()
    })
    .await;
    assert_eq!(
        sb["spec"]["podTemplate"]["spec"]["containers"][0]["env"],
        json!([{ "name": "BASE", "value": "1" }, { "name": "TOKEN", "value": "x" }])
    );
    let l = &sb["metadata"]["labels"];
    assert_eq!(l["agents.x-k8s.io/launch-type"], "cold");
    assert_eq!(l["agents.x-k8s.io/claim-uid"], cl["metadata"]["uid"]);
    assert_eq!(l[REF_HASH_LABEL], fnv("t"));
    assert_eq!(
        sb["metadata"]["annotations"]["agents.x-k8s.io/sandbox-template-ref"],
        "t"
    );
    assert_eq!(
        sb["metadata"]["ownerReferences"][0]["uid"],
        cl["metadata"]["uid"]
    );
    // The controllers run apart from the requests, so the claim may first show the Sandbox
    // before its Pod exists: wait for the status that mirrors the pending Pod.
    wait(&kube, "sandboxclaims", "cold", "mirrored status", |o| {
        o.is_some_and(|o| {
            o["status"]["sandbox"]["name"] == "cold"
                && cond_of(o, "Ready")
                    == triple(
                        "False",
                        "DependenciesNotReady",
                        "Pod exists with phase: Pending",
                    )
        })
    })
    .await;
    wait(&kube, "pods", "cold", "the pod", |o| o.is_some()).await;
    run_pod(&c, "cold", "10.0.4.4", "n").await;
    let got = wait(&kube, "sandboxclaims", "cold", "claim Ready", ready_true).await;
    assert_eq!(got["status"]["sandbox"]["podIPs"], json!(["10.0.4.4"]));
}

#[tokio::test]
async fn claim_env_is_refused_when_the_template_disallows_injection() {
    let (kube, c) = start().await;
    post(
        &c,
        &format!("{EXT}/sandboxtemplates"),
        template("t", json!({})),
    )
    .await;
    post(&c, &format!("{EXT}/sandboxwarmpools"), pool("wp", "t", 0)).await;
    post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim(
            "no",
            "wp",
            json!({ "env": [ { "name": "A", "value": "b" } ] }),
        ),
    )
    .await;
    let got = wait(&kube, "sandboxclaims", "no", "refusal", |o| {
        has_reason(o, "Ready", "EnvVarsInjectionRejected")
    })
    .await;
    assert_eq!(
        cond_of(&got, "Ready"),
        triple(
            "False",
            "EnvVarsInjectionRejected",
            "environment variable injection rejected: environment variable injection is not allowed by the template policy"
        )
    );
    assert!(kube.get("sandboxes", "default", "no").is_none());
}

#[tokio::test]
async fn claim_for_a_missing_pool_says_so() {
    let (kube, c) = start().await;
    post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim("lost", "nope", json!({})),
    )
    .await;
    let got = wait(&kube, "sandboxclaims", "lost", "WarmPoolNotFound", |o| {
        has_reason(o, "Ready", "WarmPoolNotFound")
    })
    .await;
    assert_eq!(
        cond_of(&got, "Ready"),
        triple(
            "False",
            "WarmPoolNotFound",
            "SandboxWarmPool \"nope\" not found"
        )
    );
    // Not bound: an empty `sandbox`, as upstream's struct field is written.
    assert_eq!(got["status"]["sandbox"], json!({}));
    // The pool appears: the claim cold-starts (its member never gets an IP).
    post(
        &c,
        &format!("{EXT}/sandboxtemplates"),
        template("t", json!({})),
    )
    .await;
    post(&c, &format!("{EXT}/sandboxwarmpools"), pool("nope", "t", 0)).await;
    wait(&kube, "sandboxes", "lost", "a cold sandbox", |o| {
        o.is_some()
    })
    .await;
    let ev = event(&kube, "lost", "SandboxProvisioned").await;
    assert_eq!(ev["message"], "Created Sandbox \"lost\"");
    assert_eq!(ev["action"], "Provisioning");
}

#[tokio::test]
async fn claim_cold_starts_when_pool_members_never_get_pod_ips() {
    let (kube, c) = start().await;
    one_member_pool(&kube, &c).await;
    post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim("late", "wp", json!({})),
    )
    .await;
    let sb = wait(&kube, "sandboxes", "late", "the cold sandbox", |o| {
        o.is_some()
    })
    .await;
    assert_eq!(
        sb["metadata"]["labels"]["agents.x-k8s.io/launch-type"],
        "cold"
    );
    assert_eq!(members(&c, "wp").await.len(), 1);
}

#[tokio::test]
async fn deleting_a_claim_garbage_collects_its_sandbox_pod_service_and_pvcs() {
    let (kube, c) = start().await;
    let tpl = json!({
        "service": true,
        "volumeClaimTemplatesPolicy": "Allowed",
    });
    post(&c, &format!("{EXT}/sandboxtemplates"), template("t", tpl)).await;
    post(&c, &format!("{EXT}/sandboxwarmpools"), pool("wp", "t", 0)).await;
    let vcts = json!({ "volumeClaimTemplates": [ {
        "metadata": { "name": "ws" },
        "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } },
    } ] });
    post(&c, &format!("{EXT}/sandboxclaims"), claim("gc", "wp", vcts)).await;
    wait(&kube, "pods", "gc", "the pod", |o| o.is_some()).await;
    wait(&kube, "services", "gc", "the service", |o| o.is_some()).await;
    wait(&kube, "persistentvolumeclaims", "ws-gc", "the PVC", |o| {
        o.is_some()
    })
    .await;
    let mut present = kube.leaks();
    present.sort();
    assert_eq!(
        present,
        [
            "persistentvolumeclaims/default/ws-gc",
            "pods/default/gc",
            "sandboxclaims/default/gc",
            "sandboxes/default/gc",
            "services/default/gc",
        ]
    );
    delete(&c, &format!("{EXT}/sandboxclaims/gc")).await;
    wait_gone(&kube, "sandboxes", "gc").await;
    wait_gone(&kube, "pods", "gc").await;
    wait_gone(&kube, "services", "gc").await;
    wait_gone(&kube, "persistentvolumeclaims", "ws-gc").await;
    assert_eq!(kube.leaks(), Vec::<String>::new());
}

#[tokio::test]
async fn expired_claim_with_retain_deletes_its_sandbox_and_stays_claim_expired() {
    let (kube, c) = start().await;
    post(
        &c,
        &format!("{EXT}/sandboxtemplates"),
        template("t", json!({ "envVarsInjectionPolicy": "Allowed" })),
    )
    .await;
    post(&c, &format!("{EXT}/sandboxwarmpools"), pool("wp", "t", 0)).await;
    let env = json!({ "env": [ { "name": "A", "value": "b" } ] });
    post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim("keep", "wp", env),
    )
    .await;
    wait(&kube, "sandboxes", "keep", "the sandbox", |o| o.is_some()).await;
    merge(
        &c,
        &format!("{EXT}/sandboxclaims/keep"),
        json!({ "spec": { "lifecycle": { "shutdownTime": "2020-01-01T00:00:00Z", "shutdownPolicy": "Retain" } } }),
    )
    .await;
    wait_gone(&kube, "sandboxes", "keep").await;
    let got = wait(
        &kube,
        "sandboxclaims",
        "keep",
        "sandbox status cleared",
        |o| o.is_some_and(|o| o["status"]["sandbox"].get("name").is_none()),
    )
    .await;
    assert_eq!(
        cond_of(&got, "Ready"),
        triple(
            "False",
            "ClaimExpired",
            "Claim expired. Sandbox cleanup initiated."
        )
    );
    assert_eq!(
        cond(&got, "Ready").map(|c| &c["observedGeneration"]),
        Some(&json!(2))
    );
    let ev = event(&kube, "keep", "ClaimExpired").await;
    assert_eq!(ev["type"], "Normal");
    assert_eq!(ev["action"], "Claim Expired");
    assert_eq!(ev["message"], "Claim expired");
    assert_eq!(ev["reportingComponent"], "sandboxclaim-controller");
    assert_eq!(ev["involvedObject"]["kind"], "SandboxClaim");
}

#[tokio::test]
async fn expired_claim_with_delete_or_delete_foreground_is_deleted_with_its_sandbox() {
    // On a manual clock, the claims expire only once their sandboxes are there, however slowly
    // the machine lets the controllers make them.
    let (kube, c) = start_on_a_manual_clock().await;
    post(
        &c,
        &format!("{EXT}/sandboxtemplates"),
        template("t", json!({ "envVarsInjectionPolicy": "Allowed" })),
    )
    .await;
    post(&c, &format!("{EXT}/sandboxwarmpools"), pool("wp", "t", 0)).await;
    for (name, policy) in [("del", "Delete"), ("fg", "DeleteForeground")] {
        let at = whole_second_after(&kube, 1);
        let spec = json!({
            "env": [ { "name": "A", "value": "b" } ],
            "lifecycle": { "shutdownTime": at, "shutdownPolicy": policy },
        });
        post(&c, &format!("{EXT}/sandboxclaims"), claim(name, "wp", spec)).await;
        wait(&kube, "sandboxes", name, "the sandbox", |o| o.is_some()).await;
    }
    settle(&kube).await;
    kube.advance_clock(Duration::from_secs(2));
    for name in ["del", "fg"] {
        wait_gone(&kube, "sandboxclaims", name).await;
        wait_gone(&kube, "sandboxes", name).await;
        wait_gone(&kube, "pods", name).await;
    }
    assert_eq!(kube.leaks(), Vec::<String>::new());
}

#[tokio::test]
async fn converged_controllers_write_nothing_more() {
    let (kube, c) = start().await;
    ready_pool(&kube, &c, json!({})).await;
    post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim("quiet", "wp", json!({})),
    )
    .await;
    wait(&kube, "sandboxclaims", "quiet", "claim Ready", ready_true).await;
    // Not ready yet: the pool counts the replacement, not the adopted member.
    wait(
        &kube,
        "sandboxwarmpools",
        "wp",
        "a replacement member",
        |o| {
            o.is_some_and(|o| {
                o["status"]["replicas"] == 1 && o["status"].get("readyReplicas").is_none()
            })
        },
    )
    .await;
    let fresh = members(&c, "wp")
        .await
        .into_iter()
        .next()
        .unwrap_or_default();
    let fresh = name_of(&fresh);
    wait(&kube, "pods", &fresh, "replacement pod", |o| o.is_some()).await;
    run_pod(&c, &fresh, "10.0.5.5", "n").await;
    wait(&kube, "sandboxwarmpools", "wp", "replacement ready", |o| {
        o.is_some_and(|o| o["status"]["readyReplicas"] == 1)
    })
    .await;
    // Let the last round of no-op reconciles run, then expect no write for a while.
    settle(&kube).await;
    let settled = kube.resource_version();
    let quiet = kube
        .wait_for(
            "sandboxclaims",
            "default",
            "quiet",
            Duration::from_millis(300),
            |_| kube.resource_version() > settled,
        )
        .await;
    assert!(
        quiet.is_err(),
        "the controllers kept writing: rv {settled} -> {}",
        kube.resource_version()
    );
}

#[tokio::test]
async fn an_adopting_claim_gets_its_event_and_first_observed_and_first_ready_annotations() {
    let (kube, c) = start().await;
    let member = ready_pool(&kube, &c, json!({})).await;
    let name = name_of(&member);
    post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim("mine", "wp", json!({})),
    )
    .await;
    wait(&kube, "sandboxclaims", "mine", "claim Ready", ready_true).await;
    let ev = event(&kube, "mine", "SandboxAdopted").await;
    assert_eq!(ev["type"], "Normal");
    assert_eq!(ev["action"], "Adoption");
    assert_eq!(ev["message"], format!("Adopted warm pool Sandbox {name:?}"));
    assert_eq!(ev["reportingComponent"], "sandboxclaim-controller");
    assert!(ev["eventTime"].is_string(), "{ev}");
    let got = wait(&kube, "sandboxclaims", "mine", "first-ready", |o| {
        o.is_some_and(|o| {
            o["metadata"]["annotations"]
                .get("agents.x-k8s.io/claim-first-ready-at")
                .is_some()
        })
    })
    .await;
    let notes = &got["metadata"]["annotations"];
    let parse = |key: &str| {
        notes[key]
            .as_str()
            .and_then(|s| {
                time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
            })
            .unwrap_or_else(|| panic!("{key} is not RFC 3339: {notes}"))
    };
    let observed = parse("agents.x-k8s.io/controller-first-observed-at");
    let ready = parse("agents.x-k8s.io/claim-first-ready-at");
    assert!(observed <= ready, "{notes}");
}

#[tokio::test]
async fn two_pods_owned_by_a_sandbox_give_one_multiple_pods_warning() {
    let (kube, c) = start().await;
    let sb = post(&c, SB, sandbox("two", json!({}))).await;
    let first = wait(&kube, "pods", "two", "the pod", |o| o.is_some()).await;
    let mut other = first.clone();
    other["metadata"] = json!({
        "name": "two-extra",
        "labels": first["metadata"]["labels"],
        "ownerReferences": first["metadata"]["ownerReferences"],
    });
    other.as_object_mut().map(|o| o.remove("status"));
    post(&c, "/api/v1/namespaces/default/pods", other).await;
    let got = wait(&kube, "sandboxes", "two", "MultiplePods", |o| {
        has_reason(o, "Ready", "MultiplePods")
    })
    .await;
    assert_eq!(got["metadata"]["uid"], sb["metadata"]["uid"]);
    let ev = event(&kube, "two", "MultiplePods").await;
    assert_eq!(ev["type"], "Warning");
    assert_eq!(ev["action"], "Reconciling");
    assert_eq!(ev["reportingComponent"], "sandbox-controller");
    assert_eq!(
        ev["message"],
        "multiple Pods (2) are controlled by this Sandbox; refusing to choose or create a Pod"
    );
}

#[tokio::test]
async fn a_template_edit_does_not_reach_a_bound_claims_sandbox() {
    let (kube, c) = start().await;
    ready_pool(&kube, &c, json!({})).await;
    post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim("bound", "wp", json!({})),
    )
    .await;
    let got = wait(&kube, "sandboxclaims", "bound", "claim Ready", ready_true).await;
    let sb_name = got["status"]["sandbox"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    // The adoption's last writes to the Sandbox may follow the claim's Ready.
    settle(&kube).await;
    let before = kube
        .get("sandboxes", "default", &sb_name)
        .unwrap_or_default();
    merge(
        &c,
        &format!("{EXT}/sandboxtemplates/t"),
        json!({ "spec": { "podTemplate": { "metadata": { "labels": { "edited": "yes" } } } } }),
    )
    .await;
    settle(&kube).await;
    let after = kube
        .get("sandboxes", "default", &sb_name)
        .unwrap_or_default();
    assert_eq!(
        after["spec"]["podTemplate"]["metadata"],
        before["spec"]["podTemplate"]["metadata"]
    );
    assert_eq!(after["metadata"]["labels"], before["metadata"]["labels"]);
}

#[tokio::test]
async fn a_recreate_pool_whose_template_is_gone_has_its_members_left_alone_by_claims() {
    let (kube, c) = start().await;
    let member = ready_pool(&kube, &c, json!({})).await;
    let name = name_of(&member);
    merge(
        &c,
        &format!("{EXT}/sandboxwarmpools/wp"),
        json!({ "spec": { "updateStrategy": { "type": "Recreate" } } }),
    )
    .await;
    delete(&c, &format!("{EXT}/sandboxtemplates/t")).await;
    wait_gone(&kube, "sandboxtemplates", "t").await;
    post(
        &c,
        &format!("{EXT}/sandboxclaims"),
        claim("late", "wp", json!({})),
    )
    .await;
    let got = wait(&kube, "sandboxclaims", "late", "TemplateNotFound", |o| {
        has_reason(o, "Ready", "TemplateNotFound")
    })
    .await;
    assert_eq!(got["status"]["sandbox"], json!({}));
    let sb = kube.get("sandboxes", "default", &name).unwrap_or_default();
    assert_eq!(
        sb["metadata"]["ownerReferences"][0]["kind"],
        "SandboxWarmPool"
    );
}
