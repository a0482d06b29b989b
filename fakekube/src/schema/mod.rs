//! CRD structural schemas of the agent-sandbox kinds: pruning, defaulting and validation with the
//! API server's algorithms and error wording.
//!
//! A [`Schema`] holds one `openAPIV3Schema`: the `v1beta1` one of a CRD, compiled in from
//! `fakekube/schemas/<plural>.json` ([`compiled_in`]). The store runs, in the API server's
//! order: [`Schema::prune`] (unknown fields, then non-nullable nulls),
//! [`Schema::apply_defaults`], [`Schema::validate`] and, on update, [`Schema::validate_update`].
//!
//! Sources of the behaviour (read for facts, not copied): apiextensions-apiserver's structural
//! `pruning`, `defaulting` and `listtype` packages and its `customresource` strategy, and
//! kube-openapi's `validate` package, whose messages [`FieldError`] reproduces.
//!
//! # Layout
//!
//! The validator, used by the store at run time:
//! - `field_error`: [`FieldError`] and the `reason`s of its causes.
//! - `node`: reading a schema node (`properties`, `additionalProperties`, `items`, keywords).
//! - `pruning`, `defaulting`: the first two steps of a write.
//! - `validate`: kube-openapi's structural checks (types, bounds, lengths, `enum`, `required`).
//! - `formats`, `patterns`: the string formats and the `pattern`s, by hand.
//! - `list_type`: `x-kubernetes-list-type` `set` and `map` uniqueness.
//! - `rules`: `x-kubernetes-validations`, each rule of the CRDs by hand.
//! - `go_format`: values printed as the Go API server prints them in messages.
//!
//! Built for tests only:
//! - `generate`: the generator of `fakekube/schemas/*.json` from the CRDs in `fixtures/crds/`,
//!   run as a test that fails when they differ (and rewrites them on request).
//! - `tests`: the validator against the compiled-in schemas, and the check that every `pattern`
//!   and rule of `fixtures/crds/` is enforced.
//!
//! # Known limitations
//! - CEL (`x-kubernetes-validations`) is not evaluated: each rule that appears in the four CRDs is
//!   implemented by hand, keyed on its exact text (`rules`), and so is each `pattern`
//!   (`patterns`). A rule or pattern with any other text would be ignored; the test
//!   `every_pattern_and_rule_of_the_fixture_crds_is_enforced` fails when a CRD of
//!   `fixtures/crds/` carries one. `messageExpression` is not evaluated (the static `message` is
//!   used).
//! - Update ratcheting (errors in unchanged fields tolerated, `CRDValidationRatcheting`) is not
//!   done: an update is validated like a create, plus the transition rules.
//! - Keywords absent from these CRDs are ignored: `multipleOf`, `uniqueItems`, `minProperties`,
//!   `maxProperties`, `patternProperties`, `allOf`, `oneOf`, `not`, `additionalProperties: false`.
//!   Of the string formats the API server checks, only `date-time` and `date` are implemented.
//!   `int32`/`int64` ranges are not checked, as in API servers before 1.36 (which strip those
//!   formats; kubernetes/kubernetes#136582 enables them in 1.36).
//! - The scale subresource's own checks (`.spec.replicas` within int32) are not made.
//! - On update, list-type `set`/`map` uniqueness is checked even when the old object already
//!   broke it (the API server then skips the check).
//! - In `anyOf`, when every branch fails the errors of the first branch are reported (kube-openapi
//!   picks the branch with the most matches; for `x-kubernetes-int-or-string` that is the first).

mod defaulting;
mod field_error;
mod formats;
mod go_format;
mod list_type;
mod node;
mod patterns;
mod pruning;
mod rules;
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
        Ok(Self { root, has_rules })
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

    /// Checks `obj` against the schema as on create: types, `required`, `enum`, bounds,
    /// lengths, `pattern`, `format`, `minItems`/`maxItems`, list-type `set`/`map` uniqueness and
    /// the non-transition rules of `rules`. Adds the API server's "rules not checked" note when
    /// schema errors keep the rules from running.
    pub(crate) fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.structural(obj);
        if self.has_rules {
            if errs.iter().any(FieldError::blocks_rules) {
                errs.push(rules::not_checked());
            } else {
                rules::rules_node(obj, None, &self.root, "", &mut errs);
            }
        }
        dedup(errs)
    }

    /// The errors an update adds to [`Schema::validate`] of the new object: the transition rules
    /// (`x-kubernetes-validations` using `oldSelf`), evaluated where the old object has a
    /// correlated value. Empty when the new object's schema errors keep the rules from running.
    pub(crate) fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        if !self.has_rules || self.structural(new).iter().any(FieldError::blocks_rules) {
            return Vec::new();
        }
        let mut errs = Vec::new();
        rules::rules_node(new, Some(old), &self.root, "", &mut errs);
        dedup(errs)
    }

    /// The structural errors of `obj`: kube-openapi's checks, then list-type uniqueness.
    fn structural(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate::validate_node(obj, &self.root, "", &mut errs);
        list_type::list_types(obj, &self.root, "", &mut errs);
        errs
    }
}

/// What is wrong with a CRD version's `openAPIV3Schema`, with paths relative to it (empty for
/// the root): the rules of structural schemas, and anything fakekube cannot evaluate.
pub(crate) fn compile_errors(root: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    match node::str_of(root, "type") {
        None | Some("") => out.push(FieldError::new(
            "type",
            field_error::FIELD_VALUE_REQUIRED,
            "Required value: must not be empty at the root".to_string(),
        )),
        Some("object") => {}
        Some(other) => out.push(FieldError::invalid(
            "type",
            &go_quote(other),
            "must be object at the root",
        )),
    }
    out
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
