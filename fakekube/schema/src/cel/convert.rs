//! Objects as CEL values, typed by their schema as the API server types them: `integer` as
//! int, `number` as double, strings of format `byte` as bytes, `duration` as durations,
//! `date` and `date-time` as timestamps, objects as maps; at the root and in embedded
//! resources `metadata` shows only `name` and `generateName`.

use super::Selection;
use crate::node::{Additional, additional, flag, items, properties, str_of};
use cel::Value;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::Arc;

/// The CEL value of `v`, whose schema is `s` (`None` where the schema says nothing). `root`
/// is set for the object a rule's `self` is the root (or an embedded resource) of.
pub(crate) fn to_cel(v: &Json, s: Option<&Json>, root: bool) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => {
            let wants_double = s.and_then(|s| str_of(s, "type")) == Some("number");
            match (n.as_i64(), wants_double) {
                (Some(i), false) => Value::Int(i),
                _ => Value::Float(n.as_f64().unwrap_or(0.0)),
            }
        }
        Json::String(text) => string(text, s),
        Json::Array(list) => {
            let item = s.and_then(items);
            let embedded = item.is_some_and(|i| flag(i, "x-kubernetes-embedded-resource"));
            Value::List(Arc::new(
                list.iter().map(|x| to_cel(x, item, embedded)).collect(),
            ))
        }
        Json::Object(map) => object(map, s, root, |_| true),
    }
}

/// The CEL value of `v` as an expression that reads `reads` of it sees it: an object keeps
/// only the fields read (selecting any of them, or testing it with `has`, gives what it gives
/// on the whole object); anything else is converted whole.
pub(crate) fn to_cel_reads(v: &Json, s: Option<&Json>, root: bool, reads: &Selection) -> Value {
    match (v, reads) {
        (Json::Object(map), Selection::Fields(_)) => object(map, s, root, |k| reads.reads(k)),
        _ => to_cel(v, s, root),
    }
}

/// An object's fields for which `keep` holds, as a CEL map.
fn object(
    map: &serde_json::Map<String, Json>,
    s: Option<&Json>,
    root: bool,
    keep: impl Fn(&str) -> bool,
) -> Value {
    let mut out: HashMap<String, Value> = HashMap::with_capacity(map.len());
    for (k, x) in map.iter().filter(|(k, _)| keep(k)) {
        if root && k == "metadata" {
            out.insert(k.clone(), visible_metadata(x));
            continue;
        }
        let sub = s.and_then(|s| match properties(s).and_then(|p| p.get(k)) {
            Some(p) => Some(p),
            None => match additional(s) {
                Additional::Schema(a) => Some(a),
                _ => None,
            },
        });
        let embedded = sub.is_some_and(|x| flag(x, "x-kubernetes-embedded-resource"));
        out.insert(k.clone(), to_cel(x, sub, embedded));
    }
    out.into()
}

/// A string, typed by its format.
fn string(text: &str, s: Option<&Json>) -> Value {
    let plain = || Value::String(Arc::new(text.to_string()));
    match s.and_then(|s| str_of(s, "format")) {
        Some("byte") => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map(|b| Value::Bytes(Arc::new(b)))
                .unwrap_or_else(|_| plain())
        }
        Some("date-time" | "datetime" | "date") => {
            let stamp = if text.len() == 10 {
                format!("{text}T00:00:00Z")
            } else {
                text.to_string()
            };
            crate::cel::timestamp(&stamp).unwrap_or_else(plain)
        }
        Some("duration") => crate::cel::duration(text).unwrap_or_else(plain),
        _ => plain(),
    }
}

/// The part of an object's metadata rules may read: `name` and `generateName`.
fn visible_metadata(md: &Json) -> Value {
    let mut out: HashMap<String, Value> = HashMap::new();
    for k in ["name", "generateName"] {
        if let Some(Json::String(v)) = md.get(k) {
            out.insert(k.to_string(), Value::String(Arc::new(v.clone())));
        }
    }
    out.into()
}
