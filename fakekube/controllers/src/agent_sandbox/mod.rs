//! The kubernetes-sigs/agent-sandbox controllers, emulated: the core Sandbox controller and the
//! extension controllers for SandboxTemplates, SandboxWarmPools and SandboxClaims.
//!
//! One task runs them all, on a thread of its own ([`spawn`]), apart from the API server's
//! request workers as a controller manager is apart from the API server. It reaches the cluster
//! only through a [`Client`] (in process, the store's; or any API server over HTTPS). It follows
//! the client's change feed (in process, the store's change log that watches read too), maps
//! each change to the objects whose controller must look again, and reconciles those. It sleeps
//! until the next change, the next time-based deadline (a `shutdownTime`, a claim's expiry, the
//! end of a claim's wait for a warm member, a warm member's readiness grace) or shutdown; there is
//! no periodic polling. Every write is a read-modify-write of the current object, made only when
//! something changes, so a quiet cluster stays quiet.
//!
//! What each controller emulates is documented in its module: [`sandbox`], [`template`],
//! [`warmpool`] and [`claim`]. The names, labels, hashes, condition reasons and messages are the
//! ones the real controllers use (see `docs/agent-sandbox-api.md`).
//!
//! Each controller writes its Events as controller-runtime's `events.k8s.io` recorder does
//! ([`Recorders`]): `MultiplePods`, `SandboxAdopted`, `SandboxProvisioned`, `ClaimExpired`,
//! `WarmPoolNotProgressing`/`WarmPoolProgressing`. Every time (conditions, expiry, requeues)
//! is the cluster's clock.
//!
//! Left out everywhere: tracing (`opentelemetry.io/trace-context`), metrics, leader election,
//! and the real controllers' rate limiting, write-behind deferral and informer-cache
//! "expectations" (objects are read from the API directly; the [`index`] that finds a
//! Sandbox's Pods, a pool's members and the unbound claims follows the change log, and what it
//! lacks within a batch is heard of from the change that follows).

mod claim;
mod gojson;
mod index;
mod sandbox;
mod template;
mod warmpool;

use crate::client::{Change, ChangeType, Client, Delete, Kind, Part};
use crate::events::{Emitter, EventType};
use crate::meta::{self, meta_str};
pub(crate) use crate::owners::{controller_of, controller_ref};
use crate::status::ApiError;
use index::Index;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The label that ties Pods, Services and PVCs to their Sandbox; also the Service selector.
pub(crate) const NAME_HASH_LABEL: &str = "agents.x-k8s.io/sandbox-name-hash";
/// Sandbox annotation naming the backing Pod.
pub(crate) const POD_NAME_ANNOTATION: &str = "agents.x-k8s.io/pod-name";
/// Pod annotation listing the label keys copied from the pod template.
pub(crate) const PROPAGATED_LABELS: &str = "agents.x-k8s.io/propagated-labels";
/// Pod annotation listing the annotation keys copied from the pod template.
pub(crate) const PROPAGATED_ANNOTATIONS: &str = "agents.x-k8s.io/propagated-annotations";
/// Label of a warm pool member: the pool's name hash.
pub(crate) const WARM_POOL_LABEL: &str = "agents.x-k8s.io/warm-pool-sandbox";
/// Label naming the template by the hash of its name.
pub(crate) const TEMPLATE_REF_HASH_LABEL: &str = "agents.x-k8s.io/sandbox-template-ref-hash";
/// Warm member label: hash of the template's blueprint, for staleness.
pub(crate) const TEMPLATE_HASH_LABEL: &str = "agents.x-k8s.io/sandbox-template-hash";
/// Warm member label (deprecated): hash of the template's pod template.
pub(crate) const POD_TEMPLATE_HASH_LABEL: &str = "agents.x-k8s.io/sandbox-pod-template-hash";
/// Sandbox annotation naming the template it was built from.
pub(crate) const TEMPLATE_REF_ANNOTATION: &str = "agents.x-k8s.io/sandbox-template-ref";
/// Sandbox label: `warm` or `cold`.
pub(crate) const LAUNCH_TYPE_LABEL: &str = "agents.x-k8s.io/launch-type";
/// Who created a claim, Sandbox or Pod.
pub(crate) const CREATED_BY_LABEL: &str = "agents.x-k8s.io/created-by";
/// Sandbox and pod template label: the claim's uid.
pub(crate) const CLAIM_UID_LABEL: &str = "agents.x-k8s.io/claim-uid";
/// Claim annotation (and deprecated label) naming the adopted warm Sandbox.
pub(crate) const SANDBOX_NAME_ANNOTATION: &str = "agents.x-k8s.io/sandbox-name";
/// Lets the Sandbox controller adopt an unowned Pod, Service or PVC.
pub(crate) const ADOPTABLE_LABEL: &str = "agents.x-k8s.io/adoptable";
/// The pool's eviction hint on warm pod templates.
pub(crate) const SAFE_TO_EVICT: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
/// The trace annotation, filtered out of Pods.
pub(crate) const TRACE_ANNOTATION: &str = "opentelemetry.io/trace-context";
/// The API group of the extension kinds.
pub(crate) const EXTENSIONS_GROUP: &str = "extensions.agents.x-k8s.io";

