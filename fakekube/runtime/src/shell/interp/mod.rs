//! The interpreter: runs a parsed program against a [`Shell`]'s state.
//!
//! Pipelines run their stages concurrently in the same task (so dropping the future kills them
//! all); only background jobs (`&`) are spawned, each with a child cancellation token.
//!
//! The state and the shell's variables and parameters are here; running it is split by concern,
//! each file an `impl Shell` block:
//!
//! - [`control`]: lists, `&&`/`||`, pipelines, background jobs, compound commands and loops;
//! - [`command`]: simple commands: lookup order, functions and starting programs;
//! - [`redirect`]: `<`, `>`, `>>`, `<<` and `n>&m` redirections;
//! - [`expand`]: word expansion (parameters, command substitution, arithmetic) and
//!   [`fields`]: field splitting and globbing;
//! - [`builtins`]: the shell builtins;
//! - [`script`]: scripts read from a stream, each command run as soon as it is complete.

mod builtins;
mod command;
mod control;
mod expand;
mod fields;
mod redirect;
mod script;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ast::Command;
use super::parser;
use crate::fs::PodFs;
use crate::io::Stdio;
use crate::net::PodNetwork;
use crate::process::{BoxFuture, Process, ProcessTable, Programs, STEP_LIMIT_STATUS, Signal};

/// Longest value a single word may expand to; beyond it the expansion fails (memory bound).
const MAX_WORD: usize = 16 * 1024 * 1024;
/// Longest script `sh` reads from a file or stdin.
pub(crate) const MAX_SCRIPT: usize = 16 * 1024 * 1024;
/// Default field separators.
const DEFAULT_IFS: &str = " \t\n";

/// The names of every shell builtin, special or regular (for the programs' manual).
pub fn builtin_names() -> Vec<String> {
    builtins::SPECIAL_BUILTINS
        .iter()
        .chain(builtins::REGULAR_BUILTINS)
        .map(|s| s.to_string())
        .collect()
}

/// Non-local control flow, carried in the error side of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// `exit n` (or a fatal error): leave the shell.
    Exit(i32),
    /// `return n`: leave the function or dot script.
    Return(i32),
    /// `break n`.
    Break(usize),
    /// `continue n`.
    Continue(usize),
}

/// The result of running something: a status, or control flow.
type Res = Result<i32, Flow>;

/// A shell variable.
#[derive(Debug, Clone)]
struct Var {
    /// Value.
    value: String,
    /// Passed to commands' environments.
    exported: bool,
}

/// Shell options (`set -e` …).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Opts {
    /// `-e`: exit when a command fails outside a condition.
    pub(crate) errexit: bool,
    /// `-u`: expanding an unset variable is an error.
    pub(crate) nounset: bool,
    /// `-x`: trace commands on stderr.
    pub(crate) xtrace: bool,
    /// `-o pipefail`: a pipeline fails if any stage fails.
    pub(crate) pipefail: bool,
}

/// A background job.
#[derive(Debug)]
struct Job {
    /// Its fake pid (`$!`).
    pid: u32,
    /// The task.
    handle: JoinHandle<i32>,
}

/// The steps a shell may take ([`Limits::steps`](crate::process::Limits::steps)): a budget
/// its subshells and background jobs draw from too.
#[derive(Debug, Clone)]
struct Steps {
    /// The limit, for the message.
    limit: u64,
    /// Steps left.
    left: Arc<AtomicU64>,
}

impl Steps {
    /// A budget of `limit` steps.
    fn new(limit: u64) -> Self {
        Steps {
            limit,
            left: Arc::new(AtomicU64::new(limit)),
        }
    }

