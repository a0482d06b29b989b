//! The hermetic runtime behind `pods/exec` and a pod's main process.
//!
//! Each pod gets a [`PodFs`]: its own in-memory root tree (the usual image directories, a `/bin`
//! entry per built-in program, `/dev/null`, `/dev/zero`) with each claim's [`Volume`] mounted at
//! its path. Only volumes outlive the pod, as on a real cluster: a stop/start that builds a new
//! `PodFs` with the same volumes keeps what was written under the mount paths and nothing else.
//!
//! [`exec`] runs an argv the way a container runtime does: `argv[0]` is looked up through `PATH`
//! (or taken as a path) and started directly; a name that cannot be started is a
//! [`ExitStatus::CannotStart`] with containerd's wording, not an exit code. `sh` is a small POSIX
//! shell ([`shell`]) where a missing command gives 127 and `sh: NAME: not found`, a
//! non-executable one 126. Programs are [`Handler`]s in a [`Programs`] registry; tests can
//! register their own to script any behaviour.
//!
//! # Streams and backpressure
//!
//! stdout and stderr are bounded channels of chunks of at most [`io::CHUNK`] bytes; every producer
//! awaits capacity, so a slow reader slows the program and memory stays bounded. Pipes between
//! commands are bounded the same way, and a writer whose reader has gone stops (`yes | head`).
//!
//! # Cancel safety
//!
//! Everything a program does is inside the future [`exec`] returns, except background jobs
//! (`cmd &`), which run as tasks holding a child of the exec's [`CancellationToken`]. When the
//! token fires, `exec` returns [`ExitStatus::Killed`] at once and every job it started ends.
//! Background jobs otherwise outlive the shell that started them (and keep their copies of
//! stdout/stderr open), as processes outlive `kubectl exec` until the pod dies.
//!
//! # Known limitations
//!
//! No symbolic links, users or signals; file descriptors 0–2 only; see [`shell`] for the shell's.

pub mod fs;
pub mod io;
pub mod process;
mod programs;
mod shell;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use fs::{PodFs, Volume};
pub use process::{Process, Programs};

use io::{Input, Output};
use process::{DEFAULT_PATH, SpawnError, resolve};

/// What to run, where and as what.
#[derive(Debug)]
pub struct ExecSpec {
    /// The command; `argv[0]` is resolved through `PATH` unless it contains a `/`.
    pub argv: Vec<String>,
    /// The environment (container env plus exec's). `PATH` and `HOME` get container defaults
    /// when missing; pass `HOSTNAME` (the pod name) for `hostname`/`uname -n`.
    pub env: Vec<(String, String)>,
    /// Working directory (the container's `workingDir`); empty means `/`.
    pub cwd: String,
    /// The pod's filesystem.
    pub fs: PodFs,
    /// The programs.
    pub programs: Programs,
    /// Fires when the exec must end (client gone, pod deleted).
    pub cancel: CancellationToken,
}

/// The process's streams.
#[derive(Debug)]
pub struct ExecIo {
    /// Standard input; `None` or a closed channel is end of input.
    pub stdin: Option<mpsc::Receiver<Bytes>>,
    /// Standard output, in chunks of at most [`io::CHUNK`] bytes; use a bounded channel.
    pub stdout: mpsc::Sender<Bytes>,
    /// Standard error, likewise.
    pub stderr: mpsc::Sender<Bytes>,
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitStatus {
    /// It exited with this status (0–255).
    Code(i32),
    /// `argv[0]` could not be started (missing, not executable, no program). The text is
    /// containerd's, starting `OCI runtime exec failed: …`; the exec handler wraps it as
    /// `Internal error occurred: error executing command in container: failed to exec in
    /// container: failed to start exec "<id>": <text>` in an InternalError Status.
    CannotStart(String),
    /// The cancellation token fired first.
    Killed,
}

/// Runs `spec.argv` to completion (or cancellation) with the given streams.
pub async fn exec(spec: ExecSpec, io: ExecIo) -> ExitStatus {
    if spec.cancel.is_cancelled() {
        return ExitStatus::Killed;
    }
    let argv0 = spec.argv.first().cloned().unwrap_or_default();
    let mut env = spec.env;
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.insert(0, ("PATH".into(), DEFAULT_PATH.into()));
    }
    if !env.iter().any(|(k, _)| k == "HOME") {
        env.push(("HOME".into(), "/root".into()));
    }
    let cwd = match fs::normalize(if spec.cwd.is_empty() { "/" } else { &spec.cwd }) {
        Ok(c) if matches!(spec.fs.metadata(&c), Ok(m) if m.kind == fs::NodeKind::Directory) => c,
        _ => {
            return ExitStatus::CannotStart(format!(
                "OCI runtime exec failed: exec failed: unable to start container process: chdir to cwd (\"{}\") set in config.json failed: no such file or directory: unknown",
                spec.cwd
            ));
        }
    };
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let (handler, argv) = match resolve(
        &argv0,
        spec.argv,
        &path,
        &cwd,
        &spec.fs,
        &spec.programs,
        false,
    ) {
        Ok(found) => found,
        Err(e) => return ExitStatus::CannotStart(SpawnError::containerd_message(e, &argv0)),
    };
    let proc = Process {
        argv,
        env,
        cwd,
        fs: spec.fs,
        programs: spec.programs,
        stdin: io.stdin.map(Input::channel).unwrap_or_else(Input::empty),
        stdout: Output::Channel(io.stdout),
        stderr: Output::Channel(io.stderr),
        cancel: spec.cancel.clone(),
        depth: 0,
    };
    tokio::select! {
        biased;
        _ = spec.cancel.cancelled() => ExitStatus::Killed,
        status = handler(proc) => ExitStatus::Code(status & 0xff),
    }
}

#[cfg(test)]
mod tests;
