//! ResourceQuotas: what an object uses (the quota evaluators of pkg/quota/v1/evaluator/core
//! and the generic object count), the `ResourceQuota` admission plugin's check of a create
//! (plugin/pkg/admission/resourcequota) and the usage the quota controller
//! (pkg/controller/resourcequota) writes into `status`.
//!
//! Pods use `pods`, `count/pods`, their requests and limits (`requests.cpu`, `limits.memory`,
//! and `cpu`/`memory` for the requests) summed over their containers (an init container's
//! when larger) with the pod's overhead; a pod in a terminal phase uses only `count/pods`.
//! Services use `services`, `services.loadbalancers` and `services.nodeports`; claims
//! `persistentvolumeclaims`, `requests.storage` and their class's
//! `<class>.storageclass.storage.k8s.io/...`; every object its `count/<resource>[.<group>]`
//! and, for secrets, config maps, replication controllers and quotas, their plain name.
//! The `Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort` and `PriorityClass`
//! scopes select pods; a scoped quota tracks nothing else.

use super::Lookup;
use crate::defaults::quantity::{Amount, ResourceList, pretty, read_list, write_list};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The resources whose absence from a container the pod evaluator refuses when a quota
/// tracks them (its `validationSet`).
const MUST_SPECIFY: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// The group and resource whose objects use the quota resource `name`.
fn source(name: &str) -> Option<(String, String)> {
    if let Some(rest) = name.strip_prefix("count/") {
        let (resource, group) = rest.split_once('.').unwrap_or((rest, ""));
        return Some((group.to_string(), resource.to_string()));
    }
    let core = |r: &str| Some((String::new(), r.to_string()));
    match name {
        "pods" | "cpu" | "memory" | "ephemeral-storage" => core("pods"),
        n if n.starts_with("requests.") && n != "requests.storage" => core("pods"),
        n if n.starts_with("limits.") || n.starts_with("hugepages-") => core("pods"),
        "services" | "services.loadbalancers" | "services.nodeports" => core("services"),
        "persistentvolumeclaims" | "requests.storage" => core("persistentvolumeclaims"),
        n if n.contains(".storageclass.storage.k8s.io/") => core("persistentvolumeclaims"),
        "secrets" | "configmaps" | "replicationcontrollers" | "resourcequotas" => core(name),
        _ => None,
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// What one object of `group`/`plural` uses.
pub(crate) fn usage(group: &str, plural: &str, obj: &Value) -> ResourceList {
    let mut out = ResourceList::new();
    let one = Amount::of_int(1);
    let count = if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    };
    out.insert(count, one);
    if !group.is_empty() {
        return out;
    }
    match plural {
        "pods" => pod_usage(obj, &mut out),
        "services" => {
            out.insert("services".into(), one);
            let kind = text(obj, "/spec/type");
            let ports = obj
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if kind == "LoadBalancer" {
                out.insert("services.loadbalancers".into(), one);
            }
            if matches!(kind, "LoadBalancer" | "NodePort") {
                let n = i64::try_from(ports).unwrap_or(i64::MAX);
                out.insert("services.nodeports".into(), Amount::of_int(n));
            }
        }
        "persistentvolumeclaims" => {
            out.insert("persistentvolumeclaims".into(), one);
            let class = text(obj, "/spec/storageClassName");
            let prefix = format!("{class}.storageclass.storage.k8s.io/");
            if !class.is_empty() {
                out.insert(format!("{prefix}persistentvolumeclaims"), one);
            }
            if let Some(Ok(storage)) = obj
                .pointer("/spec/resources/requests/storage")
                .map(Amount::read)
            {
                out.insert("requests.storage".into(), storage);
                if !class.is_empty() {
                    out.insert(format!("{prefix}requests.storage"), storage);
                }
            }
        }
        "secrets" | "configmaps" | "replicationcontrollers" | "resourcequotas" => {
            out.insert(plural.to_string(), one);
        }
        _ => {}
    }
    out
}

/// A pod's requests or limits (`key`): the containers' sum, an init container's when
/// larger, and the pod's overhead.
fn pod_totals(pod: &Value, key: &str) -> ResourceList {
    let list = |c: &Value| read_list(c.pointer(&format!("/resources/{key}")));
    let mut sum = ResourceList::new();
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in list(c) {
            let total = sum.get(&k).map_or(v, |s| s.plus(v));
            sum.insert(k, total);
        }
    }
    for c in pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in list(c) {
            let larger = sum.get(&k).map_or(v, |s| s.max(v));
            sum.insert(k, larger);
        }
    }
    for (k, v) in read_list(pod.pointer("/spec/overhead")) {
        if let Some(s) = sum.get(&k).copied() {
            sum.insert(k, s.plus(v));
        }
    }
    sum
}

