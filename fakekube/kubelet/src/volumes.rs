//! The files of the volumes a kubelet fills from the API (pkg/volume's `secret`, `configmap`,
//! `downwardapi` and `projected` plugins): a Secret's or a ConfigMap's keys (all of them, or
//! the `items` asked for, under their `path`), the pod's own fields a `downwardAPI` item names,
//! and a `projected` volume's sources together, with the bound service-account token a
//! `serviceAccountToken` source asks for (TokenRequest, through [`Client::pod_token`]), so
//! that the `kube-api-access-*` volume the API server adds gives a container its `token`,
//! `ca.crt` and `namespace`.
//!
//! Files are written once, when the pod's volumes are made; a real kubelet refreshes them
//! (the token before it expires). File modes are not kept.

use crate::client::{Client, Kind, PodTokenRequest};
use crate::meta::meta_str;
use base64::Engine;
use fakekube_runtime::{PodFs, Volume};
use serde_json::Value;

/// The pod a volume belongs to.
#[derive(Debug, Clone, Copy)]
pub struct PodRef<'a> {
    /// Its namespace.
    pub ns: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its uid.
    pub uid: &'a str,
    /// The pod object.
    pub pod: &'a Value,
}

/// Writes the files of volume `spec` (an entry of `spec.volumes`) into `vol`; false when the
/// volume is of a kind filled some other way (claims, emptyDirs).
pub fn fill(api: &dyn Client, pod: PodRef<'_>, spec: &Value, vol: &Volume) -> bool {
    let fs = PodFs::new(vec![("/v".to_string(), vol.clone())]);
    if let Some(secret) = spec.get("secret") {
        let name = secret
            .get("secretName")
            .and_then(Value::as_str)
            .unwrap_or("");
        secret_files(api, pod, name, secret.get("items"), &fs);
    } else if let Some(cm) = spec.get("configMap") {
        let name = cm.get("name").and_then(Value::as_str).unwrap_or("");
        config_map_files(api, pod, name, cm.get("items"), &fs);
    } else if let Some(downward) = spec.get("downwardAPI") {
        downward_files(pod, downward.get("items"), &fs);
    } else if let Some(projected) = spec.get("projected") {
        let sources = projected.get("sources").and_then(Value::as_array);
        for source in sources.into_iter().flatten() {
            if let Some(secret) = source.get("secret") {
                let name = secret.get("name").and_then(Value::as_str).unwrap_or("");
                secret_files(api, pod, name, secret.get("items"), &fs);
            } else if let Some(cm) = source.get("configMap") {
                let name = cm.get("name").and_then(Value::as_str).unwrap_or("");
                config_map_files(api, pod, name, cm.get("items"), &fs);
            } else if let Some(downward) = source.get("downwardAPI") {
                downward_files(pod, downward.get("items"), &fs);
            } else if let Some(token) = source.get("serviceAccountToken") {
                token_file(api, pod, token, &fs);
            }
        }
    } else {
        return false;
    }
    true
}

/// Writes `data` under `/v/<path>`, making the directories a nested path needs.
fn write(fs: &PodFs, path: &str, data: &[u8]) {
    let full = format!("/v/{}", path.trim_start_matches('/'));
    if let Some((dir, _)) = full.rsplit_once('/')
        && dir != "/v"
        && let Err(e) = fs.mkdir_all(dir, 0o755)
    {
        tracing::debug!(path, error = %e, "volume directory");
    }
    if let Err(e) = fs.write(&full, data) {
        tracing::debug!(path, error = %e, "volume file");
    }
}

