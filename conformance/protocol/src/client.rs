//! The runner's end: [`RemoteProvider`], a [`Provider`] whose every operation is a request to a
//! provider at the other end of a [`Transport`].
//!
//! One task reads the transport: it hands each response to the call waiting for it and each
//! `exec/*` notification to its session. When the transport ends, every waiting call and open
//! session gets `unavailable`, and so does every later call.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use sandbox_contract::{
    CreateRequest, Error, ExecEvent, ExecOutput, ExecRequest, ExecSession, FileInfo, Health,
    Provider, ProviderInfo, Sandbox, SandboxId, Snapshot, SnapshotKind, Stdin, StdinSink,
    async_trait,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::message::{self, Message, PROTOCOL_VERSIONS, RpcError, method, notification};
use crate::transport::Transport;
use crate::wire::{
    self, WireCreate, WireExec, WireFileInfo, WireHealth, WireInfo, WireOutput, WireSandbox,
    WireSnapshot, b64, decode, millis,
};

/// Why a connection to a provider could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The transport closed before `initialize` was answered.
    #[error("the provider closed the connection before answering initialize")]
    Closed,
    /// The provider answered `initialize` with an error.
    #[error("the provider refused initialize: {0}")]
    Refused(String),
    /// The provider chose a version this runner did not offer.
    #[error("the provider chose protocol version {chosen:?}; this runner speaks {offered:?}")]
    Version {
        /// What it chose.
        chosen: String,
        /// What was offered.
        offered: Vec<String>,
    },
    /// The `initialize` result does not follow the schema.
    #[error("the provider's initialize result is malformed")]
    Malformed(#[source] wire::WireError),
    /// The provider did not answer `initialize` in time.
    #[error("the provider did not answer initialize within {0:?}")]
    Timeout(Duration),
}

/// What [`RemoteProvider::connect`] negotiated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// The protocol version both ends speak.
    pub protocol_version: String,
    /// The provider's info, as `initialize` returned it.
    pub info: ProviderInfo,
}

/// Where responses and session events go.
#[derive(Default)]
struct Routes {
    /// Calls waiting for their response, by request id.
    pending: HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>,
    /// Open exec sessions, by session id.
    sessions: HashMap<String, mpsc::UnboundedSender<Result<ExecEvent, Error>>>,
    /// Why the transport ended, once it has.
    closed: Option<String>,
}

/// What every clone of a [`RemoteProvider`] shares.
struct Connection {
    /// Messages to the provider.
    outgoing: mpsc::UnboundedSender<String>,
    /// Where answers go.
    routes: Mutex<Routes>,
    /// The next request id.
    next_id: AtomicU64,
}

/// A [`Provider`] served by a process at the other end of a [`Transport`], in any language.
///
/// Cheap to clone; clones share the connection. Calls may run concurrently: each is a request
/// with its own id.
#[derive(Clone)]
pub struct RemoteProvider {
    /// The connection.
    connection: Arc<Connection>,
    /// What `initialize` negotiated.
    negotiated: Arc<Negotiated>,
}

impl std::fmt::Debug for RemoteProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteProvider")
            .field("negotiated", &self.negotiated)
            .finish_non_exhaustive()
    }
}

/// The error of a call on a closed connection.
fn closed_error(reason: &str) -> Error {
    Error::unavailable(format!("the provider's connection is closed ({reason})"))
}

