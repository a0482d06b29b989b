//! CRD structural schemas of the agent-sandbox kinds: pruning, defaulting and validation with the
//! API server's algorithms and error wording.
//!
//! A [`Schema`] holds one `openAPIV3Schema` (the `v1beta1` one of a CRD, as stored in
//! `fakekube/schemas/<plural>.json`). The store runs, in the API server's order:
//! [`Schema::prune`] (unknown fields, then non-nullable nulls), [`Schema::apply_defaults`],
//! [`Schema::validate`] and, on update, [`Schema::validate_update`].
//!
//! Sources of the behaviour (read for facts, not copied): apiextensions-apiserver's structural
//! `pruning`, `defaulting` and `listtype` packages and its `customresource` strategy, and
//! kube-openapi's `validate` package, whose messages [`FieldError`] reproduces.
//!
//! # Known limitations
//! - CEL (`x-kubernetes-validations`) is not evaluated: each rule that appears in the four CRDs is
//!   implemented by hand, keyed on its exact text (see [`known_rule`]). A rule with any other text
//!   is ignored, and `messageExpression` is not evaluated (the static `message` is used).
//! - Update ratcheting (errors in unchanged fields tolerated, `CRDValidationRatcheting`) is not
//!   done: an update is validated like a create, plus the transition rules.
//! - Keywords absent from these CRDs are ignored: `multipleOf`, `uniqueItems`, `minProperties`,
//!   `maxProperties`, `patternProperties`, `allOf`, `oneOf`, `not`, `additionalProperties: false`.
//!   Of the string formats the API server checks, only `date-time` and `date` are implemented.
//!   `int32`/`int64` ranges are not checked, as in API servers before 1.36 (which strip those
//!   formats; kubernetes/kubernetes#136582 enables them in 1.36); the scale subresource's own
//!   int32 check is [`validate_scale`]. Of `pattern`s, only the three that occur in these CRDs
//!   are known; another pattern is not checked.
//! - On update, list-type `set`/`map` uniqueness is checked even when the old object already
//!   broke it (the API server then skips the check).
//! - In `anyOf`, when every branch fails the errors of the first branch are reported (kube-openapi
//!   picks the branch with the most matches; for `x-kubernetes-int-or-string` that is the first).

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

/// The CRD version whose schema fakekube serves.
pub(crate) const SERVED_VERSION: &str = "v1beta1";

/// `reason` of a missing required field.
pub(crate) const FIELD_VALUE_REQUIRED: &str = "FieldValueRequired";
/// `reason` of a value outside an `enum`.
pub(crate) const FIELD_VALUE_NOT_SUPPORTED: &str = "FieldValueNotSupported";
/// `reason` of a value breaking a constraint (minimum, pattern, CEL rule...).
pub(crate) const FIELD_VALUE_INVALID: &str = "FieldValueInvalid";
/// `reason` of a value of the wrong JSON type or string format.
pub(crate) const FIELD_VALUE_TYPE_INVALID: &str = "FieldValueTypeInvalid";
/// `reason` of a repeated element of a `set` or `map` list.
pub(crate) const FIELD_VALUE_DUPLICATE: &str = "FieldValueDuplicate";
/// `reason` of a string longer than `maxLength`.
pub(crate) const FIELD_VALUE_TOO_LONG: &str = "FieldValueTooLong";
/// `reason` of a list longer than `maxItems`.
pub(crate) const FIELD_VALUE_TOO_MANY: &str = "FieldValueTooMany";
/// `reason` of a value a CEL rule forbids (`reason: FieldValueForbidden`).
pub(crate) const FIELD_VALUE_FORBIDDEN: &str = "FieldValueForbidden";

/// The detail the API server adds when schema errors kept it from running the CEL rules.
const RULES_NOT_CHECKED: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// Why a schema or a CRD could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SchemaError {
    /// The schema text is not JSON.
    #[error("schema is not valid JSON")]
    ParseJson(#[source] serde_json::Error),
    /// The schema is JSON but not an object.
    #[error("schema root is not a JSON object")]
    NotAnObject,
    /// The CRD text is not YAML.
    #[error("CRD is not valid YAML")]
    ParseYaml(#[source] serde_saphyr::Error),
    /// The CRD has no `spec.names.plural`.
    #[error("CRD has no spec.names.plural")]
    MissingPlural,
    /// The CRD does not carry the wanted version with an `openAPIV3Schema`.
    #[error("CRD has no version {0:?} with schema.openAPIV3Schema")]
    MissingVersion(String),
}

/// One field error, as the API server lists it in a 422 `Invalid` Status's `details.causes[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// The path of the field (`spec.podTemplate`, `spec.volumeClaimTemplates[0].spec`).
    pub(crate) field: String,
    /// The cause type (`FieldValueRequired`, `FieldValueInvalid`, ...).
    pub(crate) reason: &'static str,
    /// The message without the field (`Required value`, `Invalid value: -1: ...`).
    pub(crate) message: String,
}

/// Constructors in the API server's wording, and the CEL blocking test.
impl FieldError {
    /// `"<field>: <message>"`, the form the API server joins into the Status message.
    #[allow(dead_code)] // for the store's Status message; remove once it is called
    pub(crate) fn summary(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }

    /// Whether this error keeps the API server from evaluating the CEL rules.
    fn blocks_rules(&self) -> bool {
        matches!(
            self.reason,
            FIELD_VALUE_NOT_SUPPORTED
                | FIELD_VALUE_REQUIRED
                | FIELD_VALUE_TOO_LONG
                | FIELD_VALUE_TOO_MANY
                | FIELD_VALUE_TYPE_INVALID
        )
    }

    /// An error on `field` (`<nil>` when empty, like a nil `field.Path`).
    fn new(field: &str, reason: &'static str, message: String) -> Self {
        let field = if field.is_empty() {
            "<nil>".to_string()
        } else {
            field.to_string()
        };
        Self {
            field,
            reason,
            message,
        }
    }

    /// `field.Required`.
    fn required(field: &str) -> Self {
        Self::new(field, FIELD_VALUE_REQUIRED, "Required value".to_string())
    }

    /// `field.Invalid`, with the bad value already formatted.
    fn invalid(field: &str, bad: &str, detail: &str) -> Self {
        Self::new(
            field,
            FIELD_VALUE_INVALID,
            format!("Invalid value: {bad}: {detail}"),
        )
    }

    /// `field.TypeInvalid`, with the bad value already formatted.
    fn type_invalid(field: &str, bad: &str, detail: &str) -> Self {
        Self::new(
            field,
            FIELD_VALUE_TYPE_INVALID,
            format!("Invalid value: {bad}: {detail}"),
        )
    }
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
    /// The schema document, for `/openapi/v3`.
    pub(crate) fn root(&self) -> &Value {
        &self.root
    }
}

impl Schema {
    /// Parses one `openAPIV3Schema` from JSON.
    pub(crate) fn from_json(s: &str) -> Result<Self, SchemaError> {
        let root: Value = serde_json::from_str(s).map_err(SchemaError::ParseJson)?;
        if !root.is_object() {
            return Err(SchemaError::NotAnObject);
        }
        let has_rules = any_rules(&root);
        Ok(Self { root, has_rules })
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
        prune_node(obj, Some(&self.root), true, &mut path, &mut out);
        prune_nulls(obj, Some(&self.root), true);
        out.sort();
        out
    }

    /// Writes the schema's `default`s into `obj` where the field is absent (or a non-nullable
    /// `null`), descending only into objects and lists that exist.
    pub(crate) fn apply_defaults(&self, obj: &mut Value) {
        default_node(obj, &self.root);
    }

    /// Checks `obj` against the schema as on create: types, `required`, `enum`, bounds,
    /// lengths, `pattern`, `format`, `minItems`/`maxItems`, list-type `set`/`map` uniqueness and
    /// the non-transition CEL rules this module knows. Adds the API server's "rules not checked"
    /// note when schema errors keep the rules from running.
    pub(crate) fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_node(obj, &self.root, "", &mut errs);
        list_types(obj, &self.root, "", &mut errs);
        if self.has_rules {
            if errs.iter().any(FieldError::blocks_rules) {
                errs.push(FieldError::new(
                    "",
                    FIELD_VALUE_INVALID,
                    format!("Invalid value: null: {RULES_NOT_CHECKED}"),
                ));
            } else {
                rules_node(obj, None, &self.root, "", &mut errs);
            }
        }
        dedup(errs)
    }

    /// The errors an update adds to [`Schema::validate`] of the new object: the transition rules
    /// (`x-kubernetes-validations` using `oldSelf`), evaluated where the old object has a
    /// correlated value. Empty when the new object's schema errors keep the rules from running.
    pub(crate) fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        if !self.has_rules {
            return Vec::new();
        }
        let mut base = Vec::new();
        validate_node(new, &self.root, "", &mut base);
        list_types(new, &self.root, "", &mut base);
        if base.iter().any(FieldError::blocks_rules) {
            return Vec::new();
        }
        let mut errs = Vec::new();
        rules_node(new, Some(old), &self.root, "", &mut errs);
        dedup(errs)
    }
}

