//! What a schema remembers of the stored revisions it judged: a field equal to its value in a
//! revision that passed is not checked again (transition rules still run), only the schema
//! that recorded a revision trusts it, and a read that found every default is not repeated.

use serde_json::{Value, json};
use std::sync::Arc;

use super::super::revisions::Revisions;
use super::*;

/// `spec.x` and `status.y` at most two characters.
fn short_fields() -> Schema {
    Schema::from_value(json!({
        "type": "object",
        "properties": {
            "spec": { "type": "object", "properties": { "x": { "type": "string", "maxLength": 2 } } },
            "status": { "type": "object", "properties": { "y": { "type": "string", "maxLength": 2 } } },
        },
    }))
    .expect("a schema")
}

fn object(x: &str, y: &str) -> Value {
    json!({ "metadata": { "name": "o" }, "spec": { "x": x }, "status": { "y": y } })
}

const X_TOO_LONG: &str = "spec.x: Too long: may not be more than 2 bytes";
const Y_TOO_LONG: &str = "status.y: Too long: may not be more than 2 bytes";

#[test]
fn a_field_equal_to_a_revision_that_passed_is_not_checked_again() {
    let schema = short_fields();
    let old = Arc::new(object("long", "ok"));
    let new = object("long", "long");
    assert_eq!(
        summaries(&schema.validate(&new, Some(&old))),
        [X_TOO_LONG, Y_TOO_LONG],
        "an old object the schema did not record is no reason to skip anything"
    );
    // As if `old` had passed this schema when it was stored.
    schema.record_validated(&old);
    assert_eq!(
        summaries(&schema.validate(&new, Some(&old))),
        [Y_TOO_LONG],
        "the unchanged spec is not checked again"
    );
}

#[test]
fn transition_rules_run_on_values_equal_to_a_revision_that_passed() {
    let schema = Schema::from_value(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": { "x": { "type": "string" } },
                "x-kubernetes-validations": [
                    { "rule": "self.x != oldSelf.x", "message": "x must change" },
                    { "rule": "self.x.size() < 3", "message": "x is too long" },
                ],
            },
            "status": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
        },
    }))
    .expect("a schema");
    let old = Arc::new(object("long", "a"));
    let new = object("long", "b");
    let must_change = "spec: Invalid value: \"object\": x must change";
    let too_long = "spec: Invalid value: \"object\": x is too long";
    assert_eq!(
        summaries(&schema.validate(&new, Some(&old))),
        [must_change, too_long]
    );
    schema.record_validated(&old);
    assert_eq!(
        summaries(&schema.validate(&new, Some(&old))),
        [must_change],
        "a rule that reads only `self` passed on this value; one that reads `oldSelf` runs"
    );
}

#[test]
fn a_revision_is_trusted_only_by_the_schema_that_recorded_it() {
    let (recorded, other) = (short_fields(), short_fields());
    let old = Arc::new(object("long", "ok"));
    recorded.record_validated(&old);
    assert_eq!(
        summaries(&other.validate(&object("long", "ok"), Some(&old))),
        [X_TOO_LONG],
        "a new schema (a CRD changed) checks every field again"
    );
}

#[test]
fn a_copy_of_a_recorded_revision_is_not_trusted() {
    let schema = short_fields();
    let old = Arc::new(object("long", "ok"));
    schema.record_validated(&old);
    let copy = Value::clone(&old);
    assert_eq!(
        summaries(&schema.validate(&object("long", "ok"), Some(&copy))),
        [X_TOO_LONG],
        "only the recorded revision itself, not an equal value elsewhere"
    );
}

#[test]
fn a_read_that_found_every_default_is_remembered_and_one_that_did_not_is_repeated() {
    let schema = Schema::from_value(json!({
        "type": "object",
        "properties": { "spec": { "type": "object", "properties": { "size": { "type": "integer", "default": 3 } } } },
    }))
    .expect("a schema");
    let complete = Arc::new(json!({ "spec": { "size": 1 } }));
    assert_eq!(schema.defaulted_revision(&complete), None);
    assert_eq!(schema.complete.len(), 1);
    assert_eq!(schema.defaulted_revision(&complete), None);
    assert_eq!(schema.complete.len(), 1);
    let lacking = Arc::new(json!({ "spec": {} }));
    for _ in 0..2 {
        assert_eq!(
            schema.defaulted_revision(&lacking),
            Some(json!({ "spec": { "size": 3 } }))
        );
    }
    assert_eq!(
        schema.complete.len(),
        1,
        "a revision lacking a default is not kept"
    );
}

#[test]
fn revisions_that_are_gone_are_swept_once_the_set_has_doubled() {
    let set = Revisions::default();
    let kept = Arc::new(json!({ "kept": true }));
    set.insert(&kept);
    for i in 0..2000 {
        let gone = Arc::new(json!({ "i": i }));
        set.insert(&gone);
    }
    assert!(set.len() < 1100, "swept: {} entries", set.len());
    assert!(set.contains(&kept));
}
