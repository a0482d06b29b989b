//! SandboxTemplate: the same fields in both versions but `v1beta1`'s
//! `volumeClaimTemplatesPolicy`, which a `v1alpha1` form carries in an annotation. Templates
//! have no status.

use super::{
    Kind, Obj, annotation, annotations_mut, claim_templates, copy_nonempty, copy_set, pod_template,
    remove_annotation,
};
use serde_json::{Value, json};

/// The annotation carrying `volumeClaimTemplatesPolicy` on a `v1alpha1` template.
const POLICY_ANNOTATION: &str = "api.agents.x-k8s.io/v1beta1-volume-claim-templates-policy";
/// The values `volumeClaimTemplatesPolicy` takes.
const POLICIES: [&str; 3] = ["Disallowed", "Allowed", "Overrides"];

/// `podTemplate` and `volumeClaimTemplates`.
fn templates(spec: Option<&Value>, out: &mut Obj) {
    out.insert(
        "podTemplate".into(),
        pod_template(spec.and_then(|s| s.get("podTemplate"))),
    );
    if let Some(vcts) = claim_templates(spec.and_then(|s| s.get("volumeClaimTemplates"))) {
        out.insert("volumeClaimTemplates".into(), vcts);
    }
}

/// `networkPolicy`, `networkPolicyManagement` and `envVarsInjectionPolicy`.
fn policies(spec: Option<&Value>, out: &mut Obj) {
    if let Some(np) = spec
        .and_then(|s| s.get("networkPolicy"))
        .filter(|n| !n.is_null())
    {
        let mut o = Obj::new();
        copy_nonempty(&mut o, Some(np), "ingress");
        copy_nonempty(&mut o, Some(np), "egress");
        out.insert("networkPolicy".into(), Value::Object(o));
    }
    copy_nonempty(out, spec, "networkPolicyManagement");
    copy_nonempty(out, spec, "envVarsInjectionPolicy");
}

pub(super) fn to_hub(src: &Value, out: &mut Obj) -> Result<(), String> {
    let spec = src.get("spec");
    let mut s = Obj::new();
    templates(spec, &mut s);
    copy_set(&mut s, spec, "service");
    policies(spec, &mut s);
    if let Some(policy) = annotation(src, POLICY_ANNOTATION) {
        if !POLICIES.contains(&policy) {
            return Err(format!(
                "invalid VolumeClaimTemplatesPolicy annotation value: {policy:?}"
            ));
        }
        s.insert("volumeClaimTemplatesPolicy".into(), json!(policy));
        remove_annotation(out, POLICY_ANNOTATION);
    }
    out.insert("spec".into(), Value::Object(s));
    Ok(())
}

pub(super) fn from_hub(src: &Value, out: &mut Obj) {
    let spec = src.get("spec");
    let mut s = Obj::new();
    templates(spec, &mut s);
    policies(spec, &mut s);
    copy_set(&mut s, spec, "service");
    out.insert("spec".into(), Value::Object(s));
    remove_annotation(out, &Kind::SandboxTemplate.state_annotation());
    match spec
        .and_then(|s| s.get("volumeClaimTemplatesPolicy"))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        Some(policy) => {
            if let Some(a) = annotations_mut(out) {
                a.insert(POLICY_ANNOTATION.into(), json!(policy));
            }
        }
        None => {
            remove_annotation(out, POLICY_ANNOTATION);
        }
    }
}
