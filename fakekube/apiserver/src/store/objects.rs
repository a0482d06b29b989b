//! The stored objects by kind and key, and how a revision is kept: as a shared JSON tree, or
//! packed as its compact JSON.
//!
//! A JSON tree costs five to seven times its JSON (an 80-byte node per value, a 112-byte slot
//! and a hash index per object key). Most kinds are read all the time by the controllers and
//! the kubelet, and stay trees. Core Events are written often and read rarely (a LIST or a
//! watch by a client, a recorder counting a repeat), and a busy cluster keeps thousands of
//! them for the Event TTL: they are packed, and parsed again when read.

use super::{ObjKey, TypeKey, expiry};
use crate::status::ApiError;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// A revision as the store keeps it.
#[derive(Debug, Clone)]
pub(super) enum Kept {
    /// The tree, shared with readers.
    Tree(Arc<Value>),
    /// Its compact JSON.
    Packed(Arc<[u8]>),
}

impl Kept {
    /// The packed form of a tree; the tree itself if it cannot be written (it always can: its
    /// keys are strings).
    pub(super) fn pack(tree: &Arc<Value>) -> Kept {
        match serde_json::to_vec(tree.as_ref()) {
            Ok(json) => Kept::Packed(json.into()),
            Err(_) => Kept::Tree(Arc::clone(tree)),
        }
    }

    /// The revision as a tree: the shared one, or a new one parsed from the JSON.
    pub(super) fn tree(&self) -> Result<Arc<Value>, ApiError> {
        match self {
            Kept::Tree(tree) => Ok(Arc::clone(tree)),
            Kept::Packed(json) => serde_json::from_slice(json)
                .map(Arc::new)
                .map_err(|e| ApiError::internal(format!("a stored revision does not parse: {e}"))),
        }
    }

    /// The shared tree, when this is one.
    pub(super) fn shared(&self) -> Option<&Arc<Value>> {
        match self {
            Kept::Tree(tree) => Some(tree),
            Kept::Packed(_) => None,
        }
    }
}

/// Whether the store keeps the objects of this type packed.
fn packs(type_key: &str) -> bool {
    type_key == expiry::EVENTS
}

/// The keys of one namespace's objects.
pub(super) fn namespace_range(ns: &str) -> (Bound<ObjKey>, Bound<ObjKey>) {
    (
        Bound::Included((ns.to_string(), String::new())),
        // The least namespace after `ns`.
        Bound::Excluded((format!("{ns}\u{0}"), String::new())),
    )
}

/// One stored object as a reader gets it.
pub(super) struct Read<'a> {
    /// Its namespace and name.
    pub(super) key: &'a ObjKey,
    /// The revision.
    pub(super) object: Arc<Value>,
    /// Whether `object` is the store's own shared revision (not parsed for this read): what
    /// is derived from it may be kept as long as it lives.
    pub(super) shared: bool,
}

/// Every stored object, by type and by namespace and name.
#[derive(Debug, Default, Clone)]
pub(super) struct Objects {
    by_type: HashMap<TypeKey, BTreeMap<ObjKey, Kept>>,
}

impl Objects {
    /// The current revision of one object.
    pub(super) fn get(&self, type_key: &str, key: &ObjKey) -> Option<Arc<Value>> {
        let kept = self.by_type.get(type_key)?.get(key)?;
        match kept.tree() {
            Ok(tree) => Some(tree),
            Err(e) => {
                tracing::warn!(error = %e.message, "reading a stored object");
                None
            }
        }
    }

    /// Whether an object is stored under this key.
    pub(super) fn contains(&self, type_key: &str, key: &ObjKey) -> bool {
        self.by_type
            .get(type_key)
            .is_some_and(|m| m.contains_key(key))
    }

