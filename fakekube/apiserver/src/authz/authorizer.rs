//! The authorizer: `system:masters` may do anything; everyone else may do what a token's own
//! rules or an RBAC binding that names them grants (ClusterRoleBindings anywhere, RoleBindings
//! in their namespace). The RBAC objects are read from the store and cached until one of the
//! four kinds changes, so a new binding takes effect on the next request.

use super::policy::{Binding, Policy};
use crate::authn::UserInfo;
use crate::rbac::{Action, PolicyRule, Rule};
use crate::registry::ResourceType;
use crate::store::Store;
use std::fmt;
use std::sync::{Arc, Mutex};

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// Why: the binding that allowed it, or the errors met on the way to a denial (empty when
    /// there is nothing to say).
    pub(crate) reason: String,
}

/// What a user may do in a namespace (a `SelfSubjectRulesReview`).
#[derive(Debug, Clone, Default)]
pub struct RulesReview {
    /// Rules on resources.
    pub(crate) resource_rules: Vec<PolicyRule>,
    /// Rules on paths.
    pub(crate) non_resource_rules: Vec<PolicyRule>,
    /// The bindings to missing roles met, if any (the list may be incomplete).
    pub(crate) errors: Vec<String>,
}

/// The RBAC authorizer over one store.
pub struct Authorizer {
    store: Arc<Store>,
    kinds: Option<[Arc<ResourceType>; 4]>,
    cache: Mutex<Option<Arc<Policy>>>,
}

impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorizer").finish_non_exhaustive()
    }
}

