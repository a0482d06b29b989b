//! The fake kubelet (with the scheduler and the volume provisioner it needs): runs pods in the
//! hermetic runtime and answers for their containers when `pods/exec`, `pods/attach` and
//! `pods/log` need them.
//!
//! # What it does
//!
//! - **The Node** (`registration`): the kubelet registers [`NODE_NAME`](pod::NODE_NAME) and renews
//!   its Lease in `kube-node-lease`.
//! - **Scheduling.** A pod without `spec.nodeName` gets [`NODE_NAME`](pod::NODE_NAME) (a
//!   main-resource write, as a binding makes), unless a PersistentVolumeClaim it mounts does not
//!   exist or the node is cordoned (`spec.unschedulable`, and the pod does not tolerate it):
//!   then it stays Pending with `PodScheduled=False` (`Unschedulable`) until the claim appears
//!   or the node is uncordoned. Pods bound to another node are left alone.
//! - **Provisioning.** Every PersistentVolumeClaim is bound at once (`spec.volumeName`
//!   `pvc-<uid>`, `status.phase=Bound`, `accessModes`, `capacity` from the request). Each claim
//!   has its storage, a runtime [`Volume`], kept here by claim uid: it outlives the pods that
//!   mount it and is dropped when the claim is deleted.
//! - **Pods.** A scheduled pod is admitted at once (Pending, `ContainerCreating`); after the
//!   start delay its sandbox exists (pod IP `10.244.x.y`) and each container starts. A container
//!   runs its main process (`command` + `args`, or the fake images' default keep-alive, which
//!   exits on SIGTERM) through [`fakekube_runtime::exec`] in a fresh root filesystem with the pod's
//!   volumes mounted; its output is kept (the last 64 KiB per run, line by line with the time
//!   each line began, for `pods/log`), and the log of a run ends when the run does. When the process exits the
//!   restart policy decides: a restart after a back-off (`CrashLoopBackOff`, `restartCount`,
//!   `lastState`), or the end (phase Succeeded or Failed once every container is done).
//! - **Images** ([`Images`]): a missing image gives `ErrImagePull`, then `ImagePullBackOff`,
//!   retried with back-off (and at once when the image is cleared); a crashing image's container
//!   exits 1 as soon as it starts.
//! - **Deletion.** A pod marked for deletion is stopped (its containers end with 137); a pod
//!   gone from the store is forgotten. Either way its cancellation token fires, ending the main
//!   processes and every exec running in the pod.
//!
//! Status is written through the status subresource, only when it changes, as a real kubelet
//! words it (conditions with `lastTransitionTime`, `hostIP(s)`, `podIP(s)`, `startTime`,
//! `containerStatuses`, `qosClass`).
//!
//! # How it runs
//!
//! One task, driven by the store's change log (the log watches read; a full resync when it no
//! longer reaches back), by exit reports of main processes, by changes to [`Images`], and by its
//! own deadlines (start delay, back-offs), sleeping until the earliest one. No polling.
//!
//! # Deviations from a real kubelet
//!
//! - Back-offs use the configured base (doubling, at most 30 times the base) instead of 10 s
//!   (at most 5 min); the messages still print the real durations (`back-off 10s …`,
//!   `back-off 20s …`). A container that ran for 60 times the base has its back-off reset.
//!   The first restart waits a back-off too (a real kubelet restarts the first time at once).
//! - No probes (a running container is ready), no init containers run (each is reported as
//!   completed), no ephemeral containers, no resource accounting, no events.
//! - Volumes: `persistentVolumeClaim`, `emptyDir`, `secret`, `configMap`, `downwardAPI` and
//!   `projected` (with its bound `serviceAccountToken`) are served, their files written once at
//!   the pod's start (`volumes`); any other volume type is an empty directory. `subPath` and `readOnly` are ignored.
//!   A claim that disappears between scheduling and start is mounted as an empty volume.
//! - `configMapKeyRef`/`configMapRef` variables always fail unless optional (the kubelet does
//!   not read ConfigMaps for variables yet); `resourceFieldRef` variables are left out.
//! - A container that cannot start (no such program) ends with exit code 128 and reason
//!   `StartError` and is restarted as the policy says, without a separate `RunContainerError`.

