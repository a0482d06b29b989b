//! The kubelet (`fakekube_kubelet`) against a real store (the API server's): an integration of
//! both crates, here since the kubelet's crate has no path to the store: exec targets and their
//! errors, volumes across pod recreation, cancellation on deletion, attach and logs. Waits follow the store's change
//! notifications; nothing sleeps a fixed time.

use crate::client::{Change, Client, Delete, Gone, Kind, Part as ClientPart};
use crate::status::ApiError;
use crate::store::{DeleteOptions, Part, Store, StoreSettings, WriteOptions};
use bytes::Bytes;
use fakekube_kubelet::kubelet::{Config, ExecTarget, Kubelet};
use fakekube_runtime::{ExecIo, ExecSpec, ExitStatus};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// How long a test waits for a condition before it fails: generous, since a loaded machine is
/// slow, and every wait returns as soon as its condition holds.
const WAIT: Duration = Duration::from_secs(60);

struct Env {
    store: Arc<Store>,
    kubelet: Arc<Kubelet>,
    shutdown: CancellationToken,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn rt(plural: &str) -> Arc<crate::registry::ResourceType> {
    crate::registry::Registry::new()
        .find("", "v1", plural)
        .unwrap_or_else(|| panic!("{plural} served"))
}

fn env(run: bool) -> Env {
    env_with(StoreSettings::default(), run)
}

fn env_with(settings: StoreSettings, run: bool) -> Env {
    let store = Arc::new(Store::new(settings, Arc::default()));
    store
        .create(
            &rt("namespaces"),
            "",
            json!({ "metadata": { "name": "default" } }),
            WriteOptions::default(),
        )
        .unwrap_or_else(|e| panic!("namespace: {}", e.message));
    let kubelet = Arc::new(Kubelet::new(store.clone(), Config::default()));
    let shutdown = CancellationToken::new();
    if run {
        kubelet.spawn(shutdown.clone());
    }
    Env {
        store,
        kubelet,
        shutdown,
    }
}

impl Env {
    fn create(&self, plural: &str, obj: Value) {
        self.store
            .create(&rt(plural), "default", obj, WriteOptions::default())
            .unwrap_or_else(|e| panic!("create {plural}: {}", e.message));
    }

    /// Deletes an object as a client does, then does what the rest of a cluster would: a
    /// running pod's grace period is skipped (once the kubelet has begun to stop it, the clock
    /// moves past the period: its main process, which ignores SIGTERM, is killed) and a claim's
    /// protection is lifted as the controller lifts it once no pod uses the claim (that
    /// controller does not run here).
    async fn delete(&self, plural: &str, name: &str) {
        self.store
            .delete(&rt(plural), "default", name, &DeleteOptions::default())
            .unwrap_or_else(|e| panic!("delete {plural}: {}", e.message));
        match plural {
            "pods" => {
                self.wait_killing(name).await;
                self.store.clock().advance(Duration::from_secs(30));
            }
            "persistentvolumeclaims" => {
                if let Some(pvc) = self.store.get_opt(&rt(plural), "default", name) {
                    let mut next = Value::clone(&pvc);
                    next["metadata"]["finalizers"] = json!([]);
                    self.store
                        .update(
                            &rt(plural),
                            "default",
                            name,
                            next,
                            Part::Main,
                            WriteOptions::default(),
                        )
                        .unwrap_or_else(|e| panic!("unprotect {name}: {}", e.message));
                }
            }
            _ => {}
        }
    }

    /// Deletes a pod with grace period 0 (`--force`): it is gone from the API at once.
    fn delete_now(&self, name: &str) {
        let opts = DeleteOptions {
            grace_period: Some(0),
            ..DeleteOptions::default()
        };
        self.store
            .delete(&rt("pods"), "default", name, &opts)
            .unwrap_or_else(|e| panic!("delete pod: {}", e.message));
    }

