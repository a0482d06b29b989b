//! The server end of a SPDY/3.1 connection over any byte stream: the client opens streams
//! (SYN_STREAM), which are answered (SYN_REPLY, or RST_STREAM when refused) and handed to the
//! caller as [`Stream`]s, each with a reading half (data until the client's FIN) and a writing
//! half (data, then FIN). PINGs are echoed, SETTINGS and WINDOW_UPDATE drive flow control,
//! GOAWAY stops new streams.
//!
//! Two tasks share the socket. The reader parses frames (and decompresses header blocks, in
//! order) and delivers data; the writer owns the write half and the compression context,
//! sending urgent frames (replies, PINGs, window updates, resets) ahead of the ordered queue of
//! data, FINs and GOAWAY.
//!
//! # Flow control
//!
//! Receiving: each stream and the session start with a 64 KiB window, and a WINDOW_UPDATE goes
//! out once the caller has read half of it. A client that ignores windows (moby/spdystream,
//! under every client-go, never sends or reads WINDOW_UPDATE) is not reset for it: its data
//! waits in the stream, and once a stream holds more than a window's worth the reader stops
//! reading the socket until the caller catches up, as a full pipe would.
//!
//! Sending: windows are counted from the start, but only honoured once the client has shown it
//! keeps them (a WINDOW_UPDATE, or SETTINGS with an initial window size); a client that never
//! does would otherwise see every stream stall after 64 KiB.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::JoinHandle;

use super::frame::{self, Frame, GoAwayStatus, RstStatus, setting};
use super::headers::{Compressor, Decompressor, Headers};

/// The initial window of every stream and of the session, both ways.
pub const INITIAL_WINDOW: u32 = 64 * 1024;
/// The largest DATA frame sent.
pub const MAX_DATA_FRAME: usize = 16 * 1024;
/// Frames waiting in the ordered queue before writers wait.
const ORDERED_FRAMES: usize = 16;
/// Streams accepted but not yet taken by the caller.
const INCOMING_STREAMS: usize = 16;
/// The largest frame read (a 16 MiB length is legal, but nothing here needs it).
const MAX_FRAME_READ: usize = 4 * 1024 * 1024;
/// PING answers waiting to be written; a client that floods PINGs without reading loses the
/// ones beyond this.
const MAX_PENDING_PINGS: usize = 64;

/// Decides whether a stream the client opens is accepted: `true` replies to it, `false`
/// refuses it (RST_STREAM `REFUSED_STREAM`).
pub type Accept = Box<dyn Fn(&Headers) -> bool + Send + Sync>;

/// Why a stream cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The stream was reset (by either side), or its writing half was already finished.
    #[error("the stream is closed")]
    StreamClosed,
    /// The connection ended.
    #[error("the connection is gone")]
    ConnectionGone,
}

/// What the writer sends ahead of the ordered queue.
#[derive(Debug)]
enum Urgent {
    /// A frame as it is.
    Frame(Frame),
    /// A SYN_REPLY (its header block is compressed by the writer, in order).
    Reply(u32),
}

/// What the writer sends in order.
#[derive(Debug)]
enum Ordered {
    /// A frame.
    Frame(Frame),
    /// Flush and shut the write side down.
    Shutdown,
}

/// What the connection knows of one stream.
#[derive(Debug)]
struct StreamState {
    /// Where its data goes; `None` once the client's half ended (FIN or reset).
    inbound: Option<mpsc::UnboundedSender<Bytes>>,
    /// Bytes delivered and not yet read, and the signal that some were read.
    buffered: Arc<Buffered>,
    /// Bytes the client may still send before its window is exhausted (may go negative for a
    /// client that ignores windows).
    recv_window: i64,
    /// Bytes read by the caller and not yet given back in a WINDOW_UPDATE.
    recv_unacked: u32,
    /// Bytes this end may still send.
    send_window: i64,
    /// Our half was finished (FIN sent).
    local_fin: bool,
    /// The stream was reset.
    reset: bool,
}

/// Data waiting in a stream, shared by the reader (which adds) and the [`StreamReader`].
#[derive(Debug, Default)]
struct Buffered {
    /// Bytes waiting.
    bytes: AtomicUsize,
    /// The caller dropped its reader: nothing waits for it any more.
    abandoned: AtomicBool,
    /// Signalled whenever bytes are taken (or the reader is dropped).
    drained: Notify,
}

