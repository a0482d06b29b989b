//! The `x-kubernetes-validations` of the Sandbox CRD, on create and update.

use serde_json::{Value, json};

use super::*;

#[test]
fn volume_claim_templates_are_immutable_on_update() {
    let schema = schema_of("sandboxes");
    let vct = |size: &str| {
        json!([{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}])
    };
    let with = |v: Option<Value>| {
        let mut spec = json!({"podTemplate": pod_template()});
        if let (Some(v), Some(m)) = (v, spec.as_object_mut()) {
            m.insert("volumeClaimTemplates".into(), v);
        }
        let (obj, _, errs) = admit(schema, sandbox(spec));
        assert!(errs.is_empty(), "{errs:?}");
        obj
    };
    let none = with(None);
    let one = with(Some(vct("1Gi")));
    let two = with(Some(vct("2Gi")));
    let immutable = [FieldError {
        field: "spec".into(),
        reason: FIELD_VALUE_INVALID,
        message: r#"Invalid value: "object": volumeClaimTemplates is immutable"#.into(),
    }];
    assert_eq!(schema.validate(&one, Some(&none)), immutable, "adding");
    assert_eq!(schema.validate(&none, Some(&one)), immutable, "removing");
    assert_eq!(schema.validate(&two, Some(&one)), immutable, "changing");
    assert!(schema.validate(&one, Some(&one)).is_empty(), "unchanged");
    assert!(
        schema.validate(&none, Some(&none)).is_empty(),
        "absent on both sides"
    );
    let mut other_change = one.clone();
    if let Some(m) = other_change
        .pointer_mut("/spec")
        .and_then(Value::as_object_mut)
    {
        m.insert("operatingMode".into(), json!("Suspended"));
    }
    assert!(
        schema.validate(&other_change, Some(&one)).is_empty(),
        "other fields may change"
    );
}

#[test]
fn transition_rules_are_not_checked_when_the_new_object_is_invalid() {
    let schema = schema_of("sandboxes");
    let old = sandbox(json!({"podTemplate": pod_template()}));
    let new = sandbox(json!({"volumeClaimTemplates": []}));
    assert!(
        !schema
            .validate(&new, Some(&old))
            .iter()
            .any(|e| e.message.contains("immutable"))
    );
    assert!(
        summaries(&schema.validate(&new, None))
            .iter()
            .any(|s| s.contains("rules were not checked"))
    );
}
