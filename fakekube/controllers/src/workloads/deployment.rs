//! The Deployment controller: a ReplicaSet per pod template (named by its
//! `pod-template-hash`, numbered by the `deployment.kubernetes.io/revision` annotation),
//! rolled out with RollingUpdate (within `maxSurge` and `maxUnavailable`) or Recreate, old
//! ReplicaSets pruned past `revisionHistoryLimit`, and the status `kubectl rollout status`
//! reads: `observedGeneration`, the replica counts and the Available and Progressing
//! conditions with the real reasons.

use super::{Ctx, Requeue, condition, controller_ref, create, delete, generation, int_at};
use super::{hash::template_hash, modify, set_condition, write_status};
use crate::client::Kind;
use crate::events::EventType;
use crate::meta::meta_str;
use serde_json::{Map, Value, json};
use std::sync::Arc;

const COMPONENT: &str = "deployment-controller";
const HASH_LABEL: &str = "pod-template-hash";
const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";

pub(crate) fn reconcile(ctx: &mut Ctx<'_>, ns: &str, name: &str) -> Requeue {
    let rt = Kind::Deployment;
    let d = ctx.api.get(rt, ns, name)?;
    if super::deleting(&d) {
        return None;
    }
    let replicas = int_at(&d, "/spec/replicas").max(0);
    let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let hash = template_hash(&template, int_at(&d, "/status/collisionCount"));
    let uid = meta_str(&d, "uid").unwrap_or("").to_string();
    let mut sets: Vec<Arc<Value>> = ctx
        .index
        .replicasets
        .of(&uid)
        .filter_map(|(n, s)| ctx.api.get(Kind::ReplicaSet, n, s))
        .filter(|rs| !super::deleting(rs))
        .collect();
    sets.sort_by_key(|rs| revision(rs));
    let max_revision = sets.iter().map(|rs| revision(rs)).max().unwrap_or(0);
    let paused = d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
    let (surge, unavailable) = limits(&d, replicas);
    let position = sets
        .iter()
        .position(|rs| rs.pointer(&format!("/metadata/labels/{HASH_LABEL}")) == Some(&json!(hash)));
    let mut created = None;
    let new_rs = match position {
        Some(i) => sets.remove(i),
        None if paused => return status(ctx, &d, None, &sets, unavailable, None),
        None => {
            let recreate = strategy(&d) == "Recreate";
            let old_total: i64 = sets.iter().map(|rs| spec_replicas(rs)).sum();
            let start = if recreate || old_total == 0 {
                if recreate && old_active(&sets) {
                    0
                } else {
                    replicas
                }
            } else {
                (replicas + surge - old_total).clamp(0, replicas)
            };
            let rs = new_replicaset(
                rt,
                &d,
                &template,
                &hash,
                max_revision + 1,
                start,
                replicas + surge,
            );
            let Ok(rs) = create(ctx.api, Kind::ReplicaSet, ns, rs) else {
                return Some(std::time::Duration::from_secs(1));
            };
            let rs_name = meta_str(&rs, "name").unwrap_or("").to_string();
            if start > 0 {
                scaled(ctx, &d, &rs_name, 0, start);
            }
            created = Some(rs_name);
            rs
        }
    };
    let new_name = meta_str(&new_rs, "name").unwrap_or("").to_string();
    if revision(&new_rs) < max_revision {
        // A rollback to an older template: that ReplicaSet becomes the newest revision.
        let next = (max_revision + 1).to_string();
        modify(ctx.api, Kind::ReplicaSet, ns, &new_name, |rs| {
            rs["metadata"]["annotations"][REVISION] = json!(next);
        });
    }
    let d_revision = if revision(&new_rs) < max_revision {
        max_revision + 1
    } else {
        revision(&new_rs)
    }
    .to_string();
    modify(ctx.api, rt, ns, name, |obj| {
        if obj
            .pointer("/metadata/annotations")
            .is_none_or(Value::is_null)
        {
            obj["metadata"]["annotations"] = json!({});
        }
        obj["metadata"]["annotations"][REVISION] = json!(d_revision);
    });
    if !paused {
        if strategy(&d) == "Recreate" {
            for rs in sets.iter().filter(|rs| spec_replicas(rs) > 0) {
                scale(ctx, &d, rs, 0, replicas);
            }
            if !old_active(&sets) && spec_replicas(&new_rs) != replicas {
                scale(ctx, &d, &new_rs, replicas, replicas);
            }
        } else {
            rolling(ctx, &d, &new_rs, &sets, replicas, surge, unavailable);
        }
        prune(ctx, &d, &sets);
    }
    let new_rs = ctx
        .api
        .get(Kind::ReplicaSet, ns, &new_name)
        .unwrap_or(new_rs);
    let sets: Vec<Arc<Value>> = sets
        .iter()
        .filter_map(|rs| {
            ctx.api
                .get(Kind::ReplicaSet, ns, meta_str(rs, "name").unwrap_or(""))
        })
        .collect();
    status(ctx, &d, Some(&new_rs), &sets, unavailable, created)
}

