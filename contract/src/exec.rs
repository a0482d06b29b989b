//! Running commands: [`ExecRequest`], the run-to-completion [`ExecOutput`], and the streaming
//! [`ExecSession`] with its [`ExecEvent`]s and [`StdinHandle`].
//!
//! # Exit codes are data
//!
//! A command that runs and fails is not an error: its non-zero exit code comes back in
//! [`ExecOutput::exit_code`] or [`ExecEvent::Exit`]. Three codes are fixed, as a POSIX shell
//! gives them: [`EXIT_TIMEOUT`] (124) when the request's timeout ended the command,
//! [`EXIT_NOT_EXECUTABLE`] (126) when `argv[0]` exists but cannot be run, and [`EXIT_NOT_FOUND`]
//! (127) when it does not exist. Errors are for what prevented running or watching the
//! command: the sandbox is missing (`not_found`) or stopped (`invalid_state`), the connection
//! dropped (`unavailable`).
//!
//! # Streaming
//!
//! An [`ExecSession`] yields `Result<ExecEvent, Error>` items: stdout and stderr chunks,
//! separately and as they arrive, then exactly one terminal item, either [`ExecEvent::Exit`] or an
//! `Err`, after which it yields nothing more. The session enforces this whatever the provider's
//! stream does: empty chunks are dropped, the provider's stream is dropped after its first
//! terminal item, and a provider stream that ends without an exit becomes an `unavailable` error,
//! never a made-up exit code.
//!
//! # Implementing a session
//!
//! The contract depends on no runtime. A provider builds a session from any
//! [`futures_core::Stream`] of events ([`ExecSession::new`]) and, for `stdin`, any
//! [`StdinSink`] ([`ExecSession::with_stdin`]). Over a WebSocket the stream decodes frames and the
//! sink encodes them; in memory, the stream can wrap a channel receiver (`poll_recv`) and the sink
//! a channel sender whose drop the command sees as end of input. Providers that only have the
//! finished result can use [`ExecSession::from_output`].

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_core::Stream;

use crate::error::Error;
use crate::sandbox::{RedactedEnv, validate_env};

/// Exit code of a command that the request's timeout ended.
pub const EXIT_TIMEOUT: i32 = 124;

/// Exit code of a command whose program exists but cannot be executed.
pub const EXIT_NOT_EXECUTABLE: i32 = 126;

/// Exit code of a command whose program does not exist.
pub const EXIT_NOT_FOUND: i32 = 127;

/// Where a command's standard input comes from.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Stdin {
    /// No input: the command sees end of input at once.
    #[default]
    Empty,
    /// These bytes, then end of input. Needs the `stdin` capability.
    Bytes(Bytes),
    /// Input sent through the session's [`StdinHandle`] until it is closed or dropped. Only for
    /// [`Provider::exec_stream`](crate::Provider::exec_stream) (exec answers `invalid_request`);
    /// needs the `stdin` capability.
    Streamed,
}

impl fmt::Debug for Stdin {
    /// Prints the input's length, not its content, which may hold a credential.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stdin::Empty => f.write_str("Empty"),
            Stdin::Bytes(bytes) => write!(f, "Bytes(<{} bytes>)", bytes.len()),
            Stdin::Streamed => f.write_str("Streamed"),
        }
    }
}

/// A command to run in a sandbox.
///
/// `Debug` prints the program and how many arguments follow, the environment's names and the
/// stdin's length, but no argument, value or input, since any of them may hold a credential.
#[derive(Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The program and its arguments, run directly (no shell): `["sh", "-c", "echo hi"]`. The
    /// program is looked up in `PATH` when it has no `/`.
    pub argv: Vec<String>,
    /// Environment variables added for this command, on top of the sandbox's. Names follow
    /// [`validate_env`].
    pub env: BTreeMap<String, String>,
    /// The absolute directory to run in, or `None` for the sandbox's default. If it does not
    /// exist the command does not run: the result is a non-zero exit or `not_found`, never a run
    /// somewhere else.
    pub cwd: Option<String>,
    /// How long the command may run; then it is ended and exits with [`EXIT_TIMEOUT`]. Output it
    /// wrote before is kept. `None` means no limit from the request.
    pub timeout: Option<Duration>,
    /// The command's standard input.
    pub stdin: Stdin,
}

