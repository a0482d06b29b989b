//! Object metadata helpers: names, timestamps, generated names, owner references.

use crate::status::Cause;
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Now, as Kubernetes prints a `metav1.Time` (RFC 3339, seconds, `Z`).
pub fn now_rfc3339() -> String {
    format_time(OffsetDateTime::now_utc())
}

/// A time as Kubernetes prints it.
pub fn format_time(t: OffsetDateTime) -> String {
    let t = t.replace_nanosecond(0).unwrap_or(t);
    t.format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// The random suffix the API server appends to a `generateName` (5 characters from its alphabet).
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes[..5]
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Checks a name as a DNS-1123 subdomain (most kinds) or label (namespaces, services).
pub fn validate_name(name: &str, label: bool) -> Option<Cause> {
    let ok = if label {
        is_dns_label(name)
    } else {
        !name.is_empty() && name.len() <= 253 && name.split('.').all(is_dns_label)
    };
    if ok {
        return None;
    }
    let message = if label {
        format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    } else {
        format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    };
    Some(Cause {
        reason: "FieldValueInvalid".into(),
        message,
        field: Some("metadata.name".into()),
    })
}

/// The object's `metadata`, created if missing.
pub fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let o = obj.as_object_mut()?;
    let m = o
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut()
}

/// The string at a path of object keys (`["spec", "nodeName"]`).
pub fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |cur, k| cur.get(*k))?.as_str()
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(key)?.as_str()
}

/// An object's metadata alone, as a `PartialObjectMetadata` of `api_version`
/// (`meta.k8s.io/v1`), what metadata-only clients and Table rows receive.
pub fn partial_object_metadata(obj: &Value, api_version: &str) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), Value::from("PartialObjectMetadata"));
    out.insert("apiVersion".into(), Value::from(api_version));
    out.insert(
        "metadata".into(),
        obj.get("metadata")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    );
    Value::Object(out)
}

/// The object's labels.
pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata")?.get("labels")?.as_object()
}

/// The uids of the object's owners.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The object's finalizers.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .map(|m| string_list(m, "finalizers"))
        .unwrap_or_default()
}

/// The strings of the list field `key` of `obj` (`null`, absent or non-string items read as
/// nothing): RBAC rules' verbs and resources, finalizers.
pub fn string_list(obj: &Value, key: &str) -> Vec<String> {
    obj.get(key)
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A Go `time.Duration` string for whole seconds (`10s`, `1m20s`, `5m0s`).
pub fn go_duration(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// The condition of `ty` in an object's `status.conditions`.
pub fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

/// Whether an object's condition `ty` is True.
pub fn condition_true(obj: &Value, ty: &str) -> bool {
    condition(obj, ty)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// The Secret type of legacy service-account tokens (`kubernetes.io/service-account-token`).
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming a token Secret's service account.
pub const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// The annotation holding a token Secret's service account uid.
pub const SA_UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
/// The finalizer PVC protection keeps on a claim a pod uses.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_suffix_has_five_characters_of_the_api_server_alphabet() {
        let s = random_suffix();
        assert_eq!(s.len(), 5);
        assert!(
            s.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
    }

    #[test]
    fn names_are_checked_as_subdomains_or_labels() {
        assert!(validate_name("a.b-c", false).is_none());
        assert!(validate_name("a.b", true).is_some());
        assert!(validate_name("Upper", false).is_some());
        assert!(validate_name("", false).is_some());
        assert!(validate_name("-a", true).is_some());
    }

    #[test]
    fn times_print_in_kubernetes_form() {
        let t = OffsetDateTime::parse("2026-11-29T10:00:00.123Z", &Rfc3339)
            .ok()
            .map(format_time);
        assert_eq!(t.as_deref(), Some("2026-11-29T10:00:00Z"));
    }
}
