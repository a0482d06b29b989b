//! What the kubelet knows of each pod it runs: its containers (init containers first) and where
//! each is in its life, and the pod phase derived from them as the kubelet's `getPhase` does.

use crate::images;
use crate::output::OutputLog;
use crate::probe::{Probe, ProbeKind};
use bytes::Bytes;
use fakekube_runtime::{PodFs, PodNetwork, ProcessTable, Volume};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The node every pod is scheduled to.
pub const NODE_NAME: &str = "fakekube-node";
/// The node's address (`hostIP`).
pub const HOST_IP: &str = "172.18.0.2";

/// `spec.restartPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    /// Restart whatever the exit status.
    Always,
    /// Restart after a non-zero exit.
    OnFailure,
    /// Never restart.
    Never,
}

impl RestartPolicy {
    /// From the spec's string (`Always` when missing or unknown, the API server's default).
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("OnFailure") => RestartPolicy::OnFailure,
            Some("Never") => RestartPolicy::Never,
            _ => RestartPolicy::Always,
        }
    }

    /// Whether a container killed for a failed liveness or startup probe is started again:
    /// under any policy but `Never`, as the kubelet's `shouldRestartOnFailure` says.
    pub fn restarts_after_probe_kill(self) -> bool {
        self != RestartPolicy::Never
    }

    /// Whether a container that exited with `code` is started again.
    pub fn restarts(self, code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => code != 0,
            RestartPolicy::Never => false,
        }
    }
}

/// A finished run of a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// Exit status (128 when it could not start, 128 + n when a signal ended it).
    pub exit_code: i32,
    /// `Completed`, `Error`, `StartError`.
    pub reason: String,
    /// The termination message, when there is one.
    pub message: Option<String>,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339.
    pub finished_at: String,
    /// `containerd://…`.
    pub container_id: String,
}

impl Term {
    /// `{"terminated": {...}}`.
    pub fn to_state(&self) -> Value {
        let mut t = json!({
            "exitCode": self.exit_code,
            "reason": self.reason,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "containerID": self.container_id,
        });
        if let Some(m) = &self.message {
            t["message"] = json!(m);
        }
        json!({ "terminated": t })
    }
}

/// A running main process.
#[derive(Debug, Clone)]
pub struct Running {
    /// Which start of the container this is (exit and probe reports of older runs are stale).
    pub run: u64,
    /// RFC 3339.
    pub started_at: String,
    /// When, on the cluster's clock (probe delays and the back-off reset count from it).
    pub since: SystemTime,
    /// `containerd://…`.
    pub container_id: String,
    /// Fires when the run ends; execs in the container end with it.
    pub cancel: CancellationToken,
    /// The container's filesystem for this run.
    pub fs: PodFs,
    /// The container's environment.
    pub env: Vec<(String, String)>,
    /// The container's working directory.
    pub cwd: String,
    /// The main process's stdin, when the container has `stdin: true`.
    pub stdin: Option<mpsc::Sender<Bytes>>,
    /// The container's processes (the main one is pid 1), for signals and execs.
    pub processes: ProcessTable,
    /// Its probes.
    pub probes: Vec<Probe>,
    /// Being stopped (SIGTERM sent): SIGKILL follows at this time.
    pub kill_at: Option<SystemTime>,
    /// Killed for a failed liveness or startup probe under a policy other than `Never`: the
    /// kubelet starts it again whatever its exit code (`computePodActions` puts it in
    /// `ContainersToStart` with the kill), so `OnFailure` restarts it after an exit 0 too.
    pub restart_after_kill: bool,
}

impl Running {
    /// `started`: the startup probe has succeeded, or there is none.
    pub fn started(&self) -> bool {
        self.probe(ProbeKind::Startup)
            .is_none_or(|p| p.result == Some(true))
    }

    /// `ready`: started, and the readiness probe has succeeded (or there is none).
    pub fn ready(&self) -> bool {
        self.started()
            && self
                .probe(ProbeKind::Readiness)
                .is_none_or(|p| p.result == Some(true))
    }

