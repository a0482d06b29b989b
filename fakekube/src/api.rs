//! The dispatcher: the one handler every request reaches. It routes the path, applies the
//! request-level faults, authenticates the caller, and hands the request to what serves its
//! route: discovery, health and version here; `pods/exec` and `pods/attach` to [`exec`],
//! `pods/portforward` to [`portforward`]; for
//! resources, after the kind, scope and verb checks and authorization, the verb's handler in
//! [`objects`], [`watch`], [`subresources`] or [`reviews`].
//!
//! [`exec`]: crate::exec
//! [`portforward`]: crate::portforward
//! [`objects`]: crate::objects
//! [`watch`]: crate::watch
//! [`subresources`]: crate::subresources
//! [`reviews`]: crate::reviews

use crate::auth::{self, Attributes, Caller};
use crate::request::Query;
use crate::resources;
use crate::response::json_response;
use crate::route::{ResourcePath, Route, route};
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::Part;
use crate::{discovery, exec, objects, portforward, reviews, subresources, watch};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use std::sync::Arc;

/// The router of every path: all of them reach [`handle`].
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

/// The single entry point for every request.
async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = Query::parse(parts.uri.query());
    let route = route(&path);
    tracing::debug!(method = %parts.method, %path, "request");
    if matches!(route, Route::Resource(_))
        && let Some(e) = shared.faults.before_resource_request().await
    {
        return e.into_response();
    }
    let public = matches!(route, Route::Health | Route::Version);
    let protocol_token = exec::protocol_token(&parts.headers);
    let bearer =
        auth::bearer(parts.headers.get(header::AUTHORIZATION)).or(protocol_token.as_deref());
    let caller = match shared.tokens.authenticate(bearer) {
        Ok(c) => Some(c),
        Err(_) if public && parts.headers.get(header::AUTHORIZATION).is_none() => None,
        Err(e) => return e.into_response(),
    };
    let result = match (&route, caller) {
        (Route::Version, _) => Ok(json_response(
            StatusCode::OK,
            &discovery::version(&shared.version),
        )),
        (Route::Health, _) => {
            let mut r = Response::new(Body::from("ok"));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            Ok(r)
        }
        (_, None) => Err(ApiError::unauthorized()),
        (Route::Resource(rp), Some(caller)) if let Some(kind) = exec::kind_of(rp) => {
            exec::serve(&shared, &caller, parts, rp, kind).await
        }
        (Route::Resource(rp), Some(caller)) if portforward::is_portforward(rp) => {
            portforward::serve(&shared, &caller, parts, rp).await
        }
        (Route::Resource(rp), Some(caller)) => {
            resource(
                &shared,
                &caller,
                &parts.method,
                &parts.headers,
                rp,
                &query,
                body,
            )
            .await
        }
        (_, Some(_)) if parts.method != Method::GET => {
            Err(ApiError::method_not_allowed(parts.method.as_str(), &path))
        }
        (Route::CoreVersions | Route::Groups, Some(_))
            if let Some(v) = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|a| a.to_str().ok())
                .and_then(discovery::wants_aggregated) =>
        {
            let doc = discovery::aggregated(route == Route::CoreVersions, v);
            let mut resp = json_response(StatusCode::OK, &doc);
            let ct =
                format!("application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList");
            if let Ok(h) = HeaderValue::from_str(&ct) {
                resp.headers_mut().insert(header::CONTENT_TYPE, h);
            }
            Ok(resp)
        }
        (Route::CoreVersions, Some(_)) => Ok(json_response(
            StatusCode::OK,
            &discovery::core_versions(&shared.address),
        )),
        (Route::Groups, Some(_)) => Ok(json_response(StatusCode::OK, &discovery::group_list())),
        (Route::Group(g), Some(_)) => discovery::group(g)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::path_not_found),
        (Route::ResourceList(g, v), Some(_)) => discovery::resource_list(g, v)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::path_not_found),
        (Route::OpenApiRoot, Some(_)) => Ok(json_response(
            StatusCode::OK,
            &discovery::openapi_root(&shared.version),
        )),
        (Route::OpenApiDoc(key), Some(_)) => discovery::openapi_doc(key, &shared.version)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::path_not_found),
        (Route::Unknown, Some(_)) => Err(ApiError::path_not_found()),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

