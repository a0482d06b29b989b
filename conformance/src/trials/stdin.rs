//! `stdin`: input reaches the command, and end of input ends it.

use std::time::Duration;

use sandbox_contract::{ExecEvent, ExecRequest};

use super::{TrialResult, TrialScope, ensure, fail, show};

/// Bytes given with the request reach the command, then end of input.
pub(super) async fn bytes_reach_the_command_then_end_of_input(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let input = b"hello\nworld\0\xff".to_vec();
    let output = scope
        .exec(
            &sandbox.id,
            ExecRequest::new(["cat"]).with_stdin(input.clone()),
        )
        .await?;
    ensure!(output.exit_code == 0, "cat exited {}", output.exit_code);
    ensure!(
        output.stdout == input,
        "cat echoed {}, given {}",
        show(&output.stdout),
        show(&input)
    );
    Ok(())
}

/// Large input reaches the command whole.
pub(super) async fn large_stdin_arrives_complete(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let size = scope.fx.large_bytes;
    let input: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let output = scope
        .exec(
            &sandbox.id,
            ExecRequest::new(["wc", "-c"]).with_stdin(input.clone()),
        )
        .await?;
    let counted = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    ensure!(
        counted == size.to_string(),
        "wc -c counted {counted} of {size} input bytes"
    );
    let output = scope
        .exec(
            &sandbox.id,
            ExecRequest::new(["cat"]).with_stdin(input.clone()),
        )
        .await?;
    ensure!(
        output.stdout == input,
        "cat echoed {} bytes differing from the {size} given",
        output.stdout.len()
    );
    Ok(())
}

/// Streamed chunks reach the command in the order sent.
pub(super) async fn streamed_chunks_arrive_in_order(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let chunks: Vec<String> = (0..8).map(|n| format!("<{n}>")).collect();
    let total: usize = chunks.iter().map(String::len).sum();
    let request = ExecRequest::new(["head", "-c", &total.to_string()]).with_streamed_stdin();
    let mut session = scope.stream(&sandbox.id, request).await?;
    let mut stdin = session
        .take_stdin()
        .ok_or_else(|| super::Failure::new("the session has no stdin handle"))?;
    for chunk in &chunks {
        scope.ok("stdin send", stdin.send(chunk.clone())).await?;
    }
    let streamed = scope.drain(&mut session).await?;
    drop(stdin);
    let expected: String = chunks.concat();
    ensure!(
        streamed.stdout() == expected.as_bytes(),
        "the command read {}, sent {}",
        show(&streamed.stdout()),
        show(expected.as_bytes())
    );
    Ok(())
}

/// Streamed input reaches the command as it is sent, before stdin is closed.
pub(super) async fn streamed_input_is_not_held_until_close(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let mut session = scope
        .stream(&sandbox.id, ExecRequest::new(["cat"]).with_streamed_stdin())
        .await?;
    let mut stdin = session
        .take_stdin()
        .ok_or_else(|| super::Failure::new("the session has no stdin handle"))?;
    scope.ok("stdin send", stdin.send("ping\n")).await?;
    let wait = scope.fx.op_timeout.min(scope.fx.stream_gap * 20);
    let echoed = tokio::time::timeout(wait, session.next_event()).await;
    match echoed {
        Ok(Some(Ok(ExecEvent::Stdout(chunk)))) => {
            ensure!(chunk.starts_with(b"p"), "cat echoed {} first", show(&chunk))
        }
        Ok(other) => fail!("expected cat to echo ping before stdin closed, got {other:?}"),
        Err(_) => fail!("cat echoed nothing within {wait:?}: input held until stdin closes"),
    }
    scope.ok("stdin close", stdin.close()).await?;
    let rest = scope.drain(&mut session).await?;
    ensure!(
        rest.terminal.as_ref().ok() == Some(&0),
        "cat ended with {:?}",
        rest.terminal
    );
    Ok(())
}

/// Closing streamed stdin gives the command end of input.
pub(super) async fn closing_streamed_stdin_delivers_end_of_input(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let mut session = scope
        .stream(
            &sandbox.id,
            ExecRequest::new(["wc", "-c"]).with_streamed_stdin(),
        )
        .await?;
    let stdin = session
        .stdin()
        .ok_or_else(|| super::Failure::new("the session has no stdin handle"))?;
    scope.ok("stdin send", stdin.send("12345")).await?;
    scope.ok("stdin close", stdin.close()).await?;
    let streamed = eof_or_fail(&scope, &mut session, "closing").await?;
    let counted = String::from_utf8_lossy(&streamed.stdout())
        .trim()
        .to_owned();
    ensure!(counted == "5", "wc -c counted {counted} bytes; sent 5");
    Ok(())
}