/// A RollingUpdate step: scale the new ReplicaSet up within `maxSurge`, then the old ones down
/// within `maxUnavailable`.
fn rolling(
    ctx: &Ctx<'_>,
    d: &Value,
    new_rs: &Value,
    old: &[Arc<Value>],
    replicas: i64,
    surge: i64,
    unavailable: i64,
) {
    let old_total: i64 = old.iter().map(|rs| spec_replicas(rs)).sum();
    let new_now = spec_replicas(new_rs);
    if old_total == 0 {
        if new_now != replicas {
            scale(ctx, d, new_rs, replicas, replicas + surge);
        }
        return;
    }
    let mut new_target = new_now;
    if new_now < replicas {
        let room = replicas + surge - old_total - new_now;
        if room > 0 {
            new_target = (new_now + room).min(replicas);
            scale(ctx, d, new_rs, new_target, replicas + surge);
        }
    } else if new_now > replicas {
        new_target = replicas;
        scale(ctx, d, new_rs, replicas, replicas + surge);
    }
    let min_available = replicas - unavailable;
    let available: i64 = std::iter::once(new_rs)
        .chain(old.iter().map(|rs| rs.as_ref()))
        .map(|rs| int_at(rs, "/status/availableReplicas"))
        .sum();
    let new_unavailable = (new_target - int_at(new_rs, "/status/availableReplicas")).max(0);
    let mut specs: Vec<i64> = old.iter().map(|rs| spec_replicas(rs)).collect();
    // Old pods that are not available go first: removing them costs no availability.
    let mut budget = (old_total + new_target - min_available - new_unavailable).max(0);
    for (rs, spec) in old.iter().zip(specs.iter_mut()) {
        let unhealthy = (*spec - int_at(rs, "/status/availableReplicas")).max(0);
        let down = unhealthy.min(budget).min(*spec);
        *spec -= down;
        budget -= down;
    }
    // Then available ones, as far as the minimum availability allows.
    let mut budget = (available - min_available).max(0);
    for spec in &mut specs {
        let down = (*spec).min(budget);
        *spec -= down;
        budget -= down;
    }
    for (rs, spec) in old.iter().zip(specs) {
        if spec != spec_replicas(rs) {
            scale(ctx, d, rs, spec, replicas + surge);
        }
    }
}

/// Whether an old ReplicaSet still has pods.
fn old_active(old: &[Arc<Value>]) -> bool {
    old.iter()
        .any(|rs| spec_replicas(rs) > 0 || int_at(rs, "/status/replicas") > 0)
}

/// Deletes old ReplicaSets without replicas beyond `revisionHistoryLimit`, oldest first.
fn prune(ctx: &Ctx<'_>, d: &Value, old: &[Arc<Value>]) {
    let limit = d
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_i64)
        .unwrap_or(10)
        .max(0);
    let idle: Vec<_> = old
        .iter()
        .filter(|rs| spec_replicas(rs) == 0 && int_at(rs, "/status/replicas") == 0)
        .collect();
    let extra = idle
        .len()
        .saturating_sub(usize::try_from(limit).unwrap_or(0));
    for rs in idle.into_iter().take(extra) {
        let _ = delete(ctx.api, Kind::ReplicaSet, rs);
    }
}