/// Settings of the emulated controllers (the real controllers' flags).
#[derive(Debug, Clone)]
pub struct Config {
    /// `--cluster-domain`: the suffix of `status.serviceFQDN`.
    pub(crate) cluster_domain: String,
    /// How long a new claim waits for a warm member that has no Pod IP yet before it
    /// cold-starts (2 s in the real controller), looking again every
    /// [`WARM_CANDIDATE_RETRY`].
    pub(crate) warm_candidate_grace: Duration,
    /// `--enable-warm-pool-eviction`: the pool marks warm pod templates safe to evict.
    pub(crate) warm_pool_eviction: bool,
    /// How long a warm member may stay not Ready before the pool replaces it.
    pub(crate) warm_pool_ready_grace: Duration,
    /// Label domains a claim's `additionalPodMetadata` may use.
    pub(crate) allowed_label_domains: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cluster_domain: "cluster.local".into(),
            warm_candidate_grace: Duration::from_secs(2),
            warm_pool_eviction: true,
            warm_pool_ready_grace: Duration::from_secs(300),
            allowed_label_domains: vec!["sandbox.users.io".into()],
        }
    }
}

/// Which agent-sandbox kinds the cluster serves now. A kind whose CRD is not established has
/// no objects to read, and its controller does not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kinds {
    /// Whether each controller's kind is served, in [`Controller::ALL`]'s order.
    served: [bool; 4],
}

impl Kinds {
    /// Asks the API which of the kinds it serves.
    pub(crate) fn resolve(api: &dyn Client) -> Kinds {
        Kinds {
            served: Controller::ALL.map(|c| api.served(c.kind())),
        }
    }

    /// The kind `controller` reconciles, when it is established.
    fn of(&self, controller: Controller) -> Option<Kind> {
        let i = Controller::ALL.iter().position(|c| *c == controller)?;
        self.served[i].then_some(controller.kind())
    }

    /// Whether any of the kinds is served.
    fn any(&self) -> bool {
        self.served.contains(&true)
    }
}

/// The cluster as every reconcile function sees it: the API it reads and writes, and the
/// controllers' settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cluster<'a> {
    /// The API read and written.
    pub(crate) api: &'a dyn Client,
    /// The settings.
    pub(crate) config: &'a Config,
    /// The controllers' Event recorders.
    pub(crate) recorders: &'a Recorders,
    /// What the controllers find without scanning a namespace.
    pub(crate) index: &'a Index,
}

/// How often a claim waiting for a warm member's Pod IP looks again (upstream's
/// `warmCandidateRetryInterval`).
pub(crate) const WARM_CANDIDATE_RETRY: Duration = Duration::from_millis(500);

/// The pod the emulated controller manager runs as (the `reportingInstance` of its Events).
const CONTROLLER_POD: &str = "agent-sandbox-controller-0";

/// The Event recorders of the controllers, one each as the controller manager makes them.
#[derive(Debug)]
pub(crate) struct Recorders {
    /// `sandbox-controller`.
    pub(crate) sandbox: Emitter,
    /// `sandboxclaim-controller`.
    pub(crate) claim: Emitter,
    /// `sandboxwarmpool-controller`.
    pub(crate) warm_pool: Emitter,
    /// Pools not progressing now (namespace/name), for the transition Events.
    not_progressing: Mutex<BTreeSet<String>>,
}

