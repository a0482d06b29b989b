//! [`Clock`]: where the adapter reads the time it writes into the cluster.

use std::sync::Arc;
use std::time::SystemTime;

/// The time the adapter computes the cluster's timestamps from: a TTL's `shutdownTime` is
/// this clock's now plus the TTL.
///
/// By default it is the system clock, which is what a real cluster's controllers compare
/// `shutdownTime` with. A test against a fake API server whose clock it moves forward (to skip
/// a TTL rather than wait it out) gives the adapter that same clock
/// ([`ConnectOptions::with_clock`](crate::ConnectOptions::with_clock)); otherwise the fake's
/// clock runs ahead of the adapter's and every new TTL would expire early by the jump.
///
/// Timeouts and the expiry of credentials stay on the host's own clocks.
#[derive(Clone, Default)]
pub struct Clock(Source);

/// Where a [`Clock`] reads the time.
#[derive(Clone, Default)]
enum Source {
    /// [`SystemTime::now`].
    #[default]
    System,
    /// A function given by the embedder.
    Custom(Arc<dyn Fn() -> SystemTime + Send + Sync>),
}

impl Clock {
    /// The system clock (the default).
    pub fn system() -> Self {
        Clock(Source::System)
    }

    /// A clock that reads the time from `now` (a fake cluster's clock, or a fixed time).
    pub fn from_fn(now: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        Clock(Source::Custom(Arc::new(now)))
    }

    /// The time now on this clock.
    pub fn now(&self) -> SystemTime {
        match &self.0 {
            Source::System => SystemTime::now(),
            Source::Custom(now) => now(),
        }
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Source::System => f.write_str("Clock(system)"),
            Source::Custom(_) => f.write_str("Clock(custom)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_clock_from_a_function_reads_that_function() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
        let clock = Clock::from_fn(move || at);
        assert_eq!(clock.now(), at);
        assert_eq!(format!("{clock:?}"), "Clock(custom)");
    }

    #[test]
    fn the_default_clock_is_the_system_clock() {
        let before = SystemTime::now();
        let now = Clock::default().now();
        assert!(now >= before && now <= SystemTime::now());
        assert_eq!(format!("{:?}", Clock::default()), "Clock(system)");
    }
}
