//! The workload controllers of kube-controller-manager, emulated: Deployments
//! ([`deployment`]: ReplicaSets per pod template, rolling updates and Recreate, rollout status
//! and conditions), ReplicaSets and ReplicationControllers ([`replicaset`]: pods to the
//! replica count), StatefulSets ([`statefulset`]: ordinal pods in order, their claims, rolling
//! updates), DaemonSets ([`daemonset`]: a pod per eligible node) and Jobs ([`job`]: pods to
//! completion or failure, back-off, deadlines, TTL after finishing). Their pods run through the
//! kubelet like any other; their Events are those the real controllers record.
//!
//! One task runs them all, as the agent-sandbox controllers run: it follows the store's change
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

use crate::events::{self, EventType};
use crate::meta::meta_str;
use crate::registry::{Registry, ResourceType};
use crate::status::ApiError;
use crate::store::{DeleteOptions, Event, Part, Store, WriteOptions};
use index::Index;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Settings of the workload controllers.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// A Job's first back-off before it replaces a failed pod; each next one doubles, up to 36
    /// times this (a real controller waits 10 s, at most 6 minutes).
    pub(crate) job_backoff: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            job_backoff: Duration::from_millis(10),
        }
    }
}

/// The kinds the controllers read and write.
#[derive(Debug, Clone)]
pub(crate) struct Kinds {
    pub(crate) pods: Arc<ResourceType>,
    pub(crate) pvcs: Arc<ResourceType>,
    pub(crate) nodes: Arc<ResourceType>,
    pub(crate) deployments: Arc<ResourceType>,
    pub(crate) replicasets: Arc<ResourceType>,
    pub(crate) replication_controllers: Arc<ResourceType>,
    pub(crate) statefulsets: Arc<ResourceType>,
    pub(crate) daemonsets: Arc<ResourceType>,
    pub(crate) jobs: Arc<ResourceType>,
}

impl Kinds {
    fn resolve(registry: &Registry) -> Option<Kinds> {
        Some(Kinds {
            pods: registry.find("", "v1", "pods")?,
            pvcs: registry.find("", "v1", "persistentvolumeclaims")?,
            nodes: registry.find("", "v1", "nodes")?,
            deployments: registry.find("apps", "v1", "deployments")?,
            replicasets: registry.find("apps", "v1", "replicasets")?,
            replication_controllers: registry.find("", "v1", "replicationcontrollers")?,
            statefulsets: registry.find("apps", "v1", "statefulsets")?,
            daemonsets: registry.find("apps", "v1", "daemonsets")?,
            jobs: registry.find("batch", "v1", "jobs")?,
        })
    }

