//! Faults a test can switch on while the server runs: throttling, slow responses, failing list
//! pages, exec without v5, exec connections dropped mid-output; and [`Chaos`], a seeded random
//! mix of all of them (and connection resets, 500s, 503s, watch 410s, pods deleted under
//! running execs), for soak runs. Chaos can be scoped to the users under test
//! ([`Faults::chaos_only_for`]) and paused while a setup runs ([`Faults::chaos_paused`]).

use crate::status::ApiError;
use http::StatusCode;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// How often each fault of [`Chaos`] strikes, each a probability from 0 to 1 per occasion
/// (per resource request, per exec session, per watch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChaosRates {
    /// The connection is reset before the answer (HTTP/1.1 closes it, HTTP/2 resets the
    /// stream).
    pub reset: f64,
    /// 429 `TooManyRequests` with `Retry-After: 1`.
    pub throttle: f64,
    /// 500 `InternalError`, without `Retry-After`.
    pub internal: f64,
    /// 503 `ServiceUnavailable` with `Retry-After: 1`.
    pub unavailable: f64,
    /// The answer is 50 to 500 ms late.
    pub slow: f64,
    /// An exec session's connection is dropped after 0 to 4096 bytes of output.
    pub exec_drop: f64,
    /// A watch is ended at once by a 410 `Expired` ERROR event (the client must list again).
    pub watch_gone: f64,
    /// The pod of an exec session is deleted (with its grace period, as `kubectl delete pod`
    /// does) while the command runs: 0 to 20 ms after the command started (when the command
    /// ends sooner, the pod goes all the same).
    pub pod_delete: f64,
}

impl ChaosRates {
    /// The faults' names, as [`Faults::chaos_injected`] counts them and
    /// [`ChaosRates::with`] takes them.
    pub const KINDS: [&'static str; 8] = [
        "reset",
        "throttle",
        "internal",
        "unavailable",
        "slow",
        "exec_drop",
        "watch_gone",
        "pod_delete",
    ];

    /// These rates with the fault `kind` (one of [`ChaosRates::KINDS`]) at `rate`; `None`
    /// for a name that is not a fault's.
    pub fn with(mut self, kind: &str, rate: f64) -> Option<Self> {
        let slot = match kind {
            "reset" => &mut self.reset,
            "throttle" => &mut self.throttle,
            "internal" => &mut self.internal,
            "unavailable" => &mut self.unavailable,
            "slow" => &mut self.slow,
            "exec_drop" => &mut self.exec_drop,
            "watch_gone" => &mut self.watch_gone,
            "pod_delete" => &mut self.pod_delete,
            _ => return None,
        };
        *slot = rate;
        Some(self)
    }

    /// Every fault at `rate`.
    pub fn uniform(rate: f64) -> Self {
        ChaosRates {
            reset: rate,
            throttle: rate,
            internal: rate,
            unavailable: rate,
            slow: rate,
            exec_drop: rate,
            watch_gone: rate,
            pod_delete: rate,
        }
    }
}

/// A seeded random mix of faults: the same seed draws the same sequence of decisions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chaos {
    /// The seed (print it: a soak is reproduced with it).
    pub seed: u64,
    /// How often each fault strikes.
    pub rates: ChaosRates,
}

/// The chaos generator and what it injected.
#[derive(Debug)]
struct ChaosState {
    rates: ChaosRates,
    /// splitmix64 state.
    state: u64,
    /// Faults injected, by name.
    injected: BTreeMap<&'static str, u64>,
}

impl ChaosState {
    /// The next number in [0, 1).
    fn next(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Whether the fault `name` strikes at `rate`; counts it when it does.
    fn strikes(&mut self, name: &'static str, rate: f64) -> bool {
        let hit = rate > 0.0 && self.next() < rate;
        if hit {
            *self.injected.entry(name).or_default() += 1;
        }
        hit
    }
}

/// Put in a request's extensions once its caller is known to be one chaos strikes
/// ([`Faults::chaos_only_for`]), for the handlers that draw their own faults (exec).
#[derive(Debug, Clone, Copy)]
#[doc(hidden)]
pub struct ChaosTarget;

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
    chaos: Mutex<Option<ChaosState>>,
    /// The user names chaos strikes; empty: every caller.
    chaos_users: Mutex<Vec<String>>,
    /// Whether chaos is paused: nothing strikes, nothing is drawn, the counts are kept.
    chaos_paused: AtomicBool,
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

