//! The recording proxy: serves TLS on loopback with its own CA, accepts only the token of the
//! kubeconfig it writes for its client, forwards every request to the cluster its kubeconfig
//! names (with that kubeconfig's credentials), and records each exchange as it completes:
//! whole bodies at once, streamed bodies (watches) line by line, upgraded connections (exec,
//! attach, port-forward) frame by frame.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::format::{self, Event, Exchange, Record, Side, Stream};
use crate::front::{self, Front, ListenError};
use crate::kubeconfig::{self, Kubeconfig};
use crate::recorder::Recorder;
use crate::relay::{self, Tape};
use crate::upstream::{Upstream, UpstreamError};

/// The largest body the proxy reads whole, in bytes.
const MAX_BODY: usize = 64 << 20;

/// Headers never forwarded: hop-by-hop ones, the client's credentials (the proxy uses the
/// kubeconfig's), and `accept-encoding` (so that bodies are recorded readable).
const DROPPED: &[&str] = &[
    "accept-encoding",
    "authorization",
    "content-length",
    "host",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
];

/// Why a proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The cluster's client could not be set up.
    #[error("setting up the client to the cluster")]
    Upstream(#[source] UpstreamError),
    /// The loopback listener could not start.
    #[error("starting the proxy's listener")]
    Listen(#[source] ListenError),
}

/// A running recording proxy.
pub struct Proxy {
    front: Front,
    client: String,
    kubeconfig: String,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("url", &self.front.url)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

struct State {
    upstream: Upstream,
    recorder: Recorder,
    client: String,
    token: String,
    stop: CancellationToken,
}

impl Proxy {
    /// Starts a proxy on `bind` (port 0 picks one) in front of the cluster `upstream` names,
    /// recording into `recorder` as the client named `client`.
    pub async fn start(
        upstream: &Kubeconfig,
        recorder: &Recorder,
        client: &str,
        bind: SocketAddr,
    ) -> Result<Proxy, ProxyError> {
        for credential in upstream.credentials() {
            recorder.redactor().add(credential);
        }
        let token = front::random_token("cassette-proxy");
        recorder.redactor().add(&token);
        let stop = CancellationToken::new();
        let state = Arc::new(State {
            upstream: Upstream::new(upstream).map_err(ProxyError::Upstream)?,
            recorder: recorder.clone(),
            client: client.to_owned(),
            token: token.clone(),
            stop: stop.clone(),
        });
        let front = Front::start("fakekube-record", bind, stop, front::handler(state, handle))
            .await
            .map_err(ProxyError::Listen)?;
        let kubeconfig = kubeconfig::for_client(
            "cassette",
            &front.url,
            &front.ca_pem,
            &token,
            upstream.namespace(),
        );
        Ok(Proxy {
            front,
            client: client.to_owned(),
            kubeconfig,
        })
    }

    /// The proxy's URL, `https://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.front.url
    }

    /// A kubeconfig (YAML) for the proxy: its CA, its token, the upstream context's namespace.
    pub fn kubeconfig(&self) -> &str {
        &self.kubeconfig
    }

    /// The name its exchanges are recorded under.
    pub fn client(&self) -> &str {
        &self.client
    }

    /// Stops the proxy; open streams and connections end (recorded as ended by the client).
    pub async fn shutdown(self) {
        self.front.shutdown().await;
    }
}

/// One request through the proxy.
async fn handle(state: Arc<State>, request: Request<Incoming>) -> Response<front::Body> {
    if front::bearer(&request) != Some(state.token.as_str()) {
        return front::status(
            401,
            "Unauthorized",
            "this recording proxy accepts only the token of the kubeconfig it wrote",
        );
    }
    let id = state.recorder.next_id();
    let t = state.recorder.now();
    if request.version() == http::Version::HTTP_11
        && request.headers().contains_key(header::UPGRADE)
    {
        return upgrade(state, request, id, t).await;
    }
    let http = front::version_name(request.version()).to_owned();
    let (parts, body) = request.into_parts();
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return front::status(
                413,
                "RequestEntityTooLarge",
                "the request body is too large",
            );
        }
    };
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let request = state.request(&parts, &bytes);
    let answer = match state
        .upstream
        .send(
            parts.method.clone(),
            path_and_query,
            forwarded(&parts.headers, false),
            bytes,
        )
        .await
    {
        Ok(answer) => answer,
        Err(e) => return state.unreachable(id, t, http, request, &e),
    };
    let (head, body) = answer.into_parts();
    if is_stream(&parts.uri, &head.headers) {
        return stream(state, id, t, http, request, head, body);
    }
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let message = "the cluster's answer could not be read whole";
            return state.bad_gateway(id, t, http, request, "InternalError", message);
        }
    };
    state.record(
        id,
        t,
        http,
        request,
        head.status.as_u16(),
        &head.headers,
        &bytes,
        None,
    );
    answer_with(head.status, &head.headers, front::full(bytes))
}