pub use crate::command::{CommandCall, CommandError};
use crate::images;
pub use crate::images::Images;
pub use crate::output::{Line, OutputLog};

use crate::client::{Client, Kind};
use crate::events::{Emitter, Recorder};
use crate::pod::{self, CState, PodRun};
use crate::status::{ApiError, Target};
use bytes::Bytes;
use fakekube_runtime::{PodFs, PodNetwork, ProcessTable, Programs};
use http::StatusCode;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

/// Where an exec runs: a running container of a pod.
#[derive(Clone)]
pub struct ExecTarget {
    /// The pod's filesystem (its root and its volumes).
    pub fs: PodFs,
    /// The programs the container can run, with those registered by tests.
    pub commands: Programs,
    /// The container's environment (its `env`, plus `HOSTNAME` = the pod name, `PATH`, `HOME`).
    pub env: Vec<(String, String)>,
    /// The container's `workingDir`, or `/`.
    pub cwd: String,
    /// Fires when the pod is deleted or the container stops: running execs end.
    pub cancel: CancellationToken,
    /// The container's processes: an exec is one more of them.
    pub processes: ProcessTable,
    /// The pod's network, shared with its containers.
    pub network: PodNetwork,
}

/// Where a port-forward connects: the network of a pod whose sandbox runs.
#[derive(Debug, Clone)]
pub struct PortForwardTarget {
    /// The pod's network.
    pub network: PodNetwork,
    /// The sandbox id containerd would report (64 hex digits), for error messages.
    pub sandbox_id: String,
    /// The sandbox's network namespace path (`/var/run/netns/cni-…`), for error messages.
    pub netns: String,
    /// Fires when the pod stops: forwarded connections end.
    pub cancel: CancellationToken,
}

/// Where an attach connects: the main process of a running container.
#[derive(Debug)]
pub struct AttachTarget {
    /// The process's output (stdout and stderr interleaved) from now on. A reader that falls
    /// more than 256 chunks behind misses some (`RecvError::Lagged`).
    pub output: broadcast::Receiver<Bytes>,
    /// The process's stdin, when the container has `stdin: true`.
    pub stdin: Option<mpsc::Sender<Bytes>>,
    /// Fires when the process ends or the pod is deleted.
    pub cancel: CancellationToken,
}

/// Settings of the kubelet.
#[derive(Debug, Clone)]
pub struct Config {
    /// From admission to the sandbox and the containers' start.
    pub start_delay: Duration,
    /// The first crash or pull back-off; each next one doubles, up to 30 times this.
    pub backoff: Duration,
    /// Processes each container may run at once.
    pub process_limit: usize,
    /// Bytes all pods' filesystems may hold together.
    pub storage_budget: u64,
    /// The node it runs as: the Node it registers, the pods it runs.
    pub node_name: String,
    /// The node's InternalIP, which pods report as `hostIP` (reported, never dialled).
    pub host_ip: String,
    /// The third octet of its pods' IPs (`10.244.<subnet>.x`): each node its own `/24`.
    pub pod_subnet: u8,
    /// Whether it also schedules (binds unbound pods to its node, as the embedded fake has no
    /// scheduler) and provisions claims.
    pub role: Role,
}

/// What the kubelet does besides running the pods bound to its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The embedded fake's only node: it also schedules every pod to itself and binds every
    /// claim at once (the scheduler and the volume binder the fake has no other stand-in for).
    AllInOne,
    /// A node of a cluster with a scheduler and a volume controller: it provisions a
    /// PersistentVolume for each pending claim (as a dynamic provisioner does, pre-bound to the
    /// claim), and leaves binding pods and claims to the control plane.
    Node,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            start_delay: Duration::from_millis(2),
            backoff: Duration::from_millis(10),
            process_limit: fakekube_runtime::DEFAULT_PROCESS_LIMIT,
            storage_budget: DEFAULT_STORAGE_BUDGET,
            node_name: pod::NODE_NAME.to_string(),
            host_ip: pod::HOST_IP.to_string(),
            pod_subnet: 0,
            role: Role::AllInOne,
        }
    }
}

