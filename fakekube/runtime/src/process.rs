//! Programs: the command registry, what a running command sees ([`Process`]), and how a name or path
//! becomes a program (PATH search, `/bin` entries, `#!` scripts), as `execve`/`execvp` would.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::fs::{self, FsError, NodeKind, PROGRAM_MAGIC, PodFs};
use super::io::{Input, Output, WriteError};

/// A boxed, sendable future (what handlers return).
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A command implementation: gets the process context, returns the exit code.
pub(crate) type Handler = Arc<dyn Fn(Process) -> BoxFuture<'static, i32> + Send + Sync>;

/// The PATH a container gets when its image sets none.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Deepest nesting of shells, functions, subshells and compound commands; beyond it a command
/// fails instead of exhausting the stack. Each level costs up to about 10 KiB of stack in a debug
/// build, so the whole budget stays well under a 2 MiB thread stack.
pub(crate) const MAX_NESTING: usize = 64;

/// Nesting a started program adds (a nested `sh` costs several levels' worth of stack).
pub(crate) const PROGRAM_NESTING: usize = 4;

/// Everything a running command sees: its arguments, environment, working directory, filesystem,
/// streams and the token that kills it.
#[derive(Clone)]
pub struct Process {
    /// Arguments, `argv[0]` first.
    pub argv: Vec<String>,
    /// Environment, in order.
    pub env: Vec<(String, String)>,
    /// Absolute working directory.
    pub cwd: String,
    /// The pod's filesystem.
    pub fs: PodFs,
    /// The registry, to start other programs (`env`, `timeout`, `sh`).
    pub programs: Programs,
    /// Standard input.
    pub stdin: Input,
    /// Standard output.
    pub stdout: Output,
    /// Standard error.
    pub stderr: Output,
    /// Fires when the process is killed (exec cancelled, pod deleted, `timeout` expired).
    pub cancel: CancellationToken,
    /// How deeply this process is nested in shells and functions (see [`MAX_NESTING`]).
    pub depth: usize,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("argv", &self.argv)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl Process {
    /// The program's name for messages: the last component of `argv[0]`.
    pub(crate) fn name(&self) -> &str {
        let a0 = self.argv.first().map(String::as_str).unwrap_or("");
        a0.rsplit('/').next().unwrap_or(a0)
    }

    /// The arguments after `argv[0]`.
    pub fn args(&self) -> &[String] {
        self.argv.get(1..).unwrap_or_default()
    }

    /// An environment variable (the last one wins if it is set twice).
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A path made absolute against the working directory.
    pub fn path(&self, p: &str) -> String {
        fs::join(&self.cwd, p)
    }

    /// Writes to standard output.
    pub(crate) async fn out(&self, data: impl Into<Bytes>) -> Result<(), WriteError> {
        self.stdout.write(data.into()).await
    }

    /// Prints `NAME: message` on standard error (a failure to do so is ignored, as C tools do).
    pub(crate) async fn err(&self, msg: &str) {
        let _ = self
            .stderr
            .write_str(&format!("{}: {msg}\n", self.name()))
            .await;
    }

    /// A context for a child program with other arguments and the same everything else.
    pub(crate) fn child(&self, argv: Vec<String>) -> Process {
        Process {
            argv,
            ..self.clone()
        }
    }

    /// Starts `self.argv` as `execvp` would (PATH search, `#!` scripts, shell fallback) and waits
    /// for it. Failures print `{prefix}'NAME': REASON` (e.g. `env: 'x': No such file or
    /// directory`) and give 127 (not found) or 126.
    pub(crate) async fn spawn_as(self, prefix: &str) -> i32 {
        let Some(name) = self.argv.first().cloned() else {
            return 0;
        };
        let path = self.var("PATH").unwrap_or(DEFAULT_PATH).to_string();
        match resolve(
            &name,
            self.argv.clone(),
            &path,
            &self.cwd,
            &self.fs,
            &self.programs,
            true,
        ) {
            Ok((handler, argv)) => {
                if self.depth >= MAX_NESTING {
                    let _ = self
                        .stderr
                        .write_str(&format!("{prefix}'{name}': nesting too deep\n"))
                        .await;
                    return 126;
                }
                let mut proc = self.child(argv);
                proc.depth += PROGRAM_NESTING;
                handler(proc).await
            }
            Err(e) => {
                let _ = self
                    .stderr
                    .write_str(&format!("{prefix}'{name}': {}\n", e.reason()))
                    .await;
                e.exit_code()
            }
        }
    }
}

/// Why a program could not be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SpawnError {
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
    pub(crate) fn exit_code(self) -> i32 {
        match self {
            SpawnError::NotFound => 127,
            _ => 126,
        }
    }

