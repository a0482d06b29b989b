//! The RBAC objects of the store, read into a form requests are checked against quickly: each
//! role's rules and each binding's subjects. Rebuilt whenever one of the four kinds changes.

use crate::authn::{UserInfo, parse_service_account};
use crate::meta::meta_str;
use crate::rbac::PolicyRule;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// One subject of a binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub(crate) kind: String,
    /// Its name.
    pub(crate) name: String,
    /// A service account's namespace (the binding's when empty).
    pub(crate) namespace: String,
}

impl Subject {
    /// Whether the subject names `user` (bound in `binding_ns`, empty for a ClusterRoleBinding).
    pub(crate) fn applies_to(&self, user: &UserInfo, binding_ns: &str) -> bool {
        match self.kind.as_str() {
            "User" => self.name == user.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_ns
                } else {
                    &self.namespace
                };
                parse_service_account(&user.name) == Some((ns, self.name.as_str()))
            }
            _ => false,
        }
    }

    /// `User "alice"`, `ServiceAccount "sa/ns"`: how the authorizer's reasons name it.
    pub(crate) fn describe(&self, binding_ns: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                binding_ns
            } else {
                &self.namespace
            };
            format!("{} \"{}/{ns}\"", self.kind, self.name)
        } else {
            format!("{} \"{}\"", self.kind, self.name)
        }
    }
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    /// Its name.
    pub(crate) name: String,
    /// Its namespace (empty for a ClusterRoleBinding).
    pub(crate) namespace: String,
    /// `Role` or `ClusterRole`.
    pub(crate) role_kind: String,
    /// The role's name.
    pub(crate) role_name: String,
    /// Who it binds.
    pub(crate) subjects: Vec<Subject>,
}

impl Binding {
    fn from_json(obj: &Value) -> Binding {
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let role_ref = obj.get("roleRef").cloned().unwrap_or(Value::Null);
        Binding {
            name: meta_str(obj, "name").unwrap_or("").to_string(),
            namespace: meta_str(obj, "namespace").unwrap_or("").to_string(),
            role_kind: text(&role_ref, "kind"),
            role_name: text(&role_ref, "name"),
            subjects: obj
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|s| Subject {
                    kind: text(s, "kind"),
                    name: text(s, "name"),
                    namespace: text(s, "namespace"),
                })
                .collect(),
        }
    }

    /// `ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`, or for a RoleBinding
    /// `RoleBinding "x/ns" of Role "y" to ...`.
    pub(crate) fn describe(&self, subject: &Subject) -> String {
        let (kind, name) = if self.namespace.is_empty() {
            ("ClusterRoleBinding", self.name.clone())
        } else {
            ("RoleBinding", format!("{}/{}", self.name, self.namespace))
        };
        format!(
            "{kind} \"{name}\" of {} \"{}\" to {}",
            self.role_kind,
            self.role_name,
            subject.describe(&self.namespace)
        )
    }
}

/// Every RBAC object, as of one store version.
#[derive(Debug, Default)]
pub(crate) struct Policy {
    /// The store version it was read at.
    pub(crate) version: u64,
    cluster_roles: HashMap<String, Arc<Vec<PolicyRule>>>,
    roles: HashMap<(String, String), Arc<Vec<PolicyRule>>>,
    /// ClusterRoleBindings, in name order.
    pub(crate) cluster_bindings: Vec<Binding>,
    role_bindings: HashMap<String, Vec<Binding>>,
}

impl Policy {
    /// Reads the four kinds' objects.
    pub(crate) fn new(
        version: u64,
        cluster_roles: &[Arc<Value>],
        roles: &[Arc<Value>],
        cluster_bindings: &[Arc<Value>],
        role_bindings: &[Arc<Value>],
    ) -> Policy {
        let key = |o: &Value| {
            (
                meta_str(o, "namespace").unwrap_or("").to_string(),
                meta_str(o, "name").unwrap_or("").to_string(),
            )
        };
        let mut p = Policy {
            version,
            ..Policy::default()
        };
        for r in cluster_roles {
            p.cluster_roles
                .insert(key(r).1, Arc::new(PolicyRule::all_of(r)));
        }
        for r in roles {
            p.roles.insert(key(r), Arc::new(PolicyRule::all_of(r)));
        }
        p.cluster_bindings = cluster_bindings
            .iter()
            .map(|b| Binding::from_json(b))
            .collect();
        for b in role_bindings {
            let b = Binding::from_json(b);
            p.role_bindings
                .entry(b.namespace.clone())
                .or_default()
                .push(b);
        }
        p
    }

    /// The RoleBindings of `namespace`.
    pub(crate) fn role_bindings(&self, namespace: &str) -> &[Binding] {
        self.role_bindings
            .get(namespace)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The rules of the role a binding refers to, or the error the API server reports when it
    /// is missing.
    pub(crate) fn rules_of(&self, b: &Binding) -> Result<Arc<Vec<PolicyRule>>, String> {
        let found = if b.role_kind == "Role" && !b.namespace.is_empty() {
            self.roles
                .get(&(b.namespace.clone(), b.role_name.clone()))
                .cloned()
        } else if b.role_kind == "ClusterRole" {
            self.cluster_roles.get(&b.role_name).cloned()
        } else {
            None
        };
        found.ok_or_else(|| {
            format!(
                "{}.rbac.authorization.k8s.io \"{}\" not found",
                b.role_kind.to_ascii_lowercase(),
                b.role_name
            )
        })
    }
}
