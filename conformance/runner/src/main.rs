//! The main job: the conformance suite ([`sandbox_conformance`]) against the agent-sandbox
//! adapter ([`agentsandbox`]), or against any provider speaking the provider protocol
//! ([`sandbox_protocol`]), as the `conformance` binary.
//!
//! ```text
//! cargo run --release -p conformance-runner                   # embedded fakekube
//! cargo run --release -p conformance-runner -- exec::         # one group
//! cargo run --release -p conformance-runner -- --chaos-seed 7  # under a storm of faults
//! cargo run --release -p conformance-runner -- --pods-ignore-sigterm lifecycle.stop-start
//! cargo run --release -p conformance-runner -- --kubeconfig ~/.kube/config --context kind-kind
//! cargo run --release -p conformance-runner -- --kubeconfig k.yaml --fast --chaos  # its faults
//! cargo run --release -p conformance-runner -- --cluster --pools server-config.yaml
//! cargo run --release -p conformance-runner -- --provider-cmd 'python3 provider.py'
//! cargo run --release -p conformance-runner -- --provider-url ws://127.0.0.1:7000
//! cargo run --release -p conformance-runner -- --record run.jsonl
//! cargo run --release -p conformance-runner -- compare recorded.json replayed.json
//! ```
//!
//! By default it starts fakekube in-process, creates what a cluster operator would (the
//! `sandboxes` namespace, the SandboxTemplate and SandboxWarmPool of
//! `fixtures/live/warm-pool.yaml`), points the adapter at it as two pools — direct Sandboxes
//! with a volume and `ports.expose`, and the warm pool — runs the suite against both, prints
//! the capability table and the counts, and checks that nothing is left behind. `KUBECONFIG`
//! plays no part in that run. With `--kubeconfig PATH` or `--cluster` (`KUBECONFIG`, or the
//! in-cluster service account) it runs against that cluster instead, after a preflight of
//! each pool; with `--provider-cmd` or `--provider-url`, against a provider in any language.
//!
//! Every other argument is libtest's: filters, `--exact`, `--list`, `--ignored`,
//! `--test-threads`, `--format json`. Exit status: 0 when every trial that ran passed and
//! nothing was left behind, 1 when a trial failed or something was left, 2 for a bad flag, a
//! failed preflight or a setup that failed before any trial.
//!
//! This crate exists so that the suite library stays light: a provider author depends on
//! `sandbox-conformance` (the contract and libtest-mimic) and never builds the adapter or
//! fakekube, which only this binary brings.
//!
//! # Layout
//!
//! - `options`: this binary's own flags ([`options::Options`]) and what they aim at
//!   ([`options::Target`]); the rest go to libtest.
//! - `pools`: the fixtures' two pools (the live runs' `fixtures/live/` configs), a `--pools`
//!   file's pools, and the fixtures each gets.
//! - `embedded`: the run against an in-process fakekube, its fault switches and leak check.
//! - `chaos`: `--chaos-seed`, the embedded run under a seeded storm of faults, and `--chaos`,
//!   a cluster's run under faults it injects: provider calls counted by operation and outcome,
//!   failures a fault explains, the reconcile after.
//! - `sigterm`: `--pods-ignore-sigterm`, the embedded run with pods whose main process
//!   ignores SIGTERM (a stand-in for a mutating webhook rewrites their command), each pod
//!   followed to count those that outlived their grace period.
//! - `cluster`: the run against a cluster, with its preflight.
//! - `remote`: the run against a provider through the protocol.
//! - `record`: `--record`, the adapter through a recording proxy.
//! - `compare`: the `compare` subcommand, two runs' verdicts trial by trial.
//! - `error`: [`error::RunError`], why a run could not start, printed with its causes.
//!
//! # Known limitations
//!
//! - Against a cluster or a remote provider the fault trials are skipped: their faults cannot
//!   be switched from here.
//! - The leak check against a cluster sees only what the adapter lists as its own (Sandboxes
//!   and SandboxClaims of the pools), not pods or services a controller failed to remove.
//! - Under `--chaos-seed` (the embedded fakekube) or `--chaos` (a cluster's faults) a trial's
//!   failure is tied to a fault by the contract code its message quotes, not to the fault
//!   itself (with `--chaos` the runner cannot see the faults); pods deleted under execs are
//!   left out (their trials fail in ways a message cannot tie to the fault: `ci/soak.sh`'s
//!   adapter soak covers them).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod chaos;
mod cluster;
mod compare;
mod embedded;
mod error;
mod options;
mod pools;
mod record;
mod remote;
mod sigterm;

use std::process::ExitCode;

use sandbox_conformance::{Arguments, Report, Suite};

use crate::error::{RunError, with_causes};
use crate::options::{Options, Target, USAGE};

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
    let target = match options.target() {
        Ok(t) => t,
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
    match run(&target, &options, &libtest) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("conformance: {}", with_causes(&e));
            ExitCode::from(2)
        }
    }
}

/// Runs the suite where the options say: an embedded fakekube, a cluster, or a provider
/// through the protocol.
fn run(target: &Target, options: &Options, libtest: &Arguments) -> Result<ExitCode, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    match target {
        Target::Embedded => embedded::run(&runtime, options, libtest),
        Target::Cluster {
            kubeconfig,
            context,
        } => cluster::run(
            &runtime,
            kubeconfig.as_deref(),
            context.as_deref(),
            options,
            libtest,
        ),
        Target::Command(command) => remote::run(
            &runtime,
            remote::Endpoint::Command(command),
            options,
            libtest,
        ),
        Target::Url(url) => remote::run(&runtime, remote::Endpoint::Url(url), options, libtest),
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

/// Writes the Markdown table when asked, and returns the exit status of a run: success only
/// when no trial failed and nothing was left behind.
fn finish(report: &Report, options: &Options, clean: bool) -> Result<ExitCode, RunError> {
    if let Some(path) = &options.markdown {
        std::fs::write(path, report.capability_table_markdown()).map_err(|source| {
            RunError::WriteMarkdown {
                path: path.display().to_string(),
                source,
            }
        })?;
    }
    Ok(if report.has_failed() || !clean {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
