//! The kubelet's own HTTPS API (the port `10250` of a cluster's nodes), and the API server's
//! node proxy (`/api/v1/nodes/<node>/proxy/<path>`) that reaches it in-process.
//!
//! Routes, as the kubelet serves them: `/exec/<ns>/<pod>[/<uid>]/<container>` and
//! `/attach/...` (the exec and attach handlers of `pods/exec`, over WebSocket or SPDY, with
//! the same query), `/portForward/<ns>/<pod>[/<uid>]` (the `pods/portforward` handler),
//! `/containerLogs/<ns>/<pod>/<container>` (the `pods/log` handler, same query), `/pods` (a
//! `PodList` of the node's pods), `/runningpods/` (a `PodList` of its running pods, as the
//! runtime sees them: names, uids, containers) and `/healthz`.
//!
//! Its own listener authenticates and authorizes as a kubelet with webhook authentication and
//! authorization does, through an [`Authorize`] its embedder supplies: the embedded fake's
//! (`fakekube::kubelet_api`: the API server's authenticators and RBAC, in process) or a node's
//! ([`crate::webhook_auth`]: its client CA, TokenReviews and SubjectAccessReviews). Anonymous
//! callers get `401 Unauthorized`; the others are authorized as the kubelet's
//! SubjectAccessReviews ask: verb by HTTP method, resource `nodes`, the node's name,
//! subresource by path (`stats`, `metrics`, `log`, `checkpoint`, `statusz`; `pods`, `healthz`
//! and `configz` falling back to `proxy`, `/flagz` as `configz`; `proxy` otherwise), 403
//! worded as the kubelet words it, 500 when the review fails. Its errors are plain text, as
//! the kubelet's are, not `metav1.Status`. The node proxy is authorized by the dispatcher as
//! `nodes/proxy` and hands the request here as the API server's own kubelet client would.
//!
//! # Known limitations
//!
//! - The embedded fake's listener serves the API server's certificate (same CA, same names),
//!   not a certificate of its own for the node (a [`crate::KubeletNode`]'s has its own).
//! - `/stats`, `/metrics`, `/logs`, `/configz`, `/checkpoint`, `/run` and `/debug` are not
//!   served (404).
//! - Through the node proxy any port of the node reaches this API (the node runs nothing else).

use crate::client::Kind;
use crate::pod_access::PodAccess;
use crate::query::Query;
use crate::response::json_response;
use crate::route::ResourcePath;
use crate::status::ApiError;
use crate::{exec, logs, portforward};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::request::Parts;
use http::{HeaderValue, Method, StatusCode, Uri, header};
use serde_json::{Value, json};
use std::sync::Arc;

/// The kubelet API's listener: the pods it reaches and who it lets in.
#[derive(Debug)]
pub struct KubeletApi {
    /// The kubelet and what its stream handlers need.
    streams: Arc<PodAccess>,
    /// Who is let in, as the API server decides.
    access: Arc<dyn Authorize>,
}

/// The API server's side of the kubelet's webhook authentication and authorization (its
/// TokenReviews and SubjectAccessReviews), supplied by whoever embeds the kubelet.
pub trait Authorize: Send + Sync + std::fmt::Debug {
    /// Authenticates the caller of a request (`parts`: its client certificate, bearer token or
    /// WebSocket token subprotocol) and authorizes `verb` on `nodes/<subresource>` of `node`,
    /// allowed when any of `subresources` is. It may wait for the API server (a node's reviews
    /// block the thread, handing a multi-threaded runtime worker's other tasks on).
    fn caller_allowed(
        &self,
        parts: &Parts,
        node: &str,
        subresources: &[&str],
        verb: &str,
    ) -> Result<(), Refusal>;
}

/// Why the kubelet refused a caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No credentials, refused ones or anonymous: `401 Unauthorized`.
    Unauthorized,
    /// Authenticated as `user` but not allowed: the kubelet's 403.
    Forbidden {
        /// The caller's user name.
        user: String,
    },
    /// Authenticated as `user`, but the review of `subresource` failed: the kubelet's 500.
    AuthorizationError {
        /// The caller's user name.
        user: String,
        /// The subresource whose review failed.
        subresource: String,
    },
}

impl KubeletApi {
    /// The API of the kubelet in `streams`, letting in whom `access` allows.
    pub fn new(streams: Arc<PodAccess>, access: Arc<dyn Authorize>) -> Self {
        KubeletApi { streams, access }
    }

    /// The node its kubelet runs as (none without a kubelet).
    fn node_name(&self) -> Option<&str> {
        self.streams.kubelet.as_ref().map(|k| k.node_name())
    }
}