impl Recorders {
    /// `setNotProgressing`: on a change of the pool's state, `WarmPoolNotProgressing`
    /// (Warning, `message`) or `WarmPoolProgressing` (Normal) once.
    pub(crate) fn warm_pool_progress(
        &self,
        api: &dyn Client,
        pool: &Value,
        stuck: bool,
        message: &str,
    ) {
        let key = format!(
            "{}/{}",
            meta_str(pool, "namespace").unwrap_or(""),
            meta_str(pool, "name").unwrap_or("")
        );
        let changed = {
            let mut set = self
                .not_progressing
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if stuck {
                set.insert(key)
            } else {
                set.remove(&key)
            }
        };
        if !changed {
            return;
        }
        if stuck {
            self.warm_pool.emit(
                api,
                pool,
                EventType::Warning,
                "WarmPoolNotProgressing",
                "Reconciling",
                message,
            );
        } else {
            self.warm_pool.emit(
                api,
                pool,
                EventType::Normal,
                "WarmPoolProgressing",
                "Reconciling",
                "Warm pool is progressing again",
            );
        }
    }
}

impl Default for Recorders {
    fn default() -> Self {
        Recorders {
            sandbox: Emitter::new("sandbox-controller", CONTROLLER_POD),
            claim: Emitter::new("sandboxclaim-controller", CONTROLLER_POD),
            warm_pool: Emitter::new("sandboxwarmpool-controller", CONTROLLER_POD),
            not_progressing: Mutex::default(),
        }
    }
}

impl Cluster<'_> {
    /// The cluster's time now, as a condition's `lastTransitionTime` is written.
    pub(crate) fn now(&self) -> String {
        self.api.clock().now_rfc3339()
    }
}

/// Which controller a key belongs to; the order is the order keys are reconciled in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Controller {
    /// SandboxTemplate controller.
    Template,
    /// SandboxClaim controller.
    Claim,
    /// SandboxWarmPool controller.
    Pool,
    /// Sandbox controller.
    Sandbox,
}

impl Controller {
    /// Every controller.
    const ALL: [Controller; 4] = [
        Controller::Template,
        Controller::Claim,
        Controller::Pool,
        Controller::Sandbox,
    ];

    /// The kind it reconciles.
    fn kind(self) -> Kind {
        match self {
            Controller::Template => Kind::SandboxTemplate,
            Controller::Claim => Kind::SandboxClaim,
            Controller::Pool => Kind::SandboxWarmPool,
            Controller::Sandbox => Kind::Sandbox,
        }
    }
}

/// One object to reconcile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    /// The controller.
    pub(crate) controller: Controller,
    /// Namespace.
    pub(crate) ns: String,
    /// Name.
    pub(crate) name: String,
}

impl Key {
    fn new(controller: Controller, ns: &str, name: &str) -> Self {
        Key {
            controller,
            ns: ns.to_string(),
            name: name.to_string(),
        }
    }
}

/// When a key wants another look without a change: a delay from now.
pub(crate) type Requeue = Option<Duration>;

/// The controllers' own thread, as a real controller manager is its own process: the API
/// server's request workers never run a reconcile, so a write is answered without waiting for
/// the work it sets off, and a client may see any state between two of the controllers'
/// writes. Joined by [`Thread::stop`] or on drop, after `shutdown` is cancelled.
#[derive(Debug)]
pub struct Thread {
    /// The thread, until joined.
    join: Option<std::thread::JoinHandle<()>>,
    /// What the controllers had looked at when they last went idle.
    idle: watch::Receiver<Idle>,
}

/// What the controllers had looked at when they last went idle: every change up to `rv`, and
/// every deadline before `next` (none pending when `None`).
#[derive(Debug, Clone, Copy, Default)]
struct Idle {
    /// The API's resourceVersion they had caught up with.
    rv: u64,
    /// Their earliest pending deadline, later than the clock was then.
    next: Option<SystemTime>,
}

