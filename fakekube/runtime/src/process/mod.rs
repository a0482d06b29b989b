//! How programs run: what a running program sees ([`Process`]), the registry of programs
//! ([`Programs`], in [`registry`]), how a name or path becomes a program ([`launch`]: PATH
//! search, `/bin` entries, `#!` scripts), as `execve`/`execvp` would, and the container's
//! process table with its signals ([`table`]).
//!
//! This is the layer the programs and the shell build on: it knows the handler types and the
//! registry, never a particular program (the table of programs is given to the registry by
//! [`crate::programs`]), so nothing here imports the programs or the shell.

mod launch;
mod limits;
mod registry;
mod table;

pub use launch::{SpawnError, resolve};
pub use limits::{
    DEFAULT_PROCESS_LIMIT, DEFAULT_STEP_LIMIT, Limits, PROCESS_MEMORY, STEP_LIMIT_STATUS, Verdict,
};
pub use registry::Program;
pub use registry::Programs;
pub use table::Slot;
pub use table::{ProcessInfo, ProcessTable, Signal, SignalError};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::fs::{self, PodFs};
use crate::io::{Input, Output, Stdio, WriteError};
use crate::net::PodNetwork;

/// A boxed, sendable future (what handlers return).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A program's implementation: gets the process, returns the exit status.
pub type Handler = Arc<dyn Fn(Process) -> BoxFuture<'static, i32> + Send + Sync>;

/// The PATH a container gets when its image sets none.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Deepest nesting of shells, functions, subshells and compound commands; beyond it a command
/// fails instead of exhausting the stack. Each level costs up to about 10 KiB of stack in a debug
/// build, so the whole budget stays well under a 2 MiB thread stack.
pub const MAX_NESTING: usize = 64;

/// Nesting a started program adds (a nested `sh` costs several levels' worth of stack).
pub const PROGRAM_NESTING: usize = 4;

/// Everything a running program sees: its arguments, environment, working directory, filesystem,
/// streams and the token that kills it. A program's handler gets one per run (see
/// [`Programs::register`]).
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
    /// The pod's network (its listening ports).
    pub network: PodNetwork,
    /// How deeply this process is nested in shells and functions (see [`MAX_NESTING`]).
    pub depth: usize,
    /// Its pid in [`Process::processes`] (0 for a handler called directly, outside any table).
    pub pid: u32,
    /// The container's process table.
    pub processes: ProcessTable,
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
    /// The process [`exec`](crate::exec) starts for a resolved program, outside any shell: for
    /// calling a handler directly (tests). `cwd` must be absolute.
    pub fn new(
        argv: Vec<String>,
        env: Vec<(String, String)>,
        cwd: String,
        fs: PodFs,
        programs: Programs,
        stdio: Stdio,
        cancel: CancellationToken,
    ) -> Self {
        Process {
            argv,
            env,
            cwd,
            fs,
            programs,
            stdin: stdio.stdin,
            stdout: stdio.stdout,
            stderr: stdio.stderr,
            cancel,
            network: PodNetwork::new(),
            depth: 0,
            pid: 0,
            processes: ProcessTable::new(),
        }
    }

    /// The process's pid (0 for a handler called directly, outside any process table).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The container's process table.
    pub fn processes(&self) -> &ProcessTable {
        &self.processes
    }

    /// Runs `handler` as a new process of the table, child of `self.pid` (its parent), and
    /// returns its exit status: what the handler returns, or `128 + n` when signal `n`
    /// terminated it (137 when its parent's end took it down).
    pub async fn run(mut self, handler: Handler) -> i32 {
        let slot = match self
            .processes
            .start(self.pid, self.argv.clone(), &self.cancel)
        {
            Ok(slot) => slot,
            Err(e) => {
                self.err_line(format!("sh: can't fork: {e}\n")).await;
                return 2;
            }
        };
        self.pid = slot.pid;
        self.cancel = slot.token.clone();
        tokio::select! {
            biased;
            () = slot.token.cancelled() => slot.killed_status(),
            status = handler(self) => slot.status(status),
        }
    }

    /// The same process in the pod network `network` ([`Process::new`] gives it a network of
    /// its own).
    pub fn with_network(mut self, network: PodNetwork) -> Self {
        self.network = network;
        self
    }

    /// The whole command line, `argv[0]` first.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The environment, in order (a name set twice: the last one counts).
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The absolute working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The container's filesystem.
    pub fn fs(&self) -> &PodFs {
        &self.fs
    }

    /// The pod's network: the ports its processes listen on.
    pub fn network(&self) -> &PodNetwork {
        &self.network
    }

    /// Standard input.
    pub fn stdin(&self) -> &Input {
        &self.stdin
    }

    /// Standard output.
    pub fn stdout(&self) -> &Output {
        &self.stdout
    }

    /// Standard error.
    pub fn stderr(&self) -> &Output {
        &self.stderr
    }

    /// The token that fires when the process is killed (exec cancelled, container stopped, pod
    /// deleted, `timeout` expired).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The program's name for messages: the last component of `argv[0]`.
    pub fn name(&self) -> &str {
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

    /// Its standard streams (for opening `/dev/stdin`, `/dev/fd/N`).
    pub fn stdio(&self) -> crate::io::Stdio {
        crate::io::Stdio {
            stdin: self.stdin.clone(),
            stdout: self.stdout.clone(),
            stderr: self.stderr.clone(),
        }
    }

    /// A path made absolute against the working directory.
    pub fn path(&self, p: &str) -> String {
        fs::join(&self.cwd, p)
    }

    /// Writes to standard output.
    pub async fn out(&self, data: impl Into<Bytes>) -> Result<(), WriteError> {
        self.stdout.write(data.into()).await
    }

    /// Prints `NAME: message` on standard error (a failure to do so is ignored, as C tools do).
    /// Boxed, as every error path is: a write's future is some hundreds of bytes, and inline it
    /// would grow the future of each program that may fail, for as long as it runs.
    pub fn err<'a>(&'a self, msg: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self
                .stderr
                .write_str(&format!("{}: {msg}\n", self.name()))
                .await;
        })
    }

    /// Writes a whole line on standard error, boxed (see [`Process::err`]).
    pub fn err_line(&self, line: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _ = self.stderr.write_str(&line).await;
        })
    }

    /// A process for a child program with other arguments and the same everything else.
    pub fn child(&self, argv: Vec<String>) -> Process {
        Process {
            argv,
            ..self.clone()
        }
    }

    /// Starts `self.argv` as `execvp` would (PATH search, `#!` scripts, shell fallback) and waits
    /// for it. Failures print `{prefix}'NAME': REASON` (e.g. `env: 'x': No such file or
    /// directory`) and give 127 (not found) or 126.
    pub async fn spawn_as(self, prefix: &str) -> i32 {
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
                proc.run(handler).await
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
