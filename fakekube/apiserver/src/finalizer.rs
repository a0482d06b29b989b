//! The CRD finalizer: the API server's controller that, after a CustomResourceDefinition is
//! deleted, deletes its objects and lets it go ([`Store::clean_up_crds`]). It runs a moment
//! after the delete, as the real one does: a client that deletes a CRD and then watches for
//! its deletion sees it.

use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Starts the finalizer as one task that runs until `shutdown`: after every change to the
/// store that leaves a deleted CRD waiting, it waits `delay` and cleans up.
pub fn spawn(store: Arc<Store>, delay: Duration, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = store.subscribe();
        loop {
            changes.borrow_and_update();
            if store.crds_terminating() {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                store.clean_up_crds();
                // The cleanup's own writes are a change: look once more, then wait.
                continue;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                r = changes.changed() => if r.is_err() { return },
            }
        }
    })
}
