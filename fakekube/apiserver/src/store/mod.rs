//! The object store: every object of every kind, one cluster-wide resourceVersion, the event log
//! that watches read, and the garbage collector that follows ownerReferences.
//!
//! All writes go through one lock, so every write gets the next resourceVersion and the event
//! log is in resourceVersion order. Nothing here awaits while holding the lock.
//!
//! Reads share: a stored revision is an immutable `Arc` (a packed Event is parsed for each
//! read), a LIST returns a [`Page`] of them (no item is copied), and [`WireCache`] keeps each listed revision's JSON so that the next LIST
//! of unchanged objects writes bytes it already has.
//!
//! Memory: each new revision is fitted to its size before it is shared (`compact`); core
//! Events, written often and read rarely, are kept as their compact JSON and parsed when read
//! (`objects`); the event log keeps `event_log_capacity` changes (older resourceVersions get
//! 410 Expired; `history`); Events are deleted `event_ttl` after their last write (`expiry`), as the API
//! server's `--event-ttl`.

use crate::clock::Clock;
use crate::managed_fields;
use crate::meta::{self, finalizers, meta_str, owner_uids};
use crate::patch::{self, MergeKeys, PatchKind};
use crate::registry::{Registry, ResourceType};
use crate::resources::StatusMode;
use crate::schema::FieldError;
use crate::selector::{FieldSelector, LabelSelector, field_value};
use crate::status::{ApiError, Cause, Target};
use base64::Engine;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

mod admission;
mod client;
mod compact;
mod crds;
mod deletion;
mod expiry;
mod history;
mod objects;
mod page;
mod plugins;
mod references;
mod wire;

use admission::{
    NewObject, PendingWrite, PreparedCreate, PreparedUpdate, UpdateRequest, admit, check_body,
    mutate, namespace_not_found, prepare_create,
};

use objects::namespace_range;
use plugins::PolicyWrite;

pub use client::TokenIssuer;
pub(crate) use page::{Item, Page};
pub(crate) use wire::WireCache;

/// Identity of a resource in the store, whatever the version: `plural.group`.
type TypeKey = String;
/// Identity of an object within its type.
type ObjKey = (String, String);

fn type_key(rt: &ResourceType) -> TypeKey {
    rt.storage_resource()
}

/// The kind of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object is gone.
    Deleted,
}

impl EventType {
    /// The name a watch stream uses.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as the event log keeps it.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion of the change.
    pub rv: u64,
    /// The object's type.
    pub rt: Arc<ResourceType>,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (for a delete: its last state, with the delete's rv).
    pub object: Arc<Value>,
    /// The object before the change, for selector transitions.
    pub prev: Option<Arc<Value>>,
}

/// How strictly unknown fields are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the API server's default).
    #[default]
    Warn,
    /// Refuse the request.
    Strict,
}

/// Options of a create, update or patch.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Unknown-field handling.
    pub field_validation: FieldValidation,
    /// Validate and answer without storing.
    pub dry_run: bool,
    /// The write is a patch (its strict-decoding errors are worded without the decoder prefix).
    pub patch: bool,
    /// The field manager the write is recorded under in `metadata.managedFields`; `None` for
    /// the fake's own controllers, whose writes are not recorded.
    pub manager: Option<String>,
    /// `force=true` on a server-side apply: take the fields other managers own.
    pub force: bool,
    /// The write binds a pod to a node (what `pods/binding` does): it sets `spec.nodeName`
    /// and, as the API server's binding storage, leaves `metadata.generation` alone.
    pub binding: bool,
    /// Who makes the write, for the admission policies' `request.userInfo`; `None` for
    /// fakekube's own controllers.
    pub user: Option<Arc<crate::user::UserInfo>>,
}

pub use crate::client::Part;

pub use crate::client::Propagation;

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// Dependents policy; background when unset.
    pub propagation: Option<Propagation>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// Answer without deleting.
    pub dry_run: bool,
    /// `gracePeriodSeconds` (pods only: `None` is the pod's own period, 0 deletes at once).
    pub grace_period: Option<i64>,
    /// `orphanDependents` as the client gave it (deprecated; its policy is in `propagation`).
    /// Only the answer reads it: `false` on a delete that does not remove the object at once
    /// is answered 202.
    pub orphan_dependents: Option<bool>,
    /// Who deletes, for the admission policies' `request.userInfo`.
    pub user: Option<Arc<crate::user::UserInfo>>,
}

/// A list request's parameters.
#[derive(Debug, Default)]
pub struct ListQuery {
    /// `labelSelector`.
    pub labels: Option<LabelSelector>,
    /// `fieldSelector`.
    pub fields: Option<FieldSelector>,
    /// `limit` (0: no limit).
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<String>,
}

/// Server-wide settings of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    /// How many events the log keeps for watches.
    pub event_log_capacity: usize,
    /// How long a continue token stays valid.
    pub compaction_window: Duration,
    /// How long an Event lives after its last write (the API server's `--event-ttl`).
    pub event_ttl: Duration,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            event_log_capacity: 10_000,
            compaction_window: Duration::from_secs(300),
            event_ttl: Duration::from_secs(3600),
        }
    }
}

/// The result of a delete.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; this was its last state.
    Gone(Arc<Value>),
    /// The object is marked for deletion and waits on finalizers or dependents.
    Pending(Arc<Value>),
}

/// The store.
#[derive(Debug)]
pub struct Store {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
    registry: Arc<Registry>,
    clock: Clock,
    /// The JSON of the revisions LISTs returned.
    wire: WireCache,
    /// The resource types of the kinds its [`Client`](crate::client::Client) face serves,
    /// looked up once.
    client_kinds: client::Kinds,
    /// Who issues the tokens its client face's `pod_token` asks for (the API server's
    /// TokenRequest), once set.
    token_issuer: std::sync::OnceLock<std::sync::Weak<dyn TokenIssuer>>,
}

