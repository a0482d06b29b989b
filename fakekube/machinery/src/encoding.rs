//! The wire form of what the server answers: the order of an object's fields, in JSON and
//! YAML, as the Go API server writes them.
//!
//! Objects are stored as JSON maps in whatever order their writers gave; the order is fixed
//! here, at the response boundary, while serializing (no object is copied to reorder it):
//!
//! - [`Shape::Typed`]: the API server's own types (built-in kinds, `Status`, `Table`,
//!   `PartialObjectMetadata`, lists of them) are Go structs: `kind`, then `apiVersion`, then
//!   `metadata` (in `ObjectMeta`'s field order), then the other fields as stored; a list's
//!   items the same way.
//! - [`Shape::Unstructured`]: custom resources are Go maps, which `encoding/json` writes with
//!   their keys sorted, at every depth (so `apiVersion` comes before `kind`).
//!
//! YAML (`application/yaml`) is JSON turned into YAML by the API server, through a map: keys
//! sorted at every depth whatever the shape.

use bytes::Bytes;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

/// How an answer's fields are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A Go struct of the API server: `kind`, `apiVersion`, `metadata` first.
    Typed,
    /// A custom resource (a Go map): keys sorted at every depth.
    Unstructured,
}

/// The fields of `ObjectMeta` (and `ListMeta`), in the order Go writes them.
const OBJECT_META_ORDER: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "continue",
    "remainingItemCount",
];

/// `value` serialized in `shape`.
pub struct Wire<'a> {
    value: &'a Value,
    shape: Shape,
}

impl<'a> Wire<'a> {
    /// Wraps `value` to serialize it in `shape`.
    pub fn new(value: &'a Value, shape: Shape) -> Self {
        Wire { value, shape }
    }
}

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.shape {
            Shape::Typed => Typed(self.value).serialize(s),
            Shape::Unstructured => Sorted(self.value).serialize(s),
        }
    }
}

/// A Go struct's fields: `kind`, `apiVersion`, `metadata`, then the rest as stored.
struct Typed<'a>(&'a Value);

impl Serialize for Typed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(o) = self.0 else {
            return self.0.serialize(s);
        };
        let mut map = s.serialize_map(Some(o.len()))?;
        for key in ["kind", "apiVersion"] {
            if let Some(v) = o.get(key) {
                map.serialize_entry(key, v)?;
            }
        }
        if let Some(m) = o.get("metadata") {
            map.serialize_entry("metadata", &Meta(m))?;
        }
        for (k, v) in o {
            match k.as_str() {
                "kind" | "apiVersion" | "metadata" => {}
                "items" if v.is_array() => map.serialize_entry(k, &Items(v))?,
                _ => map.serialize_entry(k, v)?,
            }
        }
        map.end()
    }
}

/// A list's items, each a Go struct.
struct Items<'a>(&'a Value);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Array(a) = self.0 else {
            return self.0.serialize(s);
        };
        let mut seq = s.serialize_seq(Some(a.len()))?;
        for item in a {
            seq.serialize_element(&Typed(item))?;
        }
        seq.end()
    }
}

/// `ObjectMeta`'s fields in their Go order, unknown ones after.
struct Meta<'a>(&'a Value);

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(o) = self.0 else {
            return self.0.serialize(s);
        };
        let mut map = s.serialize_map(Some(o.len()))?;
        for key in OBJECT_META_ORDER {
            if let Some(v) = o.get(*key) {
                map.serialize_entry(key, v)?;
            }
        }
        for (k, v) in o {
            if !OBJECT_META_ORDER.contains(&k.as_str()) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// A Go map's keys, sorted at every depth.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort_unstable();
                let mut map = s.serialize_map(Some(o.len()))?;
                for k in keys {
                    map.serialize_entry(k, &Sorted(&o[k.as_str()]))?;
                }
                map.end()
            }
            Value::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(&Sorted(v))?;
                }
                seq.end()
            }
            other => other.serialize(s),
        }
    }
}

/// `value` as JSON bytes in `shape`, ending in a newline as the API server's encoder ends every
/// body (clients that print an error body show it).
pub fn to_json(value: &Value, shape: Shape) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&Wire::new(value, shape)).unwrap_or_else(|_| b"{}".to_vec());
    bytes.push(b'\n');
    bytes
}

/// One item of a list as JSON in `shape`, without the newline: what [`to_json`] writes for it
/// inside a list of that shape.
pub fn item_json(item: &Value, shape: Shape) -> Vec<u8> {
    serde_json::to_vec(&Wire::new(item, shape)).unwrap_or_else(|_| b"{}".to_vec())
}

/// A `<Kind>List` as JSON in `shape`, from its parts and its items already written by
/// [`item_json`]: byte for byte what [`to_json`] writes for the list as one value (`kind`,
/// `apiVersion`, `metadata`, `items` as a Go struct; keys sorted as a Go map).
pub fn list_json(
    kind: &str,
    api_version: &str,
    metadata: &Map<String, Value>,
    items: &[Bytes],
    shape: Shape,
) -> Vec<u8> {
    let metadata = Value::Object(metadata.clone());
    let size = items.iter().map(|i| i.len() + 1).sum::<usize>() + 256;
    let mut out = Vec::with_capacity(size);
    out.push(b'{');
    match shape {
        Shape::Typed => {
            put_field(&mut out, "kind", &kind);
            put_field(&mut out, "apiVersion", &api_version);
            put_field(&mut out, "metadata", &Meta(&metadata));
            put_items(&mut out, items);
        }
        Shape::Unstructured => {
            put_field(&mut out, "apiVersion", &api_version);
            put_items(&mut out, items);
            put_field(&mut out, "kind", &kind);
            put_field(&mut out, "metadata", &Sorted(&metadata));
        }
    }
    out.extend_from_slice(b"}\n");
    out
}

