//! What Go's `encoding/json` writes for a JSON value once it is decoded into one of the Go
//! types the agent-sandbox controllers hash (`json.Marshal` of a SandboxTemplate's
//! `podTemplate` and of its blueprint, then `NameHash`), so the warm pool's
//! `sandbox-template-hash` and `sandbox-pod-template-hash` labels carry upstream's values.
//!
//! The bytes follow the Go structs, not the JSON a client sent: fields in the structs' order,
//! unknown fields dropped, `omitempty` fields left out when nil, empty, zero or false (structs
//! never count as empty: a container's `resources` is always written, `{}` at least), absent
//! non-`omitempty` fields written as their zero value (`null` for slices, maps and pointers),
//! map keys sorted, and strings escaped as `json.Marshal` does (`<`, `>`, `&`, U+2028 and
//! U+2029 as `\u` escapes). The structs' shapes are data, `go_types.txt`, generated from the
//! Go sources by `go_types.py` beside it.
//!
//! Differences from Go: a `resource.Quantity` is written as the client wrote it (Go writes its
//! canonical form, so `1024Mi` and `1Gi` hash alike there and differ here); a value of the
//! wrong JSON type for its field (which Go's decoder would refuse) is written as Go writes the
//! untyped value. Numbers are written as Go writes them (`8888.0` as `8888`, `1e21` as
//! `1e+21`), as the API server stores a custom resource's numbers through Go's encoder.

use crate::go_format::{write_go_array, write_go_json, write_go_map, write_go_string};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The Go type of `json.Marshal(template.Spec.PodTemplate)`.
pub(crate) const POD_TEMPLATE: &str = "sandbox.PodTemplate";
/// The Go type of `json.Marshal(template.Spec.SandboxBlueprint)`.
pub(crate) const SANDBOX_BLUEPRINT: &str = "sandbox.SandboxBlueprint";

/// A field's Go type, as far as encoding/json tells them apart.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ty {
    String,
    Int,
    Float,
    Bool,
    /// `[]byte`: base64 in JSON, written as given.
    Bytes,
    /// `resource.Quantity`: a struct written as a string.
    Quantity,
    /// `intstr.IntOrString`: a struct written as a number or a string (zero: `0`).
    IntOrString,
    /// `metav1.Time`: a struct written as a string (zero: `null`).
    Time,
    /// Anything else: written as given.
    Raw,
    Ptr(Box<Ty>),
    Slice(Box<Ty>),
    Map(Box<Ty>),
    Struct(&'static str),
}

/// One field of a Go struct: its JSON name, whether it is `omitempty`, and its type.
#[derive(Debug)]
struct Field {
    name: &'static str,
    omit_empty: bool,
    ty: Ty,
}

fn parse_ty(s: &'static str) -> Ty {
    if let Some(rest) = s.strip_prefix('*') {
        return Ty::Ptr(Box::new(parse_ty(rest)));
    }
    if let Some(rest) = s.strip_prefix("[]") {
        return Ty::Slice(Box::new(parse_ty(rest)));
    }
    if let Some(rest) = s.strip_prefix("map[]") {
        return Ty::Map(Box::new(parse_ty(rest)));
    }
    match s {
        "string" => Ty::String,
        "int" => Ty::Int,
        "float" => Ty::Float,
        "bool" => Ty::Bool,
        "bytes" => Ty::Bytes,
        "quantity" => Ty::Quantity,
        "intstr" => Ty::IntOrString,
        "time" => Ty::Time,
        "raw" => Ty::Raw,
        name => Ty::Struct(name),
    }
}

/// The structs of `go_types.txt`, by name, their fields in order.
fn structs() -> &'static HashMap<&'static str, Vec<Field>> {
    static TABLE: OnceLock<HashMap<&'static str, Vec<Field>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table: HashMap<&'static str, Vec<Field>> = HashMap::new();
        for line in include_str!("go_types.txt").lines() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let mut cols = line.split('\t');
            let (Some(owner), Some(name), Some(flag), Some(ty)) =
                (cols.next(), cols.next(), cols.next(), cols.next())
            else {
                continue;
            };
            table.entry(owner).or_default().push(Field {
                name,
                omit_empty: flag == "o",
                ty: parse_ty(ty),
            });
        }
        table
    })
}