impl Connection {
    /// Sends a request and waits for its response.
    async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut routes = self.routes.lock().map_err(|_| poisoned())?;
            if let Some(reason) = &routes.closed {
                return Err(closed_error(reason));
            }
            routes.pending.insert(id, tx);
        }
        let guard = PendingGuard {
            connection: self,
            id,
        };
        if self
            .outgoing
            .send(message::request(id, method, params))
            .is_err()
        {
            return Err(closed_error("the transport stopped"));
        }
        let answer = rx.await;
        drop(guard);
        match answer {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(error.to_contract(method)),
            Err(_) => Err(self.closed()),
        }
    }

    /// Returns the error for a connection that closed.
    fn closed(&self) -> Error {
        let reason = self
            .routes
            .lock()
            .ok()
            .and_then(|r| r.closed.clone())
            .unwrap_or_else(|| "the transport stopped".to_owned());
        closed_error(&reason)
    }

    /// Sends a notification; `unavailable` when the transport is gone.
    fn notify(&self, method: &str, params: Value) -> Result<(), Error> {
        self.outgoing
            .send(message::notification(method, params))
            .map_err(|_| self.closed())
    }

    /// Handles one message from the provider.
    fn dispatch(&self, text: &str) {
        let message = match message::parse(text) {
            Ok(message) => message,
            Err(error) => {
                tracing::warn!(%error.message, "the provider sent a malformed message");
                return;
            }
        };
        match message {
            Message::Response { id, outcome } => {
                let sender = id
                    .as_u64()
                    .and_then(|id| self.routes.lock().ok()?.pending.remove(&id));
                match sender {
                    Some(sender) => {
                        let _ = sender.send(outcome);
                    }
                    None => tracing::warn!(%id, "the provider answered an unknown request id"),
                }
            }
            Message::Notification { method, params } => self.session_event(&method, &params),
            Message::Request { id, method, .. } => {
                let answer = message::response(
                    id,
                    Err(RpcError::new(
                        message::code::METHOD_NOT_FOUND,
                        format!("the runner serves no method; got {method:?}"),
                    )),
                );
                let _ = self.outgoing.send(answer);
            }
        }
    }

    /// Routes an `exec/*` notification to its session.
    fn session_event(&self, method: &str, params: &Value) {
        let Some(session) = params.get("session").and_then(Value::as_str) else {
            tracing::warn!(method, "the provider sent a notification without a session");
            return;
        };
        let (event, terminal) = match method {
            notification::OUTPUT => (output_event(params), false),
            notification::EXIT => match params.get("exit_code").and_then(Value::as_i64) {
                Some(code) => match i32::try_from(code) {
                    Ok(code) => (Ok(ExecEvent::Exit(code)), true),
                    Err(_) => (Err(malformed("exec/exit", "exit_code out of range")), true),
                },
                None => (Err(malformed("exec/exit", "no integer exit_code")), true),
            },
            notification::ERROR => {
                let error = params
                    .get("error")
                    .cloned()
                    .and_then(|e| serde_json::from_value::<RpcError>(e).ok())
                    .map(|e| e.to_contract(method::EXEC_STREAM))
                    .unwrap_or_else(|| malformed("exec/error", "no error object"));
                (Err(error), true)
            }
            other => {
                tracing::warn!(method = other, "the provider sent an unknown notification");
                return;
            }
        };
        let Ok(mut routes) = self.routes.lock() else {
            return;
        };
        let sender = if terminal {
            routes.sessions.remove(session)
        } else {
            routes.sessions.get(session).cloned()
        };
        if let Some(sender) = sender {
            let _ = sender.send(event);
        }
    }

    /// Marks the connection closed and fails everything waiting.
    fn close(&self, reason: String) {
        let Ok(mut routes) = self.routes.lock() else {
            return;
        };
        routes.pending.clear();
        for (_, session) in routes.sessions.drain() {
            let _ = session.send(Err(closed_error(&reason)));
        }
        routes.closed = Some(reason);
    }
}

/// `error` and each of its causes, joined with `: `.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// The error of a lock poisoned by a panic.
fn poisoned() -> Error {
    Error::internal("the connection's state lock is poisoned")
}

/// The error of a notification that breaks the schema.
fn malformed(what: &str, problem: &str) -> Error {
    Error::internal(format!("the provider sent a malformed {what}: {problem}"))
}

/// Reads an `exec/output` notification's event.
fn output_event(params: &Value) -> Result<ExecEvent, Error> {
    let data = params
        .get("data")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("exec/output", "no data"))?;
    let bytes = wire::unb64("data", data).map_err(|e| malformed("exec/output", &e.to_string()))?;
    match params.get("stream").and_then(Value::as_str) {
        Some("stdout") => Ok(ExecEvent::Stdout(bytes)),
        Some("stderr") => Ok(ExecEvent::Stderr(bytes)),
        _ => Err(malformed(
            "exec/output",
            "stream is neither stdout nor stderr",
        )),
    }
}

