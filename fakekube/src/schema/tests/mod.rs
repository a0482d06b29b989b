//! The validator against the compiled-in schemas of the four CRDs, one file per step, and the
//! check that every `pattern` and rule of `fixtures/crds/` is enforced (`crds`).

mod crds;
mod defaulting;
mod properties;
mod pruning;
mod rules;
mod validation;

use serde_json::{Value, json};

use super::field_error::{
    FIELD_VALUE_INVALID, FIELD_VALUE_NOT_SUPPORTED, FIELD_VALUE_REQUIRED, FIELD_VALUE_TYPE_INVALID,
};
use super::patterns::QUANTITY_PATTERN;
use super::{COMPILED_IN, FieldError, Schema, compiled_in};

/// The compiled-in schema of `plural`.
fn schema_of(plural: &str) -> &'static Schema {
    compiled_in(plural).unwrap_or_else(|| panic!("no compiled-in schema for {plural}"))
}

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
    let errs = schema.validate(&obj);
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
