//! Standard streams of the runtime's processes ([`Stdio`]): bounded, chunked and cancellable.
//!
//! Every producer writes through an [`Output`] that splits data into chunks of at most [`CHUNK`]
//! bytes and awaits channel capacity, so a slow reader slows the writer and memory stays bounded.
//! An [`Input`] is shared by the commands that read it in turn (as a file descriptor is shared by a
//! shell and its children), so `{ read a; cat; }` sees the rest of the stream.

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use super::fs::{Device, FsError, PodFs, ReadTarget, WriteTarget};
use super::tty::Terminal;

/// Largest chunk any writer sends at once.
pub const CHUNK: usize = 32 * 1024;
/// Chunks a pipe between two commands holds before the writer waits (at most 128 KiB).
pub const PIPE_CHUNKS: usize = 4;
/// Most bytes a command substitution keeps; the rest of its output is discarded.
pub const CAPTURE_LIMIT: usize = 16 * 1024 * 1024;

/// Why a write failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The reader went away (EPIPE); a real process would die of SIGPIPE.
    #[error("Broken pipe")]
    BrokenPipe,
    /// The file behind a redirection could not take the data.
    #[error(transparent)]
    Fs(#[from] FsError),
}

/// Where an [`Input`] gets its bytes.
#[derive(Debug)]
enum Source {
    /// Nothing: end of input at once.
    Empty,
    /// A channel (the exec's stdin or a pipe); a closed channel is end of input.
    Channel(mpsc::Receiver<Bytes>),
    /// A regular file, read in chunks from an offset.
    File {
        /// The filesystem holding it.
        fs: PodFs,
        /// Normalised absolute path.
        path: String,
        /// Bytes already read.
        offset: usize,
    },
    /// `/dev/zero` (and reading `/dev/full`).
    Zero,
    /// `/dev/random`, `/dev/urandom`.
    Random,
    /// A terminal's input, fed by its line discipline: each chunk with the terminal's flush
    /// count when it was typed (older than the terminal's: dropped by `^C`); an empty chunk is
    /// end of input for one read (`^D`), a closed channel for good.
    Terminal(mpsc::Receiver<(u64, Bytes)>, Terminal),
}

/// Shared state of an input stream.
#[derive(Debug)]
struct InputState {
    /// Where more bytes come from.
    source: Source,
    /// Bytes read from the source but handed back (`unread`) or not yet consumed.
    pending: Bytes,
}

/// A readable stream shared by every command that holds a clone of it.
#[derive(Debug, Clone)]
pub struct Input(Arc<tokio::sync::Mutex<InputState>>);

impl Input {
    /// Wraps a source.
    fn from_source(source: Source) -> Self {
        Input(Arc::new(tokio::sync::Mutex::new(InputState {
            source,
            pending: Bytes::new(),
        })))
    }

    /// An input that is at end of file at once (`/dev/null`, a closed stdin).
    pub fn empty() -> Self {
        Self::from_source(Source::Empty)
    }

    /// An input fed by a channel; end of input when every sender is gone.
    pub fn channel(rx: mpsc::Receiver<Bytes>) -> Self {
        Self::from_source(Source::Channel(rx))
    }

    /// A terminal's input: chunks from its line discipline, an empty one meaning end of input
    /// for one read.
    pub fn terminal(rx: mpsc::Receiver<(u64, Bytes)>, term: Terminal) -> Self {
        Self::from_source(Source::Terminal(rx, term))
    }

    /// The terminal this input reads, if it is one (`isatty(0)`).
    pub async fn tty(&self) -> Option<Terminal> {
        match &self.0.lock().await.source {
            Source::Terminal(_, term) => Some(term.clone()),
            _ => None,
        }
    }

    /// An input holding fixed bytes (here-documents).
    pub fn bytes(data: Bytes) -> Self {
        Input(Arc::new(tokio::sync::Mutex::new(InputState {
            source: Source::Empty,
            pending: data,
        })))
    }

    /// Opens a path for reading (`< path`, `cat path`); `/dev/stdin` and `/dev/fd/0` are
    /// `fds`'s stdin (reading stdout or stderr gives nothing).
    pub fn open(fs: &PodFs, path: &str, fds: &Stdio) -> Result<Self, FsError> {
        Ok(match fs.open_read(path)? {
            ReadTarget::File(path) => Self::from_source(Source::File {
                fs: fs.clone(),
                path,
                offset: 0,
            }),
            ReadTarget::Device(Device::Fd(0)) => fds.stdin.clone(),
            ReadTarget::Device(Device::Null | Device::Fd(_)) => Self::empty(),
            ReadTarget::Device(Device::Zero | Device::Full) => Self::from_source(Source::Zero),
            ReadTarget::Device(Device::Random) => Self::from_source(Source::Random),
        })
    }

