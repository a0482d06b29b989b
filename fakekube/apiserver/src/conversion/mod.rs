//! The conversion webhook of kubernetes-sigs/agent-sandbox, in process: the agent-sandbox
//! CRDs serve the deprecated `v1alpha1` beside the stored `v1beta1` and ask for
//! `spec.conversion.strategy: Webhook`, which upstream's controller manager answers
//! (`api/v1alpha1/*_conversion.go`, `extensions/api/v1alpha1/*_conversion.go`). fakekube
//! registers these converters in the registry where the agent-sandbox controllers run, as the
//! webhook runs in the controllers' deployment; without them a `v1alpha1` request fails as it
//! fails on a cluster whose webhook is down.
//!
//! Each kind converts between `v1alpha1` (the spoke) and `v1beta1` (the hub) field by field as
//! upstream does, and keeps what `v1beta1` cannot say in annotations:
//!
//! - Every `v1alpha1` object written keeps its whole `v1alpha1` form (without this
//!   annotation) in `api.agents.x-k8s.io/v1alpha1-<kind>-state` on the stored `v1beta1`
//!   object; reading it back at `v1alpha1` strips the annotation and restores what the hub
//!   lost: a Sandbox's `spec.replicas` (unset stays unset) and `status.replicas`, a claim's
//!   `sandboxTemplateRef` and `warmpool` (unless its `warmPoolRef` was changed at `v1beta1`).
//! - A claim without a named pool points at `shadow-pool-<template>` (or, once bound to a warm
//!   member, at the member's pool), a pool no one creates: the `v1beta1` controllers then see a
//!   missing pool, as upstream's do.
//! - A template's `v1beta1`-only `volumeClaimTemplatesPolicy` rides in the
//!   `api.agents.x-k8s.io/v1beta1-volume-claim-templates-policy` annotation of its `v1alpha1`
//!   form.
//!
//! Objects are built as upstream's Go types marshal them: `omitempty` fields left out when
//! empty, structs always present (a claim's `additionalPodMetadata: {}`, a pool's `status`),
//! fields in Go's order. The embedded Kubernetes types (a pod spec, a PVC spec, network policy
//! rules) pass through as sent; upstream's typed round trip would add their Go zero values
//! (`resources: {}`). The state annotation is the object's JSON as fakekube holds it, so its
//! bytes (key order, `creationTimestamp`) are not Go's.
//!
//! # Layout
//! - `sandbox`: Sandbox (`spec.replicas` and `spec.operatingMode`).
//! - `claim`: SandboxClaim (`sandboxTemplateRef`/`warmpool` and `warmPoolRef`).
//! - `template`: SandboxTemplate.
//! - `warm_pool`: SandboxWarmPool.

mod claim;
mod sandbox;
mod template;
mod warm_pool;

#[cfg(test)]
mod tests;

use crate::registry::{Converter, Registry};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The group of Sandboxes.
const CORE_GROUP: &str = "agents.x-k8s.io";
/// The group of SandboxClaims, SandboxTemplates and SandboxWarmPools.
const EXTENSIONS_GROUP: &str = "extensions.agents.x-k8s.io";
/// The deprecated version each converter converts from and to.
const SPOKE: &str = "v1alpha1";
/// The stored version.
const HUB: &str = "v1beta1";

/// A JSON object being built.
type Obj = Map<String, Value>;

/// The agent-sandbox kinds, each with upstream's conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sandbox,
    SandboxClaim,
    SandboxTemplate,
    SandboxWarmPool,
}

impl Kind {
    const ALL: [Kind; 4] = [
        Kind::Sandbox,
        Kind::SandboxClaim,
        Kind::SandboxTemplate,
        Kind::SandboxWarmPool,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Sandbox => "Sandbox",
            Kind::SandboxClaim => "SandboxClaim",
            Kind::SandboxTemplate => "SandboxTemplate",
            Kind::SandboxWarmPool => "SandboxWarmPool",
        }
    }

    fn group(self) -> &'static str {
        match self {
            Kind::Sandbox => CORE_GROUP,
            _ => EXTENSIONS_GROUP,
        }
    }

    /// The annotation holding an object's `v1alpha1` form on its `v1beta1` one.
    fn state_annotation(self) -> String {
        format!(
            "api.agents.x-k8s.io/v1alpha1-{}-state",
            self.name().to_ascii_lowercase()
        )
    }
}

