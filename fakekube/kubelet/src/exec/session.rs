//! One exec session, whatever carries it: the process's output, the client's stdin, resize
//! and end of input, then exactly one status on the error channel, the transport's end, and a
//! bounded wait for the client to go.
//!
//! A [`Transport`] (WebSocket or SPDY, in [`super::transport`]) starts two tasks on its
//! connection: a reader that delivers what the client sends to a [`FromClient`] (reading at
//! all times, so keep-alives are answered even while output is blocked; stdin is a bounded
//! channel, so a process that does not read its stdin eventually stops the reader, as a full
//! pipe stops the kubelet's copy), and a writer that sends what the session produces, as
//! [`Out`] items, in order. The session itself pumps the process's bounded stdout and stderr
//! channels into the writer, so a slow client slows the process.

use super::codec::{self, ResizeDecoder, StatusStyle, TermSize};
use bytes::Bytes;
use fakekube_runtime::{ExecIo, ExitStatus, WindowSize};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Chunks of stdout (or stderr) buffered between the process and the connection.
const OUTPUT_CHUNKS: usize = 8;
/// Chunks of stdin buffered between the connection and the process.
const STDIN_CHUNKS: usize = 16;
/// Items queued for a transport's writer.
pub const WRITER_ITEMS: usize = 8;
/// The most resize events a session remembers (for its report).
const SIZES_KEPT: usize = 64;
/// How long a tty session that is done waits for the client's first resize before closing.
/// kubectl sends the terminal size as soon as it connects; a Close that overtakes it makes
/// kubectl log `"Unhandled Error" err="websocket: close sent"` for that resize.
const FIRST_RESIZE_WAIT: Duration = Duration::from_millis(250);

/// Which streams the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Streams {
    /// `stdin=true`.
    pub stdin: bool,
    /// `stdout=true`.
    pub stdout: bool,
    /// `stderr=true` (already false when `tty` is set, as the kubelet does).
    pub stderr: bool,
    /// `tty=true`: the process runs on a terminal (the runtime's: echo, line editing, stderr
    /// merged into stdout, `\n` written as `\r\n`), sized by the resize channel.
    pub tty: bool,
}

/// How one session runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// How the status is written on the error channel.
    pub status: StatusStyle,
    /// The streams asked for.
    pub streams: Streams,
    /// The command, for the kubelet-worded exit message.
    pub argv: Vec<String>,
    /// The exec id containerd would have used, for the cannot-start message.
    pub exec_id: String,
    /// A pause after the transport started, before any frame (kubectl ≤ 1.32's WebSocket
    /// race drops early frames, the initial empty one included).
    pub early_frame_delay: Duration,
    /// The fault, read at every output chunk so that switching it on also cuts sessions already
    /// running: after this many output bytes, drop the connection without status or end.
    pub drop_after_bytes: DropAfter,
    /// How long to wait for the client to go after the transport's end.
    pub close_wait: Duration,
    /// Fired by the session when the client goes away; the process must end when it fires.
    pub cancel: CancellationToken,
}

/// Reads the `drop_exec_after_bytes` fault as it is now.
#[derive(Clone)]
pub struct DropAfter(pub std::sync::Arc<dyn Fn() -> Option<usize> + Send + Sync>);

impl DropAfter {
    /// A fault that never fires.
    #[cfg(test)]
    pub fn never() -> Self {
        DropAfter(std::sync::Arc::new(|| None))
    }

    /// The current limit, if the fault is on.
    fn limit(&self) -> Option<usize> {
        (self.0)()
    }
}

impl std::fmt::Debug for DropAfter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DropAfter").field(&self.limit()).finish()
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The status and the transport's end were sent.
    Completed,
    /// The client went away first (the connection closed or a write failed); the process was
    /// cancelled.
    ClientGone,
    /// The `drop_exec_after_bytes` fault cut the connection.
    Dropped,
}

