//! The `LimitRanger` admission plugin (plugin/pkg/admission/limitranger) over the LimitRanges
//! of the pod's namespace.
//!
//! Mutating, on a pod's create: each `Container` item's `default` limits and
//! `defaultRequest` requests are set on every container and init container that lacks them, and
//! the pod is annotated `kubernetes.io/limit-ranger` with what was set. Validating, once the
//! pod has passed its own validation: each container against a `Container` item's `min`, `max`
//! and `maxLimitRequestRatio`, the pod's total against a `Pod` item's, and a claim's storage
//! request against a `PersistentVolumeClaim` item's `min` and `max`. A refusal is the API
//! server's 403 with every broken constraint:
//! `pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2`.

use super::Lookup;
use crate::defaults::quantity::{Amount, ResourceList, read_list};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The annotation naming what the plugin set.
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The LimitRanges of namespace `ns`.
fn ranges(cluster: &dyn Lookup, ns: &str) -> Vec<Arc<Value>> {
    cluster
        .list("", "limitranges")
        .into_iter()
        .filter(|r| {
            r.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
                && r.pointer("/metadata/deletionTimestamp").is_none()
        })
        .collect()
}

/// The items of a LimitRange.
fn items(range: &Value) -> impl Iterator<Item = &Value> {
    range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn item_type(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or("")
}

/// Sets the LimitRanges' default requests and limits on a new pod's containers.
pub(super) fn admit(cluster: &dyn Lookup, ns: &str, pod: &mut Value) {
    let ranges = ranges(cluster, ns);
    if ranges.is_empty() {
        return;
    }
    // The pod's own defaults (a limit without a request requests the limit) come first, as
    // decoding applies them before any admission plugin sees the pod.
    if let Some(spec) = super::spec_mut(pod) {
        crate::defaults::requests_from_limits(spec);
    }
    for range in &ranges {
        let mut limits = Map::new();
        let mut requests = Map::new();
        for item in items(range).filter(|i| item_type(i) == "Container") {
            for (key, into) in [("defaultRequest", &mut requests), ("default", &mut limits)] {
                for (k, v) in item
                    .get(key)
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    into.insert(k.clone(), v.clone());
                }
            }
        }
        merge(pod, &limits, &requests);
    }
}

/// Sets `limits` and `requests` on the containers that lack them and records what was set.
fn merge(pod: &mut Value, limits: &Map<String, Value>, requests: &Map<String, Value>) {
    if limits.is_empty() && requests.is_empty() {
        return;
    }
    let mut notes: Vec<String> = Vec::new();
    let Some(spec) = super::spec_mut(pod) else {
        return;
    };
    for (key, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(Value::Array(list)) = spec.get_mut(key) else {
            continue;
        };
        for c in list.iter_mut().filter_map(Value::as_object_mut) {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let resources = c.entry("resources").or_insert_with(|| json!({}));
            if !resources.is_object() {
                *resources = json!({});
            }
            let Some(resources) = resources.as_object_mut() else {
                continue;
            };
            let mut fill = |field: &str, defaults: &Map<String, Value>| -> Vec<String> {
                let list = resources.entry(field).or_insert_with(|| json!({}));
                if !list.is_object() {
                    *list = json!({});
                }
                let mut set = Vec::new();
                if let Some(list) = list.as_object_mut() {
                    for (k, v) in defaults {
                        if !list.contains_key(k) {
                            list.insert(k.clone(), v.clone());
                            set.push(k.clone());
                        }
                    }
                }
                set.sort();
                set
            };
            let set_limits = fill("limits", limits);
            let set_requests = fill("requests", requests);
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {what} {name}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    if let Some(md) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = md.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        if let Some(a) = annotations.as_object_mut() {
            a.insert(
                ANNOTATION.into(),
                json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
            );
        }
    }
}

/// Checks a pod (`pod` true) or a claim against the LimitRanges of `ns`; the reason for a
/// refusal otherwise, every broken constraint of the first range that refuses.
pub(super) fn validate(
    cluster: &dyn Lookup,
    ns: &str,
    obj: &Value,
    pod: bool,
) -> Result<(), String> {
    for range in ranges(cluster, ns) {
        let mut errors = Vec::new();
        for item in items(&range) {
            let kind = item_type(item);
            let list = |k: &str| read_list(item.get(k));
            let (min, max, ratio) = (list("min"), list("max"), list("maxLimitRequestRatio"));
            match (pod, kind) {
                (true, "Container") => {
                    for key in ["containers", "initContainers"] {
                        for c in obj
                            .pointer(&format!("/spec/{key}"))
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                        {
                            let requests = read_list(c.pointer("/resources/requests"));
                            let limits = read_list(c.pointer("/resources/limits"));
                            check(kind, &min, &max, &ratio, &requests, &limits, &mut errors);
                        }
                    }
                }
                (true, "Pod") => {
                    let (requests, limits) = pod_totals(obj);
                    check(kind, &min, &max, &ratio, &requests, &limits, &mut errors);
                }
                (false, "PersistentVolumeClaim") => {
                    let requests = read_list(obj.pointer("/spec/resources/requests"));
                    for (k, enforced) in &min {
                        if let Some(e) =
                            min_constraint(kind, k, *enforced, &requests, &ResourceList::new())
                        {
                            errors.push(e);
                        }
                    }
                    for (k, enforced) in &max {
                        let e = match requests.get(k) {
                            None => Some(format!(
                                "maximum {k} usage per {kind} is {}.  No request is specified",
                                enforced.text()
                            )),
                            Some(r) if r.cmp_value(*enforced).is_gt() => Some(format!(
                                "maximum {k} usage per {kind} is {}, but request is {}",
                                enforced.text(),
                                r.text()
                            )),
                            Some(_) => None,
                        };
                        errors.extend(e);
                    }
                }
                _ => {}
            }
        }
        if !errors.is_empty() {
            return Err(aggregate(errors));
        }
    }
    Ok(())
}

/// The message of several errors, as `utilerrors.NewAggregate` prints them: one alone, or
/// all in brackets (duplicates once).
fn aggregate(errors: Vec<String>) -> String {
    let mut seen = std::collections::BTreeSet::new();
    let unique: Vec<String> = errors
        .into_iter()
        .filter(|e| seen.insert(e.clone()))
        .collect();
    match unique.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A pod's requests and limits: the sum over its containers, or any init container's when
/// larger (`podRequests`/`podLimits`). A resource some container does not set is left out
/// of the sum.
fn pod_totals(pod: &Value) -> (ResourceList, ResourceList) {
    let total = |key: &str| {
        let lists: Vec<ResourceList> = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| read_list(c.pointer(&format!("/resources/{key}"))))
            .collect();
        let mut sum = ResourceList::new();
        let names: std::collections::BTreeSet<&String> =
            lists.iter().flat_map(|l| l.keys()).collect();
        for name in names {
            if lists.iter().all(|l| l.contains_key(name)) {
                let s = lists
                    .iter()
                    .filter_map(|l| l.get(name))
                    .fold(Amount::zero(), |a, b| a.plus(*b));
                sum.insert(name.clone(), s);
            }
        }
        for c in pod
            .pointer("/spec/initContainers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for (name, v) in read_list(c.pointer(&format!("/resources/{key}"))) {
                let bigger = sum.get(&name).is_none_or(|s| v.cmp_value(*s).is_gt());
                if bigger && sum.contains_key(&name) {
                    sum.insert(name, v);
                }
            }
        }
        sum
    };
    (total("requests"), total("limits"))
}

