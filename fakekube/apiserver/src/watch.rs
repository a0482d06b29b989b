//! `?watch=1`: a newline-delimited JSON stream of ADDED, MODIFIED, DELETED, BOOKMARK and ERROR
//! events, from a resourceVersion, with selectors applied, each object in the representation
//! the request negotiated.

use crate::encoding::{self, Shape};
use crate::meta;
use crate::negotiation::{Conversion, Representation};
use crate::registry::ResourceType;
use crate::representation::{self, Answer};
use crate::request::{self, Query, timeout_param};
use crate::selector::{self, FieldSelector};
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::{self, Event, EventType, ListQuery};
use crate::table::TableOptions;
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;
use tokio::sync::mpsc;

/// How long a watch stays open when the client does not say (the API server picks 30–60 min).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Whether `obj` passes the watch's namespace and selectors.
fn selected(obj: &Value, ns: Option<&str>, q: &ListQuery) -> bool {
    if let Some(ns) = ns
        && meta::meta_str(obj, "namespace") != Some(ns)
    {
        return false;
    }
    if let Some(l) = &q.labels
        && !l.matches(meta::labels(obj))
    {
        return false;
    }
    if let Some(f) = &q.fields
        && !f.matches(|path| selector::field_value(obj, path))
    {
        return false;
    }
    true
}

/// What a watcher sees of one event, after selectors: an object entering the selection is
/// ADDED, one leaving it is DELETED.
fn translate(e: &Event, ns: Option<&str>, q: &ListQuery) -> Option<EventType> {
    let now = selected(&e.object, ns, q);
    let before = e.prev.as_deref().is_some_and(|p| selected(p, ns, q));
    match e.kind {
        EventType::Added => now.then_some(EventType::Added),
        EventType::Deleted => (now || before).then_some(EventType::Deleted),
        EventType::Modified => match (before, now) {
            (true, true) => Some(EventType::Modified),
            (false, true) => Some(EventType::Added),
            (true, false) => Some(EventType::Deleted),
            (false, false) => None,
        },
    }
}

/// How a watch writes its events' objects: as they are (in their kind's field order), or
/// converted as the request's `Accept` asked (`PartialObjectMetadata`, a one-row `Table` whose
/// column definitions only the first event carries).
struct Encoder {
    rt: Arc<ResourceType>,
    conversion: Conversion,
    table: TableOptions,
}

impl Encoder {
    /// The event line of `kind` for `obj`.
    fn line(&mut self, kind: &str, obj: &Value) -> Vec<u8> {
        let shape = if self.rt.custom {
            Shape::Unstructured
        } else {
            Shape::Typed
        };
        let converted = representation::convert(
            &self.rt,
            Answer::Object(obj),
            self.conversion,
            self.table,
            OffsetDateTime::now_utc(),
        );
        match converted {
            Ok(Some(c)) => {
                if matches!(self.conversion, Conversion::Table(_)) {
                    self.table.no_headers = true;
                }
                encoding::event_line(kind, &c, Shape::Typed)
            }
            // What cannot be converted (an object asked as a list) is sent as it is, as the
            // API server does.
            Ok(None) | Err(_) => encoding::event_line(kind, obj, shape),
        }
    }

