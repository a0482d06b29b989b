//! Programs that take paths apart or find them: `dirname`, `basename`, `which`.

use super::cli::{emit, getopt, usage};
use fakekube_runtime::fs::{NodeKind, join};
use fakekube_runtime::process::Process;

/// GNU `dirname` of one path.
fn dirname_of(p: &str) -> String {
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return if p.starts_with('/') {
            "/".into()
        } else {
            ".".into()
        };
    }
    match trimmed.rfind('/') {
        None => ".".into(),
        Some(i) => {
            let d = trimmed[..i].trim_end_matches('/');
            if d.is_empty() {
                "/".into()
            } else {
                d.to_string()
            }
        }
    }
}

/// GNU `basename` of one path, minus `suffix` when it is a proper suffix.
fn basename_of(p: &str, suffix: Option<&str>) -> String {
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return if p.starts_with('/') {
            "/".into()
        } else {
            String::new()
        };
    }
    let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
    match suffix {
        Some(s) if !s.is_empty() && base.len() > s.len() && base.ends_with(s) => {
            base[..base.len() - s.len()].to_string()
        }
        _ => base.to_string(),
    }
}

/// `dirname path…`.
pub(crate) async fn dirname(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "z", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let end = if p.has('z') { "\0" } else { "\n" };
    let out: String = p
        .operands
        .iter()
        .map(|o| format!("{}{end}", dirname_of(o)))
        .collect();
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `basename NAME [SUFFIX]` or `basename -a [-s SUFFIX] NAME…`.
pub(crate) async fn basename(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "asz", "s", &["suffix"], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let suffix = p.value('s').or(p.long_value("suffix")).map(str::to_string);
    let multiple = p.has('a') || suffix.is_some();
    let (names, suffix): (Vec<String>, Option<String>) = match (multiple, p.operands.as_slice()) {
        (_, []) => return usage(&proc, "missing operand", 1).await,
        (true, ops) => (ops.to_vec(), suffix),
        (false, [n]) => (vec![n.clone()], None),
        (false, [n, s]) => (vec![n.clone()], Some(s.clone())),
        (false, [_, _, extra, ..]) => {
            return usage(&proc, &format!("extra operand '{extra}'"), 1).await;
        }
    };
    let end = if p.has('z') { "\0" } else { "\n" };
    let out: String = names
        .iter()
        .map(|n| format!("{}{end}", basename_of(n, suffix.as_deref())))
        .collect();
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// The search path `which` uses when `PATH` is unset (BusyBox's default root path).
const WHICH_DEFAULT_PATH: &str = "/sbin:/usr/sbin:/bin:/usr/bin";

/// `which [-a] COMMAND…`: the first executable regular file named COMMAND in each `PATH`
/// directory (every one with `-a`); a COMMAND with a `/` is checked as it is. Nothing is
/// printed for a command not found, and the exit code is 1.
pub(crate) async fn which(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "a", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let path_var = proc.var("PATH").unwrap_or(WHICH_DEFAULT_PATH).to_string();
    let executable = |path: &str| {
        proc.fs
            .metadata(&proc.path(path))
            .is_ok_and(|m| m.kind == NodeKind::Regular && m.is_executable())
    };
    let mut status = 0;
    let mut out = String::new();
    for name in &p.operands {
        let mut found = false;
        if name.contains('/') {
            if executable(name) {
                out.push_str(name);
                out.push('\n');
                found = true;
            }
        } else {
            for dir in path_var.split(':') {
                let dir = if dir.is_empty() { "." } else { dir };
                let candidate = join(dir, name);
                if executable(&candidate) {
                    out.push_str(&candidate);
                    out.push('\n');
                    found = true;
                    if !p.has('a') {
                        break;
                    }
                }
            }
        }
        if !found {
            status = 1;
        }
    }
    match emit(&proc, out).await {
        Ok(()) => status,
        Err(code) => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirname_and_basename_follow_gnu() {
        assert_eq!(dirname_of("/a/b/c"), "/a/b");
        assert_eq!(dirname_of("/a/b/"), "/a");
        assert_eq!(dirname_of("a"), ".");
        assert_eq!(dirname_of("/"), "/");
        assert_eq!(dirname_of("/a"), "/");
        assert_eq!(basename_of("/a/b.txt", Some(".txt")), "b");
        assert_eq!(basename_of("/a/b/", None), "b");
        assert_eq!(basename_of("/", None), "/");
        assert_eq!(basename_of(".txt", Some(".txt")), ".txt");
    }
}