    /// The next chunk, or `None` at end of input. A read error ends the input.
    pub async fn read(&self) -> Option<Bytes> {
        tokio::task::consume_budget().await;
        let mut state = self.0.lock().await;
        if !state.pending.is_empty() {
            return Some(std::mem::take(&mut state.pending));
        }
        match &mut state.source {
            Source::Empty => None,
            Source::Channel(rx) => loop {
                match rx.recv().await {
                    Some(chunk) if chunk.is_empty() => continue,
                    other => return other,
                }
            },
            Source::File { fs, path, offset } => {
                let chunk = fs.read_at(path, *offset, CHUNK).ok()?;
                if chunk.is_empty() {
                    return None;
                }
                *offset = offset.saturating_add(chunk.len());
                Some(chunk)
            }
            Source::Zero => Some(Bytes::from_static(&ZEROS)),
            Source::Random => Some(Bytes::from(crate::random::bytes(CHUNK))),
            Source::Terminal(rx, term) => loop {
                let (epoch, chunk) = rx.recv().await?;
                if epoch < term.flushes() {
                    continue;
                }
                return (!chunk.is_empty()).then_some(chunk);
            },
        }
    }

    /// Hands bytes back so the next read returns them first (a command read more than it used).
    pub async fn unread(&self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        let mut state = self.0.lock().await;
        if state.pending.is_empty() {
            state.pending = data;
        } else {
            let mut joined = BytesMut::with_capacity(data.len() + state.pending.len());
            joined.extend_from_slice(&data);
            joined.extend_from_slice(&state.pending);
            state.pending = joined.freeze();
        }
    }

    /// One line, newline included when present; `None` at end of input. Lines longer than `max`
    /// are cut there.
    pub async fn read_line(&self, max: usize) -> Option<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            let Some(chunk) = self.read().await else {
                return if line.is_empty() { None } else { Some(line) };
            };
            let room = max.saturating_sub(line.len());
            if let Some(pos) = chunk.iter().take(room).position(|b| *b == b'\n') {
                line.extend_from_slice(&chunk[..=pos]);
                self.unread(chunk.slice(pos + 1..)).await;
                return Some(line);
            }
            if chunk.len() >= room {
                line.extend_from_slice(&chunk[..room]);
                self.unread(chunk.slice(room..)).await;
                return Some(line);
            }
            line.extend_from_slice(&chunk);
        }
    }

    /// Everything up to end of input, at most `max` bytes (the rest is left unread).
    pub async fn read_to_end(&self, max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some(chunk) = self.read().await else {
                break;
            };
            let room = max - out.len();
            if chunk.len() > room {
                out.extend_from_slice(&chunk[..room]);
                self.unread(chunk.slice(room..)).await;
                break;
            }
            out.extend_from_slice(&chunk);
        }
        out
    }
}

/// A chunk of zero bytes, the unit `/dev/zero` reads in.
static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// Bytes collected by a command substitution.
#[derive(Debug, Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    /// Takes what was collected.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// A writable stream; clones write to the same place (`2>&1`).
#[derive(Debug, Clone)]
pub struct Output(Sink);

/// Where an [`Output`] puts its bytes.
#[derive(Debug, Clone)]
enum Sink {
    /// Writes vanish (`/dev/null`).
    Null,
    /// A bounded channel: the exec's stdout/stderr or a pipe.
    Channel(mpsc::Sender<Bytes>),
    /// Appends to a regular file.
    File {
        /// The filesystem holding it.
        fs: PodFs,
        /// Normalised absolute path.
        path: Arc<str>,
    },
    /// Collects output for `$(...)`, up to [`CAPTURE_LIMIT`].
    Capture(Capture),
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// A terminal: output is translated (ONLCR) and sent to the terminal's channel.
    Terminal(mpsc::Sender<Bytes>, Terminal),
}

impl Output {
    /// An output where writes vanish, as on `/dev/null`.
    pub fn null() -> Self {
        Output(Sink::Null)
    }

    /// An output into a channel, in chunks of at most [`CHUNK`] bytes; give it a bounded one, so
    /// a slow reader slows the writer. Writes fail with [`WriteError::BrokenPipe`] once the
    /// receiver is gone.
    pub fn channel(tx: mpsc::Sender<Bytes>) -> Self {
        Output(Sink::Channel(tx))
    }

    /// An output to a terminal, whose channel carries what the terminal shows.
    pub fn terminal(tx: mpsc::Sender<Bytes>, term: Terminal) -> Self {
        Output(Sink::Terminal(tx, term))
    }

