//! What a provider tells the suite about itself beyond [`ProviderInfo`]: names, timeouts, sizes,
//! paths, the faults it can inject, and the clock it lets the suite move.
//!
//! [`ProviderInfo`]: sandbox_contract::ProviderInfo

use std::sync::Arc;
use std::time::Duration;

use sandbox_contract::{Capabilities, Error, Resources, async_trait};

/// The facts and knobs one pool gives the suite, in one struct.
///
/// Every field has a default suited to a networked provider (seconds, not milliseconds); an
/// in-memory provider shortens the timeouts. Build it with struct update syntax:
///
/// ```
/// use std::time::Duration;
/// use sandbox_conformance::Fixtures;
///
/// let fixtures = Fixtures {
///     volume_path: Some("/workspace".to_owned()),
///     op_timeout: Duration::from_secs(60),
///     ..Fixtures::default()
/// };
/// # let _ = fixtures;
/// ```
#[derive(Clone)]
pub struct Fixtures {
    /// The template every trial's sandbox is created from; `None` for the provider's default.
    pub template: Option<String>,
    /// An image or template name that does not exist, for providers that accept unlisted
    /// templates ([`ProviderInfo::accepts_unlisted_templates`]): creating from it must answer
    /// `invalid_request`. `None` skips that trial for such providers.
    ///
    /// [`ProviderInfo::accepts_unlisted_templates`]: sandbox_contract::ProviderInfo::accepts_unlisted_templates
    pub missing_image: Option<String>,
    /// The longest any single provider call may take (create included) before the trial fails.
    pub op_timeout: Duration,
    /// The longest a whole trial may take, cleanup excluded.
    pub trial_timeout: Duration,
    /// The timeout given to commands in the timeout trials (they sleep far longer).
    pub exec_timeout: Duration,
    /// The pause between outputs in the streaming trials; long enough that output written
    /// before it must have arrived before output written after it.
    pub stream_gap: Duration,
    /// The size of the file the read-cap trial writes (it reads with a cap one byte smaller).
    pub read_cap: u64,
    /// The size of the large output and large stdin trials, in bytes.
    pub large_bytes: usize,
    /// The largest limit ([`Limits`]) the suite writes a file past to check it; larger limits
    /// are not probed.
    ///
    /// [`Limits`]: sandbox_contract::Limits
    pub max_limit_probe: u64,
    /// A short TTL for the TTL backstop trials (with a [`clock`](Fixtures::clock) it may be
    /// long: the clock is moved past it).
    pub ttl: Duration,
    /// How long after its TTL the backstop may take to remove a sandbox; `None` skips the
    /// trials that wait for it. With a [`clock`](Fixtures::clock), the clock is moved by the
    /// TTL and this wait instead.
    pub ttl_backstop_wait: Option<Duration>,
    /// How long a deleted sandbox may still be reported `Deleting` before `get` must answer
    /// `not_found`.
    pub delete_wait: Duration,
    /// The directory whose files survive stop and start (`persistence.disk`); `None` skips the
    /// persistence trial.
    pub volume_path: Option<String>,
    /// A writable directory outside the volume, whose files do not survive a stop.
    pub scratch_dir: String,
    /// How many sandboxes (and execs) the concurrency trials run at once.
    pub concurrency: usize,
    /// How many sandboxes the list completeness trials create; more than the provider's list
    /// page size, so that paging is exercised.
    pub list_count: usize,
    /// The port the `ports.expose` trials expose.
    pub port: u16,
    /// The resources the resources trial asks for.
    pub resources: Resources,
    /// The declared capabilities that this pool's configuration switched on (not on by
    /// default); the report marks them `opt-in`.
    pub opt_in: Capabilities,
    /// The faults the provider's backend can inject, for the trials that break connections
    /// and list pages; `None` skips them.
    pub faults: Option<Arc<dyn Faults>>,
    /// The backend's clock, when the suite may move it (a fake cluster's); `None` (a real
    /// cluster) makes the TTL backstop trials wait in real time. With it they run after the
    /// others, one at a time with nothing else in flight, and move the clock instead of
    /// waiting.
    pub clock: Option<Arc<dyn ClusterClock>>,
    /// The prefix of every sandbox id the suite makes (a lowercase letter first).
    pub id_prefix: String,
}

