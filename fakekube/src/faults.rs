//! Faults a test can switch on while the server runs: throttling, slow responses, failing list
//! pages, exec without v5, exec connections dropped mid-output.

use crate::status::ApiError;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// The faults of one server. Every fault is off at start.
#[derive(Debug, Default)]
pub struct Faults {
    throttle_one_in: AtomicU32,
    retry_after_secs: AtomicU64,
    counter: AtomicU32,
    delay: Mutex<Duration>,
    fail_continued_lists: AtomicBool,
    v4_only_exec: AtomicBool,
    drop_exec_after_bytes: Mutex<Option<usize>>,
}

impl Faults {
    /// Answers one resource request in `n` with 429 `TooManyRequests` and `Retry-After: secs`
    /// (0 switches it off).
    pub fn throttle_one_in(&self, n: u32, retry_after_secs: u64) {
        self.retry_after_secs
            .store(retry_after_secs, Ordering::SeqCst);
        self.counter.store(0, Ordering::SeqCst);
        self.throttle_one_in.store(n, Ordering::SeqCst);
    }

    /// Delays every resource request by `delay` (zero switches it off).
    pub fn slow_responses(&self, delay: Duration) {
        if let Ok(mut d) = self.delay.lock() {
            *d = delay;
        }
    }

    /// Makes every list page after the first (a request with `continue`) fail with a 500.
    pub fn fail_continued_lists(&self, on: bool) {
        self.fail_continued_lists.store(on, Ordering::SeqCst);
    }

    /// Refuses the v5 exec subprotocol as an API server older than 1.30 does: a client that
    /// also offers v4 gets v4; one that offers only v5 (kubectl 1.30+) gets the handshake's 403
    /// and falls back to SPDY.
    pub fn v4_only_exec(&self, on: bool) {
        self.v4_only_exec.store(on, Ordering::SeqCst);
    }

    /// Drops the TCP connection of every exec and attach session after `bytes` bytes of output,
    /// with no status and no Close frame (`None` switches it off).
    pub fn drop_exec_after_bytes(&self, bytes: Option<usize>) {
        if let Ok(mut d) = self.drop_exec_after_bytes.lock() {
            *d = bytes;
        }
    }

    /// Whether v5 is refused in exec negotiation.
    pub(crate) fn exec_v4_only(&self) -> bool {
        self.v4_only_exec.load(Ordering::SeqCst)
    }

    /// After how many output bytes exec sessions are dropped.
    pub(crate) fn exec_drop_after(&self) -> Option<usize> {
        self.drop_exec_after_bytes
            .lock()
            .map(|d| *d)
            .unwrap_or(None)
    }

    /// Applies the request-level faults to a resource request (slow responses, throttling);
    /// `Some` is the error to answer instead.
    pub(crate) async fn before_resource_request(&self) -> Option<ApiError> {
        let delay = self.delay.lock().map(|d| *d).unwrap_or_default();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let n = self.throttle_one_in.load(Ordering::SeqCst);
        if n > 0 {
            let c = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
            if c.is_multiple_of(n) {
                let secs = self.retry_after_secs.load(Ordering::SeqCst);
                return Some(ApiError::too_many_requests(secs));
            }
        }
        None
    }

    /// The error for a list page, when the fault applies.
    pub(crate) fn list_page(&self, continued: bool) -> Option<ApiError> {
        (continued && self.fail_continued_lists.load(Ordering::SeqCst))
            .then(|| ApiError::internal("etcdserver: request timed out (injected by fakekube)"))
    }
}
