//! `files`: write, read with a cap, list, stat and mkdir.

use bytes::Bytes;
use sandbox_contract::{ErrorCode, FileKind};

use super::{TrialResult, TrialScope, ensure, show};

/// Every byte value survives a write and a read.
pub(super) async fn binary_data_round_trips(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let data: Vec<u8> = (0..=255u8).cycle().take(256 * 4).collect();
    let path = scope.scratch("cf-binary.bin");
    scope.write(&sandbox.id, &path, &data).await?;
    let back = scope.read(&sandbox.id, &path).await?;
    ensure!(
        back == data,
        "read back {} for the 1024 bytes written",
        show(&back)
    );
    Ok(())
}

/// Writing creates the missing parent directories.
pub(super) async fn write_creates_missing_parents(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let dir = scope.scratch("cf-parents/a/b");
    let path = format!("{dir}/c.txt");
    scope.write(&sandbox.id, &path, b"nested").await?;
    let back = scope.read(&sandbox.id, &path).await?;
    ensure!(back.as_ref() == b"nested", "read back {}", show(&back));
    let info = scope.ok("stat", scope.p.stat(&sandbox.id, &dir)).await?;
    ensure!(info.is_dir(), "{dir} is a {:?}, not a directory", info.kind);
    Ok(())
}

/// Writing replaces the whole content of an existing file.
pub(super) async fn write_replaces_the_whole_content(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let path = scope.scratch("cf-replace.txt");
    scope
        .write(&sandbox.id, &path, b"a much longer first content")
        .await?;
    scope.write(&sandbox.id, &path, b"short").await?;
    let back = scope.read(&sandbox.id, &path).await?;
    ensure!(
        back.as_ref() == b"short",
        "after rewriting, the file holds {}",
        show(&back)
    );
    Ok(())
}

/// A file larger than the read's cap answers `invalid_request`; one at the cap is read whole.
pub(super) async fn read_cap_refuses_larger_file(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let size = scope.fx.read_cap.max(2);
    let len = usize::try_from(size).map_err(|_| super::Failure::new("read_cap too large"))?;
    let data = vec![b'r'; len];
    let path = scope.scratch("cf-cap.bin");
    scope.write(&sandbox.id, &path, &data).await?;
    scope
        .fails_with(
            &format!("read_file of {size} bytes capped at {}", size - 1),
            ErrorCode::InvalidRequest,
            scope.p.read_file(&sandbox.id, &path, size - 1),
        )
        .await?;
    let whole = scope
        .ok(
            "read_file at the cap",
            scope.p.read_file(&sandbox.id, &path, size),
        )
        .await?;
    ensure!(
        whole.len() == len,
        "read at the cap returned {} of {len} bytes",
        whole.len()
    );
    Ok(())
}

/// The provider's own read limit caps reads that ask for more.
pub(super) async fn provider_read_limit_applies(scope: TrialScope) -> TrialResult {
    let limit = scope.info.limits.max_read_bytes.unwrap_or(u64::MAX);
    let len = usize::try_from(limit.saturating_add(1))
        .map_err(|_| super::Failure::new("max_read_bytes too large"))?;
    let sandbox = scope.create().await?;
    let path = scope.scratch("cf-over-read-limit.bin");
    scope.write(&sandbox.id, &path, &vec![0u8; len]).await?;
    scope
        .fails_with(
            &format!("read_file of {len} bytes with max_read_bytes {limit}"),
            ErrorCode::InvalidRequest,
            scope.p.read_file(&sandbox.id, &path, u64::MAX),
        )
        .await?;
    Ok(())
}

/// Content larger than the provider's write limit answers `invalid_request` and writes nothing.
pub(super) async fn write_limit_refuses_larger_content(scope: TrialScope) -> TrialResult {
    let limit = scope.info.limits.max_write_bytes.unwrap_or(u64::MAX);
    let len = usize::try_from(limit.saturating_add(1))
        .map_err(|_| super::Failure::new("max_write_bytes too large"))?;
    let sandbox = scope.create().await?;
    let path = scope.scratch("cf-over-write-limit.bin");
    scope
        .fails_with(
            &format!("write_file of {len} bytes with max_write_bytes {limit}"),
            ErrorCode::InvalidRequest,
            scope
                .p
                .write_file(&sandbox.id, &path, Bytes::from(vec![0u8; len])),
        )
        .await?;
    scope
        .fails_with(
            "stat after a refused write",
            ErrorCode::NotFound,
            scope.p.stat(&sandbox.id, &path),
        )
        .await?;
    Ok(())
}

/// Stat reports a file's kind, size, path and name, and a directory's kind.
pub(super) async fn stat_describes_files_and_directories(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let path = scope.scratch("cf-stat/file.txt");
    scope.write(&sandbox.id, &path, b"12345").await?;
    let info = scope.ok("stat", scope.p.stat(&sandbox.id, &path)).await?;
    ensure!(
        info.kind == FileKind::File,
        "stat of a file says {:?}",
        info.kind
    );
    ensure!(
        info.size == 5,
        "stat of a 5-byte file says size {}",
        info.size
    );
    ensure!(info.path == path, "stat of {path} says path {}", info.path);
    ensure!(
        info.name == "file.txt",
        "stat of {path} says name {}",
        info.name
    );
    let dir = scope.scratch("cf-stat");
    let info = scope.ok("stat", scope.p.stat(&sandbox.id, &dir)).await?;
    ensure!(
        info.kind == FileKind::Directory,
        "stat of a directory says {:?}",
        info.kind
    );
    Ok(())
}

