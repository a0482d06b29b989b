//! Exec over SPDY, as the kubelet serves `kubectl exec` up to 1.29 (and every client-go
//! executor made with `NewSPDYExecutor`): the client opens one stream per channel, each named
//! by its `streamtype` header (`error` first, then `stdin`, `stdout`, `stderr` as asked, and
//! `resize` with a terminal from v3 on); the server answers each at once and waits for all of
//! them. stdin ends with its stream's FIN. At the end every stream is finished (the status
//! written on `error` before its FIN), GOAWAY follows, and the server's side of the connection
//! is shut down; the client then closes.

use super::super::codec;
use super::super::session::{Closer, FromClient, Link, Out, Streams, Transport, WRITER_ITEMS};
use crate::spdy::conn::{Handle, WriteError};
use crate::spdy::{Connection, GoAwayStatus, Stream, StreamReader, StreamWriter};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long the client has to open every stream (the kubelet's default
/// `streamCreationTimeout`).
pub const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The streams of one exec, by role.
#[derive(Debug, Default)]
pub struct ExecStreams {
    /// `streamtype: error`: where the status goes.
    pub error: Option<Stream>,
    /// `streamtype: stdin`.
    pub stdin: Option<Stream>,
    /// `streamtype: stdout`.
    pub stdout: Option<Stream>,
    /// `streamtype: stderr`.
    pub stderr: Option<Stream>,
    /// `streamtype: resize`.
    pub resize: Option<Stream>,
}

/// Why the streams of an exec did not all arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamsError {
    /// The client did not open them within [`STREAM_CREATION_TIMEOUT`].
    #[error("timed out waiting for client to create streams")]
    Timeout,
    /// The connection ended first.
    #[error("the connection ended before every stream was created")]
    ConnectionGone,
}

impl ExecStreams {
    /// Whether every stream `asked` (the query's streams; resize only with a terminal and a
    /// protocol that has it) has arrived.
    fn complete(&self, asked: Streams, resize: bool) -> bool {
        self.error.is_some()
            && (!asked.stdin || self.stdin.is_some())
            && (!asked.stdout || self.stdout.is_some())
            && (!asked.stderr || self.stderr.is_some())
            && (!(asked.tty && resize) || self.resize.is_some())
    }

    /// Files a stream under its role; an unknown or repeated role is refused.
    fn add(&mut self, stream: Stream) {
        let role = stream
            .headers()
            .get("streamtype")
            .unwrap_or_default()
            .to_string();
        let slot = match role.as_str() {
            "error" => &mut self.error,
            "stdin" => &mut self.stdin,
            "stdout" => &mut self.stdout,
            "stderr" => &mut self.stderr,
            "resize" => &mut self.resize,
            other => {
                tracing::debug!(
                    stream = stream.id(),
                    streamtype = other,
                    "exec: unexpected stream type"
                );
                return;
            }
        };
        if slot.is_some() {
            tracing::debug!(
                stream = stream.id(),
                streamtype = role,
                "exec: a second stream of a type"
            );
        } else {
            *slot = Some(stream);
        }
    }
}

/// Accepts the client's streams until every one `asked` for has arrived.
pub async fn accept_streams(
    conn: &mut Connection,
    asked: Streams,
    resize: bool,
    timeout: Duration,
) -> Result<ExecStreams, StreamsError> {
    let mut streams = ExecStreams::default();
    let collect = async {
        while !streams.complete(asked, resize) {
            match conn.accept().await {
                Some(s) => streams.add(s),
                None => return Err(StreamsError::ConnectionGone),
            }
        }
        Ok(())
    };
    match tokio::time::timeout(timeout, collect).await {
        Ok(Ok(())) => Ok(streams),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(StreamsError::Timeout),
    }
}

/// A SPDY connection whose exec streams have all arrived.
#[derive(Debug)]
pub struct Spdy {
    /// The connection.
    conn: Connection,
    /// Its streams.
    streams: ExecStreams,
}

