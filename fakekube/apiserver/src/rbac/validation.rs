//! Defaults and validation of the four RBAC kinds, with the API server's field paths and
//! wording: every rule has verbs, resource rules name groups and resources, only ClusterRoles
//! grant paths, bindings refer to a role of a kind they may, subjects are of a known kind, and a
//! binding's `roleRef` never changes.

use crate::status::Cause;
use fakekube_machinery::meta::string_list;
use serde_json::{Map, Value, json};

/// The RBAC API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

fn cause(reason: &str, field: String, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        message,
        field: Some(field),
    }
}

fn required(field: String, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    cause("FieldValueRequired", field, message)
}

fn not_supported(field: String, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    cause(
        "FieldValueNotSupported",
        field,
        format!(
            "Unsupported value: \"{value}\": supported values: {}",
            list.join(", ")
        ),
    )
}

fn invalid(field: String, value: &Value, detail: &str) -> Cause {
    let shown = match value {
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    };
    cause(
        "FieldValueInvalid",
        field,
        format!("Invalid value: {shown}: {detail}"),
    )
}

/// Defaults and validates an RBAC object of `kind`; returns the causes of a 422, empty when
/// admitted.
pub fn admit(kind: &str, obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let Some(o) = obj.as_object_mut() else {
        return Vec::new();
    };
    match kind {
        "Role" => rules(o, true),
        "ClusterRole" => {
            let mut causes = rules(o, false);
            causes.extend(aggregation_rule(o));
            causes
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            let namespaced = kind == "RoleBinding";
            let mut causes = binding(o, namespaced);
            if let Some(old) = old
                && old.get("roleRef") != o.get("roleRef")
            {
                let role_ref = o.get("roleRef").cloned().unwrap_or(Value::Null);
                let shown = json!({
                    "APIGroup": role_ref.get("apiGroup").and_then(Value::as_str).unwrap_or(""),
                    "Kind": role_ref.get("kind").and_then(Value::as_str).unwrap_or(""),
                    "Name": role_ref.get("name").and_then(Value::as_str).unwrap_or(""),
                });
                causes.push(invalid("roleRef".into(), &shown, "cannot change roleRef"));
            }
            causes
        }
        _ => Vec::new(),
    }
}

