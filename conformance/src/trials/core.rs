//! Identity, idempotency, get, list, delete, info and health: the rules every provider follows.

use bytes::Bytes;
use sandbox_contract::{Capability, ErrorCode, ExecRequest, Resources, SandboxState, SnapshotKind};

use super::{Ctx, TrialResult, ensure, fail};
use crate::fixtures::Fault;

/// `info` answers the same value on every call.
pub(super) async fn info_is_the_same_on_every_call(cx: Ctx) -> TrialResult {
    for _ in 0..3 {
        let again = cx.ok("info", cx.p.info()).await?;
        ensure!(
            again == *cx.info,
            "info changed between calls: first {:?}, then {:?}",
            cx.info,
            again
        );
    }
    Ok(())
}

/// A working provider reports itself healthy (the suite runs against working providers).
pub(super) async fn health_reports_healthy(cx: Ctx) -> TrialResult {
    let health = cx.ok("health", cx.p.health()).await?;
    ensure!(health.is_healthy(), "health answered {health:?}");
    Ok(())
}

/// Create returns the sandbox running, with the id, template and labels asked for.
pub(super) async fn create_returns_the_sandbox_running_as_requested(cx: Ctx) -> TrialResult {
    let id = cx.new_id()?;
    let request = cx
        .request(id.clone())
        .with_label("suite", "conformance")
        .with_label("n", "1");
    let sandbox = cx.create_with(request.clone()).await?;
    ensure!(
        sandbox.id == id,
        "create returned id {}, asked for {id}",
        sandbox.id
    );
    ensure!(
        sandbox.state == SandboxState::Running,
        "create returned state {}; expected running",
        sandbox.state
    );
    ensure!(
        sandbox.labels == request.labels,
        "create returned labels {:?}; asked for {:?}",
        sandbox.labels,
        request.labels
    );
    ensure!(
        sandbox.template == request.template,
        "create returned template {:?}; asked for {:?}",
        sandbox.template,
        request.template
    );
    Ok(())
}

/// A second create with the same id adopts the first sandbox; the first settings win.
pub(super) async fn create_adopts_an_existing_id(cx: Ctx) -> TrialResult {
    let id = cx.new_id()?;
    let first = cx
        .create_with(cx.request(id.clone()).with_label("attempt", "first"))
        .await?;
    let second = cx
        .create_with(cx.request(id.clone()).with_label("attempt", "second"))
        .await?;
    ensure!(
        second.provider_ref == first.provider_ref,
        "the second create made {} instead of adopting {}",
        second.provider_ref,
        first.provider_ref
    );
    ensure!(
        second.labels == first.labels,
        "the second create changed the labels to {:?}; the first settings win",
        second.labels
    );
    let listed = cx.ok("list", cx.p.list()).await?;
    let count = listed.iter().filter(|s| s.id == id).count();
    ensure!(
        count == 1,
        "list shows {id} {count} times after two creates"
    );
    Ok(())
}

/// Creates of one id racing each other all return the same single sandbox.
pub(super) async fn concurrent_creates_of_one_id_make_one_sandbox(cx: Ctx) -> TrialResult {
    let id = cx.new_id()?;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..cx.fx.concurrency.max(2) {
        let provider = cx.p.clone();
        let request = cx.request(id.clone());
        tasks.spawn(async move { provider.create(request).await });
    }
    let mut refs = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(sandbox)) => refs.push(sandbox.provider_ref),
            Ok(Err(error)) => fail!("a concurrent create of {id} failed: {error}"),
            Err(error) => fail!("a concurrent create of {id} panicked: {error}"),
        }
    }
    refs.sort();
    refs.dedup();
    ensure!(
        refs.len() == 1,
        "concurrent creates of {id} made {} sandboxes: {refs:?}",
        refs.len()
    );
    let listed = cx.ok("list", cx.p.list()).await?;
    let count = listed.iter().filter(|s| s.id == id).count();
    ensure!(
        count == 1,
        "list shows {id} {count} times after concurrent creates"
    );
    Ok(())
}

/// A malformed create answers `invalid_request` and leaves no sandbox behind.
pub(super) async fn create_refuses_a_malformed_request_leaving_nothing(cx: Ctx) -> TrialResult {
    let id = cx.new_id()?;
    let request = cx.request(id.clone()).with_label("-not a label-", "x");
    cx.fails_with(
        "create with a bad label",
        ErrorCode::InvalidRequest,
        cx.p.create(request),
    )
    .await?;
    cx.fails_with(
        "get after a refused create",
        ErrorCode::NotFound,
        cx.p.get(&id),
    )
    .await?;
    Ok(())
}

