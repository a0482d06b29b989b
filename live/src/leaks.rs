//! Which objects of the run's namespace count as left behind: every Sandbox, SandboxClaim, PVC
//! and Service, except the warm pool's own members and what those members own.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

use crate::observer::{ObserveError, Observer};

/// The objects of the run's namespace the leak check looks at, by their metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// The Sandboxes.
    pub sandboxes: Vec<ObjectMeta>,
    /// The SandboxClaims.
    pub claims: Vec<ObjectMeta>,
    /// The PersistentVolumeClaims.
    pub pvcs: Vec<ObjectMeta>,
    /// The Services.
    pub services: Vec<ObjectMeta>,
}

impl Observed {
    /// Lists the four kinds in the observer's namespace.
    pub async fn list(observer: &Observer) -> Result<Observed, ObserveError> {
        Ok(Observed {
            sandboxes: metadata(observer.sandboxes().list().await?),
            claims: metadata(observer.claims().list().await?),
            pvcs: metadata(observer.core::<PersistentVolumeClaim>().list().await?),
            services: metadata(observer.core::<Service>().list().await?),
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

/// The metadata of each object.
fn metadata<K: Resource>(objects: Vec<K>) -> Vec<ObjectMeta> {
    objects
        .into_iter()
        .map(|mut object| std::mem::take(object.meta_mut()))
        .collect()
}

/// An object's name.
fn name(meta: &ObjectMeta) -> Option<&str> {
    meta.name.as_deref()
}

/// The names of the owners of `kind` in an object's ownerReferences.
fn owned_by<'a>(meta: &'a ObjectMeta, kind: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    meta.owner_references
        .iter()
        .flatten()
        .filter(move |r| r.kind == kind)
        .map(|r| r.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn object(name: &str, owner: Option<(&str, &str)>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            owner_references: owner.map(|(kind, owner)| {
                vec![OwnerReference {
                    api_version: "x/v1".to_owned(),
                    kind: kind.to_owned(),
                    name: owner.to_owned(),
                    uid: "u".to_owned(),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
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
    fn objects_without_a_name_are_ignored() {
        let nameless = ObjectMeta::default();
        let observed = Observed {
            sandboxes: vec![nameless.clone()],
            claims: vec![nameless.clone()],
            pvcs: vec![nameless.clone()],
            services: vec![nameless],
        };
        assert!(observed.leftovers().is_empty());
    }
}
