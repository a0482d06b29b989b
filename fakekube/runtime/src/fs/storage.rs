//! What the filesystems hold, counted: each tree (a pod's root, a volume) has a [`Usage`] of
//! the bytes its files hold, charged to the [`StorageBudget`] shared by every filesystem of a
//! server. A write that would take the budget past its limit fails with ENOSPC; a pod's root
//! may also have an ephemeral-storage limit, which does not refuse writes (a node's disk does
//! not either) but fires a token the kubelet evicts the pod on. A tree gives its bytes back to
//! the budget when it is dropped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::FsError;

/// The memory every pod filesystem of a server may hold together; clones share it.
#[derive(Debug, Clone)]
pub struct StorageBudget(Arc<BudgetInner>);

#[derive(Debug)]
struct BudgetInner {
    /// Bytes held.
    used: AtomicU64,
    /// Bytes allowed.
    limit: u64,
}

impl StorageBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        StorageBudget(Arc::new(BudgetInner {
            used: AtomicU64::new(0),
            limit,
        }))
    }

    /// A budget without limit (what a filesystem made without one charges).
    pub fn unlimited() -> Self {
        Self::new(u64::MAX)
    }

    /// Bytes the filesystems hold now.
    pub fn used(&self) -> u64 {
        self.0.used.load(Ordering::SeqCst)
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> u64 {
        self.0.limit
    }

    /// Takes `n` bytes, or ENOSPC when they would pass the limit.
    fn take(&self, n: u64) -> Result<(), FsError> {
        self.0
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(n).filter(|total| *total <= self.0.limit)
            })
            .map(|_| ())
            .map_err(|_| FsError::NoSpace)
    }

    /// Takes `n` bytes whatever the limit.
    fn force(&self, n: u64) {
        self.0.used.fetch_add(n, Ordering::SeqCst);
    }

    /// Gives `n` bytes back.
    fn give(&self, n: u64) {
        let _ = self
            .0
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                Some(used.saturating_sub(n))
            });
    }
}

impl Default for StorageBudget {
    fn default() -> Self {
        Self::unlimited()
    }
}

/// The bytes one tree holds, charged to its budget. Shared by the clones of the tree's
/// filesystem; given back when the last one goes.
#[derive(Debug)]
pub(crate) struct Usage {
    /// Bytes held.
    bytes: AtomicU64,
    /// Where they are charged.
    budget: Mutex<StorageBudget>,
    /// Whether the budget was given (a volume made without one takes its first pod's).
    adopted: AtomicBool,
    /// The ephemeral-storage limit (0: none).
    limit: AtomicU64,
    /// Fires once the bytes pass the limit.
    exceeded: CancellationToken,
}

impl Usage {
    /// A tree holding nothing yet, charged to `budget`.
    pub fn new(budget: StorageBudget) -> Arc<Self> {
        Arc::new(Usage {
            bytes: AtomicU64::new(0),
            budget: Mutex::new(budget),
            adopted: AtomicBool::new(true),
            limit: AtomicU64::new(0),
            exceeded: CancellationToken::new(),
        })
    }

    /// A tree charged to no budget until a filesystem with one mounts it ([`Usage::adopt`]).
    pub(crate) fn unadopted() -> Arc<Self> {
        let usage = Self::new(StorageBudget::unlimited());
        usage.adopted.store(false, Ordering::SeqCst);
        usage
    }

    /// The budget charged.
    fn budget(&self) -> StorageBudget {
        self.budget
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Charges this tree to `budget` from now on, with what it holds already, unless it was
    /// given a budget before.
    pub(crate) fn adopt(&self, budget: &StorageBudget) {
        if self.adopted.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut slot = self.budget.lock().unwrap_or_else(|p| p.into_inner());
        let held = self.bytes();
        slot.give(held);
        budget.force(held);
        *slot = budget.clone();
    }

    /// Charges `n` bytes already held (a fresh root's image), even past the limit.
    pub(crate) fn charge_initial(&self, n: usize) {
        self.budget().force(n as u64);
        self.bytes.fetch_add(n as u64, Ordering::SeqCst);
    }

    /// Takes `n` more bytes from the budget, or ENOSPC.
    pub(crate) fn grow(&self, n: usize) -> Result<(), FsError> {
        let n = n as u64;
        if n == 0 {
            return Ok(());
        }
        self.budget().take(n)?;
        let now = self.bytes.fetch_add(n, Ordering::SeqCst).saturating_add(n);
        let limit = self.limit.load(Ordering::SeqCst);
        if limit > 0 && now > limit {
            self.exceeded.cancel();
        }
        Ok(())
    }

    /// Gives `n` bytes back to the budget.
    pub(crate) fn shrink(&self, n: usize) {
        let n = n as u64;
        if n == 0 {
            return;
        }
        let _ = self
            .bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| {
                Some(b.saturating_sub(n))
            });
        self.budget().give(n);
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::SeqCst)
    }

    /// Sets the ephemeral-storage limit (0: none); the token fires at once if it is passed.
    pub(crate) fn set_limit(&self, limit: u64) -> CancellationToken {
        self.limit.store(limit, Ordering::SeqCst);
        if limit > 0 && self.bytes() > limit {
            self.exceeded.cancel();
        }
        self.exceeded.clone()
    }
}

impl Drop for Usage {
    fn drop(&mut self) {
        self.budget().give(self.bytes.load(Ordering::SeqCst));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_refuses_what_would_pass_its_limit_and_takes_back_what_a_tree_frees() {
        let budget = StorageBudget::new(100);
        let a = Usage::new(budget.clone());
        let b = Usage::new(budget.clone());
        assert_eq!(a.grow(60), Ok(()));
        assert_eq!(b.grow(50), Err(FsError::NoSpace));
        assert_eq!(b.grow(40), Ok(()));
        assert_eq!(budget.used(), 100);
        a.shrink(10);
        assert_eq!(budget.used(), 90);
        drop(b);
        assert_eq!(budget.used(), 50);
    }

    #[test]
    fn a_volume_made_without_budget_is_charged_to_the_first_that_mounts_it() {
        let budget = StorageBudget::new(100);
        let volume = Usage::unadopted();
        assert_eq!(volume.grow(500), Ok(()));
        volume.adopt(&budget);
        assert_eq!(budget.used(), 500);
        assert_eq!(volume.grow(1), Err(FsError::NoSpace));
        volume.adopt(&StorageBudget::new(1000));
        drop(volume);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn passing_the_ephemeral_limit_fires_the_token_without_refusing() {
        let usage = Usage::new(StorageBudget::unlimited());
        let exceeded = usage.set_limit(10);
        assert_eq!(usage.grow(10), Ok(()));
        assert!(!exceeded.is_cancelled());
        assert_eq!(usage.grow(1), Ok(()));
        assert!(exceeded.is_cancelled());
    }
}
