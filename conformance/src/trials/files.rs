//! `files`: write, read with a cap, list, stat and mkdir.

use bytes::Bytes;
use sandbox_contract::{ErrorCode, FileKind};

use super::{Ctx, TrialResult, ensure, show};

/// Every byte value survives a write and a read.
pub(super) async fn binary_data_round_trips(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let data: Vec<u8> = (0..=255u8).cycle().take(256 * 4).collect();
    let path = cx.scratch("cf-binary.bin");
    cx.write(&sandbox.id, &path, &data).await?;
    let back = cx.read(&sandbox.id, &path).await?;
    ensure!(
        back == data,
        "read back {} for the 1024 bytes written",
        show(&back)
    );
    Ok(())
}

/// Writing creates the missing parent directories.
pub(super) async fn write_creates_missing_parents(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let dir = cx.scratch("cf-parents/a/b");
    let path = format!("{dir}/c.txt");
    cx.write(&sandbox.id, &path, b"nested").await?;
    let back = cx.read(&sandbox.id, &path).await?;
    ensure!(back.as_ref() == b"nested", "read back {}", show(&back));
    let info = cx.ok("stat", cx.p.stat(&sandbox.id, &dir)).await?;
    ensure!(info.is_dir(), "{dir} is a {:?}, not a directory", info.kind);
    Ok(())
}

/// Writing replaces the whole content of an existing file.
pub(super) async fn write_replaces_the_whole_content(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let path = cx.scratch("cf-replace.txt");
    cx.write(&sandbox.id, &path, b"a much longer first content")
        .await?;
    cx.write(&sandbox.id, &path, b"short").await?;
    let back = cx.read(&sandbox.id, &path).await?;
    ensure!(
        back.as_ref() == b"short",
        "after rewriting, the file holds {}",
        show(&back)
    );
    Ok(())
}