/// What the kubelet keeps between passes.
#[derive(Debug, Default)]
pub struct State {
    /// Admitted pods by uid.
    pub pods: HashMap<String, PodRun>,
    /// Pod uid by (namespace, name).
    pub names: HashMap<(String, String), String>,
    /// Claim storage by PVC uid.
    pub volumes: HashMap<String, fakekube_runtime::Volume>,
    /// Pod IPs handed out so far.
    pub next_ip: u32,
}

/// The fake kubelet of one server.
#[derive(Debug)]
pub struct Kubelet {
    /// The API it reads pods from and writes status to.
    pub(crate) api: Arc<dyn Client>,
    /// The settings.
    pub(crate) config: Config,
    /// The fake registry's marks.
    pub(crate) images: Images,
    /// The programs of every container, with those registered by tests.
    pub(crate) commands: Programs,
    /// The pods it runs and the claims' storage.
    pub(crate) state: Mutex<State>,
    /// Images on the node (normalised), for the pull Events. Its own lock: pulls happen while
    /// `state` is held.
    pub(crate) pulled: Mutex<HashSet<String>>,
    /// The kubelet's Events (`source.component: kubelet`, the node as host).
    pub(crate) recorder: Recorder,
    /// The scheduler's Events (`Scheduled`, `FailedScheduling`).
    pub(crate) scheduler: Emitter,
    /// Connections made to Services so far: whose turn the next one is (round robin).
    pub(crate) connections: AtomicUsize,
    /// The kubelet itself, once spawned: what its pods' cluster networks reach it by.
    pub(crate) me: OnceLock<Weak<Kubelet>>,
}

/// Bytes all pods' filesystems may hold together unless the server is told otherwise.
pub const DEFAULT_STORAGE_BUDGET: u64 = 512 << 20;

impl Kubelet {
    /// A kubelet on `api`; [`Kubelet::spawn`] starts it.
    pub fn new(api: Arc<dyn Client>, config: Config) -> Self {
        let commands = fakekube_programs::registry();
        commands.set_storage_budget(fakekube_runtime::StorageBudget::new(config.storage_budget));
        let recorder = Recorder::new("kubelet", &config.node_name);
        Kubelet {
            api,
            config,
            images: Images::default(),
            commands,
            state: Mutex::new(State::default()),
            pulled: Mutex::default(),
            recorder,
            scheduler: Emitter::new("default-scheduler", "fakekube-control-plane"),
            connections: AtomicUsize::new(0),
            me: OnceLock::new(),
        }
    }

    /// The node it runs as.
    pub fn node_name(&self) -> &str {
        &self.config.node_name
    }