/// Scales a ReplicaSet and records it as the real controller does.
fn scale(ctx: &Ctx<'_>, d: &Value, rs: &Value, to: i64, max: i64) {
    let from = spec_replicas(rs);
    let ns = meta_str(rs, "namespace").unwrap_or("");
    let name = meta_str(rs, "name").unwrap_or("");
    let desired = int_at(d, "/spec/replicas").to_string();
    let max = max.to_string();
    let written = modify(ctx.api, Kind::ReplicaSet, ns, name, |obj| {
        obj["spec"]["replicas"] = json!(to);
        if obj
            .pointer("/metadata/annotations")
            .is_none_or(Value::is_null)
        {
            obj["metadata"]["annotations"] = json!({});
        }
        obj["metadata"]["annotations"][DESIRED] = json!(desired);
        obj["metadata"]["annotations"][MAX_REPLICAS] = json!(max);
    });
    if written.is_some() && from != to {
        scaled(ctx, d, name, from, to);
    }
}

fn scaled(ctx: &Ctx<'_>, d: &Value, rs_name: &str, from: i64, to: i64) {
    let dir = if to > from { "up" } else { "down" };
    ctx.events.record(
        ctx.api,
        d,
        EventType::Normal,
        "ScalingReplicaSet",
        &format!("Scaled {dir} replica set {rs_name} from {from} to {to}"),
        COMPONENT,
    );
}

/// The ReplicaSet of a new pod template.
fn new_replicaset(
    rt: Kind,
    d: &Value,
    template: &Value,
    hash: &str,
    revision: i64,
    replicas: i64,
    max: i64,
) -> Value {
    let name = meta_str(d, "name").unwrap_or("");
    let ns = meta_str(d, "namespace").unwrap_or("");
    let mut template = template.clone();
    template["metadata"]["labels"][HASH_LABEL] = json!(hash);
    let labels = template["metadata"]["labels"].clone();
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let mut annotations: Map<String, Value> = d
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.retain(|k, _| {
        !k.starts_with("deployment.kubernetes.io/")
            && k != "kubectl.kubernetes.io/last-applied-configuration"
    });
    annotations.insert(REVISION.into(), json!(revision.to_string()));
    annotations.insert(
        DESIRED.into(),
        json!(int_at(d, "/spec/replicas").to_string()),
    );
    annotations.insert(MAX_REPLICAS.into(), json!(max.to_string()));
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{name}-{hash}"),
            "namespace": ns,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [controller_ref(rt, d)],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": int_at(d, "/spec/minReadySeconds"),
            "selector": selector,
            "template": template,
        },
    })
}

