//! What the kubelet knows of each pod it runs, and the pod status it derives from that, worded
//! as a real kubelet writes it.

use super::images;
use super::output::OutputLog;
use bytes::Bytes;
use fakekube_runtime::{PodFs, PodNetwork, ProcessTable, Volume};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The node every pod is scheduled to.
pub(crate) const NODE_NAME: &str = "fakekube-node";
/// The node's address (`hostIP`).
pub(crate) const HOST_IP: &str = "172.18.0.2";

/// `spec.restartPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestartPolicy {
    /// Restart whatever the exit status.
    Always,
    /// Restart after a non-zero exit.
    OnFailure,
    /// Never restart.
    Never,
}

impl RestartPolicy {
    /// From the spec's string (`Always` when missing or unknown, the API server's default).
    pub(crate) fn parse(s: Option<&str>) -> Self {
        match s {
            Some("OnFailure") => RestartPolicy::OnFailure,
            Some("Never") => RestartPolicy::Never,
            _ => RestartPolicy::Always,
        }
    }

    /// Whether a container that exited with `code` is started again.
    pub(crate) fn restarts(self, code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => code != 0,
            RestartPolicy::Never => false,
        }
    }
}

/// A finished run of a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Term {
    /// Exit status (128 when it could not start, 137 when killed).
    pub(crate) exit_code: i32,
    /// `Completed`, `Error`, `StartError`.
    pub(crate) reason: String,
    /// The termination message, when there is one.
    pub(crate) message: Option<String>,
    /// RFC 3339.
    pub(crate) started_at: String,
    /// RFC 3339.
    pub(crate) finished_at: String,
    /// `containerd://…`.
    pub(crate) container_id: String,
}

