//! The kubelet's task: follows the store, schedules and admits pods, binds claims, runs what is
//! due (sandboxes, retries, restarts, probes, kills), and writes pod status. Starting and
//! restarting containers is [`crate::containers`]; stopping them, [`crate::termination`].

use crate::client::{Change, ChangeType, Client, Delete, Kind, Part};
use crate::cluster::PodCluster;
use crate::events::EventType;
use crate::kubelet::{Kubelet, Role, State};
use crate::meta::{meta_str, str_at};
use crate::pod::{CState, PodRun, qos_class};
use crate::probe::{self, Outcome, ProbeKind, Verdict};
use fakekube_runtime::{ExitStatus, Signal};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A main process ended.
#[derive(Debug)]
pub(super) struct Exit {
    pub(super) uid: String,
    pub(super) container: usize,
    pub(super) run: u64,
    pub(super) status: ExitStatus,
    /// Set when the kubelet evicts the pod (the eviction message), sent before the container
    /// is killed so it is the exit handled.
    pub(super) evicted: Option<String>,
}

/// A probe run ended.
#[derive(Debug)]
pub(super) struct ProbeReport {
    uid: String,
    container: usize,
    run: u64,
    kind: ProbeKind,
    outcome: Outcome,
}

/// What one pass of the loop has to do and the means to do it.
pub(super) struct Pass<'a> {
    pub(super) shutdown: &'a CancellationToken,
    pub(super) exits: &'a mpsc::UnboundedSender<Exit>,
    probes: &'a mpsc::UnboundedSender<ProbeReport>,
    /// Pods whose status must be recomputed (and written if it changed).
    pub(super) dirty: BTreeSet<String>,
    /// Stopped pods to delete from the API once their last status is written.
    pub(super) remove: BTreeSet<String>,
}

fn is_deleting(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null())
}

/// Whether node `node` is cordoned (`spec.unschedulable`).
fn cordoned(api: &dyn Client, node: &str) -> bool {
    api.get(Kind::Node, "", node)
        .is_some_and(|n| n.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true))
}

/// The annotation a provisioned volume names its provisioner in.
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
/// What the kubelet's volumes name as their provisioner.
const PROVISIONER: &str = "fakekube.io/kubelet";

/// How long after the API refused a pod's status or its final delete (a restart of the API
/// server, a dropped connection) the kubelet tries again.
const API_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

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

impl Kubelet {
    /// Starts the kubelet's task; it runs until `shutdown`, and every pod's processes end then.
    pub fn spawn(self: &Arc<Self>, shutdown: CancellationToken) -> JoinHandle<()> {
        let _ = self.me.set(Arc::downgrade(self));
        let k = self.clone();
        tokio::spawn(async move { k.run(shutdown).await })
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut changes = self.api.subscribe();
        let mut image_changes = self.images.subscribe();
        let (exit_tx, mut exit_rx) = mpsc::unbounded_channel();
        let (probe_tx, mut probe_rx) = mpsc::unbounded_channel();
        changes.borrow_and_update();
        image_changes.borrow_and_update();
        let mut last = self.api.position();
        let mut pass = Pass {
            shutdown: &shutdown,
            exits: &exit_tx,
            probes: &probe_tx,
            dirty: BTreeSet::new(),
            remove: BTreeSet::new(),
        };
        self.resync(&mut pass);
        loop {
            changes.borrow_and_update();
            match self.api.changes_since(last) {
                Ok((events, reached)) => {
                    for e in &events {
                        self.on_event(&mut pass, e);
                    }
                    last = last.max(reached);
                }
                Err(_) => {
                    last = self.api.position();
                    self.resync(&mut pass);
                }
            }
            while let Ok(exit) = exit_rx.try_recv() {
                self.on_exit(&mut pass, exit);
            }
            while let Ok(report) = probe_rx.try_recv() {
                self.on_probe(&mut pass, report);
            }
            if image_changes.has_changed().unwrap_or(false) {
                image_changes.borrow_and_update();
                self.on_images_changed(&mut pass);
            }
            self.on_timers(&mut pass);
            self.flush(&mut pass);
            if changes.has_changed().unwrap_or(false) || !exit_rx.is_empty() || !probe_rx.is_empty()
            {
                continue;
            }
            let next = self.next_deadline();
            let clock = self.api.clock().clone();
            tokio::select! {
                () = shutdown.cancelled() => return,
                r = changes.changed() => {
                    if r.is_err() {
                        return;
                    }
                }
                Some(exit) = exit_rx.recv() => self.on_exit(&mut pass, exit),
                Some(report) = probe_rx.recv() => self.on_probe(&mut pass, report),
                _ = image_changes.changed() => {}
                () = clock.sleep_until_opt(next) => {}
            }
        }
    }