/// Writes the status: the counts summed over the ReplicaSets and the two conditions.
fn status(
    ctx: &Ctx<'_>,
    d: &Value,
    new_rs: Option<&Value>,
    old: &[Arc<Value>],
    max_unavailable: i64,
    created: Option<String>,
) -> Requeue {
    let ns = meta_str(d, "namespace").unwrap_or("");
    let name = meta_str(d, "name").unwrap_or("");
    let replicas = int_at(d, "/spec/replicas").max(0);
    let all = new_rs.into_iter().chain(old.iter().map(|rs| rs.as_ref()));
    let sum = |p: &str| all.clone().map(|rs| int_at(rs, p)).sum::<i64>();
    let total = sum("/status/replicas");
    let ready = sum("/status/readyReplicas");
    let available = sum("/status/availableReplicas");
    let updated = new_rs.map_or(0, |rs| int_at(rs, "/status/replicas"));
    let mut conditions: Vec<Value> = d
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let now = ctx.api.clock().now_rfc3339();
    if available >= replicas - max_unavailable {
        set_condition(
            &mut conditions,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            true,
            &now,
        );
    } else {
        set_condition(
            &mut conditions,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            true,
            &now,
        );
    }
    let paused = d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
    let rs_name = new_rs.and_then(|rs| meta_str(rs, "name")).unwrap_or("");
    let complete = new_rs.is_some()
        && updated == replicas
        && int_at(new_rs.unwrap_or(&Value::Null), "/status/availableReplicas") >= replicas
        && total == replicas;
    if paused {
        set_condition(
            &mut conditions,
            "Progressing",
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused",
            true,
            &now,
        );
    } else if let Some(created) = &created {
        set_condition(
            &mut conditions,
            "Progressing",
            "True",
            "NewReplicaSetCreated",
            &format!("Created new replica set \"{created}\""),
            true,
            &now,
        );
    } else if complete {
        set_condition(
            &mut conditions,
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            &format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
            true,
            &now,
        );
    } else if new_rs.is_some() {
        let was = condition(d, "Progressing")
            .and_then(|c| c.get("reason"))
            .and_then(Value::as_str);
        let message = format!("ReplicaSet \"{rs_name}\" is progressing.");
        // Progress moves the update time; nothing new keeps the condition as it was.
        if was != Some("ReplicaSetUpdated")
            || total != int_at(d, "/status/replicas")
            || available != int_at(d, "/status/availableReplicas")
            || updated != int_at(d, "/status/updatedReplicas")
        {
            set_condition(
                &mut conditions,
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                &message,
                true,
                &now,
            );
        }
    }
    // Available is listed before Progressing, as the controller writes them.
    conditions.sort_by_key(|c| c.get("type").and_then(Value::as_str) != Some("Available"));
    let mut status = json!({
        "observedGeneration": generation(d),
        "replicas": total,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available,
        "unavailableReplicas": (replicas - available).max(0),
        "conditions": conditions,
    });
    if let Some(m) = status.as_object_mut() {
        m.retain(|k, v| {
            !matches!(
                k.as_str(),
                "replicas"
                    | "updatedReplicas"
                    | "readyReplicas"
                    | "availableReplicas"
                    | "unavailableReplicas"
            ) || v != &json!(0)
        });
        if let Some(c) = d.pointer("/status/collisionCount") {
            m.insert("collisionCount".into(), c.clone());
        }
    }
    write_status(ctx.api, Kind::Deployment, ns, name, status);
    None
}

fn spec_replicas(rs: &Value) -> i64 {
    int_at(rs, "/spec/replicas")
}

fn revision(rs: &Value) -> i64 {
    rs.pointer(&format!(
        "/metadata/annotations/{}",
        REVISION.replace('/', "~1")
    ))
    .and_then(Value::as_str)
    .and_then(|s| s.parse().ok())
    .unwrap_or(0)
}

fn strategy(d: &Value) -> &str {
    d.pointer("/spec/strategy/type")
        .and_then(Value::as_str)
        .unwrap_or("RollingUpdate")
}

/// `maxSurge` and `maxUnavailable` resolved against the replica count (surge rounded up,
/// unavailable down; both zero means one unavailable), as the controller resolves them.
fn limits(d: &Value, replicas: i64) -> (i64, i64) {
    if strategy(d) == "Recreate" {
        return (0, replicas);
    }
    let ru = d.pointer("/spec/strategy/rollingUpdate");
    let surge = resolve(ru.and_then(|r| r.get("maxSurge")), replicas, true);
    let unavailable = resolve(ru.and_then(|r| r.get("maxUnavailable")), replicas, false);
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable.min(replicas))
    }
}

/// An int-or-percent against `total`.
pub(crate) fn resolve(v: Option<&Value>, total: i64, round_up: bool) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0).max(0),
        Some(Value::String(s)) => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(25);
            let scaled = pct * total;
            if round_up {
                (scaled + 99) / 100
            } else {
                scaled / 100
            }
        }
        _ => {
            if round_up {
                (25 * total + 99) / 100
            } else {
                25 * total / 100
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surge_rounds_up_and_unavailable_rounds_down() {
        let d = json!({ "spec": { "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": "25%" } } } });
        assert_eq!(limits(&d, 2), (1, 0));
        assert_eq!(limits(&d, 4), (1, 1));
        let zero = json!({ "spec": { "strategy": { "rollingUpdate": { "maxSurge": 0, "maxUnavailable": 0 } } } });
        assert_eq!(limits(&zero, 3), (0, 1));
        let recreate = json!({ "spec": { "strategy": { "type": "Recreate" } } });
        assert_eq!(limits(&recreate, 3), (0, 3));
    }
}
