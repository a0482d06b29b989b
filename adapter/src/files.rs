//! File operations as shell scripts run through exec, using only `sh` builtins, `cat`,
//! `mkdir -p`, `dirname` and `stat -c`, which GNU coreutils and BusyBox both provide, and the
//! parsers of their output.
//!
//! Each script reports what went wrong through its own exit codes (90 and up), so the adapter
//! can tell a missing file from a directory in the way without parsing messages.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use sandbox_contract::{Error, FileInfo, FileKind};

/// The largest file a read returns (100 MiB).
pub const MAX_READ_BYTES: u64 = 100 << 20;

/// Exit code: the path does not exist.
pub(crate) const MISSING: i32 = 90;
/// Exit code: the path is a directory where a file was wanted.
pub(crate) const IS_DIRECTORY: i32 = 91;
/// Exit code: the path is not a directory where one was wanted (or a file is in the way).
pub(crate) const NOT_DIRECTORY: i32 = 92;
/// Exit code: the file is larger than the cap; its size is on stdout.
pub(crate) const TOO_LARGE: i32 = 93;

/// `sh -c` script writing stdin to `$1`, creating its parent directories.
pub(crate) const WRITE: &str = "[ -d \"$1\" ] && exit 91; d=$(dirname \"$1\") || exit 92; \
     mkdir -p \"$d\" 2>/dev/null || exit 92; [ -d \"$d\" ] || exit 92; exec cat > \"$1\"";

/// `sh -c` script printing `$1` if it has at most `$2` bytes.
pub(crate) const READ: &str = "[ -e \"$1\" ] || exit 90; [ -d \"$1\" ] && exit 91; \
     s=$(stat -c %s \"$1\") || exit 90; if [ \"$s\" -gt \"$2\" ]; then echo \"$s\"; exit 93; fi; \
     exec cat \"$1\"";

/// `sh -c` script printing `mode size mtime name` for each entry of the directory `$1`.
pub(crate) const LIST: &str = "[ -e \"$1\" ] || exit 90; [ -d \"$1\" ] || exit 92; \
     cd \"$1\" || exit 90; for f in * .[!.]* ..?*; do [ -e \"$f\" ] || [ -L \"$f\" ] || continue; \
     stat -c '%f %s %Y %n' \"$f\" || exit 1; done";

/// `sh -c` script printing `mode size mtime` of `$1` (a final symbolic link not followed).
pub(crate) const STAT: &str =
    "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 90; exec stat -c '%f %s %Y' \"$1\"";

/// `sh -c` script creating the directory `$1` and its parents.
pub(crate) const MKDIR: &str = "if [ -e \"$1\" ]; then [ -d \"$1\" ] && exit 0; exit 92; fi; \
     mkdir -p \"$1\" 2>/dev/null || exit 92; [ -d \"$1\" ] || exit 92";

/// Builds the argv running `script` with `args`.
pub(crate) fn script(script: &str, args: &[&str]) -> Vec<String> {
    let mut argv: Vec<String> = ["/bin/sh", "-c", script, "sh"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    argv
}

/// Returns the last component of `path` (`/` for the root).
pub(crate) fn base_name(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".to_owned();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_owned()
}

/// Joins a directory and an entry name.
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Reads the kind from a raw `st_mode`.
pub(crate) fn kind_of(mode: u32) -> FileKind {
    match mode & 0o170_000 {
        0o040_000 => FileKind::Directory,
        0o100_000 => FileKind::File,
        0o120_000 => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

/// Parses `mode(hex) size mtime` into the fields of a [`FileInfo`].
fn parse_fields(fields: &str) -> Option<(FileKind, u64, u32, Option<SystemTime>)> {
    let mut parts = fields.split(' ');
    let mode = u32::from_str_radix(parts.next()?, 16).ok()?;
    let size = parts.next()?.parse::<u64>().ok()?;
    let mtime = parts
        .next()?
        .parse::<u64>()
        .ok()
        .and_then(|secs| SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs)));
    Some((kind_of(mode), size, mode & 0o7777, mtime))
}

/// Parses the output of [`STAT`] for `path`.
pub(crate) fn parse_stat(path: &str, output: &[u8]) -> Result<FileInfo, Error> {
    let text = String::from_utf8_lossy(output);
    let line = text.trim_end_matches('\n');
    let (kind, size, mode, modified) = parse_fields(line)
        .ok_or_else(|| Error::internal(format!("unexpected stat output for {path}")))?;
    Ok(FileInfo {
        path: path.to_owned(),
        name: base_name(path),
        kind,
        size,
        mode,
        modified,
    })
}

/// Parses the output of [`LIST`] for the directory `dir`, sorted by name.
///
/// Names holding a newline cannot be told apart from the next entry; such a line that does not
/// parse is reported as an error rather than skipped.
pub(crate) fn parse_list(dir: &str, output: &[u8]) -> Result<Vec<FileInfo>, Error> {
    let text = String::from_utf8_lossy(output);
    let mut entries = Vec::new();
    for line in text.split('\n').filter(|l| !l.is_empty()) {
        let mut parts = line.splitn(4, ' ');
        let (Some(mode), Some(size), Some(mtime), Some(name)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Error::internal(format!(
                "unexpected listing output for {dir}"
            )));
        };
        let (kind, size, mode, modified) = parse_fields(&format!("{mode} {size} {mtime}"))
            .ok_or_else(|| Error::internal(format!("unexpected listing output for {dir}")))?;
        entries.push(FileInfo {
            path: join(dir, name),
            name: name.to_owned(),
            kind,
            size,
            mode,
            modified,
        });
    }
    entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    entries.dedup_by(|a, b| a.name == b.name);
    Ok(entries)
}

