//! The checks the API server makes of a CRD version's schema when the CRD is written: the
//! OpenAPI keywords CRDs may not use, the rules of structural schemas (a type on every
//! specified node, nothing structural inside `allOf`/`anyOf`/`oneOf`/`not`, `metadata`
//! restricted to `name` and `generateName`), the Kubernetes extensions used where they
//! apply, `pattern`s that compile, defaults that validate and are pruned, and CEL rules that
//! compile; a rule fakekube cannot evaluate is refused here, named.
//!
//! Paths are `field.Path`s relative to `openAPIV3Schema`: `properties[spec].items.type`.

use serde_json::{Map, Value};

use super::cel;
use super::field_error::{
    FIELD_VALUE_FORBIDDEN, FIELD_VALUE_NOT_SUPPORTED, FIELD_VALUE_REQUIRED, FieldError,
};
use super::node::{flag, str_of};
use super::pattern;
use super::pruning;
use super::validate::validate_node;
use crate::go_format::{go_json, go_quote, go_v};

/// Where a node sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// `openAPIV3Schema` itself.
    Root,
    /// A property, an item or an additional property of the structural schema.
    Field(Context),
    /// Inside `allOf`, `anyOf`, `oneOf` or `not`: value validations only.
    Nested,
}

/// What kind of field a structural node is, for the wording of a missing type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Property,
    Item,
    Additional,
}

