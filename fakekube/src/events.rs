//! Events, written as a cluster's components write them: core/v1 Events in the regarding
//! object's namespace (`default` for a cluster-scoped one), named `<object>.<hex>` (the
//! nanoseconds of the cluster's clock), with the object as `involvedObject`.
//!
//! Two recorders, as in client-go:
//!
//! - [`Recorder`] (and the one-shot [`record`]), the legacy recorder (`tools/record`) the
//!   kubelet and most kube-controller-manager controllers use: `source.component` (and
//!   `source.host` on a node), `reportingComponent`/`reportingInstance`, `count`,
//!   `firstTimestamp` and `lastTimestamp`. A repeat of an Event (same source, object, type,
//!   reason and message) is not written again: the first one's `count` goes up and its
//!   `lastTimestamp` moves. Each source and object gets 25 Events, then one more every
//!   5 minutes (the recorder's spam filter).
//! - [`Emitter`], the `events.k8s.io` recorder (`tools/events`) that controller-runtime gives
//!   controllers and the scheduler uses: `action`, `eventTime`, `reportingComponent` (the
//!   controller) and `reportingInstance`, no `source`, counts or timestamps. A repeat (same
//!   object, action, reason and controller) turns the first Event into a `series` with count 2;
//!   later repeats are only counted in memory, as the recorder flushes series every 30 minutes.

use crate::client::{Client, Kind, Part};
use crate::clock::Clock;
use crate::meta::{meta_str, str_at};
use crate::store::Store;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The type of an Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    /// Something expected happened.
    Normal,
    /// Something went wrong.
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// How many Events one source may write about one object at once (the spam filter's burst).
const SPAM_BURST: f64 = 25.0;
/// How often the spam filter gives one more Event.
const SPAM_REFILL: Duration = Duration::from_secs(300);
/// How many keys a recorder remembers (client-go's LRU size).
const CACHE_ENTRIES: usize = 4096;

/// Writes one Event as the legacy recorder of `component` does, aggregating a repeat of an
/// Event already in the store into its `count`. For components without a [`Recorder`] of
/// their own.
pub(crate) fn record(
    store: &Store,
    regarding: &Value,
    type_: EventType,
    reason: &str,
    message: &str,
    component: &str,
) {
    let Some(rt) = store.registry().find("", "v1", "events") else {
        return;
    };
    let ev = legacy_event(
        store.clock(),
        regarding,
        None,
        type_,
        reason,
        message,
        component,
        "",
    );
    let ns = meta_str(&ev, "namespace").unwrap_or("default").to_string();
    let key = legacy_key(&ev);
    // This recorder names its Events `<object>.<time>`: only those can be a repeat.
    let prefix = format!("{}.", meta_str(regarding, "name").unwrap_or(""));
    let existing = store
        .list_named(&rt, &ns, &prefix)
        .into_iter()
        .find(|e| legacy_key(e) == key);
    match existing {
        Some(e) => {
            let name = meta_str(&e, "name").unwrap_or("").to_string();
            bump(store, &ns, &name);
        }
        None => create(store, &ns, ev),
    }
}

/// The legacy recorder of one component (the kubelet of a node, a controller).
#[derive(Debug)]
pub(crate) struct Recorder {
    component: String,
    host: String,
    state: Mutex<RecorderState>,
}

#[derive(Debug, Default)]
struct RecorderState {
    /// The Event written for each key: its namespace and name.
    written: HashMap<String, (String, String)>,
    /// The spam filter's buckets, by source and object: tokens and when they were counted.
    buckets: HashMap<String, (f64, SystemTime)>,
}

impl Recorder {
    /// The recorder of `component`, on node `host` (empty for a controller).
    pub(crate) fn new(component: &str, host: &str) -> Self {
        Recorder {
            component: component.to_string(),
            host: host.to_string(),
            state: Mutex::new(RecorderState::default()),
        }
    }

