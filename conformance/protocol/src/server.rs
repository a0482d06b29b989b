//! The provider's end: [`serve`] answers the protocol for any [`Provider`], so a provider
//! written in Rust (or the reference provider in tests) can be run over a transport.
//!
//! Requests run concurrently, each in a task of its own. A streamed command's session is
//! registered before `exec_stream` is answered; its events are forwarded as notifications
//! after the answer, and its stdin notifications are fed to the session's stdin in order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use sandbox_contract::{
    CreateRequest, Error, ExecEvent, ExecRequest, ExecSession, Provider, SnapshotKind, StdinHandle,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::message::{self, Message, PROTOCOL_VERSIONS, RpcError, code, method, notification};
use crate::transport::{Transport, TransportError};
use crate::wire::{
    self, WireCreate, WireError, WireExec, WireFileInfo, WireHealth, WireInfo, WireOutput,
    WireSandbox, WireSnapshot, b64, decode, id_param, str_param,
};

/// What the runner asks of a session's stdin.
enum StdinOp {
    /// Send these bytes.
    Data(Bytes),
    /// End the input.
    Close,
}

/// A session the provider is streaming.
struct SessionControl {
    /// Feeds the session's stdin task, when it has stdin.
    stdin: Option<mpsc::UnboundedSender<StdinOp>>,
    /// The task forwarding its events, once started.
    forwarder: Option<AbortHandle>,
}

/// The open sessions by id.
type Sessions = Arc<Mutex<HashMap<String, SessionControl>>>;

/// Serves `provider` over `transport` until the runner ends the stream; returns the
/// transport's error if it broke.
///
/// Needs a tokio runtime. The first request must be `initialize`; it picks the newest
/// version both ends speak and answers the provider's info.
pub async fn serve(
    provider: Arc<dyn Provider>,
    transport: Transport,
) -> Result<(), TransportError> {
    let Transport {
        outgoing,
        mut incoming,
    } = transport;
    let sessions: Sessions = Arc::default();
    let mut initialized = false;
    let outcome = loop {
        let text = match incoming.recv().await {
            Some(Ok(text)) => text,
            Some(Err(error)) => break Err(error),
            None => break Ok(()),
        };
        match message::parse(&text) {
            Err(error) => {
                let _ = outgoing.send(message::response(Value::Null, Err(error)));
            }
            Ok(Message::Response { .. }) => {}
            Ok(Message::Notification { method, params }) => {
                session_notification(&sessions, &method, &params);
            }
            Ok(Message::Request { id, method, params }) if method == method::INITIALIZE => {
                let outcome = initialize(provider.as_ref(), &params).await;
                initialized |= outcome.is_ok();
                let _ = outgoing.send(message::response(id, outcome));
            }
            Ok(Message::Request { id, .. }) if !initialized => {
                let error = RpcError::new(
                    code::NOT_INITIALIZED,
                    "the first request must be initialize",
                );
                let _ = outgoing.send(message::response(id, Err(error)));
            }
            Ok(Message::Request { id, method, params }) => {
                let provider = provider.clone();
                let outgoing = outgoing.clone();
                let sessions = sessions.clone();
                tokio::spawn(async move {
                    if method == method::EXEC_STREAM {
                        exec_stream(provider, &sessions, &outgoing, id, params).await;
                    } else {
                        let outcome = call(provider.as_ref(), &method, params).await;
                        let _ = outgoing.send(message::response(id, outcome));
                    }
                });
            }
        }
    };
    let open: Vec<SessionControl> = sessions
        .lock()
        .map(|mut s| s.drain().map(|(_, c)| c).collect())
        .unwrap_or_default();
    for control in open {
        if let Some(task) = control.forwarder {
            task.abort();
        }
    }
    outcome
}

/// Answers `initialize`: the newest version both ends speak, and the provider's info.
async fn initialize(provider: &dyn Provider, params: &Value) -> Result<Value, RpcError> {
    let offered: Vec<&str> = params
        .get("protocol_versions")
        .and_then(Value::as_array)
        .map(|versions| versions.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(version) = PROTOCOL_VERSIONS.iter().find(|v| offered.contains(v)) else {
        return Err(RpcError {
            code: code::UNSUPPORTED_VERSION,
            message: format!(
                "no protocol version in common: offered {offered:?}, this provider speaks {PROTOCOL_VERSIONS:?}"
            ),
            data: Some(json!({"supported": PROTOCOL_VERSIONS})),
        });
    };
    let info = provider.info().await.map_err(|e| RpcError::from(&e))?;
    Ok(json!({
        "protocol_version": version,
        "provider": WireInfo::from(&info),
    }))
}

/// The error of params that do not fit the method.
fn bad_params(error: &WireError) -> RpcError {
    RpcError {
        code: code::INVALID_PARAMS,
        message: error.to_string(),
        data: Some(json!({"code": "invalid_request"})),
    }
}

/// Reads `params.request` as an exec request.
fn exec_request(params: &Value) -> Result<ExecRequest, WireError> {
    let wire: WireExec = decode(
        "params.request",
        params.get("request").cloned().unwrap_or(Value::Null),
    )?;
    ExecRequest::try_from(wire)
}

/// Runs one request other than `initialize` and `exec_stream`.
async fn call(provider: &dyn Provider, method: &str, params: Value) -> Result<Value, RpcError> {
    match dispatch(provider, method, &params).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err(RpcError::from(&error)),
        Err(Bad::Params(error)) => Err(bad_params(&error)),
        Err(Bad::Method) => Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            format!("no method {method:?}"),
        )),
    }
}

