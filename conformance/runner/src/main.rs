//! The main job: the conformance suite ([`sandbox_conformance`]) against the agent-sandbox
//! adapter ([`agentsandbox`]), as the `conformance` binary.
//!
//! ```text
//! cargo run --release -p conformance-runner                   # embedded fakekube
//! cargo run --release -p conformance-runner -- exec::         # one group
//! cargo run --release -p conformance-runner -- --kubeconfig ~/.kube/config
//! cargo run --release -p conformance-runner -- --record run.jsonl --test-threads 1
//! cargo run --release -p conformance-runner -- compare recorded.json replayed.json
//! ```
//!
//! By default it starts fakekube in-process, creates what a cluster operator would (the
//! `sandboxes` namespace, the SandboxTemplate and SandboxWarmPool of
//! `fixtures/live/warm-pool.yaml`), points the adapter at it as two pools — direct Sandboxes
//! with a volume and `ports.expose`, and the warm pool — runs the suite against both, prints
//! the capability table and the counts, and checks that nothing is left behind. With
//! `--kubeconfig PATH` (or `KUBECONFIG`) it runs against that cluster instead, which must
//! already have the namespace, template and warm pool (`ci/kind-up.sh`).
//!
//! Every other argument is libtest's: filters, `--exact`, `--list`, `--ignored`,
//! `--test-threads`, `--format json`. It exits 0 only when every trial that ran passed and
//! nothing was left behind, and 2 when one of its own flags lacks its value.
//!
//! This crate exists so that the suite library stays light: a provider author depends on
//! `sandbox-conformance` (the contract and libtest-mimic) and never builds the adapter or
//! fakekube, which only this binary brings.
//!
//! # Layout
//!
//! - `options`: this binary's own flags ([`options::Options`]); the rest go to libtest.
//! - `pools`: the two pools (the live runs' `fixtures/live/` configs) and their fixtures.
//! - `embedded`: the run against an in-process fakekube, its fault switches and leak check.
//! - `cluster`: the run against the cluster a kubeconfig names.
//! - `record`: `--record`, the adapter through a recording proxy.
//! - `compare`: the `compare` subcommand, two runs' verdicts trial by trial.
//! - `error`: [`error::RunError`], why a run could not start, printed with its causes.
//!
//! # Known limitations
//!
//! - Against a cluster the fault trials are skipped: the faults of a fakekube process cannot be
//!   switched from here, and a real cluster has none.
//! - The leak check against a cluster sees only what the adapter lists as its own (Sandboxes
//!   and SandboxClaims of the two pools), not pods or services a controller failed to remove.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod cluster;
mod compare;
mod embedded;
mod error;
mod options;
mod pools;
mod record;

use std::process::ExitCode;

use sandbox_conformance::{Arguments, Report, Suite};

use crate::error::{RunError, with_causes};
use crate::options::{Options, USAGE};

fn main() -> ExitCode {
    let mut argv = std::env::args();
    let program = argv.next().unwrap_or_else(|| "conformance".into());
    let mut argv = argv.peekable();
    if argv.peek().is_some_and(|a| a == "compare") {
        return compare::main(&argv.skip(1).collect::<Vec<_>>());
    }
    let options = match Options::parse(argv) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("conformance: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if options.wants_help() {
        print!("{USAGE}\nLIBTEST OPTIONS:\n");
    }
    // libtest-mimic parses the rest as cargo test would (and prints its help or an error).
    let mut libtest = Arguments::from_iter(std::iter::once(program).chain(options.rest.clone()));
    // The trials wait on a server, not on the CPU: run several at once unless told otherwise.
    if libtest.test_threads.is_none() {
        libtest.test_threads = Some(8);
    }
    match run(&options, &libtest) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("conformance: {}", with_causes(&e));
            ExitCode::FAILURE
        }
    }
}

/// Runs the suite where the options say: a cluster, or an embedded fakekube.
fn run(options: &Options, libtest: &Arguments) -> Result<ExitCode, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    match options.cluster_kubeconfig(|name| std::env::var_os(name)) {
        Some(path) => cluster::run(&runtime, &path, options, libtest),
        None => embedded::run(&runtime, options, libtest),
    }
}

/// A suite that writes the reports the options ask for.
fn suite_with_reports(options: &Options) -> Suite {
    let mut suite = Suite::new();
    if let Some(p) = &options.json {
        suite = suite.write_json(p);
    }
    if let Some(p) = &options.junit {
        suite = suite.write_junit(p);
    }
    suite
}

/// The exit status of a run: success only when no trial failed and nothing was left behind.
fn verdict(report: &Report, clean: bool) -> ExitCode {
    if report.has_failed() || !clean {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
