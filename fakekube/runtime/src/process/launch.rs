//! How a name or path becomes a program, as `execvp` does: registered names, then a `PATH`
//! search, then the file itself (a `/bin` entry of the program table, a `#!` script, or, from a
//! shell, any executable file run by `sh`).

use crate::fs::{self, FsError, NodeKind, PodFs};

use super::Handler;
use super::registry::{self, Programs};

/// Why a program could not be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// Nothing by that name (ENOENT); exit 127 through a shell.
    #[error("not found")]
    NotFound,
    /// A directory, or a file without an execute bit (EACCES); exit 126.
    #[error("Permission denied")]
    PermissionDenied,
    /// Executable but not a program nor a `#!` script, and no shell fallback (ENOEXEC); 126.
    #[error("Exec format error")]
    ExecFormat,
    /// The path itself is unusable (too long...); exit 126.
    #[error(transparent)]
    Fs(#[from] FsError),
}

impl SpawnError {
    /// The exit code a shell gives for this failure.
    pub fn exit_code(self) -> i32 {
        match self {
            SpawnError::NotFound => 127,
            _ => 126,
        }
    }

    /// The `strerror`-style reason, for `env: 'x': No such file or directory`.
    pub fn reason(self) -> String {
        match self {
            SpawnError::NotFound => FsError::NotFound.to_string(),
            other => other.to_string(),
        }
    }

    /// The message containerd gives when a container exec cannot start `argv0`.
    pub fn containerd_message(self, argv0: &str) -> String {
        let detail = match self {
            SpawnError::NotFound if !argv0.contains('/') => {
                format!("exec: \"{argv0}\": executable file not found in $PATH")
            }
            SpawnError::NotFound => {
                format!("exec: \"{argv0}\": stat {argv0}: no such file or directory")
            }
            SpawnError::PermissionDenied => format!("exec: \"{argv0}\": permission denied"),
            SpawnError::ExecFormat => format!("exec {argv0}: exec format error"),
            SpawnError::Fs(e) => format!("exec: \"{argv0}\": {}", e.to_string().to_lowercase()),
        };
        format!(
            "OCI runtime exec failed: exec failed: unable to start container process: {detail}: unknown"
        )
    }
}

/// Resolves a program name or path to a handler and the argv to give it, as `execvp` does:
/// registered names first, then `PATH` (for a name without `/`), then the file itself: a `/bin`
/// program entry, a `#!` script (run by its interpreter) or, with `shell_fallback`, any other
/// executable file run by `sh`.
pub fn resolve(
    name: &str,
    argv: Vec<String>,
    path_var: &str,
    cwd: &str,
    fs: &PodFs,
    programs: &Programs,
    shell_fallback: bool,
) -> Result<(Handler, Vec<String>), SpawnError> {
    if name.is_empty() {
        return Err(SpawnError::NotFound);
    }
    if name.contains('/') {
        return load(&fs::join(cwd, name), argv, fs, programs, shell_fallback, 0);
    }
    if let Some(h) = programs.registered(name) {
        return Ok((h, argv));
    }
    let mut denied = false;
    for dir in path_var.split(':') {
        let dir = if dir.is_empty() { "." } else { dir };
        let candidate = fs::join(&fs::join(cwd, dir), name);
        match fs.metadata(&candidate) {
            Ok(m) if m.kind == NodeKind::Regular && m.is_executable() => {
                return load(&candidate, argv, fs, programs, shell_fallback, 0);
            }
            Ok(m) if m.kind == NodeKind::Regular => denied = true,
            _ => {}
        }
    }
    Err(if denied {
        SpawnError::PermissionDenied
    } else {
        SpawnError::NotFound
    })
}

