//! The one watch of a pool's objects (its Sandboxes in direct mode, its SandboxClaims on a warm
//! pool) that wakes every readiness wait: the informer pattern, one watch shared by all the
//! waits rather than one per object, so a write wakes the API server's watchers once.
//!
//! A wait registers the name it waits for ([`Watch::register`]) before its first GET, and is
//! woken ([`Registration::woken`]) with each new state of that object the watch sees, which it
//! judges without another GET, or with `None` when the object was deleted: read it again. A
//! change the watch missed (it was given up, or a bug) reaches its wait by the wait's next
//! poll: a lost event costs latency, never correctness.
//!
//! The watch is a hint, never a dependency. The provider page's Role grants no `watch`: a
//! refusal (403) leaves the pool to its polls for [`FORBIDDEN_PAUSE`], any other failure to
//! open one for [`FAILED_PAUSE`], and the polls run under the watch anyway, as the safety net.
//! It is opened lazily, with the pool's label selector, bookmarks, and a resourceVersion read
//! before the first wait registered (one a GET returned, or the last one a watch saw), over the
//! client's HTTP/2 connection; kept while waits are registered and [`LINGER`] after the last one left;
//! opened again from the last resourceVersion it saw when the server ends it (its
//! `timeoutSeconds`), and from a fresh one after a 410 Gone or another ERROR event, or a broken
//! stream: a LIST of the pool's objects (paged), whose objects that waits are registered for
//! are handed to them as the watch opens, so that no change in between is lost. Its task ends
//! when the [`Watch`] is dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::client::{KubeClient, KubeError};

/// How long a watch is asked to last before it is opened again (the server may end it sooner).
const TIMEOUT_SECONDS: u32 = 300;

/// How long a watch stays open after the last wait left it.
const LINGER: Duration = Duration::from_secs(60);

/// How long a pool only polls after the server refused the watch (403).
const FORBIDDEN_PAUSE: Duration = Duration::from_secs(600);

/// How long a pool only polls after a watch could not be opened for another reason, or kept
/// ending at once.
const FAILED_PAUSE: Duration = Duration::from_secs(30);

/// How many watches in a row may end at once having delivered nothing before the pool only
/// polls for [`FAILED_PAUSE`].
const QUICK_ENDS: u32 = 3;

/// Objects per page of a relist.
const LIST_PAGE: u32 = 500;

/// How many times in a row a watch that cannot reach the server (no answer) is tried again at
/// once before the pool only polls for [`FAILED_PAUSE`].
const UNREACHED_TRIES: u32 = 2;

/// A watch that ends sooner than this, having delivered nothing, ended at once.
const QUICK: Duration = Duration::from_secs(1);

/// The most bytes of one event buffered (an object is far smaller).
const MAX_EVENT: usize = 16 << 20;

/// The shared watch of one collection of a pool, opened when a wait first registers.
pub(crate) struct Watch {
    /// What the watch task and the registrations share.
    shared: Arc<Shared>,
}

impl Watch {
    /// A watch of `collection` (a namespaced collection path) limited to `selector` (a label
    /// selector, not yet URL-encoded); `subject` names it in logs. Nothing is sent yet.
    pub(crate) fn new(
        client: KubeClient,
        collection: String,
        selector: &str,
        subject: String,
    ) -> Self {
        let selector: String = form_urlencoded::byte_serialize(selector.as_bytes()).collect();
        Watch {
            shared: Arc::new(Shared {
                client,
                collection,
                selector,
                subject,
                live: AtomicBool::new(false),
                state: Mutex::new(State {
                    waiters: HashMap::new(),
                    next_id: 0,
                    task: None,
                    paused_until: None,
                    last_rv: None,
                    idle_since: Instant::now(),
                    refusal_logged: false,
                }),
            }),
        }
    }