impl ExecRequest {
    /// Returns a request to run `argv` with no extra env, the default directory, no timeout and
    /// empty input.
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ExecRequest {
            argv: argv.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
            timeout: None,
            stdin: Stdin::Empty,
        }
    }

    /// Adds one environment variable.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Sets the working directory.
    pub fn with_cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Gives the command these bytes as input, then end of input.
    pub fn with_stdin(mut self, input: impl Into<Bytes>) -> Self {
        self.stdin = Stdin::Bytes(input.into());
        self
    }

    /// Asks for input streamed through the session's [`StdinHandle`].
    pub fn with_streamed_stdin(mut self) -> Self {
        self.stdin = Stdin::Streamed;
        self
    }

    /// Checks the request's shape; answers `invalid_request` naming the first problem.
    ///
    /// `argv` must be non-empty with a non-empty program, and no argument may hold a NUL byte;
    /// env follows [`validate_env`]; `cwd` must be an absolute path
    /// without NUL; a timeout must not be zero. Whether `stdin` suits the method and the
    /// provider's capabilities is for the provider to check.
    pub fn validate(&self) -> Result<(), Error> {
        match self.argv.first() {
            None => return Err(Error::invalid_request("argv is empty")),
            Some(program) if program.is_empty() => {
                return Err(Error::invalid_request("argv[0] is empty"));
            }
            Some(_) => {}
        }
        if let Some(index) = self.argv.iter().position(|arg| arg.contains('\0')) {
            return Err(Error::invalid_request(format!(
                "argv[{index}] holds a NUL byte"
            )));
        }
        validate_env(&self.env)?;
        if let Some(cwd) = &self.cwd {
            if !cwd.starts_with('/') {
                return Err(Error::invalid_request("cwd is not an absolute path"));
            }
            if cwd.contains('\0') {
                return Err(Error::invalid_request("cwd holds a NUL byte"));
            }
        }
        if self.timeout == Some(Duration::ZERO) {
            return Err(Error::invalid_request("timeout must be positive"));
        }
        Ok(())
    }
}

impl fmt::Debug for ExecRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecRequest")
            .field("argv", &RedactedArgv(&self.argv))
            .field("env", &RedactedEnv(&self.env))
            .field("cwd", &self.cwd)
            .field("timeout", &self.timeout)
            .field("stdin", &self.stdin)
            .finish()
    }
}

/// Prints an argv as its program and a count of the arguments that follow.
struct RedactedArgv<'a>(&'a [String]);

impl fmt::Debug for RedactedArgv<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.split_first() {
            None => f.write_str("[]"),
            Some((program, [])) => write!(f, "[{program:?}]"),
            Some((program, rest)) => write!(f, "[{program:?}, <{} more>]", rest.len()),
        }
    }
}

/// The result of a command run to completion with [`Provider::exec`](crate::Provider::exec).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// The exit code: 0 for success, any other value as the command gave it (see the module
    /// docs for 124, 126 and 127). A command killed by signal `n` reports `128 + n`.
    pub exit_code: i32,
    /// Everything the command wrote to standard output.
    pub stdout: Bytes,
    /// Everything the command wrote to standard error.
    pub stderr: Bytes,
}

impl ExecOutput {
    /// Returns whether the exit code is 0.
    pub fn success(&self) -> bool {
        self.exit_code == 0
    }
}

/// One item of a streamed command's life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecEvent {
    /// A chunk the command wrote to standard output, never empty.
    Stdout(Bytes),
    /// A chunk the command wrote to standard error, never empty.
    Stderr(Bytes),
    /// The command exited with this code; always the last event.
    Exit(i32),
}