impl Thread {
    /// Waits until the controllers have looked at every change made before the call and at
    /// every deadline the clock has passed, and gone idle; `false` if `timeout` passes first.
    /// For tests of a manual clock, which must not move it while a reconcile is still due at
    /// the old time.
    pub async fn settled(&self, api: &dyn Client, timeout: Duration) -> bool {
        let target = api.position();
        let clock = api.clock();
        let mut idle = self.idle.clone();
        let caught_up = idle.wait_for(|i| i.rv >= target && i.next.is_none_or(|t| t > clock.now()));
        tokio::time::timeout(timeout, caught_up)
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Waits for the thread to end (it ends at its next look once `shutdown` is cancelled; a
    /// batch under way finishes first), reporting a panic as a warning.
    pub fn stop(&mut self) {
        if let Some(thread) = self.join.take()
            && thread.join().is_err()
        {
            tracing::warn!("the agent-sandbox controllers' thread panicked");
        }
    }
}

impl Drop for Thread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the controllers on a thread of their own (a current-thread runtime with timers)
/// that runs until `shutdown` is cancelled; `shutdown` must be cancelled before the returned
/// [`Thread`] is dropped, or the drop waits for it.
pub fn spawn(
    api: Arc<dyn Client>,
    config: Config,
    shutdown: CancellationToken,
) -> std::io::Result<Thread> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let (idle_tx, idle) = watch::channel(Idle::default());
    let thread = std::thread::Builder::new()
        .name("fakekube-controllers".into())
        .spawn(move || runtime.block_on(run(api, config, shutdown, idle_tx)))?;
    Ok(Thread {
        join: Some(thread),
        idle,
    })
}

/// The controllers' loop: idle until the Sandbox kind is established, then reconciling what
/// each change touches; a kind becoming served or not (a CRD installed or removed) makes it
/// look at everything again.
async fn run(
    api: Arc<dyn Client>,
    config: Config,
    shutdown: CancellationToken,
    idle: watch::Sender<Idle>,
) {
    let mut changes = api.subscribe();
    changes.borrow_and_update();
    let api = api.as_ref();
    let mut last = api.position();
    let mut kinds = Kinds::resolve(api);
    let mut index = Index::default();
    let mut queue = if kinds.any() {
        full_resync(api, &kinds, &mut index)
    } else {
        BTreeSet::new()
    };
    let clock = api.clock().clone();
    let recorders = Recorders::default();
    let mut deadlines: BTreeMap<Key, SystemTime> = BTreeMap::new();
    loop {
        changes.borrow_and_update();
        // Read before the log, so every change up to it is among the events read below.
        let seen = api.position();
        let now_served = Kinds::resolve(api);
        let mut resync = false;
        if now_served != kinds {
            kinds = now_served;
            resync = true;
        }
        match api.changes_since(last) {
            Ok((events, reached)) => {
                last = last.max(reached);
                if kinds.any() {
                    for e in &events {
                        index.on_event(e);
                        keys_for_event(api, &index, e, &mut queue);
                    }
                }
            }
            Err(_) => {
                // The log no longer reaches back: look at everything again.
                last = api.position();
                resync = true;
            }
        }
        if resync && kinds.any() {
            queue.extend(full_resync(api, &kinds, &mut index));
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
        let pending = std::mem::take(&mut queue);
        if kinds.any() {
            let cluster = Cluster {
                api,
                config: &config,
                recorders: &recorders,
                index: &index,
            };
            for key in pending {
                if kinds.of(key.controller).is_none() {
                    deadlines.remove(&key);
                    continue;
                }
                match reconcile(cluster, &key) {
                    Some(after) => {
                        // As a delaying work queue's `AddAfter`: an earlier pending look wins.
                        let at = clock.now() + after;
                        let pending = deadlines.entry(key).or_insert(at);
                        *pending = (*pending).min(at);
                    }
                    None => {
                        deadlines.remove(&key);
                    }
                }
            }
        } else {
            deadlines.clear();
        }
        if changes.has_changed().unwrap_or(false) {
            continue;
        }
        let next = deadlines.values().min().copied();
        if next.is_none_or(|t| t > clock.now()) {
            idle.send_replace(Idle {
                rv: seen.max(last),
                next,
            });
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            r = changes.changed() => {
                if r.is_err() {
                    return;
                }
            }
            () = clock.sleep_until_opt(next) => {}
        }
    }
}

fn reconcile(cluster: Cluster<'_>, key: &Key) -> Requeue {
    match key.controller {
        Controller::Sandbox => sandbox::reconcile(cluster, &key.ns, &key.name),
        Controller::Template => template::reconcile(cluster, &key.ns, &key.name),
        Controller::Pool => warmpool::reconcile(cluster, &key.ns, &key.name),
        Controller::Claim => claim::reconcile(cluster, &key.ns, &key.name),
    }
}

/// Every object any controller looks after; the index made again from the API.
fn full_resync(api: &dyn Client, kinds: &Kinds, index: &mut Index) -> BTreeSet<Key> {
    *index = Index::build(api);
    let mut out = BTreeSet::new();
    for c in [
        Controller::Template,
        Controller::Pool,
        Controller::Claim,
        Controller::Sandbox,
    ] {
        let Some(rt) = kinds.of(c) else {
            continue;
        };
        for obj in api.list(rt, None) {
            out.insert(Key::new(
                c,
                meta_str(&obj, "namespace").unwrap_or(""),
                meta_str(&obj, "name").unwrap_or(""),
            ));
        }
    }
    out
}

/// Maps one change to the keys whose controllers must look again.
fn keys_for_event(api: &dyn Client, index: &Index, e: &Change, out: &mut BTreeSet<Key>) {
    let obj = &e.object;
    let ns = meta_str(obj, "namespace").unwrap_or("");
    let name = meta_str(obj, "name").unwrap_or("");
    let versions = std::iter::once(obj.as_ref()).chain(e.prev.as_deref());
    let is = |k: Kind| k == e.kind;
    let pools = |ns: &str| api.list(Kind::SandboxWarmPool, Some(ns));
    let claims = |ns: &str| api.list(Kind::SandboxClaim, Some(ns));
    if is(Kind::Sandbox) {
        out.insert(Key::new(Controller::Sandbox, ns, name));
        let mut pool_member = false;
        for v in versions {
            if let Some(owner) = controller_of(v) {
                match (owner_group(owner), owner_kind(owner)) {
                    (EXTENSIONS_GROUP, "SandboxWarmPool") => {
                        out.insert(Key::new(Controller::Pool, ns, owner_name(owner)));
                    }
                    (EXTENSIONS_GROUP, "SandboxClaim") => {
                        out.insert(Key::new(Controller::Claim, ns, owner_name(owner)));
                    }
                    _ => {}
                }
            }
            if let Some(hash) = label(v, WARM_POOL_LABEL) {
                pool_member = true;
                for pool in pools(ns) {
                    let pname = meta_str(&pool, "name").unwrap_or("");
                    if name_hash(pname) == hash {
                        out.insert(Key::new(Controller::Pool, ns, pname));
                    }
                }
            }
        }
        if pool_member {
            // A member changed: claims still waiting for one may now adopt it.
            for (cns, cname) in index.unbound_claims(ns) {
                out.insert(Key::new(Controller::Claim, cns, cname));
            }
        }
    } else if is(Kind::SandboxTemplate) {
        out.insert(Key::new(Controller::Template, ns, name));
        let mut using = BTreeSet::new();
        for pool in pools(ns) {
            if str_at(&pool, &["spec", "sandboxTemplateRef", "name"]) == Some(name) {
                let pname = meta_str(&pool, "name").unwrap_or("").to_string();
                out.insert(Key::new(Controller::Pool, ns, &pname));
                using.insert(pname);
            }
        }
        // Claims hear of a template only when it is created (edits reach them through the
        // pool's rollout), and then only the claims of the pools that use it, bound or not.
        if e.change == ChangeType::Added {
            for c in claims(ns) {
                let pool = str_at(&c, &["spec", "warmPoolRef", "name"]).unwrap_or("");
                if using.contains(pool) && !deleting(&c) {
                    out.insert(Key::new(
                        Controller::Claim,
                        ns,
                        meta_str(&c, "name").unwrap_or(""),
                    ));
                }
            }
        }
    } else if is(Kind::SandboxWarmPool) {
        out.insert(Key::new(Controller::Pool, ns, name));
        // Claims hear of a pool's creation, deletion and spec changes (not its status), and
        // only those not bound to a Sandbox yet.
        let spec_change = e.change != ChangeType::Modified
            || e.prev
                .as_deref()
                .is_none_or(|p| generation(p) != generation(obj));
        let unbound = index.unbound_claims(ns).filter(|_| spec_change);
        for (cns, cname) in unbound {
            let Some(c) = api.get(Kind::SandboxClaim, cns, cname) else {
                continue;
            };
            let bound = str_at(&c, &["status", "sandbox", "name"]).is_some_and(|n| !n.is_empty());
            if str_at(&c, &["spec", "warmPoolRef", "name"]) == Some(name) && !bound && !deleting(&c)
            {
                out.insert(Key::new(Controller::Claim, cns, cname));
            }
        }
    } else if is(Kind::SandboxClaim) {
        out.insert(Key::new(Controller::Claim, ns, name));
    } else if matches!(
        e.kind,
        Kind::Pod | Kind::Service | Kind::PersistentVolumeClaim
    ) {
        if e.kind != Kind::PersistentVolumeClaim {
            // The Pod and the Service are looked up by the Sandbox's name.
            out.insert(Key::new(Controller::Sandbox, ns, name));
        }
        for v in versions {
            let sandbox_owner = controller_of(v).filter(|o| owner_kind(o) == "Sandbox");
            if let Some(owner) = sandbox_owner {
                out.insert(Key::new(Controller::Sandbox, ns, owner_name(owner)));
            }
            if e.kind == Kind::Pod
                && sandbox_owner.is_none()
                && let Some(hash) = label(v, NAME_HASH_LABEL)
            {
                // An unowned or foreign Pod carrying a Sandbox's tracking label.
                for sb in api.list(Kind::Sandbox, Some(ns)) {
                    let sname = meta_str(&sb, "name").unwrap_or("");
                    if name_hash(sname) == hash {
                        out.insert(Key::new(Controller::Sandbox, ns, sname));
                    }
                }
            }
        }
    } else if is(Kind::NetworkPolicy) {
        for v in versions {
            if let Some(owner) = controller_of(v)
                && owner_kind(owner) == "SandboxTemplate"
            {
                out.insert(Key::new(Controller::Template, ns, owner_name(owner)));
            }
        }
    }
}

/// `NameHash`: FNV-1a (32 bit) of the bytes, as 8 lowercase hex digits.
pub(crate) fn name_hash(s: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

/// The value at a path of object keys.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, k| cur.get(*k))
}

pub(crate) use crate::meta::str_at;

/// A mutable object at a path, created (and made an object) on the way.
pub(crate) fn obj_at<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut cur = v;
    for k in path {
        let o = cur.as_object_mut()?;
        let next = o.entry(k.to_string()).or_insert_with(|| json!({}));
        if !next.is_object() {
            *next = json!({});
        }
        cur = next;
    }
    cur.as_object_mut()
}

/// A string map (labels, annotations) at a path, as owned pairs.
pub(crate) fn string_map(v: &Value, path: &[&str]) -> BTreeMap<String, String> {
    at(v, path)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// One label of an object.
pub(crate) fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    str_at(obj, &["metadata", "labels", key])
}

/// One annotation of an object.
pub(crate) fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    str_at(obj, &["metadata", "annotations", key])
}