/// Dropping the stdin handle gives the command end of input, like closing it.
pub(super) async fn dropping_the_handle_delivers_end_of_input(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let mut session = scope
        .stream(&sandbox.id, ExecRequest::new(["cat"]).with_streamed_stdin())
        .await?;
    let mut stdin = session
        .take_stdin()
        .ok_or_else(|| super::Failure::new("the session has no stdin handle"))?;
    scope.ok("stdin send", stdin.send("bye")).await?;
    drop(stdin);
    let streamed = eof_or_fail(&scope, &mut session, "dropping").await?;
    ensure!(
        streamed.stdout() == b"bye",
        "cat echoed {}",
        show(&streamed.stdout())
    );
    Ok(())
}

/// One shell session, driven as agents drive sandboxes: each command written to `sh`'s
/// stdin is answered before the next is written, and `exit` ends the session with its code
/// while stdin is still open.
pub(super) async fn one_session_answers_each_command_before_the_next(
    scope: TrialScope,
) -> TrialResult {
    let sandbox = scope.create().await?;
    let mut session = scope
        .stream(&sandbox.id, ExecRequest::new(["sh"]).with_streamed_stdin())
        .await?;
    let mut stdin = session
        .take_stdin()
        .ok_or_else(|| super::Failure::new("the session has no stdin handle"))?;
    let wait = scope.fx.op_timeout.min(scope.fx.stream_gap * 20);
    let steps = [
        ("echo one", "one\n"),
        ("cd /tmp; pwd", "/tmp\n"),
        ("printf '%s-%s\\n' two three", "two-three\n"),
        ("pwd", "/tmp\n"),
    ];
    for (command, answer) in steps {
        scope
            .ok("stdin send", stdin.send(format!("{command}\n")))
            .await?;
        let mut got = Vec::new();
        while got.len() < answer.len() {
            match tokio::time::timeout(wait, session.next_event()).await {
                Ok(Some(Ok(ExecEvent::Stdout(chunk)))) => got.extend_from_slice(&chunk),
                Ok(Some(Ok(ExecEvent::Stderr(chunk)))) => {
                    fail!("`{command}` wrote {} on stderr", show(&chunk))
                }
                Ok(other) => fail!("`{command}`: expected its output, got {other:?}"),
                Err(_) => fail!(
                    "`{command}` was not answered within {wait:?} (read {}): the shell waits \
                     for end of input before running commands?",
                    show(&got)
                ),
            }
        }
        ensure!(
            got == answer.as_bytes(),
            "`{command}` printed {}, expected {}",
            show(&got),
            show(answer.as_bytes())
        );
    }
    scope.ok("stdin send", stdin.send("exit 7\n")).await?;
    let rest = match tokio::time::timeout(scope.fx.op_timeout, scope.drain(&mut session)).await {
        Ok(rest) => rest?,
        Err(_) => fail!(
            "`exit 7` did not end the session within {:?} while stdin was open",
            scope.fx.op_timeout
        ),
    };
    drop(stdin);
    ensure!(
        rest.terminal.as_ref().ok() == Some(&7),
        "the session ended with {:?} after `exit 7`",
        rest.terminal
    );
    ensure!(
        rest.stdout().is_empty(),
        "`exit 7` printed {}",
        show(&rest.stdout())
    );
    Ok(())
}

/// Reads the session to its exit, failing with a clear message if end of input never came.
async fn eof_or_fail(
    scope: &TrialScope,
    session: &mut sandbox_contract::ExecSession,
    how: &str,
) -> Result<super::Streamed, super::Failure> {
    let wait = scope.fx.op_timeout.min(Duration::from_secs(60));
    match tokio::time::timeout(wait, scope.drain(session)).await {
        Err(_) => {
            fail!("the command did not end within {wait:?} after {how} stdin: no end of input")
        }
        Ok(Err(failure)) => Err(super::Failure::new(format!(
            "{failure} (after {how} stdin: no end of input?)"
        ))),
        Ok(Ok(streamed)) => {
            ensure!(
                streamed.terminal.as_ref().ok() == Some(&0),
                "the command ended with {:?} after {how} stdin",
                streamed.terminal
            );
            Ok(streamed)
        }
    }
}
