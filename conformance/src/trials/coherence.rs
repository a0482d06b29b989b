//! Coherence trials: an undeclared capability's operations answer `unsupported_operation`,
//! whatever the arguments, and do nothing.

use std::time::Duration;

use bytes::Bytes;
use sandbox_contract::{Capability, ErrorCode, ExecRequest, SandboxId, SandboxState, SnapshotKind};

use super::{TrialResult, TrialScope, ensure};

/// The code every trial here expects.
const UNSUPPORTED: ErrorCode = ErrorCode::UnsupportedOperation;

/// Checks, when exec can tell, that nothing exists at `path` in the sandbox.
async fn absent(scope: &TrialScope, id: &SandboxId, path: &str, why: &str) -> TrialResult {
    if !scope.declares(Capability::Exec) {
        return Ok(());
    }
    let output = scope
        .exec(id, ExecRequest::new(["test", "-e", path]))
        .await?;
    ensure!(output.exit_code != 0, "{path} exists: {why} half-worked");
    Ok(())
}

/// Checks that the sandbox is still running.
async fn still_running(scope: &TrialScope, id: &SandboxId, after: &str) -> TrialResult {
    let got = scope.ok("get", scope.p.get(id)).await?;
    ensure!(
        got.state == SandboxState::Running,
        "the sandbox is {} after {after}",
        got.state
    );
    Ok(())
}

/// Without `exec`, exec answers `unsupported_operation` for any sandbox and request.
pub(super) async fn exec(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let unknown = scope.unknown_id()?;
    scope
        .fails_with(
            "exec",
            UNSUPPORTED,
            scope.p.exec(&sandbox.id, ExecRequest::new(["true"])),
        )
        .await?;
    scope
        .fails_with(
            "exec on an unknown sandbox",
            UNSUPPORTED,
            scope.p.exec(&unknown, ExecRequest::new(["true"])),
        )
        .await?;
    scope
        .fails_with(
            "exec of an empty argv",
            UNSUPPORTED,
            scope
                .p
                .exec(&sandbox.id, ExecRequest::new(Vec::<String>::new())),
        )
        .await?;
    Ok(())
}

/// Without `exec.stream`, exec_stream answers `unsupported_operation`.
pub(super) async fn exec_stream(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let unknown = scope.unknown_id()?;
    let marker = scope.scratch("cf-coherence-stream");
    let request = ExecRequest::new(["sh", "-c", &format!("printf x > {marker}")]);
    scope
        .fails_with(
            "exec_stream",
            UNSUPPORTED,
            scope.p.exec_stream(&sandbox.id, request),
        )
        .await?;
    scope
        .fails_with(
            "exec_stream on an unknown sandbox",
            UNSUPPORTED,
            scope.p.exec_stream(&unknown, ExecRequest::new(["true"])),
        )
        .await?;
    absent(&scope, &sandbox.id, &marker, "exec_stream").await
}

/// Without `stdin`, commands given input answer `unsupported_operation` and do not run.
pub(super) async fn stdin(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let marker = scope.scratch("cf-coherence-stdin");
    let script = format!("printf x > {marker}; cat");
    scope
        .fails_with(
            "exec with stdin bytes",
            UNSUPPORTED,
            scope.p.exec(
                &sandbox.id,
                ExecRequest::new(["sh", "-c", &script]).with_stdin("input"),
            ),
        )
        .await?;
    if scope.declares(Capability::ExecStream) {
        scope
            .fails_with(
                "exec_stream with streamed stdin",
                UNSUPPORTED,
                scope.p.exec_stream(
                    &sandbox.id,
                    ExecRequest::new(["sh", "-c", &script]).with_streamed_stdin(),
                ),
            )
            .await?;
        scope
            .fails_with(
                "exec_stream with stdin bytes",
                UNSUPPORTED,
                scope.p.exec_stream(
                    &sandbox.id,
                    ExecRequest::new(["sh", "-c", &script]).with_stdin("input"),
                ),
            )
            .await?;
    }
    absent(&scope, &sandbox.id, &marker, "a command given stdin").await
}

/// Without `files`, every file operation answers `unsupported_operation` and changes nothing.
pub(super) async fn files(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let file = scope.scratch("cf-coherence-file");
    let dir = scope.scratch("cf-coherence-dir");
    let id = &sandbox.id;
    scope
        .fails_with(
            "write_file",
            UNSUPPORTED,
            scope.p.write_file(id, &file, Bytes::from_static(b"x")),
        )
        .await?;
    scope
        .fails_with("read_file", UNSUPPORTED, scope.p.read_file(id, "/", 10))
        .await?;
    scope
        .fails_with("list_dir", UNSUPPORTED, scope.p.list_dir(id, "/"))
        .await?;
    scope
        .fails_with("stat", UNSUPPORTED, scope.p.stat(id, "/"))
        .await?;
    scope
        .fails_with("mkdir", UNSUPPORTED, scope.p.mkdir(id, &dir))
        .await?;
    scope
        .fails_with(
            "stat of a bad path",
            UNSUPPORTED,
            scope.p.stat(id, "relative"),
        )
        .await?;
    absent(&scope, id, &file, "write_file").await?;
    absent(&scope, id, &dir, "mkdir").await
}

