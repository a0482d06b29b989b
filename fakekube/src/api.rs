//! The HTTP surface: routing of Kubernetes paths, authentication and authorization, and the
//! verbs, each answered with JSON or a `metav1.Status`.

use crate::auth::{self, Attributes, Caller};
use crate::discovery;
use crate::patch::PatchKind;
use crate::resources::{self, ResourceType};
use crate::selector::{FieldSelector, LabelSelector};
use crate::server::Shared;
use crate::status::{self, ApiError, Target};
use crate::store::{
    DeleteOptions, Deleted, EventType, FieldValidation, ListQuery, Part, Propagation, WriteOptions,
};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The largest request body the server reads (the API server's limit is 3 MiB).
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = json_response(self.code, &self.to_status());
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

/// A JSON response.
pub(crate) fn json_response(code: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut resp = Response::new(Body::from(bytes));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}

/// A parsed Kubernetes request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz` and their sub-checks.
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1`, `/apis/<group>/<version>`.
    ResourceList(String, String),
    /// `/openapi/v3`.
    OpenApiRoot,
    /// `/openapi/v3/<key>`.
    OpenApiDoc(String),
    /// A resource or collection.
    Resource(ResourcePath),
    /// Nothing served here.
    Unknown,
}

/// A resource request's path parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) namespace: String,
    pub(crate) plural: String,
    pub(crate) name: String,
    pub(crate) subresource: String,
}

/// Parses a request path into a route.
pub(crate) fn route(path: &str) -> Route {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        [h, ..] if matches!(*h, "healthz" | "livez" | "readyz") => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group((*g).to_string()),
        ["api", v] => Route::ResourceList(String::new(), (*v).to_string()),
        ["apis", g, v] => Route::ResourceList((*g).to_string(), (*v).to_string()),
        ["openapi", "v3"] => Route::OpenApiRoot,
        ["openapi", "v3", rest @ ..] if !rest.is_empty() => Route::OpenApiDoc(rest.join("/")),
        ["api", v, rest @ ..] => resource_route("", v, rest),
        ["apis", g, v, rest @ ..] => resource_route(g, v, rest),
        _ => Route::Unknown,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let mk = |ns: &str, plural: &str, name: &str, sub: &str| {
        if rest.iter().any(|s| s.is_empty()) {
            return Route::Unknown;
        }
        Route::Resource(ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            namespace: ns.to_string(),
            plural: plural.to_string(),
            name: name.to_string(),
            subresource: sub.to_string(),
        })
    };
    match rest {
        ["namespaces"] => mk("", "namespaces", "", ""),
        ["namespaces", name] => mk("", "namespaces", name, ""),
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => {
            mk("", "namespaces", name, sub)
        }
        ["namespaces", ns, plural] => mk(ns, plural, "", ""),
        ["namespaces", ns, plural, name] => mk(ns, plural, name, ""),
        ["namespaces", ns, plural, name, sub] => mk(ns, plural, name, sub),
        [plural] => mk("", plural, "", ""),
        [plural, name] => mk("", plural, name, ""),
        [plural, name, sub] => mk("", plural, name, sub),
        _ => Route::Unknown,
    }
}

/// Query parameters, first value wins.
#[derive(Debug, Default)]
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    fn parse(q: Option<&str>) -> Self {
        Query(
            q.map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default(),
        )
    }

    /// The first value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean the way apimachinery parses one: missing is false, `0`/`false` in any case
    /// are false, anything else (even empty) is true.
    pub(crate) fn flag(&self, key: &str) -> bool {
        match self.get(key) {
            None => false,
            Some(v) => !(v == "0" || v.eq_ignore_ascii_case("false")),
        }
    }
}

/// The single entry point for every request.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = Query::parse(parts.uri.query());
    let route = route(&path);
    tracing::debug!(method = %parts.method, %path, "request");
    if let Some(resp) = shared.faults.before_request(&route).await {
        return resp;
    }
    let public = matches!(route, Route::Health | Route::Version);
    let protocol_token = crate::exec::protocol_token(&parts.headers);
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
        (Route::Resource(rp), Some(caller)) if let Some(kind) = crate::exec::kind_of(rp) => {
            crate::exec::serve(&shared, &caller, parts, rp, kind).await
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
        (other, Some(_)) if parts.method != Method::GET => {
            let _ = other;
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

async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiError::too_large(MAX_BODY))
        }
        Err(_) => Err(ApiError::bad_request("the request body could not be read")),
    }
}

/// Decodes a JSON or YAML body into a JSON value.
fn decode(headers: &HeaderMap, bytes: &[u8]) -> Result<Value, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if bytes.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    if essence == "application/vnd.kubernetes.protobuf" {
        return crate::protobuf::decode(bytes).map_err(|e| match e {
            crate::protobuf::ProtobufError::UnsupportedKind(kind) => ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UnsupportedMediaType",
                format!("fakekube reads protobuf bodies only for the kinds kubectl sends that way, not {kind}; send application/json"),
            ),
            other => ApiError::bad_request(other.to_string()),
        });
    }
    if essence.contains("protobuf") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml; got {essence}"
            ),
        ));
    }
    if essence.ends_with("yaml") {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| ApiError::bad_request("the YAML body is not UTF-8"))?;
        return serde_saphyr::from_str::<Value>(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "Object 'Kind' is missing or the body is not valid JSON: {e}"
        ))
    })
}

fn write_options(query: &Query) -> Result<WriteOptions, ApiError> {
    let field_validation = match query.get("fieldValidation") {
        None | Some("") => FieldValidation::Warn,
        Some(v) if v.eq_ignore_ascii_case("strict") => FieldValidation::Strict,
        Some(v) if v.eq_ignore_ascii_case("warn") => FieldValidation::Warn,
        Some(v) if v.eq_ignore_ascii_case("ignore") => FieldValidation::Ignore,
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: \"{v}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
            )));
        }
    };
    let dry_run = match query.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: \"{v}\": supported values: \"All\""
            )));
        }
    };
    Ok(WriteOptions {
        field_validation,
        dry_run,
        patch: false,
    })
}

/// Checks that a body's apiVersion, kind and namespace fit the URL.
fn check_body(
    rt: &ResourceType,
    rp: &ResourcePath,
    body: &Value,
    expect_kind: &str,
) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    let want_av = if expect_kind == rt.kind {
        rt.api_version()
    } else {
        String::new()
    };
    if let Some(av) = body.get("apiVersion").and_then(Value::as_str)
        && !want_av.is_empty()
        && av != want_av
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({want_av})"
        )));
    }
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && kind != expect_kind
    {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {expect_kind}: the kind in the data does not match the URL",
            rt.version
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
        // Every authenticated user may ask what it may do (system:basic-user).
        let body = decode(headers, &read_body(body).await?)?;
        return Ok(crate::reviews::review(rt, caller, body));
    }
    caller.authorize(&Attributes {
        verb,
        group: rt.group,
        resource: rt.plural,
        subresource: &rp.subresource,
        namespace: &rp.namespace,
        name: &rp.name,
    })?;
    if rt.create_only {
        if verb != "create" {
            return Err(ApiError::method_not_allowed(method.as_str(), rt.plural));
        }
        let body = decode(headers, &read_body(body).await?)?;
        return Ok(crate::reviews::review(rt, caller, body));
    }
    if !rt.verbs.contains(&verb) && rp.subresource.is_empty() {
        return Err(ApiError::method_not_allowed(method.as_str(), rt.plural));
    }
    let ns = rp.namespace.as_str();
    let name = rp.name.as_str();
    let store = &shared.store;
    match (verb, rp.subresource.as_str()) {
        ("list", "") => {
            let q = list_query(rt, query)?;
            let namespace = (!ns.is_empty()).then_some(ns);
            if let Some(resp) = shared.faults.list_page(q.continue_token.is_some()) {
                return Err(resp);
            }
            Ok(json_response(
                StatusCode::OK,
                &store.list(rt, namespace, &q)?,
            ))
        }
        ("watch", "") => {
            let mut q = list_query(rt, query)?;
            if !name.is_empty() {
                q.fields = Some(
                    FieldSelector::parse(&format!("metadata.name={name}"))
                        .map_err(|e| ApiError::bad_request(e.to_string()))?,
                );
            }
            crate::watch::serve(
                shared.clone(),
                rt,
                (!ns.is_empty()).then(|| ns.to_string()),
                q,
                query,
            )
        }
        ("get", "") | ("get", "status") => {
            Ok(json_response(StatusCode::OK, &*store.get(rt, ns, name)?))
        }
        ("create", "") => {
            let opts = write_options(query)?;
            let obj = decode(headers, &read_body(body).await?)?;
            check_body(rt, rp, &obj, rt.kind)?;
            let (created, warnings) = store.create(rt, ns, obj, opts)?;
            Ok(with_warnings(
                json_response(StatusCode::CREATED, &created),
                &warnings,
            ))
        }
        ("update", sub @ ("" | "status")) => {
            let opts = write_options(query)?;
            let obj = decode(headers, &read_body(body).await?)?;
            check_body(rt, rp, &obj, rt.kind)?;
            let part = if sub == "status" {
                Part::Status
            } else {
                Part::Main
            };
            let (updated, warnings) = store.update(rt, ns, name, obj, part, opts)?;
            Ok(with_warnings(
                json_response(StatusCode::OK, &updated),
                &warnings,
            ))
        }
        ("patch", sub @ ("" | "status")) => {
            let opts = write_options(query)?;
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let kind = PatchKind::from_content_type(ct)
                .ok_or_else(|| ApiError::unsupported_media_type(ct))?;
            let patch = decode(headers, &read_body(body).await?)?;
            if kind == PatchKind::Apply {
                check_body(rt, rp, &patch, rt.kind)?;
            }
            let part = if sub == "status" {
                Part::Status
            } else {
                Part::Main
            };
            let existed = store.get_opt(rt, ns, name).is_some();
            let (patched, warnings) = store.patch(rt, ns, name, kind, &patch, part, opts)?;
            let code = if !existed && kind == PatchKind::Apply {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(with_warnings(json_response(code, &patched), &warnings))
        }
        ("delete", "") => {
            let raw = read_body(body).await?;
            let opts = delete_options(query, &raw)?;
            let t = Target {
                group: rt.group,
                resource: rt.plural,
                kind: rt.kind,
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
                Deleted::Pending(obj) => Ok(json_response(StatusCode::ACCEPTED, &obj)),
            }
        }
        ("deletecollection", "") => {
            let raw = read_body(body).await?;
            let opts = delete_options(query, &raw)?;
            let q = list_query(rt, query)?;
            let items = store.delete_collection(rt, (!ns.is_empty()).then_some(ns), &q, &opts)?;
            let items: Vec<Value> = items.iter().map(|v| Value::clone(v)).collect();
            Ok(json_response(
                StatusCode::OK,
                &json!({
                    "kind": format!("{}List", rt.kind),
                    "apiVersion": rt.api_version(),
                    "metadata": { "resourceVersion": store.resource_version().to_string() },
                    "items": items,
                }),
            ))
        }
        (verb, "scale") => crate::subresources::scale(
            shared,
            rt,
            ns,
            name,
            verb,
            headers,
            query,
            read_body(body).await?,
        ),
        ("create", "token") => {
            let raw = read_body(body).await?;
            let req = if raw.is_empty() {
                json!({})
            } else {
                decode(headers, &raw)?
            };
            crate::subresources::token_request(shared, ns, name, req)
        }
        (_, "exec" | "attach") => Err(ApiError::bad_request(
            "Upgrade request required: pods/exec and pods/attach are served over WebSocket",
        )),
        (_, "log") => Err(ApiError::bad_request("pods/log is not served by fakekube")),
        (verb, sub) => Err(ApiError::method_not_allowed(
            verb,
            &format!("{}/{sub}", rt.plural),
        )),
    }
}

fn list_query(rt: &ResourceType, query: &Query) -> Result<ListQuery, ApiError> {
    let labels = match query.get("labelSelector") {
        None | Some("") => None,
        Some(s) => Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?),
    };
    let fields = match query.get("fieldSelector") {
        None | Some("") => None,
        Some(s) => {
            let f = FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?;
            let mut supported = vec!["metadata.name", "metadata.namespace"];
            supported.extend_from_slice(rt.extra_fields);
            f.check_supported(&supported)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            Some(f)
        }
    };
    let limit = match query.get("limit") {
        None | Some("") => 0,
        Some(s) => s
            .parse::<i64>()
            .map_err(|_| {
                ApiError::bad_request(format!("limit: Invalid value: \"{s}\": must be an integer"))
            })?
            .max(0) as usize,
    };
    let continue_token = query
        .get("continue")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    Ok(ListQuery {
        labels,
        fields,
        limit,
        continue_token,
    })
}

fn delete_options(query: &Query, raw: &[u8]) -> Result<DeleteOptions, ApiError> {
    let body: Value = if raw.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(raw)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    let policy = query
        .get("propagationPolicy")
        .map(str::to_string)
        .or_else(|| {
            body.get("propagationPolicy")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let orphan = query
        .get("orphanDependents")
        .map(|v| v == "true")
        .or_else(|| body.get("orphanDependents").and_then(Value::as_bool));
    let propagation = match (policy.as_deref(), orphan) {
        (Some("Orphan"), _) | (None, Some(true)) => Some(Propagation::Orphan),
        (Some("Background"), _) => Some(Propagation::Background),
        (Some("Foreground"), _) => Some(Propagation::Foreground),
        (None, _) => None,
        (Some(other), _) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
    };
    let pre = body.get("preconditions");
    let dry_run = query.get("dryRun") == Some("All")
        || body
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        propagation,
        uid: pre
            .and_then(|p| p.get("uid"))
            .and_then(Value::as_str)
            .map(str::to_string),
        resource_version: pre
            .and_then(|p| p.get("resourceVersion"))
            .and_then(Value::as_str)
            .map(str::to_string),
        dry_run,
    })
}

/// Parses `timeoutSeconds`.
pub(crate) fn timeout_param(query: &Query) -> Option<Duration> {
    query
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
}

/// The watch event line for `kind`.
pub(crate) fn event_line(kind: EventType, obj: &Value) -> Vec<u8> {
    let mut line =
        serde_json::to_vec(&json!({ "type": kind.as_str(), "object": obj })).unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(g: &str, ns: &str, plural: &str, name: &str, sub: &str) -> Route {
        Route::Resource(ResourcePath {
            group: g.into(),
            version: if g.is_empty() {
                "v1".into()
            } else {
                "v1beta1".into()
            },
            namespace: ns.into(),
            plural: plural.into(),
            name: name.into(),
            subresource: sub.into(),
        })
    }

    #[test]
    fn paths_route_to_resources_namespaces_and_subresources() {
        assert_eq!(
            route("/api/v1/namespaces"),
            rp("", "", "namespaces", "", "")
        );
        assert_eq!(
            route("/api/v1/namespaces/default"),
            rp("", "", "namespaces", "default", "")
        );
        assert_eq!(
            route("/api/v1/namespaces/default/status"),
            rp("", "", "namespaces", "default", "status")
        );
        assert_eq!(
            route("/api/v1/namespaces/default/pods"),
            rp("", "default", "pods", "", "")
        );
        assert_eq!(
            route("/api/v1/namespaces/d/pods/p/exec"),
            rp("", "d", "pods", "p", "exec")
        );
        assert_eq!(
            route("/apis/agents.x-k8s.io/v1beta1/namespaces/d/sandboxes/s/status"),
            rp("agents.x-k8s.io", "d", "sandboxes", "s", "status")
        );
        assert_eq!(
            route("/apis/agents.x-k8s.io/v1beta1/sandboxes"),
            rp("agents.x-k8s.io", "", "sandboxes", "", "")
        );
        assert_eq!(
            route("/apis/agents.x-k8s.io"),
            Route::Group("agents.x-k8s.io".into())
        );
        assert_eq!(route("/readyz/ping"), Route::Health);
        assert_eq!(route("/nope"), Route::Unknown);
        assert_eq!(route("/api/v1/namespaces/a/b/c/d/e"), Route::Unknown);
        assert_eq!(route("/api/v1/namespaces//pods"), Route::Unknown);
    }

    #[test]
    fn boolean_parameters_parse_as_apimachinery_does() {
        let q = Query::parse(Some("&a=true&b=False&c=0&d=&e=yes"));
        assert!(q.flag("a"));
        assert!(!q.flag("b"));
        assert!(!q.flag("c"));
        assert!(q.flag("d"));
        assert!(q.flag("e"));
        assert!(!q.flag("missing"));
    }
}
