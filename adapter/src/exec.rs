//! `pods/exec` over WebSocket: the channel framing of `v5.channel.k8s.io` and
//! `v4.channel.k8s.io` as pure functions, the command line the adapter builds (env through
//! `env`, cwd through `sh`, timeouts through `timeout`), and a session that streams stdout and
//! stderr as they arrive and sends stdin.
//!
//! The client offers v5 then v4 and adapts to the server's choice. Only v5 can close stdin
//! (the `[255, 0]` message), so stdin needs v5; without stdin both work.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use hyper_util::rt::TokioIo;
use sandbox_contract::{
    EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_TIMEOUT, Error, ErrorCode, ExecEvent, ExecRequest,
    ExecSession, StdinSink,
};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

use crate::client::{KubeClient, UpgradeConnection, read_body, status_error};

/// The stdin channel.
pub(crate) const STDIN: u8 = 0;
/// The stdout channel.
pub(crate) const STDOUT: u8 = 1;
/// The stderr channel.
pub(crate) const STDERR: u8 = 2;
/// The error (status) channel.
pub(crate) const ERROR: u8 = 3;
/// v5's CLOSE pseudo-channel: `[255, ch]` half-closes `ch`.
pub(crate) const CLOSE: u8 = 255;

/// The subprotocols offered, most preferred first.
pub(crate) const OFFER: &str = "v5.channel.k8s.io, v4.channel.k8s.io";

/// The largest stdin payload sent in one message.
const STDIN_CHUNK: usize = 32 * 1024;

/// How long to wait for the server's Close after the exit status arrived.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// How much longer than a request's timeout the client waits before answering 124 itself.
const TIMEOUT_GRACE: Duration = Duration::from_secs(10);

/// The exec subprotocol the server chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// `v5.channel.k8s.io`: v4 plus CLOSE.
    V5,
    /// `v4.channel.k8s.io`: binary channels and a JSON Status, no half-close.
    V4,
}

impl Protocol {
    /// Returns the subprotocol's name.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Protocol::V5 => "v5.channel.k8s.io",
            Protocol::V4 => "v4.channel.k8s.io",
        }
    }

    /// Reads the server's `Sec-WebSocket-Protocol` answer.
    pub(crate) fn from_header(value: &str) -> Option<Self> {
        match value.trim() {
            "v5.channel.k8s.io" => Some(Protocol::V5),
            "v4.channel.k8s.io" => Some(Protocol::V4),
            _ => None,
        }
    }

    /// Returns whether stdin can be closed (v5 only).
    pub(crate) const fn can_close_stdin(self) -> bool {
        matches!(self, Protocol::V5)
    }
}

/// The error for stdin against a server that chose a protocol without half-close.
pub(crate) fn stdin_unsupported(protocol: Protocol) -> Error {
    Error::new(
        ErrorCode::UnsupportedOperation,
        format!(
            "`stdin` is not supported by this API server: it chose {} for pods/exec, which cannot \
             close stdin; stdin needs v5.channel.k8s.io (Kubernetes 1.30 or later)",
            protocol.as_str()
        ),
    )
}

/// Encodes a data message on `channel`.
pub(crate) fn encode_data(channel: u8, payload: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(payload.len() + 1);
    message.push(channel);
    message.extend_from_slice(payload);
    message
}

/// Encodes v5's CLOSE of `channel`.
pub(crate) fn encode_close(channel: u8) -> [u8; 2] {
    [CLOSE, channel]
}

/// One decoded message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// Data on a channel (possibly empty, as the server's first message is).
    Data {
        /// The channel.
        channel: u8,
        /// The payload.
        payload: &'a [u8],
    },
    /// v5 CLOSE of a channel.
    Close {
        /// The closed channel.
        channel: u8,
    },
    /// A message with no channel byte.
    Empty,
    /// A CLOSE message that is not exactly two bytes.
    Malformed,
}

/// Decodes one binary message.
pub(crate) fn decode(message: &[u8]) -> Frame<'_> {
    match message {
        [] => Frame::Empty,
        [CLOSE, channel] => Frame::Close { channel: *channel },
        [CLOSE, ..] => Frame::Malformed,
        [channel, payload @ ..] => Frame::Data {
            channel: *channel,
            payload,
        },
    }
}