fn pod_usage(pod: &Value, out: &mut ResourceList) {
    if matches!(text(pod, "/status/phase"), "Succeeded" | "Failed") {
        return;
    }
    out.insert("pods".into(), Amount::of_int(1));
    for (k, v) in pod_totals(pod, "requests") {
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage")
            || k.starts_with("hugepages-")
        {
            out.insert(k.clone(), v);
            out.insert(format!("requests.{k}"), v);
        } else if k.contains('/') {
            out.insert(format!("requests.{k}"), v);
        }
    }
    for (k, v) in pod_totals(pod, "limits") {
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            out.insert(format!("limits.{k}"), v);
        }
    }
}

/// Whether a pod is in a scope, with the selector's operator and values.
fn pod_in_scope(pod: &Value, scope: &str, operator: &str, values: &[String]) -> bool {
    match scope {
        "Terminating" => pod
            .pointer("/spec/activeDeadlineSeconds")
            .and_then(Value::as_i64)
            .is_some_and(|s| s >= 0),
        "NotTerminating" => !pod_in_scope(pod, "Terminating", operator, values),
        "BestEffort" => {
            crate::defaults::qos_class(pod.get("spec").unwrap_or(&Value::Null)) == "BestEffort"
        }
        "NotBestEffort" => !pod_in_scope(pod, "BestEffort", operator, values),
        "PriorityClass" => {
            let class = text(pod, "/spec/priorityClassName");
            match operator {
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                "In" => values.iter().any(|v| v == class),
                "NotIn" => !values.iter().any(|v| v == class),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether `quota` applies to the object: its scopes select it (only pods have scopes).
fn in_scopes(quota: &Value, group: &str, plural: &str, obj: &Value) -> bool {
    let scopes = crate::defaults::quota_scopes(quota);
    if scopes.is_empty() {
        return true;
    }
    group.is_empty()
        && plural == "pods"
        && scopes
            .iter()
            .all(|(s, op, values)| pod_in_scope(obj, s, op, values))
}

/// The quotas of namespace `ns` that are not being deleted.
pub(crate) fn quotas(cluster: &dyn Lookup, ns: &str) -> Vec<Arc<Value>> {
    cluster
        .list("", "resourcequotas")
        .into_iter()
        .filter(|q| {
            text(q, "/metadata/namespace") == ns
                && q.pointer("/metadata/deletionTimestamp").is_none()
        })
        .collect()
}

/// A quota's `status`: `hard` from its spec and `used`, for each resource it limits, the sum
/// of what the objects it applies to use, as the quota controller computes it.
pub(crate) fn status(cluster: &dyn Lookup, ns: &str, quota: &Value) -> Value {
    let hard = read_list(quota.pointer("/spec/hard"));
    let mut used: ResourceList = hard.keys().map(|k| (k.clone(), Amount::zero())).collect();
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for name in hard.keys() {
        let Some((group, plural)) = source(name) else {
            continue;
        };
        if !seen.insert((group.clone(), plural.clone())) {
            continue;
        }
        for obj in cluster.list(&group, &plural) {
            if text(&obj, "/metadata/namespace") != ns || !in_scopes(quota, &group, &plural, &obj) {
                continue;
            }
            for (k, v) in usage(&group, &plural, &obj) {
                if let Some(u) = used.get(&k).copied() {
                    used.insert(k, u.plus(v));
                }
            }
        }
    }
    json!({ "hard": write_list(&hard), "used": write_list(&used) })
}

/// The `must specify` refusal of a pod whose containers omit a resource the quota tracks.
fn pod_constraints(pod: &Value, tracked: &BTreeSet<String>) -> Result<(), String> {
    let required: BTreeSet<&str> = tracked
        .iter()
        .map(String::as_str)
        .filter(|n| MUST_SPECIFY.contains(n))
        .collect();
    if required.is_empty() {
        return Ok(());
    }
    let mut missing: std::collections::BTreeMap<&str, BTreeSet<String>> = Default::default();
    for c in ["containers", "initContainers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
    {
        let mut single = json!({ "spec": { "containers": [c] } });
        if let Some(o) = single.as_object_mut() {
            o.insert("status".into(), json!({}));
        }
        let has = usage("", "pods", &single);
        for r in &required {
            if !has.contains_key(*r) {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                missing.entry(r).or_default().insert(name.to_string());
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    Err(format!("must specify {}", parts.join("; ")))
}

/// The `ResourceQuota` admission on a create of `obj` (`group`/`plural`) into `ns`: every
/// quota that applies and tracks what it uses must have room for it; the reason otherwise.
/// The quotas' usage is exact (the store recomputes it with every write), so a create
/// checked here and stored in the same hold of the store's lock is charged atomically.
pub(crate) fn check(
    cluster: &dyn Lookup,
    group: &str,
    plural: &str,
    ns: &str,
    obj: &Value,
) -> Result<(), String> {
    let quotas = quotas(cluster, ns);
    if quotas.is_empty() {
        return Ok(());
    }
    let delta = usage(group, plural, obj);
    for quota in quotas {
        let name = text(&quota, "/metadata/name");
        if !in_scopes(&quota, group, plural, obj) {
            continue;
        }
        let hard = read_list(
            quota
                .pointer("/status/hard")
                .or(quota.pointer("/spec/hard")),
        );
        let tracked: BTreeSet<String> = hard
            .keys()
            .filter(|k| source(k).is_some_and(|(g, p)| g == group && p == plural))
            .cloned()
            .collect();
        if tracked.is_empty() {
            continue;
        }
        if group.is_empty() && plural == "pods" {
            pod_constraints(obj, &tracked).map_err(|why| format!("failed quota: {name}: {why}"))?;
        }
        let used = read_list(quota.pointer("/status/used"));
        let requested: ResourceList = delta
            .iter()
            .filter(|(k, v)| tracked.contains(*k) && v.value.sign() != 0)
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let mut exceeded = BTreeSet::new();
        for (k, r) in &requested {
            let now = used.get(k).copied().unwrap_or_else(Amount::zero);
            if let Some(limit) = hard.get(k)
                && now.plus(*r).cmp_value(*limit).is_gt()
            {
                exceeded.insert(k.clone());
            }
        }
        if !exceeded.is_empty() {
            let mask = |l: &ResourceList| -> ResourceList {
                exceeded
                    .iter()
                    .map(|k| (k.clone(), l.get(k).copied().unwrap_or_else(Amount::zero)))
                    .collect()
            };
            return Err(format!(
                "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                pretty(&mask(&requested)),
                pretty(&mask(&used)),
                pretty(&mask(&hard))
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_uses_its_summed_requests_and_limits_and_an_ended_one_only_its_count() {
        let pod = json!({ "spec": { "containers": [
            { "resources": { "requests": { "cpu": "250m", "memory": "64Mi" }, "limits": { "cpu": "1" } } },
            { "resources": { "requests": { "cpu": "500m", "memory": "64Mi" } } } ] } });
        let used = usage("", "pods", &pod);
        assert_eq!(
            used.get("requests.cpu").map(|a| a.text()),
            Some("750m".into())
        );
        assert_eq!(used.get("memory").map(|a| a.text()), Some("128Mi".into()));
        assert_eq!(used.get("limits.cpu").map(|a| a.text()), Some("1".into()));
        assert_eq!(used.get("pods").map(|a| a.text()), Some("1".into()));
        let mut done = pod.clone();
        done["status"] = json!({ "phase": "Succeeded" });
        let used = usage("", "pods", &done);
        assert_eq!(used.keys().collect::<Vec<_>>(), vec!["count/pods"]);
    }

    #[test]
    fn count_resources_name_their_group() {
        assert_eq!(
            source("count/deployments.apps"),
            Some(("apps".into(), "deployments".into()))
        );
        assert_eq!(source("count/pods"), Some((String::new(), "pods".into())));
        assert_eq!(
            source("gold.storageclass.storage.k8s.io/requests.storage"),
            Some((String::new(), "persistentvolumeclaims".into()))
        );
    }
}
