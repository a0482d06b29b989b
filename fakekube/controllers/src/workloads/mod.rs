//! The workload controllers of kube-controller-manager, emulated: Deployments
//! ([`deployment`]: ReplicaSets per pod template, rolling updates and Recreate, rollout status
//! and conditions), ReplicaSets and ReplicationControllers ([`replicaset`]: pods to the
//! replica count), StatefulSets ([`statefulset`]: ordinal pods in order, their claims, rolling
//! updates), DaemonSets ([`daemonset`]: a pod per eligible node) and Jobs ([`job`]: pods to
//! completion or failure, back-off, deadlines, TTL after finishing). Their pods run through the
//! kubelet like any other; their Events are those the real controllers record.
//!
//! One task runs them all, as the agent-sandbox controllers run: it follows the API's change
//! log, maps each change to the objects whose controller must look again (a pod's or a
//! ReplicaSet's controller reference names its owner), reconciles those, and sleeps until the
//! next change or the next deadline (a Job's back-off or deadline, a Deployment's progress
//! deadline, `minReadySeconds`). Each controller finds what it owns through an index of
//! controller references kept from the log ([`index`]), never by scanning every pod. Every
//! time they wait on or write (conditions, `startTime`, back-offs, `minReadySeconds`) is the
//! cluster's clock, so an advanced clock moves them as it moves the kubelet.
//!
//! Left out: adoption and release of pods whose labels match a controller they do not belong
//! to (the index follows controller references only), ControllerRevision objects (revisions
//! are hashes of the pod template), proportional scaling during a rollout, pod failure
//! policies, success policies, per-index back-off limits, and CronJob scheduling (CronJobs are
//! stored only).

mod daemonset;
mod deployment;
mod hash;
mod index;
mod job;
mod pods;
mod replicaset;
mod statefulset;

use crate::client::{Change, ChangeType, Client, Delete, Kind, Part};
use crate::events::{EventType, Recorder};
use crate::meta::meta_str;
pub(crate) use crate::owners::{controller_of, controller_ref};
use crate::status::ApiError;
use index::Index;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Settings of the workload controllers.
#[derive(Debug, Clone)]
pub struct Config {
    /// A Job's first back-off before it replaces a failed pod; each next one doubles, up to 36
    /// times this (a real controller waits 10 s, at most 6 minutes).
    pub job_backoff: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            job_backoff: Duration::from_millis(10),
        }
    }
}

/// Which controller a key belongs to; the order is the order keys are reconciled in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Workload {
    Deployment,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
    DaemonSet,
    Job,
}

impl Workload {
    /// The kind it reconciles.
    pub(crate) fn kind(self) -> Kind {
        match self {
            Workload::Deployment => Kind::Deployment,
            Workload::ReplicaSet => Kind::ReplicaSet,
            Workload::ReplicationController => Kind::ReplicationController,
            Workload::StatefulSet => Kind::StatefulSet,
            Workload::DaemonSet => Kind::DaemonSet,
            Workload::Job => Kind::Job,
        }
    }

    const ALL: [Workload; 6] = [
        Workload::Deployment,
        Workload::ReplicaSet,
        Workload::ReplicationController,
        Workload::StatefulSet,
        Workload::DaemonSet,
        Workload::Job,
    ];

    /// The controller of an owner reference's group and kind.
    fn owning(group: &str, kind: &str) -> Option<Workload> {
        Some(match (group, kind) {
            ("apps", "Deployment") => Workload::Deployment,
            ("apps", "ReplicaSet") => Workload::ReplicaSet,
            ("", "ReplicationController") => Workload::ReplicationController,
            ("apps", "StatefulSet") => Workload::StatefulSet,
            ("apps", "DaemonSet") => Workload::DaemonSet,
            ("batch", "Job") => Workload::Job,
            _ => return None,
        })
    }
}

/// One object to reconcile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) controller: Workload,
    pub(crate) ns: String,
    pub(crate) name: String,
}

impl Key {
    fn new(controller: Workload, ns: &str, name: &str) -> Self {
        Key {
            controller,
            ns: ns.to_string(),
            name: name.to_string(),
        }
    }
}