/// Checks one container's (or the pod's) requests and limits against an item's bounds.
fn check(
    kind: &str,
    min: &ResourceList,
    max: &ResourceList,
    ratio: &ResourceList,
    requests: &ResourceList,
    limits: &ResourceList,
    errors: &mut Vec<String>,
) {
    for (k, enforced) in min {
        errors.extend(min_constraint(kind, k, *enforced, requests, limits));
    }
    for (k, enforced) in max {
        let e = match (limits.get(k), requests.get(k)) {
            (None, _) => Some(format!(
                "maximum {k} usage per {kind} is {}.  No limit is specified",
                enforced.text()
            )),
            (Some(l), _) if l.cmp_value(*enforced).is_gt() => Some(format!(
                "maximum {k} usage per {kind} is {}, but limit is {}",
                enforced.text(),
                l.text()
            )),
            (_, Some(r)) if r.cmp_value(*enforced).is_gt() => Some(format!(
                "maximum {k} usage per {kind} is {}, but request is {}",
                enforced.text(),
                r.text()
            )),
            _ => None,
        };
        errors.extend(e);
    }
    for (k, enforced) in ratio {
        let request = requests.get(k).filter(|r| r.value.sign() != 0);
        let limit = limits.get(k).filter(|l| l.value.sign() != 0);
        let e = match (request, limit) {
            (None, _) => Some(format!(
                "{k} max limit to request ratio per {kind} is {}, but no request is specified or request is 0",
                enforced.text()
            )),
            (_, None) => Some(format!(
                "{k} max limit to request ratio per {kind} is {}, but no limit is specified or limit is 0",
                enforced.text()
            )),
            (Some(r), Some(l)) => {
                let observed = l.value.approximate() / r.value.approximate();
                (observed > enforced.value.approximate()).then(|| {
                    format!(
                        "{k} max limit to request ratio per {kind} is {}, but provided ratio is {observed:.6}",
                        enforced.text()
                    )
                })
            }
        };
        errors.extend(e);
    }
}

fn min_constraint(
    kind: &str,
    k: &str,
    enforced: Amount,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    match (requests.get(k), limits.get(k)) {
        (None, _) => Some(format!(
            "minimum {k} usage per {kind} is {}.  No request is specified",
            enforced.text()
        )),
        (Some(r), _) if r.cmp_value(enforced).is_lt() => Some(format!(
            "minimum {k} usage per {kind} is {}, but request is {}",
            enforced.text(),
            r.text()
        )),
        (_, Some(l)) if l.cmp_value(enforced).is_lt() => Some(format!(
            "minimum {k} usage per {kind} is {}, but limit is {}",
            enforced.text(),
            l.text()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(v: Value) -> ResourceList {
        read_list(Some(&v))
    }

    #[test]
    fn each_broken_bound_is_named_and_several_are_bracketed() {
        let mut errors = Vec::new();
        check(
            "Container",
            &list(json!({ "memory": "64Mi" })),
            &list(json!({ "cpu": "1" })),
            &list(json!({ "cpu": "2" })),
            &list(json!({ "cpu": "500m", "memory": "32Mi" })),
            &list(json!({ "cpu": "2" })),
            &mut errors,
        );
        assert_eq!(
            aggregate(errors),
            "[minimum memory usage per Container is 64Mi, but request is 32Mi, maximum cpu usage per Container is 1, but limit is 2, cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000]"
        );
    }
}
