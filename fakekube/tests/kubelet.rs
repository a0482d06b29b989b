//! The fake kubelet seen through the API over TLS: pods start after the delay with a real
//! kubelet's status, images can be missing or crashing, main processes exit as their restart
//! policy says, claims are bound and keep their files across pods. Every wait follows the
//! store's change notifications (`FakeKube::wait_for`); nothing sleeps a fixed time.

mod support;

use fakekube::FakeKube;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::Client;

const WAIT: Duration = Duration::from_secs(10);
const PODS: &str = "/api/v1/namespaces/default/pods";

async fn start() -> (FakeKube, Client) {
    let kube = FakeKube::builder()
        .crash_backoff(Duration::from_millis(5))
        .start()
        .await
        .expect("fakekube starts");
    let client = Client::new(&kube);
    (kube, client)
}

fn pod(name: &str, container: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name },
        "spec": { "containers": [ container ] },
    })
}

fn with_policy(mut p: Value, policy: &str) -> Value {
    p["spec"]["restartPolicy"] = json!(policy);
    p
}

async fn create(c: &Client, path: &str, body: &Value) {
    let r = c.json(Method::POST, path, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
}

async fn delete(c: &Client, path: &str) {
    let r = c.call(Method::DELETE, path, None, Vec::new()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
}

async fn wait_pod(kube: &FakeKube, name: &str, pred: impl Fn(&Value) -> bool) -> Value {
    kube.wait_for("pods", "default", name, WAIT, |p| p.is_some_and(&pred))
        .await
        .unwrap_or_else(|e| panic!("{e}; last: {:?}", e.last))
        .unwrap_or(Value::Null)
}

fn condition<'a>(p: &'a Value, ty: &str) -> &'a Value {
    p["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == ty))
        .unwrap_or(&Value::Null)
}

fn first_status(p: &Value) -> &Value {
    &p["status"]["containerStatuses"][0]
}

fn waiting_reason(p: &Value) -> &str {
    first_status(p)["state"]["waiting"]["reason"]
        .as_str()
        .unwrap_or("")
}

#[tokio::test]
async fn a_pod_goes_running_after_the_start_delay_with_the_kubelets_status() {
    let delay = Duration::from_millis(60);
    let kube = FakeKube::builder()
        .pod_start_delay(delay)
        .start()
        .await
        .expect("fakekube starts");
    let c = Client::new(&kube);
    let created = Instant::now();
    create(
        &c,
        PODS,
        &pod("web", json!({ "name": "c", "image": "busybox" })),
    )
    .await;
    let pending = wait_pod(&kube, "web", |p| waiting_reason(p) == "ContainerCreating").await;
    assert_eq!(pending["status"]["phase"], "Pending");
    assert_eq!(pending["spec"]["nodeName"], "fakekube-node");
    let p = wait_pod(&kube, "web", |p| p["status"]["phase"] == "Running").await;
    assert!(created.elapsed() >= delay, "running before the start delay");
    for ty in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        let cond = condition(&p, ty);
        assert_eq!(cond["status"], "True", "{ty}: {p}");
        assert!(cond["lastTransitionTime"].is_string(), "{ty}: {p}");
    }
    let ip = p["status"]["podIP"].as_str().unwrap_or("");
    assert!(ip.starts_with("10.244."), "{p}");
    assert_eq!(p["status"]["podIPs"], json!([{ "ip": ip }]));
    assert_eq!(p["status"]["hostIPs"][0]["ip"], p["status"]["hostIP"]);
    assert!(p["status"]["startTime"].is_string());
    assert_eq!(p["status"]["qosClass"], "BestEffort");
    let cs = first_status(&p);
    assert_eq!(cs["ready"], true);
    assert_eq!(cs["started"], true);
    assert_eq!(cs["restartCount"], 0);
    assert_eq!(cs["image"], "docker.io/library/busybox:latest");
    assert!(
        cs["containerID"]
            .as_str()
            .is_some_and(|id| id.starts_with("containerd://"))
    );
    assert!(cs["state"]["running"]["startedAt"].is_string());
    kube.shutdown().await;
}

#[tokio::test]
async fn every_pod_gets_its_own_ip() {
    let (kube, c) = start().await;
    create(
        &c,
        PODS,
        &pod("a", json!({ "name": "c", "image": "busybox" })),
    )
    .await;
    create(
        &c,
        PODS,
        &pod("b", json!({ "name": "c", "image": "busybox" })),
    )
    .await;
    let a = wait_pod(&kube, "a", |p| p["status"]["podIP"].is_string()).await;
    let b = wait_pod(&kube, "b", |p| p["status"]["podIP"].is_string()).await;
    assert_ne!(a["status"]["podIP"], b["status"]["podIP"]);
    kube.shutdown().await;
}

