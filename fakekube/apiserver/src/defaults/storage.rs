//! The defaults and validation of the CSI kinds of `storage.k8s.io/v1` (pkg/apis/storage/v1's
//! defaults and pkg/apis/storage/validation): CSIDriver, CSINode, CSIStorageCapacity and
//! VolumeAttachment. StorageClasses are stored as written.

use super::errs::Errs;
use super::{quantity, set_default};
use crate::meta;
use crate::status::Cause;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Defaults and checks one CSI kind; the causes of a 422, empty when admitted.
pub(super) fn admit(kind: &str, obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    match kind {
        "CSIDriver" => csi_driver(obj, old),
        "CSINode" => csi_node(obj, old),
        "CSIStorageCapacity" => capacity(obj, old),
        "VolumeAttachment" => attachment(obj, old),
        _ => Vec::new(),
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// `field is immutable` for `field` when `new` and `old` differ at `pointer`.
fn immutable(
    e: &mut Errs,
    new: &Value,
    old: Option<&Value>,
    pointer: &str,
    field: &str,
    shown: Value,
) {
    if let Some(old) = old
        && new.pointer(pointer) != old.pointer(pointer)
    {
        e.invalid(field, &shown, "field is immutable");
    }
}

/// A name checked as a DNS subdomain, its cause moved to `field`.
fn subdomain(e: &mut Errs, name: &str, field: &str) {
    if let Some(mut c) = meta::validate_name(name, false) {
        c.field = Some(field.into());
        e.0.push(c);
    }
}

fn csi_driver(obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let mut e = Errs::default();
    if let Some(o) = obj.as_object_mut() {
        set_default(o, "spec", json!({}));
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        set_default(spec, "attachRequired", json!(true));
        set_default(spec, "podInfoOnMount", json!(false));
        set_default(spec, "storageCapacity", json!(false));
        set_default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
        set_default(spec, "requiresRepublish", json!(false));
        set_default(spec, "volumeLifecycleModes", json!(["Persistent"]));
        set_default(spec, "seLinuxMount", json!(false));
    }
    let obj = &*obj;
    if let Some(p) = obj.pointer("/spec/fsGroupPolicy").filter(|p| !p.is_null())
        && !p
            .as_str()
            .is_some_and(|p| ["File", "None", "ReadWriteOnceWithFSType"].contains(&p))
    {
        e.not_supported(
            "spec.fsGroupPolicy",
            p,
            &["File", "None", "ReadWriteOnceWithFSType"],
        );
    }
    let mut audiences = BTreeSet::new();
    for (i, t) in obj
        .pointer("/spec/tokenRequests")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("spec.tokenRequests[{i}]");
        let audience = text(t, "/audience").unwrap_or("");
        if !audiences.insert(audience.to_string()) {
            e.duplicate(&format!("{at}.audience"), &json!(audience));
            continue;
        }
        if let Some(s) = t.get("expirationSeconds").and_then(Value::as_i64) {
            if s < 600 {
                e.invalid(
                    &format!("{at}.expirationSeconds"),
                    &json!(s),
                    "may not specify a duration less than 10 minutes",
                );
            }
            if s > 1 << 32 {
                e.invalid(
                    &format!("{at}.expirationSeconds"),
                    &json!(s),
                    "may not specify a duration larger than 2^32 seconds",
                );
            }
        }
    }
    for m in obj
        .pointer("/spec/volumeLifecycleModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !m
            .as_str()
            .is_some_and(|m| m == "Persistent" || m == "Ephemeral")
        {
            e.not_supported("spec.volumeLifecycleModes", m, &["Persistent", "Ephemeral"]);
        }
    }
    if let Some(p) = obj
        .pointer("/spec/nodeAllocatableUpdatePeriodSeconds")
        .and_then(Value::as_i64)
        && p < 10
    {
        e.invalid(
            "spec.nodeAllocatableUpdatePeriodSeconds",
            &json!(p),
            "must be greater than or equal to 10 seconds",
        );
    }
    // Upstream's field path says `attachedRequired`.
    let attach = obj
        .pointer("/spec/attachRequired")
        .cloned()
        .unwrap_or(Value::Null);
    immutable(
        &mut e,
        obj,
        old,
        "/spec/attachRequired",
        "spec.attachedRequired",
        attach,
    );
    let modes: Vec<String> = obj
        .pointer("/spec/volumeLifecycleModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| format!("\"{}\"", m.as_str().unwrap_or("")))
        .collect();
    immutable(
        &mut e,
        obj,
        old,
        "/spec/volumeLifecycleModes",
        "spec.volumeLifecycleModes",
        json!(format!(
            "[]storage.VolumeLifecycleMode{{{}}}",
            modes.join(", ")
        )),
    );
    e.0
}