/// A store's contents, to start other stores from ([`Store::into_snapshot`],
/// [`Store::from_snapshot`]): a server makes what it holds at start once, and starts each new
/// store from it.
#[derive(Debug)]
pub struct Snapshot(Inner);

#[derive(Debug)]
struct Inner {
    /// The kinds served: objects are kept in their storage version, and CRD writes change it.
    registry: Arc<Registry>,
    rv: u64,
    objects: objects::Objects,
    /// The last changes, for watches and the fake's own readers.
    log: history::History,
    /// How many compactions there were: continue tokens from an earlier epoch are expired.
    epoch: u64,
    /// The resourceVersion of the last write to each type, so that readers caching what they
    /// derive from one kind (the RBAC authorizer) know when to derive it again.
    type_rv: HashMap<TypeKey, u64>,
    settings: StoreSettings,
    /// The cluster's clock: creation and deletion timestamps.
    clock: Clock,
    /// Uids, owner references and foreground deletions, for garbage collection.
    references: references::References,
    /// The Events' leases (the Event TTL).
    event_leases: expiry::EventLeases,
    /// Whether the quotas' status is being written ([`Inner::refresh_quotas`]), whose own
    /// writes do not start it again.
    refreshing_quotas: bool,
}

/// Whether two stored objects are the same revision: every write gives a new resourceVersion.
fn same_revision(a: &Arc<Value>, b: &Arc<Value>) -> bool {
    Arc::ptr_eq(a, b) || meta_str(a, "resourceVersion") == meta_str(b, "resourceVersion")
}

/// A new stored revision: fitted to its size ([`compact::fit`]), then shared.
fn revision(mut obj: Value) -> Arc<Value> {
    compact::fit(&mut obj);
    Arc::new(obj)
}

fn target<'a>(rt: &'a ResourceType, name: &'a str) -> Target<'a> {
    Target {
        group: &rt.group,
        resource: &rt.plural,
        kind: &rt.kind,
        name,
    }
}