impl Fixtures {
    /// How long a provider should wait for a sandbox to get ready when its calls are given
    /// `op_timeout`: three quarters of it. A sandbox that never gets ready (a paused
    /// controller, a node gone) then fails its create with the provider's own error, which a
    /// trial can judge (the agent-sandbox adapter's `unavailable`), before the trial's clock
    /// fails the call with no code at all.
    pub fn ready_timeout_within(op_timeout: Duration) -> Duration {
        op_timeout * 3 / 4
    }

    /// [`Fixtures::ready_timeout_within`] these fixtures' [`Fixtures::op_timeout`].
    pub fn ready_timeout(&self) -> Duration {
        Self::ready_timeout_within(self.op_timeout)
    }
}

impl Default for Fixtures {
    fn default() -> Self {
        Fixtures {
            template: None,
            missing_image: None,
            op_timeout: Duration::from_secs(120),
            trial_timeout: Duration::from_secs(600),
            exec_timeout: Duration::from_secs(1),
            stream_gap: Duration::from_millis(500),
            read_cap: 1000,
            large_bytes: 1024 * 1024,
            max_limit_probe: 16 * 1024 * 1024,
            ttl: Duration::from_secs(5),
            ttl_backstop_wait: Some(Duration::from_secs(60)),
            delete_wait: Duration::from_secs(60),
            volume_path: None,
            scratch_dir: "/tmp".to_owned(),
            concurrency: 8,
            list_count: 7,
            port: 8080,
            resources: Resources {
                cpu_millis: Some(500),
                memory_mib: Some(256),
                disk_gib: Some(1),
            },
            opt_in: Capabilities::new(),
            faults: None,
            clock: None,
            id_prefix: "cf".to_owned(),
        }
    }
}

impl std::fmt::Debug for Fixtures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixtures")
            .field("template", &self.template)
            .field("op_timeout", &self.op_timeout)
            .field("volume_path", &self.volume_path)
            .field("faults", &self.faults.is_some())
            .field("clock", &self.clock.is_some())
            .finish_non_exhaustive()
    }
}

/// A failure the suite asks the provider's backend to cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    /// Drop the exec connections open now, as a network failure would: at once, or at the
    /// latest when each next carries output (the trials' commands write again after the fault
    /// is injected). Until it is cleared it may also drop connections opened later.
    BreakExecConnections,
    /// Make every list page after the first fail at the backend, until cleared.
    FailListPages,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 2] = [Fault::BreakExecConnections, Fault::FailListPages];

    /// Returns the fault's name as skip reasons print it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Fault::BreakExecConnections => "break-exec-connections",
            Fault::FailListPages => "fail-list-pages",
        }
    }
}

/// The fault switches of a provider's backend (a fake API server, an in-memory store).
///
/// The suite runs a trial that injects a fault alone (no other trial of any pool runs
/// meanwhile, since pools may share a backend) and clears the fault afterwards, even when the
/// trial fails.
#[async_trait]
pub trait Faults: Send + Sync {
    /// Returns whether this backend can inject `fault`; the trials that need a fault it cannot
    /// inject are skipped, saying so.
    fn supports(&self, fault: Fault) -> bool;

    /// Switches `fault` on (or, for a one-shot fault, causes it now).
    async fn inject(&self, fault: Fault) -> Result<(), Error>;

    /// Switches `fault` off.
    async fn clear(&self, fault: Fault) -> Result<(), Error>;
}

/// The clock of a provider's backend (a fake API server, an in-memory store), which the suite
/// may move forward instead of waiting for the provider's timers (the TTL backstop).
///
/// Moving it moves every timer of the backend and the time the provider itself computes
/// expiries from (an adapter whose backend is a fake cluster must read the fake's clock, or a
/// TTL set after a move would expire early by the jump). The suite moves it only while no
/// other trial of any pool runs: another trial's timers would jump with it.
#[async_trait]
pub trait ClusterClock: Send + Sync {
    /// Moves the clock forward by `by`: every timer whose deadline is then passed fires.
    async fn advance(&self, by: Duration) -> Result<(), Error>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_timeout_ends_before_the_calls_timeout_so_the_provider_answers_first() {
        for secs in [1, 20, 30, 180] {
            let fixtures = Fixtures {
                op_timeout: Duration::from_secs(secs),
                ..Fixtures::default()
            };
            let ready = fixtures.ready_timeout();
            assert!(ready < fixtures.op_timeout, "{ready:?} for {secs} s");
            assert!(ready >= fixtures.op_timeout / 2, "{ready:?} for {secs} s");
        }
    }
}