/// Removes a pending call's route when the call ends or is dropped.
struct PendingGuard<'a> {
    /// The connection.
    connection: &'a Connection,
    /// The request id.
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut routes) = self.connection.routes.lock() {
            routes.pending.remove(&self.id);
        }
    }
}

impl RemoteProvider {
    /// Starts reading `transport`, sends `initialize` offering [`PROTOCOL_VERSIONS`], and
    /// returns the provider once it has answered (within `timeout`).
    ///
    /// Needs a tokio runtime; the reading task lives as long as the transport.
    pub async fn connect(transport: Transport, timeout: Duration) -> Result<Self, ConnectError> {
        let Transport {
            outgoing,
            mut incoming,
        } = transport;
        let connection = Arc::new(Connection {
            outgoing,
            routes: Mutex::new(Routes::default()),
            next_id: AtomicU64::new(1),
        });
        let reader = Arc::downgrade(&connection);
        tokio::spawn(async move {
            let reason = loop {
                let item = incoming.recv().await;
                let Some(connection) = reader.upgrade() else {
                    return;
                };
                match item {
                    Some(Ok(text)) => connection.dispatch(&text),
                    Some(Err(error)) => break (connection, with_causes(&error)),
                    None => break (connection, "the provider ended the stream".to_owned()),
                }
            };
            let (connection, reason) = reason;
            connection.close(reason);
        });
        let offered: Vec<String> = PROTOCOL_VERSIONS.iter().map(|v| (*v).to_owned()).collect();
        let params = json!({
            "protocol_versions": offered,
            "client": {"name": "sandbox-protocol", "version": env!("CARGO_PKG_VERSION")},
        });
        let answer = tokio::time::timeout(timeout, connection.call(method::INITIALIZE, params))
            .await
            .map_err(|_| ConnectError::Timeout(timeout))?;
        let result = match answer {
            Ok(result) => result,
            Err(error) if error.is_unavailable() => return Err(ConnectError::Closed),
            Err(error) => return Err(ConnectError::Refused(error.to_string())),
        };
        let chosen = wire::str_param(&result, "protocol_version")
            .map_err(ConnectError::Malformed)?
            .to_owned();
        if !offered.contains(&chosen) {
            return Err(ConnectError::Version { chosen, offered });
        }
        let info: WireInfo = decode(
            "result.provider",
            result.get("provider").cloned().unwrap_or(Value::Null),
        )
        .map_err(ConnectError::Malformed)?;
        let info = ProviderInfo::try_from(info).map_err(ConnectError::Malformed)?;
        Ok(RemoteProvider {
            connection,
            negotiated: Arc::new(Negotiated {
                protocol_version: chosen,
                info,
            }),
        })
    }

    /// Returns what `initialize` negotiated.
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }

    /// Calls `method` and decodes the result's `field` (or the whole result when `None`).
    async fn call_as<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
        field: Option<&str>,
    ) -> Result<T, Error> {
        let mut result = self.connection.call(method, params).await?;
        let value = match field {
            Some(name) => result.get_mut(name).map(Value::take).unwrap_or(Value::Null),
            None => result,
        };
        decode(&format!("{method} result"), value).map_err(|e| provider_fault(method, &e))
    }

    /// Calls a method whose result is a sandbox.
    async fn sandbox_call(&self, method: &str, params: Value) -> Result<Sandbox, Error> {
        let wire: WireSandbox = self.call_as(method, params, Some("sandbox")).await?;
        Sandbox::try_from(wire).map_err(|e| provider_fault(method, &e))
    }
}

/// The error for a result that breaks the schema: the provider's fault, so `internal`.
fn provider_fault(method: &str, error: &wire::WireError) -> Error {
    Error::internal(format!(
        "the provider's {method} result is malformed: {error}"
    ))
}