/// The router of the kubelet's listener: every path reaches [`handle`].
pub fn router(api: Arc<KubeletApi>) -> Router {
    Router::new().fallback(handle).with_state(api)
}

/// A request to the kubelet's own listener: authenticated, authorized, served.
async fn handle(State(api): State<Arc<KubeletApi>>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let node = api.node_name().unwrap_or("");
    let verb = verb_of(&parts.method);
    let subresources = subresources_of(parts.uri.path());
    match api.access.caller_allowed(&parts, node, subresources, verb) {
        Ok(()) => {}
        Err(Refusal::Unauthorized) => {
            return text(StatusCode::UNAUTHORIZED, "Unauthorized");
        }
        Err(Refusal::Forbidden { user }) => {
            return text(
                StatusCode::FORBIDDEN,
                &format!(
                    "Forbidden (user={user}, verb={verb}, resource=nodes, subresource(s)=[{}])\n",
                    subresources.join(" ")
                ),
            );
        }
        Err(Refusal::AuthorizationError { user, subresource }) => {
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!(
                    "Authorization error (user={user}, verb={verb}, resource=nodes, subresource={subresource})"
                ),
            );
        }
    }
    serve(&api.streams, parts).await
}

/// The verb the kubelet authorizes an HTTP method as.
pub fn verb_of(method: &Method) -> &'static str {
    match *method {
        Method::POST => "create",
        Method::GET => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    }
}

/// The `nodes` subresources that allow a path, in the order the kubelet asks about them.
pub fn subresources_of(path: &str) -> &'static [&'static str] {
    let under = |prefix: &str| {
        path == prefix
            || path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    if under("/stats") {
        &["stats"]
    } else if under("/metrics") {
        &["metrics"]
    } else if under("/logs") {
        &["log"]
    } else if under("/checkpoint") {
        &["checkpoint"]
    } else if under("/statusz") {
        &["statusz"]
    } else if under("/flagz") {
        &["configz"]
    } else if under("/pods") || under("/runningpods") {
        &["pods", "proxy"]
    } else if under("/healthz") {
        &["healthz", "proxy"]
    } else if under("/configz") {
        &["configz", "proxy"]
    } else {
        &["proxy"]
    }
}

/// Serves a request the API server proxied to the node (`/api/v1/nodes/<node>/proxy/<path>`),
/// already authorized as `nodes/proxy`: `path` is served as the kubelet serves it, on the
/// node `name` (the path's node without its scheme and port).
pub async fn proxy(streams: &Arc<PodAccess>, mut parts: Parts, name: &str, path: &str) -> Response {
    if streams
        .kubelet
        .as_ref()
        .is_none_or(|k| k.node_name() != name)
    {
        let e = ApiError::not_found(crate::status::Target {
            group: "",
            resource: "nodes",
            kind: "Node",
            name,
        });
        return axum::response::IntoResponse::into_response(e);
    }
    let target = match parts.uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    };
    match target.parse::<Uri>() {
        Ok(uri) => parts.uri = uri,
        Err(_) => return text(StatusCode::BAD_REQUEST, "invalid path"),
    }
    serve(streams, parts).await
}

/// Serves an authorized request to the kubelet by its path.
async fn serve(shared: &Arc<PodAccess>, parts: Parts) -> Response {
    let path = parts.uri.path().to_string();
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let streaming = matches!(parts.method, Method::GET | Method::POST);
    let readable = matches!(parts.method, Method::GET | Method::HEAD);
    match segs.as_slice() {
        ["healthz", ..] if readable => text(StatusCode::OK, "ok"),
        ["pods"] | ["pods", ""] if readable => pod_list(shared, false),
        ["runningpods"] | ["runningpods", ""] if readable => pod_list(shared, true),
        [kind @ ("exec" | "attach"), ns, pod, rest @ ..] if streaming && !rest.is_empty() => {
            let (uid, container) = match rest {
                [container] => (None, *container),
                [uid, container] => (Some(*uid), *container),
                _ => return not_found(),
            };
            let kind = if *kind == "exec" {
                exec::Kind::Exec
            } else {
                exec::Kind::Attach
            };
            exec_or_attach(shared, parts, ns, pod, uid, container, kind).await
        }
        ["portForward", ns, pod, rest @ ..] if streaming && rest.len() <= 1 => {
            port_forward(shared, parts, ns, pod, rest.first().copied()).await
        }
        ["containerLogs", ns, pod, container] if readable => {
            container_logs(shared, &parts, ns, pod, container)
        }
        [
            "healthz" | "pods" | "runningpods" | "exec" | "attach" | "portForward"
            | "containerLogs",
            ..,
        ] if !(readable || streaming) => {
            text(StatusCode::METHOD_NOT_ALLOWED, "405: Method Not Allowed")
        }
        _ => not_found(),
    }
}