/// Writes the keys of `data` (decoded by `decode`) as files: each key under its own name, or
/// the `items` asked for under their `path`.
fn key_files(
    data: &serde_json::Map<String, Value>,
    items: Option<&Value>,
    decode: impl Fn(&Value) -> Vec<u8>,
    fs: &PodFs,
) {
    match items.and_then(Value::as_array) {
        Some(items) => {
            for item in items {
                let key = item.get("key").and_then(Value::as_str).unwrap_or("");
                let path = item.get("path").and_then(Value::as_str).unwrap_or(key);
                if let Some(v) = data.get(key) {
                    write(fs, path, &decode(v));
                }
            }
        }
        None => {
            for (key, v) in data {
                write(fs, key, &decode(v));
            }
        }
    }
}

fn secret_files(api: &dyn Client, pod: PodRef<'_>, name: &str, items: Option<&Value>, fs: &PodFs) {
    let Some(secret) = api.get(Kind::Secret, pod.ns, name) else {
        return;
    };
    let Some(data) = secret.get("data").and_then(Value::as_object) else {
        return;
    };
    let decode = |v: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or(""))
            .unwrap_or_default()
    };
    key_files(data, items, decode, fs);
}

fn config_map_files(
    api: &dyn Client,
    pod: PodRef<'_>,
    name: &str,
    items: Option<&Value>,
    fs: &PodFs,
) {
    let Some(cm) = api.get(Kind::ConfigMap, pod.ns, name) else {
        return;
    };
    if let Some(data) = cm.get("data").and_then(Value::as_object) {
        key_files(
            data,
            items,
            |v| v.as_str().unwrap_or("").as_bytes().to_vec(),
            fs,
        );
    }
    if let Some(binary) = cm.get("binaryData").and_then(Value::as_object) {
        let decode = |v: &Value| {
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap_or(""))
                .unwrap_or_default()
        };
        key_files(binary, items, decode, fs);
    }
}

/// The value of a downward API `fieldRef` path of the pod.
fn field_value(pod: PodRef<'_>, path: &str) -> Option<String> {
    let md = pod.pod.get("metadata");
    let map_lines = |k: &str| {
        let map = md.and_then(|m| m.get(k)).and_then(Value::as_object)?;
        let mut lines: Vec<String> = map
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", v.as_str().unwrap_or("")))
            .collect();
        lines.sort();
        Some(lines.join("\n"))
    };
    match path {
        "metadata.namespace" => Some(pod.ns.to_string()),
        "metadata.name" => Some(pod.name.to_string()),
        "metadata.uid" => Some(pod.uid.to_string()),
        "metadata.labels" => map_lines("labels"),
        "metadata.annotations" => map_lines("annotations"),
        _ => {
            let (map, key) = path.strip_suffix(']')?.split_once("['")?;
            let key = key.strip_suffix('\'')?;
            let m = map.strip_prefix("metadata.")?;
            md.and_then(|md| md.get(m))
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        }
    }
}

fn downward_files(pod: PodRef<'_>, items: Option<&Value>, fs: &PodFs) {
    for item in items.and_then(Value::as_array).into_iter().flatten() {
        let Some(path) = item.get("path").and_then(Value::as_str) else {
            continue;
        };
        let Some(field) = item
            .get("fieldRef")
            .and_then(|f| f.get("fieldPath"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        if let Some(value) = field_value(pod, field) {
            write(fs, path, value.as_bytes());
        }
    }
}

fn token_file(api: &dyn Client, pod: PodRef<'_>, source: &Value, fs: &PodFs) {
    let account = pod
        .pod
        .pointer("/spec/serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default");
    let request = PodTokenRequest {
        namespace: pod.ns,
        account,
        pod_name: pod.name,
        pod_uid: meta_str(pod.pod, "uid").unwrap_or(pod.uid),
        expiration_seconds: source
            .get("expirationSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(3600),
        audience: source
            .get("audience")
            .and_then(Value::as_str)
            .filter(|a| !a.is_empty()),
    };
    match api.pod_token(&request) {
        Ok(token) => {
            let path = source
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("token");
            write(fs, path, token.as_bytes());
        }
        Err(e) => tracing::debug!(error = %e.message, account, "service account token"),
    }
}