/// When a key wants another look without a change: a delay from now.
pub(crate) type Requeue = Option<Duration>;

/// What every reconcile function works with.
pub(crate) struct Ctx<'a> {
    pub(crate) api: &'a dyn Client,
    /// The controllers' Event recorders.
    pub(crate) events: &'a Recorders,
    pub(crate) config: &'a Config,
    pub(crate) index: &'a Index,
    /// What the Job controller remembers between passes.
    pub(crate) jobs: &'a mut job::Memory,
}

/// The legacy Event recorder of each workload controller (`deployment-controller`,
/// `statefulset-controller`...), as each controller of kube-controller-manager has its own.
#[derive(Debug, Default)]
pub(crate) struct Recorders(Mutex<HashMap<String, Arc<Recorder>>>);

impl Recorders {
    /// Records an Event about `regarding` as `component`'s recorder.
    pub(crate) fn record(
        &self,
        api: &dyn Client,
        regarding: &Value,
        type_: EventType,
        reason: &str,
        message: &str,
        component: &str,
    ) {
        let recorder = {
            let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
            all.entry(component.to_string())
                .or_insert_with(|| Arc::new(Recorder::new(component, "")))
                .clone()
        };
        recorder.record(api, regarding, None, type_, reason, message);
    }
}

/// Starts the controllers as one task that runs until `shutdown`.
pub fn spawn(api: Arc<dyn Client>, config: Config, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(run(api, config, shutdown))
}

async fn run(api: Arc<dyn Client>, config: Config, shutdown: CancellationToken) {
    let api = api.as_ref();
    let recorders = Recorders::default();
    let mut changes = api.subscribe();
    changes.borrow_and_update();
    let mut last = api.position();
    let mut index = Index::default();
    let mut jobs = job::Memory::default();
    let mut queue = resync(api, &mut index);
    let clock = api.clock().clone();
    let mut deadlines: BTreeMap<Key, SystemTime> = BTreeMap::new();
    loop {
        changes.borrow_and_update();
        match api.changes_since(last) {
            Ok((events, reached)) => {
                last = last.max(reached);
                for e in &events {
                    on_event(api, &mut index, e, &mut queue);
                }
            }
            Err(_) => {
                last = api.position();
                queue.extend(resync(api, &mut index));
            }
        }
        let now = clock.now();
        let due: Vec<Key> = deadlines
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in due {
            deadlines.remove(&k);
            queue.insert(k);
        }
        for key in std::mem::take(&mut queue) {
            let mut ctx = Ctx {
                api,
                events: &recorders,
                config: &config,
                index: &index,
                jobs: &mut jobs,
            };
            match reconcile(&mut ctx, &key) {
                Some(after) => {
                    deadlines.insert(key, clock.now() + after);
                }
                None => {
                    deadlines.remove(&key);
                }
            }
        }
        if changes.has_changed().unwrap_or(false) {
            continue;
        }
        let next = deadlines.values().min().copied();
        tokio::select! {
            () = shutdown.cancelled() => return,
            r = changes.changed() => if r.is_err() { return },
            () = clock.sleep_until_opt(next) => {}
        }
    }
}

fn reconcile(ctx: &mut Ctx<'_>, key: &Key) -> Requeue {
    match key.controller {
        Workload::Deployment => deployment::reconcile(ctx, &key.ns, &key.name),
        Workload::ReplicaSet | Workload::ReplicationController => {
            replicaset::reconcile(ctx, key.controller, &key.ns, &key.name)
        }
        Workload::StatefulSet => statefulset::reconcile(ctx, &key.ns, &key.name),
        Workload::DaemonSet => daemonset::reconcile(ctx, &key.ns, &key.name),
        Workload::Job => job::reconcile(ctx, &key.ns, &key.name),
    }
}