/// Validates the scale subresource paths of a custom object as the API server does after the
/// schema (`.spec.replicas` must be an int64 in 0..=2147483647, and so on), with the paths in
/// the CRD's own form (`.spec.replicas`). `spec_replicas` is `None` for a status update.
#[allow(dead_code)] // for the store (SandboxWarmPool has a scale subresource); remove once called
pub(crate) fn validate_scale(
    obj: &Value,
    spec_replicas: Option<&str>,
    status_replicas: &str,
    label_selector: Option<&str>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for path in spec_replicas
        .into_iter()
        .chain(std::iter::once(status_replicas))
    {
        match nested(obj, path) {
            Ok(None) => {}
            Ok(Some(v)) => match v.as_i64().filter(|_| !v.is_f64()) {
                Some(n) if n < 0 => {
                    errs.push(FieldError::invalid(
                        path,
                        &n.to_string(),
                        "should be a non-negative integer",
                    ));
                }
                Some(n) if n > i64::from(i32::MAX) => errs.push(FieldError::invalid(
                    path,
                    &n.to_string(),
                    &format!("should be less than or equal to {}", i32::MAX),
                )),
                Some(_) => {}
                None => errs.push(FieldError::invalid(
                    path,
                    "0",
                    &format!(
                        "{} accessor error: {} is of the type {}, expected int64",
                        json_path(path),
                        go_plain(v),
                        go_type(v)
                    ),
                )),
            },
            Err(detail) => errs.push(FieldError::invalid(path, "0", &detail)),
        }
    }
    if let Some(path) = label_selector {
        match nested(obj, path) {
            Ok(None) => {}
            Ok(Some(v)) if v.is_string() => {}
            Ok(Some(v)) => errs.push(FieldError::invalid(
                path,
                "\"\"",
                &format!(
                    "{} accessor error: {} is of the type {}, expected string",
                    json_path(path),
                    go_plain(v),
                    go_type(v)
                ),
            )),
            Err(detail) => errs.push(FieldError::invalid(path, "\"\"", &detail)),
        }
    }
    errs
}

/// `.a.b` for the path `a.b` (the form unstructured accessors print).
fn json_path(path: &str) -> String {
    format!(".{}", path.trim_start_matches('.'))
}

/// The value at a dotted path (`.spec.replicas`), or the accessor error text when an
/// intermediate value is not an object.
fn nested<'a>(obj: &'a Value, path: &str) -> Result<Option<&'a Value>, String> {
    let mut cur = obj;
    let mut walked = String::new();
    for seg in path.trim_start_matches('.').split('.') {
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(seg);
        match cur {
            Value::Null => return Ok(None),
            Value::Object(map) => match map.get(seg) {
                Some(v) => cur = v,
                None => return Ok(None),
            },
            other => {
                return Err(format!(
                    "{} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                    json_path(&walked),
                    go_plain(other),
                    go_type(other)
                ));
            }
        }
    }
    Ok(Some(cur))
}

// ---------------------------------------------------------------------------------------------
// Schema node accessors

/// `additionalProperties` of a schema node.
enum Additional<'a> {
    /// Absent.
    Absent,
    /// A schema for every extra key.
    Schema(&'a Value),
    /// `true` (extra keys allowed, no schema) or `false`.
    Bool(bool),
}

/// The `properties` of a schema node.
fn properties(s: &Value) -> Option<&Map<String, Value>> {
    s.get("properties").and_then(Value::as_object)
}

/// The `additionalProperties` of a schema node.
fn additional(s: &Value) -> Additional<'_> {
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => Additional::Bool(*b),
        Some(v) if v.is_object() => Additional::Schema(v),
        _ => Additional::Absent,
    }
}

/// The `items` schema of a list node.
fn items(s: &Value) -> Option<&Value> {
    s.get("items").filter(|v| v.is_object())
}

/// A boolean keyword (`nullable`, `x-kubernetes-...`), false when absent.
fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// A string keyword (`type`, `format`, `pattern`...).
fn str_of<'a>(s: &'a Value, key: &str) -> Option<&'a str> {
    s.get(key).and_then(Value::as_str)
}

/// Whether this node or one below it carries `x-kubernetes-validations`.
fn any_rules(s: &Value) -> bool {
    if s.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
    {
        return true;
    }
    let in_props = properties(s).is_some_and(|p| p.values().any(any_rules));
    let in_additional = matches!(additional(s), Additional::Schema(a) if any_rules(a));
    in_props || in_additional || items(s).is_some_and(any_rules)
}

/// `parent.name`, or `name` at the root.
fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
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

// ---------------------------------------------------------------------------------------------
// Pruning

/// The fields of an embedded resource (and of the root) that pruning leaves alone.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Removes unknown fields under `x`; `s` is `None` where the schema allows a value but says
/// nothing about it (every key below is then unknown).
fn prune_node(
    x: &mut Value,
    s: Option<&Value>,
    embedded: bool,
    path: &mut String,
    out: &mut Vec<String>,
) {
    if let Some(s) = s.filter(|s| flag(s, "x-kubernetes-preserve-unknown-fields")) {
        skip_prune(x, s, embedded, path, out);
        return;
    }
    let base = path.len();
    match x {
        Value::Object(map) => {
            let Some(s) = s else {
                for k in map.keys() {
                    out.push(child(path, k));
                }
                map.clear();
                return;
            };
            let mut unknown = Vec::new();
            for (k, v) in map.iter_mut() {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(prop) = properties(s).and_then(|p| p.get(k)) {
                    push_key(path, k);
                    prune_node(
                        v,
                        Some(prop),
                        flag(prop, "x-kubernetes-embedded-resource"),
                        path,
                        out,
                    );
                    path.truncate(base);
                } else {
                    match additional(s) {
                        Additional::Schema(a) => {
                            push_key(path, k);
                            prune_node(
                                v,
                                Some(a),
                                flag(a, "x-kubernetes-embedded-resource"),
                                path,
                                out,
                            );
                            path.truncate(base);
                        }
                        Additional::Bool(true) => {
                            push_key(path, k);
                            prune_node(v, None, false, path, out);
                            path.truncate(base);
                        }
                        Additional::Bool(false) | Additional::Absent => unknown.push(k.clone()),
                    }
                }
            }
            for k in unknown {
                out.push(child(path, &k));
                map.remove(&k);
            }
        }
        Value::Array(list) => {
            let item = s.and_then(items);
            for (i, v) in list.iter_mut().enumerate() {
                path.push_str(&format!("[{i}]"));
                prune_node(
                    v,
                    item,
                    item.is_some_and(|it| flag(it, "x-kubernetes-embedded-resource")),
                    path,
                    out,
                );
                path.truncate(base);
            }
        }
        _ => {}
    }
}

/// Under `x-kubernetes-preserve-unknown-fields`: unknown keys stay, known ones are pruned.
fn skip_prune(x: &mut Value, s: &Value, embedded: bool, path: &mut String, out: &mut Vec<String>) {
    let base = path.len();
    match x {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let sub = match (properties(s).and_then(|p| p.get(k)), additional(s)) {
                    (Some(prop), _) => Some(Some(prop)),
                    (None, Additional::Schema(a)) => Some(Some(a)),
                    (None, Additional::Bool(true)) => Some(None),
                    (None, _) => None,
                };
                if let Some(sub) = sub {
                    push_key(path, k);
                    let emb = sub.is_some_and(|s| flag(s, "x-kubernetes-embedded-resource"));
                    prune_node(v, sub, emb, path, out);
                    path.truncate(base);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item) = items(s) {
                let emb = flag(item, "x-kubernetes-embedded-resource");
                for (i, v) in list.iter_mut().enumerate() {
                    path.push_str(&format!("[{i}]"));
                    skip_prune(v, item, emb, path, out);
                    path.truncate(base);
                }
            }
        }
        _ => {}
    }
}

/// Appends `.key` (or `key` at the root) to a pruning path.
fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// The schema of the value under `key` of an object with schema `s`.
fn field_schema<'a>(s: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    let s = s?;
    if let Some(p) = properties(s).and_then(|p| p.get(key)) {
        return Some(p);
    }
    match additional(s) {
        Additional::Schema(a) => Some(a),
        _ => None,
    }
}

