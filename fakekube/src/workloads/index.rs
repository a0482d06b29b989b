//! Who owns what, kept from the change log: the pods and the ReplicaSets of each controller,
//! by the uid of their controller reference, so a controller finds its children without
//! scanning every pod.

use crate::meta::meta_str;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// A namespace and a name.
pub(crate) type ObjKey = (String, String);

/// The children of one kind by their controller's uid.
#[derive(Debug, Default)]
pub(crate) struct Owned {
    by_owner: HashMap<String, BTreeSet<ObjKey>>,
    owner_of: HashMap<ObjKey, String>,
}

impl Owned {
    /// Records `obj`'s controller reference (`gone`: the object was deleted).
    pub(crate) fn set(&mut self, obj: &Value, gone: bool) {
        let key = (
            meta_str(obj, "namespace").unwrap_or("").to_string(),
            meta_str(obj, "name").unwrap_or("").to_string(),
        );
        let owner = (!gone)
            .then(|| super::controller_ref_of(obj))
            .flatten()
            .and_then(|r| r.get("uid").and_then(Value::as_str))
            .map(str::to_string);
        if self.owner_of.get(&key) == owner.as_ref() {
            return;
        }
        if let Some(old) = self.owner_of.remove(&key)
            && let Some(set) = self.by_owner.get_mut(&old)
        {
            set.remove(&key);
            if set.is_empty() {
                self.by_owner.remove(&old);
            }
        }
        if let Some(uid) = owner {
            self.by_owner
                .entry(uid.clone())
                .or_default()
                .insert(key.clone());
            self.owner_of.insert(key, uid);
        }
    }

    /// The children of the controller with uid `owner`.
    pub(crate) fn of(&self, owner: &str) -> impl Iterator<Item = &ObjKey> {
        self.by_owner.get(owner).into_iter().flatten()
    }
}

/// The children the workload controllers look up.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Pods, by the uid of their ReplicaSet, StatefulSet, DaemonSet, Job or
    /// ReplicationController.
    pub(crate) pods: Owned,
    /// ReplicaSets, by the uid of their Deployment.
    pub(crate) replicasets: Owned,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, owner: Option<&str>) -> Value {
        let refs = owner.map(
            |uid| json!([ { "uid": uid, "controller": true, "kind": "ReplicaSet", "name": "rs" } ]),
        );
        json!({ "metadata": { "name": name, "namespace": "d", "ownerReferences": refs } })
    }

    #[test]
    fn children_follow_their_controller_reference() {
        let mut o = Owned::default();
        o.set(&pod("a", Some("u1")), false);
        o.set(&pod("b", Some("u1")), false);
        o.set(&pod("c", None), false);
        let names = |o: &Owned, uid: &str| o.of(uid).map(|(_, n)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&o, "u1"), ["a", "b"]);
        o.set(&pod("b", Some("u2")), false);
        assert_eq!(names(&o, "u1"), ["a"]);
        assert_eq!(names(&o, "u2"), ["b"]);
        o.set(&pod("a", Some("u1")), true);
        assert!(names(&o, "u1").is_empty());
    }
}
