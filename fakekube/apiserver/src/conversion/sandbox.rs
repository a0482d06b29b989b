//! Sandbox: `v1alpha1`'s `spec.replicas` (0 or 1) is `v1beta1`'s `spec.operatingMode`
//! (`Suspended` for 0, `Running` otherwise); `v1alpha1`'s `status.replicas` has no `v1beta1`
//! field, nor has `v1beta1`'s `status.nodeName` a `v1alpha1` one.

use super::{
    Kind, Obj, claim_templates, copy_nonempty, copy_set, pod_template, state_int, take_state,
};
use serde_json::{Value, json};

const SUSPENDED: &str = "Suspended";
const RUNNING: &str = "Running";

/// The spec fields both versions share, in the order both marshal them.
fn blueprint(spec: Option<&Value>, out: &mut Obj) {
    out.insert(
        "podTemplate".into(),
        pod_template(spec.and_then(|s| s.get("podTemplate"))),
    );
    if let Some(vcts) = claim_templates(spec.and_then(|s| s.get("volumeClaimTemplates"))) {
        out.insert("volumeClaimTemplates".into(), vcts);
    }
}

/// The lifecycle fields (inline in both specs).
fn lifecycle(spec: Option<&Value>, out: &mut Obj) {
    copy_set(out, spec, "shutdownTime");
    copy_set(out, spec, "shutdownPolicy");
}

/// The status fields both versions share, up to `conditions`, then the rest.
fn status_head(status: Option<&Value>, out: &mut Obj) {
    copy_nonempty(out, status, "serviceFQDN");
    copy_nonempty(out, status, "service");
    copy_nonempty(out, status, "conditions");
}

fn status_tail(status: Option<&Value>, out: &mut Obj) {
    copy_nonempty(out, status, "selector");
    copy_nonempty(out, status, "podIPs");
}

pub(super) fn to_hub(src: &Value, out: &mut Obj) {
    let spec = src.get("spec");
    let mut s = Obj::new();
    blueprint(spec, &mut s);
    copy_set(&mut s, spec, "service");
    lifecycle(spec, &mut s);
    let suspended = spec.and_then(|s| s.get("replicas")).and_then(Value::as_i64) == Some(0);
    s.insert(
        "operatingMode".into(),
        json!(if suspended { SUSPENDED } else { RUNNING }),
    );
    out.insert("spec".into(), Value::Object(s));
    let status = src.get("status");
    let mut st = Obj::new();
    status_head(status, &mut st);
    status_tail(status, &mut st);
    if !st.is_empty() {
        out.insert("status".into(), Value::Object(st));
    }
}

pub(super) fn from_hub(src: &Value, out: &mut Obj) -> Result<(), String> {
    let spec = src.get("spec");
    let mode = spec
        .and_then(|s| s.get("operatingMode"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let default_replicas = if mode == SUSPENDED { 0 } else { 1 };
    let mut spec_replicas = Some(default_replicas);
    let mut status_replicas = default_replicas;
    if let Some(state) = take_state(Kind::Sandbox, out)? {
        let original = state_int(&state, "/spec/replicas", Kind::Sandbox)?;
        match mode {
            SUSPENDED => spec_replicas = Some(0),
            RUNNING => {
                spec_replicas = if original == Some(0) {
                    Some(1)
                } else {
                    original
                };
            }
            _ => {}
        }
        status_replicas = state_int(&state, "/status/replicas", Kind::Sandbox)?.unwrap_or(0);
    }
    let mut s = Obj::new();
    blueprint(spec, &mut s);
    lifecycle(spec, &mut s);
    if let Some(r) = spec_replicas {
        s.insert("replicas".into(), json!(r));
    }
    copy_set(&mut s, spec, "service");
    out.insert("spec".into(), Value::Object(s));
    let status = src.get("status");
    let mut st = Obj::new();
    status_head(status, &mut st);
    if status_replicas != 0 {
        st.insert("replicas".into(), json!(status_replicas));
    }
    status_tail(status, &mut st);
    if !st.is_empty() {
        out.insert("status".into(), Value::Object(st));
    }
    Ok(())
}
