//! SandboxWarmPool: `v1alpha1`'s `replicas` is required where `v1beta1`'s is optional (1 when
//! unset); `v1beta1`'s `status.observedGeneration` has no `v1alpha1` field. Both versions
//! always marshal a `status`.

use super::{Kind, Obj, copy_nonempty, remove_annotation};
use serde_json::{Value, json};

/// `updateStrategy` (a pointer in both versions).
fn update_strategy(spec: Option<&Value>, out: &mut Obj) {
    if let Some(u) = spec
        .and_then(|s| s.get("updateStrategy"))
        .filter(|u| !u.is_null())
    {
        let mut o = Obj::new();
        copy_nonempty(&mut o, Some(u), "type");
        out.insert("updateStrategy".into(), Value::Object(o));
    }
}

/// The status both versions share.
fn status(src: &Value, out: &mut Obj) {
    let status = src.get("status");
    let mut st = Obj::new();
    copy_nonempty(&mut st, status, "replicas");
    copy_nonempty(&mut st, status, "readyReplicas");
    copy_nonempty(&mut st, status, "selector");
    out.insert("status".into(), Value::Object(st));
}

fn template_name(spec: Option<&Value>) -> &str {
    spec.and_then(|s| s.pointer("/sandboxTemplateRef/name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub(super) fn to_hub(src: &Value, out: &mut Obj) {
    let spec = src.get("spec");
    let replicas = spec
        .and_then(|s| s.get("replicas"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut s = Obj::new();
    s.insert("replicas".into(), json!(replicas));
    s.insert(
        "sandboxTemplateRef".into(),
        json!({ "name": template_name(spec) }),
    );
    update_strategy(spec, &mut s);
    out.insert("spec".into(), Value::Object(s));
    status(src, out);
}

pub(super) fn from_hub(src: &Value, out: &mut Obj) {
    let spec = src.get("spec");
    let replicas = spec
        .and_then(|s| s.get("replicas"))
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut s = Obj::new();
    s.insert("replicas".into(), json!(replicas));
    let name = template_name(spec);
    s.insert(
        "sandboxTemplateRef".into(),
        if name.is_empty() {
            json!({})
        } else {
            json!({ "name": name })
        },
    );
    update_strategy(spec, &mut s);
    out.insert("spec".into(), Value::Object(s));
    status(src, out);
    remove_annotation(out, &Kind::SandboxWarmPool.state_annotation());
}
