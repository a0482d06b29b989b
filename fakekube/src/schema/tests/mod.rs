//! The validator against the compiled-in schemas of the four CRDs, one file per step, and the
//! check that every `pattern` and rule of `fixtures/crds/` is enforced (`crds`).

mod crds;
mod defaulting;
mod keywords;
mod properties;
mod pruning;
mod rules;
mod validation;

use serde_json::{Value, json};

use super::field_error::{
    FIELD_VALUE_INVALID, FIELD_VALUE_NOT_SUPPORTED, FIELD_VALUE_REQUIRED, FIELD_VALUE_TYPE_INVALID,
};
use super::{COMPILED_IN, FieldError, Schema, compiled_in};

/// The compiled-in schema of `plural`.
fn schema_of(plural: &str) -> &'static Schema {
    compiled_in(plural).unwrap_or_else(|| panic!("no compiled-in schema for {plural}"))
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
