//! Just enough of Kubernetes' protobuf encoding to read the request bodies client-go sends as
//! protobuf even when it talks JSON everywhere else: TokenRequest (`kubectl create token`) and
//! the self-subject reviews (`kubectl auth can-i`). Responses are always JSON, which client-go
//! decodes by the response's content type.

use serde_json::{Value, json};

/// The four bytes before every Kubernetes protobuf body.
const MAGIC: &[u8] = b"k8s\x00";

/// Why a protobuf body could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ProtobufError {
    /// The body does not start with the Kubernetes magic.
    #[error("the body is not a Kubernetes protobuf object (missing the k8s magic)")]
    NoMagic,
    /// The wire data ends in the middle of a field or uses a wire type protobuf does not have.
    #[error("malformed protobuf data")]
    Malformed,
    /// The kind in the envelope is not one fakekube reads as protobuf.
    #[error("protobuf bodies are accepted only for TokenRequest and self-subject reviews, not {0}")]
    UnsupportedKind(String),
}

/// One field as read off the wire.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Other,
}

/// Reads the fields of one message, in order.
fn fields(mut buf: &[u8]) -> Result<Vec<(u64, Field<'_>)>, ProtobufError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let (num, wire) = (key >> 3, key & 7);
        let f = match wire {
            0 => Field::Varint(varint(&mut buf)?),
            1 => {
                buf = buf.get(8..).ok_or(ProtobufError::Malformed)?;
                Field::Other
            }
            2 => {
                let len =
                    usize::try_from(varint(&mut buf)?).map_err(|_| ProtobufError::Malformed)?;
                let (data, rest) = (
                    buf.get(..len).ok_or(ProtobufError::Malformed)?,
                    buf.get(len..).ok_or(ProtobufError::Malformed)?,
                );
                buf = rest;
                Field::Bytes(data)
            }
            5 => {
                buf = buf.get(4..).ok_or(ProtobufError::Malformed)?;
                Field::Other
            }
            _ => return Err(ProtobufError::Malformed),
        };
        out.push((num, f));
    }
    Ok(out)
}

fn varint(buf: &mut &[u8]) -> Result<u64, ProtobufError> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let (&b, rest) = buf.split_first().ok_or(ProtobufError::Malformed)?;
        *buf = rest;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(ProtobufError::Malformed)
}

fn bytes_of<'a>(fs: &[(u64, Field<'a>)], num: u64) -> Option<&'a [u8]> {
    fs.iter().rev().find_map(|(n, f)| match f {
        Field::Bytes(b) if *n == num => Some(*b),
        _ => None,
    })
}

