//! `exec`: run to completion; exit codes are data.

use std::time::{Duration, Instant};

use sandbox_contract::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_TIMEOUT, ErrorCode, ExecRequest};

use super::{TrialResult, TrialScope, ensure, fail, seconds, show};
use crate::fixtures::Fault;

/// A non-zero exit comes back as the exit code, not as an error.
pub(super) async fn nonzero_exit_is_data(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    for code in [7, 1, 0] {
        let output = scope.sh(&sandbox.id, &format!("exit {code}")).await?;
        ensure!(
            output.exit_code == code,
            "`exit {code}` gave exit code {}",
            output.exit_code
        );
    }
    Ok(())
}

/// Arguments reach the program as given: spaces, quotes, `$`, `*`, backslashes, empty ones.
pub(super) async fn argv_reaches_the_program_verbatim(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let args = [
        "a b",
        "it's",
        "\"q\"",
        "",
        "$HOME",
        "*",
        "back\\slash",
        "  two  spaces ",
    ];
    let mut argv = vec!["printf".to_owned(), "[%s]".to_owned()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    let output = scope.exec(&sandbox.id, ExecRequest::new(argv)).await?;
    let expected: String = args.iter().map(|a| format!("[{a}]")).collect();
    ensure!(
        output.stdout == expected.as_bytes(),
        "printf got other arguments: printed {}, expected {}",
        show(&output.stdout),
        show(expected.as_bytes())
    );
    Ok(())
}

/// The command sees the request's environment variables, values unchanged.
pub(super) async fn request_env_is_seen(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let value = "va lue 'with' \"quotes\" $NOT_EXPANDED";
    let request = ExecRequest::new(["sh", "-c", "printf %s \"$CF_VAR\""]).with_env("CF_VAR", value);
    let output = scope.exec(&sandbox.id, request).await?;
    ensure!(
        output.stdout == value.as_bytes(),
        "the command saw CF_VAR = {}, expected {}",
        show(&output.stdout),
        show(value.as_bytes())
    );
    Ok(())
}

/// The command sees the environment from create, overridden by the request's.
pub(super) async fn create_env_is_seen_and_request_env_overrides_it(
    scope: TrialScope,
) -> TrialResult {
    let id = scope.new_id()?;
    let request = scope
        .request(id.clone())
        .with_env("CF_A", "from-create")
        .with_env("CF_B", "from-create");
    scope.create_with(request).await?;
    let exec = ExecRequest::new(["sh", "-c", "printf '%s,%s' \"$CF_A\" \"$CF_B\""])
        .with_env("CF_B", "from-exec");
    let output = scope.exec(&id, exec).await?;
    let expected = b"from-create,from-exec";
    ensure!(
        output.stdout == expected.as_slice(),
        "the command saw CF_A,CF_B = {}, expected {}",
        show(&output.stdout),
        show(expected)
    );
    Ok(())
}

/// The command runs in the request's directory.
pub(super) async fn cwd_is_used(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    for dir in [scope.fx.scratch_dir.clone(), "/".to_owned()] {
        let output = scope
            .exec(&sandbox.id, ExecRequest::new(["pwd"]).with_cwd(dir.clone()))
            .await?;
        let expected = format!("{dir}\n");
        ensure!(
            output.stdout == expected.as_bytes(),
            "pwd with cwd {dir} printed {}",
            show(&output.stdout)
        );
    }
    Ok(())
}

/// A cwd that does not exist never runs the command somewhere else.
pub(super) async fn missing_cwd_never_runs_elsewhere(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let request = ExecRequest::new(["sh", "-c", "echo ran"]).with_cwd("/cf-no-such-directory/x");
    match scope
        .call("exec", scope.p.exec(&sandbox.id, request))
        .await?
    {
        Err(error) => ensure!(
            error.is_not_found(),
            "exec with a missing cwd answered {error}; expected a non-zero exit or not_found"
        ),
        Ok(output) => {
            ensure!(
                output.exit_code != 0,
                "exec with a missing cwd exited 0 (stdout {})",
                show(&output.stdout)
            );
            ensure!(
                !output.stdout.starts_with(b"ran"),
                "exec with a missing cwd ran the command elsewhere"
            );
        }
    }
    Ok(())
}

/// A command the timeout ends exits 124, keeping what it wrote before.
pub(super) async fn timeout_exits_124_keeping_earlier_output(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let long = scope.fx.exec_timeout * 30;
    let request = ExecRequest::new(["sh", "-c", &format!("echo before; sleep {}", seconds(long))])
        .with_timeout(scope.fx.exec_timeout);
    let started = Instant::now();
    let output = scope.exec(&sandbox.id, request).await?;
    let took = started.elapsed();
    ensure!(
        output.exit_code == EXIT_TIMEOUT,
        "a timed-out command exited {}; expected {EXIT_TIMEOUT}",
        output.exit_code
    );
    ensure!(
        output.stdout.as_ref() == b"before\n",
        "a timed-out command's output was {}; expected what it wrote before",
        show(&output.stdout)
    );
    ensure!(
        took < long,
        "the timeout of {:?} ended the command only after {took:?}",
        scope.fx.exec_timeout
    );
    Ok(())
}

/// A program that does not exist exits 127.
pub(super) async fn missing_program_exits_127(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    for argv in [
        vec!["cf-no-such-program"],
        vec!["/cf/no/such/program", "arg"],
    ] {
        let output = scope
            .exec(&sandbox.id, ExecRequest::new(argv.clone()))
            .await?;
        ensure!(
            output.exit_code == EXIT_NOT_FOUND,
            "{argv:?} exited {}; expected {EXIT_NOT_FOUND}",
            output.exit_code
        );
    }
    Ok(())
}

/// A program that exists but cannot be executed exits 126.
pub(super) async fn non_executable_program_exits_126(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let path = scope.scratch("cf-not-executable");
    let made = scope
        .sh(&sandbox.id, &format!("printf 'plain text' > {path}"))
        .await?;
    ensure!(
        made.exit_code == 0,
        "could not write {path}: exit {}",
        made.exit_code
    );
    let output = scope
        .exec(&sandbox.id, ExecRequest::new([path.clone()]))
        .await?;
    ensure!(
        output.exit_code == EXIT_NOT_EXECUTABLE,
        "running the non-executable file {path} exited {}; expected {EXIT_NOT_EXECUTABLE}",
        output.exit_code
    );
    Ok(())
}

/// Large output comes back whole.
pub(super) async fn large_output_is_complete(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let size = scope.fx.large_bytes;
    let output = scope
        .exec(
            &sandbox.id,
            ExecRequest::new(["head", "-c", &size.to_string(), "/dev/zero"]),
        )
        .await?;
    ensure!(output.exit_code == 0, "head exited {}", output.exit_code);
    ensure!(
        output.stdout.len() == size,
        "got {} of {size} bytes",
        output.stdout.len()
    );
    ensure!(
        output.stdout.iter().all(|b| *b == 0),
        "the output was not all zero bytes"
    );
    Ok(())
}

/// Output that is not text comes back byte for byte.
pub(super) async fn binary_output_is_byte_exact(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let output = scope
        .exec(
            &sandbox.id,
            ExecRequest::new(["printf", "\\000\\001\\177\\200\\303\\050\\377"]),
        )
        .await?;
    let expected = [0u8, 1, 0x7f, 0x80, 0xc3, 0x28, 0xff];
    ensure!(
        output.stdout == expected.as_slice(),
        "binary output came back as {}, expected {}",
        show(&output.stdout),
        show(&expected)
    );
    Ok(())
}

/// Stdout and stderr come back separately.
pub(super) async fn stdout_and_stderr_are_separate(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let output = scope
        .sh(&sandbox.id, "echo out; echo err >&2; echo more")
        .await?;
    ensure!(
        output.stdout.as_ref() == b"out\nmore\n",
        "stdout was {}",
        show(&output.stdout)
    );
    ensure!(
        output.stderr.as_ref() == b"err\n",
        "stderr was {}",
        show(&output.stderr)
    );
    Ok(())
}

/// A malformed request answers `invalid_request`, even for a sandbox that does not exist.
pub(super) async fn malformed_request_is_invalid_request_before_not_found(
    scope: TrialScope,
) -> TrialResult {
    let unknown = scope.unknown_id()?;
    let sandbox = scope.create().await?;
    for id in [&sandbox.id, &unknown] {
        for (what, request) in [
            ("empty argv", ExecRequest::new(Vec::<String>::new())),
            (
                "relative cwd",
                ExecRequest::new(["true"]).with_cwd("relative"),
            ),
            (
                "zero timeout",
                ExecRequest::new(["true"]).with_timeout(Duration::ZERO),
            ),
        ] {
            scope
                .fails_with(
                    &format!("exec with {what} on {id}"),
                    ErrorCode::InvalidRequest,
                    scope.p.exec(id, request),
                )
                .await?;
        }
    }
    Ok(())
}

/// Exec refuses streamed stdin, which only exec_stream can feed.
pub(super) async fn streamed_stdin_is_invalid_request(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let request = ExecRequest::new(["cat"]).with_streamed_stdin();
    scope
        .fails_with(
            "exec with streamed stdin",
            ErrorCode::InvalidRequest,
            scope.p.exec(&sandbox.id, request),
        )
        .await?;
    Ok(())
}

/// A connection that drops before the exit code arrives answers `unavailable`, not an exit.
pub(super) async fn dropped_connection_is_unavailable(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let faults = scope
        .fx
        .faults
        .clone()
        .ok_or_else(|| super::Failure::new("no fault switches"))?;
    let long = scope.fx.op_timeout.min(Duration::from_secs(30));
    let provider = scope.p.clone();
    let id = sandbox.id.clone();
    let gap = seconds(scope.fx.stream_gap);
    let script = format!(
        "sleep {gap}; echo tick; sleep {gap}; echo tock; sleep {}",
        seconds(long)
    );
    let mut exec = tokio::spawn(async move {
        provider
            .exec(&id, ExecRequest::new(["sh", "-c", &script]))
            .await
    });
    let deadline = Instant::now() + long;
    let result = loop {
        tokio::select! {
            joined = &mut exec => break joined,
            () = tokio::time::sleep(Duration::from_millis(20)) => {
                if Instant::now() > deadline {
                    exec.abort();
                    fail!("exec kept running for {long:?} although its connections were broken");
                }
                scope.ok("inject break-exec-connections", faults.inject(Fault::BreakExecConnections)).await?;
            }
        }
    };
    match result {
        Err(error) => fail!("the exec task failed: {error}"),
        Ok(Ok(output)) => fail!(
            "exec whose connection dropped returned exit {} instead of an error",
            output.exit_code
        ),
        Ok(Err(error)) => ensure!(
            error.is_unavailable(),
            "exec whose connection dropped answered {error}; expected unavailable"
        ),
    }
    Ok(())
}
