//! A Swagger 2.0 document (as JSON) encoded as gnostic's `openapi.v2.Document` protobuf
//! message, the form client-go's `OpenAPISchema()` asks `/openapi/v2` for.
//!
//! Only the messages and fields such a document uses are written: the document, its info,
//! paths (operations, their parameters and responses), definitions and schemas, and vendor
//! extensions, whose values (like `default`, `enum` and `example`) are `Any` messages holding
//! the value as YAML (JSON text is YAML). proto3 leaves out default values, so empty strings,
//! `false` and zeros are not written.

use serde_json::{Map, Value};

/// Protobuf wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LENGTH_DELIMITED: u64 = 2;

/// Builds one message's bytes.
#[derive(Default)]
struct Message {
    buf: Vec<u8>,
}

impl Message {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u64, wire: u64) {
        self.varint((field << 3) | wire);
    }

    fn bytes(&mut self, field: u64, data: &[u8]) {
        self.key(field, LENGTH_DELIMITED);
        self.varint(data.len() as u64);
        self.buf.extend_from_slice(data);
    }

    /// A string field, left out when empty.
    fn string(&mut self, field: u64, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    /// A string field from a JSON member, when it is a non-empty string.
    fn string_of(&mut self, field: u64, v: &Value, key: &str) {
        if let Some(s) = v.get(key).and_then(Value::as_str) {
            self.string(field, s);
        }
    }

    /// A repeated string field from a JSON list.
    fn strings_of(&mut self, field: u64, v: &Value, key: &str) {
        for s in v.get(key).and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = s.as_str() {
                // Repeated strings keep empty elements.
                self.bytes(field, s.as_bytes());
            }
        }
    }

    /// A bool field from a JSON member, when true.
    fn bool_of(&mut self, field: u64, v: &Value, key: &str) {
        if v.get(key).and_then(Value::as_bool) == Some(true) {
            self.key(field, VARINT);
            self.varint(1);
        }
    }

    /// An int64 field from a JSON member, when not zero.
    fn int_of(&mut self, field: u64, v: &Value, key: &str) {
        if let Some(n) = v.get(key).and_then(Value::as_i64).filter(|n| *n != 0) {
            self.key(field, VARINT);
            self.varint(n as u64);
        }
    }

    /// A double field from a JSON member, when not zero.
    fn double_of(&mut self, field: u64, v: &Value, key: &str) {
        if let Some(f) = v.get(key).and_then(Value::as_f64).filter(|f| *f != 0.0) {
            self.key(field, FIXED64);
            self.buf.extend_from_slice(&f.to_bits().to_le_bytes());
        }
    }

    /// An embedded message.
    fn message(&mut self, field: u64, m: Message) {
        self.bytes(field, &m.buf);
    }

    /// An embedded message built by `f`.
    fn with(&mut self, field: u64, f: impl FnOnce(&mut Message)) {
        let mut m = Message::default();
        f(&mut m);
        self.message(field, m);
    }
}

/// `Any { yaml }`: a value as YAML text (JSON is YAML).
fn any(v: &Value) -> Message {
    let mut m = Message::default();
    m.string(2, &v.to_string());
    m
}

/// The `NamedAny` vendor extensions (`x-…` members) of a JSON object.
fn vendor_extensions(m: &mut Message, field: u64, v: &Value) {
    let Some(o) = v.as_object() else {
        return;
    };
    for (k, val) in o.iter().filter(|(k, _)| k.starts_with("x-")) {
        m.with(field, |named| {
            named.string(1, k);
            named.message(2, any(val));
        });
    }
}

/// `Schema`.
fn schema(v: &Value) -> Message {
    let mut m = Message::default();
    m.string_of(1, v, "$ref");
    m.string_of(2, v, "format");
    m.string_of(3, v, "title");
    m.string_of(4, v, "description");
    if let Some(d) = v.get("default") {
        m.message(5, any(d));
    }
    m.double_of(6, v, "multipleOf");
    m.double_of(7, v, "maximum");
    m.bool_of(8, v, "exclusiveMaximum");
    m.double_of(9, v, "minimum");
    m.bool_of(10, v, "exclusiveMinimum");
    m.int_of(11, v, "maxLength");
    m.int_of(12, v, "minLength");
    m.string_of(13, v, "pattern");
    m.int_of(14, v, "maxItems");
    m.int_of(15, v, "minItems");
    m.bool_of(16, v, "uniqueItems");
    m.int_of(17, v, "maxProperties");
    m.int_of(18, v, "minProperties");
    m.strings_of(19, v, "required");
    for e in v
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(20, any(e));
    }
    match v.get("additionalProperties") {
        Some(Value::Bool(b)) => m.with(21, |a| {
            // `boolean` of the oneof; false must be written to be told from absent.
            a.key(2, VARINT);
            a.varint(u64::from(*b));
        }),
        Some(extra @ Value::Object(_)) => m.with(21, |a| a.message(1, schema(extra))),
        _ => {}
    }
    match v.get("type") {
        Some(Value::String(t)) => m.with(22, |ty| ty.string(1, t)),
        Some(Value::Array(ts)) => m.with(22, |ty| {
            for t in ts.iter().filter_map(Value::as_str) {
                ty.bytes(1, t.as_bytes());
            }
        }),
        _ => {}
    }
    match v.get("items") {
        Some(Value::Array(items)) => m.with(23, |i| {
            for item in items {
                i.message(1, schema(item));
            }
        }),
        Some(item @ Value::Object(_)) => m.with(23, |i| i.message(1, schema(item))),
        _ => {}
    }
    for s in v
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(24, schema(s));
    }
    if let Some(props) = v.get("properties").and_then(Value::as_object) {
        m.with(25, |p| named_schemas(p, 1, props));
    }
    m.string_of(26, v, "discriminator");
    m.bool_of(27, v, "readOnly");
    if let Some(e) = v.get("example") {
        m.message(30, any(e));
    }
    vendor_extensions(&mut m, 31, v);
    m
}

