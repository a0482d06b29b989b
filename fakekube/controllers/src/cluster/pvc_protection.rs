//! The PVC protection controller: a claim being deleted keeps its
//! `kubernetes.io/pvc-protection` finalizer (added at creation by the API server's
//! `StorageObjectInUseProtection` admission) while a pod scheduled to a node and not finished
//! mounts it, terminating pods included; then the finalizer goes and the claim with it.

use crate::client::{Client, Kind, Part};
use crate::meta::{PVC_PROTECTION, finalizers, meta_str};
use serde_json::{Value, json};

/// Whether `pod` keeps claim `name` in use.
fn uses(pod: &Value, name: &str) -> bool {
    let spec = pod.get("spec");
    let scheduled = spec
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        pod.get("status")
            .and_then(|s| s.get("phase"))
            .and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    scheduled
        && !finished
        && spec
            .and_then(|s| s.get("volumes"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|v| {
                v.get("persistentVolumeClaim")
                    .and_then(|c| c.get("claimName"))
                    .and_then(Value::as_str)
                    == Some(name)
            })
}

/// Removes the protection finalizer from claim `ns/name` if it is being deleted and no pod
/// uses it.
pub(super) fn reconcile(api: &dyn Client, ns: &str, name: &str) {
    let (pvcs, pods) = (Kind::PersistentVolumeClaim, Kind::Pod);
    for _ in 0..3 {
        let Some(pvc) = api.get(pvcs, ns, name) else {
            return;
        };
        let deleting = pvc
            .get("metadata")
            .and_then(|m| m.get("deletionTimestamp"))
            .is_some_and(|t| !t.is_null());
        let mut fins = finalizers(&pvc);
        if !deleting || !fins.iter().any(|f| f == PVC_PROTECTION) {
            return;
        }
        if api.list(pods, Some(ns)).iter().any(|p| uses(p, name)) {
            return;
        }
        fins.retain(|f| f != PVC_PROTECTION);
        let mut next = Value::clone(&pvc);
        if let Some(md) = next.get_mut("metadata").and_then(Value::as_object_mut) {
            md.insert("finalizers".into(), json!(fins));
        }
        match api.update(pvcs, ns, name, next, Part::Main) {
            Ok(_) => return,
            Err(e) if e.code == 409 => continue,
            Err(e) => {
                tracing::debug!(pvc = name, error = %e.message, "removing pvc-protection");
                return;
            }
        }
    }
}

/// The claims of `ns` a change to `pod` may release.
pub(super) fn claims_of(pod: &Value) -> Vec<(String, String)> {
    let ns = meta_str(pod, "namespace").unwrap_or("").to_string();
    pod.get("spec")
        .and_then(|s| s.get("volumes"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.get("persistentVolumeClaim")
                .and_then(|c| c.get("claimName"))
                .and_then(Value::as_str)
        })
        .map(|c| (ns.clone(), c.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_scheduled_unfinished_pod_keeps_a_claim_in_use() {
        let pod = |node: &str, phase: &str| {
            json!({
                "spec": { "nodeName": node, "volumes": [ { "name": "v", "persistentVolumeClaim": { "claimName": "c" } } ] },
                "status": { "phase": phase },
            })
        };
        assert!(uses(&pod("n", "Running"), "c"));
        assert!(!uses(&pod("n", "Running"), "other"));
        assert!(!uses(&pod("", "Pending"), "c"));
        assert!(!uses(&pod("n", "Failed"), "c"));
    }
}
