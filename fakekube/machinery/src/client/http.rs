//! [`Client`] over HTTPS to any API server a kubeconfig names, as client-go's clientset and
//! informers are: the kinds it is told to watch are listed, then watched (from the list's
//! resourceVersion, listed again on `410 Gone`), into caches that its reads answer from and
//! whose changes are its feed; the other kinds are read with a GET when asked. Writes are
//! requests, answered with the API server's object (which the cache takes at once, so that a
//! write's reader sees it before the watch brings it) or its `Status`.
//!
//! Its calls block the calling thread until the API server answers (the kubelet's loop is
//! synchronous): it must be used from a multi-threaded tokio runtime, where a blocked worker
//! hands its other tasks on ([`tokio::task::block_in_place`]). Its requests and watches run on
//! a runtime of their own (two threads, one per process), so that an answer never waits for a
//! worker of the caller's runtime: the kubelet may hold its lock across a call while other tasks
//! wait for that lock on every worker.

use super::{Change, ChangeType, Client, Delete, Gone, Kind, Part, PodTokenRequest};
use crate::clock::Clock;
use crate::meta::meta_str;
use crate::status::ApiError;
use bytes::{Buf, Bytes, BytesMut};
use fakekube_cassette::{Kubeconfig, Upstream};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::OnceLock;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How many changes the feed keeps for readers that fall behind.
const FEED_CAPACITY: usize = 4096;
/// How long a request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a watch request asks to stay open (the server ends it then; it is made again).
const WATCH_SECONDS: u64 = 300;
/// The wait before a failed list or watch is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// The wait before a list that was refused (403) or not served (404) is tried again.
const REFUSED_RETRY: Duration = Duration::from_secs(30);

/// A kind to keep cached, with the field selector of the objects wanted.
#[derive(Debug, Clone)]
pub struct Watched {
    /// The kind.
    pub kind: Kind,
    /// `fieldSelector` (`spec.nodeName=n`), empty for all.
    pub field_selector: String,
}

impl Watched {
    /// The path of the kind's collection, with `query` and the field selector as its query.
    fn path(&self, query: &mut form_urlencoded::Serializer<'_, String>) -> String {
        if !self.field_selector.is_empty() {
            query.append_pair("fieldSelector", &self.field_selector);
        }
        let query = query.finish();
        let path = collection(self.kind, None);
        if query.is_empty() {
            path
        } else {
            format!("{path}?{query}")
        }
    }
}

/// The API of a cluster over HTTPS, with caches of the watched kinds.
pub struct HttpClient {
    upstream: Arc<Upstream>,
    runtime: Handle,
    user_agent: HeaderValue,
    watched: Vec<Watched>,
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    clock: Clock,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("watched", &self.watched)
            .finish_non_exhaustive()
    }
}

/// The caches and the feed.
#[derive(Debug, Default)]
struct State {
    /// Objects by kind and `namespace/name`.
    cache: HashMap<Kind, BTreeMap<String, Arc<Value>>>,
    /// Kinds listed at least once.
    synced: Vec<Kind>,
    /// Watched kinds whose last list was answered 404 (a custom kind whose CRD is missing).
    unserved: Vec<Kind>,
    /// The last changes, oldest first.
    feed: VecDeque<Change>,
    /// The position of the last change.
    position: u64,
}

