//! The keywords and extensions the agent-sandbox CRDs do not use, on a schema of the tests'
//! own: compositions, `multipleOf`, property counts, formats, embedded resources and CEL
//! rules with their messages, reasons and field paths.

use serde_json::{Value, json};

use super::*;

/// The schema of a `Widget` with a field for each feature.
fn widget() -> Schema {
    let root = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    { "rule": "!has(self.min) || !has(self.max) || self.min <= self.max", "message": "min must not exceed max", "fieldPath": ".min" },
                    { "rule": "!has(self.name) || self.name != 'forbidden'", "reason": "FieldValueForbidden", "messageExpression": "'name ' + self.name + ' is reserved'" },
                    { "rule": "!has(self.max) || !has(oldSelf.max) || self.max >= oldSelf.max", "message": "max may not shrink" },
                    { "rule": "has(self.name)", "reason": "FieldValueRequired", "message": "a name is needed" },
                ],
                "properties": {
                    "name": { "type": "string" },
                    "min": { "type": "integer" },
                    "max": { "type": "integer" },
                    "step": { "type": "number", "multipleOf": 0.5 },
                    "labels": { "type": "object", "maxProperties": 2, "minProperties": 1, "additionalProperties": { "type": "string" } },
                    "either": { "type": "object", "properties": { "a": { "type": "string" }, "b": { "type": "string" } }, "oneOf": [ { "required": ["a"] }, { "required": ["b"] } ] },
                    "both": { "type": "string", "allOf": [ { "minLength": 2 }, { "maxLength": 3 } ] },
                    "notc": { "type": "string", "not": { "enum": ["c"] } },
                    "addr": { "type": "string", "format": "ipv4" },
                    "template": { "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true },
                },
            },
        },
    });
    Schema::from_value(root).expect("a schema")
}

/// `spec` of a Widget, validated on create (or as an update of `old`).
fn check(spec: Value, old: Option<Value>) -> Vec<String> {
    let schema = widget();
    let obj = json!({ "spec": spec });
    let old = old.map(|o| json!({ "spec": o }));
    summaries(&schema.validate(&obj, old.as_ref()))
}

#[test]
fn compositions_bounds_and_formats_are_checked() {
    assert_eq!(
        check(
            json!({ "name": "w", "step": 1.5, "labels": { "a": "1" }, "either": { "a": "x" }, "both": "ab", "notc": "d", "addr": "10.0.0.1" }),
            None
        ),
        Vec::<String>::new()
    );
    let got = check(
        json!({ "name": "w", "step": 0.3, "labels": { "a": "1", "b": "2", "c": "3" }, "either": { "a": "x", "b": "y" }, "both": "a", "notc": "c", "addr": "10.0.0.300" }),
        None,
    );
    for want in [
        "spec.step: Invalid value: 0.3: spec.step in body should be a multiple of 0.5",
        "spec.labels: Too many: 3: must have at most 2 items",
        "<nil>: Invalid value: \"\": \"spec.either\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
        "<nil>: Invalid value: \"\": \"spec.both\" must validate all the schemas (allOf)",
        "spec.both: Invalid value: \"a\": spec.both in body should be at least 2 chars long",
        "<nil>: Invalid value: \"\": \"spec.notc\" must not validate the schema (not)",
        "spec.addr: Invalid value: \"10.0.0.300\": spec.addr in body must be of type ipv4: \"10.0.0.300\"",
    ] {
        assert!(
            got.iter().any(|g| g == want),
            "missing {want:?} in {got:#?}"
        );
    }
}

#[test]
fn an_embedded_resource_needs_its_api_version_and_kind() {
    let got = check(
        json!({ "name": "w", "template": { "metadata": { "name": "Bad_Name" } } }),
        None,
    );
    assert!(
        got.contains(&"spec.template.apiVersion: Required value: must not be empty".to_string()),
        "{got:#?}"
    );
    assert!(
        got.contains(&"spec.template.kind: Required value: must not be empty".to_string()),
        "{got:#?}"
    );
    assert!(got.iter().any(|g| g.starts_with("spec.template.metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain")), "{got:#?}");
    assert_eq!(
        check(
            json!({ "name": "w", "template": { "apiVersion": "v1", "kind": "Pod" } }),
            None
        ),
        Vec::<String>::new()
    );
}

#[test]
fn cel_rules_report_their_message_reason_and_field_path() {
    assert_eq!(
        check(json!({ "name": "forbidden", "min": 5, "max": 1 }), None),
        [
            "spec.min: Invalid value: \"object\": min must not exceed max",
            "spec: Forbidden: name forbidden is reserved",
        ]
    );
    assert_eq!(
        check(json!({}), None),
        ["spec: Required value: a name is needed"]
    );
}

#[test]
fn a_transition_rule_runs_only_on_update_with_an_old_value() {
    assert_eq!(
        check(json!({ "name": "w", "max": 1 }), None),
        Vec::<String>::new()
    );
    assert_eq!(
        check(
            json!({ "name": "w", "max": 1 }),
            Some(json!({ "name": "w", "max": 3 }))
        ),
        ["spec: Invalid value: \"object\": max may not shrink"]
    );
    assert_eq!(
        check(
            json!({ "name": "w", "max": 4 }),
            Some(json!({ "name": "w", "max": 3 }))
        ),
        Vec::<String>::new()
    );
}

#[test]
fn an_evaluation_error_names_the_rule() {
    let schema = Schema::from_value(json!({
        "type": "object",
        "properties": { "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-validations": [ { "rule": "self.size > 1" } ] } },
    }))
    .expect("a schema");
    assert_eq!(
        summaries(&schema.validate(&json!({ "spec": {} }), None)),
        ["spec: Invalid value: \"object\": no such key: size evaluating rule: self.size > 1"]
    );
}

#[test]
fn reads_get_the_defaults_an_object_lacks() {
    let schema = Schema::from_value(json!({
        "type": "object",
        "properties": { "spec": { "type": "object", "properties": { "size": { "type": "integer", "default": 3 } } } },
    }))
    .expect("a schema");
    assert_eq!(
        schema.defaulted(&json!({ "spec": {} })),
        Some(json!({ "spec": { "size": 3 } }))
    );
    assert_eq!(schema.defaulted(&json!({ "spec": { "size": 1 } })), None);
    assert_eq!(
        schema.defaulted(&json!({})),
        None,
        "no spec, nothing to descend into"
    );
}