/// `/exec` and `/attach`: the pod checked as the kubelet checks it (404 `pod does not exist`;
/// a uid that is not the pod's finds no container), then `pods/exec`'s handler.
async fn exec_or_attach(
    shared: &Arc<PodAccess>,
    mut parts: Parts,
    ns: &str,
    pod: &str,
    uid: Option<&str>,
    container: &str,
    kind: exec::Kind,
) -> Response {
    let Some(found) = find_pod(shared, ns, pod) else {
        return text(StatusCode::NOT_FOUND, "pod does not exist");
    };
    if uid.is_some_and(|u| u != uid_of(&found)) {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("container not found ({container:?})"),
        );
    }
    let Some(uri) = exec_uri(&parts.uri, container) else {
        return text(StatusCode::BAD_REQUEST, "invalid container name");
    };
    parts.uri = uri;
    let rp = pod_path(ns, pod, kind.as_str());
    answer(exec::serve_authorized(shared, parts, &rp, kind).await)
}

/// `/portForward`: the pod checked as the kubelet checks it (404 `pod does not exist`, 404
/// `pod not found` for a uid that is not the pod's), then `pods/portforward`'s handler.
async fn port_forward(
    shared: &Arc<PodAccess>,
    parts: Parts,
    ns: &str,
    pod: &str,
    uid: Option<&str>,
) -> Response {
    let Some(found) = find_pod(shared, ns, pod) else {
        return text(StatusCode::NOT_FOUND, "pod does not exist");
    };
    if uid.is_some_and(|u| u != uid_of(&found)) {
        return text(StatusCode::NOT_FOUND, "pod not found");
    }
    let rp = pod_path(ns, pod, "portforward");
    answer(portforward::serve_authorized(shared, parts, &rp).await)
}

/// `/containerLogs`: `pods/log`'s handler with the container of the path.
fn container_logs(
    shared: &PodAccess,
    parts: &Parts,
    ns: &str,
    pod: &str,
    container: &str,
) -> Response {
    if find_pod(shared, ns, pod).is_none() {
        return text(StatusCode::NOT_FOUND, "pod does not exist");
    }
    let query = Query::parse(Some(&query_with_container(parts.uri.query(), container)));
    let rp = pod_path(ns, pod, "log");
    answer(logs::serve(shared, &rp, &query))
}

/// The `pods/<subresource>` path the shared handlers take.
fn pod_path(ns: &str, pod: &str, subresource: &str) -> ResourcePath {
    ResourcePath {
        group: String::new(),
        version: "v1".into(),
        namespace: ns.into(),
        plural: "pods".into(),
        name: pod.into(),
        subresource: subresource.into(),
    }
}

/// The query with `container` first, so that the path's container is the one served (the
/// first value of a parameter wins).
fn query_with_container(query: Option<&str>, container: &str) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("container", container);
    let mut s = q.finish();
    if let Some(rest) = query.filter(|r| !r.is_empty()) {
        s.push('&');
        s.push_str(rest);
    }
    s
}

/// The kubelet's exec query (`command`, and `input`, `output`, `error`, `tty`, each on only
/// when `1`, as the API server writes them) as `pods/exec`'s (`stdin`, `stdout`, `stderr`,
/// `tty`), with the path's container; the API server's names are not the kubelet's and are
/// dropped.
fn exec_query(query: Option<&str>, container: &str) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("container", container);
    let mut seen = std::collections::HashSet::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let stream = match k.as_ref() {
            "command" => {
                q.append_pair("command", &v);
                continue;
            }
            "input" => "stdin",
            "output" => "stdout",
            "error" => "stderr",
            "tty" => "tty",
            _ => continue,
        };
        if seen.insert(stream) {
            q.append_pair(stream, if v == "1" { "true" } else { "false" });
        }
    }
    q.finish()
}

/// The request's target with the path's container and the kubelet's exec query as
/// `pods/exec`'s query; `None` when that is no valid target.
fn exec_uri(uri: &Uri, container: &str) -> Option<Uri> {
    format!("{}?{}", uri.path(), exec_query(uri.query(), container))
        .parse()
        .ok()
}

/// The pod `ns/name` when it is bound to this node.
fn find_pod(shared: &PodAccess, ns: &str, name: &str) -> Option<Arc<Value>> {
    let kubelet = shared.kubelet.as_ref()?;
    let pod = shared.api.get(Kind::Pod, ns, name)?;
    (node_of(&pod) == kubelet.node_name()).then_some(pod)
}

