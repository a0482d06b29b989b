//! `snapshots.disk`, `snapshots.memory` and `fork`.

use std::time::Duration;

use sandbox_contract::{Capability, SandboxState, SnapshotKind};

use super::{TrialResult, TrialScope, ensure, show};

/// Writes a marker file into a fresh sandbox; returns the sandbox id and the path.
async fn marked(
    scope: &TrialScope,
    content: &[u8],
) -> Result<(sandbox_contract::SandboxId, String), super::Failure> {
    let sandbox = scope.create().await?;
    let path = scope.scratch("cf-snap/marker.txt");
    scope.write(&sandbox.id, &path, content).await?;
    Ok((sandbox.id, path))
}

/// Creates a sandbox from `template` and returns what `path` holds in it.
async fn content_in_new(
    scope: &TrialScope,
    template: &str,
    path: &str,
) -> Result<Vec<u8>, super::Failure> {
    let id = scope.new_id()?;
    let created = scope
        .create_with(scope.request(id.clone()).with_template(template))
        .await?;
    ensure!(
        created.template.as_deref() == Some(template),
        "a sandbox created from snapshot {template} reports template {:?}",
        created.template
    );
    let data = scope
        .call("read_file", scope.p.read_file(&id, path, 1024 * 1024))
        .await?
        .map_err(|e| super::Failure::new(format!("the snapshot's file is missing: {e}")))?;
    Ok(data.to_vec())
}

/// A new sandbox created from a snapshot has the snapshot's files; the source keeps running.
pub(super) async fn snapshot_starts_sandboxes_with_its_files(scope: TrialScope) -> TrialResult {
    let (source, path) = marked(&scope, b"snapshotted").await?;
    let snapshot = scope
        .ok("snapshot", scope.p.snapshot(&source, SnapshotKind::Disk))
        .await?;
    ensure!(
        snapshot.kind == SnapshotKind::Disk,
        "a disk snapshot says {:?}",
        snapshot.kind
    );
    ensure!(
        snapshot.source == source,
        "the snapshot names source {}",
        snapshot.source
    );
    let got = scope.ok("get", scope.p.get(&source)).await?;
    ensure!(
        got.state == SandboxState::Running,
        "the source is {} after the snapshot",
        got.state
    );
    let data = content_in_new(&scope, &snapshot.template, &path).await?;
    ensure!(
        data == b"snapshotted",
        "the new sandbox holds {}",
        show(&data)
    );
    Ok(())
}

/// Writes to the source after a snapshot do not reach sandboxes made from it.
pub(super) async fn snapshot_is_not_changed_by_later_writes(scope: TrialScope) -> TrialResult {
    let (source, path) = marked(&scope, b"before").await?;
    let snapshot = scope
        .ok("snapshot", scope.p.snapshot(&source, SnapshotKind::Disk))
        .await?;
    scope.write(&source, &path, b"after the snapshot").await?;
    let data = content_in_new(&scope, &snapshot.template, &path).await?;
    ensure!(
        data == b"before",
        "the snapshot changed with its source: {}",
        show(&data)
    );
    Ok(())
}

/// A snapshot still starts sandboxes after its source is deleted.
pub(super) async fn snapshot_outlives_its_sandbox(scope: TrialScope) -> TrialResult {
    let (source, path) = marked(&scope, b"outlives").await?;
    let snapshot = scope
        .ok("snapshot", scope.p.snapshot(&source, SnapshotKind::Disk))
        .await?;
    scope.ok("delete", scope.p.delete(&source)).await?;
    scope.wait_gone(&source, scope.fx.delete_wait).await?;
    let data = content_in_new(&scope, &snapshot.template, &path).await?;
    ensure!(data == b"outlives", "the snapshot holds {}", show(&data));
    Ok(())
}

