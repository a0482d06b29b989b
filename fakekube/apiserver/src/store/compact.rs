//! Stored revisions without spare capacity.
//!
//! A JSON object is an ordered map whose entries grow by doubling as keys are inserted, and a
//! clone keeps the capacity of its source: an object built key by key (a decoded body, a patched
//! or cloned revision) holds a third more entry slots than it has keys, on average. A revision
//! lives as long as the object does, or as long as the watch history holds it, so the store
//! fits each new one to its size once, before it is shared. Moving the entries into maps of the
//! exact size copies no key and no value: what a client reads is the same, in the same order.

use serde_json::{Map, Value};

/// Fits every object, array and string in `value` to its length.
pub(super) fn fit(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let old = std::mem::take(map);
            let mut fitted = Map::with_capacity(old.len());
            for (mut key, mut v) in old {
                key.shrink_to_fit();
                fit(&mut v);
                fitted.insert(key, v);
            }
            *map = fitted;
        }
        Value::Array(items) => {
            items.shrink_to_fit();
            items.iter_mut().for_each(fit);
        }
        Value::String(s) => s.shrink_to_fit(),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_fitted_object_is_the_same_object_in_the_same_order() {
        let mut grown = Map::new();
        for key in ["zeta", "alpha", "mid", "beta", "omega"] {
            grown.insert(
                key.to_string(),
                json!({ "list": [1, "two", null], "k": key }),
            );
        }
        let mut value = Value::Object(grown);
        let before = value.clone();
        fit(&mut value);
        assert_eq!(value, before);
        let keys: Vec<&String> = value
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["zeta", "alpha", "mid", "beta", "omega"]);
        assert_eq!(
            serde_json::to_string(&value).ok(),
            serde_json::to_string(&before).ok()
        );
    }
}