/// Removes `null`s whose schema is neither nullable nor defaulted (at the root, `apiVersion`,
/// `kind` and `metadata` are the store's).
fn prune_nulls(x: &mut Value, s: Option<&Value>, root: bool) {
    match x {
        Value::Object(map) => {
            map.retain(|k, v| {
                if root && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                let sub = field_schema(s, k);
                let drop = v.is_null()
                    && sub
                        .is_some_and(|sub| !flag(sub, "nullable") && sub.get("default").is_none());
                if !drop {
                    prune_nulls(v, sub, false);
                }
                !drop
            });
        }
        Value::Array(list) => {
            let item = s.and_then(items);
            for v in list {
                prune_nulls(v, item, false);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Defaulting

/// A `null` where the schema does not allow one.
fn is_non_nullable_null(x: &Value, s: &Value) -> bool {
    x.is_null() && !flag(s, "nullable")
}

/// The API server's defaulting walk: defaults of absent properties, then recursion.
fn default_node(x: &mut Value, s: &Value) {
    match x {
        Value::Object(map) => {
            if let Some(props) = properties(s) {
                for (k, prop) in props {
                    let Some(default) = prop.get("default") else {
                        continue;
                    };
                    let missing = map.get(k).is_none_or(|v| is_non_nullable_null(v, prop));
                    if missing {
                        map.insert(k.clone(), default.clone());
                    }
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(prop) = properties(s).and_then(|p| p.get(k)) {
                    default_node(v, prop);
                } else if let Additional::Schema(a) = additional(s) {
                    if is_non_nullable_null(v, a)
                        && let Some(d) = a.get("default")
                    {
                        *v = d.clone();
                    }
                    default_node(v, a);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item) = items(s) {
                for v in list {
                    if is_non_nullable_null(v, item)
                        && let Some(d) = item.get("default")
                    {
                        *v = d.clone();
                    }
                    default_node(v, item);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Validation (kube-openapi's SchemaValidator, and apiextensions' conversion to field errors)

/// The JSON type name kube-openapi infers for a decoded value (`integer` only for values that
/// decode as int64; larger integers decode as float64).
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The format kube-openapi infers for a decoded value.
fn json_format(v: &Value) -> &'static str {
    match v {
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        _ => "",
    }
}

/// The declared types (`x-kubernetes-int-or-string` means integer or string).
fn schema_types(s: &Value) -> Vec<&str> {
    if flag(s, "x-kubernetes-int-or-string") {
        return vec!["integer", "string"];
    }
    match str_of(s, "type") {
        Some(t) if !t.is_empty() => vec![t],
        _ => Vec::new(),
    }
}

/// Formats the API server validates in CRDs; every other format is stripped before validation.
const SUPPORTED_FORMATS: [&str; 24] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

/// The schema's format if the API server keeps it, else `""`.
fn kept_format(s: &Value) -> &str {
    match str_of(s, "format") {
        Some(f) if SUPPORTED_FORMATS.contains(&f.replace('-', "").as_str()) => f,
        _ => "",
    }
}

/// Whether a float is an integer kube-openapi accepts as one (|f| <= 2^53).
fn is_json_integer(f: f64) -> bool {
    const LIMIT: f64 = 9_007_199_254_740_992.0;
    f.is_finite() && f.fract() == 0.0 && (-LIMIT..=LIMIT).contains(&f)
}

/// The type check; `Some((expected, found))` on failure.
fn type_check(data: &Value, s: &Value, types: &[&str], format: &str) -> Option<(String, String)> {
    if data.is_null() {
        let ok = types.is_empty() || types.contains(&"null") || flag(s, "nullable");
        return (!ok).then(|| (types.join(","), "null".to_string()));
    }
    let found = json_type(data);
    let found_format = json_format(data);
    let is_float_int = found == "number"
        && data.as_f64().is_some_and(is_json_integer)
        && types.contains(&"integer");
    let is_int_float = found == "integer" && types.contains(&"number");
    let stringish = data.is_string() || data.is_array();
    let matches_type = types.contains(&found) || is_float_int || is_int_float;
    let numeric = types.contains(&"number") || types.contains(&"integer");
    if !format.is_empty() {
        // A value that is neither a string nor a list is first checked against the format
        // (kube-openapi's quirk: `5` in a date-time field is "not of type date-time: int64").
        if !stringish && !matches_type && found_format != format {
            return Some((format.to_string(), found_format.to_string()));
        }
        // A string, or even a list, in a formatted non-numeric field passes the type check.
        if stringish && !numeric {
            return None;
        }
    }
    (!matches_type).then(|| (types.join(","), found.to_string()))
}

/// The field path of a kube-openapi error name (`.spec` at the root becomes `spec`).
fn field_of(name: &str) -> &str {
    name.strip_prefix('.').unwrap_or(name)
}

/// kube-openapi's validators for one node in their order: type, `anyOf`, string, format,
/// number, list, `enum`, object. `path` is kube-openapi's name for the node.
fn validate_node(data: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let types = schema_types(s);
    let format = kept_format(s);
    let field = field_of(path);
    let type_applies = !types.is_empty() || !format.is_empty();
    if type_applies && let Some((expected, found)) = type_check(data, s, &types, format) {
        let detail = format!(
            "{path} in body must be of type {expected}: {}",
            go_quote(&found)
        );
        out.push(FieldError::type_invalid(field, &go_quote(&found), &detail));
    }
    if data.is_null() {
        check_enum(data, s, field, out);
        return;
    }
    if let Some(branches) = s
        .get("anyOf")
        .and_then(Value::as_array)
        .filter(|b| !b.is_empty())
    {
        let mut first_failure = None;
        let mut ok = false;
        for b in branches {
            let mut errs = Vec::new();
            validate_node(data, b, path, &mut errs);
            if errs.is_empty() {
                ok = true;
                break;
            }
            first_failure.get_or_insert(errs);
        }
        if !ok {
            let detail = format!(
                "{} must validate at least one schema (anyOf)",
                go_quote(path)
            );
            out.push(FieldError::invalid("", "\"\"", &detail));
            out.extend(first_failure.unwrap_or_default());
        }
    }
    match data {
        Value::String(text) => {
            check_string(text, s, path, field, out);
            check_format(text, format, path, field, out);
        }
        Value::Number(_) => check_number(data, s, path, field, out),
        Value::Array(list) => check_array(list, s, path, field, out),
        _ => {}
    }
    check_enum(data, s, field, out);
    if let Value::Object(map) = data {
        check_object(map, s, path, out);
    }
}

/// `maxLength`, `minLength`, `pattern`; only the first failure is reported.
fn check_string(text: &str, s: &Value, path: &str, field: &str, out: &mut Vec<FieldError>) {
    let len = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        out.push(FieldError::new(
            field,
            FIELD_VALUE_TOO_LONG,
            format!("Too long: may not be more than {max} {unit}"),
        ));
        return;
    }
    if let Some(min) = s.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        out.push(FieldError::invalid(
            field,
            &go_quote(text),
            &format!("{path} in body should be at least {min} chars long"),
        ));
        return;
    }
    if let Some(pattern) = str_of(s, "pattern")
        && pattern_matches(pattern, text) == Some(false)
    {
        out.push(FieldError::invalid(
            field,
            &go_quote(text),
            &format!("{path} in body should match '{pattern}'"),
        ));
    }
}

/// The string format check (`date-time`, `date`).
fn check_format(text: &str, format: &str, path: &str, field: &str, out: &mut Vec<FieldError>) {
    let valid = match format.replace('-', "").as_str() {
        "datetime" => is_date_time(text),
        "date" => is_date(text),
        _ => true,
    };
    if !valid {
        let detail = format!(
            "{path} in body must be of type {format}: {}",
            go_quote(text)
        );
        out.push(FieldError::type_invalid(field, &go_quote(text), &detail));
    }
}

/// `minimum` and `maximum` (with their `exclusive` flags).
fn check_number(data: &Value, s: &Value, path: &str, field: &str, out: &mut Vec<FieldError>) {
    let as_int = data.as_i64().filter(|_| !data.is_f64());
    let bad = go_v(data);
    let bound = |key: &str| s.get(key).and_then(Value::as_f64);
    if let Some(min) = bound("minimum") {
        let exclusive = flag(s, "exclusiveMinimum");
        let (fails, shown) = match as_int {
            // Go truncates the float bound to int64 for integer data.
            #[allow(clippy::cast_possible_truncation)]
            Some(n) => {
                let m = min as i64;
                (if exclusive { n <= m } else { n < m }, m.to_string())
            }
            None => {
                let f = data.as_f64().unwrap_or(0.0);
                (if exclusive { f <= min } else { f < min }, go_float(min))
            }
        };
        if fails {
            let op = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push(FieldError::invalid(
                field,
                &bad,
                &format!("{path} in body should be {op} {shown}"),
            ));
        }
    }
    if let Some(max) = bound("maximum") {
        let exclusive = flag(s, "exclusiveMaximum");
        let (fails, shown) = match as_int {
            #[allow(clippy::cast_possible_truncation)]
            Some(n) => {
                let m = max as i64;
                (if exclusive { n >= m } else { n > m }, m.to_string())
            }
            None => {
                let f = data.as_f64().unwrap_or(0.0);
                (if exclusive { f >= max } else { f > max }, go_float(max))
            }
        };
        if fails {
            let op = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push(FieldError::invalid(
                field,
                &bad,
                &format!("{path} in body should be {op} {shown}"),
            ));
        }
    }
}

/// The items, then `minItems` and `maxItems`.
fn check_array(list: &[Value], s: &Value, path: &str, field: &str, out: &mut Vec<FieldError>) {
    if let Some(item) = items(s) {
        for (i, v) in list.iter().enumerate() {
            validate_node(v, item, &format!("{path}[{i}]"), out);
        }
    }
    let size = u64::try_from(list.len()).unwrap_or(u64::MAX);
    if let Some(min) = s.get("minItems").and_then(Value::as_u64)
        && size < min
    {
        out.push(FieldError::invalid(
            field,
            &size.to_string(),
            &format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
        && size > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        out.push(FieldError::new(
            field,
            FIELD_VALUE_TOO_MANY,
            format!("Too many: {size}: must have at most {max} {unit}"),
        ));
    }
}

/// `enum`, reported as `Unsupported value` with the supported values quoted.
fn check_enum(data: &Value, s: &Value, field: &str, out: &mut Vec<FieldError>) {
    let Some(values) = s
        .get("enum")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
    else {
        return;
    };
    if values.iter().any(|e| loose_equal(data, e)) {
        return;
    }
    let supported: Vec<String> = values
        .iter()
        .map(|e| match e {
            Value::String(t) => go_quote(t),
            other => go_quote(&go_json(other)),
        })
        .collect();
    let message = format!(
        "Unsupported value: {}: supported values: {}",
        go_v(data),
        supported.join(", ")
    );
    out.push(FieldError::new(field, FIELD_VALUE_NOT_SUPPORTED, message));
}

/// Extra keys under `additionalProperties`, the properties, then `required`.
fn check_object(map: &Map<String, Value>, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let props = properties(s);
    if let Additional::Schema(a) = additional(s) {
        for (k, v) in map {
            if props.is_none_or(|p| !p.contains_key(k)) {
                validate_node(v, a, &format!("{path}.{k}"), out);
            }
        }
    }
    if let Some(props) = props {
        for (name, prop) in props {
            if let Some(v) = map.get(name) {
                validate_node(v, prop, &child(path, name), out);
            }
        }
    }
    for req in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = req.as_str()
            && !map.contains_key(name)
        {
            out.push(FieldError::required(field_of(&format!("{path}.{name}"))));
        }
    }
}

/// Equality the way an `enum` compares (numbers by value).
fn loose_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) if !x.is_f64() && !y.is_f64() => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| loose_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| loose_equal(v, w)))
        }
        _ => a == b,
    }
}

// ---------------------------------------------------------------------------------------------
// Formats and patterns

/// kube-openapi's `date-time` check: a full date, a `t`, then `hh:mm:ss`, an optional
/// fraction and a zone, compared case-insensitively.
fn is_date_time(text: &str) -> bool {
    if text.len() < 4 {
        return false;
    }
    let lower = text.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(clock)) = (parts.next(), parts.next()) else {
        return false;
    };
    is_date(date) && is_clock(clock)
}

/// `^(\d\d):(\d\d):(\d\d)(.[0-9]+)?(z|[+-]\d\d:\d\d)$` with hour <= 23, minute and second <= 59.
fn is_clock(clock: &str) -> bool {
    let b = clock.as_bytes();
    let two = |i: usize| b.get(i..i + 2).filter(|d| d.iter().all(u8::is_ascii_digit));
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if b.get(2) != Some(&b':') || b.get(5) != Some(&b':') {
        return false;
    }
    if h > b"23".as_slice() || m > b"59".as_slice() || sec > b"59".as_slice() {
        return false;
    }
    let Some(rest) = clock.get(8..) else {
        return false;
    };
    if is_zone(rest) {
        return true;
    }
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) if c != '\n' => {}
        _ => return false,
    }
    let after = chars.as_str();
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && after.get(digits..).is_some_and(is_zone)
}

