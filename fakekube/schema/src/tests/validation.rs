//! Structural validation against the four CRDs, with the API server's wording.

use serde_json::{Value, json};

use super::*;

#[test]
fn sandbox_without_pod_template_is_a_required_value() {
    let (_, _, errs) = admit(schema_of("sandboxes"), sandbox(json!({})));
    let first = errs.first().cloned();
    assert_eq!(
        first,
        Some(FieldError {
            field: "spec.podTemplate".into(),
            reason: FIELD_VALUE_REQUIRED,
            message: "Required value".into()
        })
    );
    // The Sandbox CRD has a CEL rule, so the API server adds its "not checked" note.
    assert_eq!(
        summaries(&errs).get(1).map(String::as_str),
        Some(
            "<nil>: Invalid value: null: some validation rules were not checked because the object was \
             invalid; correct the existing errors to complete validation"
        )
    );
    assert_eq!(errs.len(), 2, "{errs:?}");
}

#[test]
fn a_kind_without_rules_gets_no_rules_note() {
    let pool = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
        "metadata": {"name": "p"}, "spec": {}});
    let (_, _, errs) = admit(schema_of("sandboxwarmpools"), pool);
    assert_eq!(
        summaries(&errs),
        ["spec.sandboxTemplateRef: Required value"]
    );
}

#[test]
fn missing_spec_is_reported_at_the_root() {
    let (_, _, errs) = admit(
        schema_of("sandboxclaims"),
        json!({"apiVersion": "x", "kind": "SandboxClaim", "metadata": {}}),
    );
    assert_eq!(summaries(&errs), ["spec: Required value"]);
}

#[test]
fn bad_enum_is_an_unsupported_value_listing_the_supported_ones() {
    let spec = json!({"podTemplate": pod_template(), "operatingMode": "Foo"});
    let (_, _, errs) = admit(schema_of("sandboxes"), sandbox(spec));
    assert_eq!(
        errs.first(),
        Some(&FieldError {
            field: "spec.operatingMode".into(),
            reason: FIELD_VALUE_NOT_SUPPORTED,
            message: r#"Unsupported value: "Foo": supported values: "Running", "Suspended""#.into()
        })
    );
}

#[test]
fn negative_replicas_breaks_the_minimum() {
    let pool = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
        "metadata": {"name": "p"}, "spec": {"replicas": -1, "sandboxTemplateRef": {"name": "t"}}});
    let (_, _, errs) = admit(schema_of("sandboxwarmpools"), pool);
    assert_eq!(
        errs,
        [FieldError {
            field: "spec.replicas".into(),
            reason: FIELD_VALUE_INVALID,
            message:
                "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
                    .into()
        }]
    );
}

#[test]
fn a_string_where_an_integer_goes_is_a_type_error() {
    let pool = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
        "metadata": {"name": "p"}, "spec": {"replicas": "string", "sandboxTemplateRef": {"name": "t"}}});
    let (_, _, errs) = admit(schema_of("sandboxwarmpools"), pool);
    assert_eq!(
        errs,
        [FieldError {
            field: "spec.replicas".into(),
            reason: FIELD_VALUE_TYPE_INVALID,
            message: r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#.into()
        }]
    );
}

#[test]
fn integral_floats_pass_as_integers_and_fractions_do_not() {
    let pools = schema_of("sandboxwarmpools");
    let pool = |r: Value| {
        json!({"apiVersion": "v", "kind": "SandboxWarmPool", "metadata": {},
            "spec": {"replicas": r, "sandboxTemplateRef": {"name": "t"}}})
    };
    assert!(admit(pools, pool(json!(2.0))).2.is_empty());
    let (_, _, errs) = admit(pools, pool(json!(-1.5)));
    assert_eq!(
        summaries(&errs),
        [
            r#"spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number""#,
            "spec.replicas: Invalid value: -1.5: spec.replicas in body should be greater than or equal to 0",
        ]
    );
}

