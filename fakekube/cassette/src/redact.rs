//! What never reaches a cassette: credentials the recorder knows (tokens, keys), the headers
//! that carry them, and the secret fields of API objects (`Secret` data, TokenRequest answers,
//! TokenReview specs), replaced before anything is written.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use http::HeaderMap;
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

/// What replaces a secret string.
pub const REDACTED: &str = "[REDACTED]";

/// What replaces a `Secret`'s `data` value: `[REDACTED]` in base64, so clients that decode
/// it still can.
pub const REDACTED_BASE64: &str = "W1JFREFDVEVEXQ==";

/// The shortest credential scrubbed wherever it appears: shorter strings would match text
/// that is no credential.
const MIN_KNOWN: usize = 6;

/// The request headers a cassette keeps; all others (`Authorization` first) are dropped.
const REQUEST_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "impersonate-group",
    "impersonate-uid",
    "impersonate-user",
    "sec-websocket-protocol",
    "upgrade",
    "x-stream-protocol-version",
];

/// The response headers a cassette keeps.
const RESPONSE_HEADERS: &[&str] = &[
    "content-type",
    "location",
    "retry-after",
    "sec-websocket-protocol",
    "upgrade",
    "warning",
    "x-stream-protocol-version",
];

/// Which secret-bearing object a request path names, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `secrets` (core/v1): `data` and `stringData`.
    Secret,
    /// `serviceaccounts/NAME/token`: the answer's `status.token`.
    TokenRequest,
    /// `tokenreviews`: the `spec.token` asked about.
    TokenReview,
}

/// Scrubs secrets from what is about to be recorded. Cheap to clone; clones share the known
/// credentials.
#[derive(Clone, Default)]
pub struct Redactor {
    known: Arc<RwLock<Vec<SecretString>>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.known.read().map_or(0, |k| k.len());
        f.debug_struct("Redactor")
            .field("known", &format_args!("{count} credentials, {REDACTED}"))
            .finish()
    }
}

impl Redactor {
    /// Scrubs `secret` wherever it appears from now on (strings shorter than six bytes are
    /// ignored: they would match ordinary text).
    pub fn add(&self, secret: &str) {
        let secret = secret.trim();
        if secret.len() < MIN_KNOWN {
            return;
        }
        if let Ok(mut known) = self.known.write()
            && !known.iter().any(|k| k.expose_secret() == secret)
        {
            known.push(SecretString::from(secret.to_owned()));
            // Longest first, so a credential containing another is replaced whole.
            known.sort_by_key(|k| std::cmp::Reverse(k.expose_secret().len()));
        }
    }

    /// The request headers worth keeping, lower-case.
    pub(crate) fn request_headers(&self, headers: &HeaderMap) -> BTreeMap<String, String> {
        self.keep(headers, REQUEST_HEADERS)
    }

    /// The response headers worth keeping, lower-case.
    pub(crate) fn response_headers(&self, headers: &HeaderMap) -> BTreeMap<String, String> {
        self.keep(headers, RESPONSE_HEADERS)
    }