    /// Looks at every pod and claim again (start, or the change log no longer reaches back).
    fn resync(&self, pass: &mut Pass<'_>) {
        let claims = self.api.list(Kind::PersistentVolumeClaim, None);
        let live: BTreeSet<&str> = claims.iter().filter_map(|c| meta_str(c, "uid")).collect();
        self.lock()
            .volumes
            .retain(|uid, _| live.contains(uid.as_str()));
        for pvc in &claims {
            self.bind_claim(pvc);
        }
        let pods = self.api.list(Kind::Pod, None);
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

    fn on_event(&self, pass: &mut Pass<'_>, e: &Change) {
        if e.kind == Kind::Pod {
            match e.change {
                ChangeType::Deleted => {
                    if let Some(uid) = meta_str(&e.object, "uid") {
                        self.forget_pod(uid);
                    }
                }
                ChangeType::Added | ChangeType::Modified => self.sync_pod(pass, &e.object),
            }
        } else if e.kind == Kind::PersistentVolumeClaim {
            match e.change {
                ChangeType::Deleted => {
                    if let Some(uid) = meta_str(&e.object, "uid") {
                        self.lock().volumes.remove(uid);
                    }
                }
                ChangeType::Added | ChangeType::Modified => {
                    self.bind_claim(&e.object);
                    // Pods waiting for this claim may be scheduled now.
                    let ns = meta_str(&e.object, "namespace").unwrap_or("");
                    self.sync_unscheduled(pass, Some(ns));
                }
            }
        } else if e.kind == Kind::PersistentVolume {
            if self.config.role == Role::Node && e.change != ChangeType::Deleted {
                self.reclaim(&e.object);
            }
        } else if e.kind == Kind::Node && meta_str(&e.object, "name") == Some(self.node_name()) {
            // An uncordoned node takes the pods that waited for it.
            let unschedulable = |n: &Value| n.pointer("/spec/unschedulable").cloned();
            if e.prev.as_deref().map(unschedulable) != Some(unschedulable(&e.object)) {
                self.sync_unscheduled(pass, None);
            }
        }
    }

    /// Looks again at the pods not bound to a node.
    fn sync_unscheduled(&self, pass: &mut Pass<'_>, ns: Option<&str>) {
        for p in self.api.list(Kind::Pod, ns) {
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
    fn sync_pod(&self, pass: &mut Pass<'_>, obj: &Arc<Value>) {
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
            let grace = obj
                .get("metadata")
                .and_then(|m| m.get("deletionGracePeriodSeconds"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let mut st = self.lock();
            match st.pods.get_mut(&uid) {
                Some(run) => {
                    self.terminate(pass, run, grace);
                }
                None if node == self.node_name() && grace > 0 => {
                    // Never started here: nothing to stop.
                    pass.remove.insert(uid.clone());
                    drop(st);
                    // Refused, it is asked again when the pod next changes or is listed again.
                    let _ = self.remove_stopped(&ns, &name, &uid);
                }
                None => {}
            }
            return;
        }
        if node.is_empty() {
            if self.config.role == Role::AllInOne {
                self.schedule(obj);
            }
            return;
        }
        if node != self.node_name() {
            return;
        }
        let clock = self.api.clock();
        let mut st = self.lock();
        if !st.pods.contains_key(&uid) {
            let phase = str_at(obj, &["status", "phase"]).unwrap_or("");
            if matches!(phase, "Succeeded" | "Failed") {
                // Finished before this kubelet knew it (a status written by someone else).
                return;
            }
            let run = PodRun::new(
                obj,
                clock.now() + self.config.start_delay,
                pass.shutdown.child_token(),
                &clock.now_rfc3339(),
            );
            if let Some(me) = self.me.get() {
                run.network
                    .set_cluster(Arc::new(PodCluster::new(me.clone(), &ns)));
            }
            st.names.insert((ns, name), uid.clone());
            st.pods.insert(uid.clone(), run);
        }
        pass.dirty.insert(uid);
    }

    /// Binds the pod to the node, or records why it cannot be, as the scheduler does (with
    /// its Events).
    fn schedule(&self, obj: &Value) {
        let ns = meta_str(obj, "namespace").unwrap_or("");
        let name = meta_str(obj, "name").unwrap_or("");
        let blocked = claim_names(obj).into_iter().find_map(|c| {
            match self.api.get(Kind::PersistentVolumeClaim, ns, &c) {
                None => Some(format!("persistentvolumeclaim \"{c}\" not found")),
                Some(pvc) if is_deleting(&pvc) => {
                    Some(format!("persistentvolumeclaim \"{c}\" is being deleted"))
                }
                Some(_) => None,
            }
        });
        let why = match blocked {
            Some(why) => Some(why),
            None if cordoned(&*self.api, self.node_name()) && !tolerates_cordon(obj) => {
                Some("1 node(s) were unschedulable".to_string())
            }
            None => None,
        };
        let Some(why) = why else {
            let node = self.node_name();
            match self.api.bind(ns, name, node) {
                Ok(()) => self.scheduler.emit(
                    &*self.api,
                    obj,
                    EventType::Normal,
                    "Scheduled",
                    "Binding",
                    &format!("Successfully assigned {ns}/{name} to {node}"),
                ),
                Err(e) => tracing::debug!(pod = name, error = %e.message, "binding a pod"),
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
        let same = old.is_some_and(|c| {
            c.get("status") == Some(&json!("False")) && c.get("message") == Some(&json!(message))
        });
        let since = old
            .filter(|_| same)
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(self.api.clock().now_rfc3339()));
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
            "qosClass": qos_class(obj),
        });
        if !same {
            self.scheduler.emit(
                &*self.api,
                obj,
                EventType::Warning,
                "FailedScheduling",
                "Scheduling",
                &message,
            );
        }
        let uid = meta_str(obj, "uid").unwrap_or("");
        // An unbound pod is looked at again on every change of its claims and nodes.
        let _ = write_status(&*self.api, ns, name, uid, &status);
    }

    /// Binds a claim that is not bound yet, as a dynamic provisioner and the volume binder do;
    /// on a node of a cluster, provisions its volume only (see [`Kubelet::provision`]).
    fn bind_claim(&self, pvc: &Value) {
        if is_deleting(pvc) || str_at(pvc, &["status", "phase"]) == Some("Bound") {
            return;
        }
        if self.config.role == Role::Node {
            self.provision(pvc);
            return;
        }
        let ns = meta_str(pvc, "namespace").unwrap_or("");
        let name = meta_str(pvc, "name").unwrap_or("");
        let uid = meta_str(pvc, "uid").unwrap_or("");
        if str_at(pvc, &["spec", "volumeName"]).is_none_or(str::is_empty) {
            let body = json!({
                "metadata": { "annotations": {
                    "pv.kubernetes.io/bind-completed": "yes",
                    "pv.kubernetes.io/bound-by-controller": "yes",
                } },
                "spec": { "volumeName": format!("pvc-{uid}") },
            });
            if let Err(e) =
                self.api
                    .merge_patch(Kind::PersistentVolumeClaim, ns, name, &body, Part::Main)
            {
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
        if let Err(e) =
            self.api
                .merge_patch(Kind::PersistentVolumeClaim, ns, name, &body, Part::Status)
        {
            tracing::debug!(pvc = name, error = %e.message, "claim status");
        }
    }

    /// Provisions the volume of a claim that has none, as a dynamic provisioner does: a
    /// PersistentVolume `pvc-<uid>` of the claim's size, access modes and class, pre-bound to
    /// the claim (`claimRef` with its uid), which the cluster's volume controller then binds.
    /// Its storage is this node's (the volume's node affinity says so). A volume that exists
    /// already (another node made it first) is no error.
    fn provision(&self, pvc: &Value) {
        if str_at(pvc, &["spec", "volumeName"]).is_some_and(|v| !v.is_empty()) {
            return;
        }
        let ns = meta_str(pvc, "namespace").unwrap_or("");
        let name = meta_str(pvc, "name").unwrap_or("");
        let uid = meta_str(pvc, "uid").unwrap_or("");
        let spec = pvc.get("spec").cloned().unwrap_or_else(|| json!({}));
        let size = spec
            .pointer("/resources/requests/storage")
            .cloned()
            .unwrap_or_else(|| json!("1Gi"));
        let volume = format!("pvc-{uid}");
        let pv = json!({
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": volume,
                "annotations": { PROVISIONED_BY: PROVISIONER },
            },
            "spec": {
                "capacity": { "storage": size },
                "accessModes": spec.get("accessModes").cloned().unwrap_or_else(|| json!(["ReadWriteOnce"])),
                "volumeMode": spec.get("volumeMode").cloned().unwrap_or_else(|| json!("Filesystem")),
                "storageClassName": spec.get("storageClassName").cloned().unwrap_or_else(|| json!("")),
                "persistentVolumeReclaimPolicy": "Delete",
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": ns,
                    "name": name,
                    "uid": uid,
                },
                "hostPath": { "path": format!("/var/lib/fakekube/volumes/{volume}"), "type": "" },
                // Its storage is this node's: pods that mount it are scheduled here, as a
                // local volume's are.
                "nodeAffinity": { "required": { "nodeSelectorTerms": [ {
                    "matchExpressions": [ {
                        "key": "kubernetes.io/hostname",
                        "operator": "In",
                        "values": [self.node_name()],
                    } ],
                } ] } },
            },
        });
        match self.api.create(Kind::PersistentVolume, "", pv) {
            Ok(_) => tracing::debug!(pvc = name, volume, "provisioned a volume"),
            Err(e) if e.code == 409 => {}
            Err(e) => tracing::warn!(pvc = name, error = %e.message, "provisioning a volume"),
        }
    }

    /// Deletes a volume it provisioned once its claim is gone (`Released`), as a provisioner
    /// does for the `Delete` reclaim policy.
    fn reclaim(&self, pv: &Value) {
        let ours = pv
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(PROVISIONED_BY))
            .and_then(Value::as_str)
            == Some(PROVISIONER);
        let released = matches!(
            str_at(pv, &["status", "phase"]),
            Some("Released" | "Failed")
        );
        if !ours || !released || is_deleting(pv) {
            return;
        }
        let name = meta_str(pv, "name").unwrap_or("");
        let opts = Delete {
            uid: meta_str(pv, "uid").map(str::to_string),
            ..Delete::default()
        };
        match self.api.delete(Kind::PersistentVolume, "", name, &opts) {
            Ok(()) => tracing::debug!(volume = name, "reclaimed a volume"),
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => tracing::debug!(volume = name, error = %e.message, "reclaiming a volume"),
        }
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

    /// Runs what is due: sandboxes after the start delay, pull retries, restarts, probes and
    /// SIGKILLs.
    fn on_timers(&self, pass: &mut Pass<'_>) {
        let now = self.api.clock().now();
        let mut st = self.lock();
        for run in st.pods.values_mut() {
            if run.retry_at.is_some_and(|at| at <= now) {
                run.retry_at = None;
                pass.dirty.insert(run.uid.clone());
                if run.deleting && run.terminal && !run.removed {
                    pass.remove.insert(run.uid.clone());
                }
            }
        }
        let State {
            pods,
            volumes,
            next_ip,
            ..
        } = &mut *st;
        for run in pods.values_mut().filter(|r| !r.terminal) {
            if run.start_at.is_some_and(|at| at <= now) && !run.deleting {
                run.start_at = None;
                run.ip = Some(match self.config.role {
                    Role::AllInOne => crate::pod::pod_ip(*next_ip),
                    Role::Node => {
                        format!("10.244.{}.{}", self.config.pod_subnet, *next_ip % 253 + 2)
                    }
                });
                *next_ip = next_ip.wrapping_add(1);
                self.make_volumes(run, volumes);
                self.start_next(pass, run);
                pass.dirty.insert(run.uid.clone());
                continue;
            }
            for idx in 0..run.containers.len() {
                let Some(c) = run.containers.get_mut(idx) else {
                    continue;
                };
                match &mut c.state {
                    CState::Waiting {
                        reason: "ErrImagePull",
                        at,
                        ..
                    } if *at <= now && !run.deleting => {
                        self.pull_backoff(run, idx);
                        pass.dirty.insert(run.uid.clone());
                    }
                    CState::Waiting { at, .. } | CState::BackOff { at, .. }
                        if *at <= now && !run.deleting =>
                    {
                        self.start_container(pass, run, idx);
                        pass.dirty.insert(run.uid.clone());
                    }
                    CState::Running(r) => {
                        if r.kill_at.is_some_and(|at| at <= now) {
                            r.kill_at = None;
                            if let Err(e) = r.processes.signal_main(Signal::Kill) {
                                tracing::debug!(error = %e, "SIGKILL to a container");
                            }
                            // Pid 1 killed, the container ends as a whole, even when its main
                            // process had not entered the process table yet.
                            r.cancel.cancel();
                        }
                        for p in r.probes.iter_mut() {
                            if p.next_at.is_some_and(|at| at <= now) {
                                p.next_at = None;
                                let report = ProbeRun {
                                    uid: run.uid.clone(),
                                    container: idx,
                                    run: r.run,
                                    kind: p.kind,
                                    spec: p.spec.clone(),
                                    target: probe::Target {
                                        network: run.network.clone(),
                                        pod_ip: run.ip.clone().unwrap_or_default(),
                                        fs: r.fs.clone(),
                                        programs: self.commands.clone(),
                                        processes: r.processes.clone(),
                                        env: r.env.clone(),
                                        cwd: r.cwd.clone(),
                                        cancel: r.cancel.clone(),
                                    },
                                };
                                self.spawn_probe(pass, report);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Runs one probe in the background; its report comes back through the loop.
    fn spawn_probe(&self, pass: &Pass<'_>, p: ProbeRun) {
        let tx = pass.probes.clone();
        let clock = self.api.clock().clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                out = probe::run(&p.spec, p.target.clone(), &clock) => out,
                () = p.target.cancel.cancelled() => return,
            };
            let _ = tx.send(ProbeReport {
                uid: p.uid,
                container: p.container,
                run: p.run,
                kind: p.kind,
                outcome,
            });
        });
    }

    /// A probe ran: count it, report a failure, and act on what its thresholds decide.
    fn on_probe(&self, pass: &mut Pass<'_>, report: ProbeReport) {
        let now = self.api.clock().now();
        let mut st = self.lock();
        let Some(run) = st.pods.get_mut(&report.uid) else {
            return;
        };
        let Some(c) = run.containers.get_mut(report.container) else {
            return;
        };
        let name = c.name.clone();
        let init = c.init;
        let grace_default = run
            .pod
            .get("spec")
            .and_then(|s| s.get("terminationGracePeriodSeconds"))
            .and_then(Value::as_i64)
            .unwrap_or(30);
        let Some(r) = c
            .running_mut()
            .filter(|r| r.run == report.run && r.kill_at.is_none())
        else {
            return;
        };
        let since = r.since;
        let Some(p) = r.probes.iter_mut().find(|p| p.kind == report.kind) else {
            return;
        };
        let verdict = p.observe(report.outcome.ok, now);
        let kill_grace = p.spec.termination_grace.unwrap_or(grace_default);
        match (report.kind, verdict) {
            (ProbeKind::Startup, Verdict::Succeeded) => {
                p.stop();
                for other in r.probes.iter_mut() {
                    other.ungate(since, now);
                }
            }
            (ProbeKind::Startup | ProbeKind::Liveness, Verdict::Failed) => {
                for p in r.probes.iter_mut() {
                    p.stop();
                }
            }
            _ => {}
        }
        let failed = !report.outcome.ok;
        let kill = matches!(
            (report.kind, verdict),
            (ProbeKind::Startup | ProbeKind::Liveness, Verdict::Failed)
        );
        if failed {
            self.container_event(
                run,
                &name,
                init,
                EventType::Warning,
                "Unhealthy",
                &format!(
                    "{} probe failed: {}",
                    report.kind.title(),
                    report.outcome.output
                ),
            );
        }
        if kill {
            // As the kubelet's computePodActions: the kill promises a restart under any policy
            // but Never, and the message says so only then.
            let restart = run.policy.restarts_after_probe_kill();
            let mut message = format!("Container {name} failed {} probe", report.kind.lower());
            if restart {
                message.push_str(", will be restarted");
            }
            if let Some(r) = run
                .containers
                .get_mut(report.container)
                .and_then(|c| c.running_mut())
            {
                r.restart_after_kill = restart;
            }
            self.stop_container(run, report.container, kill_grace, &message);
        }
        pass.dirty.insert(report.uid);
    }

    /// The earliest deadline of any pod.
    fn next_deadline(&self) -> Option<std::time::SystemTime> {
        self.lock()
            .pods
            .values()
            .filter_map(|r| {
                let due = if r.terminal { None } else { r.deadline() };
                due.into_iter().chain(r.retry_at).min()
            })
            .min()
    }

    /// Writes the status of every pod marked dirty, when it changed; then deletes the pods
    /// that stopped for their deletion.
    fn flush(&self, pass: &mut Pass<'_>) {
        if pass.dirty.is_empty() && pass.remove.is_empty() {
            return;
        }
        let now = self.api.clock().now_rfc3339();
        let writes: Vec<(String, String, String, Value)> = {
            let mut st = self.lock();
            std::mem::take(&mut pass.dirty)
                .into_iter()
                .filter_map(|uid| {
                    let run = st.pods.get_mut(&uid)?;
                    if run.removed {
                        return None;
                    }
                    Some((
                        run.ns.clone(),
                        run.name.clone(),
                        uid,
                        run.status(&now, &self.config.host_ip),
                    ))
                })
                .collect()
        };
        let mut refused = Vec::new();
        for (ns, name, uid, status) in writes {
            if !write_status(&*self.api, &ns, &name, &uid, &status) {
                refused.push(uid);
            }
        }
        let remove: Vec<(String, String, String)> = {
            let mut st = self.lock();
            std::mem::take(&mut pass.remove)
                .into_iter()
                .filter_map(|uid| {
                    let run = st.pods.get_mut(&uid)?;
                    if run.removed {
                        return None;
                    }
                    run.removed = true;
                    Some((run.ns.clone(), run.name.clone(), uid))
                })
                .collect()
        };
        for (ns, name, uid) in remove {
            if !self.remove_stopped(&ns, &name, &uid) {
                if let Some(run) = self.lock().pods.get_mut(&uid) {
                    run.removed = false;
                }
                refused.push(uid);
            }
        }
        if !refused.is_empty() {
            let at = self.api.clock().now() + API_RETRY;
            let mut st = self.lock();
            for uid in refused {
                if let Some(run) = st.pods.get_mut(&uid) {
                    run.retry_at = Some(at);
                }
            }
        }
    }

    /// The kubelet's last word on a stopped pod: a delete with grace period 0, guarded by
    /// its uid (a new pod of the same name is not touched). Whether the pod is gone (false:
    /// the API did not take the delete, to be tried again).
    fn remove_stopped(&self, ns: &str, name: &str, uid: &str) -> bool {
        let opts = Delete {
            grace_period: Some(0),
            uid: Some(uid.to_string()),
            ..Delete::default()
        };
        match self.api.delete(Kind::Pod, ns, name, &opts) {
            Ok(_) => true,
            Err(e) if e.code == 404 || e.code == 409 => true,
            Err(e) => {
                tracing::debug!(pod = name, error = %e.message, "deleting a stopped pod");
                false
            }
        }
    }
}

/// A probe to run: where, and what to report.
#[derive(Debug)]
struct ProbeRun {
    uid: String,
    container: usize,
    run: u64,
    kind: ProbeKind,
    spec: probe::ProbeSpec,
    target: probe::Target,
}

/// Writes a pod's status unless it is already that (retrying a write that raced another).
/// Whether the API has it, or has no such pod (false: the API did not take the write).
pub(super) fn write_status(
    api: &dyn Client,
    ns: &str,
    name: &str,
    uid: &str,
    status: &Value,
) -> bool {
    for _ in 0..3 {
        let Some(cur) = api.get(Kind::Pod, ns, name) else {
            return true;
        };
        if meta_str(&cur, "uid") != Some(uid) || cur.get("status") == Some(status) {
            return true;
        }
        let mut obj = Value::clone(&cur);
        if let Some(o) = obj.as_object_mut() {
            o.insert("status".into(), status.clone());
        }
        match api.update(Kind::Pod, ns, name, obj, Part::Status) {
            Ok(_) => return true,
            Err(e) if e.code == 409 => continue,
            Err(e) if e.code == 404 => return true,
            Err(e) => {
                tracing::debug!(pod = name, error = %e.message, "pod status");
                return false;
            }
        }
    }
    false
}