    /// Records an Event about `regarding` (about one of its containers with `field_path`,
    /// `spec.containers{name}`).
    pub(crate) fn record(
        &self,
        api: &dyn Client,
        regarding: &Value,
        field_path: Option<&str>,
        type_: EventType,
        reason: &str,
        message: &str,
    ) {
        let clock = api.clock();
        let ev = legacy_event(
            clock,
            regarding,
            field_path,
            type_,
            reason,
            message,
            &self.component,
            &self.host,
        );
        let ns = meta_str(&ev, "namespace").unwrap_or("default").to_string();
        let key = legacy_key(&ev);
        let previous = {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if !st.allow(&spam_key(&ev), clock.now()) {
                return;
            }
            st.written.get(&key).cloned()
        };
        if let Some((ens, name)) = previous
            && bump(api, &ens, &name)
        {
            return;
        }
        let name = meta_str(&ev, "name").unwrap_or("").to_string();
        create(api, &ns, ev);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.written.len() >= CACHE_ENTRIES {
            st.written.clear();
        }
        st.written.insert(key, (ns, name));
    }
}

impl RecorderState {
    /// The spam filter: whether one more Event for `key` may be written now.
    fn allow(&mut self, key: &str, now: SystemTime) -> bool {
        if self.buckets.len() >= CACHE_ENTRIES && !self.buckets.contains_key(key) {
            self.buckets.clear();
        }
        let (tokens, at) = self
            .buckets
            .entry(key.to_string())
            .or_insert((SPAM_BURST, now));
        let gained =
            now.duration_since(*at).unwrap_or_default().as_secs_f64() / SPAM_REFILL.as_secs_f64();
        *tokens = (*tokens + gained).min(SPAM_BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The `events.k8s.io` recorder of one controller.
#[derive(Debug)]
pub(crate) struct Emitter {
    controller: String,
    instance: String,
    /// Series seen, by key: the Event's namespace and name and how many were observed.
    series: Mutex<HashMap<String, (String, String, u64)>>,
}

impl Emitter {
    /// The recorder of `controller`, running as `instance` (its pod's name).
    pub(crate) fn new(controller: &str, instance: &str) -> Self {
        Emitter {
            controller: controller.to_string(),
            instance: format!("{controller}-{instance}"),
            series: Mutex::new(HashMap::new()),
        }
    }

    /// Emits an Event about `regarding`: `action` is what the controller was doing
    /// (`Reconciling`, `Binding`...), `note` the message.
    pub(crate) fn emit(
        &self,
        api: &dyn Client,
        regarding: &Value,
        type_: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        let clock = api.clock();
        let object = object_reference(regarding, None);
        let ns = event_namespace(regarding);
        let key = format!(
            "{}\u{0}{action}\u{0}{reason}\u{0}{}",
            object, self.controller
        );
        let repeat = {
            let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
            if series.len() >= CACHE_ENTRIES && !series.contains_key(&key) {
                series.clear();
            }
            match series.get_mut(&key) {
                Some((ens, name, count)) => {
                    *count += 1;
                    Some((ens.clone(), name.clone(), *count))
                }
                None => None,
            }
        };
        match repeat {
            Some((ens, name, 2)) => {
                let now = clock.now_micro();
                let updated = api.get(Kind::Event, &ens, &name).and_then(|cur| {
                    let mut next = Value::clone(&cur);
                    next["series"] = json!({ "count": 2, "lastObservedTime": now });
                    api.update(Kind::Event, &ens, &name, next, Part::Main).ok()
                });
                if updated.is_none() {
                    tracing::debug!(event = %name, "updating an event series");
                }
            }
            Some(_) => {}
            None => {
                let name = event_name(clock, regarding);
                let ev = json!({
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": { "name": name, "namespace": ns },
                    "involvedObject": object,
                    "reason": reason,
                    "message": note,
                    "source": {},
                    "firstTimestamp": null,
                    "lastTimestamp": null,
                    "type": type_.as_str(),
                    "eventTime": clock.now_micro(),
                    "action": action,
                    "reportingComponent": self.controller,
                    "reportingInstance": self.instance,
                });
                create(api, &ns, ev);
                let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
                series.insert(key, (ns, name, 1));
            }
        }
    }
}

/// Starts the Event TTL as one task that runs until `shutdown`: it waits on the cluster's clock
/// for the next Event's TTL to run out and deletes what did ([`Store::expire_events`]); with
/// no Event stored, it waits for a write. Its waits are not timers the auto-advancing clock
/// jumps to: expiry is housekeeping, not work the cluster waits on.
pub(crate) fn spawn_expiry(store: Arc<Store>, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = store.subscribe();
        loop {
            changes.borrow_and_update();
            match store.next_event_expiry() {
                Some(at) => tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = store.clock().sleep_until_unlisted(at) => {
                        store.expire_events();
                    }
                },
                None => tokio::select! {
                    () = shutdown.cancelled() => return,
                    r = changes.changed() => if r.is_err() { return },
                },
            }
        }
    })
}