    /// The kind a controller reconciles.
    fn of(&self, c: Workload) -> &Arc<ResourceType> {
        match c {
            Workload::Deployment => &self.deployments,
            Workload::ReplicaSet => &self.replicasets,
            Workload::ReplicationController => &self.replication_controllers,
            Workload::StatefulSet => &self.statefulsets,
            Workload::DaemonSet => &self.daemonsets,
            Workload::Job => &self.jobs,
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
    pub(crate) store: &'a Store,
    pub(crate) kinds: &'a Kinds,
    pub(crate) config: &'a Config,
    pub(crate) index: &'a Index,
    /// What the Job controller remembers between passes.
    pub(crate) jobs: &'a mut job::Memory,
}

/// Starts the controllers as one task that runs until `shutdown`.
pub(crate) fn spawn(
    store: Arc<Store>,
    config: Config,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(run(store, config, shutdown))
}

async fn run(store: Arc<Store>, config: Config, shutdown: CancellationToken) {
    let Some(kinds) = Kinds::resolve(store.registry()) else {
        tracing::error!("the workload kinds are missing from the resource table");
        return;
    };
    let mut changes = store.subscribe();
    changes.borrow_and_update();
    let mut last = store.resource_version();
    let mut index = Index::default();
    let mut jobs = job::Memory::default();
    let mut queue = resync(&store, &kinds, &mut index);
    let clock = store.clock().clone();
    let mut deadlines: BTreeMap<Key, SystemTime> = BTreeMap::new();
    loop {
        changes.borrow_and_update();
        match store.events_since(last) {
            Ok(events) => {
                for e in &events {
                    last = last.max(e.rv);
                    on_event(&store, &kinds, &mut index, e, &mut queue);
                }
            }
            Err(_) => {
                last = store.resource_version();
                queue.extend(resync(&store, &kinds, &mut index));
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
                store: &store,
                kinds: &kinds,
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

/// Rebuilds the index from the store; every workload object is to be looked at.
fn resync(store: &Store, kinds: &Kinds, index: &mut Index) -> BTreeSet<Key> {
    *index = Index::default();
    for p in store.list_all(&kinds.pods, None) {
        index.pods.set(&p, false);
    }
    for rs in store.list_all(&kinds.replicasets, None) {
        index.replicasets.set(&rs, false);
    }
    let mut out = BTreeSet::new();
    for c in Workload::ALL {
        for obj in store.list_all(kinds.of(c), None) {
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
    let r = controller_ref_of(obj)?;
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
fn on_event(store: &Store, kinds: &Kinds, index: &mut Index, e: &Event, out: &mut BTreeSet<Key>) {
    let gone = e.kind == crate::store::EventType::Deleted;
    let owners = std::iter::once(e.object.as_ref())
        .chain(e.prev.as_deref())
        .filter_map(owner_key);
    if e.rt.same_resource(&kinds.pods) {
        index.pods.set(&e.object, gone);
        out.extend(owners);
    } else if e.rt.same_resource(&kinds.replicasets) {
        index.replicasets.set(&e.object, gone);
        out.extend(owners);
        out.insert(Key::new(
            Workload::ReplicaSet,
            meta_str(&e.object, "namespace").unwrap_or(""),
            meta_str(&e.object, "name").unwrap_or(""),
        ));
    } else if e.rt.same_resource(&kinds.nodes) {
        for ds in store.list_all(&kinds.daemonsets, None) {
            out.insert(Key::new(
                Workload::DaemonSet,
                meta_str(&ds, "namespace").unwrap_or(""),
                meta_str(&ds, "name").unwrap_or(""),
            ));
        }
    } else if let Some(c) = Workload::ALL
        .into_iter()
        .find(|c| e.rt.same_resource(kinds.of(*c)))
    {
        out.insert(Key::new(
            c,
            meta_str(&e.object, "namespace").unwrap_or(""),
            meta_str(&e.object, "name").unwrap_or(""),
        ));
    }
}

/// The object's controller ownerReference.
pub(crate) fn controller_ref_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// A controller ownerReference to `owner`, as `SetControllerReference` makes it.
pub(crate) fn controller_ref(rt: &ResourceType, owner: &Value) -> Value {
    json!({
        "apiVersion": rt.api_version(),
        "kind": rt.kind,
        "name": meta_str(owner, "name").unwrap_or(""),
        "uid": meta_str(owner, "uid").unwrap_or(""),
        "controller": true,
        "blockOwnerDeletion": true,
    })
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
    store: &Store,
    rt: &Arc<ResourceType>,
    ns: &str,
    name: &str,
    status: Value,
) -> Option<Arc<Value>> {
    for _ in 0..3 {
        let current = store.get_opt(rt, ns, name)?;
        if current.get("status") == Some(&status) {
            return Some(current);
        }
        let mut next = Value::clone(&current);
        next["status"] = status.clone();
        match store.update(rt, ns, name, next, Part::Status, WriteOptions::default()) {
            Ok((v, _)) => return Some(v),
            Err(e) if e.code == 409 => continue,
            Err(e) => {
                tracing::debug!(kind = %rt.kind, name, error = %e.message, "writing status");
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
    store: &Store,
    rt: &Arc<ResourceType>,
    ns: &str,
    name: &str,
    mut f: impl FnMut(&mut Value),
) -> Option<Arc<Value>> {
    for _ in 0..3 {
        let current = store.get_opt(rt, ns, name)?;
        let mut next = Value::clone(&current);
        f(&mut next);
        if next == *current {
            return Some(current);
        }
        match store.update(rt, ns, name, next, Part::Main, WriteOptions::default()) {
            Ok((v, _)) => return Some(v),
            Err(e) if e.code == 409 => continue,
            Err(e) => {
                tracing::debug!(kind = %rt.kind, name, error = %e.message, "writing an object");
                return None;
            }
        }
    }
    None
}

/// Creates an object; the stored object, or why not.
pub(crate) fn create(
    store: &Store,
    rt: &Arc<ResourceType>,
    ns: &str,
    obj: Value,
) -> Result<Arc<Value>, ApiError> {
    store
        .create(rt, ns, obj, WriteOptions::default())
        .map(|(v, _)| v)
}

/// Deletes an object, guarded by its uid; a missing object is no error.
pub(crate) fn delete(store: &Store, rt: &Arc<ResourceType>, obj: &Value) -> Result<(), ApiError> {
    let opts = DeleteOptions {
        uid: meta_str(obj, "uid").map(str::to_string),
        ..DeleteOptions::default()
    };
    let ns = meta_str(obj, "namespace").unwrap_or("");
    let name = meta_str(obj, "name").unwrap_or("");
    match store.delete(rt, ns, name, &opts) {
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
    match create(ctx.store, &ctx.kinds.pods, ns, pod) {
        Ok(p) => {
            let message = format!("Created pod: {}", meta_str(&p, "name").unwrap_or(""));
            events::record(
                ctx.store,
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
            events::record(
                ctx.store,
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
    if delete(ctx.store, &ctx.kinds.pods, pod).is_ok() {
        let message = format!("Deleted pod: {}", meta_str(pod, "name").unwrap_or(""));
        events::record(
            ctx.store,
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

/// The condition of `ty` in an object's `status.conditions`.
pub(crate) fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

/// Whether an object's condition `ty` is True.
pub(crate) fn condition_true(obj: &Value, ty: &str) -> bool {
    condition(obj, ty)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

#[cfg(test)]
mod tests;