/// The connection's state.
#[derive(Debug)]
struct State {
    /// Streams by id.
    streams: HashMap<u32, StreamState>,
    /// The highest stream id the client opened.
    last_client_stream: u32,
    /// The client keeps flow control: send windows are honoured.
    flow_control: bool,
    /// The window new streams start with (the client's SETTINGS may change it).
    initial_send_window: i64,
    /// The session's send window.
    session_send_window: i64,
    /// Bytes read by the caller and not yet given back at the session level.
    session_unacked: u32,
    /// The client sent GOAWAY: it opens no more streams.
    client_went_away: bool,
    /// The connection ended (end of file, an error, or the caller dropped it).
    gone: bool,
}

/// What the tasks and the handles share.
#[derive(Debug)]
struct Shared {
    /// The state.
    state: Mutex<State>,
    /// Signalled when send windows grow, a stream is reset, or the connection ends.
    window: Notify,
    /// Frames that go first.
    urgent: mpsc::UnboundedSender<Urgent>,
    /// Frames that go in order.
    ordered: mpsc::Sender<Ordered>,
    /// Whether the connection is gone (for waiting on it).
    gone: watch::Sender<bool>,
    /// PING answers queued and not yet written.
    pending_pings: AtomicUsize,
}

impl State {
    /// Forgets a stream once both halves are over (a later frame for it is for an unknown
    /// stream).
    fn retire(&mut self, id: u32) {
        if self
            .streams
            .get(&id)
            .is_some_and(|s| (s.local_fin || s.reset) && s.inbound.is_none())
        {
            self.streams.remove(&id);
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the connection gone: every reader sees its end, every writer fails.
    fn set_gone(&self) {
        let mut st = self.lock();
        st.gone = true;
        for s in st.streams.values_mut() {
            s.inbound = None;
            s.buffered.drained.notify_waiters();
        }
        drop(st);
        self.window.notify_waiters();
        self.gone.send_replace(true);
    }

    /// Gives `n` read bytes back to the client's windows (WINDOW_UPDATEs once half a window
    /// is owed).
    fn credit(&self, stream: u32, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        let mut st = self.lock();
        if st.gone {
            return;
        }
        st.session_unacked = st.session_unacked.saturating_add(n);
        if st.session_unacked >= INITIAL_WINDOW / 2 {
            let delta = std::mem::take(&mut st.session_unacked);
            let _ = self
                .urgent
                .send(Urgent::Frame(Frame::WindowUpdate { stream: 0, delta }));
        }
        if let Some(s) = st.streams.get_mut(&stream)
            && s.inbound.is_some()
        {
            s.recv_unacked = s.recv_unacked.saturating_add(n);
            s.recv_window += i64::from(n);
            if s.recv_unacked >= INITIAL_WINDOW / 2 {
                let delta = std::mem::take(&mut s.recv_unacked);
                let _ = self
                    .urgent
                    .send(Urgent::Frame(Frame::WindowUpdate { stream, delta }));
            }
        }
    }
}

/// A stream the client opened.
#[derive(Debug)]
pub struct Stream {
    /// Its id.
    id: u32,
    /// The headers of its SYN_STREAM.
    headers: Headers,
    /// Its reading half.
    reader: StreamReader,
    /// Its writing half.
    writer: StreamWriter,
}

impl Stream {
    /// Its id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The headers the client opened it with.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// A handle on its writing half (the stream keeps its own).
    pub fn writer(&self) -> StreamWriter {
        self.writer.clone()
    }

    /// Its two halves.
    pub fn split(self) -> (StreamReader, StreamWriter) {
        (self.reader, self.writer)
    }
}

/// The client's half of a stream: its data, until its FIN.
#[derive(Debug)]
pub struct StreamReader {
    /// The stream.
    id: u32,
    /// Its data.
    rx: mpsc::UnboundedReceiver<Bytes>,
    /// Bytes waiting, shared with the connection's reader.
    buffered: Arc<Buffered>,
    /// The connection.
    shared: Arc<Shared>,
}

impl StreamReader {
    /// The next chunk of data; `None` once the client finished or reset the stream, or the
    /// connection ended.
    pub async fn recv(&mut self) -> Option<Bytes> {
        let chunk = self.rx.recv().await?;
        self.buffered.bytes.fetch_sub(chunk.len(), Ordering::AcqRel);
        self.buffered.drained.notify_waiters();
        self.shared.credit(self.id, chunk.len());
        Some(chunk)
    }
}

impl Drop for StreamReader {
    fn drop(&mut self) {
        self.buffered.abandoned.store(true, Ordering::Release);
        self.buffered.drained.notify_waiters();
    }
}

/// This end's half of a stream.
#[derive(Debug, Clone)]
pub struct StreamWriter {
    /// The stream.
    id: u32,
    /// The connection.
    shared: Arc<Shared>,
}

impl StreamWriter {
    /// Sends `data` in DATA frames of at most [`MAX_DATA_FRAME`] bytes, within the send windows
    /// when the client keeps them.
    pub async fn write(&self, data: &[u8]) -> Result<(), WriteError> {
        let mut rest = data;
        while !rest.is_empty() {
            let n = self.reserve(rest.len().min(MAX_DATA_FRAME)).await?;
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            self.send(Frame::Data {
                stream: self.id,
                fin: false,
                data: Bytes::copy_from_slice(chunk),
            })
            .await?;
        }
        Ok(())
    }

    /// Ends this half of the stream (an empty DATA frame with FIN); later writes fail.
    pub async fn finish(&self) -> Result<(), WriteError> {
        {
            let mut st = self.shared.lock();
            if st.gone {
                return Err(WriteError::ConnectionGone);
            }
            match st.streams.get_mut(&self.id) {
                Some(s) if !s.local_fin && !s.reset => s.local_fin = true,
                _ => return Err(WriteError::StreamClosed),
            }
            st.retire(self.id);
        }
        self.send(Frame::Data {
            stream: self.id,
            fin: true,
            data: Bytes::new(),
        })
        .await
    }

    /// Waits until up to `want` bytes may be sent and takes them from the windows.
    async fn reserve(&self, want: usize) -> Result<usize, WriteError> {
        loop {
            let notified = self.shared.window.notified();
            {
                let mut st = self.shared.lock();
                if st.gone {
                    return Err(WriteError::ConnectionGone);
                }
                let enforce = st.flow_control;
                let session = st.session_send_window;
                let Some(s) = st.streams.get_mut(&self.id) else {
                    return Err(WriteError::StreamClosed);
                };
                if s.reset || s.local_fin {
                    return Err(WriteError::StreamClosed);
                }
                let room = s.send_window.min(session);
                let n = if enforce {
                    usize::try_from(room).unwrap_or(0).min(want)
                } else {
                    want
                };
                if n > 0 {
                    let taken = i64::try_from(n).unwrap_or(i64::MAX);
                    s.send_window -= taken;
                    st.session_send_window -= taken;
                    return Ok(n);
                }
            }
            notified.await;
        }
    }

    /// Queues a frame in order.
    async fn send(&self, frame: Frame) -> Result<(), WriteError> {
        self.shared
            .ordered
            .send(Ordered::Frame(frame))
            .await
            .map_err(|_| WriteError::ConnectionGone)
    }
}

/// The server end of a SPDY connection (see the module docs). Dropping it ends the connection
/// at once.
#[derive(Debug)]
pub struct Connection {
    /// Streams the client opened, not yet taken.
    incoming: mpsc::Receiver<Stream>,
    /// The shared state.
    shared: Arc<Shared>,
    /// Whether the connection is gone.
    gone: watch::Receiver<bool>,
    /// The reading task.
    reader: JoinHandle<()>,
    /// The writing task.
    writer: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

impl Connection {
    /// Starts serving `io`; `accept` decides which streams the client may open.
    pub fn start<S>(io: S, accept: Accept) -> Connection
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (rd, wr) = tokio::io::split(io);
        let (urgent_tx, urgent_rx) = mpsc::unbounded_channel();
        let (ordered_tx, ordered_rx) = mpsc::channel(ORDERED_FRAMES);
        let (gone_tx, gone_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                streams: HashMap::new(),
                last_client_stream: 0,
                flow_control: false,
                initial_send_window: i64::from(INITIAL_WINDOW),
                session_send_window: i64::from(INITIAL_WINDOW),
                session_unacked: 0,
                client_went_away: false,
                gone: false,
            }),
            window: Notify::new(),
            urgent: urgent_tx,
            ordered: ordered_tx,
            gone: gone_tx,
            pending_pings: AtomicUsize::new(0),
        });
        let (incoming_tx, incoming_rx) = mpsc::channel(INCOMING_STREAMS);
        let reader = tokio::spawn(read_loop(rd, shared.clone(), incoming_tx, accept));
        let writer = tokio::spawn(write_loop(wr, shared.clone(), urgent_rx, ordered_rx));
        Connection {
            incoming: incoming_rx,
            shared,
            gone: gone_rx,
            reader,
            writer,
        }
    }

    /// The next stream the client opened; `None` once the connection is gone.
    pub async fn accept(&mut self) -> Option<Stream> {
        self.incoming.recv().await
    }

    /// A handle that waits for the connection's end and can end it.
    pub fn handle(&self) -> Handle {
        Handle {
            shared: self.shared.clone(),
            gone: self.gone.clone(),
        }
    }

    /// Shuts this end's write side down after everything already queued (the client reads the
    /// end of the connection; what it still sends is read and dropped).
    pub async fn shutdown(&self) {
        let _ = self.shared.ordered.send(Ordered::Shutdown).await;
    }

    /// Ends the connection cleanly: GOAWAY after everything queued, the write side shut down,
    /// then up to `wait` for the client to close its side (reading and dropping what it still
    /// sends, so that closing does not reset data it has not read yet).
    pub async fn finish(mut self, wait: Duration) {
        let handle = self.handle();
        handle.go_away(GoAwayStatus::OK).await;
        self.shutdown().await;
        let writer = &mut self.writer;
        let _ = tokio::time::timeout(wait, writer).await;
        let _ = tokio::time::timeout(wait, handle.gone()).await;
    }
}

