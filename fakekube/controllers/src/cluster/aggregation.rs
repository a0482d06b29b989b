//! The ClusterRole aggregation controller: writes into each ClusterRole with an
//! `aggregationRule` the rules of the ClusterRoles its selectors match, whenever any
//! ClusterRole changes (what it computes is `aggregation_rule`).

use super::aggregation_rule::aggregate;
use crate::client::{Client, Kind, Part};

/// Brings every aggregated ClusterRole up to date. A write that loses a race is dropped: the
/// change that won it brings the controller back.
pub(super) fn reconcile(api: &dyn Client) {
    let cluster_roles = Kind::ClusterRole;
    let roles = api.list(cluster_roles, None);
    for (name, rules) in aggregate(&roles) {
        let Some(current) = api.get(cluster_roles, "", &name) else {
            continue;
        };
        let mut updated = serde_json::Value::clone(&current);
        if let Some(o) = updated.as_object_mut() {
            o.insert("rules".into(), rules);
        }
        if let Err(e) = api.update(cluster_roles, "", &name, updated, Part::Main) {
            tracing::debug!(clusterrole = %name, error = %e.message, "aggregating");
        }
    }
}