impl Spdy {
    /// The transport over `conn` and the streams [`accept_streams`] gathered.
    pub fn new(conn: Connection, streams: ExecStreams) -> Self {
        Spdy { conn, streams }
    }
}

/// The halves of a role's stream, when it exists.
fn split(stream: Option<Stream>) -> (Option<StreamReader>, Option<StreamWriter>) {
    match stream.map(Stream::split) {
        Some((r, w)) => (Some(r), Some(w)),
        None => (None, None),
    }
}

impl Transport for Spdy {
    fn start(self, client: FromClient, _hold_first: Duration) -> Link {
        let Spdy { conn, streams } = self;
        let (_, error) = split(streams.error);
        let (stdin, stdin_w) = split(streams.stdin);
        let (_, stdout) = split(streams.stdout);
        let (_, stderr) = split(streams.stderr);
        let (resize, resize_w) = split(streams.resize);
        let (out_tx, out_rx) = mpsc::channel::<Out>(WRITER_ITEMS);
        let reader = tokio::spawn(read_loop(conn.handle(), stdin, resize, client));
        let writers = Writers {
            error,
            stdout,
            stderr,
            // Only finished at the end: the client never reads them.
            others: [stdin_w, resize_w].into_iter().flatten().collect(),
        };
        let writer = tokio::spawn(write_loop(conn, writers, out_rx));
        Link {
            out: out_tx,
            writer,
            reader,
            greeted: None,
        }
    }
}

/// Feeds stdin and resize to the session until the connection ends.
async fn read_loop(
    conn: Handle,
    mut stdin: Option<StreamReader>,
    mut resize: Option<StreamReader>,
    mut client: FromClient,
) {
    loop {
        tokio::select! {
            data = recv(&mut stdin) => match data {
                Some(d) => client.stdin(d.to_vec()).await,
                None => {
                    stdin = None;
                    client.end_stdin();
                }
            },
            data = recv(&mut resize) => match data {
                Some(d) => client.resize(&d),
                None => resize = None,
            },
            () = conn.gone() => break,
        }
    }
}

