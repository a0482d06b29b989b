//! `lifecycle.stop-start` and `lifecycle.pause-resume`.

use bytes::Bytes;
use sandbox_contract::{Capability, ErrorCode, ExecRequest, SandboxState};

use super::{TrialResult, TrialScope, ensure, show};

/// Checks that `get` reports `state` for the sandbox.
async fn state_is(
    scope: &TrialScope,
    id: &sandbox_contract::SandboxId,
    state: SandboxState,
) -> TrialResult {
    let got = scope.ok("get", scope.p.get(id)).await?;
    ensure!(
        got.state == state,
        "get reports {}; expected {state}",
        got.state
    );
    Ok(())
}

/// Stop returns the sandbox stopped, and get agrees.
pub(super) async fn stop_returns_stopped_and_get_agrees(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let stopped = scope.ok("stop", scope.p.stop(&sandbox.id)).await?;
    ensure!(
        stopped.state == SandboxState::Stopped,
        "stop returned {}",
        stopped.state
    );
    state_is(&scope, &sandbox.id, SandboxState::Stopped).await
}

/// Start returns the sandbox running again, get agrees, and commands run.
pub(super) async fn start_runs_the_sandbox_again(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope.ok("stop", scope.p.stop(&sandbox.id)).await?;
    let started = scope.ok("start", scope.p.start(&sandbox.id)).await?;
    ensure!(
        started.state == SandboxState::Running,
        "start returned {}",
        started.state
    );
    state_is(&scope, &sandbox.id, SandboxState::Running).await?;
    if scope.declares(Capability::Exec) {
        let output = scope
            .exec(&sandbox.id, ExecRequest::new(["echo", "alive"]))
            .await?;
        ensure!(
            output.stdout.as_ref() == b"alive\n",
            "exec after start printed {}",
            show(&output.stdout)
        );
    }
    if scope.declares(Capability::Files) {
        scope
            .write(&sandbox.id, &scope.scratch("cf-after-start"), b"x")
            .await?;
    }
    Ok(())
}

/// Exec in a stopped sandbox answers `invalid_state`.
pub(super) async fn exec_while_stopped_is_invalid_state(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope.ok("stop", scope.p.stop(&sandbox.id)).await?;
    scope
        .fails_with(
            "exec while stopped",
            ErrorCode::InvalidState,
            scope.p.exec(&sandbox.id, ExecRequest::new(["true"])),
        )
        .await?;
    if scope.declares(Capability::ExecStream) {
        scope
            .fails_with(
                "exec_stream while stopped",
                ErrorCode::InvalidState,
                scope.p.exec_stream(&sandbox.id, ExecRequest::new(["true"])),
            )
            .await?;
    }
    Ok(())
}

/// File operations in a stopped sandbox answer `invalid_state`.
pub(super) async fn files_while_stopped_are_invalid_state(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let path = scope.scratch("cf-stopped");
    scope.ok("stop", scope.p.stop(&sandbox.id)).await?;
    let is = ErrorCode::InvalidState;
    scope
        .fails_with(
            "write_file while stopped",
            is,
            scope
                .p
                .write_file(&sandbox.id, &path, Bytes::from_static(b"x")),
        )
        .await?;
    scope
        .fails_with(
            "read_file while stopped",
            is,
            scope.p.read_file(&sandbox.id, &path, 10),
        )
        .await?;
    scope
        .fails_with(
            "list_dir while stopped",
            is,
            scope.p.list_dir(&sandbox.id, "/"),
        )
        .await?;
    scope
        .fails_with("stat while stopped", is, scope.p.stat(&sandbox.id, "/"))
        .await?;
    scope
        .fails_with("mkdir while stopped", is, scope.p.mkdir(&sandbox.id, &path))
        .await?;
    Ok(())
}

/// Stopping a stopped sandbox and starting a running one succeed.
pub(super) async fn stop_and_start_are_idempotent(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let started = scope
        .ok("start of a running sandbox", scope.p.start(&sandbox.id))
        .await?;
    ensure!(
        started.state == SandboxState::Running,
        "start of a running sandbox returned {}",
        started.state
    );
    scope.ok("stop", scope.p.stop(&sandbox.id)).await?;
    let again = scope
        .ok("stop of a stopped sandbox", scope.p.stop(&sandbox.id))
        .await?;
    ensure!(
        again.state == SandboxState::Stopped,
        "a second stop returned {}",
        again.state
    );
    scope.ok("start", scope.p.start(&sandbox.id)).await?;
    state_is(&scope, &sandbox.id, SandboxState::Running).await
}