    fn bookmark(&mut self, rv: u64, initial_end: bool) -> Vec<u8> {
        let mut md = json!({ "resourceVersion": rv.to_string() });
        if initial_end {
            md["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let obj =
            json!({ "kind": self.rt.kind, "apiVersion": self.rt.api_version(), "metadata": md });
        self.line("BOOKMARK", &obj)
    }
}

fn error_line(e: &ApiError) -> Vec<u8> {
    encoding::event_line("ERROR", &e.to_status(), Shape::Typed)
}

/// A watch ended at once by `gone` (a 410 `Expired`) as an ERROR event, as the API server ends
/// one whose resourceVersion its log no longer reaches: the client must list again. Chaos
/// answers watches with it.
pub(crate) fn expired(gone: &ApiError) -> Response {
    let mut resp = Response::new(Body::from(error_line(gone)));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// Starts a watch of `rt` (in namespace `ns`, or every namespace when it is empty; of the
/// object `name` alone when it is not) and answers with its stream.
pub(crate) fn serve(
    shared: Arc<Shared>,
    rt: Arc<ResourceType>,
    ns: &str,
    name: &str,
    query: &Query,
    repr: Representation,
) -> Result<Response, ApiError> {
    let mut encoder = Encoder {
        rt: rt.clone(),
        conversion: repr.conversion,
        table: representation::table_options(repr.conversion, query)?,
    };
    let mut q = request::list_query(&rt, query)?;
    if !name.is_empty() {
        q.fields = Some(
            FieldSelector::parse(&format!("metadata.name={name}"))
                .map_err(|e| ApiError::bad_request(e.to_string()))?,
        );
    }
    let ns = (!ns.is_empty()).then(|| ns.to_string());
    let bookmarks = query.flag("allowWatchBookmarks");
    let send_initial = query
        .get("sendInitialEvents")
        .map(|_| query.flag("sendInitialEvents"));
    let timeout = timeout_param(query).unwrap_or(DEFAULT_TIMEOUT);
    let from = match query.get("resourceVersion") {
        None | Some("") | Some("0") => None,
        Some(s) => Some(s.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!(
                "resourceVersion: Invalid value: \"{s}\": must be a non-negative integer"
            ))
        })?),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    // Subscribe before reading the state, so no change falls between the two.
    let mut changed = shared.store.subscribe();
    let mut initial: Vec<Vec<u8>> = Vec::new();
    let mut last = match (from, send_initial) {
        (Some(rv), Some(false) | None) => rv,
        _ => {
            let list = shared.store.list(
                &rt,
                ns.as_deref(),
                &ListQuery {
                    labels: None,
                    fields: None,
                    limit: 0,
                    continue_token: None,
                },
            )?;
            let rv = list
                .metadata
                .get("resourceVersion")
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            for item in list.objects() {
                if selected(item, ns.as_deref(), &q) {
                    initial.push(encoder.line(EventType::Added.as_str(), item));
                }
            }
            if send_initial == Some(true) && bookmarks {
                initial.push(encoder.bookmark(rv, true));
            }
            rv
        }
    };
    let shutdown = shared.shutdown.clone();
    let bookmark_every = shared.bookmark_interval;
    tokio::spawn(async move {
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        // One bookmark timer for the whole watch, pushed back whenever this watch sends
        // something: writes to other kinds must not keep postponing it.
        let mut next_bookmark = tokio::time::Instant::now() + bookmark_every;
        for line in initial {
            if tx.send(Bytes::from(line)).await.is_err() {
                return;
            }
        }
        // Set when the kind stops being served: the events up to then are still sent.
        let mut ending = false;
        loop {
            match shared.store.events_since(last) {
                Err(e) => {
                    let _ = tx.send(Bytes::from(error_line(&e))).await;
                    return;
                }
                Ok(events) => {
                    for e in events {
                        last = e.rv;
                        if !e.rt.same_resource(&rt) {
                            continue;
                        }
                        if let Some(kind) = translate(&e, ns.as_deref(), &q) {
                            let object =
                                match store::present(shared.store.registry(), &rt, &e.object) {
                                    Ok(o) => o,
                                    Err(err) => {
                                        let _ = tx.send(Bytes::from(error_line(&err))).await;
                                        return;
                                    }
                                };
                            if tx
                                .send(Bytes::from(encoder.line(kind.as_str(), &object)))
                                .await
                                .is_err()
                            {
                                return;
                            }
                            next_bookmark = tokio::time::Instant::now() + bookmark_every;
                        }
                    }
                }
            }
            if ending {
                return;
            }
            tokio::select! {
                r = changed.changed() => if r.is_err() { return },
                () = &mut deadline => return,
                () = shutdown.cancelled() => return,
                () = rt.retired.cancelled() => ending = true,
                () = tx.closed() => return,
                () = tokio::time::sleep_until(next_bookmark), if bookmarks => {
                    if tx.send(Bytes::from(encoder.bookmark(last, false))).await.is_err() {
                        return;
                    }
                    next_bookmark = tokio::time::Instant::now() + bookmark_every;
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::io::Error>(b), rx))
    });
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::selector::LabelSelector;

    fn event(kind: EventType, now: Value, prev: Option<Value>) -> Event {
        let rt = Registry::new().find("", "v1", "pods").expect("pods served");
        Event {
            rv: 1,
            rt: rt.clone(),
            kind,
            object: Arc::new(now),
            prev: prev.map(Arc::new),
        }
    }

    #[test]
    fn an_object_leaving_the_selector_is_seen_as_deleted() {
        let q = ListQuery {
            labels: LabelSelector::parse("app=a").ok(),
            ..Default::default()
        };
        let a = json!({ "metadata": { "namespace": "d", "labels": { "app": "a" } } });
        let b = json!({ "metadata": { "namespace": "d", "labels": { "app": "b" } } });
        assert_eq!(
            translate(
                &event(EventType::Modified, b.clone(), Some(a.clone())),
                None,
                &q
            ),
            Some(EventType::Deleted)
        );
        assert_eq!(
            translate(
                &event(EventType::Modified, a.clone(), Some(b.clone())),
                None,
                &q
            ),
            Some(EventType::Added)
        );
        assert_eq!(
            translate(&event(EventType::Modified, b.clone(), Some(b)), None, &q),
            None
        );
        assert_eq!(
            translate(&event(EventType::Added, a.clone(), None), Some("other"), &q),
            None
        );
    }
}