/// `z` or `+hh:mm`/`-hh:mm` (already lower-cased).
fn is_zone(z: &str) -> bool {
    let b = z.as_bytes();
    z == "z"
        || (b.len() == 6
            && matches!(b.first(), Some(b'+' | b'-'))
            && b.get(1..3)
                .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            && b.get(3) == Some(&b':')
            && b.get(4..6)
                .is_some_and(|d| d.iter().all(u8::is_ascii_digit)))
}

/// Go's `time.Parse("2006-01-02", s)`: four-digit year, two-digit month and day of that month.
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let d = b.get(r)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0u32, |acc, c| acc * 10 + u32::from(c - b'0')))
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// The resource quantity pattern of `resources.limits`/`requests` and similar.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
/// The pattern of `metav1.Condition.reason`.
const CONDITION_REASON_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
/// The pattern of `metav1.Condition.type`.
const CONDITION_TYPE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// Whether `text` matches one of the known patterns; `None` for a pattern this module does not
/// know (it is then not checked).
fn pattern_matches(pattern: &str, text: &str) -> Option<bool> {
    match pattern {
        QUANTITY_PATTERN => Some(is_quantity(text)),
        CONDITION_REASON_PATTERN => Some(is_condition_reason(text)),
        CONDITION_TYPE_PATTERN => Some(is_condition_type(text)),
        _ => None,
    }
}

/// Digits, optionally with a fraction (`1`, `1.`, `1.5`, `.5`); the length of the longest
/// such prefix of `b`.
fn decimal_len(b: &[u8]) -> Option<usize> {
    let int = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if b.get(int) == Some(&b'.') {
        let frac = b
            .get(int + 1..)
            .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count());
        if int == 0 && frac == 0 {
            return None;
        }
        return Some(int + 1 + frac);
    }
    (int > 0).then_some(int)
}

/// `b` without one leading `+` or `-`.
fn unsigned(b: &[u8]) -> &[u8] {
    match b.split_first() {
        Some((b'+' | b'-', rest)) => rest,
        _ => b,
    }
}

/// [`QUANTITY_PATTERN`], by hand.
fn is_quantity(text: &str) -> bool {
    let body = unsigned(text.as_bytes());
    let Some(n) = decimal_len(body) else {
        return false;
    };
    let suffix = body.get(n..).unwrap_or_default();
    match suffix {
        [] | [b'n' | b'u' | b'm' | b'k' | b'M' | b'G' | b'T' | b'P' | b'E'] => true,
        [b'K' | b'M' | b'G' | b'T' | b'P' | b'E', b'i'] => true,
        [b'e' | b'E', rest @ ..] => {
            let exp = unsigned(rest);
            decimal_len(exp) == Some(exp.len())
        }
        _ => false,
    }
}

/// [`CONDITION_REASON_PATTERN`], by hand.
fn is_condition_reason(text: &str) -> bool {
    let b = text.as_bytes();
    let Some((first, rest)) = b.split_first() else {
        return false;
    };
    if !first.is_ascii_alphabetic() {
        return false;
    }
    let Some((last, middle)) = rest.split_last() else {
        return true;
    };
    middle
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'))
        && (last.is_ascii_alphanumeric() || *last == b'_')
}

/// [`CONDITION_TYPE_PATTERN`], by hand.
fn is_condition_type(text: &str) -> bool {
    let (prefix, name) = match text.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, text),
    };
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(edge)
            && b.last().is_some_and(edge)
            && b.iter().all(|c| edge(c) || *c == b'-')
    };
    let prefix_ok = prefix.is_none_or(|p| p.split('.').all(label_ok));
    let nb = name.as_bytes();
    let name_edge = |c: &u8| c.is_ascii_alphanumeric();
    let name_ok = nb.first().is_some_and(name_edge)
        && nb.last().is_some_and(name_edge)
        && nb
            .iter()
            .all(|c| name_edge(c) || matches!(c, b'-' | b'_' | b'.'));
    prefix_ok && name_ok
}

// ---------------------------------------------------------------------------------------------
// x-kubernetes-list-type set / map uniqueness