impl Term {
    /// `{"terminated": {...}}`.
    fn to_state(&self) -> Value {
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
pub(crate) struct Running {
    /// Which start of the container this is (exit reports of older runs are stale).
    pub(crate) run: u64,
    /// RFC 3339.
    pub(crate) started_at: String,
    /// When, for the back-off reset.
    pub(crate) since: Instant,
    /// `containerd://…`.
    pub(crate) container_id: String,
    /// Fires when the run ends; execs in the container end with it.
    pub(crate) cancel: CancellationToken,
    /// The container's filesystem for this run.
    pub(crate) fs: PodFs,
    /// The container's environment.
    pub(crate) env: Vec<(String, String)>,
    /// The container's working directory.
    pub(crate) cwd: String,
    /// The main process's stdin, when the container has `stdin: true`.
    pub(crate) stdin: Option<mpsc::Sender<Bytes>>,
    /// The container's processes (the main one is pid 1), for signals and execs.
    pub(crate) processes: ProcessTable,
}

/// Where a container is in its life.
#[derive(Debug, Clone)]
pub(crate) enum CState {
    /// Waiting for the pod sandbox (the start delay).
    Creating,
    /// Waiting with a reason (`ErrImagePull`, `ImagePullBackOff`,
    /// `CreateContainerConfigError`); something happens at `at`.
    Waiting {
        /// The waiting reason.
        reason: &'static str,
        /// Its message.
        message: String,
        /// When the kubelet looks again.
        at: Instant,
    },
    /// The main process runs.
    Running(Running),
    /// Waiting to restart after an exit (`CrashLoopBackOff`).
    BackOff {
        /// `back-off 10s restarting failed container=…`.
        message: String,
        /// When it restarts.
        at: Instant,
    },
    /// Exited for good.
    Terminated(Term),
}

/// One container of a pod.
#[derive(Debug)]
pub(crate) struct Container {
    /// Its name.
    pub(crate) name: String,
    /// Its image as the spec gives it.
    pub(crate) image: String,
    /// Its spec (the object in `spec.containers`).
    pub(crate) spec: Value,
    /// Its state.
    pub(crate) state: CState,
    /// The previous run (`lastState`).
    pub(crate) last: Option<Term>,
    /// `restartCount`.
    pub(crate) restarts: u32,
    /// Consecutive crash back-offs (the exponent of the next one).
    pub(crate) crash_backoffs: u32,
    /// Consecutive failed pulls (the exponent of the next back-off).
    pub(crate) pull_backoffs: u32,
    /// Starts so far; the current run's number.
    pub(crate) runs: u64,
    /// The current (or last) run's output.
    pub(crate) output: Option<Arc<OutputLog>>,
    /// The run before it (`logs --previous`).
    pub(crate) previous_output: Option<Arc<OutputLog>>,
}

impl Container {
    /// A container not started yet.
    pub(crate) fn new(spec: &Value) -> Self {
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
    pub(crate) fn is_running(&self) -> bool {
        matches!(self.state, CState::Running(_))
    }

    /// When something is due for it.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match &self.state {
            CState::Waiting { at, .. } | CState::BackOff { at, .. } => Some(*at),
            _ => None,
        }
    }

    /// Its entry of `containerStatuses`.
    pub(crate) fn status(&self) -> Value {
        let pulled = |id: &str| {
            json!({
                "image": images::normalize(&self.image),
                "imageID": images::image_id(&self.image),
                "containerID": id,
            })
        };
        let (state, ready, started, ids) = match &self.state {
            CState::Creating => (
                json!({ "waiting": { "reason": "ContainerCreating" } }),
                false,
                false,
                None,
            ),
            CState::Waiting {
                reason, message, ..
            } => (
                json!({ "waiting": { "reason": reason, "message": message } }),
                false,
                false,
                self.last.as_ref().map(|t| pulled(&t.container_id)),
            ),
            CState::Running(r) => (
                json!({ "running": { "startedAt": r.started_at } }),
                true,
                true,
                Some(pulled(&r.container_id)),
            ),
            CState::BackOff { message, .. } => (
                json!({ "waiting": { "reason": "CrashLoopBackOff", "message": message } }),
                false,
                false,
                self.last.as_ref().map(|t| pulled(&t.container_id)),
            ),
            CState::Terminated(t) => (t.to_state(), false, false, Some(pulled(&t.container_id))),
        };
        let mut out = json!({
            "name": self.name,
            "state": state,
            "lastState": self.last.as_ref().map(Term::to_state).unwrap_or_else(|| json!({})),
            "ready": ready,
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

/// The pod phase, computed as the kubelet's `getPhase` does for pods without init containers.
pub(crate) fn phase(containers: &[Container], policy: RestartPolicy) -> &'static str {
    let (mut waiting, mut running, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for c in containers {
        match &c.state {
            CState::Running(_) => running += 1,
            CState::Terminated(t) => {
                stopped += 1;
                if t.exit_code == 0 {
                    succeeded += 1;
                }
            }
            CState::BackOff { .. } => stopped += 1,
            CState::Waiting { .. } | CState::Creating if c.last.is_some() => stopped += 1,
            CState::Waiting { .. } | CState::Creating => waiting += 1,
        }
    }
    if waiting > 0 {
        return "Pending";
    }
    if running > 0 {
        return "Running";
    }
    if stopped > 0 {
        return match policy {
            RestartPolicy::Always => "Running",
            RestartPolicy::OnFailure if stopped == succeeded => "Succeeded",
            RestartPolicy::OnFailure => "Running",
            RestartPolicy::Never if stopped == succeeded => "Succeeded",
            RestartPolicy::Never => "Failed",
        };
    }
    "Pending"
}

/// A condition's remembered status and when it last changed.
#[derive(Debug, Clone)]
struct CondMemory {
    status: bool,
    since: String,
}

/// Everything the kubelet keeps of one pod.
#[derive(Debug)]
pub(crate) struct PodRun {
    /// `metadata.uid`.
    pub(crate) uid: String,
    /// Namespace.
    pub(crate) ns: String,
    /// Name.
    pub(crate) name: String,
    /// The pod as admitted (its spec does not change while it runs).
    pub(crate) pod: Value,
    /// `spec.restartPolicy`.
    pub(crate) policy: RestartPolicy,
    /// The sandbox: fires when the pod stops; every run and exec ends with it.
    pub(crate) cancel: CancellationToken,
    /// When the sandbox is created (the start delay); `None` once it is.
    pub(crate) start_at: Option<Instant>,
    /// The pod's IP, once the sandbox exists.
    pub(crate) ip: Option<String>,
    /// The sandbox's network: the ports its containers and execs listen on.
    pub(crate) network: PodNetwork,
    /// `startTime`.
    pub(crate) start_time: String,
    /// The containers, in spec order.
    pub(crate) containers: Vec<Container>,
    /// The pod's volumes by name (PVC storage, emptyDirs, secrets).
    pub(crate) volumes: HashMap<String, Volume>,
    /// The pod is being deleted: nothing restarts.
    pub(crate) deleting: bool,
    /// The pod reached Succeeded or Failed (or was stopped for deletion).
    pub(crate) terminal: bool,
    /// Why the kubelet evicted the pod, once it did (its status message).
    pub(crate) evicted: Option<String>,
    /// Condition memory, for `lastTransitionTime`.
    conds: HashMap<&'static str, CondMemory>,
}

impl PodRun {
    /// A pod just admitted; its sandbox is created at `start_at`.
    pub(crate) fn new(
        pod: &Value,
        start_at: Instant,
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
        let containers = spec
            .and_then(|s| s.get("containers"))
            .and_then(Value::as_array)
            .map(|l| l.iter().map(Container::new).collect())
            .unwrap_or_default();
        PodRun {
            uid: md("uid"),
            ns: md("namespace"),
            name: md("name"),
            pod: pod.clone(),
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
            evicted: None,
            conds: HashMap::new(),
        }
    }

    /// When something is next due for this pod.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.containers
            .iter()
            .filter_map(Container::deadline)
            .chain(self.start_at)
            .min()
    }

    /// The current phase (a pod being deleted ends as if its restart policy were `Never`).
    pub(crate) fn phase(&self) -> &'static str {
        if self.evicted.is_some() {
            return "Failed";
        }
        let policy = if self.deleting {
            RestartPolicy::Never
        } else {
            self.policy
        };
        phase(&self.containers, policy)
    }

    /// A condition entry, keeping its `lastTransitionTime` while its status holds.
    fn condition(
        &mut self,
        ty: &'static str,
        status: bool,
        reason: Option<&str>,
        message: Option<String>,
        now: &str,
    ) -> Value {
        let mem = self.conds.entry(ty).or_insert_with(|| CondMemory {
            status,
            since: now.to_string(),
        });
        if mem.status != status {
            mem.status = status;
            mem.since = now.to_string();
        }
        let mut c = json!({
            "type": ty,
            "status": if status { "True" } else { "False" },
            "lastProbeTime": null,
            "lastTransitionTime": mem.since,
        });
        if let Some(r) = reason {
            c["reason"] = json!(r);
        }
        if let Some(m) = message {
            c["message"] = json!(m);
        }
        c
    }

    /// The pod's `status`, as a kubelet writes it.
    pub(crate) fn status(&mut self, now: &str) -> Value {
        let phase = self.phase();
        let completed = matches!(phase, "Succeeded" | "Failed");
        let unready: Vec<&str> = self
            .containers
            .iter()
            .filter(|c| !c.is_running())
            .map(|c| c.name.as_str())
            .collect();
        let all_ready = unready.is_empty() && !self.containers.is_empty();
        let (not_ready_reason, not_ready_message) = if completed {
            (Some("PodCompleted"), None)
        } else {
            (
                Some("ContainersNotReady"),
                Some(format!(
                    "containers with unready status: [{}]",
                    unready.join(" ")
                )),
            )
        };
        let sandbox = self.ip.is_some() && !self.terminal && !completed;
        let ready_cond = |all_ready: bool| {
            if all_ready {
                (None, None)
            } else {
                (not_ready_reason, not_ready_message.clone())
            }
        };
        let (rr, rm) = ready_cond(all_ready);
        let conditions = vec![
            self.condition("PodReadyToStartContainers", sandbox, None, None, now),
            self.condition(
                "Initialized",
                true,
                completed.then_some("PodCompleted"),
                None,
                now,
            ),
            self.condition("Ready", all_ready, rr, rm.clone(), now),
            self.condition("ContainersReady", all_ready, rr, rm, now),
            self.condition("PodScheduled", true, None, None, now),
        ];
        let mut status = json!({
            "phase": phase,
            "conditions": conditions,
            "hostIP": HOST_IP,
            "hostIPs": [ { "ip": HOST_IP } ],
        });
        if let Some(ip) = &self.ip {
            status["podIP"] = json!(ip);
            status["podIPs"] = json!([{ "ip": ip }]);
        }
        status["startTime"] = json!(self.start_time);
        let inits = init_container_statuses(&self.pod);
        if !inits.is_empty() {
            status["initContainerStatuses"] = json!(inits);
        }
        status["containerStatuses"] = json!(
            self.containers
                .iter()
                .map(Container::status)
                .collect::<Vec<_>>()
        );
        status["qosClass"] = json!(qos_class(&self.pod));
        if let Some(message) = &self.evicted {
            status["reason"] = json!("Evicted");
            status["message"] = json!(message);
        }
        status
    }
}

/// Init containers are not run: each is reported as having completed at once.
fn init_container_statuses(pod: &Value) -> Vec<Value> {
    let Some(list) = pod
        .get("spec")
        .and_then(|s| s.get("initContainers"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let start = pod
        .get("metadata")
        .and_then(|m| m.get("creationTimestamp"))
        .cloned()
        .unwrap_or(Value::Null);
    list.iter()
        .map(|c| {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            json!({
                "name": name,
                "state": { "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": start,
                    "finishedAt": start,
                    "containerID": format!("containerd://{}", images::hex64(&format!("{name}{start}"))),
                } },
                "lastState": {},
                "ready": true,
                "restartCount": 0,
                "image": images::normalize(image),
                "imageID": images::image_id(image),
                "containerID": format!("containerd://{}", images::hex64(&format!("{name}{start}"))),
                "started": false,
            })
        })
        .collect()
}

/// `status.qosClass` from the containers' requests and limits.
pub(crate) fn qos_class(pod: &Value) -> &'static str {
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
pub(crate) fn pod_ip(n: u32) -> String {
    let third = (n / 253) % 256;
    let fourth = n % 253 + 2;
    format!("10.244.{third}.{fourth}")
}

/// A Go `time.Duration` string for whole seconds (`10s`, `1m20s`, `5m0s`).
pub(crate) fn go_duration(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// The back-off a real kubelet would print for the `n`-th consecutive restart: 10 s doubling,
/// at most 5 minutes.
pub(crate) fn nominal_backoff_secs(n: u32) -> u64 {
    10u64.saturating_mul(1u64 << n.min(5)).min(300)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(code: i32) -> Term {
        Term {
            exit_code: code,
            reason: if code == 0 { "Completed" } else { "Error" }.into(),
            message: None,
            started_at: "t0".into(),
            finished_at: "t1".into(),
            container_id: "containerd://x".into(),
        }
    }

    fn container(state: CState, last: Option<Term>) -> Container {
        let mut c = Container::new(&json!({ "name": "c", "image": "busybox" }));
        c.state = state;
        c.last = last;
        c
    }

    fn running() -> CState {
        CState::Running(Running {
            run: 1,
            started_at: "t0".into(),
            since: Instant::now(),
            container_id: "containerd://abc".into(),
            cancel: CancellationToken::new(),
            fs: PodFs::new(vec![]),
            env: vec![],
            cwd: "/".into(),
            stdin: None,
            processes: ProcessTable::new(),
        })
    }

    #[test]
    fn phase_is_pending_while_a_container_never_ran() {
        let cs = vec![
            container(running(), None),
            container(CState::Creating, None),
        ];
        assert_eq!(phase(&cs, RestartPolicy::Always), "Pending");
        let waiting = CState::Waiting {
            reason: "ErrImagePull",
            message: String::new(),
            at: Instant::now(),
        };
        assert_eq!(
            phase(&[container(waiting, None)], RestartPolicy::Always),
            "Pending"
        );
    }

    #[test]
    fn phase_of_a_crash_looping_container_is_running() {
        let backoff = CState::BackOff {
            message: String::new(),
            at: Instant::now(),
        };
        assert_eq!(
            phase(&[container(backoff, Some(term(1)))], RestartPolicy::Always),
            "Running"
        );
    }

    #[test]
    fn phase_after_exits_follows_the_restart_policy() {
        let done = |code| vec![container(CState::Terminated(term(code)), None)];
        assert_eq!(phase(&done(0), RestartPolicy::Never), "Succeeded");
        assert_eq!(phase(&done(3), RestartPolicy::Never), "Failed");
        assert_eq!(phase(&done(0), RestartPolicy::OnFailure), "Succeeded");
        let mixed = vec![
            container(CState::Terminated(term(0)), None),
            container(CState::Terminated(term(2)), None),
        ];
        assert_eq!(phase(&mixed, RestartPolicy::Never), "Failed");
    }

    #[test]
    fn restart_policies_decide_on_the_exit_code() {
        assert!(RestartPolicy::Always.restarts(0));
        assert!(RestartPolicy::OnFailure.restarts(1));
        assert!(!RestartPolicy::OnFailure.restarts(0));
        assert!(!RestartPolicy::Never.restarts(1));
        assert_eq!(RestartPolicy::parse(None), RestartPolicy::Always);
    }

    #[test]
    fn a_running_container_reports_ids_and_readiness() {
        let s = container(running(), None).status();
        assert_eq!(s["ready"], true);
        assert_eq!(s["started"], true);
        assert_eq!(s["image"], "docker.io/library/busybox:latest");
        assert_eq!(s["containerID"], "containerd://abc");
        assert!(s["state"]["running"]["startedAt"].is_string());
        assert_eq!(s["lastState"], json!({}));
    }

    #[test]
    fn a_creating_container_has_no_container_id() {
        let s = container(CState::Creating, None).status();
        assert_eq!(s["state"]["waiting"]["reason"], "ContainerCreating");
        assert_eq!(s["image"], "busybox");
        assert_eq!(s["imageID"], "");
        assert!(s.get("containerID").is_none());
    }

    #[test]
    fn conditions_keep_their_transition_time_until_they_change() {
        let pod = json!({
            "metadata": { "name": "p", "namespace": "n", "uid": "u" },
            "spec": { "containers": [ { "name": "c", "image": "busybox" } ] },
        });
        let mut run = PodRun::new(&pod, Instant::now(), CancellationToken::new(), "t0");
        let cond = |s: &Value, ty: &str| {
            s["conditions"]
                .as_array()
                .and_then(|l| l.iter().find(|c| c["type"] == ty).cloned())
                .unwrap_or(Value::Null)
        };
        let s0 = run.status("t0");
        assert_eq!(s0["phase"], "Pending");
        assert_eq!(cond(&s0, "Ready")["status"], "False");
        assert_eq!(cond(&s0, "Ready")["reason"], "ContainersNotReady");
        assert_eq!(
            cond(&s0, "Ready")["message"],
            "containers with unready status: [c]"
        );
        assert!(s0.get("podIP").is_none());
        run.ip = Some(pod_ip(0));
        if let Some(c) = run.containers.first_mut() {
            c.state = running();
        }
        let s1 = run.status("t1");
        assert_eq!(s1["phase"], "Running");
        assert_eq!(s1["podIP"], "10.244.0.2");
        assert_eq!(cond(&s1, "Ready")["status"], "True");
        assert_eq!(cond(&s1, "Ready")["lastTransitionTime"], "t1");
        assert_eq!(cond(&s1, "PodScheduled")["lastTransitionTime"], "t0");
        assert_eq!(cond(&s1, "PodReadyToStartContainers")["status"], "True");
        let s2 = run.status("t2");
        assert_eq!(s1, s2);
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