    /// Registers a wait for the object `name`, opening the watch from `known_rv` (a
    /// resourceVersion the caller read; else the last one seen, else a fresh one) when it is
    /// not open. `None` while the pool only polls (the watch was refused or failed), or
    /// outside a tokio runtime.
    pub(crate) fn register(&self, name: &str, known_rv: Option<&str>) -> Option<Registration> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let mut state = self.shared.state.lock().ok()?;
        if let Some(until) = state.paused_until {
            if Instant::now() < until {
                return None;
            }
            state.paused_until = None;
        }
        let id = state.next_id;
        state.next_id += 1;
        let slot = Arc::new(Slot::default());
        state
            .waiters
            .entry(name.to_owned())
            .or_default()
            .push((id, slot.clone()));
        if state.task.as_ref().is_none_or(|(_, h)| h.is_finished()) {
            let from = known_rv
                .filter(|rv| !rv.is_empty())
                .map(str::to_owned)
                .or_else(|| state.last_rv.clone());
            let task = runtime.spawn(run(self.shared.clone(), id, from));
            state.task = Some((id, task.abort_handle()));
        }
        Some(Registration {
            shared: self.shared.clone(),
            name: name.to_owned(),
            id,
            slot,
        })
    }
}

impl Drop for Watch {
    /// Ends the watch task.
    fn drop(&mut self) {
        if let Ok(mut state) = self.shared.state.lock()
            && let Some((_, task)) = state.task.take()
        {
            task.abort();
        }
    }
}

/// A wait registered with a [`Watch`]; dropping it leaves the watch.
pub(crate) struct Registration {
    /// The watch.
    shared: Arc<Shared>,
    /// The object waited for.
    name: String,
    /// This registration among the object's.
    id: u64,
    /// Where the watch leaves what it saw.
    slot: Arc<Slot>,
}

impl Registration {
    /// Waits until the watch has news of the object: its new state, or `None` when it should
    /// be read again. Cancel-safe: news that arrive while nobody awaits are kept (the latest).
    pub(crate) async fn woken(&self) -> Option<Value> {
        self.slot.notify.notified().await;
        self.slot.object.lock().ok()?.take()
    }

    /// Whether the watch is open now: registered before a write, the wait learns every
    /// change after that write from the watch, so it need not read the object first.
    pub(crate) fn live(&self) -> bool {
        self.shared.live.load(Ordering::Acquire)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut state) = self.shared.state.lock() {
            if let Some(slots) = state.waiters.get_mut(&self.name) {
                slots.retain(|(id, _)| *id != self.id);
                if slots.is_empty() {
                    state.waiters.remove(&self.name);
                }
            }
            if state.waiters.is_empty() {
                state.idle_since = Instant::now();
            }
        }
    }
}

/// What the watch leaves for one wait.
#[derive(Default)]
struct Slot {
    /// The object's latest state seen, or `None` to read it again.
    object: Mutex<Option<Value>>,
    /// Woken at each news.
    notify: Notify,
}

impl Slot {
    /// Leaves `object` (replacing older news) and wakes the wait.
    fn wake(&self, object: Option<Value>) {
        if let Ok(mut slot) = self.object.lock() {
            *slot = object;
        }
        self.notify.notify_one();
    }
}

/// What the task and the registrations share.
struct Shared {
    /// The client, whose HTTP/2 connection carries the watch.
    client: KubeClient,
    /// The collection's path.
    collection: String,
    /// The label selector, URL-encoded.
    selector: String,
    /// What logs call the watch.
    subject: String,
    /// Whether a watch stream is open, delivering every change since it opened.
    live: AtomicBool,
    /// The waits and the task.
    state: Mutex<State>,
}

/// The waits and the task of a watch.
struct State {
    /// The registered waits by object name.
    waiters: HashMap<String, Vec<(u64, Arc<Slot>)>>,
    /// The id of the next registration (and of the task it may start).
    next_id: u64,
    /// The running task, with its id.
    task: Option<(u64, AbortHandle)>,
    /// Until when the pool only polls.
    paused_until: Option<Instant>,
    /// The last resourceVersion a watch saw, to open the next one from.
    last_rv: Option<String>,
    /// When the last wait left.
    idle_since: Instant,
    /// Whether the refusal was logged already.
    refusal_logged: bool,
}