    /// Takes one step; `false` once the budget is spent.
    fn take(&self) -> bool {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// Trap actions by condition, sorted by name. A shell traps one or two conditions, if any: a
/// short vector, not a map whose first node has room for eleven.
#[derive(Debug, Default)]
struct Traps(Vec<(String, String)>);

impl Traps {
    /// The action of a condition.
    fn get(&self, name: &str) -> Option<&String> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// Sets the action of a condition.
    fn insert(&mut self, name: String, action: String) {
        match self.0.binary_search_by(|(k, _)| k.as_str().cmp(&name)) {
            Ok(i) => self.0[i].1 = action,
            Err(i) => self.0.insert(i, (name, action)),
        }
    }

    /// Forgets the action of a condition, returning it.
    fn remove(&mut self, name: &str) -> Option<String> {
        let i = self.0.iter().position(|(k, _)| k == name)?;
        Some(self.0.remove(i).1)
    }

    /// The conditions and their actions, by name.
    fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

/// Interpreter state.
#[derive(Debug)]
pub(crate) struct Shell {
    /// Variables, shared with the subshells and jobs made from this shell until one of them
    /// sets one ([`Shell::vars_mut`]).
    vars: Arc<HashMap<String, Var>>,
    /// `$0`.
    arg0: String,
    /// `$1`…
    params: Vec<String>,
    /// Working directory.
    cwd: String,
    /// `$?`.
    status: i32,
    /// Functions.
    functions: HashMap<String, Arc<Command>>,
    /// Trap actions by condition (`EXIT`, `TERM`…).
    traps: Traps,
    /// Trapped signals that arrived (once a trap is set).
    signals: Option<mpsc::UnboundedReceiver<Signal>>,
    /// The sending side of `signals`, given to the process table.
    signals_tx: Option<mpsc::UnboundedSender<Signal>>,
    /// Options.
    opts: Opts,
    /// Current streams.
    io: Stdio,
    /// Background jobs.
    jobs: Vec<Job>,
    /// `$!`.
    last_bg: Option<u32>,
    /// `$$`: the pid of the shell that was started (subshells keep it).
    shell_pid: u32,
    /// The pid of the process running this shell state (a background job's own).
    pid: u32,
    /// The container's process table.
    processes: ProcessTable,
    /// Filesystem.
    fs: PodFs,
    /// Programs.
    programs: Programs,
    /// The pod's network, for the programs it starts.
    network: PodNetwork,
    /// Kills this shell.
    cancel: CancellationToken,
    /// Nesting, against [`MAX_NESTING`](crate::process::MAX_NESTING).
    depth: usize,
    /// Steps this shell may still take, shared with its subshells and background jobs.
    steps: Steps,
    /// >0 while running a condition (`if`, `while`, `&&` left side, `!`): `set -e` does not fire.
    in_condition: usize,
    /// Status of the last command substitution (for a command with no words).
    subst_status: Option<i32>,
    /// >0 inside a loop (`break`/`continue` allowed).
    loops: usize,
    /// This shell is a background job's subshell whose only command is a simple one: that
    /// command takes the shell's streams, as the forked shell that dash execs it from does, so
    /// nothing the redirections replaced stays open (a job `cmd >/dev/null &` does not hold
    /// the exec's stdout).
    execs_last: bool,
}

impl Shell {
    /// A shell for the process `proc`: variables from its environment (all exported).
    pub fn new(proc: Process, arg0: String, params: Vec<String>, opts: Opts) -> Self {
        let mut vars = HashMap::new();
        for (k, v) in proc.env {
            vars.insert(
                k,
                Var {
                    value: v,
                    exported: true,
                },
            );
        }
        let steps = Steps::new(proc.processes.limits().steps);
        Shell {
            vars: Arc::new(vars),
            arg0,
            params,
            cwd: proc.cwd,
            status: 0,
            functions: HashMap::new(),
            traps: Traps::default(),
            signals: None,
            signals_tx: None,
            opts,
            io: Stdio {
                stdin: proc.stdin,
                stdout: proc.stdout,
                stderr: proc.stderr,
            },
            jobs: Vec::new(),
            last_bg: None,
            shell_pid: proc.pid,
            pid: proc.pid,
            processes: proc.processes,
            fs: proc.fs,
            programs: proc.programs,
            network: proc.network,
            steps,
            cancel: proc.cancel,
            depth: proc.depth,
            in_condition: 0,
            subst_status: None,
            loops: 0,
            execs_last: false,
        }
    }

    /// A copy for a subshell: same variables, functions and streams; no jobs or traps.
    fn subshell(&self) -> Shell {
        Shell {
            vars: self.vars.clone(),
            arg0: self.arg0.clone(),
            params: self.params.clone(),
            cwd: self.cwd.clone(),
            status: self.status,
            functions: self.functions.clone(),
            traps: Traps::default(),
            signals: None,
            signals_tx: None,
            opts: self.opts,
            io: self.io.clone(),
            jobs: Vec::new(),
            last_bg: self.last_bg,
            shell_pid: self.shell_pid,
            pid: self.pid,
            processes: self.processes.clone(),
            fs: self.fs.clone(),
            programs: self.programs.clone(),
            network: self.network.clone(),
            cancel: self.cancel.clone(),
            steps: self.steps.clone(),
            depth: self.depth + 1,
            in_condition: self.in_condition,
            subst_status: None,
            loops: 0,
            execs_last: false,
        }
    }

    /// Runs a whole script, then the EXIT trap; returns the exit status (0–255).
    pub(crate) fn run_script<'a>(&'a mut self, src: &'a str) -> BoxFuture<'a, i32> {
        Box::pin(async move {
            let r = self.run_source(src).await;
            let status = self.settle(r);
            self.finish(status).await
        })
    }

    /// Turns a result into a status.
    fn settle(&mut self, r: Res) -> i32 {
        match r {
            Ok(s) | Err(Flow::Exit(s)) | Err(Flow::Return(s)) => s,
            Err(Flow::Break(_) | Flow::Continue(_)) => self.status,
        }
    }

    /// Runs the EXIT trap (once) and returns the final status.
    fn finish<'a>(&'a mut self, status: i32) -> BoxFuture<'a, i32> {
        Box::pin(async move {
            self.status = status;
            let mut status = status;
            if let Some(action) = self.traps.remove("EXIT").filter(|a| !a.is_empty())
                && let Err(Flow::Exit(s)) = self.run_source(&action).await
            {
                status = s;
            }
            status & 0xff
        })
    }

    /// Parses and runs program text in this shell; a syntax error exits with 2.
    fn run_source<'a>(&'a mut self, src: &'a str) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            match parser::parse_shared(src) {
                Ok(list) => self.run_list(&list).await,
                Err(e) => {
                    self.error(&e.to_string()).await;
                    Err(Flow::Exit(2))
                }
            }
        })
    }

    /// Takes a step of the budget; past it, says so and exits the shell (and each of its
    /// subshells and jobs, at their next step) with [`STEP_LIMIT_STATUS`].
    async fn step(&self) -> Result<(), Flow> {
        if self.steps.take() {
            return Ok(());
        }
        self.error(&format!(
            "CPU time limit exceeded ({} steps)",
            self.steps.limit
        ))
        .await;
        Err(Flow::Exit(STEP_LIMIT_STATUS))
    }

    /// Prints `$0: message` on the shell's stderr. Boxed: a write's future inline would grow
    /// the future of every command that may fail, for as long as it runs.
    fn error<'a>(&'a self, msg: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self
                .io
                .stderr
                .write_str(&format!("{}: {msg}\n", self.arg0))
                .await;
        })
    }

    /// Prints on the shell's stdout. Boxed, like [`Shell::error`]: the builtins that print
    /// share one dispatching future with `wait`, which a keep-alive loop sits in.
    fn print<'a>(&'a self, text: &'a str) -> BoxFuture<'a, i32> {
        Box::pin(async move {
            match self.io.stdout.write_str(text).await {
                Ok(()) => 0,
                Err(_) => 1,
            }
        })
    }

    /// A variable's value.
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).map(|v| v.value.clone())
    }

    /// The variables, to change: this shell's own copy from now on.
    fn vars_mut(&mut self) -> &mut HashMap<String, Var> {
        Arc::make_mut(&mut self.vars)
    }

    /// Sets a variable, keeping its export flag.
    fn set_var(&mut self, name: &str, value: String) {
        // What variables hold counts against the container's memory limit; past it the shell
        // is killed (it notices at its next await).
        let old = self.vars.get(name).map_or(0, |v| v.value.len());
        if value.len() > old {
            let _ = self.processes.charge(self.pid, (value.len() - old) as u64);
        } else {
            self.processes
                .uncharge(self.pid, (old - value.len()) as u64);
        }
        match self.vars_mut().get_mut(name) {
            Some(v) => v.value = value,
            None => {
                self.vars_mut().insert(
                    name.to_string(),
                    Var {
                        value,
                        exported: false,
                    },
                );
            }
        }
    }

    /// The value of a parameter (`$name`, `$1`, `$#`…), `None` when unset.
    fn param(&self, name: &str) -> Option<String> {
        match name {
            "@" | "*" => Some(self.params.join(" ")),
            "#" => Some(self.params.len().to_string()),
            "?" => Some(self.status.to_string()),
            "$" => Some(self.shell_pid.to_string()),
            "!" => self.last_bg.map(|p| p.to_string()),
            "-" => {
                let mut s = String::new();
                if self.opts.errexit {
                    s.push('e');
                }
                if self.opts.nounset {
                    s.push('u');
                }
                if self.opts.xtrace {
                    s.push('x');
                }
                Some(s)
            }
            "0" => Some(self.arg0.clone()),
            n if n.bytes().all(|b| b.is_ascii_digit()) => n
                .parse::<usize>()
                .ok()
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| self.params.get(i).cloned()),
            n => self.var(n),
        }
    }

    /// The field separators.
    fn ifs(&self) -> String {
        self.var("IFS").unwrap_or_else(|| DEFAULT_IFS.to_string())
    }
}