#[tokio::test]
async fn a_missing_image_leaves_the_pod_pending_in_image_pull_back_off_until_cleared() {
    let (kube, c) = start().await;
    kube.images().mark_missing("ghcr.io/acme/nope:1");
    create(
        &c,
        PODS,
        &pod("p", json!({ "name": "c", "image": "ghcr.io/acme/nope:1" })),
    )
    .await;
    let pulling = wait_pod(&kube, "p", |p| waiting_reason(p) == "ErrImagePull").await;
    assert_eq!(pulling["status"]["phase"], "Pending");
    let p = wait_pod(&kube, "p", |p| waiting_reason(p) == "ImagePullBackOff").await;
    assert_eq!(p["status"]["phase"], "Pending");
    assert_eq!(
        first_status(&p)["state"]["waiting"]["message"],
        "Back-off pulling image \"ghcr.io/acme/nope:1\""
    );
    let ready = condition(&p, "Ready");
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "ContainersNotReady");
    kube.images().clear("ghcr.io/acme/nope:1");
    wait_pod(&kube, "p", |p| p["status"]["phase"] == "Running").await;
    kube.shutdown().await;
}

#[tokio::test]
async fn a_crashing_image_loops_in_crash_loop_back_off_with_growing_restart_counts() {
    let (kube, c) = start().await;
    kube.images().mark_crashing("crashy");
    create(
        &c,
        PODS,
        &pod("p", json!({ "name": "c", "image": "crashy" })),
    )
    .await;
    let p = wait_pod(&kube, "p", |p| {
        waiting_reason(p) == "CrashLoopBackOff"
            && first_status(p)["restartCount"].as_u64().unwrap_or(0) >= 2
    })
    .await;
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(condition(&p, "Ready")["status"], "False");
    let cs = first_status(&p);
    assert_eq!(cs["lastState"]["terminated"]["exitCode"], 1);
    let uid = p["metadata"]["uid"].as_str().unwrap_or("");
    let message = cs["state"]["waiting"]["message"].as_str().unwrap_or("");
    assert!(message.starts_with("back-off "), "{message}");
    assert!(
        message.ends_with(&format!(
            " restarting failed container=c pod=p_default({uid})"
        )),
        "{message}"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_command_that_exits_0_with_restart_policy_never_succeeds() {
    let (kube, c) = start().await;
    let body = with_policy(
        pod(
            "p",
            json!({ "name": "c", "image": "busybox", "command": ["sh", "-c", "echo done"] }),
        ),
        "Never",
    );
    create(&c, PODS, &body).await;
    let p = wait_pod(&kube, "p", |p| p["status"]["phase"] == "Succeeded").await;
    let t = &first_status(&p)["state"]["terminated"];
    assert_eq!(t["exitCode"], 0);
    assert_eq!(t["reason"], "Completed");
    assert_eq!(condition(&p, "Ready")["reason"], "PodCompleted");
    assert_eq!(
        kube.container_log("default", "p", "c").as_deref(),
        Some("done\n")
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_command_that_exits_3_with_restart_policy_never_fails_with_its_exit_code() {
    let (kube, c) = start().await;
    let body = with_policy(
        pod(
            "p",
            json!({ "name": "c", "image": "busybox", "command": ["sh", "-c", "exit 3"] }),
        ),
        "Never",
    );
    create(&c, PODS, &body).await;
    let p = wait_pod(&kube, "p", |p| p["status"]["phase"] == "Failed").await;
    let t = &first_status(&p)["state"]["terminated"];
    assert_eq!(t["exitCode"], 3);
    assert_eq!(t["reason"], "Error");
    assert_eq!(first_status(&p)["restartCount"], 0);
    kube.shutdown().await;
}

#[tokio::test]
async fn a_command_that_exits_with_restart_policy_always_is_restarted() {
    let (kube, c) = start().await;
    create(
        &c,
        PODS,
        &pod(
            "p",
            json!({ "name": "c", "image": "busybox", "command": ["true"] }),
        ),
    )
    .await;
    let p = wait_pod(&kube, "p", |p| {
        first_status(p)["restartCount"].as_u64().unwrap_or(0) >= 2
    })
    .await;
    assert_eq!(p["status"]["phase"], "Running");
    let last = &first_status(&p)["lastState"]["terminated"];
    assert_eq!(last["exitCode"], 0, "{p}");
    assert_eq!(last["reason"], "Completed");
    kube.shutdown().await;
}

#[tokio::test]
async fn restart_policy_on_failure_restarts_failures_and_keeps_successes() {
    let (kube, c) = start().await;
    let failing = with_policy(
        pod(
            "fails",
            json!({ "name": "c", "image": "busybox", "command": ["false"] }),
        ),
        "OnFailure",
    );
    let passing = with_policy(
        pod(
            "passes",
            json!({ "name": "c", "image": "busybox", "command": ["true"] }),
        ),
        "OnFailure",
    );
    create(&c, PODS, &failing).await;
    create(&c, PODS, &passing).await;
    wait_pod(&kube, "fails", |p| {
        first_status(p)["restartCount"].as_u64().unwrap_or(0) >= 1
    })
    .await;
    let p = wait_pod(&kube, "passes", |p| p["status"]["phase"] == "Succeeded").await;
    assert_eq!(first_status(&p)["restartCount"], 0);
    kube.shutdown().await;
}

fn claim(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": { "name": name },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": { "requests": { "storage": "2Gi" } },
        },
    })
}

#[tokio::test]
async fn claims_are_bound_with_their_requested_capacity() {
    let (kube, c) = start().await;
    create(
        &c,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        &claim("data"),
    )
    .await;
    let pvc = kube
        .wait_for("persistentvolumeclaims", "default", "data", WAIT, |p| {
            p.is_some_and(|p| p["status"]["phase"] == "Bound")
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or(Value::Null);
    assert_eq!(pvc["status"]["capacity"]["storage"], "2Gi");
    assert_eq!(pvc["status"]["accessModes"], json!(["ReadWriteOnce"]));
    let uid = pvc["metadata"]["uid"].as_str().unwrap_or("");
    assert_eq!(pvc["spec"]["volumeName"], format!("pvc-{uid}"));
    kube.shutdown().await;
}

fn with_claim(command: &str) -> Value {
    let mut p = pod(
        "p",
        json!({ "name": "c", "image": "busybox", "command": [command],
            "volumeMounts": [ { "name": "data", "mountPath": "/data" } ] }),
    );
    p["spec"]["volumes"] =
        json!([ { "name": "data", "persistentVolumeClaim": { "claimName": "data" } } ]);
    with_policy(p, "Never")
}

#[tokio::test]
async fn a_file_under_a_claim_outlives_its_pod_and_a_file_elsewhere_does_not() {
    let (kube, c) = start().await;
    kube.register_command("writer", |call| async move {
        let ok = call.write_file("/data/kept", b"v1").is_ok()
            && call.write_file("/tmp/lost", b"x").is_ok();
        if ok { 0 } else { 1 }
    });
    kube.register_command("reader", |call| async move {
        let kept = call.read_file("/data/kept");
        let lost = call.read_file("/tmp/lost");
        let report = format!("kept={kept:?} lost={lost:?}");
        let _ = call.write_stdout(&report).await;
        if kept.as_deref() == Ok(b"v1".as_slice()) && lost.is_err() {
            0
        } else {
            1
        }
    });
    create(
        &c,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        &claim("data"),
    )
    .await;
    create(&c, PODS, &with_claim("writer")).await;
    wait_pod(&kube, "p", |p| p["status"]["phase"] == "Succeeded").await;
    delete(&c, &format!("{PODS}/p")).await;
    kube.wait_for("pods", "default", "p", WAIT, |p| p.is_none())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    create(&c, PODS, &with_claim("reader")).await;
    let p = wait_pod(&kube, "p", |p| {
        matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
    })
    .await;
    assert_eq!(
        p["status"]["phase"],
        "Succeeded",
        "reader saw: {:?}",
        kube.container_log("default", "p", "c")
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn deleting_a_pod_stops_it_gracefully_and_kills_a_main_process_that_ignores_sigterm() {
    let (kube, c) = start().await;
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Arc::new(std::sync::Mutex::new(Some(tx)));
    kube.register_command("until-killed", move |call| {
        let tx = tx.clone();
        async move {
            // Dropped with the future when the process is killed: the receiver sees it.
            let _guard = tx.lock().ok().and_then(|mut t| t.take());
            call.cancelled().await;
            0
        }
    });
    let mut p = pod(
        "p",
        json!({ "name": "c", "image": "busybox", "command": ["until-killed"] }),
    );
    p["spec"]["terminationGracePeriodSeconds"] = json!(45);
    create(&c, PODS, &p).await;
    wait_pod(&kube, "p", |p| p["status"]["phase"] == "Running").await;
    let r = c
        .call(Method::DELETE, &format!("{PODS}/p"), None, Vec::new())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert_eq!(r.json()["metadata"]["deletionGracePeriodSeconds"], 45);
    let killing = kube
        .wait_for_event("default", "p", "Killing", WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(killing["message"], "Stopping container c");
    assert_eq!(killing["involvedObject"]["fieldPath"], "spec.containers{c}");
    assert_eq!(killing["source"]["component"], "kubelet");
    // SIGTERM went to pid 1, which does not trap it: it still runs, and the pod is still there.
    assert!(rx.try_recv().is_err());
    let still = kube
        .get("pods", "default", "p")
        .expect("the pod is still there");
    assert!(still["metadata"]["deletionTimestamp"].is_string());
    kube.advance_clock(Duration::from_secs(45));
    let ended = tokio::time::timeout(WAIT, rx).await;
    assert!(
        matches!(ended, Ok(Err(_))),
        "the main process was not killed at the deadline: {ended:?}"
    );
    kube.wait_for("pods", "default", "p", WAIT, |p| p.is_none())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    kube.shutdown().await;
}