/// What the status on the error channel says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExitStatus {
    /// The command ran and exited with this code.
    Code(i32),
    /// The command could not be run; the server's message.
    Failure(String),
}

/// Parses the `metav1.Status` of the error channel.
pub(crate) fn parse_status(payload: &[u8]) -> Result<ExitStatus, String> {
    let status: serde_json::Value =
        serde_json::from_slice(payload).map_err(|_| "the exec status is not JSON".to_owned())?;
    let text = |key: &str| status.get(key).and_then(serde_json::Value::as_str);
    match text("status") {
        Some("Success") => Ok(ExitStatus::Code(0)),
        Some("Failure") => {
            let message = text("message").unwrap_or("").to_owned();
            if text("reason") == Some("NonZeroExitCode") {
                let code = status
                    .pointer("/details/causes")
                    .and_then(serde_json::Value::as_array)
                    .and_then(|causes| {
                        causes.iter().find(|c| {
                            c.get("reason").and_then(serde_json::Value::as_str) == Some("ExitCode")
                        })
                    })
                    .and_then(|c| c.get("message"))
                    .and_then(serde_json::Value::as_str)
                    .and_then(|m| m.trim().parse::<u8>().ok());
                return match code {
                    Some(code) => Ok(ExitStatus::Code(i32::from(code))),
                    None => Err("a NonZeroExitCode status without its exit code".to_owned()),
                };
            }
            Ok(ExitStatus::Failure(message))
        }
        _ => Err("the exec status is neither Success nor Failure".to_owned()),
    }
}

/// Reads a runtime failure (the command could not be started) as the shell's exit code: 127
/// when the program does not exist, 126 when it cannot be executed.
pub(crate) fn exit_from_failure(message: &str) -> Option<i32> {
    let lower = message.to_ascii_lowercase();
    if lower.contains("executable file not found") || lower.contains("no such file or directory") {
        Some(EXIT_NOT_FOUND)
    } else if lower.contains("permission denied") || lower.contains("not executable") {
        Some(EXIT_NOT_EXECUTABLE)
    } else {
        None
    }
}

/// The script that changes directory and then runs its arguments.
const CD_SCRIPT: &str = "cd \"$1\" || exit; shift; exec \"$@\"";

/// Formats a duration for `timeout(1)`: whole seconds, or seconds with a fraction.
pub(crate) fn timeout_arg(duration: Duration) -> String {
    let millis = duration.as_millis().max(1);
    let (secs, frac) = (millis / 1000, millis % 1000);
    if frac == 0 {
        secs.to_string()
    } else {
        format!("{secs}.{frac:03}").trim_end_matches('0').to_owned()
    }
}

/// Builds the argv run in the container: `timeout`, then `env`, then `sh` for the cwd, then the
/// request's argv, each only when the request needs it.
pub(crate) fn command_line(request: &ExecRequest) -> Vec<String> {
    let mut argv = Vec::with_capacity(request.argv.len() + request.env.len() + 8);
    if let Some(timeout) = request.timeout {
        argv.push("timeout".to_owned());
        argv.push(timeout_arg(timeout));
    }
    if !request.env.is_empty() {
        argv.push("env".to_owned());
        argv.extend(request.env.iter().map(|(k, v)| format!("{k}={v}")));
    }
    if let Some(cwd) = &request.cwd {
        argv.extend(
            ["/bin/sh", "-c", CD_SCRIPT, "sh", cwd.as_str()]
                .into_iter()
                .map(str::to_owned),
        );
    }
    argv.extend(request.argv.iter().cloned());
    argv
}

/// Builds the query of an exec request.
pub(crate) fn exec_query(command: &[String], container: Option<&str>, stdin: bool) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for arg in command {
        query.append_pair("command", arg);
    }
    if let Some(container) = container {
        query.append_pair("container", container);
    }
    if stdin {
        query.append_pair("stdin", "true");
    }
    query.append_pair("stdout", "true");
    query.append_pair("stderr", "true");
    query.finish()
}