/// After stop and start, files under the volume path are kept and files elsewhere are gone.
pub(super) async fn volume_survives_only_under_volume_path(scope: TrialScope) -> TrialResult {
    let volume = scope.fx.volume_path.clone().unwrap_or_default();
    let sandbox = scope.create().await?;
    let kept = format!("{}/cf-persist/kept.bin", volume.trim_end_matches('/'));
    let lost = scope.scratch("cf-persist-lost.bin");
    let data: Vec<u8> = (0..=255u8).collect();
    scope.write(&sandbox.id, &kept, &data).await?;
    scope.write(&sandbox.id, &lost, b"gone after stop").await?;
    scope.ok("stop", scope.p.stop(&sandbox.id)).await?;
    scope.ok("start", scope.p.start(&sandbox.id)).await?;
    let back = scope
        .call("read_file", scope.p.read_file(&sandbox.id, &kept, 1024))
        .await?
        .map_err(|e| {
            super::Failure::new(format!("the file under the volume was lost at stop: {e}"))
        })?;
    ensure!(
        back == data,
        "the file under the volume changed at stop: {}",
        show(&back)
    );
    match scope.call("stat", scope.p.stat(&sandbox.id, &lost)).await? {
        Err(error) if error.is_not_found() => Ok(()),
        Err(error) => Err(super::Failure::new(format!(
            "stat of {lost} answered {error}"
        ))),
        Ok(_) => Err(super::Failure::new(format!(
            "{lost}, outside the volume, survived stop and start"
        ))),
    }
}

/// A stopped sandbox is in the list, stopped.
pub(super) async fn stopped_sandbox_is_listed(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope.ok("stop", scope.p.stop(&sandbox.id)).await?;
    let listed = scope.ok("list", scope.p.list()).await?;
    let found = listed.iter().find(|s| s.id == sandbox.id);
    ensure!(
        found.is_some(),
        "list leaves out the stopped sandbox {}",
        sandbox.id
    );
    ensure!(
        found.is_some_and(|s| s.state == SandboxState::Stopped),
        "list shows the stopped sandbox as {:?}",
        found.map(|s| s.state)
    );
    Ok(())
}

/// Create of a stopped sandbox's id returns it as it is, stopped.
pub(super) async fn create_returns_a_stopped_sandbox_as_it_is(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope.ok("stop", scope.p.stop(&sandbox.id)).await?;
    let adopted = scope.create_with(scope.request(sandbox.id.clone())).await?;
    ensure!(
        adopted.state == SandboxState::Stopped,
        "create of a stopped sandbox returned it {}",
        adopted.state
    );
    ensure!(
        adopted.provider_ref == sandbox.provider_ref,
        "create of a stopped sandbox made a new one"
    );
    state_is(&scope, &sandbox.id, SandboxState::Stopped).await
}

/// Pause returns the sandbox paused, and exec in it answers `invalid_state`.
pub(super) async fn pause_returns_paused_and_exec_is_invalid_state(
    scope: TrialScope,
) -> TrialResult {
    let sandbox = scope.create().await?;
    let paused = scope.ok("pause", scope.p.pause(&sandbox.id)).await?;
    ensure!(
        paused.state == SandboxState::Paused,
        "pause returned {}",
        paused.state
    );
    state_is(&scope, &sandbox.id, SandboxState::Paused).await?;
    if scope.declares(Capability::Exec) {
        scope
            .fails_with(
                "exec while paused",
                ErrorCode::InvalidState,
                scope.p.exec(&sandbox.id, ExecRequest::new(["true"])),
            )
            .await?;
    }
    if scope.declares(Capability::Files) {
        scope
            .fails_with(
                "stat while paused",
                ErrorCode::InvalidState,
                scope.p.stat(&sandbox.id, "/"),
            )
            .await?;
    }
    let resumed = scope.ok("resume", scope.p.resume(&sandbox.id)).await?;
    ensure!(
        resumed.state == SandboxState::Running,
        "resume returned {}",
        resumed.state
    );
    Ok(())
}

/// Resume keeps every file, inside the volume or not.
pub(super) async fn resume_keeps_every_file(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let path = scope.scratch("cf-paused.txt");
    scope.write(&sandbox.id, &path, b"kept in memory").await?;
    scope.ok("pause", scope.p.pause(&sandbox.id)).await?;
    scope.ok("resume", scope.p.resume(&sandbox.id)).await?;
    state_is(&scope, &sandbox.id, SandboxState::Running).await?;
    let back = scope
        .call("read_file", scope.p.read_file(&sandbox.id, &path, 1024))
        .await?
        .map_err(|e| super::Failure::new(format!("a file was lost at pause: {e}")))?;
    ensure!(
        back.as_ref() == b"kept in memory",
        "the file changed at pause: {}",
        show(&back)
    );
    Ok(())
}

/// Pausing a paused sandbox and resuming a running one succeed.
pub(super) async fn pause_and_resume_are_idempotent(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope
        .ok("resume of a running sandbox", scope.p.resume(&sandbox.id))
        .await?;
    scope.ok("pause", scope.p.pause(&sandbox.id)).await?;
    let again = scope
        .ok("pause of a paused sandbox", scope.p.pause(&sandbox.id))
        .await?;
    ensure!(
        again.state == SandboxState::Paused,
        "a second pause returned {}",
        again.state
    );
    scope.ok("resume", scope.p.resume(&sandbox.id)).await?;
    state_is(&scope, &sandbox.id, SandboxState::Running).await
}
