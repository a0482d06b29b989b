//! JSON patch (RFC 6902), [`PatchKind::Json`](super::PatchKind::Json), through the `json-patch`
//! crate.

use serde_json::Value;

use super::error::PatchError;

/// Reads `patch` as a JSON patch and applies it to a copy of `target`, all or nothing.
pub(super) fn json_patch_apply(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let operations: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|err| PatchError::malformed(format!("invalid JSON patch: {err}")))?;
    let mut doc = target.clone();
    // The copy is thrown away on error, so the crate's undo log is not needed.
    json_patch::patch_unsafe(&mut doc, &operations)
        .map_err(|err| PatchError::does_not_apply(describe_json_patch_error(&operations, &err)))?;
    Ok(doc)
}

/// Words a failed JSON patch operation the way the API server's JSON patch library does.
fn describe_json_patch_error(
    operations: &json_patch::Patch,
    err: &json_patch::PatchError,
) -> String {
    use json_patch::{PatchErrorKind, PatchOperation};

    let path = err.path.as_str();
    let Some(op) = operations.0.get(err.operation) else {
        return err.to_string();
    };
    match (op, &err.kind) {
        (PatchOperation::Test(_), PatchErrorKind::TestFailed) => {
            format!("testing value {path} failed: test failed")
        }
        (PatchOperation::Test(_), PatchErrorKind::InvalidPointer) => {
            format!("test operation does not apply: is missing path: {path}: missing value")
        }
        (PatchOperation::Add(_), PatchErrorKind::InvalidPointer) => {
            format!("add operation does not apply: doc is missing path: \"{path}\": missing value")
        }
        (PatchOperation::Remove(_), PatchErrorKind::InvalidPointer) => format!(
            "remove operation does not apply: doc is missing path: \"{path}\": missing value"
        ),
        (PatchOperation::Replace(_), PatchErrorKind::InvalidPointer) => {
            format!("replace operation does not apply: doc is missing key: {path}: missing value")
        }
        (PatchOperation::Move(mv), PatchErrorKind::InvalidFromPointer) => format!(
            "move operation does not apply: doc is missing from path: {}: missing value",
            mv.from.as_str()
        ),
        (PatchOperation::Move(_), PatchErrorKind::InvalidPointer) => format!(
            "move operation does not apply: doc is missing destination path: {path}: missing value"
        ),
        (PatchOperation::Move(mv), PatchErrorKind::CannotMoveInsideItself) => format!(
            "move operation does not apply: cannot move {} into its own child {path}",
            mv.from.as_str()
        ),
        (PatchOperation::Copy(cp), PatchErrorKind::InvalidFromPointer) => format!(
            "copy operation does not apply: doc is missing from path: {}: missing value",
            cp.from.as_str()
        ),
        (PatchOperation::Copy(_), PatchErrorKind::InvalidPointer) => format!(
            "copy operation does not apply: doc is missing destination path: {path}: missing value"
        ),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::PatchError;
    use crate::patch::tests::{arb_json, arb_object, json_patch};

    // --- JSON patch -----------------------------------------------------------------------

    #[test]
    fn json_patch_applies_every_operation_kind() {
        let out = json_patch(
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2], "x": "v"}}),
            json!([
                {"op": "test", "path": "/spec/x", "value": "v"},
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "replace", "path": "/spec/x", "value": "w"},
                {"op": "add", "path": "/spec/list/-", "value": 3},
                {"op": "copy", "from": "/spec/x", "path": "/spec/y"},
                {"op": "move", "from": "/spec/list", "path": "/spec/moved"}
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"b": "2"}},
                   "spec": {"x": "w", "y": "w", "moved": [1, 2, 3]}})
        );
    }

    #[test]
    fn json_patch_failing_test_does_not_apply_and_changes_nothing() {
        let target = json!({"spec": {"x": "v"}});
        let err = json_patch(
            target.clone(),
            json!([
                {"op": "replace", "path": "/spec/x", "value": "changed"},
                {"op": "test", "path": "/spec/x", "value": "other"}
            ]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::DoesNotApply {
                message: "testing value /spec/x failed: test failed".into()
            }
        );
        assert_eq!(err.status_code(), 422);
    }

    #[test]
    fn json_patch_remove_of_a_missing_path_does_not_apply() {
        // kubectl patch pod p --type=json -p '[{"op":"remove","path":"/metadata/labels/nope"}]'
        let err = json_patch(
            json!({"metadata": {"labels": {}}}),
            json!([{"op": "remove", "path": "/metadata/labels/nope"}]),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
        assert_eq!(
            err.message(),
            "remove operation does not apply: doc is missing path: \"/metadata/labels/nope\": missing value"
        );
    }

    #[test]
    fn json_patch_add_under_a_missing_parent_does_not_apply() {
        let err = json_patch(
            json!({"metadata": {}}),
            json!([{"op": "add", "path": "/metadata/labels/app", "value": "x"}]),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
        assert!(
            err.message().starts_with("add operation does not apply"),
            "{err}"
        );
    }

    #[test]
    fn json_patch_replace_and_move_and_copy_of_missing_paths_do_not_apply() {
        let target = json!({"a": 1});
        for (patch, start) in [
            (
                json!([{"op": "replace", "path": "/b", "value": 1}]),
                "replace operation",
            ),
            (
                json!([{"op": "move", "from": "/b", "path": "/c"}]),
                "move operation",
            ),
            (
                json!([{"op": "copy", "from": "/b", "path": "/c"}]),
                "copy operation",
            ),
            (
                json!([{"op": "test", "path": "/b", "value": 1}]),
                "test operation",
            ),
            (
                json!([{"op": "add", "path": "/a/b/c", "value": 1}]),
                "add operation",
            ),
        ] {
            let err = json_patch(target.clone(), patch).unwrap_err();
            assert_eq!(err.status_code(), 422, "{err}");
            assert!(err.message().starts_with(start), "{err}");
        }
    }

    #[test]
    fn json_patch_index_out_of_range_does_not_apply() {
        let err = json_patch(
            json!({"spec": {"list": [1]}}),
            json!([{"op": "add", "path": "/spec/list/5", "value": 2}]),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
    }

    #[test]
    fn json_patch_that_is_not_a_list_is_malformed() {
        let err =
            json_patch(json!({}), json!({"op": "add", "path": "/a", "value": 1})).unwrap_err();
        assert_eq!(err.status_code(), 400);
        assert!(err.message().starts_with("invalid JSON patch"), "{err}");
    }

    #[test]
    fn json_patch_with_an_unknown_op_or_bad_pointer_is_malformed() {
        for patch in [
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"op": "add", "path": "no-leading-slash", "value": 1}]),
            json!([{"op": "add", "value": 1}]),
        ] {
            let err = json_patch(json!({}), patch).unwrap_err();
            assert_eq!(err.status_code(), 400, "{err}");
        }
    }

    /// A JSON pointer into the kind of objects [`arb_object`] builds.
    fn arb_pointer() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                "[a-c]",
                Just("spec".to_owned()),
                Just("-".to_owned()),
                "[0-3]"
            ],
            0..4,
        )
        .prop_map(|parts| parts.iter().map(|p| format!("/{p}")).collect())
    }

    /// Arbitrary JSON patch operations, valid or not.
    fn arb_json_patch() -> impl Strategy<Value = Value> {
        let op = prop_oneof![
            Just("add"),
            Just("remove"),
            Just("replace"),
            Just("move"),
            Just("copy"),
            Just("test"),
            Just("bogus"),
        ];
        prop::collection::vec(
            (op, arb_pointer(), arb_pointer(), arb_json()).prop_map(|(op, path, from, value)| {
                json!({"op": op, "path": path, "from": from, "value": value})
            }),
            0..6,
        )
        .prop_map(Value::Array)
    }

    proptest! {
        // Failing cases are shrunk and printed; no regression file is written beside the source.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn json_patches_never_panic_and_fail_only_as_bad_request_or_invalid(
            target in arb_object(),
            patch in arb_json_patch(),
        ) {
            match json_patch(target, patch) {
                Ok(out) => prop_assert!(out.is_object()),
                Err(err) => prop_assert!(matches!(err.status_code(), 400 | 422), "{}", err),
            }
        }
    }
}