/// Writes `"key":` into an object being written (with the comma before it, unless first).
fn put_key(out: &mut Vec<u8>, key: &str) {
    if out.last() != Some(&b'{') {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// Writes `"key":value` into an object being written.
fn put_field(out: &mut Vec<u8>, key: &str, value: &impl Serialize) {
    put_key(out, key);
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// Writes `"items":[…]` from items already written.
fn put_items(out: &mut Vec<u8>, items: &[Bytes]) {
    put_key(out, "items");
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.push(b']');
}

/// `value` as YAML text, keys sorted at every depth.
pub fn to_yaml(value: &Value) -> Vec<u8> {
    serde_saphyr::to_string(&Sorted(value))
        .map(String::into_bytes)
        .unwrap_or_default()
}

/// A watch event line (`{"type":…,"object":…}` and a newline), its object in `shape`.
pub fn event_line(event_type: &str, object: &Value, shape: Shape) -> Vec<u8> {
    /// The event's two fields, in `metav1.WatchEvent`'s order.
    struct Event<'a> {
        event_type: &'a str,
        object: Wire<'a>,
    }
    impl Serialize for Event<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(Some(2))?;
            map.serialize_entry("type", self.event_type)?;
            map.serialize_entry("object", &self.object)?;
            map.end()
        }
    }
    let mut line = serde_json::to_vec(&Event {
        event_type,
        object: Wire::new(object, shape),
    })
    .unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The body without the newline every body ends in.
    fn text(v: &Value, shape: Shape) -> String {
        let body = String::from_utf8(to_json(v, shape)).unwrap_or_default();
        body.strip_suffix('\n').unwrap_or(&body).to_string()
    }

    #[test]
    fn a_list_written_from_its_parts_is_byte_for_byte_the_list_written_whole() {
        let items = [
            json!({ "apiVersion": "v1", "metadata": { "uid": "u", "name": "a\"b" }, "kind": "Pod",
                "spec": { "z": [ { "b": 1, "a": 2 } ] } }),
            json!({ "kind": "Pod", "status": { "phase": "Running" }, "metadata": { "name": "c" } }),
        ];
        let metadata =
            json!({ "remainingItemCount": 3, "resourceVersion": "7", "continue": "tok" });
        for shape in [Shape::Typed, Shape::Unstructured] {
            for count in [0, 1, 2] {
                let whole = json!({
                    "kind": "PodList",
                    "apiVersion": "v1",
                    "metadata": metadata,
                    "items": items[..count],
                });
                let parts: Vec<Bytes> = items[..count]
                    .iter()
                    .map(|i| Bytes::from(item_json(i, shape)))
                    .collect();
                let md = metadata.as_object().cloned().unwrap_or_default();
                assert_eq!(
                    String::from_utf8(list_json("PodList", "v1", &md, &parts, shape)),
                    String::from_utf8(to_json(&whole, shape)),
                    "{shape:?}, {count} items"
                );
            }
        }
    }

    #[test]
    fn every_json_body_ends_in_one_newline() {
        let body = to_json(&json!({ "kind": "Status", "code": 409 }), Shape::Typed);
        assert!(body.ends_with(b"}\n"), "{body:?}");
    }

    #[test]
    fn typed_objects_start_with_kind_api_version_and_metadata_in_go_order() {
        let pod = json!({
            "apiVersion": "v1",
            "metadata": { "uid": "u", "name": "p", "labels": { "b": "1", "a": "2" }, "namespace": "d" },
            "kind": "Pod",
            "spec": { "z": 1, "a": 2 },
            "status": { "phase": "Running" },
        });
        assert_eq!(
            text(&pod, Shape::Typed),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"d","uid":"u","labels":{"b":"1","a":"2"}},"spec":{"z":1,"a":2},"status":{"phase":"Running"}}"#
        );
    }

    #[test]
    fn a_typed_list_orders_itself_and_each_item() {
        let list = json!({
            "apiVersion": "v1",
            "items": [ { "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "a" } } ],
            "metadata": { "resourceVersion": "3" },
            "kind": "PodList",
        });
        assert_eq!(
            text(&list, Shape::Typed),
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}]}"#
        );
    }

    #[test]
    fn custom_resources_have_their_keys_sorted_at_every_depth() {
        let sb = json!({
            "kind": "Sandbox",
            "apiVersion": "agents.x-k8s.io/v1beta1",
            "spec": { "b": [ { "y": 1, "x": 2 } ], "a": true },
            "metadata": { "name": "s" },
        });
        assert_eq!(
            text(&sb, Shape::Unstructured),
            r#"{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"s"},"spec":{"a":true,"b":[{"x":2,"y":1}]}}"#
        );
    }

    #[test]
    fn yaml_has_sorted_keys_and_reads_back_as_the_same_value() {
        let pod = json!({ "kind": "Pod", "apiVersion": "v1", "metadata": { "name": "p" } });
        let yaml = String::from_utf8(to_yaml(&pod)).unwrap_or_default();
        assert!(yaml.starts_with("apiVersion: v1\nkind: Pod\n"), "{yaml}");
        let back: Value = serde_saphyr::from_str(&yaml).unwrap_or(Value::Null);
        assert_eq!(back, pod);
    }

    #[test]
    fn watch_events_put_type_before_the_ordered_object() {
        let line = event_line(
            "ADDED",
            &json!({ "apiVersion": "v1", "kind": "Pod" }),
            Shape::Typed,
        );
        assert_eq!(
            line,
            b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}}\n"
        );
    }
}