/// Rebuilds the index from the API; every workload object is to be looked at.
fn resync(api: &dyn Client, index: &mut Index) -> BTreeSet<Key> {
    *index = Index::default();
    for p in api.list(Kind::Pod, None) {
        index.pods.set(&p, false);
    }
    for rs in api.list(Kind::ReplicaSet, None) {
        index.replicasets.set(&rs, false);
    }
    let mut out = BTreeSet::new();
    for c in Workload::ALL {
        for obj in api.list(c.kind(), None) {
            out.insert(Key::new(
                c,
                meta_str(&obj, "namespace").unwrap_or(""),
                meta_str(&obj, "name").unwrap_or(""),
            ));
        }
    }
    out
}

/// The controller that owns `obj` (by its controller reference), as a key.
fn owner_key(obj: &Value) -> Option<Key> {
    let r = controller_of(obj)?;
    let api = r.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let group = api.split_once('/').map_or("", |(g, _)| g);
    let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
    let c = Workload::owning(group, kind)?;
    Some(Key::new(
        c,
        meta_str(obj, "namespace").unwrap_or(""),
        r.get("name").and_then(Value::as_str).unwrap_or(""),
    ))
}

/// Maps one change to the keys to look at again, and keeps the index.
fn on_event(api: &dyn Client, index: &mut Index, e: &Change, out: &mut BTreeSet<Key>) {
    let gone = e.change == ChangeType::Deleted;
    let owners = std::iter::once(e.object.as_ref())
        .chain(e.prev.as_deref())
        .filter_map(owner_key);
    if e.kind == Kind::Pod {
        index.pods.set(&e.object, gone);
        out.extend(owners);
    } else if e.kind == Kind::ReplicaSet {
        index.replicasets.set(&e.object, gone);
        out.extend(owners);
        out.insert(Key::new(
            Workload::ReplicaSet,
            meta_str(&e.object, "namespace").unwrap_or(""),
            meta_str(&e.object, "name").unwrap_or(""),
        ));
    } else if e.kind == Kind::Node {
        for ds in api.list(Kind::DaemonSet, None) {
            out.insert(Key::new(
                Workload::DaemonSet,
                meta_str(&ds, "namespace").unwrap_or(""),
                meta_str(&ds, "name").unwrap_or(""),
            ));
        }
    } else if let Some(c) = Workload::ALL.into_iter().find(|c| e.kind == c.kind()) {
        out.insert(Key::new(
            c,
            meta_str(&e.object, "namespace").unwrap_or(""),
            meta_str(&e.object, "name").unwrap_or(""),
        ));
    }
}

