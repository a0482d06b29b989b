//! The kubelet's task: follows the store, schedules and admits pods, starts and restarts
//! containers, binds claims, and writes pod status.

use super::env::{self, Lookup};
use super::images::{self, Mark};
use super::limits;
use super::output::OutputLog;
use super::pod::{
    self, CState, NODE_NAME, PodRun, Running, Term, go_duration, nominal_backoff_secs,
};
use super::{Kubelet, State};
use crate::meta::{self, meta_str};
use crate::patch::PatchKind;
use crate::registry::{Registry, ResourceType};
use crate::store::{Event, EventType, Part, Store, WriteOptions};
use base64::Engine;
use fakekube_runtime::{ExecIo, ExecSpec, ExitStatus, PodFs, ProcessTable, Volume};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How many chunks of a main process's output may wait for the log.
const OUTPUT_CHUNKS: usize = 16;

/// How long the exit of a main process waits for its output to reach the log.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// The kinds the kubelet reads and writes.
#[derive(Debug, Clone)]
struct Kinds {
    pod: Arc<ResourceType>,
    pvc: Arc<ResourceType>,
    secret: Arc<ResourceType>,
}

impl Kinds {
    fn resolve(registry: &Registry) -> Option<Kinds> {
        Some(Kinds {
            pod: registry.find("", "v1", "pods")?,
            pvc: registry.find("", "v1", "persistentvolumeclaims")?,
            secret: registry.find("", "v1", "secrets")?,
        })
    }
}

/// A main process ended.
#[derive(Debug)]
struct Exit {
    uid: String,
    container: usize,
    run: u64,
    status: ExitStatus,
    /// Set when the kubelet evicts the pod (the eviction message), sent before the container
    /// is killed so it is the exit handled.
    evicted: Option<String>,
}

/// What one pass of the loop has to do and the means to do it.
struct Pass<'a> {
    kinds: Kinds,
    shutdown: &'a CancellationToken,
    exits: &'a mpsc::UnboundedSender<Exit>,
    /// Pods whose status must be recomputed (and written if it changed).
    dirty: BTreeSet<String>,
}

/// Secrets looked up in the store.
struct StoreLookup<'a> {
    store: &'a Store,
    secret: &'a Arc<ResourceType>,
}

impl Lookup for StoreLookup<'_> {
    fn secret(&self, ns: &str, name: &str) -> Option<Value> {
        self.store
            .get_opt(self.secret, ns, name)
            .map(|v| Value::clone(&v))
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_str()
}

fn is_deleting(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null())
}

/// Whether the node is cordoned (`spec.unschedulable`).
fn cordoned(store: &Store) -> bool {
    store
        .registry()
        .find("", "v1", "nodes")
        .and_then(|nodes| store.get_opt(&nodes, "", NODE_NAME))
        .is_some_and(|n| n.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true))
}

/// Whether the pod tolerates a cordoned node's `node.kubernetes.io/unschedulable` taint.
fn tolerates_cordon(pod: &Value) -> bool {
    pod.pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .is_some_and(|ts| {
            ts.iter().any(|t| {
                let key = t.get("key").and_then(Value::as_str);
                let exists = t.get("operator").and_then(Value::as_str) == Some("Exists");
                (key == Some("node.kubernetes.io/unschedulable") || (key.is_none() && exists))
                    && t.get("effect")
                        .and_then(Value::as_str)
                        .is_none_or(|e| e.is_empty() || e == "NoSchedule")
            })
        })
}