/// The provider's side of streamed standard input, wrapped by [`StdinHandle`].
///
/// Implementations forward bytes to the running command (a WebSocket channel, a pipe, a
/// channel sender). Dropping the sink must end the input as [`close`](StdinSink::close) does, so
/// that a caller who drops the handle never leaves a command waiting forever.
#[async_trait::async_trait]
pub trait StdinSink: Send {
    /// Sends `data` (never empty) to the command. Answers `invalid_state` if the command has
    /// exited, `unavailable` if the connection dropped.
    async fn send(&mut self, data: Bytes) -> Result<(), Error>;

    /// Ends the input: the command reads end of file once it has read what was sent. Called at
    /// most once.
    async fn close(&mut self) -> Result<(), Error>;
}

/// The caller's side of a command's streamed standard input.
///
/// Obtained from [`ExecSession::stdin`] or [`ExecSession::take_stdin`] when the request asked for
/// [`Stdin::Streamed`]. Dropping it ends the input.
pub struct StdinHandle {
    /// The provider's sink.
    sink: Box<dyn StdinSink>,
    /// Whether `close` has been called.
    closed: bool,
    /// Set by the session once it has yielded its terminal item.
    finished: Arc<AtomicBool>,
}

impl StdinHandle {
    /// Sends `data` to the command.
    ///
    /// Empty data is accepted and sends nothing. Answers `invalid_state` after
    /// [`close`](StdinHandle::close) and once the session has yielded its exit (or error).
    pub async fn send(&mut self, data: impl Into<Bytes>) -> Result<(), Error> {
        if self.closed {
            return Err(Error::invalid_state("stdin is already closed"));
        }
        if self.finished.load(Ordering::Acquire) {
            return Err(Error::invalid_state("the command has already exited"));
        }
        let data = data.into();
        if data.is_empty() {
            return Ok(());
        }
        self.sink.send(data).await
    }

    /// Ends the input. Closing twice, or after the command exited, is not an error.
    pub async fn close(&mut self) -> Result<(), Error> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        if self.finished.load(Ordering::Acquire) {
            return Ok(());
        }
        self.sink.close().await
    }

    /// Returns whether [`close`](StdinHandle::close) has been called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

impl fmt::Debug for StdinHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdinHandle")
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

/// The provider's stream of events, as a session holds it.
type EventStream = Pin<Box<dyn Stream<Item = Result<ExecEvent, Error>> + Send>>;

/// A running command, from [`Provider::exec_stream`](crate::Provider::exec_stream): its events
/// and, when asked for, its standard input.
///
/// Read events with [`next_event`](ExecSession::next_event) or as a [`Stream`]. The session
/// guarantees the rules in the [module docs](self): chunks are non-empty, exactly one terminal
/// item ([`ExecEvent::Exit`] or `Err`) comes last, and a provider stream that ends early becomes
/// an `unavailable` error. Dropping the session drops the connection; whether that ends the
/// command is up to the provider.
pub struct ExecSession {
    /// The provider's events, until the terminal item has been yielded.
    events: Option<EventStream>,
    /// The stdin handle, until taken.
    stdin: Option<StdinHandle>,
    /// Shared with the stdin handle: set once the terminal item has been yielded.
    finished: Arc<AtomicBool>,
}

