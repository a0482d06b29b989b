//! The event log: the last `event_log_capacity` changes, in resourceVersion order, that
//! watches replay and the fake's own controllers, kubelet and watchers read. It is the store's
//! watch cache: a revision it holds lives as long as its entry does, shared with the store
//! while the store still serves it.

use super::Event;
use crate::status::ApiError;
use std::collections::VecDeque;

/// The log of changes.
#[derive(Debug, Clone)]
pub(super) struct History {
    entries: VecDeque<Event>,
    /// Every change with a greater resourceVersion is in the log.
    floor: u64,
    /// How many entries the log keeps.
    capacity: usize,
}

impl History {
    /// An empty log that keeps `capacity` changes.
    pub(super) fn new(capacity: usize) -> Self {
        History {
            entries: VecDeque::new(),
            floor: 0,
            capacity: capacity.max(1),
        }
    }

    /// Appends a change (its rv greater than every other's) and drops the oldest beyond the
    /// capacity.
    pub(super) fn push(&mut self, event: Event) {
        self.entries.push_back(event);
        while self.entries.len() > self.capacity {
            if let Some(e) = self.entries.pop_front() {
                self.floor = e.rv;
            }
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
        Ok(self.entries.range(first..).cloned().collect())
    }

    /// Forgets every change: the log starts again at `rv`.
    pub(super) fn compact(&mut self, rv: u64) {
        self.floor = rv;
        self.entries.clear();
    }
}
