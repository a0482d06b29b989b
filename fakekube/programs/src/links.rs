//! Programs about symbolic links and where paths lead, as BusyBox's: `ln`, `readlink`,
//! `realpath`. The filesystem has symbolic links; it has no hard links, so `ln` without `-s`
//! makes a copy of the file (same content and mode, not the same inode).

use super::cli::{emit, getopt, usage};
use fakekube_runtime::fs::{FsError, NodeKind, join};
use fakekube_runtime::process::Process;

/// `ln [-sfnTv] TARGET [LINK]` and `ln [-sfnv] TARGET… DIR`.
pub(crate) async fn ln(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "sfnbvTS:", "S", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (symbolic, force, no_deref, verbose, no_dir) =
        (p.has('s'), p.has('f'), p.has('n'), p.has('v'), p.has('T'));
    let mut ops = p.operands.clone();
    if ops.is_empty() {
        return usage(&proc, "missing file operand", 1).await;
    }
    if no_dir && ops.len() > 2 {
        proc.err("-T accepts 2 args max").await;
        return 1;
    }
    // `ln PATH/TO/FILE` links FILE in the working directory.
    let last = if ops.len() == 1 {
        let only = ops[0].trim_end_matches('/');
        only.rsplit('/').next().unwrap_or(only).to_string()
    } else {
        ops.pop().unwrap_or_default()
    };
    let mut status = 0;
    for target in &ops {
        let mut link = last.clone();
        let last_abs = proc.path(&last);
        let is_dir = if no_deref || no_dir {
            proc.fs.symlink_metadata(&last_abs)
        } else {
            proc.fs.metadata(&last_abs)
        }
        .is_ok_and(|m| m.kind == NodeKind::Directory);
        if is_dir {
            if no_dir {
                proc.err(&format!("'{last}' is a directory")).await;
                return 1;
            }
            let base = target.trim_end_matches('/');
            let base = base.rsplit('/').next().unwrap_or(base);
            link = join(&last, base);
        }
        let link_abs = proc.path(&link);
        if !symbolic && let Err(e) = proc.fs.metadata(&proc.path(target)) {
            proc.err(&format!("{target}: {e}")).await;
            status = 1;
            continue;
        }
        if force {
            let _ = proc.fs.remove(&link_abs, false, false);
        }
        if verbose && let Err(code) = emit(&proc, format!("'{link}' -> '{target}'\n")).await {
            return code;
        }
        let made = if symbolic {
            proc.fs.symlink(target, &link_abs)
        } else {
            hard_link(&proc, &proc.path(target), &link_abs)
        };
        if let Err(e) = made {
            proc.err(&format!("{link}: {e}")).await;
            status = 1;
        }
    }
    status
}

/// `link(2)` as far as this filesystem goes: a copy of a regular file at a new name; EEXIST
/// when the name is taken, EPERM for a directory.
fn hard_link(proc: &Process, from: &str, to: &str) -> Result<(), FsError> {
    if proc.fs.symlink_metadata(to).is_ok() {
        return Err(FsError::Exists);
    }
    let meta = proc.fs.metadata(from)?;
    if meta.kind == NodeKind::Directory {
        return Err(FsError::NotPermitted);
    }
    proc.fs.copy(from, to, false)?;
    let _ = proc.fs.chmod(to, meta.mode);
    let _ = proc.fs.touch(to, meta.mtime);
    Ok(())
}

/// The canonical path of `path` (every link followed, `.` and `..` applied) as coreutils'
/// `realpath` and `readlink -f` give it: the last component may be missing, the ones before
/// it must be directories.
fn canonical(proc: &Process, path: &str) -> Result<String, FsError> {
    let resolved = proc.fs.resolve(&proc.path(path), true)?;
    match proc.fs.metadata(&resolved) {
        Ok(_) => Ok(resolved),
        Err(FsError::NotFound) => {
            let parent = resolved.rsplit_once('/').map_or("/", |(p, _)| p);
            let parent = if parent.is_empty() { "/" } else { parent };
            match proc.fs.metadata(parent) {
                Ok(m) if m.kind == NodeKind::Directory => Ok(resolved),
                Ok(_) => Err(FsError::NotADirectory),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// `readlink [-fnvsq] FILE`: a link's target (`-f`: the canonical path). Failures are silent
/// unless `-v`, as coreutils' are; the exit code says.
pub(crate) async fn readlink(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "nfvsq", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let [file] = p.operands.as_slice() else {
        return usage(&proc, "needs exactly one file", 1).await;
    };
    let got = if p.has('f') {
        canonical(&proc, file)
    } else {
        proc.fs.read_link(&proc.path(file))
    };
    match got {
        Ok(text) => {
            let nl = if p.has('n') { "" } else { "\n" };
            match emit(&proc, format!("{text}{nl}")).await {
                Ok(()) => 0,
                Err(code) => code,
            }
        }
        Err(e) => {
            if p.has('v') {
                proc.err(&format!("{file}: {e}")).await;
            }
            1
        }
    }
}

/// `realpath FILE…`: each canonical path; `realpath: FILE: REASON` for one that has none.
pub(crate) async fn realpath(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let mut status = 0;
    for f in &p.operands {
        match canonical(&proc, f) {
            Ok(path) => {
                if let Err(code) = emit(&proc, format!("{path}\n")).await {
                    return code;
                }
            }
            Err(e) => {
                proc.err(&format!("{f}: {e}")).await;
                status = 1;
            }
        }
    }
    status
}