impl ExecSession {
    /// Returns a session over a provider's event stream, without stdin.
    pub fn new<S>(events: S) -> Self
    where
        S: Stream<Item = Result<ExecEvent, Error>> + Send + 'static,
    {
        ExecSession {
            events: Some(Box::pin(events)),
            stdin: None,
            finished: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Adds the provider's stdin sink, for a request with [`Stdin::Streamed`].
    pub fn with_stdin<K>(mut self, sink: K) -> Self
    where
        K: StdinSink + 'static,
    {
        self.stdin = Some(StdinHandle {
            sink: Box::new(sink),
            closed: false,
            finished: Arc::clone(&self.finished),
        });
        self
    }

    /// Returns a session that replays `events`, for tests and providers that only have them all
    /// at once. The session's rules still apply (a list without an exit ends in an error).
    pub fn from_events<I>(events: I) -> Self
    where
        I: IntoIterator<Item = Result<ExecEvent, Error>>,
    {
        ExecSession::new(Replay(events.into_iter().collect()))
    }

    /// Returns a session that yields a finished command's stdout, then its stderr, then its exit.
    pub fn from_output(output: ExecOutput) -> Self {
        let ExecOutput {
            exit_code,
            stdout,
            stderr,
        } = output;
        ExecSession::from_events([
            Ok(ExecEvent::Stdout(stdout)),
            Ok(ExecEvent::Stderr(stderr)),
            Ok(ExecEvent::Exit(exit_code)),
        ])
    }

    /// Returns the stdin handle, if the session has one and it has not been taken.
    pub fn stdin(&mut self) -> Option<&mut StdinHandle> {
        self.stdin.as_mut()
    }

    /// Takes the stdin handle out, to write from another task while this one reads events.
    pub fn take_stdin(&mut self) -> Option<StdinHandle> {
        self.stdin.take()
    }

    /// Returns the next event, or `None` after the terminal item.
    pub async fn next_event(&mut self) -> Option<Result<ExecEvent, Error>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// Returns whether the terminal item has been yielded.
    pub fn is_finished(&self) -> bool {
        self.events.is_none()
    }

    /// Closes stdin if the session still holds it, then gathers the events into an
    /// [`ExecOutput`].
    ///
    /// An error from closing stdin is not returned: the events then report what happened. The
    /// terminal `Err`, if any, is returned.
    pub async fn wait_with_output(mut self) -> Result<ExecOutput, Error> {
        if let Some(mut stdin) = self.stdin.take() {
            // Ignored on purpose: a failed close shows up in the event stream.
            let _ = stdin.close().await;
        }
        let mut stdout = BytesMut::new();
        let mut stderr = BytesMut::new();
        while let Some(item) = self.next_event().await {
            match item? {
                ExecEvent::Stdout(chunk) => stdout.extend_from_slice(&chunk),
                ExecEvent::Stderr(chunk) => stderr.extend_from_slice(&chunk),
                ExecEvent::Exit(exit_code) => {
                    return Ok(ExecOutput {
                        exit_code,
                        stdout: stdout.freeze(),
                        stderr: stderr.freeze(),
                    });
                }
            }
        }
        Err(ended_without_exit())
    }

    /// Marks the session finished and drops the provider's stream.
    fn finish(&mut self) {
        self.events = None;
        self.finished.store(true, Ordering::Release);
    }
}

/// The error for a provider stream that ended before the command's exit.
fn ended_without_exit() -> Error {
    Error::unavailable("the exec stream ended before the command's exit code arrived")
}

impl Stream for ExecSession {
    type Item = Result<ExecEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            let Some(events) = this.events.as_mut() else {
                return Poll::Ready(None);
            };
            let item = match events.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(item) => item,
            };
            let item = match item {
                Some(Ok(ExecEvent::Stdout(chunk) | ExecEvent::Stderr(chunk)))
                    if chunk.is_empty() =>
                {
                    continue;
                }
                Some(Ok(event @ ExecEvent::Exit(_))) => {
                    this.finish();
                    Ok(event)
                }
                Some(Ok(event)) => Ok(event),
                Some(Err(error)) => {
                    this.finish();
                    Err(error)
                }
                None => {
                    this.finish();
                    Err(ended_without_exit())
                }
            };
            return Poll::Ready(Some(item));
        }
    }
}

impl fmt::Debug for ExecSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecSession")
            .field("finished", &self.is_finished())
            .field("stdin", &self.stdin)
            .finish_non_exhaustive()
    }
}

/// A stream over events known in advance.
struct Replay(VecDeque<Result<ExecEvent, Error>>);

impl Stream for Replay {
    type Item = Result<ExecEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::block_on;
    use std::sync::Mutex;

    /// What a recording sink saw.
    #[derive(Debug, Default, PartialEq)]
    struct Seen {
        sent: Vec<Bytes>,
        closes: usize,
    }