/// A cloneable handle on a connection.
#[derive(Debug, Clone)]
pub struct Handle {
    /// The shared state.
    shared: Arc<Shared>,
    /// Whether the connection is gone.
    gone: watch::Receiver<bool>,
}

impl Handle {
    /// Resolves once the connection has ended (the client closed it, it failed, or it was
    /// dropped).
    pub async fn gone(&self) {
        let mut gone = self.gone.clone();
        let _ = gone.wait_for(|g| *g).await;
    }

    /// Sends GOAWAY (after what is already queued): this end accepts no new stream.
    pub async fn go_away(&self, status: GoAwayStatus) {
        let last_good = self.shared.lock().last_client_stream;
        let _ = self
            .shared
            .ordered
            .send(Ordered::Frame(Frame::GoAway { last_good, status }))
            .await;
    }
}

/// Reads frames until the connection ends.
async fn read_loop<R: AsyncRead + Unpin>(
    mut rd: R,
    shared: Arc<Shared>,
    incoming: mpsc::Sender<Stream>,
    accept: Accept,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 16 * 1024];
    let mut headers = Decompressor::new();
    'read: loop {
        loop {
            let parsed = match frame::parse(&buf) {
                Ok(p) => p,
                Err(e) => {
                    tracing::debug!(error = %e, "spdy: bad framing from the client");
                    protocol_error(&shared).await;
                    break 'read;
                }
            };
            let Some((frame, used)) = parsed else { break };
            buf.drain(..used);
            if let Err(e) = on_frame(frame, &shared, &incoming, &accept, &mut headers).await {
                tracing::debug!(error = %e, "spdy: the client broke the protocol");
                protocol_error(&shared).await;
                break 'read;
            }
        }
        if buf.len() >= frame::HEAD {
            let len = usize::from(buf[5]) << 16 | usize::from(buf[6]) << 8 | usize::from(buf[7]);
            if len > MAX_FRAME_READ {
                tracing::debug!(len, "spdy: a frame too large to read");
                protocol_error(&shared).await;
                break;
            }
        }
        match rd.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    shared.set_gone();
}

