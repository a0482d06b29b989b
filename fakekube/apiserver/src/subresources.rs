//! The `scale` subresource (of the built-in workload kinds, and of custom kinds whose CRD asks
//! for one, at the CRD's replica and selector paths) and `serviceaccounts/token`
//! (TokenRequest).

use crate::authn::{ISSUER, TokenSpec};
use crate::meta;
use crate::patch::{self, MergeKeys, PatchKind};
use crate::registry::{ResourceType, ScalePaths};
use crate::request::{self, Query};
use crate::response::json_response;
use crate::route::ResourcePath;
use crate::selector::LabelSelector;
use crate::state::Shared;
use crate::status::{ApiError, Cause, Target};
use crate::store::{Store, WriteOptions};
use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// The value at a CRD's simple JSON path (`.spec.replicas`).
fn at_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .try_fold(obj, |v, key| v.get(key))
}

/// The resourceVersion a client's body names, if any.
fn named_resource_version(body: &Value) -> Option<String> {
    meta::meta_str(body, "resourceVersion")
        .filter(|rv| !rv.is_empty())
        .map(str::to_string)
}

/// Sets the value at a CRD's simple JSON path, creating the objects on the way.
fn set_path(obj: &mut Value, path: &str, value: Value) {
    let keys: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut cur = obj;
    for key in parents {
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        cur = map.entry(*key).or_insert_with(|| json!({}));
    }
    if let Some(map) = cur.as_object_mut() {
        map.insert((*last).to_string(), value);
    }
}

/// The selector of a built-in kind's Scale: its `spec.selector` (a `metav1.LabelSelector`,
/// or a ReplicationController's map of labels), printed as a label selector string.
fn built_in_selector(obj: &Value) -> Option<Value> {
    let sel = obj.get("spec")?.get("selector")?;
    let parsed = if sel.get("matchLabels").is_some() || sel.get("matchExpressions").is_some() {
        LabelSelector::from_object(sel)
    } else {
        LabelSelector::from_object(&json!({ "matchLabels": sel }))
    };
    parsed.ok().map(|s| json!(s.to_string()))
}

/// The `autoscaling/v1` Scale of an object.
fn scale_of(obj: &Value, rt: &ResourceType, paths: &ScalePaths) -> Value {
    let md = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let pick = |k: &str| md.get(k).cloned().unwrap_or(Value::Null);
    let replicas = |p: &str| at_path(obj, p).cloned().unwrap_or(json!(0));
    let selector = if rt.custom {
        paths
            .label_selector
            .as_deref()
            .and_then(|p| at_path(obj, p))
            .cloned()
    } else {
        built_in_selector(obj)
    };
    let mut scale = json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": pick("name"),
            "namespace": pick("namespace"),
            "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"),
            "creationTimestamp": pick("creationTimestamp"),
        },
        "spec": { "replicas": replicas(&paths.spec_replicas) },
        "status": { "replicas": replicas(&paths.status_replicas) },
    });
    if let Some(s) = selector {
        scale["status"]["selector"] = s;
    }
    scale
}

/// GET, PUT or PATCH of `<kind>/scale`.
pub(crate) async fn scale(
    store: &Store,
    rt: &Arc<ResourceType>,
    rp: &ResourcePath,
    verb: &str,
    headers: &HeaderMap,
    query: &Query,
    body: Body,
) -> Result<Response, ApiError> {
    let (ns, name) = (rp.namespace.as_str(), rp.name.as_str());
    let body = request::read_body(body).await?;
    let Some(paths) = rt.scale.as_ref() else {
        return Err(ApiError::path_not_found());
    };
    let current = store.get(rt, ns, name)?;
    let scale = scale_of(&current, rt, paths);
    // What the client asks for, and the resourceVersion it names (a patch applied to the scale
    // as read carries that one's; only the patch's own is the client's).
    let (wanted, pinned) = match verb {
        "get" => return Ok(json_response(StatusCode::OK, &scale)),
        "update" => {
            let wanted: Value =
                serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(e.to_string()))?;
            let pinned = named_resource_version(&wanted);
            (wanted, pinned)
        }
        "patch" => {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let kind = PatchKind::from_content_type(ct)
                .ok_or_else(|| ApiError::unsupported_media_type(ct))?;
            let p: Value =
                serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(e.to_string()))?;
            let wanted = patch::apply_patch(kind, &scale, &p, &MergeKeys::none())
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            (wanted, named_resource_version(&p))
        }
        other => return Err(ApiError::method_not_allowed(other, "scale")),
    };
    let replicas = wanted
        .get("spec")
        .and_then(|s| s.get("replicas"))
        .cloned()
        .unwrap_or(json!(0));
    if replicas
        .as_i64()
        .is_none_or(|n| !(0..=i64::from(i32::MAX)).contains(&n))
    {
        return Err(ApiError::invalid(
            Target {
                group: "autoscaling",
                resource: "scale",
                kind: "Scale",
                name,
            },
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                field: Some("spec.replicas".into()),
            }],
        ));
    }
    let opts = WriteOptions {
        dry_run: query.get("dryRun") == Some("All"),
        ..Default::default()
    };
    // The object as stored when the write is made, at the resourceVersion the client named or
    // else the stored one: a controller's status write since the read is no conflict.
    let (updated, _) = store.update_stored(rt, ns, name, opts, |stored| {
        let mut obj = Value::clone(stored);
        set_path(&mut obj, &paths.spec_replicas, replicas);
        if let (Some(rv), Some(md)) = (pinned, meta::metadata_mut(&mut obj)) {
            md.insert("resourceVersion".into(), json!(rv));
        }
        Ok(obj)
    })?;
    Ok(json_response(
        StatusCode::OK,
        &scale_of(&updated, rt, paths),
    ))
}