/// A file larger than the read's cap answers `invalid_request`; one at the cap is read whole.
pub(super) async fn read_cap_refuses_larger_file(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let size = cx.fx.read_cap.max(2);
    let len = usize::try_from(size).map_err(|_| super::Failure::new("read_cap too large"))?;
    let data = vec![b'r'; len];
    let path = cx.scratch("cf-cap.bin");
    cx.write(&sandbox.id, &path, &data).await?;
    cx.fails_with(
        &format!("read_file of {size} bytes capped at {}", size - 1),
        ErrorCode::InvalidRequest,
        cx.p.read_file(&sandbox.id, &path, size - 1),
    )
    .await?;
    let whole = cx
        .ok(
            "read_file at the cap",
            cx.p.read_file(&sandbox.id, &path, size),
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
pub(super) async fn provider_read_limit_applies(cx: Ctx) -> TrialResult {
    let limit = cx.info.limits.max_read_bytes.unwrap_or(u64::MAX);
    let len = usize::try_from(limit.saturating_add(1))
        .map_err(|_| super::Failure::new("max_read_bytes too large"))?;
    let sandbox = cx.create().await?;
    let path = cx.scratch("cf-over-read-limit.bin");
    cx.write(&sandbox.id, &path, &vec![0u8; len]).await?;
    cx.fails_with(
        &format!("read_file of {len} bytes with max_read_bytes {limit}"),
        ErrorCode::InvalidRequest,
        cx.p.read_file(&sandbox.id, &path, u64::MAX),
    )
    .await?;
    Ok(())
}

/// Content larger than the provider's write limit answers `invalid_request` and writes nothing.
pub(super) async fn write_limit_refuses_larger_content(cx: Ctx) -> TrialResult {
    let limit = cx.info.limits.max_write_bytes.unwrap_or(u64::MAX);
    let len = usize::try_from(limit.saturating_add(1))
        .map_err(|_| super::Failure::new("max_write_bytes too large"))?;
    let sandbox = cx.create().await?;
    let path = cx.scratch("cf-over-write-limit.bin");
    cx.fails_with(
        &format!("write_file of {len} bytes with max_write_bytes {limit}"),
        ErrorCode::InvalidRequest,
        cx.p.write_file(&sandbox.id, &path, Bytes::from(vec![0u8; len])),
    )
    .await?;
    cx.fails_with(
        "stat after a refused write",
        ErrorCode::NotFound,
        cx.p.stat(&sandbox.id, &path),
    )
    .await?;
    Ok(())
}

/// Stat reports a file's kind, size, path and name, and a directory's kind.
pub(super) async fn stat_describes_files_and_directories(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let path = cx.scratch("cf-stat/file.txt");
    cx.write(&sandbox.id, &path, b"12345").await?;
    let info = cx.ok("stat", cx.p.stat(&sandbox.id, &path)).await?;
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
    let dir = cx.scratch("cf-stat");
    let info = cx.ok("stat", cx.p.stat(&sandbox.id, &dir)).await?;
    ensure!(
        info.kind == FileKind::Directory,
        "stat of a directory says {:?}",
        info.kind
    );
    Ok(())
}

/// list_dir returns entries sorted by name, with their paths joined to the directory's.
pub(super) async fn list_dir_is_sorted_with_joined_paths(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let dir = cx.scratch("cf-list");
    for name in ["b.txt", "a.txt", "c.txt", "B.txt"] {
        cx.write(&sandbox.id, &format!("{dir}/{name}"), name.as_bytes())
            .await?;
    }
    cx.ok(
        "mkdir",
        cx.p.mkdir(&sandbox.id, &format!("{dir}/sub/deeper")),
    )
    .await?;
    let entries = cx.ok("list_dir", cx.p.list_dir(&sandbox.id, &dir)).await?;
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
pub(super) async fn missing_paths_are_not_found(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let missing = cx.scratch("cf-missing/none");
    let nf = ErrorCode::NotFound;
    cx.fails_with(
        "read_file of a missing file",
        nf,
        cx.p.read_file(&sandbox.id, &missing, 100),
    )
    .await?;
    cx.fails_with(
        "stat of a missing path",
        nf,
        cx.p.stat(&sandbox.id, &missing),
    )
    .await?;
    cx.fails_with(
        "list_dir of a missing directory",
        nf,
        cx.p.list_dir(&sandbox.id, &missing),
    )
    .await?;
    Ok(())
}

/// mkdir makes missing parents, and an existing directory is success.
pub(super) async fn mkdir_makes_parents_and_is_idempotent(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let dir = cx.scratch("cf-mkdir/x/y/z");
    cx.ok("mkdir", cx.p.mkdir(&sandbox.id, &dir)).await?;
    cx.ok(
        "mkdir of an existing directory",
        cx.p.mkdir(&sandbox.id, &dir),
    )
    .await?;
    let info = cx.ok("stat", cx.p.stat(&sandbox.id, &dir)).await?;
    ensure!(info.is_dir(), "{dir} is a {:?} after mkdir", info.kind);
    Ok(())
}

/// Using a file as a directory, or a directory as a file, answers `invalid_request`.
pub(super) async fn wrong_kind_is_invalid_request(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let file = cx.scratch("cf-kind/file");
    let dir = cx.scratch("cf-kind");
    cx.write(&sandbox.id, &file, b"x").await?;
    let ir = ErrorCode::InvalidRequest;
    cx.fails_with(
        "read_file of a directory",
        ir,
        cx.p.read_file(&sandbox.id, &dir, 100),
    )
    .await?;
    cx.fails_with("list_dir of a file", ir, cx.p.list_dir(&sandbox.id, &file))
        .await?;
    cx.fails_with("mkdir over a file", ir, cx.p.mkdir(&sandbox.id, &file))
        .await?;
    cx.fails_with(
        "write_file to a directory",
        ir,
        cx.p.write_file(&sandbox.id, &dir, Bytes::from_static(b"y")),
    )
    .await?;
    Ok(())
}

/// Relative, empty and NUL-holding paths answer `invalid_request`.
pub(super) async fn bad_paths_are_invalid_request(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let ir = ErrorCode::InvalidRequest;
    for path in ["relative/file", "", "/with\0nul"] {
        cx.fails_with(
            &format!("write_file {path:?}"),
            ir,
            cx.p.write_file(&sandbox.id, path, Bytes::from_static(b"x")),
        )
        .await?;
        cx.fails_with(
            &format!("read_file {path:?}"),
            ir,
            cx.p.read_file(&sandbox.id, path, 10),
        )
        .await?;
        cx.fails_with(&format!("stat {path:?}"), ir, cx.p.stat(&sandbox.id, path))
            .await?;
    }
    Ok(())
}

/// What files write, commands read, and the other way round.
pub(super) async fn files_and_exec_see_the_same_filesystem(cx: Ctx) -> TrialResult {
    let sandbox = cx.create().await?;
    let by_files = cx.scratch("cf-shared/by-files");
    let by_exec = cx.scratch("cf-shared/by-exec");
    cx.write(&sandbox.id, &by_files, b"from files").await?;
    let output = cx.sh(&sandbox.id, &format!("cat {by_files}")).await?;
    ensure!(
        output.stdout.as_ref() == b"from files",
        "cat of a written file gave {}",
        show(&output.stdout)
    );
    let output = cx
        .sh(&sandbox.id, &format!("printf 'from exec' > {by_exec}"))
        .await?;
    ensure!(
        output.exit_code == 0,
        "writing with printf exited {}",
        output.exit_code
    );
    let back = cx.read(&sandbox.id, &by_exec).await?;
    ensure!(
        back.as_ref() == b"from exec",
        "read_file of a file a command wrote gave {}",
        show(&back)
    );
    Ok(())
}