/// Sets (`Some`) or removes (`None`) a key of the string map at `path`; removes the map when it
/// becomes empty.
pub(crate) fn set_map_key(obj: &mut Value, path: &[&str], key: &str, value: Option<&str>) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    match value {
        Some(v) => {
            if let Some(m) = obj_at(obj, path) {
                m.insert(key.to_string(), json!(v));
            }
        }
        None => {
            let Some(p) = obj_at(obj, parent) else { return };
            let empty = match p.get_mut(*last).and_then(Value::as_object_mut) {
                Some(m) => {
                    m.remove(key);
                    m.is_empty()
                }
                None => false,
            };
            if empty {
                p.remove(*last);
            }
        }
    }
}

/// Whether the object is marked for deletion.
pub(crate) fn deleting(obj: &Value) -> bool {
    at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

/// The API group of an ownerReference.
pub(crate) fn owner_group(r: &Value) -> &str {
    let api = r.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    match api.split_once('/') {
        Some((g, _)) => g,
        None => "",
    }
}

/// The kind of an ownerReference.
pub(crate) fn owner_kind(r: &Value) -> &str {
    r.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// The name of an ownerReference.
pub(crate) fn owner_name(r: &Value) -> &str {
    r.get("name").and_then(Value::as_str).unwrap_or("")
}

/// The uid of an ownerReference.
pub(crate) fn owner_uid(r: &Value) -> &str {
    r.get("uid").and_then(Value::as_str).unwrap_or("")
}

/// Whether `obj`'s controller is `owner` (by uid).
pub(crate) fn controlled_by(obj: &Value, owner: &Value) -> bool {
    let uid = meta_str(owner, "uid").unwrap_or("");
    !uid.is_empty() && controller_of(obj).is_some_and(|r| owner_uid(r) == uid)
}

/// Adds a controller reference to `owner`, keeping other (non-controller) references.
pub(crate) fn set_controller_ref(obj: &mut Value, rt: Kind, owner: &Value) {
    let r = controller_ref(rt, owner);
    let Some(md) = meta::metadata_mut(obj) else {
        return;
    };
    let refs = md
        .entry("ownerReferences")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !refs.is_array() {
        *refs = Value::Array(Vec::new());
    }
    if let Some(list) = refs.as_array_mut() {
        let uid = owner_uid(&r).to_string();
        list.retain(|x| owner_uid(x) != uid);
        list.push(r);
    }
}

/// The `creationTimestamp` of an object.
pub(crate) fn created_at(obj: &Value) -> Option<OffsetDateTime> {
    parse_time(meta_str(obj, "creationTimestamp")?)
}

/// Parses an RFC 3339 time.
pub(crate) fn parse_time(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

/// How long from `now` until `t`, zero when it is past.
pub(crate) fn until(now: OffsetDateTime, t: OffsetDateTime) -> Duration {
    let d = t - now;
    if d.is_negative() {
        Duration::ZERO
    } else {
        d.unsigned_abs()
    }
}

/// `metadata.generation` (0 when absent).
pub(crate) fn generation(obj: &Value) -> i64 {
    at(obj, &["metadata", "generation"])
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// A `metav1.Condition` to set.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cond {
    /// `type`.
    pub(crate) kind: String,
    /// `True`, `False` or `Unknown`.
    pub(crate) status: String,
    /// `reason`.
    pub(crate) reason: String,
    /// `message`.
    pub(crate) message: String,
    /// `observedGeneration`.
    pub(crate) observed_generation: i64,
    /// `lastTransitionTime` to use when the status changes (now when unset).
    pub(crate) last_transition_time: Option<String>,
}

impl Cond {
    /// A condition with the given fields and no preset transition time.
    pub(crate) fn new(kind: &str, status: &str, reason: &str, message: &str, gen_: i64) -> Self {
        Cond {
            kind: kind.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: gen_,
            last_transition_time: None,
        }
    }

    /// Reads a condition from its JSON form.
    pub(crate) fn from_value(v: &Value) -> Option<Cond> {
        Some(Cond {
            kind: v.get("type")?.as_str()?.to_string(),
            status: v.get("status").and_then(Value::as_str).unwrap_or("").into(),
            reason: v.get("reason").and_then(Value::as_str).unwrap_or("").into(),
            message: v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            observed_generation: v
                .get("observedGeneration")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            last_transition_time: v
                .get("lastTransitionTime")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}

/// The condition of a type in a conditions list.
pub(crate) fn find_condition<'a>(conds: &'a [Value], kind: &str) -> Option<&'a Value> {
    conds
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// The conditions at `status.conditions`.
pub(crate) fn conditions(obj: &Value) -> Vec<Value> {
    at(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Whether the object's condition of `kind` has status True.
pub(crate) fn condition_true(obj: &Value, kind: &str) -> bool {
    find_condition(&conditions(obj), kind)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// `meta.SetStatusCondition`: appends a new type; on an existing one updates reason, message
/// and observedGeneration, and the transition time only when the status changes.
/// `now` is the cluster's time as written in a condition.
pub(crate) fn set_condition(conds: &mut Vec<Value>, c: Cond, now: &str) {
    let now = now.to_string();
    if let Some(existing) = conds
        .iter_mut()
        .find(|x| x.get("type").and_then(Value::as_str) == Some(c.kind.as_str()))
    {
        let Some(o) = existing.as_object_mut() else {
            return;
        };
        if o.get("status").and_then(Value::as_str) != Some(c.status.as_str()) {
            o.insert("status".into(), json!(c.status));
            o.insert(
                "lastTransitionTime".into(),
                json!(c.last_transition_time.unwrap_or(now)),
            );
        }
        o.insert("reason".into(), json!(c.reason));
        o.insert("message".into(), json!(c.message));
        o.insert("observedGeneration".into(), json!(c.observed_generation));
        return;
    }
    conds.push(json!({
        "type": c.kind,
        "status": c.status,
        "observedGeneration": c.observed_generation,
        "lastTransitionTime": c.last_transition_time.unwrap_or(now),
        "reason": c.reason,
        "message": c.message,
    }));
}

/// `meta.RemoveStatusCondition`.
pub(crate) fn remove_condition(conds: &mut Vec<Value>, kind: &str) {
    conds.retain(|c| c.get("type").and_then(Value::as_str) != Some(kind));
}

/// How long to wait before retrying after a write lost a race.
pub(crate) const CONFLICT_RETRY: Duration = Duration::from_millis(10);

/// Why a write helper failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// The API refused the write.
    #[error("{}", .0.message)]
    Api(ApiError),
    /// The object kept changing under the write.
    #[error("the object kept changing; gave up after three tries")]
    Contended,
}

impl WriteError {
    /// Whether the write lost a race (409) and a retry may succeed.
    pub(crate) fn is_conflict(&self) -> bool {
        match self {
            WriteError::Api(e) => e.code == 409,
            WriteError::Contended => true,
        }
    }
}

/// Reads the current object, applies `f` to a copy, and writes it back when it changed,
/// guarded by the resourceVersion read (retried on a conflict). `Ok(None)` when the object is
/// gone; the stored object otherwise.
pub(crate) fn modify(
    cluster: Cluster<'_>,
    rt: Kind,
    ns: &str,
    name: &str,
    part: Part,
    mut f: impl FnMut(&mut Value),
) -> Result<Option<Arc<Value>>, WriteError> {
    for _ in 0..3 {
        let Some(cur) = cluster.api.get(rt, ns, name) else {
            return Ok(None);
        };
        let mut next = Value::clone(&cur);
        f(&mut next);
        if next == *cur {
            return Ok(Some(cur));
        }
        match cluster.api.update(rt, ns, name, next, part) {
            Ok(v) => return Ok(Some(v)),
            Err(e) if e.code == 409 => continue,
            Err(e) if e.code == 404 => return Ok(None),
            Err(e) => return Err(WriteError::Api(e)),
        }
    }
    Err(WriteError::Contended)
}

/// Creates an object.
pub(crate) fn create(
    cluster: Cluster<'_>,
    rt: Kind,
    ns: &str,
    obj: Value,
) -> Result<Arc<Value>, ApiError> {
    cluster.api.create(rt, ns, obj)
}

/// Deletes an object (background propagation); a missing object is not an error.
pub(crate) fn delete(
    cluster: Cluster<'_>,
    rt: Kind,
    ns: &str,
    name: &str,
    opts: &Delete,
) -> Result<(), ApiError> {
    match cluster.api.delete(rt, ns, name, opts) {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_hash_matches_the_fnv1a_vectors() {
        assert_eq!(name_hash("my-sandbox"), "374de8f5");
        assert_eq!(name_hash(""), "811c9dc5");
    }

    #[test]
    fn set_condition_keeps_transition_time_while_status_is_unchanged() {
        let mut conds = Vec::new();
        let mut first = Cond::new("Ready", "False", "A", "a", 1);
        first.last_transition_time = Some("2020-01-01T00:00:00Z".into());
        set_condition(&mut conds, first, "2026-01-01T00:00:00Z");
        set_condition(
            &mut conds,
            Cond::new("Ready", "False", "B", "b", 2),
            "2026-01-01T00:00:00Z",
        );
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(conds[0]["reason"], "B");
        assert_eq!(conds[0]["observedGeneration"], 2);
    }

    #[test]
    fn set_condition_moves_transition_time_when_status_changes() {
        let mut conds = Vec::new();
        let mut first = Cond::new("Ready", "False", "A", "a", 1);
        first.last_transition_time = Some("2020-01-01T00:00:00Z".into());
        set_condition(&mut conds, first, "2026-01-01T00:00:00Z");
        set_condition(
            &mut conds,
            Cond::new("Ready", "True", "B", "b", 1),
            "2026-01-01T00:00:00Z",
        );
        assert_ne!(conds[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(conds[0]["status"], "True");
    }

    #[test]
    fn set_condition_appends_new_types_in_order() {
        let mut conds = Vec::new();
        set_condition(
            &mut conds,
            Cond::new("Suspended", "False", "A", "", 1),
            "2026-01-01T00:00:00Z",
        );
        set_condition(
            &mut conds,
            Cond::new("Ready", "False", "B", "", 1),
            "2026-01-01T00:00:00Z",
        );
        let types: Vec<&str> = conds.iter().filter_map(|c| c["type"].as_str()).collect();
        assert_eq!(types, ["Suspended", "Ready"]);
        remove_condition(&mut conds, "Suspended");
        assert_eq!(conds.len(), 1);
    }

    #[test]
    fn set_map_key_removes_the_map_when_it_empties() {
        let mut v = json!({ "metadata": { "labels": { "a": "1" } } });
        set_map_key(&mut v, &["metadata", "labels"], "b", Some("2"));
        assert_eq!(v["metadata"]["labels"]["b"], "2");
        set_map_key(&mut v, &["metadata", "labels"], "a", None);
        set_map_key(&mut v, &["metadata", "labels"], "b", None);
        assert!(v["metadata"].get("labels").is_none());
    }

    #[test]
    fn controller_ref_is_found_among_owner_references() {
        let v = json!({ "metadata": { "ownerReferences": [
            { "apiVersion": "v1", "kind": "X", "name": "x", "uid": "1" },
            { "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool", "name": "p", "uid": "2", "controller": true },
        ] } });
        let r = controller_of(&v).map(|r| (owner_group(r), owner_kind(r), owner_name(r)));
        assert_eq!(r, Some((EXTENSIONS_GROUP, "SandboxWarmPool", "p")));
    }

    #[test]
    fn until_is_zero_for_past_times() {
        let now = OffsetDateTime::now_utc();
        assert_eq!(until(now, now - time::Duration::seconds(5)), Duration::ZERO);
        assert_eq!(
            until(now, now + time::Duration::seconds(5)),
            Duration::from_secs(5)
        );
    }
}
