//! Defaulting with the defaults of the four CRDs.

use serde_json::{Value, json};

use super::*;

#[test]
fn minimal_sandbox_gets_operating_mode_and_shutdown_policy_defaults() {
    let (obj, unknown, errs) = admit(
        schema_of("sandboxes"),
        sandbox(json!({"podTemplate": pod_template()})),
    );
    assert!(
        unknown.is_empty() && errs.is_empty(),
        "{unknown:?} {errs:?}"
    );
    assert_eq!(obj.pointer("/spec/operatingMode"), Some(&json!("Running")));
    assert_eq!(obj.pointer("/spec/shutdownPolicy"), Some(&json!("Retain")));
    assert_eq!(obj.pointer("/spec/service"), None, "service has no default");
    assert_eq!(obj.pointer("/metadata"), Some(&json!({"name": "s"})));
}

#[test]
fn defaults_do_not_replace_values_the_user_set() {
    let spec = json!({"podTemplate": pod_template(), "operatingMode": "Suspended", "shutdownPolicy": "Delete"});
    let (obj, _, errs) = admit(schema_of("sandboxes"), sandbox(spec));
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        obj.pointer("/spec/operatingMode"),
        Some(&json!("Suspended"))
    );
    assert_eq!(obj.pointer("/spec/shutdownPolicy"), Some(&json!("Delete")));
}

#[test]
fn warm_pool_gets_replicas_and_update_strategy_type_only_where_they_apply() {
    let pools = schema_of("sandboxwarmpools");
    let bare = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
        "metadata": {"name": "p"}, "spec": {"sandboxTemplateRef": {"name": "t"}}});
    let (obj, _, errs) = admit(pools, bare.clone());
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(obj.pointer("/spec/replicas"), Some(&json!(1)));
    assert_eq!(
        obj.pointer("/spec/updateStrategy"),
        None,
        "no parent object, no nested default"
    );

    let mut with_strategy = bare;
    if let Some(spec) = with_strategy
        .pointer_mut("/spec")
        .and_then(Value::as_object_mut)
    {
        spec.insert("updateStrategy".into(), json!({}));
        spec.insert("replicas".into(), json!(0));
    }
    let (obj, _, errs) = admit(pools, with_strategy);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        obj.pointer("/spec/updateStrategy"),
        Some(&json!({"type": "OnReplenish"}))
    );
    assert_eq!(
        obj.pointer("/spec/replicas"),
        Some(&json!(0)),
        "0 is a value, not absence"
    );
}

#[test]
fn sandbox_template_gets_its_three_policy_defaults() {
    let tmpl = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
        "metadata": {"name": "t"}, "spec": {"podTemplate": pod_template()}});
    let (obj, _, errs) = admit(schema_of("sandboxtemplates"), tmpl);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        obj.pointer("/spec/networkPolicyManagement"),
        Some(&json!("Managed"))
    );
    assert_eq!(
        obj.pointer("/spec/envVarsInjectionPolicy"),
        Some(&json!("Disallowed"))
    );
    assert_eq!(
        obj.pointer("/spec/volumeClaimTemplatesPolicy"),
        Some(&json!("Disallowed"))
    );
}

#[test]
fn claim_lifecycle_gets_shutdown_policy_only_when_lifecycle_is_present() {
    let claims = schema_of("sandboxclaims");
    let claim = |spec: Value| {
        json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
            "metadata": {"name": "c"}, "spec": spec})
    };
    let (obj, _, errs) = admit(claims, claim(json!({"warmPoolRef": {"name": "p"}})));
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(obj.pointer("/spec/lifecycle"), None);
    let (obj, _, errs) = admit(
        claims,
        claim(json!({"warmPoolRef": {"name": "p"}, "lifecycle": {}})),
    );
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        obj.pointer("/spec/lifecycle"),
        Some(&json!({"shutdownPolicy": "Retain"}))
    );
}