/// Upstream's conversion of one agent-sandbox kind.
#[derive(Debug)]
struct Upstream(Kind);

impl Converter for Upstream {
    fn convert(&self, object: &Value, api_version: &str) -> Result<Value, String> {
        let from = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let group = self.0.group();
        let version = |av: &str| {
            av.strip_prefix(group)
                .and_then(|v| v.strip_prefix('/'))
                .map(str::to_string)
        };
        let (Some(have), Some(want)) = (version(from), version(api_version)) else {
            return Err(format!(
                "conversion from {from} to {api_version} is not supported for {}",
                self.0.name()
            ));
        };
        match (have.as_str(), want.as_str()) {
            (a, b) if a == b => {
                let mut out = object.clone();
                if let Some(o) = out.as_object_mut() {
                    o.insert("apiVersion".into(), json!(api_version));
                }
                Ok(out)
            }
            (SPOKE, HUB) => to_hub(self.0, object),
            (HUB, SPOKE) => from_hub(self.0, object),
            _ => Err(format!(
                "conversion from {from} to {api_version} is not supported for {}",
                self.0.name()
            )),
        }
    }
}

/// `v1alpha1` to `v1beta1` (upstream's `ConvertTo`).
fn to_hub(kind: Kind, src: &Value) -> Result<Value, String> {
    let mut out = skeleton(kind, src, HUB);
    match kind {
        Kind::Sandbox => sandbox::to_hub(src, &mut out),
        Kind::SandboxClaim => claim::to_hub(src, &mut out),
        Kind::SandboxTemplate => template::to_hub(src, &mut out)?,
        Kind::SandboxWarmPool => warm_pool::to_hub(src, &mut out),
    }
    let state = state_of(kind, src)?;
    set_annotation(&mut out, &kind.state_annotation(), state);
    Ok(Value::Object(out))
}

/// `v1beta1` to `v1alpha1` (upstream's `ConvertFrom`).
fn from_hub(kind: Kind, src: &Value) -> Result<Value, String> {
    let mut out = skeleton(kind, src, SPOKE);
    match kind {
        Kind::Sandbox => sandbox::from_hub(src, &mut out)?,
        Kind::SandboxClaim => claim::from_hub(src, &mut out)?,
        Kind::SandboxTemplate => template::from_hub(src, &mut out),
        Kind::SandboxWarmPool => warm_pool::from_hub(src, &mut out),
    }
    Ok(Value::Object(out))
}

/// Registers upstream's converters of the four agent-sandbox kinds in `registry`.
pub fn register(registry: &Registry) {
    for kind in Kind::ALL {
        registry.register_converter(kind.group(), kind.name(), Arc::new(Upstream(kind)));
    }
}

/// The converted object's type and a copy of the source's metadata.
fn skeleton(kind: Kind, src: &Value, version: &str) -> Obj {
    let mut out = Obj::new();
    out.insert(
        "apiVersion".into(),
        json!(format!("{}/{version}", kind.group())),
    );
    out.insert("kind".into(), json!(kind.name()));
    if let Some(md) = src.get("metadata").filter(|m| !m.is_null()) {
        out.insert("metadata".into(), md.clone());
    }
    out
}

/// The source's `v1alpha1` form without its own state annotation, as the annotation keeps it.
fn state_of(kind: Kind, src: &Value) -> Result<String, String> {
    let mut copy = src.clone();
    if let Some(o) = copy.as_object_mut() {
        remove_annotation(o, &kind.state_annotation());
    }
    serde_json::to_string(&copy)
        .map_err(|e| format!("failed to marshal v1alpha1 {} state: {e}", kind.name()))
}

/// The `v1alpha1` form a `v1beta1` object keeps in its state annotation, taken off `out`.
fn take_state(kind: Kind, out: &mut Obj) -> Result<Option<Value>, String> {
    let Some(text) = remove_annotation(out, &kind.state_annotation()) else {
        return Ok(None);
    };
    let text = text.as_str().unwrap_or("");
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| format!("failed to unmarshal v1alpha1 {} state: {e}", kind.name()))
}

