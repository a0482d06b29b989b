//! Owner references as the controllers write and read them: a controller reference to an
//! owner (`metav1.NewControllerRef`) and the controller reference of an object
//! (`metav1.GetControllerOf`).

use crate::client::Kind;
use crate::meta::meta_str;
use serde_json::{Value, json};

/// A controller ownerReference to `owner` of `kind`, as `SetControllerReference` makes it.
pub(crate) fn controller_ref(kind: Kind, owner: &Value) -> Value {
    json!({
        "apiVersion": kind.api_version(),
        "kind": kind.kind(),
        "name": meta_str(owner, "name").unwrap_or(""),
        "uid": meta_str(owner, "uid").unwrap_or(""),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The object's controller ownerReference.
pub(crate) fn controller_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}
