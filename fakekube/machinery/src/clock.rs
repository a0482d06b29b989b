//! The cluster's clock: what every timer of the controllers and the kubelet waits on and every
//! timestamp the server writes reads (`creationTimestamp`, `deletionTimestamp`, conditions'
//! `lastTransitionTime`, Events, container start and finish times, expiry, grace periods).
//!
//! It runs on real time unless a test says otherwise, and a test may always move it forward
//! ([`Clock::advance`]): sleepers whose deadline is passed wake at once, so a 30 s grace period
//! or a TTL is skipped instead of waited out. Three modes:
//!
//! - [`ClockMode::Real`]: wall time plus whatever was advanced.
//! - [`ClockMode::Manual`]: stands still at the time the server started until advanced, so
//!   timestamps are exact and timers fire only when a test moves the clock.
//! - [`ClockMode::AutoAdvance`]: real time, and when the store has been quiet for a moment
//!   while a timer is pending, the clock jumps to the earliest pending deadline (a cluster
//!   with nothing to do skips to its next timer), so runs never sleep through a grace period.
//!
//! The clock is the cluster's own: clients keep their wall time, so an advanced clock is ahead
//! of theirs, as a node's clock may be.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// How a [`Clock`] moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockMode {
    /// Real time (plus what was advanced).
    Real,
    /// Stands still until advanced.
    Manual,
    /// Real time, jumping to the next pending deadline when the store has been quiet this long.
    AutoAdvance(Duration),
}

/// The cluster's clock; clones share it.
#[derive(Debug, Clone)]
pub struct Clock(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    mode: ClockMode,
    /// Wall time at the origin.
    origin: SystemTime,
    /// Monotonic time at the origin (real and auto modes count from it).
    started: Instant,
    state: Mutex<State>,
    /// Bumped on every advance: sleepers look at the time again.
    advanced: watch::Sender<u64>,
    /// Signalled when a sleeper registers (the auto-advancer waits for one).
    sleeping: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Advanced so far.
    offset: Duration,
    /// Pending deadlines of sleepers, by sleeper id.
    sleepers: BTreeMap<u64, SystemTime>,
    next_id: u64,
    /// The last value [`Clock::unix_nanos`] gave.
    last_nanos: u128,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new(ClockMode::Real)
    }
}