/// A pod's `spec.nodeName`.
fn node_of(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A pod's `metadata.uid`.
fn uid_of(pod: &Value) -> &str {
    pod.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `/pods` (every pod bound to the node, as the API server has it) or `/runningpods/` (the
/// running ones, as the container runtime knows them: name, namespace, uid, containers).
fn pod_list(shared: &PodAccess, running_only: bool) -> Response {
    let Some(kubelet) = shared.kubelet.as_ref() else {
        return not_found();
    };
    let items: Vec<Value> = shared
        .api
        .list(Kind::Pod, None)
        .into_iter()
        .filter(|p| node_of(p) == kubelet.node_name())
        .filter_map(|p| {
            if !running_only {
                let mut item = Value::clone(&p);
                if let Some(o) = item.as_object_mut() {
                    // Items of a typed list carry no kind or apiVersion.
                    o.remove("kind");
                    o.remove("apiVersion");
                }
                return Some(item);
            }
            running(&p)
        })
        .collect();
    let list = json!({
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {},
        "items": items,
    });
    json_response(StatusCode::OK, &list)
}

/// A running pod as the runtime reports it, `None` when none of its containers runs.
fn running(pod: &Value) -> Option<Value> {
    let statuses = pod.pointer("/status/containerStatuses")?.as_array()?;
    let images: Vec<Value> = statuses
        .iter()
        .filter(|s| s.pointer("/state/running").is_some())
        .map(|s| {
            json!({
                "name": s.get("name").cloned().unwrap_or(Value::Null),
                "image": s.get("image").cloned().unwrap_or(Value::Null),
                "resources": {},
            })
        })
        .collect();
    if images.is_empty() {
        return None;
    }
    let meta = pod.get("metadata")?;
    Some(json!({
        "metadata": {
            "name": meta.get("name").cloned().unwrap_or(Value::Null),
            "namespace": meta.get("namespace").cloned().unwrap_or(Value::Null),
            "uid": meta.get("uid").cloned().unwrap_or(Value::Null),
            "creationTimestamp": null,
        },
        "spec": { "containers": images },
        "status": {},
    }))
}

/// A shared handler's answer, its error as the kubelet writes one: the message as plain text.
fn answer(result: Result<Response, ApiError>) -> Response {
    match result {
        Ok(r) => r,
        Err(e) => text(e.code, &e.message),
    }
}

/// The kubelet's 404 for a path it does not serve.
fn not_found() -> Response {
    text(StatusCode::NOT_FOUND, "404 page not found\n")
}

/// A plain-text answer.
fn text(code: StatusCode, body: &str) -> Response {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_ask_for_the_subresources_the_kubelet_authorizes_them_as() {
        assert_eq!(subresources_of("/exec/d/p/c"), ["proxy"]);
        assert_eq!(subresources_of("/pods"), ["pods", "proxy"]);
        assert_eq!(subresources_of("/runningpods/"), ["pods", "proxy"]);
        assert_eq!(subresources_of("/healthz"), ["healthz", "proxy"]);
        assert_eq!(subresources_of("/stats/summary"), ["stats"]);
        assert_eq!(subresources_of("/logs/x"), ["log"]);
        assert_eq!(subresources_of("/statsx"), ["proxy"]);
        assert_eq!(subresources_of("/statusz"), ["statusz"]);
        assert_eq!(subresources_of("/flagz"), ["configz"]);
        assert_eq!(subresources_of("/configz"), ["configz", "proxy"]);
        assert_eq!(verb_of(&Method::POST), "create");
        assert_eq!(verb_of(&Method::GET), "get");
    }

    #[test]
    fn the_path_container_comes_first_in_the_query() {
        assert_eq!(
            query_with_container(Some("command=ls&container=other"), "c 1"),
            "container=c+1&command=ls&container=other"
        );
        assert_eq!(query_with_container(None, "c"), "container=c");
    }

    #[test]
    fn the_kubelet_exec_query_becomes_the_api_servers() {
        let q = exec_query(
            Some("input=1&output=1&error=0&command=sh&command=-c&container=x&stdout=1"),
            "c",
        );
        let o = exec::parse_options(Some(&q));
        assert_eq!(o.container, "c");
        assert_eq!(o.command, ["sh", "-c"]);
        assert!(o.streams.stdin && o.streams.stdout && !o.streams.stderr && !o.streams.tty);
        let o = exec::parse_options(Some(&exec_query(Some("stdout=1&output=true"), "c")));
        assert!(
            !o.streams.stdout,
            "only 1 turns a stream on, under the kubelet's names"
        );
    }
}