/// The `x-kubernetes-list-type` `set` and `map` uniqueness walk, with `field.Path` paths.
fn list_types(data: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    match data {
        Value::Object(map) => {
            if let Additional::Schema(a) = additional(s) {
                for (k, v) in map {
                    list_types(v, a, &format!("{path}[{k}]"), out);
                }
            }
            if let Some(props) = properties(s) {
                for (k, v) in map {
                    if let Some(prop) = props.get(k) {
                        list_types(v, prop, &child(path, k), out);
                    }
                }
            }
        }
        Value::Array(list) => {
            match str_of(s, "x-kubernetes-list-type") {
                Some("set") => {
                    let keys: Vec<String> = list.iter().map(unique_key).collect();
                    for i in repeated(&keys) {
                        let shown = list.get(i).map(go_v).unwrap_or_default();
                        out.push(FieldError::new(
                            &format!("{path}[{i}]"),
                            FIELD_VALUE_DUPLICATE,
                            format!("Duplicate value: {shown}"),
                        ));
                    }
                }
                Some("map") => list_map(list, s, path, out),
                _ => {}
            }
            if let Some(item) = items(s) {
                for (i, v) in list.iter().enumerate() {
                    list_types(v, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// A `map` list: objects only, unique by `x-kubernetes-list-map-keys`.
fn list_map(list: &[Value], s: &Value, path: &str, out: &mut Vec<FieldError>) {
    if let Some((i, x)) = list
        .iter()
        .enumerate()
        .find(|(_, x)| !x.is_null() && !x.is_object())
    {
        out.push(FieldError::invalid(
            &format!("{path}[{i}]"),
            &go_v(x),
            "must be an object for an array of list-type map",
        ));
        return;
    }
    let key_fields: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let keys: Vec<Map<String, Value>> = list
        .iter()
        .map(|x| {
            key_fields
                .iter()
                .filter_map(|f| x.get(*f).map(|v| ((*f).to_string(), v.clone())))
                .collect()
        })
        .collect();
    let tokens: Vec<String> = keys
        .iter()
        .map(|k| unique_key(&Value::Object(k.clone())))
        .collect();
    for i in repeated(&tokens) {
        let shown = keys
            .get(i)
            .map(|k| go_json(&Value::Object(k.clone())))
            .unwrap_or_default();
        out.push(FieldError::new(
            &format!("{path}[{i}]"),
            FIELD_VALUE_DUPLICATE,
            format!("Duplicate value: {shown}"),
        ));
    }
}

/// The index of the second occurrence of every value that occurs more than once.
fn repeated(keys: &[String]) -> Vec<usize> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let n = seen.entry(k.as_str()).or_insert(0);
        *n += 1;
        if *n == 2 {
            out.push(i);
        }
    }
    out
}

/// A token equal for two values exactly when Go's uniqueness check treats them as equal.
fn unique_key(v: &Value) -> String {
    match v {
        Value::Object(_) | Value::Array(_) => format!("c{}", go_json(v)),
        Value::Number(n) if n.is_f64() => format!("f{n}"),
        other => format!("s{other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// x-kubernetes-validations, implemented by hand

/// `Sandbox.spec`: `volumeClaimTemplates` may be neither added, removed nor changed.
const VCT_IMMUTABLE_RULE: &str = "has(self.volumeClaimTemplates) == has(oldSelf.volumeClaimTemplates) && (!has(self.volumeClaimTemplates) || self.volumeClaimTemplates == oldSelf.volumeClaimTemplates)";

/// The result of a known rule: `Some(passed)`; `None` for a rule this module does not know or a
/// transition rule without an old value (both are skipped, as the API server skips a transition
/// rule on create).
fn known_rule(rule: &str, new: &Value, old: Option<&Value>) -> Option<bool> {
    match rule {
        VCT_IMMUTABLE_RULE => {
            let old = old?;
            let key = "volumeClaimTemplates";
            let (n, o) = (new.get(key), old.get(key));
            Some(match (n, o) {
                (None, None) => true,
                (Some(a), Some(b)) => loose_equal(a, b),
                _ => false,
            })
        }
        _ => None,
    }
}

/// Evaluates the known `x-kubernetes-validations` of this node and those below it, with the
/// old value correlated by key (and by map keys in `map` lists).
fn rules_node(new: &Value, old: Option<&Value>, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    for rule in s
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(text) = str_of(rule, "rule") else {
            continue;
        };
        if known_rule(text, new, old) != Some(false) {
            continue;
        }
        let message = str_of(rule, "message")
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map_or_else(|| format!("failed rule: {}", text.trim()), str::to_string);
        let mut field = path.to_string();
        if let Some(fp) = str_of(rule, "fieldPath")
            .map(|f| f.trim_start_matches('.'))
            .filter(|f| !f.is_empty())
        {
            field = child(&field, fp);
        }
        let kind = schema_types(s).first().copied().unwrap_or("object");
        out.push(match str_of(rule, "reason") {
            Some(FIELD_VALUE_FORBIDDEN) => FieldError::new(
                &field,
                FIELD_VALUE_FORBIDDEN,
                format!("Forbidden: {message}"),
            ),
            Some(FIELD_VALUE_REQUIRED) => FieldError::new(
                &field,
                FIELD_VALUE_REQUIRED,
                format!("Required value: {message}"),
            ),
            Some(FIELD_VALUE_DUPLICATE) => FieldError::new(
                &field,
                FIELD_VALUE_DUPLICATE,
                format!("Duplicate value: {}", go_quote(kind)),
            ),
            _ => FieldError::invalid(&field, &go_quote(kind), &message),
        });
    }
    match new {
        Value::Object(map) => {
            for (k, v) in map {
                let old_v = old.and_then(|o| o.get(k));
                if let Some(prop) = properties(s).and_then(|p| p.get(k)) {
                    rules_node(v, old_v, prop, &child(path, k), out);
                } else if let Additional::Schema(a) = additional(s) {
                    rules_node(v, old_v, a, &format!("{path}[{k}]"), out);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item) = items(s) {
                let map_keys = (str_of(s, "x-kubernetes-list-type") == Some("map"))
                    .then(|| {
                        s.get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                    })
                    .flatten();
                for (i, v) in list.iter().enumerate() {
                    let old_v = map_keys.and_then(|keys| {
                        old.and_then(Value::as_array)?.iter().find(|o| {
                            keys.iter()
                                .filter_map(Value::as_str)
                                .all(|k| o.get(k) == v.get(k))
                        })
                    });
                    rules_node(v, old_v, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Go formatting of values in messages

/// A value as `field.Error` prints a bad value: strings quoted, numbers and booleans plain,
/// anything else as JSON.
fn go_v(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        Value::Number(n) if n.is_i64() => n.to_string(),
        Value::Number(n) => go_float(n.as_f64().unwrap_or(0.0)),
        Value::Bool(b) => b.to_string(),
        other => go_json(other),
    }
}

/// Go's `%v` of a decoded JSON value (strings unquoted, `map[k:v]`, `[a b]`, `<nil>`).
fn go_plain(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::String(s) => s.clone(),
        Value::Array(list) => format!(
            "[{}]",
            list.iter().map(go_plain).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            let parts: Vec<String> = sorted
                .into_iter()
                .map(|(k, x)| format!("{k}:{}", go_plain(x)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
        other => go_v(other),
    }
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's `strconv.Quote`.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)))
            }
            c if go_printable(c) => out.push(c),
            c if u32::from(c) < 0x10000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`.
fn go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

/// The shortest decimal digits and exponent of a finite non-zero float (`1.5` is `("15", 0)`).
fn float_digits(f: f64) -> (String, i32) {
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// Go's `%v` of a float64 (shortest digits, exponent form below 1e-4 and from 1e21).
fn go_float(f: f64) -> String {
    go_float_with(f, |exp| !(-4..21).contains(&exp), true)
}

/// Lays out a float the way Go's `strconv` does for `%v` and for `encoding/json`.
fn go_float_with(f: f64, use_exp: impl Fn(i32) -> bool, two_digit_exp: bool) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0");
    }
    let (digits, exp) = float_digits(f);
    if use_exp(exp) {
        let (head, tail) = digits.split_at(1.min(digits.len()));
        let frac = if tail.is_empty() {
            String::new()
        } else {
            format!(".{tail}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        let width = if two_digit_exp { 2 } else { 1 };
        return format!("{sign}{head}{frac}e{esign}{:0width$}", exp.unsigned_abs());
    }
    let n = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    let point = i64::from(exp) + 1;
    let body = if point <= 0 {
        format!(
            "0.{}{digits}",
            "0".repeat(usize::try_from(-point).unwrap_or(0))
        )
    } else if point >= n {
        format!(
            "{digits}{}",
            "0".repeat(usize::try_from(point - n).unwrap_or(0))
        )
    } else {
        let (a, b) = digits.split_at(usize::try_from(point).unwrap_or(0));
        format!("{a}.{b}")
    };
    format!("{sign}{body}")
}

/// Go's `encoding/json` rendering of a decoded value (sorted keys, HTML-safe escapes).
fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

/// Appends [`go_json`] of `v`.
fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if n.is_i64() => out.push_str(&n.to_string()),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            out.push_str(&go_float_with(f, |exp| !(-6..21).contains(&exp), false));
        }
        Value::String(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                        out.push_str(&format!("\\u{:04x}", u32::from(c)))
                    }
                    c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Array(list) => {
            out.push('[');
            for (i, x) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(x, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            out.push('{');
            for (i, (k, x)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(&Value::String(k.clone()), out);
                out.push(':');
                write_go_json(x, out);
            }
            out.push('}');
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generating fakekube/schemas/*.json from the CRD YAML (used by examples/regen_schemas.rs)

/// Reads one CRD YAML and returns its plural and the `v1beta1` `openAPIV3Schema` without
/// `description`s, as the compact-but-diffable JSON kept in `fakekube/schemas/<plural>.json`.
#[allow(dead_code)] // used by examples/regen_schemas.rs and the tests
pub fn crd_to_schema_json(crd_yaml: &str) -> Result<(String, String), SchemaError> {
    let crd: Value = serde_saphyr::from_str(crd_yaml).map_err(SchemaError::ParseYaml)?;
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .ok_or(SchemaError::MissingPlural)?
        .to_string();
    let mut schema = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(SERVED_VERSION))
        })
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
        .filter(|s| s.is_object())
        .cloned()
        .ok_or_else(|| SchemaError::MissingVersion(SERVED_VERSION.to_string()))?;
    strip_descriptions(&mut schema);
    Ok((plural, to_diffable_json(&schema)))
}

/// Removes every `description` keyword from a schema and its subschemas. A property that is
/// *named* `description` is kept: only schema objects are visited, never `properties` maps
/// themselves, `default`s, `enum`s or `x-kubernetes-validations`.
#[allow(dead_code)] // used by examples/regen_schemas.rs and the tests
pub fn strip_descriptions(v: &mut Value) {
    let Value::Object(map) = v else { return };
    if map.get("description").is_some_and(Value::is_string) {
        map.remove("description");
    }
    for (k, sub) in map.iter_mut() {
        match k.as_str() {
            "properties" | "patternProperties" | "definitions" | "dependencies" => {
                if let Value::Object(named) = sub {
                    named.values_mut().for_each(strip_descriptions);
                }
            }
            "items" | "anyOf" | "allOf" | "oneOf" => match sub {
                Value::Array(list) => list.iter_mut().for_each(strip_descriptions),
                other => strip_descriptions(other),
            },
            "additionalProperties" | "additionalItems" | "not" => strip_descriptions(sub),
            _ => {}
        }
    }
}

/// Width under which a JSON value is written on one line.
const LINE_WIDTH: usize = 100;

/// JSON with every value that fits in [`LINE_WIDTH`] on one line and larger ones split one
/// member per line, so diffs of regenerated schemas stay readable.
#[allow(dead_code)] // used by examples/regen_schemas.rs and the tests
pub fn to_diffable_json(v: &Value) -> String {
    let mut out = String::new();
    write_diffable(v, 0, 0, &mut out);
    out.push('\n');
    out
}

/// Appends `v` at `indent`, `prefix` being the width of the `"key": ` before it.
fn write_diffable(v: &Value, indent: usize, prefix: usize, out: &mut String) {
    let compact = v.to_string();
    let fits = indent + prefix + compact.len() <= LINE_WIDTH;
    let pad = " ".repeat(indent + 2);
    match v {
        Value::Object(map) if !fits && !map.is_empty() => {
            out.push_str("{\n");
            for (i, (k, x)) in map.iter().enumerate() {
                let key = Value::String(k.clone()).to_string();
                out.push_str(&pad);
                out.push_str(&key);
                out.push_str(": ");
                write_diffable(x, indent + 2, key.len() + 2, out);
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push('}');
        }
        Value::Array(list) if !fits && !list.is_empty() => {
            out.push_str("[\n");
            for (i, x) in list.iter().enumerate() {
                out.push_str(&pad);
                write_diffable(x, indent + 2, 0, out);
                out.push_str(if i + 1 < list.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
        _ => out.push_str(&compact),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const SANDBOXES: &str = include_str!("../schemas/sandboxes.json");
    const TEMPLATES: &str = include_str!("../schemas/sandboxtemplates.json");
    const POOLS: &str = include_str!("../schemas/sandboxwarmpools.json");
    const CLAIMS: &str = include_str!("../schemas/sandboxclaims.json");

    /// Loads a committed schema.
    fn load(json: &str) -> Schema {
        match Schema::from_json(json) {
            Ok(s) => s,
            Err(e) => panic!("committed schema does not load: {e}"),
        }
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

    /// The errors as `field: message`.
    fn summaries(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::summary).collect()
    }

    #[test]
    fn regenerated_schemas_match_the_committed_json() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/crds");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            println!("skipped: CRD fixtures not found at {}", dir.display());
            return;
        };
        let committed: HashMap<&str, &str> = [
            ("sandboxes", SANDBOXES),
            ("sandboxtemplates", TEMPLATES),
            ("sandboxwarmpools", POOLS),
            ("sandboxclaims", CLAIMS),
        ]
        .into_iter()
        .collect();
        let mut seen = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|x| x != "yaml") {
                continue;
            }
            let yaml = std::fs::read_to_string(&path).unwrap_or_default();
            let (plural, json) =
                crd_to_schema_json(&yaml).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(
                committed.get(plural.as_str()).copied(),
                Some(json.as_str()),
                "{plural}.json is stale"
            );
            seen.push(plural);
        }
        seen.sort();
        assert_eq!(
            seen,
            [
                "sandboxclaims",
                "sandboxes",
                "sandboxtemplates",
                "sandboxwarmpools"
            ]
        );
    }

    #[test]
    fn strip_descriptions_keeps_a_property_named_description() {
        let mut s = json!({
            "description": "the object",
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "a field named description"},
                "list": {"type": "array", "items": {"description": "item", "type": "string"}},
                "either": {"anyOf": [{"description": "x", "type": "integer"}]},
                "map": {"type": "object", "additionalProperties": {"description": "v", "type": "string"}}
            },
            "default": {"description": "kept: data, not a schema"}
        });
        strip_descriptions(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "list": {"type": "array", "items": {"type": "string"}},
                    "either": {"anyOf": [{"type": "integer"}]},
                    "map": {"type": "object", "additionalProperties": {"type": "string"}}
                },
                "default": {"description": "kept: data, not a schema"}
            })
        );
    }

    #[test]
    fn diffable_json_splits_only_what_does_not_fit_on_a_line() {
        let v = json!({"short": {"type": "string"}, "long": {"enum": ["a".repeat(60), "b".repeat(60)]}});
        let text = to_diffable_json(&v);
        assert!(text.contains("\"short\": {\"type\":\"string\"}"), "{text}");
        assert!(text.contains("\"enum\": [\n"), "{text}");
        let back: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, v);
    }

    #[test]
    fn minimal_sandbox_gets_operating_mode_and_shutdown_policy_defaults() {
        let (obj, unknown, errs) = admit(
            &load(SANDBOXES),
            sandbox(json!({"podTemplate": pod_template()})),
        );
        assert!(
            unknown.is_empty() && errs.is_empty(),
            "{unknown:?} {errs:?}"
        );
        assert_eq!(obj.pointer("/spec/operatingMode"), Some(&json!("Running")));
        assert_eq!(obj.pointer("/spec/shutdownPolicy"), Some(&json!("Retain")));
        assert_eq!(obj.pointer("/spec/service"), None, "service has no default");
        assert_eq!(obj.pointer("/metadata"), Some(&json!({"name": "s"})));
    }

    #[test]
    fn defaults_do_not_replace_values_the_user_set() {
        let spec = json!({"podTemplate": pod_template(), "operatingMode": "Suspended", "shutdownPolicy": "Delete"});
        let (obj, _, errs) = admit(&load(SANDBOXES), sandbox(spec));
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(
            obj.pointer("/spec/operatingMode"),
            Some(&json!("Suspended"))
        );
        assert_eq!(obj.pointer("/spec/shutdownPolicy"), Some(&json!("Delete")));
    }

    #[test]
    fn warm_pool_gets_replicas_and_update_strategy_type_only_where_they_apply() {
        let pools = load(POOLS);
        let bare = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
            "metadata": {"name": "p"}, "spec": {"sandboxTemplateRef": {"name": "t"}}});
        let (obj, _, errs) = admit(&pools, bare.clone());
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(obj.pointer("/spec/replicas"), Some(&json!(1)));
        assert_eq!(
            obj.pointer("/spec/updateStrategy"),
            None,
            "no parent object, no nested default"
        );

        let mut with_strategy = bare;
        if let Some(spec) = with_strategy
            .pointer_mut("/spec")
            .and_then(Value::as_object_mut)
        {
            spec.insert("updateStrategy".into(), json!({}));
            spec.insert("replicas".into(), json!(0));
        }
        let (obj, _, errs) = admit(&pools, with_strategy);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(
            obj.pointer("/spec/updateStrategy"),
            Some(&json!({"type": "OnReplenish"}))
        );
        assert_eq!(
            obj.pointer("/spec/replicas"),
            Some(&json!(0)),
            "0 is a value, not absence"
        );
    }

    #[test]
    fn sandbox_template_gets_its_three_policy_defaults() {
        let tmpl = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
            "metadata": {"name": "t"}, "spec": {"podTemplate": pod_template()}});
        let (obj, _, errs) = admit(&load(TEMPLATES), tmpl);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(
            obj.pointer("/spec/networkPolicyManagement"),
            Some(&json!("Managed"))
        );
        assert_eq!(
            obj.pointer("/spec/envVarsInjectionPolicy"),
            Some(&json!("Disallowed"))
        );
        assert_eq!(
            obj.pointer("/spec/volumeClaimTemplatesPolicy"),
            Some(&json!("Disallowed"))
        );
    }

    #[test]
    fn claim_lifecycle_gets_shutdown_policy_only_when_lifecycle_is_present() {
        let claims = load(CLAIMS);
        let claim = |spec: Value| {
            json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
                "metadata": {"name": "c"}, "spec": spec})
        };
        let (obj, _, errs) = admit(&claims, claim(json!({"warmPoolRef": {"name": "p"}})));
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(obj.pointer("/spec/lifecycle"), None);
        let (obj, _, errs) = admit(
            &claims,
            claim(json!({"warmPoolRef": {"name": "p"}, "lifecycle": {}})),
        );
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(
            obj.pointer("/spec/lifecycle"),
            Some(&json!({"shutdownPolicy": "Retain"}))
        );
    }

    #[test]
    fn sandbox_without_pod_template_is_a_required_value() {
        let (_, _, errs) = admit(&load(SANDBOXES), sandbox(json!({})));
        let first = errs.first().cloned();
        assert_eq!(
            first,
            Some(FieldError {
                field: "spec.podTemplate".into(),
                reason: FIELD_VALUE_REQUIRED,
                message: "Required value".into()
            })
        );
        // The Sandbox CRD has a CEL rule, so the API server adds its "not checked" note.
        assert_eq!(
            summaries(&errs).get(1).map(String::as_str),
            Some(
                "<nil>: Invalid value: null: some validation rules were not checked because the object was \
                 invalid; correct the existing errors to complete validation"
            )
        );
        assert_eq!(errs.len(), 2, "{errs:?}");
    }

    #[test]
    fn a_kind_without_rules_gets_no_rules_note() {
        let pool = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
            "metadata": {"name": "p"}, "spec": {}});
        let (_, _, errs) = admit(&load(POOLS), pool);
        assert_eq!(
            summaries(&errs),
            ["spec.sandboxTemplateRef: Required value"]
        );
    }

    #[test]
    fn missing_spec_is_reported_at_the_root() {
        let (_, _, errs) = admit(
            &load(CLAIMS),
            json!({"apiVersion": "x", "kind": "SandboxClaim", "metadata": {}}),
        );
        assert_eq!(summaries(&errs), ["spec: Required value"]);
    }

    #[test]
    fn bad_enum_is_an_unsupported_value_listing_the_supported_ones() {
        let spec = json!({"podTemplate": pod_template(), "operatingMode": "Foo"});
        let (_, _, errs) = admit(&load(SANDBOXES), sandbox(spec));
        assert_eq!(
            errs.first(),
            Some(&FieldError {
                field: "spec.operatingMode".into(),
                reason: FIELD_VALUE_NOT_SUPPORTED,
                message: r#"Unsupported value: "Foo": supported values: "Running", "Suspended""#
                    .into()
            })
        );
    }

    #[test]
    fn negative_replicas_breaks_the_minimum() {
        let pool = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
            "metadata": {"name": "p"}, "spec": {"replicas": -1, "sandboxTemplateRef": {"name": "t"}}});
        let (_, _, errs) = admit(&load(POOLS), pool);
        assert_eq!(
            errs,
            [FieldError {
                field: "spec.replicas".into(),
                reason: FIELD_VALUE_INVALID,
                message:
                    "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
                        .into()
            }]
        );
    }

    #[test]
    fn a_string_where_an_integer_goes_is_a_type_error() {
        let pool = json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
            "metadata": {"name": "p"}, "spec": {"replicas": "string", "sandboxTemplateRef": {"name": "t"}}});
        let (_, _, errs) = admit(&load(POOLS), pool);
        assert_eq!(
            errs,
            [FieldError {
                field: "spec.replicas".into(),
                reason: FIELD_VALUE_TYPE_INVALID,
                message: r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#.into()
            }]
        );
    }

    #[test]
    fn integral_floats_pass_as_integers_and_fractions_do_not() {
        let pools = load(POOLS);
        let pool = |r: Value| {
            json!({"apiVersion": "v", "kind": "SandboxWarmPool", "metadata": {},
                "spec": {"replicas": r, "sandboxTemplateRef": {"name": "t"}}})
        };
        assert!(admit(&pools, pool(json!(2.0))).2.is_empty());
        let (_, _, errs) = admit(&pools, pool(json!(-1.5)));
        assert_eq!(
            summaries(&errs),
            [
                r#"spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number""#,
                "spec.replicas: Invalid value: -1.5: spec.replicas in body should be greater than or equal to 0",
            ]
        );
    }

    #[test]
    fn a_bad_date_time_in_shutdown_time_is_a_type_error() {
        let schema = load(SANDBOXES);
        let spec = json!({"podTemplate": pod_template(), "shutdownTime": "tomorrow"});
        let (_, _, errs) = admit(&schema, sandbox(spec));
        assert_eq!(
            errs.first(),
            Some(&FieldError {
                field: "spec.shutdownTime".into(),
                reason: FIELD_VALUE_TYPE_INVALID,
                message: r#"Invalid value: "tomorrow": spec.shutdownTime in body must be of type date-time: "tomorrow""#
                    .into()
            })
        );
        for good in [
            "2026-11-29T10:00:00Z",
            "2026-11-29T10:00:00.123456+01:00",
            "2024-02-29t23:59:59z",
        ] {
            let spec = json!({"podTemplate": pod_template(), "shutdownTime": good});
            assert!(
                admit(&schema, sandbox(spec)).2.is_empty(),
                "{good} should be accepted"
            );
        }
        for bad in [
            "2026-11-29",
            "2026-02-30T10:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T10:00:00",
            "2026-11-29T10:00Z",
        ] {
            let spec = json!({"podTemplate": pod_template(), "shutdownTime": bad});
            assert!(
                !admit(&schema, sandbox(spec)).2.is_empty(),
                "{bad} should be refused"
            );
        }
    }

    #[test]
    fn a_number_in_a_date_time_field_reports_the_go_format_of_the_number() {
        let spec = json!({"podTemplate": pod_template(), "shutdownTime": 5});
        let (_, _, errs) = admit(&load(SANDBOXES), sandbox(spec));
        assert_eq!(
            summaries(&errs).first().map(String::as_str),
            Some(
                r#"spec.shutdownTime: Invalid value: "int64": spec.shutdownTime in body must be of type date-time: "int64""#
            )
        );
    }

    #[test]
    fn unknown_fields_are_pruned_and_reported_with_their_paths() {
        let mut pt = pod_template();
        if let Some(c) = pt
            .pointer_mut("/spec/containers/0")
            .and_then(Value::as_object_mut)
        {
            c.insert("colour".into(), json!("red"));
        }
        let obj = json!({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
            "metadata": {"name": "s", "whatever": 1}, "extra": true,
            "spec": {"podTemplate": pt, "foo": {"bar": 1}}});
        let (obj, unknown, errs) = admit(&load(SANDBOXES), obj);
        assert_eq!(
            unknown,
            [
                "extra",
                "spec.foo",
                "spec.podTemplate.spec.containers[0].colour"
            ]
        );
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(obj.get("extra"), None);
        assert_eq!(obj.pointer("/spec/foo"), None);
        assert_eq!(
            obj.pointer("/spec/podTemplate/spec/containers/0/colour"),
            None
        );
        assert_eq!(
            obj.pointer("/metadata/whatever"),
            Some(&json!(1)),
            "root metadata is the store's"
        );
        assert_eq!(obj.get("kind"), Some(&json!("Sandbox")));
    }

    #[test]
    fn preserve_unknown_fields_keeps_unknown_keys_but_prunes_known_subtrees() {
        let schema = Schema {
            root: json!({"type": "object", "properties": {"free": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}),
            has_rules: false,
        };
        let mut obj = json!({"free": {"anything": {"x": 1}, "known": {"a": "1", "b": 2}}});
        let unknown = schema.prune(&mut obj);
        assert_eq!(unknown, ["free.known.b"]);
        assert_eq!(
            obj,
            json!({"free": {"anything": {"x": 1}, "known": {"a": "1"}}})
        );
    }

    #[test]
    fn nulls_without_defaults_are_dropped_and_nulls_with_defaults_are_defaulted() {
        let spec = json!({"podTemplate": pod_template(), "service": null, "operatingMode": null});
        let (obj, unknown, errs) = admit(&load(SANDBOXES), sandbox(spec));
        assert!(
            unknown.is_empty() && errs.is_empty(),
            "{unknown:?} {errs:?}"
        );
        assert_eq!(obj.pointer("/spec/service"), None);
        assert_eq!(obj.pointer("/spec/operatingMode"), Some(&json!("Running")));
    }

    #[test]
    fn resource_quantities_accept_suffixed_strings_and_integers() {
        let schema = load(SANDBOXES);
        let with_resources = |resources: Value| {
            let mut pt = pod_template();
            if let Some(c) = pt
                .pointer_mut("/spec/containers/0")
                .and_then(Value::as_object_mut)
            {
                c.insert("resources".into(), resources);
            }
            sandbox(json!({"podTemplate": pt}))
        };
        let ok = with_resources(
            json!({"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": 2, "memory": "1e3"}}),
        );
        let (_, _, errs) = admit(&schema, ok);
        assert!(errs.is_empty(), "{errs:?}");

        let (_, _, errs) = admit(
            &schema,
            with_resources(json!({"limits": {"cpu": "5 cores"}})),
        );
        let field = "spec.podTemplate.spec.containers[0].resources.limits.cpu";
        assert_eq!(
            errs.first().map(FieldError::summary),
            Some(format!(
                "{field}: Invalid value: \"5 cores\": {field} in body should match '{QUANTITY_PATTERN}'"
            ))
        );

        let (_, _, errs) = admit(&schema, with_resources(json!({"limits": {"cpu": true}})));
        assert_eq!(
            summaries(&errs),
            [
                format!(r#"{field}: Invalid value: "boolean": {field} in body must be of type integer,string: "boolean""#),
                format!(r#"<nil>: Invalid value: "": "{field}" must validate at least one schema (anyOf)"#),
                format!(r#"{field}: Invalid value: "boolean": {field} in body must be of type integer: "boolean""#),
                "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; \
                 correct the existing errors to complete validation"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn quantity_pattern_follows_the_regular_expression() {
        for ok in [
            "1", "+1", "-1.5", ".5", "1.", "500m", "1Gi", "1Ei", "2E", "1e3", "1E-3", "1.5e+2.5",
            "0.1n",
        ] {
            assert!(is_quantity(ok), "{ok} should match");
        }
        for bad in [
            "", "m", "1 m", "1Ki2", "1e", "1ee3", "1.2.3", "+", "1mi", "1Gb", ".", "1e.", "--1",
        ] {
            assert!(!is_quantity(bad), "{bad} should not match");
        }
    }

    #[test]
    fn condition_patterns_follow_their_regular_expressions() {
        for ok in ["Ready", "a", "Some_Reason:1", "x,y_"] {
            assert!(is_condition_reason(ok), "{ok}");
        }
        for bad in ["", "1abc", "Ready:", "Re ady"] {
            assert!(!is_condition_reason(bad), "{bad}");
        }
        for ok in ["Ready", "example.com/Ready", "a-b.c/x_y.z", "9"] {
            assert!(is_condition_type(ok), "{ok}");
        }
        for bad in ["", "Example.com/Ready", "a/b/c", "/x", "x/", "-a", "a..b/x"] {
            assert!(!is_condition_type(bad), "{bad}");
        }
    }

    #[test]
    fn status_condition_fields_check_length_pattern_and_enum() {
        let cond = json!({"type": "Ready", "status": "Maybe", "reason": "r".repeat(1025),
            "message": "", "lastTransitionTime": "2026-11-29T10:00:00Z"});
        let obj = sandbox(json!({"podTemplate": pod_template()}));
        let mut obj = obj;
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({"conditions": [cond]}));
        }
        let (_, _, errs) = admit(&load(SANDBOXES), obj);
        let got = summaries(&errs);
        assert!(
            got.contains(
                &"status.conditions[0].reason: Too long: may not be more than 1024 bytes"
                    .to_string()
            ),
            "{got:?}"
        );
        assert!(
            got.contains(
                &r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#
                    .to_string()
            ),
            "{got:?}"
        );
    }

    #[test]
    fn duplicate_keys_of_a_map_list_are_reported_at_the_second_occurrence() {
        let pt = json!({"spec": {"containers": [
            {"name": "a", "image": "x", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]},
            {"name": "a", "image": "y"}]}});
        let (_, _, errs) = admit(&load(SANDBOXES), sandbox(json!({"podTemplate": pt})));
        assert_eq!(
            summaries(&errs),
            [
                r#"spec.podTemplate.spec.containers[1]: Duplicate value: {"name":"a"}"#,
                r#"spec.podTemplate.spec.containers[0].ports[1]: Duplicate value: {"containerPort":80,"protocol":"TCP"}"#,
            ]
        );
    }

    #[test]
    fn volume_claim_templates_are_immutable_on_update() {
        let schema = load(SANDBOXES);
        let vct = |size: &str| {
            json!([{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}])
        };
        let with = |v: Option<Value>| {
            let mut spec = json!({"podTemplate": pod_template()});
            if let (Some(v), Some(m)) = (v, spec.as_object_mut()) {
                m.insert("volumeClaimTemplates".into(), v);
            }
            let (obj, _, errs) = admit(&schema, sandbox(spec));
            assert!(errs.is_empty(), "{errs:?}");
            obj
        };
        let none = with(None);
        let one = with(Some(vct("1Gi")));
        let two = with(Some(vct("2Gi")));
        let immutable = [FieldError {
            field: "spec".into(),
            reason: FIELD_VALUE_INVALID,
            message: r#"Invalid value: "object": volumeClaimTemplates is immutable"#.into(),
        }];
        assert_eq!(schema.validate_update(&none, &one), immutable, "adding");
        assert_eq!(schema.validate_update(&one, &none), immutable, "removing");
        assert_eq!(schema.validate_update(&one, &two), immutable, "changing");
        assert!(schema.validate_update(&one, &one).is_empty(), "unchanged");
        assert!(
            schema.validate_update(&none, &none).is_empty(),
            "absent on both sides"
        );
        let mut other_change = one.clone();
        if let Some(m) = other_change
            .pointer_mut("/spec")
            .and_then(Value::as_object_mut)
        {
            m.insert("operatingMode".into(), json!("Suspended"));
        }
        assert!(
            schema.validate_update(&one, &other_change).is_empty(),
            "other fields may change"
        );
    }

    #[test]
    fn transition_rules_are_not_checked_when_the_new_object_is_invalid() {
        let schema = load(SANDBOXES);
        let old = sandbox(json!({"podTemplate": pod_template()}));
        let new = sandbox(json!({"volumeClaimTemplates": []}));
        assert!(schema.validate_update(&old, &new).is_empty());
        assert!(
            summaries(&schema.validate(&new))
                .iter()
                .any(|s| s.contains("rules were not checked"))
        );
    }

    #[test]
    fn scale_replicas_must_fit_in_int32() {
        let obj = json!({"spec": {"replicas": 3_000_000_000_i64}, "status": {"replicas": -2, "selector": 5}});
        let errs = validate_scale(
            &obj,
            Some(".spec.replicas"),
            ".status.replicas",
            Some(".status.selector"),
        );
        assert_eq!(
            summaries(&errs),
            [
                ".spec.replicas: Invalid value: 3000000000: should be less than or equal to 2147483647",
                ".status.replicas: Invalid value: -2: should be a non-negative integer",
                r#".status.selector: Invalid value: "": .status.selector accessor error: 5 is of the type int64, expected string"#,
            ]
        );
        assert!(
            validate_scale(
                &json!({"spec": {}}),
                Some(".spec.replicas"),
                ".status.replicas",
                None
            )
            .is_empty()
        );
    }

    #[test]
    fn go_formatting_matches_fmt_and_encoding_json() {
        assert_eq!(
            go_quote("a\"b\\c\n\u{1}é\u{a0}"),
            "\"a\\\"b\\\\c\\n\\x01é\\u00a0\""
        );
        assert_eq!(go_float(-1.5), "-1.5");
        assert_eq!(go_float(1e20), "100000000000000000000");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(123.456e-10), "1.23456e-08");
        assert_eq!(
            go_json(&json!({"b": [1, 2.5, null], "a": "<&>"})),
            r#"{"a":"\u003c\u0026\u003e","b":[1,2.5,null]}"#
        );
        assert_eq!(go_json(&json!(1e-7)), "1e-7");
        assert_eq!(go_json(&json!(1e21)), "1e+21");
        assert_eq!(go_json(&json!(0.000001)), "0.000001");
    }

    #[test]
    fn summary_joins_field_and_message() {
        let e = FieldError::required("spec.podTemplate");
        assert_eq!(e.summary(), "spec.podTemplate: Required value");
    }

    /// Arbitrary JSON, with keys the schemas know so the walks go deep.
    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|f| json!(f)),
            ".{0,12}".prop_map(Value::String),
            prop::sample::select(vec![
                "Running",
                "500m",
                "1Gi",
                "2026-11-29T10:00:00Z",
                "main",
                "TCP"
            ])
            .prop_map(|s| Value::String(s.to_string())),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            let keys = prop::sample::select(vec![
                "spec",
                "podTemplate",
                "containers",
                "name",
                "image",
                "ports",
                "containerPort",
                "protocol",
                "resources",
                "limits",
                "cpu",
                "volumeClaimTemplates",
                "replicas",
                "lifecycle",
                "status",
                "conditions",
                "type",
                "reason",
                "metadata",
                "x",
            ]);
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((keys, inner), 0..5).prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest! {
        #[test]
        fn arbitrary_json_never_panics(old in arb_json(), new in arb_json()) {
            for json in [SANDBOXES, TEMPLATES, POOLS, CLAIMS] {
                let schema = load(json);
                for v in [&old, &new, &json!({"spec": new.clone()}), &json!({"spec": {"podTemplate": {"spec": new.clone()}}})] {
                    let mut v = v.clone();
                    let _ = schema.validate(&v);
                    schema.prune(&mut v);
                    schema.apply_defaults(&mut v);
                    let errs = schema.validate(&v);
                    prop_assert!(errs.iter().all(|e| !e.field.is_empty() && !e.message.is_empty()));
                    let _ = schema.validate_update(&old, &v);
                    let _ = validate_scale(&v, Some(".spec.replicas"), ".status.replicas", Some(".status.selector"));
                }
            }
        }
    }
}
