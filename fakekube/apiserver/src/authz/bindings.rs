//! [`bind_service_account`]: grants a service account a list of [`Rule`]s by writing the RBAC
//! objects a cluster administrator would: a Role and RoleBinding in each namespace the rules
//! are limited to, and a ClusterRole and ClusterRoleBinding for the cluster-wide ones, all
//! named `fakekube:sa:<namespace>:<name>`. Binding again replaces them.

use crate::meta::meta_str;
use crate::rbac::{GROUP, Rule};
use crate::registry::ResourceType;
use crate::status::ApiError;
use crate::store::{DeleteOptions, Store, WriteOptions};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

fn kind(store: &Store, plural: &str) -> Result<Arc<ResourceType>, ApiError> {
    store
        .registry()
        .find(GROUP, "v1", plural)
        .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))
}

/// Replaces the RBAC objects that bind service account `namespace/name` to `rules`.
pub fn bind_service_account(
    store: &Store,
    namespace: &str,
    name: &str,
    rules: &[Rule],
) -> Result<(), ApiError> {
    let object_name = format!("fakekube:sa:{namespace}:{name}");
    let (role, binding) = (kind(store, "roles")?, kind(store, "rolebindings")?);
    let (cluster_role, cluster_binding) = (
        kind(store, "clusterroles")?,
        kind(store, "clusterrolebindings")?,
    );
    for rt in [&role, &binding, &cluster_role, &cluster_binding] {
        for obj in store.list_all(rt, None) {
            if meta_str(&obj, "name") == Some(object_name.as_str()) {
                let ns = meta_str(&obj, "namespace").unwrap_or("");
                match store.delete(rt, ns, &object_name, &DeleteOptions::default()) {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    let mut cluster_wide = Vec::new();
    let mut by_namespace: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for r in rules {
        match r.namespaces() {
            Some(list) if !list.iter().any(|n| n == "*") => {
                for ns in list {
                    by_namespace.entry(ns).or_default().push(r.policy_json());
                }
            }
            // Every namespace: only a ClusterRoleBinding reaches them all.
            _ => cluster_wide.push(r.policy_json()),
        }
    }
    let subject = json!({ "kind": "ServiceAccount", "name": name, "namespace": namespace });
    let create = |rt: &Arc<ResourceType>, ns: &str, obj: Value| {
        store
            .create(rt, ns, obj, WriteOptions::default())
            .map(|_| ())
    };
    if !cluster_wide.is_empty() {
        create(
            &cluster_role,
            "",
            json!({ "metadata": { "name": object_name }, "rules": cluster_wide }),
        )?;
        create(
            &cluster_binding,
            "",
            json!({
                "metadata": { "name": object_name },
                "roleRef": { "apiGroup": GROUP, "kind": "ClusterRole", "name": object_name },
                "subjects": [subject],
            }),
        )?;
    }
    for (ns, ns_rules) in by_namespace {
        create(
            &role,
            ns,
            json!({ "metadata": { "name": object_name }, "rules": ns_rules }),
        )?;
        create(
            &binding,
            ns,
            json!({
                "metadata": { "name": object_name },
                "roleRef": { "apiGroup": GROUP, "kind": "Role", "name": object_name },
                "subjects": [subject],
            }),
        )?;
    }
    Ok(())
}
