//! Whether a request falls under a policy's `matchConstraints` or a binding's
//! `matchResources` (apiserver's policy/generic matching and webhook predicates): the
//! namespace and object selectors, `excludeResourceRules`, then `resourceRules`.

use super::Attributes;
use fakekube_machinery::selector::LabelSelector;
use serde_json::{Map, Value};

fn strings(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn labels(obj: Option<&Value>) -> Option<&Map<String, Value>> {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
}

/// Whether `selector` (absent: everything) selects `labels`; a selector that does not parse
/// selects nothing (validation refuses it when the policy is written).
fn selects(selector: Option<&Value>, labels: Option<&Map<String, Value>>) -> bool {
    match selector.filter(|s| !s.is_null()) {
        None => true,
        Some(s) => LabelSelector::from_object(s).is_ok_and(|sel| sel.matches(labels)),
    }
}

/// Whether `m` (a `MatchResources`) matches the request; `namespace` is the request's
/// Namespace object, if it has one.
pub(super) fn matches(m: &Value, a: &Attributes<'_>, namespace: Option<&Value>) -> bool {
    // The namespace selector: a namespaced object's namespace labels; a Namespace's own;
    // any other cluster-scoped object passes.
    let ns_labels = if a.rt.namespaced {
        Some(labels(namespace))
    } else if a.rt.group.is_empty() && a.rt.plural == "namespaces" {
        Some(labels(a.object.or(a.old)))
    } else {
        None
    };
    if let Some(l) = ns_labels
        && !selects(m.get("namespaceSelector"), l)
    {
        return false;
    }
    let object_selector = m.get("objectSelector");
    if !selects(object_selector, labels(a.object)) && !selects(object_selector, labels(a.old)) {
        return false;
    }
    let exact = m.get("matchPolicy").and_then(Value::as_str) == Some("Exact");
    let rules = |key: &str| -> Vec<&Value> {
        m.get(key)
            .and_then(Value::as_array)
            .map(|l| l.iter().collect())
            .unwrap_or_default()
    };
    if rules("excludeResourceRules")
        .iter()
        .any(|r| rule_matches(r, a, exact))
    {
        return false;
    }
    let include = rules("resourceRules");
    include.is_empty() || include.iter().any(|r| rule_matches(r, a, exact))
}

/// Whether one `NamedRuleWithOperations` covers the request.
fn rule_matches(rule: &Value, a: &Attributes<'_>, exact: bool) -> bool {
    let any = |key: &str, want: &str| strings(rule.get(key)).any(|x| x == "*" || x == want);
    if !any("operations", a.operation) || !any("apiGroups", &a.rt.group) {
        return false;
    }
    // `Equivalent` matches the request through any version of its resource; fakekube
    // serves each built-in resource in one version, so only `Exact` compares versions.
    if exact && !any("apiVersions", &a.rt.version) {
        return false;
    }
    match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" if a.rt.namespaced => return false,
        "Namespaced" if !a.rt.namespaced => return false,
        _ => {}
    }
    let names: Vec<&str> = strings(rule.get("resourceNames")).collect();
    if !names.is_empty() && !names.contains(&a.name) {
        return false;
    }
    let resource = a.rt.plural.as_str();
    strings(rule.get("resources")).any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        let res_ok = res == "*" || res == resource;
        let sub_ok = if r == "*" {
            a.subresource.is_empty()
        } else {
            sub == "*" || sub == a.subresource
        };
        res_ok && sub_ok
    })
}