    /// Waits for the kubelet's `Killing` Event about pod `name`.
    async fn wait_killing(&self, name: &str) {
        let events = rt("events");
        let mut changes = self.store.subscribe();
        let seen = async {
            loop {
                changes.borrow_and_update();
                let killing = self
                    .store
                    .list_all(&events, Some("default"))
                    .iter()
                    .any(|ev| ev["reason"] == "Killing" && ev["involvedObject"]["name"] == name);
                if killing || changes.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(WAIT, seen)
            .await
            .unwrap_or_else(|_| panic!("no Killing event for pod {name}"));
    }

    async fn wait(&self, plural: &str, name: &str, pred: impl Fn(Option<&Value>) -> bool) -> Value {
        crate::inspect::wait_for(&self.store, plural, "default", name, WAIT, pred)
            .await
            .unwrap_or_else(|e| panic!("{e}: last {:?}", e.last))
            .unwrap_or(Value::Null)
    }

    async fn wait_running(&self, name: &str) -> Value {
        self.wait("pods", name, |p| {
            p.is_some_and(|p| {
                p["status"]["phase"] == "Running"
                    && p["status"]["containerStatuses"]
                        .as_array()
                        .is_some_and(|l| l.iter().all(|c| c["ready"] == true))
            })
        })
        .await
    }

    async fn wait_gone(&self, name: &str) {
        self.wait("pods", name, |p| p.is_none()).await;
    }
}

fn pod(name: &str, containers: Value) -> Value {
    json!({ "metadata": { "name": name }, "spec": { "containers": containers } })
}

/// Runs `script` with `sh -c` in the target; returns the exit status and stdout.
async fn sh(target: &ExecTarget, script: &str) -> (ExitStatus, String) {
    let (out_tx, mut out_rx) = mpsc::channel(16);
    let (err_tx, _err_rx) = mpsc::channel(16);
    let spec = ExecSpec {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        env: target.env.clone(),
        cwd: target.cwd.clone(),
        fs: target.fs.clone(),
        programs: target.commands.clone(),
        processes: target.processes.clone(),
        cancel: target.cancel.child_token(),
        network: target.network.clone(),
    };
    let io = ExecIo {
        stdin: None,
        stdout: out_tx,
        stderr: err_tx,
        tty: None,
    };
    let collect = tokio::spawn(async move {
        let mut out = Vec::new();
        while let Some(chunk) = out_rx.recv().await {
            out.extend_from_slice(&chunk);
        }
        String::from_utf8_lossy(&out).into_owned()
    });
    let status = fakekube_runtime::exec(spec, io).await;
    (status, collect.await.unwrap_or_default())
}

fn target(e: &Env, pod: &str, container: &str) -> ExecTarget {
    e.kubelet
        .exec_target("default", pod, container)
        .unwrap_or_else(|err| panic!("exec target: {}", err.message))
}

fn err_of<T>(r: Result<T, ApiError>) -> (u16, String) {
    match r {
        Ok(_) => (0, String::new()),
        Err(e) => (e.code.as_u16(), e.message),
    }
}

#[tokio::test]
async fn exec_target_errors_are_worded_as_the_api_server_and_kubelet_word_them() {
    let e = env(false);
    let k = &e.kubelet;
    assert_eq!(
        err_of(k.exec_target("default", "nope", "")),
        (404, "pods \"nope\" not found".to_string())
    );
    e.create(
        "pods",
        pod(
            "two",
            json!([ { "name": "a", "image": "busybox" }, { "name": "b", "image": "busybox" } ]),
        ),
    );
    assert_eq!(
        err_of(k.exec_target("default", "two", "")),
        (
            400,
            "a container name must be specified for pod two, choose one of: [a b]".to_string()
        )
    );
    assert_eq!(
        err_of(k.exec_target("default", "two", "zz")),
        (400, "container zz is not valid for pod two".to_string())
    );
    assert_eq!(
        err_of(k.exec_target("default", "two", "a")),
        (400, "pod two does not have a host assigned".to_string())
    );
    let mut bound = pod("bound", json!([ { "name": "c", "image": "busybox" } ]));
    bound["spec"]["nodeName"] = json!("fakekube-node");
    e.create("pods", bound);
    assert_eq!(
        err_of(k.exec_target("default", "bound", "")),
        (500, "container not found (\"c\")".to_string())
    );
}

#[tokio::test]
async fn an_exec_runs_in_the_container_with_its_environment_and_working_directory() {
    let e = env(true);
    e.create(
        "pods",
        pod(
            "p",
            json!([ {
                "name": "c", "image": "busybox", "workingDir": "/work",
                "env": [ { "name": "GREETING", "value": "hi" } ],
            } ]),
        ),
    );
    e.wait_running("p").await;
    let t = target(&e, "p", "");
    let (status, out) = sh(&t, "echo $GREETING $HOSTNAME; pwd").await;
    assert_eq!(status, ExitStatus::Code(0));
    assert_eq!(out, "hi p\n/work\n");
}

#[tokio::test]
async fn files_under_a_claim_survive_pod_recreation_and_files_elsewhere_do_not() {
    let e = env(true);
    e.create(
        "persistentvolumeclaims",
        json!({ "metadata": { "name": "data" }, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } }),
    );
    let spec = || {
        json!({
            "metadata": { "name": "p" },
            "spec": {
                "containers": [ { "name": "c", "image": "busybox",
                    "volumeMounts": [ { "name": "d", "mountPath": "/data" } ] } ],
                "volumes": [ { "name": "d", "persistentVolumeClaim": { "claimName": "data" } } ],
            },
        })
    };
    e.create("pods", spec());
    e.wait_running("p").await;
    let (status, _) = sh(
        &target(&e, "p", "c"),
        "echo kept > /data/f; echo lost > /tmp/g",
    )
    .await;
    assert_eq!(status, ExitStatus::Code(0));
    e.delete("pods", "p").await;
    e.wait_gone("p").await;
    e.create("pods", spec());
    e.wait_running("p").await;
    let t = target(&e, "p", "c");
    assert_eq!(
        sh(&t, "cat /data/f").await,
        (ExitStatus::Code(0), "kept\n".into())
    );
    assert_eq!(sh(&t, "test -e /tmp/g").await.0, ExitStatus::Code(1));
}

#[tokio::test]
async fn deleting_a_claim_drops_its_storage() {
    let e = env(true);
    let claim = || {
        json!({ "metadata": { "name": "data" }, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } })
    };
    let spec = || {
        json!({
            "metadata": { "name": "p" },
            "spec": {
                "containers": [ { "name": "c", "image": "busybox",
                    "volumeMounts": [ { "name": "d", "mountPath": "/data" } ] } ],
                "volumes": [ { "name": "d", "persistentVolumeClaim": { "claimName": "data" } } ],
            },
        })
    };
    e.create("persistentvolumeclaims", claim());
    e.create("pods", spec());
    e.wait_running("p").await;
    sh(&target(&e, "p", "c"), "echo x > /data/f").await;
    e.delete("pods", "p").await;
    e.delete("persistentvolumeclaims", "data").await;
    e.wait_gone("p").await;
    e.wait("persistentvolumeclaims", "data", |p| p.is_none())
        .await;
    e.create("persistentvolumeclaims", claim());
    e.create("pods", spec());
    e.wait_running("p").await;
    assert_eq!(
        sh(&target(&e, "p", "c"), "test -e /data/f").await.0,
        ExitStatus::Code(1)
    );
}

#[tokio::test]
async fn deleting_a_pod_cancels_a_running_exec() {
    let e = env(true);
    e.create(
        "pods",
        pod("p", json!([ { "name": "c", "image": "busybox" } ])),
    );
    e.wait_running("p").await;
    let t = target(&e, "p", "c");
    let running = tokio::spawn(async move { sh(&t, "sleep infinity").await.0 });
    e.delete("pods", "p").await;
    let status = tokio::time::timeout(WAIT, running)
        .await
        .unwrap_or_else(|_| panic!("exec still running after the pod was deleted"));
    assert_eq!(status.ok(), Some(ExitStatus::Killed));
}

#[tokio::test]
async fn execs_end_when_the_main_process_exits_and_the_container_is_no_longer_running() {
    let e = env(true);
    let release = Arc::new(Notify::new());
    let r = release.clone();
    e.kubelet.register_command("hold", move |_call| {
        let r = r.clone();
        async move {
            r.notified().await;
            0
        }
    });
    let mut p = pod(
        "p",
        json!([ { "name": "c", "image": "busybox", "command": ["hold"] } ]),
    );
    p["spec"]["restartPolicy"] = json!("Never");
    e.create("pods", p);
    e.wait_running("p").await;
    let t = target(&e, "p", "c");
    assert!(!t.cancel.is_cancelled());
    release.notify_one();
    tokio::time::timeout(WAIT, t.cancel.cancelled())
        .await
        .unwrap_or_else(|_| panic!("exec token did not fire"));
    e.wait("pods", "p", |p| {
        p.is_some_and(|p| p["status"]["phase"] == "Succeeded")
    })
    .await;
    assert_eq!(
        err_of(e.kubelet.exec_target("default", "p", "c")),
        (500, "container not found (\"c\")".to_string())
    );
}

#[tokio::test]
async fn a_registered_command_as_main_process_sees_the_pod_files_and_its_output_is_logged() {
    let e = env(true);
    let saw_claim = Arc::new(AtomicBool::new(false));
    let saw = saw_claim.clone();
    e.kubelet.register_command("writer", move |call| {
        let saw = saw.clone();
        async move {
            saw.store(
                call.write_file("/data/from-main", b"1").is_ok(),
                Ordering::SeqCst,
            );
            let _ = call
                .write_stdout(format!("args={}\n", call.args().join(",")))
                .await;
            call.cancelled().await;
            0
        }
    });
    e.create(
        "pods",
        json!({
            "metadata": { "name": "p" },
            "spec": {
                "containers": [ { "name": "c", "image": "busybox", "command": ["writer"],
                    "args": ["a", "b"],
                    "volumeMounts": [ { "name": "d", "mountPath": "/data" } ] } ],
                "volumes": [ { "name": "d", "emptyDir": {} } ],
            },
        }),
    );
    e.wait_running("p").await;
    let t = target(&e, "p", "c");
    assert_eq!(sh(&t, "cat /data/from-main").await.1, "1");
    assert!(saw_claim.load(Ordering::SeqCst));
    let log = e
        .kubelet
        .logs("default", "p", "c", false)
        .unwrap_or_default();
    assert_eq!(String::from_utf8_lossy(&log), "args=a,b\n");
}

#[tokio::test]
async fn attach_feeds_stdin_to_the_main_process_and_streams_its_output() {
    let e = env(true);
    e.create(
        "pods",
        pod(
            "p",
            json!([ { "name": "c", "image": "busybox", "stdin": true,
                "command": ["sh", "-c", "read line; echo got $line; sleep infinity"] } ]),
        ),
    );
    e.wait_running("p").await;
    let mut a = e
        .kubelet
        .attach_target("default", "p", "c")
        .unwrap_or_else(|err| panic!("attach: {}", err.message));
    let stdin = a.stdin.take().unwrap_or_else(|| panic!("stdin"));
    stdin.send(Bytes::from_static(b"hello\n")).await.ok();
    let chunk = tokio::time::timeout(WAIT, a.output.recv())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    assert_eq!(chunk, Bytes::from_static(b"got hello\n"));
}

#[tokio::test]
async fn logs_of_a_container_that_never_ran_say_why() {
    let e = env(true);
    e.kubelet.images().mark_missing("ghost");
    e.create(
        "pods",
        pod("p", json!([ { "name": "c", "image": "ghost" } ])),
    );
    e.wait("pods", "p", |p| {
        p.is_some_and(|p| {
            p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
        })
    })
    .await;
    let (code, message) = err_of(e.kubelet.logs("default", "p", "c", false));
    assert_eq!(code, 400);
    assert!(
        message.starts_with("container \"c\" in pod \"p\" is waiting to start: "),
        "{message}"
    );
    assert_eq!(
        err_of(e.kubelet.logs("default", "p", "c", true)),
        (
            400,
            "previous terminated container \"c\" in pod \"p\" not found".to_string()
        )
    );
}

#[tokio::test]
async fn a_pod_waits_unschedulable_for_its_claim_then_runs() {
    let e = env(true);
    e.create(
        "pods",
        json!({
            "metadata": { "name": "p" },
            "spec": {
                "containers": [ { "name": "c", "image": "busybox" } ],
                "volumes": [ { "name": "d", "persistentVolumeClaim": { "claimName": "later" } } ],
            },
        }),
    );
    let p = e
        .wait("pods", "p", |p| {
            p.is_some_and(|p| p["status"]["conditions"][0]["reason"] == "Unschedulable")
        })
        .await;
    assert_eq!(p["status"]["phase"], "Pending");
    assert_eq!(p["spec"]["nodeName"], Value::Null);
    assert!(
        p["status"]["conditions"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("persistentvolumeclaim \"later\" not found")),
        "{p}"
    );
    e.create(
        "persistentvolumeclaims",
        json!({ "metadata": { "name": "later" }, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } }),
    );
    let p = e.wait_running("p").await;
    assert_eq!(p["spec"]["nodeName"], "fakekube-node");
}

