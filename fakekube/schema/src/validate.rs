//! The checks of kube-openapi's `SchemaValidator` in its order (type, `allOf`, `anyOf`,
//! `oneOf`, `not`, string, format, number, list, `enum`, object), turned into field errors as
//! apiextensions does, with their messages; then the checks of embedded resources.

use serde_json::{Map, Value};

use super::field_error::{
    FIELD_VALUE_NOT_SUPPORTED, FIELD_VALUE_TOO_LONG, FIELD_VALUE_TOO_MANY, FieldError,
};
use super::formats;
use super::node::{Additional, additional, child, flag, items, properties, str_of};
use super::pattern;
use crate::go_format::{go_float, go_json, go_quote, go_v};

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
pub(super) fn schema_types(s: &Value) -> Vec<&str> {
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
pub(super) fn validate_node(data: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    validate_with(data, None, s, path, out);
}

/// [`validate_node`] given the node's `old` value when that passed these checks: a property
/// equal to its old value is not checked again (no check reads beyond its own value), except
/// the root's `metadata`, which the store changed after the old object was checked.
pub(super) fn validate_with(
    data: &Value,
    old: Option<&Value>,
    s: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
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
    check_all_of(data, s, path, out);
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
    check_one_of(data, s, path, out);
    check_not(data, s, path, out);
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
        check_object(map, old.and_then(Value::as_object), s, path, out);
    }
}

/// Whether the property `key` of the object at `path` equals its old value, which passed.
fn unchanged(old: Option<&Map<String, Value>>, path: &str, key: &str, v: &Value) -> bool {
    !(path.is_empty() && key == "metadata") && old.and_then(|o| o.get(key)) == Some(v)
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
    if let Some(p) = str_of(s, "pattern")
        && pattern::compile(p).is_ok_and(|re| !re.is_match(text))
    {
        let pattern = p;
        out.push(FieldError::invalid(
            field,
            &go_quote(text),
            &format!("{path} in body should match '{pattern}'"),
        ));
    }
}

