//! The Event TTL: every write of a core Event gives it a lease of the store's `event_ttl` (the
//! API server's `--event-ttl`, one hour by default), and an Event whose last write is older than
//! that is deleted, as etcd drops a key whose lease ran out. A later write renews the lease, as
//! the API server's Event storage attaches a new one on each update.
//!
//! The leases are kept in write order. The TTL is one setting and the cluster's clock only moves
//! forward, so that order is also the order of their deadlines: the next to run out is always at
//! the front, and a renewed Event's earlier lease is skipped because its resourceVersion is no
//! longer the stored one.

use super::ObjKey;
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

/// The type key (see [`super::type_key`]) of the stored Events, whichever view wrote them.
pub(super) const EVENTS: &str = "events";

/// One write's lease.
#[derive(Debug, Clone)]
struct Lease {
    /// When it runs out.
    deadline: SystemTime,
    /// The Event's namespace and name.
    key: ObjKey,
    /// The resourceVersion of the write that took the lease.
    rv: u64,
}

/// The leases of the Events written so far, earliest deadline first.
#[derive(Debug, Clone)]
pub(super) struct EventLeases {
    ttl: Duration,
    leases: VecDeque<Lease>,
}

impl EventLeases {
    /// No leases yet; each write will take one of `ttl`.
    pub(super) fn new(ttl: Duration) -> Self {
        EventLeases {
            ttl,
            leases: VecDeque::new(),
        }
    }

    /// An Event was written at `now` as `rv`.
    pub(super) fn written(&mut self, key: ObjKey, rv: u64, now: SystemTime) {
        self.leases.push_back(Lease {
            deadline: now + self.ttl,
            key,
            rv,
        });
    }

    /// When the next lease runs out, if any is held.
    pub(super) fn next_deadline(&self) -> Option<SystemTime> {
        self.leases.front().map(|l| l.deadline)
    }

    /// Takes the leases that ran out by `now`: each Event's key and the resourceVersion its
    /// lease was taken at (the Event goes only if it is still that version).
    pub(super) fn due(&mut self, now: SystemTime) -> Vec<(ObjKey, u64)> {
        let mut out = Vec::new();
        while self.leases.front().is_some_and(|l| l.deadline <= now) {
            if let Some(l) = self.leases.pop_front() {
                out.push((l.key, l.rv));
            }
        }
        out
    }

    /// How many leases are held (renewed Events hold one per write until the old ones run out).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.leases.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjKey {
        ("default".to_string(), name.to_string())
    }

    #[test]
    fn leases_run_out_in_write_order_after_the_ttl() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let mut leases = EventLeases::new(Duration::from_secs(60));
        leases.written(key("a"), 5, t0);
        leases.written(key("b"), 6, t0 + Duration::from_secs(10));
        assert_eq!(leases.next_deadline(), Some(t0 + Duration::from_secs(60)));
        assert!(leases.due(t0 + Duration::from_secs(59)).is_empty());
        assert_eq!(
            leases.due(t0 + Duration::from_secs(65)),
            vec![(key("a"), 5)]
        );
        assert_eq!(leases.len(), 1);
        assert_eq!(
            leases.due(t0 + Duration::from_secs(70)),
            vec![(key("b"), 6)]
        );
        assert_eq!(leases.next_deadline(), None);
    }
}
