//! Just enough of Kubernetes' protobuf encoding to read the request bodies client-go sends as
//! protobuf even when it talks JSON everywhere else: TokenRequest (`kubectl create token`), the
//! self-subject reviews (`kubectl auth can-i`, `kubectl auth whoami`), and the kinds
//! `kubectl create <kind>` builds (Namespace, Secret, ConfigMap, ServiceAccount, Service, Role,
//! ClusterRole, RoleBinding, ClusterRoleBinding, Deployment, Job, CronJob,
//! PodDisruptionBudget, ResourceQuota, Ingress; only the fields those commands set). Responses are always JSON, which client-go
//! decodes by the response's content type.

use base64::Engine;
use serde_json::{Value, json};

/// The four bytes before every Kubernetes protobuf body.
const MAGIC: &[u8] = b"k8s\x00";

/// Why a protobuf body could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtobufError {
    /// The body does not start with the Kubernetes magic.
    #[error("the body is not a Kubernetes protobuf object (missing the k8s magic)")]
    NoMagic,
    /// The wire data ends in the middle of a field or uses a wire type protobuf does not have.
    #[error("malformed protobuf data")]
    Malformed,
    /// The kind in the envelope is not one fakekube reads as protobuf.
    #[error("fakekube reads protobuf bodies only for the kinds kubectl sends that way, not {0}")]
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

fn string_map(
    fs: &[(u64, Field<'_>)],
    num: u64,
) -> Result<serde_json::Map<String, Value>, ProtobufError> {
    let mut out = serde_json::Map::new();
    for (n, f) in fs {
        if let Field::Bytes(entry) = f
            && *n == num
        {
            let e = fields(entry)?;
            out.insert(
                string_of(&e, 1).unwrap_or_default(),
                json!(string_of(&e, 2).unwrap_or_default()),
            );
        }
    }
    Ok(out)
}

fn messages<'a>(fs: &[(u64, Field<'a>)], num: u64) -> Vec<&'a [u8]> {
    fs.iter()
        .filter_map(|(n, f)| match f {
            Field::Bytes(b) if *n == num => Some(*b),
            _ => None,
        })
        .collect()
}

fn object_meta(raw: Option<&[u8]>) -> Result<Value, ProtobufError> {
    let fs = fields(raw.unwrap_or_default())?;
    let mut md = json!({});
    for (num, key) in [
        (1, "name"),
        (2, "generateName"),
        (3, "namespace"),
        (6, "resourceVersion"),
    ] {
        if let Some(v) = string_of(&fs, num).filter(|v| !v.is_empty()) {
            md[key] = json!(v);
        }
    }
    for (num, key) in [(11, "labels"), (12, "annotations")] {
        let m = string_map(&fs, num)?;
        if !m.is_empty() {
            md[key] = Value::Object(m);
        }
    }
    let finalizers = strings_of(&fs, 14);
    if !finalizers.is_empty() {
        md["finalizers"] = json!(finalizers);
    }
    Ok(md)
}

fn int_or_string(raw: &[u8]) -> Result<Value, ProtobufError> {
    let fs = fields(raw)?;
    Ok(match varint_of(&fs, 1) {
        Some(1) => json!(string_of(&fs, 3).unwrap_or_default()),
        _ => json!(varint_of(&fs, 2).map(|v| v as i64).unwrap_or(0)),
    })
}

