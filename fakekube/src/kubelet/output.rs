//! What a container's main process printed: the last [`OUTPUT_TAIL`] bytes (for logs and
//! termination messages) and a live feed (for attach).

use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::{broadcast, mpsc};

/// How much of a main process's output is kept.
pub(crate) const OUTPUT_TAIL: usize = 64 * 1024;

/// How many chunks an attached reader may fall behind before it misses some.
const LIVE_CHUNKS: usize = 256;

/// The output of one run of a container (stdout and stderr interleaved, as `kubectl logs`
/// shows them).
#[derive(Default)]
pub(crate) struct OutputLog {
    kept: Mutex<Kept>,
}

/// What an [`OutputLog`] holds, under one lock.
#[derive(Default)]
struct Kept {
    /// The last bytes written.
    tail: VecDeque<u8>,
    /// Every chunk as it is written, from the first subscription on: most containers are never
    /// attached to, and a feed costs [`LIVE_CHUNKS`] slots up front.
    live: Option<broadcast::Sender<Bytes>>,
}

impl std::fmt::Debug for OutputLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.kept.lock().map(|k| k.tail.len()).unwrap_or(0);
        f.debug_struct("OutputLog").field("kept", &len).finish()
    }
}

impl OutputLog {
    /// Appends a chunk, dropping the oldest bytes beyond [`OUTPUT_TAIL`].
    pub(crate) fn push(&self, chunk: &Bytes) {
        let mut kept = self.lock();
        let keep = chunk.len().min(OUTPUT_TAIL);
        let start = chunk.len() - keep;
        kept.tail.extend(chunk.iter().skip(start));
        let excess = kept.tail.len().saturating_sub(OUTPUT_TAIL);
        kept.tail.drain(..excess);
        // Sent under the lock so a subscriber never misses or doubles a chunk against the tail.
        if let Some(live) = &kept.live {
            let _ = live.send(chunk.clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The kept output.
    pub(crate) fn tail(&self) -> Vec<u8> {
        self.lock().tail.iter().copied().collect()
    }

    /// The output written from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Bytes> {
        self.lock()
            .live
            .get_or_insert_with(|| broadcast::channel(LIVE_CHUNKS).0)
            .subscribe()
    }

    /// Copies a process's stdout and stderr into the log until both are closed.
    pub(crate) async fn drain(
        &self,
        mut out: mpsc::Receiver<Bytes>,
        mut err: mpsc::Receiver<Bytes>,
    ) {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[tokio::test]
    async fn subscribers_see_chunks_written_after_they_subscribe() {
        let log = OutputLog::default();
        log.push(&Bytes::from_static(b"before"));
        let mut rx = log.subscribe();
        log.push(&Bytes::from_static(b"after"));
        assert_eq!(rx.recv().await.ok(), Some(Bytes::from_static(b"after")));
    }

    #[tokio::test]
    async fn every_subscriber_sees_chunks_written_after_it_subscribed() {
        let log = OutputLog::default();
        let mut first = log.subscribe();
        log.push(&Bytes::from_static(b"one"));
        let mut second = log.subscribe();
        log.push(&Bytes::from_static(b"two"));
        assert_eq!(first.recv().await.ok(), Some(Bytes::from_static(b"one")));
        assert_eq!(first.recv().await.ok(), Some(Bytes::from_static(b"two")));
        assert_eq!(second.recv().await.ok(), Some(Bytes::from_static(b"two")));
    }

    #[tokio::test]
    async fn drain_interleaves_both_streams_until_they_close() {
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
    }
}