/// Get returns the sandbox as create returned it.
pub(super) async fn get_returns_what_create_returned(cx: Ctx) -> TrialResult {
    let id = cx.new_id()?;
    let created = cx
        .create_with(cx.request(id.clone()).with_label("k", "v"))
        .await?;
    let got = cx.ok("get", cx.p.get(&id)).await?;
    ensure!(got.id == created.id, "get returned id {}", got.id);
    ensure!(
        got.state == SandboxState::Running,
        "get returned state {}",
        got.state
    );
    ensure!(
        got.labels == created.labels,
        "get returned labels {:?}, create {:?}",
        got.labels,
        created.labels
    );
    ensure!(
        got.template == created.template,
        "get returned template {:?}, create {:?}",
        got.template,
        created.template
    );
    ensure!(
        got.provider_ref == created.provider_ref,
        "get returned provider_ref {}, create {}",
        got.provider_ref,
        created.provider_ref
    );
    Ok(())
}

/// Get of an id that was never created answers `not_found`.
pub(super) async fn get_of_an_unknown_id_is_not_found(cx: Ctx) -> TrialResult {
    let id = cx.unknown_id()?;
    cx.fails_with("get of an unknown id", ErrorCode::NotFound, cx.p.get(&id))
        .await?;
    Ok(())
}

/// After delete, get answers `not_found` (after at most a while in `Deleting`).
pub(super) async fn get_after_delete_is_not_found(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    cx.ok("delete", cx.p.delete(&sandbox.id)).await?;
    cx.wait_gone(&sandbox.id, cx.fx.delete_wait).await
}

/// Deleting a sandbox that never existed, or twice, succeeds.
pub(super) async fn delete_tolerates_a_sandbox_that_is_gone(cx: Ctx) -> TrialResult {
    let unknown = cx.unknown_id()?;
    cx.ok("delete of an unknown id", cx.p.delete(&unknown))
        .await?;
    let sandbox = cx.create().await?;
    cx.ok("delete", cx.p.delete(&sandbox.id)).await?;
    cx.ok("a second delete", cx.p.delete(&sandbox.id)).await?;
    cx.wait_gone(&sandbox.id, cx.fx.delete_wait).await?;
    cx.ok("delete after it is gone", cx.p.delete(&sandbox.id))
        .await?;
    Ok(())
}

/// List holds every sandbox of the provider, each once.
pub(super) async fn list_includes_every_sandbox_once(cx: Ctx) -> TrialResult {
    let mut ids = Vec::new();
    for _ in 0..cx.fx.list_count.max(2) {
        ids.push(cx.create().await?.id);
    }
    let listed = cx.ok("list", cx.p.list()).await?;
    for id in &ids {
        let count = listed.iter().filter(|s| &s.id == id).count();
        ensure!(
            count == 1,
            "list shows {id} {count} times (of {} sandboxes created; list has {})",
            ids.len(),
            listed.len()
        );
    }
    Ok(())
}

/// A list whose later pages fail answers an error, never a partial list.
pub(super) async fn list_fails_rather_than_returning_part(cx: Ctx) -> TrialResult {
    let mut ids = Vec::new();
    for _ in 0..cx.fx.list_count.max(2) {
        ids.push(cx.create().await?.id);
    }
    let faults = cx
        .fx
        .faults
        .clone()
        .ok_or_else(|| super::Failure::new("no fault switches"))?;
    cx.ok(
        "inject fail-list-pages",
        faults.inject(Fault::FailListPages),
    )
    .await?;
    let result = cx.call("list", cx.p.list()).await;
    let cleared = cx
        .ok("clear fail-list-pages", faults.clear(Fault::FailListPages))
        .await;
    match result? {
        Err(_) => {}
        Ok(listed) => {
            let missing: Vec<_> = ids
                .iter()
                .filter(|id| !listed.iter().any(|s| &s.id == *id))
                .collect();
            ensure!(
                missing.is_empty(),
                "with failing list pages, list succeeded without {} of the {} sandboxes: a \
                 silently partial list",
                missing.len(),
                ids.len()
            );
        }
    }
    cleared
}

