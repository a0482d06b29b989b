//! The capability conformance suite any sandbox provider adapter runs.
//!
//! A provider declares capabilities in [`ProviderInfo`](sandbox_contract::ProviderInfo); each
//! declared one is a promise this suite checks with one trial per normative rule of the
//! contract, and each undeclared one must answer `unsupported_operation` without half-working,
//! which a *coherence* trial checks instead. Every trial that does not run says why.
//!
//! Trials are named `group::rule` (`exec::nonzero_exit_is_data`,
//! `lifecycle.stop-start::volume_survives_only_under_volume_path`), prefixed with the pool's
//! name when the suite runs several pools. They run through libtest-mimic, so `--list`, name
//! filters, `--exact`, `--ignored`, `--test-threads`, `--format json` and cargo-nextest work as
//! for `cargo test`.
//!
//! # Example: a provider's conformance test
//!
//! In `tests/conformance.rs`, declared with `harness = false`:
//!
//! ```no_run
//! use std::process::ExitCode;
//! use std::sync::Arc;
//!
//! use sandbox_conformance::{Arguments, Fixtures, ReferenceProvider, Suite};
//!
//! fn main() -> ExitCode {
//!     // Your provider here; the reference provider stands in for it.
//!     let provider = ReferenceProvider::new();
//!     let fixtures = provider.fixtures();
//!     Suite::new()
//!         .pool("reference", Arc::new(provider), fixtures)
//!         .run(&Arguments::from_args())
//!         .exit_code()
//! }
//! ```
//!
//! # Layout
//!
//! - `suite`: [`Suite`], turning the rules into libtest-mimic trials for each pool, running
//!   them and cleaning up after each.
//! - `trials`: the rules, one async function per trial grouped by capability ([`Group`],
//!   [`TrialKind`]), each running in a `TrialScope` (the provider, its declarations, the
//!   fixtures, and the sandboxes to delete afterwards).
//! - `fixtures`: [`Fixtures`] and [`Faults`], what a provider tells the suite beyond its info.
//! - `report`: [`Report`], with the capability table, text, JSON and JUnit.
//! - `reference`: [`ReferenceProvider`], an in-memory provider that passes every trial, and its
//!   mutants ([`Bug`]), each failing the trial named for its bug.
//! - `explained` (public): failures under faults the run does not control told apart from
//!   real ones: provider calls counted, failures explained by the contract code they quote, the
//!   reconcile after a run (the `conformance` binary's `--chaos-seed`/`--chaos`, the live
//!   tests' `LIVE_CHAOS`).
//!
//! The library depends on the contract and what the suite itself needs (libtest-mimic, tokio,
//! serde_json), never on an adapter or a fake backend. This workspace's main job, the suite
//! against the agent-sandbox adapter on fakekube, is the `conformance` binary of the separate
//! `conformance-runner` crate (`conformance/runner/`).
//!
//! # Known limitations
//!
//! - Trials that need the backend to misbehave (a dropped exec connection, a failing list page)
//!   run only when the fixtures give [`Faults`].
//! - `isolation.*` are declared, not checked. Memory snapshots and pause are checked through
//!   files only: the portable command set has no background processes to observe.
//! - Snapshots cannot be deleted through the contract, so snapshot trials leave their snapshots.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod explained;
mod fixtures;
mod reference;
mod report;
mod suite;
mod trials;

/// Compiles the README's examples as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

// The public interface is:
pub use fixtures::{Fault, Faults, Fixtures};
pub use libtest_mimic::{Arguments, Conclusion, Trial};
pub use reference::{Bug, ReferenceProvider, VOLUME_PATH};
pub use report::{Counts, Outcome, PoolSummary, Report, TrialRecord};
pub use suite::{JSON_ENV, JUNIT_ENV, Suite};
pub use trials::{Group, TrialKind};