#[tokio::test]
async fn containers_of_a_pod_share_an_empty_dir_and_see_secret_files() {
    let e = env(true);
    e.create(
        "secrets",
        json!({ "metadata": { "name": "s" }, "data": { "token": "dG9r" } }),
    );
    let mounts = json!([
        { "name": "shared", "mountPath": "/shared" },
        { "name": "sec", "mountPath": "/etc/sec" },
    ]);
    e.create(
        "pods",
        json!({
            "metadata": { "name": "p" },
            "spec": {
                "containers": [
                    { "name": "a", "image": "busybox", "volumeMounts": mounts },
                    { "name": "b", "image": "busybox", "volumeMounts": mounts },
                ],
                "volumes": [
                    { "name": "shared", "emptyDir": {} },
                    { "name": "sec", "secret": { "secretName": "s" } },
                ],
            },
        }),
    );
    e.wait_running("p").await;
    sh(
        &target(&e, "p", "a"),
        "echo from-a > /shared/f; echo private > /tmp/p",
    )
    .await;
    let b = target(&e, "p", "b");
    assert_eq!(sh(&b, "cat /shared/f").await.1, "from-a\n");
    assert_eq!(sh(&b, "cat /etc/sec/token").await.1, "tok");
    assert_eq!(sh(&b, "test -e /tmp/p").await.0, ExitStatus::Code(1));
}

