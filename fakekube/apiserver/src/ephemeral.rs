//! `pods/<name>/ephemeralcontainers`: reading a pod through it, and adding ephemeral
//! containers to a pod with PUT (the body's `spec.ephemeralContainers`) or PATCH (any patch
//! kind, applied to the pod). As the API server checks, nothing but that list may change
//! through it, and an ephemeral container once added is neither removed nor changed.
//!
//! Known limitation: the kubelet does not start ephemeral containers; they stay in the spec
//! without a status.

use crate::meta::meta_str;
use crate::patch::{self, MergeKeys, PatchKind};
use crate::registry::ResourceType;
use crate::request::{self, Query, WriteVerb};
use crate::response::json_response;
use crate::status::{ApiError, Cause, Target};
use crate::store::Store;
use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;

/// Serves `get`, `update` and `patch` of a pod's ephemeral containers.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn serve(
    store: &Store,
    pods: &Arc<ResourceType>,
    verb: &str,
    ns: &str,
    name: &str,
    headers: &HeaderMap,
    query: &Query,
    body: Body,
) -> Result<Response, ApiError> {
    // What the client sent: the pod for an update, the patch for a patch.
    let (sent, patch_kind) = match verb {
        "get" => {
            let current = store.get(pods, ns, name)?;
            return Ok(json_response(StatusCode::OK, &current));
        }
        "update" => {
            let raw = request::read_body(body).await?;
            (request::decode(headers, &raw)?, None)
        }
        "patch" => {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let kind = PatchKind::from_content_type(ct)
                .filter(|k| *k != PatchKind::Apply)
                .ok_or_else(|| ApiError::unsupported_media_type(ct))?;
            let raw = request::read_body(body).await?;
            (request::decode(headers, &raw)?, Some(kind))
        }
        other => {
            return Err(ApiError::method_not_allowed(
                other,
                "pods/ephemeralcontainers",
            ));
        }
    };
    let verb_kind = if verb == "update" {
        WriteVerb::Update
    } else {
        WriteVerb::Patch { apply: false }
    };
    let opts = request::write_options(query, verb_kind)?;
    // The pod as stored when the write is made: a write that names no resourceVersion is not
    // refused because another writer (the kubelet's status) came since the client read.
    let pinned = meta_str(&sent, "resourceVersion")
        .filter(|rv| !rv.is_empty())
        .map(str::to_string);
    let (stored, _) = store.update_stored(pods, ns, name, opts, |current| {
        merged(current, &sent, patch_kind, name, pinned.as_deref())
    })?;
    Ok(json_response(StatusCode::OK, &stored))
}

/// The pod `current` with the ephemeral containers `sent` asks for (the pod of an update, or
/// the patch of a patch of `patch_kind`), at the resourceVersion `pinned` names or else at
/// `current`'s; refused when `sent` removes or changes an ephemeral container.
fn merged(
    current: &Value,
    sent: &Value,
    patch_kind: Option<PatchKind>,
    name: &str,
    pinned: Option<&str>,
) -> Result<Value, ApiError> {
    let target = Target {
        group: "",
        resource: "pods",
        kind: "Pod",
        name,
    };
    // As the API server's storage does, a resourceVersion that is not the stored one is a
    // conflict before anything else is checked.
    if let Some(rv) = pinned
        && meta_str(current, "resourceVersion") != Some(rv)
    {
        return Err(ApiError::stale(target));
    }
    let wanted = match patch_kind {
        None => sent.clone(),
        Some(kind) => patch::apply_patch(kind, current, sent, &MergeKeys::for_core_kind("Pod"))
            .map_err(|e| ApiError::bad_request(e.to_string()))?,
    };
    if let Some(n) = meta_str(&wanted, "name").filter(|n| *n != name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    let old = list(current);
    let new = list(&wanted);
    let causes = check(&old, &new);
    if !causes.is_empty() {
        return Err(ApiError::invalid(target, causes));
    }
    // Existing containers stay as stored (with their defaults); new ones are appended.
    let mut merged = old.clone();
    merged.extend(
        new.into_iter()
            .filter(|n| !old.iter().any(|o| o.get("name") == n.get("name"))),
    );
    let mut next = Value::clone(current);
    next["spec"]["ephemeralContainers"] = json!(merged);
    if let Some(rv) = pinned {
        next["metadata"]["resourceVersion"] = json!(rv);
    }
    Ok(next)
}

fn list(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/ephemeralContainers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The API server's checks: every existing ephemeral container is kept unchanged, names are
/// unique and new ones name an image.
fn check(old: &[Value], new: &[Value]) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, o) in old.iter().enumerate() {
        let name = o.get("name");
        match new.iter().find(|n| n.get("name") == name) {
            Some(n) if same_container(o, n) => {}
            _ => causes.push(Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: existing ephemeral containers may not be changed".into(),
                field: Some(format!("spec.ephemeralContainers[{i}]")),
            }),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, n) in new.iter().enumerate() {
        let name = n.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: Some(format!("spec.ephemeralContainers[{i}].name")),
            });
        } else if !seen.insert(name) {
            causes.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!("Duplicate value: \"{name}\""),
                field: Some(format!("spec.ephemeralContainers[{i}].name")),
            });
        }
        if n.get("image")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: Some(format!("spec.ephemeralContainers[{i}].image")),
            });
        }
    }
    causes
}

/// The same container, ignoring the fields the server defaults (a client sending back what
/// it wrote has none of them).
fn same_container(stored: &Value, sent: &Value) -> bool {
    let Some(sent) = sent.as_object() else {
        return false;
    };
    sent.iter().all(|(k, v)| stored.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_ephemeral_containers_stay_and_new_ones_need_a_name_and_an_image() {
        let a = json!({ "name": "a", "image": "busybox", "terminationMessagePolicy": "File" });
        let a_sent = json!({ "name": "a", "image": "busybox" });
        let b = json!({ "name": "b", "image": "busybox" });
        let kept = [a_sent, b.clone()];
        assert!(check(std::slice::from_ref(&a), &kept).is_empty());
        assert_eq!(
            check(std::slice::from_ref(&a), std::slice::from_ref(&b)).len(),
            1
        );
        let changed = json!({ "name": "a", "image": "nginx" });
        assert_eq!(check(&[a], &[changed]).len(), 1);
        assert_eq!(check(&[], &[json!({ "name": "x" })]).len(), 1);
        assert_eq!(check(&[], &[b.clone(), b]).len(), 1);
    }
}
