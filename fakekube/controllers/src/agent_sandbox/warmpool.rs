//! The SandboxWarmPool controller (`extensions/controllers/sandboxwarmpool_controller.go`
//! upstream).
//!
//! A pool keeps `spec.replicas` (default 1) member Sandboxes built from its template, named
//! `<pool>-xxxxx` by `generateName`, labelled with the pool's name hash, the template's ref hash
//! and blueprint hashes, `launch-type=warm` and `created-by=controller`, controlled by the pool.
//! Members taken by claims are controlled by the claim and no longer count, so the pool
//! replaces them. Excess members are deleted not-Ready first, newest first. Orphans carrying the
//! pool's label are adopted (or deleted when their blueprint is stale); under the `Recreate`
//! strategy stale members are deleted too. Members not Ready after the readiness grace period
//! (5 min) are replaced unless their Pod is unschedulable. Status: `replicas`,
//! `readyReplicas`, `selector` and `observedGeneration`, which the `scale` subresource reads.
//!
//! A member not Ready within the grace is looked at again 2 s after its grace ends, as upstream
//! schedules it.
//!
//! Differences from upstream: members are created in one pass (no slow-start batches beyond
//! the cap of 300, no token bucket, no replenish hold); ties between members created in the
//! same second are broken by name; the post-grace look has no jitter.

/// How often a pool holding unschedulable members looks again (upstream's default).
const UNSCHEDULABLE_RECHECK: Duration = Duration::from_secs(60);

/// How long after a member's readiness grace ends the pool looks at it again
/// (`graceRequeueSlack` upstream; upstream also adds up to 50 % of the remaining grace as
/// jitter, which is left out so the look comes at a time a test can count on).
const GRACE_REQUEUE_SLACK: Duration = Duration::from_secs(2);

use super::{
    CREATED_BY_LABEL, Cluster, LAUNCH_TYPE_LABEL, POD_NAME_ANNOTATION, POD_TEMPLATE_HASH_LABEL,
    Requeue, SAFE_TO_EVICT, TEMPLATE_HASH_LABEL, TEMPLATE_REF_ANNOTATION, TEMPLATE_REF_HASH_LABEL,
    WARM_POOL_LABEL, annotation, at, condition_true, controller_of, controller_ref, create,
    created_at, delete, deleting, generation, gojson, label, modify, name_hash, obj_at, owner_uid,
    set_controller_ref, set_map_key, str_at,
};
use crate::client::{Delete, Kind, Part};
use crate::meta::meta_str;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The most members created or deleted in one pass (`--sandbox-warm-pool-max-batch-size`).
const MAX_BATCH: usize = 300;

/// The blueprint part of a template spec: what a Sandbox copies.
pub(crate) fn blueprint(tpl: &Value) -> Value {
    let mut m = Map::new();
    for key in ["podTemplate", "volumeClaimTemplates", "service"] {
        if let Some(v) = at(tpl, &["spec", key]).filter(|v| !v.is_null()) {
            m.insert(key.into(), v.clone());
        }
    }
    Value::Object(m)
}

/// `NameHash` of `json.Marshal` of a template's blueprint (`sandbox-template-hash`): the
/// bytes Go writes for the typed `SandboxBlueprint`, so the value is upstream's.
pub(crate) fn blueprint_hash(tpl: &Value) -> String {
    let spec = at(tpl, &["spec"]).cloned().unwrap_or_else(|| json!({}));
    name_hash(&gojson::marshal(gojson::SANDBOX_BLUEPRINT, &spec))
}

/// `NameHash` of `json.Marshal` of a template's pod template (`sandbox-pod-template-hash`).
fn pod_template_hash(tpl: &Value) -> String {
    let pt = at(tpl, &["spec", "podTemplate"])
        .cloned()
        .unwrap_or_else(|| json!({}));
    name_hash(&gojson::marshal(gojson::POD_TEMPLATE, &pt))
}

