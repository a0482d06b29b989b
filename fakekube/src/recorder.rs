//! Events about objects, as a controller's event recorder writes them: one core `v1` Event per
//! call (read through `events.k8s.io/v1` as well), with `involvedObject`, `source.component`,
//! `reportingComponent`, a count of 1 and first and last timestamps of now.
//!
//! A stand-in with the signature of the shared recorder (`crate::events::record`) that the
//! kubelet and the agent-sandbox controllers write theirs with: the workload controllers call
//! only [`record`], so switching to the shared one is changing this module's callers' path.

use crate::meta::{self, meta_str};
use crate::store::{Store, WriteOptions};
use serde_json::{Value, json};

/// An Event's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    /// Something expected happened.
    Normal,
    /// Something a user may need to look at.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Records an Event about `regarding` (a stored object) from `component`, in the object's
/// namespace (`default` for cluster-scoped objects, as client-go's recorder does). A failure
/// to write it is logged and otherwise ignored, as an event recorder does.
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
    let name = meta_str(regarding, "name").unwrap_or("");
    let ns = meta_str(regarding, "namespace")
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let now = meta::now_rfc3339();
    let nanos = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let mut involved = json!({
        "kind": regarding.get("kind").cloned().unwrap_or(Value::Null),
        "apiVersion": regarding.get("apiVersion").cloned().unwrap_or(Value::Null),
        "name": name,
        "uid": meta_str(regarding, "uid").unwrap_or(""),
        "resourceVersion": meta_str(regarding, "resourceVersion").unwrap_or(""),
    });
    if let Some(obj_ns) = meta_str(regarding, "namespace").filter(|n| !n.is_empty()) {
        involved["namespace"] = json!(obj_ns);
    }
    let event = json!({
        "metadata": { "name": format!("{name}.{nanos:x}"), "namespace": ns },
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "source": { "component": component },
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": type_.as_str(),
        "eventTime": null,
        "reportingComponent": component,
        "reportingInstance": "",
    });
    if let Err(e) = store.create(&rt, ns, event, WriteOptions::default()) {
        tracing::debug!(reason, error = %e.message, "recording an event");
    }
}
