//! The JSON of stored revisions, written once and shared by every LIST that returns them.
//!
//! A stored object never changes: a write stores a new revision (a new `Arc`). So the JSON of
//! a revision, in the shape its kind is written in, can be kept for as long as the revision
//! lives, and a LIST of objects that did not change since the last one copies bytes instead of
//! serializing every item again.
//!
//! Entries are keyed by the revision's address and hold a [`Weak`] to it: while an entry
//! exists the address cannot be reused (the allocation stays until the last `Weak` goes), so
//! an entry whose revision is still alive is that revision's. Entries of revisions that are
//! gone are swept once the map has doubled since the last sweep, so the cache holds at most
//! about twice the JSON of the revisions listed lately.

use super::Item;
use crate::encoding::{self, Shape};
use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// The least number of entries at which the cache sweeps.
const FIRST_SWEEP: usize = 1024;

/// The JSON of stored revisions (see the module's documentation).
#[derive(Debug, Default)]
pub(crate) struct WireCache {
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// By the revision's address.
    map: HashMap<usize, Entry>,
    /// The size at which the next insert sweeps.
    sweep_at: usize,
}

#[derive(Debug)]
struct Entry {
    /// The revision (pins its address while the entry exists).
    revision: Weak<Value>,
    /// The shape `json` was written in.
    shape: Shape,
    /// The revision's JSON, without a trailing newline.
    json: Bytes,
}

impl WireCache {
    /// The JSON of each item in `shape` ([`encoding::item_json`]), from the cache for revisions
    /// written before, written now (and kept, for revisions) for the rest.
    pub(crate) fn items_json(&self, items: &[Item], shape: Shape) -> Vec<Bytes> {
        let mut out: Vec<Option<Bytes>> = {
            let Ok(entries) = self.entries.lock() else {
                return items
                    .iter()
                    .map(|i| Bytes::from(encoding::item_json(&i.object, shape)))
                    .collect();
            };
            items
                .iter()
                .map(|i| {
                    if !i.revision {
                        return None;
                    }
                    entries
                        .map
                        .get(&address(&i.object))
                        .filter(|e| e.shape == shape && e.revision.strong_count() > 0)
                        .map(|e| e.json.clone())
                })
                .collect()
        };
        let mut written = Vec::new();
        for (slot, item) in out.iter_mut().zip(items) {
            if slot.is_none() {
                let json = Bytes::from(encoding::item_json(&item.object, shape));
                if item.revision {
                    written.push((&item.object, json.clone()));
                }
                *slot = Some(json);
            }
        }
        if !written.is_empty()
            && let Ok(mut entries) = self.entries.lock()
        {
            for (revision, json) in written {
                entries.insert(revision, shape, json);
            }
        }
        out.into_iter().flatten().collect()
    }

    /// How many entries the cache holds (live or not yet swept).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().map(|e| e.map.len()).unwrap_or(0)
    }
}

impl Entries {
    fn insert(&mut self, revision: &Arc<Value>, shape: Shape, json: Bytes) {
        if self.map.len() >= self.sweep_at.max(FIRST_SWEEP) {
            self.map.retain(|_, e| e.revision.strong_count() > 0);
            self.sweep_at = self.map.len() * 2;
        }
        self.map.insert(
            address(revision),
            Entry {
                revision: Arc::downgrade(revision),
                shape,
                json,
            },
        );
    }
}

/// The address of a revision, its key.
fn address(revision: &Arc<Value>) -> usize {
    Arc::as_ptr(revision) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn revision(v: Value) -> Item {
        Item {
            object: Arc::new(v),
            revision: true,
        }
    }

    #[test]
    fn a_revision_is_written_once_and_its_json_shared() {
        let cache = WireCache::default();
        let items = vec![revision(
            json!({ "kind": "Pod", "metadata": { "name": "a" } }),
        )];
        let first = cache.items_json(&items, Shape::Typed);
        let second = cache.items_json(&items, Shape::Typed);
        assert_eq!(first, second);
        assert_eq!(
            first[0].as_ptr(),
            second[0].as_ptr(),
            "the second LIST copies no JSON"
        );
        assert_eq!(&first[0][..], br#"{"kind":"Pod","metadata":{"name":"a"}}"#);
    }

    #[test]
    fn a_new_revision_at_a_reused_address_is_written_anew() {
        let cache = WireCache::default();
        let old = revision(json!({ "metadata": { "name": "a", "resourceVersion": "1" } }));
        let old_json = cache.items_json(std::slice::from_ref(&old), Shape::Typed);
        drop(old);
        // Whatever address the next revision gets, its JSON is its own.
        let new = revision(json!({ "metadata": { "name": "a", "resourceVersion": "2" } }));
        let new_json = cache.items_json(std::slice::from_ref(&new), Shape::Typed);
        assert_ne!(old_json, new_json);
        assert_eq!(
            &new_json[0][..],
            br#"{"metadata":{"name":"a","resourceVersion":"2"}}"#
        );
    }

    #[test]
    fn the_shape_is_part_of_what_is_kept() {
        let cache = WireCache::default();
        let items = vec![revision(json!({ "kind": "X", "apiVersion": "v1" }))];
        let typed = cache.items_json(&items, Shape::Typed);
        let sorted = cache.items_json(&items, Shape::Unstructured);
        assert_eq!(&typed[0][..], br#"{"kind":"X","apiVersion":"v1"}"#);
        assert_eq!(&sorted[0][..], br#"{"apiVersion":"v1","kind":"X"}"#);
    }

    #[test]
    fn converted_items_are_not_kept() {
        let cache = WireCache::default();
        let items = vec![Item {
            object: Arc::new(json!({ "kind": "X" })),
            revision: false,
        }];
        let json = cache.items_json(&items, Shape::Typed);
        assert_eq!(&json[0][..], br#"{"kind":"X"}"#);
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn entries_of_revisions_that_are_gone_are_swept() {
        let cache = WireCache::default();
        for i in 0..(3 * FIRST_SWEEP) {
            let item = revision(json!({ "metadata": { "name": format!("p{i}") } }));
            cache.items_json(std::slice::from_ref(&item), Shape::Typed);
        }
        assert!(
            cache.len() <= FIRST_SWEEP + 1,
            "{} entries kept for revisions that are all gone",
            cache.len()
        );
    }
}