/// Why the client could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum HttpClientError {
    /// The kubeconfig could not be read.
    #[error(transparent)]
    Kubeconfig(#[from] fakekube_cassette::KubeconfigError),
    /// The connection to the cluster could not be set up.
    #[error(transparent)]
    Upstream(#[from] fakekube_cassette::UpstreamError),
    /// The client's runtime could not be started.
    #[error("starting the client's runtime")]
    Runtime(#[source] std::io::Error),
}

/// `namespace/name` (or `name`).
fn key(ns: &str, name: &str) -> String {
    if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    }
}

/// An object's cache key.
fn key_of(obj: &Value) -> String {
    key(
        meta_str(obj, "namespace").unwrap_or(""),
        meta_str(obj, "name").unwrap_or(""),
    )
}

/// An object's resourceVersion as a number (etcd's revisions are), 0 when it is none.
fn revision(obj: &Value) -> u64 {
    meta_str(obj, "resourceVersion")
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// The path of `kind`'s collection in `ns` (all namespaces when `None` or for cluster kinds).
fn collection(kind: Kind, ns: Option<&str>) -> String {
    let base = if kind.group().is_empty() {
        "/api/v1".to_string()
    } else {
        format!("/apis/{}/{}", kind.group(), kind.version())
    };
    match ns {
        Some(ns) if kind.namespaced() && !ns.is_empty() => {
            format!("{base}/namespaces/{ns}/{}", kind.resource())
        }
        _ => format!("{base}/{}", kind.resource()),
    }
}

/// The path of object `ns/name`, with `/status` for the status part.
fn object_path(kind: Kind, ns: &str, name: &str, part: Part) -> String {
    let mut path = format!("{}/{name}", collection(kind, Some(ns)));
    if part == Part::Status {
        path.push_str("/status");
    }
    path
}

/// An error answer as the API server's `Status`, or a 500 that says what went wrong.
fn api_error(status: StatusCode, body: &[u8]) -> ApiError {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) if v.get("kind").and_then(Value::as_str) == Some("Status") => {
            let message = v.get("message").and_then(Value::as_str).unwrap_or("");
            let reason = v.get("reason").and_then(Value::as_str).unwrap_or("");
            ApiError::new(status, static_reason(reason), message.to_string())
        }
        _ => ApiError::new(
            status,
            "InternalError",
            format!(
                "the server answered {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ),
        ),
    }
}

/// A `Status` reason as the fake's errors hold them (a fixed set; others are `Unknown`).
fn static_reason(reason: &str) -> &'static str {
    const KNOWN: [&str; 14] = [
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Invalid",
        "BadRequest",
        "Forbidden",
        "Unauthorized",
        "Gone",
        "Expired",
        "MethodNotAllowed",
        "TooManyRequests",
        "InternalError",
        "Timeout",
        "ServiceUnavailable",
    ];
    KNOWN
        .into_iter()
        .find(|k| *k == reason)
        .unwrap_or("Unknown")
}

/// The runtime the clients' requests and watches run on.
fn client_runtime() -> Result<Handle, std::io::Error> {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt.handle().clone());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("fakekube-client")
        .enable_all()
        .build()?;
    // Another thread may have won the race: its runtime is the one kept, and this one is shut
    // down without waiting (dropping it would wait for its threads, which panics when this
    // thread is a runtime's worker, as a node starting in an async test's runtime is).
    if let Err(lost) = RUNTIME.set(rt) {
        lost.shutdown_background();
    }
    RUNTIME
        .get()
        .map(|rt| rt.handle().clone())
        .ok_or_else(|| std::io::Error::other("the client runtime is missing"))
}

/// The headers of every request: JSON answers, the client's user agent, and the body's type.
fn request_headers(user_agent: HeaderValue, content_type: Option<&'static str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    headers.insert(header::USER_AGENT, user_agent);
    if let Some(ct) = content_type {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    headers
}

/// One request: the status and the whole body.
async fn request(
    upstream: Arc<Upstream>,
    user_agent: HeaderValue,
    method: Method,
    path: String,
    content_type: Option<&'static str>,
    body: Bytes,
) -> Result<(StatusCode, Bytes), ApiError> {
    let headers = request_headers(user_agent, content_type);
    let exchange = async {
        let resp = upstream
            .send(method, &path, headers, body)
            .await
            .map_err(|e| ApiError::internal(format!("asking the API server: {e}")))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| ApiError::internal(format!("reading the API server's answer: {e}")))?
            .to_bytes();
        Ok((status, body))
    };
    tokio::time::timeout(REQUEST_TIMEOUT, exchange)
        .await
        .map_err(|_| ApiError::internal(format!("the API server did not answer {path}")))?
}