/// The authorization verb of a resource request.
fn verb_of(method: &Method, rp: &ResourcePath, query: &Query) -> Result<&'static str, ApiError> {
    let collection = rp.name.is_empty();
    Ok(match (method.as_str(), collection) {
        ("GET" | "HEAD", true) if query.flag("watch") => "watch",
        ("GET" | "HEAD", true) => "list",
        ("GET" | "HEAD", false) if query.flag("watch") => "watch",
        ("GET" | "HEAD", false) => "get",
        ("POST", _) => "create",
        ("PUT", false) => "update",
        ("PATCH", false) => "patch",
        ("DELETE", false) => "delete",
        ("DELETE", true) => "deletecollection",
        (m, _) => return Err(ApiError::method_not_allowed(m, &rp.plural)),
    })
}

/// Serves a resource request: the kind, its scope and subresource, the verb, authorization,
/// then the verb's handler.
async fn resource(
    shared: &Arc<Shared>,
    caller: &Caller,
    method: &Method,
    headers: &HeaderMap,
    rp: &ResourcePath,
    query: &Query,
    body: Body,
) -> Result<Response, ApiError> {
    let Some(rt) = resources::find(&rp.group, &rp.version, &rp.plural) else {
        return Err(ApiError::path_not_found());
    };
    if rt.namespaced == rp.namespace.is_empty()
        && !(rt.namespaced && rp.name.is_empty() && rp.namespace.is_empty())
    {
        return Err(ApiError::path_not_found());
    }
    if !rp.subresource.is_empty() && !rt.has_subresource(&rp.subresource) {
        return Err(ApiError::path_not_found());
    }
    let verb = verb_of(method, rp, query)?;
    if rt.create_only && verb == "create" {
        // Every authenticated user may ask what it may do: no authorization.
        return reviews::serve(rt, caller, headers, body).await;
    }
    caller.authorize(&Attributes {
        verb,
        group: rt.group,
        resource: rt.plural,
        subresource: &rp.subresource,
        namespace: &rp.namespace,
        name: &rp.name,
    })?;
    if rt.create_only || (!rt.verbs.contains(&verb) && rp.subresource.is_empty()) {
        return Err(ApiError::method_not_allowed(method.as_str(), rt.plural));
    }
    let ns = rp.namespace.as_str();
    let name = rp.name.as_str();
    let store = &shared.store;
    match (verb, rp.subresource.as_str()) {
        ("list", "") => objects::list(shared, rt, ns, query),
        ("watch", "") => watch::serve(shared.clone(), rt, ns, name, query),
        ("get", "" | "status") => objects::get(store, rt, ns, name),
        ("create", "") => objects::create(store, rt, rp, headers, query, body).await,
        ("update", sub @ ("" | "status")) => {
            objects::update(store, rt, rp, part(sub), headers, query, body).await
        }
        ("patch", sub @ ("" | "status")) => {
            objects::patch(store, rt, rp, part(sub), headers, query, body).await
        }
        ("delete", "") => objects::delete(store, rt, ns, name, query, body).await,
        ("deletecollection", "") => objects::delete_collection(store, rt, ns, query, body).await,
        (verb, "scale") => subresources::scale(store, rt, rp, verb, headers, query, body).await,
        ("create", "token") => subresources::token_request(shared, ns, name, headers, body).await,
        (_, "exec" | "attach") => Err(ApiError::bad_request(
            "Upgrade request required: pods/exec and pods/attach are served over WebSocket and SPDY",
        )),
        (_, "log") => Err(ApiError::bad_request("pods/log is not served by fakekube")),
        (verb, sub) => Err(ApiError::method_not_allowed(
            verb,
            &format!("{}/{sub}", rt.plural),
        )),
    }
}

/// The part of an object a write to `subresource` changes.
fn part(subresource: &str) -> Part {
    if subresource == "status" {
        Part::Status
    } else {
        Part::Main
    }
}
