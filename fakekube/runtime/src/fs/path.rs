//! Paths: lexical normalisation (for paths already free of symbolic links, or where a
//! caller wants the text only), and the limits that keep every walk bounded.

use super::FsError;

/// Longest absolute path accepted (Linux `PATH_MAX`).
pub(crate) const MAX_PATH_LEN: usize = 4096;
/// Deepest directory nesting accepted; keeps every recursive walk far from the stack limit.
pub(crate) const MAX_DEPTH: usize = 128;
/// Longest single file name accepted (Linux `NAME_MAX`).
const MAX_NAME_LEN: usize = 255;

/// Splits an absolute or relative path into normal components, resolving `.` and `..` lexically.
/// Relative paths are taken from `/`; callers join them with a working directory first.
pub fn components(path: &str) -> Result<Vec<String>, FsError> {
    let mut out: Vec<String> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            name => {
                if name.len() > MAX_NAME_LEN {
                    return Err(FsError::NameTooLong);
                }
                out.push(name.to_string());
            }
        }
    }
    if out.len() > MAX_DEPTH || path.len() > MAX_PATH_LEN {
        return Err(FsError::NameTooLong);
    }
    Ok(out)
}

/// Joins `path` to the working directory `cwd` unless it is already absolute.
pub fn join(cwd: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else if cwd.ends_with('/') {
        format!("{cwd}{path}")
    } else {
        format!("{cwd}/{path}")
    }
}

/// Lexically normalises an absolute path (`/a/./b/../c` → `/a/c`).
pub fn normalize(path: &str) -> Result<String, FsError> {
    let parts = components(path)?;
    if parts.is_empty() {
        return Ok("/".to_string());
    }
    let mut out = String::new();
    for p in parts {
        out.push('/');
        out.push_str(&p);
    }
    Ok(out)
}

/// The absolute path of some components (`/` for none).
pub(crate) fn join_parts(parts: &[String]) -> String {
    if parts.is_empty() {
        return "/".to_string();
    }
    let mut out = String::new();
    for p in parts {
        out.push('/');
        out.push_str(p);
    }
    out
}
