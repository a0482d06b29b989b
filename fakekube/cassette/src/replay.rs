//! The replaying server: serves a cassette back over TLS on loopback, one kubeconfig per
//! recorded client. Each request gets the answer of the recorded exchange it matches
//! ([`crate::book`]), with recorded names and times mapped to this run's; streamed bodies and
//! upgraded connections are replayed event by event and frame by frame, paced by the recorded
//! times or as fast as the client reads. The first request (or client frame) that matches
//! nothing stops the replay with a side-by-side message.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Limited, StreamBody};
use hyper::body::{Frame as BodyFrame, Incoming};
use hyper::upgrade::OnUpgrade;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::book::{Asked, Book, Progress, Taken};
use crate::format::{self, Body, Cassette, DEFAULT_CLIENT, Recorded, Stream};
use crate::front::{self, Front, ListenError};
use crate::kubeconfig;
use crate::player::{Pacing, Shared};
use crate::redact::{REDACTED, Redactor};
use crate::sidebyside;
use crate::upgraded;

/// The largest request body the replay reads, in bytes.
const MAX_BODY: usize = 64 << 20;

/// How a replay serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Where to listen (port 0 picks one).
    pub bind: SocketAddr,
    /// When streams and frames are sent.
    pub pacing: Pacing,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            pacing: Pacing::Recorded,
        }
    }
}

/// Why a replay could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The loopback listener could not start.
    #[error("starting the replay's listener")]
    Listen(#[source] ListenError),
}

/// How a replay ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplaySummary {
    /// How far it got.
    pub progress: Progress,
    /// The side-by-side message of the request that stopped it, if one did.
    pub failure: Option<String>,
}

