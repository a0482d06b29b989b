//! Which objects of the run's namespace count as left behind: every Sandbox, SandboxClaim, PVC
//! and Service, except the warm pool's own members and what those members own.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::kube::{KubeClient, KubeError};

/// The objects of one namespace the leak check looks at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// The Sandboxes.
    pub sandboxes: Vec<Value>,
    /// The SandboxClaims.
    pub claims: Vec<Value>,
    /// The PersistentVolumeClaims.
    pub pvcs: Vec<Value>,
    /// The Services.
    pub services: Vec<Value>,
}

impl Observed {
    /// Lists the four kinds in `namespace` through `client`.
    pub async fn list(client: &KubeClient, namespace: &str) -> Result<Observed, KubeError> {
        Ok(Observed {
            sandboxes: client
                .list(&format!(
                    "/apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes"
                ))
                .await?,
            claims: client
                .list(&format!(
                    "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxclaims"
                ))
                .await?,
            pvcs: client
                .list(&format!(
                    "/api/v1/namespaces/{namespace}/persistentvolumeclaims"
                ))
                .await?,
            services: client
                .list(&format!("/api/v1/namespaces/{namespace}/services"))
                .await?,
        })
    }

    /// Returns what counts as left behind, as `<plural>/<name>`, sorted.
    ///
    /// A Sandbox that a SandboxWarmPool owns is the pool's stock, not a leak, and neither is a
    /// PVC or Service such a Sandbox owns. Every claim, every other Sandbox, and every PVC or
    /// Service not owned by a pool member counts.
    pub fn leftovers(&self) -> BTreeSet<String> {
        let members: BTreeSet<&str> = self
            .sandboxes
            .iter()
            .filter(|s| owned_by(s, "SandboxWarmPool").next().is_some())
            .filter_map(name)
            .collect();
        let mut out = BTreeSet::new();
        for sandbox in &self.sandboxes {
            if let Some(n) = name(sandbox)
                && !members.contains(n)
            {
                out.insert(format!("sandboxes/{n}"));
            }
        }
        for claim in &self.claims {
            if let Some(n) = name(claim) {
                out.insert(format!("sandboxclaims/{n}"));
            }
        }
        for (plural, objects) in [
            ("persistentvolumeclaims", &self.pvcs),
            ("services", &self.services),
        ] {
            for object in objects {
                let of_member = owned_by(object, "Sandbox").any(|owner| members.contains(owner));
                if let Some(n) = name(object)
                    && !of_member
                {
                    out.insert(format!("{plural}/{n}"));
                }
            }
        }
        out
    }
}

/// An object's name.
fn name(object: &Value) -> Option<&str> {
    object.pointer("/metadata/name").and_then(Value::as_str)
}

/// The names of the owners of `kind` in an object's ownerReferences.
fn owned_by<'a>(object: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |r| r.get("kind").and_then(Value::as_str) == Some(kind))
        .filter_map(|r| r.get("name").and_then(Value::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(name: &str, owner: Option<(&str, &str)>) -> Value {
        match owner {
            Some((kind, owner)) => json!({"metadata": {"name": name, "ownerReferences": [
                {"apiVersion": "x/v1", "kind": kind, "name": owner, "uid": "u", "controller": true}
            ]}}),
            None => json!({"metadata": {"name": name}}),
        }
    }

    #[test]
    fn an_empty_namespace_has_no_leftovers() {
        assert!(Observed::default().leftovers().is_empty());
    }

    #[test]
    fn warm_pool_members_and_what_they_own_are_not_leftovers() {
        let observed = Observed {
            sandboxes: vec![object(
                "live-warm-abcde",
                Some(("SandboxWarmPool", "live-warm")),
            )],
            pvcs: vec![object(
                "data-live-warm-abcde",
                Some(("Sandbox", "live-warm-abcde")),
            )],
            services: vec![object(
                "live-warm-abcde",
                Some(("Sandbox", "live-warm-abcde")),
            )],
            claims: vec![],
        };
        assert!(observed.leftovers().is_empty());
    }

    #[test]
    fn claims_adopted_sandboxes_and_their_children_are_leftovers() {
        let observed = Observed {
            sandboxes: vec![
                object("cf-1", None),
                object("live-warm-xyz", Some(("SandboxClaim", "lv-w"))),
            ],
            claims: vec![object("lv-w", None)],
            pvcs: vec![object("workspace-cf-1", Some(("Sandbox", "cf-1")))],
            services: vec![
                object("cf-1", Some(("Sandbox", "cf-1"))),
                object("orphan", None),
            ],
        };
        let expected: BTreeSet<String> = [
            "persistentvolumeclaims/workspace-cf-1",
            "sandboxclaims/lv-w",
            "sandboxes/cf-1",
            "sandboxes/live-warm-xyz",
            "services/cf-1",
            "services/orphan",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        assert_eq!(observed.leftovers(), expected);
    }

    #[test]
    fn objects_without_a_name_are_ignored_rather_than_panicking() {
        let observed = Observed {
            sandboxes: vec![json!({}), json!({"metadata": {"ownerReferences": "bad"}})],
            claims: vec![json!(null)],
            pvcs: vec![json!({"metadata": {"name": 3}})],
            services: vec![],
        };
        assert!(observed.leftovers().is_empty());
    }
}
