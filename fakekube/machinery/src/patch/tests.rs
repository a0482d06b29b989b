//! Helpers the patch types' tests share, and tests of [`apply_patch`](super::apply_patch) over
//! every patch type.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{MergeKeys, PatchError, PatchKind, apply_patch};

/// Applies a strategic merge patch with the merge keys of `kind`.
pub(super) fn smp(kind: &str, target: Value, patch: Value) -> Result<Value, PatchError> {
    apply_patch(
        PatchKind::StrategicMerge,
        &target,
        &patch,
        &MergeKeys::for_core_kind(kind),
    )
}

/// Applies a JSON patch.
pub(super) fn json_patch(target: Value, patch: Value) -> Result<Value, PatchError> {
    apply_patch(PatchKind::Json, &target, &patch, &MergeKeys::none())
}

/// Applies a merge patch.
pub(super) fn merge(target: Value, patch: Value) -> Result<Value, PatchError> {
    apply_patch(PatchKind::Merge, &target, &patch, &MergeKeys::none())
}

#[test]
fn a_patch_whose_result_is_not_an_object_does_not_apply() {
    let err = merge(json!({"a": 1}), json!([1, 2])).unwrap_err();
    assert_eq!(err.status_code(), 422);
    let err = json_patch(
        json!({"a": 1}),
        json!([{"op": "replace", "path": "", "value": 3}]),
    )
    .unwrap_err();
    assert_eq!(err.status_code(), 422);
}

#[test]
fn apply_patch_leaves_the_target_unchanged() {
    let target = json!({"metadata": {"name": "p", "labels": {"a": "1"}}});
    let copy = target.clone();
    let patch = json!({"metadata": {"labels": {"a": null}}});
    for kind in [
        PatchKind::Merge,
        PatchKind::StrategicMerge,
        PatchKind::Apply,
    ] {
        let out = apply_patch(kind, &target, &patch, &MergeKeys::for_core_kind("Pod"));
        assert!(out.is_ok(), "{kind:?}");
    }
    assert_eq!(target, copy);
}

/// Arbitrary JSON values, a few levels deep, with keys drawn from a small alphabet so that
/// patches and targets overlap, and with directive keys mixed in.
pub(super) fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e6..1.0e6f64).prop_map(|f| json!(f)),
        "[a-z]{0,4}".prop_map(Value::String),
        prop_oneof![Just("delete"), Just("replace"), Just("merge")]
            .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Map keys: plain field names, the fields that carry merge keys, and directives.
fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c]".prop_map(String::from),
        Just("name".to_owned()),
        Just("containers".to_owned()),
        Just("finalizers".to_owned()),
        Just("$patch".to_owned()),
        Just("$retainKeys".to_owned()),
        Just("$setElementOrder/containers".to_owned()),
        Just("$setElementOrder/finalizers".to_owned()),
        Just("$deleteFromPrimitiveList/finalizers".to_owned()),
        Just("$deleteFromPrimitiveList".to_owned()),
    ]
}

/// Arbitrary objects with a `spec` and `metadata` shaped like Kubernetes objects.
pub(super) fn arb_object() -> impl Strategy<Value = Value> {
    (arb_json(), arb_json(), arb_json()).prop_map(
        |(spec, metadata, extra)| json!({"spec": spec, "metadata": metadata, "extra": extra}),
    )
}

proptest! {
    // Failing cases are shrunk and printed; no regression file is written beside the source.
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_patch_on_any_value_never_panics(target in arb_json(), patch in arb_json()) {
        for kind in PatchKind::ALL {
            let _ = apply_patch(kind, &target, &patch, &MergeKeys::for_core_kind("Pod"));
        }
    }
}