/// Sends GOAWAY `PROTOCOL_ERROR` (best effort).
async fn protocol_error(shared: &Shared) {
    let last_good = shared.lock().last_client_stream;
    let _ = shared.urgent.send(Urgent::Frame(Frame::GoAway {
        last_good,
        status: GoAwayStatus::PROTOCOL_ERROR,
    }));
}

/// Why the reader gave up on the connection.
#[derive(Debug, thiserror::Error)]
enum ProtocolError {
    /// A header block did not decompress: the shared zlib context is lost.
    #[error("a header block could not be read")]
    Headers(#[source] super::headers::HeaderError),
}

/// Handles one frame from the client.
async fn on_frame(
    frame: Frame,
    shared: &Arc<Shared>,
    incoming: &mpsc::Sender<Stream>,
    accept: &Accept,
    decompressor: &mut Decompressor,
) -> Result<(), ProtocolError> {
    match frame {
        Frame::SynStream {
            stream,
            fin,
            unidirectional,
            headers,
            ..
        } => {
            // Decompress first, always: the zlib context must see every block.
            let headers = decompressor
                .decompress(&headers)
                .map_err(ProtocolError::Headers)?;
            let refuse = |status| {
                let _ = shared
                    .urgent
                    .send(Urgent::Frame(Frame::RstStream { stream, status }));
            };
            let verdict = {
                let mut st = shared.lock();
                if stream % 2 == 0 || stream <= st.last_client_stream {
                    Err(RstStatus::PROTOCOL_ERROR)
                } else if st.client_went_away || st.gone {
                    Err(RstStatus::REFUSED_STREAM)
                } else {
                    st.last_client_stream = stream;
                    Ok(())
                }
            };
            if let Err(status) = verdict {
                refuse(status);
                return Ok(());
            }
            if !accept(&headers) {
                refuse(RstStatus::REFUSED_STREAM);
                return Ok(());
            }
            let (tx, rx) = mpsc::unbounded_channel();
            let buffered = Arc::new(Buffered::default());
            {
                let mut st = shared.lock();
                let send_window = st.initial_send_window;
                st.streams.insert(
                    stream,
                    StreamState {
                        inbound: (!fin).then_some(tx),
                        buffered: buffered.clone(),
                        recv_window: i64::from(INITIAL_WINDOW),
                        recv_unacked: 0,
                        send_window,
                        local_fin: unidirectional,
                        reset: false,
                    },
                );
            }
            let _ = shared.urgent.send(Urgent::Reply(stream));
            let s = Stream {
                id: stream,
                headers,
                reader: StreamReader {
                    id: stream,
                    rx,
                    buffered,
                    shared: shared.clone(),
                },
                writer: StreamWriter {
                    id: stream,
                    shared: shared.clone(),
                },
            };
            if incoming.send(s).await.is_err() {
                tracing::debug!(stream, "spdy: a stream nobody accepts");
            }
        }
        Frame::Data { stream, fin, data } => {
            let target = {
                let mut st = shared.lock();
                let len = i64::try_from(data.len()).unwrap_or(i64::MAX);
                let found = match st.streams.get_mut(&stream) {
                    Some(s) => {
                        s.recv_window -= len;
                        let tx = if fin {
                            s.inbound.take()
                        } else {
                            s.inbound.clone()
                        };
                        Some((tx, s.buffered.clone()))
                    }
                    None => None,
                };
                if fin {
                    st.retire(stream);
                }
                found
            };
            let Some((tx, buffered)) = target else {
                let _ = shared.urgent.send(Urgent::Frame(Frame::RstStream {
                    stream,
                    status: RstStatus::INVALID_STREAM,
                }));
                return Ok(());
            };
            let Some(tx) = tx else {
                // After the client's FIN or a reset: dropped, as spdystream drops it.
                return Ok(());
            };
            if !data.is_empty() {
                let n = data.len();
                if tx.send(data).is_ok() {
                    buffered.bytes.fetch_add(n, Ordering::AcqRel);
                    wait_for_room(&buffered).await;
                } else {
                    // Nobody reads this stream: give the bytes back at once.
                    shared.credit(stream, n);
                }
            }
        }
        Frame::RstStream { stream, .. } => {
            let mut st = shared.lock();
            if let Some(s) = st.streams.get_mut(&stream) {
                s.reset = true;
                s.inbound = None;
            }
            st.retire(stream);
            drop(st);
            shared.window.notify_waiters();
        }
        Frame::Settings { entries, .. } => {
            let mut st = shared.lock();
            for e in entries {
                if e.id == setting::INITIAL_WINDOW_SIZE {
                    let new = i64::from(e.value & 0x7fff_ffff);
                    let delta = new - st.initial_send_window;
                    st.initial_send_window = new;
                    st.flow_control = true;
                    for s in st.streams.values_mut() {
                        s.send_window += delta;
                    }
                }
            }
            drop(st);
            shared.window.notify_waiters();
        }
        Frame::WindowUpdate { stream, delta } => {
            let mut st = shared.lock();
            st.flow_control = true;
            if stream == 0 {
                st.session_send_window += i64::from(delta);
            } else if let Some(s) = st.streams.get_mut(&stream) {
                s.send_window += i64::from(delta);
            }
            drop(st);
            shared.window.notify_waiters();
        }
        Frame::Ping { id } => {
            // Odd ids are the client's: echo them. Even ones would answer ours (none sent).
            if id % 2 == 1
                && shared.pending_pings.fetch_add(1, Ordering::AcqRel) < MAX_PENDING_PINGS
            {
                let _ = shared.urgent.send(Urgent::Frame(Frame::Ping { id }));
            } else if id % 2 == 1 {
                shared.pending_pings.fetch_sub(1, Ordering::AcqRel);
            }
        }
        Frame::GoAway { .. } => {
            shared.lock().client_went_away = true;
        }
        Frame::Headers {
            stream,
            fin,
            headers,
        } => {
            decompressor
                .decompress(&headers)
                .map_err(ProtocolError::Headers)?;
            if fin {
                let mut st = shared.lock();
                if let Some(s) = st.streams.get_mut(&stream) {
                    s.inbound = None;
                }
                st.retire(stream);
            }
        }
        Frame::SynReply {
            stream, headers, ..
        } => {
            // This end opens no streams, so no reply is expected; its block still counts.
            decompressor
                .decompress(&headers)
                .map_err(ProtocolError::Headers)?;
            let _ = shared.urgent.send(Urgent::Frame(Frame::RstStream {
                stream,
                status: RstStatus::INVALID_STREAM,
            }));
        }
        Frame::Unknown { kind, .. } => {
            tracing::trace!(kind, "spdy: an unknown control frame ignored");
        }
    }
    Ok(())
}

/// Waits while a stream holds more than a window's worth of unread data (a client that
/// ignores flow control is slowed down to the caller's pace); returns at once when the caller
/// dropped its reader or the connection ended.
async fn wait_for_room(buffered: &Buffered) {
    loop {
        let drained = buffered.drained.notified();
        if buffered.abandoned.load(Ordering::Acquire)
            || buffered.bytes.load(Ordering::Acquire) <= INITIAL_WINDOW as usize
        {
            return;
        }
        drained.await;
    }
}

/// Writes urgent frames first, then ordered ones, until a shutdown or a failure.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    shared: Arc<Shared>,
    mut urgent: mpsc::UnboundedReceiver<Urgent>,
    mut ordered: mpsc::Receiver<Ordered>,
) {
    let mut compressor = match Compressor::new() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "spdy: zlib would not start");
            shared.set_gone();
            return;
        }
    };
    let mut out = Vec::with_capacity(32 * 1024);
    loop {
        let next = tokio::select! {
            biased;
            u = urgent.recv() => match u {
                Some(Urgent::Frame(f @ Frame::Ping { .. })) => {
                    shared.pending_pings.fetch_sub(1, Ordering::AcqRel);
                    Some(f)
                }
                Some(Urgent::Frame(f)) => Some(f),
                Some(Urgent::Reply(stream)) => match compressor.compress(&Headers::new()) {
                    Ok(block) => Some(Frame::SynReply { stream, fin: false, headers: block.into() }),
                    Err(e) => {
                        tracing::warn!(error = %e, "spdy: a reply's headers");
                        break;
                    }
                },
                None => break,
            },
            o = ordered.recv() => match o {
                Some(Ordered::Frame(f)) => Some(f),
                Some(Ordered::Shutdown) | None => {
                    if wr.write_all(&out).await.is_ok() {
                        let _ = wr.flush().await;
                    }
                    let _ = wr.shutdown().await;
                    return;
                }
            },
        };
        if let Some(f) = next
            && let Err(e) = frame::encode(&f, &mut out)
        {
            tracing::warn!(error = %e, "spdy: a frame that cannot be encoded");
        }
        if urgent.is_empty() && ordered.is_empty() || out.len() >= 64 * 1024 {
            let written = match wr.write_all(&out).await {
                Ok(()) => wr.flush().await,
                Err(e) => Err(e),
            };
            out.clear();
            if written.is_err() {
                break;
            }
        }
    }
    shared.set_gone();
}

#[cfg(test)]
mod tests;
