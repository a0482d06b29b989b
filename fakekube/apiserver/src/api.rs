//! The dispatcher: the one handler every request reaches. It routes the path, applies the
//! request-level faults, authenticates the caller (and applies impersonation), and hands the
//! request to what serves its route: discovery, health and version here, once the path is
//! authorized; `pods/exec`, `pods/attach` and `pods/portforward` (authorized as `create` or
//! `get` of the subresource), `pods/log` and the node proxy (`/api/v1/nodes/<node>/proxy/...`,
//! authorized as `nodes/proxy`) to the pod's kubelet through [`Nodes`](crate::nodes::Nodes);
//! for resources, after the kind, scope and verb checks and authorization, the verb's handler
//! in [`objects`], [`watch`], [`subresources`], [`eviction`], [`ephemeral`] or [`reviews`].
//!
//! [`objects`]: crate::objects
//! [`watch`]: crate::watch
//! [`subresources`]: crate::subresources
//! [`reviews`]: crate::reviews
//! [`eviction`]: crate::eviction
//! [`ephemeral`]: crate::ephemeral

use crate::authn::Credentials;
use crate::authz::Caller;
use crate::faults::ChaosTarget;
use crate::negotiation::{self, Endpoint};
use crate::rbac::{Action, Attributes, NonResource, non_resource_verb};
use crate::request::Query;
use crate::response::{json_response, with_warnings};
use crate::route::{PodStream, ResourcePath, Route, route};
use crate::server::{PeerCertificate, ResetConnection};
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::Part;
use crate::subprotocol::protocol_token;
use crate::{
    checks, discovery, ephemeral, eviction, impersonation, objects, openapi, reviews, subresources,
    watch,
};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::Value;
use std::sync::Arc;

/// The router of every path: all of them reach [`handle`].
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