#[tokio::test]
async fn the_containers_and_execs_of_a_pod_share_its_network_and_other_pods_do_not() {
    let e = env(true);
    e.create(
        "pods",
        json!({
            "metadata": { "name": "web" },
            "spec": { "containers": [
                { "name": "server", "image": "busybox",
                  "command": ["sh", "-c", "echo hello from server | nc -l -p 9000"] },
                { "name": "side", "image": "busybox" },
            ] },
        }),
    );
    e.create(
        "pods",
        pod("other", json!([{ "name": "c", "image": "busybox" }])),
    );
    e.wait_running("web").await;
    e.wait_running("other").await;
    let side = target(&e, "web", "side");
    let listening = async {
        while !side.network.listening().contains(&9000) {
            tokio::task::yield_now().await;
        }
    };
    assert!(tokio::time::timeout(WAIT, listening).await.is_ok());
    let (status, out) = sh(&side, "nc 127.0.0.1 9000").await;
    assert_eq!(status, ExitStatus::Code(0));
    assert_eq!(out, "hello from server\n");
    let other = target(&e, "other", "c");
    let (status, _) = sh(&other, "nc 127.0.0.1 9000").await;
    assert_eq!(status, ExitStatus::Code(1));
}

#[tokio::test]
async fn a_command_that_cannot_start_ends_with_start_error_and_is_restarted() {
    let e = env(true);
    e.create(
        "pods",
        pod(
            "p",
            json!([ { "name": "c", "image": "busybox", "command": ["no-such-program"] } ]),
        ),
    );
    let p = e
        .wait("pods", "p", |p| {
            // At least one restart: a lasting state, where `== 1` is a moment of the crash loop
            // that a reader slowed by a busy machine can miss.
            p.is_some_and(|p| {
                p["status"]["containerStatuses"][0]["restartCount"]
                    .as_u64()
                    .is_some_and(|n| n >= 1)
            })
        })
        .await;
    let last = &p["status"]["containerStatuses"][0]["lastState"]["terminated"];
    assert_eq!(last["exitCode"], 128, "{p}");
    assert_eq!(last["reason"], "StartError");
    assert!(
        last["message"]
            .as_str()
            .is_some_and(|m| m.contains("no-such-program")),
        "{last}"
    );
}