/// The `RBAC: [a, b]` form of the errors met, as the API server aggregates them.
fn aggregate(errors: &[String]) -> String {
    let mut unique: Vec<&String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.as_slice() {
        [] => String::new(),
        [one] => format!("RBAC: {one}"),
        many => format!(
            "RBAC: [{}]",
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl Authorizer {
    /// An authorizer reading the RBAC objects of `store`.
    pub fn new(store: Arc<Store>) -> Self {
        let registry = Arc::clone(store.registry());
        let find = |plural| registry.find(crate::rbac::GROUP, "v1", plural);
        let kinds = (|| {
            Some([
                find("clusterroles")?,
                find("roles")?,
                find("clusterrolebindings")?,
                find("rolebindings")?,
            ])
        })();
        Authorizer {
            store,
            kinds,
            cache: Mutex::new(None),
        }
    }

    /// The RBAC objects as of now, read again only when they changed.
    fn policy(&self) -> Arc<Policy> {
        let Some(kinds) = &self.kinds else {
            return Arc::new(Policy::default());
        };
        let version = self.store.last_write(kinds);
        if let Ok(cache) = self.cache.lock()
            && let Some(p) = cache.as_ref()
            && p.version == version
        {
            return p.clone();
        }
        let list = |rt: &Arc<ResourceType>| self.store.list_all(rt, None);
        let policy = Arc::new(Policy::new(
            version,
            &list(&kinds[0]),
            &list(&kinds[1]),
            &list(&kinds[2]),
            &list(&kinds[3]),
        ));
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some(policy.clone());
        }
        policy
    }

    /// The bindings that may apply to a request in `namespace`: every ClusterRoleBinding, then
    /// the namespace's RoleBindings.
    fn bindings<'p>(policy: &'p Policy, namespace: &str) -> impl Iterator<Item = &'p Binding> {
        let local = if namespace.is_empty() {
            &[][..]
        } else {
            policy.role_bindings(namespace)
        };
        policy.cluster_bindings.iter().chain(local)
    }

    /// Decides on `action` by `user` holding `token_rules`.
    pub fn decide(
        &self,
        user: &UserInfo,
        token_rules: Option<&[Rule]>,
        action: &Action<'_>,
    ) -> Decision {
        if user.is_master() {
            return Decision {
                allowed: true,
                reason: String::new(),
            };
        }
        if token_rules.is_some_and(|rules| rules.iter().any(|r| r.allows(action))) {
            return Decision {
                allowed: true,
                reason: "allowed by the token's own rules".into(),
            };
        }
        let namespace = match action {
            Action::Resource(a) => a.namespace,
            Action::NonResource(_) => "",
        };
        let policy = self.policy();
        let mut errors = Vec::new();
        for b in Self::bindings(&policy, namespace) {
            let Some(subject) = b.subjects.iter().find(|s| s.applies_to(user, &b.namespace)) else {
                continue;
            };
            match policy.rules_of(b) {
                Ok(rules) if rules.iter().any(|r| r.allows(action)) => {
                    return Decision {
                        allowed: true,
                        reason: format!("RBAC: allowed by {}", b.describe(subject)),
                    };
                }
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        Decision {
            allowed: false,
            reason: aggregate(&errors),
        }
    }

    /// Every rule granted to `user` holding `token_rules` in `namespace`.
    pub(crate) fn rules(
        &self,
        user: &UserInfo,
        token_rules: Option<&[Rule]>,
        namespace: &str,
    ) -> RulesReview {
        let mut review = RulesReview::default();
        let add = |rule: &PolicyRule, review: &mut RulesReview| {
            let list = if rule.non_resource_urls.is_empty() {
                &mut review.resource_rules
            } else {
                &mut review.non_resource_rules
            };
            list.push(rule.clone());
        };
        for r in token_rules.into_iter().flatten() {
            if let Some(rule) = r.rule_in(namespace) {
                add(rule, &mut review);
            }
        }
        let policy = self.policy();
        for b in Self::bindings(&policy, namespace) {
            if !b.subjects.iter().any(|s| s.applies_to(user, &b.namespace)) {
                continue;
            }
            match policy.rules_of(b) {
                Ok(rules) => {
                    for rule in rules.iter() {
                        add(rule, &mut review);
                    }
                }
                Err(e) => review.errors.push(e),
            }
        }
        review
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::Attributes;
    use crate::store::{StoreSettings, WriteOptions};
    use serde_json::{Value, json};

    fn store_with(objects: &[(&str, Value)]) -> Arc<Store> {
        let store = Arc::new(Store::new(StoreSettings::default(), Arc::default()));
        let ns = store
            .registry()
            .find("", "v1", "namespaces")
            .expect("namespaces");
        store
            .create(
                &ns,
                "",
                json!({ "metadata": { "name": "ns" } }),
                WriteOptions::default(),
            )
            .expect("namespace");
        for (plural, obj) in objects {
            let rt = store
                .registry()
                .find(crate::rbac::GROUP, "v1", plural)
                .expect("rbac kind");
            let ns = if rt.namespaced { "ns" } else { "" };
            store
                .create(&rt, ns, obj.clone(), WriteOptions::default())
                .expect("created");
        }
        store
    }

    fn get_pods(ns: &str) -> Attributes<'_> {
        Attributes {
            verb: "get",
            group: "",
            resource: "pods",
            subresource: "",
            namespace: ns,
            name: "p",
        }
    }

    fn sa() -> UserInfo {
        UserInfo::service_account("ns", "runner", "uid").authenticated()
    }

    #[test]
    fn a_role_binding_grants_its_role_in_its_namespace_only() {
        let store = store_with(&[
            (
                "roles",
                json!({ "metadata": { "name": "reader" }, "rules": [ { "verbs": ["get"], "apiGroups": [""], "resources": ["pods"] } ] }),
            ),
            (
                "rolebindings",
                json!({ "metadata": { "name": "b" }, "roleRef": { "kind": "Role", "name": "reader" }, "subjects": [ { "kind": "ServiceAccount", "name": "runner" } ] }),
            ),
        ]);
        let authz = Authorizer::new(store);
        let d = authz.decide(&sa(), None, &Action::Resource(get_pods("ns")));
        assert_eq!(
            d,
            Decision {
                allowed: true,
                reason: "RBAC: allowed by RoleBinding \"b/ns\" of Role \"reader\" to ServiceAccount \"runner/ns\"".into()
            }
        );
        assert!(
            !authz
                .decide(&sa(), None, &Action::Resource(get_pods("other")))
                .allowed
        );
        assert!(
            !authz
                .decide(&sa(), None, &Action::Resource(get_pods("")))
                .allowed
        );
    }

    #[test]
    fn a_binding_to_a_missing_role_denies_with_the_reason_and_a_new_role_takes_effect() {
        let store = store_with(&[(
            "rolebindings",
            json!({ "metadata": { "name": "b" }, "roleRef": { "kind": "ClusterRole", "name": "later" }, "subjects": [ { "kind": "User", "name": "system:serviceaccount:ns:runner" } ] }),
        )]);
        let authz = Authorizer::new(store.clone());
        let d = authz.decide(&sa(), None, &Action::Resource(get_pods("ns")));
        assert_eq!(
            d,
            Decision {
                allowed: false,
                reason: "RBAC: clusterrole.rbac.authorization.k8s.io \"later\" not found".into()
            }
        );
        let rt = store
            .registry()
            .find(crate::rbac::GROUP, "v1", "clusterroles")
            .expect("kind");
        store
            .create(&rt, "", json!({ "metadata": { "name": "later" }, "rules": [ { "verbs": ["*"], "apiGroups": [""], "resources": ["pods"] } ] }), WriteOptions::default())
            .expect("created");
        assert!(
            authz
                .decide(&sa(), None, &Action::Resource(get_pods("ns")))
                .allowed
        );
    }

    #[test]
    fn masters_bypass_and_token_rules_add_to_rbac() {
        let authz = Authorizer::new(store_with(&[]));
        let master = UserInfo::new("root", vec!["system:masters".into()]);
        assert!(
            authz
                .decide(&master, None, &Action::Resource(get_pods("")))
                .allowed
        );
        let rules = [Rule::new([""], ["pods"], ["get"]).in_namespaces(["ns"])];
        assert!(
            authz
                .decide(&sa(), Some(&rules), &Action::Resource(get_pods("ns")))
                .allowed
        );
        assert!(
            !authz
                .decide(&sa(), Some(&rules), &Action::Resource(get_pods("x")))
                .allowed
        );
        let review = authz.rules(&sa(), Some(&rules), "ns");
        assert_eq!(review.resource_rules.len(), 1);
        assert!(
            authz
                .rules(&sa(), Some(&rules), "x")
                .resource_rules
                .is_empty()
        );
    }
}
