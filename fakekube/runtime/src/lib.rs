//! fakekube's hermetic container runtime: what runs behind `pods/exec` and a pod's main
//! process, entirely in memory. Upstream, this stands for the container runtime (containerd
//! and runc) and the kernel a container sees: each container gets its own filesystem
//! ([`PodFs`]), processes with signals and limits ([`ProcessTable`]), bounded standard streams
//! and terminals, and runs programs from a registry ([`Programs`]); `sh`, a small POSIX shell,
//! is part of the runtime. Each pod has a network of its own ([`PodNetwork`]: ports its
//! processes listen on and connect to, and the [`Cluster`] its runner puts it in). Nothing
//! touches the host: no files, no processes, no sockets.
//!
//! The programs an image holds (BusyBox's tools, the agent-sandbox images' servers) are not
//! here: the `fakekube-programs` crate writes them against this crate's [`Process`] and gives
//! the table every container starts with. A registry is made from a table
//! ([`Programs::with_table`]), and tests can [`register`](Programs::register) their own
//! programs to script any behaviour.
//!
//! Each container's [`PodFs`] is its own root tree (the usual image directories, `/dev/null`,
//! `/dev/zero`, a `/bin` entry per program) with each claim's [`Volume`] mounted at its path.
//! Only volumes outlive the container, as on a real cluster: a stop/start that builds a new
//! `PodFs` with the same volumes keeps what was written under the mount paths and nothing else.
//! The image's tree is built once per [`Programs`] and shared copy-on-write: a container holds
//! only the directories it wrote in, so thousands of running pods cost little more than one.
//!
//! [`exec`] runs an argv the way a container runtime does: `argv[0]` is looked up through `PATH`
//! (or taken as a path) and started directly; a name that cannot be started is a
//! [`ExitStatus::CannotStart`] with containerd's wording, not an exit code. In `sh` a missing
//! command gives 127 and `sh: NAME: not found`, a non-executable one 126.
//!
//! # Words
//!
//! A *program* is what a `/bin` entry or a registered name stands for: a handler that gets a
//! [`Process`] and returns an exit status. A *builtin* is only ever a shell builtin (`cd`,
//! `exit`, `read`, ...), run inside the shell.
//!
//! # Layout
//!
//! Each module depends only on those listed before it (`ci/module-cycles.py` checks that no
//! import cycle forms):
//!
//! - [`fs`]: the in-memory filesystem: [`PodFs`], [`Volume`], [`FsError`];
//! - [`tty`]: terminals ([`WindowSize`]): modes, the line discipline (echo, line editing, `^C`,
//!   `^D`) and output translation;
//! - [`io`]: bounded, chunked standard streams: [`Input`], [`Output`], [`Stdio`];
//! - [`net`]: a pod's network, in memory: [`PodNetwork`] (listening ports shared by the pod's
//!   containers and execs), [`Listener`], [`Connection`], [`NetError`], and the [`Cluster`]
//!   beyond it that the kubelet provides (Service names and addresses, other pods);
//! - [`process`]: what a program gets ([`Process`]), the registry ([`Programs`]) holding a
//!   program table and run-time registrations, `execvp`'s resolution of a name or path
//!   (`PATH`, `/bin` entries, `#!` scripts), and the container's process table
//!   ([`ProcessTable`]) with its [`Signal`]s;
//! - [`shell`]: `sh`: parser, interpreter (control flow, commands, expansion, redirections,
//!   builtins), patterns and arithmetic;
//! - [`random`]: the random numbers of `/dev/urandom`, `mktemp` and awk;
//! - `exec`: [`exec`], [`ExecSpec`], [`ExecIo`], [`ExitStatus`]: starting a program as a
//!   container runtime does;
//! - `fuzzing` (the `fuzzing` feature, for `fuzz/` only; not an API): the shell's parser and
//!   interpreter as fuzz targets.
//!
//! # Streams and backpressure
//!
//! stdout and stderr are bounded channels of chunks of at most [`CHUNK`] bytes; every producer
//! awaits capacity, so a slow reader slows the program and memory stays bounded. Pipes between
//! commands are bounded the same way, and a writer whose reader has gone stops (`yes | head`).
//!
//! # Cancel safety
//!
//! Everything a program does is inside the future [`exec`] returns, except background jobs
//! (`cmd &`), which run as tasks holding a child of the exec's cancellation token. When the
//! token fires, `exec` returns [`ExitStatus::Killed`] at once and every job it started ends.
//! Background jobs otherwise outlive the shell that started them (and keep their copies of
//! stdout/stderr open), as processes outlive `kubectl exec` until the pod dies.
//!
//! # Processes, signals and terminals
//!
//! Every program started (by [`exec`], a shell or `env`/`timeout`/`xargs`/`find -exec`) and
//! every background job is a process of [`ExecSpec::processes`] while it runs: `ps` lists
//! them, `kill` and [`ProcessTable::signal`] signal them. A signal is delivered as
//! cancellation of the process's token (its children's too), except that a shell runs the
//! `trap` it set for it between commands (at once in `wait`). With [`ExecIo::tty`] the process
//! runs on a terminal: see the `tty` module's line discipline; an interactive `sh` on it
//! prompts, and `^C` interrupts its foreground command instead of the shell.
//!
//! # Limits
//!
//! A container's [`ProcessTable`] keeps its [`Limits`], as its cgroup would: a process count
//! (a fork past it fails with `can't fork: Resource temporarily unavailable` and the process
//! tree it was made in is killed, so a fork bomb stops there) and memory (counted, not
//! measured: [`PROCESS_MEMORY`] per process plus what a shell's variables and command
//! substitutions hold; past it the process is killed with 137 and counted in
//! [`ProcessTable::oom_kills`]). [`exec_session`] reports an exec whose processes the limits
//! killed with 137. Shells, functions and compound commands nest at most 64 deep (exit 2).
//! A shell takes at most [`Limits::steps`] commands ([`DEFAULT_STEP_LIMIT`]) with its
//! subshells and jobs, then stops with [`STEP_LIMIT_STATUS`] (152, as `SIGXCPU` ends a process
//! past its CPU time limit) and `sh: CPU time limit exceeded (N steps)` on its stderr.
//! Every filesystem [`Programs::pod_fs`] makes is charged to its [`StorageBudget`]: a write
//! past it fails with `No space left on device`, and a filesystem gives its bytes back when
//! it goes. [`PodFs::set_ephemeral_limit`] does not refuse writes: it fires a token, for the
//! kubelet to evict the pod.
//!
//! # Known limitations
//!
//! - No hard links (`ln` without `-s` copies) and no users; file descriptors 0–2 only; no
//!   process groups or job control (a signal to a shell also ends the programs it is running,
//!   as their tokens are children of its own); `SIGSTOP`/`SIGCONT` do not exist.
//! - The shell has no aliases, `getopts` or `$'…'` quoting; `local` is not scoped; a trapped
//!   signal waits for the foreground program to end, as in dash, except in `wait`.
//! - Terminals: one name (`/dev/pts/0`), modes limited to echo, canonical mode, `^C`, ICRNL
//!   and ONLCR; `stty rows`/`cols` do not resize (the client's resize messages do).
//! - Memory is counted where it can grow large (processes, variables, command
//!   substitutions), not measured: programs that buffer their input (`sort`, `tac`) are
//!   bounded by their own caps only.
//! - A pod's network is one loopback plus what its [`Cluster`] reaches: TCP only (no UDP, no
//!   DNS server, names resolved in process), no socket options; without a cluster other
//!   addresses are unreachable (`nc 10.0.0.1 80`).

mod exec;
pub mod fs;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod io;
pub mod net;
pub mod process;
pub mod random;
pub mod shell;
pub mod tty;

// The public interface is:
pub use exec::{ExecIo, ExecSpec, ExitStatus, exec, exec_session};
pub use fs::{FsError, PodFs, StorageBudget, Volume};
pub use io::{CHUNK, Input, Output, Stdio, WriteError};
pub use net::{Cluster, Connection, Listener, NetError, PodNetwork};
pub use process::{
    DEFAULT_PATH, DEFAULT_PROCESS_LIMIT, DEFAULT_STEP_LIMIT, Limits, PROCESS_MEMORY, Process,
    ProcessInfo, ProcessTable, Programs, STEP_LIMIT_STATUS, Signal, SignalError, Verdict,
};
pub use tty::WindowSize;
