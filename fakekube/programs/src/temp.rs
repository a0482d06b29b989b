//! `mktemp`, as BusyBox's: a new file (mode 0600) or directory (`-d`, mode 0700) whose name is
//! the template with its trailing `XXXXXX` replaced by random letters and digits.

use super::cli::{emit, getopt, usage};
use fakekube_runtime::fs::{FsError, join};
use fakekube_runtime::process::Process;
use fakekube_runtime::random;

/// The characters a name is made of (as glibc's `mkstemp`).
const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// How many names are tried before giving up (glibc tries as many).
const ATTEMPTS: usize = 238_328;

/// `mktemp [-dqtu] [-p DIR] [TEMPLATE]`: bare `mktemp` is `mktemp -t tmp.XXXXXX`; `-t`, `-p`
/// and `--tmpdir` put the name in `-p DIR`, else `$TMPDIR`, else `/tmp`.
pub(crate) async fn mktemp(proc: Process) -> i32 {
    let p = match getopt(
        proc.args(),
        "dqtp:u",
        "p",
        &[],
        &["directory", "quiet", "dry-run", "tmpdir"],
    ) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.len() > 1 {
        return usage(&proc, "too many templates", 1).await;
    }
    let quiet = p.has('q') || p.has_long("quiet");
    let dir_mode = p.has('d') || p.has_long("directory");
    let dry = p.has('u') || p.has_long("dry-run");
    let mut in_tmpdir = p.has('t') || p.has('p') || p.has_long("tmpdir");
    let template = match p.operands.first() {
        Some(t) => t.clone(),
        None => {
            in_tmpdir = true;
            "tmp.XXXXXX".to_string()
        }
    };
    let base = p
        .value('p')
        .map(str::to_string)
        .or_else(|| {
            proc.var("TMPDIR")
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "/tmp".to_string());
    let template = if in_tmpdir {
        join(&base, &template)
    } else {
        template
    };
    match make(&proc, &template, dir_mode, dry) {
        Ok(name) => match emit(&proc, format!("{name}\n")).await {
            Ok(()) => 0,
            Err(code) => code,
        },
        Err(e) => {
            if !quiet {
                proc.err(&e.to_string()).await;
            }
            1
        }
    }
}

/// Makes the file or directory (or with `dry`, only finds a free name); returns its name as
/// the template spelled it. EINVAL when the template does not end in six `X`.
fn make(proc: &Process, template: &str, dir: bool, dry: bool) -> Result<String, FsError> {
    let stem = template
        .strip_suffix("XXXXXX")
        .ok_or(FsError::InvalidArgument)?;
    for _ in 0..ATTEMPTS {
        let mut name = stem.to_string();
        for b in random::bytes(6) {
            name.push(char::from(LETTERS[usize::from(b) % LETTERS.len()]));
        }
        let abs = proc.path(&name);
        if proc.fs.symlink_metadata(&abs).is_ok() {
            continue;
        }
        if dry {
            return Ok(name);
        }
        if dir {
            proc.fs.mkdir(&abs, 0o700)?;
        } else {
            proc.fs.write(&abs, b"")?;
            proc.fs.chmod(&abs, 0o600)?;
        }
        return Ok(name);
    }
    Err(FsError::Exists)
}