impl HttpClient {
    /// A client of the cluster `kubeconfig` names, caching `watched`; its watches run on the
    /// current runtime until `shutdown`.
    pub fn start(
        kubeconfig: &std::path::Path,
        user_agent: &str,
        watched: Vec<Watched>,
        shutdown: CancellationToken,
    ) -> Result<Arc<HttpClient>, HttpClientError> {
        let config = Kubeconfig::from_path(kubeconfig)?;
        let runtime = client_runtime().map_err(HttpClientError::Runtime)?;
        // The client's connections are spawned on the runtime it is made in.
        let upstream = {
            let _entered = runtime.enter();
            Arc::new(Upstream::new(&config)?)
        };
        let (changed, _) = watch::channel(0);
        let client = Arc::new(HttpClient {
            upstream,
            runtime: runtime.clone(),
            user_agent: HeaderValue::from_str(user_agent)
                .unwrap_or_else(|_| HeaderValue::from_static("fakekube")),
            watched: watched.clone(),
            state: Mutex::default(),
            changed,
            clock: Clock::default(),
        });
        for w in watched {
            let c = client.clone();
            let stop = shutdown.clone();
            runtime.spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = c.reflect(w) => {}
                }
            });
        }
        Ok(client)
    }

    /// Waits until every watched kind was listed once (or `timeout` passes); whether they were.
    pub async fn synced(&self, timeout: Duration) -> bool {
        let mut rx = self.changed.subscribe();
        let all = |s: &State| self.watched.iter().all(|w| s.synced.contains(&w.kind));
        tokio::time::timeout(timeout, async {
            loop {
                if all(&self.lock()) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await
        .is_ok()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_watched(&self, kind: Kind) -> bool {
        self.watched.iter().any(|w| w.kind == kind)
    }

    /// Runs `f` to completion on the client's runtime, blocking this thread (handing its
    /// worker's other tasks on when it is a multi-threaded runtime's worker; a current-thread
    /// runtime, such as the controllers' own thread, simply waits) until it ends.
    fn block<T: Send + 'static>(
        &self,
        f: impl Future<Output = Result<T, ApiError>> + Send + 'static,
    ) -> Result<T, ApiError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = tx.send(f.await);
        });
        let wait = || rx.recv();
        let on_worker = Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let answer = if on_worker {
            tokio::task::block_in_place(wait)
        } else {
            wait()
        };
        answer.unwrap_or_else(|_| Err(ApiError::internal("the client's runtime stopped")))
    }

    /// A request whose answer is an object; the object, or the API server's error.
    fn call(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&'static str>,
        body: Option<&Value>,
    ) -> Result<Arc<Value>, ApiError> {
        let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
        let (status, bytes) = self.block(request(
            self.upstream.clone(),
            self.user_agent.clone(),
            method,
            path.to_string(),
            content_type,
            body,
        ))?;
        if !status.is_success() {
            return Err(api_error(status, &bytes));
        }
        serde_json::from_slice::<Value>(&bytes)
            .map(Arc::new)
            .map_err(|e| ApiError::internal(format!("decoding the API server's answer: {e}")))
    }

    /// Creates the review `review` (a TokenReview, a SubjectAccessReview: answered and never
    /// stored) in the collection at `path` and returns the API server's answer, the review with
    /// its `status`; the request blocks as every call does. Neither the review nor the answer
    /// is logged (a TokenReview holds a token).
    pub fn create_review(&self, path: &str, review: &Value) -> Result<Arc<Value>, ApiError> {
        self.call(Method::POST, path, Some("application/json"), Some(review))
    }

    /// Takes a written object into the cache, unless the cache already has a later one.
    fn remember(&self, kind: Kind, obj: &Arc<Value>) {
        if !self.is_watched(kind) {
            return;
        }
        let mut st = self.lock();
        let entry = st.cache.entry(kind).or_default();
        let k = key_of(obj);
        if entry
            .get(&k)
            .is_none_or(|old| revision(old) <= revision(obj))
        {
            entry.insert(k, obj.clone());
        }
    }

    /// Records a change in the cache and the feed.
    fn apply(&self, kind: Kind, change: ChangeType, obj: Arc<Value>) {
        let mut st = self.lock();
        let k = key_of(&obj);
        let prev = match change {
            ChangeType::Deleted => st.cache.entry(kind).or_default().remove(&k),
            _ => st.cache.entry(kind).or_default().insert(k, obj.clone()),
        };
        st.position += 1;
        let position = st.position;
        st.feed.push_back(Change {
            position,
            kind,
            change,
            object: obj,
            prev,
        });
        while st.feed.len() > FEED_CAPACITY {
            st.feed.pop_front();
        }
        drop(st);
        self.changed.send_replace(position);
    }

    /// Lists `w`'s objects into the cache (the differences as changes); the list's
    /// resourceVersion.
    async fn relist(&self, w: &Watched) -> Result<String, ApiError> {
        let path = w.path(&mut form_urlencoded::Serializer::new(String::new()));
        let (status, body) = request(
            self.upstream.clone(),
            self.user_agent.clone(),
            Method::GET,
            path,
            None,
            Bytes::new(),
        )
        .await?;
        if !status.is_success() {
            return Err(api_error(status, &body));
        }
        let list: Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::internal(format!("decoding a list: {e}")))?;
        let rv = list
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut fresh: BTreeMap<String, Arc<Value>> = BTreeMap::new();
        for mut item in list
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            if let Some(o) = item.as_object_mut() {
                o.insert("apiVersion".into(), json!(w.kind.api_version()));
                o.insert("kind".into(), json!(w.kind.kind()));
            }
            fresh.insert(key_of(&item), Arc::new(item));
        }
        let old = self.lock().cache.get(&w.kind).cloned().unwrap_or_default();
        for (k, obj) in &old {
            if !fresh.contains_key(k) {
                self.apply(w.kind, ChangeType::Deleted, obj.clone());
            }
        }
        for (k, obj) in fresh {
            let change = match old.get(&k) {
                None => ChangeType::Added,
                Some(o) if revision(o) == revision(&obj) => continue,
                Some(_) => ChangeType::Modified,
            };
            self.apply(w.kind, change, obj);
        }
        self.mark_synced(w.kind);
        Ok(rv)
    }

    /// Records that `kind` was listed (or refused), and tells the subscribers.
    fn mark_synced(&self, kind: Kind) {
        let position = {
            let mut st = self.lock();
            if !st.synced.contains(&kind) {
                st.synced.push(kind);
            }
            st.position
        };
        self.changed.send_replace(position);
    }

    /// Keeps `w`'s cache: list, then watch from the list's resourceVersion, again and again.
    async fn reflect(self: Arc<Self>, w: Watched) {
        let mut rv: Option<String> = None;
        let mut refused = false;
        loop {
            let from = match rv.take() {
                Some(rv) => rv,
                None => match self.relist(&w).await {
                    Ok(rv) => {
                        refused = false;
                        self.lock().unserved.retain(|k| *k != w.kind);
                        rv
                    }
                    Err(e) if e.code == 403 || e.code == 404 => {
                        if e.code == 404 {
                            let mut st = self.lock();
                            if !st.unserved.contains(&w.kind) {
                                st.unserved.push(w.kind);
                            }
                        }
                        // Not allowed or not served: the cache stays empty (and counts as
                        // listed, so that the client is not kept waiting), asked again now
                        // and then, in case a role is granted.
                        if !refused {
                            tracing::warn!(kind = w.kind.resource(), error = %e.message, "listing");
                            refused = true;
                        }
                        self.mark_synced(w.kind);
                        tokio::time::sleep(REFUSED_RETRY).await;
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(kind = w.kind.resource(), error = %e.message, "listing");
                        tokio::time::sleep(RETRY).await;
                        continue;
                    }
                },
            };
            match self.watch(&w, &from).await {
                Ok(last) => rv = Some(last),
                Err(e) => {
                    if e.code != 410 {
                        tracing::debug!(kind = w.kind.resource(), error = %e.message, "watching");
                        tokio::time::sleep(RETRY).await;
                    }
                }
            }
        }
    }

    /// One watch from `from`; the last resourceVersion it saw, when it ended in order.
    async fn watch(&self, w: &Watched, from: &str) -> Result<String, ApiError> {
        let path = {
            let mut query = form_urlencoded::Serializer::new(String::new());
            query
                .append_pair("watch", "1")
                .append_pair("allowWatchBookmarks", "true")
                .append_pair("timeoutSeconds", &WATCH_SECONDS.to_string())
                .append_pair("resourceVersion", from);
            w.path(&mut query)
        };
        let headers = request_headers(self.user_agent.clone(), None);
        let resp = self
            .upstream
            .send(Method::GET, &path, headers, Bytes::new())
            .await
            .map_err(|e| ApiError::internal(format!("watching: {e}")))?;
        let status = resp.status();
        let mut body = resp.into_body();
        if !status.is_success() {
            let bytes = body
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            return Err(api_error(status, &bytes));
        }
        let mut last = from.to_string();
        let mut buf = BytesMut::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| ApiError::internal(format!("watch stream: {e}")))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buf.extend_from_slice(&data);
            while let Some(end) = buf.iter().position(|b| *b == b'\n') {
                let line = buf.split_to(end + 1);
                let line = line.chunk();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let event: Value = serde_json::from_slice(line)
                    .map_err(|e| ApiError::internal(format!("decoding a watch event: {e}")))?;
                let object = event.get("object").cloned().unwrap_or(Value::Null);
                let change = match event.get("type").and_then(Value::as_str) {
                    Some("ADDED") => ChangeType::Added,
                    Some("MODIFIED") => ChangeType::Modified,
                    Some("DELETED") => ChangeType::Deleted,
                    Some("BOOKMARK") => {
                        if let Some(rv) = meta_str(&object, "resourceVersion") {
                            last = rv.to_string();
                        }
                        continue;
                    }
                    _ => {
                        // An ERROR event: the watch's Status (410 when too old).
                        let code = object.get("code").and_then(Value::as_u64).unwrap_or(500);
                        let status = StatusCode::from_u16(code as u16)
                            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                        return Err(api_error(status, object.to_string().as_bytes()));
                    }
                };
                if let Some(rv) = meta_str(&object, "resourceVersion") {
                    last = rv.to_string();
                }
                self.apply(w.kind, change, Arc::new(object));
            }
        }
        Ok(last)
    }
}

