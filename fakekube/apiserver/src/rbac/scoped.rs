//! [`Rule`]: a policy rule a [`Token`](crate::Token) carries, optionally limited to
//! namespaces: the public face of [`PolicyRule`].

use super::attributes::Action;
use super::rule::PolicyRule;
use serde_json::Value;

/// One rule of a token's own policy: an RBAC `PolicyRule`, optionally limited to a list of
/// namespaces (as if granted by a Role bound in each of them).
///
/// It matches requests exactly as a Role's rule does: `"*"` matches any verb, API group or
/// resource; a subresource is matched as `pods/exec` (or `*/exec`); names limit it to
/// requests for those objects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    rule: PolicyRule,
    namespaces: Option<Vec<String>>,
}

impl Rule {
    /// A rule granting `verbs` on `resources` of `api_groups` (`""` is the core group).
    pub fn new<V, G, R>(api_groups: G, resources: R, verbs: V) -> Self
    where
        V: IntoIterator,
        V::Item: Into<String>,
        G: IntoIterator,
        G::Item: Into<String>,
        R: IntoIterator,
        R::Item: Into<String>,
    {
        Rule {
            rule: PolicyRule {
                verbs: verbs.into_iter().map(Into::into).collect(),
                api_groups: api_groups.into_iter().map(Into::into).collect(),
                resources: resources.into_iter().map(Into::into).collect(),
                ..PolicyRule::default()
            },
            namespaces: None,
        }
    }

    /// A rule that allows everything, every path included (what `cluster-admin` grants).
    pub fn all() -> Self {
        let mut r = Rule::new(["*"], ["*"], ["*"]);
        r.rule.non_resource_urls = vec!["*".into()];
        r
    }

    /// Limits the rule to these namespaces (like a Role bound there): it then grants nothing
    /// at the cluster scope and no path. `"*"` stands for every namespace.
    pub fn in_namespaces<I>(mut self, namespaces: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.namespaces = Some(namespaces.into_iter().map(Into::into).collect());
        self
    }

    /// Limits the rule to objects with these names.
    pub fn with_names<I>(mut self, names: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.rule.resource_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the rule grants `action`.
    pub(crate) fn allows(&self, action: &Action<'_>) -> bool {
        let Some(namespaces) = &self.namespaces else {
            return self.rule.allows(action);
        };
        match action {
            Action::Resource(a) => {
                !a.namespace.is_empty()
                    && namespaces.iter().any(|n| n == "*" || n == a.namespace)
                    && self.rule.allows_resource(a)
            }
            Action::NonResource(_) => false,
        }
    }

    /// The rule as a `SelfSubjectRulesReview` lists it for `namespace`: `None` when it grants
    /// nothing there.
    pub(crate) fn rule_in(&self, namespace: &str) -> Option<&PolicyRule> {
        match &self.namespaces {
            None => Some(&self.rule),
            Some(l) if l.iter().any(|n| n == "*" || n == namespace) => Some(&self.rule),
            Some(_) => None,
        }
    }

    /// The rule's `PolicyRule` JSON, for the objects a service account binding is made of.
    pub(crate) fn policy_json(&self) -> Value {
        self.rule.to_json()
    }

    /// The namespaces the rule is limited to; `None` when it is cluster-wide.
    pub(crate) fn namespaces(&self) -> Option<&[String]> {
        self.namespaces.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::attributes::{Attributes, NonResource};

    fn get<'a>(ns: &'a str) -> Action<'a> {
        Action::Resource(Attributes {
            verb: "get",
            group: "",
            resource: "pods",
            subresource: "",
            namespace: ns,
            name: "p",
        })
    }

    #[test]
    fn a_rule_limited_to_namespaces_refuses_other_namespaces_the_cluster_scope_and_paths() {
        let r = Rule::all().in_namespaces(["a"]);
        assert!(r.allows(&get("a")));
        assert!(!r.allows(&get("b")));
        assert!(!r.allows(&get("")));
        let api = Action::NonResource(NonResource {
            verb: "get",
            path: "/api",
        });
        assert!(!r.allows(&api));
        assert!(Rule::all().allows(&api));
    }

    #[test]
    fn a_rule_is_listed_only_in_the_namespaces_it_reaches() {
        let r = Rule::new([""], ["pods"], ["get"]).in_namespaces(["a"]);
        assert!(r.rule_in("a").is_some());
        assert!(r.rule_in("b").is_none());
        assert!(Rule::new([""], ["pods"], ["get"]).rule_in("b").is_some());
    }
}