/// One line of a watch stream.
#[derive(Deserialize)]
struct WatchEvent {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    #[serde(rename = "type")]
    kind: String,
    /// The object (a Status for `ERROR`).
    #[serde(default)]
    object: Value,
}

/// A page of a list.
#[derive(Deserialize)]
struct ListPage {
    /// The list's metadata.
    #[serde(default)]
    metadata: ListPageMeta,
    /// The objects (`null` for none).
    #[serde(default)]
    items: Option<Vec<Value>>,
}

/// A list page's resourceVersion and continue token.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListPageMeta {
    /// The resourceVersion the list was read at.
    #[serde(default)]
    resource_version: String,
    /// The token of the next page, empty or absent on the last.
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Takes the whole events at the front of `buffer` (JSON objects, one after another, with or
/// without newlines between them), leaving an event not wholly received yet; an error when the
/// text is no event.
fn take_events(buffer: &mut BytesMut) -> Result<Vec<WatchEvent>, serde_json::Error> {
    let mut events = Vec::new();
    let mut stream = serde_json::Deserializer::from_slice(buffer).into_iter::<WatchEvent>();
    for event in stream.by_ref() {
        match event {
            Ok(event) => events.push(event),
            Err(error) if error.is_eof() => break,
            Err(error) => return Err(error),
        }
    }
    let consumed = stream.byte_offset();
    let _ = buffer.split_to(consumed);
    Ok(events)
}

/// How a watch stream ended.
enum End {
    /// The server ended it (its timeout): open the next from the last resourceVersion.
    Closed(String),
    /// A 410 Gone or another ERROR event, a broken stream, or undecodable text: open the next
    /// from a relist.
    Lost,
    /// No wait for [`LINGER`]: the task ends.
    Idle,
}

/// Ends the task's tenure in the state when the task ends, however it ends.
struct TaskGuard {
    /// The watch.
    shared: Arc<Shared>,
    /// The task's id.
    id: u64,
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.shared.live.store(false, Ordering::Release);
        if let Ok(mut state) = self.shared.state.lock()
            && state.task.as_ref().is_some_and(|(id, _)| *id == self.id)
        {
            state.task = None;
        }
    }
}

/// The watch task: opens the watch from `from` (else a fresh resourceVersion) and follows it,
/// opening it again as the module says, until no wait is left for [`LINGER`] or the pool
/// must only poll.
async fn run(shared: Arc<Shared>, id: u64, mut from: Option<String>) {
    let _guard = TaskGuard {
        shared: shared.clone(),
        id,
    };
    let mut quick_ends = 0;
    let mut unreached = 0;
    loop {
        if shared.idle(id) {
            return;
        }
        let opened = async {
            let (rv, listed) = match from.take() {
                Some(rv) => (rv, Vec::new()),
                None => shared.relist().await?,
            };
            tracing::debug!(watch = %shared.subject, "opening the watch");
            let body = shared.client.stream(&shared.path(&rv)).await?;
            // Every change after the list comes from the watch; what the waits may have missed
            // before it, they learn from the list.
            for object in listed {
                shared.dispatch(WatchEvent {
                    kind: "MODIFIED".to_owned(),
                    object,
                });
            }
            Ok::<_, KubeError>((rv, body))
        };
        let (rv, body) = match opened.await {
            Ok(opened) => opened,
            // A connection that just broke may take the next request down with it: a new
            // one is tried before giving up.
            Err(error) if error.code().is_none() && unreached < UNREACHED_TRIES => {
                unreached += 1;
                continue;
            }
            Err(error) => return shared.pause(&error),
        };
        unreached = 0;
        let opened = Instant::now();
        shared.live.store(true, Ordering::Release);
        let (end, delivered) = shared.follow(id, body, rv).await;
        shared.live.store(false, Ordering::Release);
        match end {
            End::Closed(last) => from = Some(last),
            End::Lost => {}
            End::Idle => return,
        }
        if delivered || opened.elapsed() >= QUICK {
            quick_ends = 0;
        } else {
            quick_ends += 1;
            if quick_ends >= QUICK_ENDS {
                tracing::debug!(watch = %shared.subject, "the watch keeps ending at once; polling only");
                return shared.pause_for(FAILED_PAUSE);
            }
        }
    }
}

