//! Programs that create, remove, copy and move files and directories, or change their mode
//! and times: `mkdir`, `rmdir`, `rm`, `touch`, `chmod`, `cp`, `mv`, `truncate`, `install`.

use super::cli::{getopt, usage};
use fakekube_runtime::fs::{self as vfs, FsError, NodeKind};
use fakekube_runtime::process::Process;

/// Parses an octal mode.
fn parse_octal(s: &str) -> Option<u32> {
    u32::from_str_radix(s, 8).ok().filter(|m| *m <= 0o7777)
}

/// `mkdir [-p] [-m MODE] dir…`.
pub(crate) async fn mkdir(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "pmv", "m", &["mode"], &["parents", "verbose"]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let mode = match p.value('m').or(p.long_value("mode")) {
        Some(m) => match parse_octal(m).or_else(|| apply_symbolic(0o755, m)) {
            Some(m) => m,
            None => {
                proc.err(&format!("invalid mode '{m}'")).await;
                return 1;
            }
        },
        None => 0o755,
    };
    let parents = p.has('p') || p.has_long("parents");
    let mut status = 0;
    for d in &p.operands {
        let path = proc.path(d);
        let r = if parents {
            proc.fs.mkdir_all(&path, mode)
        } else {
            proc.fs.mkdir(&path, mode)
        };
        if let Err(e) = r {
            proc.err(&format!("cannot create directory '{d}': {e}"))
                .await;
            status = 1;
        }
    }
    status
}

/// `rmdir dir…`.
pub(crate) async fn rmdir(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "pv", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let mut status = 0;
    for d in &p.operands {
        let path = proc.path(d);
        let r = match proc.fs.metadata(&path) {
            Ok(m) if m.kind != NodeKind::Directory => Err(FsError::NotADirectory),
            Ok(_) => proc.fs.remove(&path, false, true),
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            proc.err(&format!("failed to remove '{d}': {e}")).await;
            status = 1;
        }
    }
    status
}

/// `rm [-rRfdv] path…`.
pub(crate) async fn rm(proc: Process) -> i32 {
    let p = match getopt(
        proc.args(),
        "rRfdvi",
        "",
        &[],
        &["force", "recursive", "no-preserve-root", "verbose"],
    ) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let force = p.has('f') || p.has_long("force");
    let recursive = p.has('r') || p.has('R') || p.has_long("recursive");
    if p.operands.is_empty() {
        return if force {
            0
        } else {
            usage(&proc, "missing operand", 1).await
        };
    }
    let mut status = 0;
    for f in &p.operands {
        let base = f.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        if base == "." || base == ".." {
            proc.err(&format!(
                "refusing to remove '.' or '..' directory: skipping '{f}'"
            ))
            .await;
            status = 1;
            continue;
        }
        let path = proc.path(f);
        if recursive
            && vfs::normalize(&path).as_deref() == Ok("/")
            && !p.has_long("no-preserve-root")
        {
            proc.err(&format!("it is dangerous to operate recursively on '{f}'"))
                .await;
            proc.err("use --no-preserve-root to override this failsafe")
                .await;
            status = 1;
            continue;
        }
        match proc.fs.remove(&path, recursive, p.has('d')) {
            Ok(()) => {}
            Err(FsError::NotFound) if force => {}
            Err(e) => {
                proc.err(&format!("cannot remove '{f}': {e}")).await;
                status = 1;
            }
        }
    }
    status
}

/// `touch [-c] file…`: creates files or sets their modification time to now.
pub(crate) async fn touch(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "cam", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing file operand", 1).await;
    }
    let mut status = 0;
    for f in &p.operands {
        let path = proc.path(f);
        if p.has('c') && !proc.fs.exists(&path) {
            continue;
        }
        if let Err(e) = proc.fs.touch(&path, vfs::now()) {
            proc.err(&format!("cannot touch '{f}': {e}")).await;
            status = 1;
        }
    }
    status
}

