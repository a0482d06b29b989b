//! `--max-requests-inflight`: at most so many requests served at once. Past the limit a
//! request is answered as the API server answers it, 429 with `Retry-After: 1` and a plain
//! text body (not a Status). Long-running requests (watches, exec, attach, port-forward) are
//! not counted, and members of `system:masters` are always served.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The group whose members are never refused.
const PRIVILEGED_GROUP: &str = "system:masters";

/// Requests in flight against the limit.
#[derive(Debug, Default)]
pub struct Inflight {
    /// At most this many (0: no limit).
    limit: usize,
    /// In flight now.
    now: Arc<AtomicUsize>,
}

/// A request refused past the limit; its answer is the API server's 429.
#[derive(Debug)]
pub(crate) struct Refused;

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        too_many_requests()
    }
}

/// A counted request; it leaves the count when dropped.
#[derive(Debug)]
pub(crate) struct Permit(Arc<AtomicUsize>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Inflight {
    /// A limit of `limit` requests at once (0: none).
    pub fn new(limit: usize) -> Self {
        Inflight {
            limit,
            now: Arc::default(),
        }
    }

    /// Admits a request: `Ok(None)` when it is not counted (no limit, long-running, a
    /// privileged caller), `Ok(Some)` while it is, `Err` with the 429 answer past the limit.
    pub(crate) fn admit(
        &self,
        long_running: bool,
        groups: &[String],
    ) -> Result<Option<Permit>, Refused> {
        if self.limit == 0 || long_running {
            return Ok(None);
        }
        let admitted = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok();
        if admitted {
            return Ok(Some(Permit(self.now.clone())));
        }
        if groups.iter().any(|g| g == PRIVILEGED_GROUP) {
            return Ok(None);
        }
        Err(Refused)
    }
}

/// The API server's answer past the limit.
fn too_many_requests() -> Response {
    let mut r = Response::new(Body::from("Too many requests, please try again later.\n"));
    *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let h = r.headers_mut();
    h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_limit_requests_get_429_with_retry_after_unless_long_running_or_privileged() {
        let inflight = Inflight::new(1);
        let first = inflight.admit(false, &[]).unwrap();
        assert!(first.is_some());
        let refused = inflight.admit(false, &[]).unwrap_err().into_response();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
        assert!(inflight.admit(true, &[]).unwrap().is_none());
        assert!(
            inflight
                .admit(false, &["system:masters".to_string()])
                .unwrap()
                .is_none()
        );
        drop(first);
        assert!(inflight.admit(false, &[]).unwrap().is_some());
    }
}
