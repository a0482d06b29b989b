//! Coherence trials: an undeclared capability's operations answer `unsupported_operation`,
//! whatever the arguments, and do nothing.

use std::time::Duration;

use bytes::Bytes;
use sandbox_contract::{Capability, ErrorCode, ExecRequest, SandboxId, SandboxState, SnapshotKind};

use super::{Ctx, TrialResult, ensure};

/// The code every trial here expects.
const UNSUPPORTED: ErrorCode = ErrorCode::UnsupportedOperation;

/// Checks, when exec can tell, that nothing exists at `path` in the sandbox.
async fn absent(cx: &Ctx, id: &SandboxId, path: &str, why: &str) -> TrialResult {
    if !cx.declares(Capability::Exec) {
        return Ok(());
    }
    let output = cx.exec(id, ExecRequest::new(["test", "-e", path])).await?;
    ensure!(output.exit_code != 0, "{path} exists: {why} half-worked");
    Ok(())
}

/// Checks that the sandbox is still running.
async fn still_running(cx: &Ctx, id: &SandboxId, after: &str) -> TrialResult {
    let got = cx.ok("get", cx.p.get(id)).await?;
    ensure!(
        got.state == SandboxState::Running,
        "the sandbox is {} after {after}",
        got.state
    );
    Ok(())
}

/// Without `exec`, exec answers `unsupported_operation` for any sandbox and request.
pub(super) async fn exec(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let unknown = cx.unknown_id()?;
    cx.fails_with(
        "exec",
        UNSUPPORTED,
        cx.p.exec(&sandbox.id, ExecRequest::new(["true"])),
    )
    .await?;
    cx.fails_with(
        "exec on an unknown sandbox",
        UNSUPPORTED,
        cx.p.exec(&unknown, ExecRequest::new(["true"])),
    )
    .await?;
    cx.fails_with(
        "exec of an empty argv",
        UNSUPPORTED,
        cx.p.exec(&sandbox.id, ExecRequest::new(Vec::<String>::new())),
    )
    .await?;
    Ok(())
}

/// Without `exec.stream`, exec_stream answers `unsupported_operation`.
pub(super) async fn exec_stream(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let unknown = cx.unknown_id()?;
    let marker = cx.scratch("cf-coherence-stream");
    let request = ExecRequest::new(["sh", "-c", &format!("printf x > {marker}")]);
    cx.fails_with(
        "exec_stream",
        UNSUPPORTED,
        cx.p.exec_stream(&sandbox.id, request),
    )
    .await?;
    cx.fails_with(
        "exec_stream on an unknown sandbox",
        UNSUPPORTED,
        cx.p.exec_stream(&unknown, ExecRequest::new(["true"])),
    )
    .await?;
    absent(&cx, &sandbox.id, &marker, "exec_stream").await
}

/// Without `stdin`, commands given input answer `unsupported_operation` and do not run.
pub(super) async fn stdin(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let marker = cx.scratch("cf-coherence-stdin");
    let script = format!("printf x > {marker}; cat");
    cx.fails_with(
        "exec with stdin bytes",
        UNSUPPORTED,
        cx.p.exec(
            &sandbox.id,
            ExecRequest::new(["sh", "-c", &script]).with_stdin("input"),
        ),
    )
    .await?;
    if cx.declares(Capability::ExecStream) {
        cx.fails_with(
            "exec_stream with streamed stdin",
            UNSUPPORTED,
            cx.p.exec_stream(
                &sandbox.id,
                ExecRequest::new(["sh", "-c", &script]).with_streamed_stdin(),
            ),
        )
        .await?;
        cx.fails_with(
            "exec_stream with stdin bytes",
            UNSUPPORTED,
            cx.p.exec_stream(
                &sandbox.id,
                ExecRequest::new(["sh", "-c", &script]).with_stdin("input"),
            ),
        )
        .await?;
    }
    absent(&cx, &sandbox.id, &marker, "a command given stdin").await
}

/// Without `files`, every file operation answers `unsupported_operation` and changes nothing.
pub(super) async fn files(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let file = cx.scratch("cf-coherence-file");
    let dir = cx.scratch("cf-coherence-dir");
    let id = &sandbox.id;
    cx.fails_with(
        "write_file",
        UNSUPPORTED,
        cx.p.write_file(id, &file, Bytes::from_static(b"x")),
    )
    .await?;
    cx.fails_with("read_file", UNSUPPORTED, cx.p.read_file(id, "/", 10))
        .await?;
    cx.fails_with("list_dir", UNSUPPORTED, cx.p.list_dir(id, "/"))
        .await?;
    cx.fails_with("stat", UNSUPPORTED, cx.p.stat(id, "/"))
        .await?;
    cx.fails_with("mkdir", UNSUPPORTED, cx.p.mkdir(id, &dir))
        .await?;
    cx.fails_with("stat of a bad path", UNSUPPORTED, cx.p.stat(id, "relative"))
        .await?;
    absent(&cx, id, &file, "write_file").await?;
    absent(&cx, id, &dir, "mkdir").await
}