#[test]
fn a_bad_date_time_in_shutdown_time_is_a_type_error() {
    let schema = schema_of("sandboxes");
    let spec = json!({"podTemplate": pod_template(), "shutdownTime": "tomorrow"});
    let (_, _, errs) = admit(schema, sandbox(spec));
    assert_eq!(
        errs.first(),
        Some(&FieldError {
            field: "spec.shutdownTime".into(),
            reason: FIELD_VALUE_TYPE_INVALID,
            message: r#"Invalid value: "tomorrow": spec.shutdownTime in body must be of type date-time: "tomorrow""#
                .into()
        })
    );
    for good in [
        "2026-11-29T10:00:00Z",
        "2026-11-29T10:00:00.123456+01:00",
        "2024-02-29t23:59:59z",
    ] {
        let spec = json!({"podTemplate": pod_template(), "shutdownTime": good});
        assert!(
            admit(schema, sandbox(spec)).2.is_empty(),
            "{good} should be accepted"
        );
    }
    for bad in [
        "2026-11-29",
        "2026-02-30T10:00:00Z",
        "2026-11-29T24:00:00Z",
        "2026-11-29T10:00:00",
        "2026-11-29T10:00Z",
    ] {
        let spec = json!({"podTemplate": pod_template(), "shutdownTime": bad});
        assert!(
            !admit(schema, sandbox(spec)).2.is_empty(),
            "{bad} should be refused"
        );
    }
}

#[test]
fn a_number_in_a_date_time_field_reports_the_go_format_of_the_number() {
    let spec = json!({"podTemplate": pod_template(), "shutdownTime": 5});
    let (_, _, errs) = admit(schema_of("sandboxes"), sandbox(spec));
    assert_eq!(
        summaries(&errs).first().map(String::as_str),
        Some(
            r#"spec.shutdownTime: Invalid value: "int64": spec.shutdownTime in body must be of type date-time: "int64""#
        )
    );
}

#[test]
fn resource_quantities_accept_suffixed_strings_and_integers() {
    let schema = schema_of("sandboxes");
    let with_resources = |resources: Value| {
        let mut pt = pod_template();
        if let Some(c) = pt
            .pointer_mut("/spec/containers/0")
            .and_then(Value::as_object_mut)
        {
            c.insert("resources".into(), resources);
        }
        sandbox(json!({"podTemplate": pt}))
    };
    let ok = with_resources(
        json!({"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": 2, "memory": "1e3"}}),
    );
    let (_, _, errs) = admit(schema, ok);
    assert!(errs.is_empty(), "{errs:?}");

    let (_, _, errs) = admit(
        schema,
        with_resources(json!({"limits": {"cpu": "5 cores"}})),
    );
    let field = "spec.podTemplate.spec.containers[0].resources.limits.cpu";
    assert_eq!(
        errs.first().map(summary),
        Some(format!(
            "{field}: Invalid value: \"5 cores\": {field} in body should match '{QUANTITY_PATTERN}'"
        ))
    );

    let (_, _, errs) = admit(schema, with_resources(json!({"limits": {"cpu": true}})));
    assert_eq!(
        summaries(&errs),
        [
            format!(r#"{field}: Invalid value: "boolean": {field} in body must be of type integer,string: "boolean""#),
            format!(r#"<nil>: Invalid value: "": "{field}" must validate at least one schema (anyOf)"#),
            format!(r#"{field}: Invalid value: "boolean": {field} in body must be of type integer: "boolean""#),
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; \
             correct the existing errors to complete validation"
                .to_string(),
        ]
    );
}

#[test]
fn status_condition_fields_check_length_pattern_and_enum() {
    let cond = json!({"type": "Ready", "status": "Maybe", "reason": "r".repeat(1025),
        "message": "", "lastTransitionTime": "2026-11-29T10:00:00Z"});
    let obj = sandbox(json!({"podTemplate": pod_template()}));
    let mut obj = obj;
    if let Some(m) = obj.as_object_mut() {
        m.insert("status".into(), json!({"conditions": [cond]}));
    }
    let (_, _, errs) = admit(schema_of("sandboxes"), obj);
    let got = summaries(&errs);
    assert!(
        got.contains(
            &"status.conditions[0].reason: Too long: may not be more than 1024 bytes".to_string()
        ),
        "{got:?}"
    );
    assert!(
        got.contains(
            &r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#
                .to_string()
        ),
        "{got:?}"
    );
}

#[test]
fn duplicate_keys_of_a_map_list_are_reported_at_the_second_occurrence() {
    let pt = json!({"spec": {"containers": [
        {"name": "a", "image": "x", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]},
        {"name": "a", "image": "y"}]}});
    let (_, _, errs) = admit(schema_of("sandboxes"), sandbox(json!({"podTemplate": pt})));
    assert_eq!(
        summaries(&errs),
        [
            r#"spec.podTemplate.spec.containers[1]: Duplicate value: {"name":"a"}"#,
            r#"spec.podTemplate.spec.containers[0].ports[1]: Duplicate value: {"containerPort":80,"protocol":"TCP"}"#,
        ]
    );
}
