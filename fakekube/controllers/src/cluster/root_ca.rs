//! The root CA publisher: every namespace holds the ConfigMap `kube-root-ca.crt` with the
//! server's CA (`data["ca.crt"]`), so that a pod can verify the API server. A namespace gets
//! it when it is created; a changed or deleted one is put back.

use crate::client::{Client, Kind, Part};
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
pub(super) fn reconcile(api: &dyn Client, ca_pem: &str, ns: &str) {
    let alive = api
        .get(Kind::Namespace, "", ns)
        .is_some_and(|n| n.pointer("/metadata/deletionTimestamp").is_none());
    if !alive {
        return;
    }
    let wanted = config_map(ca_pem);
    let Some(current) = api.get(Kind::ConfigMap, ns, NAME) else {
        if let Err(e) = api.create(Kind::ConfigMap, ns, wanted)
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
    if let Err(e) = api.update(Kind::ConfigMap, ns, NAME, next, Part::Main) {
        tracing::debug!(namespace = ns, error = %e.message, "restoring the root CA");
    }
}