/// Why a request did not reach the provider.
enum Bad {
    /// Its params do not fit.
    Params(WireError),
    /// Its method does not exist.
    Method,
}

impl From<WireError> for Bad {
    fn from(error: WireError) -> Self {
        Bad::Params(error)
    }
}

/// Calls the provider for `method`; the outer error is a request that did not reach it.
async fn dispatch(
    provider: &dyn Provider,
    method: &str,
    params: &Value,
) -> Result<Result<Value, Error>, Bad> {
    let sandbox = |result: Result<sandbox_contract::Sandbox, Error>| {
        result.map(|s| json!({"sandbox": WireSandbox::from(&s)}))
    };
    let done = |result: Result<(), Error>| result.map(|()| json!({}));
    let path = || str_param(params, "path").map(str::to_owned);
    Ok(match method {
        method::INFO => provider
            .info()
            .await
            .map(|info| json!({"info": WireInfo::from(&info)})),
        method::HEALTH => provider
            .health()
            .await
            .map(|h| json!({"health": WireHealth::from(h)})),
        method::CREATE => {
            let wire: WireCreate = decode(
                "params.request",
                params.get("request").cloned().unwrap_or(Value::Null),
            )?;
            sandbox(provider.create(CreateRequest::try_from(wire)?).await)
        }
        method::GET => sandbox(provider.get(&id_param(params, "id")?).await),
        method::LIST => provider.list().await.map(|all| {
            let wire: Vec<WireSandbox> = all.iter().map(WireSandbox::from).collect();
            json!({"sandboxes": wire})
        }),
        method::DELETE => done(provider.delete(&id_param(params, "id")?).await),
        method::EXEC => {
            let id = id_param(params, "id")?;
            provider
                .exec(&id, exec_request(params)?)
                .await
                .map(|out| json!(WireOutput::from(&out)))
        }
        method::WRITE_FILE => {
            let id = id_param(params, "id")?;
            let data = wire::unb64("params.data", str_param(params, "data")?)?;
            done(provider.write_file(&id, &path()?, data).await)
        }
        method::READ_FILE => {
            let id = id_param(params, "id")?;
            let max = params
                .get("max_bytes")
                .and_then(Value::as_u64)
                .ok_or_else(|| WireError::new("params.max_bytes", "is missing or not a count"))?;
            provider
                .read_file(&id, &path()?, max)
                .await
                .map(|data| json!({"data": b64(&data)}))
        }
        method::LIST_DIR => {
            let id = id_param(params, "id")?;
            provider.list_dir(&id, &path()?).await.map(|entries| {
                let wire: Vec<WireFileInfo> = entries.iter().map(WireFileInfo::from).collect();
                json!({"entries": wire})
            })
        }
        method::STAT => {
            let id = id_param(params, "id")?;
            provider
                .stat(&id, &path()?)
                .await
                .map(|info| json!({"file": WireFileInfo::from(&info)}))
        }
        method::MKDIR => {
            let id = id_param(params, "id")?;
            done(provider.mkdir(&id, &path()?).await)
        }
        method::STOP => sandbox(provider.stop(&id_param(params, "id")?).await),
        method::START => sandbox(provider.start(&id_param(params, "id")?).await),
        method::PAUSE => sandbox(provider.pause(&id_param(params, "id")?).await),
        method::RESUME => sandbox(provider.resume(&id_param(params, "id")?).await),
        method::SNAPSHOT => {
            let id = id_param(params, "id")?;
            let kind: SnapshotKind = decode(
                "params.kind",
                params.get("kind").cloned().unwrap_or(Value::Null),
            )?;
            provider
                .snapshot(&id, kind)
                .await
                .map(|s| json!({"snapshot": WireSnapshot::from(&s)}))
        }
        method::FORK => {
            let source = id_param(params, "source")?;
            sandbox(provider.fork(&source, id_param(params, "id")?).await)
        }
        method::EXPOSE_PORT => {
            let id = id_param(params, "id")?;
            let port = params
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| WireError::new("params.port", "is missing or not a port"))?;
            provider
                .expose_port(&id, port)
                .await
                .map(|url| json!({"url": url}))
        }
        method::SET_TTL => {
            let id = id_param(params, "id")?;
            let ttl = match params.get("ttl_ms") {
                None | Some(Value::Null) => None,
                Some(v) => Some(Duration::from_millis(v.as_u64().ok_or_else(|| {
                    WireError::new("params.ttl_ms", "is not a count of milliseconds")
                })?)),
            };
            sandbox(provider.set_ttl(&id, ttl).await)
        }
        _ => return Err(Bad::Method),
    })
}