/// A memory snapshot says so and, like a disk one, starts sandboxes with the files.
pub(super) async fn memory_snapshot_keeps_files_and_says_memory(scope: TrialScope) -> TrialResult {
    let (source, path) = marked(&scope, b"in memory").await?;
    let snapshot = scope
        .ok("snapshot", scope.p.snapshot(&source, SnapshotKind::Memory))
        .await?;
    ensure!(
        snapshot.kind == SnapshotKind::Memory,
        "a memory snapshot says {:?}",
        snapshot.kind
    );
    let data = content_in_new(&scope, &snapshot.template, &path).await?;
    ensure!(
        data == b"in memory",
        "the new sandbox holds {}",
        show(&data)
    );
    Ok(())
}

/// A fork has the source's files; later writes to either do not reach the other.
pub(super) async fn copy_has_the_files_and_then_diverges(scope: TrialScope) -> TrialResult {
    let (source, path) = marked(&scope, b"original").await?;
    let copy = scope.new_id()?;
    let forked = scope
        .ok("fork", scope.p.fork(&source, copy.clone()))
        .await?;
    ensure!(forked.id == copy, "fork returned id {}", forked.id);
    ensure!(
        forked.state == SandboxState::Running,
        "fork returned state {}",
        forked.state
    );
    let data = scope.read(&copy, &path).await?;
    ensure!(
        data.as_ref() == b"original",
        "the copy holds {}",
        show(&data)
    );
    scope.write(&copy, &path, b"changed in copy").await?;
    scope
        .write(&source, &scope.scratch("cf-snap/source-only"), b"s")
        .await?;
    let data = scope.read(&source, &path).await?;
    ensure!(
        data.as_ref() == b"original",
        "a write to the copy reached the source: {}",
        show(&data)
    );
    let leaked = scope
        .call(
            "stat",
            scope.p.stat(&copy, &scope.scratch("cf-snap/source-only")),
        )
        .await?;
    ensure!(
        leaked.is_err(),
        "a file written to the source after the fork appeared in the copy"
    );
    Ok(())
}

/// A second fork to the same id returns the first copy.
pub(super) async fn fork_is_idempotent_on_the_new_id(scope: TrialScope) -> TrialResult {
    let source = scope.create().await?;
    let copy = scope.new_id()?;
    let first = scope
        .ok("fork", scope.p.fork(&source.id, copy.clone()))
        .await?;
    let second = scope
        .ok("a second fork", scope.p.fork(&source.id, copy.clone()))
        .await?;
    ensure!(
        first.provider_ref == second.provider_ref,
        "the second fork made {} instead of returning {}",
        second.provider_ref,
        first.provider_ref
    );
    let listed = scope.ok("list", scope.p.list()).await?;
    let count = listed.iter().filter(|s| s.id == copy).count();
    ensure!(count == 1, "list shows the copy {count} times");
    Ok(())
}

/// A fork keeps the source's labels and template but has no TTL.
pub(super) async fn copy_keeps_labels_and_template_but_no_ttl(scope: TrialScope) -> TrialResult {
    let id = scope.new_id()?;
    let mut request = scope.request(id.clone()).with_label("origin", "source");
    if scope.declares(Capability::Ttl) {
        request = request.with_ttl(Duration::from_secs(3600));
    }
    let source = scope.create_with(request).await?;
    let copy = scope.new_id()?;
    let forked = scope.ok("fork", scope.p.fork(&id, copy.clone())).await?;
    ensure!(
        forked.labels == source.labels,
        "the copy has labels {:?}, the source {:?}",
        forked.labels,
        source.labels
    );
    ensure!(
        forked.template == source.template,
        "the copy has template {:?}, the source {:?}",
        forked.template,
        source.template
    );
    ensure!(
        forked.expires_at.is_none(),
        "the copy has a TTL: expires at {:?}",
        forked.expires_at
    );
    let got = scope.ok("get", scope.p.get(&copy)).await?;
    ensure!(
        got.expires_at.is_none(),
        "get of the copy shows a TTL: {:?}",
        got.expires_at
    );
    Ok(())
}