    /// The `strerror`-style reason, for `env: 'x': No such file or directory`.
    pub(crate) fn reason(self) -> String {
        match self {
            SpawnError::NotFound => FsError::NotFound.to_string(),
            other => other.to_string(),
        }
    }

    /// The message containerd gives when a container exec cannot start `argv0`.
    pub(crate) fn containerd_message(self, argv0: &str) -> String {
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

/// The registry of programs: the built-in commands plus handlers registered by tests, which take
/// precedence and need no `/bin` entry. Clones share the registry.
#[derive(Clone, Default)]
pub struct Programs {
    /// Handlers registered at run time, by name.
    custom: Arc<RwLock<HashMap<String, Handler>>>,
}

impl std::fmt::Debug for Programs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .custom
            .read()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_struct("Programs").field("custom", &names).finish()
    }
}

impl Programs {
    /// The built-in commands only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers (or replaces) a handler under `name`; every clone of this registry sees it.
    /// A registered name is found by the shell and by `exec` before any file of that name.
    pub(crate) fn register(&self, name: impl Into<String>, handler: Handler) {
        let mut map = self.custom.write().unwrap_or_else(|p| p.into_inner());
        map.insert(name.into(), handler);
    }

    /// Registers an `async` function or closure as a handler.
    pub fn register_fn<F, Fut>(&self, name: impl Into<String>, f: F)
    where
        F: Fn(Process) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        self.register(
            name,
            Arc::new(move |proc| Box::pin(f(proc)) as BoxFuture<'static, i32>),
        );
    }

    /// The handler registered under `name` by a test, if any.
    pub(crate) fn registered(&self, name: &str) -> Option<Handler> {
        self.custom.read().ok().and_then(|m| m.get(name).cloned())
    }

    /// The handler for a program name: a registered one, else the built-in.
    pub(crate) fn program(&self, name: &str) -> Option<Handler> {
        self.registered(name)
            .or_else(|| super::programs::builtin(name))
    }
}

/// Resolves a command name or path to a handler and the argv to give it, as `execvp` does:
/// registered names first, then `PATH` (for a name without `/`), then the file itself: a `/bin`
/// program entry, a `#!` script (run by its interpreter) or, with `shell_fallback`, any other
/// executable file run by `sh`.
pub(crate) fn resolve(
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
    if let Some(rest) = head.strip_prefix(PROGRAM_MAGIC) {
        let name = String::from_utf8_lossy(rest.split(|b| *b == b'\n').next().unwrap_or_default())
            .into_owned();
        return programs
            .program(&name)
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
    if shell_fallback && let Some(sh) = programs.program("sh") {
        let mut new_argv = vec!["sh".to_string(), path.to_string()];
        new_argv.extend(argv.into_iter().skip(1));
        return Ok((sh, new_argv));
    }
    Err(SpawnError::ExecFormat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_finds_bin_programs_through_path_and_by_absolute_path() {
        let fs = PodFs::new(vec![]);
        let cmds = Programs::new();
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
        let fs = PodFs::new(vec![]);
        fs.write("/tmp/s", b"#!/bin/sh -e\necho hi\n").ok();
        fs.chmod("/tmp/s", 0o755).ok();
        let cmds = Programs::new();
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
        let fs = PodFs::new(vec![]);
        fs.write("/tmp/s", b"echo hi\n").ok();
        let cmds = Programs::new();
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
        let fs = PodFs::new(vec![]);
        let cmds = Programs::new();
        cmds.register_fn("special", |_proc| async { 7 });
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