    fn keep(&self, headers: &HeaderMap, names: &[&str]) -> BTreeMap<String, String> {
        let mut kept = BTreeMap::new();
        for name in names {
            let values: Vec<&str> = headers
                .get_all(*name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            if !values.is_empty() {
                kept.insert((*name).to_owned(), self.text(&values.join(", ")));
            }
        }
        kept
    }

    /// `text` with every known credential replaced.
    pub fn text(&self, text: &str) -> String {
        let Ok(known) = self.known.read() else {
            return REDACTED.to_owned();
        };
        let mut out = text.to_owned();
        for secret in known.iter() {
            let secret = secret.expose_secret();
            if out.contains(secret) {
                out = out.replace(secret, REDACTED);
            }
        }
        out
    }

    /// `bytes` with every known credential replaced.
    pub fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.text(text).into_bytes(),
            Err(_) => {
                let Ok(known) = self.known.read() else {
                    return REDACTED.as_bytes().to_vec();
                };
                let mut out = bytes.to_vec();
                for secret in known.iter() {
                    out = replace_bytes(&out, secret.expose_secret().as_bytes());
                }
                out
            }
        }
    }

    /// Scrubs a JSON body sent to or received from `path`: the secret fields of the objects in
    /// it (by their `kind`, or by the path for bodies without one, such as patches and list
    /// items), then every known credential in any string.
    pub fn json(&self, path: &str, value: &mut Value) {
        match kind_of_path(path) {
            Some(Kind::Secret) => {
                scrub_secret(value);
                if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
                    items.iter_mut().for_each(scrub_secret);
                }
                if let Some(object) = value.get_mut("object") {
                    scrub_secret(object);
                }
                if let Some(ops) = value.as_array_mut() {
                    ops.iter_mut().for_each(scrub_patch_op);
                }
            }
            Some(Kind::TokenRequest) => scrub_at(value, &["status", "token"]),
            Some(Kind::TokenReview) => scrub_at(value, &["spec", "token"]),
            None => {}
        }
        self.walk(value);
    }

    /// Whether a body sent to `path` that is not JSON must be dropped whole (a Secret in
    /// YAML or protobuf cannot be scrubbed field by field).
    pub(crate) fn drops_non_json(path: &str) -> bool {
        kind_of_path(path).is_some()
    }

    /// Applies the kind rules to every object in `value`, and the known credentials to every
    /// string.
    fn walk(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                let kind = map
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                match kind.as_str() {
                    "Secret" => scrub_secret(value),
                    "SecretList" => {
                        if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
                            items.iter_mut().for_each(scrub_secret);
                        }
                    }
                    "TokenRequest" => scrub_at(value, &["status", "token"]),
                    "TokenReview" => scrub_at(value, &["spec", "token"]),
                    _ => {}
                }
                if let Value::Object(map) = value {
                    for child in map.values_mut() {
                        self.walk(child);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v)),
            Value::String(s) => {
                let scrubbed = self.text(s);
                if scrubbed != *s {
                    *s = scrubbed;
                }
            }
            _ => {}
        }
    }
}

/// Which secret-bearing resource `path` names.
fn kind_of_path(path: &str) -> Option<Kind> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    // Core: api/v1[/namespaces/NS]/secrets[/NAME], .../serviceaccounts/NAME/token.
    if parts.first() == Some(&"api") {
        let rest = match parts.get(2) {
            Some(&"namespaces") if parts.len() > 4 => &parts[4..],
            _ => parts.get(2..).unwrap_or(&[]),
        };
        return match rest {
            ["secrets"] | ["secrets", _] => Some(Kind::Secret),
            ["serviceaccounts", _, "token"] => Some(Kind::TokenRequest),
            _ => None,
        };
    }
    if parts.first() == Some(&"apis")
        && parts.get(1) == Some(&"authentication.k8s.io")
        && parts.last() == Some(&"tokenreviews")
    {
        return Some(Kind::TokenReview);
    }
    None
}

/// Replaces every value of a Secret's `data` and `stringData`.
fn scrub_secret(value: &mut Value) {
    for (field, replacement) in [("data", REDACTED_BASE64), ("stringData", REDACTED)] {
        if let Some(Value::Object(entries)) = value.get_mut(field) {
            for v in entries.values_mut() {
                if !v.is_null() {
                    *v = Value::String(replacement.to_owned());
                }
            }
        }
    }
}

/// Replaces the value of a JSON Patch operation on a Secret's data.
fn scrub_patch_op(op: &mut Value) {
    let touches = op
        .get("path")
        .and_then(Value::as_str)
        .is_some_and(|p| p.starts_with("/data") || p.starts_with("/stringData"));
    if touches && let Some(v) = op.get_mut("value") {
        *v = match v {
            Value::Object(entries) => {
                let mut entries = entries.clone();
                entries
                    .values_mut()
                    .for_each(|e| *e = Value::String(REDACTED.to_owned()));
                Value::Object(entries)
            }
            _ => Value::String(REDACTED.to_owned()),
        };
    }
}

/// Replaces the string at `path` inside `value`, if there is one.
fn scrub_at(value: &mut Value, path: &[&str]) {
    let mut cursor = value;
    for key in path {
        match cursor.get_mut(*key) {
            Some(next) => cursor = next,
            None => return,
        }
    }
    if cursor.is_string() {
        *cursor = Value::String(REDACTED.to_owned());
    }
}

