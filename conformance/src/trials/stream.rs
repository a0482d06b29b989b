//! `exec.stream`: output as it arrives, stdout and stderr apart, exactly one exit.

use std::time::Duration;

use sandbox_contract::{EXIT_NOT_FOUND, EXIT_TIMEOUT, ExecEvent, ExecRequest};

use super::{TrialResult, TrialScope, ensure, fail, seconds, show};
use crate::fixtures::Fault;

/// Runs `sh -c script` streamed and reads it to its terminal item.
async fn run(scope: &TrialScope, script: &str) -> Result<super::Streamed, super::Failure> {
    let sandbox = scope.create().await?;
    let mut session = scope
        .stream(&sandbox.id, ExecRequest::new(["sh", "-c", script]))
        .await?;
    scope.drain(&mut session).await
}

/// Stdout and stderr chunks come as separate events.
pub(super) async fn stdout_and_stderr_come_as_separate_events(scope: TrialScope) -> TrialResult {
    let streamed = run(&scope, "echo out; echo err >&2").await?;
    ensure!(
        streamed.terminal.as_ref().ok() == Some(&0),
        "terminal item {}",
        streamed.terminal_text()
    );
    ensure!(
        streamed.stdout() == b"out\n",
        "stdout events held {}",
        show(&streamed.stdout())
    );
    ensure!(
        streamed.stderr() == b"err\n",
        "stderr events held {}",
        show(&streamed.stderr())
    );
    Ok(())
}

/// Output written before the command sleeps arrives before it exits.
pub(super) async fn output_arrives_while_the_command_runs(scope: TrialScope) -> TrialResult {
    let gap = scope.fx.stream_gap;
    let streamed = run(
        &scope,
        &format!("echo first; sleep {}; echo second", seconds(gap * 2)),
    )
    .await?;
    ensure!(
        streamed.terminal.as_ref().ok() == Some(&0),
        "terminal item {}",
        streamed.terminal_text()
    );
    let Some((first_at, _)) = streamed.chunks.first() else {
        fail!("no output event arrived");
    };
    let early = streamed.terminal_at.saturating_duration_since(*first_at);
    ensure!(
        early >= gap,
        "the first output arrived only {early:?} before the exit, though the command slept {:?} \
         after writing it: output held until the end",
        gap * 2
    );
    ensure!(
        streamed.stdout() == b"first\nsecond\n",
        "stdout was {}",
        show(&streamed.stdout())
    );
    Ok(())
}

/// Output keeps its order within each stream and, given time between writes, across them.
pub(super) async fn order_is_kept_within_and_across_streams(scope: TrialScope) -> TrialResult {
    let gap = seconds(scope.fx.stream_gap);
    let lines: String = (1..=20).map(|n| format!("printf '{n},'; ")).collect();
    let script = format!(
        "{lines}sleep {gap}; printf a >&2; sleep {gap}; printf b; sleep {gap}; printf c >&2"
    );
    let streamed = run(&scope, &script).await?;
    ensure!(
        streamed.terminal.as_ref().ok() == Some(&0),
        "terminal item {}",
        streamed.terminal_text()
    );
    let mut runs: Vec<(bool, Vec<u8>)> = Vec::new();
    for (_, event) in &streamed.chunks {
        let (is_err, bytes) = match event {
            ExecEvent::Stdout(b) => (false, b),
            ExecEvent::Stderr(b) => (true, b),
            ExecEvent::Exit(_) => continue,
        };
        match runs.last_mut() {
            Some((last, data)) if *last == is_err => data.extend_from_slice(bytes),
            _ => runs.push((is_err, bytes.to_vec())),
        }
    }
    let numbers: String = (1..=20).map(|n| format!("{n},")).collect();
    let expected = vec![
        (false, numbers.clone().into_bytes()),
        (true, b"a".to_vec()),
        (false, b"b".to_vec()),
        (true, b"c".to_vec()),
    ];
    ensure!(
        runs == expected,
        "events came as {:?}; expected stdout {numbers}, stderr a, stdout b, stderr c",
        runs.iter()
            .map(|(e, d)| format!("{}:{}", if *e { "err" } else { "out" }, show(d)))
            .collect::<Vec<_>>()
    );
    Ok(())
}

