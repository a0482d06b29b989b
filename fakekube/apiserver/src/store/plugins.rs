//! The store's side of the admission plugins that read the cluster
//! ([`crate::admission_plugins`]): what they read is what the store holds when the write is
//! admitted, read under the store's lock.

use super::{Inner, type_key};
use crate::admission_plugins::{self, Lookup};
use crate::registry::ResourceType;
use crate::status::ApiError;
use serde_json::Value;
use std::sync::Arc;

impl Lookup for Inner {
    fn get(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
        let rt = self.registry.find(group, "v1", plural)?;
        Inner::get(self, &rt, ns, name)
    }

    fn list(&self, group: &str, plural: &str) -> Vec<Arc<Value>> {
        let Some(rt) = self
            .registry
            .find(group, "v1", plural)
            .or_else(|| self.registry.storage(group, plural))
        else {
            return Vec::new();
        };
        self.objects
            .all(&type_key(&rt))
            .map(|read| read.object)
            .collect()
    }

    fn of_kind(&self, api_version: &str, kind: &str) -> Option<(bool, Vec<Arc<Value>>)> {
        let rt = self.registry.by_kind(api_version, kind)?;
        let objects = self
            .objects
            .all(&type_key(&rt))
            .map(|read| read.object)
            .collect();
        Some((rt.namespaced, objects))
    }
}

/// A write as the ValidatingAdmissionPolicy plugin sees it.
pub(super) type PolicyWrite<'a> = admission_plugins::validating_policy::Attributes<'a>;

/// What the API server's ValidatingAdmissionPolicy type-checking controller writes of a
/// policy, folded into the write that changes its generation: the generation observed, and
/// `typeChecking` with no warning (fakekube does not type-check expressions).
pub(super) fn observe_policy(rt: &ResourceType, obj: &mut Value) {
    if !is(
        rt,
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ) {
        return;
    }
    let generation = obj
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(Value::Null);
    if obj.pointer("/status/observedGeneration") == Some(&generation) {
        return;
    }
    if let Some(o) = obj.as_object_mut() {
        let status = o.entry("status").or_insert_with(|| serde_json::json!({}));
        if !status.is_object() {
            *status = serde_json::json!({});
        }
        if let Some(st) = status.as_object_mut() {
            st.insert("observedGeneration".into(), generation);
            st.insert("typeChecking".into(), serde_json::json!({}));
        }
    }
}

/// Whether `rt` is `plural` of `group`.
fn is(rt: &ResourceType, group: &str, plural: &str) -> bool {
    rt.group == group && rt.plural == plural
}

impl Inner {
    /// Whether any ValidatingAdmissionPolicyBinding exists (without one no policy applies).
    pub(super) fn has_policy_bindings(&self) -> bool {
        self.registry
            .find(
                "admissionregistration.k8s.io",
                "v1",
                "validatingadmissionpolicybindings",
            )
            .is_some_and(|rt| self.objects.all(&type_key(&rt)).next().is_some())
    }
    /// The ValidatingAdmissionPolicy plugin on a write about to be stored: its warnings,
    /// or its refusal.
    pub(super) fn admit_policies(&self, write: &PolicyWrite<'_>) -> Result<Vec<String>, ApiError> {
        admission_plugins::validating_policy::validate(self, write)
    }

    /// The plugins on a create of `obj` into `ns`, once its namespace is known to exist;
    /// `shown` is the name a refusal names (the request's name, or its `generateName`).
    pub(super) fn admit_plugins_on_create(
        &self,
        rt: &ResourceType,
        ns: &str,
        shown: &str,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        if is(rt, "", "pods") {
            admission_plugins::admit_pod_create(self, ns, shown, obj)?;
        } else if is(rt, "scheduling.k8s.io", "priorityclasses") {
            admission_plugins::validate_priority_class(self, obj, false)?;
        } else if is(rt, "networking.k8s.io", "ingresses") {
            admission_plugins::admit_ingress_create(self, obj);
        }
        Ok(())
    }

    /// The plugins on an update of an object to `obj`.
    pub(super) fn admit_plugins_on_update(
        &self,
        rt: &ResourceType,
        obj: &Value,
    ) -> Result<(), ApiError> {
        if is(rt, "scheduling.k8s.io", "priorityclasses") {
            admission_plugins::validate_priority_class(self, obj, true)?;
        }
        Ok(())
    }
}

/// Whether an update of `rt` must be admitted under the store's lock (its plugins read the
/// cluster).
pub(super) fn update_reads_cluster(rt: &ResourceType) -> bool {
    is(rt, "scheduling.k8s.io", "priorityclasses")
}

impl Inner {
    /// The quota controller's work after a write to namespace `ns`: each of its
    /// ResourceQuotas whose `status` (hard limits and usage) no longer matches what the
    /// namespace holds is written with the new one, in the same hold of the lock as the write
    /// (a cluster's controller catches up a moment later; here usage is exact at once).
    pub(super) fn refresh_quotas(&mut self, ns: &str) {
        let Some(rt) = self.registry.find("", "v1", "resourcequotas") else {
            return;
        };
        let quotas = admission_plugins::resource_quota::quotas(self, ns);
        if quotas.is_empty() {
            return;
        }
        self.refreshing_quotas = true;
        for quota in quotas {
            let status = admission_plugins::resource_quota::status(self, ns, &quota);
            if quota.get("status") == Some(&status) {
                continue;
            }
            let mut next = Value::clone(&quota);
            if let Some(o) = next.as_object_mut() {
                o.insert("status".into(), status);
            }
            let rv = self.next_rv();
            if let Some(md) = crate::meta::metadata_mut(&mut next) {
                md.insert("resourceVersion".into(), Value::String(rv.to_string()));
            }
            let name = crate::meta::meta_str(&next, "name")
                .unwrap_or("")
                .to_string();
            let next = Arc::new(next);
            self.put(&rt, ns, &name, Arc::clone(&next));
            self.record(&rt, super::EventType::Modified, next, Some(quota));
        }
        self.refreshing_quotas = false;
    }
}