impl Client for HttpClient {
    fn get(&self, kind: Kind, ns: &str, name: &str) -> Option<Arc<Value>> {
        if self.is_watched(kind) {
            return self
                .lock()
                .cache
                .get(&kind)
                .and_then(|c| c.get(&key(ns, name)))
                .cloned();
        }
        match self.call(
            Method::GET,
            &object_path(kind, ns, name, Part::Main),
            None,
            None,
        ) {
            Ok(obj) => Some(obj),
            Err(e) => {
                if e.code != 404 {
                    tracing::debug!(kind = kind.resource(), name, error = %e.message, "reading");
                }
                None
            }
        }
    }

    fn served(&self, kind: Kind) -> bool {
        // An unwatched kind is assumed served: its reads and writes say otherwise with a 404.
        !self.is_watched(kind) || !self.lock().unserved.contains(&kind)
    }

    fn list(&self, kind: Kind, ns: Option<&str>) -> Vec<Arc<Value>> {
        if !self.is_watched(kind) {
            return Vec::new();
        }
        let st = self.lock();
        let Some(cache) = st.cache.get(&kind) else {
            return Vec::new();
        };
        match ns {
            Some(ns) => cache
                .values()
                .filter(|o| meta_str(o, "namespace") == Some(ns))
                .cloned()
                .collect(),
            None => cache.values().cloned().collect(),
        }
    }

