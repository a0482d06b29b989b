//! ClusterRole aggregation: a ClusterRole with an `aggregationRule` holds the rules of every
//! other ClusterRole its selectors match, as the kube-controller-manager's aggregation
//! controller computes them. Pure: [`aggregate`] takes the ClusterRoles and says which ones'
//! `rules` must change; a controller writes them.

use crate::meta::{self, meta_str, string_list};
use crate::selector::LabelSelector;
use serde_json::Value;
use std::sync::Arc;

/// Reads a `metav1.LabelSelector` (`matchLabels`, `matchExpressions`); the error says why it is
/// not one.
fn selector(s: &Value) -> Result<LabelSelector, String> {
    LabelSelector::from_object(s)
}

/// A rule as the controller compares rules (Go's semantic equality of `rbacv1.PolicyRule`: a
/// missing list and an empty one are the same): its verbs, API groups, resources, resource
/// names and non-resource URLs.
type RuleKey = [Vec<String>; 5];

fn rule_key(rule: &Value) -> RuleKey {
    [
        "verbs",
        "apiGroups",
        "resources",
        "resourceNames",
        "nonResourceURLs",
    ]
    .map(|field| string_list(rule, field))
}

/// The rules of a ClusterRole, as compared.
fn rule_keys(role: &Value) -> Vec<RuleKey> {
    role.get("rules")
        .and_then(Value::as_array)
        .map(|l| l.iter().map(rule_key).collect())
        .unwrap_or_default()
}

/// The ClusterRoles whose `rules` differ from what their aggregation rule gathers, each with
/// the rules it must hold (`Value::Null` for none). `roles` are every ClusterRole, in name
/// order.
pub(crate) fn aggregate(roles: &[Arc<Value>]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for role in roles {
        let Some(selectors) = role
            .get("aggregationRule")
            .and_then(|r| r.get("clusterRoleSelectors"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        let name = meta_str(role, "name").unwrap_or("");
        let mut gathered: Vec<Value> = Vec::new();
        let mut seen: Vec<RuleKey> = Vec::new();
        for s in selectors {
            let Ok(sel) = selector(s) else { continue };
            for other in roles {
                if meta_str(other, "name") == Some(name) || !sel.matches(meta::labels(other)) {
                    continue;
                }
                for rule in other
                    .get("rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let parsed = rule_key(rule);
                    if !seen.contains(&parsed) {
                        seen.push(parsed);
                        gathered.push(rule.clone());
                    }
                }
            }
        }
        let current = rule_keys(role);
        if current != seen {
            let rules = if gathered.is_empty() {
                Value::Null
            } else {
                Value::Array(gathered)
            };
            out.push((name.to_string(), rules));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(name: &str, labels: Value, rules: Value) -> Arc<Value> {
        Arc::new(json!({ "metadata": { "name": name, "labels": labels }, "rules": rules }))
    }

    #[test]
    fn an_aggregated_role_gathers_matching_roles_rules_once_in_name_order() {
        let get_pods = json!({ "verbs": ["get"], "apiGroups": [""], "resources": ["pods"] });
        let list_pods = json!({ "verbs": ["list"], "apiGroups": [""], "resources": ["pods"] });
        let mut view = json!({ "metadata": { "name": "view" }, "rules": null,
            "aggregationRule": { "clusterRoleSelectors": [ { "matchLabels": { "agg": "view" } } ] } });
        let roles = vec![
            role("a", json!({ "agg": "view" }), json!([list_pods.clone()])),
            role(
                "b",
                json!({ "agg": "view" }),
                json!([get_pods.clone(), list_pods.clone()]),
            ),
            role(
                "c",
                json!({ "agg": "other" }),
                json!([{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }]),
            ),
            Arc::new(view.clone()),
        ];
        assert_eq!(
            aggregate(&roles),
            vec![("view".to_string(), json!([list_pods, get_pods]))]
        );
        view["rules"] = aggregate(&roles)[0].1.clone();
        let settled: Vec<_> = roles[..3].iter().cloned().chain([Arc::new(view)]).collect();
        assert!(
            aggregate(&settled).is_empty(),
            "nothing changes once aggregated"
        );
    }

    #[test]
    fn match_expressions_become_set_based_requirements() {
        let s = selector(&json!({ "matchExpressions": [
            { "key": "tier", "operator": "In", "values": ["a", "b"] },
            { "key": "off", "operator": "DoesNotExist" },
        ] }))
        .expect("a valid selector");
        let labels = json!({ "tier": "b" });
        assert!(s.matches(labels.as_object()));
        let labels = json!({ "tier": "b", "off": "" });
        assert!(!s.matches(labels.as_object()));
        assert!(
            selector(&json!({ "matchExpressions": [ { "key": "k", "operator": "Near" } ] }))
                .is_err()
        );
    }
}
