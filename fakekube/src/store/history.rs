//! The event log: the last `event_log_capacity` changes, in resourceVersion order, that
//! watches replay and the fake's own controllers, kubelet and watchers read.
//!
//! The log is the store's watch cache, and a revision it holds lives as long as its entry does:
//! for a busy cluster, thousands of superseded revisions, each a JSON tree five to seven times
//! the size of its JSON. So once an entry is [`RECENT`] entries behind the newest one, every
//! revision it holds that the store no longer serves (an older state, a deleted object's last
//! one) is kept as its compact JSON instead, and parsed again if a reader that far behind asks
//! for it. A revision the store still serves stays shared with the store: it costs nothing
//! more. Readers get the same objects either way.

use super::objects::Kept;
use super::{Event, EventType};
use crate::registry::ResourceType;
use crate::status::ApiError;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;

/// How many of the newest entries keep every revision as a tree: the readers in the process
/// read each change within a few writes of it, and should never have to parse it.
pub(super) const RECENT: usize = 512;

/// One change as the log keeps it.
#[derive(Debug)]
struct Entry {
    rv: u64,
    rt: Arc<ResourceType>,
    kind: EventType,
    object: Kept,
    prev: Option<Kept>,
}

impl Entry {
    /// The change as readers see it.
    fn event(&self) -> Result<Event, ApiError> {
        Ok(Event {
            rv: self.rv,
            rt: Arc::clone(&self.rt),
            kind: self.kind,
            object: self.object.tree()?,
            prev: self.prev.as_ref().map(Kept::tree).transpose()?,
        })
    }
}

/// The log of changes.
#[derive(Debug)]
pub(super) struct History {
    entries: VecDeque<Entry>,
    /// Every change with a greater resourceVersion is in the log.
    floor: u64,
    /// How many entries the log keeps.
    capacity: usize,
    /// The entries before this index have had their superseded revisions packed.
    packed: usize,
}

impl History {
    /// An empty log that keeps `capacity` changes.
    pub(super) fn new(capacity: usize) -> Self {
        History {
            entries: VecDeque::new(),
            floor: 0,
            capacity: capacity.max(1),
            packed: 0,
        }
    }

    /// Appends a change (its rv greater than every other's), drops the oldest beyond the
    /// capacity and packs the revisions of the entry that just fell [`RECENT`] behind, unless
    /// `served` says the store still serves them.
    pub(super) fn push(
        &mut self,
        event: Event,
        served: impl Fn(&ResourceType, &Arc<Value>) -> bool,
    ) {
        self.entries.push_back(Entry {
            rv: event.rv,
            rt: event.rt,
            kind: event.kind,
            object: Kept::Tree(event.object),
            prev: event.prev.map(Kept::Tree),
        });
        while self.entries.len() > self.capacity {
            if let Some(e) = self.entries.pop_front() {
                self.floor = e.rv;
                self.packed = self.packed.saturating_sub(1);
            }
        }
        while self.entries.len() - self.packed > RECENT {
            let entry = &mut self.entries[self.packed];
            for kept in std::iter::once(&mut entry.object).chain(entry.prev.as_mut()) {
                if let Kept::Tree(tree) = kept
                    && !served(&entry.rt, tree)
                {
                    *kept = Kept::pack(tree);
                }
            }
            self.packed += 1;
        }
    }

    /// The changes after `rv`, or 410 Expired when the log no longer reaches back that far.
    pub(super) fn since(&self, rv: u64) -> Result<Vec<Event>, ApiError> {
        if rv < self.floor {
            return Err(ApiError::expired(format!(
                "too old resource version: {rv} ({})",
                self.floor
            )));
        }
        // In resourceVersion order: find the first newer change, don't scan.
        let first = self.entries.partition_point(|e| e.rv <= rv);
        self.entries.range(first..).map(Entry::event).collect()
    }

    /// Forgets every change: the log starts again at `rv`.
    pub(super) fn compact(&mut self, rv: u64) {
        self.floor = rv;
        self.entries.clear();
        self.packed = 0;
    }

    /// How many revisions the log keeps packed, for tests.
    #[cfg(test)]
    pub(super) fn packed_revisions(&self) -> usize {
        self.entries
            .iter()
            .flat_map(|e| std::iter::once(&e.object).chain(e.prev.as_ref()))
            .filter(|k| matches!(k, Kept::Packed(_)))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    fn secrets() -> Arc<ResourceType> {
        Registry::new()
            .find("", "v1", "secrets")
            .expect("secrets are served")
    }

    fn revision(name: &str, n: usize) -> Arc<Value> {
        Arc::new(
            json!({ "metadata": { "name": name, "namespace": "m", "resourceVersion": n.to_string() }, "data": { "n": n } }),
        )
    }

    /// Writes `s0` once, then `s1` over and over: every entry but the last two holds a revision
    /// the store no longer serves. Returns what each entry was given.
    fn written(log: &mut History, writes: usize) -> Vec<(Arc<Value>, Option<Arc<Value>>)> {
        let rt = secrets();
        let kept = revision("s0", 0);
        let mut given = vec![(kept.clone(), None)];
        log.push(
            Event {
                rv: 1,
                rt: rt.clone(),
                kind: EventType::Added,
                object: kept.clone(),
                prev: None,
            },
            |_, r| Arc::ptr_eq(r, &kept),
        );
        let mut prev: Option<Arc<Value>> = None;
        let mut current = revision("s1", 1);
        for n in 1..writes {
            current = revision("s1", n);
            let kind = if prev.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            };
            given.push((current.clone(), prev.clone()));
            let now = current.clone();
            let keep = kept.clone();
            log.push(
                Event {
                    rv: n as u64 + 1,
                    rt: rt.clone(),
                    kind,
                    object: current.clone(),
                    prev: prev.replace(current.clone()),
                },
                move |_, r| Arc::ptr_eq(r, &now) || Arc::ptr_eq(r, &keep),
            );
        }
        drop(current);
        given
    }

    #[test]
    fn revisions_the_store_no_longer_serves_are_packed_once_they_fall_behind() {
        let mut log = History::new(10_000);
        let writes = RECENT + 100;
        written(&mut log, writes);
        // The 100 oldest entries fell behind: the first holds a served revision, the second
        // a superseded one without a previous, the other 98 two superseded ones each.
        assert_eq!(log.packed_revisions(), 1 + 98 * 2);
    }

    #[test]
    fn a_reader_far_behind_gets_the_same_changes_as_were_written() {
        let mut log = History::new(10_000);
        let given = written(&mut log, RECENT * 2);
        let read = log.since(0).expect("the log reaches back");
        assert_eq!(read.len(), given.len());
        for (event, (object, prev)) in read.iter().zip(&given) {
            assert_eq!(&event.object, object);
            assert_eq!(&event.prev, prev);
        }
    }

    #[test]
    fn the_log_keeps_its_capacity_and_expires_what_it_dropped() {
        let mut log = History::new(RECENT + 10);
        written(&mut log, RECENT + 50);
        assert_eq!(
            log.since(0).map(|e| e.len()).map_err(|e| e.code.as_u16()),
            Err(410)
        );
        assert_eq!(log.since(40).map(|e| e.len()).ok(), Some(RECENT + 10));
    }
}
