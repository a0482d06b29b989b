//! What the pod stream handlers (`pods/exec`, `pods/attach`, `pods/portforward`, `pods/log`,
//! and the kubelet API's `/exec`, `/attach`, `/portForward`, `/containerLogs`) need, and
//! nothing more: the kubelet whose pods they reach, the API to read a pod from when there is no
//! kubelet (the API server's own answers), the faults, and the server's shutdown. The API
//! server builds one over its store; a kubelet joining a cluster builds one over its client.

use crate::client::{Client, Kind};
use crate::faults::Faults;
use crate::kubelet::Kubelet;
use crate::status::{ApiError, Target};
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The context of the pod stream handlers.
#[derive(Debug)]
pub struct PodAccess {
    /// The kubelet that runs the pods, when there is one.
    pub kubelet: Option<Arc<Kubelet>>,
    /// Where pods are read (and, by the chaos fault, deleted).
    pub api: Arc<dyn Client>,
    /// The injected faults.
    pub faults: Arc<Faults>,
    /// Fires when the server stops: sessions end.
    pub shutdown: CancellationToken,
}

impl PodAccess {
    /// Pod `ns/name`, or the API server's 404.
    pub fn pod(&self, ns: &str, name: &str) -> Result<Arc<Value>, ApiError> {
        self.api.get(Kind::Pod, ns, name).ok_or_else(|| {
            ApiError::not_found(Target {
                group: "",
                resource: "pods",
                kind: "Pod",
                name,
            })
        })
    }
}