impl State {
    /// The request as recorded.
    fn request(&self, parts: &http::request::Parts, body: &[u8]) -> format::Request {
        let redactor = self.recorder.redactor();
        let path = parts.uri.path();
        format::Request {
            method: parts.method.to_string(),
            path: redactor.text(path),
            query: redactor.text(parts.uri.query().unwrap_or("")),
            headers: redactor.request_headers(&parts.headers),
            body: self.recorder.body(path, body, content_type(&parts.headers)),
        }
    }

    /// Records an exchange.
    #[expect(
        clippy::too_many_arguments,
        reason = "one record's fields, named at each call"
    )]
    fn record(
        &self,
        id: u64,
        t: f64,
        http: String,
        request: format::Request,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
        stream: Option<Stream>,
    ) {
        let body = self
            .recorder
            .body(&request.path, body, content_type(headers));
        self.recorder.write(&Record::Exchange(Box::new(Exchange {
            id,
            client: self.client.clone(),
            t,
            http,
            request,
            response: format::Response {
                status,
                headers: self.recorder.redactor().response_headers(headers),
                body,
                stream,
            },
            took: format::seconds(format::duration(self.recorder.now() - t)),
        })));
    }

    /// Answers 502 for a cluster that could not be asked, and records that answer.
    fn unreachable(
        &self,
        id: u64,
        t: f64,
        http: String,
        request: format::Request,
        error: &UpstreamError,
    ) -> Response<front::Body> {
        let message = format!("the recorded cluster could not be asked: {}", causes(error));
        self.bad_gateway(id, t, http, request, "ServiceUnavailable", &message)
    }

    /// Answers 502 with a Status of `reason` and `message`, and records that answer.
    fn bad_gateway(
        &self,
        id: u64,
        t: f64,
        http: String,
        request: format::Request,
        reason: &str,
        message: &str,
    ) -> Response<front::Body> {
        let body = front::status_body(502, reason, message);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        self.record(id, t, http, request, 502, &headers, body.as_bytes(), None);
        answer_with(StatusCode::BAD_GATEWAY, &headers, front::full(body))
    }
}

/// Forwards a streamed body to the client while recording it line by line.
fn stream(
    state: Arc<State>,
    id: u64,
    t: f64,
    http: String,
    request: format::Request,
    head: http::response::Parts,
    mut body: Incoming,
) -> Response<front::Body> {
    let path = request.path.clone();
    state.record(
        id,
        t,
        http,
        request,
        head.status.as_u16(),
        &head.headers,
        b"",
        Some(Stream::Lines),
    );
    let content_type = content_type(&head.headers).map(str::to_owned);
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let recorder = state.recorder.clone();
    let stop = state.stop.clone();
    tokio::spawn(async move {
        let mut pending: Vec<u8> = Vec::new();
        let event = |line: &[u8]| {
            recorder.write(&Record::Event(Event {
                exchange: id,
                t: recorder.now(),
                body: recorder.body(&path, line, content_type.as_deref()),
            }));
        };
        let by = loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                () = tx.closed() => break Side::Client,
                () = stop.cancelled() => break Side::Client,
            };
            let Some(Ok(frame)) = frame else {
                break Side::Server;
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            pending.extend_from_slice(&data);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                event(&pending[..end]);
                pending.drain(..=end);
            }
            if tx.send(data).await.is_err() {
                break Side::Client;
            }
        };
        if !pending.is_empty() {
            event(&pending);
        }
        recorder.write(&Record::End(format::End {
            exchange: id,
            t: recorder.now(),
            by,
        }));
    });
    let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, Infallible>(Frame::data(chunk)), rx))
    });
    answer_with(head.status, &head.headers, StreamBody::new(chunks).boxed())
}