/// Every operation the provider offers answers `not_found` for an id that names no sandbox.
pub(super) async fn every_operation_on_an_unknown_sandbox_is_not_found(cx: Ctx) -> TrialResult {
    let id = cx.unknown_id()?;
    let nf = ErrorCode::NotFound;
    let fresh = cx.unknown_id()?;
    let mut checked = vec!["get"];
    cx.fails_with("get", nf, cx.p.get(&id)).await?;
    if cx.declares(Capability::Exec) {
        cx.fails_with("exec", nf, cx.p.exec(&id, ExecRequest::new(["true"])))
            .await?;
        checked.push("exec");
    }
    if cx.declares(Capability::ExecStream) {
        cx.fails_with(
            "exec_stream",
            nf,
            cx.p.exec_stream(&id, ExecRequest::new(["true"])),
        )
        .await?;
        checked.push("exec_stream");
    }
    if cx.declares(Capability::Files) {
        let path = cx.scratch("f");
        cx.fails_with(
            "write_file",
            nf,
            cx.p.write_file(&id, &path, Bytes::from_static(b"x")),
        )
        .await?;
        cx.fails_with("read_file", nf, cx.p.read_file(&id, &path, 10))
            .await?;
        cx.fails_with("list_dir", nf, cx.p.list_dir(&id, "/"))
            .await?;
        cx.fails_with("stat", nf, cx.p.stat(&id, "/")).await?;
        cx.fails_with("mkdir", nf, cx.p.mkdir(&id, &path)).await?;
    }
    if cx.declares(Capability::LifecycleStopStart) {
        cx.fails_with("stop", nf, cx.p.stop(&id)).await?;
        cx.fails_with("start", nf, cx.p.start(&id)).await?;
    }
    if cx.declares(Capability::LifecyclePauseResume) {
        cx.fails_with("pause", nf, cx.p.pause(&id)).await?;
        cx.fails_with("resume", nf, cx.p.resume(&id)).await?;
    }
    for kind in [SnapshotKind::Disk, SnapshotKind::Memory] {
        if cx.declares(kind.capability()) {
            cx.fails_with("snapshot", nf, cx.p.snapshot(&id, kind))
                .await?;
        }
    }
    if cx.declares(Capability::Fork) {
        cx.fails_with(
            "fork from an unknown source",
            nf,
            cx.p.fork(&id, fresh.clone()),
        )
        .await?;
        cx.fails_with("get of the fork's id", nf, cx.p.get(&fresh))
            .await?;
    }
    if cx.declares(Capability::PortsExpose) {
        cx.fails_with("expose_port", nf, cx.p.expose_port(&id, cx.fx.port))
            .await?;
    }
    if cx.declares(Capability::Ttl) {
        cx.fails_with("set_ttl", nf, cx.p.set_ttl(&id, Some(cx.fx.ttl)))
            .await?;
    }
    Ok(())
}

/// Error messages never repeat environment values, which may be credentials.
pub(super) async fn errors_do_not_repeat_env_values(cx: Ctx) -> TrialResult {
    let secret = format!("cfsecret{}", cx.unknown_id()?.as_str().replace('-', ""));
    let id = cx.new_id()?;
    let mut request = cx.request(id.clone()).with_env("CF_TOKEN", secret.clone());
    request.resources = Resources {
        cpu_millis: Some(0),
        ..Resources::default()
    };
    let mut errors = Vec::new();
    errors.push(
        cx.fails_with(
            "create with zero cpu",
            ErrorCode::InvalidRequest,
            cx.p.create(request),
        )
        .await?,
    );
    if cx.declares(Capability::Exec) {
        let unknown = cx.unknown_id()?;
        let request = ExecRequest::new(["true"]).with_env("CF_TOKEN", secret.clone());
        if let Ok(Err(error)) = cx.call("exec", cx.p.exec(&unknown, request)).await {
            errors.push(error);
        }
        let request = ExecRequest::new(["true"])
            .with_env("CF_TOKEN", secret.clone())
            .with_cwd("relative");
        if let Ok(Err(error)) = cx.call("exec", cx.p.exec(&unknown, request)).await {
            errors.push(error);
        }
    }
    for error in errors {
        ensure!(
            !error.message().contains(&secret),
            "an error message repeats an environment value: {}",
            error.code()
        );
    }
    Ok(())
}