fn rules(o: &Map<String, Value>, namespaced: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let list = match o.get("rules") {
        None | Some(Value::Null) => return causes,
        Some(Value::Array(l)) => l,
        Some(other) => {
            causes.push(invalid("rules".into(), other, "must be a list of rules"));
            return causes;
        }
    };
    for (i, rule) in list.iter().enumerate() {
        let at = |f: &str| format!("rules[{i}].{f}");
        if string_list(rule, "verbs").is_empty() {
            causes.push(required(
                at("verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = string_list(rule, "nonResourceURLs");
        if !urls.is_empty() {
            let urls_json = json!(urls);
            if namespaced {
                causes.push(invalid(
                    at("nonResourceURLs"),
                    &urls_json,
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if ["apiGroups", "resources", "resourceNames"]
                .iter()
                .any(|k| !string_list(rule, k).is_empty())
            {
                causes.push(invalid(
                    at("nonResourceURLs"),
                    &urls_json,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if rule
            .get("apiGroups")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            causes.push(required(
                at("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if string_list(rule, "resources").is_empty() {
            causes.push(required(
                at("resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    causes
}

fn aggregation_rule(o: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(rule) = o.get("aggregationRule").filter(|v| !v.is_null()) else {
        return causes;
    };
    let selectors = rule
        .get("clusterRoleSelectors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if selectors.is_empty() {
        causes.push(required(
            "aggregationRule.clusterRoleSelectors".into(),
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, s) in selectors.iter().enumerate() {
        if let Err(detail) = crate::selector::LabelSelector::from_object(s) {
            causes.push(invalid(
                format!("aggregationRule.clusterRoleSelectors[{i}]"),
                s,
                &detail,
            ));
        }
    }
    causes
}

fn binding(o: &mut Map<String, Value>, namespaced: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    match o.get_mut("roleRef").and_then(Value::as_object_mut) {
        None => {
            causes.push(required("roleRef.kind".into(), ""));
            causes.push(required("roleRef.name".into(), ""));
        }
        Some(r) => {
            if r.get("apiGroup")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                r.insert("apiGroup".into(), json!(GROUP));
            }
            let group = r.get("apiGroup").and_then(Value::as_str).unwrap_or("");
            if group != GROUP {
                causes.push(not_supported("roleRef.apiGroup".into(), group, &[GROUP]));
            }
            let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
            let kinds: &[&str] = if namespaced {
                &["Role", "ClusterRole"]
            } else {
                &["ClusterRole"]
            };
            if !kinds.contains(&kind) {
                causes.push(not_supported("roleRef.kind".into(), kind, kinds));
            }
            let name = r.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                causes.push(required("roleRef.name".into(), ""));
            } else if let Some(detail) = path_segment_problem(name) {
                causes.push(invalid("roleRef.name".into(), &json!(name), &detail));
            }
        }
    }
    let subjects = match o.get_mut("subjects") {
        None | Some(Value::Null) => return causes,
        Some(Value::Array(l)) => l,
        Some(other) => {
            causes.push(invalid(
                "subjects".into(),
                other,
                "must be a list of subjects",
            ));
            return causes;
        }
    };
    for (i, s) in subjects.iter_mut().enumerate() {
        let at = |f: &str| format!("subjects[{i}].{f}");
        let Some(s) = s.as_object_mut() else {
            causes.push(required(at("kind"), ""));
            continue;
        };
        let kind = s
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if matches!(kind.as_str(), "User" | "Group")
            && s.get("apiGroup")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
        {
            s.insert("apiGroup".into(), json!(GROUP));
        }
        let name = s.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(required(at("name"), ""));
        }
        let group = s.get("apiGroup").and_then(Value::as_str).unwrap_or("");
        match kind.as_str() {
            "ServiceAccount" => {
                if !group.is_empty() {
                    causes.push(not_supported(at("apiGroup"), group, &[""]));
                }
                let ns = s.get("namespace").and_then(Value::as_str).unwrap_or("");
                if !namespaced && ns.is_empty() {
                    causes.push(required(at("namespace"), ""));
                }
            }
            "User" | "Group" => {
                if group != GROUP {
                    causes.push(not_supported(at("apiGroup"), group, &[GROUP]));
                }
            }
            other => {
                causes.push(not_supported(
                    at("kind"),
                    other,
                    &["ServiceAccount", "User", "Group"],
                ));
            }
        }
    }
    causes
}

/// Why `name` is not a valid path segment (the names of RBAC objects), if it is not.
pub fn path_segment_problem(name: &str) -> Option<String> {
    match name {
        "." | ".." => Some(format!("may not be '{name}'")),
        _ if name.contains('/') => Some("may not contain '/'".into()),
        _ if name.contains('%') => Some("may not contain '%'".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field.as_deref().unwrap_or(""), c.message))
            .collect()
    }

    #[test]
    fn rules_without_verbs_groups_or_resources_are_refused_with_their_fields() {
        let mut role = json!({ "rules": [ { "resources": ["pods"] }, { "verbs": ["get"], "apiGroups": [""] } ] });
        assert_eq!(
            messages(&admit("Role", &mut role, None)),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[1].resources: Required value: resource rules must supply at least one resource",
            ]
        );
    }

    #[test]
    fn only_cluster_roles_grant_non_resource_urls_and_never_with_resources() {
        let rule = json!({ "rules": [ { "verbs": ["get"], "nonResourceURLs": ["/healthz"] } ] });
        assert!(admit("ClusterRole", &mut rule.clone(), None).is_empty());
        assert_eq!(
            messages(&admit("Role", &mut rule.clone(), None)),
            [
                "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs"
            ]
        );
        let mut both = json!({ "rules": [ { "verbs": ["get"], "resources": ["pods"], "nonResourceURLs": ["/x"] } ] });
        assert_eq!(
            messages(&admit("ClusterRole", &mut both, None)),
            [
                "rules[0].nonResourceURLs: Invalid value: [\"/x\"]: rules cannot apply to both regular resources and non-resource URLs"
            ]
        );
    }

    #[test]
    fn bindings_get_api_groups_defaulted_and_refuse_unknown_kinds() {
        let mut b = json!({
            "roleRef": { "kind": "Role", "name": "r" },
            "subjects": [
                { "kind": "User", "name": "alice" },
                { "kind": "ServiceAccount", "name": "sa" },
                { "kind": "Robot", "name": "r2" },
            ]
        });
        assert_eq!(
            messages(&admit("RoleBinding", &mut b, None)),
            [
                "subjects[2].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\""
            ]
        );
        assert_eq!(b["roleRef"]["apiGroup"], GROUP);
        assert_eq!(b["subjects"][0]["apiGroup"], GROUP);
        assert!(b["subjects"][1].get("apiGroup").is_none());
        let mut crb = json!({
            "roleRef": { "kind": "Role", "name": "r" },
            "subjects": [ { "kind": "ServiceAccount", "name": "sa" } ]
        });
        assert_eq!(
            messages(&admit("ClusterRoleBinding", &mut crb, None)),
            [
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
            ]
        );
    }

    #[test]
    fn a_binding_role_ref_cannot_change() {
        let old = json!({ "roleRef": { "apiGroup": GROUP, "kind": "Role", "name": "a" } });
        let mut new = json!({ "roleRef": { "apiGroup": GROUP, "kind": "Role", "name": "b" } });
        assert_eq!(
            messages(&admit("RoleBinding", &mut new, Some(&old))),
            [
                "roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"Role\",\"Name\":\"b\"}: cannot change roleRef"
            ]
        );
        let mut same = old.clone();
        assert!(admit("RoleBinding", &mut same, Some(&old)).is_empty());
    }

    #[test]
    fn an_aggregation_rule_needs_a_valid_selector() {
        let mut empty = json!({ "aggregationRule": { "clusterRoleSelectors": [] } });
        assert_eq!(
            messages(&admit("ClusterRole", &mut empty, None)),
            [
                "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
            ]
        );
        let mut bad = json!({ "aggregationRule": { "clusterRoleSelectors": [ { "matchExpressions": [ { "key": "a", "operator": "Near" } ] } ] } });
        assert_eq!(admit("ClusterRole", &mut bad, None).len(), 1);
    }
}