    /// Injects a seeded random mix of faults from now on (`None` stops it; the counts of
    /// what was injected are kept until the next start).
    pub fn chaos(&self, chaos: Option<Chaos>) {
        let mut slot = self.chaos.lock().unwrap_or_else(|p| p.into_inner());
        match (chaos, slot.as_mut()) {
            (Some(c), _) => {
                *slot = Some(ChaosState {
                    rates: c.rates,
                    state: c.seed,
                    injected: BTreeMap::new(),
                });
            }
            (None, Some(state)) => state.rates = ChaosRates::uniform(0.0),
            (None, None) => {}
        }
    }

    /// Scopes chaos to the requests of these authenticated users (`system:serviceaccount:
    /// <namespace>:<name>` for a service account's token; an impersonated user counts as
    /// itself); an empty list (the default) lets it strike every caller. Scoped, an
    /// operator's setup (kubectl as admin) and a test's own observer run untouched while the
    /// client under test meets the faults.
    pub fn chaos_only_for<S: Into<String>>(&self, users: impl IntoIterator<Item = S>) {
        let mut slot = self.chaos_users.lock().unwrap_or_else(|p| p.into_inner());
        *slot = users.into_iter().map(Into::into).collect();
    }

    /// Pauses chaos (`true`: no fault strikes and none is drawn; what it injected is kept) or
    /// resumes it; a pause set before [`Faults::chaos`] starts it holds. A test's setup runs
    /// paused, then the run under test meets the faults.
    pub fn chaos_paused(&self, paused: bool) {
        self.chaos_paused.store(paused, Ordering::SeqCst);
    }

    /// Whether chaos may strike a request of `user` (whether or not chaos is on).
    #[doc(hidden)]
    pub fn chaos_targets(&self, user: &str) -> bool {
        let users = self.chaos_users.lock().unwrap_or_else(|p| p.into_inner());
        users.is_empty() || users.iter().any(|u| u == user)
    }