fn field_causes(errors: Vec<FieldError>) -> Vec<Cause> {
    errors
        .into_iter()
        .map(|e| Cause {
            reason: e.reason.to_string(),
            message: e.message,
            field: Some(e.field),
        })
        .collect()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    /// How many compactions the store had made when the token was issued.
    epoch: u64,
    start: String,
    at: u64,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Store {
    /// An empty store serving the kinds of `registry`, on real time.
    pub fn new(settings: StoreSettings, registry: Arc<Registry>) -> Self {
        Store::with_clock(settings, registry, Clock::default())
    }

    /// An empty store serving the kinds of `registry`, whose timestamps come from `clock`.
    pub fn with_clock(settings: StoreSettings, registry: Arc<Registry>, clock: Clock) -> Self {
        Store::holding(Inner {
            clock,
            registry,
            rv: 0,
            objects: objects::Objects::default(),
            log: history::History::new(settings.event_log_capacity),
            epoch: 0,
            type_rv: HashMap::new(),
            event_leases: expiry::EventLeases::new(settings.event_ttl),
            refreshing_quotas: false,
            settings,
            references: references::References::default(),
        })
    }

    /// The store holding `inner`.
    fn holding(inner: Inner) -> Self {
        let (changed, _) = watch::channel(inner.rv);
        Store {
            registry: inner.registry.clone(),
            clock: inner.clock.clone(),
            inner: Mutex::new(inner),
            changed,
            wire: WireCache::default(),
            client_kinds: client::Kinds::default(),
            token_issuer: std::sync::OnceLock::new(),
        }
    }

    /// What this store holds, to start other stores from ([`Store::from_snapshot`]).
    pub fn into_snapshot(self) -> Snapshot {
        Snapshot(self.inner.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    /// A store that holds what `snapshot` holds, under its own `clock`: the same objects at
    /// the same resourceVersions (their revisions shared with the snapshot, not copied), the
    /// same kinds served, and the same watch history; it changes apart from every other.
    pub fn from_snapshot(snapshot: &Snapshot, clock: Clock) -> Self {
        let held = &snapshot.0;
        Store::holding(Inner {
            clock,
            registry: Arc::new(held.registry.copy()),
            rv: held.rv,
            objects: held.objects.clone(),
            log: held.log.clone(),
            epoch: held.epoch,
            type_rv: held.type_rv.clone(),
            event_leases: held.event_leases.clone(),
            refreshing_quotas: false,
            settings: held.settings.clone(),
            references: held.references.clone(),
        })
    }

    /// Sets who issues the tokens the in-process kubelet asks for through the store's client
    /// face (held weakly: the issuer reads the store).
    pub fn set_token_issuer(&self, issuer: std::sync::Weak<dyn TokenIssuer>) {
        if self.token_issuer.set(issuer).is_err() {
            tracing::warn!("the store's token issuer is set already");
        }
    }

    /// The kinds this store serves.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The cluster's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The JSON of stored revisions, for the answers that return them.
    pub(crate) fn wire_cache(&self) -> &WireCache {
        &self.wire
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, ApiError> {
        self.inner
            .lock()
            .map_err(|_| ApiError::internal("store lock poisoned"))
    }

    /// A receiver that sees the latest resourceVersion after each write.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The current cluster-wide resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().map(|i| i.rv).unwrap_or(0)
    }

    /// The resourceVersion of the last write to any object of these types (0: none yet).
    pub fn last_write(&self, types: &[Arc<ResourceType>]) -> u64 {
        let Ok(inner) = self.lock() else { return 0 };
        types
            .iter()
            .filter_map(|rt| inner.type_rv.get(&type_key(rt)).copied())
            .max()
            .unwrap_or(0)
    }

    /// Expires every continue token and every watch position issued so far.
    pub fn compact(&self) {
        if let Ok(mut i) = self.lock() {
            i.epoch += 1;
            let rv = i.rv;
            i.log.compact(rv);
        }
    }

    /// Sets how long continue tokens stay valid.
    pub fn set_compaction_window(&self, window: Duration) {
        if let Ok(mut i) = self.lock() {
            i.settings.compaction_window = window;
        }
    }

    fn notify(&self, inner: &Inner) {
        self.publish(inner.rv);
    }

    /// Tells the subscribers that the store has reached `rv`; a later resourceVersion already
    /// told stands (writers that publish after releasing the lock may publish out of order).
    fn publish(&self, rv: u64) {
        self.changed.send_if_modified(|seen| {
            let newer = rv > *seen;
            if newer {
                *seen = rv;
            }
            newer
        });
    }

    /// One object.
    pub fn get(
        &self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        let inner = self.lock()?;
        let obj = inner
            .get(rt, ns, name)
            .ok_or_else(|| ApiError::not_found(target(rt, name)))?;
        inner.read_as(rt, &obj)
    }

    /// One object, or None.
    pub fn get_opt(&self, rt: &Arc<ResourceType>, ns: &str, name: &str) -> Option<Arc<Value>> {
        let inner = self.lock().ok()?;
        let obj = inner.get(rt, ns, name)?;
        inner.read_as(rt, &obj).ok()
    }

    /// A page of objects, as a `<Kind>List`: the items are shared, not copied (see [`Page`]).
    pub(crate) fn list(
        &self,
        rt: &Arc<ResourceType>,
        ns: Option<&str>,
        q: &ListQuery,
    ) -> Result<Page, ApiError> {
        let inner = self.lock()?;
        let (start, list_rv) = match &q.continue_token {
            Some(tok) => {
                let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(tok.trim_end_matches('='))
                    .or_else(|_| base64::engine::general_purpose::STANDARD.decode(tok))
                    .map_err(|_| {
                        ApiError::bad_request("continue key is not valid: illegal base64 data")
                    })?;
                let t: ContinueToken = serde_json::from_slice(&raw).map_err(|e| {
                    ApiError::bad_request(format!("continue key is not valid: {e}"))
                })?;
                let too_old = unix_now().saturating_sub(t.at)
                    >= inner.settings.compaction_window.as_secs()
                    && inner.settings.compaction_window < Duration::from_secs(u64::MAX / 2);
                if t.epoch < inner.epoch || too_old {
                    return Err(ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                    ));
                }
                (Some(t.start), t.rv)
            }
            None => (None, inner.rv),
        };
        // The token's key is `namespace NUL name`: the page starts after that object (names
        // hold no NUL, so the map's order of (namespace, name) is the order of these keys).
        let after: Option<ObjKey> = start.as_deref().map(|s| match s.split_once('\u{0}') {
            Some((n, o)) => (n.to_string(), o.to_string()),
            None => (s.to_string(), String::new()),
        });
        let from = match (&after, ns) {
            (Some(a), Some(n)) if a.0.as_str() < n => {
                Bound::Included((n.to_string(), String::new()))
            }
            (Some(a), _) => Bound::Excluded(a.clone()),
            (None, Some(n)) => Bound::Included((n.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let mut items = Vec::new();
        let mut last: Option<&ObjKey> = None;
        let mut remaining: u64 = 0;
        for read in inner.objects.range(&type_key(rt), (from, Bound::Unbounded)) {
            if let Some(ns) = ns
                && read.key.0 != ns
            {
                break;
            }
            if !matches(&read.object, q) {
                continue;
            }
            if q.limit > 0 && items.len() >= q.limit {
                remaining += 1;
                continue;
            }
            let object = inner.read_as(rt, &read.object)?;
            items.push(Item {
                revision: read.shared && Arc::ptr_eq(&object, &read.object),
                object,
            });
            last = Some(read.key);
        }
        let mut metadata = Map::new();
        metadata.insert("resourceVersion".into(), json!(list_rv.to_string()));
        if remaining > 0
            && let Some((ons, oname)) = last
        {
            let tok = ContinueToken {
                rv: list_rv,
                epoch: inner.epoch,
                start: format!("{ons}\u{0}{oname}"),
                at: unix_now(),
            };
            let raw = serde_json::to_vec(&tok).map_err(|e| ApiError::internal(e.to_string()))?;
            metadata.insert(
                "continue".into(),
                json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)),
            );
            if q.labels.is_none() && q.fields.is_none() {
                metadata.insert("remainingItemCount".into(), json!(remaining));
            }
        }
        Ok(Page {
            kind: rt.list_kind.clone(),
            api_version: rt.api_version(),
            metadata,
            items,
        })
    }

    /// Every object of a type (in a namespace or all), unpaged and in its storage version, for
    /// the controllers, the kubelet and the leak check.
    pub fn list_all(&self, rt: &Arc<ResourceType>, ns: Option<&str>) -> Vec<Arc<Value>> {
        let Ok(inner) = self.lock() else {
            return Vec::new();
        };
        let kind = type_key(rt);
        match ns {
            Some(ns) => inner
                .objects
                .range(&kind, namespace_range(ns))
                .map(|r| r.object)
                .collect(),
            None => inner.objects.all(&kind).map(|r| r.object).collect(),
        }
    }

    /// Events after `rv`, or 410 when the log no longer reaches back that far.
    pub fn events_since(&self, rv: u64) -> Result<Vec<Event>, ApiError> {
        self.lock()?.log.since(rv)
    }

    /// When the next Event's TTL runs out on the cluster's clock, if any Event is stored.
    pub fn next_event_expiry(&self) -> Option<SystemTime> {
        self.lock().ok()?.event_leases.next_deadline()
    }

    /// Deletes the Events whose TTL ran out (their last write is `event_ttl` old on the
    /// cluster's clock), as etcd drops a key whose lease expired: watchers see them DELETED.
    /// Returns how many went.
    pub fn expire_events(&self) -> usize {
        let Ok(mut inner) = self.lock() else {
            return 0;
        };
        let due = inner.event_leases.due(self.clock.now());
        let Some(rt) = self.registry.find("", "v1", "events") else {
            return 0;
        };
        let mut gone = 0;
        for ((ns, name), rv) in due {
            let Some(obj) = inner.get(&rt, &ns, &name) else {
                continue;
            };
            if meta_str(&obj, "resourceVersion") == Some(rv.to_string().as_str()) {
                inner.remove_now(&rt, &ns, &name, obj);
                gone += 1;
            }
        }
        if gone > 0 {
            self.notify(&inner);
        }
        gone
    }

    /// The DefaultStorageClass admission plugin: a claim that names no class (a missing
    /// `spec.storageClassName`, not an empty one) gets the default StorageClass, the newest
    /// when several are marked default.
    fn default_storage_class(&self, pvc: &mut Value) {
        let Some(spec) = pvc.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if spec.contains_key("storageClassName") {
            return;
        }
        let Some(classes) = self.registry.find("storage.k8s.io", "v1", "storageclasses") else {
            return;
        };
        let is_default = |c: &Value| {
            [
                "storageclass.kubernetes.io/is-default-class",
                "storageclass.beta.kubernetes.io/is-default-class",
            ]
            .iter()
            .any(|a| {
                c.pointer("/metadata/annotations")
                    .and_then(|m| m.get(*a))
                    .and_then(Value::as_str)
                    == Some("true")
            })
        };
        let newest = self
            .list_all(&classes, None)
            .into_iter()
            .filter(|c| is_default(c))
            .max_by(|a, b| {
                let created =
                    |c: &Value| meta_str(c, "creationTimestamp").unwrap_or("").to_string();
                created(a)
                    .cmp(&created(b))
                    .then_with(|| meta_str(b, "name").cmp(&meta_str(a, "name")))
            });
        if let Some(class) = newest.as_deref().and_then(|c| meta_str(c, "name")) {
            spec.insert("storageClassName".into(), Value::String(class.to_string()));
        }
    }

    /// Creates an object in `ns` (empty for cluster-scoped kinds).
    pub fn create(
        &self,
        rt: &Arc<ResourceType>,
        ns: &str,
        obj: Value,
        opts: WriteOptions,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        if crds::is_crd_kind(rt) {
            // A CRD's admission reads the other CRDs: made in one hold of the lock.
            let mut inner = self.lock()?;
            let out = inner.create(rt, ns, obj, opts)?;
            self.notify(&inner);
            return Ok(out);
        }
        // Admission, the costly part, runs without the lock; the commit stores the object if
        // its name is still free and its namespace still there.
        let mut obj = obj;
        if rt.group.is_empty() && rt.plural == "persistentvolumeclaims" {
            self.default_storage_class(&mut obj);
        }
        let (name, registry) = {
            let inner = self.lock()?;
            let shown = crate::admission_plugins::shown_name(&obj);
            let name = inner.name_new(rt, ns, &mut obj)?;
            inner.admit_plugins_on_create(rt, ns, &shown, &mut obj)?;
            (name, Arc::clone(&inner.registry))
        };
        let prepared = prepare_create(&registry, rt, obj, &opts, |obj| {
            admit(&registry, rt, &name, obj, None, Part::Main, &opts)
        })?;
        let mut inner = self.lock()?;
        if rt.namespaced && !inner.namespace_exists(ns) {
            return Err(namespace_not_found(ns));
        }
        let (stored, warnings) = inner.commit_create(rt, ns, &name, prepared)?;
        let rv = inner.rv;
        drop(inner);
        if opts.dry_run {
            return Ok((stored, warnings));
        }
        self.publish(rv);
        Ok((present(&registry, rt, &stored)?, warnings))
    }

    /// Replaces an object (PUT), or its status.
    pub fn update(
        &self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        obj: Value,
        part: Part,
        opts: WriteOptions,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        check_body(&obj)?;
        let conditional = meta_str(&obj, "resourceVersion").is_some_and(|rv| !rv.is_empty());
        if !conditional || crds::is_crd_kind(rt) || plugins::update_reads_cluster(rt) {
            // An unconditional update applies to whatever is stored when it is made, and a
            // CRD's admission reads the other CRDs: both are made in one hold of the lock.
            let mut inner = self.lock()?;
            let out = inner.update(rt, ns, name, obj, part, opts, true)?;
            self.notify(&inner);
            return Ok(out);
        }
        // Admission, the costly part, runs without the lock against the revision the update
        // names; the commit stores it only if that revision is still the one stored, as the
        // API server's storage does with the resourceVersion precondition.
        let (stored, registry) = {
            let inner = self.lock()?;
            let stored = inner
                .get(rt, ns, name)
                .ok_or_else(|| ApiError::not_found(target(rt, name)))?;
            (stored, Arc::clone(&inner.registry))
        };
        let request = UpdateRequest {
            rt,
            ns,
            name,
            part,
            opts: &opts,
            require_rv: true,
        };
        let prepared = request.prepare(&registry, obj, Arc::clone(&stored), |obj, old| {
            admit(&registry, rt, name, obj, Some(old), part, &opts)
        })?;
        let write = match prepared {
            // Nothing to store: the answer stands as of the revision read, once the
            // admission policies have seen it (a dry run is admitted as a write is).
            PreparedUpdate::Answer(answer) => {
                let inner = self.lock()?;
                return inner.answer_update(rt, ns, name, part, &opts, answer, &stored);
            }
            PreparedUpdate::Write(write) => write,
        };
        let mut inner = self.lock()?;
        match inner.get(rt, ns, name) {
            None => return Err(ApiError::not_found(target(rt, name))),
            Some(now) if !same_revision(&now, &write.stored) => {
                return Err(ApiError::stale(target(rt, name)));
            }
            Some(_) => {}
        }
        let (stored, warnings) = inner.commit_update(rt, ns, name, write)?;
        let rv = inner.rv;
        drop(inner);
        self.publish(rv);
        Ok((present(&registry, rt, &stored)?, warnings))
    }

    /// Updates an object from what is stored when the write is made, as the API server's
    /// storage does for a subresource that rewrites its object: `change` is given the stored
    /// object (as [`Store::get`] reads it) and returns the object to write, in one hold of the
    /// lock, so that no other write comes between. The resourceVersion `change` leaves in it
    /// is the precondition: the stored one unless the client named another.
    pub fn update_stored(
        &self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        opts: WriteOptions,
        change: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        let mut inner = self.lock()?;
        let stored = inner
            .get(rt, ns, name)
            .ok_or_else(|| ApiError::not_found(target(rt, name)))?;
        let current = inner.read_as(rt, &stored)?;
        let obj = change(&current)?;
        let out = inner.update(rt, ns, name, obj, Part::Main, opts, true)?;
        self.notify(&inner);
        Ok(out)
    }

    /// Patches an object (or its status); server-side apply creates it when absent.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        kind: PatchKind,
        body: &Value,
        part: Part,
        opts: WriteOptions,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        let mut inner = self.lock()?;
        let out = inner.patch(rt, ns, name, kind, body, part, opts)?;
        self.notify(&inner);
        Ok(out)
    }

    /// Deletes an object.
    pub fn delete(
        &self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let mut inner = self.lock()?;
        let out = inner.delete(rt, ns, name, opts)?;
        self.notify(&inner);
        Ok(match out {
            Deleted::Gone(obj) => Deleted::Gone(inner.read_as(rt, &obj).unwrap_or(obj)),
            Deleted::Pending(obj) => Deleted::Pending(inner.read_as(rt, &obj).unwrap_or(obj)),
        })
    }

    /// Deletes every object a list query selects; returns what was deleted or marked.
    pub fn delete_collection(
        &self,
        rt: &Arc<ResourceType>,
        ns: Option<&str>,
        q: &ListQuery,
        opts: &DeleteOptions,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        let mut inner = self.lock()?;
        let keys: Vec<ObjKey> = inner
            .objects
            .all(&type_key(rt))
            .filter(|r| ns.is_none_or(|n| n == r.key.0) && matches(&r.object, q))
            .map(|r| r.key.clone())
            .collect();
        let mut out = Vec::new();
        for (o, n) in keys {
            match inner.delete(rt, &o, &n, opts) {
                Ok(Deleted::Gone(v) | Deleted::Pending(v)) => {
                    out.push(inner.read_as(rt, &v).unwrap_or(v));
                }
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        self.notify(&inner);
        Ok(out)
    }
}

/// The API server's check that a written object names the object of the URL: another name
/// (or, for a namespaced kind, another namespace) in its metadata is a bad request. A missing
/// name is taken from the URL here; the PUT handler refuses it before the store is reached.
fn check_identity(rt: &ResourceType, ns: &str, name: &str, obj: &Value) -> Result<(), ApiError> {
    if let Some(n) = meta_str(obj, "name")
        && n != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    if rt.namespaced
        && let Some(o) = meta_str(obj, "namespace")
        && !o.is_empty()
        && o != ns
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

fn matches(obj: &Value, q: &ListQuery) -> bool {
    if let Some(l) = &q.labels
        && !l.matches(meta::labels(obj))
    {
        return false;
    }
    if let Some(f) = &q.fields
        && !f.matches(|path| field_value(obj, path))
    {
        return false;
    }
    true
}

impl Inner {
    fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.objects
            .get(&type_key(rt), &(ns.to_string(), name.to_string()))
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        self.objects
            .contains("namespaces", &(String::new(), ns.to_string()))
    }

    /// A stored object as `rt`'s version serves it.
    fn read_as(&self, rt: &ResourceType, obj: &Arc<Value>) -> Result<Arc<Value>, ApiError> {
        present(&self.registry, rt, obj)
    }

    /// Tells `rt`'s schema that `stored`, just written, passed its validation as it is: when
    /// `rt` is the stored version, nothing but `metadata` changed after admission.
    fn admitted(rt: &ResourceType, stored: &Arc<Value>) {
        if rt.is_storage_version()
            && let Some(schema) = rt.schema()
        {
            schema.record_validated(stored);
        }
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn record(
        &mut self,
        rt: &Arc<ResourceType>,
        kind: EventType,
        object: Arc<Value>,
        prev: Option<Arc<Value>>,
    ) {
        let rv = self.rv;
        let kind_key = type_key(rt);
        if kind != EventType::Deleted && kind_key == expiry::EVENTS {
            let key = (
                meta_str(&object, "namespace").unwrap_or("").to_string(),
                meta_str(&object, "name").unwrap_or("").to_string(),
            );
            self.event_leases.written(key, rv, self.clock.now());
        }
        self.type_rv.insert(kind_key, rv);
        let ns = meta_str(&object, "namespace").unwrap_or("").to_string();
        self.log.push(Event {
            rv,
            rt: Arc::clone(rt),
            kind,
            object,
            prev,
        });
        if !ns.is_empty() && !self.refreshing_quotas {
            self.refresh_quotas(&ns);
        }
    }

    fn put(&mut self, rt: &Arc<ResourceType>, ns: &str, name: &str, obj: Arc<Value>) {
        let key = (type_key(rt), (ns.to_string(), name.to_string()));
        let old = self.objects.insert(&key.0, key.1.clone(), &obj);
        self.references.stored(&key, &obj, old.as_deref());
    }

    fn remove(&mut self, rt: &Arc<ResourceType>, ns: &str, name: &str) -> Option<Arc<Value>> {
        let key = (type_key(rt), (ns.to_string(), name.to_string()));
        let old = self.objects.remove(&key.0, &key.1)?;
        self.references.removed(&key, &old);
        Some(old)
    }

    /// Admits a write of `obj`: a CRD's with the CRD checks, which see the other CRDs (after
    /// its mutator), anything else as [`admit`] does.
    fn admit(
        &self,
        rt: &Arc<ResourceType>,
        name: &str,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        opts: &WriteOptions,
    ) -> Result<Vec<String>, ApiError> {
        if crds::is_crd_kind(rt) {
            mutate(&self.registry, rt, obj, old, part)?;
            self.admit_crd(obj, old, part)?;
            return Ok(Vec::new());
        }
        admit(&self.registry, rt, name, obj, old, part, opts)
    }

    fn create(
        &mut self,
        rt: &Arc<ResourceType>,
        ns: &str,
        mut obj: Value,
        opts: WriteOptions,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        let shown = crate::admission_plugins::shown_name(&obj);
        let name = self.name_new(rt, ns, &mut obj)?;
        self.admit_plugins_on_create(rt, ns, &shown, &mut obj)?;
        let prepared = prepare_create(&self.registry, rt, obj, &opts, |obj| {
            self.admit(rt, &name, obj, None, Part::Main, &opts)
        })?;
        let (stored, warnings) = self.commit_create(rt, ns, &name, prepared)?;
        if opts.dry_run {
            return Ok((stored, warnings));
        }
        Ok((self.read_as(rt, &stored)?, warnings))
    }

    /// Checks where a new object goes and names it: the namespace exists, the name (or one
    /// generated from `generateName`) is valid, the kind's CRD is not terminating; fills in
    /// the metadata a create sets. Returns the name.
    fn name_new(&self, rt: &ResourceType, ns: &str, obj: &mut Value) -> Result<String, ApiError> {
        check_body(obj)?;
        if rt.namespaced && !self.namespace_exists(ns) {
            return Err(namespace_not_found(ns));
        }
        let md = meta::metadata_mut(obj)
            .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
        let mut name = md
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() {
            let gen_name = md.get("generateName").and_then(Value::as_str).unwrap_or("");
            if gen_name.is_empty() {
                return Err(ApiError::invalid(
                    target(rt, ""),
                    vec![Cause {
                        reason: "FieldValueRequired".into(),
                        message: "Required value: name or generateName is required".into(),
                        field: Some("metadata.name".into()),
                    }],
                ));
            }
            // The name generator keeps 58 characters of the prefix, so that with its five
            // random ones the name fits 63.
            let gen_name: String = gen_name.chars().take(58).collect();
            let mut tries = 0;
            loop {
                let candidate = format!("{gen_name}{}", meta::random_suffix());
                if self.get(rt, ns, &candidate).is_none() || tries > 8 {
                    name = candidate;
                    break;
                }
                tries += 1;
            }
            md.insert("name".into(), json!(name));
        }
        let name_problem = if rt.group == "apiregistration.k8s.io" {
            // APIServices are named `<version>.<group>`, the core one `v1.`.
            match name.split_once('.') {
                Some((version, group)) if !version.is_empty() => meta::validate_name(version, true)
                    .or_else(|| {
                        (!group.is_empty())
                            .then(|| meta::validate_name(group, false))
                            .flatten()
                    }),
                _ => Some(Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!(
                        "Invalid value: \"{name}\": must be in the form: <version>.<group>"
                    ),
                    field: Some("metadata.name".into()),
                }),
            }
        } else if rt.group == crate::rbac::GROUP {
            // RBAC objects are named by path segments (`system:basic-user`).
            crate::rbac::path_segment_problem(&name).map(|why| Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: \"{name}\": {why}"),
                field: Some("metadata.name".into()),
            })
        } else {
            let label_names =
                rt.group.is_empty() && matches!(rt.plural.as_str(), "namespaces" | "services");
            meta::validate_name(&name, label_names)
        };
        if let Some(c) = name_problem {
            return Err(ApiError::invalid(target(rt, &name), vec![c]));
        }
        if rt.namespaced {
            md.insert("namespace".into(), json!(ns));
        } else {
            md.remove("namespace");
        }
        for k in [
            "uid",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            md.remove(k);
        }
        md.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        md.insert("creationTimestamp".into(), json!(self.clock.now_rfc3339()));
        if rt.has_spec {
            md.insert("generation".into(), json!(1));
        } else {
            md.remove("generation");
        }
        if let Some(o) = obj.as_object_mut() {
            o.insert("apiVersion".into(), json!(rt.api_version()));
            o.insert("kind".into(), json!(rt.kind));
            if rt.status == StatusMode::Subresource {
                o.remove("status");
            }
        }
        if let Some(crd_name) = &rt.defined_by
            && self.crd_terminating(crd_name)
        {
            return Err(Inner::refuse_while_terminating(rt));
        }
        Ok(name)
    }

    /// Stores a create prepared by [`prepare_create`], unless the name is taken; returns the
    /// revision stored, or a dry run's object as it is (in the version written).
    fn commit_create(
        &mut self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        prepared: PreparedCreate,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        let PreparedCreate {
            obj,
            mut warnings,
            user,
        } = prepared;
        {
            let (written, dry_run) = match &obj {
                NewObject::DryRun(o) => (o, true),
                NewObject::Write(o) => (o, false),
            };
            warnings.extend(self.admit_policies(&PolicyWrite {
                rt,
                subresource: "",
                operation: "CREATE",
                namespace: ns,
                name,
                object: Some(written),
                old: None,
                user: user.as_deref(),
                dry_run,
            })?);
        }
        {
            let written = match &obj {
                NewObject::DryRun(o) | NewObject::Write(o) => o,
            };
            crate::admission_plugins::validate_on_commit(self, &rt.group, &rt.plural, ns, written)?;
        }
        // Storage refuses a taken name only after admission and validation, as etcd's
        // create-if-absent does in the API server; a dry run asks storage too.
        if self.get(rt, ns, name).is_some() {
            return Err(ApiError::already_exists(target(rt, name)));
        }
        let mut obj = match obj {
            NewObject::DryRun(obj) => return Ok((Arc::new(obj), warnings)),
            NewObject::Write(obj) => obj,
        };
        plugins::observe_policy(rt, &mut obj);
        let rv = self.next_rv();
        if let Some(md) = meta::metadata_mut(&mut obj) {
            md.insert("resourceVersion".into(), json!(rv.to_string()));
        }
        let obj = Arc::new(obj);
        Inner::admitted(rt, &obj);
        self.put(rt, ns, name, obj.clone());
        self.record(rt, EventType::Added, obj.clone(), None);
        if rt.group.is_empty() && rt.plural == "namespaces" {
            self.on_namespace_created(name);
        }
        if crds::is_crd_kind(rt) {
            self.crd_written(&obj);
        }
        // An object whose every owner is already gone is garbage from birth: the garbage
        // collector deletes dependents of absent owners, so do it now (a controller acting on
        // an owner that was deleted meanwhile would otherwise leak it).
        let owners = owner_uids(&obj);
        if !owners.is_empty()
            && !owners.iter().any(|u| self.uid_exists(u))
            && let Err(e) = self.delete(rt, ns, name, &DeleteOptions::default())
        {
            tracing::debug!(error = %e.message, "collecting an object born without owners");
        }
        Ok((obj, warnings))
    }

    fn on_namespace_created(&mut self, ns: &str) {
        if let Some(sa) = self.registry.find("", "v1", "serviceaccounts") {
            let body = json!({ "metadata": { "name": "default" } });
            if let Err(e) = self.create(&sa, ns, body, WriteOptions::default()) {
                tracing::warn!(namespace = ns, error = %e.message, "default service account");
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn update(
        &mut self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        obj: Value,
        part: Part,
        opts: WriteOptions,
        require_rv: bool,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        check_body(&obj)?;
        let stored = self
            .get(rt, ns, name)
            .ok_or_else(|| ApiError::not_found(target(rt, name)))?;
        if part == Part::Main {
            self.admit_plugins_on_update(rt, &obj)?;
        }
        let request = UpdateRequest {
            rt,
            ns,
            name,
            part,
            opts: &opts,
            require_rv,
        };
        let prepared = request.prepare(&self.registry, obj, Arc::clone(&stored), |obj, old| {
            self.admit(rt, name, obj, Some(old), part, &opts)
        })?;
        let write = match prepared {
            PreparedUpdate::Answer(answer) => {
                return self.answer_update(rt, ns, name, part, &opts, answer, &stored);
            }
            PreparedUpdate::Write(write) => write,
        };
        let (stored, warnings) = self.commit_update(rt, ns, name, write)?;
        Ok((self.read_as(rt, &stored)?, warnings))
    }

    /// An update that stores nothing (a dry run, or no change), once the admission policies
    /// have admitted it against the revision `stored`, as the API server admits both.
    #[allow(clippy::too_many_arguments)]
    fn answer_update(
        &self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        part: Part,
        opts: &WriteOptions,
        answer: (Arc<Value>, Vec<String>),
        stored: &Arc<Value>,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        if !self.has_policy_bindings() {
            return Ok(answer);
        }
        let (obj, mut warnings) = answer;
        let old = present(&self.registry, rt, stored)?;
        warnings.extend(self.admit_policies(&PolicyWrite {
            rt,
            subresource: if part == Part::Status { "status" } else { "" },
            operation: "UPDATE",
            namespace: ns,
            name,
            object: Some(&obj),
            old: Some(&old),
            user: opts.user.as_deref(),
            dry_run: opts.dry_run,
        })?);
        Ok((obj, warnings))
    }

    /// Stores an update prepared against the revision still stored; returns the revision
    /// stored (the last one, when the update completed a deletion).
    fn commit_update(
        &mut self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        write: PendingWrite,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        let PendingWrite {
            stored,
            old,
            mut obj,
            mut warnings,
            part,
            user,
        } = write;
        plugins::observe_policy(rt, &mut obj);
        warnings.extend(self.admit_policies(&PolicyWrite {
            rt,
            subresource: if part == Part::Status { "status" } else { "" },
            operation: "UPDATE",
            namespace: ns,
            name,
            object: Some(&obj),
            old: Some(&old),
            user: user.as_deref(),
            dry_run: false,
        })?);
        let rv = self.next_rv();
        if let Some(md) = meta::metadata_mut(&mut obj) {
            md.insert("resourceVersion".into(), json!(rv.to_string()));
        }
        let obj = Arc::new(obj);
        Inner::admitted(rt, &obj);
        let deleting = old
            .get("metadata")
            .and_then(|m| m.get("deletionTimestamp"))
            .is_some();
        if deleting && deletion::ready_to_remove(&obj) {
            self.remove(rt, ns, name);
            self.record(rt, EventType::Deleted, obj.clone(), Some(stored));
            self.collect_garbage(&obj);
            self.removed(rt, &obj);
            return Ok((obj, warnings));
        }
        let owners_before = owner_uids(&old);
        self.put(rt, ns, name, obj.clone());
        self.record(rt, EventType::Modified, obj.clone(), Some(stored));
        if crds::is_crd_kind(rt) {
            self.crd_written(&obj);
        }
        // As on create: an update that leaves the object with owners that are all gone (a
        // controller adopting for an owner deleted meanwhile) makes it garbage.
        let owners = owner_uids(&obj);
        if owners != owners_before
            && !owners.is_empty()
            && !owners.iter().any(|u| self.uid_exists(u))
            && let Err(e) = self.delete(rt, ns, name, &DeleteOptions::default())
        {
            tracing::debug!(error = %e.message, "collecting an object whose owners are gone");
        }
        Ok((obj, warnings))
    }

    #[allow(clippy::too_many_arguments)]
    fn patch(
        &mut self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        kind: PatchKind,
        body: &Value,
        part: Part,
        opts: WriteOptions,
    ) -> Result<(Arc<Value>, Vec<String>), ApiError> {
        if kind == PatchKind::StrategicMerge && rt.custom {
            return Err(ApiError::unsupported_media_type(
                "application/strategic-merge-patch+json",
            ));
        }
        let Some(stored) = self.get(rt, ns, name) else {
            if kind == PatchKind::Apply && part == Part::Main {
                let mut obj = body.clone();
                if let Some(md) = meta::metadata_mut(&mut obj) {
                    md.insert("name".into(), json!(name));
                }
                self.record_apply(rt, part, &Value::Null, body, &mut obj, &opts)?;
                let opts = WriteOptions {
                    manager: None,
                    ..opts
                };
                return self.create(rt, ns, obj, opts);
            }
            return Err(ApiError::not_found(target(rt, name)));
        };
        let old = self.read_as(rt, &stored)?;
        if kind == PatchKind::Apply {
            if let Some(n) = meta_str(body, "name")
                && n != name
            {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            if body
                .get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| v != rt.api_version())
                || body
                    .get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k != rt.kind)
            {
                return Err(ApiError::bad_request(format!(
                    "the apiVersion and kind of the applied object must be {} {}",
                    rt.api_version(),
                    rt.kind
                )));
            }
        }
        let keys = match (rt.custom, rt.schema()) {
            (true, Some(schema)) if kind == PatchKind::Apply => {
                MergeKeys::from_schema(schema.root())
            }
            (true, _) => MergeKeys::none(),
            (false, _) => MergeKeys::for_core_kind(&rt.kind),
        };
        let opts = WriteOptions {
            patch: true,
            ..opts
        };
        let mut patched = patch::apply_patch(kind, &old, body, &keys).map_err(patch_error)?;
        let opts = if kind == PatchKind::Apply {
            self.record_apply(rt, part, &old, body, &mut patched, &opts)?;
            WriteOptions {
                manager: None,
                ..opts
            }
        } else {
            opts
        };
        // A resourceVersion in the patch is a precondition; otherwise the patch applies to the
        // current object.
        let precondition = match kind {
            PatchKind::Json => None,
            _ => meta_str(body, "resourceVersion").map(str::to_string),
        };
        if let Some(md) = meta::metadata_mut(&mut patched) {
            let rv = precondition
                .unwrap_or_else(|| meta_str(&old, "resourceVersion").unwrap_or("").to_string());
            md.insert("resourceVersion".into(), json!(rv));
        }
        self.update(rt, ns, name, patched, part, opts, false)
    }

    /// Records a server-side apply of `config` that turned `live` into `merged` in `merged`'s
    /// managed fields (see [`managed_fields::apply`]).
    fn record_apply(
        &self,
        rt: &ResourceType,
        part: Part,
        live: &Value,
        config: &Value,
        merged: &mut Value,
        opts: &WriteOptions,
    ) -> Result<(), ApiError> {
        let Some(manager) = opts.manager.as_deref() else {
            return Ok(());
        };
        let api_version = rt.api_version();
        let applier = managed_fields::Applier {
            manager,
            force: opts.force,
            api_version: &api_version,
            scope: field_scope(rt, part),
        };
        managed_fields::apply(live, config, merged, applier, &field_keys(rt))
    }
}

/// A stored object as `rt`'s version serves it: converted to that version, with the defaults
/// of that version's schema that it lacks (the API server defaults what it reads).
pub fn present(
    registry: &Registry,
    rt: &ResourceType,
    obj: &Arc<Value>,
) -> Result<Arc<Value>, ApiError> {
    let converted = registry.to_version(rt, obj)?;
    Ok(
        match rt.schema().and_then(|s| s.defaulted_revision(&converted)) {
            Some(defaulted) => Arc::new(defaulted),
            None => converted,
        },
    )
}

/// Which fields of `rt` a write to `part` can own.
fn field_scope(rt: &ResourceType, part: Part) -> managed_fields::Scope {
    match (part, rt.status) {
        (Part::Status, _) => managed_fields::Scope::Status,
        (Part::Main, StatusMode::Subresource) => managed_fields::Scope::MainOnly,
        (Part::Main, _) => managed_fields::Scope::Whole,
    }
}

/// How the lists of `rt` are keyed in field sets: a custom kind's by its schema's list types,
/// a built-in kind's by its strategic merge keys.
fn field_keys(rt: &ResourceType) -> MergeKeys {
    match (rt.custom, rt.schema()) {
        (true, Some(schema)) => MergeKeys::from_schema(schema.root()),
        (true, None) => MergeKeys::none(),
        (false, _) => MergeKeys::for_core_kind(&rt.kind),
    }
}

fn patch_error(e: patch::PatchError) -> ApiError {
    let code = http::StatusCode::from_u16(e.status_code())
        .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let mut err = ApiError::new(code, e.status_reason(), e.status_message());
    if code == http::StatusCode::UNPROCESSABLE_ENTITY {
        err.details = Some(Box::new(
            json!({ "causes": [ { "message": e.message() } ] }),
        ));
    }
    err
}

#[cfg(test)]
mod concurrency_tests;
#[cfg(test)]
mod model_tests;
