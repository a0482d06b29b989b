//! What a container's processes may take together, as its cgroup lets them ([`Limits`]: a
//! process count, as `pids.max`, and memory, as `memory.max`; and the CPU one shell may take,
//! as `RLIMIT_CPU`, counted in steps), and how a process learns it went past them
//! ([`ForkError`], [`Verdict`]).
//!
//! Memory is counted, not measured: each process costs [`PROCESS_MEMORY`], and a shell charges
//! what its variables and command substitutions hold. A charge past the limit kills the
//! process that made it with `SIGKILL` (exit 137), as the kernel's OOM killer would, and the
//! table remembers it so the kubelet can report the container `OOMKilled`. A fork past the
//! process limit fails with EAGAIN and kills the whole process tree it was made in (what
//! started from one exec, or the container's main process): a fork bomb stops there, and its
//! memory goes back at once.

/// What each process costs against the memory limit (its stack, task and shell state).
pub const PROCESS_MEMORY: u64 = 64 * 1024;

/// Processes a container may run at once when its pod says nothing else.
pub const DEFAULT_PROCESS_LIMIT: usize = 1024;

/// Steps one shell may take when nothing says otherwise: ten million commands, minutes of a
/// busy loop, far more than a real script runs (a loop over a million lines takes a few
/// million).
pub const DEFAULT_STEP_LIMIT: u64 = 10_000_000;

/// The exit status of a shell past its step limit: 128 + `SIGXCPU`, as a process past its
/// CPU time limit (`RLIMIT_CPU`) ends.
pub const STEP_LIMIT_STATUS: i32 = 128 + 24;

/// A container's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes running at once (`pids.max`); a fork past it fails with EAGAIN.
    pub processes: usize,
    /// Bytes of memory (`memory.max`, from the container's `resources.limits.memory`); `None`
    /// for no limit.
    pub memory: Option<u64>,
    /// Steps (commands run: simple, compound and function definitions) one shell process may
    /// take together with its subshells and background jobs; past it the shell stops with
    /// [`STEP_LIMIT_STATUS`] and says why on its stderr. A shell it starts as a program (`sh
    /// -c`) has steps of its own. This bounds the CPU an endless loop can take.
    pub steps: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            processes: DEFAULT_PROCESS_LIMIT,
            memory: None,
            steps: DEFAULT_STEP_LIMIT,
        }
    }
}

/// Why a process could not be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ForkError {
    /// The container runs as many processes as it may (EAGAIN).
    #[error("Resource temporarily unavailable")]
    ProcessLimit,
    /// The new process's memory would pass the container's limit (ENOMEM); the process that
    /// forked was killed for it.
    #[error("Cannot allocate memory")]
    OutOfMemory,
}

/// Why the container's limits killed a process tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A fork in it went past the process limit.
    ProcessLimit,
    /// A process in it went past the memory limit.
    OutOfMemory,
}
