//! Files inside a sandbox: [`FileInfo`] from `stat` and `list_dir`, and the path rule every file
//! operation applies.
//!
//! Paths are absolute POSIX paths as the sandbox sees them. `..` and `.` are allowed (the
//! sandbox's filesystem is its own), symbolic links are not resolved by the contract, and a
//! missing path answers `not_found`.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The longest path a file operation accepts, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_LEN: usize = 4096;

/// Checks a path given to a file operation; answers `invalid_request` if it is empty, relative,
/// longer than [`MAX_PATH_LEN`] bytes or holds a NUL byte.
pub fn validate_path(path: &str) -> Result<(), Error> {
    if path.is_empty() {
        return Err(Error::invalid_request("path is empty"));
    }
    if !path.starts_with('/') {
        return Err(Error::invalid_request(format!(
            "path {:?} is not absolute",
            crate::sandbox::cut(path)
        )));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(Error::invalid_request(format!(
            "path is {} bytes, more than {MAX_PATH_LEN}",
            path.len()
        )));
    }
    if path.contains('\0') {
        return Err(Error::invalid_request("path holds a NUL byte"));
    }
    Ok(())
}

/// What kind of object a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (not followed).
    Symlink,
    /// Anything else: a device, a socket, a FIFO.
    Other,
}

/// What [`Provider::stat`](crate::Provider::stat) and
/// [`Provider::list_dir`](crate::Provider::list_dir) report about one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// The absolute path, as asked for (`stat`) or as the directory's path joined with `name`
    /// (`list_dir`).
    pub path: String,
    /// The last component of the path (`/` for the root).
    pub name: String,
    /// What kind of object it is.
    pub kind: FileKind,
    /// Size in bytes; for a directory, whatever the filesystem reports.
    pub size: u64,
    /// Permission bits, such as `0o644` (the low 12 bits of `st_mode`, file type excluded).
    pub mode: u32,
    /// Last modification time, if the provider reports one.
    pub modified: Option<SystemTime>,
}

impl FileInfo {
    /// Returns whether the path is a directory.
    pub fn is_dir(&self) -> bool {
        self.kind == FileKind::Directory
    }

    /// Returns whether the path is a regular file.
    pub fn is_file(&self) -> bool {
        self.kind == FileKind::File
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn absolute_paths_are_accepted() {
        for path in ["/", "/workspace/a.txt", "/a/../b", "/with space/ü"] {
            assert_eq!(validate_path(path), Ok(()), "{path:?}");
        }
    }

    #[test]
    fn empty_relative_long_and_nul_paths_are_invalid_requests() {
        let long = format!("/{}", "a".repeat(MAX_PATH_LEN));
        for path in ["", "a.txt", "./a", "~/a", long.as_str(), "/a\0b"] {
            let error = validate_path(path).unwrap_err();
            assert!(error.is_invalid_request(), "{path:?}: {error}");
        }
    }

    #[test]
    fn file_info_predicates_follow_kind() {
        let info = FileInfo {
            path: "/w".to_owned(),
            name: "w".to_owned(),
            kind: FileKind::Directory,
            size: 4096,
            mode: 0o755,
            modified: None,
        };
        assert!(info.is_dir());
        assert!(!info.is_file());
    }

    proptest! {
        #[test]
        fn path_check_never_panics(path in "\\PC{0,40}") {
            let accepted = validate_path(&path).is_ok();
            prop_assert_eq!(accepted, path.starts_with('/'));
        }
    }
}