/// The namespace an Event about `regarding` goes to.
fn event_namespace(regarding: &Value) -> String {
    meta_str(regarding, "namespace")
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
        .to_string()
}

/// `<object>.<nanoseconds in hex>`.
fn event_name(clock: &Clock, regarding: &Value) -> String {
    format!(
        "{}.{:x}",
        meta_str(regarding, "name").unwrap_or(""),
        clock.unix_nanos()
    )
}

/// An `ObjectReference` to `obj`, as `reference.GetReference` makes it.
fn object_reference(obj: &Value, field_path: Option<&str>) -> Value {
    let mut r = Map::new();
    for (key, value) in [
        ("kind", obj.get("kind").and_then(Value::as_str)),
        ("namespace", meta_str(obj, "namespace")),
        ("name", meta_str(obj, "name")),
        ("uid", meta_str(obj, "uid")),
        ("apiVersion", obj.get("apiVersion").and_then(Value::as_str)),
        ("resourceVersion", meta_str(obj, "resourceVersion")),
        ("fieldPath", field_path),
    ] {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            r.insert(key.into(), json!(v));
        }
    }
    Value::Object(r)
}

#[allow(clippy::too_many_arguments)]
fn legacy_event(
    clock: &Clock,
    regarding: &Value,
    field_path: Option<&str>,
    type_: EventType,
    reason: &str,
    message: &str,
    component: &str,
    host: &str,
) -> Value {
    let now = clock.now_rfc3339();
    let mut source = json!({ "component": component });
    if !host.is_empty() {
        source["host"] = json!(host);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": { "name": event_name(clock, regarding), "namespace": event_namespace(regarding) },
        "involvedObject": object_reference(regarding, field_path),
        "reason": reason,
        "message": message,
        "source": source,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": type_.as_str(),
        "eventTime": null,
        "reportingComponent": component,
        "reportingInstance": host,
    })
}

/// What makes two legacy Events the same Event (`getEventKey`): source, object, type, reason
/// and message.
fn legacy_key(ev: &Value) -> String {
    let s = |path: &[&str]| str_at(ev, path).unwrap_or("").to_string();
    [
        s(&["source", "component"]),
        s(&["source", "host"]),
        s(&["involvedObject", "kind"]),
        s(&["involvedObject", "namespace"]),
        s(&["involvedObject", "name"]),
        s(&["involvedObject", "fieldPath"]),
        s(&["involvedObject", "uid"]),
        s(&["involvedObject", "apiVersion"]),
        s(&["type"]),
        s(&["reason"]),
        s(&["message"]),
    ]
    .join("\u{0}")
}

/// The spam filter's key: source and object.
fn spam_key(ev: &Value) -> String {
    let s = |path: &[&str]| str_at(ev, path).unwrap_or("").to_string();
    [
        s(&["source", "component"]),
        s(&["source", "host"]),
        s(&["involvedObject", "kind"]),
        s(&["involvedObject", "namespace"]),
        s(&["involvedObject", "name"]),
        s(&["involvedObject", "uid"]),
        s(&["involvedObject", "apiVersion"]),
    ]
    .join("\u{0}")
}

