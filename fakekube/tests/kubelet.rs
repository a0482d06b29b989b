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

/// How long a test waits for a condition before it fails: generous, since a loaded machine is
/// slow, and every wait returns as soon as its condition holds.
const WAIT: Duration = Duration::from_secs(60);
const PODS: &str = "/api/v1/namespaces/default/pods";

async fn start() -> (FakeKube, Client) {
    support::start(FakeKube::builder().crash_backoff(Duration::from_millis(5))).await
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

/// A container running the adapter's keep-alive loop: it ends at once on SIGTERM.
fn trapping(name: &str) -> Value {
    pod(
        name,
        json!({ "name": "c", "image": "busybox", "command": ["sh", "-c",
            "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done"] }),
    )
}

#[tokio::test]
async fn a_main_process_that_traps_sigterm_ends_at_once_and_its_pod_goes_before_the_grace_period() {
    let (kube, c) = start().await;
    // A grace period far longer than the wait below, which a loaded machine may need.
    let mut p = trapping("p");
    p["spec"]["terminationGracePeriodSeconds"] = json!(3600);
    create(&c, PODS, &p).await;
    wait_pod(&kube, "p", |p| p["status"]["phase"] == "Running").await;
    delete(&c, &format!("{PODS}/p")).await;
    // The clock is not advanced: only the trap ends the container before the hour.
    kube.wait_for("pods", "default", "p", WAIT, |p| p.is_none())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let killing = kube
        .wait_for_event("default", "p", "Killing", WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(killing["type"], "Normal");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_delete_with_grace_period_0_removes_a_running_pod_at_once() {
    let (kube, c) = start().await;
    create(&c, PODS, &trapping("p")).await;
    wait_pod(&kube, "p", |p| p["status"]["phase"] == "Running").await;
    let path = format!("{PODS}/p");
    let r = c
        .call(
            Method::DELETE,
            &format!("{path}?gracePeriodSeconds=0"),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert_eq!(c.get(&path).await.status, StatusCode::NOT_FOUND);
    kube.shutdown().await;
}

#[tokio::test]
async fn a_claim_keeps_its_protection_finalizer_while_a_pod_uses_it() {
    let (kube, c) = start().await;
    let claims = "/api/v1/namespaces/default/persistentvolumeclaims";
    create(&c, claims, &claim("data")).await;
    let pvc = c.get(&format!("{claims}/data")).await.json();
    assert_eq!(
        pvc["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    let mut p = trapping("p");
    p["spec"]["containers"][0]["volumeMounts"] =
        json!([ { "name": "data", "mountPath": "/data" } ]);
    p["spec"]["volumes"] =
        json!([ { "name": "data", "persistentVolumeClaim": { "claimName": "data" } } ]);
    create(&c, PODS, &p).await;
    wait_pod(&kube, "p", |p| p["status"]["phase"] == "Running").await;
    let r = c
        .call(Method::DELETE, &format!("{claims}/data"), None, Vec::new())
        .await;
    assert!(r.status.is_success(), "{}", r.json());
    // Held while the pod runs.
    let held = kube
        .get("persistentvolumeclaims", "default", "data")
        .expect("the claim is still there");
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    delete(&c, &format!("{PODS}/p")).await;
    kube.wait_for("persistentvolumeclaims", "default", "data", WAIT, |p| {
        p.is_none()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(kube.get("pods", "default", "p").is_none());
    kube.shutdown().await;
}

#[tokio::test]
async fn a_readiness_probe_keeps_a_running_pod_unready_until_it_passes() {
    let (kube, c) = start().await;
    let go = Arc::new(tokio::sync::Notify::new());
    let g = go.clone();
    kube.register_command("ready-later", move |call| {
        let g = g.clone();
        async move {
            g.notified().await;
            if call.write_file("/tmp/ready", b"yes").is_err() {
                return 1;
            }
            call.cancelled().await;
            0
        }
    });
    let p = pod(
        "p",
        json!({ "name": "c", "image": "busybox", "command": ["ready-later"],
            "readinessProbe": { "exec": { "command": ["cat", "/tmp/ready"] },
                "periodSeconds": 5 } }),
    );
    create(&c, PODS, &p).await;
    let unhealthy = kube
        .wait_for_event("default", "p", "Unhealthy", WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        unhealthy["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Readiness probe failed:")),
        "{unhealthy}"
    );
    let p = wait_pod(&kube, "p", |p| p["status"]["phase"] == "Running").await;
    assert_eq!(condition(&p, "Ready")["status"], "False", "{p}");
    assert_eq!(condition(&p, "Ready")["reason"], "ContainersNotReady");
    assert_eq!(first_status(&p)["ready"], false);
    go.notify_one();
    // The next probe is 5 s away on the cluster's clock.
    kube.advance_clock(Duration::from_secs(5));
    let p = wait_pod(&kube, "p", |p| condition(p, "Ready")["status"] == "True").await;
    assert_eq!(first_status(&p)["ready"], true);
    kube.shutdown().await;
}

#[tokio::test]
async fn init_containers_run_to_completion_in_order_before_the_containers_start() {
    let (kube, c) = start().await;
    let mount = json!([ { "name": "work", "mountPath": "/work" } ]);
    let p = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "p" },
        "spec": {
            "initContainers": [
                { "name": "one", "image": "busybox", "volumeMounts": mount,
                  "command": ["sh", "-c", "echo one > /work/log"] },
                { "name": "two", "image": "busybox", "volumeMounts": mount,
                  "command": ["sh", "-c", "echo two >> /work/log"] },
            ],
            "containers": [
                { "name": "c", "image": "busybox", "volumeMounts": mount,
                  "command": ["sh", "-c",
                    "cat /work/log; trap 'exit 0' TERM; while true; do sleep 3600 & wait; done"] },
            ],
            "volumes": [ { "name": "work", "emptyDir": {} } ],
        },
    });
    create(&c, PODS, &p).await;
    let p = wait_pod(&kube, "p", |p| condition(p, "Ready")["status"] == "True").await;
    assert_eq!(condition(&p, "Initialized")["status"], "True");
    let inits = p["status"]["initContainerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = inits.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["one", "two"]);
    for s in &inits {
        assert_eq!(s["state"]["terminated"]["reason"], "Completed", "{s}");
        assert_eq!(s["state"]["terminated"]["exitCode"], 0);
    }
    let log = kube.container_log("default", "p", "c").unwrap_or_default();
    assert_eq!(log, "one\ntwo\n");
    kube.shutdown().await;
}

/// Moves the cluster's clock on by `step` (a probe period) until the pod satisfies `pred`:
/// each probe runs when the clock reaches it, never after a real wait of its period. Gives up
/// after [`WAIT`] of real time, however slowly the machine lets the probes run.
async fn advance_until(
    kube: &FakeKube,
    name: &str,
    step: Duration,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        let got = kube
            .wait_for("pods", "default", name, Duration::from_millis(200), |p| {
                p.is_some_and(&pred)
            })
            .await;
        if let Ok(Some(p)) = got {
            return p;
        }
        kube.advance_clock(step);
    }
    wait_pod(kube, name, pred).await
}

/// A command that waits until the test lets it go, then ends 0 (a gate in a shell script).
fn register_gate(kube: &FakeKube, name: &str) -> Arc<tokio::sync::Notify> {
    let go = Arc::new(tokio::sync::Notify::new());
    let g = go.clone();
    kube.register_command(name, move |_call| {
        let g = g.clone();
        async move {
            g.notified().await;
            0
        }
    });
    go
}

fn is_ready(p: &Value) -> bool {
    condition(p, "Ready")["status"] == "True"
}

async fn event_message(kube: &FakeKube, pod: &str, reason: &str) -> String {
    let e = kube
        .wait_for_event("default", pod, reason, WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    e["message"].as_str().unwrap_or("").to_string()
}

#[tokio::test]
async fn an_http_get_readiness_probe_turns_the_pod_ready_once_a_server_answers_on_its_port() {
    let (kube, c) = start().await;
    let go = register_gate(&kube, "gate");
    let p = pod(
        "web",
        json!({ "name": "c", "image": "busybox",
            "command": ["sh", "-c",
                "gate; mkdir -p /www; echo ok > /www/healthz; exec httpd -f -p 8080 -h /www"],
            "readinessProbe": { "httpGet": { "path": "/healthz", "port": 8080 },
                "periodSeconds": 5 } }),
    );
    create(&c, PODS, &p).await;
    let failed = event_message(&kube, "web", "Unhealthy").await;
    assert!(
        failed.starts_with("Readiness probe failed: Get \"http://")
            && failed.contains(":8080/healthz\""),
        "{failed}"
    );
    let p = wait_pod(&kube, "web", |p| p["status"]["phase"] == "Running").await;
    assert_eq!(condition(&p, "Ready")["status"], "False", "{p}");
    go.notify_one();
    let p = advance_until(&kube, "web", Duration::from_secs(5), is_ready).await;
    assert_eq!(first_status(&p)["ready"], true);
    kube.shutdown().await;
}

#[tokio::test]
async fn a_tcp_socket_readiness_probe_turns_the_pod_ready_once_something_listens_on_its_port() {
    let (kube, c) = start().await;
    let go = register_gate(&kube, "gate");
    let p = pod(
        "tcp",
        json!({ "name": "c", "image": "busybox",
            "command": ["sh", "-c", "gate; exec nc -lk -p 9000 -e true"],
            "readinessProbe": { "tcpSocket": { "port": 9000 }, "periodSeconds": 5 } }),
    );
    create(&c, PODS, &p).await;
    let failed = event_message(&kube, "tcp", "Unhealthy").await;
    assert!(
        failed.starts_with("Readiness probe failed: dial tcp ") && failed.contains(":9000"),
        "{failed}"
    );
    go.notify_one();
    let p = advance_until(&kube, "tcp", Duration::from_secs(5), is_ready).await;
    assert_eq!(first_status(&p)["ready"], true);
    kube.shutdown().await;
}

#[tokio::test]
async fn a_failing_liveness_probe_restarts_the_container_with_its_last_state_and_events() {
    let (kube, c) = start().await;
    let p = pod(
        "live",
        json!({ "name": "c", "image": "busybox",
            "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done"],
            "livenessProbe": { "exec": { "command": ["cat", "/tmp/alive"] },
                "periodSeconds": 10, "failureThreshold": 2 } }),
    );
    create(&c, PODS, &p).await;
    let p = advance_until(&kube, "live", Duration::from_secs(10), |p| {
        first_status(p)["restartCount"].as_i64() >= Some(1)
    })
    .await;
    let last = &first_status(&p)["lastState"]["terminated"];
    assert_eq!(last["exitCode"], 0, "{p}");
    assert_eq!(last["reason"], "Completed", "{p}");
    assert!(last["finishedAt"].is_string(), "{p}");
    let unhealthy = event_message(&kube, "live", "Unhealthy").await;
    assert!(
        unhealthy.starts_with("Liveness probe failed: cat: /tmp/alive:"),
        "{unhealthy}"
    );
    assert_eq!(
        event_message(&kube, "live", "Killing").await,
        "Container c failed liveness probe, will be restarted"
    );
    kube.shutdown().await;
}

/// A pod whose container ends 0 on SIGTERM and whose liveness probe always fails.
fn unhealthy_but_graceful(name: &str, policy: &str) -> Value {
    with_policy(
        pod(
            name,
            json!({ "name": "c", "image": "busybox",
                "command": ["sh", "-c",
                    "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done"],
                "livenessProbe": { "exec": { "command": ["cat", "/tmp/alive"] },
                    "periodSeconds": 10, "failureThreshold": 1 } }),
        ),
        policy,
    )
}

#[tokio::test]
async fn a_liveness_kill_restarts_a_container_under_on_failure_even_when_it_exits_0() {
    let (kube, c) = start().await;
    create(&c, PODS, &unhealthy_but_graceful("onfail", "OnFailure")).await;
    let p = advance_until(&kube, "onfail", Duration::from_secs(10), |p| {
        first_status(p)["restartCount"].as_i64() >= Some(1)
    })
    .await;
    assert_eq!(p["status"]["phase"], "Running", "{p}");
    let last = &first_status(&p)["lastState"]["terminated"];
    assert_eq!(last["exitCode"], 0, "{p}");
    assert_eq!(last["reason"], "Completed", "{p}");
    assert_eq!(
        event_message(&kube, "onfail", "Killing").await,
        "Container c failed liveness probe, will be restarted"
    );
    // It keeps failing, and keeps being restarted: the count goes on.
    let p = advance_until(&kube, "onfail", Duration::from_secs(10), |p| {
        first_status(p)["restartCount"].as_i64() >= Some(2)
    })
    .await;
    assert_ne!(p["status"]["phase"], "Succeeded", "{p}");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_liveness_kill_under_never_ends_the_container_without_a_restart_or_its_promise() {
    let (kube, c) = start().await;
    create(&c, PODS, &unhealthy_but_graceful("never", "Never")).await;
    let p = advance_until(&kube, "never", Duration::from_secs(10), |p| {
        p["status"]["phase"] == "Succeeded"
    })
    .await;
    assert_eq!(first_status(&p)["restartCount"], 0, "{p}");
    assert_eq!(
        first_status(&p)["state"]["terminated"]["exitCode"],
        0,
        "{p}"
    );
    assert_eq!(
        event_message(&kube, "never", "Killing").await,
        "Container c failed liveness probe"
    );
    kube.shutdown().await;
}

fn failing_init(name: &str, policy: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name },
        "spec": {
            "restartPolicy": policy,
            "initContainers": [ { "name": "setup", "image": "busybox",
                "command": ["sh", "-c", "echo no >&2; exit 3"] } ],
            "containers": [ { "name": "c", "image": "busybox", "command": ["true"] } ],
        },
    })
}

#[tokio::test]
async fn a_failing_init_container_fails_a_pod_that_never_restarts() {
    let (kube, c) = start().await;
    create(&c, PODS, &failing_init("once", "Never")).await;
    let p = wait_pod(&kube, "once", |p| p["status"]["phase"] == "Failed").await;
    let init = &p["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["exitCode"], 3, "{p}");
    assert_eq!(init["state"]["terminated"]["reason"], "Error", "{p}");
    assert_eq!(condition(&p, "Initialized")["status"], "False", "{p}");
    // The main container never ran: kubectl prints the pod as `Init:Error`.
    assert_eq!(
        first_status(&p)["state"]["waiting"]["reason"],
        "PodInitializing",
        "{p}"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_failing_init_container_loops_in_crash_loop_back_off_while_its_pod_stays_pending() {
    let (kube, c) = start().await;
    create(&c, PODS, &failing_init("loop", "Always")).await;
    let p = wait_pod(&kube, "loop", |p| {
        let init = &p["status"]["initContainerStatuses"][0];
        init["state"]["waiting"]["reason"] == "CrashLoopBackOff"
            && init["restartCount"].as_i64() >= Some(1)
    })
    .await;
    let init = &p["status"]["initContainerStatuses"][0];
    assert_eq!(init["lastState"]["terminated"]["exitCode"], 3, "{p}");
    assert_eq!(init["lastState"]["terminated"]["reason"], "Error", "{p}");
    assert_eq!(p["status"]["phase"], "Pending", "{p}");
    kube.shutdown().await;
}

#[tokio::test]
async fn binding_a_pod_to_the_node_leaves_its_generation_at_1() {
    let (kube, c) = start().await;
    create(&c, PODS, &trapping("bound")).await;
    let p = wait_pod(&kube, "bound", |p| p["status"]["phase"] == "Running").await;
    assert!(p["spec"]["nodeName"].is_string(), "{p}");
    assert_eq!(p["metadata"]["generation"], 1, "{p}");
    kube.shutdown().await;
}
