//! JSON merge patch (RFC 7386), [`PatchKind::Merge`](super::PatchKind::Merge).

use serde_json::{Map, Value};

use super::error::{PatchError, check_depth};

/// Applies a JSON merge patch to a copy of `target`.
pub(super) fn merge_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let mut result = target.clone();
    merge_into(&mut result, patch, 0)?;
    Ok(result)
}

/// Merges `patch` into `doc` in place, as RFC 7386's MergePatch does.
fn merge_into(doc: &mut Value, patch: &Value, depth: usize) -> Result<(), PatchError> {
    let Value::Object(patch_map) = patch else {
        *doc = patch.clone();
        return Ok(());
    };
    check_depth(depth)?;
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    if let Value::Object(doc_map) = doc {
        for (key, value) in patch_map {
            if value.is_null() {
                doc_map.shift_remove(key);
            } else {
                let slot = doc_map.entry(key.clone()).or_insert(Value::Null);
                merge_into(slot, value, depth + 1)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::super::directives::strip_directives;
    use super::super::error::MAX_DEPTH;
    use crate::patch::tests::{arb_json, arb_object, merge};

    // --- merge patch ----------------------------------------------------------------------

    #[test]
    fn merge_patch_null_deletes_a_key() {
        let out = merge(
            json!({"metadata": {"labels": {"app": "web", "tier": "fe"}}}),
            json!({"metadata": {"labels": {"tier": null}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"labels": {"app": "web"}}}));
    }

    #[test]
    fn merge_patch_null_for_a_missing_key_changes_nothing() {
        let target = json!({"spec": {"replicas": 1}});
        let out = merge(target.clone(), json!({"spec": {"paused": null}})).unwrap();
        assert_eq!(out, target);
    }

    #[test]
    fn merge_patch_merges_objects_recursively_and_keeps_other_keys() {
        let out = merge(
            json!({"spec": {"a": {"x": 1, "y": 2}, "b": true}}),
            json!({"spec": {"a": {"y": 3, "z": 4}}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"a": {"x": 1, "y": 3, "z": 4}, "b": true}})
        );
    }

    #[test]
    fn merge_patch_replaces_lists_whole() {
        let out = merge(
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
            json!({"spec": {"containers": [{"name": "c"}]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"containers": [{"name": "c"}]}}));
    }

    #[test]
    fn merge_patch_drops_nulls_inside_new_objects() {
        let out = merge(json!({}), json!({"spec": {"a": 1, "b": null}})).unwrap();
        assert_eq!(out, json!({"spec": {"a": 1}}));
    }

    #[test]
    fn merge_patch_replaces_a_scalar_with_an_object() {
        let out = merge(json!({"spec": 5}), json!({"spec": {"a": 1}})).unwrap();
        assert_eq!(out, json!({"spec": {"a": 1}}));
    }

    #[test]
    fn merge_patch_keeps_the_order_of_remaining_keys() {
        let out = merge(json!({"a": 1, "b": 2, "c": 3}), json!({"a": null})).unwrap();
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b", "c"]);
    }

    #[test]
    fn merge_patch_nested_too_deeply_is_malformed() {
        let mut patch = json!(1);
        for _ in 0..(MAX_DEPTH + 5) {
            patch = json!({ "a": patch });
        }
        let err = merge(json!({}), patch).unwrap_err();
        assert_eq!(err.status_code(), 400);
    }

    proptest! {
        // Failing cases are shrunk and printed; no regression file is written beside the source.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn merge_patch_of_only_new_keys_keeps_every_key(
            target in prop::collection::btree_map("[a-e]{1,3}", arb_json(), 0..6),
            additions in prop::collection::btree_map("[f-j]{1,3}", arb_json(), 0..6),
        ) {
            let target = Value::Object(target.into_iter().collect());
            let patch = Value::Object(
                additions.into_iter().filter(|(_, v)| !v.is_null()).collect(),
            );
            let out = merge(target.clone(), patch.clone()).unwrap();
            let out = out.as_object().unwrap();
            for key in target.as_object().unwrap().keys().chain(patch.as_object().unwrap().keys()) {
                prop_assert!(out.contains_key(key), "missing {key}");
            }
            for (key, value) in target.as_object().unwrap() {
                prop_assert_eq!(&out[key], value);
            }
        }

        #[test]
        fn merge_patch_applied_twice_is_idempotent(target in arb_object(), patch in arb_object()) {
            let once = merge(target, patch.clone()).unwrap();
            let twice = merge(once.clone(), patch).unwrap();
            prop_assert_eq!(once, twice);
        }

        #[test]
        fn merge_patch_equal_to_a_null_free_target_leaves_it_unchanged(target in arb_object()) {
            // A merge patch equal to the target changes nothing once the target has no nulls
            // (a null in the patch would delete the key).
            let clean = strip_directives(&target, 0).unwrap().unwrap();
            let out = merge(clean.clone(), clean.clone()).unwrap();
            prop_assert_eq!(out, clean);
        }
    }
}
