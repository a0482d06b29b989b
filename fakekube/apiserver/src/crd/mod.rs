//! CustomResourceDefinitions as the apiextensions-apiserver handles them, for the store to call
//! on every write of a CRD: defaults, the validation of the CRD itself, its status (accepted
//! names, the `NamesAccepted` and `Established` conditions, stored versions) set at once on
//! write, and the registry entries of the kind it defines.
//!
//! What the real server spreads over controllers (naming, establishing, finalizing) happens
//! synchronously here, in the write that causes it, so that a client that created a CRD can
//! use its kind in the next request and `kubectl wait --for condition=established` returns
//! at once. Deleting a CRD (its finalizer, the `Terminating` condition, the deletion of its
//! objects) is the store's, which owns the objects.
//!
//! # Layout
//! - `spec`: the parsed view of a CRD's `spec`, and the defaults the API server applies.
//! - `validation`: the CRD's own validation (names, scope, versions, subresources, printer
//!   columns, selectable fields, conversion), with the API server's field paths and wording;
//!   each version's schema goes to [`crate::schema::compile`].
//! - `names`: accepted names and conditions, against the other CRDs of the group and the
//!   built-in kinds.
//! - `entries`: the registry entries a CRD's served versions become.

mod entries;
mod names;
mod spec;
mod validation;

#[cfg(test)]
mod tests;

pub(crate) use entries::entries;
pub(crate) use names::{CLEANUP_FINALIZER, Condition, condition_is_true, set_condition};
pub(crate) use spec::Crd;

use crate::registry::Registry;
use crate::status::{ApiError, Cause, Target};
use serde_json::Value;

/// The API group of CRDs.
pub const GROUP: &str = "apiextensions.k8s.io";
/// The resource name of CRDs.
pub const PLURAL: &str = "customresourcedefinitions";

/// The target of an error about the CRD `name`.
fn target(name: &str) -> Target<'_> {
    Target {
        group: GROUP,
        resource: PLURAL,
        kind: "CustomResourceDefinition",
        name,
    }
}

/// What the store needs to know of the other CRDs to admit one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Others<'a> {
    /// Every stored CRD but the one written.
    pub(crate) crds: &'a [&'a Value],
    /// The kinds served now.
    pub(crate) registry: &'a Registry,
}

/// Admits a write of a CRD's main resource (`old` is `None` on create): applies the
/// defaults, validates it, and sets its status (names, conditions stamped `now`, stored
/// versions).
pub(crate) fn admit(
    obj: &mut Value,
    old: Option<&Value>,
    others: Others<'_>,
    now: &str,
) -> Result<(), ApiError> {
    let name = crate::meta::meta_str(obj, "name").unwrap_or("").to_string();
    spec::apply_defaults(obj);
    let crd = Crd::parse(obj).map_err(|e| decode_error(&e))?;
    let mut causes = validation::validate(obj, &crd);
    if let Some(old) = old {
        let old_crd = Crd::parse(old).map_err(|e| decode_error(&e))?;
        causes.extend(validation::validate_update(&crd, &old_crd, old));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(target(&name), causes));
    }
    names::update_status(obj, &crd, others, now);
    Ok(())
}

/// Admits a write of a CRD's `status` subresource: only its names and stored versions are
/// checked; the conditions are the server's to keep.
pub(crate) fn admit_status(
    obj: &mut Value,
    old: &Value,
    others: Others<'_>,
    now: &str,
) -> Result<(), ApiError> {
    let name = crate::meta::meta_str(obj, "name").unwrap_or("").to_string();
    let crd = Crd::parse(obj).map_err(|e| decode_error(&e))?;
    let causes = validation::validate_status(obj, &crd);
    if !causes.is_empty() {
        return Err(ApiError::invalid(target(&name), causes));
    }
    // A status write may not take the conditions away from under the registry.
    if let (Some(o), Some(conditions)) = (
        obj.as_object_mut(),
        old.pointer("/status/conditions").cloned(),
    ) && let Some(status) = o.get_mut("status").and_then(Value::as_object_mut)
    {
        status.insert("conditions".into(), conditions);
    }
    names::update_status(obj, &crd, others, now);
    Ok(())
}

/// The 400 of a CRD body whose fields do not decode.
fn decode_error(e: &serde_json::Error) -> ApiError {
    ApiError::bad_request(format!(
        "CustomResourceDefinition in version \"v1\" cannot be handled as a CustomResourceDefinition: {e}"
    ))
}

/// One `Invalid` cause.
fn cause(reason: &str, field: &str, message: String) -> Cause {
    Cause {
        reason: reason.to_string(),
        message,
        field: Some(field.to_string()),
    }
}

/// The conditions a CRD gets while it is being deleted.
pub(crate) fn terminating(reason: &str, message: &str, status: bool) -> Condition {
    Condition {
        type_name: "Terminating",
        status: if status { "True" } else { "False" },
        reason: reason.to_string(),
        message: message.to_string(),
    }
}