    /// The bytes all pods' filesystems hold now.
    pub fn storage_used(&self) -> u64 {
        self.commands.storage_budget().used()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The images on the node (taken while `state` may be held; never the other way round).
    pub(crate) fn pulled(&self) -> MutexGuard<'_, HashSet<String>> {
        self.pulled.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The fake registry's marks.
    pub fn images(&self) -> &Images {
        &self.images
    }

    /// Registers a test's command under `name` for every container (a registered name is found
    /// before any file of that name, by `exec` and by the shell).
    pub fn register_command<F, Fut>(&self, name: &str, handler: F)
    where
        F: Fn(CommandCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        let handler = Arc::new(handler);
        self.commands.register(name, move |process| {
            let handler = handler.clone();
            async move { handler(CommandCall::new(process)).await }
        });
    }

    /// The pod and the container an exec, attach or log request is about, with the API
    /// server's errors: 404 for a missing pod, 400 when the container is ambiguous or unknown
    /// or the pod has no node.
    fn resolve(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
    ) -> Result<(Arc<Value>, String), ApiError> {
        let obj = self.pod(ns, pod)?;
        let chosen = container_of(&obj, pod, container)?;
        require_node(&obj, pod)?;
        Ok((obj, chosen))
    }

    /// Pod `ns/pod` from the API, or the API server's 404.
    pub fn pod(&self, ns: &str, pod: &str) -> Result<Arc<Value>, ApiError> {
        self.api.get(Kind::Pod, ns, pod).ok_or_else(|| {
            ApiError::not_found(Target {
                group: "",
                resource: "pods",
                kind: "Pod",
                name: pod,
            })
        })
    }

    /// The running container `container` of pod `ns/pod`, or the Status the API server answers
    /// when there is none. With an empty `container` the pod's only container is meant (the API
    /// server's rule; choosing by the `kubectl.kubernetes.io/default-container` annotation is
    /// kubectl's job, before it sends the request). Errors: 404 `pods "x" not found`; 400
    /// `a container name must be specified for pod x, choose one of: [a b]`, `container y is
    /// not valid for pod x`, `pod x does not have a host assigned`; and for a container that is
    /// not running (not started yet, waiting, exited, pod finished) what the kubelet answers,
    /// HTTP 500 with the message `container not found ("c")` — clients show it as
    /// `unable to upgrade connection: container not found ("c")`, and the API server's v5
    /// translator as `Internal error occurred: unable to upgrade connection: …`.
    pub fn exec_target(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
    ) -> Result<ExecTarget, ApiError> {
        let (obj, name) = self.resolve(ns, pod, container)?;
        let uid = crate::meta::meta_str(&obj, "uid").unwrap_or("");
        let st = self.lock();
        st.pods
            .get(uid)
            .and_then(|p| p.containers.iter().find(|c| c.name == name).map(|c| (p, c)))
            .and_then(|(p, c)| match &c.state {
                CState::Running(r) => Some(ExecTarget {
                    fs: r.fs.clone(),
                    commands: self.commands.clone(),
                    env: r.env.clone(),
                    cwd: r.cwd.clone(),
                    cancel: r.cancel.clone(),
                    network: p.network.clone(),
                    processes: r.processes.clone(),
                }),
                _ => None,
            })
            .ok_or_else(|| container_not_found(&name))
    }

    /// The network of pod `ns/pod`, for `pods/portforward`, with the API server's errors (404
    /// for a missing pod, 400 `pod x does not have a host assigned`) and the kubelet's for a
    /// pod whose sandbox is not running (not created yet, or the pod finished or is being
    /// deleted): HTTP 500 `pod not found ("x_ns")`.
    pub fn portforward_target(&self, ns: &str, pod: &str) -> Result<PortForwardTarget, ApiError> {
        let obj = self.pod(ns, pod)?;
        require_node(&obj, pod)?;
        let uid = crate::meta::meta_str(&obj, "uid").unwrap_or("");
        let st = self.lock();
        st.pods
            .get(uid)
            .filter(|p| p.ip.is_some() && !p.terminal)
            .map(|p| {
                let netns = images::hex64(&format!("netns{uid}"));
                PortForwardTarget {
                    network: p.network.clone(),
                    sandbox_id: images::hex64(&format!("sandbox{uid}")),
                    netns: format!(
                        "/var/run/netns/cni-{}-{}-{}-{}-{}",
                        &netns[0..8],
                        &netns[8..12],
                        &netns[12..16],
                        &netns[16..20],
                        &netns[20..32]
                    ),
                    cancel: p.cancel.clone(),
                }
            })
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalError",
                    format!("pod not found (\"{pod}_{ns}\")"),
                )
            })
    }

    /// The main process of the running container, for `pods/attach`; errors as for
    /// [`Kubelet::exec_target`].
    pub fn attach_target(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
    ) -> Result<AttachTarget, ApiError> {
        let (obj, name) = self.resolve(ns, pod, container)?;
        let uid = crate::meta::meta_str(&obj, "uid").unwrap_or("");
        let st = self.lock();
        st.pods
            .get(uid)
            .and_then(|p| p.containers.iter().find(|c| c.name == name))
            .and_then(|c| match (&c.state, &c.output) {
                (CState::Running(r), Some(out)) => Some(AttachTarget {
                    output: out.subscribe(),
                    stdin: r.stdin.clone(),
                    cancel: r.cancel.clone(),
                }),
                _ => None,
            })
            .ok_or_else(|| container_not_found(&name))
    }

    /// What the container's main process printed (the last 64 KiB of the current or last run;
    /// with `previous`, of the run before); errors as for [`Kubelet::log_source`], and an
    /// empty log for a pod not bound to a node.
    pub fn logs(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
        previous: bool,
    ) -> Result<Vec<u8>, ApiError> {
        Ok(match self.log_source(ns, pod, container, previous)? {
            LogSource::Unscheduled => Vec::new(),
            LogSource::Run(log) => log.tail(),
        })
    }

    /// Where `pods/log` reads: the log of the container's current (or last) run, or with
    /// `previous` of the run before. Errors as the API server and the kubelet give them: 404
    /// for a missing pod; 400 when the container is ambiguous or unknown; for a container
    /// that never ran, 400 `container "c" in pod "p" is waiting to start: ContainerCreating`
    /// (or `image can't be pulled`, `trying and failing to pull image`); for `previous`
    /// without a run before, 400 `previous terminated container "c" in pod "p" not found`. A
    /// pod not bound to a node has an empty log, as the API server answers for it.
    pub fn log_source(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
        previous: bool,
    ) -> Result<LogSource, ApiError> {
        let obj = self.pod(ns, pod)?;
        let name = container_of(&obj, pod, container)?;
        if require_node(&obj, pod).is_err() {
            return Ok(LogSource::Unscheduled);
        }
        let uid = crate::meta::meta_str(&obj, "uid").unwrap_or("");
        let st = self.lock();
        let c = st
            .pods
            .get(uid)
            .and_then(|p| p.containers.iter().find(|c| c.name == name));
        let log = if previous {
            c.and_then(|c| c.previous_output.clone())
        } else {
            c.and_then(|c| c.output.clone())
        };
        match (log, previous) {
            (Some(l), _) => Ok(LogSource::Run(l)),
            (None, true) => Err(ApiError::bad_request(format!(
                "previous terminated container \"{name}\" in pod \"{pod}\" not found"
            ))),
            (None, false) => {
                let reason = c
                    .map(|c| match &c.state {
                        CState::Waiting { reason, .. } => match *reason {
                            "ErrImagePull" => "image can't be pulled",
                            "ImagePullBackOff" => "trying and failing to pull image",
                            other => other,
                        },
                        _ => "ContainerCreating",
                    })
                    .unwrap_or("ContainerCreating");
                Err(ApiError::bad_request(format!(
                    "container \"{name}\" in pod \"{pod}\" is waiting to start: {reason}"
                )))
            }
        }
    }
}