/// Turns a file script's exit code into the contract error for `path`.
pub(crate) fn script_error(path: &str, exit: i32, stdout: &Bytes, stderr: &Bytes) -> Error {
    match exit {
        MISSING => Error::not_found(format!("{path} does not exist")),
        IS_DIRECTORY => Error::invalid_request(format!("{path} is a directory")),
        NOT_DIRECTORY => {
            Error::invalid_request(format!("{path}, or one of its parents, is not a directory"))
        }
        TOO_LARGE => {
            let size = String::from_utf8_lossy(stdout).trim().to_owned();
            Error::invalid_request(format!("{path} has {size} bytes, more than the cap"))
        }
        127 => Error::internal(format!(
            "the sandbox's image lacks a tool the file operations need (sh, cat, mkdir, dirname, stat): {}",
            crate::client::cut(String::from_utf8_lossy(stderr).trim(), 256)
        )),
        code => Error::internal(format!(
            "the file operation on {path} failed with exit {code}: {}",
            crate::client::cut(String::from_utf8_lossy(stderr).trim(), 256)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stat_output_gives_kind_size_mode_and_time() {
        let info = parse_stat("/w/a.txt", b"81a4 300 1700000000\n").unwrap();
        assert_eq!(info.kind, FileKind::File);
        assert_eq!(info.size, 300);
        assert_eq!(info.mode, 0o644);
        assert_eq!(info.name, "a.txt");
        assert_eq!(
            info.modified,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        );
        let dir = parse_stat("/", b"41ed 4096 0\n").unwrap();
        assert!(dir.is_dir());
        assert_eq!(dir.name, "/");
        assert_eq!(
            parse_stat("/l", b"a1ff 3 0\n").unwrap().kind,
            FileKind::Symlink
        );
    }

    #[test]
    fn listing_is_sorted_by_name_and_joins_paths() {
        let out = b"81a4 1 0 b.txt\n41ed 4096 0 a dir\n81a4 0 0 .hidden\n";
        let entries = parse_list("/w/", out).unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, [".hidden", "a dir", "b.txt"]);
        assert_eq!(entries[1].path, "/w/a dir");
        assert!(entries[1].is_dir());
    }

    #[test]
    fn garbage_output_is_an_error() {
        assert!(parse_stat("/x", b"no such thing").is_err());
        assert!(parse_list("/x", b"zz 1\n").is_err());
    }

    #[test]
    fn script_exit_codes_map_to_contract_errors() {
        let none = Bytes::new();
        assert!(script_error("/a", MISSING, &none, &none).is_not_found());
        assert!(script_error("/a", IS_DIRECTORY, &none, &none).is_invalid_request());
        assert!(script_error("/a", NOT_DIRECTORY, &none, &none).is_invalid_request());
        let big = script_error("/a", TOO_LARGE, &Bytes::from_static(b"999\n"), &none);
        assert!(big.is_invalid_request());
        assert!(big.message().contains("999"), "{big}");
        assert!(script_error("/a", 1, &none, &none).is_internal());
    }

    #[test]
    fn scripts_pass_paths_as_arguments_never_inside_the_script() {
        let argv = script(READ, &["/w/$(rm -rf /)", "10"]);
        assert_eq!(argv[..4], ["/bin/sh", "-c", READ, "sh"]);
        assert_eq!(argv[4], "/w/$(rm -rf /)");
    }

    proptest! {
        #[test]
        fn parsers_never_panic(output in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_stat("/p", &output);
            let _ = parse_list("/p", &output);
        }

        #[test]
        fn base_name_is_the_last_component(parts in proptest::collection::vec("[a-z.]{1,6}", 1..5)) {
            let path = format!("/{}", parts.join("/"));
            prop_assert_eq!(base_name(&path), parts.last().cloned().unwrap_or_default());
        }
    }
}
