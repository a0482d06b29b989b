//! fakekube's CRD structural schemas, the counterpart of apiextensions-apiserver's
//! `pkg/apiserver/schema` (with its `cel`, `pruning`, `defaulting` and `listtype` packages)
//! and kube-openapi's `validate`: the checks of a schema when its CRD is written, and the pruning,
//! defaulting and validation of objects, with the API server's algorithms and error wording.
//!
//! A [`Schema`] holds one version's `openAPIV3Schema`. [`compile_errors`] is what the API
//! server says of a schema when the CRD is written (anything fakekube cannot evaluate is
//! refused there, named). On every write the store runs, in the API server's order:
//! [`Schema::prune`] (unknown fields, then non-nullable nulls), [`Schema::apply_defaults`],
//! [`Schema::validate`] (the structural checks, then the CEL rules, transition rules on
//! update); on reads [`Schema::defaulted`] applies defaults added since the object was written.
//! A field equal to its value in the old revision, when this schema validated that revision,
//! is not checked again (it cannot fail a check that reads only the field; transition rules
//! still run), and the rules are evaluated only where the schema has some.
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
//! - `revisions`: the stored revisions a schema has judged (complete with defaults, or
//!   validated), so that reads and writes do not walk them again.
//! - `validate`: kube-openapi's checks (types, compositions, bounds, lengths, `enum`,
//!   `required`) and those of embedded resources.
//! - `formats`, `pattern`: the string formats, and `pattern`s compiled as Go compiles them.
//! - `list_type`: `x-kubernetes-list-type` `set` and `map` uniqueness.
//! - `rules`, `cel`: `x-kubernetes-validations` evaluated as CEL.
//! - [`expressions`]: CEL expressions outside a schema, with variables the caller names (the
//!   admission policies' `object`, `request`, `params`...), in the same environment.
//! - `go_format` (in `fakekube-machinery`): values printed as the Go API server prints them in
//!   messages.
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

#![forbid(unsafe_code)]

mod cel;
mod defaulting;
pub mod expressions;
mod field_error;
mod formats;
mod list_type;
mod node;
mod pattern;
mod pruning;
mod revisions;
mod rules;
mod structural;
mod validate;

#[cfg(test)]
mod tests;

pub use cel::quantity::{Quantity, QuantityFormat};
pub use expressions::{Activation, Expression, Outcome, compile_expression};
use revisions::Revisions;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

pub use crate::go_format::go_quote;

// The machinery's modules under their own names.
use fakekube_machinery::{go_format, meta};
pub use field_error::FieldError;

/// Why a schema could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not a JSON object.
    #[error("schema root is not a JSON object")]
    NotAnObject,
}

/// One CRD `openAPIV3Schema`, ready to prune, default and validate objects of its kind.
///
/// It remembers the stored revisions it has judged (see `revisions`): those a read found
/// with every default, and those a write stored after they passed its validation. A new
/// schema (a CRD changed) starts with neither, so nothing judged by the old one is trusted.
#[derive(Debug)]
pub struct Schema {
    /// The schema itself, boxed so that the addresses of its nodes stay put.
    root: Box<Value>,
    /// Whether any node carries `x-kubernetes-validations` (the API server then has a CEL
    /// validator, which is what makes it report skipped rules).
    has_rules: bool,
    /// Whether any node carries a `default` (reads then look for missing defaults).
    has_defaults: bool,
    /// The nodes (by address) that carry `x-kubernetes-validations` or have one below them:
    /// the rules' walk goes only there.
    ruled: HashSet<usize>,
    /// Stored revisions that lack none of the schema's defaults.
    complete: Revisions,
    /// Stored revisions that passed this schema's validation when they were written.
    validated: Revisions,
}

/// Loading, and the four steps the store runs on every write.
impl Schema {
    /// Takes one `openAPIV3Schema` as a JSON value.
    pub fn from_value(root: Value) -> Result<Self, SchemaError> {
        if !root.is_object() {
            return Err(SchemaError::NotAnObject);
        }
        let root = Box::new(root);
        let mut ruled = HashSet::new();
        let has_rules = node::collect_ruled(&root, &mut ruled);
        let has_defaults = node::any_defaults(&root);
        Ok(Self {
            root,
            has_rules,
            has_defaults,
            ruled,
            complete: Revisions::default(),
            validated: Revisions::default(),
        })
    }

    /// The schema document, for `/openapi/v3`.
    pub fn root(&self) -> &Value {
        &self.root
    }

