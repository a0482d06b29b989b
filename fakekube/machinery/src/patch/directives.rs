//! The directives of a strategic merge patch: the `$patch`, `$retainKeys`,
//! `$setElementOrder/…` and `$deleteFromPrimitiveList/…` keys, how they are read and checked,
//! and how they are kept out of stored objects.

use serde_json::{Map, Value};

use super::error::{MAX_DEPTH, PatchError, check_depth, json_type_name};
use super::lists::merge_key_value;

/// The key that carries a `$patch` directive in a map or in a list element.
pub(super) const DIRECTIVE_MARKER: &str = "$patch";
/// The key of the `$retainKeys` directive (the keys a map keeps).
pub(super) const RETAIN_KEYS: &str = "$retainKeys";
/// The prefix of the `$setElementOrder/<field>` parallel list.
pub(super) const SET_ELEMENT_ORDER: &str = "$setElementOrder";
/// The prefix of the `$deleteFromPrimitiveList/<field>` parallel list.
pub(super) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// Tells whether a map key is a strategic merge patch directive rather than data.
pub(super) fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// Tells whether any directive key is left anywhere in a value.
#[cfg(test)]
pub(super) fn has_directive(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(key, child)| is_directive_key(key) || has_directive(child)),
        Value::Array(items) => items.iter().any(has_directive),
        _ => false,
    }
}

/// Removes every directive key left anywhere in a merged object, so none is ever stored.
///
/// The merge consumes the patch's directives; this catches any that the live object itself
/// carried. It descends no deeper than a patch may nest.
pub(super) fn strip_leftover_directives(value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            map.retain(|key, _| !is_directive_key(key));
            for child in map.values_mut() {
                strip_leftover_directives(child, depth + 1);
            }
        }
        Value::Array(items) => {
            for child in items {
                strip_leftover_directives(child, depth + 1);
            }
        }
        _ => {}
    }
}

/// Returns a patch value as it is stored where the live object had nothing to merge it with:
/// without directives and without `null` map entries.
///
/// `None` means the value is dropped: a map whose `$patch` is anything but `replace` (there is
/// nothing to delete), and, inside a list, any map carrying `$patch` (list markers), as
/// apimachinery does. A map with `$patch: replace` becomes its other keys.
pub(super) fn strip_directives(value: &Value, depth: usize) -> Result<Option<Value>, PatchError> {
    check_depth(depth)?;
    Ok(match value {
        Value::Object(map) => {
            match map.get(DIRECTIVE_MARKER) {
                None => {}
                Some(directive) if directive.as_str() == Some("replace") => {}
                Some(_) => return Ok(None),
            }
            let mut out = Map::new();
            for (key, child) in map {
                if child.is_null() || is_directive_key(key) {
                    continue;
                }
                if let Some(child) = strip_directives(child, depth + 1)? {
                    out.insert(key.clone(), child);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                if item.get(DIRECTIVE_MARKER).is_some() {
                    continue;
                }
                if let Some(item) = strip_directives(item, depth + 1)? {
                    out.push(item);
                }
            }
            Some(Value::Array(out))
        }
        other => Some(other.clone()),
    })
}

/// Splits a parallel-list key such as `$setElementOrder/containers` into the list's field.
///
/// `None` when the key has the prefix but not the `/` right after it.
pub(super) fn parallel_list_field<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    key.strip_prefix(prefix)?.strip_prefix('/')
}

