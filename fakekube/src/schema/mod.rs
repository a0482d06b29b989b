//! CRD structural schemas: the checks of a schema when its CRD is written, and the pruning,
//! defaulting and validation of objects, with the API server's algorithms and error wording.
//!
//! A [`Schema`] holds one version's `openAPIV3Schema`. [`compile_errors`] is what the API
//! server says of a schema when the CRD is written (anything fakekube cannot evaluate is
//! refused there, named). On every write the store runs, in the API server's order:
//! [`Schema::prune`] (unknown fields, then non-nullable nulls), [`Schema::apply_defaults`],
//! [`Schema::validate`] (the structural checks, then the CEL rules, transition rules on
//! update); on reads [`Schema::defaulted`] applies defaults added since the object was written.
//!
//! Sources of the behaviour (read for facts, not copied): apiextensions-apiserver's structural
//! `schema` validation, its `pruning`, `defaulting`, `listtype` and `cel` packages and its
//! `customresource` strategy, and kube-openapi's `validate` package, whose messages
//! [`FieldError`] reproduces.
//!
//! # Layout
//!
//! - `field_error`: [`FieldError`] and the `reason`s of its causes.
//! - `node`: reading a schema node (`properties`, `additionalProperties`, `items`, keywords).
//! - `structural`: the checks of a schema when its CRD is written.
//! - `pruning`, `defaulting`: the first two steps of a write.
//! - `validate`: kube-openapi's checks (types, compositions, bounds, lengths, `enum`,
//!   `required`) and those of embedded resources.
//! - `formats`, `pattern`: the string formats, and `pattern`s compiled as Go compiles them.
//! - `list_type`: `x-kubernetes-list-type` `set` and `map` uniqueness.
//! - `rules`, `cel`: `x-kubernetes-validations` evaluated as CEL.
//! - `go_format`: values printed as the Go API server prints them in messages.
//!
//! # Known limitations
//! - Update ratcheting (errors in unchanged fields tolerated, `CRDValidationRatcheting`) is not
//!   done: an update is validated like a create, plus the transition rules.
//! - CEL rules are not type-checked against the schema, and their cost is not estimated: a
//!   rule that selects a field the schema lacks fails when it runs, not when the CRD is
//!   written. `set` and `map` lists compare in order in CEL.
//! - `int32`/`int64` ranges are not checked, as in API servers before 1.36 (which strip those
//!   formats; kubernetes/kubernetes#136582 enables them in 1.36).
//! - The scale subresource's own checks (`.spec.replicas` within int32) are made, not those
//!   the schema adds.
//! - On update, list-type `set`/`map` uniqueness is checked even when the old object already
//!   broke it (the API server then skips the check).
//! - In `anyOf` and `oneOf`, when every branch fails the errors of the first branch are
//!   reported (kube-openapi picks the branch with the most matches).
//! - Go's `regexp` and the `regex` crate agree on syntax; their error texts differ.

mod cel;
mod defaulting;
mod field_error;
mod formats;
mod go_format;
mod list_type;
mod node;
mod pattern;
mod pruning;
mod rules;
mod structural;
mod validate;

#[cfg(test)]
mod generate;
#[cfg(test)]
mod tests;

use std::sync::OnceLock;

use serde_json::Value;

pub(crate) use field_error::FieldError;
pub(crate) use go_format::go_quote;

/// The compiled-in schemas by plural, generated from the CRDs of `fixtures/crds/` (the test
/// `compiled_in_schemas_match_the_fixture_crds` keeps them in step).
const COMPILED_IN: [(&str, &str); 4] = [
    ("sandboxes", include_str!("../../schemas/sandboxes.json")),
    (
        "sandboxtemplates",
        include_str!("../../schemas/sandboxtemplates.json"),
    ),
    (
        "sandboxwarmpools",
        include_str!("../../schemas/sandboxwarmpools.json"),
    ),
    (
        "sandboxclaims",
        include_str!("../../schemas/sandboxclaims.json"),
    ),
];

/// The compiled-in schema of the custom resource `plural`, parsed on first use; `None` for a
/// resource without one.
pub(crate) fn compiled_in(plural: &str) -> Option<&'static Schema> {
    static SCHEMAS: OnceLock<Vec<(&'static str, Schema)>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            COMPILED_IN
                .iter()
                .filter_map(|(p, json)| match Schema::from_json(json) {
                    Ok(schema) => Some((*p, schema)),
                    Err(e) => {
                        tracing::error!(resource = p, error = %e, "compiled-in CRD schema does not parse");
                        None
                    }
                })
                .collect()
        })
        .iter()
        .find(|(p, _)| *p == plural)
        .map(|(_, schema)| schema)
}