impl Shared {
    /// The watch request from `rv`.
    fn path(&self, rv: &str) -> String {
        let rv: String = form_urlencoded::byte_serialize(rv.as_bytes()).collect();
        format!(
            "{}?watch=true&labelSelector={}&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds={TIMEOUT_SECONDS}",
            self.collection, self.selector
        )
    }

    /// Lists the collection (page by page): returns the resourceVersion to watch from and the
    /// listed objects that waits are registered for, so that no change between a wait's last
    /// read and the new watch is lost (an informer's relist). An object not listed is left to
    /// its wait's polls: it may not be created yet.
    async fn relist(&self) -> Result<(String, Vec<Value>), KubeError> {
        let mut rv = None;
        let mut listed = Vec::new();
        let mut continue_token: Option<String> = None;
        loop {
            let mut path = format!(
                "{}?labelSelector={}&limit={LIST_PAGE}",
                self.collection, self.selector
            );
            if let Some(token) = &continue_token {
                let token: String = form_urlencoded::byte_serialize(token.as_bytes()).collect();
                path.push_str("&continue=");
                path.push_str(&token);
            }
            let page: ListPage = self.client.get(&path).await?;
            rv.get_or_insert(page.metadata.resource_version);
            if let Ok(state) = self.state.lock() {
                listed.extend(page.items.unwrap_or_default().into_iter().filter(|item| {
                    item.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .is_some_and(|name| state.waiters.contains_key(name))
                }));
            }
            match page.metadata.continue_token.filter(|t| !t.is_empty()) {
                Some(token) => continue_token = Some(token),
                None => return Ok((rv.unwrap_or_default(), listed)),
            }
        }
    }

