//! Entry points for the fuzz targets of `fakekube/fuzz/` (cargo-fuzz), compiled only with the
//! `fuzzing` feature (never a default) and in this crate's tests, which replay the committed
//! corpus through the same functions. Each takes arbitrary bytes, drives one parser or decoder
//! that meets untrusted input, and must return without panicking whatever the bytes are; where
//! a parser has a property worth checking (a printed selector parses back to itself), it is
//! asserted here, so the fuzzer reports its violation as a crash.
//!
//! Not an API: the functions and their input layouts may change with the fuzz targets.

use crate::patch::{MergeKeys, PatchKind, apply_patch};
use crate::selector::{FieldSelector, LabelSelector};
use crate::spdy::frame::{self, Frame};
use crate::spdy::headers::Decompressor;
use crate::websocket::Reader;
use fakekube_kubelet::exec::codec::{self, Protocol, ResizeDecoder};
use futures_util::FutureExt;
use serde_json::{Value, json};

/// A fuzz target: its name and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// The fuzz targets, by name: what `fakekube/fuzz/fuzz_targets/<name>.rs` calls and what the
/// corpus directories `fakekube/fuzz/{seeds,regressions}/<name>/` are named for.
pub const TARGETS: &[Target] = &[
    ("websocket_frames", websocket_frames),
    ("exec_channels", exec_channels),
    ("spdy_frames", spdy_frames),
    ("selectors", selectors),
    ("patches", patches),
    ("schema", schema),
    ("cel", cel),
    ("protobuf", protobuf),
    ("request_body", request_body),
    ("request_parameters", request_parameters),
];

/// Splits `data` at its first NUL byte (the layout of two-part inputs); without one, the
/// second part is empty.
fn split_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// A client's bytes on an exec WebSocket: frames read and reassembled as the server reads
/// them, each message then decoded in every channel framing, resize messages fed to the
/// resize stream.
pub fn websocket_frames(data: &[u8]) {
    let mut reader = Reader::new(data);
    let mut resize = ResizeDecoder::default();
    // Reading an in-memory slice never waits: each call completes on its first poll.
    while let Some(Ok(Some(message))) = reader.next().now_or_never() {
        if let crate::websocket::Message::Binary(m) | crate::websocket::Message::Text(m) = message {
            for protocol in PROTOCOLS {
                if let Ok(codec::Inbound::Data { channel, payload }) = codec::decode(protocol, &m)
                    && channel == codec::RESIZE
                {
                    resize.push(&payload);
                }
            }
        }
    }
}

/// Every channel framing the server speaks.
const PROTOCOLS: [Protocol; 6] = [
    Protocol::V5,
    Protocol::V4,
    Protocol::V4Base64,
    Protocol::Channel,
    Protocol::Base64,
    Protocol::Unnamed,
];

/// One exec message in the framing the first byte picks, then the rest of the bytes as the
/// resize channel's JSON stream, split where the message says; also the exec query string and
/// the subprotocol offer.
pub fn exec_channels(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let protocol = PROTOCOLS[usize::from(pick) % PROTOCOLS.len()];
    let _ = codec::decode(protocol, rest);
    let mut resize = ResizeDecoder::default();
    let cut = usize::from(pick).min(rest.len());
    resize.push(&rest[..cut]);
    resize.push(&rest[cut..]);
    let text = String::from_utf8_lossy(rest);
    let _ = fakekube_kubelet::exec::parse_options(Some(&text));
    let offered: Vec<&str> = text.split('\n').collect();
    let offer = codec::offered(&offered);
    let names: Vec<String> = text.split(',').map(|s| s.trim().to_string()).collect();
    let _ = codec::negotiate(&names, pick & 1 == 0);
    let _ = offer;
}

/// A client's bytes on a SPDY/3.1 connection: frames parsed one after another, every header
/// block decompressed through the connection's one zlib context.
pub fn spdy_frames(data: &[u8]) {
    let mut buf = data;
    let mut inflate = Decompressor::new();
    while let Ok(Some((f, used))) = frame::parse(buf) {
        assert!(used > 0 && used <= buf.len(), "a frame took {used} bytes");
        if let Frame::SynStream { headers, .. }
        | Frame::SynReply { headers, .. }
        | Frame::Headers { headers, .. } = &f
        {
            let _ = inflate.decompress(headers);
        }
        buf = &buf[used..];
    }
}