    /// The probe of `kind`, if the container has one.
    pub fn probe(&self, kind: ProbeKind) -> Option<&Probe> {
        self.probes.iter().find(|p| p.kind == kind)
    }
}

/// Where a container is in its life.
#[derive(Debug, Clone)]
pub enum CState {
    /// Not started yet: waiting for the pod sandbox (`ContainerCreating`) or, for a main
    /// container, for the init containers (`PodInitializing`).
    Creating,
    /// Waiting with a reason (`ErrImagePull`, `ImagePullBackOff`,
    /// `CreateContainerConfigError`); something happens at `at`.
    Waiting {
        /// The waiting reason.
        reason: &'static str,
        /// Its message.
        message: String,
        /// When the kubelet looks again.
        at: SystemTime,
    },
    /// The main process runs.
    Running(Running),
    /// Waiting to restart after an exit (`CrashLoopBackOff`).
    BackOff {
        /// `back-off 10s restarting failed container=…`.
        message: String,
        /// When it restarts.
        at: SystemTime,
    },
    /// Exited for good.
    Terminated(Term),
}

/// One container of a pod.
#[derive(Debug)]
pub struct Container {
    /// Its name.
    pub name: String,
    /// Its image as the spec gives it.
    pub image: String,
    /// Its spec (the object in `spec.containers` or `spec.initContainers`).
    pub spec: Value,
    /// An init container (in `spec.initContainers`).
    pub init: bool,
    /// A restartable init container (`restartPolicy: Always`): a sidecar that keeps running.
    pub sidecar: bool,
    /// Its state.
    pub state: CState,
    /// The previous run (`lastState`).
    pub last: Option<Term>,
    /// `restartCount`.
    pub restarts: u32,
    /// Consecutive crash back-offs (the exponent of the next one).
    pub crash_backoffs: u32,
    /// Consecutive failed pulls (the exponent of the next back-off).
    pub pull_backoffs: u32,
    /// Starts so far; the current run's number.
    pub runs: u64,
    /// The current (or last) run's output.
    pub output: Option<Arc<OutputLog>>,
    /// The run before it (`logs --previous`).
    pub previous_output: Option<Arc<OutputLog>>,
}