    /// Whether no wait has been registered for [`LINGER`]; if so the task `id` gives up its
    /// place, so that the next registration starts another.
    fn idle(&self, id: u64) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return true;
        };
        let idle = state.waiters.is_empty() && state.idle_since.elapsed() >= LINGER;
        if idle && state.task.as_ref().is_some_and(|(task, _)| *task == id) {
            state.task = None;
        }
        idle
    }

    /// After `error` opening the watch: the pool only polls for a while. A refusal is logged
    /// once.
    fn pause(&self, error: &KubeError) {
        if error.code() == Some(403) {
            let first = self
                .state
                .lock()
                .map(|mut s| !std::mem::replace(&mut s.refusal_logged, true))
                .unwrap_or(false);
            if first {
                tracing::debug!(
                    watch = %self.subject,
                    "the watch is not allowed (403): readiness is polled"
                );
            }
            self.pause_for(FORBIDDEN_PAUSE);
        } else {
            tracing::debug!(watch = %self.subject, %error, "the watch cannot be opened; polling only for a while");
            self.pause_for(FAILED_PAUSE);
        }
    }

    /// Only polls for `pause`. The waits are not woken: their polls go on as before, and a
    /// wake of every wait at once would be a burst of GETs as large as the number of waits.
    fn pause_for(&self, pause: Duration) {
        if let Ok(mut state) = self.state.lock() {
            state.paused_until = Some(Instant::now() + pause);
        }
    }

    /// Wakes the waits for `name` with `object` (`None`: read it again).
    fn wake(&self, name: &str, object: Option<Value>) {
        if let Ok(state) = self.state.lock()
            && let Some(slots) = state.waiters.get(name)
        {
            for (_, slot) in slots {
                slot.wake(object.clone());
            }
        }
    }

    /// Remembers `rv` as the last resourceVersion seen.
    fn remember(&self, rv: &str) {
        if let Ok(mut state) = self.state.lock() {
            state.last_rv = Some(rv.to_owned());
        }
    }

    /// Follows one watch stream, opened from `rv`, until it ends; returns how, and whether it
    /// delivered any event.
    async fn follow(&self, id: u64, mut body: Incoming, mut rv: String) -> (End, bool) {
        let mut buffer = BytesMut::new();
        let mut delivered = false;
        let mut check = Instant::now() + LINGER;
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                () = tokio::time::sleep_until(check) => {
                    if self.idle(id) {
                        self.remember(&rv);
                        return (End::Idle, delivered);
                    }
                    check = Instant::now() + LINGER;
                    continue;
                }
            };
            let data = match frame {
                None => {
                    self.remember(&rv);
                    return (End::Closed(rv), delivered);
                }
                Some(Err(error)) => {
                    tracing::debug!(watch = %self.subject, %error, "the watch broke");
                    return (End::Lost, delivered);
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
            };
            buffer.extend_from_slice(&data);
            let events = match take_events(&mut buffer) {
                Ok(events) => events,
                Err(error) => {
                    tracing::debug!(watch = %self.subject, %error, "the watch sent what is not an event");
                    return (End::Lost, delivered);
                }
            };
            for event in events {
                delivered = true;
                match self.dispatch(event) {
                    Some(Some(seen)) => rv = seen,
                    Some(None) => {}
                    None => return (End::Lost, delivered),
                }
            }
            if buffer.len() > MAX_EVENT {
                tracing::debug!(watch = %self.subject, "a watch event is too large");
                return (End::Lost, delivered);
            }
        }
    }

    /// Hands an event to the waits for its object. Returns the resourceVersion it brings (if
    /// any), or `None` for an ERROR event (the watch must be opened again).
    fn dispatch(&self, event: WatchEvent) -> Option<Option<String>> {
        let WatchEvent { kind, object } = event;
        let rv = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|rv| !rv.is_empty())
            .map(str::to_owned);
        let name = || {
            object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        match kind.as_str() {
            "ADDED" | "MODIFIED" => {
                if let Some(name) = name() {
                    self.wake(&name, Some(object));
                }
            }
            "DELETED" => {
                if let Some(name) = name() {
                    self.wake(&name, None);
                }
            }
            "ERROR" => {
                let code = object.get("code").and_then(Value::as_u64).unwrap_or(0);
                tracing::debug!(watch = %self.subject, code, "the watch ended with an error; opening it again");
                return None;
            }
            _ => {}
        }
        Some(rv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(events: &[WatchEvent]) -> Vec<&str> {
        events.iter().map(|e| e.kind.as_str()).collect()
    }

    #[test]
    fn events_split_across_chunks_are_taken_once_whole() {
        let text = concat!(
            r#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}"#,
            "\n",
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"6"}}}"#,
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}"#,
            "\n"
        );
        let cut = text.find("MODIFIED").expect("the second event");
        let mut buffer = BytesMut::from(&text.as_bytes()[..cut]);
        assert_eq!(kinds(&take_events(&mut buffer).unwrap()), ["ADDED"]);
        buffer.extend_from_slice(&text.as_bytes()[cut..]);
        let events = take_events(&mut buffer).unwrap();
        assert_eq!(kinds(&events), ["MODIFIED", "BOOKMARK"]);
        assert_eq!(events[0].object["metadata"]["resourceVersion"], "6");
        assert!(
            buffer.iter().all(u8::is_ascii_whitespace),
            "only whitespace is left"
        );
    }

    #[test]
    fn text_that_is_no_event_is_an_error() {
        let mut buffer = BytesMut::from(&b"<html>proxy error</html>"[..]);
        assert!(take_events(&mut buffer).is_err());
        let mut buffer = BytesMut::from(&br#"{"object":{}}"#[..]);
        assert!(take_events(&mut buffer).is_err(), "an event needs its type");
    }
}