#[tokio::test]
async fn a_termination_message_file_is_reported() {
    let e = env(true);
    let mut p = pod(
        "p",
        json!([ { "name": "c", "image": "busybox",
            "command": ["sh", "-c", "echo bye > /dev/termination-log; exit 2"] } ]),
    );
    p["spec"]["restartPolicy"] = json!("Never");
    e.create("pods", p);
    let p = e
        .wait("pods", "p", |p| {
            p.is_some_and(|p| p["status"]["phase"] == "Failed")
        })
        .await;
    let t = &p["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(t["exitCode"], 2);
    assert_eq!(t["message"], "bye\n");
}

#[tokio::test]
async fn when_the_change_log_no_longer_reaches_back_a_resync_notices_a_deleted_pod() {
    let e = env_with(
        StoreSettings {
            event_log_capacity: 1,
            ..StoreSettings::default()
        },
        true,
    );
    e.create(
        "pods",
        pod("p", json!([ { "name": "c", "image": "busybox" } ])),
    );
    e.wait_running("p").await;
    let t = target(&e, "p", "c");
    // Without an await in between (a single-threaded test runtime), the kubelet sees these
    // only afterwards, when the log keeps just the last of them.
    e.delete_now("p");
    e.create("secrets", json!({ "metadata": { "name": "s1" } }));
    e.create("secrets", json!({ "metadata": { "name": "s2" } }));
    assert!(
        e.store
            .events_since(e.store.resource_version() - 2)
            .is_err()
    );
    tokio::time::timeout(WAIT, t.cancel.cancelled())
        .await
        .unwrap_or_else(|_| panic!("the deleted pod's container still runs"));
    e.create(
        "pods",
        pod("q", json!([ { "name": "c", "image": "busybox" } ])),
    );
    e.wait_running("q").await;
}

/// The store as the kubelet's API, with pod status writes and pod deletes refused while
/// `down` is set, as the HTTPS client reports an API server that was killed (a 500 of its
/// own); every other call goes through.
#[derive(Debug)]
struct Outage {
    store: Arc<Store>,
    down: AtomicBool,
    /// Told of each refused call.
    refused: Notify,
}

impl Outage {
    fn refuse(&self) -> Result<(), ApiError> {
        if !self.down.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.refused.notify_one();
        Err(ApiError::internal(
            "asking the API server: connection refused",
        ))
    }
}

impl Client for Outage {
    fn get(&self, kind: Kind, ns: &str, name: &str) -> Option<Arc<Value>> {
        Client::get(self.store.as_ref(), kind, ns, name)
    }
    fn served(&self, kind: Kind) -> bool {
        Client::served(self.store.as_ref(), kind)
    }
    fn list(&self, kind: Kind, ns: Option<&str>) -> Vec<Arc<Value>> {
        Client::list(self.store.as_ref(), kind, ns)
    }
    fn create(&self, kind: Kind, ns: &str, obj: Value) -> Result<Arc<Value>, ApiError> {
        Client::create(self.store.as_ref(), kind, ns, obj)
    }
    fn update(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        obj: Value,
        part: ClientPart,
    ) -> Result<Arc<Value>, ApiError> {
        if kind == Kind::Pod && part == ClientPart::Status {
            self.refuse()?;
        }
        Client::update(self.store.as_ref(), kind, ns, name, obj, part)
    }
    fn merge_patch(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        patch: &Value,
        part: ClientPart,
    ) -> Result<Arc<Value>, ApiError> {
        Client::merge_patch(self.store.as_ref(), kind, ns, name, patch, part)
    }
    fn bind(&self, ns: &str, name: &str, node: &str) -> Result<(), ApiError> {
        Client::bind(self.store.as_ref(), ns, name, node)
    }
    fn delete(&self, kind: Kind, ns: &str, name: &str, opts: &Delete) -> Result<(), ApiError> {
        if kind == Kind::Pod {
            self.refuse()?;
        }
        Client::delete(self.store.as_ref(), kind, ns, name, opts)
    }
    fn position(&self) -> u64 {
        Client::position(self.store.as_ref())
    }
    fn changes_since(&self, position: u64) -> Result<(Vec<Change>, u64), Gone> {
        Client::changes_since(self.store.as_ref(), position)
    }
    fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        Client::subscribe(self.store.as_ref())
    }
    fn clock(&self) -> &crate::clock::Clock {
        Client::clock(self.store.as_ref())
    }
}