/// The object's annotations, created if missing.
fn annotations_mut(out: &mut Obj) -> Option<&mut Obj> {
    let md = out
        .entry("metadata")
        .or_insert_with(|| Value::Object(Obj::new()))
        .as_object_mut()?;
    let annotations = md
        .entry("annotations")
        .or_insert_with(|| Value::Object(Obj::new()));
    if annotations.is_null() {
        *annotations = Value::Object(Obj::new());
    }
    annotations.as_object_mut()
}

/// Sets one annotation.
fn set_annotation(out: &mut Obj, key: &str, value: String) {
    if let Some(a) = annotations_mut(out) {
        a.insert(key.to_string(), json!(value));
    }
}

/// Removes one annotation, and the annotations when none is left (Go leaves an empty map
/// out), returning its value.
fn remove_annotation(out: &mut Obj, key: &str) -> Option<Value> {
    let md = out.get_mut("metadata")?.as_object_mut()?;
    let annotations = md.get_mut("annotations")?.as_object_mut()?;
    let taken = annotations.shift_remove(key);
    if annotations.is_empty() {
        md.shift_remove("annotations");
    }
    taken
}

/// An annotation of `src`.
fn annotation<'a>(src: &'a Value, key: &str) -> Option<&'a str> {
    src.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// Whether a value is what Go's `omitempty` leaves out: absent, null, `""`, `0`, `false`, or
/// an empty list or map.
fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Bool(b)) => !b,
    }
}

/// Copies `key` from `src` when Go's `omitempty` keeps it (a string, number, list or map
/// field).
fn copy_nonempty(out: &mut Obj, src: Option<&Value>, key: &str) {
    let v = src.and_then(|s| s.get(key));
    if let Some(v) = v.filter(|v| !is_empty(Some(v))) {
        out.insert(key.to_string(), v.clone());
    }
}

/// Copies `key` from `src` when set (a pointer field: `false` and `0` are kept).
fn copy_set(out: &mut Obj, src: Option<&Value>, key: &str) {
    if let Some(v) = src.and_then(|s| s.get(key)).filter(|v| !v.is_null()) {
        out.insert(key.to_string(), v.clone());
    }
}

/// A pod template's `metadata`: its labels and annotations (an always present struct).
fn pod_metadata(src: Option<&Value>) -> Value {
    let mut md = Obj::new();
    copy_nonempty(&mut md, src, "labels");
    copy_nonempty(&mut md, src, "annotations");
    Value::Object(md)
}

/// A `podTemplate`: the pod spec as sent, then its metadata.
fn pod_template(src: Option<&Value>) -> Value {
    let spec = src
        .and_then(|t| t.get("spec"))
        .filter(|s| !s.is_null())
        .cloned()
        .unwrap_or_else(|| json!({}));
    json!({ "spec": spec, "metadata": pod_metadata(src.and_then(|t| t.get("metadata"))) })
}

/// `volumeClaimTemplates`: each one's name, labels and annotations, and its spec as sent;
/// `None` when there are none.
fn claim_templates(src: Option<&Value>) -> Option<Value> {
    let list = src?.as_array().filter(|l| !l.is_empty())?;
    let converted = list
        .iter()
        .map(|t| {
            let md = t.get("metadata");
            let mut meta = Obj::new();
            copy_nonempty(&mut meta, md, "name");
            copy_nonempty(&mut meta, md, "labels");
            copy_nonempty(&mut meta, md, "annotations");
            let spec = t
                .get("spec")
                .filter(|s| !s.is_null())
                .cloned()
                .unwrap_or_else(|| json!({}));
            json!({ "metadata": meta, "spec": spec })
        })
        .collect();
    Some(Value::Array(converted))
}

/// An integer field of the state annotation, as Go's decoder reads an `int32`.
fn state_int(state: &Value, pointer: &str, kind: Kind) -> Result<Option<i64>, String> {
    match state.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| {
            format!(
                "failed to unmarshal v1alpha1 {} state: {} is not an integer",
                kind.name(),
                pointer.trim_start_matches('/').replace('/', ".")
            )
        }),
    }
}