/// Checks that the patch list names its elements in the order `$setElementOrder` gives.
pub(super) fn validate_patch_with_set_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), PatchError> {
    if patch_list.is_empty() || order.is_empty() {
        return Ok(());
    }
    let mut kept = Vec::with_capacity(patch_list.len());
    for item in patch_list {
        if merge_key.is_some() {
            let Value::Object(map) = item else {
                return Err(PatchError::merge_failed(format!(
                    "expected a map, but received a {}: {item}",
                    json_type_name(item)
                )));
            };
            if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        kept.push(item);
    }
    let (mut patch_index, mut order_index) = (0, 0);
    while let (Some(item), Some(ordered)) = (kept.get(patch_index), order.get(order_index)) {
        if item.get(DIRECTIVE_MARKER).is_some() {
            patch_index += 1;
            continue;
        }
        let same = match merge_key {
            Some(key) => merge_key_value(item, key)? == merge_key_value(ordered, key)?,
            None => *item == ordered,
        };
        if same {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < kept.len() {
        return Err(PatchError::merge_failed(format!(
            "The order in patch list: {} doesn't match {SET_ELEMENT_ORDER} list: {}",
            Value::Array(patch_list.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

/// Applies a `$retainKeys` directive: checks the patch sets only listed keys, then drops the
/// live map's keys that are not listed.
pub(super) fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    retain: &Value,
) -> Result<(), PatchError> {
    let bad_format = || PatchError::malformed("invalid patch format of retainKeys");
    let retain = retain.as_array().ok_or_else(bad_format)?;
    let listed = |key: &str| retain.iter().any(|k| k.as_str() == Some(key));
    for (key, value) in patch {
        if value.is_null()
            || key == RETAIN_KEYS
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(key) {
            return Err(bad_format());
        }
    }
    original.retain(|key, _| listed(key));
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::has_directive;
    use crate::patch::tests::smp;

    // --- strategic merge: primitive lists ------------------------------------------------------

    #[test]
    fn smp_finalizers_are_a_union() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["b", "c"]}}),
        )
        .unwrap();
        // "b" is named by the patch and by the live list, "a" precedes it in the live list.
        assert_eq!(out, json!({"metadata": {"finalizers": ["a", "b", "c"]}}));
    }

    #[test]
    fn smp_new_primitive_goes_before_live_ones_the_patch_does_not_name() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c"]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["c", "a", "b"]}}));
    }

    #[test]
    fn smp_delete_from_primitive_list_removes_values() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zzz"]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["a", "c"]}}));
    }

    #[test]
    fn smp_delete_from_primitive_list_works_on_atomic_lists_too() {
        let out = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a", "args": ["x", "y"]}]}}),
            json!({"spec": {"containers": [{"name": "a", "$deleteFromPrimitiveList/args": ["x"]}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "a", "args": ["y"]}]}})
        );
    }

    #[test]
    fn kubectl_apply_removing_a_finalizer_deletes_it_and_keeps_the_order() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {
                "$setElementOrder/finalizers": ["c", "a"],
                "$deleteFromPrimitiveList/finalizers": ["b"]
            }}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["c", "a"]}}));
    }

    #[test]
    fn smp_delete_from_a_missing_primitive_list_adds_nothing() {
        let out = smp(
            "Pod",
            json!({"metadata": {"name": "p"}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"name": "p"}}));
    }

    #[test]
    fn smp_delete_from_primitive_list_without_a_field_is_malformed() {
        let err = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
        assert_eq!(err.message(), "invalid patch format of primitive list");
    }

    // --- strategic merge: $setElementOrder -------------------------------------------------------

    #[test]
    fn smp_set_element_order_orders_the_merged_list() {
        let out = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]}})
        );
        assert!(!has_directive(&out));
    }

    #[test]
    fn smp_set_element_order_keeps_server_only_items_in_their_live_place() {
        // Live order 1, 2, 9, 3, 4; the patch orders 2, 1, 4, 3; 9 is server-only and stays
        // after 2 and 1, which preceded it in the live list.
        let out = smp(
            "Pod",
            json!({"spec": {"volumes": [{"name": "1"}, {"name": "2"}, {"name": "9"}, {"name": "3"}, {"name": "4"}]}}),
            json!({"spec": {"$setElementOrder/volumes": [{"name": "2"}, {"name": "1"}, {"name": "4"}, {"name": "3"}]}}),
        )
        .unwrap();
        let names: Vec<&str> = out["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["2", "1", "9", "4", "3"]);
    }

    #[test]
    fn smp_set_element_order_places_trailing_server_only_items_last() {
        let out = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "injected"}]}}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}, {"name": "injected"}]}})
        );
    }

    #[test]
    fn smp_set_element_order_on_primitives_orders_them() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "c", "a"], "finalizers": ["c"]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["b", "c", "a"]}}));
    }

    #[test]
    fn smp_set_element_order_that_contradicts_the_patch_list_fails_the_merge() {
        let err = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "b", "image": "x"}, {"name": "a", "image": "y"}]
            }}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 500);
        assert!(err.message().contains("doesn't match"), "{err}");
    }

    #[test]
    fn smp_set_element_order_with_a_bad_prefix_is_malformed() {
        let err = smp(
            "Pod",
            json!({"spec": {}}),
            json!({"spec": {"$setElementOrderX": [{"name": "a"}]}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
    }

    // --- strategic merge: $retainKeys -------------------------------------------------------

    #[test]
    fn smp_retain_keys_drops_unlisted_keys() {
        let out = smp(
            "Pod",
            json!({"spec": {"volumes": [{"name": "data", "hostPath": {"path": "/x"}}]}}),
            json!({"spec": {"volumes": [{
                "$retainKeys": ["emptyDir", "name"], "emptyDir": {}, "hostPath": null, "name": "data"
            }]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"volumes": [{"name": "data", "emptyDir": {}}]}})
        );
    }

    #[test]
    fn smp_retain_keys_clears_a_key_the_patch_does_not_mention() {
        let out = smp(
            "Pod",
            json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    }

    #[test]
    fn smp_retain_keys_must_list_every_key_the_patch_sets() {
        let err = smp(
            "Pod",
            json!({"spec": {"strategy": {}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
        assert_eq!(err.message(), "invalid patch format of retainKeys");
        let err = smp(
            "Pod",
            json!({"spec": {"strategy": {}}}),
            json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
    }
}