/// Without `lifecycle.stop-start`, stop and start answer `unsupported_operation` and the
/// sandbox keeps running.
pub(super) async fn stop_start(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope
        .fails_with("stop", UNSUPPORTED, scope.p.stop(&sandbox.id))
        .await?;
    still_running(&scope, &sandbox.id, "a refused stop").await?;
    scope
        .fails_with("start", UNSUPPORTED, scope.p.start(&sandbox.id))
        .await?;
    let unknown = scope.unknown_id()?;
    scope
        .fails_with(
            "stop of an unknown sandbox",
            UNSUPPORTED,
            scope.p.stop(&unknown),
        )
        .await?;
    if scope.declares(Capability::Exec) {
        scope.exec(&sandbox.id, ExecRequest::new(["true"])).await?;
    }
    Ok(())
}

/// Without `lifecycle.pause-resume`, pause and resume answer `unsupported_operation` and the
/// sandbox keeps running.
pub(super) async fn pause_resume(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope
        .fails_with("pause", UNSUPPORTED, scope.p.pause(&sandbox.id))
        .await?;
    still_running(&scope, &sandbox.id, "a refused pause").await?;
    scope
        .fails_with("resume", UNSUPPORTED, scope.p.resume(&sandbox.id))
        .await?;
    let unknown = scope.unknown_id()?;
    scope
        .fails_with(
            "pause of an unknown sandbox",
            UNSUPPORTED,
            scope.p.pause(&unknown),
        )
        .await?;
    Ok(())
}

/// Checks that snapshots of `kind` answer `unsupported_operation`.
async fn snapshot_refused(scope: &TrialScope, kind: SnapshotKind) -> TrialResult {
    let sandbox = scope.create().await?;
    scope
        .fails_with(
            &format!("snapshot {kind:?}"),
            UNSUPPORTED,
            scope.p.snapshot(&sandbox.id, kind),
        )
        .await?;
    let unknown = scope.unknown_id()?;
    scope
        .fails_with(
            &format!("snapshot {kind:?} of an unknown sandbox"),
            UNSUPPORTED,
            scope.p.snapshot(&unknown, kind),
        )
        .await?;
    still_running(scope, &sandbox.id, "a refused snapshot").await
}

/// Without `snapshots.disk`, disk snapshots answer `unsupported_operation`.
pub(super) async fn snapshots_disk(scope: TrialScope) -> TrialResult {
    snapshot_refused(&scope, SnapshotKind::Disk).await
}

/// Without `snapshots.memory`, memory snapshots answer `unsupported_operation`.
pub(super) async fn snapshots_memory(scope: TrialScope) -> TrialResult {
    snapshot_refused(&scope, SnapshotKind::Memory).await
}

/// Without `fork`, fork answers `unsupported_operation` and makes no copy.
pub(super) async fn fork(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let copy = scope.new_id()?;
    scope
        .fails_with("fork", UNSUPPORTED, scope.p.fork(&sandbox.id, copy.clone()))
        .await?;
    scope
        .fails_with(
            "get of the refused fork's id",
            ErrorCode::NotFound,
            scope.p.get(&copy),
        )
        .await?;
    Ok(())
}

/// Without `ports.expose`, expose_port answers `unsupported_operation`.
pub(super) async fn ports(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope
        .fails_with(
            "expose_port",
            UNSUPPORTED,
            scope.p.expose_port(&sandbox.id, scope.fx.port),
        )
        .await?;
    scope
        .fails_with(
            "expose_port 0",
            UNSUPPORTED,
            scope.p.expose_port(&sandbox.id, 0),
        )
        .await?;
    Ok(())
}

/// Without `ttl`, set_ttl answers `unsupported_operation`, and a create's TTL sets no expiry.
pub(super) async fn ttl(scope: TrialScope) -> TrialResult {
    let id = scope.new_id()?;
    let created = scope
        .create_with(
            scope
                .request(id.clone())
                .with_ttl(Duration::from_secs(3600)),
        )
        .await?;
    ensure!(
        created.expires_at.is_none(),
        "create without the ttl capability set expires_at {:?}",
        created.expires_at
    );
    scope
        .fails_with(
            "set_ttl",
            UNSUPPORTED,
            scope.p.set_ttl(&id, Some(Duration::from_secs(60))),
        )
        .await?;
    scope
        .fails_with("set_ttl none", UNSUPPORTED, scope.p.set_ttl(&id, None))
        .await?;
    let got = scope
        .ok("get after a refused set_ttl", scope.p.get(&id))
        .await?;
    ensure!(
        got.expires_at.is_none(),
        "a refused set_ttl set expires_at {:?}",
        got.expires_at
    );
    Ok(())
}