    /// What chaos injected since it was started, by fault (`reset`, `throttle`, `internal`,
    /// `unavailable`, `slow`, `exec_drop`, `watch_gone`, `pod_delete`).
    pub fn chaos_injected(&self) -> BTreeMap<String, u64> {
        self.chaos
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|s| {
                s.injected
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Runs `f` on the chaos state when chaos is on and not paused.
    fn with_chaos<T>(&self, f: impl FnOnce(&mut ChaosState) -> Option<T>) -> Option<T> {
        if self.chaos_paused.load(Ordering::SeqCst) {
            return None;
        }
        self.chaos
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .and_then(f)
    }

    /// Whether chaos resets the connection of the request now arriving.
    #[doc(hidden)]
    pub fn chaos_reset(&self) -> bool {
        self.with_chaos(|c| {
            let rate = c.rates.reset;
            c.strikes("reset", rate).then_some(())
        })
        .is_some()
    }

    /// After how many output bytes chaos drops the exec session now starting, if it does.
    #[doc(hidden)]
    pub fn chaos_exec_drop(&self) -> Option<usize> {
        self.with_chaos(|c| {
            let rate = c.rates.exec_drop;
            c.strikes("exec_drop", rate)
                .then(|| (c.next() * 4096.0) as usize)
        })
    }

    /// How long after its command started chaos deletes the pod of the exec session now
    /// starting, if it does.
    #[doc(hidden)]
    pub fn chaos_pod_delete(&self) -> Option<Duration> {
        self.with_chaos(|c| {
            let rate = c.rates.pod_delete;
            c.strikes("pod_delete", rate)
                .then(|| Duration::from_millis((c.next() * 20.0) as u64))
        })
    }

    /// The 410 chaos ends the watch now starting with, if it does.
    #[doc(hidden)]
    pub fn chaos_watch(&self) -> Option<ApiError> {
        self.with_chaos(|c| {
            let rate = c.rates.watch_gone;
            c.strikes("watch_gone", rate).then(|| {
                ApiError::expired("too old resource version: 1 (injected by fakekube chaos)")
            })
        })
    }

    /// The chaos of a resource request: how late to answer, and the error to answer instead.
    fn chaos_request(&self) -> (Duration, Option<ApiError>) {
        self.with_chaos(|c| {
            let rates = c.rates;
            let delay = if c.strikes("slow", rates.slow) {
                Duration::from_millis(50 + (c.next() * 450.0) as u64)
            } else {
                Duration::ZERO
            };
            let error = if c.strikes("throttle", rates.throttle) {
                Some(ApiError::too_many_requests(1))
            } else if c.strikes("unavailable", rates.unavailable) {
                let mut e = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailable",
                    "the server is currently unable to handle the request (injected by fakekube chaos)",
                );
                e.retry_after = Some(1);
                Some(e)
            } else if c.strikes("internal", rates.internal) {
                Some(ApiError::internal("injected by fakekube chaos"))
            } else {
                None
            };
            Some((delay, error))
        })
        .unwrap_or((Duration::ZERO, None))
    }

    /// Whether v5 is refused in exec negotiation.
    #[doc(hidden)]
    pub fn exec_v4_only(&self) -> bool {
        self.v4_only_exec.load(Ordering::SeqCst)
    }

    /// After how many output bytes exec sessions are dropped.
    #[doc(hidden)]
    pub fn exec_drop_after(&self) -> Option<usize> {
        self.drop_exec_after_bytes
            .lock()
            .map(|d| *d)
            .unwrap_or(None)
    }

    /// Applies the request-level faults to a resource request (slow responses, throttling;
    /// chaos's only when `chaotic`, the caller being one it strikes); `Some` is the error to
    /// answer instead.
    #[doc(hidden)]
    pub async fn before_resource_request(&self, chaotic: bool) -> Option<ApiError> {
        let (chaos_delay, chaos_error) = if chaotic {
            self.chaos_request()
        } else {
            (Duration::ZERO, None)
        };
        let delay = self.delay.lock().map(|d| *d).unwrap_or_default() + chaos_delay;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if chaos_error.is_some() {
            return chaos_error;
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
    #[doc(hidden)]
    pub fn list_page(&self, continued: bool) -> Option<ApiError> {
        (continued && self.fail_continued_lists.load(Ordering::SeqCst))
            .then(|| ApiError::internal("etcdserver: request timed out (injected by fakekube)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(seed: u64) -> Vec<bool> {
        let faults = Faults::default();
        faults.chaos(Some(Chaos {
            seed,
            rates: ChaosRates::uniform(0.3),
        }));
        (0..64).map(|_| faults.chaos_reset()).collect()
    }

    #[test]
    fn the_same_seed_draws_the_same_faults_and_they_are_counted() {
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
        let faults = Faults::default();
        faults.chaos(Some(Chaos {
            seed: 1,
            rates: ChaosRates::uniform(1.0),
        }));
        assert!(faults.chaos_reset());
        assert!(faults.chaos_watch().is_some());
        faults.chaos(None);
        assert!(!faults.chaos_reset());
        assert_eq!(faults.chaos_injected()["reset"], 1);
    }

    #[test]
    fn chaos_scoped_to_users_targets_only_them_and_unscoped_targets_everyone() {
        let faults = Faults::default();
        assert!(faults.chaos_targets("kubernetes-admin"));
        faults.chaos_only_for(["system:serviceaccount:sandboxes:live-runner"]);
        assert!(faults.chaos_targets("system:serviceaccount:sandboxes:live-runner"));
        assert!(!faults.chaos_targets("kubernetes-admin"));
        assert!(!faults.chaos_targets("system:serviceaccount:sandboxes:live-observer"));
        faults.chaos_only_for(Vec::<String>::new());
        assert!(faults.chaos_targets("kubernetes-admin"));
    }

    #[test]
    fn paused_chaos_strikes_nothing_and_keeps_its_counts_until_resumed() {
        let faults = Faults::default();
        faults.chaos_paused(true);
        faults.chaos(Some(Chaos {
            seed: 3,
            rates: ChaosRates::uniform(1.0),
        }));
        assert!(!faults.chaos_reset());
        assert!(faults.chaos_injected().is_empty());
        faults.chaos_paused(false);
        assert!(faults.chaos_reset());
        faults.chaos_paused(true);
        assert!(!faults.chaos_reset());
        assert_eq!(faults.chaos_injected()["reset"], 1);
    }

    #[test]
    fn rates_take_each_fault_by_its_name_and_refuse_other_names() {
        let mut rates = ChaosRates::uniform(0.0);
        for kind in ChaosRates::KINDS {
            rates = rates.with(kind, 0.5).expect(kind);
        }
        assert_eq!(rates, ChaosRates::uniform(0.5));
        assert_eq!(ChaosRates::uniform(0.0).with("pod-delete", 0.5), None);
    }
}
