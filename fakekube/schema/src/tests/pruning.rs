//! Pruning: unknown fields reported and dropped, `null`s the schema does not allow removed.

use serde_json::{Value, json};

use super::*;

#[test]
fn unknown_fields_are_pruned_and_reported_with_their_paths() {
    let mut pt = pod_template();
    if let Some(c) = pt
        .pointer_mut("/spec/containers/0")
        .and_then(Value::as_object_mut)
    {
        c.insert("colour".into(), json!("red"));
    }
    let obj = json!({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
        "metadata": {"name": "s", "whatever": 1}, "extra": true,
        "spec": {"podTemplate": pt, "foo": {"bar": 1}}});
    let (obj, unknown, errs) = admit(schema_of("sandboxes"), obj);
    assert_eq!(
        unknown,
        [
            "extra",
            "spec.foo",
            "spec.podTemplate.spec.containers[0].colour"
        ]
    );
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(obj.get("extra"), None);
    assert_eq!(obj.pointer("/spec/foo"), None);
    assert_eq!(
        obj.pointer("/spec/podTemplate/spec/containers/0/colour"),
        None
    );
    assert_eq!(
        obj.pointer("/metadata/whatever"),
        Some(&json!(1)),
        "root metadata is the store's"
    );
    assert_eq!(obj.get("kind"), Some(&json!("Sandbox")));
}

#[test]
fn preserve_unknown_fields_keeps_unknown_keys_but_prunes_known_subtrees() {
    let schema = Schema::from_value(json!({"type": "object", "properties": {"free": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}))
    .unwrap();
    let mut obj = json!({"free": {"anything": {"x": 1}, "known": {"a": "1", "b": 2}}});
    let unknown = schema.prune(&mut obj);
    assert_eq!(unknown, ["free.known.b"]);
    assert_eq!(
        obj,
        json!({"free": {"anything": {"x": 1}, "known": {"a": "1"}}})
    );
}

#[test]
fn nulls_without_defaults_are_dropped_and_nulls_with_defaults_are_defaulted() {
    let spec = json!({"podTemplate": pod_template(), "service": null, "operatingMode": null});
    let (obj, unknown, errs) = admit(schema_of("sandboxes"), sandbox(spec));
    assert!(
        unknown.is_empty() && errs.is_empty(),
        "{unknown:?} {errs:?}"
    );
    assert_eq!(obj.pointer("/spec/service"), None);
    assert_eq!(obj.pointer("/spec/operatingMode"), Some(&json!("Running")));
}