/// Where a command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The pod's namespace.
    pub(crate) namespace: String,
    /// The pod.
    pub(crate) pod: String,
    /// The container, when the pod may have several.
    pub(crate) container: Option<String>,
}

/// The WebSocket of one exec.
pub(crate) type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Why an exec could not be started, before the WebSocket was open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// The server answered with an error status.
    Status {
        /// The HTTP status.
        code: u16,
        /// The contract error it maps to.
        error: Error,
    },
    /// Anything else.
    Other(Error),
}

impl From<OpenError> for Error {
    fn from(error: OpenError) -> Self {
        match error {
            OpenError::Status { error, .. } | OpenError::Other(error) => error,
        }
    }
}

/// Opens the exec WebSocket for `command` in `target` and returns it with the chosen protocol.
pub(crate) async fn open(
    client: &KubeClient,
    connection: UpgradeConnection,
    target: &Target,
    command: &[String],
    stdin: bool,
) -> Result<(Socket, Protocol), OpenError> {
    let path = format!(
        "/api/v1/namespaces/{}/pods/{}/exec?{}",
        target.namespace,
        target.pod,
        exec_query(command, target.container.as_deref(), stdin)
    );
    let key = generate_key();
    let mut headers = HeaderMap::new();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(
        header::SEC_WEBSOCKET_VERSION,
        HeaderValue::from_static("13"),
    );
    headers.insert(
        header::SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(OFFER),
    );
    headers.insert(
        header::SEC_WEBSOCKET_KEY,
        HeaderValue::from_str(&key).map_err(|_| OpenError::Other(Error::internal("bad key")))?,
    );
    tracing::debug!(
        namespace = %target.namespace,
        pod = %target.pod,
        args = command.len(),
        "pods/exec"
    );
    let response = client
        .send_upgrade(connection, &path, &headers)
        .await
        .map_err(|e| OpenError::Other(e.into()))?;
    let status = response.status();
    if status != StatusCode::SWITCHING_PROTOCOLS {
        let headers = response.headers().clone();
        let body = read_body(response.into_body()).await.unwrap_or_default();
        let error = match status_error(status, &headers, &body) {
            crate::client::KubeError::Api {
                code: 403, message, ..
            } if body.is_empty() => Error::permission_denied(format!(
                "pods/exec in namespace {} was refused (403) ({message}); the server may have \
                 accepted none of the offered subprotocols ({OFFER})",
                target.namespace
            )),
            other => other.into(),
        };
        return Err(OpenError::Status {
            code: status.as_u16(),
            error,
        });
    }
    let accept = response
        .headers()
        .get(header::SEC_WEBSOCKET_ACCEPT)
        .and_then(|v| v.to_str().ok());
    if accept != Some(derive_accept_key(key.as_bytes()).as_str()) {
        return Err(OpenError::Other(Error::internal(
            "the API server's WebSocket handshake answer does not match the request",
        )));
    }
    let chosen = response
        .headers()
        .get(header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let protocol = Protocol::from_header(chosen).ok_or_else(|| {
        OpenError::Other(Error::internal(format!(
            "the API server chose the exec subprotocol `{}`, not one of {OFFER}",
            crate::client::cut(chosen, 64)
        )))
    })?;
    let upgraded = hyper::upgrade::on(response).await.map_err(|e| {
        OpenError::Other(Error::unavailable(format!(
            "the exec connection could not be upgraded: {e}"
        )))
    })?;
    let socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Client, None).await;
    Ok((socket, protocol))
}

/// What goes to the command's stdin.
#[derive(Debug)]
pub(crate) enum StdinPlan {
    /// No stdin.
    None,
    /// These bytes, then end of input.
    Bytes(Bytes),
    /// Sent through a [`StdinHandle`](sandbox_contract::StdinHandle).
    Streamed,
}

/// A message for the writer task.
#[derive(Debug)]
enum StdinCommand {
    /// Data for stdin.
    Data(Bytes),
    /// End of input.
    Close,
}

