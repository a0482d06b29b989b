//! Who owns what, kept from the change log: the pods and the ReplicaSets of each controller,
//! by the uid of their controller reference (the shared [`Owned`] index), so a controller finds
//! its children without scanning every pod.

use crate::index::Owned;

/// The children the workload controllers look up.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Pods, by the uid of their ReplicaSet, StatefulSet, DaemonSet, Job or
    /// ReplicationController.
    pub(crate) pods: Owned,
    /// ReplicaSets, by the uid of their Deployment.
    pub(crate) replicasets: Owned,
}