/// Why a schema could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SchemaError {
    /// The schema text is not JSON.
    #[error("schema is not valid JSON")]
    ParseJson(#[source] serde_json::Error),
    /// The schema is JSON but not an object.
    #[error("schema root is not a JSON object")]
    NotAnObject,
}

/// One CRD `openAPIV3Schema`, ready to prune, default and validate objects of its kind.
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    /// The schema itself.
    root: Value,
    /// Whether any node carries `x-kubernetes-validations` (the API server then has a CEL
    /// validator, which is what makes it report skipped rules).
    has_rules: bool,
    /// Whether any node carries a `default` (reads then look for missing defaults).
    has_defaults: bool,
}

/// Loading, and the four steps the store runs on every write.
impl Schema {
    /// Parses one `openAPIV3Schema` from JSON.
    pub(crate) fn from_json(s: &str) -> Result<Self, SchemaError> {
        let root: Value = serde_json::from_str(s).map_err(SchemaError::ParseJson)?;
        Schema::from_value(root)
    }

    /// Takes one `openAPIV3Schema` as a JSON value.
    pub(crate) fn from_value(root: Value) -> Result<Self, SchemaError> {
        if !root.is_object() {
            return Err(SchemaError::NotAnObject);
        }
        let has_rules = node::any_rules(&root);
        let has_defaults = node::any_defaults(&root);
        Ok(Self {
            root,
            has_rules,
            has_defaults,
        })
    }

    /// The schema document, for `/openapi/v3`.
    pub(crate) fn root(&self) -> &Value {
        &self.root
    }

    /// Drops what the schema does not know, returning the sorted paths of the dropped fields
    /// (what `fieldValidation=Strict` reports as `unknown field "spec.foo"`).
    ///
    /// Honours `x-kubernetes-preserve-unknown-fields`, `additionalProperties`,
    /// `x-kubernetes-embedded-resource` (its `apiVersion`, `kind`, `metadata` are kept) and treats
    /// the root as embedded, so root `metadata` is left to the store. Afterwards, like the API
    /// server, it removes `null`s of non-nullable fields that have no default (not reported).
    pub(crate) fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut out = Vec::new();
        let mut path = String::new();
        pruning::prune_node(obj, Some(&self.root), true, &mut path, &mut out);
        pruning::prune_nulls(obj, Some(&self.root), true);
        out.sort();
        out
    }

    /// Writes the schema's `default`s into `obj` where the field is absent (or a non-nullable
    /// `null`), descending only into objects and lists that exist.
    pub(crate) fn apply_defaults(&self, obj: &mut Value) {
        defaulting::default_node(obj, &self.root);
    }

    /// Checks `obj` against the schema: types, compositions, `required`, `enum`, bounds,
    /// lengths, `pattern`, `format`, list-type uniqueness, embedded resources, then the CEL
    /// rules (the transition rules only on update, given `old`). Adds the API server's "rules
    /// not checked" note when schema errors keep the rules from running.
    pub(crate) fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = self.structural(obj);
        if self.has_rules {
            if errs.iter().any(FieldError::blocks_rules) {
                errs.push(rules::not_checked());
            } else {
                rules::rules_node(obj, old, &self.root, "", true, &mut errs);
            }
        }
        dedup(errs)
    }

    /// `obj` with the defaults it lacks, when it lacks any: the API server defaults objects
    /// as it reads them from storage, so defaults added to a schema show on old objects.
    pub(crate) fn defaulted(&self, obj: &Value) -> Option<Value> {
        if !self.has_defaults || !defaulting::missing(obj, &self.root) {
            return None;
        }
        let mut out = obj.clone();
        defaulting::default_node(&mut out, &self.root);
        (out != *obj).then_some(out)
    }

    /// The structural errors of `obj`: kube-openapi's checks, list-type uniqueness, then the
    /// checks of embedded resources.
    fn structural(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate::validate_node(obj, &self.root, "", &mut errs);
        list_type::list_types(obj, &self.root, "", &mut errs);
        validate::embedded_resources(obj, &self.root, "", &mut errs);
        errs
    }
}

/// What is wrong with a CRD version's `openAPIV3Schema`, with paths relative to it (empty for
/// the root): the rules of structural schemas, and anything fakekube cannot evaluate.
pub(crate) fn compile_errors(root: &Value) -> Vec<FieldError> {
    structural::check(root)
}

/// Drops repeated errors, keeping the first (kube-openapi reports a message once).
fn dedup(errs: Vec<FieldError>) -> Vec<FieldError> {
    let mut out: Vec<FieldError> = Vec::with_capacity(errs.len());
    for e in errs {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}
