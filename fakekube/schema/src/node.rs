//! Reading a schema node: its `properties`, `additionalProperties`, `items` and keywords, and
//! building `field.Path`-style paths.

use serde_json::{Map, Value};
use std::collections::HashSet;

/// `additionalProperties` of a schema node.
pub(super) enum Additional<'a> {
    /// Absent.
    Absent,
    /// A schema for every extra key.
    Schema(&'a Value),
    /// `true` (extra keys allowed, no schema) or `false`.
    Bool(bool),
}

/// The `properties` of a schema node.
pub(super) fn properties(s: &Value) -> Option<&Map<String, Value>> {
    s.get("properties").and_then(Value::as_object)
}

/// The `additionalProperties` of a schema node.
pub(super) fn additional(s: &Value) -> Additional<'_> {
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => Additional::Bool(*b),
        Some(v) if v.is_object() => Additional::Schema(v),
        _ => Additional::Absent,
    }
}

/// The `items` schema of a list node.
pub(super) fn items(s: &Value) -> Option<&Value> {
    s.get("items").filter(|v| v.is_object())
}

/// A boolean keyword (`nullable`, `x-kubernetes-...`), false when absent.
pub(super) fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// A string keyword (`type`, `format`, `pattern`...).
pub(super) fn str_of<'a>(s: &'a Value, key: &str) -> Option<&'a str> {
    s.get(key).and_then(Value::as_str)
}

/// Whether this node or one below it carries `x-kubernetes-validations`; adds the address of
/// every such node (this one included) to `ruled`.
pub(super) fn collect_ruled(s: &Value, ruled: &mut HashSet<usize>) -> bool {
    let mut any = s
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    if let Some(props) = properties(s) {
        for p in props.values() {
            any |= collect_ruled(p, ruled);
        }
    }
    if let Additional::Schema(a) = additional(s) {
        any |= collect_ruled(a, ruled);
    }
    if let Some(item) = items(s) {
        any |= collect_ruled(item, ruled);
    }
    if any {
        ruled.insert(address(s));
    }
    any
}

/// The address of a schema node, as [`collect_ruled`] records it.
pub(super) fn address(s: &Value) -> usize {
    std::ptr::from_ref(s) as usize
}

/// Whether this node or one below it carries a `default`.
pub(super) fn any_defaults(s: &Value) -> bool {
    if s.get("default").is_some() {
        return true;
    }
    let in_props = properties(s).is_some_and(|p| p.values().any(any_defaults));
    let in_additional = matches!(additional(s), Additional::Schema(a) if any_defaults(a));
    in_props || in_additional || items(s).is_some_and(any_defaults)
}

/// `parent.name`, or `name` at the root.
pub(super) fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}
