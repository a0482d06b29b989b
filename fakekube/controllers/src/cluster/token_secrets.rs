//! The service-account token controller: a Secret of type
//! `kubernetes.io/service-account-token` annotated with a service account's name gets
//! `data.token` (a legacy token for that account), `data.ca.crt` and `data.namespace`, and the
//! account's uid as an annotation. A token Secret whose account does not exist (or has another
//! uid) is deleted, and so are an account's token Secrets when the account is deleted.

use super::TokenSigner;
use crate::client::{Client, Delete, Kind, Part};
use crate::meta::{self, SA_NAME_ANNOTATION, SA_UID_ANNOTATION, TOKEN_SECRET_TYPE, meta_str};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

fn annotation<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn delete(api: &dyn Client, secret: &Value) {
    let ns = meta_str(secret, "namespace").unwrap_or("");
    let name = meta_str(secret, "name").unwrap_or("");
    let opts = Delete {
        uid: meta_str(secret, "uid").map(str::to_string),
        ..Delete::default()
    };
    if let Err(e) = api.delete(Kind::Secret, ns, name, &opts)
        && e.code != 404
        && e.code != 409
    {
        tracing::debug!(secret = name, error = %e.message, "deleting a token Secret");
    }
}

/// Fills (or deletes) the token Secret `ns/name`.
pub(super) fn reconcile(
    api: &dyn Client,
    signer: &dyn TokenSigner,
    ca_pem: &str,
    ns: &str,
    name: &str,
) {
    let Some(secret) = api.get(Kind::Secret, ns, name) else {
        return;
    };
    if secret.get("type").and_then(Value::as_str) != Some(TOKEN_SECRET_TYPE)
        || secret.pointer("/metadata/deletionTimestamp").is_some()
    {
        return;
    }
    let account = annotation(&secret, SA_NAME_ANNOTATION);
    let wanted_uid = annotation(&secret, SA_UID_ANNOTATION);
    let sa = api
        .get(Kind::ServiceAccount, ns, account)
        .filter(|sa| wanted_uid.is_empty() || meta_str(sa, "uid") == Some(wanted_uid));
    let Some(sa) = sa else {
        delete(api, &secret);
        return;
    };
    let data = secret.get("data");
    let field = |k: &str| {
        data.and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let ca = STANDARD.encode(ca_pem);
    let needs_ca = field("ca.crt") != ca;
    let needs_namespace = field("namespace").is_empty();
    let needs_token = field("token").is_empty();
    let sa_uid = meta_str(&sa, "uid").unwrap_or("");
    if !needs_ca && !needs_namespace && !needs_token && wanted_uid == sa_uid {
        return;
    }
    let mut updated = Value::clone(&secret);
    if let Some(o) = updated.as_object_mut() {
        let data = o.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        if let Some(d) = data.as_object_mut() {
            if needs_ca {
                d.insert("ca.crt".into(), json!(ca));
            }
            if needs_namespace {
                d.insert("namespace".into(), json!(STANDARD.encode(ns)));
            }
            if needs_token {
                let token = signer.legacy_token(&sa, name);
                d.insert("token".into(), json!(STANDARD.encode(token)));
            }
        }
    }
    if let Some(md) = meta::metadata_mut(&mut updated) {
        let ann = md.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = ann.as_object_mut() {
            a.insert(SA_NAME_ANNOTATION.into(), json!(account));
            a.insert(SA_UID_ANNOTATION.into(), json!(sa_uid));
        }
    }
    if let Err(e) = api.update(Kind::Secret, ns, name, updated, Part::Main) {
        tracing::debug!(secret = name, error = %e.message, "filling a token Secret");
    }
}

/// Deletes the token Secrets of the deleted account `ns/name` (uid `uid`).
pub(super) fn delete_for_account(api: &dyn Client, ns: &str, name: &str, uid: &str) {
    for secret in api.list(Kind::Secret, Some(ns)) {
        let ann_uid = annotation(&secret, SA_UID_ANNOTATION);
        if secret.get("type").and_then(Value::as_str) == Some(TOKEN_SECRET_TYPE)
            && annotation(&secret, SA_NAME_ANNOTATION) == name
            && (ann_uid.is_empty() || ann_uid == uid)
        {
            delete(api, &secret);
        }
    }
}