impl Container {
    /// A container not started yet.
    pub fn new(spec: &Value, init: bool) -> Self {
        let s = |k: &str| {
            spec.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Container {
            name: s("name"),
            image: s("image"),
            spec: spec.clone(),
            init,
            sidecar: init && s("restartPolicy") == "Always",
            state: CState::Creating,
            last: None,
            restarts: 0,
            crash_backoffs: 0,
            pull_backoffs: 0,
            runs: 0,
            output: None,
            previous_output: None,
        }
    }

    /// Whether its main process runs.
    pub fn is_running(&self) -> bool {
        matches!(self.state, CState::Running(_))
    }

    /// The running state, if it runs.
    pub fn running(&self) -> Option<&Running> {
        match &self.state {
            CState::Running(r) => Some(r),
            _ => None,
        }
    }

    /// The running state, if it runs.
    pub fn running_mut(&mut self) -> Option<&mut Running> {
        match &mut self.state {
            CState::Running(r) => Some(r),
            _ => None,
        }
    }

    /// Whether it counts as ready (`ready` of its status).
    pub fn ready(&self) -> bool {
        match &self.state {
            CState::Running(r) => r.ready(),
            CState::Terminated(t) => self.init && !self.sidecar && t.exit_code == 0,
            _ => false,
        }
    }

    /// Whether an init container is done with: a regular one completed, a sidecar started.
    pub fn init_done(&self) -> bool {
        if self.sidecar {
            return self.running().is_some_and(Running::started)
                || (self.runs > 0 && !matches!(self.state, CState::Creating));
        }
        matches!(&self.state, CState::Terminated(t) if t.exit_code == 0)
    }

    /// When something is due for it: a retry, a restart, a probe, a SIGKILL.
    pub fn deadline(&self) -> Option<SystemTime> {
        match &self.state {
            CState::Waiting { at, .. } | CState::BackOff { at, .. } => Some(*at),
            CState::Running(r) => r
                .probes
                .iter()
                .filter_map(|p| p.next_at)
                .chain(r.kill_at)
                .min(),
            _ => None,
        }
    }

    /// Its entry of `containerStatuses` (or `initContainerStatuses`); `initializing` says the
    /// pod's init containers are not done (a main container then waits `PodInitializing`).
    pub fn status(&self, initializing: bool) -> Value {
        let pulled = |id: &str| {
            json!({
                "image": images::normalize(&self.image),
                "imageID": images::image_id(&self.image),
                "containerID": id,
            })
        };
        let creating = if initializing && !self.init {
            "PodInitializing"
        } else {
            "ContainerCreating"
        };
        let (state, started, ids) = match &self.state {
            CState::Creating => (json!({ "waiting": { "reason": creating } }), false, None),
            CState::Waiting {
                reason, message, ..
            } => (
                json!({ "waiting": { "reason": reason, "message": message } }),
                false,
                self.last.as_ref().map(|t| pulled(&t.container_id)),
            ),
            CState::Running(r) => (
                json!({ "running": { "startedAt": r.started_at } }),
                r.started(),
                Some(pulled(&r.container_id)),
            ),
            CState::BackOff { message, .. } => (
                json!({ "waiting": { "reason": "CrashLoopBackOff", "message": message } }),
                false,
                self.last.as_ref().map(|t| pulled(&t.container_id)),
            ),
            CState::Terminated(t) => (t.to_state(), false, Some(pulled(&t.container_id))),
        };
        let mut out = json!({
            "name": self.name,
            "state": state,
            "lastState": self.last.as_ref().map(Term::to_state).unwrap_or_else(|| json!({})),
            "ready": self.ready(),
            "restartCount": self.restarts,
            "image": self.image,
            "imageID": "",
            "started": started,
        });
        if let Some(ids) = ids {
            out["image"] = ids["image"].clone();
            out["imageID"] = ids["imageID"].clone();
            out["containerID"] = ids["containerID"].clone();
        }
        out
    }
}

/// The pod phase, as the kubelet's `getPhase` computes it from the containers (init
/// containers first); `terminal` when the pod is being deleted and so ends with its containers.
pub fn phase(containers: &[Container], policy: RestartPolicy, terminal: bool) -> &'static str {
    let (mut pending_init, mut pending_sidecars, mut failed_init) = (0, 0, 0);
    let (mut waiting, mut running, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for c in containers.iter().filter(|c| c.init && !c.sidecar) {
        match &c.state {
            CState::Running(_) | CState::Creating => pending_init += 1,
            CState::Terminated(t) => failed_init += usize::from(t.exit_code != 0),
            CState::Waiting { .. } | CState::BackOff { .. } => match &c.last {
                Some(t) => failed_init += usize::from(t.exit_code != 0),
                None => pending_init += 1,
            },
        }
    }
    for c in containers.iter().filter(|c| c.sidecar) {
        match &c.state {
            CState::Running(r) => {
                pending_sidecars += usize::from(!r.started());
                running += 1;
            }
            CState::Terminated(_) => {}
            CState::Waiting { .. } | CState::BackOff { .. } => {
                pending_sidecars += usize::from(c.last.is_none());
                waiting += 1;
            }
            CState::Creating => pending_sidecars += 1,
        }
    }
    for c in containers.iter().filter(|c| !c.init) {
        match &c.state {
            CState::Running(_) => running += 1,
            CState::Terminated(t) => {
                stopped += 1;
                succeeded += usize::from(t.exit_code == 0);
            }
            CState::BackOff { .. } => stopped += 1,
            CState::Waiting { .. } | CState::Creating if c.last.is_some() => stopped += 1,
            CState::Waiting { .. } | CState::Creating => waiting += 1,
        }
    }
    if failed_init > 0 && policy == RestartPolicy::Never {
        return "Failed";
    }
    if pending_init > 0 || pending_sidecars > 0 || waiting > 0 {
        return "Pending";
    }
    if running > 0 {
        return "Running";
    }
    if stopped > 0 {
        if terminal {
            return if stopped == succeeded {
                "Succeeded"
            } else {
                "Failed"
            };
        }
        return match policy {
            RestartPolicy::Always => "Running",
            _ if stopped == succeeded => "Succeeded",
            RestartPolicy::Never => "Failed",
            RestartPolicy::OnFailure => "Running",
        };
    }
    "Pending"
}

/// Everything the kubelet keeps of one pod.
#[derive(Debug)]
pub struct PodRun {
    /// `metadata.uid`.
    pub uid: String,
    /// Namespace.
    pub ns: String,
    /// Name.
    pub name: String,
    /// The pod as admitted (its spec does not change while it runs): the store's revision,
    /// shared rather than copied.
    pub pod: Arc<Value>,
    /// `spec.restartPolicy`.
    pub policy: RestartPolicy,
    /// The sandbox: fires when the pod stops; every run and exec ends with it.
    pub cancel: CancellationToken,
    /// When the sandbox is created (the start delay); `None` once it is.
    pub start_at: Option<SystemTime>,
    /// The pod's IP, once the sandbox exists.
    pub ip: Option<String>,
    /// The sandbox's network: the ports its containers and execs listen on.
    pub network: PodNetwork,
    /// `startTime`.
    pub start_time: String,
    /// The init containers, in spec order, then the containers, in spec order.
    pub containers: Vec<Container>,
    /// The pod's volumes by name (PVC storage, emptyDirs, secrets).
    pub volumes: HashMap<String, Volume>,
    /// The pod is being deleted: nothing restarts, containers are stopped.
    pub deleting: bool,
    /// The pod reached Succeeded or Failed (or its containers stopped for its deletion).
    pub terminal: bool,
    /// The kubelet has deleted the stopped pod from the API (grace period 0).
    pub removed: bool,
    /// When the status write or the delete the API did not take (it was down, or restarting)
    /// is tried again, as the kubelet's status manager keeps trying until the API has them.
    pub retry_at: Option<SystemTime>,
    /// Why the kubelet evicted the pod, once it did (its status message).
    pub evicted: Option<String>,
    /// Condition memory, for `lastTransitionTime`.
    pub conds: HashMap<&'static str, (bool, String)>,
}

impl PodRun {
    /// A pod just admitted; its sandbox is created at `start_at`.
    pub fn new(
        pod: &Arc<Value>,
        start_at: SystemTime,
        cancel: CancellationToken,
        now: &str,
    ) -> Self {
        let md = |k: &str| {
            pod.get("metadata")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let spec = pod.get("spec");
        let list = |key: &str, init: bool| -> Vec<Container> {
            spec.and_then(|s| s.get(key))
                .and_then(Value::as_array)
                .map(|l| l.iter().map(|c| Container::new(c, init)).collect())
                .unwrap_or_default()
        };
        let mut containers = list("initContainers", true);
        containers.extend(list("containers", false));
        PodRun {
            uid: md("uid"),
            ns: md("namespace"),
            name: md("name"),
            pod: Arc::clone(pod),
            policy: RestartPolicy::parse(
                spec.and_then(|s| s.get("restartPolicy"))
                    .and_then(Value::as_str),
            ),
            cancel,
            start_at: Some(start_at),
            ip: None,
            network: PodNetwork::new(),
            start_time: now.to_string(),
            containers,
            volumes: HashMap::new(),
            deleting: false,
            terminal: false,
            removed: false,
            retry_at: None,
            evicted: None,
            conds: HashMap::new(),
        }
    }

    /// When something is next due for this pod.
    pub fn deadline(&self) -> Option<SystemTime> {
        self.containers
            .iter()
            .filter_map(Container::deadline)
            .chain(self.start_at)
            .min()
    }

    /// The current phase (a pod being deleted ends in a terminal phase).
    pub fn phase(&self) -> &'static str {
        if self.evicted.is_some() {
            return "Failed";
        }
        phase(&self.containers, self.policy, self.deleting)
    }

