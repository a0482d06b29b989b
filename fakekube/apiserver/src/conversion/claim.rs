//! SandboxClaim: `v1alpha1` names a template (`sandboxTemplateRef`) and a warm pool policy
//! (`warmpool`: `none`, `default` or a pool's name); `v1beta1` names only a pool
//! (`warmPoolRef`). A named pool stays; otherwise the claim points at the pool of the warm
//! member it is bound to (the member's name without its random suffix), or at
//! `shadow-pool-<template>`. Back at `v1alpha1`, a `shadow-pool-` name gives back the template
//! with the `default` policy, any other name is both the template and the pool, and the state
//! annotation restores the original pair while the pool is the one it converted to.
//! `v1beta1`'s `volumeClaimTemplates` have no `v1alpha1` field.

use super::{Kind, Obj, copy_nonempty, copy_set, pod_metadata, take_state};
use serde_json::{Value, json};

const SHADOW_PREFIX: &str = "shadow-pool-";

/// A policy that names a pool (not `none`, `default` or empty).
fn specific(policy: Option<&str>) -> Option<&str> {
    policy.filter(|p| !matches!(*p, "" | "none" | "default"))
}

/// A warm member's name without its random suffix: its pool's name.
fn strip_random_suffix(name: &str) -> &str {
    name.rfind('-').map_or(name, |i| &name[..i])
}

/// Whether the `v1beta1` pool is still the one the original `v1alpha1` claim converted to.
fn pool_unchanged(actual: &str, expected: &str, sandbox: &str) -> bool {
    actual == expected
        || actual.strip_prefix(SHADOW_PREFIX) == Some(expected)
        || (!sandbox.is_empty() && (actual == sandbox || actual == strip_random_suffix(sandbox)))
}

/// `lifecycle` (a pointer in both versions).
fn lifecycle(spec: Option<&Value>, out: &mut Obj) {
    let Some(l) = spec
        .and_then(|s| s.get("lifecycle"))
        .filter(|l| !l.is_null())
    else {
        return;
    };
    let mut o = Obj::new();
    copy_set(&mut o, Some(l), "shutdownTime");
    copy_set(&mut o, Some(l), "ttlSecondsAfterFinished");
    copy_nonempty(&mut o, Some(l), "shutdownPolicy");
    out.insert("lifecycle".into(), Value::Object(o));
}

/// `additionalPodMetadata` (always present) and `env`.
fn pod_extras(spec: Option<&Value>, out: &mut Obj) {
    out.insert(
        "additionalPodMetadata".into(),
        pod_metadata(spec.and_then(|s| s.get("additionalPodMetadata"))),
    );
    if let Some(env) = spec
        .and_then(|s| s.get("env"))
        .and_then(Value::as_array)
        .filter(|e| !e.is_empty())
    {
        let env: Vec<Value> = env
            .iter()
            .map(|e| {
                let mut o = Obj::new();
                o.insert(
                    "name".into(),
                    e.get("name").cloned().unwrap_or_else(|| json!("")),
                );
                o.insert(
                    "value".into(),
                    e.get("value").cloned().unwrap_or_else(|| json!("")),
                );
                copy_nonempty(&mut o, Some(e), "containerName");
                Value::Object(o)
            })
            .collect();
        out.insert("env".into(), Value::Array(env));
    }
}

/// The status, the same in both versions; left out when empty.
fn status(src: &Value, out: &mut Obj) {
    let status = src.get("status").filter(|s| !s.is_null());
    let Some(status) = status else {
        return;
    };
    let sandbox = status.get("sandbox");
    let mut sb = Obj::new();
    copy_nonempty(&mut sb, sandbox, "name");
    copy_nonempty(&mut sb, sandbox, "podIPs");
    let conditions = status.get("conditions").filter(|c| !c.is_null());
    if conditions.is_none() && sb.is_empty() {
        return;
    }
    let mut st = Obj::new();
    copy_nonempty(&mut st, Some(status), "conditions");
    st.insert("sandbox".into(), Value::Object(sb));
    out.insert("status".into(), Value::Object(st));
}

fn str_of<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn to_hub(src: &Value, out: &mut Obj) {
    let spec = src.get("spec");
    let claim = str_of(src, "/metadata/name");
    let sandbox = str_of(src, "/status/sandbox/name");
    let template = str_of(src, "/spec/sandboxTemplateRef/name");
    let pool = match specific(spec.and_then(|s| s.get("warmpool")).and_then(Value::as_str)) {
        Some(pool) => pool.to_string(),
        None if !sandbox.is_empty() && claim != sandbox => strip_random_suffix(sandbox).to_string(),
        None => format!("{SHADOW_PREFIX}{template}"),
    };
    let mut s = Obj::new();
    s.insert("warmPoolRef".into(), json!({ "name": pool }));
    lifecycle(spec, &mut s);
    pod_extras(spec, &mut s);
    out.insert("spec".into(), Value::Object(s));
    status(src, out);
}

pub(super) fn from_hub(src: &Value, out: &mut Obj) -> Result<(), String> {
    let spec = src.get("spec");
    let pool = str_of(src, "/spec/warmPoolRef/name");
    let (mut template_ref, mut policy) = match pool.strip_prefix(SHADOW_PREFIX) {
        Some(template) => (json!({ "name": template }), Some(json!("default"))),
        None => {
            let mut r = Obj::new();
            if !pool.is_empty() {
                r.insert("name".into(), json!(pool));
            }
            (Value::Object(r), Some(json!(pool)))
        }
    };
    if let Some(state) = take_state(Kind::SandboxClaim, out)? {
        let original_policy = state.pointer("/spec/warmpool").and_then(Value::as_str);
        let original_template = state
            .pointer("/spec/sandboxTemplateRef")
            .filter(|r| !r.is_null())
            .cloned()
            .unwrap_or_else(|| json!({}));
        let expected = match specific(original_policy) {
            Some(p) => p,
            None => original_template
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or(""),
        };
        if pool_unchanged(pool, expected, str_of(src, "/status/sandbox/name")) {
            policy = state
                .pointer("/spec/warmpool")
                .filter(|p| !p.is_null())
                .cloned();
        }
        template_ref = original_template;
    }
    let mut s = Obj::new();
    s.insert("sandboxTemplateRef".into(), template_ref);
    lifecycle(spec, &mut s);
    if let Some(p) = policy {
        s.insert("warmpool".into(), p);
    }
    pod_extras(spec, &mut s);
    out.insert("spec".into(), Value::Object(s));
    status(src, out);
    Ok(())
}