    fn create(&self, kind: Kind, ns: &str, mut obj: Value) -> Result<Arc<Value>, ApiError> {
        if let Some(o) = obj.as_object_mut() {
            o.entry("apiVersion").or_insert(json!(kind.api_version()));
            o.entry("kind").or_insert(json!(kind.kind()));
        }
        let path = collection(kind, Some(ns));
        let created = self.call(Method::POST, &path, Some("application/json"), Some(&obj))?;
        self.remember(kind, &created);
        Ok(created)
    }

    fn update(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        mut obj: Value,
        part: Part,
    ) -> Result<Arc<Value>, ApiError> {
        if let Some(o) = obj.as_object_mut() {
            o.entry("apiVersion").or_insert(json!(kind.api_version()));
            o.entry("kind").or_insert(json!(kind.kind()));
        }
        let path = object_path(kind, ns, name, part);
        match self.call(Method::PUT, &path, Some("application/json"), Some(&obj)) {
            Ok(updated) => {
                self.remember(kind, &updated);
                Ok(updated)
            }
            Err(e) => {
                if e.code == 409 {
                    // Stale: read it again, so that a retry starts from what is stored.
                    let main = object_path(kind, ns, name, Part::Main);
                    if let Ok(fresh) = self.call(Method::GET, &main, None, None) {
                        self.remember(kind, &fresh);
                    }
                }
                Err(e)
            }
        }
    }

    fn merge_patch(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        patch: &Value,
        part: Part,
    ) -> Result<Arc<Value>, ApiError> {
        let path = object_path(kind, ns, name, part);
        let patched = self.call(
            Method::PATCH,
            &path,
            Some("application/merge-patch+json"),
            Some(patch),
        )?;
        self.remember(kind, &patched);
        Ok(patched)
    }

