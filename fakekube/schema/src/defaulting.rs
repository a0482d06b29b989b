//! Defaulting as the API server does it: `default`s of absent (or non-nullable `null`) fields,
//! descending only into objects and lists that exist.

use serde_json::Value;

use super::node::{Additional, additional, flag, items, properties};

/// A `null` where the schema does not allow one.
fn is_non_nullable_null(x: &Value, s: &Value) -> bool {
    x.is_null() && !flag(s, "nullable")
}

/// The API server's defaulting walk: defaults of absent properties, then recursion.
pub(super) fn default_node(x: &mut Value, s: &Value) {
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

/// Whether [`default_node`] would change `x`: a default of a field that is absent (or a
/// non-nullable `null`) anywhere the walk reaches. Reads ask this before copying an object.
pub(super) fn missing(x: &Value, s: &Value) -> bool {
    match x {
        Value::Object(map) => {
            if let Some(props) = properties(s) {
                for (k, prop) in props {
                    if prop.get("default").is_some()
                        && map.get(k).is_none_or(|v| is_non_nullable_null(v, prop))
                    {
                        return true;
                    }
                }
            }
            map.iter().any(|(k, v)| {
                if let Some(prop) = properties(s).and_then(|p| p.get(k)) {
                    missing(v, prop)
                } else if let Additional::Schema(a) = additional(s) {
                    (is_non_nullable_null(v, a) && a.get("default").is_some()) || missing(v, a)
                } else {
                    false
                }
            })
        }
        Value::Array(list) => items(s).is_some_and(|item| {
            list.iter().any(|v| {
                (is_non_nullable_null(v, item) && item.get("default").is_some()) || missing(v, item)
            })
        }),
        _ => false,
    }
}