/// Answers request `request_id`, `exec_stream`: starts the command, registers its session,
/// sends the answer, and only then forwards its events.
async fn exec_stream(
    provider: Arc<dyn Provider>,
    sessions: &Sessions,
    outgoing: &mpsc::UnboundedSender<String>,
    request_id: Value,
    params: Value,
) {
    match start_session(provider, sessions, params).await {
        Ok((session, exec)) => {
            let _ = outgoing.send(message::response(request_id, Ok(json!({}))));
            let task = tokio::spawn(forward(
                exec,
                session.clone(),
                outgoing.clone(),
                sessions.clone(),
            ));
            if let Ok(mut open) = sessions.lock()
                && let Some(control) = open.get_mut(&session)
            {
                control.forwarder = Some(task.abort_handle());
            }
        }
        Err(error) => {
            let _ = outgoing.send(message::response(request_id, Err(error)));
        }
    }
}

/// Starts the command of an `exec_stream` request and registers its session.
async fn start_session(
    provider: Arc<dyn Provider>,
    sessions: &Sessions,
    params: Value,
) -> Result<(String, ExecSession), RpcError> {
    let parsed = (|| {
        Ok::<_, WireError>((
            id_param(&params, "id")?,
            exec_request(&params)?,
            str_param(&params, "session")?.to_owned(),
        ))
    })();
    let (id, request, session) = parsed.map_err(|e| bad_params(&e))?;
    let mut exec = provider
        .exec_stream(&id, request)
        .await
        .map_err(|e| RpcError::from(&e))?;
    let stdin = exec.take_stdin().map(|handle| {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(feed_stdin(handle, rx));
        tx
    });
    {
        let mut open = sessions.lock().map_err(|_| {
            RpcError::from(&Error::internal("the session table's lock is poisoned"))
        })?;
        if open.contains_key(&session) {
            return Err(bad_params(&WireError::new(
                "params.session",
                "names a session that is already open",
            )));
        }
        open.insert(
            session.clone(),
            SessionControl {
                stdin,
                forwarder: None,
            },
        );
    }
    Ok((session, exec))
}

/// Forwards a session's events as notifications, then forgets the session.
async fn forward(
    mut exec: ExecSession,
    name: String,
    out: mpsc::UnboundedSender<String>,
    table: Sessions,
) {
    while let Some(item) = exec.next_event().await {
        let (method, params) = match item {
            Ok(ExecEvent::Stdout(data)) => (
                notification::OUTPUT,
                json!({"session": name, "stream": "stdout", "data": b64(&data)}),
            ),
            Ok(ExecEvent::Stderr(data)) => (
                notification::OUTPUT,
                json!({"session": name, "stream": "stderr", "data": b64(&data)}),
            ),
            Ok(ExecEvent::Exit(exit_code)) => (
                notification::EXIT,
                json!({"session": name, "exit_code": exit_code}),
            ),
            Err(error) => (
                notification::ERROR,
                json!({"session": name, "error": RpcError::from(&error)}),
            ),
        };
        if out.send(message::notification(method, params)).is_err() {
            break;
        }
    }
    if let Ok(mut open) = table.lock() {
        open.remove(&name);
    }
}

/// Feeds a session's stdin from the runner's notifications; dropping the handle at the end
/// ends the input.
async fn feed_stdin(mut handle: StdinHandle, mut ops: mpsc::UnboundedReceiver<StdinOp>) {
    while let Some(op) = ops.recv().await {
        match op {
            StdinOp::Data(data) => {
                if handle.send(data).await.is_err() {
                    return;
                }
            }
            StdinOp::Close => {
                let _ = handle.close().await;
                return;
            }
        }
    }
}

/// Handles a runner notification of a session: stdin, end of stdin, cancel.
fn session_notification(sessions: &Sessions, method: &str, params: &Value) {
    let Some(session) = params.get("session").and_then(Value::as_str) else {
        return;
    };
    let Ok(mut open) = sessions.lock() else {
        return;
    };
    match method {
        notification::STDIN => {
            let data = params
                .get("data")
                .and_then(Value::as_str)
                .and_then(|d| wire::unb64("data", d).ok());
            if let (Some(data), Some(control)) = (data, open.get(session))
                && let Some(stdin) = &control.stdin
            {
                let _ = stdin.send(StdinOp::Data(data));
            }
        }
        notification::CLOSE_STDIN => {
            if let Some(control) = open.get_mut(session)
                && let Some(stdin) = control.stdin.take()
            {
                let _ = stdin.send(StdinOp::Close);
            }
        }
        notification::CANCEL => {
            if let Some(control) = open.remove(session)
                && let Some(task) = control.forwarder
            {
                task.abort();
            }
        }
        _ => {}
    }
}