    /// Whether the init containers are done (regular ones completed, sidecars started).
    pub fn initialized(&self) -> bool {
        self.containers
            .iter()
            .filter(|c| c.init)
            .all(Container::init_done)
    }

    /// Whether any container's process runs.
    pub fn any_running(&self) -> bool {
        self.containers.iter().any(Container::is_running)
    }
}

/// `status.qosClass` from the containers' requests and limits.
pub fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| pod.get("spec").and_then(|s| s.get(*k)))
        .filter_map(Value::as_array)
        .flatten()
        .collect();
    let res = |c: &Value, kind: &str, name: &str| -> Option<String> {
        c.get("resources")
            .and_then(|r| r.get(kind))
            .and_then(|r| r.get(name))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
    };
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        for name in ["cpu", "memory"] {
            let limit = res(c, "limits", name);
            let request = res(c, "requests", name).or_else(|| limit.clone());
            if limit.is_some() || request.is_some() {
                any = true;
            }
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    if guaranteed {
        "Guaranteed"
    } else if any {
        "Burstable"
    } else {
        "BestEffort"
    }
}

/// The `n`-th pod IP: 10.244.0.2, 10.244.0.3, … (unique for 64 768 pods).
pub fn pod_ip(n: u32) -> String {
    let third = (n / 253) % 256;
    let fourth = n % 253 + 2;
    format!("10.244.{third}.{fourth}")
}