/// What a session did, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// How it ended.
    pub end: End,
    /// How the process ended, when it did before the session ended.
    pub exit: Option<ExitStatus>,
    /// The status written on the error channel, if any.
    pub status: Option<serde_json::Value>,
    /// Terminal sizes received on the resize channel.
    pub sizes: Vec<TermSize>,
    /// Output bytes sent (stdout and stderr payloads).
    pub output_bytes: usize,
}

/// What the client's side of the connection has done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Still open.
    Open,
    /// It said it sends nothing more (a WebSocket Close; the connection may still be open).
    Closed,
    /// The connection ended or broke.
    Gone,
}

/// What the session asks a transport's writer to send, in order.
#[derive(Debug)]
pub enum Out {
    /// Bytes on a channel ([`codec::STDOUT`], [`codec::STDERR`] or [`codec::ERROR`]).
    Data(u8, Bytes),
    /// The protocol's end after the status (WebSocket: Close 1000; SPDY: each stream finished,
    /// then GOAWAY); the writer returns once it is written.
    End,
    /// Flush and stop with no end at all (the drop fault).
    Drop,
}

/// Shuts a transport's write side down, last of all.
pub type Closer = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A started transport.
pub struct Link {
    /// Where the session's output goes.
    pub out: mpsc::Sender<Out>,
    /// The writer: returns what shuts the connection down once [`Out::End`] was written, or
    /// `None` when the connection failed or was dropped.
    pub writer: JoinHandle<Option<Closer>>,
    /// The reader (aborted when the session is over).
    pub reader: JoinHandle<()>,
    /// Fires once the transport's initial frame is on the wire (`None`: it sends none).
    pub greeted: Option<oneshot::Receiver<()>>,
}

/// A connection an exec session can run over.
pub trait Transport {
    /// Starts the reader (delivering to `client`) and the writer, which sends its initial
    /// frame, if it has one, after `hold_first`.
    fn start(self, client: FromClient, hold_first: Duration) -> Link;
}

/// Where a transport's reader delivers what the client sends; dropping it says the client is
/// gone.
#[derive(Debug)]
pub struct FromClient {
    /// The process's stdin (`None` once ended, or when not asked for).
    stdin: Option<mpsc::Sender<Bytes>>,
    /// Whether a terminal was asked for.
    tty: bool,
    /// The resize stream's decoder.
    resize: ResizeDecoder,
    /// Set once a terminal size arrived.
    resized: watch::Sender<bool>,
    /// The terminal's window size, as the client last sent it.
    window: watch::Sender<WindowSize>,
    /// The sizes received, for the report.
    sizes: Arc<Mutex<Vec<TermSize>>>,
    /// What the client's side has done.
    peer: watch::Sender<Peer>,
}

impl FromClient {
    /// Stdin data (under `tty`, the runtime's terminal reads it as a terminal does); dropped
    /// when stdin was not asked for or has ended. Waits while the process's stdin buffer is full.
    pub async fn stdin(&mut self, data: Vec<u8>) {
        let Some(tx) = self.stdin.as_ref() else {
            return;
        };
        if data.is_empty() {
            return;
        }
        if tx.send(Bytes::from(data)).await.is_err() {
            // The process stopped reading for good; later stdin is discarded.
            self.stdin = None;
        }
    }

    /// The end of stdin.
    pub fn end_stdin(&mut self) {
        self.stdin = None;
    }

    /// Bytes of the resize stream (ignored without a terminal).
    pub fn resize(&mut self, data: &[u8]) {
        if !self.tty {
            return;
        }
        let got = self.resize.push(data);
        if let Some(last) = got.last() {
            self.window.send_replace(WindowSize {
                rows: last.height,
                cols: last.width,
            });
            self.resized.send_replace(true);
        }
        if let Ok(mut kept) = self.sizes.lock() {
            for s in got {
                if kept.len() < SIZES_KEPT {
                    kept.push(s);
                }
            }
        }
    }

    /// The client said it sends nothing more (stdin ends; output and the status still go).
    pub fn closed(&mut self) {
        self.stdin = None;
        self.peer.send_replace(Peer::Closed);
    }
}

