//! The ClusterRole aggregation controller: writes into each ClusterRole with an
//! `aggregationRule` the rules of the ClusterRoles its selectors match, whenever any
//! ClusterRole changes (what it computes is [`crate::rbac::aggregation`]).

use crate::rbac::aggregation::aggregate;
use crate::registry::ResourceType;
use crate::store::{Part, Store, WriteOptions};
use std::sync::Arc;

/// Brings every aggregated ClusterRole up to date. A write that loses a race is dropped: the
/// change that won it brings the controller back.
pub(super) fn reconcile(store: &Store, cluster_roles: &Arc<ResourceType>) {
    let roles = store.list_all(cluster_roles, None);
    for (name, rules) in aggregate(&roles) {
        let Some(current) = store.get_opt(cluster_roles, "", &name) else {
            continue;
        };
        let mut updated = serde_json::Value::clone(&current);
        if let Some(o) = updated.as_object_mut() {
            o.insert("rules".into(), rules);
        }
        if let Err(e) = store.update(
            cluster_roles,
            "",
            &name,
            updated,
            Part::Main,
            WriteOptions::default(),
        ) {
            tracing::debug!(clusterrole = %name, error = %e.message, "aggregating");
        }
    }
}