#[async_trait]
impl Provider for RemoteProvider {
    async fn info(&self) -> Result<ProviderInfo, Error> {
        let wire: WireInfo = self.call_as(method::INFO, json!({}), Some("info")).await?;
        ProviderInfo::try_from(wire).map_err(|e| provider_fault(method::INFO, &e))
    }

    async fn health(&self) -> Result<Health, Error> {
        let wire: WireHealth = self
            .call_as(method::HEALTH, json!({}), Some("health"))
            .await?;
        Ok(wire.into())
    }

    async fn create(&self, request: CreateRequest) -> Result<Sandbox, Error> {
        let params = json!({"request": WireCreate::from(&request)});
        self.sandbox_call(method::CREATE, params).await
    }

    async fn get(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.sandbox_call(method::GET, json!({"id": id})).await
    }

    async fn list(&self) -> Result<Vec<Sandbox>, Error> {
        let wire: Vec<WireSandbox> = self
            .call_as(method::LIST, json!({}), Some("sandboxes"))
            .await?;
        wire.into_iter()
            .map(|s| Sandbox::try_from(s).map_err(|e| provider_fault(method::LIST, &e)))
            .collect()
    }

    async fn delete(&self, id: &SandboxId) -> Result<(), Error> {
        self.connection
            .call(method::DELETE, json!({"id": id}))
            .await
            .map(|_| ())
    }

    async fn exec(&self, id: &SandboxId, request: ExecRequest) -> Result<ExecOutput, Error> {
        let params = json!({"id": id, "request": WireExec::from(&request)});
        let wire: WireOutput = self.call_as(method::EXEC, params, None).await?;
        ExecOutput::try_from(wire).map_err(|e| provider_fault(method::EXEC, &e))
    }

    async fn exec_stream(
        &self,
        id: &SandboxId,
        request: ExecRequest,
    ) -> Result<ExecSession, Error> {
        let session = format!(
            "s{}",
            self.connection.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut routes = self.connection.routes.lock().map_err(|_| poisoned())?;
            if let Some(reason) = &routes.closed {
                return Err(closed_error(reason));
            }
            routes.sessions.insert(session.clone(), tx);
        }
        let events = SessionEvents {
            connection: self.connection.clone(),
            session: session.clone(),
            rx,
            finished: false,
        };
        let streamed = request.stdin == Stdin::Streamed;
        let params = json!({"id": id, "request": WireExec::from(&request), "session": session});
        if let Err(error) = self.connection.call(method::EXEC_STREAM, params).await {
            // The session never started: drop its route without cancelling it.
            let mut events = events;
            events.finished = true;
            return Err(error);
        }
        let mut exec = ExecSession::new(events);
        if streamed {
            exec = exec.with_stdin(RemoteStdin {
                connection: self.connection.clone(),
                session,
                closed: false,
            });
        }
        Ok(exec)
    }

    async fn write_file(&self, id: &SandboxId, path: &str, data: Bytes) -> Result<(), Error> {
        let params = json!({"id": id, "path": path, "data": b64(&data)});
        self.connection
            .call(method::WRITE_FILE, params)
            .await
            .map(|_| ())
    }

    async fn read_file(&self, id: &SandboxId, path: &str, max_bytes: u64) -> Result<Bytes, Error> {
        let params = json!({"id": id, "path": path, "max_bytes": max_bytes});
        let data: String = self
            .call_as(method::READ_FILE, params, Some("data"))
            .await?;
        wire::unb64("data", &data).map_err(|e| provider_fault(method::READ_FILE, &e))
    }

    async fn list_dir(&self, id: &SandboxId, path: &str) -> Result<Vec<FileInfo>, Error> {
        let params = json!({"id": id, "path": path});
        let wire: Vec<WireFileInfo> = self
            .call_as(method::LIST_DIR, params, Some("entries"))
            .await?;
        wire.into_iter()
            .map(|f| FileInfo::try_from(f).map_err(|e| provider_fault(method::LIST_DIR, &e)))
            .collect()
    }

