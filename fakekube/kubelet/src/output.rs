//! What a container instance's main process printed: its log (the last [`OUTPUT_TAIL`] bytes,
//! line by line, each line with the time its first byte was written, as the container runtime
//! records them for `pods/log`), a live feed of chunks (for attach) and of log pieces (for
//! `logs -f`), and whether the instance's output has ended.

use crate::clock::Clock;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Mutex;
use time::OffsetDateTime;
use tokio::sync::{broadcast, mpsc, watch};

/// How much of a main process's output is kept.
pub const OUTPUT_TAIL: usize = 64 * 1024;

/// How many chunks an attached reader or a follower may fall behind before it misses some.
const LIVE_CHUNKS: usize = 256;

/// One line of the log (ending in `\n`, or the last line while it is still being written),
/// with the time its first byte was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// When the line began.
    pub at: OffsetDateTime,
    /// Its bytes, the newline included.
    pub bytes: Bytes,
}

impl Line {
    /// Whether the line is complete (ends in a newline).
    pub fn complete(&self) -> bool {
        self.bytes.last() == Some(&b'\n')
    }
}

/// The output of one run of a container (stdout and stderr interleaved, as `kubectl logs`
/// shows them), each line stamped with the cluster's time it was written at.
#[derive(Debug)]
pub struct OutputLog {
    kept: Mutex<Kept>,
    /// `true` once the run's output has ended (its streams closed, or it was given up on).
    ended: watch::Sender<bool>,
    /// What the lines' times are read from.
    clock: Clock,
}

impl Default for OutputLog {
    fn default() -> Self {
        OutputLog::with_clock(Clock::default())
    }
}

/// What an [`OutputLog`] holds, under one lock.
#[derive(Debug, Default)]
struct Kept {
    /// The last lines written, at most [`OUTPUT_TAIL`] bytes in all.
    lines: VecDeque<Line>,
    /// The bytes in `lines`.
    bytes: usize,
    /// Every chunk as it is written, from the first attach on: most containers are never
    /// attached to, and a feed costs [`LIVE_CHUNKS`] slots up front.
    live: Option<broadcast::Sender<Bytes>>,
    /// Every piece of a line as it is written (with the time it was written), from the first
    /// follower on.
    follow: Option<broadcast::Sender<Line>>,
}

/// A follower's view of a log: the lines kept when it subscribed, what is written after, and
/// when the output ends.
#[derive(Debug)]
pub struct Follow {
    /// The lines kept at subscription time.
    pub kept: Vec<Line>,
    /// Pieces written after (a piece may continue the last kept line).
    pub pieces: broadcast::Receiver<Line>,
    /// Turns `true` when the output has ended.
    pub ended: watch::Receiver<bool>,
}

impl OutputLog {
    /// An empty log whose lines are stamped with `clock`'s time.
    pub fn with_clock(clock: Clock) -> Self {
        OutputLog {
            kept: Mutex::new(Kept::default()),
            ended: watch::channel(false).0,
            clock,
        }
    }

    /// Appends a chunk written now.
    pub fn push(&self, chunk: &Bytes) {
        self.push_at(chunk, self.clock.now_utc());
    }

