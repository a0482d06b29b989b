//! Events, written as a cluster's components write them: core/v1 Events in the regarding
//! object's namespace (`default` for a cluster-scoped one), named `<object>.<hex>` (the
//! nanoseconds of the cluster's clock), with the object as `involvedObject`.
//!
//! Two recorders, as in client-go:
//!
//! - [`Recorder`] (and fakekube's one-shot `events::record` over its store), the legacy recorder (`tools/record`) the
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
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The type of an Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something went wrong.
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// How many Events one source may write about one object at once (the spam filter's burst).
const SPAM_BURST: f64 = 25.0;
/// How often the spam filter gives one more Event.
pub const SPAM_REFILL: Duration = Duration::from_secs(300);
/// How many keys a recorder remembers (client-go's LRU size).
const CACHE_ENTRIES: usize = 4096;

/// The legacy recorder of one component (the kubelet of a node, a controller).
#[derive(Debug)]
pub struct Recorder {
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
    pub fn new(component: &str, host: &str) -> Self {
        Recorder {
            component: component.to_string(),
            host: host.to_string(),
            state: Mutex::new(RecorderState::default()),
        }
    }

    /// Records an Event about `regarding` (about one of its containers with `field_path`,
    /// `spec.containers{name}`).
    pub fn record(
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
pub struct Emitter {
    controller: String,
    instance: String,
    /// Series seen, by key: the Event's namespace and name and how many were observed.
    series: Mutex<HashMap<String, (String, String, u64)>>,
}

impl Emitter {
    /// The recorder of `controller`, running as `instance` (its pod's name).
    pub fn new(controller: &str, instance: &str) -> Self {
        Emitter {
            controller: controller.to_string(),
            instance: format!("{controller}-{instance}"),
            series: Mutex::new(HashMap::new()),
        }
    }

    /// Emits an Event about `regarding`: `action` is what the controller was doing
    /// (`Reconciling`, `Binding`...), `note` the message.
    pub fn emit(
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

/// The legacy recorder's Event about `regarding` (core/v1, `source`, `count` 1, both
/// timestamps now on `clock`).
#[allow(clippy::too_many_arguments)]
pub fn legacy_event(
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
pub fn legacy_key(ev: &Value) -> String {
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
pub fn bump(api: &dyn Client, ns: &str, name: &str) -> bool {
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

/// Creates Event `ev` in `ns` (a failure is logged, never returned: Events are best effort).
pub fn create(api: &dyn Client, ns: &str, ev: Value) {
    if let Err(e) = api.create(Kind::Event, ns, ev) {
        tracing::debug!(error = %e.message, "recording an event");
    }
}
