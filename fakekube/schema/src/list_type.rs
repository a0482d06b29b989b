//! `x-kubernetes-list-type`: uniqueness of `set` lists and of the keys of `map` lists.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::field_error::{FIELD_VALUE_DUPLICATE, FieldError};
use super::node::{Additional, additional, child, items, properties, str_of};
use crate::go_format::{go_json, go_v};

/// The `x-kubernetes-list-type` `set` and `map` uniqueness walk, with `field.Path` paths.
/// Properties equal to their value in `old` (which passed) are not walked again.
pub(super) fn list_types(
    data: &Value,
    old: Option<&Value>,
    s: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    match data {
        Value::Object(map) => {
            let old_map = old.and_then(Value::as_object);
            let old_of = |k: &str| old_map.and_then(|o| o.get(k));
            // The root's metadata is the store's and changes after the checks.
            let same =
                |k: &str, v: &Value| !(path.is_empty() && k == "metadata") && old_of(k) == Some(v);
            if let Additional::Schema(a) = additional(s) {
                for (k, v) in map {
                    if !same(k, v) {
                        list_types(v, old_of(k), a, &format!("{path}[{k}]"), out);
                    }
                }
            }
            if let Some(props) = properties(s) {
                for (k, v) in map {
                    if let Some(prop) = props.get(k)
                        && !same(k, v)
                    {
                        list_types(v, old_of(k), prop, &child(path, k), out);
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
                    list_types(v, None, item, &format!("{path}[{i}]"), out);
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
