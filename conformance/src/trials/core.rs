//! Identity, idempotency, get, list, delete, info and health: the rules every provider follows.

use bytes::Bytes;
use sandbox_contract::{Capability, ErrorCode, ExecRequest, Resources, SandboxState, SnapshotKind};

use super::{TrialResult, TrialScope, ensure, fail};
use crate::fixtures::Fault;

/// `info` answers the same value on every call.
pub(super) async fn info_is_the_same_on_every_call(scope: TrialScope) -> TrialResult {
    for _ in 0..3 {
        let again = scope.ok("info", scope.p.info()).await?;
        ensure!(
            again == *scope.info,
            "info changed between calls: first {:?}, then {:?}",
            scope.info,
            again
        );
    }
    Ok(())
}

/// A working provider reports itself healthy (the suite runs against working providers).
pub(super) async fn health_reports_healthy(scope: TrialScope) -> TrialResult {
    let health = scope.ok("health", scope.p.health()).await?;
    ensure!(health.is_healthy(), "health answered {health:?}");
    Ok(())
}

/// Create returns the sandbox running, with the id, template and labels asked for.
pub(super) async fn create_returns_the_sandbox_running_as_requested(
    scope: TrialScope,
) -> TrialResult {
    let id = scope.new_id()?;
    let request = scope
        .request(id.clone())
        .with_label("suite", "conformance")
        .with_label("n", "1");
    let sandbox = scope.create_with(request.clone()).await?;
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
pub(super) async fn create_adopts_an_existing_id(scope: TrialScope) -> TrialResult {
    let id = scope.new_id()?;
    let first = scope
        .create_with(scope.request(id.clone()).with_label("attempt", "first"))
        .await?;
    let second = scope
        .create_with(scope.request(id.clone()).with_label("attempt", "second"))
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
    let listed = scope.ok("list", scope.p.list()).await?;
    let count = listed.iter().filter(|s| s.id == id).count();
    ensure!(
        count == 1,
        "list shows {id} {count} times after two creates"
    );
    Ok(())
}

/// Creates of one id racing each other all return the same single sandbox.
pub(super) async fn concurrent_creates_of_one_id_make_one_sandbox(
    scope: TrialScope,
) -> TrialResult {
    let id = scope.new_id()?;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..scope.fx.concurrency.max(2) {
        let provider = scope.p.clone();
        let request = scope.request(id.clone());
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
    let listed = scope.ok("list", scope.p.list()).await?;
    let count = listed.iter().filter(|s| s.id == id).count();
    ensure!(
        count == 1,
        "list shows {id} {count} times after concurrent creates"
    );
    Ok(())
}

/// A malformed create answers `invalid_request` and leaves no sandbox behind.
pub(super) async fn create_refuses_a_malformed_request_leaving_nothing(
    scope: TrialScope,
) -> TrialResult {
    let id = scope.new_id()?;
    let request = scope.request(id.clone()).with_label("-not a label-", "x");
    scope
        .fails_with(
            "create with a bad label",
            ErrorCode::InvalidRequest,
            scope.p.create(request),
        )
        .await?;
    scope
        .fails_with(
            "get after a refused create",
            ErrorCode::NotFound,
            scope.p.get(&id),
        )
        .await?;
    Ok(())
}

/// Get returns the sandbox as create returned it.
pub(super) async fn get_returns_what_create_returned(scope: TrialScope) -> TrialResult {
    let id = scope.new_id()?;
    let created = scope
        .create_with(scope.request(id.clone()).with_label("k", "v"))
        .await?;
    let got = scope.ok("get", scope.p.get(&id)).await?;
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
pub(super) async fn get_of_an_unknown_id_is_not_found(scope: TrialScope) -> TrialResult {
    let id = scope.unknown_id()?;
    scope
        .fails_with(
            "get of an unknown id",
            ErrorCode::NotFound,
            scope.p.get(&id),
        )
        .await?;
    Ok(())
}

/// After delete, get answers `not_found` (after at most a while in `Deleting`).
pub(super) async fn get_after_delete_is_not_found(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope.ok("delete", scope.p.delete(&sandbox.id)).await?;
    scope.wait_gone(&sandbox.id, scope.fx.delete_wait).await
}

/// Deleting a sandbox that never existed, or twice, succeeds.
pub(super) async fn delete_tolerates_a_sandbox_that_is_gone(scope: TrialScope) -> TrialResult {
    let unknown = scope.unknown_id()?;
    scope
        .ok("delete of an unknown id", scope.p.delete(&unknown))
        .await?;
    let sandbox = scope.create().await?;
    scope.ok("delete", scope.p.delete(&sandbox.id)).await?;
    scope
        .ok("a second delete", scope.p.delete(&sandbox.id))
        .await?;
    scope.wait_gone(&sandbox.id, scope.fx.delete_wait).await?;
    scope
        .ok("delete after it is gone", scope.p.delete(&sandbox.id))
        .await?;
    Ok(())
}

/// List holds every sandbox of the provider, each once.
pub(super) async fn list_includes_every_sandbox_once(scope: TrialScope) -> TrialResult {
    let mut ids = Vec::new();
    for _ in 0..scope.fx.list_count.max(2) {
        ids.push(scope.create().await?.id);
    }
    let listed = scope.ok("list", scope.p.list()).await?;
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
pub(super) async fn list_fails_rather_than_returning_part(scope: TrialScope) -> TrialResult {
    let mut ids = Vec::new();
    for _ in 0..scope.fx.list_count.max(2) {
        ids.push(scope.create().await?.id);
    }
    let faults = scope
        .fx
        .faults
        .clone()
        .ok_or_else(|| super::Failure::new("no fault switches"))?;
    scope
        .ok(
            "inject fail-list-pages",
            faults.inject(Fault::FailListPages),
        )
        .await?;
    let result = scope.call("list", scope.p.list()).await;
    let cleared = scope
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
pub(super) async fn every_operation_on_an_unknown_sandbox_is_not_found(
    scope: TrialScope,
) -> TrialResult {
    let id = scope.unknown_id()?;
    let nf = ErrorCode::NotFound;
    let fresh = scope.unknown_id()?;
    let mut checked = vec!["get"];
    scope.fails_with("get", nf, scope.p.get(&id)).await?;
    if scope.declares(Capability::Exec) {
        scope
            .fails_with("exec", nf, scope.p.exec(&id, ExecRequest::new(["true"])))
            .await?;
        checked.push("exec");
    }
    if scope.declares(Capability::ExecStream) {
        scope
            .fails_with(
                "exec_stream",
                nf,
                scope.p.exec_stream(&id, ExecRequest::new(["true"])),
            )
            .await?;
        checked.push("exec_stream");
    }
    if scope.declares(Capability::Files) {
        let path = scope.scratch("f");
        scope
            .fails_with(
                "write_file",
                nf,
                scope.p.write_file(&id, &path, Bytes::from_static(b"x")),
            )
            .await?;
        scope
            .fails_with("read_file", nf, scope.p.read_file(&id, &path, 10))
            .await?;
        scope
            .fails_with("list_dir", nf, scope.p.list_dir(&id, "/"))
            .await?;
        scope.fails_with("stat", nf, scope.p.stat(&id, "/")).await?;
        scope
            .fails_with("mkdir", nf, scope.p.mkdir(&id, &path))
            .await?;
    }
    if scope.declares(Capability::LifecycleStopStart) {
        scope.fails_with("stop", nf, scope.p.stop(&id)).await?;
        scope.fails_with("start", nf, scope.p.start(&id)).await?;
    }
    if scope.declares(Capability::LifecyclePauseResume) {
        scope.fails_with("pause", nf, scope.p.pause(&id)).await?;
        scope.fails_with("resume", nf, scope.p.resume(&id)).await?;
    }
    for kind in [SnapshotKind::Disk, SnapshotKind::Memory] {
        if scope.declares(kind.capability()) {
            scope
                .fails_with("snapshot", nf, scope.p.snapshot(&id, kind))
                .await?;
        }
    }
    if scope.declares(Capability::Fork) {
        scope
            .fails_with(
                "fork from an unknown source",
                nf,
                scope.p.fork(&id, fresh.clone()),
            )
            .await?;
        scope
            .fails_with("get of the fork's id", nf, scope.p.get(&fresh))
            .await?;
    }
    if scope.declares(Capability::PortsExpose) {
        scope
            .fails_with("expose_port", nf, scope.p.expose_port(&id, scope.fx.port))
            .await?;
    }
    if scope.declares(Capability::Ttl) {
        scope
            .fails_with("set_ttl", nf, scope.p.set_ttl(&id, Some(scope.fx.ttl)))
            .await?;
    }
    Ok(())
}

/// Error messages never repeat environment values, which may be credentials.
pub(super) async fn errors_do_not_repeat_env_values(scope: TrialScope) -> TrialResult {
    let secret = format!("cfsecret{}", scope.unknown_id()?.as_str().replace('-', ""));
    let id = scope.new_id()?;
    let mut request = scope
        .request(id.clone())
        .with_env("CF_TOKEN", secret.clone());
    request.resources = Resources {
        cpu_millis: Some(0),
        ..Resources::default()
    };
    let mut errors = Vec::new();
    errors.push(
        scope
            .fails_with(
                "create with zero cpu",
                ErrorCode::InvalidRequest,
                scope.p.create(request),
            )
            .await?,
    );
    if scope.declares(Capability::Exec) {
        let unknown = scope.unknown_id()?;
        let request = ExecRequest::new(["true"]).with_env("CF_TOKEN", secret.clone());
        if let Ok(Err(error)) = scope.call("exec", scope.p.exec(&unknown, request)).await {
            errors.push(error);
        }
        let request = ExecRequest::new(["true"])
            .with_env("CF_TOKEN", secret.clone())
            .with_cwd("relative");
        if let Ok(Err(error)) = scope.call("exec", scope.p.exec(&unknown, request)).await {
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