/// Without `lifecycle.stop-start`, stop and start answer `unsupported_operation` and the
/// sandbox keeps running.
pub(super) async fn stop_start(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    cx.fails_with("stop", UNSUPPORTED, cx.p.stop(&sandbox.id))
        .await?;
    still_running(&cx, &sandbox.id, "a refused stop").await?;
    cx.fails_with("start", UNSUPPORTED, cx.p.start(&sandbox.id))
        .await?;
    let unknown = cx.unknown_id()?;
    cx.fails_with(
        "stop of an unknown sandbox",
        UNSUPPORTED,
        cx.p.stop(&unknown),
    )
    .await?;
    if cx.declares(Capability::Exec) {
        cx.exec(&sandbox.id, ExecRequest::new(["true"])).await?;
    }
    Ok(())
}

/// Without `lifecycle.pause-resume`, pause and resume answer `unsupported_operation` and the
/// sandbox keeps running.
pub(super) async fn pause_resume(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    cx.fails_with("pause", UNSUPPORTED, cx.p.pause(&sandbox.id))
        .await?;
    still_running(&cx, &sandbox.id, "a refused pause").await?;
    cx.fails_with("resume", UNSUPPORTED, cx.p.resume(&sandbox.id))
        .await?;
    let unknown = cx.unknown_id()?;
    cx.fails_with(
        "pause of an unknown sandbox",
        UNSUPPORTED,
        cx.p.pause(&unknown),
    )
    .await?;
    Ok(())
}

/// Checks that snapshots of `kind` answer `unsupported_operation`.
async fn snapshot_refused(cx: &Ctx, kind: SnapshotKind) -> TrialResult {
    let sandbox = cx.create().await?;
    cx.fails_with(
        &format!("snapshot {kind:?}"),
        UNSUPPORTED,
        cx.p.snapshot(&sandbox.id, kind),
    )
    .await?;
    let unknown = cx.unknown_id()?;
    cx.fails_with(
        &format!("snapshot {kind:?} of an unknown sandbox"),
        UNSUPPORTED,
        cx.p.snapshot(&unknown, kind),
    )
    .await?;
    still_running(cx, &sandbox.id, "a refused snapshot").await
}

/// Without `snapshots.disk`, disk snapshots answer `unsupported_operation`.
pub(super) async fn snapshots_disk(cx: Ctx) -> TrialResult {
    snapshot_refused(&cx, SnapshotKind::Disk).await
}

/// Without `snapshots.memory`, memory snapshots answer `unsupported_operation`.
pub(super) async fn snapshots_memory(cx: Ctx) -> TrialResult {
    snapshot_refused(&cx, SnapshotKind::Memory).await
}

/// Without `fork`, fork answers `unsupported_operation` and makes no copy.
pub(super) async fn fork(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let copy = cx.new_id()?;
    cx.fails_with("fork", UNSUPPORTED, cx.p.fork(&sandbox.id, copy.clone()))
        .await?;
    cx.fails_with(
        "get of the refused fork's id",
        ErrorCode::NotFound,
        cx.p.get(&copy),
    )
    .await?;
    Ok(())
}

/// Without `ports.expose`, expose_port answers `unsupported_operation`.
pub(super) async fn ports(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    cx.fails_with(
        "expose_port",
        UNSUPPORTED,
        cx.p.expose_port(&sandbox.id, cx.fx.port),
    )
    .await?;
    cx.fails_with(
        "expose_port 0",
        UNSUPPORTED,
        cx.p.expose_port(&sandbox.id, 0),
    )
    .await?;
    Ok(())
}

/// Without `ttl`, set_ttl answers `unsupported_operation`, and a create's TTL sets no expiry.
pub(super) async fn ttl(cx: Ctx) -> TrialResult {
    let id = cx.new_id()?;
    let created = cx
        .create_with(cx.request(id.clone()).with_ttl(Duration::from_secs(3600)))
        .await?;
    ensure!(
        created.expires_at.is_none(),
        "create without the ttl capability set expires_at {:?}",
        created.expires_at
    );
    cx.fails_with(
        "set_ttl",
        UNSUPPORTED,
        cx.p.set_ttl(&id, Some(Duration::from_secs(60))),
    )
    .await?;
    cx.fails_with("set_ttl none", UNSUPPORTED, cx.p.set_ttl(&id, None))
        .await?;
    let got = cx.ok("get after a refused set_ttl", cx.p.get(&id)).await?;
    ensure!(
        got.expires_at.is_none(),
        "a refused set_ttl set expires_at {:?}",
        got.expires_at
    );
    Ok(())
}
