//! Checks cassette lines against `cassette.schema.json`, with the part of JSON Schema it uses:
//! `$ref` into `$defs`, `oneOf`, `const`, `enum`, `type`, `properties`, `required`,
//! `additionalProperties`, `minimum` and `maximum`.

use serde_json::Value;

/// The schema beside the crate.
pub fn schema() -> Value {
    let text = include_str!("../../cassette.schema.json");
    serde_json::from_str(text).expect("cassette.schema.json is JSON")
}

/// Checks every line of `cassette`: the first against the header, the rest against a record;
/// the errors say which line and where.
pub fn check_cassette(schema: &Value, cassette: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for (index, line) in cassette.lines().enumerate() {
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                errors.push(format!("line {}: not JSON: {e}", index + 1));
                continue;
            }
        };
        let def = if index == 0 { "header" } else { "record" };
        let node = json_ref(schema, &format!("#/$defs/{def}"));
        for e in check(schema, node, &value, "") {
            errors.push(format!("line {}: {e}", index + 1));
        }
    }
    errors
}

fn json_ref<'a>(schema: &'a Value, reference: &str) -> &'a Value {
    let name = reference
        .strip_prefix("#/$defs/")
        .expect("only #/$defs/ references");
    &schema["$defs"][name]
}

/// The ways `value` breaks `node`, each with its JSON pointer.
fn check(schema: &Value, node: &Value, value: &Value, at: &str) -> Vec<String> {
    if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
        return check(schema, json_ref(schema, reference), value, at);
    }
    if let Some(options) = node.get("oneOf").and_then(Value::as_array) {
        let passing = options
            .iter()
            .filter(|o| check(schema, o, value, at).is_empty())
            .count();
        return if passing == 1 {
            Vec::new()
        } else {
            vec![format!("{at}: matches {passing} of oneOf, not 1")]
        };
    }
    let mut errors = Vec::new();
    if let Some(expected) = node.get("const")
        && expected != value
    {
        errors.push(format!("{at}: {value} is not {expected}"));
    }
    if let Some(options) = node.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        errors.push(format!("{at}: {value} is not one of {options:?}"));
    }
    if let Some(kind) = node.get("type").and_then(Value::as_str) {
        let ok = match kind {
            "object" => value.is_object(),
            "string" => value.is_string(),
            "integer" => value.is_u64() || value.is_i64(),
            "number" => value.is_number(),
            "array" => value.is_array(),
            "boolean" => value.is_boolean(),
            other => panic!("the checker does not know type {other}"),
        };
        if !ok {
            errors.push(format!("{at}: {value} is not of type {kind}"));
            return errors;
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = node.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            errors.push(format!("{at}: {n} is below {min}"));
        }
        if let Some(max) = node.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            errors.push(format!("{at}: {n} is above {max}"));
        }
    }
    if let Some(object) = value.as_object() {
        let properties = node.get("properties").and_then(Value::as_object);
        for required in node
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !object.contains_key(required) {
                errors.push(format!("{at}: lacks {required}"));
            }
        }
        for (key, child) in object {
            let path = format!("{at}/{key}");
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => errors.extend(check(schema, sub, child, &path)),
                None => match node.get("additionalProperties") {
                    Some(Value::Bool(false)) => errors.push(format!("{path}: not in the schema")),
                    Some(sub @ Value::Object(_)) => errors.extend(check(schema, sub, child, &path)),
                    _ => {}
                },
            }
        }
    }
    errors
}
