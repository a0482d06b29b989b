//! Server-side apply, [`PatchKind::Apply`](super::PatchKind::Apply), simplified: the applied
//! object merged into the live one as a strategic merge patch (field ownership is
//! `managed_fields`' part).

use serde_json::{Map, Value};

use super::error::{PatchError, json_type_name};
use super::merge_keys::{ListStrategy, MergeKeys};
use super::strategic::strategic_merge;

/// Applies an applied object to a copy of the live object, as
/// [`PatchKind::Apply`](super::PatchKind::Apply) describes.
pub(super) fn server_side_apply(
    live: &Value,
    applied: &Value,
    merge_keys: &MergeKeys,
) -> Result<Value, PatchError> {
    if !applied.is_object() {
        return Err(PatchError::malformed(format!(
            "error decoding YAML: the applied configuration must be an object, not a {}",
            json_type_name(applied)
        )));
    }
    let mut result = strategic_merge(live, applied, merge_keys)?;
    keep_live_order_of_sets(live, &mut result, merge_keys);
    if let Value::Object(result_map) = &mut result {
        for field in ["apiVersion", "kind"] {
            if let Some(value) = applied.get(field).filter(|value| value.is_string()) {
                result_map.insert(field.to_owned(), value.clone());
            }
        }
        for field in ["name", "namespace"] {
            let Some(value) = applied
                .get("metadata")
                .and_then(|meta| meta.get(field))
                .filter(|value| value.is_string())
            else {
                continue;
            };
            let metadata = result_map
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if !metadata.is_object() {
                *metadata = Value::Object(Map::new());
            }
            if let Value::Object(metadata) = metadata {
                metadata.insert(field.to_owned(), value.clone());
            }
        }
    }
    Ok(result)
}

/// Server-side apply merges sets and keyed lists keeping the live elements in their places,
/// the applied ones that are new after them (a strategic merge patch puts the patch's first).
/// Lists inside list elements (`a[].b`) keep the strategic merge order.
fn keep_live_order_of_sets(live: &Value, result: &mut Value, merge_keys: &MergeKeys) {
    for (path, strategy) in &merge_keys.lists {
        if path.contains("[]") {
            continue;
        }
        let pointer = format!("/{}", path.replace('.', "/"));
        let Some(Value::Array(old)) = live.pointer(&pointer) else {
            continue;
        };
        let Some(Value::Array(merged)) = result.pointer_mut(&pointer) else {
            continue;
        };
        let same = |a: &Value, b: &Value| match strategy {
            ListStrategy::MergePrimitives => a == b,
            ListStrategy::MergeByKey(key) => a.get(key).is_some() && a.get(key) == b.get(key),
        };
        let mut ordered: Vec<Value> = old
            .iter()
            .filter_map(|o| merged.iter().find(|m| same(o, m)).cloned())
            .collect();
        for v in merged.iter() {
            if !ordered.iter().any(|o| same(o, v)) {
                ordered.push(v.clone());
            }
        }
        *merged = ordered;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::patch::{MergeKeys, PatchKind, apply_patch};

    // --- apply -----------------------------------------------------------------------------

    #[test]
    fn apply_merges_keyed_lists_and_takes_identity_from_the_applied_object() {
        let live = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                         "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.25",
                                     "terminationMessagePath": "/dev/termination-log"}],
                     "tolerations": [{"key": "a"}]}
        });
        let applied = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "fe"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.26"}],
                     "tolerations": [{"key": "b"}]}
        });
        let out = apply_patch(
            PatchKind::Apply,
            &live,
            &applied,
            &MergeKeys::for_core_kind("Pod"),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                             "labels": {"app": "web", "tier": "fe"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.26",
                                         "terminationMessagePath": "/dev/termination-log"}],
                         "tolerations": [{"key": "b"}]}
            })
        );
    }

    #[test]
    fn apply_to_a_custom_resource_replaces_lists() {
        let live = json!({"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox",
                          "metadata": {"name": "s"},
                          "spec": {"podTemplate": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}});
        let applied = json!({"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox",
                             "metadata": {"name": "s"},
                             "spec": {"podTemplate": {"spec": {"containers": [{"name": "a", "image": "y"}]}}}});
        let out = apply_patch(PatchKind::Apply, &live, &applied, &MergeKeys::none()).unwrap();
        assert_eq!(out, applied);
    }

    #[test]
    fn apply_of_something_other_than_an_object_is_malformed() {
        let err = apply_patch(
            PatchKind::Apply,
            &json!({}),
            &json!("x"),
            &MergeKeys::none(),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
    }
}