/// The string format check.
fn check_format(text: &str, format: &str, path: &str, field: &str, out: &mut Vec<FieldError>) {
    if format.is_empty() {
        return;
    }
    if formats::check(format, text) == Some(false) {
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
    if let Some(factor) = s
        .get("multipleOf")
        .and_then(Value::as_f64)
        .filter(|f| *f > 0.0)
    {
        let x = data.as_f64().unwrap_or(0.0);
        let q = x / factor;
        if (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
            out.push(FieldError::invalid(
                field,
                &bad,
                &format!(
                    "{path} in body should be a multiple of {}",
                    go_float(factor)
                ),
            ));
        }
    }
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

/// Extra keys under `additionalProperties`, the properties, `required`, then the property
/// counts.
fn check_object(
    map: &Map<String, Value>,
    old: Option<&Map<String, Value>>,
    s: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let props = properties(s);
    let count = u64::try_from(map.len()).unwrap_or(u64::MAX);
    if let Some(max) = s.get("maxProperties").and_then(Value::as_u64)
        && count > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        out.push(FieldError::new(
            field_of(path),
            FIELD_VALUE_TOO_MANY,
            format!("Too many: {count}: must have at most {max} {unit}"),
        ));
    }
    if let Some(min) = s.get("minProperties").and_then(Value::as_u64)
        && count < min
    {
        out.push(FieldError::invalid(
            field_of(path),
            &count.to_string(),
            &format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Additional::Schema(a) = additional(s) {
        for (k, v) in map {
            if props.is_none_or(|p| !p.contains_key(k)) && !unchanged(old, path, k, v) {
                let old_v = old.and_then(|o| o.get(k));
                validate_with(v, old_v, a, &format!("{path}.{k}"), out);
            }
        }
    }
    if let Some(props) = props {
        for (name, prop) in props {
            if let Some(v) = map.get(name)
                && !unchanged(old, path, name, v)
            {
                let old_v = old.and_then(|o| o.get(name));
                validate_with(v, old_v, prop, &child(path, name), out);
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
pub(super) fn loose_equal(a: &Value, b: &Value) -> bool {
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

/// The branches of a composition keyword (`allOf`, `oneOf`).
fn branches<'a>(s: &'a Value, key: &str) -> &'a [Value] {
    s.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `allOf`: every branch's errors, and the composite error when any failed.
fn check_all_of(data: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let mut errs = Vec::new();
    for b in branches(s, "allOf") {
        validate_node(data, b, path, &mut errs);
    }
    if !errs.is_empty() {
        let detail = format!("{} must validate all the schemas (allOf)", go_quote(path));
        out.push(FieldError::invalid("", "\"\"", &detail));
        out.extend(errs);
    }
}

/// `oneOf`: exactly one branch must hold.
fn check_one_of(data: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let list = branches(s, "oneOf");
    if list.is_empty() {
        return;
    }
    let mut first_failure = None;
    let mut valid = 0;
    for b in list {
        let mut errs = Vec::new();
        validate_node(data, b, path, &mut errs);
        if errs.is_empty() {
            valid += 1;
        } else {
            first_failure.get_or_insert(errs);
        }
    }
    match valid {
        1 => {}
        0 => {
            let detail = format!(
                "{} must validate one and only one schema (oneOf). Found none valid",
                go_quote(path)
            );
            out.push(FieldError::invalid("", "\"\"", &detail));
            out.extend(first_failure.unwrap_or_default());
        }
        n => {
            let detail = format!(
                "{} must validate one and only one schema (oneOf). Found {n} valid alternatives",
                go_quote(path)
            );
            out.push(FieldError::invalid("", "\"\"", &detail));
        }
    }
}

/// `not`: the branch must not hold.
fn check_not(data: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let Some(not) = s.get("not").filter(|n| n.is_object()) else {
        return;
    };
    let mut errs = Vec::new();
    validate_node(data, not, path, &mut errs);
    if errs.is_empty() {
        let detail = format!("{} must not validate the schema (not)", go_quote(path));
        out.push(FieldError::invalid("", "\"\"", &detail));
    }
}

/// The checks the API server makes of embedded resources (`x-kubernetes-embedded-resource`)
/// below the root: `apiVersion` and `kind` set, `metadata` an object with a valid name.
/// Properties equal to their value in `old` (which passed) are not walked again.
pub(super) fn embedded_resources(
    data: &Value,
    old: Option<&Value>,
    s: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    match data {
        Value::Object(map) => {
            if !path.is_empty() && flag(s, "x-kubernetes-embedded-resource") {
                for key in ["apiVersion", "kind"] {
                    if map
                        .get(key)
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        out.push(FieldError::new(
                            &child(path, key),
                            super::field_error::FIELD_VALUE_REQUIRED,
                            "Required value: must not be empty".to_string(),
                        ));
                    }
                }
                match map.get("metadata") {
                    None | Some(Value::Object(_)) => {}
                    Some(other) => out.push(FieldError::invalid(
                        &child(path, "metadata"),
                        &go_v(other),
                        "must be an object",
                    )),
                }
                if let Some(name) = map
                    .get("metadata")
                    .and_then(|m| m.get("name"))
                    .and_then(Value::as_str)
                    && let Some(cause) = crate::meta::validate_name(name, false)
                {
                    out.push(FieldError::new(
                        &child(path, "metadata.name"),
                        super::field_error::FIELD_VALUE_INVALID,
                        cause.message,
                    ));
                }
            }
            let old_map = old.and_then(Value::as_object);
            for (k, v) in map {
                if (path.is_empty() && k == "metadata") || unchanged(old_map, path, k, v) {
                    continue;
                }
                let old_v = old_map.and_then(|o| o.get(k));
                if let Some(prop) = properties(s).and_then(|p| p.get(k)) {
                    embedded_resources(v, old_v, prop, &child(path, k), out);
                } else if let Additional::Schema(a) = additional(s) {
                    embedded_resources(v, old_v, a, &format!("{path}[{k}]"), out);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item) = items(s) {
                for (i, v) in list.iter().enumerate() {
                    embedded_resources(v, None, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}
