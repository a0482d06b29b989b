//! Stored revisions a [`super::Schema`] has already judged, so that reads and writes do not
//! walk them again: those with every default of the schema, and those that passed its
//! validation.
//!
//! A revision is named by the address of its value inside its `Arc`. Each entry holds a
//! `Weak` to that `Arc`, which keeps the allocation (not the value) alive, so no other value
//! can take the address while the entry exists: a `&Value` found at an entry's address is
//! that revision. Entries of revisions that are gone are swept once the map has doubled
//! since the last sweep.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// The fewest entries before the first sweep.
const FIRST_SWEEP: usize = 1024;

/// A set of stored revisions, by address.
#[derive(Debug, Default)]
pub(super) struct Revisions {
    /// The entries, and the size at which the next sweep runs.
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// Address of the value -> the revision.
    by_address: HashMap<usize, Weak<Value>>,
    /// Sweep when the map reaches this size.
    sweep_at: usize,
}

impl Revisions {
    /// Whether `value` is a revision in the set.
    pub(super) fn contains(&self, value: &Value) -> bool {
        let address = std::ptr::from_ref(value) as usize;
        self.lock()
            .by_address
            .get(&address)
            .is_some_and(|w| w.strong_count() > 0)
    }

    /// Adds a revision.
    pub(super) fn insert(&self, revision: &Arc<Value>) {
        let mut entries = self.lock();
        let address = Arc::as_ptr(revision) as usize;
        entries.by_address.insert(address, Arc::downgrade(revision));
        if entries.by_address.len() >= entries.sweep_at.max(FIRST_SWEEP) {
            entries.by_address.retain(|_, w| w.strong_count() > 0);
            entries.sweep_at = entries.by_address.len() * 2;
        }
    }

    /// How many entries the set holds (gone revisions not yet swept included).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().by_address.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}