const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// `parent.name`, or `name` at the root.
fn at(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

fn forbidden(path: &str, detail: &str) -> FieldError {
    FieldError::new(path, FIELD_VALUE_FORBIDDEN, format!("Forbidden: {detail}"))
}

fn required(path: &str, detail: &str) -> FieldError {
    FieldError::new(
        path,
        FIELD_VALUE_REQUIRED,
        format!("Required value: {detail}"),
    )
}

fn not_supported(path: &str, value: &str, supported: &[&str]) -> FieldError {
    let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    FieldError::new(
        path,
        FIELD_VALUE_NOT_SUPPORTED,
        format!(
            "Unsupported value: {}: supported values: {}",
            go_quote(value),
            list.join(", ")
        ),
    )
}

/// What is wrong with a CRD version's `openAPIV3Schema`.
pub(crate) fn check(root: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    let Some(map) = root.as_object() else {
        out.push(FieldError::invalid(
            "",
            &go_v(root),
            "must be a schema object",
        ));
        return out;
    };
    match map.get("type").and_then(Value::as_str) {
        None | Some("") => out.push(required("type", "must not be empty at the root")),
        Some("object") => {}
        Some(other) => out.push(FieldError::invalid(
            "type",
            &go_quote(other),
            "must be object at the root",
        )),
    }
    node(root, "", Level::Root, &mut out);
    resource_meta(root, "", &mut out);
    out
}

/// The checks of one node and of the nodes below it.
fn node(s: &Value, path: &str, level: Level, out: &mut Vec<FieldError>) {
    let Some(m) = s.as_object() else {
        out.push(FieldError::invalid(
            path,
            &go_v(s),
            "must be a schema object",
        ));
        return;
    };
    keywords(m, path, out);
    match level {
        Level::Nested => nested(m, path, out),
        Level::Root | Level::Field(_) => structural(m, s, path, level, out),
    }
    if let Some(p) = m.get("pattern").and_then(Value::as_str)
        && let Err(e) = pattern::compile(p)
    {
        out.push(FieldError::invalid(
            &at(path, "pattern"),
            &go_quote(p),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
    let child_level = |c| {
        if level == Level::Nested {
            Level::Nested
        } else {
            Level::Field(c)
        }
    };
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            node(
                v,
                &format!("{}[{k}]", at(path, "properties")),
                child_level(Context::Property),
                out,
            );
        }
    }
    if let Some(a) = m.get("additionalProperties").filter(|a| a.is_object()) {
        node(
            a,
            &at(path, "additionalProperties"),
            child_level(Context::Additional),
            out,
        );
    }
    match m.get("items") {
        Some(Value::Array(_)) => out.push(forbidden(
            &at(path, "items"),
            "items must be a schema object and not an array",
        )),
        Some(item) => node(item, &at(path, "items"), child_level(Context::Item), out),
        None => {}
    }
    let int_or_string_pair = flag(s, "x-kubernetes-int-or-string")
        && m.get("anyOf").is_some_and(is_int_or_string_any_of);
    for key in ["allOf", "anyOf", "oneOf"] {
        if key == "anyOf" && int_or_string_pair {
            continue;
        }
        for (i, b) in m
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            node(b, &format!("{}[{i}]", at(path, key)), Level::Nested, out);
        }
    }
    if let Some(n) = m.get("not") {
        node(n, &at(path, "not"), Level::Nested, out);
    }
    if level != Level::Nested {
        rules(m, s, path, out);
    }
}

/// The OpenAPI keywords CRD schemas may not use at all.
fn keywords(m: &Map<String, Value>, path: &str, out: &mut Vec<FieldError>) {
    for (key, detail) in [
        ("$ref", "$ref is not supported"),
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
    ] {
        if m.contains_key(key) {
            out.push(forbidden(&at(path, key), detail));
        }
    }
    if m.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
        out.push(forbidden(
            &at(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    match m.get("type").and_then(Value::as_str) {
        Some("null") => out.push(forbidden(
            &at(path, "type"),
            "type cannot be set to null, use nullable as an alternative",
        )),
        Some(t) if !t.is_empty() && !TYPES.contains(&t) => {
            out.push(not_supported(&at(path, "type"), t, &TYPES));
        }
        _ => {}
    }
    if m.get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(true))
        && m.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty())
    {
        out.push(forbidden(
            &at(path, "additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
}

/// Whether `anyOf` is the int-or-string pair a schema with `x-kubernetes-int-or-string` may
/// carry.
fn is_int_or_string_any_of(v: &Value) -> bool {
    let pair = |a: &Value| {
        a.as_array().is_some_and(|l| {
            l.len() == 2
                && l.first().and_then(|x| str_of(x, "type")) == Some("integer")
                && l.get(1).and_then(|x| str_of(x, "type")) == Some("string")
        })
    };
    pair(v)
}

/// The rules of a node of the structural schema.
fn structural(
    m: &Map<String, Value>,
    s: &Value,
    path: &str,
    level: Level,
    out: &mut Vec<FieldError>,
) {
    let ty = str_of(s, "type").unwrap_or("");
    let int_or_string = flag(s, "x-kubernetes-int-or-string");
    let preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
    if let Level::Field(context) = level
        && ty.is_empty()
        && !int_or_string
        && !preserve
    {
        let detail = match context {
            Context::Property => "must not be empty for specified object fields",
            Context::Item => "must not be empty for specified array items",
            Context::Additional => "must not be empty for specified additionalProperties",
        };
        out.push(required(&at(path, "type"), detail));
    }
    if int_or_string && !ty.is_empty() {
        out.push(FieldError::invalid(
            &at(path, "type"),
            &go_quote(ty),
            "must be empty if x-kubernetes-int-or-string is true",
        ));
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        out.push(FieldError::invalid(
            &at(path, "x-kubernetes-preserve-unknown-fields"),
            "false",
            "must be true or undefined",
        ));
    }
    if flag(s, "x-kubernetes-embedded-resource") {
        if ty != "object" {
            out.push(FieldError::invalid(
                &at(path, "type"),
                &go_quote(ty),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
        let has_props = m
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if !has_props && !preserve {
            out.push(required(
                &at(path, "properties"),
                "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            ));
        }
        resource_meta(s, path, out);
    }
    list_and_map_types(m, s, ty, path, out);
    if let Some(default) = m.get("default") {
        check_default(default, s, path, out);
    }
}

/// `metadata`, `apiVersion` and `kind` of the root and of embedded resources.
fn resource_meta(s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let Some(props) = s.get("properties").and_then(Value::as_object) else {
        return;
    };
    let props_path = at(path, "properties");
    if let Some(md) = props.get("metadata") {
        let md_path = format!("{props_path}[metadata]");
        match str_of(md, "type") {
            Some("object") | None => {}
            Some(other) => out.push(FieldError::invalid(
                &at(&md_path, "type"),
                &go_quote(other),
                "must be object",
            )),
        }
        let others = md
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.keys().any(|k| k != "name" && k != "generateName"));
        let extra_keys = md.as_object().is_some_and(|o| {
            o.keys().any(|k| {
                !matches!(
                    k.as_str(),
                    "type" | "properties" | "description" | "x-kubernetes-validations"
                )
            })
        });
        if others || extra_keys {
            out.push(forbidden(
                &md_path,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    for key in ["apiVersion", "kind"] {
        if let Some(t) = props.get(key).and_then(|p| str_of(p, "type"))
            && t != "string"
        {
            out.push(FieldError::invalid(
                &at(&format!("{props_path}[{key}]"), "type"),
                &go_quote(t),
                "must be string",
            ));
        }
    }
}

/// `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and `x-kubernetes-map-type`.
fn list_and_map_types(
    m: &Map<String, Value>,
    s: &Value,
    ty: &str,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let list_type = str_of(s, "x-kubernetes-list-type");
    let keys: Vec<&str> = m
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(lt) = list_type {
        if !matches!(lt, "atomic" | "set" | "map") {
            out.push(not_supported(
                &at(path, "x-kubernetes-list-type"),
                lt,
                &["atomic", "map", "set"],
            ));
        }
        if ty != "array" {
            out.push(FieldError::invalid(
                &at(path, "type"),
                &go_quote(ty),
                "must be array if x-kubernetes-list-type is specified",
            ));
        }
    }
    let item = m.get("items").filter(|i| i.is_object());
    let scalar = |t: Option<&str>| matches!(t, Some("string" | "integer" | "number" | "boolean"));
    match list_type {
        Some("map") => {
            if keys.is_empty() {
                out.push(required(
                    &at(path, "x-kubernetes-list-map-keys"),
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            if let Some(item) = item {
                if str_of(item, "type") != Some("object") {
                    out.push(FieldError::invalid(
                        &at(path, "items.type"),
                        &go_quote(str_of(item, "type").unwrap_or("")),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                }
                for k in &keys {
                    let field = format!("{}[{k}]", at(path, "items.properties"));
                    match item.get("properties").and_then(|p| p.get(*k)) {
                        None => out.push(required(
                            &field,
                            "entries in x-kubernetes-list-map-keys must be properties of the items",
                        )),
                        Some(p)
                            if !scalar(str_of(p, "type"))
                                && !flag(p, "x-kubernetes-int-or-string") =>
                        {
                            out.push(FieldError::invalid(
                                &at(&field, "type"),
                                &go_quote(str_of(p, "type").unwrap_or("")),
                                "must be a scalar type if parent array's x-kubernetes-list-type is map",
                            ));
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        Some("set") => {
            if let Some(item) = item {
                let t = str_of(item, "type");
                let atomic = str_of(item, "x-kubernetes-map-type") == Some("atomic")
                    || str_of(item, "x-kubernetes-list-type") == Some("atomic");
                if !scalar(t) && !atomic && !flag(item, "x-kubernetes-int-or-string") {
                    let which = if t == Some("array") {
                        "x-kubernetes-list-type"
                    } else {
                        "x-kubernetes-map-type"
                    };
                    out.push(FieldError::invalid(
                        &at(path, &format!("items.{which}")),
                        "nil",
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
            }
        }
        _ => {
            if !keys.is_empty() {
                out.push(FieldError::invalid(
                    &at(path, "x-kubernetes-list-type"),
                    &go_quote(list_type.unwrap_or("")),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                ));
            }
        }
    }
    if let Some(mt) = str_of(s, "x-kubernetes-map-type") {
        if !matches!(mt, "granular" | "atomic") {
            out.push(not_supported(
                &at(path, "x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
        if ty != "object" {
            out.push(FieldError::invalid(
                &at(path, "type"),
                &go_quote(ty),
                "must be object if x-kubernetes-map-type is specified",
            ));
        }
    }
}

/// A `default` must be pruned (no unknown fields) and valid against its node.
fn check_default(default: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let field = at(path, "default");
    if default.is_null() && flag(s, "nullable") {
        return;
    }
    let mut pruned = default.clone();
    let mut unknown = Vec::new();
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    pruning::prune_node(
        &mut pruned,
        Some(s),
        embedded,
        &mut String::new(),
        &mut unknown,
    );
    if !unknown.is_empty() {
        out.push(FieldError::invalid(
            &field,
            &go_json(default),
            "must not have unknown fields",
        ));
        return;
    }
    let mut errs = Vec::new();
    validate_node(default, s, &field, &mut errs);
    for mut e in errs {
        if e.field == "<nil>" {
            e.field = field.clone();
        }
        out.push(e);
    }
}

/// Inside `allOf`, `anyOf`, `oneOf` and `not`: only value validations.
fn nested(m: &Map<String, Value>, path: &str, out: &mut Vec<FieldError>) {
    for (key, detail) in [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be undefined to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        ),
        (
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        ),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ] {
        let set = match m.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b || key == "x-kubernetes-preserve-unknown-fields",
            Some(Value::String(s)) => !s.is_empty() || key == "x-kubernetes-list-type",
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if set {
            out.push(forbidden(&at(path, key), detail));
        }
    }
}

/// Each `x-kubernetes-validations` rule: set, compiling, with a supported reason, a one-line
/// message, a compiling `messageExpression` and a `fieldPath` that exists.
fn rules(m: &Map<String, Value>, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let Some(list) = m.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
    for (i, rule) in list.iter().enumerate() {
        let base = format!("{}[{i}]", at(path, "x-kubernetes-validations"));
        match str_of(rule, "rule") {
            None | Some("") => out.push(FieldError::new(
                &at(&base, "rule"),
                FIELD_VALUE_REQUIRED,
                "Required value".to_string(),
            )),
            Some(text) => match cel::compile(text) {
                Ok(compiled) => {
                    if flag(rule, "optionalOldSelf") && !compiled.uses_old_self {
                        out.push(FieldError::invalid(
                            &at(&base, "optionalOldSelf"),
                            "true",
                            "may not be set if oldSelf is not used in rule",
                        ));
                    }
                }
                Err(e) => out.push(FieldError::invalid(
                    &at(&base, "rule"),
                    &go_quote(text),
                    &format!("compilation failed: {e}"),
                )),
            },
        }
        if let Some(expr) = rule.get("messageExpression") {
            match expr.as_str() {
                Some(t) if t.trim().is_empty() => out.push(required(
                    &at(&base, "messageExpression"),
                    "messageExpression must be non-empty if specified",
                )),
                Some(t) => {
                    if let Err(e) = cel::compile(t) {
                        out.push(FieldError::invalid(
                            &at(&base, "messageExpression"),
                            &go_quote(t),
                            &format!("messageExpression compilation failed: {e}"),
                        ));
                    }
                }
                None => {}
            }
        }
        if let Some(msg) = str_of(rule, "message")
            && msg.contains('\n')
        {
            out.push(FieldError::invalid(
                &at(&base, "message"),
                &go_quote(msg),
                "message must not contain line breaks",
            ));
        }
        if let Some(reason) = str_of(rule, "reason")
            && !matches!(
                reason,
                "FieldValueInvalid"
                    | "FieldValueForbidden"
                    | "FieldValueRequired"
                    | "FieldValueDuplicate"
            )
        {
            out.push(not_supported(
                &at(&base, "reason"),
                reason,
                &[
                    "FieldValueDuplicate",
                    "FieldValueForbidden",
                    "FieldValueInvalid",
                    "FieldValueRequired",
                ],
            ));
        }
        if let Some(fp) = str_of(rule, "fieldPath")
            && !field_path_exists(s, fp)
        {
            out.push(FieldError::invalid(
                &at(&base, "fieldPath"),
                &go_quote(fp),
                "fieldPath must be a valid path",
            ));
        }
    }
}

/// Whether a rule's `fieldPath` (`.a.b`, `.a['k']`, `.list[0]`) names a field of the schema.
fn field_path_exists(s: &Value, fp: &str) -> bool {
    let mut node = s;
    let mut rest = fp;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let n = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..n];
            match node.get("properties").and_then(|p| p.get(key)) {
                Some(next) => node = next,
                None => return false,
            }
            rest = &r[n..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return false;
            };
            let key = r[..end].trim_matches(['\'', '"']);
            node = if let Some(p) = node.get("properties").and_then(|p| p.get(key)) {
                p
            } else if let Some(a) = node.get("additionalProperties").filter(|a| a.is_object()) {
                a
            } else if let Some(i) = node.get("items").filter(|i| i.is_object()) {
                i
            } else {
                return false;
            };
            rest = &r[end + 1..];
        } else {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The errors as `field: message`.
    fn errors(schema: Value) -> Vec<String> {
        check(&schema)
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect()
    }

    #[test]
    fn a_structural_schema_with_every_extension_passes() {
        let schema = json!({
            "type": "object",
            "properties": {
                "metadata": { "type": "object", "properties": { "name": { "type": "string", "maxLength": 20 } } },
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [
                        { "rule": "self.min <= self.max", "message": "min must not exceed max", "fieldPath": ".min", "reason": "FieldValueInvalid" },
                        { "rule": "self.max >= oldSelf.max", "messageExpression": "'max may not shrink below ' + string(oldSelf.max)" },
                    ],
                    "properties": {
                        "min": { "type": "integer", "default": 0, "minimum": 0 },
                        "max": { "type": "integer", "default": 10 },
                        "port": { "x-kubernetes-int-or-string": true, "anyOf": [ { "type": "integer" }, { "type": "string" } ] },
                        "mode": { "type": "string", "enum": ["a", "b"], "pattern": "^[a-z]$" },
                        "tags": { "type": "array", "items": { "type": "string" }, "x-kubernetes-list-type": "set" },
                        "ports": { "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                            "items": { "type": "object", "required": ["name"], "properties": { "name": { "type": "string" } } } },
                        "labels": { "type": "object", "additionalProperties": { "type": "string" }, "x-kubernetes-map-type": "atomic" },
                        "free": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                        "template": { "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true },
                        "either": { "type": "object", "properties": { "a": { "type": "string" }, "b": { "type": "string" } },
                            "oneOf": [ { "required": ["a"] }, { "required": ["b"] } ], "not": { "required": ["c"] } },
                    },
                },
            },
        });
        assert_eq!(errors(schema), Vec::<String>::new());
    }

    #[test]
    fn what_structural_schemas_forbid_is_refused_with_the_api_servers_wording() {
        let schema = json!({
            "type": "object",
            "properties": {
                "metadata": { "type": "object", "properties": { "labels": { "type": "object" } } },
                "spec": {
                    "type": "object",
                    "properties": {
                        "untyped": { "description": "no type" },
                        "items": { "type": "array", "items": { "properties": {} } },
                        "ref": { "$ref": "#/x", "type": "string" },
                        "unique": { "type": "array", "uniqueItems": true, "items": { "type": "string" } },
                        "nested": { "type": "string", "anyOf": [ { "type": "string", "description": "d" } ] },
                        "nullable": { "type": "null" },
                        "both": { "type": "object", "properties": { "a": { "type": "string" } }, "additionalProperties": { "type": "string" } },
                        "keyless": { "type": "array", "x-kubernetes-list-type": "map", "items": { "type": "object" } },
                        "badpattern": { "type": "string", "pattern": "(a" },
                        "baddefault": { "type": "integer", "minimum": 1, "default": 0 },
                        "prunedefault": { "type": "object", "properties": { "a": { "type": "string" } }, "default": { "b": "x" } },
                    },
                },
            },
        });
        let got = errors(schema);
        for want in [
            "properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            "properties[spec].properties[untyped].type: Required value: must not be empty for specified object fields",
            "properties[spec].properties[items].items.type: Required value: must not be empty for specified array items",
            "properties[spec].properties[ref].$ref: Forbidden: $ref is not supported",
            "properties[spec].properties[unique].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            "properties[spec].properties[nested].anyOf[0].type: Forbidden: must be empty to be structural",
            "properties[spec].properties[nested].anyOf[0].description: Forbidden: must be empty to be structural",
            "properties[spec].properties[nullable].type: Forbidden: type cannot be set to null, use nullable as an alternative",
            "properties[spec].properties[both].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            "properties[spec].properties[keyless].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            "properties[spec].properties[badpattern].pattern: Invalid value: \"(a\": must be a valid regular expression, but isn't: error parsing regexp: unclosed group",
            "properties[spec].properties[baddefault].default: Invalid value: 0: properties[spec].properties[baddefault].default in body should be greater than or equal to 1",
            "properties[spec].properties[prunedefault].default: Invalid value: {\"b\":\"x\"}: must not have unknown fields",
        ] {
            assert!(
                got.iter().any(|g| g == want),
                "missing {want:?} in {got:#?}"
            );
        }
    }

    #[test]
    fn a_rule_that_does_not_compile_or_that_fakekube_cannot_evaluate_is_refused_named() {
        let schema = json!({
            "type": "object",
            "properties": { "spec": { "type": "object", "x-kubernetes-validations": [
                { "rule": "self.a == b" },
                { "rule": "isSemver(self.v)" },
                { "rule": "self.a == 1", "reason": "Bogus", "message": "two\nlines" },
                { "rule": "self.a == 1", "fieldPath": ".nope" },
                { "rule": "self.a == 1", "optionalOldSelf": true },
            ], "properties": { "a": { "type": "integer" }, "v": { "type": "string" } } } },
        });
        assert_eq!(
            errors(schema),
            [
                "properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"self.a == b\": compilation failed: ERROR: <input>:1:11: undeclared reference to 'b' (in container '')\n | self.a == b\n | ..........^",
                "properties[spec].x-kubernetes-validations[1].rule: Invalid value: \"isSemver(self.v)\": compilation failed: fakekube does not implement the CEL function 'isSemver' (Kubernetes' semver library), so it cannot evaluate this rule",
                "properties[spec].x-kubernetes-validations[2].message: Invalid value: \"two\\nlines\": message must not contain line breaks",
                "properties[spec].x-kubernetes-validations[2].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
                "properties[spec].x-kubernetes-validations[3].fieldPath: Invalid value: \".nope\": fieldPath must be a valid path",
                "properties[spec].x-kubernetes-validations[4].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule",
            ]
        );
    }

    #[test]
    fn the_root_must_be_an_object() {
        assert_eq!(
            errors(json!({ "properties": {} })),
            ["type: Required value: must not be empty at the root"]
        );
        assert_eq!(
            errors(json!({ "type": "string" })),
            ["type: Invalid value: \"string\": must be object at the root"]
        );
    }
}