    /// The terminal this output writes to, if it is one (`isatty(1)`).
    pub fn tty(&self) -> Option<&Terminal> {
        match &self.0 {
            Sink::Terminal(_, term) => Some(term),
            _ => None,
        }
    }

    /// Opens a path for writing (`> path` truncates, `>> path` appends); `/dev/stdout`,
    /// `/dev/stderr` and `/dev/fd/1`, `/dev/fd/2` are `fds`'s streams.
    pub fn open(fs: &PodFs, path: &str, append: bool, fds: &Stdio) -> Result<Self, FsError> {
        Ok(match fs.open_write(path, !append)? {
            WriteTarget::File(path) => Output(Sink::File {
                fs: fs.clone(),
                path: path.into(),
            }),
            WriteTarget::Device(Device::Fd(1)) => fds.stdout.clone(),
            WriteTarget::Device(Device::Fd(2)) => fds.stderr.clone(),
            WriteTarget::Device(Device::Full) => Output(Sink::Full),
            WriteTarget::Device(_) => Output::null(),
        })
    }

    /// A collector for command substitution, and the handle to read it back.
    pub fn capture() -> (Self, Capture) {
        let c = Capture::default();
        (Output(Sink::Capture(c.clone())), c)
    }

    /// Writes all of `data`, in chunks, waiting for the reader as needed.
    pub async fn write(&self, data: Bytes) -> Result<(), WriteError> {
        let mut rest = data;
        while !rest.is_empty() {
            tokio::task::consume_budget().await;
            let limit = if matches!(self.0, Sink::Terminal(..)) {
                CHUNK / 2
            } else {
                CHUNK
            };
            let chunk = rest.split_to(rest.len().min(limit));
            match &self.0 {
                Sink::Terminal(tx, term) => tx
                    .send(term.translate_output(chunk))
                    .await
                    .map_err(|_| WriteError::BrokenPipe)?,
                Sink::Null => {}
                Sink::Full => return Err(WriteError::Fs(FsError::NoSpace)),
                Sink::Channel(tx) => tx.send(chunk).await.map_err(|_| WriteError::BrokenPipe)?,
                Sink::File { fs, path } => fs.append(path, &chunk)?,
                Sink::Capture(c) => {
                    let mut buf = c.0.lock().unwrap_or_else(|p| p.into_inner());
                    let room = CAPTURE_LIMIT.saturating_sub(buf.len());
                    buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
            }
        }
        Ok(())
    }

    /// Writes text.
    pub async fn write_str(&self, s: &str) -> Result<(), WriteError> {
        self.write(Bytes::copy_from_slice(s.as_bytes())).await
    }
}

/// The three standard streams of a process.
#[derive(Debug, Clone)]
pub struct Stdio {
    /// Standard input.
    pub stdin: Input,
    /// Standard output.
    pub stdout: Output,
    /// Standard error.
    pub stderr: Output,
}

/// A bounded pipe: what is written to the [`Output`] is read from the [`Input`].
pub fn pipe() -> (Output, Input) {
    let (tx, rx) = mpsc::channel(PIPE_CHUNKS);
    (Output::channel(tx), Input::channel(rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_are_split_into_bounded_chunks() {
        let (tx, mut rx) = mpsc::channel(16);
        let out = Output::channel(tx);
        let data = Bytes::from(vec![7u8; CHUNK * 2 + 5]);
        assert_eq!(out.write(data).await, Ok(()));
        drop(out);
        let mut sizes = Vec::new();
        while let Some(c) = rx.recv().await {
            sizes.push(c.len());
        }
        assert_eq!(sizes, vec![CHUNK, CHUNK, 5]);
    }

    #[tokio::test]
    async fn writing_to_a_closed_pipe_is_a_broken_pipe() {
        let (out, input) = pipe();
        drop(input);
        assert_eq!(out.write_str("x").await, Err(WriteError::BrokenPipe));
    }

    #[tokio::test]
    async fn read_line_leaves_the_rest_for_the_next_reader() {
        let input = Input::bytes(Bytes::from_static(b"one\ntwo\nthree"));
        assert_eq!(input.read_line(1024).await, Some(b"one\n".to_vec()));
        assert_eq!(input.read_to_end(1024).await, b"two\nthree".to_vec());
        assert_eq!(input.read().await, None);
    }

    #[tokio::test]
    async fn capture_keeps_at_most_the_limit() {
        let (out, cap) = Output::capture();
        assert_eq!(
            out.write(Bytes::from(vec![1u8; CAPTURE_LIMIT + 10])).await,
            Ok(())
        );
        assert_eq!(cap.take().len(), CAPTURE_LIMIT);
    }
}
