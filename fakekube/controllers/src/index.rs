//! Indexes the controllers keep from the change log, so that a controller finds an owner's
//! children or a pool's members without scanning every object of a kind: objects grouped by
//! the uid of their controller reference ([`Owned`]), by the value of one label in their
//! namespace ([`Labeled`]), or by any group the controller derives ([`Grouped`]).
//!
//! An index follows the log, so it lags the API by the changes not read yet: a controller
//! reads the objects it finds through the index from the API, and hears of what the index
//! did not have yet from the change that follows.

use crate::meta::{meta_str, str_at};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

/// A namespace and a name.
pub(crate) type ObjKey = (String, String);

/// The namespace and name of an object.
pub(crate) fn key_of(obj: &Value) -> ObjKey {
    (
        meta_str(obj, "namespace").unwrap_or("").to_string(),
        meta_str(obj, "name").unwrap_or("").to_string(),
    )
}

/// Objects of one kind by a group each is in (at most one).
#[derive(Debug)]
pub(crate) struct Grouped<G> {
    members: HashMap<G, BTreeSet<ObjKey>>,
    group_of: HashMap<ObjKey, G>,
}

impl<G> Default for Grouped<G> {
    fn default() -> Self {
        Grouped {
            members: HashMap::new(),
            group_of: HashMap::new(),
        }
    }
}

impl<G: Eq + Hash + Clone> Grouped<G> {
    /// Puts the object `key` in `group`, out of the one it was in (`None`: in none, as when
    /// the object is deleted).
    pub(crate) fn set(&mut self, key: ObjKey, group: Option<G>) {
        if self.group_of.get(&key) == group.as_ref() {
            return;
        }
        if let Some(old) = self.group_of.remove(&key)
            && let Some(set) = self.members.get_mut(&old)
        {
            set.remove(&key);
            if set.is_empty() {
                self.members.remove(&old);
            }
        }
        if let Some(g) = group {
            self.members
                .entry(g.clone())
                .or_default()
                .insert(key.clone());
            self.group_of.insert(key, g);
        }
    }

    /// The objects in `group`, by namespace and name.
    pub(crate) fn of<'a>(&'a self, group: &G) -> impl Iterator<Item = &'a ObjKey> + use<'a, G> {
        self.members.get(group).into_iter().flatten()
    }
}

/// Objects by the uid of their controller reference.
#[derive(Debug, Default)]
pub(crate) struct Owned(Grouped<String>);

impl Owned {
    /// Records `obj`'s controller reference (`gone`: the object was deleted).
    pub(crate) fn set(&mut self, obj: &Value, gone: bool) {
        let owner = (!gone)
            .then(|| controller_uid(obj))
            .flatten()
            .map(str::to_string);
        self.0.set(key_of(obj), owner);
    }

    /// The objects whose controller has uid `owner`.
    pub(crate) fn of<'a>(&'a self, owner: &str) -> impl Iterator<Item = &'a ObjKey> + use<'a> {
        self.0.of(&owner.to_string())
    }
}

/// The uid of an object's controller reference.
pub(crate) fn controller_uid(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
}

/// Objects by their namespace and the value of one label.
#[derive(Debug)]
pub(crate) struct Labeled {
    label: &'static str,
    groups: Grouped<ObjKey>,
}

impl Labeled {
    /// An empty index of the label `label`.
    pub(crate) fn new(label: &'static str) -> Self {
        Labeled {
            label,
            groups: Grouped::default(),
        }
    }

    /// Records `obj`'s label (`gone`: the object was deleted).
    pub(crate) fn set(&mut self, obj: &Value, gone: bool) {
        let (ns, name) = key_of(obj);
        let value = (!gone)
            .then(|| str_at(obj, &["metadata", "labels", self.label]))
            .flatten()
            .map(|v| (ns.clone(), v.to_string()));
        self.groups.set((ns, name), value);
    }

    /// The objects of namespace `ns` whose label is `value`, by name.
    pub(crate) fn of<'a>(
        &'a self,
        ns: &str,
        value: &str,
    ) -> impl Iterator<Item = &'a ObjKey> + use<'a> {
        self.groups.of(&(ns.to_string(), value.to_string()))
    }
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

    fn names<'a>(keys: impl Iterator<Item = &'a ObjKey>) -> Vec<String> {
        keys.map(|(_, n)| n.clone()).collect()
    }

    #[test]
    fn children_follow_their_controller_reference() {
        let mut o = Owned::default();
        o.set(&pod("a", Some("u1")), false);
        o.set(&pod("b", Some("u1")), false);
        o.set(&pod("c", None), false);
        assert_eq!(names(o.of("u1")), ["a", "b"]);
        o.set(&pod("b", Some("u2")), false);
        assert_eq!(names(o.of("u1")), ["a"]);
        assert_eq!(names(o.of("u2")), ["b"]);
        o.set(&pod("a", Some("u1")), true);
        assert!(names(o.of("u1")).is_empty());
    }

    #[test]
    fn a_reference_that_is_not_the_controller_groups_nothing() {
        let mut o = Owned::default();
        let obj = json!({ "metadata": { "name": "a", "namespace": "d",
            "ownerReferences": [ { "uid": "u1", "kind": "X", "name": "x" } ] } });
        o.set(&obj, false);
        assert!(names(o.of("u1")).is_empty());
    }

    #[test]
    fn labeled_objects_are_found_by_namespace_and_value() {
        let sb = |ns: &str, name: &str, v: Option<&str>| json!({ "metadata": { "name": name, "namespace": ns, "labels": { "pool": v } } });
        let mut l = Labeled::new("pool");
        l.set(&sb("a", "m1", Some("h1")), false);
        l.set(&sb("a", "m2", Some("h1")), false);
        l.set(&sb("b", "m3", Some("h1")), false);
        l.set(&sb("a", "m4", None), false);
        assert_eq!(names(l.of("a", "h1")), ["m1", "m2"]);
        l.set(&sb("a", "m1", None), false);
        l.set(&sb("a", "m2", Some("h1")), true);
        assert!(names(l.of("a", "h1")).is_empty());
        assert_eq!(names(l.of("b", "h1")), ["m3"]);
    }
}
