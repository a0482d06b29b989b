//! The verbs on stored objects: get, list, create, update, patch, delete and deletecollection,
//! each reading its options from the query, its object from the body, and answering what the
//! store did as JSON (with the store's warnings as `Warning` headers).
//!
//! The request is already routed, authorized and known to be for a served kind; watches, the
//! other subresources and the reviews have their own modules.

use crate::patch::PatchKind;
use crate::registry::ResourceType;
use crate::request::{self, Query};
use crate::response::{json_response, with_warnings};
use crate::route::ResourcePath;
use crate::state::Shared;
use crate::status::{self, ApiError, Target};
use crate::store::{Deleted, Part, Store};
use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;

/// `GET` of one object (or of its status, which is the whole object).
pub(crate) fn get(
    store: &Store,
    rt: &Arc<ResourceType>,
    ns: &str,
    name: &str,
) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, &*store.get(rt, ns, name)?))
}

/// A page of a collection (every namespace when `ns` is empty), as a `<Kind>List`.
pub(crate) fn list(
    shared: &Shared,
    rt: &Arc<ResourceType>,
    ns: &str,
    query: &Query,
) -> Result<Response, ApiError> {
    let q = request::list_query(rt, query)?;
    let namespace = (!ns.is_empty()).then_some(ns);
    if let Some(e) = shared.faults.list_page(q.continue_token.is_some()) {
        return Err(e);
    }
    Ok(json_response(
        StatusCode::OK,
        &shared.store.list(rt, namespace, &q)?,
    ))
}

/// `POST` of a new object into the collection.
pub(crate) async fn create(
    store: &Store,
    rt: &Arc<ResourceType>,
    rp: &ResourcePath,
    headers: &HeaderMap,
    query: &Query,
    body: Body,
) -> Result<Response, ApiError> {
    let opts = request::write_options(query)?;
    let obj = request::decode(headers, &request::read_body(body).await?)?;
    check_body(rt, rp, &obj)?;
    let (created, warnings) = store.create(rt, &rp.namespace, obj, opts)?;
    Ok(with_warnings(
        json_response(StatusCode::CREATED, &created),
        &warnings,
    ))
}

/// `PUT` of an object or of its status (`part`).
pub(crate) async fn update(
    store: &Store,
    rt: &Arc<ResourceType>,
    rp: &ResourcePath,
    part: Part,
    headers: &HeaderMap,
    query: &Query,
    body: Body,
) -> Result<Response, ApiError> {
    let opts = request::write_options(query)?;
    let obj = request::decode(headers, &request::read_body(body).await?)?;
    check_body(rt, rp, &obj)?;
    let (updated, warnings) = store.update(rt, &rp.namespace, &rp.name, obj, part, opts)?;
    Ok(with_warnings(
        json_response(StatusCode::OK, &updated),
        &warnings,
    ))
}

/// `PATCH` of an object or of its status (`part`), in the patch type the `Content-Type`
/// names; a server-side apply that creates the object answers 201.
pub(crate) async fn patch(
    store: &Store,
    rt: &Arc<ResourceType>,
    rp: &ResourcePath,
    part: Part,
    headers: &HeaderMap,
    query: &Query,
    body: Body,
) -> Result<Response, ApiError> {
    let (ns, name) = (rp.namespace.as_str(), rp.name.as_str());
    let opts = request::write_options(query)?;
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let kind =
        PatchKind::from_content_type(ct).ok_or_else(|| ApiError::unsupported_media_type(ct))?;
    let patch = request::decode(headers, &request::read_body(body).await?)?;
    if kind == PatchKind::Apply {
        check_body(rt, rp, &patch)?;
    }
    let existed = store.get_opt(rt, ns, name).is_some();
    let (patched, warnings) = store.patch(rt, ns, name, kind, &patch, part, opts)?;
    let code = if !existed && kind == PatchKind::Apply {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(with_warnings(json_response(code, &patched), &warnings))
}

/// `DELETE` of one object: 200 with the object (a Status for custom kinds) when it is gone,
/// 202 with it while finalizers hold it.
pub(crate) async fn delete(
    store: &Store,
    rt: &Arc<ResourceType>,
    ns: &str,
    name: &str,
    query: &Query,
    body: Body,
) -> Result<Response, ApiError> {
    let raw = request::read_body(body).await?;
    let opts = request::delete_options(query, &raw)?;
    let t = Target {
        group: &rt.group,
        resource: &rt.plural,
        kind: &rt.kind,
        name,
    };
    match store.delete(rt, ns, name, &opts)? {
        Deleted::Gone(obj) if rt.custom => {
            let uid = obj
                .get("metadata")
                .and_then(|m| m.get("uid"))
                .and_then(Value::as_str)
                .unwrap_or("");
            Ok(json_response(StatusCode::OK, &status::success(t, uid)))
        }
        Deleted::Gone(obj) => Ok(json_response(StatusCode::OK, &obj)),
        // A pod deleted gracefully stays until its kubelet is done: 200 with the pod, as the
        // API server answers (its 202 is only for `orphanDependents: false`).
        Deleted::Pending(obj) if !rt.custom && rt.group.is_empty() && rt.plural == "pods" => {
            Ok(json_response(StatusCode::OK, &obj))
        }
        Deleted::Pending(obj) => Ok(json_response(StatusCode::ACCEPTED, &obj)),
    }
}

/// `DELETE` of a collection (every namespace when `ns` is empty): the list of what was
/// deleted.
pub(crate) async fn delete_collection(
    store: &Store,
    rt: &Arc<ResourceType>,
    ns: &str,
    query: &Query,
    body: Body,
) -> Result<Response, ApiError> {
    let raw = request::read_body(body).await?;
    let opts = request::delete_options(query, &raw)?;
    let q = request::list_query(rt, query)?;
    let items = store.delete_collection(rt, (!ns.is_empty()).then_some(ns), &q, &opts)?;
    let items: Vec<Value> = items.iter().map(|v| Value::clone(v)).collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "kind": rt.list_kind,
            "apiVersion": rt.api_version(),
            "metadata": { "resourceVersion": store.resource_version().to_string() },
            "items": items,
        }),
    ))
}

/// Checks that a body's apiVersion, kind and namespace fit the URL.
fn check_body(rt: &ResourceType, rp: &ResourcePath, body: &Value) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    let want_av = rt.api_version();
    if let Some(av) = body.get("apiVersion").and_then(Value::as_str)
        && av != want_av
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({want_av})"
        )));
    }
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && kind != rt.kind
    {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {}: the kind in the data does not match the URL",
            rt.version, rt.kind
        )));
    }
    if let Some(ns) = body
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        && rt.namespaced
        && !ns.is_empty()
        && ns != rp.namespace
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}