    fn bind(&self, ns: &str, name: &str, node: &str) -> Result<(), ApiError> {
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": { "name": name, "namespace": ns },
            "target": { "apiVersion": "v1", "kind": "Node", "name": node },
        });
        let path = format!("{}/binding", object_path(Kind::Pod, ns, name, Part::Main));
        self.call(
            Method::POST,
            &path,
            Some("application/json"),
            Some(&binding),
        )
        .map(|_| ())
    }

    fn pod_token(&self, request: &PodTokenRequest<'_>) -> Result<String, ApiError> {
        let mut spec = json!({
            "expirationSeconds": request.expiration_seconds,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": request.pod_name,
                "uid": request.pod_uid,
            },
        });
        if let Some(audience) = request.audience {
            spec["audiences"] = json!([audience]);
        }
        let body = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": spec,
        });
        let path = format!(
            "{}/token",
            object_path(
                Kind::ServiceAccount,
                request.namespace,
                request.account,
                Part::Main
            )
        );
        let answer = self.call(Method::POST, &path, Some("application/json"), Some(&body))?;
        answer
            .pointer("/status/token")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ApiError::internal("the TokenRequest answer holds no token"))
    }

    fn delete(&self, kind: Kind, ns: &str, name: &str, opts: &Delete) -> Result<(), ApiError> {
        let mut body = json!({ "apiVersion": "v1", "kind": "DeleteOptions" });
        if let Some(g) = opts.grace_period {
            body["gracePeriodSeconds"] = json!(g);
        }
        if let Some(uid) = &opts.uid {
            body["preconditions"] = json!({ "uid": uid });
        }
        if let Some(p) = opts.propagation {
            body["propagationPolicy"] = json!(p.as_str());
        }
        let path = object_path(kind, ns, name, Part::Main);
        self.call(Method::DELETE, &path, Some("application/json"), Some(&body))
            .map(|_| ())
    }

    fn position(&self) -> u64 {
        self.lock().position
    }

    fn changes_since(&self, position: u64) -> Result<(Vec<Change>, u64), Gone> {
        let st = self.lock();
        if let Some(first) = st.feed.front()
            && first.position > position + 1
        {
            return Err(Gone);
        }
        let changes = st
            .feed
            .iter()
            .filter(|c| c.position > position)
            .cloned()
            .collect();
        Ok((changes, st.position.max(position)))
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn clock(&self) -> &Clock {
        &self.clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_the_api_servers() {
        assert_eq!(collection(Kind::Pod, None), "/api/v1/pods");
        assert_eq!(
            object_path(Kind::Pod, "ns", "p", Part::Status),
            "/api/v1/namespaces/ns/pods/p/status"
        );
        assert_eq!(
            object_path(Kind::Lease, "kube-node-lease", "n", Part::Main),
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n"
        );
        assert_eq!(
            object_path(Kind::Node, "", "n", Part::Status),
            "/api/v1/nodes/n/status"
        );
        assert_eq!(
            collection(Kind::PersistentVolume, Some("ns")),
            "/api/v1/persistentvolumes"
        );
    }

    #[test]
    fn a_watched_kinds_list_and_watch_paths_carry_its_field_selector() {
        let pods = Watched {
            kind: Kind::Pod,
            field_selector: "spec.nodeName=worker-1".into(),
        };
        let list = pods.path(&mut form_urlencoded::Serializer::new(String::new()));
        assert_eq!(list, "/api/v1/pods?fieldSelector=spec.nodeName%3Dworker-1");
        let mut watch = form_urlencoded::Serializer::new(String::new());
        watch
            .append_pair("watch", "1")
            .append_pair("resourceVersion", "42");
        assert_eq!(
            pods.path(&mut watch),
            "/api/v1/pods?watch=1&resourceVersion=42&fieldSelector=spec.nodeName%3Dworker-1"
        );
        let all = Watched {
            kind: Kind::PersistentVolume,
            field_selector: String::new(),
        };
        assert_eq!(
            all.path(&mut form_urlencoded::Serializer::new(String::new())),
            "/api/v1/persistentvolumes"
        );
    }

    #[test]
    fn an_error_answer_keeps_the_status_code_and_message() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"p\" not found","reason":"NotFound","code":404}"#;
        let e = api_error(StatusCode::NOT_FOUND, body);
        assert_eq!(e.code, 404);
        assert_eq!(e.reason, "NotFound");
        assert_eq!(e.message, "pods \"p\" not found");
        let e = api_error(StatusCode::BAD_GATEWAY, b"<html>");
        assert_eq!(e.code, 502);
        assert!(e.message.contains("502"), "{}", e.message);
    }
}