    /// Appends a chunk written at `at`: it continues the last line if that one is not
    /// complete, and starts a line after each newline; the oldest lines go beyond
    /// [`OUTPUT_TAIL`] bytes.
    pub fn push_at(&self, chunk: &Bytes, at: OffsetDateTime) {
        if chunk.is_empty() {
            return;
        }
        let mut kept = self.lock();
        // Sent under the lock so a subscriber never misses or doubles a chunk against the log.
        if let Some(live) = &kept.live {
            let _ = live.send(chunk.clone());
        }
        let mut rest = chunk.clone();
        while !rest.is_empty() {
            let end = rest
                .iter()
                .position(|b| *b == b'\n')
                .map_or(rest.len(), |i| i + 1);
            let piece = rest.split_to(end);
            if let Some(follow) = &kept.follow {
                let _ = follow.send(Line {
                    at,
                    bytes: piece.clone(),
                });
            }
            kept.bytes += piece.len();
            match kept.lines.back_mut() {
                Some(last) if !last.complete() => {
                    let mut joined = Vec::with_capacity(last.bytes.len() + piece.len());
                    joined.extend_from_slice(&last.bytes);
                    joined.extend_from_slice(&piece);
                    last.bytes = Bytes::from(joined);
                }
                _ => kept.lines.push_back(Line { at, bytes: piece }),
            }
        }
        let kept = &mut *kept;
        while kept.bytes > OUTPUT_TAIL {
            let excess = kept.bytes - OUTPUT_TAIL;
            let Some(first) = kept.lines.front_mut() else {
                break;
            };
            if first.bytes.len() <= excess {
                kept.bytes -= first.bytes.len();
                kept.lines.pop_front();
            } else {
                // Keep the end of an overlong line.
                first.bytes = first.bytes.slice(excess..);
                kept.bytes -= excess;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The kept output, as bytes.
    pub fn tail(&self) -> Vec<u8> {
        let kept = self.lock();
        let mut out = Vec::with_capacity(kept.bytes);
        for l in &kept.lines {
            out.extend_from_slice(&l.bytes);
        }
        out
    }

    /// The kept lines.
    pub fn lines(&self) -> Vec<Line> {
        self.lock().lines.iter().cloned().collect()
    }

    /// The output written from now on, chunk by chunk (for attach).
    pub fn subscribe(&self) -> broadcast::Receiver<Bytes> {
        self.lock()
            .live
            .get_or_insert_with(|| broadcast::channel(LIVE_CHUNKS).0)
            .subscribe()
    }

    /// The kept lines and what is written after them, without a gap or an overlap between
    /// the two, and the end of the output.
    pub fn follow(&self) -> Follow {
        let mut kept = self.lock();
        let pieces = kept
            .follow
            .get_or_insert_with(|| broadcast::channel(LIVE_CHUNKS).0)
            .subscribe();
        Follow {
            kept: kept.lines.iter().cloned().collect(),
            pieces,
            ended: self.ended.subscribe(),
        }
    }

    /// Marks the output as ended: followers stop once they have read it all.
    pub fn finish(&self) {
        self.ended.send_replace(true);
    }

    /// Copies a process's stdout and stderr into the log until both are closed, then marks
    /// the output as ended.
    pub async fn drain(&self, mut out: mpsc::Receiver<Bytes>, mut err: mpsc::Receiver<Bytes>) {
        let (mut out_open, mut err_open) = (true, true);
        while out_open || err_open {
            tokio::select! {
                chunk = out.recv(), if out_open => match chunk {
                    Some(c) => self.push(&c),
                    None => out_open = false,
                },
                chunk = err.recv(), if err_open => match chunk {
                    Some(c) => self.push(&c),
                    None => err_open = false,
                },
            }
        }
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(s)
    }

    #[test]
    fn the_log_keeps_only_the_last_64_kib() {
        let log = OutputLog::default();
        log.push(&Bytes::from(vec![b'a'; OUTPUT_TAIL]));
        log.push(&Bytes::from_static(b"xyz"));
        let tail = log.tail();
        assert_eq!(tail.len(), OUTPUT_TAIL);
        assert!(tail.ends_with(b"aaxyz"));
        log.push(&Bytes::from(vec![b'b'; OUTPUT_TAIL + 10]));
        assert_eq!(log.tail(), vec![b'b'; OUTPUT_TAIL]);
    }

    #[test]
    fn lines_keep_the_time_their_first_byte_was_written() {
        let log = OutputLog::default();
        log.push_at(&Bytes::from_static(b"one\ntw"), at(1));
        log.push_at(&Bytes::from_static(b"o\nthree"), at(2));
        let lines = log.lines();
        let shown: Vec<(&[u8], OffsetDateTime)> =
            lines.iter().map(|l| (&l.bytes[..], l.at)).collect();
        assert_eq!(
            shown,
            vec![
                (&b"one\n"[..], at(1)),
                (&b"two\n"[..], at(1)),
                (&b"three"[..], at(2))
            ]
        );
        assert!(!lines[2].complete());
    }

    #[test]
    fn old_lines_go_first_when_the_log_is_full() {
        let log = OutputLog::default();
        let line = Bytes::from(
            vec![b'x'; 1023]
                .into_iter()
                .chain([b'\n'])
                .collect::<Vec<_>>(),
        );
        for i in 0..70 {
            log.push_at(&line, at(i));
        }
        let lines = log.lines();
        assert_eq!(lines.len(), 64);
        assert_eq!(lines[0].at, at(6));
    }

    #[tokio::test]
    async fn subscribers_see_chunks_written_after_they_subscribe() {
        let log = OutputLog::default();
        log.push(&Bytes::from_static(b"before"));
        let mut rx = log.subscribe();
        log.push(&Bytes::from_static(b"after"));
        assert_eq!(rx.recv().await.ok(), Some(Bytes::from_static(b"after")));
    }

    #[tokio::test]
    async fn a_follower_gets_the_kept_lines_then_new_pieces_then_the_end() {
        let log = OutputLog::default();
        log.push_at(&Bytes::from_static(b"kept\n"), at(1));
        let mut f = log.follow();
        assert_eq!(f.kept.len(), 1);
        log.push_at(&Bytes::from_static(b"new\nhalf"), at(2));
        assert_eq!(
            f.pieces.recv().await.ok().map(|l| l.bytes),
            Some(Bytes::from_static(b"new\n"))
        );
        assert_eq!(
            f.pieces.recv().await.ok().map(|l| l.bytes),
            Some(Bytes::from_static(b"half"))
        );
        assert!(!*f.ended.borrow());
        log.finish();
        assert!(f.ended.changed().await.is_ok());
        assert!(*f.ended.borrow());
    }

    #[tokio::test]
    async fn drain_interleaves_both_streams_until_they_close_then_ends() {
        let log = OutputLog::default();
        let (otx, orx) = mpsc::channel(4);
        let (etx, erx) = mpsc::channel(4);
        otx.send(Bytes::from_static(b"out\n")).await.ok();
        drop(otx);
        etx.send(Bytes::from_static(b"err\n")).await.ok();
        drop(etx);
        log.drain(orx, erx).await;
        let tail = String::from_utf8(log.tail()).unwrap_or_default();
        assert!(tail.contains("out\n") && tail.contains("err\n"), "{tail}");
        assert!(*log.follow().ended.borrow());
    }
}
