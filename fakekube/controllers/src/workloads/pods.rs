//! The pods a workload controller makes and reads: a pod from a template with its controller
//! reference, and the states the controllers count (active, ready, available, finished).

use super::{Ctx, controller_ref, deleting};
use crate::client::Kind;
use crate::meta::meta_str;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

/// A pod from `template` owned by `owner` (of kind `rt`): the template's labels and
/// annotations plus `labels`, named `name` or generated from `generate` when `name` is empty.
pub(crate) fn from_template(
    template: &Value,
    rt: Kind,
    owner: &Value,
    name: &str,
    generate: &str,
    labels: &[(&str, &str)],
) -> Value {
    let mut md = Map::new();
    if name.is_empty() {
        md.insert("generateName".into(), json!(generate));
    } else {
        md.insert("name".into(), json!(name));
    }
    let mut all_labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (k, v) in labels {
        all_labels.insert((*k).to_string(), json!(v));
    }
    if !all_labels.is_empty() {
        md.insert("labels".into(), Value::Object(all_labels));
    }
    if let Some(a) = template
        .pointer("/metadata/annotations")
        .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
    {
        md.insert("annotations".into(), a.clone());
    }
    md.insert("ownerReferences".into(), json!([controller_ref(rt, owner)]));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": md,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// The pods `owner` controls (by its uid), as stored.
pub(crate) fn owned(ctx: &Ctx<'_>, owner: &Value) -> Vec<Arc<Value>> {
    let uid = meta_str(owner, "uid").unwrap_or("");
    ctx.index
        .pods
        .of(uid)
        .filter_map(|(ns, name)| ctx.api.get(Kind::Pod, ns, name))
        .filter(|p| super::controller_of(p).and_then(|r| r.get("uid")) == Some(&json!(uid)))
        .collect()
}

/// `status.phase`.
pub(crate) fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
}

/// Finished: Succeeded or Failed.
pub(crate) fn finished(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Counted by a controller as one of its replicas: neither finished nor being deleted.
pub(crate) fn active(pod: &Value) -> bool {
    !finished(pod) && !deleting(pod)
}

/// The pod's Ready condition is True.
pub(crate) fn ready(pod: &Value) -> bool {
    super::condition_true(pod, "Ready")
}

/// How long from `now` (the cluster's time) the pod has still to stay Ready to be available
/// after `min_ready` seconds: `Some(ZERO)` when available, `None` when not Ready at all.
pub(crate) fn until_available(
    pod: &Value,
    min_ready: i64,
    now: time::OffsetDateTime,
) -> Option<Duration> {
    if !ready(pod) || deleting(pod) {
        return None;
    }
    if min_ready <= 0 {
        return Some(Duration::ZERO);
    }
    let since = super::condition(pod, "Ready")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(|t| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
        });
    let Some(since) = since else {
        return Some(Duration::ZERO);
    };
    let ready_for = now - since;
    let left = time::Duration::seconds(min_ready) - ready_for;
    Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
}

/// Available at `now`: Ready for at least `min_ready` seconds.
pub(crate) fn available(pod: &Value, min_ready: i64, now: time::OffsetDateTime) -> bool {
    until_available(pod, min_ready, now) == Some(Duration::ZERO)
}

/// The order in which a controller deletes surplus pods: unscheduled before scheduled,
/// pending before running, not ready before ready, newer before older.
pub(crate) fn deletion_rank(pod: &Value) -> (u8, u8, u8, std::cmp::Reverse<String>) {
    let scheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let running = phase(pod) == "Running";
    (
        u8::from(scheduled),
        u8::from(running),
        u8::from(ready(pod)),
        std::cmp::Reverse(meta_str(pod, "creationTimestamp").unwrap_or("").to_string()),
    )
}