/// What `json.Marshal` writes for `v` decoded into the Go struct `ty` (one of
/// [`POD_TEMPLATE`], [`SANDBOX_BLUEPRINT`]).
pub(crate) fn marshal(ty: &'static str, v: &Value) -> String {
    let mut out = String::new();
    encode(&Ty::Struct(ty), Some(v), &mut out);
    out
}

/// A present, non-null value.
fn given(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn encode(ty: &Ty, v: Option<&Value>, out: &mut String) {
    let v = given(v);
    match ty {
        Ty::Ptr(inner) => match v {
            Some(v) => encode(inner, Some(v), out),
            None => out.push_str("null"),
        },
        Ty::Slice(inner) => match v {
            Some(Value::Array(items)) => {
                write_go_array(items, out, |item, out| encode(inner, Some(item), out))
            }
            Some(other) => write_go_json(other, out),
            None => out.push_str("null"),
        },
        Ty::Map(inner) => match v {
            Some(Value::Object(m)) => write_go_map(m, out, |x, out| encode(inner, Some(x), out)),
            Some(other) => write_go_json(other, out),
            None => out.push_str("null"),
        },
        Ty::Struct(name) => encode_struct(name, v, out),
        Ty::String => match v {
            Some(v) => write_go_json(v, out),
            None => out.push_str("\"\""),
        },
        Ty::Int | Ty::Float | Ty::IntOrString => match v {
            Some(v) => write_go_json(v, out),
            None => out.push('0'),
        },
        Ty::Bool => match v {
            Some(v) => write_go_json(v, out),
            None => out.push_str("false"),
        },
        Ty::Quantity => match v {
            Some(Value::Number(n)) => write_go_string(&n.to_string(), out),
            Some(v) => write_go_json(v, out),
            None => out.push_str("\"0\""),
        },
        Ty::Bytes | Ty::Time | Ty::Raw => match v {
            Some(v) => write_go_json(v, out),
            None => out.push_str("null"),
        },
    }
}

fn encode_struct(name: &str, v: Option<&Value>, out: &mut String) {
    let obj = v.and_then(Value::as_object);
    let Some(fields) = structs().get(name) else {
        // Not in the table: cannot happen for the roots' reachable types.
        match v {
            Some(v) => write_go_json(v, out),
            None => out.push_str("{}"),
        }
        return;
    };
    out.push('{');
    let mut first = true;
    for f in fields {
        let value = obj.and_then(|o| o.get(f.name));
        if f.omit_empty && is_empty(&f.ty, value) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        write_go_string(f.name, out);
        out.push(':');
        encode(&f.ty, value, out);
    }
    out.push('}');
}

/// Whether `omitempty` leaves the field out: nil, false, zero, or an empty string, slice or
/// map. Structs are never empty.
fn is_empty(ty: &Ty, v: Option<&Value>) -> bool {
    let Some(v) = given(v) else {
        return !matches!(
            ty,
            Ty::Struct(_) | Ty::Quantity | Ty::IntOrString | Ty::Time | Ty::Raw
        );
    };
    match ty {
        Ty::String | Ty::Bytes => v.as_str().is_some_and(str::is_empty),
        Ty::Int | Ty::Float => v.as_f64().is_some_and(|n| n == 0.0),
        Ty::Bool => v == &Value::Bool(false),
        Ty::Slice(_) => v.as_array().is_some_and(Vec::is_empty),
        Ty::Map(_) => v.as_object().is_some_and(serde_json::Map::is_empty),
        Ty::Ptr(_) | Ty::Struct(_) | Ty::Quantity | Ty::IntOrString | Ty::Time | Ty::Raw => false,
    }
}

#[cfg(test)]
mod tests;
