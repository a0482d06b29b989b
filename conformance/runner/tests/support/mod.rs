//! What the runner's integration tests share: the `conformance` binary, run as a user runs it.

#![allow(
    dead_code,
    reason = "each test binary includes this module and uses a different subset of it"
)]

use std::process::{Command, Output};

/// The `conformance` binary with `args` and `KUBECONFIG` unset, so that only `args` (and what
/// a caller adds) aim it.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_conformance"));
    command.args(args).env_remove("KUBECONFIG");
    command
}

/// Runs the binary with `args` and returns what it did.
pub fn run(args: &[&str]) -> Output {
    command(args).output().expect("the conformance binary runs")
}

/// Runs the binary with `args`, asserts that it exited 0 (showing both streams if not), and
/// returns its stdout and stderr.
pub fn passing(args: &[&str]) -> (String, String) {
    let output = run(args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{stdout}");
    (stdout, stderr)
}