/// Applies a symbolic mode (`u+x,go-w`, `+x`, `a=r`) to `mode`; `None` if malformed.
fn apply_symbolic(mode: u32, spec: &str) -> Option<u32> {
    let mut mode = mode;
    for clause in spec.split(',') {
        let chars: Vec<char> = clause.chars().collect();
        let mut i = 0;
        let mut who = 0u32;
        while let Some(c) = chars.get(i) {
            match c {
                'u' => who |= 0o4700,
                'g' => who |= 0o2070,
                'o' => who |= 0o1007,
                'a' => who |= 0o7777,
                _ => break,
            }
            i += 1;
        }
        let implicit = who == 0;
        if implicit {
            who = 0o7777;
        }
        if i >= chars.len() {
            return None;
        }
        while let Some(&op) = chars.get(i) {
            if !matches!(op, '+' | '-' | '=') {
                return None;
            }
            i += 1;
            let mut bits = 0u32;
            while let Some(c) = chars.get(i) {
                bits |= match c {
                    'r' => 0o444,
                    'w' => 0o222,
                    'x' => 0o111,
                    'X' => 0o111,
                    's' => 0o6000,
                    't' => 0o1000,
                    _ => break,
                };
                i += 1;
            }
            let mut bits = bits & who;
            if implicit {
                bits &= !0o022;
            }
            match op {
                '+' => mode |= bits,
                '-' => mode &= !bits,
                _ => mode = (mode & !(who & 0o7777)) | bits,
            }
        }
    }
    Some(mode & 0o7777)
}

/// `chmod [-R] MODE file…` (octal or symbolic modes).
pub(crate) async fn chmod(proc: Process) -> i32 {
    let args = proc.args().to_vec();
    let mut recursive = false;
    let mut rest = Vec::new();
    for a in args {
        if a == "-R" {
            recursive = true;
        } else {
            rest.push(a);
        }
    }
    let Some((spec, files)) = rest.split_first() else {
        return usage(&proc, "missing operand", 1).await;
    };
    if files.is_empty() {
        return usage(&proc, &format!("missing operand after '{spec}'"), 1).await;
    }
    let mut status = 0;
    let mut todo: Vec<String> = files.iter().map(|f| proc.path(f)).collect();
    let mut shown: Vec<String> = files.to_vec();
    while let Some(path) = todo.pop() {
        let shown_name = shown.pop().unwrap_or_default();
        let m = match proc.fs.metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                proc.err(&format!("cannot access '{shown_name}': {e}"))
                    .await;
                status = 1;
                continue;
            }
        };
        let Some(new) = parse_octal(spec).or_else(|| apply_symbolic(m.mode, spec)) else {
            proc.err(&format!("invalid mode: '{spec}'")).await;
            return 1;
        };
        if let Err(e) = proc.fs.chmod(&path, new) {
            proc.err(&format!("changing permissions of '{shown_name}': {e}"))
                .await;
            status = 1;
        }
        if recursive && m.kind == NodeKind::Directory {
            for e in proc.fs.read_dir(&path).unwrap_or_default() {
                todo.push(vfs::join(&path, &e.name));
                shown.push(format!("{shown_name}/{}", e.name));
            }
        }
    }
    status
}

/// The destination for `cp`/`mv` of `src` into `dst`: `dst/base(src)` when `dst` is a directory.
fn destination(proc: &Process, src: &str, dst: &str) -> String {
    let dst_abs = proc.path(dst);
    match proc.fs.metadata(&dst_abs) {
        Ok(m) if m.kind == NodeKind::Directory => {
            let base = src.trim_end_matches('/').rsplit('/').next().unwrap_or(src);
            vfs::join(&dst_abs, base)
        }
        _ => dst_abs,
    }
}

