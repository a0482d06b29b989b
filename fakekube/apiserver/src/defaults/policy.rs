//! The defaults and validation of the core policy kinds: LimitRanges (`SetDefaults_LimitRangeItem`
//! and `ValidateLimitRange`), ResourceQuotas (`ValidateResourceQuota`) and PodTemplates
//! (`ValidatePodTemplate`), as pkg/apis/core defines them.

use super::quantity::{Amount, ResourceList, read_list};
use super::{pod_spec, required};
use crate::status::Cause;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

fn invalid(field: String, value: &str, why: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: \"{value}\": {why}"),
        field: Some(field),
    }
}

fn forbidden(field: String, why: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {why}"),
        field: Some(field),
    }
}

fn not_supported(field: String, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    Cause {
        reason: "FieldValueNotSupported".into(),
        message: format!(
            "Unsupported value: \"{value}\": supported values: {}",
            list.join(", ")
        ),
        field: Some(field),
    }
}

/// The text of a quantity as the request wrote it, for messages about it.
fn written(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Checks that every value of the resource list at `at` is a quantity (the API server's
/// decoding refuses the body otherwise); returns the list read.
fn quantities(list: Option<&Value>, at: &str, causes: &mut Vec<Cause>) -> ResourceList {
    if let Some(map) = list.and_then(Value::as_object) {
        for (k, v) in map {
            if let Err(why) = Amount::read(v) {
                causes.push(invalid(format!("{at}[{k}]"), &written(v), &why));
            }
        }
    }
    read_list(list)
}

/// Whether `name` is a resource a container may request (`validateContainerResourceName`):
/// the standard ones, huge pages, or an extended resource named with a domain.
fn container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage")
        || name.starts_with("hugepages-")
        || (name.contains('/')
            && !name.starts_with("requests.")
            && !name.starts_with("kubernetes.io/"))
}

/// The limit types a LimitRange item may have unqualified (`IsStandardLimitRangeType`).
const LIMIT_TYPES: &[&str] = &["Pod", "Container", "PersistentVolumeClaim"];

/// Defaults a LimitRange's items as `SetDefaults_LimitRangeItem` does: a `Container` item's
/// `default` limit comes from its `max`, its `defaultRequest` from its `default`, then from
/// its `min`.
fn default_limit_range(obj: &mut Value) {
    let Some(items) = obj
        .pointer_mut("/spec/limits")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for item in items.iter_mut().filter_map(Value::as_object_mut) {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let list = |item: &Map<String, Value>, k: &str| {
            item.get(k)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let (max, min) = (list(item, "max"), list(item, "min"));
        let mut default = list(item, "default");
        for (k, v) in &max {
            default.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let mut default_request = list(item, "defaultRequest");
        for (k, v) in default.iter().chain(min.iter()) {
            default_request
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        if !default.is_empty() {
            item.insert("default".into(), Value::Object(default));
        }
        if !default_request.is_empty() {
            item.insert("defaultRequest".into(), Value::Object(default_request));
        }
    }
}

/// Defaults and checks a LimitRange.
pub(super) fn limit_range(obj: &mut Value) -> Vec<Cause> {
    default_limit_range(obj);
    let mut causes = Vec::new();
    let Some(items) = obj.pointer("/spec/limits").and_then(Value::as_array) else {
        return causes;
    };
    let mut types = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("spec.limits[{i}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        if kind.is_empty() {
            causes.push(invalid(
                format!("{at}.type"),
                kind,
                "name part must be non-empty",
            ));
        } else if !kind.contains('/') && !LIMIT_TYPES.contains(&kind) {
            causes.push(invalid(
                format!("{at}.type"),
                kind,
                "must be a standard limit type or fully qualified",
            ));
        }
        if !types.insert(kind.to_string()) {
            causes.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!("Duplicate value: \"{kind}\""),
                field: Some(format!("{at}.type")),
            });
        }
        let pod_or_container = matches!(kind, "Pod" | "Container");
        let read = |key: &str, causes: &mut Vec<Cause>| {
            let list = quantities(item.get(key), &format!("{at}.{key}"), causes);
            for name in list.keys() {
                if pod_or_container && !container_resource(name) {
                    causes.push(invalid(
                        format!("{at}.{key}[{name}]"),
                        name,
                        "must be a standard resource for containers",
                    ));
                }
            }
            list
        };
        let max = read("max", &mut causes);
        let min = read("min", &mut causes);
        let (default, default_request) = if kind == "Pod" {
            for key in ["default", "defaultRequest"] {
                if item
                    .get(key)
                    .and_then(Value::as_object)
                    .is_some_and(|m| !m.is_empty())
                {
                    causes.push(forbidden(
                        format!("{at}.{key}"),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
            (ResourceList::new(), ResourceList::new())
        } else {
            (
                read("default", &mut causes),
                read("defaultRequest", &mut causes),
            )
        };
        let ratio = read("maxLimitRequestRatio", &mut causes);
        if kind == "PersistentVolumeClaim"
            && !min.contains_key("storage")
            && !max.contains_key("storage")
        {
            causes.push(Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value: either minimum or maximum storage value is required, but neither was provided".into(),
                field: Some(format!("{at}.limits")),
            });
        }
        let keys: BTreeSet<&String> = max
            .keys()
            .chain(min.keys())
            .chain(default.keys())
            .chain(default_request.keys())
            .chain(ratio.keys())
            .collect();
        for k in keys {
            let (lo, hi, def, req, r) = (
                min.get(k),
                max.get(k),
                default.get(k),
                default_request.get(k),
                ratio.get(k),
            );
            let greater = |a: Option<&Amount>, b: Option<&Amount>| match (a, b) {
                (Some(a), Some(b)) => a.cmp_value(*b).is_gt(),
                _ => false,
            };
            let mut check = |bad: bool, field: &str, shown: Option<&Amount>, why: String| {
                if bad && let Some(shown) = shown {
                    causes.push(invalid(format!("{at}.{field}[{k}]"), &shown.text(), &why));
                }
            };
            let t = |a: Option<&Amount>| a.map(|a| a.text()).unwrap_or_default();
            check(
                greater(lo, hi),
                "min",
                lo,
                format!("min value {} is greater than max value {}", t(lo), t(hi)),
            );
            check(
                greater(lo, req),
                "defaultRequest",
                req,
                format!(
                    "min value {} is greater than default request value {}",
                    t(lo),
                    t(req)
                ),
            );
            check(
                greater(req, hi),
                "defaultRequest",
                req,
                format!(
                    "default request value {} is greater than max value {}",
                    t(req),
                    t(hi)
                ),
            );
            check(
                greater(req, def),
                "defaultRequest",
                req,
                format!(
                    "default request value {} is greater than default limit value {}",
                    t(req),
                    t(def)
                ),
            );
            check(
                greater(lo, def),
                "default",
                lo,
                format!(
                    "min value {} is greater than default value {}",
                    t(lo),
                    t(def)
                ),
            );
            check(
                greater(def, hi),
                "default",
                hi,
                format!(
                    "default value {} is greater than max value {}",
                    t(def),
                    t(hi)
                ),
            );
            if let Some(r) = r {
                if r.cmp_value(Amount::of_int(1)).is_lt() {
                    check(
                        true,
                        "maxLimitRequestRatio",
                        Some(r),
                        format!("ratio {} is less than 1", r.text()),
                    );
                }
                if let (Some(lo), Some(hi)) = (lo, hi)
                    && lo.value.sign() > 0
                {
                    let bound = hi.value.approximate() / lo.value.approximate();
                    if r.value.approximate() > bound {
                        check(
                            true,
                            "maxLimitRequestRatio",
                            Some(r),
                            format!("ratio {} is greater than max/min = {bound:.6}", r.text()),
                        );
                    }
                }
            }
            let overcommit = !(k.starts_with("hugepages-") || k.contains('/'));
            if !overcommit
                && let (Some(d), Some(q)) = (def, req)
                && d.cmp_value(*q).is_ne()
            {
                check(
                    true,
                    "defaultRequest",
                    Some(q),
                    format!(
                        "default value {} must equal to defaultRequest value {} in {k}",
                        d.text(),
                        q.text()
                    ),
                );
            }
        }
    }
    causes
}

/// The quota scopes a ResourceQuota may name.
const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// The resources the BestEffort and NotBestEffort scopes may track, and the other scopes'.
const BEST_EFFORT_RESOURCES: &[&str] = &["pods"];
const TERMINATING_RESOURCES: &[&str] = &[
    "pods",
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
    "ephemeral-storage",
    "requests.ephemeral-storage",
    "limits.ephemeral-storage",
];

/// Whether `name` is a resource a quota may track (`ValidateResourceQuotaResourceName`): a
/// standard one, an object count, or a name qualified with a domain.
fn quota_resource(name: &str) -> bool {
    const STANDARD: &[&str] = &[
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
        "cpu",
        "memory",
        "ephemeral-storage",
        "storage",
        "requests.cpu",
        "requests.memory",
        "requests.storage",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
    ];
    STANDARD.contains(&name)
        || name.starts_with("count/")
        || name.starts_with("requests.hugepages-")
        || name.contains('/')
}

/// The scopes a quota names, in `spec.scopes` and `spec.scopeSelector`.
pub(crate) fn quota_scopes(obj: &Value) -> Vec<(String, String, Vec<String>)> {
    let mut out: Vec<(String, String, Vec<String>)> = obj
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| (s.to_string(), "Exists".to_string(), Vec::new()))
        .collect();
    for e in obj
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        out.push((text("scopeName"), text("operator"), values));
    }
    out
}

/// Checks a ResourceQuota (`ValidateResourceQuota`): its hard limits are quantities of
/// resources a quota tracks, not negative; its scopes are known, do not contradict each
/// other, and track only resources they can.
pub(super) fn resource_quota(obj: &mut Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let hard = quantities(obj.pointer("/spec/hard"), "spec.hard", &mut causes);
    for (name, amount) in &hard {
        if !quota_resource(name) {
            causes.push(invalid(
                format!("spec.hard[{name}]"),
                name,
                "must be a standard resource for quota",
            ));
        }
        if amount.value.sign() < 0 {
            causes.push(invalid(
                format!("spec.hard[{name}]"),
                &amount.text(),
                "must be greater than or equal to 0",
            ));
        }
    }
    let scopes = quota_scopes(obj);
    let names: BTreeSet<&str> = scopes.iter().map(|(s, _, _)| s.as_str()).collect();
    for (i, (scope, operator, values)) in scopes.iter().enumerate() {
        let field = if obj
            .pointer("/spec/scopes")
            .and_then(Value::as_array)
            .is_some_and(|l| i < l.len())
        {
            "spec.scopes".to_string()
        } else {
            "spec.scopeSelector.matchExpressions".to_string()
        };
        if !SCOPES.contains(&scope.as_str()) {
            causes.push(not_supported(field.clone(), scope, SCOPES));
            continue;
        }
        if !matches!(
            operator.as_str(),
            "In" | "NotIn" | "Exists" | "DoesNotExist"
        ) {
            causes.push(not_supported(
                format!("{field}.operator"),
                operator,
                &["In", "NotIn", "Exists", "DoesNotExist"],
            ));
        }
        let needs_values = matches!(operator.as_str(), "In" | "NotIn");
        if needs_values && values.is_empty() {
            causes.push(required(&format!("{field}.values")));
        }
        let allowed: &[&str] = match scope.as_str() {
            "BestEffort" | "NotBestEffort" => BEST_EFFORT_RESOURCES,
            "Terminating" | "NotTerminating" => TERMINATING_RESOURCES,
            _ => &[],
        };
        if !allowed.is_empty() {
            for name in hard.keys() {
                if !allowed.contains(&name.as_str()) {
                    causes.push(invalid(
                        "spec.hard".into(),
                        name,
                        "unsupported scope applied to resource",
                    ));
                }
            }
        }
    }
    for (a, b) in [
        ("Terminating", "NotTerminating"),
        ("BestEffort", "NotBestEffort"),
    ] {
        if names.contains(a) && names.contains(b) {
            causes.push(invalid(
                "spec.scopes".into(),
                &format!("[{a} {b}]"),
                "conflicting scopes",
            ));
        }
    }
    causes
}

/// Defaults and checks a PodTemplate: its `template` is a pod template whose spec is
/// defaulted and checked as a pod's.
pub(super) fn pod_template(obj: &mut Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(o) = obj.as_object_mut() else {
        return causes;
    };
    let template = o.entry("template").or_insert_with(|| json!({}));
    let Some(template) = template.as_object_mut() else {
        causes.push(required("template"));
        return causes;
    };
    let spec = template.entry("spec").or_insert_with(|| json!({}));
    match spec.as_object_mut() {
        Some(spec) => pod_spec(spec, "template.spec", &mut causes),
        None => causes.push(required("template.spec.containers")),
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_item_gets_its_default_limit_from_max_and_request_from_min() {
        let mut lr = json!({ "spec": { "limits": [ { "type": "Container",
            "max": { "cpu": "2" }, "min": { "memory": "64Mi" } } ] } });
        assert!(limit_range(&mut lr).is_empty());
        let item = &lr["spec"]["limits"][0];
        assert_eq!(item["default"], json!({ "cpu": "2" }));
        assert_eq!(
            item["defaultRequest"],
            json!({ "cpu": "2", "memory": "64Mi" })
        );
    }

    #[test]
    fn min_above_max_is_refused_naming_both() {
        let mut lr = json!({ "spec": { "limits": [ { "type": "Container",
            "max": { "cpu": "500m" }, "min": { "cpu": "1" } } ] } });
        let causes = limit_range(&mut lr);
        assert!(
            causes
                .iter()
                .any(|c| c.field.as_deref() == Some("spec.limits[0].min[cpu]")
                    && c.message
                        == "Invalid value: \"1\": min value 1 is greater than max value 500m"),
            "{causes:?}"
        );
    }

    #[test]
    fn a_quota_with_conflicting_scopes_or_a_negative_limit_is_refused() {
        let mut q = json!({ "spec": { "hard": { "pods": "-1" }, "scopes": ["Terminating", "NotTerminating"] } });
        let causes = resource_quota(&mut q);
        assert_eq!(causes.len(), 2, "{causes:?}");
    }
}