/// `ApplySandboxSecureDefaults`: no service account token unless asked, and public DNS when
/// the template's default network policy is in force and no DNS policy is set.
pub(crate) fn apply_secure_defaults(tpl: &Value, pod_spec: &mut Value) {
    let Some(spec) = pod_spec.as_object_mut() else {
        return;
    };
    if spec
        .get("automountServiceAccountToken")
        .is_none_or(Value::is_null)
    {
        spec.insert("automountServiceAccountToken".into(), json!(false));
    }
    let managed = str_at(tpl, &["spec", "networkPolicyManagement"])
        .is_none_or(|m| m.is_empty() || m == "Managed");
    let no_policy = at(tpl, &["spec", "networkPolicy"]).is_none_or(Value::is_null);
    let no_dns = spec
        .get("dnsPolicy")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if managed && no_policy && no_dns {
        spec.insert("dnsPolicy".into(), json!("None"));
        spec.insert(
            "dnsConfig".into(),
            json!({ "nameservers": ["8.8.8.8", "1.1.1.1"] }),
        );
    }
}

/// Whether a Sandbox's blueprint matches the template's (pod spec with secure defaults, VCT
/// names and specs, `service`).
pub(crate) fn same_blueprint(tpl: &Value, sb: &Value) -> bool {
    let mut expected = at(tpl, &["spec", "podTemplate", "spec"])
        .cloned()
        .unwrap_or_else(|| json!({}));
    apply_secure_defaults(tpl, &mut expected);
    let actual = at(sb, &["spec", "podTemplate", "spec"]).cloned();
    if actual.as_ref() != Some(&expected) {
        return false;
    }
    let vcts = |v: &Value| -> Vec<(Value, Value)> {
        at(v, &["spec", "volumeClaimTemplates"])
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| {
                        (
                            at(x, &["metadata", "name"]).cloned().unwrap_or(Value::Null),
                            x.get("spec").cloned().unwrap_or(Value::Null),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    vcts(tpl) == vcts(sb) && at(tpl, &["spec", "service"]) == at(sb, &["spec", "service"])
}

fn is_stale(sb: &Value, tpl: &Value, tpl_name: &str, current_hash: &str) -> bool {
    if label(sb, TEMPLATE_REF_HASH_LABEL) != Some(name_hash(tpl_name).as_str()) {
        return true;
    }
    if controller_of(sb).is_none() {
        return !same_blueprint(tpl, sb);
    }
    let sb_hash = label(sb, TEMPLATE_HASH_LABEL).unwrap_or("");
    if !sb_hash.is_empty() && sb_hash == current_hash {
        return false;
    }
    !same_blueprint(tpl, sb)
}

/// Whether the member's Pod is PodScheduled False / Unschedulable.
fn pod_unschedulable(cluster: Cluster<'_>, sb: &Value) -> bool {
    let ns = meta_str(sb, "namespace").unwrap_or("");
    let pod_name = annotation(sb, POD_NAME_ANNOTATION)
        .filter(|n| !n.is_empty())
        .or_else(|| meta_str(sb, "name"))
        .unwrap_or("");
    let Some(pod) = cluster.api.get(Kind::Pod, ns, pod_name) else {
        return false;
    };
    if deleting(&pod) {
        return false;
    }
    at(&pod, &["status", "conditions"])
        .and_then(Value::as_array)
        .and_then(|a| super::find_condition(a, "PodScheduled"))
        .is_some_and(|c| {
            c.get("status").and_then(Value::as_str) == Some("False")
                && c.get("reason").and_then(Value::as_str) == Some("Unschedulable")
        })
}

/// Orders members for deletion: not Ready first, then newest first (ties by name, last first).
fn deletion_order(members: &mut [Arc<Value>]) {
    members.sort_by(|a, b| {
        let ready = |v: &Value| condition_true(v, "Ready");
        ready(a)
            .cmp(&ready(b))
            .then_with(|| created_at(b).cmp(&created_at(a)))
            .then_with(|| meta_str(b, "name").cmp(&meta_str(a, "name")))
    });
}

/// Reconciles one SandboxWarmPool.
pub(crate) fn reconcile(cluster: Cluster<'_>, ns: &str, name: &str) -> Requeue {
    let pool = cluster.api.get(Kind::SandboxWarmPool, ns, name)?;
    if deleting(&pool) {
        return None;
    }
    let hash = name_hash(name);
    let pool_uid = meta_str(&pool, "uid").unwrap_or("").to_string();
    let tpl_name = str_at(&pool, &["spec", "sandboxTemplateRef", "name"])
        .unwrap_or("")
        .to_string();
    let template = cluster.api.get(Kind::SandboxTemplate, ns, &tpl_name);
    let current_hash = template.as_deref().map(blueprint_hash).unwrap_or_default();
    let recreate = str_at(&pool, &["spec", "updateStrategy", "type"]) == Some("Recreate");
    let mut requeue: Requeue = None;
    let mut retry = false;
    let mut terminating = 0usize;
    let mut active: Vec<Arc<Value>> = Vec::new();
    let members = cluster
        .index
        .labeled_members(ns, &hash)
        .filter_map(|(sns, sname)| cluster.api.get(Kind::Sandbox, sns, sname))
        .filter(|s| label(s, WARM_POOL_LABEL) == Some(hash.as_str()));
    for sb in members {
        let sb_name = meta_str(&sb, "name").unwrap_or("").to_string();
        let ctrl = controller_of(&sb);
        let orphan = ctrl.is_none();
        let mine = ctrl.is_some_and(|r| owner_uid(r) == pool_uid);
        if deleting(&sb) {
            terminating += usize::from(mine);
            continue;
        }
        if !orphan && !mine {
            continue;
        }
        if let Some(tpl) = &template
            && (recreate || orphan)
            && is_stale(&sb, tpl, &tpl_name, &current_hash)
        {
            match delete(cluster, Kind::Sandbox, ns, &sb_name, &Delete::default()) {
                Ok(()) => terminating += usize::from(mine),
                Err(e) => {
                    tracing::debug!(pool = name, error = %e.message, "deleting a stale member");
                }
            }
            continue;
        }
        let needs_label = label(&sb, LAUNCH_TYPE_LABEL) != Some("warm");
        let sb = if orphan || needs_label {
            match modify(cluster, Kind::Sandbox, ns, &sb_name, Part::Main, |v| {
                if orphan {
                    set_controller_ref(v, Kind::SandboxWarmPool, &pool);
                }
                set_map_key(v, &["metadata", "labels"], LAUNCH_TYPE_LABEL, Some("warm"));
            }) {
                Ok(Some(v)) => v,
                Ok(None) => continue,
                Err(e) => {
                    retry |= e.is_conflict();
                    tracing::debug!(pool = name, error = %e, "adopting a member");
                    continue;
                }
            }
        } else {
            sb
        };
        active.push(sb);
    }
    let now = cluster.api.clock().now_utc();
    let grace = cluster.config.warm_pool_ready_grace;
    let mut healthy = Vec::new();
    let mut unschedulable = 0usize;
    for sb in active {
        let created = created_at(&sb);
        if condition_true(&sb, "Ready") || created.is_none() {
            healthy.push(sb);
            continue;
        }
        let age = created.map(|c| super::until(c, now)).unwrap_or_default();
        if age <= grace {
            let left = grace.saturating_sub(age) + GRACE_REQUEUE_SLACK;
            requeue = Some(requeue.map_or(left, |r| r.min(left)));
            healthy.push(sb);
            continue;
        }
        if pod_unschedulable(cluster, &sb) {
            unschedulable += 1;
            healthy.push(sb);
            continue;
        }
        let sb_name = meta_str(&sb, "name").unwrap_or("").to_string();
        match delete(cluster, Kind::Sandbox, ns, &sb_name, &Delete::default()) {
            Ok(()) => terminating += 1,
            Err(_) => healthy.push(sb),
        }
    }
    let desired = at(&pool, &["spec", "replicas"])
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0);
    let desired = usize::try_from(desired).unwrap_or(0);
    // Unschedulable members past the grace are held, and the pool says it is not progressing
    // (once per episode), re-checked every minute.
    let message = format!(
        "{unschedulable}/{desired} sandboxes are unschedulable past the {} readiness grace \
         period; holding them instead of replacing (replacements would be equally unschedulable)",
        crate::meta::go_duration(grace.as_secs())
    );
    cluster
        .recorders
        .warm_pool_progress(cluster.api, &pool, unschedulable > 0, &message);
    if unschedulable > 0 {
        requeue = Some(requeue.map_or(UNSCHEDULABLE_RECHECK, |r| r.min(UNSCHEDULABLE_RECHECK)));
    }
    let current = healthy.len();
    let ready = healthy
        .iter()
        .filter(|s| condition_true(s, "Ready"))
        .count();
    let mut status = Map::new();
    if current > 0 {
        status.insert("replicas".into(), json!(current));
    }
    if ready > 0 {
        status.insert("readyReplicas".into(), json!(ready));
    }
    status.insert(
        "selector".into(),
        json!(format!("{WARM_POOL_LABEL}={hash}")),
    );
    let gen_ = generation(&pool);
    if gen_ > 0 {
        status.insert("observedGeneration".into(), json!(gen_));
    }
    let status = Value::Object(status);
    if current + terminating < desired
        && let Some(tpl) = &template
    {
        let member = build_member(cluster, &pool, tpl, &tpl_name, &hash);
        let count = (desired - current - terminating).min(MAX_BATCH);
        for _ in 0..count {
            if let Err(e) = create(cluster, Kind::Sandbox, ns, member.clone()) {
                tracing::debug!(pool = name, error = %e.message, "creating a member");
                break;
            }
        }
    }
    if current > desired {
        deletion_order(&mut healthy);
        for sb in healthy.iter().take((current - desired).min(MAX_BATCH)) {
            let sb_name = meta_str(sb, "name").unwrap_or("");
            if let Err(e) = delete(cluster, Kind::Sandbox, ns, sb_name, &Delete::default()) {
                tracing::debug!(pool = name, error = %e.message, "deleting an excess member");
            }
        }
    }
    if pool.get("status") != Some(&status)
        && let Err(e) = modify(
            cluster,
            Kind::SandboxWarmPool,
            ns,
            name,
            Part::Status,
            |v| {
                if let Some(o) = v.as_object_mut() {
                    o.insert("status".into(), status.clone());
                }
            },
        )
    {
        retry |= e.is_conflict();
    }
    if retry {
        requeue = Some(super::CONFLICT_RETRY);
    }
    requeue
}

/// A new member of the pool, to create with `generateName`.
fn build_member(
    cluster: Cluster<'_>,
    pool: &Value,
    tpl: &Value,
    tpl_name: &str,
    hash: &str,
) -> Value {
    let pool_name = meta_str(pool, "name").unwrap_or("");
    let ref_hash = name_hash(tpl_name);
    let pt_hash = pod_template_hash(tpl);
    let bp_hash = blueprint_hash(tpl);
    let mut spec = blueprint(tpl);
    if let Some(labels) = obj_at(&mut spec, &["podTemplate", "metadata", "labels"]) {
        labels.insert(WARM_POOL_LABEL.into(), json!(hash));
        labels.insert(TEMPLATE_REF_HASH_LABEL.into(), json!(ref_hash));
        labels.insert(POD_TEMPLATE_HASH_LABEL.into(), json!(pt_hash));
        labels.insert(TEMPLATE_HASH_LABEL.into(), json!(bp_hash));
    }
    let has_evict = at(
        &spec,
        &["podTemplate", "metadata", "annotations", SAFE_TO_EVICT],
    )
    .is_some();
    if !has_evict
        && cluster.config.warm_pool_eviction
        && let Some(ann) = obj_at(&mut spec, &["podTemplate", "metadata", "annotations"])
    {
        ann.insert(SAFE_TO_EVICT.into(), json!("true"));
    }
    if let Some(pt) = obj_at(&mut spec, &["podTemplate"]) {
        let pod_spec = pt.entry("spec").or_insert_with(|| json!({}));
        apply_secure_defaults(tpl, pod_spec);
    }
    json!({
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": {
            "generateName": format!("{pool_name}-"),
            "labels": {
                WARM_POOL_LABEL: hash,
                TEMPLATE_REF_HASH_LABEL: ref_hash,
                LAUNCH_TYPE_LABEL: "warm",
                POD_TEMPLATE_HASH_LABEL: pt_hash,
                TEMPLATE_HASH_LABEL: bp_hash,
                CREATED_BY_LABEL: "controller",
            },
            "annotations": { TEMPLATE_REF_ANNOTATION: tpl_name },
            "ownerReferences": [controller_ref(Kind::SandboxWarmPool, pool)],
        },
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secure_defaults_set_public_dns_only_without_a_policy_or_dns_setting() {
        let tpl = json!({ "spec": {} });
        let mut spec = json!({ "containers": [] });
        apply_secure_defaults(&tpl, &mut spec);
        assert_eq!(spec["automountServiceAccountToken"], false);
        assert_eq!(spec["dnsPolicy"], "None");
        assert_eq!(
            spec["dnsConfig"]["nameservers"],
            json!(["8.8.8.8", "1.1.1.1"])
        );
        let with_policy = json!({ "spec": { "networkPolicy": {} } });
        let mut spec = json!({ "automountServiceAccountToken": true });
        apply_secure_defaults(&with_policy, &mut spec);
        assert_eq!(spec["automountServiceAccountToken"], true);
        assert!(spec.get("dnsPolicy").is_none());
    }

    #[test]
    fn template_hashes_do_not_depend_on_the_order_of_keys() {
        let a: Value = serde_json::from_str(
            r#"{"spec":{"podTemplate":{"spec":{"containers":[{"name":"c","image":"i"}]},"metadata":{}}}}"#,
        )
        .expect("json");
        let b: Value = serde_json::from_str(
            r#"{"spec":{"podTemplate":{"metadata":{},"spec":{"containers":[{"image":"i","name":"c"}]}}}}"#,
        )
        .expect("json");
        assert_ne!(a.to_string(), b.to_string());
        assert_eq!(blueprint_hash(&a), blueprint_hash(&b));
        assert_eq!(pod_template_hash(&a), pod_template_hash(&b));
    }

    #[test]
    fn a_member_built_from_the_template_is_not_stale() {
        let tpl = json!({ "metadata": { "name": "t" }, "spec": {
            "podTemplate": { "spec": { "containers": [ { "name": "c", "image": "i" } ] } },
        } });
        let mut sb = json!({ "metadata": { "labels": {
            TEMPLATE_REF_HASH_LABEL: name_hash("t"),
            TEMPLATE_HASH_LABEL: "old",
        }, "ownerReferences": [ { "uid": "p", "controller": true } ] }, "spec": blueprint(&tpl) });
        if let Some(spec) = obj_at(&mut sb, &["spec", "podTemplate", "spec"]) {
            let mut v = Value::Object(spec.clone());
            apply_secure_defaults(&tpl, &mut v);
            if let Value::Object(m) = v {
                *spec = m;
            }
        }
        assert!(!is_stale(&sb, &tpl, "t", &blueprint_hash(&tpl)));
        assert!(!is_stale(&sb, &tpl, "t", "new-hash"));
        sb["spec"]["service"] = json!(true);
        assert!(is_stale(&sb, &tpl, "t", "new-hash"));
        assert!(is_stale(&sb, &tpl, "other", "new-hash"));
    }

    #[test]
    fn excess_members_are_deleted_not_ready_first_then_newest_first() {
        let m = |name: &str, created: &str, ready: bool| {
            Arc::new(json!({
                "metadata": { "name": name, "creationTimestamp": created },
                "status": { "conditions": [ { "type": "Ready", "status": if ready { "True" } else { "False" } } ] },
            }))
        };
        let mut members = vec![
            m("old-ready", "2026-01-01T00:00:00Z", true),
            m("new-ready", "2026-01-01T00:00:05Z", true),
            m("old-unready", "2026-01-01T00:00:01Z", false),
            m("new-unready", "2026-01-01T00:00:04Z", false),
        ];
        deletion_order(&mut members);
        let names: Vec<&str> = members.iter().filter_map(|v| meta_str(v, "name")).collect();
        assert_eq!(
            names,
            ["new-unready", "old-unready", "new-ready", "old-ready"]
        );
    }
}