impl Drop for FromClient {
    fn drop(&mut self) {
        self.peer.send_replace(Peer::Gone);
    }
}

/// Runs a session over `transport`; `start` runs the process with the given streams and
/// returns how it ended. The connection is closed when this returns.
pub async fn run<T, F, Fut>(transport: T, config: Config, start: F) -> Report
where
    T: Transport,
    F: FnOnce(ExecIo) -> Fut,
    Fut: Future<Output = ExitStatus> + Send,
{
    let streams = config.streams;
    let (stdin_tx, stdin_rx) = if streams.stdin {
        let (tx, rx) = mpsc::channel::<Bytes>(STDIN_CHUNKS);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let (peer_tx, mut peer_rx) = watch::channel(Peer::Open);
    let (resized_tx, mut resized_rx) = watch::channel(false);
    let (window_tx, window_rx) = watch::channel(WindowSize::default());
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let Link {
        out: out_tx,
        writer,
        reader,
        greeted,
    } = transport.start(
        FromClient {
            stdin: stdin_tx,
            tty: streams.tty,
            resize: ResizeDecoder::default(),
            resized: resized_tx,
            window: window_tx,
            sizes: sizes.clone(),
            peer: peer_tx,
        },
        config.early_frame_delay,
    );

    let mut report = Report {
        end: End::Completed,
        exit: None,
        status: None,
        sizes: Vec::new(),
        output_bytes: 0,
    };
    if !config.early_frame_delay.is_zero()
        && let Some(greeted) = greeted
    {
        // The transport holds its initial frame back for the pause (the race drops that frame
        // too); the command starts once it is on the wire.
        let _ = greeted.await;
    }

    let (stdout_tx, mut stdout_rx) = mpsc::channel::<Bytes>(OUTPUT_CHUNKS);
    let (stderr_tx, mut stderr_rx) = if streams.tty {
        (stdout_tx.clone(), mpsc::channel::<Bytes>(1).1)
    } else {
        mpsc::channel::<Bytes>(OUTPUT_CHUNKS)
    };
    // Boxed: held inline, the process's future would make this one (and every future that
    // awaits it) larger by its size again, per open session.
    let mut process = Box::pin(start(ExecIo {
        stdin: stdin_rx,
        stdout: stdout_tx,
        stderr: stderr_tx,
        tty: streams.tty.then_some(window_rx),
    }));
    let (mut out_open, mut err_open) = (true, !streams.tty);
    let mut exit: Option<ExitStatus> = None;
    let mut ok = true;
    while ok && (exit.is_none() || out_open || err_open) {
        let (channel, chunk) = tokio::select! {
            biased;
            () = wait_gone(&mut peer_rx) => {
                ok = false;
                continue;
            }
            chunk = stdout_rx.recv(), if out_open => match chunk {
                Some(c) => (codec::STDOUT, c),
                None => { out_open = false; continue; }
            },
            chunk = stderr_rx.recv(), if err_open => match chunk {
                Some(c) => (codec::STDERR, c),
                None => { err_open = false; continue; }
            },
            status = &mut process, if exit.is_none() => {
                exit = Some(status);
                continue;
            }
        };
        let wanted = match channel {
            codec::STDOUT => streams.stdout,
            _ => streams.stderr,
        };
        if !wanted || chunk.is_empty() {
            continue;
        }
        let mut payload = chunk;
        if let Some(limit) = config.drop_after_bytes.limit() {
            let room = limit.saturating_sub(report.output_bytes);
            if payload.len() >= room {
                payload.truncate(room);
                report.output_bytes += payload.len();
                if !payload.is_empty() {
                    let _ = out_tx.send(Out::Data(channel, payload)).await;
                }
                let _ = out_tx.send(Out::Drop).await;
                drop(out_tx);
                let _ = writer.await;
                reader.abort();
                config.cancel.cancel();
                report.end = End::Dropped;
                report.exit = exit;
                report.sizes = take_sizes(&sizes);
                return report;
            }
        }
        report.output_bytes += payload.len();
        ok = out_tx.send(Out::Data(channel, payload)).await.is_ok();
    }
    report.exit = exit.clone();
    let Some(exit) = exit.filter(|_| ok) else {
        config.cancel.cancel();
        drop(out_tx);
        reader.abort();
        let _ = writer.await;
        report.end = End::ClientGone;
        report.sizes = take_sizes(&sizes);
        return report;
    };

    if streams.tty {
        let waited = tokio::time::timeout(FIRST_RESIZE_WAIT, async {
            while !*resized_rx.borrow_and_update() && *peer_rx.borrow() == Peer::Open {
                tokio::select! {
                    r = resized_rx.changed() => if r.is_err() { break },
                    r = peer_rx.changed() => if r.is_err() { break },
                }
            }
        })
        .await;
        if waited.is_err() {
            tracing::debug!("exec: no resize from the tty client");
        }
    }
    let status = status_for(&config, &exit);
    if let Some(payload) = codec::error_channel_payload(config.status, &status) {
        let _ = out_tx.send(Out::Data(codec::ERROR, payload.into())).await;
    }
    report.status = Some(status);
    let _ = out_tx.send(Out::End).await;
    drop(out_tx);
    let closer = writer.await.ok().flatten();
    let waited = tokio::time::timeout(config.close_wait, async {
        while *peer_rx.borrow_and_update() == Peer::Open {
            if peer_rx.changed().await.is_err() {
                break;
            }
        }
    })
    .await;
    if waited.is_err() {
        tracing::debug!("exec: the client did not close within the wait");
    }
    reader.abort();
    if let Some(close) = closer {
        close.await;
    }
    report.sizes = take_sizes(&sizes);
    report
}

/// The status for how the process ended.
fn status_for(config: &Config, exit: &ExitStatus) -> serde_json::Value {
    let code = match exit {
        ExitStatus::Code(0) => return codec::status_success(),
        ExitStatus::Code(c) => *c,
        // SIGKILL, as when the container is stopped under a running exec.
        ExitStatus::Killed => 137,
        ExitStatus::CannotStart(text) => {
            return codec::status_internal(&format!(
                "error executing command in container: failed to exec in container: failed to start exec \"{}\": {text}",
                config.exec_id
            ));
        }
    };
    codec::status_exit(
        &codec::exit_message(config.status, code, &config.argv),
        code,
    )
}

/// Resolves once the client is gone (a Close frame alone is not gone: output continues).
async fn wait_gone(peer: &mut watch::Receiver<Peer>) {
    loop {
        if *peer.borrow_and_update() == Peer::Gone {
            return;
        }
        if peer.changed().await.is_err() {
            // The reader ended without saying Gone (it was aborted): never resolve.
            std::future::pending::<()>().await;
        }
    }
}

/// The sizes the reader collected.
fn take_sizes(sizes: &Mutex<Vec<TermSize>>) -> Vec<TermSize> {
    sizes
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::codec::Protocol;
    use super::super::transport::websocket::WebSocket;
    use super::*;
    use fakekube_runtime::{ExecSpec, Programs};
    use futures_util::{SinkExt, StreamExt};
    use serde_json::Value;
    use tokio::io::{AsyncWriteExt, DuplexStream};
    use tokio::task::JoinHandle;
    use tokio_tungstenite::WebSocketStream;
    use tokio_tungstenite::tungstenite::Message as WsMessage;
    use tokio_tungstenite::tungstenite::protocol::Role;

    /// The client end of an in-memory connection.
    type Client = WebSocketStream<DuplexStream>;

    /// The streams kubectl asks for without `-i`/`-t`.
    const OUT_ERR: Streams = Streams {
        stdin: false,
        stdout: true,
        stderr: true,
        tty: false,
    };

    /// stdin, stdout and stderr.
    const ALL: Streams = Streams {
        stdin: true,
        stdout: true,
        stderr: true,
        tty: false,
    };

    fn config(protocol: Protocol, streams: Streams, argv: &[&str]) -> Config {
        Config {
            status: protocol.status_style(),
            streams,
            argv: argv.iter().map(|s| (*s).to_string()).collect(),
            exec_id: "0123abcd".into(),
            early_frame_delay: Duration::ZERO,
            drop_after_bytes: DropAfter::never(),
            close_wait: Duration::from_secs(2),
            cancel: CancellationToken::new(),
        }
    }

    /// Starts a session running `config.argv` in an empty pod, and its client.
    async fn start_with(
        protocol: Protocol,
        config: Config,
        programs: Programs,
    ) -> (Client, JoinHandle<Report>) {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let spec = ExecSpec {
            argv: config.argv.clone(),
            env: vec![("HOSTNAME".into(), "pod-0".into())],
            cwd: "/".into(),
            fs: programs.pod_fs(vec![]),
            programs,
            processes: Default::default(),
            cancel: config.cancel.clone(),
            network: Default::default(),
        };
        let transport = WebSocket::new(server_io, protocol, config.streams);
        let server = tokio::spawn(run(transport, config, move |io| {
            fakekube_runtime::exec(spec, io)
        }));
        let client = WebSocketStream::from_raw_socket(client_io, Role::Client, None).await;
        (client, server)
    }

    async fn start(
        protocol: Protocol,
        streams: Streams,
        argv: &[&str],
    ) -> (Client, JoinHandle<Report>) {
        start_with(
            protocol,
            config(protocol, streams, argv),
            fakekube_programs::registry(),
        )
        .await
    }

    /// Everything the client saw until the server's Close (or the end of the connection).
    #[derive(Debug, Default)]
    struct Seen {
        /// (text frame, payload) of every data message, in order.
        messages: Vec<(bool, Vec<u8>)>,
        /// The Close frame's code, when one came.
        close: Option<u16>,
        /// Whether the connection ended with an error (no closing handshake).
        broken: bool,
    }

    impl Seen {
        /// The payloads of binary messages on `channel`, concatenated.
        fn channel(&self, channel: u8) -> Vec<u8> {
            self.messages
                .iter()
                .filter(|(text, m)| !*text && m.first() == Some(&channel))
                .flat_map(|(_, m)| m.iter().skip(1).copied())
                .collect()
        }

        /// How many binary messages came on `channel`.
        fn count(&self, channel: u8) -> usize {
            self.messages
                .iter()
                .filter(|(text, m)| !*text && m.first() == Some(&channel))
                .count()
        }

        /// The status on channel 3, parsed.
        fn status(&self) -> Value {
            serde_json::from_slice(&self.channel(codec::ERROR)).unwrap_or(Value::Null)
        }
    }

    async fn read_all(client: &mut Client) -> Seen {
        let mut seen = Seen::default();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let next = tokio::time::timeout_at(deadline, client.next()).await;
            match next {
                Err(_) => panic!("the session did not end: {seen:?}"),
                Ok(None) => break,
                Ok(Some(Err(_))) => {
                    seen.broken = true;
                    break;
                }
                Ok(Some(Ok(WsMessage::Binary(b)))) => seen.messages.push((false, b.to_vec())),
                Ok(Some(Ok(WsMessage::Text(t)))) => {
                    seen.messages.push((true, t.as_bytes().to_vec()))
                }
                Ok(Some(Ok(WsMessage::Close(c)))) => {
                    seen.close = c.map(|c| u16::from(c.code));
                }
                Ok(Some(Ok(_))) => {}
            }
        }
        seen
    }

    async fn report(server: JoinHandle<Report>) -> Report {
        match tokio::time::timeout(Duration::from_secs(60), server).await {
            Ok(Ok(r)) => r,
            other => panic!("the session did not end cleanly: {other:?}"),
        }
    }

    #[tokio::test]
    async fn v5_session_sends_the_empty_frame_output_one_status_and_close_1000() {
        let (mut client, server) = start(
            Protocol::V5,
            OUT_ERR,
            &["sh", "-c", "echo out; echo err >&2; exit 3"],
        )
        .await;
        let seen = read_all(&mut client).await;
        assert_eq!(seen.messages.first(), Some(&(false, vec![1u8])));
        assert_eq!(seen.channel(codec::STDOUT), b"out\n");
        assert_eq!(seen.channel(codec::STDERR), b"err\n");
        assert_eq!(seen.count(codec::ERROR), 1);
        let status = seen.status();
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["reason"], "NonZeroExitCode");
        assert_eq!(status["details"]["causes"][0]["reason"], "ExitCode");
        assert_eq!(status["details"]["causes"][0]["message"], "3");
        assert_eq!(
            status["message"],
            "command terminated with non-zero exit code: command terminated with exit code 3"
        );
        assert_eq!(seen.messages.last().map(|m| m.1.first()), Some(Some(&3u8)));
        assert_eq!(seen.close, Some(1000));
        assert!(!seen.broken);
        let r = report(server).await;
        assert_eq!(r.end, End::Completed);
        assert_eq!(r.exit, Some(ExitStatus::Code(3)));
    }

    #[tokio::test]
    async fn v5_close_of_stdin_is_end_of_input() {
        let (mut client, server) = start(Protocol::V5, ALL, &["cat"]).await;
        assert!(
            client
                .send(WsMessage::binary(b"\x00hello ".to_vec()))
                .await
                .is_ok()
        );
        assert!(
            client
                .send(WsMessage::binary(b"\x00world".to_vec()))
                .await
                .is_ok()
        );
        assert!(client.send(WsMessage::binary(vec![255u8, 0])).await.is_ok());
        let seen = read_all(&mut client).await;
        assert_eq!(seen.channel(codec::STDOUT), b"hello world");
        assert_eq!(seen.status()["status"], "Success");
        assert_eq!(seen.close, Some(1000));
        assert_eq!(report(server).await.end, End::Completed);
    }

    #[tokio::test]
    async fn a_v4_client_close_is_stdin_eof_and_output_and_status_still_follow() {
        let (mut client, server) = start(
            Protocol::V4,
            ALL,
            &["sh", "-c", "cat; sleep 0.1; echo after"],
        )
        .await;
        assert!(
            client
                .send(WsMessage::binary(b"\x00abc".to_vec()))
                .await
                .is_ok()
        );
        assert!(client.close(None).await.is_ok());
        let seen = read_all(&mut client).await;
        assert_eq!(seen.channel(codec::STDOUT), b"abcafter\n");
        assert_eq!(seen.status()["status"], "Success");
        assert_eq!(seen.close, Some(1000));
        let r = report(server).await;
        assert_eq!(r.end, End::Completed);
        assert_eq!(r.exit, Some(ExitStatus::Code(0)));
    }

    #[tokio::test]
    async fn text_frames_from_the_client_are_read_as_binary_ones() {
        let (mut client, server) = start(Protocol::V4, ALL, &["cat"]).await;
        assert!(client.send(WsMessage::text("\u{0}typed\n")).await.is_ok());
        assert!(client.close(None).await.is_ok());
        let seen = read_all(&mut client).await;
        assert_eq!(seen.channel(codec::STDOUT), b"typed\n");
        assert_eq!(report(server).await.end, End::Completed);
    }

    #[tokio::test]
    async fn base64_protocol_frames_are_text_both_ways() {
        let (mut client, server) = start(Protocol::V4Base64, ALL, &["cat"]).await;
        assert!(client.send(WsMessage::text("0aGk=")).await.is_ok());
        assert!(client.close(None).await.is_ok());
        let seen = read_all(&mut client).await;
        assert_eq!(seen.messages.first(), Some(&(true, b"1".to_vec())));
        assert!(seen.messages.contains(&(true, b"1aGk=".to_vec())));
        let status = seen
            .messages
            .iter()
            .find(|(_, m)| m.first() == Some(&b'3'))
            .map(|(_, m)| m.clone())
            .unwrap_or_default();
        let decoded = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            status.get(1..).unwrap_or_default(),
        )
        .unwrap_or_default();
        assert_eq!(
            serde_json::from_slice::<Value>(&decoded).ok(),
            Some(codec::status_success())
        );
        assert_eq!(report(server).await.end, End::Completed);
    }

    #[tokio::test]
    async fn v1_protocol_writes_nothing_on_success_and_the_text_on_failure() {
        let (mut client, server) = start(Protocol::Channel, OUT_ERR, &["true"]).await;
        let seen = read_all(&mut client).await;
        assert_eq!(seen.count(codec::ERROR), 0);
        assert_eq!(seen.close, Some(1000));
        report(server).await;
        let (mut client, server) = start(Protocol::Channel, OUT_ERR, &["sh", "-c", "exit 2"]).await;
        let seen = read_all(&mut client).await;
        assert_eq!(
            seen.channel(codec::ERROR),
            b"command terminated with non-zero exit code: error executing command [sh -c exit 2], exit code 2"
        );
        report(server).await;
    }

    #[tokio::test]
    async fn pings_are_answered_while_the_command_runs() {
        // `cat` runs until the test closes its stdin, which it does only once the pong came.
        let (mut client, server) = start(Protocol::V5, ALL, &["cat"]).await;
        assert!(
            client
                .send(WsMessage::Ping(b"p1".to_vec().into()))
                .await
                .is_ok()
        );
        let pong = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(Ok(m)) = client.next().await {
                if let WsMessage::Pong(p) = m {
                    return Some(p.to_vec());
                }
            }
            None
        })
        .await;
        assert_eq!(pong.ok().flatten(), Some(b"p1".to_vec()));
        assert!(client.send(WsMessage::binary(vec![255u8, 0])).await.is_ok());
        let seen = read_all(&mut client).await;
        assert_eq!(seen.close, Some(1000));
        report(server).await;
    }

    #[tokio::test]
    async fn tty_echoes_merges_stderr_translates_newlines_and_records_resizes() {
        let streams = Streams {
            stdin: true,
            stdout: true,
            stderr: false,
            tty: true,
        };
        let (mut client, server) = start(
            Protocol::V5,
            streams,
            &["sh", "-c", "read line; echo \"got $line\"; echo oops >&2"],
        )
        .await;
        assert!(
            client
                .send(WsMessage::binary(
                    b"\x04{\"Width\":120,\"Height\":40}\n".to_vec()
                ))
                .await
                .is_ok()
        );
        assert!(
            client
                .send(WsMessage::binary(b"\x00hi\r".to_vec()))
                .await
                .is_ok()
        );
        let seen = read_all(&mut client).await;
        assert_eq!(seen.channel(codec::STDOUT), b"hi\r\ngot hi\r\noops\r\n");
        assert_eq!(seen.count(codec::STDERR), 0);
        let r = report(server).await;
        assert_eq!(
            r.sizes,
            vec![TermSize {
                width: 120,
                height: 40
            }]
        );
    }

    #[tokio::test]
    async fn a_command_that_cannot_start_is_an_internal_error_status() {
        let (mut client, server) = start(Protocol::V5, OUT_ERR, &["no-such-program"]).await;
        let seen = read_all(&mut client).await;
        let status = seen.status();
        assert_eq!(status["reason"], "InternalError");
        assert_eq!(status["code"], 500);
        let message = status["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("Internal error occurred: error executing command in container: failed to exec in container: failed to start exec \"0123abcd\": OCI runtime exec failed"),
            "{message}"
        );
        assert!(message.contains("no-such-program"), "{message}");
        report(server).await;
    }

    #[tokio::test]
    async fn the_drop_fault_cuts_the_connection_after_n_bytes_without_status_or_close() {
        let mut c = config(
            Protocol::V5,
            OUT_ERR,
            &["head", "-c", "100000", "/dev/zero"],
        );
        c.drop_after_bytes = DropAfter(std::sync::Arc::new(|| Some(1000)));
        let cancel = c.cancel.clone();
        let (mut client, server) = start_with(Protocol::V5, c, fakekube_programs::registry()).await;
        let seen = read_all(&mut client).await;
        assert_eq!(seen.channel(codec::STDOUT).len(), 1000);
        assert_eq!(seen.count(codec::ERROR), 0);
        assert_eq!(seen.close, None);
        let r = report(server).await;
        assert_eq!(r.end, End::Dropped);
        assert!(cancel.is_cancelled());
    }

    #[tokio::test]
    async fn a_client_that_goes_away_cancels_the_process() {
        let c = config(Protocol::V5, OUT_ERR, &["sleep", "100"]);
        let cancel = c.cancel.clone();
        let (client, server) = start_with(Protocol::V5, c, fakekube_programs::registry()).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(client);
        let r = report(server).await;
        assert_eq!(r.end, End::ClientGone);
        assert!(cancel.is_cancelled());
    }

    #[tokio::test]
    async fn large_output_arrives_whole_through_the_bounded_channels() {
        let (mut client, server) = start(
            Protocol::V4,
            OUT_ERR,
            &["head", "-c", "3000000", "/dev/zero"],
        )
        .await;
        let seen = read_all(&mut client).await;
        assert_eq!(seen.channel(codec::STDOUT).len(), 3_000_000);
        assert_eq!(seen.status()["status"], "Success");
        assert_eq!(report(server).await.output_bytes, 3_000_000);
    }

    #[tokio::test]
    async fn stdin_frames_are_dropped_when_stdin_was_not_asked_for() {
        let (mut client, server) = start(Protocol::V5, OUT_ERR, &["cat"]).await;
        let _ = client
            .send(WsMessage::binary(b"\x00ignored".to_vec()))
            .await;
        let seen = read_all(&mut client).await;
        assert_eq!(seen.channel(codec::STDOUT), b"");
        assert_eq!(seen.status()["status"], "Success");
        report(server).await;
    }

    #[tokio::test]
    async fn without_stdout_the_initial_frame_goes_on_stderr() {
        let streams = Streams {
            stdin: false,
            stdout: false,
            stderr: true,
            tty: false,
        };
        let (mut client, server) =
            start(Protocol::V5, streams, &["sh", "-c", "echo o; echo e >&2"]).await;
        let seen = read_all(&mut client).await;
        assert_eq!(seen.messages.first(), Some(&(false, vec![2u8])));
        assert_eq!(seen.channel(codec::STDOUT), b"");
        assert_eq!(seen.channel(codec::STDERR), b"e\n");
        report(server).await;
    }

    #[tokio::test]
    async fn the_early_frame_delay_holds_every_frame_back_the_empty_one_included() {
        let mut c = config(Protocol::V5, OUT_ERR, &["echo", "x"]);
        c.early_frame_delay = Duration::from_millis(150);
        let started = tokio::time::Instant::now();
        let (mut client, server) = start_with(Protocol::V5, c, fakekube_programs::registry()).await;
        let first = client.next().await.and_then(Result::ok);
        assert!(started.elapsed() >= Duration::from_millis(150));
        assert_eq!(first, Some(WsMessage::binary(vec![1u8])));
        let second = client.next().await.and_then(Result::ok);
        assert_eq!(second, Some(WsMessage::binary(b"\x01x\n".to_vec())));
        let _ = read_all(&mut client).await;
        report(server).await;
    }

    #[tokio::test]
    async fn junk_bytes_from_the_client_end_the_session_without_a_panic() {
        let (server_io, mut client_io) = tokio::io::duplex(4096);
        let c = config(Protocol::V5, ALL, &["sleep", "100"]);
        let spec = ExecSpec {
            argv: c.argv.clone(),
            env: vec![],
            cwd: "/".into(),
            fs: fakekube_programs::registry().pod_fs(vec![]),
            programs: fakekube_programs::registry(),
            processes: Default::default(),
            cancel: c.cancel.clone(),
            network: Default::default(),
        };
        let transport = WebSocket::new(server_io, Protocol::V5, c.streams);
        let server = tokio::spawn(run(transport, c, move |io| {
            fakekube_runtime::exec(spec, io)
        }));
        let _ = client_io
            .write_all(&[0xC3, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
            .await;
        let r = report(server).await;
        assert_eq!(r.end, End::ClientGone);
    }
}