/// Loads the executable file at an absolute path (see [`resolve`]).
fn load(
    path: &str,
    argv: Vec<String>,
    fs: &PodFs,
    programs: &Programs,
    shell_fallback: bool,
    hops: usize,
) -> Result<(Handler, Vec<String>), SpawnError> {
    let meta = fs.metadata(path).map_err(|e| match e {
        FsError::NotFound | FsError::NotADirectory => SpawnError::NotFound,
        other => SpawnError::Fs(other),
    })?;
    if meta.kind != NodeKind::Regular || !meta.is_executable() {
        return Err(SpawnError::PermissionDenied);
    }
    let head = fs.read_at(path, 0, 512)?;
    if let Some(name) = registry::entry_name(&head) {
        return programs
            .find(&name)
            .map(|h| (h, argv))
            .ok_or(SpawnError::NotFound);
    }
    if let Some(line) = head.strip_prefix(b"#!") {
        if hops >= 4 {
            return Err(SpawnError::ExecFormat);
        }
        let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next().unwrap_or_default())
            .into_owned();
        let line = line.trim();
        let (interp, arg) = match line.split_once([' ', '\t']) {
            Some((i, a)) => (i.to_string(), Some(a.trim().to_string())),
            None => (line.to_string(), None),
        };
        if interp.is_empty() {
            return Err(SpawnError::ExecFormat);
        }
        let mut new_argv = vec![interp.clone()];
        new_argv.extend(arg.filter(|a| !a.is_empty()));
        new_argv.push(path.to_string());
        new_argv.extend(argv.into_iter().skip(1));
        return load(
            &fs::join("/", &interp),
            new_argv,
            fs,
            programs,
            shell_fallback,
            hops + 1,
        );
    }
    if shell_fallback && let Some(sh) = programs.find("sh") {
        let mut new_argv = vec!["sh".to_string(), path.to_string()];
        new_argv.extend(argv.into_iter().skip(1));
        return Ok((sh, new_argv));
    }
    Err(SpawnError::ExecFormat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{DEFAULT_PATH, Program};

    /// A table with an `sh` and a `cat` that do nothing: resolution only names them.
    static TABLE: &[Program] = &[
        Program::new("sh", |_| Box::pin(async { 0 })),
        Program::new("cat", |_| Box::pin(async { 0 })),
    ];

    fn programs() -> Programs {
        Programs::with_table(TABLE)
    }

    #[test]
    fn resolve_finds_bin_programs_through_path_and_by_absolute_path() {
        let fs = programs().pod_fs(vec![]);
        let cmds = programs();
        let found = resolve(
            "cat",
            vec!["cat".into()],
            DEFAULT_PATH,
            "/",
            &fs,
            &cmds,
            false,
        );
        assert_eq!(found.map(|(_, argv)| argv), Ok(vec!["cat".to_string()]));
        assert!(resolve("/bin/cat", vec![], DEFAULT_PATH, "/", &fs, &cmds, false).is_ok());
        let missing = resolve("nope", vec![], DEFAULT_PATH, "/", &fs, &cmds, false).map(|_| ());
        assert_eq!(missing, Err(SpawnError::NotFound));
    }

    #[test]
    fn resolve_runs_a_shebang_script_through_its_interpreter() {
        let fs = programs().pod_fs(vec![]);
        fs.write("/tmp/s", b"#!/bin/sh -e\necho hi\n").ok();
        fs.chmod("/tmp/s", 0o755).ok();
        let cmds = programs();
        let argv = resolve(
            "/tmp/s",
            vec!["/tmp/s".into(), "a".into()],
            DEFAULT_PATH,
            "/",
            &fs,
            &cmds,
            false,
        )
        .map(|(_, argv)| argv);
        let want: Vec<String> = ["/bin/sh", "-e", "/tmp/s", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(argv, Ok(want));
    }

    #[test]
    fn resolve_refuses_files_without_an_exec_bit_and_directories() {
        let fs = programs().pod_fs(vec![]);
        fs.write("/tmp/s", b"echo hi\n").ok();
        let cmds = programs();
        let r = resolve("/tmp/s", vec![], DEFAULT_PATH, "/", &fs, &cmds, true).map(|_| ());
        assert_eq!(r, Err(SpawnError::PermissionDenied));
        let r = resolve("/tmp", vec![], DEFAULT_PATH, "/", &fs, &cmds, true).map(|_| ());
        assert_eq!(r, Err(SpawnError::PermissionDenied));
        fs.chmod("/tmp/s", 0o755).ok();
        let r = resolve("/tmp/s", vec![], DEFAULT_PATH, "/", &fs, &cmds, false).map(|_| ());
        assert_eq!(r, Err(SpawnError::ExecFormat));
    }

    #[test]
    fn registered_handler_is_found_without_a_file() {
        let fs = programs().pod_fs(vec![]);
        let cmds = programs();
        cmds.register("special", |_proc| async { 7 });
        assert!(resolve("special", vec![], DEFAULT_PATH, "/", &fs, &cmds, false).is_ok());
    }

    #[test]
    fn containerd_message_names_the_missing_executable() {
        let msg = SpawnError::NotFound.containerd_message("foo");
        assert!(
            msg.contains("exec: \"foo\": executable file not found in $PATH"),
            "{msg}"
        );
    }
}
