//! The validator against the schemas of the four agent-sandbox CRDs of `fixtures/crds/`, one
//! file per step, the keywords those CRDs do not use (`keywords`), and the check that every
//! `pattern` and rule of `fixtures/crds/` is enforced (`crds`).

mod crds;
mod defaulting;
mod fixtures;
mod keywords;
mod properties;
mod pruning;
mod revisions;
mod rules;
mod validation;

use serde_json::{Value, json};

use super::field_error::{
    FIELD_VALUE_INVALID, FIELD_VALUE_NOT_SUPPORTED, FIELD_VALUE_REQUIRED, FIELD_VALUE_TYPE_INVALID,
};
use super::{FieldError, Schema};
use std::sync::OnceLock;

/// The plurals of the agent-sandbox kinds.
const PLURALS: [&str; 4] = [
    "sandboxes",
    "sandboxtemplates",
    "sandboxwarmpools",
    "sandboxclaims",
];

/// The compiled-in schema of `plural`.
fn schema_of(plural: &str) -> &'static Schema {
    static SCHEMAS: OnceLock<Vec<(String, Schema)>> = OnceLock::new();
    let all = SCHEMAS.get_or_init(|| {
        fixtures::agent_sandbox()
            .iter()
            .filter_map(|f| {
                let plural = f.crd.pointer("/spec/names/plural")?.as_str()?.to_string();
                let schema = f
                    .crd
                    .pointer("/spec/versions")?
                    .as_array()?
                    .iter()
                    .find(|v| v.get("name").and_then(Value::as_str) == Some("v1beta1"))?
                    .pointer("/schema/openAPIV3Schema")?
                    .clone();
                Some((plural, Schema::from_value(schema).ok()?))
            })
            .collect()
    });
    all.iter()
        .find(|(p, _)| p == plural)
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no v1beta1 schema for {plural} in fixtures/crds"))
}

/// The resource quantity pattern of `resources.limits`/`requests` and similar.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
/// The pattern of `metav1.Condition.reason`.
const CONDITION_REASON_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
/// The pattern of `metav1.Condition.type`.
const CONDITION_TYPE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";
/// The Sandbox rule that keeps `volumeClaimTemplates` from changing.
const VCT_IMMUTABLE_RULE: &str = "has(self.volumeClaimTemplates) == has(oldSelf.volumeClaimTemplates) && (!has(self.volumeClaimTemplates) || self.volumeClaimTemplates == oldSelf.volumeClaimTemplates)";

/// A Sandbox with `spec`.
fn sandbox(spec: Value) -> Value {
    json!({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": {"name": "s"}, "spec": spec})
}

/// The smallest valid pod template.
fn pod_template() -> Value {
    json!({"spec": {"containers": [{"name": "main", "image": "busybox"}]}})
}

/// Prune, default and validate like the store does on create.
fn admit(schema: &Schema, mut obj: Value) -> (Value, Vec<String>, Vec<FieldError>) {
    let unknown = schema.prune(&mut obj);
    schema.apply_defaults(&mut obj);
    let errs = schema.validate(&obj, None);
    (obj, unknown, errs)
}

/// `"<field>: <message>"`, the form the API server joins into a Status message.
fn summary(e: &FieldError) -> String {
    format!("{}: {}", e.field, e.message)
}

/// The errors as `field: message`.
fn summaries(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(summary).collect()
}