    /// Drops what the schema does not know, returning the sorted paths of the dropped fields
    /// (what `fieldValidation=Strict` reports as `unknown field "spec.foo"`).
    ///
    /// Honours `x-kubernetes-preserve-unknown-fields`, `additionalProperties`,
    /// `x-kubernetes-embedded-resource` (its `apiVersion`, `kind`, `metadata` are kept) and treats
    /// the root as embedded, so root `metadata` is left to the store. Afterwards, like the API
    /// server, it removes `null`s of non-nullable fields that have no default (not reported).
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut out = Vec::new();
        let mut path = String::new();
        pruning::prune_node(obj, Some(&self.root), true, &mut path, &mut out);
        pruning::prune_nulls(obj, Some(&self.root), true);
        out.sort();
        out
    }

    /// Writes the schema's `default`s into `obj` where the field is absent (or a non-nullable
    /// `null`), descending only into objects and lists that exist.
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaulting::default_node(obj, &self.root);
    }

    /// Checks `obj` against the schema: types, compositions, `required`, `enum`, bounds,
    /// lengths, `pattern`, `format`, list-type uniqueness, embedded resources, then the CEL
    /// rules (the transition rules only on update, given `old`). Adds the API server's "rules
    /// not checked" note when schema errors keep the rules from running.
    ///
    /// When `old` is a stored revision that passed this schema (see [`Schema::record_validated`]),
    /// a field equal to its old value cannot fail a check that reads only the field, so those
    /// checks are not made again; transition rules, which read `oldSelf`, always run.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let clean = old.filter(|o| self.validated.contains(o));
        let mut errs = self.structural(obj, clean);
        if self.has_rules {
            if errs.iter().any(FieldError::blocks_rules) {
                errs.push(rules::not_checked());
            } else {
                let walk = rules::Walk {
                    ruled: &self.ruled,
                    old_passed: clean.is_some(),
                };
                walk.rules_node(obj, old, &self.root, "", true, &mut errs);
            }
        }
        dedup(errs)
    }

    /// Records that `stored` is a revision written after it passed [`Schema::validate`] as
    /// it is (its `metadata` aside, which the store fills in after validation).
    pub fn record_validated(&self, stored: &Arc<Value>) {
        self.validated.insert(stored);
    }

    /// `obj` with the defaults it lacks, when it lacks any: the API server defaults objects
    /// as it reads them from storage, so defaults added to a schema show on old objects.
    pub fn defaulted(&self, obj: &Value) -> Option<Value> {
        if !self.has_defaults || !defaulting::missing(obj, &self.root) {
            return None;
        }
        let mut out = obj.clone();
        defaulting::default_node(&mut out, &self.root);
        (out != *obj).then_some(out)
    }

    /// [`Schema::defaulted`] of a stored revision, remembering a revision that lacks nothing
    /// so that it is not walked again on the next read.
    pub fn defaulted_revision(&self, stored: &Arc<Value>) -> Option<Value> {
        if !self.has_defaults || self.complete.contains(stored) {
            return None;
        }
        let out = self.defaulted(stored);
        if out.is_none() {
            self.complete.insert(stored);
        }
        out
    }

    /// The structural errors of `obj`: kube-openapi's checks, list-type uniqueness, then the
    /// checks of embedded resources.
    /// `old`, when given, passed these checks: fields equal to it are not checked again.
    fn structural(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate::validate_with(obj, old, &self.root, "", &mut errs);
        list_type::list_types(obj, old, &self.root, "", &mut errs);
        validate::embedded_resources(obj, old, &self.root, "", &mut errs);
        errs
    }
}

/// What is wrong with a CRD version's `openAPIV3Schema`, with paths relative to it (empty for
/// the root): the rules of structural schemas, and anything fakekube cannot evaluate.
pub fn compile_errors(root: &Value) -> Vec<FieldError> {
    compile(root).err().unwrap_or_default()
}

/// A CRD version's `openAPIV3Schema` checked and ready to use, or what is wrong with it.
///
/// Results are kept for the life of the process by a hash of the schema's content: every
/// server of a process installs the same agent-sandbox CRDs, whose schemas are large, and the
/// check of a schema depends on nothing but its content.
pub fn compile(root: &Value) -> Result<Arc<Schema>, Vec<FieldError>> {
    type Compiled = Result<Arc<Schema>, Vec<FieldError>>;
    /// Distinct schemas remembered before the cache starts over.
    const CAPACITY: usize = 512;
    static CACHE: OnceLock<Mutex<HashMap<u64, Compiled>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = content_hash(root);
    if let Some(hit) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return hit.clone();
    }
    let errors = structural::check(root);
    let compiled = if errors.is_empty() {
        Schema::from_value(root.clone())
            .map(Arc::new)
            .map_err(|e| vec![FieldError::invalid("", "\"\"", &e.to_string())])
    } else {
        Err(errors)
    };
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if map.len() >= CAPACITY {
        map.clear();
    }
    map.insert(key, compiled.clone());
    compiled
}

/// A hash of a JSON value's content (keys in order, types told apart).
fn content_hash(v: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    fn feed(v: &Value, h: &mut std::collections::hash_map::DefaultHasher) {
        match v {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => (2u8, n.to_string()).hash(h),
            Value::String(s) => (3u8, s).hash(h),
            Value::Array(a) => {
                (4u8, a.len()).hash(h);
                a.iter().for_each(|x| feed(x, h));
            }
            Value::Object(m) => {
                (5u8, m.len()).hash(h);
                for (k, x) in m {
                    k.hash(h);
                    feed(x, h);
                }
            }
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    feed(v, &mut h);
    h.finish()
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
