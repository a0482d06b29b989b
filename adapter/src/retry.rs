//! Which failed requests are sent again, as client-go's REST client decides it (its
//! `checkWait` and the retryable-error check of `rest.Request`): an answer of 429 or any 5xx
//! that carries `Retry-After` in whole seconds, after that many seconds, whatever the method
//! (the body is kept, so it can be sent again); a connection reset or closed before the answer
//! came, for a GET only (writes are not idempotent); nothing else. At most [`MAX_RETRIES`]
//! times, and never past [`MAX_WAIT`] of waiting in all, so an operation keeps to its timeout.

use std::time::Duration;

use http::{HeaderMap, Method, StatusCode, header};

/// Retries of one request (client-go's default `maxRetries`).
pub(crate) const MAX_RETRIES: u32 = 10;

/// The most one request waits across its retries.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(30);

/// The wait before sending a GET again after its connection broke (client-go waits a second;
/// a broken loopback connection is worth trying again sooner).
const RESET_WAIT: Duration = Duration::from_millis(100);

/// The retry state of one request.
#[derive(Debug, Default)]
pub(crate) struct Retries {
    /// Retries made.
    made: u32,
    /// Time waited so far.
    waited: Duration,
}

impl Retries {
    /// How long to wait before sending again after an answer of `status` with `headers`, or
    /// `None` when the answer stands.
    pub(crate) fn after_answer(
        &mut self,
        status: StatusCode,
        headers: &HeaderMap,
    ) -> Option<Duration> {
        if !(status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()) {
            return None;
        }
        let secs = headers
            .get(header::RETRY_AFTER)?
            .to_str()
            .ok()?
            .trim()
            .parse::<u64>()
            .ok()?;
        self.take(Duration::from_secs(secs))
    }

    /// How long to wait before sending a `method` request again after its connection failed
    /// with `error` before an answer came, or `None` when the failure stands.
    pub(crate) fn after_failure(
        &mut self,
        method: &Method,
        error: &(dyn std::error::Error + 'static),
    ) -> Option<Duration> {
        if method != Method::GET || !is_connection_reset(error) {
            return None;
        }
        self.take(RESET_WAIT)
    }

    /// Counts a retry that waits `wait`, if the caps allow it.
    fn take(&mut self, wait: Duration) -> Option<Duration> {
        if self.made >= MAX_RETRIES || self.waited + wait > MAX_WAIT {
            return None;
        }
        self.made += 1;
        self.waited += wait;
        Some(wait)
    }
}

/// Whether `error` (or a cause of it) says the connection was reset or closed under the
/// request: client-go's `IsConnectionReset` and `IsProbableEOF`. A refused connection is not
/// one: nothing was sent.
pub(crate) fn is_connection_reset(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_closed() || h.is_canceled())
        {
            return true;
        }
        current = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry_after(secs: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::RETRY_AFTER, secs.parse().unwrap());
        h
    }

    #[test]
    fn throttled_and_unavailable_answers_with_retry_after_are_retried_after_it() {
        let mut r = Retries::default();
        for code in [429, 500, 503, 504] {
            let status = StatusCode::from_u16(code).unwrap();
            assert_eq!(
                r.after_answer(status, &retry_after("1")),
                Some(Duration::from_secs(1))
            );
        }
    }

    #[test]
    fn answers_without_retry_after_or_of_other_codes_stand() {
        let mut r = Retries::default();
        assert_eq!(
            r.after_answer(StatusCode::SERVICE_UNAVAILABLE, &HeaderMap::new()),
            None
        );
        assert_eq!(
            r.after_answer(StatusCode::TOO_MANY_REQUESTS, &retry_after("soon")),
            None
        );
        assert_eq!(
            r.after_answer(StatusCode::CONFLICT, &retry_after("1")),
            None
        );
        assert_eq!(
            r.after_answer(StatusCode::NOT_FOUND, &retry_after("1")),
            None
        );
    }

    #[test]
    fn retries_stop_at_the_count_and_the_wait_caps() {
        let mut r = Retries::default();
        let zero = retry_after("0");
        for _ in 0..MAX_RETRIES {
            assert!(
                r.after_answer(StatusCode::TOO_MANY_REQUESTS, &zero)
                    .is_some()
            );
        }
        assert_eq!(r.after_answer(StatusCode::TOO_MANY_REQUESTS, &zero), None);
        let mut r = Retries::default();
        assert_eq!(
            r.after_answer(StatusCode::TOO_MANY_REQUESTS, &retry_after("31")),
            None
        );
    }

    #[test]
    fn a_reset_connection_is_retried_for_a_get_only() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let mut r = Retries::default();
        assert!(r.after_failure(&Method::GET, &reset).is_some());
        assert!(r.after_failure(&Method::POST, &reset).is_none());
        assert!(r.after_failure(&Method::DELETE, &reset).is_none());
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(r.after_failure(&Method::GET, &refused).is_none());
    }
}