fn service_spec(fs: &[(u64, Field<'_>)]) -> Result<Value, ProtobufError> {
    let mut spec = json!({});
    let mut ports = Vec::new();
    for p in messages(fs, 1) {
        let pf = fields(p)?;
        let mut port = json!({});
        if let Some(n) = string_of(&pf, 1) {
            port["name"] = json!(n);
        }
        if let Some(proto) = string_of(&pf, 2) {
            port["protocol"] = json!(proto);
        }
        if let Some(n) = varint_of(&pf, 3) {
            port["port"] = json!(n);
        }
        if let Some(t) = bytes_of(&pf, 4) {
            port["targetPort"] = int_or_string(t)?;
        }
        ports.push(port);
    }
    if !ports.is_empty() {
        spec["ports"] = json!(ports);
    }
    let selector = string_map(fs, 2)?;
    if !selector.is_empty() {
        spec["selector"] = Value::Object(selector);
    }
    if let Some(ip) = string_of(fs, 3) {
        spec["clusterIP"] = json!(ip);
    }
    if let Some(t) = string_of(fs, 4) {
        spec["type"] = json!(t);
    }
    Ok(spec)
}

/// The non-empty strings of fields `keys` (number, JSON name) as a JSON object.
fn non_empty_strings(fs: &[(u64, Field<'_>)], keys: &[(u64, &str)]) -> Value {
    let mut o = serde_json::Map::new();
    for (num, key) in keys {
        if let Some(v) = string_of(fs, *num).filter(|v| !v.is_empty()) {
            o.insert((*key).to_string(), json!(v));
        }
    }
    Value::Object(o)
}

/// The fields of the RBAC kinds (`rbac.authorization.k8s.io/v1`) after `metadata`: a role's
/// `rules` (2) and `aggregationRule` (3), a binding's `subjects` (2) and `roleRef` (3).
fn rbac_fields(kind: &str, raw: &[(u64, Field<'_>)], obj: &mut Value) -> Result<(), ProtobufError> {
    if kind.ends_with("Binding") {
        let mut subjects = Vec::new();
        for s in messages(raw, 2) {
            let f = fields(s)?;
            subjects.push(non_empty_strings(
                &f,
                &[(1, "kind"), (2, "apiGroup"), (3, "name"), (4, "namespace")],
            ));
        }
        obj["subjects"] = json!(subjects);
        let role_ref = fields(bytes_of(raw, 3).unwrap_or_default())?;
        obj["roleRef"] = non_empty_strings(&role_ref, &[(1, "apiGroup"), (2, "kind"), (3, "name")]);
        return Ok(());
    }
    let mut rules = Vec::new();
    for r in messages(raw, 2) {
        let f = fields(r)?;
        let mut rule = serde_json::Map::new();
        for (num, key) in [
            (1, "verbs"),
            (2, "apiGroups"),
            (3, "resources"),
            (4, "resourceNames"),
            (5, "nonResourceURLs"),
        ] {
            let list = strings_of(&f, num);
            if !list.is_empty() {
                rule.insert(key.to_string(), json!(list));
            }
        }
        rules.push(Value::Object(rule));
    }
    obj["rules"] = json!(rules);
    if let Some(agg) = bytes_of(raw, 3) {
        let mut selectors = Vec::new();
        for sel in messages(&fields(agg)?, 1) {
            let f = fields(sel)?;
            let mut s = json!({});
            let labels = string_map(&f, 1)?;
            if !labels.is_empty() {
                s["matchLabels"] = Value::Object(labels);
            }
            let mut exprs = Vec::new();
            for e in messages(&f, 2) {
                let ef = fields(e)?;
                let mut x = non_empty_strings(&ef, &[(1, "key"), (2, "operator")]);
                let values = strings_of(&ef, 3);
                if !values.is_empty() {
                    x["values"] = json!(values);
                }
                exprs.push(x);
            }
            if !exprs.is_empty() {
                s["matchExpressions"] = json!(exprs);
            }
            selectors.push(s);
        }
        obj["aggregationRule"] = json!({ "clusterRoleSelectors": selectors });
    }
    Ok(())
}

/// A `networking.k8s.io/v1` IngressBackend: resource (3), service (4: name 1, port 2 with
/// name 1 or number 2).
fn ingress_backend(raw: &[u8]) -> Result<Value, ProtobufError> {
    let fs = fields(raw)?;
    let mut b = json!({});
    if let Some(svc) = bytes_of(&fs, 4) {
        let sf = fields(svc)?;
        let pf = fields(bytes_of(&sf, 2).unwrap_or_default())?;
        let mut port = json!({});
        if let Some(n) = string_of(&pf, 1).filter(|n| !n.is_empty()) {
            port["name"] = json!(n);
        }
        if let Some(n) = varint_of(&pf, 2) {
            port["number"] = json!(n);
        }
        b["service"] = json!({ "name": string_of(&sf, 1).unwrap_or_default(), "port": port });
    }
    if let Some(r) = bytes_of(&fs, 3) {
        let rf = fields(r)?;
        let mut reference = non_empty_strings(&rf, &[(2, "kind"), (3, "name")]);
        if let Some(g) = string_of(&rf, 1) {
            reference["apiGroup"] = json!(g);
        }
        b["resource"] = reference;
    }
    Ok(b)
}

/// The IngressSpec `kubectl create ingress` sends: defaultBackend (1), tls (2: hosts 1,
/// secretName 2), rules (3: host 1, http 2.1 with paths 1: path 1, backend 2, pathType 3),
/// ingressClassName (4).
fn ingress_spec(fs: &[(u64, Field<'_>)]) -> Result<Value, ProtobufError> {
    let mut s = json!({});
    if let Some(c) = string_of(fs, 4) {
        s["ingressClassName"] = json!(c);
    }
    if let Some(b) = bytes_of(fs, 1) {
        s["defaultBackend"] = ingress_backend(b)?;
    }
    let mut tls = Vec::new();
    for t in messages(fs, 2) {
        let tf = fields(t)?;
        let mut entry = json!({ "hosts": strings_of(&tf, 1) });
        if let Some(secret) = string_of(&tf, 2).filter(|n| !n.is_empty()) {
            entry["secretName"] = json!(secret);
        }
        tls.push(entry);
    }
    if !tls.is_empty() {
        s["tls"] = json!(tls);
    }
    let mut rules = Vec::new();
    for r in messages(fs, 3) {
        let rf = fields(r)?;
        let mut rule = json!({});
        if let Some(h) = string_of(&rf, 1).filter(|h| !h.is_empty()) {
            rule["host"] = json!(h);
        }
        let value = fields(bytes_of(&rf, 2).unwrap_or_default())?;
        if let Some(http) = bytes_of(&value, 1) {
            let hf = fields(http)?;
            let mut paths = Vec::new();
            for p in messages(&hf, 1) {
                let pf = fields(p)?;
                let mut path = non_empty_strings(&pf, &[(1, "path"), (3, "pathType")]);
                path["backend"] = ingress_backend(bytes_of(&pf, 2).unwrap_or_default())?;
                paths.push(path);
            }
            rule["http"] = json!({ "paths": paths });
        }
        rules.push(rule);
    }
    if !rules.is_empty() {
        s["rules"] = json!(rules);
    }
    Ok(s)
}

/// A `metav1.LabelSelector`: `matchLabels` (1) and `matchExpressions` (2: key, operator,
/// values).
fn label_selector(raw: &[u8]) -> Result<Value, ProtobufError> {
    let fs = fields(raw)?;
    let mut sel = json!({});
    let labels = string_map(&fs, 1)?;
    if !labels.is_empty() {
        sel["matchLabels"] = Value::Object(labels);
    }
    let mut exprs = Vec::new();
    for e in messages(&fs, 2) {
        let ef = fields(e)?;
        let mut x = non_empty_strings(&ef, &[(1, "key"), (2, "operator")]);
        let values = strings_of(&ef, 3);
        if !values.is_empty() {
            x["values"] = json!(values);
        }
        exprs.push(x);
    }
    if !exprs.is_empty() {
        sel["matchExpressions"] = json!(exprs);
    }
    Ok(sel)
}

/// A container as `kubectl create deployment|job|cronjob` builds it: name (1), image (2),
/// command (3), args (4), workingDir (5), ports (6: name, containerPort, protocol), env (7:
/// name, value) and imagePullPolicy (14).
fn container(raw: &[u8]) -> Result<Value, ProtobufError> {
    let fs = fields(raw)?;
    let mut c = non_empty_strings(
        &fs,
        &[
            (1, "name"),
            (2, "image"),
            (5, "workingDir"),
            (14, "imagePullPolicy"),
        ],
    );
    for (num, key) in [(3, "command"), (4, "args")] {
        let v = strings_of(&fs, num);
        if !v.is_empty() {
            c[key] = json!(v);
        }
    }
    let mut ports = Vec::new();
    for p in messages(&fs, 6) {
        let pf = fields(p)?;
        let mut port = non_empty_strings(&pf, &[(1, "name"), (4, "protocol")]);
        if let Some(n) = varint_of(&pf, 3) {
            port["containerPort"] = json!(n);
        }
        ports.push(port);
    }
    if !ports.is_empty() {
        c["ports"] = json!(ports);
    }
    let mut env = Vec::new();
    for e in messages(&fs, 7) {
        let ef = fields(e)?;
        let mut var = non_empty_strings(&ef, &[(1, "name")]);
        var["value"] = json!(string_of(&ef, 2).unwrap_or_default());
        env.push(var);
    }
    if !env.is_empty() {
        c["env"] = json!(env);
    }
    Ok(c)
}

/// A `PodTemplateSpec`: metadata (1) and a spec (2) with containers (2), restartPolicy (3),
/// terminationGracePeriodSeconds (4), serviceAccountName (8) and initContainers (20).
fn pod_template(raw: Option<&[u8]>) -> Result<Value, ProtobufError> {
    let fs = fields(raw.unwrap_or_default())?;
    let spec = fields(bytes_of(&fs, 2).unwrap_or_default())?;
    let mut s = non_empty_strings(&spec, &[(3, "restartPolicy"), (8, "serviceAccountName")]);
    for (num, key) in [(2, "containers"), (20, "initContainers")] {
        let cs = messages(&spec, num)
            .into_iter()
            .map(container)
            .collect::<Result<Vec<_>, _>>()?;
        if !cs.is_empty() || num == 2 {
            s[key] = json!(cs);
        }
    }
    if let Some(g) = varint_of(&spec, 4) {
        s["terminationGracePeriodSeconds"] = json!(g);
    }
    Ok(json!({ "metadata": object_meta(bytes_of(&fs, 1))?, "spec": s }))
}

/// Puts the varint fields `keys` (number, JSON name) of `fs` into `obj`.
fn put_varints(fs: &[(u64, Field<'_>)], keys: &[(u64, &str)], obj: &mut Value) {
    for (num, key) in keys {
        if let Some(v) = varint_of(fs, *num) {
            obj[*key] = json!(v);
        }
    }
}

/// A `batch/v1` JobSpec: parallelism (1), completions (2), activeDeadlineSeconds (3),
/// template (6), backoffLimit (7), ttlSecondsAfterFinished (8), completionMode (9), suspend
/// (10).
fn job_spec(fs: &[(u64, Field<'_>)]) -> Result<Value, ProtobufError> {
    let mut s = json!({ "template": pod_template(bytes_of(fs, 6))? });
    put_varints(
        fs,
        &[
            (1, "parallelism"),
            (2, "completions"),
            (3, "activeDeadlineSeconds"),
            (7, "backoffLimit"),
            (8, "ttlSecondsAfterFinished"),
        ],
        &mut s,
    );
    if let Some(m) = string_of(fs, 9).filter(|m| !m.is_empty()) {
        s["completionMode"] = json!(m);
    }
    if let Some(b) = varint_of(fs, 10) {
        s["suspend"] = json!(b != 0);
    }
    Ok(s)
}

/// The specs of the workload kinds `kubectl create` sends as protobuf: Deployment
/// (replicas 1, selector 2, template 3), Job, CronJob (schedule 1, concurrencyPolicy 3,
/// suspend 4, jobTemplate 5) and PodDisruptionBudget (minAvailable 1, selector 2,
/// maxUnavailable 3).
fn workload_spec(kind: &str, fs: &[(u64, Field<'_>)]) -> Result<Value, ProtobufError> {
    Ok(match kind {
        "Deployment" => {
            let mut s = json!({ "template": pod_template(bytes_of(fs, 3))? });
            put_varints(fs, &[(1, "replicas"), (5, "minReadySeconds")], &mut s);
            if let Some(sel) = bytes_of(fs, 2) {
                s["selector"] = label_selector(sel)?;
            }
            s
        }
        "Job" => job_spec(fs)?,
        "CronJob" => {
            let mut s = non_empty_strings(
                fs,
                &[(1, "schedule"), (3, "concurrencyPolicy"), (8, "timeZone")],
            );
            if let Some(b) = varint_of(fs, 4) {
                s["suspend"] = json!(b != 0);
            }
            if let Some(t) = bytes_of(fs, 5) {
                let tf = fields(t)?;
                let spec = fields(bytes_of(&tf, 2).unwrap_or_default())?;
                s["jobTemplate"] = json!({
                    "metadata": object_meta(bytes_of(&tf, 1))?,
                    "spec": job_spec(&spec)?,
                });
            }
            s
        }
        _ => {
            let mut s = json!({});
            if let Some(sel) = bytes_of(fs, 2) {
                s["selector"] = label_selector(sel)?;
            }
            for (num, key) in [(1, "minAvailable"), (3, "maxUnavailable")] {
                if let Some(v) = bytes_of(fs, num) {
                    s[key] = int_or_string(v)?;
                }
            }
            s
        }
    })
}

/// Decodes a protobuf request body (the `k8s\0` magic, then a `runtime.Unknown` envelope)
/// into the JSON object it encodes; a kind this module does not know is an error.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
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
            if let Some(bound) = bytes_of(&spec, 3) {
                let b = fields(bound)?;
                s["boundObjectRef"] = non_empty_strings(
                    &b,
                    &[(1, "kind"), (2, "apiVersion"), (3, "name"), (4, "uid")],
                );
            }
            s
        }
        "SelfSubjectReview" => {
            return Ok(json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata }));
        }
        "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => {
            let mut obj = json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata });
            rbac_fields(&kind, &raw, &mut obj)?;
            return Ok(obj);
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
        "Namespace" => json!({}),
        "Service" => service_spec(&spec)?,
        "Ingress" => ingress_spec(&spec)?,
        "ResourceQuota" => {
            // ResourceQuotaSpec: hard (1, quantities by resource), scopes (2).
            let mut hard = serde_json::Map::new();
            for entry in messages(&spec, 1) {
                let e = fields(entry)?;
                let quantity = fields(bytes_of(&e, 2).unwrap_or_default())?;
                hard.insert(
                    string_of(&e, 1).unwrap_or_default(),
                    json!(string_of(&quantity, 1).unwrap_or_default()),
                );
            }
            let mut s = json!({ "hard": hard });
            let scopes = strings_of(&spec, 2);
            if !scopes.is_empty() {
                s["scopes"] = json!(scopes);
            }
            s
        }
        "Deployment" | "Job" | "CronJob" | "PodDisruptionBudget" => workload_spec(&kind, &spec)?,
        "ConfigMap" => {
            // ConfigMap has no spec: data (2), binaryData (3), immutable (4).
            let mut obj = json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata });
            let data = string_map(&raw, 2)?;
            if !data.is_empty() {
                obj["data"] = Value::Object(data);
            }
            let mut binary = serde_json::Map::new();
            for entry in messages(&raw, 3) {
                let e = fields(entry)?;
                binary.insert(
                    string_of(&e, 1).unwrap_or_default(),
                    json!(
                        base64::engine::general_purpose::STANDARD
                            .encode(bytes_of(&e, 2).unwrap_or_default())
                    ),
                );
            }
            if !binary.is_empty() {
                obj["binaryData"] = Value::Object(binary);
            }
            if let Some(i) = varint_of(&raw, 4) {
                obj["immutable"] = json!(i != 0);
            }
            return Ok(obj);
        }
        "Secret" => {
            // Secret has no spec: data (2), type (3), stringData (4), immutable (5).
            let mut data = serde_json::Map::new();
            for entry in messages(&raw, 2) {
                let e = fields(entry)?;
                let value = bytes_of(&e, 2).unwrap_or_default();
                data.insert(
                    string_of(&e, 1).unwrap_or_default(),
                    json!(base64::engine::general_purpose::STANDARD.encode(value)),
                );
            }
            let mut obj = json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata });
            if !data.is_empty() {
                obj["data"] = Value::Object(data);
            }
            if let Some(t) = string_of(&raw, 3) {
                obj["type"] = json!(t);
            }
            let string_data = string_map(&raw, 4)?;
            if !string_data.is_empty() {
                obj["stringData"] = Value::Object(string_data);
            }
            if let Some(i) = varint_of(&raw, 5) {
                obj["immutable"] = json!(i != 0);
            }
            return Ok(obj);
        }
        "ServiceAccount" => {
            let mut obj = json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata });
            if let Some(a) = varint_of(&raw, 4) {
                obj["automountServiceAccountToken"] = json!(a != 0);
            }
            return Ok(obj);
        }
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
    fn a_resource_quota_from_kubectl_create_quota_is_read() {
        let entry = |k: &[u8], q: &[u8]| ld(1, &[ld(1, k), ld(2, &ld(1, q))].concat());
        let spec = [
            entry(b"pods", b"3"),
            entry(b"requests.cpu", b"1"),
            ld(2, b"BestEffort"),
        ]
        .concat();
        let raw = [ld(1, &ld(1, b"compute")), ld(2, &spec)].concat();
        let tm = [ld(1, b"v1"), ld(2, b"ResourceQuota")].concat();
        let body = [MAGIC.to_vec(), ld(1, &tm), ld(2, &raw)].concat();
        let v = decode(&body).expect("decodes");
        assert_eq!(v["metadata"]["name"], "compute");
        assert_eq!(
            v["spec"],
            json!({ "hard": { "pods": "3", "requests.cpu": "1" }, "scopes": ["BestEffort"] })
        );
    }

    #[test]
    fn an_ingress_from_kubectl_create_ingress_is_read() {
        let backend = ld(
            4,
            &[ld(1, b"svc1"), ld(2, &[vec![2 << 3, 0x90, 0x3f]].concat())].concat(),
        );
        let path = [ld(1, b"/bar"), ld(2, &backend), ld(3, b"Exact")].concat();
        let rule = [ld(1, b"foo.com"), ld(2, &ld(1, &ld(1, &path)))].concat();
        let tls = [ld(1, b"foo.com"), ld(2, b"my-cert")].concat();
        let spec = [ld(2, &tls), ld(3, &rule), ld(4, b"nginx")].concat();
        let raw = [ld(1, &ld(1, b"simple")), ld(2, &spec)].concat();
        let tm = [ld(1, b"networking.k8s.io/v1"), ld(2, b"Ingress")].concat();
        let body = [MAGIC.to_vec(), ld(1, &tm), ld(2, &raw)].concat();
        let v = decode(&body).expect("decodes");
        assert_eq!(
            v["spec"],
            json!({ "ingressClassName": "nginx",
                "tls": [ { "hosts": ["foo.com"], "secretName": "my-cert" } ],
                "rules": [ { "host": "foo.com", "http": { "paths": [ { "path": "/bar", "pathType": "Exact",
                    "backend": { "service": { "name": "svc1", "port": { "number": 8080 } } } } ] } } ] })
        );
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
    fn a_service_and_a_secret_from_kubectl_create_are_read() {
        let port = [
            ld(1, b"80-8080"),
            ld(2, b"TCP"),
            vec![3 << 3, 80],
            ld(4, &[vec![1 << 3, 0], vec![2 << 3, 0x90, 0x3f]].concat()),
        ]
        .concat();
        let spec = [
            ld(1, &port),
            ld(2, &[ld(1, b"app"), ld(2, b"sv")].concat()),
            ld(4, b"ClusterIP"),
        ]
        .concat();
        let raw = [
            ld(
                1,
                &[
                    ld(1, b"sv"),
                    ld(11, &[ld(1, b"app"), ld(2, b"sv")].concat()),
                ]
                .concat(),
            ),
            ld(2, &spec),
        ]
        .concat();
        let body = [
            MAGIC.to_vec(),
            ld(1, &[ld(1, b"v1"), ld(2, b"Service")].concat()),
            ld(2, &raw),
        ]
        .concat();
        let v = decode(&body).expect("decodes");
        assert_eq!(
            v["metadata"],
            json!({"name": "sv", "labels": {"app": "sv"}})
        );
        assert_eq!(
            v["spec"]["ports"][0],
            json!({"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080})
        );
        assert_eq!(v["spec"]["selector"], json!({"app": "sv"}));
        let secret = [
            ld(1, &ld(1, b"s")),
            ld(2, &[ld(1, b"a"), ld(2, b"b")].concat()),
            ld(3, b"Opaque"),
        ]
        .concat();
        let body = [
            MAGIC.to_vec(),
            ld(1, &[ld(1, b"v1"), ld(2, b"Secret")].concat()),
            ld(2, &secret),
        ]
        .concat();
        let v = decode(&body).expect("decodes");
        assert_eq!(v["data"], json!({"a": "Yg=="}));
        assert_eq!(v["type"], "Opaque");
    }

    #[test]
    fn a_role_and_a_role_binding_from_kubectl_create_are_read() {
        let rule = [ld(1, b"get"), ld(1, b"list"), ld(2, b""), ld(3, b"pods")].concat();
        let raw = [ld(1, &ld(1, b"reader")), ld(2, &rule)].concat();
        let tm = [ld(1, b"rbac.authorization.k8s.io/v1"), ld(2, b"Role")].concat();
        let body = [MAGIC.to_vec(), ld(1, &tm), ld(2, &raw)].concat();
        let v = decode(&body).expect("decodes");
        assert_eq!(
            v["rules"],
            json!([{ "verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"] }])
        );
        let subject = [
            ld(1, b"ServiceAccount"),
            ld(2, b""),
            ld(3, b"bot"),
            ld(4, b"ns"),
        ]
        .concat();
        let role_ref = [
            ld(1, b"rbac.authorization.k8s.io"),
            ld(2, b"Role"),
            ld(3, b"reader"),
        ]
        .concat();
        let raw = [ld(1, &ld(1, b"b")), ld(2, &subject), ld(3, &role_ref)].concat();
        let tm = [
            ld(1, b"rbac.authorization.k8s.io/v1"),
            ld(2, b"RoleBinding"),
        ]
        .concat();
        let body = [MAGIC.to_vec(), ld(1, &tm), ld(2, &raw)].concat();
        let v = decode(&body).expect("decodes");
        assert_eq!(
            v["subjects"],
            json!([{ "kind": "ServiceAccount", "name": "bot", "namespace": "ns" }])
        );
        assert_eq!(
            v["roleRef"],
            json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader" })
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