#[tokio::test]
async fn a_stopped_pods_status_and_delete_that_the_api_refused_are_made_once_it_answers_again() {
    let e = env(false);
    let outage = Arc::new(Outage {
        store: e.store.clone(),
        down: AtomicBool::new(false),
        refused: Notify::new(),
    });
    let kubelet = Arc::new(Kubelet::new(outage.clone(), Config::default()));
    kubelet.spawn(e.shutdown.clone());
    e.create(
        "pods",
        pod("p", json!([ { "name": "c", "image": "busybox" } ])),
    );
    e.wait_running("p").await;
    // The API server goes down as the pod is deleted: the kubelet stops the pod, and its last
    // status and its delete are refused.
    outage.down.store(true, Ordering::SeqCst);
    let refused = outage.refused.notified();
    e.delete("pods", "p").await;
    tokio::time::timeout(WAIT, refused)
        .await
        .unwrap_or_else(|_| panic!("the kubelet never asked the API to finish pod p"));
    assert!(
        e.store.get_opt(&rt("pods"), "default", "p").is_some(),
        "the delete was refused, so the pod is still there"
    );
    // The API answers again: the kubelet's retry, due a moment later, finishes the pod.
    outage.down.store(false, Ordering::SeqCst);
    e.store.clock().advance(Duration::from_secs(2));
    e.wait_gone("p").await;
}