/// `cp [-rRapf] src… dst`.
pub(crate) async fn cp(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "rRapfvdL", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let recursive = p.has('r') || p.has('R') || p.has('a');
    copy_or_move(proc, p.operands, Some(recursive)).await
}

/// `mv [-fv] src… dst`.
pub(crate) async fn mv(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "fvin", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    copy_or_move(proc, p.operands, None).await
}

/// Shared body of `cp` (`recursive` given) and `mv` (`None`).
async fn copy_or_move(proc: Process, operands: Vec<String>, recursive: Option<bool>) -> i32 {
    let Some((dst, srcs)) = operands.split_last() else {
        return usage(&proc, "missing file operand", 1).await;
    };
    if srcs.is_empty() {
        return usage(
            &proc,
            &format!("missing destination file operand after '{dst}'"),
            1,
        )
        .await;
    }
    let dst_is_dir =
        matches!(proc.fs.metadata(&proc.path(dst)), Ok(m) if m.kind == NodeKind::Directory);
    if srcs.len() > 1 && !dst_is_dir {
        proc.err(&format!("target '{dst}' is not a directory"))
            .await;
        return 1;
    }
    let mut status = 0;
    for src in srcs {
        let from = proc.path(src);
        let meta = match proc.fs.metadata(&from) {
            Ok(m) => m,
            Err(e) => {
                proc.err(&format!("cannot stat '{src}': {e}")).await;
                status = 1;
                continue;
            }
        };
        let to = destination(&proc, src, dst);
        let r = match recursive {
            Some(false) if meta.kind == NodeKind::Directory => {
                proc.err(&format!("-r not specified; omitting directory '{src}'"))
                    .await;
                status = 1;
                continue;
            }
            Some(_) if meta.kind != NodeKind::Directory => match proc.fs.read(&from) {
                Ok(data) => proc.fs.write(&to, &data),
                Err(e) => Err(e),
            },
            Some(_) => proc.fs.copy(&from, &to, true),
            None => proc.fs.rename(&from, &to),
        };
        if let Err(e) = r {
            let verb = if recursive.is_some() {
                "cannot create regular file"
            } else {
                "cannot move"
            };
            proc.err(&format!("{verb} '{src}' to '{dst}': {e}")).await;
            status = 1;
        }
    }
    status
}

/// A `truncate -s` size: `[+-]N[KMG]`; the new size from the current one.
fn truncate_size(spec: &str, current: u64) -> Option<u64> {
    let (sign, rest) = match spec.chars().next()? {
        c @ ('+' | '-') => (Some(c), &spec[1..]),
        _ => (None, spec),
    };
    let (digits, mult) = match rest.chars().last()? {
        'K' | 'k' => (&rest[..rest.len() - 1], 1024),
        'M' | 'm' => (&rest[..rest.len() - 1], 1024 * 1024),
        'G' | 'g' => (&rest[..rest.len() - 1], 1024 * 1024 * 1024),
        _ => (rest, 1),
    };
    let n = digits.parse::<u64>().ok()?.checked_mul(mult)?;
    Some(match sign {
        Some('+') => current.saturating_add(n),
        Some(_) => current.saturating_sub(n),
        None => n,
    })
}

/// `truncate [-c] -s [+-]SIZE FILE…`: each file cut or zero-extended to SIZE (created unless
/// `-c`).
pub(crate) async fn truncate(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "cs:", "s", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let Some(spec) = p.value('s') else {
        return usage(&proc, "you must specify '-s'", 1).await;
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing file operand", 1).await;
    }
    let mut status = 0;
    for f in &p.operands {
        let path = proc.path(f);
        if p.has('c') && !proc.fs.exists(&path) {
            continue;
        }
        let data = proc.fs.read(&path).map(|b| b.to_vec()).unwrap_or_default();
        let Some(size) = truncate_size(spec, data.len() as u64) else {
            proc.err(&format!("invalid number '{spec}'")).await;
            return 1;
        };
        let Ok(size) = usize::try_from(size) else {
            proc.err(&format!("cannot open '{f}' for writing: File too large"))
                .await;
            status = 1;
            continue;
        };
        if size > vfs::MAX_FILE_SIZE {
            proc.err(&format!(
                "cannot open '{f}' for writing: No space left on device"
            ))
            .await;
            status = 1;
            continue;
        }
        let mut data = data;
        data.resize(size, 0);
        if let Err(e) = proc.fs.write(&path, &data) {
            proc.err(&format!("cannot open '{f}' for writing: {e}"))
                .await;
            status = 1;
        }
    }
    status
}