/// A running replay.
pub struct Replay {
    front: Front,
    shared: Arc<Shared>,
    kubeconfigs: BTreeMap<String, String>,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("url", &self.front.url)
            .field("clients", &self.kubeconfigs.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Replay {
    /// Starts serving `cassette`.
    pub async fn start(cassette: &Cassette, options: ReplayOptions) -> Result<Replay, ReplayError> {
        let mut clients: BTreeSet<String> = cassette
            .exchanges
            .iter()
            .map(|r| r.exchange.client.clone())
            .collect();
        if clients.is_empty() {
            clients.insert(DEFAULT_CLIENT.to_owned());
        }
        let tokens: HashMap<String, String> = clients
            .iter()
            .map(|c| (front::random_token("cassette-replay"), c.clone()))
            .collect();
        let shift = OffsetDateTime::parse(&cassette.header.recorded_at, &Rfc3339)
            .map(|then| OffsetDateTime::now_utc() - then)
            .map(|d| time::Duration::seconds(d.whole_seconds()))
            .unwrap_or(time::Duration::ZERO);
        let stop = CancellationToken::new();
        let (failure, _) = watch::channel(None);
        let shared = Arc::new(Shared {
            book: Mutex::new(Book::new(cassette, shift)),
            tokens: tokens.clone(),
            pacing: options.pacing,
            stop: stop.clone(),
            failure,
            requests: AtomicU64::new(0),
        });
        let front = Front::start(
            "fakekube-replay",
            options.bind,
            stop,
            front::handler(shared.clone(), handle),
        )
        .await
        .map_err(ReplayError::Listen)?;
        let kubeconfigs = tokens
            .iter()
            .map(|(token, client)| {
                let text = kubeconfig::for_client("replay", &front.url, &front.ca_pem, token, None);
                (client.clone(), text)
            })
            .collect();
        Ok(Replay {
            front,
            shared,
            kubeconfigs,
        })
    }

    /// The replay's URL, `https://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.front.url
    }

    /// The recorded clients, by name.
    pub fn clients(&self) -> impl Iterator<Item = &str> {
        self.kubeconfigs.keys().map(String::as_str)
    }

    /// A kubeconfig (YAML) that makes its user the recorded client `client`.
    pub fn kubeconfig(&self, client: &str) -> Option<&str> {
        self.kubeconfigs.get(client).map(String::as_str)
    }

    /// Waits until a request or frame matches nothing, and returns the side-by-side message.
    pub async fn failed(&self) -> String {
        let mut failure = self.shared.failure.subscribe();
        loop {
            if let Some(message) = failure.borrow_and_update().as_ref() {
                return message.to_string();
            }
            if failure.changed().await.is_err() {
                return String::new();
            }
        }
    }

    /// How far the replay got so far.
    pub fn progress(&self) -> Progress {
        self.shared.book().progress()
    }

    /// Stops serving and says how the replay went.
    pub async fn shutdown(self) -> ReplaySummary {
        let shared = self.shared.clone();
        self.front.shutdown().await;
        let failure = shared.failure.borrow().as_ref().map(|m| m.to_string());
        ReplaySummary {
            progress: shared.book().progress(),
            failure,
        }
    }
}

/// One request to the replay.
async fn handle(shared: Arc<Shared>, mut request: Request<Incoming>) -> Response<front::Body> {
    let client = front::bearer(&request)
        .and_then(|t| shared.tokens.get(t))
        .cloned();
    let Some(client) = client else {
        return front::status(
            401,
            "Unauthorized",
            "this replay accepts only the tokens of the kubeconfigs it wrote",
        );
    };
    if shared.stop.is_cancelled() {
        return front::status(503, "ServiceUnavailable", "the replay has stopped");
    }
    let number = shared.requests.fetch_add(1, Ordering::Relaxed) + 1;
    let upgrade = (request.version() == http::Version::HTTP_11
        && request.headers().contains_key(header::UPGRADE))
    .then(|| hyper::upgrade::on(&mut request));
    let (parts, body) = request.into_parts();
    let Ok(bytes) = Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map(|c| c.to_bytes())
    else {
        return front::status(
            413,
            "RequestEntityTooLarge",
            "the request body is too large",
        );
    };
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let path = parts.uri.path();
    let asked = Asked::new(
        &client,
        parts.method.as_str(),
        path,
        parts.uri.query().unwrap_or(""),
        content_type,
        redacted_like_recording(path, &bytes, content_type),
        upgrade.is_some(),
    );
    let taken = shared.book().take(&asked);
    match taken {
        Ok(Taken::Fresh(recorded) | Taken::Again(recorded)) => {
            tracing::debug!(
                number,
                exchange = recorded.exchange.id,
                method = %parts.method,
                path,
                "replayed"
            );
            answer(&shared, recorded, &parts.headers, upgrade)
        }
        Err(miss) => {
            shared.fail(sidebyside::request(&miss, number));
            front::status(
                500,
                "InternalError",
                &format!(
                    "fakekube replay: no recorded exchange matches {} {path}; the replay stopped \
                     (its output shows the nearest recorded exchange)",
                    parts.method
                ),
            )
        }
    }
}

/// A request body as the recorder would have written it, so that it compares with the
/// recording (a Secret's data, a TokenReview's token).
fn redacted_like_recording(path: &str, bytes: &[u8], content_type: Option<&str>) -> Body {
    let mut body = Body::from_bytes(bytes, content_type);
    if let Some(value) = body.body.as_mut() {
        Redactor::default().json(path, value);
    } else if !body.is_empty() && Redactor::drops_non_json(path) {
        body.payload = format::Payload::from_bytes(REDACTED.as_bytes());
    }
    body
}

/// The recorded answer, in this run's terms.
fn answer(
    shared: &Arc<Shared>,
    recorded: Arc<Recorded>,
    request_headers: &http::HeaderMap,
    upgrade: Option<OnUpgrade>,
) -> Response<front::Body> {
    let response = &recorded.exchange.response;
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut headers = http::HeaderMap::new();
    {
        let mut book = shared.book();
        for (name, value) in &response.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&book.bindings.answer(value)),
            ) {
                headers.insert(name, value);
            }
        }
    }
    let body = match (response.stream, upgrade) {
        (Some(kind @ (Stream::Websocket | Stream::Raw)), Some(on_upgrade))
            if status == StatusCode::SWITCHING_PROTOCOLS =>
        {
            headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
            if kind == Stream::Websocket
                && let Some(key) = request_headers.get(header::SEC_WEBSOCKET_KEY)
                && let Ok(accept) = HeaderValue::from_str(
                    &tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes()),
                )
            {
                headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
            }
            tokio::spawn(upgraded::replay(
                on_upgrade,
                kind,
                recorded.clone(),
                shared.clone(),
            ));
            front::full(Bytes::new())
        }
        (Some(Stream::Lines), _) => lines(shared.clone(), recorded.clone()),
        _ => front::full(rewritten(shared, &response.body)),
    };
    let mut answer = Response::new(body);
    *answer.status_mut() = status;
    *answer.headers_mut() = headers;
    answer
}

/// A recorded body in this run's terms.
pub(crate) fn rewritten(shared: &Shared, body: &Body) -> Bytes {
    let mut book = shared.book();
    if let Some(value) = &body.body {
        return Bytes::from(
            serde_json::to_vec(&book.bindings.answer_json(value)).unwrap_or_default(),
        );
    }
    match body.payload.whole_text() {
        Some(text) => Bytes::from(book.bindings.answer(text)),
        None => body.payload.to_bytes(),
    }
}

/// A streamed body replayed event by event; kept open afterwards when the client ended it in
/// the recording.
fn lines(shared: Arc<Shared>, recorded: Arc<Recorded>) -> front::Body {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let origin = Instant::now();
        let base = recorded.exchange.t + recorded.exchange.took;
        for event in &recorded.events {
            if !shared.pace(origin, event.t - base).await {
                return;
            }
            let mut line = rewritten(&shared, &event.body).to_vec();
            line.push(b'\n');
            if tx.send(Bytes::from(line)).await.is_err() {
                return;
            }
        }
        if recorded.end.as_ref().map(|e| e.by) != Some(format::Side::Server) {
            tokio::select! {
                () = tx.closed() => {}
                () = shared.stop.cancelled() => {}
            }
        }
    });
    let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, Infallible>(BodyFrame::data(chunk)), rx))
    });
    StreamBody::new(chunks).boxed()
}