/// The single entry point for every request.
async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = Query::parse(parts.uri.query());
    let route = route(&path);
    tracing::debug!(method = %parts.method, %path, "request");
    let caller = match authenticate(&shared, &parts) {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    // Chaos strikes only the callers it is scoped to (so an admin's setup runs untouched).
    let chaotic = shared.faults.chaos_targets(&caller.user().name);
    if chaotic {
        if shared.faults.chaos_reset() {
            let mut reset = Response::new(Body::empty());
            reset.extensions_mut().insert(ResetConnection);
            return reset;
        }
        parts.extensions.insert(ChaosTarget);
    }
    let long_running = query.flag("watch")
        || matches!(&route, Route::NodeProxy { .. })
        || matches!(&route, Route::Resource(rp) if rp.pod_stream().is_some());
    let _permit = match shared.inflight.admit(long_running, &caller.user().groups) {
        Ok(permit) => permit,
        Err(refused) => return refused.into_response(),
    };
    // After admission: a slow answer holds its place among the requests in flight.
    if matches!(route, Route::Resource(_))
        && let Some(e) = shared.faults.before_resource_request(chaotic).await
    {
        return e.into_response();
    }
    let result = match &route {
        Route::Resource(rp) if let Some(stream) = rp.pod_stream() => {
            pod_stream(&shared, &caller, parts, rp, stream).await
        }
        Route::NodeProxy { node, path } => {
            let name = node_name(node);
            match caller.authorize(&Attributes {
                verb: proxy_verb(&parts.method),
                group: "",
                resource: "nodes",
                subresource: "proxy",
                namespace: "",
                name,
            }) {
                Ok(()) => Ok(shared.nodes.proxy(parts, name, path).await),
                Err(e) => Err(e),
            }
        }
        Route::Resource(rp) => {
            let deprecated = shared
                .store
                .registry()
                .find(&rp.group, &rp.version, &rp.plural)
                .and_then(|rt| rt.deprecation_warning.clone());
            let answer = resource(
                &shared,
                &caller,
                &parts.method,
                &parts.headers,
                rp,
                &query,
                body,
            )
            .await;
            // Every request to a deprecated version is warned, whatever its outcome.
            match deprecated {
                Some(w) => Ok(with_warnings(
                    answer.unwrap_or_else(IntoResponse::into_response),
                    &[w],
                )),
                None => answer,
            }
        }
        other => {
            let verb = non_resource_verb(&parts.method);
            match caller.authorize_action(&Action::NonResource(NonResource {
                verb: &verb,
                path: &path,
            })) {
                Ok(()) => non_resource(&shared, &parts, other, &path),
                Err(e) => Err(e),
            }
        }
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

/// `pods/exec`, `pods/attach` or `pods/portforward`: authorized as the request's verb on the
/// subresource (`create` for POST, `get` for GET), then handed to the pod's kubelet.
async fn pod_stream(
    shared: &Arc<Shared>,
    caller: &Caller,
    parts: Parts,
    rp: &ResourcePath,
    stream: PodStream,
) -> Result<Response, ApiError> {
    let verb = match parts.method {
        Method::GET => "get",
        Method::POST => "create",
        ref m => return Err(ApiError::method_not_allowed(m.as_str(), "pods")),
    };
    caller.authorize(&Attributes {
        verb,
        group: "",
        resource: "pods",
        subresource: stream.as_str(),
        namespace: &rp.namespace,
        name: &rp.name,
    })?;
    shared.nodes.stream(parts, rp.clone(), stream).await
}

/// The caller of a request: its client certificate or bearer token authenticated (anonymous
/// without either), then any impersonation it asks for and may make.
fn authenticate(shared: &Arc<Shared>, parts: &Parts) -> Result<Caller, ApiError> {
    let protocol_token = protocol_token(&parts.headers);
    let bearer = bearer(parts.headers.get(header::AUTHORIZATION)).or(protocol_token.as_deref());
    let certificate = parts
        .extensions
        .get::<PeerCertificate>()
        .map(|c| c.0.as_ref().as_ref());
    let identity = shared.authn.authenticate(Credentials {
        certificate,
        bearer,
    })?;
    impersonation::impersonate(Caller::new(identity, shared.authz.clone()), &parts.headers)
}

/// The token in an `Authorization: Bearer …` header, if any.
fn bearer(header: Option<&HeaderValue>) -> Option<&str> {
    let v = header?.to_str().ok()?;
    let (scheme, rest) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let t = rest.trim();
    (!t.is_empty()).then_some(t)
}

/// Serves an authorized request for a path that names no resource.
fn non_resource(
    shared: &Shared,
    parts: &Parts,
    route: &Route,
    path: &str,
) -> Result<Response, ApiError> {
    match route {
        Route::Version => Ok(json_response(
            StatusCode::OK,
            &discovery::version(&shared.version),
        )),
        Route::Health => {
            let mut r = Response::new(Body::from("ok"));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            Ok(r)
        }
        _ if parts.method != Method::GET => {
            Err(ApiError::method_not_allowed(parts.method.as_str(), path))
        }
        Route::CoreVersions | Route::Groups
            if let Some(v) = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|a| a.to_str().ok())
                .and_then(discovery::wants_aggregated) =>
        {
            let registry = shared.store.registry();
            let doc = discovery::aggregated(registry, *route == Route::CoreVersions, v);
            let ct =
                format!("application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList");
            Ok(cacheable(&parts.headers, &doc, &ct))
        }
        Route::CoreVersions => Ok(json_response(
            StatusCode::OK,
            &discovery::core_versions(&shared.address),
        )),
        Route::Groups => Ok(json_response(
            StatusCode::OK,
            &discovery::group_list(shared.store.registry()),
        )),
        Route::Group(g) => discovery::group(shared.store.registry(), g)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::path_not_found),
        Route::ResourceList(g, v) => discovery::resource_list(shared.store.registry(), g, v)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::path_not_found),
        Route::OpenApiV2 => {
            let accept = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|a| a.to_str().ok());
            let Some(format) = openapi::V2Format::negotiate(accept) else {
                let mut r = Response::new(Body::empty());
                *r.status_mut() = StatusCode::NOT_ACCEPTABLE;
                return Ok(r);
            };
            let doc = openapi::v2_document(shared.store.registry(), &shared.version, format);
            let mut r = cacheable_bytes(&parts.headers, doc, format.content_type());
            r.headers_mut()
                .insert(header::VARY, HeaderValue::from_static("Accept"));
            Ok(r)
        }
        Route::OpenApiRoot => Ok(cacheable(
            &parts.headers,
            &openapi::root(shared.store.registry(), &shared.version),
            "application/json",
        )),
        Route::OpenApiDoc(key) => openapi::document(shared.store.registry(), key, &shared.version)
            .map(|d| cacheable(&parts.headers, &d, "application/json"))
            .ok_or_else(ApiError::path_not_found),
        Route::Resource(_) | Route::NodeProxy { .. } | Route::Unknown => {
            Err(ApiError::path_not_found())
        }
    }
}

/// A document with a strong `ETag`; 304 when the request's `If-None-Match` names it.
fn cacheable(request: &HeaderMap, doc: &Value, content_type: &str) -> Response {
    cacheable_bytes(
        request,
        serde_json::to_vec(doc).unwrap_or_default(),
        content_type,
    )
}

/// Bytes with a strong `ETag`; 304 when the request's `If-None-Match` names it.
fn cacheable_bytes(request: &HeaderMap, bytes: Vec<u8>, content_type: &str) -> Response {
    let tag = discovery::etag(&bytes);
    let matches = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut resp = if matches {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        Response::new(Body::from(bytes))
    };
    if let Ok(h) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, h);
    }
    if let Ok(h) = HeaderValue::from_str(&tag) {
        resp.headers_mut().insert(header::ETAG, h);
    }
    resp
}