/// The claims a pod mounts.
fn claim_names(pod: &Value) -> Vec<String> {
    pod.get("spec")
        .and_then(|s| s.get("volumes"))
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|v| str_at(v, &["persistentVolumeClaim", "claimName"]))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Kubelet {
    /// Starts the kubelet's task; it runs until `shutdown`, and every pod's processes end then.
    pub(crate) fn spawn(self: &Arc<Self>, shutdown: CancellationToken) -> JoinHandle<()> {
        let k = self.clone();
        tokio::spawn(async move { k.run(shutdown).await })
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let Some(kinds) = Kinds::resolve(self.store.registry()) else {
            tracing::error!("core kinds missing from the resource table; kubelet off");
            return;
        };
        let mut changes = self.store.subscribe();
        let mut image_changes = self.images.subscribe();
        let (exit_tx, mut exit_rx) = mpsc::unbounded_channel();
        changes.borrow_and_update();
        image_changes.borrow_and_update();
        let mut last = self.store.resource_version();
        let mut pass = Pass {
            kinds,
            shutdown: &shutdown,
            exits: &exit_tx,
            dirty: BTreeSet::new(),
        };
        self.resync(&mut pass);
        loop {
            changes.borrow_and_update();
            match self.store.events_since(last) {
                Ok(events) => {
                    for e in &events {
                        last = last.max(e.rv);
                        self.on_event(&mut pass, e);
                    }
                }
                Err(_) => {
                    last = self.store.resource_version();
                    self.resync(&mut pass);
                }
            }
            while let Ok(exit) = exit_rx.try_recv() {
                self.on_exit(&mut pass, exit);
            }
            if image_changes.has_changed().unwrap_or(false) {
                image_changes.borrow_and_update();
                self.on_images_changed(&mut pass);
            }
            self.on_timers(&mut pass);
            self.flush(&mut pass);
            if changes.has_changed().unwrap_or(false) || !exit_rx.is_empty() {
                continue;
            }
            let next = self.next_deadline();
            tokio::select! {
                () = shutdown.cancelled() => return,
                r = changes.changed() => {
                    if r.is_err() {
                        return;
                    }
                }
                Some(exit) = exit_rx.recv() => self.on_exit(&mut pass, exit),
                _ = image_changes.changed() => {}
                () = sleep_until(next) => {}
            }
        }
    }

    /// Looks at every pod and claim again (start, or the change log no longer reaches back).
    fn resync(&self, pass: &mut Pass<'_>) {
        let claims = self.store.list_all(&pass.kinds.pvc, None);
        let live: BTreeSet<&str> = claims.iter().filter_map(|c| meta_str(c, "uid")).collect();
        self.lock()
            .volumes
            .retain(|uid, _| live.contains(uid.as_str()));
        for pvc in &claims {
            self.bind_claim(pass, pvc);
        }
        let pods = self.store.list_all(&pass.kinds.pod, None);
        let present: BTreeSet<String> = pods
            .iter()
            .filter_map(|p| meta_str(p, "uid"))
            .map(str::to_string)
            .collect();
        let gone: Vec<String> = self
            .lock()
            .pods
            .keys()
            .filter(|uid| !present.contains(*uid))
            .cloned()
            .collect();
        for uid in gone {
            self.forget_pod(&uid);
        }
        for p in pods {
            self.sync_pod(pass, &p);
        }
    }

    fn on_event(&self, pass: &mut Pass<'_>, e: &Event) {
        if e.rt.same_resource(&pass.kinds.pod) {
            match e.kind {
                EventType::Deleted => {
                    if let Some(uid) = meta_str(&e.object, "uid") {
                        self.forget_pod(uid);
                    }
                }
                EventType::Added | EventType::Modified => self.sync_pod(pass, &e.object),
            }
        } else if e.rt.same_resource(&pass.kinds.pvc) {
            match e.kind {
                EventType::Deleted => {
                    if let Some(uid) = meta_str(&e.object, "uid") {
                        self.lock().volumes.remove(uid);
                    }
                }
                EventType::Added | EventType::Modified => {
                    self.bind_claim(pass, &e.object);
                    // Pods waiting for this claim may be scheduled now.
                    let ns = meta_str(&e.object, "namespace").unwrap_or("");
                    self.sync_unscheduled(pass, Some(ns));
                }
            }
        } else if e.rt.group.is_empty() && e.rt.kind == "Node" {
            // An uncordoned node takes the pods that waited for it.
            let unschedulable = |n: &Value| n.pointer("/spec/unschedulable").cloned();
            if e.prev.as_deref().map(unschedulable) != Some(unschedulable(&e.object)) {
                self.sync_unscheduled(pass, None);
            }
        }
    }

    /// Looks again at the pods not bound to a node.
    fn sync_unscheduled(&self, pass: &mut Pass<'_>, ns: Option<&str>) {
        for p in self.store.list_all(&pass.kinds.pod, ns) {
            if str_at(&p, &["spec", "nodeName"]).is_none_or(str::is_empty) {
                self.sync_pod(pass, &p);
            }
        }
    }

    /// The pod is gone: its processes and execs end.
    fn forget_pod(&self, uid: &str) {
        let mut st = self.lock();
        if let Some(run) = st.pods.remove(uid) {
            run.cancel.cancel();
            let key = (run.ns.clone(), run.name.clone());
            if st.names.get(&key).is_some_and(|u| u == uid) {
                st.names.remove(&key);
            }
        }
    }

    /// Reacts to a pod's current state in the store.
    fn sync_pod(&self, pass: &mut Pass<'_>, obj: &Value) {
        let uid = meta_str(obj, "uid").unwrap_or("").to_string();
        let ns = meta_str(obj, "namespace").unwrap_or("").to_string();
        let name = meta_str(obj, "name").unwrap_or("").to_string();
        let replaced = self
            .lock()
            .names
            .get(&(ns.clone(), name.clone()))
            .filter(|u| **u != uid)
            .cloned();
        if let Some(old) = replaced {
            self.forget_pod(&old);
        }
        let node = str_at(obj, &["spec", "nodeName"]).unwrap_or("");
        if is_deleting(obj) {
            let mut st = self.lock();
            if let Some(run) = st.pods.get_mut(&uid) {
                stop_pod(run);
                pass.dirty.insert(uid);
            }
            return;
        }
        if node.is_empty() {
            self.schedule(pass, obj);
            return;
        }
        if node != NODE_NAME {
            return;
        }
        let mut st = self.lock();
        if !st.pods.contains_key(&uid) {
            let phase = str_at(obj, &["status", "phase"]).unwrap_or("");
            if matches!(phase, "Succeeded" | "Failed") {
                // Finished before this kubelet knew it (a status written by someone else).
                return;
            }
            let run = PodRun::new(
                obj,
                Instant::now() + self.config.start_delay,
                pass.shutdown.child_token(),
                &meta::now_rfc3339(),
            );
            st.names.insert((ns, name), uid.clone());
            st.pods.insert(uid.clone(), run);
        }
        pass.dirty.insert(uid);
    }

    /// Binds the pod to the node, or records why it cannot be.
    fn schedule(&self, pass: &mut Pass<'_>, obj: &Value) {
        let ns = meta_str(obj, "namespace").unwrap_or("");
        let name = meta_str(obj, "name").unwrap_or("");
        let missing = claim_names(obj)
            .into_iter()
            .find(|c| self.store.get_opt(&pass.kinds.pvc, ns, c).is_none());
        let why = match missing {
            Some(claim) => Some(format!("persistentvolumeclaim \"{claim}\" not found")),
            None if cordoned(&self.store) && !tolerates_cordon(obj) => {
                Some("1 node(s) were unschedulable".to_string())
            }
            None => None,
        };
        let Some(why) = why else {
            let body = json!({ "spec": { "nodeName": NODE_NAME } });
            if let Err(e) = self.store.patch(
                &pass.kinds.pod,
                ns,
                name,
                PatchKind::Merge,
                &body,
                Part::Main,
                WriteOptions::default(),
            ) {
                tracing::debug!(pod = name, error = %e.message, "binding a pod");
            }
            return;
        };
        let message = format!(
            "0/1 nodes are available: {why}. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        );
        let old = obj
            .get("status")
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|l| {
                l.iter()
                    .find(|c| c.get("type") == Some(&json!("PodScheduled")))
            });
        let since = old
            .filter(|c| {
                c.get("status") == Some(&json!("False"))
                    && c.get("message") == Some(&json!(message))
            })
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(meta::now_rfc3339()));
        let status = json!({
            "phase": "Pending",
            "conditions": [ {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": null,
                "lastTransitionTime": since,
                "reason": "Unschedulable",
                "message": message,
            } ],
            "qosClass": pod::qos_class(obj),
        });
        let uid = meta_str(obj, "uid").unwrap_or("");
        write_status(&self.store, &pass.kinds.pod, ns, name, uid, &status);
    }

    /// Binds a claim that is not bound yet, as a dynamic provisioner and the volume binder do.
    fn bind_claim(&self, pass: &mut Pass<'_>, pvc: &Value) {
        if is_deleting(pvc) || str_at(pvc, &["status", "phase"]) == Some("Bound") {
            return;
        }
        let ns = meta_str(pvc, "namespace").unwrap_or("");
        let name = meta_str(pvc, "name").unwrap_or("");
        let uid = meta_str(pvc, "uid").unwrap_or("");
        let opts = WriteOptions::default();
        if str_at(pvc, &["spec", "volumeName"]).is_none_or(str::is_empty) {
            let body = json!({
                "metadata": { "annotations": {
                    "pv.kubernetes.io/bind-completed": "yes",
                    "pv.kubernetes.io/bound-by-controller": "yes",
                } },
                "spec": { "volumeName": format!("pvc-{uid}") },
            });
            if let Err(e) = self.store.patch(
                &pass.kinds.pvc,
                ns,
                name,
                PatchKind::Merge,
                &body,
                Part::Main,
                opts.clone(),
            ) {
                tracing::debug!(pvc = name, error = %e.message, "binding a claim");
                return;
            }
        }
        let spec = pvc.get("spec").cloned().unwrap_or_else(|| json!({}));
        let mut status = json!({
            "phase": "Bound",
            "accessModes": spec.get("accessModes").cloned().unwrap_or_else(|| json!([])),
        });
        if let Some(size) = spec
            .get("resources")
            .and_then(|r| r.get("requests"))
            .and_then(|r| r.get("storage"))
        {
            status["capacity"] = json!({ "storage": size });
        }
        let body = json!({ "status": status });
        if let Err(e) = self.store.patch(
            &pass.kinds.pvc,
            ns,
            name,
            PatchKind::Merge,
            &body,
            Part::Status,
            opts,
        ) {
            tracing::debug!(pvc = name, error = %e.message, "claim status");
        }
    }

    /// A main process ended: the restart policy decides what follows.
    fn on_exit(&self, pass: &mut Pass<'_>, exit: Exit) {
        let mut st = self.lock();
        let Some(run) = st.pods.get_mut(&exit.uid) else {
            return;
        };
        let Some(c) = run.containers.get_mut(exit.container) else {
            return;
        };
        let CState::Running(r) = &c.state else {
            return;
        };
        if r.run != exit.run {
            return;
        }
        let r = r.clone();
        r.cancel.cancel();
        if let Some(message) = exit.evicted {
            run.evicted.get_or_insert(message);
        }
        let (exit_code, reason, mut message) = match exit.status {
            ExitStatus::Code(0) => (0, "Completed", None),
            ExitStatus::Code(137) if r.processes.oom_kills() > 0 => (137, "OOMKilled", None),
            ExitStatus::Code(n) => (n, "Error", None),
            ExitStatus::CannotStart(m) => (128, "StartError", Some(start_error(&m))),
            ExitStatus::Killed => (137, "Error", None),
        };
        if message.is_none() {
            message = termination_message(&c.spec, &r.fs, exit_code, c.output.as_deref());
        }
        let term = Term {
            exit_code,
            reason: reason.to_string(),
            message,
            started_at: r.started_at.clone(),
            finished_at: meta::now_rfc3339(),
            container_id: r.container_id.clone(),
        };
        let ran = r.since.elapsed();
        self.after_exit(run, exit.container, term, ran);
        pass.dirty.insert(exit.uid);
    }

    /// After a container ended: a back-off then a restart, or the end (and maybe the pod's).
    fn after_exit(&self, run: &mut PodRun, idx: usize, term: Term, ran: Duration) {
        let restart = !run.deleting && run.evicted.is_none() && run.policy.restarts(term.exit_code);
        let (pod_name, ns, uid) = (run.name.clone(), run.ns.clone(), run.uid.clone());
        let Some(c) = run.containers.get_mut(idx) else {
            return;
        };
        if restart {
            if ran >= self.backoff_cap().saturating_mul(2) {
                c.crash_backoffs = 0;
            }
            let n = c.crash_backoffs;
            c.crash_backoffs = c.crash_backoffs.saturating_add(1);
            let message = format!(
                "back-off {} restarting failed container={} pod={pod_name}_{ns}({uid})",
                go_duration(nominal_backoff_secs(n)),
                c.name
            );
            c.last = Some(term);
            c.state = CState::BackOff {
                message,
                at: Instant::now() + self.backoff(n),
            };
        } else {
            c.state = CState::Terminated(term);
        }
        if matches!(run.phase(), "Succeeded" | "Failed") {
            run.terminal = true;
            run.cancel.cancel();
        }
    }

    /// The `n`-th back-off (from 0): the base doubling, at most [`Kubelet::backoff_cap`].
    fn backoff(&self, n: u32) -> Duration {
        let factor = 1u32 << n.min(5);
        self.config
            .backoff
            .saturating_mul(factor)
            .min(self.backoff_cap())
    }

    /// The longest back-off: 30 times the base (5 minutes for a real kubelet's 10 s).
    fn backoff_cap(&self) -> Duration {
        self.config.backoff.saturating_mul(30)
    }

    /// An image was marked or cleared: pulls that failed are tried again at once.
    fn on_images_changed(&self, pass: &mut Pass<'_>) {
        let mut st = self.lock();
        let State { pods, .. } = &mut *st;
        for run in pods.values_mut().filter(|r| !r.terminal && !r.deleting) {
            for idx in 0..run.containers.len() {
                let pulling = run.containers.get(idx).is_some_and(|c| {
                    matches!(
                        c.state,
                        CState::Waiting {
                            reason: "ErrImagePull" | "ImagePullBackOff",
                            ..
                        }
                    )
                });
                if pulling {
                    self.start_container(pass, run, idx);
                    pass.dirty.insert(run.uid.clone());
                }
            }
        }
    }

    /// Runs what is due: sandboxes after the start delay, pull retries, restarts.
    fn on_timers(&self, pass: &mut Pass<'_>) {
        let now = Instant::now();
        let mut st = self.lock();
        let State {
            pods,
            volumes,
            next_ip,
            ..
        } = &mut *st;
        for run in pods.values_mut().filter(|r| !r.terminal && !r.deleting) {
            if run.start_at.is_some_and(|at| at <= now) {
                run.start_at = None;
                run.ip = Some(pod::pod_ip(*next_ip));
                *next_ip = next_ip.wrapping_add(1);
                self.make_volumes(pass, run, volumes);
                for idx in 0..run.containers.len() {
                    self.start_container(pass, run, idx);
                }
                pass.dirty.insert(run.uid.clone());
                continue;
            }
            for idx in 0..run.containers.len() {
                let Some(c) = run.containers.get_mut(idx) else {
                    continue;
                };
                match &c.state {
                    CState::Waiting {
                        reason: "ErrImagePull",
                        at,
                        ..
                    } if *at <= now => {
                        let n = c.pull_backoffs;
                        c.pull_backoffs = c.pull_backoffs.saturating_add(1);
                        c.state = CState::Waiting {
                            reason: "ImagePullBackOff",
                            message: format!("Back-off pulling image \"{}\"", c.image),
                            at: now + self.backoff(n),
                        };
                        pass.dirty.insert(run.uid.clone());
                    }
                    CState::Waiting { at, .. } | CState::BackOff { at, .. } if *at <= now => {
                        self.start_container(pass, run, idx);
                        pass.dirty.insert(run.uid.clone());
                    }
                    _ => {}
                }
            }
        }
    }

    /// The earliest deadline of any pod.
    fn next_deadline(&self) -> Option<Instant> {
        self.lock()
            .pods
            .values()
            .filter(|r| !r.terminal && !r.deleting)
            .filter_map(PodRun::deadline)
            .min()
    }

    /// The pod's volumes: claim storage (kept by claim uid), fresh emptyDirs, Secret files.
    fn make_volumes(
        &self,
        pass: &Pass<'_>,
        run: &mut PodRun,
        claims: &mut std::collections::HashMap<String, Volume>,
    ) {
        let list = run
            .pod
            .get("spec")
            .and_then(|s| s.get("volumes"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for v in list {
            let Some(name) = v.get("name").and_then(Value::as_str) else {
                continue;
            };
            let volume = if let Some(claim) = str_at(&v, &["persistentVolumeClaim", "claimName"]) {
                match self.store.get_opt(&pass.kinds.pvc, &run.ns, claim) {
                    Some(pvc) => claims
                        .entry(meta_str(&pvc, "uid").unwrap_or("").to_string())
                        .or_default()
                        .clone(),
                    None => Volume::new(),
                }
            } else if let Some(secret) = str_at(&v, &["secret", "secretName"]) {
                let vol = Volume::new();
                if let Some(obj) = self.store.get_opt(&pass.kinds.secret, &run.ns, secret) {
                    fill_secret_volume(&vol, &obj);
                }
                vol
            } else {
                Volume::new()
            };
            run.volumes.insert(name.to_string(), volume);
        }
    }

    /// Starts (or restarts) container `idx`: pulls its image, builds its filesystem and
    /// environment, and runs its main process.
    fn start_container(&self, pass: &Pass<'_>, run: &mut PodRun, idx: usize) {
        let now = Instant::now();
        let Some(c) = run.containers.get(idx) else {
            return;
        };
        let mark = self.images.mark(&c.image);
        if mark == Some(Mark::Missing) {
            let normalized = images::normalize(&c.image);
            let message = format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image \"{normalized}\": failed to resolve reference \"{normalized}\": {normalized}: not found"
            );
            if let Some(c) = run.containers.get_mut(idx) {
                c.state = CState::Waiting {
                    reason: "ErrImagePull",
                    message,
                    at: now + self.config.backoff,
                };
            }
            return;
        }
        let lookup = StoreLookup {
            store: &self.store,
            secret: &pass.kinds.secret,
        };
        let env = match env::container_env(&run.pod, &c.spec, run.ip.as_deref(), &lookup) {
            Ok(env) => env,
            Err(message) => {
                let n = c.pull_backoffs;
                let at = now + self.backoff(n);
                if let Some(c) = run.containers.get_mut(idx) {
                    c.pull_backoffs = n.saturating_add(1);
                    c.state = CState::Waiting {
                        reason: "CreateContainerConfigError",
                        message,
                        at,
                    };
                }
                return;
            }
        };
        let mounts: Vec<(String, Volume)> = c
            .spec
            .get("volumeMounts")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|m| {
                        let path = m.get("mountPath").and_then(Value::as_str)?;
                        let vol = run.volumes.get(m.get("name").and_then(Value::as_str)?)?;
                        Some((path.to_string(), vol.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let cwd = c
            .spec
            .get("workingDir")
            .and_then(Value::as_str)
            .filter(|w| !w.is_empty())
            .unwrap_or("/")
            .to_string();
        let argv = env::argv(&c.spec, &env);
        let wants_stdin = c.spec.get("stdin").and_then(Value::as_bool) == Some(true);
        let uid = run.uid.clone();
        let pod_cancel = run.cancel.clone();
        let Some(c) = run.containers.get_mut(idx) else {
            return;
        };
        c.pull_backoffs = 0;
        if c.runs > 0 {
            c.restarts = c.restarts.saturating_add(1);
        }
        c.runs += 1;
        let container_id = format!(
            "containerd://{}",
            images::hex64(&uuid::Uuid::new_v4().to_string())
        );
        let started_at = meta::now_rfc3339();
        let log = Arc::new(OutputLog::default());
        c.previous_output = c.output.replace(log.clone());
        if mark == Some(Mark::Crashing) {
            log.finish();
            let term = Term {
                exit_code: 1,
                reason: "Error".to_string(),
                message: None,
                started_at: started_at.clone(),
                finished_at: started_at,
                container_id,
            };
            self.after_exit(run, idx, term, Duration::ZERO);
            return;
        }
        let fs = self.commands.pod_fs(mounts);
        let processes =
            ProcessTable::with_limits(limits::container_limits(&c.spec, self.config.process_limit));
        let ephemeral = limits::ephemeral_limit(&c.spec)
            .map(|(bytes, text)| (fs.set_ephemeral_limit(bytes), text));
        if cwd != "/"
            && let Err(e) = fs.mkdir_all(&cwd, 0o755)
        {
            tracing::debug!(cwd = %cwd, error = %e, "working directory");
        }
        let cancel = pod_cancel.child_token();
        let (stdin_tx, stdin_rx) = if wants_stdin {
            let (tx, rx) = mpsc::channel(OUTPUT_CHUNKS);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let (out_tx, out_rx) = mpsc::channel(OUTPUT_CHUNKS);
        let (err_tx, err_rx) = mpsc::channel(OUTPUT_CHUNKS);
        let drain_log = log.clone();
        let drained = tokio::spawn(async move { drain_log.drain(out_rx, err_rx).await });
        let ended_log = log.clone();
        let spec = ExecSpec {
            argv,
            env: env.clone(),
            cwd: cwd.clone(),
            fs: fs.clone(),
            programs: self.commands.clone(),
            processes: processes.clone(),
            cancel: cancel.clone(),
            network: run.network.clone(),
        };
        let io = ExecIo {
            stdin: stdin_rx,
            stdout: out_tx,
            stderr: err_tx,
            tty: None,
        };
        let exits = pass.exits.clone();
        let run_no = c.runs;
        if let Some((exceeded, limit)) = ephemeral {
            let (exits, uid, cancel) = (exits.clone(), uid.clone(), cancel.clone());
            let message = limits::eviction_message(&c.name, &limit);
            tokio::spawn(async move {
                tokio::select! {
                    () = exceeded.cancelled() => {
                        let _ = exits.send(Exit {
                            uid,
                            container: idx,
                            run: run_no,
                            status: ExitStatus::Killed,
                            evicted: Some(message),
                        });
                        cancel.cancel();
                    }
                    () = cancel.cancelled() => {}
                }
            });
        }
        let container_gone = cancel.clone();
        tokio::spawn(async move {
            let status = fakekube_runtime::exec(spec, io).await;
            // The container dies with its main process: background jobs and execs end, their
            // output is in the log before the exit is reported.
            container_gone.cancel();
            if tokio::time::timeout(DRAIN_GRACE, drained).await.is_err() {
                tracing::debug!("output of a finished container still open");
            }
            // The run is over: `logs -f` ends even if something still holds its output open.
            ended_log.finish();
            let _ = exits.send(Exit {
                uid,
                container: idx,
                run: run_no,
                status,
                evicted: None,
            });
        });
        c.state = CState::Running(Running {
            run: run_no,
            started_at,
            since: now,
            container_id,
            cancel,
            fs,
            env,
            cwd,
            stdin: stdin_tx,
            processes,
        });
    }

    /// Writes the status of every pod marked dirty, when it changed.
    fn flush(&self, pass: &mut Pass<'_>) {
        if pass.dirty.is_empty() {
            return;
        }
        let now = meta::now_rfc3339();
        let writes: Vec<(String, String, String, Value)> = {
            let mut st = self.lock();
            std::mem::take(&mut pass.dirty)
                .into_iter()
                .filter_map(|uid| {
                    let run = st.pods.get_mut(&uid)?;
                    Some((run.ns.clone(), run.name.clone(), uid, run.status(&now)))
                })
                .collect()
        };
        for (ns, name, uid, status) in writes {
            write_status(&self.store, &pass.kinds.pod, &ns, &name, &uid, &status);
        }
    }
}

/// Stops a pod that is being deleted: its processes end (137) and nothing restarts.
fn stop_pod(run: &mut PodRun) {
    if run.deleting {
        return;
    }
    run.deleting = true;
    run.terminal = true;
    run.cancel.cancel();
    let now = meta::now_rfc3339();
    for c in &mut run.containers {
        if let CState::Running(r) = &c.state {
            let term = Term {
                exit_code: 137,
                reason: "Error".to_string(),
                message: None,
                started_at: r.started_at.clone(),
                finished_at: now.clone(),
                container_id: r.container_id.clone(),
            };
            c.state = CState::Terminated(term);
        }
    }
}

/// Writes a pod's status unless it is already that (retrying a write that raced another).
fn write_status(
    store: &Store,
    rt: &Arc<ResourceType>,
    ns: &str,
    name: &str,
    uid: &str,
    status: &Value,
) {
    for _ in 0..3 {
        let Some(cur) = store.get_opt(rt, ns, name) else {
            return;
        };
        if meta_str(&cur, "uid") != Some(uid) || cur.get("status") == Some(status) {
            return;
        }
        let mut obj = Value::clone(&cur);
        if let Some(o) = obj.as_object_mut() {
            o.insert("status".into(), status.clone());
        }
        match store.update(rt, ns, name, obj, Part::Status, WriteOptions::default()) {
            Ok(_) => return,
            Err(e) if e.code == 409 => continue,
            Err(e) => {
                tracing::debug!(pod = name, error = %e.message, "pod status");
                return;
            }
        }
    }
}

/// containerd's wording for a container whose process could not start.
fn start_error(runtime_message: &str) -> String {
    let detail = runtime_message
        .strip_prefix("OCI runtime exec failed: exec failed: ")
        .unwrap_or(runtime_message);
    format!(
        "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: {detail}"
    )
}

/// The termination message: the file at `terminationMessagePath`, else (with
/// `FallbackToLogsOnError` and a failure) the end of the output.
fn termination_message(
    spec: &Value,
    fs: &PodFs,
    exit_code: i32,
    log: Option<&OutputLog>,
) -> Option<String> {
    let path = spec
        .get("terminationMessagePath")
        .and_then(Value::as_str)
        .unwrap_or("/dev/termination-log");
    if let Ok(data) = fs.read(path)
        && !data.is_empty()
    {
        let cut = data.len().min(4096);
        return Some(String::from_utf8_lossy(data.get(..cut).unwrap_or_default()).into_owned());
    }
    let fallback = spec.get("terminationMessagePolicy").and_then(Value::as_str)
        == Some("FallbackToLogsOnError");
    if fallback && exit_code != 0 {
        let tail = log.map(OutputLog::tail).unwrap_or_default();
        let start = tail.len().saturating_sub(2048);
        let text = String::from_utf8_lossy(tail.get(start..).unwrap_or_default()).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(80);
        let joined = lines.get(from..).unwrap_or_default().join("\n");
        return (!joined.is_empty()).then_some(joined);
    }
    None
}

/// Writes a Secret's keys as files at the root of `vol`.
fn fill_secret_volume(vol: &Volume, secret: &Value) {
    let fs = PodFs::new(vec![("/v".to_string(), vol.clone())]);
    let Some(data) = secret.get("data").and_then(Value::as_object) else {
        return;
    };
    for (k, v) in data {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or(""))
            .unwrap_or_default();
        if let Err(e) = fs.write(&format!("/v/{k}"), &bytes) {
            tracing::debug!(key = %k, error = %e, "secret volume file");
        }
    }
}
