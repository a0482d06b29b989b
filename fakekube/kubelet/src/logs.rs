//! `pods/log`: a container's log as the API server streams it from the kubelet, as plain text.
//!
//! The options are `PodLogOptions`: `container`, `previous` (the last terminated run),
//! `follow` (stream while the run goes on, end when its output does), `tailLines`,
//! `sinceSeconds` or `sinceTime`, `limitBytes` and `timestamps` (each line prefixed with the
//! RFC 3339 time, nanoseconds included, at which the runtime saw its first byte). Bad options
//! are the API server's 422 about `PodLogOptions`; a missing pod, an unknown container or one
//! that never ran are the API server's and the kubelet's errors ([`Kubelet::log_source`]).
//!
//! [`Kubelet::log_source`]: crate::kubelet::Kubelet::log_source

use crate::kubelet::{Line, LogSource, OutputLog};
use crate::pod_access::PodAccess;
use crate::query::Query;
use crate::route::ResourcePath;
use crate::status::{ApiError, Cause, Target};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use std::sync::Arc;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::{broadcast, mpsc};

/// The options of a log request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogOptions {
    /// The container; empty for the pod's only one.
    pub container: String,
    /// Stream until the run's output ends.
    pub follow: bool,
    /// The run before the current one.
    pub previous: bool,
    /// Only lines written at or after this time.
    pub since: Option<OffsetDateTime>,
    /// Only the last this many lines.
    pub tail_lines: Option<usize>,
    /// At most this many bytes.
    pub limit_bytes: Option<usize>,
    /// Each line prefixed with its time.
    pub timestamps: bool,
}

/// An integer option: 400 when it is not one, as the API server's parameter decoding answers.
fn integer(query: &Query, key: &str) -> Result<Option<i64>, ApiError> {
    match query.get(key) {
        None | Some("") => Ok(None),
        Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
            ApiError::bad_request(format!(
                "{key}: strconv.ParseInt: parsing \"{v}\": invalid syntax"
            ))
        }),
    }
}

impl LogOptions {
    /// Reads and checks the options of a log request for pod `pod` at `now`.
    pub fn from_query(query: &Query, pod: &str, now: OffsetDateTime) -> Result<Self, ApiError> {
        let tail_lines = integer(query, "tailLines")?;
        let limit_bytes = integer(query, "limitBytes")?;
        let since_seconds = integer(query, "sinceSeconds")?;
        let since_time = match query.get("sinceTime") {
            None | Some("") => None,
            Some(t) => Some(OffsetDateTime::parse(t, &Rfc3339).map_err(|_| {
                ApiError::bad_request(format!(
                    "sinceTime: parsing time \"{t}\" as \"2006-01-02T15:04:05Z07:00\": cannot parse"
                ))
            })?),
        };
        let mut causes = Vec::new();
        let invalid = |field: &str, v: i64, why: &str| Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {v}: {why}"),
            field: Some(field.into()),
        };
        if let Some(n) = tail_lines.filter(|n| *n < 0) {
            causes.push(invalid(
                "tailLines",
                n,
                "must be greater than or equal to 0",
            ));
        }
        if let Some(n) = limit_bytes.filter(|n| *n < 1) {
            causes.push(invalid("limitBytes", n, "must be greater than 0"));
        }
        match (since_seconds, since_time) {
            (Some(_), Some(_)) => causes.push(Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
                    .into(),
                field: Some(String::new()),
            }),
            (Some(n), None) if n < 1 => {
                causes.push(invalid("sinceSeconds", n, "must be greater than 0"));
            }
            _ => {}
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid(
                Target {
                    group: "",
                    resource: "pods",
                    kind: "PodLogOptions",
                    name: pod,
                },
                causes,
            ));
        }
        let since = since_time.or_else(|| since_seconds.map(|s| now - time::Duration::seconds(s)));
        let to_usize = |n: Option<i64>| n.and_then(|n| usize::try_from(n).ok());
        Ok(LogOptions {
            container: query.get("container").unwrap_or("").to_string(),
            follow: query.flag("follow"),
            previous: query.flag("previous"),
            since,
            tail_lines: to_usize(tail_lines),
            limit_bytes: to_usize(limit_bytes),
            timestamps: query.flag("timestamps"),
        })
    }
}