/// The node a node-proxy path names (`name`, `name:port`, `https:name:port`).
fn node_name(node: &str) -> &str {
    let mut parts = node.split(':');
    match (parts.next(), parts.next()) {
        (Some("http" | "https"), Some(name)) => name,
        (Some(name), _) => name,
        (None, _) => "",
    }
}

/// The verb a proxy request is authorized as: its HTTP method's.
fn proxy_verb(method: &Method) -> &'static str {
    match *method {
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "get",
    }
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

/// The object name a request is authorized for: the path's, or for a list or watch the one
/// its field selector pins (`metadata.name=x`, as `kubectl get pod x -w` sends), so that rules
/// with `resourceNames` can allow it.
fn authorized_name<'a>(rp: &'a ResourcePath, verb: &str, query: &'a Query) -> &'a str {
    if !rp.name.is_empty() || !matches!(verb, "list" | "watch") {
        return &rp.name;
    }
    query
        .get("fieldSelector")
        .and_then(|fs| {
            let mut terms = fs.split(',');
            let only = terms.next()?;
            if terms.next().is_some() {
                return None;
            }
            only.strip_prefix("metadata.name==")
                .or_else(|| only.strip_prefix("metadata.name="))
        })
        .unwrap_or("")
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
    let Some(found) = shared
        .store
        .registry()
        .find(&rp.group, &rp.version, &rp.plural)
    else {
        return Err(ApiError::path_not_found());
    };
    let rt = &found;
    if rt.namespaced == rp.namespace.is_empty()
        && !(rt.namespaced && rp.name.is_empty() && rp.namespace.is_empty())
    {
        return Err(ApiError::path_not_found());
    }
    if !rp.subresource.is_empty() && !rt.has_subresource(&rp.subresource) {
        return Err(ApiError::path_not_found());
    }
    let verb = verb_of(method, rp, query)?;
    caller.authorize(&Attributes {
        verb,
        group: &rt.group,
        resource: &rt.plural,
        subresource: &rp.subresource,
        namespace: &rp.namespace,
        name: authorized_name(rp, verb, query),
    })?;
    checks::request(verb, headers, query)?;
    if rt.create_only && verb == "create" && rp.subresource.is_empty() {
        return reviews::serve(shared, rt, caller, &rp.namespace, headers, body).await;
    }
    if rt.create_only || (!rt.verbs.contains(&verb) && rp.subresource.is_empty()) {
        return Err(ApiError::method_not_allowed(method.as_str(), &rt.plural));
    }
    let ns = rp.namespace.as_str();
    let name = rp.name.as_str();
    let store = &shared.store;
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let negotiate = |endpoint| negotiation::negotiate(accept, endpoint);
    let sub = rp.subresource.as_str();
    if sub.is_empty() || sub == "status" || sub == "approval" {
        let req = objects::Request {
            store,
            rt,
            rp,
            headers,
            query,
            user: caller.user(),
            repr: negotiate(if verb == "watch" {
                Endpoint::Watch
            } else {
                Endpoint::Object
            })?,
        };
        return match (verb, sub) {
            ("list", "") => objects::list(shared, &req),
            ("watch", "") => match shared
                .faults
                .chaos_targets(&caller.user().name)
                .then(|| shared.faults.chaos_watch())
                .flatten()
            {
                Some(gone) => Ok(watch::expired(&gone)),
                None => watch::serve(shared.clone(), rt.clone(), ns, name, query, req.repr),
            },
            ("get", _) => objects::get(&req),
            ("create", "") => objects::create(&req, body).await,
            ("update", sub) => objects::update(&req, part(sub), body).await,
            ("patch", sub) => objects::patch(&req, part(sub), body).await,
            ("delete", "") => objects::delete(&req, body).await,
            ("deletecollection", "") => objects::delete_collection(&req, body).await,
            (verb, _) => Err(ApiError::method_not_allowed(
                verb,
                &format!("{}/{sub}", rt.plural),
            )),
        };
    }
    match (verb, sub) {
        (verb, "scale") => subresources::scale(store, rt, rp, verb, headers, query, body).await,
        ("create", "token") => subresources::token_request(shared, ns, name, headers, body).await,
        (_, "exec" | "attach") => Err(ApiError::bad_request(
            "Upgrade request required: pods/exec and pods/attach are served over WebSocket and SPDY",
        )),
        ("get", "log") => shared.nodes.logs(rp, query),
        ("create", "eviction") => eviction::serve(store, rt, ns, name, headers, query, body).await,
        (verb, "ephemeralcontainers") => {
            ephemeral::serve(store, rt, verb, ns, name, headers, query, body).await
        }
        (verb, sub) => Err(ApiError::method_not_allowed(
            verb,
            &format!("{}/{sub}", rt.plural),
        )),
    }
}

/// The part of an object a write to `subresource` changes (a CertificateSigningRequest's
/// `approval` writes its status).
fn part(subresource: &str) -> Part {
    if subresource == "status" || subresource == "approval" {
        Part::Status
    } else {
        Part::Main
    }
}
