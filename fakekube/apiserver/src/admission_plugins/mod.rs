//! kube-apiserver's built-in admission plugins that change or refuse a pod by what else the
//! cluster holds, in the order kube-apiserver runs them (`AllOrderedPlugins`):
//! `ServiceAccount` ([`service_account`]), `Priority` ([`priority`]),
//! `DefaultTolerationSeconds` ([`tolerations`]) and `RuntimeClass` ([`runtime_class`]),
//! after `LimitRanger`'s defaults ([`limit_ranger`]).
//!
//! The validating plugins, `LimitRanger`'s checks and `ResourceQuota` ([`resource_quota`]),
//! run after the object's own validation, when the store commits it
//! ([`validate_on_commit`]), so that what they read and what the quota charges cannot change
//! between the check and the write.
//! [`validating_policy`] is the `ValidatingAdmissionPolicy` plugin, which runs on every write
//! of any kind when it is about to be stored, before `ResourceQuota` charges it.
//!
//! They run on a pod's create after the namespace is checked and before the kind's defaults
//! and validation, as the API server's mutating admission runs before its validation. What
//! they read of the cluster comes through [`Lookup`], which the store implements over what it
//! holds at that moment (the API server's plugins read informers' caches, with a live read
//! when the cache misses). A refusal is the API server's 403 with the plugin's message:
//! `pods "NAME" is forbidden: pod rejected: RuntimeClass "kata" not found`.

mod ingress_class;
mod limit_ranger;
mod priority;
pub(crate) mod resource_quota;
mod runtime_class;
mod service_account;
mod tolerations;
pub(crate) mod validating_policy;

pub(crate) use priority::validate as validate_priority_class;

use crate::status::ApiError;
use serde_json::{Value, json};
use std::sync::Arc;

/// What the plugins read of the cluster: one object, or every object of a cluster-scoped
/// kind, by group and plural (at the kind's `v1`).
pub(crate) trait Lookup {
    /// The object `ns/name` of `group`/`plural`, if it exists.
    fn get(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<Arc<Value>>;
    /// Every object of `group`/`plural`.
    fn list(&self, group: &str, plural: &str) -> Vec<Arc<Value>>;
    /// Whether the kind `kind` of `api_version` is namespaced, and every object of it;
    /// `None` when no such kind is served.
    fn of_kind(&self, api_version: &str, kind: &str) -> Option<(bool, Vec<Arc<Value>>)> {
        let _ = (api_version, kind);
        None
    }
}

/// The API server's 403 from an admission plugin (`admission.NewForbidden`): the resource and
/// the object's name (its `generateName` before a name is generated) and the plugin's reason.
pub(crate) fn forbidden(resource: &str, name: &str, why: &str) -> ApiError {
    ApiError::forbidden(
        format!("{resource} \"{name}\" is forbidden: {why}"),
        json!({ "name": name, "kind": resource }),
    )
}

/// The name a refusal names: the object's name, else its `generateName`, else `Unknown`, as
/// the API server's `extractResourceName` does before a name is generated.
pub(crate) fn shown_name(obj: &Value) -> String {
    let md = obj.get("metadata");
    let field = |k: &str| {
        md.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    field("name")
        .or_else(|| field("generateName"))
        .unwrap_or("Unknown")
        .to_string()
}

/// Runs the pod plugins on a pod's create in namespace `ns`; `name` is what a refusal names
/// ([`shown_name`] of the request's object).
pub(crate) fn admit_pod_create(
    cluster: &dyn Lookup,
    ns: &str,
    name: &str,
    pod: &mut Value,
) -> Result<(), ApiError> {
    if !pod.get("spec").is_some_and(Value::is_object) {
        // Validation refuses it for its missing containers.
        return Ok(());
    }
    let refuse = |why: String| forbidden("pods", name, &why);
    limit_ranger::admit(cluster, ns, pod);
    service_account::admit(cluster, ns, pod).map_err(refuse)?;
    priority::admit(cluster, pod).map_err(refuse)?;
    tolerations::admit(pod);
    runtime_class::admit(cluster, pod).map_err(refuse)?;
    Ok(())
}

/// The validating plugins on a create of `obj` (a `group`/`plural`) into `ns`, once it
/// passed its own validation: `LimitRanger`'s checks of pods and claims, then
/// `ResourceQuota`'s of anything a quota of the namespace tracks.
pub(crate) fn validate_on_commit(
    cluster: &dyn Lookup,
    group: &str,
    plural: &str,
    ns: &str,
    obj: &Value,
) -> Result<(), ApiError> {
    let refuse = |why: String| forbidden(plural, &shown_name(obj), &why);
    match (group, plural) {
        ("", "pods") => limit_ranger::validate(cluster, ns, obj, true).map_err(refuse)?,
        ("", "persistentvolumeclaims") => {
            limit_ranger::validate(cluster, ns, obj, false).map_err(refuse)?;
        }
        _ => {}
    }
    if !ns.is_empty() {
        resource_quota::check(cluster, group, plural, ns, obj).map_err(refuse)?;
    }
    Ok(())
}

/// The `DefaultIngressClass` plugin on an Ingress's create.
pub(crate) fn admit_ingress_create(cluster: &dyn Lookup, ingress: &mut Value) {
    ingress_class::admit(cluster, ingress);
}

/// Runs the pod plugins that act on a pod's update: `DefaultTolerationSeconds`.
pub(crate) fn admit_pod_update(pod: &mut Value) {
    if pod.get("spec").is_some_and(Value::is_object) {
        tolerations::admit(pod);
    }
}

/// The pod's `spec` as a map (callers checked it is one).
fn spec_mut(pod: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    pod.get_mut("spec").and_then(Value::as_object_mut)
}
