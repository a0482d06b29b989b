//! `PolicyRule`, the unit of every Role and ClusterRole, and how one is matched against a
//! request, as the API server's RBAC authorizer matches it.
//!
//! `"*"` matches any verb, group, resource or URL. A rule naming `pods` matches the resource
//! only; `pods/exec` matches that subresource; `*/scale` matches the `scale` subresource of any
//! resource. `resourceNames` limits a rule to requests that name one of those objects (so never
//! a list or a create without a name). A non-resource URL ending in `*` matches every path
//! starting with what comes before it.

use super::attributes::{Action, Attributes, NonResource};
use serde_json::{Map, Value, json};

/// One rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PolicyRule {
    /// The verbs it grants.
    pub(crate) verbs: Vec<String>,
    /// The API groups of its resources.
    pub(crate) api_groups: Vec<String>,
    /// Its resources, `resource` or `resource/subresource`.
    pub(crate) resources: Vec<String>,
    /// The object names it is limited to (empty: any).
    pub(crate) resource_names: Vec<String>,
    /// The non-resource paths it grants.
    pub(crate) non_resource_urls: Vec<String>,
}

use fakekube_machinery::meta::string_list;

fn any_is(list: &[String], wanted: &str) -> bool {
    list.iter().any(|x| x == "*" || x == wanted)
}

impl PolicyRule {
    /// Reads a rule from its JSON form (fields that are absent or not lists read as empty).
    pub(crate) fn from_json(rule: &Value) -> PolicyRule {
        PolicyRule {
            verbs: string_list(rule, "verbs"),
            api_groups: string_list(rule, "apiGroups"),
            resources: string_list(rule, "resources"),
            resource_names: string_list(rule, "resourceNames"),
            non_resource_urls: string_list(rule, "nonResourceURLs"),
        }
    }

    /// The rules of a Role or ClusterRole object.
    pub(crate) fn all_of(role: &Value) -> Vec<PolicyRule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|l| l.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    /// The rule's JSON form, without empty lists (as the API server serializes it).
    pub(crate) fn to_json(&self) -> Value {
        let mut o = Map::new();
        for (key, list) in [
            ("verbs", &self.verbs),
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() || key == "verbs" {
                o.insert(key.to_string(), json!(list));
            }
        }
        Value::Object(o)
    }

    /// Whether the rule grants `action`.
    pub(crate) fn allows(&self, action: &Action<'_>) -> bool {
        match action {
            Action::Resource(a) => self.allows_resource(a),
            Action::NonResource(n) => self.allows_non_resource(n),
        }
    }