/// Repeated `NamedSchema { name, value }` of a map of schemas.
fn named_schemas(m: &mut Message, field: u64, map: &Map<String, Value>) {
    for (name, s) in map {
        m.with(field, |named| {
            named.string(1, name);
            named.message(2, schema(s));
        });
    }
}

/// `ParametersItem { parameter: Parameter { body | non_body } }`.
fn parameter(p: &Value) -> Message {
    let mut item = Message::default();
    item.with(1, |param| {
        if p.get("in").and_then(Value::as_str) == Some("body") {
            param.with(1, |body| {
                body.string_of(1, p, "description");
                body.string_of(2, p, "name");
                body.string_of(3, p, "in");
                body.bool_of(4, p, "required");
                if let Some(s) = p.get("schema") {
                    body.message(5, schema(s));
                }
                vendor_extensions(body, 6, p);
            });
            return;
        }
        param.with(2, |non_body| {
            // query is the oneof's third case, path its fourth: their fields line up up to
            // `type`, after which the query one has `allow_empty_value` at 5.
            let (case, query) = match p.get("in").and_then(Value::as_str) {
                Some("path") => (4, false),
                _ => (3, true),
            };
            non_body.with(case, |sub| {
                sub.bool_of(1, p, "required");
                sub.string_of(2, p, "in");
                sub.string_of(3, p, "description");
                sub.string_of(4, p, "name");
                if query {
                    sub.bool_of(5, p, "allowEmptyValue");
                    sub.string_of(6, p, "type");
                    sub.string_of(7, p, "format");
                    sub.bool_of(20, p, "uniqueItems");
                    vendor_extensions(sub, 23, p);
                } else {
                    sub.string_of(5, p, "type");
                    sub.string_of(6, p, "format");
                    sub.bool_of(19, p, "uniqueItems");
                    vendor_extensions(sub, 22, p);
                }
            });
        });
    });
    item
}

/// `Operation`.
fn operation(op: &Value) -> Message {
    let mut m = Message::default();
    m.strings_of(1, op, "tags");
    m.string_of(2, op, "summary");
    m.string_of(3, op, "description");
    m.string_of(5, op, "operationId");
    m.strings_of(6, op, "produces");
    m.strings_of(7, op, "consumes");
    for p in op
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(8, parameter(p));
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        m.with(9, |r| {
            for (code, resp) in responses {
                r.with(1, |named| {
                    named.string(1, code);
                    named.with(2, |value| {
                        value.with(1, |response| {
                            response.string_of(1, resp, "description");
                            if let Some(s) = resp.get("schema") {
                                response.with(2, |item| item.message(1, schema(s)));
                            }
                        });
                    });
                });
            }
        });
    }
    m.strings_of(10, op, "schemes");
    m.bool_of(11, op, "deprecated");
    vendor_extensions(&mut m, 13, op);
    m
}

/// `PathItem`.
fn path_item(item: &Value) -> Message {
    let mut m = Message::default();
    for (field, method) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(op) = item.get(method) {
            m.message(field, operation(op));
        }
    }
    for p in item
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(9, parameter(p));
    }
    vendor_extensions(&mut m, 10, item);
    m
}

