//! Pruning as the API server does it: unknown fields dropped (and reported), then `null`s the
//! schema does not allow.

use serde_json::Value;

use super::node::{Additional, additional, child, flag, items, properties};

/// The fields of an embedded resource (and of the root) that pruning leaves alone.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Removes unknown fields under `x`; `s` is `None` where the schema allows a value but says
/// nothing about it (every key below is then unknown).
pub(super) fn prune_node(
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
pub(super) fn prune_nulls(x: &mut Value, s: Option<&Value>, root: bool) {
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