    async fn stat(&self, id: &SandboxId, path: &str) -> Result<FileInfo, Error> {
        let params = json!({"id": id, "path": path});
        let wire: WireFileInfo = self.call_as(method::STAT, params, Some("file")).await?;
        FileInfo::try_from(wire).map_err(|e| provider_fault(method::STAT, &e))
    }

    async fn mkdir(&self, id: &SandboxId, path: &str) -> Result<(), Error> {
        let params = json!({"id": id, "path": path});
        self.connection
            .call(method::MKDIR, params)
            .await
            .map(|_| ())
    }

    async fn stop(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.sandbox_call(method::STOP, json!({"id": id})).await
    }

    async fn start(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.sandbox_call(method::START, json!({"id": id})).await
    }

    async fn pause(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.sandbox_call(method::PAUSE, json!({"id": id})).await
    }

    async fn resume(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.sandbox_call(method::RESUME, json!({"id": id})).await
    }

    async fn snapshot(&self, id: &SandboxId, kind: SnapshotKind) -> Result<Snapshot, Error> {
        let params = json!({"id": id, "kind": kind});
        let wire: WireSnapshot = self
            .call_as(method::SNAPSHOT, params, Some("snapshot"))
            .await?;
        Snapshot::try_from(wire).map_err(|e| provider_fault(method::SNAPSHOT, &e))
    }

    async fn fork(&self, source: &SandboxId, id: SandboxId) -> Result<Sandbox, Error> {
        self.sandbox_call(method::FORK, json!({"source": source, "id": id}))
            .await
    }

    async fn expose_port(&self, id: &SandboxId, port: u16) -> Result<String, Error> {
        let params = json!({"id": id, "port": port});
        self.call_as(method::EXPOSE_PORT, params, Some("url")).await
    }

    async fn set_ttl(&self, id: &SandboxId, ttl: Option<Duration>) -> Result<Sandbox, Error> {
        let params = json!({"id": id, "ttl_ms": ttl.map(millis)});
        self.sandbox_call(method::SET_TTL, params).await
    }
}

/// A session's events as they arrive; dropping it before the terminal item cancels the
/// session at the provider.
struct SessionEvents {
    /// The connection.
    connection: Arc<Connection>,
    /// The session id.
    session: String,
    /// Events routed by the reading task.
    rx: mpsc::UnboundedReceiver<Result<ExecEvent, Error>>,
    /// Whether the terminal item has come.
    finished: bool,
}

impl Stream for SessionEvents {
    type Item = Result<ExecEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = std::task::ready!(self.rx.poll_recv(cx));
        if matches!(item, None | Some(Err(_)) | Some(Ok(ExecEvent::Exit(_)))) {
            self.finished = true;
        }
        Poll::Ready(item)
    }
}

impl Drop for SessionEvents {
    fn drop(&mut self) {
        let routed = self
            .connection
            .routes
            .lock()
            .ok()
            .and_then(|mut routes| routes.sessions.remove(&self.session))
            .is_some();
        if routed && !self.finished {
            let _ = self
                .connection
                .notify(notification::CANCEL, json!({"session": self.session}));
        }
    }
}

/// Streamed stdin over `exec/stdin` and `exec/close_stdin` notifications.
struct RemoteStdin {
    /// The connection.
    connection: Arc<Connection>,
    /// The session id.
    session: String,
    /// Whether `exec/close_stdin` was sent.
    closed: bool,
}

#[async_trait]
impl StdinSink for RemoteStdin {
    async fn send(&mut self, data: Bytes) -> Result<(), Error> {
        self.connection.notify(
            notification::STDIN,
            json!({"session": self.session, "data": b64(&data)}),
        )
    }

    async fn close(&mut self) -> Result<(), Error> {
        self.closed = true;
        self.connection
            .notify(notification::CLOSE_STDIN, json!({"session": self.session}))
    }
}

impl Drop for RemoteStdin {
    fn drop(&mut self) {
        if !self.closed {
            let _ = self
                .connection
                .notify(notification::CLOSE_STDIN, json!({"session": self.session}));
        }
    }
}