/// `haystack` with every occurrence of `needle` replaced by [`REDACTED`].
fn replace_bytes(haystack: &[u8], needle: &[u8]) -> Vec<u8> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return haystack.to_vec();
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(needle) {
            out.extend_from_slice(REDACTED.as_bytes());
            i += needle.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_secret_s_data_and_string_data_values_are_replaced_and_its_keys_kept() {
        let mut secret = json!({"kind": "Secret", "metadata": {"name": "s"},
            "data": {"token": "c2VjcmV0"}, "stringData": {"password": "hunter22"}});
        Redactor::default().json("/api/v1/namespaces/ns/secrets", &mut secret);
        assert_eq!(secret["data"]["token"], REDACTED_BASE64);
        assert_eq!(secret["stringData"]["password"], REDACTED);
        assert_eq!(secret["metadata"]["name"], "s");
    }

    #[test]
    fn secret_list_items_without_kind_are_scrubbed_by_the_path() {
        let mut list = json!({"kind": "SecretList", "items": [{"data": {"a": "eA=="}}]});
        Redactor::default().json("/api/v1/secrets", &mut list);
        assert_eq!(list["items"][0]["data"]["a"], REDACTED_BASE64);
    }

    #[test]
    fn a_merge_patch_and_a_json_patch_to_a_secret_lose_their_values() {
        let r = Redactor::default();
        let mut merge = json!({"data": {"k": "dmFsdWU="}});
        r.json("/api/v1/namespaces/ns/secrets/s", &mut merge);
        assert_eq!(merge["data"]["k"], REDACTED_BASE64);
        let mut patch = json!([{"op": "add", "path": "/data/k", "value": "dmFsdWU="},
            {"op": "replace", "path": "/metadata/labels/a", "value": "b"}]);
        r.json("/api/v1/namespaces/ns/secrets/s", &mut patch);
        assert_eq!(patch[0]["value"], REDACTED);
        assert_eq!(patch[1]["value"], "b");
    }

    #[test]
    fn a_watch_event_of_a_secret_is_scrubbed() {
        let mut event = json!({"type": "ADDED", "object": {"data": {"k": "eA=="}}});
        Redactor::default().json("/api/v1/namespaces/ns/secrets", &mut event);
        assert_eq!(event["object"]["data"]["k"], REDACTED_BASE64);
    }

    #[test]
    fn token_request_answers_and_token_review_specs_lose_their_tokens() {
        let r = Redactor::default();
        let mut answer = json!({"kind": "TokenRequest", "status": {"token": "eyJhbGciOi"}});
        r.json(
            "/api/v1/namespaces/ns/serviceaccounts/sa/token",
            &mut answer,
        );
        assert_eq!(answer["status"]["token"], REDACTED);
        let mut review = json!({"kind": "TokenReview", "spec": {"token": "eyJhbGciOi"}});
        r.json("/apis/authentication.k8s.io/v1/tokenreviews", &mut review);
        assert_eq!(review["spec"]["token"], REDACTED);
    }

    #[test]
    fn objects_of_secret_kinds_are_scrubbed_wherever_they_appear() {
        let mut list =
            json!({"kind": "List", "items": [{"kind": "Secret", "data": {"k": "eA=="}}]});
        Redactor::default().json("/api/v1/namespaces/ns/configmaps", &mut list);
        assert_eq!(list["items"][0]["data"]["k"], REDACTED_BASE64);
    }

    #[test]
    fn known_credentials_are_replaced_in_strings_bytes_and_headers() {
        let r = Redactor::default();
        r.add("tok-123456");
        r.add("abc");
        let mut body = json!({"note": "token tok-123456 here", "short": "abc"});
        r.json("/api/v1/pods", &mut body);
        assert_eq!(body["note"], "token [REDACTED] here");
        assert_eq!(
            body["short"], "abc",
            "credentials under six bytes are not scrubbed"
        );
        assert_eq!(r.bytes(b"\xff tok-123456"), b"\xff [REDACTED]".to_vec());
        let mut headers = HeaderMap::new();
        headers.insert("authorization", "Bearer tok-123456".parse().unwrap());
        headers.insert("accept", "application/json".parse().unwrap());
        let kept = r.request_headers(&headers);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept["accept"], "application/json");
    }

    #[test]
    fn debug_shows_no_credential() {
        let r = Redactor::default();
        r.add("very-secret-token");
        let text = format!("{r:?}");
        assert!(!text.contains("very-secret-token"));
        assert!(text.contains("1 credentials"));
    }

    #[test]
    fn only_secret_paths_drop_bodies_that_are_not_json() {
        assert!(Redactor::drops_non_json("/api/v1/namespaces/a/secrets/b"));
        assert!(Redactor::drops_non_json(
            "/apis/authentication.k8s.io/v1/tokenreviews"
        ));
        assert!(!Redactor::drops_non_json("/api/v1/namespaces/a/pods/b"));
        assert!(!Redactor::drops_non_json("/api/v1/namespaces/secrets/pods"));
    }
}