/// `install [-cdDsp] [-m MODE] [-o USER] [-g GROUP] [-t DIR] SOURCE… DEST`: copies files
/// and sets their mode (0755 unless `-m`); `-d` makes directories, `-D` the leading
/// directories of DEST. Owners are accepted and ignored (everything is root's).
pub(crate) async fn install(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "cdDspvm:o:g:t:", "mogt", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let mode = match p.value('m') {
        Some(m) => match parse_octal(m).or_else(|| apply_symbolic(0o755, m)) {
            Some(m) => m,
            None => {
                proc.err(&format!("invalid mode '{m}'")).await;
                return 1;
            }
        },
        None => 0o755,
    };
    let mut ops = p.operands.clone();
    if p.has('d') {
        let mut status = 0;
        for d in &ops {
            let path = proc.path(d);
            match proc.fs.mkdir_all(&path, mode) {
                Ok(()) => {
                    let _ = proc.fs.chmod(&path, mode);
                }
                Err(e) => {
                    proc.err(&format!("can't create directory '{d}': {e}"))
                        .await;
                    status = 1;
                }
            }
        }
        return status;
    }
    let dest = match p.value('t') {
        Some(t) => t.to_string(),
        None => match ops.pop() {
            Some(d) => d,
            None => return usage(&proc, "missing file operand", 1).await,
        },
    };
    if ops.is_empty() {
        return usage(
            &proc,
            &format!("missing destination file operand after '{dest}'"),
            1,
        )
        .await;
    }
    let dest_abs = proc.path(&dest);
    if p.has('D')
        && let Some((parent, _)) = dest_abs.rsplit_once('/')
        && !parent.is_empty()
        && let Err(e) = proc.fs.mkdir_all(parent, 0o755)
    {
        proc.err(&format!("can't create directory '{parent}': {e}"))
            .await;
        return 1;
    }
    let into_dir = ops.len() > 1
        || p.has('t')
        || matches!(proc.fs.metadata(&dest_abs), Ok(m) if m.kind == NodeKind::Directory);
    let mut status = 0;
    for src in &ops {
        let from = proc.path(src);
        let data = match proc.fs.read(&from) {
            Ok(d) => d,
            Err(e) => {
                proc.err(&format!("can't stat '{src}': {e}")).await;
                status = 1;
                continue;
            }
        };
        let to = if into_dir {
            let base = src.trim_end_matches('/');
            vfs::join(&dest_abs, base.rsplit('/').next().unwrap_or(base))
        } else {
            dest_abs.clone()
        };
        let _ = proc.fs.remove(&to, false, false);
        match proc.fs.write(&to, &data) {
            Ok(()) => {
                let _ = proc.fs.chmod(&to, mode);
            }
            Err(e) => {
                proc.err(&format!("can't create '{to}': {e}")).await;
                status = 1;
            }
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_modes_apply_like_chmod() {
        assert_eq!(apply_symbolic(0o644, "+x"), Some(0o755));
        assert_eq!(apply_symbolic(0o755, "go-rx"), Some(0o700));
        assert_eq!(apply_symbolic(0o777, "a=r"), Some(0o444));
        assert_eq!(apply_symbolic(0o644, "u+x,g+w"), Some(0o764));
        assert_eq!(apply_symbolic(0o644, "q"), None);
    }
}