/// Counts one more occurrence of a stored Event; false when it is gone.
fn bump(api: &dyn Client, ns: &str, name: &str) -> bool {
    let now = api.clock().now_rfc3339();
    for _ in 0..3 {
        let Some(cur) = api.get(Kind::Event, ns, name) else {
            return false;
        };
        let mut next = Value::clone(&cur);
        let count = next.get("count").and_then(Value::as_i64).unwrap_or(1);
        next["count"] = json!(count + 1);
        next["lastTimestamp"] = json!(now);
        match api.update(Kind::Event, ns, name, next, Part::Main) {
            Ok(_) => return true,
            Err(e) if e.code == 409 => continue,
            Err(_) => return false,
        }
    }
    false
}

fn create(api: &dyn Client, ns: &str, ev: Value) {
    if let Err(e) = api.create(Kind::Event, ns, ev) {
        tracing::debug!(error = %e.message, "recording an event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ClockMode;
    use crate::registry::ResourceType;
    use crate::store::{StoreSettings, WriteOptions};

    fn events_kind(store: &Store) -> Option<Arc<ResourceType>> {
        store.registry().find("", "v1", "events")
    }

    fn store() -> Store {
        store_with(StoreSettings::default())
    }

    fn store_with(settings: StoreSettings) -> Store {
        let store = Store::with_clock(settings, Arc::default(), Clock::new(ClockMode::Manual));
        let ns = store
            .registry()
            .find("", "v1", "namespaces")
            .expect("namespaces are served");
        store
            .create(
                &ns,
                "",
                json!({ "metadata": { "name": "default" } }),
                WriteOptions::default(),
            )
            .expect("the namespace is created");
        store
    }

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "7" },
        })
    }

    fn events(store: &Store) -> Vec<Arc<Value>> {
        let rt = events_kind(store).expect("events are served");
        store.list_all(&rt, Some("default"))
    }

    #[test]
    fn a_repeated_event_is_counted_on_the_first_one() {
        let store = store();
        let kubelet = Recorder::new("kubelet", "node-1");
        for _ in 0..3 {
            kubelet.record(
                &store,
                &pod(),
                Some("spec.containers{c}"),
                EventType::Normal,
                "Pulled",
                "pulled",
            );
            store.clock().advance(Duration::from_secs(1));
        }
        let all = events(&store);
        assert_eq!(all.len(), 1);
        let ev = &all[0];
        assert_eq!(ev["count"], 3);
        assert_ne!(ev["firstTimestamp"], ev["lastTimestamp"]);
        assert_eq!(
            ev["source"],
            json!({ "component": "kubelet", "host": "node-1" })
        );
        assert_eq!(ev["involvedObject"]["fieldPath"], "spec.containers{c}");
        assert_eq!(ev["involvedObject"]["resourceVersion"], "7");
        assert_eq!(ev["reportingInstance"], "node-1");
        let name = meta_str(ev, "name").unwrap_or("");
        assert!(name.starts_with("p."), "{name}");
    }

    #[test]
    fn the_one_shot_recorder_aggregates_through_the_store() {
        let store = store();
        for _ in 0..2 {
            record(
                &store,
                &pod(),
                EventType::Warning,
                "Failed",
                "no",
                "some-controller",
            );
        }
        let all = events(&store);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0]["count"], 2);
        assert_eq!(all[0]["type"], "Warning");
    }

    #[test]
    fn the_spam_filter_stops_a_source_after_25_events_about_one_object() {
        let store = store();
        let kubelet = Recorder::new("kubelet", "n");
        for i in 0..30 {
            kubelet.record(
                &store,
                &pod(),
                None,
                EventType::Warning,
                "Unhealthy",
                &format!("probe {i}"),
            );
        }
        assert_eq!(events(&store).len(), 25);
        store.clock().advance(SPAM_REFILL);
        kubelet.record(
            &store,
            &pod(),
            None,
            EventType::Warning,
            "Unhealthy",
            "later",
        );
        assert_eq!(events(&store).len(), 26);
    }

    #[test]
    fn an_emitted_repeat_becomes_a_series() {
        let store = store();
        let ctl = Emitter::new("sandbox-controller", "pod-0");
        for _ in 0..3 {
            ctl.emit(
                &store,
                &pod(),
                EventType::Warning,
                "MultiplePods",
                "Reconciling",
                "two pods",
            );
        }
        let all = events(&store);
        assert_eq!(all.len(), 1);
        let ev = &all[0];
        assert_eq!(ev["series"]["count"], 2);
        assert_eq!(ev["action"], "Reconciling");
        assert_eq!(ev["reportingComponent"], "sandbox-controller");
        assert_eq!(ev["reportingInstance"], "sandbox-controller-pod-0");
        assert_eq!(ev["source"], json!({}));
        assert!(ev["eventTime"].as_str().is_some_and(|t| t.contains('.')));
    }

    fn short_ttl() -> StoreSettings {
        StoreSettings {
            event_ttl: Duration::from_secs(60),
            ..StoreSettings::default()
        }
    }

    #[test]
    fn an_event_expires_its_ttl_after_its_last_write_on_the_clusters_clock() {
        let store = store_with(short_ttl());
        let kubelet = Recorder::new("kubelet", "n");
        let pulled = |store: &Store| {
            kubelet.record(store, &pod(), None, EventType::Normal, "Pulled", "pulled");
        };
        pulled(&store);
        store.clock().advance(Duration::from_secs(40));
        assert_eq!(store.expire_events(), 0);
        // The repeat is a write of the same Event: its TTL starts again.
        pulled(&store);
        store.clock().advance(Duration::from_secs(40));
        assert_eq!(
            store.expire_events(),
            0,
            "the repeat renewed the Event's TTL"
        );
        assert_eq!(events(&store).len(), 1);
        store.clock().advance(Duration::from_secs(20));
        let rv = store.resource_version();
        assert_eq!(store.expire_events(), 1);
        assert!(events(&store).is_empty());
        let log = store.events_since(rv).expect("the log reaches back");
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].kind, crate::store::EventType::Deleted);
        assert_eq!(store.next_event_expiry(), None);
    }

    #[test]
    fn an_event_deleted_and_written_again_under_its_name_lives_its_own_ttl() {
        let store = store_with(short_ttl());
        let rt = events_kind(&store).expect("events are served");
        let ev = |reason: &str| {
            json!({
                "metadata": { "name": "e", "namespace": "default" },
                "involvedObject": { "kind": "Pod", "name": "p", "namespace": "default" },
                "reason": reason,
            })
        };
        store
            .create(&rt, "default", ev("First"), WriteOptions::default())
            .expect("created");
        store
            .delete(&rt, "default", "e", &crate::store::DeleteOptions::default())
            .expect("deleted");
        store.clock().advance(Duration::from_secs(30));
        store
            .create(&rt, "default", ev("Second"), WriteOptions::default())
            .expect("created again");
        store.clock().advance(Duration::from_secs(40));
        assert_eq!(
            store.expire_events(),
            0,
            "the first lease was the old Event's"
        );
        assert_eq!(events(&store).len(), 1);
        store.clock().advance(Duration::from_secs(20));
        assert_eq!(store.expire_events(), 1);
    }

    #[tokio::test]
    async fn the_expiry_task_deletes_an_event_once_the_clock_passes_its_ttl() {
        let store = Arc::new(store_with(short_ttl()));
        let shutdown = CancellationToken::new();
        let task = spawn_expiry(store.clone(), shutdown.clone());
        let mut changes = store.subscribe();
        record(
            &store,
            &pod(),
            EventType::Warning,
            "Failed",
            "no",
            "some-controller",
        );
        assert_eq!(events(&store).len(), 1);
        store.clock().advance(Duration::from_secs(61));
        let gone = async {
            while !events(&store).is_empty() {
                changes.changed().await.expect("the store is alive");
            }
        };
        tokio::time::timeout(Duration::from_secs(60), gone)
            .await
            .expect("the expired Event is deleted");
        assert_eq!(
            store.clock().next_deadline(),
            None,
            "an Event's TTL is no timer the auto-advancing clock jumps to"
        );
        shutdown.cancel();
        task.await.expect("the task ends");
    }
}