    /// Whether the rule grants a resource request.
    pub(crate) fn allows_resource(&self, a: &Attributes<'_>) -> bool {
        any_is(&self.verbs, a.verb)
            && any_is(&self.api_groups, a.group)
            && self.matches_resource(a.resource, a.subresource)
            && (self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == a.name))
    }

    fn matches_resource(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            if r == "*" {
                return true;
            }
            if subresource.is_empty() {
                return r == resource;
            }
            match r.split_once('/') {
                Some((res, sub)) => sub == subresource && (res == resource || res == "*"),
                None => false,
            }
        })
    }

    /// Whether the rule grants a non-resource request.
    pub(crate) fn allows_non_resource(&self, n: &NonResource<'_>) -> bool {
        any_is(&self.verbs, n.verb)
            && self.non_resource_urls.iter().any(|u| {
                u == "*"
                    || u == n.path
                    || u.strip_suffix('*')
                        .is_some_and(|prefix| n.path.starts_with(prefix))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        let owned = |l: &[&str]| l.iter().map(|s| (*s).to_string()).collect();
        PolicyRule {
            verbs: owned(verbs),
            api_groups: owned(groups),
            resources: owned(resources),
            ..PolicyRule::default()
        }
    }

    fn res<'a>(verb: &'a str, group: &'a str, resource: &'a str, sub: &'a str) -> Attributes<'a> {
        Attributes {
            verb,
            group,
            resource,
            subresource: sub,
            namespace: "ns",
            name: "obj",
        }
    }

    #[test]
    fn a_resource_rule_does_not_reach_its_subresources() {
        let r = rule(&["get"], &[""], &["pods"]);
        assert!(r.allows_resource(&res("get", "", "pods", "")));
        assert!(!r.allows_resource(&res("get", "", "pods", "exec")));
        assert!(!r.allows_resource(&res("get", "", "pods", "status")));
    }

    #[test]
    fn a_subresource_rule_grants_only_that_subresource() {
        let r = rule(&["create"], &[""], &["pods/exec"]);
        assert!(r.allows_resource(&res("create", "", "pods", "exec")));
        assert!(!r.allows_resource(&res("create", "", "pods", "")));
        assert!(!r.allows_resource(&res("create", "", "pods", "attach")));
        assert!(!r.allows_resource(&res("create", "", "services", "exec")));
    }

    #[test]
    fn star_slash_subresource_matches_that_subresource_of_any_resource() {
        let r = rule(&["get"], &["*"], &["*/scale"]);
        assert!(r.allows_resource(&res("get", "apps", "deployments", "scale")));
        assert!(!r.allows_resource(&res("get", "apps", "deployments", "")));
        assert!(!r.allows_resource(&res("get", "apps", "deployments", "status")));
    }

    #[test]
    fn stars_match_every_verb_group_and_resource() {
        let r = rule(&["*"], &["*"], &["*"]);
        assert!(r.allows_resource(&res("escalate", "x.io", "things", "sub")));
    }

    #[test]
    fn resource_names_limit_a_rule_to_named_requests() {
        let mut r = rule(&["get", "list"], &[""], &["secrets"]);
        r.resource_names = vec!["obj".into()];
        assert!(r.allows_resource(&res("get", "", "secrets", "")));
        let mut other = res("get", "", "secrets", "");
        other.name = "other";
        assert!(!r.allows_resource(&other));
        let mut list = res("list", "", "secrets", "");
        list.name = "";
        assert!(!r.allows_resource(&list));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_a_trailing_star() {
        let r = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
            ..PolicyRule::default()
        };
        let get = |path| NonResource { verb: "get", path };
        assert!(r.allows_non_resource(&get("/healthz")));
        assert!(!r.allows_non_resource(&get("/healthz/etcd")));
        assert!(r.allows_non_resource(&get("/apis/apps/v1")));
        assert!(!r.allows_non_resource(&get("/apis")));
        assert!(!r.allows_non_resource(&NonResource {
            verb: "post",
            path: "/healthz"
        }));
        // A non-resource rule grants no resource, and a resource rule no path.
        assert!(!r.allows_resource(&res("get", "", "pods", "")));
        assert!(!rule(&["*"], &["*"], &["*"]).allows_non_resource(&get("/api")));
    }

    #[test]
    fn json_round_trip_keeps_the_lists_and_drops_empty_ones() {
        let j = json!({ "verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": null });
        let r = PolicyRule::from_json(&j);
        assert_eq!(r, rule(&["get"], &[""], &["pods"]));
        assert_eq!(
            r.to_json(),
            json!({ "verbs": ["get"], "apiGroups": [""], "resources": ["pods"] })
        );
    }

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("*".to_string()),
            Just(String::new()),
            "[a-c]{1,2}".prop_map(|s| s),
        ]
    }

    proptest! {
        /// A rule allows a request exactly when each of its lists has `*` or the request's
        /// value: the matcher agrees with the definition written out longhand.
        #[test]
        fn resource_matching_agrees_with_the_definition(
            verbs in proptest::collection::vec(word(), 0..3),
            groups in proptest::collection::vec(word(), 0..3),
            resources in proptest::collection::vec(
                (word(), proptest::option::of(word())).prop_map(|(r, s)| match s {
                    Some(s) => format!("{r}/{s}"),
                    None => r,
                }),
                0..3,
            ),
            verb in "[a-c]{1,2}", group in "[a-c]{0,2}",
            resource in "[a-c]{1,2}", sub in "[a-c]{0,2}",
        ) {
            let r = PolicyRule { verbs: verbs.clone(), api_groups: groups.clone(), resources: resources.clone(), ..PolicyRule::default() };
            let a = res(&verb, &group, &resource, &sub);
            let in_list = |l: &[String], v: &str| l.iter().any(|x| x == "*" || x == v);
            let resource_ok = resources.iter().any(|x| {
                x == "*"
                    || (sub.is_empty() && *x == resource)
                    || (!sub.is_empty() && (*x == format!("{resource}/{sub}") || *x == format!("*/{sub}")))
            });
            prop_assert_eq!(
                r.allows_resource(&a),
                in_list(&verbs, &verb) && in_list(&groups, &group) && resource_ok
            );
        }
    }
}
