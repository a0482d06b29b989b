//! Starting a program the way a container runtime does: [`exec`] resolves `argv[0]` (through
//! `PATH` unless it holds a `/`) and runs it with the given streams until it ends or is killed.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::fs::{self, NodeKind, PodFs};
use crate::io::{Input, Output, Stdio};
use crate::net::PodNetwork;
use crate::process::{DEFAULT_PATH, Process, ProcessTable, Programs, Signal, SpawnError, resolve};
use crate::tty::{Discipline, Terminal, WindowSize};

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
    /// The container's filesystem (from [`Programs::pod_fs`], so that `/bin` has the programs).
    pub fs: PodFs,
    /// The programs.
    pub programs: Programs,
    /// The container's process table: the process gets the next pid (1 for the first process
    /// of a fresh table, as a container's main process).
    pub processes: ProcessTable,
    /// Fires when the exec must end (client gone, pod deleted).
    pub cancel: CancellationToken,
    /// The pod's network, shared by its containers and execs (`PodNetwork::new()` for a pod of
    /// its own).
    pub network: PodNetwork,
}

/// The process's streams.
#[derive(Debug)]
pub struct ExecIo {
    /// Standard input; `None` or a closed channel is end of input.
    pub stdin: Option<mpsc::Receiver<Bytes>>,
    /// Standard output, in chunks of at most [`CHUNK`](crate::CHUNK) bytes; use a bounded channel.
    pub stdout: mpsc::Sender<Bytes>,
    /// Standard error, likewise.
    pub stderr: mpsc::Sender<Bytes>,
    /// `Some`: run on a terminal (`tty=true`) whose window size follows this channel. The
    /// runtime then does what a pseudo-terminal does: `stdin` is what the client types (echoed,
    /// edited a line at a time, `\r` read as `\n`, `^C` interrupting the foreground job, `^D`
    /// ending input), and everything the process writes, stderr included, goes to `stdout`
    /// with `\n` written as `\r\n`; `stderr` stays unused.
    pub tty: Option<watch::Receiver<WindowSize>>,
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
    run(spec, io, None).await
}

/// Runs an exec as a client's exec session sees it: [`exec`], then, when the main process
/// has ended while processes it started still hold its stdout or stderr (background jobs),
/// waits until they let go, as the client's stream does. When the container's limits killed
/// the exec's processes (a fork past the process limit, a process past the memory limit; see
/// [`Limits`](crate::Limits)), it ends with 137, whatever the main process returned.
pub async fn exec_session(spec: ExecSpec, io: ExecIo) -> ExitStatus {
    let mut root = None;
    let status = run(spec, io, Some(&mut root)).await;
    let Some(Root {
        tree,
        processes,
        stdout,
        stderr,
        cancel,
    }) = root
    else {
        return status;
    };
    loop {
        let left = processes.left();
        let held = stdout.strong_count() > 0 || stderr.strong_count() > 0;
        if !held || !processes.tree_alive(tree) || cancel.is_cancelled() {
            break;
        }
        tokio::select! {
            () = left => {}
            () = cancel.cancelled() => {}
            // A job lets go of the streams without ending (its first command took redirected
            // ones), and a dropped sender wakes no one: look again now and then.
            () = tokio::time::sleep(STREAMS_RECHECK) => {}
        }
    }
    match (status, processes.verdict(tree)) {
        (ExitStatus::Code(_), Some(_)) => ExitStatus::Code(137),
        (status, _) => status,
    }
}

/// How often [`exec_session`] looks again whether background jobs still hold the streams.
const STREAMS_RECHECK: std::time::Duration = std::time::Duration::from_millis(20);

/// What [`exec_session`] watches once the main process has ended.
struct Root {
    /// The exec's process tree.
    tree: u32,
    /// The container's table.
    processes: ProcessTable,
    /// The exec's stdout, held by whoever may still write to it.
    stdout: mpsc::WeakSender<Bytes>,
    /// Its stderr.
    stderr: mpsc::WeakSender<Bytes>,
    /// The exec's cancellation.
    cancel: CancellationToken,
}

/// Runs an exec; with `root`, says where its process tree is.
async fn run(spec: ExecSpec, io: ExecIo, root: Option<&mut Option<Root>>) -> ExitStatus {
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
        Ok(c) if matches!(spec.fs.metadata(&c), Ok(m) if m.kind == NodeKind::Directory) => c,
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
    let watched = (io.stdout.downgrade(), io.stderr.downgrade());
    let (stdio, discipline) = match io.tty {
        None => (
            Stdio {
                stdin: io.stdin.map(Input::channel).unwrap_or_else(Input::empty),
                stdout: Output::channel(io.stdout),
                stderr: Output::channel(io.stderr),
            },
            None,
        ),
        Some(size) => {
            let term = Terminal::new(size);
            let output = Output::terminal(io.stdout.clone(), term.clone());
            let (stdin, discipline) = match io.stdin {
                Some(typed) => {
                    let (tx, rx) = mpsc::channel(TTY_INPUT_CHUNKS);
                    // Boxed: only a terminal pays for the line discipline's state, not every
                    // running process's future.
                    let run = Box::pin(Discipline::new(term.clone()).run(typed, tx, io.stdout));
                    (Input::terminal(rx, term.clone()), Some(run))
                }
                None => (Input::empty(), None),
            };
            let stdio = Stdio {
                stdin,
                stdout: output.clone(),
                stderr: output,
            };
            (stdio, Some((discipline, term)))
        }
    };
    let mut proc = Process::new(
        argv,
        env,
        cwd,
        spec.fs,
        spec.programs,
        stdio,
        spec.cancel.clone(),
    )
    .with_network(spec.network);
    proc.processes = spec.processes.clone();
    let slot = match spec.processes.start(0, proc.argv.clone(), &spec.cancel) {
        Ok(slot) => slot,
        Err(e) => {
            return ExitStatus::CannotStart(format!(
                "OCI runtime exec failed: exec failed: unable to start container process: {}: unknown",
                e.to_string().to_lowercase()
            ));
        }
    };
    proc.pid = slot.pid;
    proc.cancel = slot.token.clone();
    if let Some(root) = root {
        *root = Some(Root {
            tree: slot.pid,
            processes: spec.processes.clone(),
            stdout: watched.0,
            stderr: watched.1,
            cancel: spec.cancel.clone(),
        });
    }
    let discipline = match discipline {
        Some((run, term)) => {
            let (table, pid) = (spec.processes.clone(), slot.pid);
            term.set_foreground(Some(Arc::new(move || {
                let _ = table.signal(pid, Signal::Int);
            })));
            run
        }
        None => None,
    };
    let discipline = async move {
        if let Some(run) = discipline {
            run.await;
        }
        std::future::pending::<()>().await
    };
    tokio::select! {
        biased;
        _ = spec.cancel.cancelled() => ExitStatus::Killed,
        _ = slot.token.cancelled() => ExitStatus::Code(slot.killed_status()),
        // Before the process: a busy process must not starve the terminal (and its ^C) of
        // the task's cooperative budget.
        () = discipline => ExitStatus::Killed,
        status = handler(proc) => ExitStatus::Code(slot.status(status) & 0xff),
    }
}

/// Chunks of cooked terminal input buffered between the line discipline and the process.
const TTY_INPUT_CHUNKS: usize = 16;
