//! Live runs against a cluster with kubernetes-sigs/agent-sandbox installed: the conformance
//! suite on a direct and a warm pool, the seed's live checks one by one (each timed), and a
//! final check that nothing was left behind.
//!
//! Everything sits behind the `live` feature; without it this crate is empty and its test
//! binary is not built, so `cargo test --workspace` compiles nothing heavy here and runs
//! nothing. With it, `cargo test -p live --features live` reads `KUBECONFIG` and runs against
//! that cluster, a kind cluster from `ci/kind-up.sh` or a `fakekube` process (`ci/live.sh`).
//! See `live/README.md` for operators.
//!
//! ```no_run
//! # #[cfg(feature = "live")]
//! # fn demo() -> std::process::ExitCode {
//! // tests/live.rs is exactly this (a `harness = false` test):
//! live::run(&live::Arguments::from_args())
//! # }
//! ```
//!
//! # Layout
//!
//! - `settings`: what the run reads from the environment ([`Settings`]).
//! - `observer`: the run's own read-only view of the cluster through kube-rs (the server's
//!   version, the warm pool, the objects left behind); the adapter is what is under test.
//! - `leaks`: which objects count as left behind.
//! - `checks`: the live checks, as libtest-mimic trials.
//! - `timings`: the table of checks and durations printed at the end.
//! - `recording`: `LIVE_RECORD`, the run's clients through recording proxies.
//! - `runner`: [`run`], the phases of a run.
//!
//! # Known limitations
//!
//! - The namespace must be the run's own: every Sandbox, claim, PVC and Service that appears
//!   in it during the run, other than the warm pool's members, counts as left behind.
//! - Against fakekube, the missing-image check needs the process to mark the image missing
//!   (`LIVE_MISSING_IMAGE_MARKED=1`), and cluster DNS is not checked.
//! - Under `LIVE_CHAOS=1` (the cluster's own faults) a failure is tied to a fault by the
//!   contract code its message quotes, not to the fault itself, which the run cannot see; the
//!   observer must be an identity the faults spare.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "live")]
mod checks;
#[cfg(feature = "live")]
mod leaks;
#[cfg(feature = "live")]
mod observer;
#[cfg(feature = "live")]
mod recording;
#[cfg(feature = "live")]
mod runner;
#[cfg(feature = "live")]
mod settings;
#[cfg(feature = "live")]
mod timings;

// The public interface is:
#[cfg(feature = "live")]
pub use libtest_mimic::Arguments;
#[cfg(feature = "live")]
pub use runner::run;
#[cfg(feature = "live")]
pub use settings::{Backend, Settings};