/// A label selector and a field selector (split at the first NUL): parsed, matched against a
/// few objects, and, when parsed, printed and parsed again to the same selector.
pub fn selectors(data: &[u8]) {
    let (labels, fields) = split_nul(data);
    let labels = String::from_utf8_lossy(labels);
    let fields = String::from_utf8_lossy(fields);
    let objects = [
        json!({}),
        json!({"app": "web", "tier": "front", "version": "2"}),
        json!({"a.b/c": "", "x": "y"}),
    ];
    if let Ok(sel) = LabelSelector::parse(&labels) {
        for o in &objects {
            let _ = sel.matches(o.as_object());
        }
        let printed = sel.to_string();
        let again = LabelSelector::parse(&printed)
            .unwrap_or_else(|e| panic!("{printed:?}, printed from {labels:?}, fails: {e}"));
        assert_eq!(
            again.to_string(),
            printed,
            "printing is not stable for {labels:?}"
        );
    }
    if let Ok(sel) = FieldSelector::parse(&fields) {
        let _ = sel.check_supported(&["metadata.name", "metadata.namespace", "status.phase"]);
        let _ = sel.matches(|f| (f == "metadata.name").then(|| "web-1".to_string()));
    }
}

/// A target object and a patch (split at the first NUL), both JSON, applied with each patch
/// kind and a pod's merge keys.
pub fn patches(data: &[u8]) {
    let (target, patch) = split_nul(data);
    let Ok(target) = serde_json::from_slice::<Value>(target) else {
        return;
    };
    let Ok(patch) = serde_json::from_slice::<Value>(patch) else {
        return;
    };
    let keys = MergeKeys::for_core_kind("Pod");
    for kind in PatchKind::ALL {
        if let Ok(out) = apply_patch(kind, &target, &patch, &keys) {
            assert!(out.is_object(), "{kind:?} patched to a non-object");
        }
    }
    let _ = apply_patch(
        PatchKind::StrategicMerge,
        &target,
        &patch,
        &MergeKeys::from_schema(&patch),
    );
}

/// A CRD's `openAPIV3Schema` and an object (split at the first NUL), both JSON: the schema
/// checked, and when structural, the object pruned, defaulted and validated (CEL rules too)
/// against it, as a create and as an update from itself.
pub fn schema(data: &[u8]) {
    let (schema, object) = split_nul(data);
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let object = serde_json::from_slice::<Value>(object).unwrap_or(Value::Null);
    check_against(&schema, object);
}

/// Runs a schema's steps on `object`, as the store does on a write.
fn check_against(schema: &Value, mut object: Value) {
    let Ok(compiled) = crate::schema::compile(schema) else {
        return;
    };
    let _ = compiled.prune(&mut object);
    compiled.apply_defaults(&mut object);
    let _ = compiled.validate(&object, None);
    let _ = compiled.validate(&object, Some(&object));
    let _ = compiled.defaulted(&object);
}

/// A CEL rule (the bytes up to the first NUL) in `x-kubernetes-validations` at the root of
/// a schema that keeps unknown fields, checked against the object after the NUL (JSON; an
/// object with a few fields of each type when absent or invalid).
pub fn cel(data: &[u8]) {
    let (rule, object) = split_nul(data);
    let rule = String::from_utf8_lossy(rule);
    let schema = json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-validations": [{ "rule": rule, "message": "m" }],
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "properties": {
                    "replicas": { "type": "integer" },
                    "name": { "type": "string" },
                    "items": { "type": "array", "items": { "type": "string" } }
                }
            }
        }
    });
    let object = serde_json::from_slice::<Value>(object).unwrap_or_else(|_| {
        json!({
            "apiVersion": "x.io/v1", "kind": "X", "metadata": { "name": "a" },
            "spec": { "replicas": 3, "name": "web", "items": ["a", "b"] }
        })
    });
    check_against(&schema, object);
}

/// A protobuf body as kubectl sends one (`k8s\0` and a `runtime.Unknown`).
pub fn protobuf(data: &[u8]) {
    let _ = crate::protobuf::decode(data);
}

pub use fakekube_apiserver::fuzzing::{request_body, request_parameters};

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every file under `fakekube/fuzz/seeds/<target>/` and `fakekube/fuzz/regressions/<target>/`.
    fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut out = Vec::new();
        for dir in ["seeds", "regressions"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                if path.is_file() {
                    let bytes = std::fs::read(&path).expect("a corpus file reads");
                    out.push((path.display().to_string(), bytes));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn every_fuzz_target_survives_its_committed_seeds_and_regressions() {
        let mut fed = 0;
        for (name, run) in TARGETS {
            let files = corpus(name);
            assert!(
                !files.is_empty(),
                "fakekube/fuzz/seeds/{name}/ holds no input"
            );
            for (path, bytes) in files {
                let outcome = std::panic::catch_unwind(|| run(&bytes));
                assert!(outcome.is_ok(), "{name} panicked on {path}");
                fed += 1;
            }
        }
        assert!(fed >= TARGETS.len());
    }

    #[test]
    fn every_fuzz_target_has_a_cargo_fuzz_binary() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
        for (name, _) in TARGETS {
            assert!(
                dir.join(format!("{name}.rs")).is_file(),
                "fakekube/fuzz/fuzz_targets/{name}.rs is missing"
            );
        }
    }
}