/// The container a request names, as the API server picks it: the pod's only container when
/// none is named, else a container of the pod; 400 with the API server's wording otherwise
/// (every container listed, init containers first).
fn container_of(obj: &Value, pod: &str, container: &str) -> Result<String, ApiError> {
    let names = |key: &str| -> Vec<String> {
        obj.get("spec")
            .and_then(|s| s.get(key))
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|c| c.get("name").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let main = names("containers");
    let mut all = names("initContainers");
    all.extend(main.iter().cloned());
    all.extend(names("ephemeralContainers"));
    if container.is_empty() {
        match main.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {pod}"
            ))),
            _ => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {pod}, choose one of: [{}]",
                all.join(" ")
            ))),
        }
    } else if all.iter().any(|n| n == container) {
        Ok(container.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {pod}"
        )))
    }
}

/// Where `pods/log` reads, as [`Kubelet::log_source`] finds it.
#[derive(Debug)]
pub enum LogSource {
    /// The pod has no node yet: its log is empty.
    Unscheduled,
    /// The output of one run of the container (still written while the run goes on).
    Run(Arc<OutputLog>),
}

/// The API server's 400 for a pod not bound to a node.
fn require_node(obj: &Value, pod: &str) -> Result<(), ApiError> {
    let node = obj
        .get("spec")
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {pod} does not have a host assigned"
        )));
    }
    Ok(())
}

/// What the kubelet answers for a container that is not running.
fn container_not_found(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        format!("container not found (\"{name}\")"),
    )
}