/// Whether the object is marked for deletion.
pub(crate) fn deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// An integer at a JSON pointer (0 when absent).
pub(crate) fn int_at(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// `metadata.generation`.
pub(crate) fn generation(obj: &Value) -> i64 {
    int_at(obj, "/metadata/generation")
}

/// Writes `status` into the object's status subresource when it differs from what is stored
/// (retrying a write that raced another); returns the stored object.
pub(crate) fn write_status(
    api: &dyn Client,
    rt: Kind,
    ns: &str,
    name: &str,
    status: Value,
) -> Option<Arc<Value>> {
    for _ in 0..3 {
        let current = api.get(rt, ns, name)?;
        if current.get("status") == Some(&status) {
            return Some(current);
        }
        let mut next = Value::clone(&current);
        next["status"] = status.clone();
        match api.update(rt, ns, name, next, Part::Status) {
            Ok(v) => return Some(v),
            Err(e) if e.code == 409 => continue,
            Err(e) => {
                tracing::debug!(kind = rt.kind(), name, error = %e.message, "writing status");
                return None;
            }
        }
    }
    None
}

/// Reads the object, applies `f` to a copy and writes it back when it changed (retrying a
/// write that raced another); returns the stored object, `None` when it is gone or the write
/// failed.
pub(crate) fn modify(
    api: &dyn Client,
    rt: Kind,
    ns: &str,
    name: &str,
    mut f: impl FnMut(&mut Value),
) -> Option<Arc<Value>> {
    for _ in 0..3 {
        let current = api.get(rt, ns, name)?;
        let mut next = Value::clone(&current);
        f(&mut next);
        if next == *current {
            return Some(current);
        }
        match api.update(rt, ns, name, next, Part::Main) {
            Ok(v) => return Some(v),
            Err(e) if e.code == 409 => continue,
            Err(e) => {
                tracing::debug!(kind = rt.kind(), name, error = %e.message, "writing an object");
                return None;
            }
        }
    }
    None
}

/// Creates an object; the stored object, or why not.
pub(crate) fn create(
    api: &dyn Client,
    rt: Kind,
    ns: &str,
    obj: Value,
) -> Result<Arc<Value>, ApiError> {
    api.create(rt, ns, obj)
}

/// Deletes an object, guarded by its uid; a missing object is no error.
pub(crate) fn delete(api: &dyn Client, rt: Kind, obj: &Value) -> Result<(), ApiError> {
    let opts = Delete {
        uid: meta_str(obj, "uid").map(str::to_string),
        ..Delete::default()
    };
    let ns = meta_str(obj, "namespace").unwrap_or("");
    let name = meta_str(obj, "name").unwrap_or("");
    match api.delete(rt, ns, name, &opts) {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates a pod for `owner` and records what Kubernetes' shared pod control records for the
/// ReplicaSet, DaemonSet and Job controllers: `SuccessfulCreate` ("Created pod: NAME") or
/// `FailedCreate` ("Error creating: ..."). The stored pod, or `None` when the create failed.
pub(crate) fn create_pod(
    ctx: &Ctx<'_>,
    owner: &Value,
    ns: &str,
    pod: Value,
    component: &str,
) -> Option<Arc<Value>> {
    match create(ctx.api, Kind::Pod, ns, pod) {
        Ok(p) => {
            let message = format!("Created pod: {}", meta_str(&p, "name").unwrap_or(""));
            ctx.events.record(
                ctx.api,
                owner,
                EventType::Normal,
                "SuccessfulCreate",
                &message,
                component,
            );
            Some(p)
        }
        Err(e) => {
            let message = format!("Error creating: {}", e.message);
            ctx.events.record(
                ctx.api,
                owner,
                EventType::Warning,
                "FailedCreate",
                &message,
                component,
            );
            None
        }
    }
}

/// Deletes `pod` of `owner` and, when it went, records the shared pod control's
/// `SuccessfulDelete` ("Deleted pod: NAME").
pub(crate) fn delete_pod(ctx: &Ctx<'_>, owner: &Value, pod: &Value, component: &str) {
    if delete(ctx.api, Kind::Pod, pod).is_ok() {
        let message = format!("Deleted pod: {}", meta_str(pod, "name").unwrap_or(""));
        ctx.events.record(
            ctx.api,
            owner,
            EventType::Normal,
            "SuccessfulDelete",
            &message,
            component,
        );
    }
}

/// Sets a condition in a workload's `status.conditions` (the apps/batch style, with
/// `lastUpdateTime` when `with_update_time`): a new type is appended; an existing one changes
/// its transition time only when its status changes; times are `now` (the cluster's clock).
/// Returns whether anything changed.
pub(crate) fn set_condition(
    conditions: &mut Vec<Value>,
    ty: &str,
    status: &str,
    reason: &str,
    message: &str,
    with_update_time: bool,
    now: &str,
) -> bool {
    if let Some(c) = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
    {
        let same = c.get("status").and_then(Value::as_str) == Some(status)
            && c.get("reason").and_then(Value::as_str) == Some(reason)
            && c.get("message").and_then(Value::as_str) == Some(message);
        if same {
            return false;
        }
        if c.get("status").and_then(Value::as_str) != Some(status) {
            c["lastTransitionTime"] = json!(now);
        }
        c["status"] = json!(status);
        c["reason"] = json!(reason);
        c["message"] = json!(message);
        if with_update_time {
            c["lastUpdateTime"] = json!(now);
        }
        return true;
    }
    let mut c = json!({
        "type": ty,
        "status": status,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    });
    if with_update_time {
        c["lastUpdateTime"] = json!(now);
    }
    conditions.push(c);
    true
}

pub(crate) use crate::meta::{condition, condition_true};

#[cfg(test)]
mod tests;
