//! What garbage collection looks up, kept as objects are stored and removed, so that removing
//! one object costs the same whatever the store holds: the uids alive, the dependents of each
//! owner (by any ownerReference) and the objects waiting in foreground deletion.

use super::{ObjKey, TypeKey};
use crate::meta::{finalizers, meta_str, owner_uids};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// An object anywhere in the store: its type and its namespace and name.
pub(super) type StoreKey = (TypeKey, ObjKey);

/// The indexes of the stored objects' uids, owner references and foreground deletions.
#[derive(Debug, Default, Clone)]
pub(super) struct References {
    /// How many stored objects have each uid (one, unless a client chose a duplicate).
    uids: HashMap<String, usize>,
    /// The objects with an ownerReference to each uid.
    dependents: HashMap<String, BTreeSet<StoreKey>>,
    /// The objects being deleted that hold the `foregroundDeletion` finalizer.
    foreground: BTreeSet<StoreKey>,
}

impl References {
    /// `obj` is stored under `key` (in place of `old`, if any).
    pub(super) fn stored(&mut self, key: &StoreKey, obj: &Value, old: Option<&Value>) {
        if let Some(old) = old {
            self.removed(key, old);
        }
        if let Some(uid) = meta_str(obj, "uid") {
            *self.uids.entry(uid.to_string()).or_default() += 1;
        }
        for owner in owner_uids(obj) {
            self.dependents
                .entry(owner)
                .or_default()
                .insert(key.clone());
        }
        if in_foreground_deletion(obj) {
            self.foreground.insert(key.clone());
        }
    }

    /// `obj`, stored under `key`, is no longer.
    pub(super) fn removed(&mut self, key: &StoreKey, obj: &Value) {
        if let Some(uid) = meta_str(obj, "uid")
            && let Some(n) = self.uids.get_mut(uid)
        {
            *n -= 1;
            if *n == 0 {
                self.uids.remove(uid);
            }
        }
        for owner in owner_uids(obj) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
        self.foreground.remove(key);
    }

    /// Whether an object with this uid is stored.
    pub(super) fn uid_exists(&self, uid: &str) -> bool {
        self.uids.contains_key(uid)
    }

    /// The objects with an ownerReference to `uid`.
    pub(super) fn dependents_of(&self, uid: &str) -> impl Iterator<Item = &StoreKey> {
        self.dependents.get(uid).into_iter().flatten()
    }

    /// The objects waiting in foreground deletion.
    pub(super) fn in_foreground(&self) -> impl Iterator<Item = &StoreKey> {
        self.foreground.iter()
    }
}

/// Whether `obj` is being deleted and holds the `foregroundDeletion` finalizer.
fn in_foreground_deletion(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some()
        && finalizers(obj).iter().any(|f| f == "foregroundDeletion")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str) -> StoreKey {
        ("pods".into(), ("d".into(), name.into()))
    }

    #[test]
    fn dependents_follow_the_owner_references_of_the_stored_version() {
        let mut r = References::default();
        let v1 = json!({ "metadata": { "uid": "p1", "ownerReferences": [ { "uid": "o1" }, { "uid": "o2" } ] } });
        let v2 = json!({ "metadata": { "uid": "p1", "ownerReferences": [ { "uid": "o2" } ] } });
        r.stored(&key("a"), &v1, None);
        assert_eq!(r.dependents_of("o1").count(), 1);
        r.stored(&key("a"), &v2, Some(&v1));
        assert_eq!(r.dependents_of("o1").count(), 0);
        assert_eq!(r.dependents_of("o2").count(), 1);
        assert!(r.uid_exists("p1"));
        r.removed(&key("a"), &v2);
        assert_eq!(r.dependents_of("o2").count(), 0);
        assert!(!r.uid_exists("p1"));
    }

    #[test]
    fn only_deleted_objects_with_the_foreground_finalizer_wait_in_the_foreground() {
        let mut r = References::default();
        let live = json!({ "metadata": { "uid": "a", "finalizers": ["foregroundDeletion"] } });
        let deleting = json!({ "metadata": { "uid": "a", "deletionTimestamp": "2026-01-01T00:00:00Z",
            "finalizers": ["foregroundDeletion"] } });
        r.stored(&key("a"), &live, None);
        assert_eq!(r.in_foreground().count(), 0);
        r.stored(&key("a"), &deleting, Some(&live));
        assert_eq!(r.in_foreground().count(), 1);
        r.removed(&key("a"), &deleting);
        assert_eq!(r.in_foreground().count(), 0);
    }
}