/// The `Document` message of a Swagger 2.0 document.
pub(super) fn document(doc: &Value) -> Vec<u8> {
    let mut m = Message::default();
    m.string_of(1, doc, "swagger");
    if let Some(info) = doc.get("info") {
        m.with(2, |i| {
            i.string_of(1, info, "title");
            i.string_of(2, info, "version");
            i.string_of(3, info, "description");
        });
    }
    m.string_of(3, doc, "host");
    m.string_of(4, doc, "basePath");
    m.strings_of(5, doc, "schemes");
    m.strings_of(6, doc, "consumes");
    m.strings_of(7, doc, "produces");
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        m.with(8, |p| {
            for (path, item) in paths {
                p.with(2, |named| {
                    named.string(1, path);
                    named.message(2, path_item(item));
                });
            }
        });
    }
    if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
        m.with(9, |d| named_schemas(d, 1, defs));
    }
    vendor_extensions(&mut m, 16, doc);
    m.buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One field as read back: its number and its varint or bytes.
    #[derive(Debug, PartialEq)]
    enum Read<'a> {
        Varint(u64),
        Fixed(u64),
        Bytes(&'a [u8]),
    }

    /// A minimal reader for the tests: the fields of one message, in order.
    fn read(mut buf: &[u8]) -> Vec<(u64, Read<'_>)> {
        fn varint(buf: &mut &[u8]) -> u64 {
            let mut v = 0u64;
            for shift in (0..64).step_by(7) {
                let Some((b, rest)) = buf.split_first() else {
                    break;
                };
                *buf = rest;
                v |= u64::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    break;
                }
            }
            v
        }
        let mut out = Vec::new();
        while !buf.is_empty() {
            let key = varint(&mut buf);
            let field = match key & 7 {
                VARINT => Read::Varint(varint(&mut buf)),
                FIXED64 => {
                    let (b, rest) = buf.split_at(8.min(buf.len()));
                    buf = rest;
                    let mut a = [0u8; 8];
                    a[..b.len()].copy_from_slice(b);
                    Read::Fixed(u64::from_le_bytes(a))
                }
                _ => {
                    let len = usize::try_from(varint(&mut buf)).unwrap_or(usize::MAX);
                    let (b, rest) = buf.split_at(len.min(buf.len()));
                    buf = rest;
                    Read::Bytes(b)
                }
            };
            out.push((key >> 3, field));
        }
        out
    }

    fn bytes<'a>(fields: &[(u64, Read<'a>)], n: u64) -> Vec<&'a [u8]> {
        fields
            .iter()
            .filter(|(f, _)| *f == n)
            .filter_map(|(_, r)| match r {
                Read::Bytes(b) => Some(*b),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_document_encodes_its_version_info_paths_and_definitions() {
        let doc = json!({
            "swagger": "2.0",
            "info": { "title": "Kubernetes", "version": "v1.33.1" },
            "paths": { "/api/v1/pods": { "get": {
                "operationId": "listPod",
                "consumes": ["*/*"],
                "parameters": [ { "name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true } ],
                "x-kubernetes-group-version-kind": { "group": "", "kind": "Pod", "version": "v1" },
            } } },
            "definitions": { "io.k8s.api.core.v1.Pod": {
                "type": "object",
                "required": ["spec"],
                "maximum": 2.5,
                "additionalProperties": false,
                "properties": { "spec": { "type": "object" } },
            } },
        });
        let out = document(&doc);
        let top = read(&out);
        assert_eq!(bytes(&top, 1), vec![&b"2.0"[..]]);
        let info = read(bytes(&top, 2)[0]);
        assert_eq!(bytes(&info, 2), vec![&b"v1.33.1"[..]]);
        let named_path = read(bytes(&read(bytes(&top, 8)[0]), 2)[0]);
        assert_eq!(bytes(&named_path, 1), vec![&b"/api/v1/pods"[..]]);
        let get = read(bytes(&read(bytes(&named_path, 2)[0]), 2)[0]);
        assert_eq!(bytes(&get, 5), vec![&b"listPod"[..]]);
        let ext = read(bytes(&get, 13)[0]);
        assert_eq!(
            bytes(&ext, 1),
            vec![&b"x-kubernetes-group-version-kind"[..]]
        );
        let yaml = read(bytes(&ext, 2)[0]);
        let value: Value = serde_json::from_slice(bytes(&yaml, 2)[0]).unwrap_or_default();
        assert_eq!(value["kind"], "Pod");
        let param = read(bytes(&get, 8)[0]);
        let non_body = read(bytes(&read(bytes(&param, 1)[0]), 2)[0]);
        let query = read(bytes(&non_body, 3)[0]);
        assert_eq!(bytes(&query, 4), vec![&b"fieldValidation"[..]]);
        let named_def = read(bytes(&read(bytes(&top, 9)[0]), 1)[0]);
        assert_eq!(bytes(&named_def, 1), vec![&b"io.k8s.api.core.v1.Pod"[..]]);
        let pod = read(bytes(&named_def, 2)[0]);
        assert_eq!(bytes(&pod, 19), vec![&b"spec"[..]]);
        assert!(pod.contains(&(7, Read::Fixed(2.5f64.to_bits()))));
        assert_eq!(read(bytes(&pod, 21)[0]), vec![(2, Read::Varint(0))]);
        let ty = read(bytes(&pod, 22)[0]);
        assert_eq!(bytes(&ty, 1), vec![&b"object"[..]]);
        let props = read(bytes(&pod, 25)[0]);
        let spec = read(bytes(&props, 1)[0]);
        assert_eq!(bytes(&spec, 1), vec![&b"spec"[..]]);
    }

    #[test]
    fn long_fields_have_multi_byte_lengths() {
        let description = "d".repeat(300);
        let out = schema(&json!({ "description": description })).buf;
        assert_eq!(&out[..3], &[(4 << 3) | 2, 0xac, 0x02]);
        assert_eq!(out.len(), 3 + 300);
    }
}