impl Clock {
    /// A clock in `mode`, starting at the current wall time.
    pub fn new(mode: ClockMode) -> Self {
        let (advanced, _) = watch::channel(0);
        Clock(Arc::new(Inner {
            mode,
            origin: SystemTime::now(),
            started: Instant::now(),
            state: Mutex::new(State::default()),
            advanced,
            sleeping: Notify::new(),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cluster's time now.
    pub fn now(&self) -> SystemTime {
        let offset = self.lock().offset;
        let flowed = match self.0.mode {
            ClockMode::Manual => Duration::ZERO,
            ClockMode::Real | ClockMode::AutoAdvance(_) => self.0.started.elapsed(),
        };
        self.0.origin + flowed + offset
    }

    /// The cluster's time now, as a calendar time in UTC.
    pub fn now_utc(&self) -> OffsetDateTime {
        OffsetDateTime::from(self.now())
    }

    /// Now as a `metav1.Time` is written (RFC 3339, whole seconds, `Z`).
    pub fn now_rfc3339(&self) -> String {
        crate::meta::format_time(self.now_utc())
    }

    /// Now as a `metav1.MicroTime` is written (RFC 3339 with six fractional digits, `Z`).
    pub fn now_micro(&self) -> String {
        micro_time(self.now_utc())
    }

    /// Now as Go's `time.RFC3339Nano` writes it in UTC (fraction without trailing zeros).
    pub fn now_rfc3339_nano(&self) -> String {
        rfc3339_nano(self.now_utc())
    }

    /// Nanoseconds since the Unix epoch now (the suffix of Event names), made unique: a call
    /// in the same nanosecond as the last (always, on a manual clock) gets the next one.
    pub fn unix_nanos(&self) -> u128 {
        let now = self
            .now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mut st = self.lock();
        st.last_nanos = now.max(st.last_nanos.saturating_add(1));
        st.last_nanos
    }

    /// Moves the clock forward by `by`; sleepers whose deadline is now passed wake.
    pub fn advance(&self, by: Duration) {
        {
            let mut st = self.lock();
            st.offset = st.offset.saturating_add(by);
        }
        self.0.advanced.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The earliest deadline a sleeper waits for, if any.
    pub fn next_deadline(&self) -> Option<SystemTime> {
        self.lock().sleepers.values().min().copied()
    }

    /// Waits until the clock reaches `deadline` (at once when it has): on real time, or when
    /// an advance passes it.
    pub async fn sleep_until(&self, deadline: SystemTime) {
        let _sleeper = Sleeper::register(self, deadline);
        self.sleep_until_unlisted(deadline).await;
    }

    /// Waits as [`Clock::sleep_until`] does, for housekeeping that no work waits on (the Event
    /// TTL): the deadline is not listed among the sleepers', so an auto-advancing clock never
    /// jumps to it.
    pub async fn sleep_until_unlisted(&self, deadline: SystemTime) {
        let mut advanced = self.0.advanced.subscribe();
        loop {
            let now = self.now();
            let Ok(left) = deadline.duration_since(now) else {
                return;
            };
            if left.is_zero() {
                return;
            }
            match self.0.mode {
                ClockMode::Manual => {
                    if advanced.changed().await.is_err() {
                        return;
                    }
                }
                ClockMode::Real | ClockMode::AutoAdvance(_) => {
                    tokio::select! {
                        () = tokio::time::sleep(left) => {}
                        r = advanced.changed() => {
                            if r.is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Waits until `deadline` when there is one, forever otherwise.
    pub async fn sleep_until_opt(&self, deadline: Option<SystemTime>) {
        match deadline {
            Some(at) => self.sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    /// Waits `d` of the cluster's time.
    pub async fn sleep(&self, d: Duration) {
        let at = self.now() + d;
        self.sleep_until(at).await;
    }

    /// For [`ClockMode::AutoAdvance`]: a task that, whenever a timer is pending and `quiet`
    /// passes without a change to the store (`changes`), moves the clock to the earliest
    /// pending deadline. Ends with `shutdown`; does nothing in the other modes.
    pub fn spawn_auto_advance(
        &self,
        mut changes: watch::Receiver<u64>,
        shutdown: CancellationToken,
    ) {
        let ClockMode::AutoAdvance(quiet) = self.0.mode else {
            return;
        };
        let clock = self.clone();
        tokio::spawn(async move {
            loop {
                if clock.next_deadline().is_none() {
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        () = clock.0.sleeping.notified() => {}
                    }
                    continue;
                }
                changes.borrow_and_update();
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    r = changes.changed() => {
                        if r.is_err() {
                            return;
                        }
                        continue;
                    }
                    () = tokio::time::sleep(quiet) => {}
                }
                if let Some(next) = clock.next_deadline()
                    && let Ok(ahead) = next.duration_since(clock.now())
                    && !ahead.is_zero()
                {
                    clock.advance(ahead);
                }
            }
        });
    }
}

/// A pending deadline, registered while its sleeper waits.
struct Sleeper<'a> {
    clock: &'a Clock,
    id: u64,
}

impl<'a> Sleeper<'a> {
    fn register(clock: &'a Clock, deadline: SystemTime) -> Self {
        let id = {
            let mut st = clock.lock();
            st.next_id += 1;
            let id = st.next_id;
            st.sleepers.insert(id, deadline);
            id
        };
        clock.0.sleeping.notify_one();
        Sleeper { clock, id }
    }
}

impl Drop for Sleeper<'_> {
    fn drop(&mut self) {
        self.clock.lock().sleepers.remove(&self.id);
    }
}

/// A time as a `metav1.MicroTime` is written.
pub fn micro_time(t: OffsetDateTime) -> String {
    let micros = t.microsecond();
    let whole = t.replace_nanosecond(0).unwrap_or(t);
    let base = whole
        .format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string());
    match base.strip_suffix('Z') {
        Some(head) => format!("{head}.{micros:06}Z"),
        None => base,
    }
}

/// A time as Go's `time.RFC3339Nano` writes it in UTC: the fraction of a second with its
/// trailing zeros cut, none when whole.
pub fn rfc3339_nano(t: OffsetDateTime) -> String {
    let nanos = t.nanosecond();
    let whole = t.replace_nanosecond(0).unwrap_or(t);
    let base = whole
        .format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string());
    let fraction = format!("{nanos:09}");
    let fraction = fraction.trim_end_matches('0');
    match base.strip_suffix('Z') {
        Some(head) if !fraction.is_empty() => format!("{head}.{fraction}Z"),
        _ => base,
    }
}

/// The time `secs` whole seconds after `t` (negative: before).
pub fn add_secs(t: SystemTime, secs: i64) -> SystemTime {
    let d = Duration::from_secs(secs.unsigned_abs());
    if secs >= 0 {
        t + d
    } else {
        t.checked_sub(d).unwrap_or(UNIX_EPOCH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_stands_still_until_advanced() {
        let clock = Clock::new(ClockMode::Manual);
        let t0 = clock.now();
        assert_eq!(clock.now(), t0);
        clock.advance(Duration::from_secs(30));
        assert_eq!(clock.now(), t0 + Duration::from_secs(30));
    }

    #[tokio::test]
    async fn a_sleeper_wakes_when_an_advance_passes_its_deadline() {
        let clock = Clock::new(ClockMode::Manual);
        let deadline = clock.now() + Duration::from_secs(30);
        let sleeper = tokio::spawn({
            let clock = clock.clone();
            async move { clock.sleep_until(deadline).await }
        });
        while clock.next_deadline().is_none() {
            tokio::task::yield_now().await;
        }
        assert_eq!(clock.next_deadline(), Some(deadline));
        clock.advance(Duration::from_secs(10));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(20));
        sleeper.await.expect("the sleeper ends");
        assert_eq!(clock.next_deadline(), None);
    }

    #[tokio::test]
    async fn a_real_clock_sleeps_on_real_time_and_an_advance_cuts_it_short() {
        let clock = Clock::new(ClockMode::Real);
        let sleeper = tokio::spawn({
            let clock = clock.clone();
            async move { clock.sleep(Duration::from_secs(3600)).await }
        });
        while clock.next_deadline().is_none() {
            tokio::task::yield_now().await;
        }
        clock.advance(Duration::from_secs(3600));
        sleeper.await.expect("the sleeper ends");
    }

    #[tokio::test]
    async fn an_auto_advancing_clock_jumps_to_the_next_deadline_when_the_store_is_quiet() {
        let clock = Clock::new(ClockMode::AutoAdvance(Duration::from_millis(1)));
        let (_tx, rx) = watch::channel(0u64);
        let shutdown = CancellationToken::new();
        clock.spawn_auto_advance(rx, shutdown.clone());
        let start = clock.now();
        clock.sleep(Duration::from_secs(3600)).await;
        assert!(clock.now() >= start + Duration::from_secs(3600));
        shutdown.cancel();
    }

    #[test]
    fn rfc3339_nano_cuts_trailing_zeros_of_the_fraction() {
        let at = |n: i128| OffsetDateTime::from_unix_timestamp_nanos(n).expect("a valid time");
        assert_eq!(
            rfc3339_nano(at(1_700_000_000_120_000_000)),
            "2023-11-14T22:13:20.12Z"
        );
        assert_eq!(
            rfc3339_nano(at(1_700_000_000_000_000_000)),
            "2023-11-14T22:13:20Z"
        );
    }

    #[test]
    fn micro_time_has_six_fractional_digits() {
        let t = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_789)
            .expect("a valid time");
        assert_eq!(micro_time(t), "2023-11-14T22:13:20.123456Z");
    }
}