/// The Node and Lease the kubelet writes, read back from the store.
mod registration {
    use crate::client::{Client, Kind};
    use crate::store::{Store, StoreSettings, WriteOptions};
    use fakekube_kubelet::kubelet::{Config, Role};
    use fakekube_kubelet::pod::{HOST_IP, NODE_NAME};
    use fakekube_kubelet::registration::{NODE_LEASE_NAMESPACE, register, renew_lease};
    use serde_json::{Value, json};
    use std::sync::Arc;

    fn store() -> Store {
        let s = Store::new(StoreSettings::default(), Arc::default());
        let ns = s.registry().find("", "v1", "namespaces").expect("served");
        s.create(
            &ns,
            "",
            json!({ "metadata": { "name": NODE_LEASE_NAMESPACE } }),
            WriteOptions::default(),
        )
        .expect("namespace");
        s
    }

    #[test]
    fn the_node_is_ready_and_its_lease_is_held_by_it() {
        let s = store();
        register(&s, &Config::default(), 33, 10250);
        renew_lease(&s, NODE_NAME);
        let n = Client::get(&s, Kind::Node, "", NODE_NAME).expect("registered");
        let ready = n["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(ready["status"], "True");
        assert_eq!(n["status"]["addresses"][0]["address"], HOST_IP);
        assert_eq!(n["status"]["nodeInfo"]["kubeletVersion"], "v1.33.1");
        assert_eq!(n["spec"]["podCIDR"], "10.244.0.0/24");
        let first = Client::get(&s, Kind::Lease, NODE_LEASE_NAMESPACE, NODE_NAME).expect("lease");
        assert_eq!(first["spec"]["holderIdentity"], NODE_NAME);
        assert_eq!(
            first["metadata"]["ownerReferences"][0]["uid"],
            n["metadata"]["uid"]
        );
        renew_lease(&s, NODE_NAME);
        let second = Client::get(&s, Kind::Lease, NODE_LEASE_NAMESPACE, NODE_NAME).expect("lease");
        let renewed = |l: &Value| l["spec"]["renewTime"].as_str().unwrap_or("").to_string();
        assert!(renewed(&second) >= renewed(&first) && renewed(&first).ends_with('Z'));
        assert_eq!(first["metadata"]["uid"], second["metadata"]["uid"]);
    }

    #[test]
    fn a_node_of_a_cluster_sets_only_the_labels_a_kubelet_may_and_rewrites_its_status() {
        let s = store();
        let config = Config {
            node_name: "worker-2".into(),
            host_ip: "127.0.0.1".into(),
            pod_subnet: 2,
            role: Role::Node,
            ..Config::default()
        };
        register(&s, &config, 36, 40001);
        register(&s, &config, 36, 40002);
        let n = Client::get(&s, Kind::Node, "", "worker-2").expect("registered");
        let labels = n["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(
            labels
                .keys()
                .all(|k| !k.starts_with("node-role.kubernetes.io/"))
        );
        assert_eq!(labels["kubernetes.io/hostname"], "worker-2");
        assert_eq!(n["spec"].get("podCIDR"), None);
        assert_eq!(n["status"]["addresses"][0]["address"], "127.0.0.1");
        assert_eq!(
            n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"],
            40002
        );
    }
}