pub use crate::meta::go_duration;

/// The back-off a real kubelet would print for the `n`-th consecutive restart: 10 s doubling,
/// at most 5 minutes.
pub fn nominal_backoff_secs(n: u32) -> u64 {
    10u64.saturating_mul(1u64 << n.min(5)).min(300)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn term(code: i32) -> Term {
        Term {
            exit_code: code,
            reason: if code == 0 { "Completed" } else { "Error" }.into(),
            message: None,
            started_at: "t0".into(),
            finished_at: "t1".into(),
            container_id: "containerd://x".into(),
        }
    }

    pub(crate) fn container(state: CState, last: Option<Term>) -> Container {
        let mut c = Container::new(&json!({ "name": "c", "image": "busybox" }), false);
        c.state = state;
        c.last = last;
        c
    }

    pub(crate) fn running() -> CState {
        CState::Running(Running {
            run: 1,
            started_at: "t0".into(),
            since: SystemTime::UNIX_EPOCH,
            container_id: "containerd://abc".into(),
            cancel: CancellationToken::new(),
            fs: PodFs::new(vec![]),
            env: vec![],
            cwd: "/".into(),
            stdin: None,
            processes: ProcessTable::new(),
            probes: vec![],
            kill_at: None,
            restart_after_kill: false,
        })
    }

    fn init(state: CState, last: Option<Term>) -> Container {
        let mut c = Container::new(&json!({ "name": "i", "image": "busybox" }), true);
        c.state = state;
        c.last = last;
        c
    }

    #[test]
    fn phase_is_pending_while_a_container_never_ran() {
        let cs = vec![
            container(running(), None),
            container(CState::Creating, None),
        ];
        assert_eq!(phase(&cs, RestartPolicy::Always, false), "Pending");
        let waiting = CState::Waiting {
            reason: "ErrImagePull",
            message: String::new(),
            at: SystemTime::UNIX_EPOCH,
        };
        assert_eq!(
            phase(&[container(waiting, None)], RestartPolicy::Always, false),
            "Pending"
        );
    }

    #[test]
    fn phase_of_a_crash_looping_container_is_running() {
        let backoff = CState::BackOff {
            message: String::new(),
            at: SystemTime::UNIX_EPOCH,
        };
        assert_eq!(
            phase(
                &[container(backoff, Some(term(1)))],
                RestartPolicy::Always,
                false
            ),
            "Running"
        );
    }

    #[test]
    fn phase_after_exits_follows_the_restart_policy() {
        let done = |code| vec![container(CState::Terminated(term(code)), None)];
        assert_eq!(phase(&done(0), RestartPolicy::Never, false), "Succeeded");
        assert_eq!(phase(&done(3), RestartPolicy::Never, false), "Failed");
        assert_eq!(
            phase(&done(0), RestartPolicy::OnFailure, false),
            "Succeeded"
        );
        assert_eq!(phase(&done(143), RestartPolicy::Always, true), "Failed");
        let mixed = vec![
            container(CState::Terminated(term(0)), None),
            container(CState::Terminated(term(2)), None),
        ];
        assert_eq!(phase(&mixed, RestartPolicy::Never, false), "Failed");
    }

    #[test]
    fn phase_is_pending_while_initializing_and_failed_when_init_fails_without_restarts() {
        let cs = vec![init(running(), None), container(CState::Creating, None)];
        assert_eq!(phase(&cs, RestartPolicy::Always, false), "Pending");
        let cs = vec![
            init(CState::Terminated(term(1)), None),
            container(CState::Creating, None),
        ];
        assert_eq!(phase(&cs, RestartPolicy::Never, false), "Failed");
        let backoff = CState::BackOff {
            message: String::new(),
            at: SystemTime::UNIX_EPOCH,
        };
        let cs = vec![
            init(backoff, Some(term(1))),
            container(CState::Creating, None),
        ];
        assert_eq!(phase(&cs, RestartPolicy::Always, false), "Pending");
    }

    #[test]
    fn restart_policies_decide_on_the_exit_code() {
        assert!(RestartPolicy::Always.restarts(0));
        assert!(RestartPolicy::OnFailure.restarts(1));
        assert!(!RestartPolicy::OnFailure.restarts(0));
        assert!(!RestartPolicy::Never.restarts(1));
        assert!(RestartPolicy::Always.restarts_after_probe_kill());
        assert!(RestartPolicy::OnFailure.restarts_after_probe_kill());
        assert!(!RestartPolicy::Never.restarts_after_probe_kill());
        assert_eq!(RestartPolicy::parse(None), RestartPolicy::Always);
    }

    #[test]
    fn a_running_container_reports_ids_and_readiness() {
        let s = container(running(), None).status(false);
        assert_eq!(s["ready"], true);
        assert_eq!(s["started"], true);
        assert_eq!(s["image"], "docker.io/library/busybox:latest");
        assert_eq!(s["containerID"], "containerd://abc");
        assert!(s["state"]["running"]["startedAt"].is_string());
        assert_eq!(s["lastState"], json!({}));
    }

    #[test]
    fn a_creating_container_has_no_container_id() {
        let s = container(CState::Creating, None).status(false);
        assert_eq!(s["state"]["waiting"]["reason"], "ContainerCreating");
        assert_eq!(s["image"], "busybox");
        assert_eq!(s["imageID"], "");
        assert!(s.get("containerID").is_none());
        let s = container(CState::Creating, None).status(true);
        assert_eq!(s["state"]["waiting"]["reason"], "PodInitializing");
    }

    #[test]
    fn qos_class_follows_requests_and_limits() {
        let pod =
            |res: Value| json!({ "spec": { "containers": [ { "name": "c", "resources": res } ] } });
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&pod(json!({ "requests": { "cpu": "100m" } }))),
            "Burstable"
        );
        assert_eq!(
            qos_class(&pod(json!({ "limits": { "cpu": "1", "memory": "1Gi" } }))),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&pod(json!({
                "limits": { "cpu": "1", "memory": "1Gi" },
                "requests": { "cpu": "500m", "memory": "1Gi" }
            }))),
            "Burstable"
        );
    }

    #[test]
    fn pod_ips_are_unique_and_valid() {
        let mut seen = std::collections::HashSet::new();
        for n in 0..2000 {
            let ip = pod_ip(n);
            let last: u32 = ip
                .rsplit('.')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            assert!((2..=254).contains(&last), "{ip}");
            assert!(seen.insert(ip));
        }
    }

    #[test]
    fn back_off_messages_use_the_real_kubelet_durations() {
        let shown: Vec<String> = (0..7)
            .map(|n| go_duration(nominal_backoff_secs(n)))
            .collect();
        assert_eq!(
            shown,
            ["10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"]
        );
    }
}