/// list_dir returns entries sorted by name, with their paths joined to the directory's.
pub(super) async fn list_dir_is_sorted_with_joined_paths(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let dir = scope.scratch("cf-list");
    for name in ["b.txt", "a.txt", "c.txt", "B.txt"] {
        scope
            .write(&sandbox.id, &format!("{dir}/{name}"), name.as_bytes())
            .await?;
    }
    scope
        .ok(
            "mkdir",
            scope.p.mkdir(&sandbox.id, &format!("{dir}/sub/deeper")),
        )
        .await?;
    let entries = scope
        .ok("list_dir", scope.p.list_dir(&sandbox.id, &dir))
        .await?;
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    ensure!(
        names == ["B.txt", "a.txt", "b.txt", "c.txt", "sub"],
        "list_dir gave {names:?}; expected B.txt, a.txt, b.txt, c.txt, sub"
    );
    for entry in &entries {
        let expected = format!("{dir}/{}", entry.name);
        ensure!(
            entry.path == expected,
            "entry {} has path {}",
            entry.name,
            entry.path
        );
    }
    let sub = entries.iter().find(|e| e.name == "sub");
    ensure!(
        sub.is_some_and(|e| e.is_dir()),
        "sub is not listed as a directory"
    );
    Ok(())
}

/// Reading, stating and listing a missing path answer `not_found`.
pub(super) async fn missing_paths_are_not_found(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let missing = scope.scratch("cf-missing/none");
    let nf = ErrorCode::NotFound;
    scope
        .fails_with(
            "read_file of a missing file",
            nf,
            scope.p.read_file(&sandbox.id, &missing, 100),
        )
        .await?;
    scope
        .fails_with(
            "stat of a missing path",
            nf,
            scope.p.stat(&sandbox.id, &missing),
        )
        .await?;
    scope
        .fails_with(
            "list_dir of a missing directory",
            nf,
            scope.p.list_dir(&sandbox.id, &missing),
        )
        .await?;
    Ok(())
}

/// mkdir makes missing parents, and an existing directory is success.
pub(super) async fn mkdir_makes_parents_and_is_idempotent(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let dir = scope.scratch("cf-mkdir/x/y/z");
    scope.ok("mkdir", scope.p.mkdir(&sandbox.id, &dir)).await?;
    scope
        .ok(
            "mkdir of an existing directory",
            scope.p.mkdir(&sandbox.id, &dir),
        )
        .await?;
    let info = scope.ok("stat", scope.p.stat(&sandbox.id, &dir)).await?;
    ensure!(info.is_dir(), "{dir} is a {:?} after mkdir", info.kind);
    Ok(())
}

/// Using a file as a directory, or a directory as a file, answers `invalid_request`.
pub(super) async fn wrong_kind_is_invalid_request(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let file = scope.scratch("cf-kind/file");
    let dir = scope.scratch("cf-kind");
    scope.write(&sandbox.id, &file, b"x").await?;
    let ir = ErrorCode::InvalidRequest;
    scope
        .fails_with(
            "read_file of a directory",
            ir,
            scope.p.read_file(&sandbox.id, &dir, 100),
        )
        .await?;
    scope
        .fails_with(
            "list_dir of a file",
            ir,
            scope.p.list_dir(&sandbox.id, &file),
        )
        .await?;
    scope
        .fails_with("mkdir over a file", ir, scope.p.mkdir(&sandbox.id, &file))
        .await?;
    scope
        .fails_with(
            "write_file to a directory",
            ir,
            scope
                .p
                .write_file(&sandbox.id, &dir, Bytes::from_static(b"y")),
        )
        .await?;
    Ok(())
}

/// Relative, empty and NUL-holding paths answer `invalid_request`.
pub(super) async fn bad_paths_are_invalid_request(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let ir = ErrorCode::InvalidRequest;
    for path in ["relative/file", "", "/with\0nul"] {
        scope
            .fails_with(
                &format!("write_file {path:?}"),
                ir,
                scope
                    .p
                    .write_file(&sandbox.id, path, Bytes::from_static(b"x")),
            )
            .await?;
        scope
            .fails_with(
                &format!("read_file {path:?}"),
                ir,
                scope.p.read_file(&sandbox.id, path, 10),
            )
            .await?;
        scope
            .fails_with(
                &format!("stat {path:?}"),
                ir,
                scope.p.stat(&sandbox.id, path),
            )
            .await?;
    }
    Ok(())
}

/// What files write, commands read, and the other way round.
pub(super) async fn files_and_exec_see_the_same_filesystem(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let by_files = scope.scratch("cf-shared/by-files");
    let by_exec = scope.scratch("cf-shared/by-exec");
    scope.write(&sandbox.id, &by_files, b"from files").await?;
    let output = scope.sh(&sandbox.id, &format!("cat {by_files}")).await?;
    ensure!(
        output.stdout.as_ref() == b"from files",
        "cat of a written file gave {}",
        show(&output.stdout)
    );
    let output = scope
        .sh(&sandbox.id, &format!("printf 'from exec' > {by_exec}"))
        .await?;
    ensure!(
        output.exit_code == 0,
        "writing with printf exited {}",
        output.exit_code
    );
    let back = scope.read(&sandbox.id, &by_exec).await?;
    ensure!(
        back.as_ref() == b"from exec",
        "read_file of a file a command wrote gave {}",
        show(&back)
    );
    Ok(())
}