/// Forwards an upgrade request on a connection of its own and, when the cluster switches
/// protocols, relays and records the upgraded connection.
async fn upgrade(
    state: Arc<State>,
    mut request: Request<Incoming>,
    id: u64,
    t: f64,
) -> Response<front::Body> {
    let from_client = hyper::upgrade::on(&mut request);
    let (parts, _) = request.into_parts();
    let http = front::version_name(parts.version).to_owned();
    let recorded = state.request(&parts, b"");
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let answer = match state
        .upstream
        .upgrade(
            parts.method.clone(),
            path_and_query,
            forwarded(&parts.headers, true),
        )
        .await
    {
        Ok(answer) => answer,
        Err(e) => return state.unreachable(id, t, http, recorded, &e),
    };
    if answer.status() != StatusCode::SWITCHING_PROTOCOLS {
        let (head, body) = answer.into_parts();
        let bytes = Limited::new(body, MAX_BODY)
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        state.record(
            id,
            t,
            http,
            recorded,
            head.status.as_u16(),
            &head.headers,
            &bytes,
            None,
        );
        return answer_with(head.status, &head.headers, front::full(bytes));
    }
    let websocket = answer
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let kind = if websocket {
        Stream::Websocket
    } else {
        Stream::Raw
    };
    state.record(
        id,
        t,
        http,
        recorded,
        101,
        answer.headers(),
        b"",
        Some(kind),
    );
    let mut response = Response::new(front::full(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    for (name, value) in answer.headers() {
        response.headers_mut().append(name.clone(), value.clone());
    }
    let from_cluster = hyper::upgrade::on(answer);
    let tape = Tape {
        recorder: state.recorder.clone(),
        exchange: id,
    };
    let stop = state.stop.clone();
    tokio::spawn(async move {
        match (from_client.await, from_cluster.await) {
            (Ok(client), Ok(cluster)) if websocket => {
                relay::websocket(client, cluster, tape, stop).await;
            }
            (Ok(client), Ok(cluster)) => relay::raw(client, cluster, tape, stop).await,
            _ => tape.recorder.write(&Record::End(format::End {
                exchange: id,
                t: tape.recorder.now(),
                by: Side::Client,
            })),
        }
    });
    response
}

/// Whether an answer is a stream to record line by line: a watch or a followed log.
fn is_stream(uri: &http::Uri, headers: &HeaderMap) -> bool {
    let flagged = uri.query().is_some_and(|q| {
        q.split('&')
            .any(|pair| matches!(pair, "watch=true" | "watch=1" | "follow=true" | "follow=1"))
    });
    flagged
        || uri.path().contains("/watch/")
        || content_type(headers).is_some_and(|ct| ct.contains("stream="))
}

/// The client's headers to forward: all but [`DROPPED`], and, unless `upgrade`, the
/// `connection` and `upgrade` headers.
fn forwarded(headers: &HeaderMap, upgrade: bool) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in headers {
        let n = name.as_str();
        if DROPPED.contains(&n) || (!upgrade && (n == "connection" || n == "upgrade")) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// An answer to the client with the cluster's status and headers (less hop-by-hop ones).
fn answer_with(
    status: StatusCode,
    headers: &HeaderMap,
    body: front::Body,
) -> Response<front::Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    for (name, value) in headers {
        let n = name.as_str();
        if matches!(
            n,
            "connection" | "keep-alive" | "transfer-encoding" | "content-length" | "upgrade"
        ) {
            continue;
        }
        response.headers_mut().append(name.clone(), value.clone());
    }
    response
}

/// The content type of a message, if it says one.
fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::CONTENT_TYPE)?.to_str().ok()
}

/// An error and its causes on one line.
pub(crate) fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}