/// A log line's time as the kubelet writes it (`2006-01-02T15:04:05.000000000Z07:00` in
/// `kuberuntime/logs`): UTC, always nine fractional digits. Unlike Go's `time.RFC3339Nano`,
/// trailing zeros stay, so every stamp has the same width and sorts as text.
pub fn log_timestamp(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let base = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    format!("{base}.{:09}Z", t.nanosecond())
}

/// Writes log lines as the options ask: timestamps at line starts, at most `limit_bytes`.
struct Writer {
    timestamps: bool,
    /// Bytes still allowed; `None` for no limit.
    room: Option<usize>,
    /// Whether the next byte starts a line.
    at_line_start: bool,
}

impl Writer {
    fn new(opts: &LogOptions) -> Self {
        Writer {
            timestamps: opts.timestamps,
            room: opts.limit_bytes,
            at_line_start: true,
        }
    }

    /// The bytes of one piece of a line written at `at`, cut to what the limit leaves.
    fn piece(&mut self, at: OffsetDateTime, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len() + 32);
        if self.timestamps && self.at_line_start {
            out.extend_from_slice(log_timestamp(at).as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(bytes);
        self.at_line_start = bytes.last() == Some(&b'\n');
        if let Some(room) = &mut self.room {
            out.truncate(*room);
            *room -= out.len();
        }
        out
    }

    /// Whether the limit is reached.
    fn full(&self) -> bool {
        self.room == Some(0)
    }
}

/// The kept lines a request shows: those since `since`, then the last `tail_lines` of them.
fn select(lines: Vec<Line>, opts: &LogOptions) -> Vec<Line> {
    let mut lines: Vec<Line> = match opts.since {
        Some(since) => lines.into_iter().filter(|l| l.at >= since).collect(),
        None => lines,
    };
    if let Some(n) = opts.tail_lines {
        let skip = lines.len().saturating_sub(n);
        lines.drain(..skip);
    }
    lines
}

/// A text/plain response with `body`.
fn text(body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

/// Serves `GET pods/<name>/log`.
pub fn serve(streams: &PodAccess, rp: &ResourcePath, query: &Query) -> Result<Response, ApiError> {
    let opts = LogOptions::from_query(query, &rp.name, streams.api.clock().now_utc())?;
    let Some(kubelet) = streams.kubelet.as_ref() else {
        return no_kubelet(streams, rp);
    };
    let log = match kubelet.log_source(&rp.namespace, &rp.name, &opts.container, opts.previous)? {
        LogSource::Unscheduled => return Ok(text(Body::empty())),
        LogSource::Run(log) => log,
    };
    if !opts.follow {
        let mut writer = Writer::new(&opts);
        let mut out = Vec::new();
        for line in select(log.lines(), &opts) {
            out.extend_from_slice(&writer.piece(line.at, &line.bytes));
            if writer.full() {
                break;
            }
        }
        return Ok(text(Body::from(out)));
    }
    Ok(text(follow(log, opts, streams.shutdown.clone())))
}

/// A log streamed while its run goes on: the kept lines the options select, then every piece
/// written after, until the output ends (or the limit is reached, the client goes, the server
/// stops).
fn follow(
    log: Arc<OutputLog>,
    opts: LogOptions,
    shutdown: tokio_util::sync::CancellationToken,
) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let mut subscription = log.follow();
    tokio::spawn(async move {
        let mut writer = Writer::new(&opts);
        let kept = std::mem::take(&mut subscription.kept);
        for line in select(kept, &opts) {
            let bytes = writer.piece(line.at, &line.bytes);
            if tx.send(Bytes::from(bytes)).await.is_err() || writer.full() {
                return;
            }
        }
        /// What the follower does next.
        enum Next {
            Piece(Result<Line, broadcast::error::RecvError>),
            Ended,
            Stop,
        }
        loop {
            let next = tokio::select! {
                p = subscription.pieces.recv() => Next::Piece(p),
                r = subscription.ended.wait_for(|ended| *ended) => {
                    if r.is_ok() { Next::Ended } else { Next::Stop }
                }
                () = tx.closed() => Next::Stop,
                () = shutdown.cancelled() => Next::Stop,
            };
            match next {
                Next::Piece(Ok(p)) => {
                    let bytes = writer.piece(p.at, &p.bytes);
                    if tx.send(Bytes::from(bytes)).await.is_err() || writer.full() {
                        return;
                    }
                }
                // A follower that falls far behind misses pieces, as a slow reader of a
                // rotated kubelet log does.
                Next::Piece(Err(broadcast::error::RecvError::Lagged(_))) => {}
                Next::Piece(Err(broadcast::error::RecvError::Closed)) | Next::Stop => return,
                Next::Ended => {
                    // Everything written before the end is already queued: send it, then stop.
                    while let Ok(p) = subscription.pieces.try_recv() {
                        let bytes = writer.piece(p.at, &p.bytes);
                        if tx.send(Bytes::from(bytes)).await.is_err() || writer.full() {
                            return;
                        }
                    }
                    return;
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::io::Error>(b), rx))
    });
    Body::from_stream(stream)
}

/// Without a kubelet: a pod with no node has an empty log, one bound to a node cannot be
/// reached.
fn no_kubelet(streams: &PodAccess, rp: &ResourcePath) -> Result<Response, ApiError> {
    let pod = streams.pod(&rp.namespace, &rp.name)?;
    let node = pod
        .get("spec")
        .and_then(|s| s.get("nodeName"))
        .and_then(|n| n.as_str())
        .unwrap_or("");
    if node.is_empty() {
        return Ok(text(Body::empty()));
    }
    Err(ApiError::internal(format!(
        "error dialing backend: node {node} has no kubelet (this fakekube runs without one)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(s)
    }

    fn line(s: i64, text: &str) -> Line {
        Line {
            at: at(s),
            bytes: Bytes::from(text.to_string()),
        }
    }

    fn opts(q: &str) -> Result<LogOptions, (u16, String)> {
        LogOptions::from_query(&Query::parse(Some(q)), "p", at(100))
            .map_err(|e| (e.code.as_u16(), e.message))
    }

    #[test]
    fn options_are_read_and_checked_as_the_api_server_checks_them() {
        let o =
            opts("container=c&follow=true&tailLines=2&sinceSeconds=10&timestamps=1&limitBytes=5");
        assert_eq!(
            o,
            Ok(LogOptions {
                container: "c".into(),
                follow: true,
                previous: false,
                since: Some(at(90)),
                tail_lines: Some(2),
                limit_bytes: Some(5),
                timestamps: true,
            })
        );
        assert_eq!(
            opts("tailLines=-1"),
            Err((422, "PodLogOptions \"p\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0".into()))
        );
        assert_eq!(
            opts("sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z").map_err(|e| e.1),
            Err("PodLogOptions \"p\" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".into())
        );
        assert_eq!(opts("limitBytes=0").map_err(|e| e.0), Err(422));
        assert_eq!(opts("tailLines=many").map_err(|e| e.0), Err(400));
        assert_eq!(opts("sinceTime=yesterday").map_err(|e| e.0), Err(400));
    }

    #[test]
    fn since_and_tail_select_the_last_lines_of_a_window() {
        let lines = vec![line(1, "a\n"), line(5, "b\n"), line(6, "c\n"), line(9, "d")];
        let o = LogOptions {
            since: Some(at(5)),
            tail_lines: Some(2),
            ..LogOptions::default()
        };
        let picked: Vec<Bytes> = select(lines, &o).into_iter().map(|l| l.bytes).collect();
        assert_eq!(picked, vec![Bytes::from("c\n"), Bytes::from("d")]);
    }

    #[test]
    fn timestamps_prefix_line_starts_and_the_limit_cuts_bytes() {
        let mut w = Writer::new(&LogOptions {
            timestamps: true,
            limit_bytes: Some(45),
            ..LogOptions::default()
        });
        let first = w.piece(at(1) + time::Duration::milliseconds(120), b"par");
        assert_eq!(first, b"1970-01-01T00:00:01.120000000Z par");
        assert_eq!(w.piece(at(2), b"tial\n"), b"tial\n");
        assert_eq!(w.piece(at(3), b"next\n"), b"1970-0");
        assert!(w.full());
    }

    #[test]
    fn log_times_always_carry_nine_fractional_digits_as_the_kubelet_writes_them() {
        assert_eq!(log_timestamp(at(0)), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            log_timestamp(at(0) + time::Duration::nanoseconds(123_456_789)),
            "1970-01-01T00:00:00.123456789Z"
        );
        assert_eq!(
            log_timestamp(at(0) + time::Duration::milliseconds(120)),
            "1970-01-01T00:00:00.120000000Z"
        );
        assert_eq!(
            log_timestamp(at(0) + time::Duration::microseconds(500)),
            "1970-01-01T00:00:00.000500000Z"
        );
    }
}