/// The next chunk of a stream that may not exist (then never resolves).
async fn recv(stream: &mut Option<StreamReader>) -> Option<bytes::Bytes> {
    match stream {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

/// The streams the session writes to.
struct Writers {
    /// `error`.
    error: Option<StreamWriter>,
    /// `stdout`.
    stdout: Option<StreamWriter>,
    /// `stderr`.
    stderr: Option<StreamWriter>,
    /// The other streams, finished at the end.
    others: Vec<StreamWriter>,
}

/// Writes the session's output to its streams; at [`Out::End`] finishes every stream, sends
/// GOAWAY and shuts the write side down.
async fn write_loop(
    conn: Connection,
    writers: Writers,
    mut items: mpsc::Receiver<Out>,
) -> Option<Closer> {
    while let Some(item) = items.recv().await {
        match item {
            Out::Data(channel, payload) => {
                let target = match channel {
                    codec::STDOUT => writers.stdout.as_ref(),
                    codec::STDERR => writers.stderr.as_ref(),
                    codec::ERROR => writers.error.as_ref(),
                    _ => None,
                };
                if let Some(w) = target
                    && w.write(&payload).await == Err(WriteError::ConnectionGone)
                {
                    return None;
                }
            }
            Out::End => {
                let ends = [&writers.stdout, &writers.stderr, &writers.error];
                for w in ends.into_iter().flatten().chain(writers.others.iter()) {
                    let _ = w.finish().await;
                }
                let handle = conn.handle();
                handle.go_away(GoAwayStatus::OK).await;
                conn.shutdown().await;
                return Some(Box::pin(async move { drop(conn) }));
            }
            Out::Drop => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::super::codec::StreamProtocol;
    use super::super::super::session::{self, Config, DropAfter, End, Report};
    use super::*;
    use crate::spdy::frame::{Frame, RstStatus};
    use crate::spdy::testing::{Client, Seen};
    use fakekube_runtime::ExecSpec;
    use serde_json::Value;
    use std::collections::HashMap;
    use tokio::io::DuplexStream;
    use tokio::task::JoinHandle;
    use tokio_util::sync::CancellationToken;

    /// How long a test waits for the session before it fails: generous, since a loaded machine
    /// is slow, and every wait returns as soon as what it waits for comes.
    const WAIT: Duration = Duration::from_secs(60);

    /// Stream ids as client-go opens them: error first, then stdin, stdout, stderr, resize.
    const ERROR: u32 = 1;
    const STDIN: u32 = 3;
    const STDOUT: u32 = 5;
    const STDERR: u32 = 7;
    const RESIZE: u32 = 9;

    fn config(protocol: StreamProtocol, streams: Streams, argv: &[&str]) -> Config {
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

    /// Starts the server side: streams accepted, then a session running `config.argv`.
    fn serve(
        server_io: DuplexStream,
        protocol: StreamProtocol,
        config: Config,
    ) -> JoinHandle<Option<Report>> {
        tokio::spawn(async move {
            let mut conn = Connection::start(server_io, Box::new(|_| true));
            let streams = accept_streams(&mut conn, config.streams, protocol.has_resize(), WAIT)
                .await
                .ok()?;
            let programs = fakekube_programs::registry();
            let spec = ExecSpec {
                argv: config.argv.clone(),
                env: vec![],
                cwd: "/".into(),
                fs: programs.pod_fs(vec![]),
                programs,
                cancel: config.cancel.clone(),
                network: Default::default(),
                processes: Default::default(),
            };
            let transport = Spdy::new(conn, streams);
            Some(
                session::run(transport, config, move |io| {
                    fakekube_runtime::exec(spec, io)
                })
                .await,
            )
        })
    }

    /// Opens the streams `streams` asks for, as client-go does.
    async fn open(client: &mut Client<DuplexStream>, streams: Streams) {
        client.open(ERROR, &[("streamType", "error")], false).await;
        if streams.stdin {
            client.open(STDIN, &[("streamType", "stdin")], false).await;
        }
        if streams.stdout {
            client
                .open(STDOUT, &[("streamType", "stdout")], false)
                .await;
        }
        if streams.stderr {
            client
                .open(STDERR, &[("streamType", "stderr")], false)
                .await;
        }
        if streams.tty {
            client
                .open(RESIZE, &[("streamType", "resize")], false)
                .await;
        }
    }

    /// What the client saw until the connection ended: data per stream, FINs, other frames.
    #[derive(Debug, Default)]
    struct Received {
        data: HashMap<u32, Vec<u8>>,
        fins: Vec<u32>,
        replies: Vec<u32>,
        goaway: bool,
        resets: Vec<(u32, RstStatus)>,
        /// The stream of each data frame with a payload, in the order they arrived.
        order: Vec<u32>,
    }

    /// Reads until the server ends the connection, then closes the client's side.
    async fn read_all(mut client: Client<DuplexStream>) -> Received {
        let mut seen = Received::default();
        loop {
            let next = tokio::time::timeout(WAIT, client.next()).await;
            match next.expect("the server ends the connection") {
                None => return seen,
                Some(Seen::Reply(id)) => seen.replies.push(id),
                Some(Seen::Data { stream, fin, data }) => {
                    if !data.is_empty() {
                        seen.order.push(stream);
                    }
                    seen.data
                        .entry(stream)
                        .or_default()
                        .extend_from_slice(&data);
                    if fin {
                        seen.fins.push(stream);
                    }
                }
                Some(Seen::Other(Frame::GoAway { .. })) => seen.goaway = true,
                Some(Seen::Other(Frame::RstStream { stream, status })) => {
                    seen.resets.push((stream, status))
                }
                Some(Seen::Other(_)) => {}
            }
        }
    }

    fn text(seen: &Received, stream: u32) -> String {
        String::from_utf8_lossy(
            seen.data
                .get(&stream)
                .map(Vec::as_slice)
                .unwrap_or_default(),
        )
        .into_owned()
    }

    async fn report(server: JoinHandle<Option<Report>>) -> Report {
        match tokio::time::timeout(WAIT, server).await {
            Ok(Ok(Some(r))) => r,
            other => panic!("the session did not end cleanly: {other:?}"),
        }
    }

    const OUT_ERR: Streams = Streams {
        stdin: false,
        stdout: true,
        stderr: true,
        tty: false,
    };

    #[tokio::test]
    async fn v4_writes_output_then_the_status_then_finishes_every_stream_and_goes_away() {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let c = config(
            StreamProtocol::V4,
            OUT_ERR,
            &["sh", "-c", "echo out; echo err >&2; exit 3"],
        );
        let server = serve(server_io, StreamProtocol::V4, c);
        let mut client = Client::new(client_io);
        open(&mut client, OUT_ERR).await;
        let seen = read_all(client).await;
        assert_eq!(seen.replies, vec![ERROR, STDOUT, STDERR]);
        assert_eq!(text(&seen, STDOUT), "out\n");
        assert_eq!(text(&seen, STDERR), "err\n");
        let status: Value = serde_json::from_str(&text(&seen, ERROR)).unwrap_or(Value::Null);
        assert_eq!(status["reason"], "NonZeroExitCode");
        assert_eq!(status["details"]["causes"][0]["message"], "3");
        assert_eq!(
            status["message"],
            "command terminated with non-zero exit code: error executing command [sh -c echo out; echo err >&2; exit 3], exit code 3"
        );
        let mut fins = seen.fins.clone();
        fins.sort_unstable();
        assert_eq!(fins, vec![ERROR, STDOUT, STDERR]);
        assert!(seen.goaway);
        let r = report(server).await;
        assert_eq!(r.end, End::Completed);
        assert_eq!(r.exit, Some(fakekube_runtime::ExitStatus::Code(3)));
    }

    #[tokio::test]
    async fn stdin_ends_with_its_streams_fin() {
        let streams = Streams {
            stdin: true,
            ..OUT_ERR
        };
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let server = serve(
            server_io,
            StreamProtocol::V4,
            config(StreamProtocol::V4, streams, &["sh", "-c", "cat; echo end"]),
        );
        let mut client = Client::new(client_io);
        open(&mut client, streams).await;
        client.data(STDIN, b"one ", false).await;
        client.data(STDIN, b"two\n", true).await;
        let seen = read_all(client).await;
        assert_eq!(text(&seen, STDOUT), "one two\nend\n");
        assert_eq!(text(&seen, ERROR), r#"{"metadata":{},"status":"Success"}"#);
        assert_eq!(report(server).await.end, End::Completed);
    }

    #[tokio::test]
    async fn v2_writes_nothing_on_success_and_the_message_on_failure() {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let server = serve(
            server_io,
            StreamProtocol::V2,
            config(StreamProtocol::V2, OUT_ERR, &["true"]),
        );
        let mut client = Client::new(client_io);
        open(&mut client, OUT_ERR).await;
        let seen = read_all(client).await;
        assert_eq!(text(&seen, ERROR), "");
        assert!(seen.fins.contains(&ERROR));
        report(server).await;
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let server = serve(
            server_io,
            StreamProtocol::V2,
            config(StreamProtocol::V2, OUT_ERR, &["sh", "-c", "exit 4"]),
        );
        let mut client = Client::new(client_io);
        open(&mut client, OUT_ERR).await;
        let seen = read_all(client).await;
        assert_eq!(
            text(&seen, ERROR),
            "command terminated with non-zero exit code: error executing command [sh -c exit 4], exit code 4"
        );
        report(server).await;
    }

    #[tokio::test]
    async fn a_terminal_reads_the_resize_stream_and_merges_stderr() {
        let streams = Streams {
            stdin: true,
            stdout: true,
            stderr: false,
            tty: true,
        };
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let server = serve(
            server_io,
            StreamProtocol::V4,
            config(
                StreamProtocol::V4,
                streams,
                &["sh", "-c", "read l; echo \"got $l\"; echo e >&2"],
            ),
        );
        let mut client = Client::new(client_io);
        open(&mut client, streams).await;
        client
            .data(RESIZE, br#"{"Width":80,"Height":24}"#, false)
            .await;
        client.data(STDIN, b"hi\r", false).await;
        let seen = read_all(client).await;
        // The terminal echoes what is typed, and writes `\n` as `\r\n`.
        assert_eq!(text(&seen, STDOUT), "hi\r\ngot hi\r\ne\r\n");
        let r = report(server).await;
        assert_eq!(r.sizes.len(), 1);
    }

    #[tokio::test]
    async fn a_large_output_arrives_whole() {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let server = serve(
            server_io,
            StreamProtocol::V4,
            config(
                StreamProtocol::V4,
                OUT_ERR,
                &["head", "-c", "1000000", "/dev/zero"],
            ),
        );
        let mut client = Client::new(client_io);
        open(&mut client, OUT_ERR).await;
        let seen = read_all(client).await;
        assert_eq!(seen.data.get(&STDOUT).map(Vec::len), Some(1_000_000));
        assert_eq!(report(server).await.output_bytes, 1_000_000);
    }

    #[tokio::test]
    async fn every_output_frame_is_written_before_the_status_under_every_protocol() {
        let (out, err) = (3_000_001, 1_000_003);
        let argv = [
            "sh",
            "-c",
            "head -c 3000001 /dev/zero; head -c 1000003 /dev/zero >&2",
        ];
        for protocol in [StreamProtocol::V4, StreamProtocol::V3, StreamProtocol::V2] {
            let sessions: Vec<_> = (0..4)
                .map(|_| {
                    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
                    let server = serve(server_io, protocol, config(protocol, OUT_ERR, &argv));
                    tokio::spawn(async move {
                        let mut client = Client::new(client_io);
                        open(&mut client, OUT_ERR).await;
                        (read_all(client).await, report(server).await)
                    })
                })
                .collect();
            for session in sessions {
                let (seen, report) = session.await.expect("the session's task");
                assert_eq!(
                    seen.data.get(&STDOUT).map(Vec::len),
                    Some(out),
                    "{protocol:?}"
                );
                assert_eq!(
                    seen.data.get(&STDERR).map(Vec::len),
                    Some(err),
                    "{protocol:?}"
                );
                let status_at = seen.order.iter().position(|s| *s == ERROR);
                let last_output = seen.order.iter().rposition(|s| *s != ERROR);
                assert_eq!(
                    status_at.is_some(),
                    protocol == StreamProtocol::V4,
                    "{protocol:?}: a status only where a Success has one"
                );
                assert!(
                    status_at.is_none() || status_at > last_output,
                    "{protocol:?}: the status came before output frames"
                );
                assert_eq!(report.end, End::Completed, "{protocol:?}");
                assert_eq!(report.output_bytes, out + err, "{protocol:?}");
            }
        }
    }

    #[tokio::test]
    async fn a_client_that_never_opens_its_streams_is_given_up_on() {
        let (server_io, client_io) = tokio::io::duplex(4096);
        let mut conn = Connection::start(server_io, Box::new(|_| true));
        let mut client = Client::new(client_io);
        client.open(ERROR, &[("streamType", "error")], false).await;
        let got = accept_streams(&mut conn, OUT_ERR, true, Duration::from_millis(50)).await;
        assert_eq!(got.err(), Some(StreamsError::Timeout));
        drop(client);
        let got = accept_streams(&mut conn, OUT_ERR, true, WAIT).await;
        assert_eq!(got.err(), Some(StreamsError::ConnectionGone));
    }

    #[tokio::test]
    async fn a_client_that_goes_away_cancels_the_process() {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let c = config(StreamProtocol::V4, OUT_ERR, &["sleep", "100"]);
        let cancel = c.cancel.clone();
        let server = serve(server_io, StreamProtocol::V4, c);
        let mut client = Client::new(client_io);
        open(&mut client, OUT_ERR).await;
        for _ in 0..3 {
            assert!(matches!(client.next().await, Some(Seen::Reply(_))));
        }
        drop(client);
        assert_eq!(report(server).await.end, End::ClientGone);
        assert!(cancel.is_cancelled());
    }
}
