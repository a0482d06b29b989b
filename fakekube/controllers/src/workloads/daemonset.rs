//! The DaemonSet controller: one pod on every Node whose labels match the template's
//! `nodeSelector` (cordoned nodes included: a daemon pod tolerates `unschedulable`), bound to
//! its node, replaced when it fails or (RollingUpdate) when its template is outdated, one node
//! at a time; and the status `kubectl rollout status` reads.

use super::hash::template_hash;
use super::{Ctx, Requeue, create_pod, delete_pod, generation, int_at, pods, write_status};
use crate::client::Kind;
use crate::meta::meta_str;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

const COMPONENT: &str = "daemonset-controller";
const REVISION_LABEL: &str = "controller-revision-hash";
const GENERATION_LABEL: &str = "pod-template-generation";

/// The tolerations the controller adds to every daemon pod.
fn daemon_tolerations() -> Vec<Value> {
    [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    .into_iter()
    .map(|(key, effect)| json!({ "key": key, "operator": "Exists", "effect": effect }))
    .collect()
}

pub(crate) fn reconcile(ctx: &mut Ctx<'_>, ns: &str, name: &str) -> Requeue {
    let rt = Kind::DaemonSet;
    let ds = ctx.api.get(rt, ns, name)?;
    if super::deleting(&ds) {
        return None;
    }
    let template = ds.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let hash = template_hash(&template, int_at(&ds, "/status/collisionCount"));
    let selector = template
        .pointer("/spec/nodeSelector")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let nodes: Vec<String> = ctx
        .api
        .list(Kind::Node, None)
        .iter()
        .filter(|n| {
            selector
                .iter()
                .all(|(k, v)| n.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(v))
        })
        .filter_map(|n| meta_str(n, "name").map(str::to_string))
        .collect();
    let mut on_node: BTreeMap<String, Vec<Arc<Value>>> = BTreeMap::new();
    let mut misplaced = Vec::new();
    for p in pods::owned(ctx, &ds) {
        let node = p
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if nodes.contains(&node) {
            on_node.entry(node).or_default().push(p);
        } else {
            misplaced.push(p);
        }
    }
    for p in misplaced.iter().filter(|p| !super::deleting(p)) {
        delete_pod(ctx, &ds, p, COMPONENT);
    }
    let rolling = ds
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        != Some("OnDelete");
    let mut replaced_one = false;
    let all_ready = nodes.iter().all(|n| {
        on_node
            .get(n)
            .is_some_and(|ps| ps.iter().any(|p| pods::active(p) && pods::ready(p)))
    });
    for node in &nodes {
        let here = on_node.get(node).map(Vec::as_slice).unwrap_or_default();
        for p in here
            .iter()
            .filter(|p| pods::phase(p) == "Failed" && !super::deleting(p))
        {
            delete_pod(ctx, &ds, p, COMPONENT);
        }
        let active: Vec<&Arc<Value>> = here.iter().filter(|p| pods::active(p)).collect();
        if active.is_empty() {
            if !here.iter().any(|p| super::deleting(p)) {
                make_pod(ctx, &ds, &template, &hash, node);
            }
        } else if rolling
            && !replaced_one
            && all_ready
            && active.iter().any(|p| pod_revision(p) != hash)
        {
            for p in active.iter().filter(|p| pod_revision(p) != hash) {
                delete_pod(ctx, &ds, p, COMPONENT);
            }
            replaced_one = true;
        }
    }
    // Status from the pods as they are now.
    let min_ready = int_at(&ds, "/spec/minReadySeconds");
    let at = ctx.api.clock().now_utc();
    let now: Vec<Arc<Value>> = pods::owned(ctx, &ds)
        .into_iter()
        .filter(|p| pods::active(p))
        .collect();
    let placed = |f: &dyn Fn(&Value) -> bool| {
        nodes
            .iter()
            .filter(|n| {
                now.iter().any(|p| {
                    p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(n.as_str()) && f(p)
                })
            })
            .count()
    };
    let scheduled = placed(&|_| true);
    let ready = placed(&|p| pods::ready(p));
    let available = placed(&|p| pods::available(p, min_ready, at));
    let updated = placed(&|p| pod_revision(p) == hash);
    let desired = nodes.len();
    let mut status = json!({
        "currentNumberScheduled": scheduled,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": desired,
        "numberReady": ready,
        "observedGeneration": generation(&ds),
        "updatedNumberScheduled": updated,
        "numberAvailable": available,
        "numberUnavailable": desired.saturating_sub(available),
    });
    if let Some(m) = status.as_object_mut() {
        m.retain(|k, v| {
            !matches!(
                k.as_str(),
                "updatedNumberScheduled" | "numberAvailable" | "numberUnavailable"
            ) || v != &json!(0)
        });
    }
    write_status(ctx.api, rt, ns, name, status);
    None
}

fn pod_revision(p: &Value) -> &str {
    p.pointer(&format!("/metadata/labels/{REVISION_LABEL}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn make_pod(ctx: &Ctx<'_>, ds: &Value, template: &Value, hash: &str, node: &str) {
    let ns = meta_str(ds, "namespace").unwrap_or("");
    let name = meta_str(ds, "name").unwrap_or("");
    let generation = generation(ds).to_string();
    let mut pod = pods::from_template(
        template,
        Kind::DaemonSet,
        ds,
        "",
        &format!("{name}-"),
        &[(REVISION_LABEL, hash), (GENERATION_LABEL, &generation)],
    );
    pod["spec"]["nodeName"] = json!(node);
    let mut tolerations = pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for t in daemon_tolerations() {
        if !tolerations.iter().any(|x| x.get("key") == t.get("key")) {
            tolerations.push(t);
        }
    }
    pod["spec"]["tolerations"] = json!(tolerations);
    create_pod(ctx, ds, ns, pod, COMPONENT);
}