/// `POST serviceaccounts/<name>/token` (TokenRequest): issues a bound token for the service
/// account, for the audiences asked (the API server's by default), valid for
/// `expirationSeconds` (an hour by default, ten minutes at least), bound to a Pod or Secret
/// when `boundObjectRef` names one. An empty body asks for the defaults.
pub(crate) async fn token_request(
    shared: &Shared,
    ns: &str,
    name: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let raw = request::read_body(body).await?;
    let mut req = if raw.is_empty() {
        json!({})
    } else {
        request::decode(headers, &raw)?
    };
    let sa_type = shared
        .store
        .registry()
        .find("", "v1", "serviceaccounts")
        .ok_or_else(|| ApiError::internal("no serviceaccounts"))?;
    let sa = shared.store.get(&sa_type, ns, name)?;
    let spec = req.get("spec").cloned().unwrap_or_else(|| json!({}));
    let secs = spec
        .get("expirationSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(3600);
    let too = if secs < 600 {
        Some("may not specify a duration less than 10 minutes")
    } else if secs > 1 << 32 {
        Some("may not specify a duration larger than 2^32 seconds")
    } else {
        None
    };
    if let Some(why) = too {
        return Err(ApiError::invalid(
            Target {
                group: "authentication.k8s.io",
                resource: "token",
                kind: "TokenRequest",
                name,
            },
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {secs}: {why}"),
                field: Some("spec.expirationSeconds".into()),
            }],
        ));
    }
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    let bound = bound_object(shared, ns, name, spec.get("boundObjectRef"))?;
    let token_spec = TokenSpec {
        audiences: audiences.clone(),
        ttl: Duration::from_secs(secs),
        bound,
    };
    let (token, expires) = shared.authn.service_accounts.issue(&sa, &token_spec);
    let exp = expires
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let exp = time::OffsetDateTime::from_unix_timestamp(i64::try_from(exp).unwrap_or(0))
        .map(meta::format_time)
        .unwrap_or_default();
    if let Some(o) = req.as_object_mut() {
        o.insert("kind".into(), json!("TokenRequest"));
        o.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
        let md = o.entry("metadata").or_insert_with(|| json!({}));
        if let Some(md) = md.as_object_mut() {
            md.insert("name".into(), json!(name));
            md.insert("namespace".into(), json!(ns));
            md.insert("creationTimestamp".into(), Value::Null);
        }
        let spec = o.entry("spec").or_insert_with(|| json!({}));
        if let Some(spec) = spec.as_object_mut() {
            spec.insert("expirationSeconds".into(), json!(secs));
            if audiences.is_empty() {
                spec.insert("audiences".into(), json!([ISSUER]));
            }
            spec.entry("boundObjectRef").or_insert(Value::Null);
        }
        o.insert(
            "status".into(),
            json!({ "token": token, "expirationTimestamp": exp }),
        );
    }
    Ok(json_response(StatusCode::CREATED, &req))
}

/// The Pod or Secret a TokenRequest binds its token to (kind, name, uid), checked to exist
/// (with the uid given, if any).
fn bound_object(
    shared: &Shared,
    ns: &str,
    sa: &str,
    reference: Option<&Value>,
) -> Result<Option<(String, String, String)>, ApiError> {
    let Some(r) = reference.filter(|r| !r.is_null()) else {
        return Ok(None);
    };
    let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let (kind, api_version, name, uid) =
        (text("kind"), text("apiVersion"), text("name"), text("uid"));
    let plural = match (api_version, kind) {
        ("v1" | "", "Pod") => "pods",
        ("v1" | "", "Secret") => "secrets",
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {kind} in {api_version}"
            )));
        }
    };
    let rt = shared
        .store
        .registry()
        .find("", "v1", plural)
        .ok_or_else(|| ApiError::internal(format!("no {plural}")))?;
    let obj = shared.store.get(&rt, ns, name).map_err(|e| {
        ApiError::bad_request(format!(
            "cannot bind token for serviceaccount \"{sa}\" to {} \"{name}\": {}",
            kind.to_ascii_lowercase(),
            e.message
        ))
    })?;
    let actual = meta::meta_str(&obj, "uid").unwrap_or("");
    if !uid.is_empty() && uid != actual {
        return Err(ApiError::conflict(
            Target {
                group: "",
                resource: plural,
                kind,
                name,
            },
            &format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(Some((
        kind.to_string(),
        name.to_string(),
        actual.to_string(),
    )))
}