/// The stdin sink of a streamed session: hands data to the writer task.
struct ChannelSink(mpsc::Sender<StdinCommand>);

#[async_trait::async_trait]
impl StdinSink for ChannelSink {
    async fn send(&mut self, data: Bytes) -> Result<(), Error> {
        self.0
            .send(StdinCommand::Data(data))
            .await
            .map_err(|_| Error::invalid_state("the command has already exited"))
    }

    async fn close(&mut self) -> Result<(), Error> {
        // A writer that is gone has nothing left to close.
        let _ = self.0.send(StdinCommand::Close).await;
        Ok(())
    }
}

/// The events of a session, read from the reader task's channel.
struct Events(mpsc::Receiver<Result<ExecEvent, Error>>);

impl futures_core::Stream for Events {
    type Item = Result<ExecEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// Starts the reader and writer tasks of an open exec and returns its session.
///
/// `timeout` is the request's timeout: if the server has not finished `TIMEOUT_GRACE` after
/// it, the session ends with exit 124 itself.
pub(crate) fn session(
    socket: Socket,
    protocol: Protocol,
    stdin: StdinPlan,
    timeout: Option<Duration>,
) -> ExecSession {
    let (mut sink, stream) = socket.split();
    let (events_tx, events_rx) = mpsc::channel(16);
    let (stdin_tx, mut stdin_rx) = mpsc::channel::<StdinCommand>(4);
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<()>();
    let has_stdin = !matches!(stdin, StdinPlan::None);
    let handle = match stdin {
        StdinPlan::None => None,
        StdinPlan::Bytes(data) => {
            tokio::spawn(async move {
                for chunk in data.chunks(STDIN_CHUNK) {
                    let chunk = Bytes::copy_from_slice(chunk);
                    if stdin_tx.send(StdinCommand::Data(chunk)).await.is_err() {
                        return;
                    }
                }
                let _ = stdin_tx.send(StdinCommand::Close).await;
            });
            None
        }
        StdinPlan::Streamed => Some(ChannelSink(stdin_tx)),
    };
    if has_stdin {
        tokio::spawn(async move {
            loop {
                let command = tokio::select! {
                    command = stdin_rx.recv() => command,
                    _ = &mut done_rx => return,
                };
                match command {
                    Some(StdinCommand::Data(data)) => {
                        let message = Message::Binary(Bytes::from(encode_data(STDIN, &data)));
                        if sink.send(message).await.is_err() {
                            return;
                        }
                    }
                    // End of input, said or implied by a dropped handle.
                    Some(StdinCommand::Close) | None => {
                        if protocol.can_close_stdin() {
                            let close = Bytes::copy_from_slice(&encode_close(STDIN));
                            let _ = sink.send(Message::Binary(close)).await;
                        }
                        return;
                    }
                }
            }
        });
    }
    tokio::spawn(read_events(stream, events_tx, timeout, done_tx));
    let session = ExecSession::new(Events(events_rx));
    match handle {
        Some(sink) => session.with_stdin(sink),
        None => session,
    }
}

/// Reads the server's messages until it closes, sending stdout and stderr as events and the exit
/// status last.
async fn read_events(
    mut stream: futures_util::stream::SplitStream<Socket>,
    events: mpsc::Sender<Result<ExecEvent, Error>>,
    timeout: Option<Duration>,
    done: tokio::sync::oneshot::Sender<()>,
) {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t + TIMEOUT_GRACE);
    let mut status: Option<Result<ExitStatus, String>> = None;
    let mut failure: Option<Error> = None;
    loop {
        let wait = match (&status, deadline) {
            (Some(_), _) => Some(tokio::time::Instant::now() + CLOSE_GRACE),
            (None, Some(deadline)) => Some(deadline),
            (None, None) => None,
        };
        let next = match wait {
            Some(at) => match tokio::time::timeout_at(at, stream.next()).await {
                Ok(next) => next,
                Err(_) if status.is_some() => break,
                Err(_) => {
                    tracing::debug!("exec outlived its timeout; answering 124");
                    status = Some(Ok(ExitStatus::Code(EXIT_TIMEOUT)));
                    break;
                }
            },
            None => stream.next().await,
        };
        let message = match next {
            None => break,
            Some(Err(e)) => {
                if status.is_none() {
                    failure = Some(Error::unavailable(format!(
                        "the exec connection broke before the exit code arrived: {e}"
                    )));
                }
                break;
            }
            Some(Ok(message)) => message,
        };
        let data = match message {
            Message::Binary(data) => data,
            Message::Close(_) => break,
            // Pings are answered by the socket itself while it is read; text frames are not
            // part of the binary protocols.
            Message::Ping(_) | Message::Pong(_) | Message::Text(_) | Message::Frame(_) => continue,
        };
        match decode(&data) {
            Frame::Data {
                channel: STDOUT,
                payload,
            } if !payload.is_empty() => {
                let chunk = data.slice(data.len() - payload.len()..);
                if events.send(Ok(ExecEvent::Stdout(chunk))).await.is_err() {
                    return;
                }
            }
            Frame::Data {
                channel: STDERR,
                payload,
            } if !payload.is_empty() => {
                let chunk = data.slice(data.len() - payload.len()..);
                if events.send(Ok(ExecEvent::Stderr(chunk))).await.is_err() {
                    return;
                }
            }
            Frame::Data {
                channel: ERROR,
                payload,
            } if !payload.is_empty() && status.is_none() => {
                status = Some(parse_status(payload));
            }
            _ => {}
        }
    }
    let _ = done.send(());
    let last = match (status, failure) {
        (Some(Ok(ExitStatus::Code(code))), _) => Ok(ExecEvent::Exit(code)),
        (Some(Ok(ExitStatus::Failure(message))), _) => match exit_from_failure(&message) {
            Some(code) => Ok(ExecEvent::Exit(code)),
            None => Err(Error::internal(format!(
                "the command could not be run: {}",
                crate::client::cut(&message, 512)
            ))),
        },
        (Some(Err(why)), _) => Err(Error::internal(why)),
        (None, Some(error)) => Err(error),
        (None, None) => Err(Error::unavailable(
            "the exec stream ended before the command's exit code arrived",
        )),
    };
    let _ = events.send(last).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn data_messages_carry_the_channel_byte_first() {
        assert_eq!(encode_data(STDIN, b"hi"), [0, b'h', b'i']);
        assert_eq!(
            decode(&[1, b'o', b'k']),
            Frame::Data {
                channel: STDOUT,
                payload: b"ok"
            }
        );
    }