fn string_of(fs: &[(u64, Field<'_>)], num: u64) -> Option<String> {
    bytes_of(fs, num).map(|b| String::from_utf8_lossy(b).into_owned())
}

fn strings_of(fs: &[(u64, Field<'_>)], num: u64) -> Vec<String> {
    fs.iter()
        .filter_map(|(n, f)| match f {
            Field::Bytes(b) if *n == num => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        })
        .collect()
}

fn varint_of(fs: &[(u64, Field<'_>)], num: u64) -> Option<u64> {
    fs.iter().rev().find_map(|(n, f)| match f {
        Field::Varint(v) if *n == num => Some(*v),
        _ => None,
    })
}

fn object_meta(raw: Option<&[u8]>) -> Result<Value, ProtobufError> {
    let fs = fields(raw.unwrap_or_default())?;
    let mut md = json!({});
    if let Some(name) = string_of(&fs, 1) {
        md["name"] = json!(name);
    }
    if let Some(ns) = string_of(&fs, 3) {
        md["namespace"] = json!(ns);
    }
    Ok(md)
}

/// Decodes a protobuf request body into the JSON object it stands for.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let rest = body.strip_prefix(MAGIC).ok_or(ProtobufError::NoMagic)?;
    let unknown = fields(rest)?;
    let type_meta = fields(bytes_of(&unknown, 1).unwrap_or_default())?;
    let api_version = string_of(&type_meta, 1).unwrap_or_default();
    let kind = string_of(&type_meta, 2).unwrap_or_default();
    let raw = fields(bytes_of(&unknown, 2).unwrap_or_default())?;
    let metadata = object_meta(bytes_of(&raw, 1))?;
    let spec = fields(bytes_of(&raw, 2).unwrap_or_default())?;
    let spec_json = match kind.as_str() {
        "TokenRequest" => {
            let mut s = json!({ "audiences": strings_of(&spec, 1) });
            if let Some(secs) = varint_of(&spec, 4) {
                s["expirationSeconds"] = json!(secs);
            }
            s
        }
        "SelfSubjectAccessReview" => {
            let mut s = json!({});
            if let Some(ra) = bytes_of(&spec, 1) {
                let ra = fields(ra)?;
                let names = [
                    "namespace",
                    "verb",
                    "group",
                    "version",
                    "resource",
                    "subresource",
                    "name",
                ];
                let mut o = serde_json::Map::new();
                for (i, n) in names.iter().enumerate() {
                    if let Some(v) = string_of(&ra, i as u64 + 1) {
                        o.insert((*n).to_string(), json!(v));
                    }
                }
                s["resourceAttributes"] = Value::Object(o);
            }
            if let Some(nra) = bytes_of(&spec, 2) {
                let nra = fields(nra)?;
                s["nonResourceAttributes"] = json!({
                    "path": string_of(&nra, 1).unwrap_or_default(),
                    "verb": string_of(&nra, 2).unwrap_or_default(),
                });
            }
            s
        }
        "SelfSubjectRulesReview" => json!({ "namespace": string_of(&spec, 1).unwrap_or_default() }),
        other => return Err(ProtobufError::UnsupportedKind(other.to_string())),
    };
    Ok(json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec_json }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ld(num: u64, data: &[u8]) -> Vec<u8> {
        let mut out = vec![(num << 3 | 2) as u8, data.len() as u8];
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn token_request_expiration_and_audiences_are_read() {
        let spec = [ld(1, b"api"), vec![4 << 3, 0x90, 0x1c]].concat(); // expirationSeconds = 3600
        let raw = [ld(1, &ld(1, b"default")), ld(2, &spec)].concat();
        let tm = [ld(1, b"authentication.k8s.io/v1"), ld(2, b"TokenRequest")].concat();
        let body = [MAGIC.to_vec(), ld(1, &tm), ld(2, &raw)].concat();
        let v = decode(&body).expect("decodes");
        assert_eq!(v["kind"], "TokenRequest");
        assert_eq!(v["spec"]["expirationSeconds"], 3600);
        assert_eq!(v["spec"]["audiences"], json!(["api"]));
        assert_eq!(v["metadata"]["name"], "default");
    }

    #[test]
    fn access_review_resource_attributes_are_read() {
        let ra = [
            ld(1, b"ns"),
            ld(2, b"create"),
            ld(5, b"pods"),
            ld(6, b"exec"),
        ]
        .concat();
        let raw = ld(2, &ld(1, &ra));
        let tm = ld(2, b"SelfSubjectAccessReview");
        let body = [MAGIC.to_vec(), ld(1, &tm), ld(2, &raw)].concat();
        let v = decode(&body).expect("decodes");
        assert_eq!(
            v["spec"]["resourceAttributes"],
            json!({"namespace": "ns", "verb": "create", "resource": "pods", "subresource": "exec"})
        );
    }

    #[test]
    fn other_kinds_and_bodies_without_magic_are_refused() {
        assert_eq!(decode(b"{}"), Err(ProtobufError::NoMagic));
        let body = [MAGIC.to_vec(), ld(1, &ld(2, b"Pod"))].concat();
        assert_eq!(
            decode(&body),
            Err(ProtobufError::UnsupportedKind("Pod".into()))
        );
    }

    proptest! {
        #[test]
        fn junk_after_the_magic_never_panics(junk in proptest::collection::vec(any::<u8>(), 0..256)) {
            let body = [MAGIC.to_vec(), junk].concat();
            let _ = decode(&body);
        }
    }
}