/// Exactly one exit comes, after all the output, and nothing after it.
pub(super) async fn exactly_one_exit_after_all_output(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let mut session = scope
        .stream(
            &sandbox.id,
            ExecRequest::new([
                "sh",
                "-c",
                "printf one; printf two >&2; printf three; exit 3",
            ]),
        )
        .await?;
    let streamed = scope.drain(&mut session).await?;
    ensure!(
        streamed.terminal.as_ref().ok() == Some(&3),
        "terminal item {}; expected exit 3",
        streamed.terminal_text()
    );
    ensure!(
        streamed.stdout() == b"onethree" && streamed.stderr() == b"two",
        "before the exit came stdout {} and stderr {}: output after the exit was lost",
        show(&streamed.stdout()),
        show(&streamed.stderr())
    );
    let after = scope.next_event(&mut session).await?;
    ensure!(
        after.is_none(),
        "the session yielded {after:?} after its exit"
    );
    Ok(())
}

/// Streamed commands exit with the same codes as exec gives.
pub(super) async fn exit_codes_match_exec(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    for (argv, code) in [
        (vec!["sh", "-c", "exit 7"], 7),
        (vec!["true"], 0),
        (vec!["cf-no-such-program"], EXIT_NOT_FOUND),
    ] {
        let mut session = scope
            .stream(&sandbox.id, ExecRequest::new(argv.clone()))
            .await?;
        let streamed = scope.drain(&mut session).await?;
        ensure!(
            streamed.terminal.as_ref().ok() == Some(&code),
            "{argv:?} streamed {:?}; expected exit {code}",
            streamed.terminal
        );
    }
    Ok(())
}

/// A streamed command the timeout ends exits 124 after what it wrote.
pub(super) async fn timeout_exits_124(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let long = scope.fx.exec_timeout * 30;
    let request = ExecRequest::new(["sh", "-c", &format!("echo before; sleep {}", seconds(long))])
        .with_timeout(scope.fx.exec_timeout);
    let mut session = scope.stream(&sandbox.id, request).await?;
    let streamed = scope.drain(&mut session).await?;
    ensure!(
        streamed.terminal.as_ref().ok() == Some(&EXIT_TIMEOUT),
        "a timed-out streamed command ended with {:?}; expected exit {EXIT_TIMEOUT}",
        streamed.terminal
    );
    ensure!(
        streamed.stdout() == b"before\n",
        "stdout was {}",
        show(&streamed.stdout())
    );
    Ok(())
}

/// Large streamed output arrives whole.
pub(super) async fn large_output_arrives_complete(scope: TrialScope) -> TrialResult {
    let size = scope.fx.large_bytes;
    let streamed = run(&scope, &format!("head -c {size} /dev/zero; echo end >&2")).await?;
    ensure!(
        streamed.terminal.as_ref().ok() == Some(&0),
        "terminal item {}",
        streamed.terminal_text()
    );
    let stdout = streamed.stdout();
    ensure!(stdout.len() == size, "got {} of {size} bytes", stdout.len());
    ensure!(
        streamed.stderr() == b"end\n",
        "stderr was {}",
        show(&streamed.stderr())
    );
    Ok(())
}

/// A stream whose connection breaks ends in an error, never a made-up exit.
pub(super) async fn broken_stream_is_an_error_not_an_exit(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let faults = scope
        .fx
        .faults
        .clone()
        .ok_or_else(|| super::Failure::new("no fault switches"))?;
    let long = scope.fx.op_timeout.min(Duration::from_secs(30)) * 2;
    let request = ExecRequest::new([
        "sh",
        "-c",
        &format!(
            "echo started; sleep {}; echo more; sleep {}",
            seconds(scope.fx.stream_gap),
            seconds(long)
        ),
    ]);
    let mut session = scope.stream(&sandbox.id, request).await?;
    match scope.next_event(&mut session).await? {
        Some(Ok(ExecEvent::Stdout(_))) => {}
        other => fail!("expected the command's first output, got {other:?}"),
    }
    scope
        .ok(
            "inject break-exec-connections",
            faults.inject(Fault::BreakExecConnections),
        )
        .await?;
    loop {
        match scope.next_event(&mut session).await? {
            Some(Ok(ExecEvent::Exit(code))) => {
                fail!("the broken stream ended with a made-up exit {code}")
            }
            Some(Ok(_)) => continue,
            Some(Err(_)) => return Ok(()),
            None => fail!("the broken stream ended without a terminal item"),
        }
    }
}