    /// A sink that records into shared state.
    struct RecordingSink(Arc<Mutex<Seen>>);

    #[async_trait::async_trait]
    impl StdinSink for RecordingSink {
        async fn send(&mut self, data: Bytes) -> Result<(), Error> {
            self.0.lock().unwrap().sent.push(data);
            Ok(())
        }

        async fn close(&mut self) -> Result<(), Error> {
            self.0.lock().unwrap().closes += 1;
            Ok(())
        }
    }

    fn out(text: &'static str) -> Result<ExecEvent, Error> {
        Ok(ExecEvent::Stdout(Bytes::from_static(text.as_bytes())))
    }

    fn err(text: &'static str) -> Result<ExecEvent, Error> {
        Ok(ExecEvent::Stderr(Bytes::from_static(text.as_bytes())))
    }

    fn drain(session: &mut ExecSession) -> Vec<Result<ExecEvent, Error>> {
        let mut items = Vec::new();
        while let Some(item) = block_on(session.next_event()) {
            items.push(item);
        }
        items
    }

    #[test]
    fn session_yields_chunks_in_order_then_one_exit() {
        let mut session =
            ExecSession::from_events([out("a"), err("b"), out("c"), Ok(ExecEvent::Exit(3))]);
        assert_eq!(
            drain(&mut session),
            [out("a"), err("b"), out("c"), Ok(ExecEvent::Exit(3))]
        );
        assert!(session.is_finished());
    }

    #[test]
    fn session_that_ends_without_exit_reports_unavailable_not_an_exit() {
        let mut session = ExecSession::from_events([out("partial")]);
        let items = drain(&mut session);
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(items[0], out("partial"));
        let error = items[1].clone().unwrap_err();
        assert!(error.is_unavailable(), "{error}");
    }

    #[test]
    fn session_ignores_events_after_the_exit() {
        let mut session =
            ExecSession::from_events([Ok(ExecEvent::Exit(0)), out("late"), Ok(ExecEvent::Exit(1))]);
        assert_eq!(drain(&mut session), [Ok(ExecEvent::Exit(0))]);
        assert_eq!(block_on(session.next_event()), None);
    }

    #[test]
    fn session_ends_after_a_provider_error() {
        let mut session = ExecSession::from_events([
            out("a"),
            Err(Error::unavailable("connection reset")),
            Ok(ExecEvent::Exit(0)),
        ]);
        assert_eq!(
            drain(&mut session),
            [out("a"), Err(Error::unavailable("connection reset"))]
        );
    }

    #[test]
    fn session_drops_empty_chunks() {
        let mut session =
            ExecSession::from_events([out(""), err(""), out("x"), Ok(ExecEvent::Exit(0))]);
        assert_eq!(drain(&mut session), [out("x"), Ok(ExecEvent::Exit(0))]);
    }

    #[test]
    fn wait_with_output_gathers_streams_separately() {
        let session = ExecSession::from_events([
            out("one "),
            err("warn"),
            out("two"),
            Ok(ExecEvent::Exit(7)),
        ]);
        assert_eq!(
            block_on(session.wait_with_output()),
            Ok(ExecOutput {
                exit_code: 7,
                stdout: Bytes::from_static(b"one two"),
                stderr: Bytes::from_static(b"warn"),
            })
        );
    }

    #[test]
    fn wait_with_output_returns_the_terminal_error() {
        let session = ExecSession::from_events([out("x")]);
        assert!(
            block_on(session.wait_with_output())
                .unwrap_err()
                .is_unavailable()
        );
    }

    #[test]
    fn from_output_round_trips_through_wait_with_output() {
        let output = ExecOutput {
            exit_code: 124,
            stdout: Bytes::from_static(b"out"),
            stderr: Bytes::new(),
        };
        let session = ExecSession::from_output(output.clone());
        assert_eq!(block_on(session.wait_with_output()), Ok(output));
    }

