//! Programs that take paths apart: `dirname` and `basename`.

use super::cli::{emit, getopt, usage};
use crate::process::Process;

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