    #[test]
    fn the_servers_first_empty_message_decodes_as_empty_data() {
        assert_eq!(
            decode(&[1]),
            Frame::Data {
                channel: STDOUT,
                payload: b""
            }
        );
        assert_eq!(decode(&[]), Frame::Empty);
    }

    #[test]
    fn close_is_exactly_two_bytes() {
        assert_eq!(encode_close(STDIN), [255, 0]);
        assert_eq!(decode(&[255, 0]), Frame::Close { channel: 0 });
        assert_eq!(decode(&[255, 0, 1]), Frame::Malformed);
        assert_eq!(decode(&[255]), Frame::Malformed);
    }

    #[test]
    fn success_status_is_exit_zero() {
        assert_eq!(
            parse_status(br#"{"metadata":{},"status":"Success"}"#),
            Ok(ExitStatus::Code(0))
        );
    }

    #[test]
    fn non_zero_exit_status_gives_its_code() {
        let status = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
        assert_eq!(parse_status(status), Ok(ExitStatus::Code(3)));
    }

    #[test]
    fn non_zero_exit_without_details_is_an_error() {
        let status = br#"{"metadata":{},"status":"Failure","reason":"NonZeroExitCode"}"#;
        assert!(parse_status(status).is_err());
    }

    #[test]
    fn runtime_failures_map_to_127_and_126() {
        let missing = br#"{"metadata":{},"status":"Failure","message":"Internal error occurred: error executing command in container: failed to exec in container: OCI runtime exec failed: exec failed: unable to start container process: exec: \"nope\": executable file not found in $PATH: unknown","reason":"InternalError","details":{"causes":[{"message":"x"}]},"code":500}"#;
        let ExitStatus::Failure(message) = parse_status(missing).unwrap() else {
            panic!("not a failure");
        };
        assert_eq!(exit_from_failure(&message), Some(127));
        assert_eq!(
            exit_from_failure("exec: \"/tmp/x\": permission denied: unknown"),
            Some(126)
        );
        assert_eq!(exit_from_failure("container not running"), None);
    }

    #[test]
    fn command_line_wraps_only_what_the_request_needs() {
        assert_eq!(command_line(&ExecRequest::new(["ls", "-l"])), ["ls", "-l"]);
        let full = ExecRequest::new(["pwd"])
            .with_env("A", "1")
            .with_env("B", "two words")
            .with_cwd("/work dir")
            .with_timeout(Duration::from_millis(1500));
        assert_eq!(
            command_line(&full),
            [
                "timeout",
                "1.5",
                "env",
                "A=1",
                "B=two words",
                "/bin/sh",
                "-c",
                CD_SCRIPT,
                "sh",
                "/work dir",
                "pwd"
            ]
        );
    }

    #[test]
    fn timeout_arguments_are_whole_or_fractional_seconds() {
        assert_eq!(timeout_arg(Duration::from_secs(2)), "2");
        assert_eq!(timeout_arg(Duration::from_millis(250)), "0.25");
        assert_eq!(timeout_arg(Duration::from_micros(10)), "0.001");
    }

    #[test]
    fn exec_query_repeats_command_and_encodes_each_argument() {
        let query = exec_query(
            &["sh".into(), "-c".into(), "echo a&b=c".into()],
            Some("main"),
            true,
        );
        assert_eq!(
            query,
            "command=sh&command=-c&command=echo+a%26b%3Dc&container=main&stdin=true&stdout=true&stderr=true"
        );
        assert!(!exec_query(&["true".into()], None, false).contains("stdin"));
    }

    #[test]
    fn protocol_names_are_the_subprotocols() {
        for protocol in [Protocol::V5, Protocol::V4] {
            assert_eq!(Protocol::from_header(protocol.as_str()), Some(protocol));
        }
        assert_eq!(Protocol::from_header("channel.k8s.io"), None);
        assert!(Protocol::V5.can_close_stdin());
        assert!(!Protocol::V4.can_close_stdin());
        let error = stdin_unsupported(Protocol::V4);
        assert!(error.is_unsupported());
        assert!(error.message().contains("v4.channel.k8s.io"), "{error}");
    }

    proptest! {
        #[test]
        fn data_frames_round_trip(channel in 0u8..255, payload in proptest::collection::vec(any::<u8>(), 0..512)) {
            let message = encode_data(channel, &payload);
            prop_assert_eq!(decode(&message), Frame::Data { channel, payload: &payload });
        }

        #[test]
        fn close_frames_round_trip(channel in any::<u8>()) {
            let message = encode_close(channel);
            prop_assert_eq!(decode(&message), Frame::Close { channel });
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(message in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&message);
        }

        #[test]
        fn status_parsing_never_panics(payload in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = parse_status(&payload);
        }

        #[test]
        fn exit_codes_round_trip_through_the_status(code in 1u8..=255) {
            let status = serde_json::json!({
                "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                "message": format!("command terminated with non-zero exit code: {code}"),
                "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}
            });
            let bytes = serde_json::to_vec(&status).unwrap();
            prop_assert_eq!(parse_status(&bytes), Ok(ExitStatus::Code(i32::from(code))));
        }

        #[test]
        fn command_line_ends_with_the_requested_argv(argv in proptest::collection::vec("[a-z =$\"']{1,8}", 1..5), secs in 1u64..100) {
            let request = ExecRequest::new(argv.clone()).with_timeout(Duration::from_secs(secs)).with_cwd("/w");
            let line = command_line(&request);
            prop_assert!(line.ends_with(&argv));
            prop_assert_eq!(&line[..2], &["timeout".to_owned(), secs.to_string()]);
        }
    }
}