fn csi_node(obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let mut e = Errs::default();
    let mut names = BTreeSet::new();
    let drivers: Vec<Value> = obj
        .pointer("/spec/drivers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, d) in drivers.iter().enumerate() {
        let at = format!("spec.drivers[{i}]");
        let name = text(d, "/name").unwrap_or("");
        subdomain(&mut e, name, &format!("{at}.name"));
        let id = text(d, "/nodeID").unwrap_or("");
        if id.is_empty() {
            e.required(&format!("{at}.nodeID"), "");
        } else if id.len() > 192 {
            e.invalid(
                &format!("{at}.nodeID"),
                &json!(id),
                "must be 192 characters or less",
            );
        }
        if let Some(n) = d.pointer("/allocatable/count").and_then(Value::as_i64)
            && n < 0
        {
            e.invalid(
                &format!("{at}.allocatable.count"),
                &json!(n),
                "must be greater than or equal to 0",
            );
        }
        if !names.insert(name.to_string()) {
            e.duplicate(&format!("{at}.name"), &json!(name));
        }
        let mut keys = BTreeSet::new();
        for k in d
            .get("topologyKeys")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if k.is_empty() {
                e.required(&at, "");
            }
            if !keys.insert(k) {
                e.duplicate(&at, &json!(k));
            }
        }
        // A driver already registered keeps its fields (its allocatable count may change).
        if let Some(before) = old
            .and_then(|o| o.pointer("/spec/drivers"))
            .and_then(Value::as_array)
            .and_then(|l| l.iter().find(|o| text(o, "/name") == Some(name)))
        {
            let strip = |v: &Value| {
                let mut v = v.clone();
                if let Some(m) = v.as_object_mut() {
                    m.remove("allocatable");
                }
                v
            };
            if strip(before) != strip(d) {
                e.invalid("spec.drivers", d, "field is immutable");
            }
        }
    }
    e.0
}

fn capacity(obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let mut e = Errs::default();
    let obj = &*obj;
    let class = text(obj, "/storageClassName").unwrap_or("");
    subdomain(&mut e, class, "storageClassName");
    if let Some(sel) = obj.get("nodeTopology").filter(|s| !s.is_null())
        && let Err(why) = crate::selector::LabelSelector::from_object(sel)
    {
        e.invalid("nodeTopology", sel, &why);
    }
    for key in ["capacity", "maximumVolumeSize"] {
        if let Some(q) = obj.get(key).filter(|q| !q.is_null()) {
            match quantity::parse(q) {
                Ok(n) if n.sign() < 0 => {
                    e.invalid(key, q, "must be greater than or equal to 0");
                }
                Ok(_) => {}
                Err(why) => e.invalid(key, q, &why),
            }
        }
    }
    let topology = obj.get("nodeTopology").cloned().unwrap_or(Value::Null);
    immutable(&mut e, obj, old, "/nodeTopology", "nodeTopology", topology);
    immutable(
        &mut e,
        obj,
        old,
        "/storageClassName",
        "storageClassName",
        json!(class),
    );
    e.0
}

fn attachment(obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let mut e = Errs::default();
    let obj = &*obj;
    let attacher = text(obj, "/spec/attacher").unwrap_or("");
    if attacher.is_empty() {
        e.required("spec.attacher", "");
    } else {
        subdomain(&mut e, attacher, "spec.attacher");
    }
    let pv = obj
        .pointer("/spec/source/persistentVolumeName")
        .filter(|v| !v.is_null());
    let inline = obj
        .pointer("/spec/source/inlineVolumeSpec")
        .filter(|v| !v.is_null());
    let why = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (pv, inline) {
        (None, None) => e.required("spec.source", why),
        (Some(_), Some(_)) => e.forbidden("spec.source", why),
        (Some(pv), None) => {
            let name = pv.as_str().unwrap_or("");
            if name.is_empty() {
                e.required(
                    "spec.source.persistentVolumeName",
                    "must specify non empty persistentVolumeName",
                );
            } else {
                subdomain(&mut e, name, "spec.source.persistentVolumeName");
            }
        }
        (None, Some(_)) => {}
    }
    let node = text(obj, "/spec/nodeName").unwrap_or("");
    subdomain(&mut e, node, "spec.nodeName");
    for key in ["attachError", "detachError"] {
        if let Some(code) = obj
            .pointer(&format!("/status/{key}/errorCode"))
            .and_then(Value::as_i64)
            && code < 0
        {
            e.invalid(
                &format!("status.{key}.errorCode"),
                &json!(code),
                "must be between 0 and 2147483647, inclusive",
            );
        }
    }
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    immutable(&mut e, obj, old, "/spec", "spec", spec);
    e.0
}