    #[test]
    fn stdin_send_and_close_reach_the_sink() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut session = ExecSession::from_events([Ok(ExecEvent::Exit(0))])
            .with_stdin(RecordingSink(Arc::clone(&seen)));
        let stdin = session.stdin().unwrap();
        block_on(stdin.send("hello")).unwrap();
        block_on(stdin.send(Bytes::new())).unwrap();
        block_on(stdin.close()).unwrap();
        block_on(stdin.close()).unwrap();
        assert!(stdin.is_closed());
        assert_eq!(
            *seen.lock().unwrap(),
            Seen {
                sent: vec![Bytes::from_static(b"hello")],
                closes: 1
            }
        );
    }

    #[test]
    fn stdin_send_after_close_is_invalid_state() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut session = ExecSession::from_events([Ok(ExecEvent::Exit(0))])
            .with_stdin(RecordingSink(Arc::clone(&seen)));
        let stdin = session.stdin().unwrap();
        block_on(stdin.close()).unwrap();
        assert!(block_on(stdin.send("late")).unwrap_err().is_invalid_state());
        assert!(seen.lock().unwrap().sent.is_empty());
    }

    #[test]
    fn stdin_send_after_exit_is_invalid_state() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut session = ExecSession::from_events([Ok(ExecEvent::Exit(0))])
            .with_stdin(RecordingSink(Arc::clone(&seen)));
        let mut stdin = session.take_stdin().unwrap();
        assert_eq!(drain(&mut session), [Ok(ExecEvent::Exit(0))]);
        assert!(block_on(stdin.send("late")).unwrap_err().is_invalid_state());
        assert_eq!(block_on(stdin.close()), Ok(()));
        assert_eq!(*seen.lock().unwrap(), Seen::default());
    }

    #[test]
    fn wait_with_output_closes_held_stdin_first() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let session = ExecSession::from_events([Ok(ExecEvent::Exit(0))])
            .with_stdin(RecordingSink(Arc::clone(&seen)));
        block_on(session.wait_with_output()).unwrap();
        assert_eq!(seen.lock().unwrap().closes, 1);
    }

    #[test]
    fn exec_request_validation_refuses_bad_shapes() {
        let bad = [
            ExecRequest::new(Vec::<String>::new()),
            ExecRequest::new([""]),
            ExecRequest::new(["echo", "a\0b"]),
            ExecRequest::new(["true"]).with_env("9X", "v"),
            ExecRequest::new(["true"]).with_cwd("relative/dir"),
            ExecRequest::new(["true"]).with_cwd("/a\0b"),
            ExecRequest::new(["true"]).with_timeout(Duration::ZERO),
        ];
        for request in bad {
            let error = request.validate().unwrap_err();
            assert!(error.is_invalid_request(), "{request:?}: {error}");
        }
        let good = ExecRequest::new(["sh", "-c", "echo $X"])
            .with_env("X", "1")
            .with_cwd("/tmp")
            .with_timeout(Duration::from_secs(1))
            .with_stdin("input");
        assert_eq!(good.validate(), Ok(()));
    }

    #[test]
    fn exec_request_debug_hides_arguments_env_values_and_input() {
        let request = ExecRequest::new(["curl", "-H", "Authorization: Bearer s3cr3t"])
            .with_env("TOKEN", "s3cr3t")
            .with_stdin("s3cr3t");
        let debug = format!("{request:?}");
        assert!(!debug.contains("s3cr3t"), "{debug}");
        assert!(debug.contains("\"curl\", <2 more>"), "{debug}");
        assert!(debug.contains("TOKEN"), "{debug}");
        assert!(debug.contains("<6 bytes>"), "{debug}");
    }

    #[test]
    fn exit_code_constants_are_the_shell_codes() {
        assert_eq!(
            (EXIT_TIMEOUT, EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND),
            (124, 126, 127)
        );
        assert!(
            !ExecOutput {
                exit_code: EXIT_TIMEOUT,
                ..ExecOutput::default()
            }
            .success()
        );
        assert!(ExecOutput::default().success());
    }
}