    /// The objects of a type whose keys fall in `range`, in key order (a packed object that
    /// does not parse is left out, with a warning).
    pub(super) fn range<'a>(
        &'a self,
        type_key: &str,
        range: (Bound<ObjKey>, Bound<ObjKey>),
    ) -> impl Iterator<Item = Read<'a>> + 'a {
        self.by_type
            .get(type_key)
            .map(|m| m.range(range))
            .into_iter()
            .flatten()
            .filter_map(|(key, kept)| match kept.tree() {
                Ok(object) => Some(Read {
                    key,
                    shared: kept.shared().is_some(),
                    object,
                }),
                Err(e) => {
                    tracing::warn!(error = %e.message, "reading a stored object");
                    None
                }
            })
    }

    /// Every object of a type, in key order.
    pub(super) fn all<'a>(&'a self, type_key: &str) -> impl Iterator<Item = Read<'a>> + 'a {
        self.range(type_key, (Bound::Unbounded, Bound::Unbounded))
    }

    /// The keys of the objects of a type that fall in `range`, in order.
    pub(super) fn keys(&self, type_key: &str, range: impl RangeBounds<ObjKey>) -> Vec<ObjKey> {
        self.by_type
            .get(type_key)
            .map(|m| m.range(range).map(|(k, _)| k.clone()).collect())
            .unwrap_or_default()
    }

    /// How many objects of a type are stored.
    pub(super) fn count(&self, type_key: &str) -> usize {
        self.by_type.get(type_key).map_or(0, BTreeMap::len)
    }

    /// Stores `revision` as the object's current one (packed, for a kind kept packed) and
    /// returns the one it replaces.
    pub(super) fn insert(
        &mut self,
        type_key: &str,
        key: ObjKey,
        revision: &Arc<Value>,
    ) -> Option<Arc<Value>> {
        let kept = if packs(type_key) {
            Kept::pack(revision)
        } else {
            Kept::Tree(Arc::clone(revision))
        };
        let old = self
            .by_type
            .entry(type_key.to_string())
            .or_default()
            .insert(key, kept)?;
        old.tree().ok()
    }

    /// Removes an object and returns its last revision.
    pub(super) fn remove(&mut self, type_key: &str, key: &ObjKey) -> Option<Arc<Value>> {
        let old = self.by_type.get_mut(type_key)?.remove(key)?;
        match old.tree() {
            Ok(tree) => Some(tree),
            Err(e) => {
                tracing::warn!(error = %e.message, "removing a stored object");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str) -> ObjKey {
        ("default".to_string(), name.to_string())
    }

    #[test]
    fn an_event_is_kept_packed_and_reads_back_the_same_object_in_the_same_order() {
        let mut objects = Objects::default();
        let event = Arc::new(json!({
            "metadata": { "name": "p.1", "namespace": "default" },
            "involvedObject": { "kind": "Pod", "name": "p" },
            "count": 1, "eventTime": null, "zeta": 1.5, "alpha": [true, "x"],
        }));
        objects.insert(expiry::EVENTS, key("p.1"), &event);
        let kept = objects
            .by_type
            .get(expiry::EVENTS)
            .and_then(|m| m.get(&key("p.1")));
        assert!(matches!(kept, Some(Kept::Packed(_))));
        let read = objects.get(expiry::EVENTS, &key("p.1")).expect("stored");
        assert_eq!(read, event);
        assert_eq!(
            serde_json::to_string(&*read).ok(),
            serde_json::to_string(&*event).ok()
        );
    }

    #[test]
    fn a_pod_is_kept_as_the_shared_tree() {
        let mut objects = Objects::default();
        let pod = Arc::new(json!({ "metadata": { "name": "p", "namespace": "default" } }));
        objects.insert("pods", key("p"), &pod);
        let read = objects.get("pods", &key("p")).expect("stored");
        assert!(Arc::ptr_eq(&read, &pod));
        let listed: Vec<bool> = objects.all("pods").map(|r| r.shared).collect();
        assert_eq!(listed, [true]);
    }

    #[test]
    fn a_namespace_range_holds_that_namespace_only() {
        let mut objects = Objects::default();
        for (ns, name) in [("a", "x"), ("ab", "y"), ("a", "z"), ("b", "w")] {
            let obj = Arc::new(json!({ "metadata": { "name": name, "namespace": ns } }));
            objects.insert("pods", (ns.to_string(), name.to_string()), &obj);
        }
        let names: Vec<String> = objects
            .keys("pods", namespace_range("a"))
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(names, ["x", "z"]);
    }
}
