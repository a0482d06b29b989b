//! The root CA publisher: every namespace holds the ConfigMap `kube-root-ca.crt` with the
//! server's CA (`data["ca.crt"]`), so that a pod can verify the API server. A namespace gets
//! it when it is created; a changed or deleted one is put back.

use super::Kinds;
use crate::store::{Store, WriteOptions};
use serde_json::{Value, json};

/// The ConfigMap's name.
pub(crate) const NAME: &str = "kube-root-ca.crt";
/// What its annotation says.
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

fn config_map(ca_pem: &str) -> Value {
    json!({
        "metadata": {
            "name": NAME,
            "annotations": { "kubernetes.io/description": DESCRIPTION },
        },
        "data": { "ca.crt": ca_pem },
    })
}

/// Creates or restores the ConfigMap of namespace `ns` (nothing when the namespace is gone or
/// terminating).
pub(super) fn reconcile(store: &Store, kinds: &Kinds, ca_pem: &str, ns: &str) {
    let alive = store
        .get_opt(&kinds.namespaces, "", ns)
        .is_some_and(|n| n.pointer("/metadata/deletionTimestamp").is_none());
    if !alive {
        return;
    }
    let wanted = config_map(ca_pem);
    let Some(current) = store.get_opt(&kinds.config_maps, ns, NAME) else {
        if let Err(e) = store.create(&kinds.config_maps, ns, wanted, WriteOptions::default())
            && e.code != 409
        {
            tracing::debug!(namespace = ns, error = %e.message, "publishing the root CA");
        }
        return;
    };
    if current.get("data") == wanted.get("data") {
        return;
    }
    let mut next = Value::clone(&current);
    next["data"] = wanted["data"].clone();
    if let Err(e) = store.update(
        &kinds.config_maps,
        ns,
        NAME,
        next,
        crate::store::Part::Main,
        WriteOptions::default(),
    ) {
        tracing::debug!(namespace = ns, error = %e.message, "restoring the root CA");
    }
}
