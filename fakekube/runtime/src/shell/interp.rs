//! The interpreter: runs a parsed program against a [`Shell`] state.
//!
//! Pipelines run their stages concurrently in the same task (so dropping the future kills them
//! all); only background jobs (`&`) are spawned, each with a child cancellation token.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use futures_util::future::join_all;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::arith::{self, Vars};
use super::ast::{
    AndOr, Command, Compound, Connector, Item, List, Param, ParamOp, Part, Pipeline, RedirOp,
    Redirect, SimpleCommand, Word,
};
use super::parser::{self, is_name};
use super::pattern::{Pattern, has_wildcards};
use crate::fs::{self as vfs, FsError, NodeKind, PodFs};
use crate::io::{Input, Output, Stdio, pipe};
use crate::process::{
    BoxFuture, DEFAULT_PATH, MAX_NESTING, PROGRAM_NESTING, Process, Programs, SpawnError, resolve,
};

/// Longest value a single word may expand to; beyond it the expansion fails (memory bound).
const MAX_WORD: usize = 16 * 1024 * 1024;
/// Longest script `sh` reads from a file or stdin.
pub(crate) const MAX_SCRIPT: usize = 16 * 1024 * 1024;
/// Default field separators.
const DEFAULT_IFS: &str = " \t\n";

/// Fake process ids handed out to shells and background jobs.
static NEXT_PID: AtomicU32 = AtomicU32::new(100);

/// A fresh fake process id.
pub(crate) fn next_pid() -> u32 {
    NEXT_PID.fetch_add(1, Ordering::Relaxed)
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
    /// Cancels it (`kill`).
    token: CancellationToken,
}

/// Interpreter state.
#[derive(Debug)]
pub(crate) struct Shell {
    /// Variables.
    vars: HashMap<String, Var>,
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
    traps: BTreeMap<String, String>,
    /// Options.
    opts: Opts,
    /// Current streams.
    io: Stdio,
    /// Background jobs.
    jobs: Vec<Job>,
    /// `$!`.
    last_bg: Option<u32>,
    /// `$$`.
    pid: u32,
    /// Filesystem.
    fs: PodFs,
    /// Programs.
    programs: Programs,
    /// Kills this shell.
    cancel: CancellationToken,
    /// Nesting, against [`MAX_NESTING`].
    depth: usize,
    /// >0 while running a condition (`if`, `while`, `&&` left side, `!`): `set -e` does not fire.
    in_condition: usize,
    /// Status of the last command substitution (for a command with no words).
    subst_status: Option<i32>,
    /// >0 inside a loop (`break`/`continue` allowed).
    loops: usize,
}

/// Names of the special built-ins, which are found before functions.
const SPECIAL_BUILTINS: &[&str] = &[
    ":", ".", "break", "continue", "eval", "exec", "exit", "export", "readonly", "return", "set",
    "shift", "trap", "unset",
];
/// Names of the regular built-ins run inside the shell.
const REGULAR_BUILTINS: &[&str] = &[
    "cd", "pwd", "read", "wait", "umask", "command", "type", "kill", "true", "false", "local",
    "source",
];
/// Shell builtins that run the program of the same name without a PATH search (dash has them
/// built in; here the program table implements them).
const PROGRAM_BUILTINS: &[&str] = &["echo", "printf", "test", "["];

impl Shell {
    /// A shell for the process `proc`: variables from its environment (all exported).
    pub(crate) fn new(proc: Process, arg0: String, params: Vec<String>, opts: Opts) -> Self {
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
        Shell {
            vars,
            arg0,
            params,
            cwd: proc.cwd,
            status: 0,
            functions: HashMap::new(),
            traps: BTreeMap::new(),
            opts,
            io: Stdio {
                stdin: proc.stdin,
                stdout: proc.stdout,
                stderr: proc.stderr,
            },
            jobs: Vec::new(),
            last_bg: None,
            pid: next_pid(),
            fs: proc.fs,
            programs: proc.programs,
            cancel: proc.cancel,
            depth: proc.depth,
            in_condition: 0,
            subst_status: None,
            loops: 0,
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
            traps: BTreeMap::new(),
            opts: self.opts,
            io: self.io.clone(),
            jobs: Vec::new(),
            last_bg: self.last_bg,
            pid: self.pid,
            fs: self.fs.clone(),
            programs: self.programs.clone(),
            cancel: self.cancel.clone(),
            depth: self.depth + 1,
            in_condition: self.in_condition,
            subst_status: None,
            loops: 0,
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
            match parser::parse(src) {
                Ok(list) => self.run_list(&list).await,
                Err(e) => {
                    self.error(&e.to_string()).await;
                    Err(Flow::Exit(2))
                }
            }
        })
    }

    /// Prints `$0: message` on the shell's stderr.
    async fn error(&self, msg: &str) {
        let _ = self
            .io
            .stderr
            .write_str(&format!("{}: {msg}\n", self.arg0))
            .await;
    }

    /// Prints on the shell's stdout.
    async fn print(&self, text: &str) -> i32 {
        match self.io.stdout.write_str(text).await {
            Ok(()) => 0,
            Err(_) => 1,
        }
    }

    // ----- lists and commands -----

    /// Runs a list.
    fn run_list<'a>(&'a mut self, list: &'a List) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let mut status = 0;
            for item in &list.items {
                status = self.run_item(item).await?;
                self.status = status;
            }
            Ok(status)
        })
    }

    /// Runs one item of a list, in the background if it ends with `&`.
    fn run_item<'a>(&'a mut self, item: &'a Item) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if !item.background {
                return self.run_and_or(&item.and_or).await;
            }
            let mut sub = self.subshell();
            sub.io.stdin = Input::empty();
            let token = self.cancel.child_token();
            sub.cancel = token.clone();
            let and_or = item.and_or.clone();
            let job_token = token.clone();
            let handle = tokio::spawn(async move {
                tokio::select! {
                    _ = job_token.cancelled() => 143,
                    s = async {
                        let r = sub.run_and_or(&and_or).await;
                        let s = sub.settle(r);
                        sub.finish(s).await
                    } => s,
                }
            });
            let pid = next_pid();
            self.jobs
                .retain(|j| !j.handle.is_finished() || Some(j.pid) == self.last_bg);
            self.jobs.push(Job { pid, handle, token });
            self.last_bg = Some(pid);
            Ok(0)
        })
    }

    /// Runs pipelines joined by `&&` and `||`; all but the last run as conditions.
    fn run_and_or<'a>(&'a mut self, ao: &'a AndOr) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let mut status = self.run_pipeline_in(&ao.first, !ao.rest.is_empty()).await?;
            for (i, (conn, pipeline)) in ao.rest.iter().enumerate() {
                self.status = status;
                let run = match conn {
                    Connector::And => status == 0,
                    Connector::Or => status != 0,
                };
                if run {
                    status = self
                        .run_pipeline_in(pipeline, i + 1 < ao.rest.len())
                        .await?;
                }
            }
            Ok(status)
        })
    }

    /// Runs a pipeline, as a condition (where `set -e` does not apply) when `condition` is set.
    fn run_pipeline_in<'a>(&'a mut self, p: &'a Pipeline, condition: bool) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if condition {
                self.in_condition += 1;
            }
            let r = self.run_pipeline(p).await;
            if condition {
                self.in_condition = self.in_condition.saturating_sub(1);
            }
            r
        })
    }

    /// Runs a pipeline: one command in this shell, several concurrently in subshells.
    fn run_pipeline<'a>(&'a mut self, p: &'a Pipeline) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let status = if p.commands.len() == 1 {
                if p.negated {
                    self.in_condition += 1;
                }
                let r = self.run_command(&p.commands[0]).await;
                if p.negated {
                    self.in_condition = self.in_condition.saturating_sub(1);
                }
                r?
            } else {
                let n = p.commands.len();
                let mut stages: Vec<BoxFuture<'a, i32>> = Vec::with_capacity(n);
                let mut next_stdin = Some(self.io.stdin.clone());
                for (i, cmd) in p.commands.iter().enumerate() {
                    let (stdout, following) = if i + 1 == n {
                        (self.io.stdout.clone(), None)
                    } else {
                        let (out, input) = pipe();
                        (out, Some(input))
                    };
                    let mut sub = self.subshell();
                    sub.io = Stdio {
                        stdin: next_stdin.take().unwrap_or_else(Input::empty),
                        stdout,
                        stderr: self.io.stderr.clone(),
                    };
                    next_stdin = following;
                    stages.push(Box::pin(async move {
                        let r = sub.run_command(cmd).await;
                        sub.settle(r)
                    }));
                }
                let statuses = join_all(stages).await;
                let last = statuses.last().copied().unwrap_or(0);
                if self.opts.pipefail {
                    statuses
                        .iter()
                        .rev()
                        .copied()
                        .find(|s| *s != 0)
                        .unwrap_or(0)
                } else {
                    last
                }
            };
            let status = if p.negated {
                i32::from(status == 0)
            } else {
                status
            };
            self.status = status;
            if self.opts.errexit && self.in_condition == 0 && !p.negated && status != 0 {
                return Err(Flow::Exit(status));
            }
            Ok(status)
        })
    }

    /// Runs one command.
    fn run_command<'a>(&'a mut self, cmd: &'a Command) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            tokio::task::consume_budget().await;
            match cmd {
                Command::Simple(sc) => self.run_simple(sc).await,
                Command::FunctionDef(name, body) => {
                    self.functions
                        .insert(name.clone(), Arc::new((**body).clone()));
                    Ok(0)
                }
                Command::Compound(compound, redirects) => {
                    if self.depth >= MAX_NESTING {
                        self.error("nesting too deep").await;
                        return Err(Flow::Exit(2));
                    }
                    let io = match self.redirect(redirects).await? {
                        Ok(io) => io,
                        Err(status) => return Ok(status),
                    };
                    let saved = std::mem::replace(&mut self.io, io);
                    self.depth += 1;
                    let r = self.run_compound(compound).await;
                    self.depth -= 1;
                    self.io = saved;
                    r
                }
            }
        })
    }

    /// Runs a compound command.
    fn run_compound<'a>(&'a mut self, c: &'a Compound) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            match c {
                Compound::Brace(list) => self.run_list(list).await,
                Compound::Subshell(list) => {
                    let mut sub = self.subshell();
                    let r = sub.run_list(list).await;
                    let s = sub.settle(r);
                    Ok(sub.finish(s).await)
                }
                Compound::If(branches, otherwise) => {
                    for (cond, body) in branches {
                        if self.condition(cond).await? == 0 {
                            return self.run_list(body).await;
                        }
                    }
                    match otherwise {
                        Some(body) => self.run_list(body).await,
                        None => Ok(0),
                    }
                }
                Compound::Loop { cond, body, until } => {
                    let mut status = 0;
                    self.loops += 1;
                    let r = loop {
                        let c = match self.condition(cond).await {
                            Ok(c) => c,
                            Err(f) => break Err(f),
                        };
                        if (c == 0) == *until {
                            break Ok(status);
                        }
                        match self.run_list(body).await {
                            Ok(s) => status = s,
                            Err(Flow::Break(n)) if n > 1 => break Err(Flow::Break(n - 1)),
                            Err(Flow::Break(_)) => break Ok(status),
                            Err(Flow::Continue(n)) if n > 1 => break Err(Flow::Continue(n - 1)),
                            Err(Flow::Continue(_)) => {}
                            Err(f) => break Err(f),
                        }
                    };
                    self.loops -= 1;
                    r
                }
                Compound::For { var, words, body } => {
                    let items = match words {
                        Some(words) => self.expand_words(words).await?,
                        None => self.params.clone(),
                    };
                    let mut status = 0;
                    self.loops += 1;
                    let mut r = Ok(0);
                    for item in items {
                        self.set_var(var, item);
                        match self.run_list(body).await {
                            Ok(s) => status = s,
                            Err(Flow::Break(n)) if n > 1 => {
                                r = Err(Flow::Break(n - 1));
                                break;
                            }
                            Err(Flow::Break(_)) => break,
                            Err(Flow::Continue(n)) if n > 1 => {
                                r = Err(Flow::Continue(n - 1));
                                break;
                            }
                            Err(Flow::Continue(_)) => {}
                            Err(f) => {
                                r = Err(f);
                                break;
                            }
                        }
                    }
                    self.loops -= 1;
                    r.map(|_| status)
                }
                Compound::Case(word, arms) => {
                    let value: Vec<char> = self.expand_scalar(word).await?.chars().collect();
                    for (patterns, body) in arms {
                        for pat in patterns {
                            let chars = self.expand_pattern(pat).await?;
                            if Pattern::new(&chars).matches(&value) {
                                return self.run_list(body).await;
                            }
                        }
                    }
                    Ok(0)
                }
            }
        })
    }

    /// Runs a condition list with `set -e` suspended.
    fn condition<'a>(&'a mut self, list: &'a List) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            self.in_condition += 1;
            let r = self.run_list(list).await;
            self.in_condition = self.in_condition.saturating_sub(1);
            r
        })
    }

    /// Runs a simple command.
    fn run_simple<'a>(&'a mut self, sc: &'a SimpleCommand) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            self.subst_status = None;
            let argv = self.expand_words(&sc.words).await?;
            let mut assigns = Vec::with_capacity(sc.assigns.len());
            for (name, w) in &sc.assigns {
                assigns.push((name.clone(), self.expand_scalar(w).await?));
            }
            if self.opts.xtrace {
                let mut line: Vec<String> =
                    assigns.iter().map(|(k, v)| format!("{k}={v}")).collect();
                line.extend(argv.iter().cloned());
                let _ = self
                    .io
                    .stderr
                    .write_str(&format!("+ {}\n", line.join(" ")))
                    .await;
            }
            let io = match self.redirect(&sc.redirects).await? {
                Ok(io) => io,
                Err(status) => return Ok(status),
            };
            if argv.is_empty() {
                for (name, value) in assigns {
                    self.set_var(&name, value);
                }
                return Ok(self.subst_status.unwrap_or(0));
            }
            self.dispatch(argv, assigns, io).await
        })
    }

    /// Finds and runs a command: special built-in, function, registered program, built-in,
    /// then a PATH search.
    fn dispatch<'a>(
        &'a mut self,
        argv: Vec<String>,
        assigns: Vec<(String, String)>,
        io: Stdio,
    ) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let name = argv[0].as_str();
            if SPECIAL_BUILTINS.contains(&name) {
                for (k, v) in assigns {
                    self.set_var(&k, v);
                }
                if name == "exec" {
                    return self.exec_builtin(argv, io).await;
                }
                let saved = std::mem::replace(&mut self.io, io);
                let r = self.builtin(&argv).await;
                self.io = saved;
                return r;
            }
            if let Some(body) = self.functions.get(name).cloned() {
                return self.call_function(body, argv, assigns, io).await;
            }
            if self.programs.registered(name).is_none() && REGULAR_BUILTINS.contains(&name) {
                let saved_vars = self.overlay(&assigns);
                let saved = std::mem::replace(&mut self.io, io);
                let r = self.builtin(&argv).await;
                self.io = saved;
                self.restore(saved_vars);
                return r;
            }
            Ok(self.external(argv, assigns, io).await)
        })
    }

    /// Sets temporary assignments, returning what to restore.
    fn overlay(&mut self, assigns: &[(String, String)]) -> Vec<(String, Option<Var>)> {
        let mut saved = Vec::new();
        for (k, v) in assigns {
            let old = self.vars.get(k).cloned();
            let exported = old.as_ref().is_some_and(|o| o.exported);
            self.vars.insert(
                k.clone(),
                Var {
                    value: v.clone(),
                    exported,
                },
            );
            saved.push((k.clone(), old));
        }
        saved
    }

    /// Undoes [`Shell::overlay`].
    fn restore(&mut self, saved: Vec<(String, Option<Var>)>) {
        for (k, old) in saved.into_iter().rev() {
            match old {
                Some(v) => self.vars.insert(k, v),
                None => self.vars.remove(&k),
            };
        }
    }

    /// Calls a shell function.
    fn call_function<'a>(
        &'a mut self,
        body: Arc<Command>,
        argv: Vec<String>,
        assigns: Vec<(String, String)>,
        io: Stdio,
    ) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if self.depth >= MAX_NESTING {
                self.error(&format!("{}: nesting too deep", argv[0])).await;
                return Err(Flow::Exit(2));
            }
            let saved_vars = self.overlay(&assigns);
            let saved_params =
                std::mem::replace(&mut self.params, argv.into_iter().skip(1).collect());
            let saved_io = std::mem::replace(&mut self.io, io);
            let saved_loops = std::mem::replace(&mut self.loops, 0);
            self.depth += 1;
            let r = self.run_command(&body).await;
            self.depth -= 1;
            self.loops = saved_loops;
            self.io = saved_io;
            self.params = saved_params;
            self.restore(saved_vars);
            match r {
                Err(Flow::Return(s)) => Ok(s),
                other => other,
            }
        })
    }

    /// The environment for a program: exported variables plus temporary assignments.
    fn environment(&self, assigns: &[(String, String)]) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> = self
            .vars
            .iter()
            .filter(|(_, v)| v.exported)
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect();
        for (k, v) in assigns {
            env.insert(k.clone(), v.clone());
        }
        env.into_iter().collect()
    }

    /// Runs a program (registered, `/bin` entry, script) and returns its status.
    fn external<'a>(
        &'a mut self,
        argv: Vec<String>,
        assigns: Vec<(String, String)>,
        io: Stdio,
    ) -> BoxFuture<'a, i32> {
        Box::pin(async move {
            let name = argv[0].clone();
            let found = if !name.contains('/')
                && PROGRAM_BUILTINS.contains(&name.as_str())
                && let Some(h) = self.programs.find(&name)
            {
                Ok((h, argv))
            } else {
                let path = self.var("PATH").unwrap_or_else(|| DEFAULT_PATH.to_string());
                resolve(
                    &name,
                    argv,
                    &path,
                    &self.cwd,
                    &self.fs,
                    &self.programs,
                    true,
                )
            };
            match found {
                Ok((handler, argv)) => {
                    if self.depth >= MAX_NESTING {
                        let _ = io
                            .stderr
                            .write_str(&format!("{}: {name}: nesting too deep\n", self.arg0))
                            .await;
                        return 126;
                    }
                    let mut proc = Process::new(
                        argv,
                        self.environment(&assigns),
                        self.cwd.clone(),
                        self.fs.clone(),
                        self.programs.clone(),
                        io,
                        self.cancel.clone(),
                    );
                    proc.depth = self.depth + PROGRAM_NESTING;
                    handler(proc).await & 0xff
                }
                Err(e) => {
                    let msg = match e {
                        SpawnError::NotFound => "not found".to_string(),
                        SpawnError::Fs(e) => e.to_string(),
                        _ => "Permission denied".to_string(),
                    };
                    let _ = io
                        .stderr
                        .write_str(&format!("{}: {name}: {msg}\n", self.arg0))
                        .await;
                    e.exit_code()
                }
            }
        })
    }

    // ----- redirections -----

    /// Applies redirections to a copy of the current streams. `Ok(Err(status))`: a redirection
    /// failed (message printed).
    fn redirect<'a>(
        &'a mut self,
        redirects: &'a [Redirect],
    ) -> BoxFuture<'a, Result<Result<Stdio, i32>, Flow>> {
        Box::pin(async move {
            let mut io = self.io.clone();
            for r in redirects {
                let target = self.expand_scalar(&r.target).await?;
                if let Err(msg) = self.apply_redirect(r, &target, &mut io) {
                    let _ = self
                        .io
                        .stderr
                        .write_str(&format!("{}: {msg}\n", self.arg0))
                        .await;
                    return Ok(Err(2));
                }
            }
            Ok(Ok(io))
        })
    }

    /// Applies one redirection whose target is expanded; `Err` holds the message.
    fn apply_redirect(&self, r: &Redirect, target: &str, io: &mut Stdio) -> Result<(), String> {
        let set_out = |io: &mut Stdio, fd: u32, out: Output| match fd {
            1 => io.stdout = out,
            2 => io.stderr = out,
            _ => {}
        };
        let path = vfs::join(&self.cwd, target);
        match r.op {
            RedirOp::HereDoc { .. } => {
                if r.fd == 0 {
                    io.stdin = Input::bytes(Bytes::from(target.to_string()));
                }
            }
            RedirOp::Read | RedirOp::ReadWrite => {
                if r.op == RedirOp::ReadWrite && !self.fs.exists(&path) {
                    self.fs
                        .open_write(&path, false)
                        .map_err(|e| format!("cannot create {target}: {e}"))?;
                }
                let input = Input::open(&self.fs, &path)
                    .map_err(|e| format!("cannot open {target}: {e}"))?;
                if r.fd == 0 {
                    io.stdin = input;
                }
            }
            RedirOp::Write | RedirOp::Append => {
                let out =
                    Output::open(&self.fs, &path, r.op == RedirOp::Append).map_err(
                        |e| match e {
                            FsError::NotFound => {
                                format!("cannot create {target}: Directory nonexistent")
                            }
                            e => format!("cannot create {target}: {e}"),
                        },
                    )?;
                set_out(io, r.fd, out);
            }
            RedirOp::DupOut | RedirOp::DupIn => {
                let source = match target {
                    "-" => None,
                    t => match t.parse::<u32>() {
                        Ok(n) if n <= 2 => Some(n),
                        _ => return Err(format!("{t}: Bad file descriptor")),
                    },
                };
                match (r.fd, source) {
                    (0, None) => io.stdin = Input::empty(),
                    (0, Some(_)) => {}
                    (fd, None) => set_out(io, fd, Output::null()),
                    (fd, Some(src)) => {
                        let out = match src {
                            1 => io.stdout.clone(),
                            2 => io.stderr.clone(),
                            _ => return Err(format!("{target}: Bad file descriptor")),
                        };
                        set_out(io, fd, out);
                    }
                }
            }
        }
        Ok(())
    }

    // ----- variables -----

    /// A variable's value.
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).map(|v| v.value.clone())
    }

    /// Sets a variable, keeping its export flag.
    fn set_var(&mut self, name: &str, value: String) {
        match self.vars.get_mut(name) {
            Some(v) => v.value = value,
            None => {
                self.vars.insert(
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
            "$" => Some(self.pid.to_string()),
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

    // ----- expansion -----

    /// Expands words into fields (splitting and pathname expansion included).
    fn expand_words<'a>(
        &'a mut self,
        words: &'a [Word],
    ) -> BoxFuture<'a, Result<Vec<String>, Flow>> {
        Box::pin(async move {
            let mut out = Vec::new();
            for w in words {
                let mut f = Fields::new(Some(self.ifs()));
                self.expand_parts(&w.0, &mut f, false, true).await?;
                for field in f.finish() {
                    if has_wildcards(&field) {
                        let matches = self.glob(&field);
                        if !matches.is_empty() {
                            out.extend(matches);
                            continue;
                        }
                    }
                    out.push(field.into_iter().map(|(c, _)| c).collect());
                }
            }
            Ok(out)
        })
    }

    /// Expands a word into one string (no splitting, no pathname expansion).
    fn expand_scalar<'a>(&'a mut self, w: &'a Word) -> BoxFuture<'a, Result<String, Flow>> {
        Box::pin(async move {
            let mut f = Fields::new(None);
            self.expand_parts(&w.0, &mut f, false, true).await?;
            Ok(f.finish()
                .into_iter()
                .next()
                .map(|f| f.into_iter().map(|(c, _)| c).collect())
                .unwrap_or_default())
        })
    }

    /// Expands a word into pattern characters (quoted ones inactive).
    fn expand_pattern<'a>(
        &'a mut self,
        w: &'a Word,
    ) -> BoxFuture<'a, Result<Vec<(char, bool)>, Flow>> {
        Box::pin(async move {
            let mut f = Fields::new(None);
            self.expand_parts(&w.0, &mut f, false, true).await?;
            Ok(f.finish().into_iter().next().unwrap_or_default())
        })
    }

    /// Fails the expansion: prints the message and leaves the shell with status 2.
    fn expansion_error<'a>(&'a mut self, msg: &'a str) -> BoxFuture<'a, Flow> {
        Box::pin(async move {
            self.error(msg).await;
            Flow::Exit(2)
        })
    }

    /// Expands parts into `f`. `quoted`: inside double quotes. `first`: at the word's start
    /// (tilde expansion).
    fn expand_parts<'a>(
        &'a mut self,
        parts: &'a [Part],
        f: &'a mut Fields,
        quoted: bool,
        first: bool,
    ) -> BoxFuture<'a, Result<(), Flow>> {
        Box::pin(async move {
            for (i, part) in parts.iter().enumerate() {
                match part {
                    Part::Lit(s) => {
                        if i == 0 && first && !quoted && s.starts_with('~') {
                            let (user, rest) = match s.find('/') {
                                Some(k) => (&s[1..k], &s[k..]),
                                None => (&s[1..], ""),
                            };
                            let home = match user {
                                "" => self.var("HOME"),
                                "root" => Some("/root".to_string()),
                                _ => None,
                            };
                            match home {
                                Some(h) => {
                                    f.push(&h, false, false);
                                    f.push(rest, !quoted, false);
                                }
                                None => f.push(s, !quoted, false),
                            }
                        } else {
                            f.push(s, !quoted, false);
                        }
                    }
                    Part::Quoted(s) => f.push(s, false, false),
                    Part::Double(inner) => {
                        if !matches!(inner.as_slice(), [Part::Param(p)] if p.name == "@" && p.op == ParamOp::Plain)
                        {
                            f.mark();
                        }
                        self.expand_parts(inner, f, true, false).await?;
                    }
                    Part::Param(p) => self.expand_param(p, f, quoted).await?,
                    Part::Command(list) => {
                        let text = self.command_output(list).await?;
                        f.push(&text, false, !quoted);
                    }
                    Part::Arith(w) => {
                        let expr = self.expand_scalar(w).await?;
                        let mut vars = ArithVars(self);
                        match arith::eval(&expr, &mut vars) {
                            Ok(v) => f.push(&v.to_string(), false, !quoted),
                            Err(e) => return Err(self.expansion_error(&e.to_string()).await),
                        }
                    }
                }
                if f.len() > MAX_WORD {
                    return Err(self.expansion_error("expansion too long").await);
                }
            }
            Ok(())
        })
    }

    /// Expands a parameter into `f`.
    fn expand_param<'a>(
        &'a mut self,
        p: &'a Param,
        f: &'a mut Fields,
        quoted: bool,
    ) -> BoxFuture<'a, Result<(), Flow>> {
        Box::pin(async move {
            if p.op == ParamOp::Plain && (p.name == "@" || p.name == "*") {
                let params = self.params.clone();
                if quoted && p.name == "*" {
                    let ifs = self.ifs();
                    let sep = ifs.chars().next().map(String::from).unwrap_or_default();
                    f.push(&params.join(&sep), false, false);
                    return Ok(());
                }
                for (i, v) in params.iter().enumerate() {
                    if i > 0 {
                        if quoted {
                            f.force_break();
                        } else {
                            f.soft_break();
                        }
                    }
                    if quoted {
                        f.mark();
                    }
                    f.push(v, false, !quoted);
                }
                return Ok(());
            }
            let value = self.param(&p.name);
            let null_or_unset =
                |colon: bool| value.as_deref().is_none_or(|v| colon && v.is_empty());
            match &p.op {
                ParamOp::Plain => match value {
                    Some(v) => f.push(&v, false, !quoted),
                    None if self.opts.nounset => {
                        return Err(self
                            .expansion_error(&format!("{}: parameter not set", p.name))
                            .await);
                    }
                    None => {}
                },
                ParamOp::Length => {
                    if value.is_none() && self.opts.nounset {
                        return Err(self
                            .expansion_error(&format!("{}: parameter not set", p.name))
                            .await);
                    }
                    let n = value.map(|v| v.chars().count()).unwrap_or(0);
                    f.push(&n.to_string(), false, false);
                }
                ParamOp::Default(colon, w) => {
                    if null_or_unset(*colon) {
                        self.expand_parts(&w.0, f, quoted, false).await?;
                    } else if let Some(v) = value {
                        f.push(&v, false, !quoted);
                    }
                }
                ParamOp::Assign(colon, w) => {
                    if null_or_unset(*colon) {
                        if !is_name(&p.name) {
                            return Err(self
                                .expansion_error(&format!("${}: cannot assign in this way", p.name))
                                .await);
                        }
                        let v = self.expand_scalar(w).await?;
                        self.set_var(&p.name, v.clone());
                        f.push(&v, false, !quoted);
                    } else if let Some(v) = value {
                        f.push(&v, false, !quoted);
                    }
                }
                ParamOp::Error(colon, w) => {
                    if null_or_unset(*colon) {
                        let msg = self.expand_scalar(w).await?;
                        let msg = if msg.is_empty() {
                            if *colon {
                                "parameter null or not set".to_string()
                            } else {
                                "parameter not set".to_string()
                            }
                        } else {
                            msg
                        };
                        return Err(self.expansion_error(&format!("{}: {msg}", p.name)).await);
                    }
                    if let Some(v) = value {
                        f.push(&v, false, !quoted);
                    }
                }
                ParamOp::Alternative(colon, w) => {
                    if !null_or_unset(*colon) {
                        self.expand_parts(&w.0, f, quoted, false).await?;
                    }
                }
                ParamOp::RemovePrefix(longest, w) | ParamOp::RemoveSuffix(longest, w) => {
                    let v = value.unwrap_or_default();
                    let pat = Pattern::new(&self.expand_pattern(w).await?);
                    let out = if matches!(p.op, ParamOp::RemovePrefix(..)) {
                        pat.remove_prefix(&v, *longest)
                    } else {
                        pat.remove_suffix(&v, *longest)
                    };
                    f.push(&out, false, !quoted);
                }
            }
            Ok(())
        })
    }

    /// Runs `$(…)` in a subshell and returns its output without trailing newlines.
    fn command_output<'a>(&'a mut self, list: &'a List) -> BoxFuture<'a, Result<String, Flow>> {
        Box::pin(async move {
            if self.depth >= MAX_NESTING {
                return Err(self.expansion_error("nesting too deep").await);
            }
            let (out, capture) = Output::capture();
            let mut sub = self.subshell();
            sub.io.stdout = out;
            let r = sub.run_list(list).await;
            let s = sub.settle(r);
            let status = sub.finish(s).await;
            drop(sub);
            self.subst_status = Some(status);
            self.status = status;
            let bytes = capture.take();
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            while text.ends_with('\n') {
                text.pop();
            }
            Ok(text)
        })
    }

    /// Pathname expansion of one field; empty when nothing matches.
    fn glob(&self, field: &[(char, bool)]) -> Vec<String> {
        let absolute = field.first().is_some_and(|(c, _)| *c == '/');
        let comps: Vec<&[(char, bool)]> = field
            .split(|(c, _)| *c == '/')
            .filter(|c| !c.is_empty())
            .collect();
        let mut results: Vec<String> = vec![if absolute {
            "/".to_string()
        } else {
            String::new()
        }];
        for comp in comps {
            let mut next = Vec::new();
            for base in &results {
                let dir = if base.is_empty() {
                    self.cwd.clone()
                } else {
                    vfs::join(&self.cwd, base)
                };
                let join = |name: &str| {
                    if base.is_empty() {
                        name.to_string()
                    } else if base.ends_with('/') {
                        format!("{base}{name}")
                    } else {
                        format!("{base}/{name}")
                    }
                };
                if has_wildcards(comp) {
                    let pat = Pattern::new(comp);
                    let Ok(entries) = self.fs.read_dir(&dir) else {
                        continue;
                    };
                    for e in entries {
                        if e.name.starts_with('.') && !pat.starts_with_dot() {
                            continue;
                        }
                        if pat.matches(&e.name.chars().collect::<Vec<_>>()) {
                            next.push(join(&e.name));
                        }
                    }
                } else {
                    let name: String = comp.iter().map(|(c, _)| c).collect();
                    let candidate = join(&name);
                    if self.fs.exists(&vfs::join(&self.cwd, &candidate)) {
                        next.push(candidate);
                    }
                }
            }
            results = next;
            if results.is_empty() || results.len() > 100_000 {
                return Vec::new();
            }
        }
        results.sort();
        results
    }

    // ----- built-ins -----

    /// `exec`: with a command, run it and leave; without, make the redirections permanent.
    fn exec_builtin<'a>(&'a mut self, argv: Vec<String>, io: Stdio) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if argv.len() == 1 {
                self.io = io;
                return Ok(0);
            }
            let rest: Vec<String> = argv.into_iter().skip(1).collect();
            let status = self.external(rest, Vec::new(), io).await;
            Err(Flow::Exit(status))
        })
    }

    /// Runs a shell built-in with `self.io` already set.
    fn builtin<'a>(&'a mut self, argv: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(self.builtin_inner(argv))
    }

    /// Body of [`Shell::builtin`].
    async fn builtin_inner(&mut self, argv: &[String]) -> Res {
        let args = &argv[1..];
        let name = argv[0].as_str();
        match name {
            ":" | "true" => Ok(0),
            "false" => Ok(1),
            "exit" => {
                let status = match args.first() {
                    None => self.status,
                    Some(a) => match a.parse::<i64>() {
                        Ok(n) => (n & 0xff) as i32,
                        Err(_) => {
                            self.error(&format!("exit: Illegal number: {a}")).await;
                            2
                        }
                    },
                };
                Err(Flow::Exit(status))
            }
            "return" => {
                let status = match args.first() {
                    None => self.status,
                    Some(a) => match a.parse::<i64>() {
                        Ok(n) => (n & 0xff) as i32,
                        Err(_) => {
                            self.error(&format!("return: Illegal number: {a}")).await;
                            2
                        }
                    },
                };
                Err(Flow::Return(status))
            }
            "break" | "continue" => {
                let n = match args.first().map(|a| a.parse::<usize>()) {
                    None => 1,
                    Some(Ok(n)) if n > 0 => n,
                    Some(_) => {
                        self.error(&format!("{name}: Illegal number: {}", args[0]))
                            .await;
                        return Ok(2);
                    }
                };
                if self.loops == 0 {
                    return Ok(0);
                }
                let n = n.min(self.loops);
                Err(if name == "break" {
                    Flow::Break(n)
                } else {
                    Flow::Continue(n)
                })
            }
            "cd" => self.cd(args).await,
            "pwd" => Ok(self.print(&format!("{}\n", self.cwd)).await),
            "export" | "readonly" => {
                if args.is_empty() || args[0] == "-p" {
                    let mut lines: Vec<String> = self
                        .vars
                        .iter()
                        .filter(|(_, v)| v.exported || name == "readonly")
                        .map(|(k, v)| format!("{name} {k}='{}'\n", v.value.replace('\'', "'\\''")))
                        .collect();
                    lines.sort();
                    return Ok(self.print(&lines.concat()).await);
                }
                for a in args {
                    let (k, v) = match a.split_once('=') {
                        Some((k, v)) => (k, Some(v.to_string())),
                        None => (a.as_str(), None),
                    };
                    if !is_name(k) {
                        self.error(&format!("{name}: {k}: bad variable name")).await;
                        return Ok(2);
                    }
                    let entry = self.vars.entry(k.to_string()).or_insert(Var {
                        value: String::new(),
                        exported: false,
                    });
                    if let Some(v) = v {
                        entry.value = v;
                    }
                    if name == "export" {
                        entry.exported = true;
                    }
                }
                Ok(0)
            }
            "local" => {
                for a in args {
                    if let Some((k, v)) = a.split_once('=') {
                        self.set_var(k, v.to_string());
                    } else if !self.vars.contains_key(a.as_str()) {
                        self.set_var(a, String::new());
                    }
                }
                Ok(0)
            }
            "unset" => {
                let mut functions = false;
                for a in args {
                    match a.as_str() {
                        "-f" => functions = true,
                        "-v" => functions = false,
                        n if functions => {
                            self.functions.remove(n);
                        }
                        n => {
                            self.vars.remove(n);
                        }
                    }
                }
                Ok(0)
            }
            "set" => self.set_builtin(args).await,
            "shift" => {
                let n = match args.first().map(|a| a.parse::<usize>()) {
                    None => 1,
                    Some(Ok(n)) => n,
                    Some(Err(_)) => {
                        self.error(&format!("shift: Illegal number: {}", args[0]))
                            .await;
                        return Ok(2);
                    }
                };
                if n > self.params.len() {
                    self.error("shift: can't shift that many").await;
                    return Ok(2);
                }
                self.params.drain(..n);
                Ok(0)
            }
            "eval" => {
                let src = args.join(" ");
                if self.depth >= MAX_NESTING {
                    self.error("eval: nesting too deep").await;
                    return Err(Flow::Exit(2));
                }
                self.depth += 1;
                let r = self.run_source(&src).await;
                self.depth -= 1;
                r
            }
            "." | "source" => self.dot(args).await,
            "trap" => self.trap(args).await,
            "wait" => self.wait(args).await,
            "kill" => self.kill(args).await,
            "read" => self.read(args).await,
            "umask" => {
                if args.is_empty() {
                    return Ok(self.print("0022\n").await);
                }
                Ok(0)
            }
            "command" => self.command_builtin(args).await,
            "type" => {
                let mut status = 0;
                for a in args {
                    let line = match self.describe(a) {
                        Some(d) => format!("{a} is {d}\n"),
                        None => {
                            status = 127;
                            format!("{a}: not found\n")
                        }
                    };
                    self.print(&line).await;
                }
                Ok(status)
            }
            _ => Ok(127),
        }
    }

    /// How `type`/`command -v` describe a name; `None` if not found.
    fn describe(&self, name: &str) -> Option<String> {
        if SPECIAL_BUILTINS.contains(&name)
            || REGULAR_BUILTINS.contains(&name)
            || PROGRAM_BUILTINS.contains(&name)
        {
            return Some("a shell builtin".into());
        }
        if self.functions.contains_key(name) {
            return Some("a shell function".into());
        }
        if self.programs.registered(name).is_some() {
            return Some(name.to_string());
        }
        let path = self.var("PATH").unwrap_or_else(|| DEFAULT_PATH.to_string());
        if name.contains('/') {
            return self
                .fs
                .metadata(&vfs::join(&self.cwd, name))
                .ok()
                .map(|_| name.to_string());
        }
        for dir in path.split(':') {
            let p = vfs::join(
                &vfs::join(&self.cwd, if dir.is_empty() { "." } else { dir }),
                name,
            );
            if let Ok(m) = self.fs.metadata(&p)
                && m.kind == NodeKind::Regular
                && m.is_executable()
            {
                return Some(vfs::normalize(&p).unwrap_or(p));
            }
        }
        None
    }

    /// `command [-v|-V] name args…`.
    fn command_builtin<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            match args.first().map(String::as_str) {
                None => Ok(0),
                Some("-v") | Some("-V") => {
                    let verbose = args[0] == "-V";
                    let mut status = 0;
                    for a in &args[1..] {
                        match self.describe(a) {
                            Some(d) if verbose => {
                                self.print(&format!("{a} is {d}\n")).await;
                            }
                            Some(d)
                                if d.starts_with('/') || self.programs.registered(a).is_some() =>
                            {
                                self.print(&format!("{d}\n")).await;
                            }
                            Some(_) => {
                                self.print(&format!("{a}\n")).await;
                            }
                            None => status = 127,
                        }
                    }
                    Ok(if status != 0 && !verbose { 1 } else { status })
                }
                Some(_) => {
                    let argv = args.to_vec();
                    let io = self.io.clone();
                    let name = argv[0].as_str();
                    if SPECIAL_BUILTINS.contains(&name) || REGULAR_BUILTINS.contains(&name) {
                        return self.builtin(&argv).await;
                    }
                    Ok(self.external(argv, Vec::new(), io).await)
                }
            }
        })
    }

    /// `cd [dir|-]`.
    fn cd<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let (target, print) = match args
                .iter()
                .find(|a| !a.starts_with('-') || a.as_str() == "-")
                .map(String::as_str)
            {
                None => match self.var("HOME") {
                    Some(h) => (h, false),
                    None => ("/".to_string(), false),
                },
                Some("-") => (self.var("OLDPWD").unwrap_or_else(|| self.cwd.clone()), true),
                Some(d) => (d.to_string(), false),
            };
            let abs = match vfs::normalize(&vfs::join(&self.cwd, &target)) {
                Ok(p) => p,
                Err(e) => {
                    self.error(&format!("cd: can't cd to {target}: {e}")).await;
                    return Ok(2);
                }
            };
            match self.fs.metadata(&abs) {
                Ok(m) if m.kind == NodeKind::Directory => {}
                Ok(_) => {
                    self.error(&format!("cd: can't cd to {target}: Not a directory"))
                        .await;
                    return Ok(2);
                }
                Err(e) => {
                    self.error(&format!("cd: can't cd to {target}: {e}")).await;
                    return Ok(2);
                }
            }
            let old = std::mem::replace(&mut self.cwd, abs.clone());
            self.set_var("OLDPWD", old);
            self.set_var("PWD", abs.clone());
            if print {
                self.print(&format!("{abs}\n")).await;
            }
            Ok(0)
        })
    }

    /// `set [-eux] [-o opt] [--] [args…]`.
    fn set_builtin<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if args.is_empty() {
                let mut lines: Vec<String> = self
                    .vars
                    .iter()
                    .map(|(k, v)| format!("{k}='{}'\n", v.value.replace('\'', "'\\''")))
                    .collect();
                lines.sort();
                return Ok(self.print(&lines.concat()).await);
            }
            let mut i = 0;
            while let Some(a) = args.get(i) {
                if a == "--" {
                    i += 1;
                    self.params = args[i..].to_vec();
                    return Ok(0);
                }
                let on = a.starts_with('-');
                if !(on || a.starts_with('+')) || a.len() < 2 {
                    if a == "-" {
                        i += 1;
                    }
                    break;
                }
                for c in a.chars().skip(1) {
                    match c {
                        'e' => self.opts.errexit = on,
                        'u' => self.opts.nounset = on,
                        'x' => self.opts.xtrace = on,
                        'o' => {
                            i += 1;
                            match args.get(i).map(String::as_str) {
                                Some("errexit") => self.opts.errexit = on,
                                Some("nounset") => self.opts.nounset = on,
                                Some("xtrace") => self.opts.xtrace = on,
                                Some("pipefail") => self.opts.pipefail = on,
                                Some(_) => {}
                                None => {
                                    let e = self.opts.errexit;
                                    let line =
                                        format!("errexit\t{}\n", if e { "on" } else { "off" });
                                    self.print(&line).await;
                                }
                            }
                        }
                        'f' | 'v' | 'h' | 'm' | 'C' | 'a' | 'n' | 'b' => {}
                        other => {
                            self.error(&format!("set: illegal option -{other}")).await;
                            return Ok(2);
                        }
                    }
                }
                i += 1;
            }
            if i < args.len() {
                self.params = args[i..].to_vec();
            }
            Ok(0)
        })
    }

    /// `. file [args]`.
    fn dot<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let Some(file) = args.first() else {
                self.error(".: filename argument required").await;
                return Ok(2);
            };
            let path = if file.contains('/') {
                vfs::join(&self.cwd, file)
            } else {
                let pathvar = self.var("PATH").unwrap_or_else(|| DEFAULT_PATH.to_string());
                pathvar
                    .split(':')
                    .map(|d| vfs::join(&vfs::join(&self.cwd, d), file))
                    .find(|p| matches!(self.fs.metadata(p), Ok(m) if m.kind == NodeKind::Regular))
                    .unwrap_or_else(|| vfs::join(&self.cwd, file))
            };
            let src = match self.fs.read(&path) {
                Ok(b) if b.len() <= MAX_SCRIPT => String::from_utf8_lossy(&b).into_owned(),
                Ok(_) => {
                    self.error(&format!(".: {file}: file too large")).await;
                    return Ok(2);
                }
                Err(e) => {
                    self.error(&format!(".: can't open '{file}': {e}")).await;
                    return Ok(2);
                }
            };
            if self.depth >= MAX_NESTING {
                self.error(".: nesting too deep").await;
                return Err(Flow::Exit(2));
            }
            let saved = if args.len() > 1 {
                Some(std::mem::replace(&mut self.params, args[1..].to_vec()))
            } else {
                None
            };
            self.depth += 1;
            let r = self.run_source(&src).await;
            self.depth -= 1;
            if let Some(p) = saved {
                self.params = p;
            }
            match r {
                Err(Flow::Return(s)) => Ok(s),
                other => other,
            }
        })
    }

    /// `trap [action] [conditions…]`.
    fn trap<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if args.is_empty() || args[0] == "-p" {
                let lines: String = self
                    .traps
                    .iter()
                    .map(|(k, v)| format!("trap -- '{}' {k}\n", v.replace('\'', "'\\''")))
                    .collect();
                return Ok(self.print(&lines).await);
            }
            if args[0] == "-l" {
                return Ok(self
                    .print(
                        "HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM\n",
                    )
                    .await);
            }
            let (action, conds) = if args.len() == 1 || args[0].parse::<u32>().is_ok() {
                (None, args)
            } else {
                (Some(args[0].as_str()), &args[1..])
            };
            for c in conds {
                let name = match c.trim_start_matches("SIG") {
                    "0" | "EXIT" => "EXIT".to_string(),
                    "1" => "HUP".to_string(),
                    "2" => "INT".to_string(),
                    "15" => "TERM".to_string(),
                    other => other.to_string(),
                };
                match action {
                    None | Some("-") => {
                        self.traps.remove(&name);
                    }
                    Some(a) => {
                        self.traps.insert(name, a.to_string());
                    }
                }
            }
            Ok(0)
        })
    }

    /// `wait [pid…]`.
    fn wait<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if args.is_empty() {
                let jobs = std::mem::take(&mut self.jobs);
                for job in jobs {
                    let _ = job.handle.await;
                }
                return Ok(0);
            }
            let mut status = 0;
            for a in args {
                let pid = a.trim_start_matches('%').parse::<u32>().ok();
                let idx = match (a.starts_with('%'), pid) {
                    (true, Some(n)) => n
                        .checked_sub(1)
                        .map(|i| i as usize)
                        .filter(|i| *i < self.jobs.len()),
                    (false, Some(p)) => self.jobs.iter().position(|j| j.pid == p),
                    _ => None,
                };
                match idx {
                    Some(i) => {
                        let job = self.jobs.remove(i);
                        status = job.handle.await.unwrap_or(127);
                    }
                    None => status = 127,
                }
            }
            Ok(status)
        })
    }

    /// `kill [-SIG] pid…`: stops background jobs of this shell.
    fn kill<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let mut status = 0;
            let mut probe = false;
            for a in args {
                if a.starts_with('-') && a.len() > 1 {
                    if a == "-0" {
                        probe = true;
                    }
                    continue;
                }
                let job = match a.strip_prefix('%') {
                    Some(n) => n
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| n.checked_sub(1))
                        .and_then(|i| self.jobs.get(i)),
                    None => a
                        .parse::<u32>()
                        .ok()
                        .and_then(|p| self.jobs.iter().find(|j| j.pid == p)),
                };
                match job {
                    Some(j) if !j.handle.is_finished() => {
                        if !probe {
                            j.token.cancel();
                        }
                    }
                    _ => {
                        self.error(&format!("kill: ({a}) - No such process")).await;
                        status = 1;
                    }
                }
            }
            Ok(status)
        })
    }

    /// `read [-r] [-p prompt] [name…]`.
    fn read<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let mut raw = false;
            let mut names = Vec::new();
            let mut i = 0;
            while let Some(a) = args.get(i) {
                match a.as_str() {
                    "-r" => raw = true,
                    "-p" => i += 1,
                    n if n.starts_with('-') && names.is_empty() => {}
                    n => names.push(n.to_string()),
                }
                i += 1;
            }
            if names.is_empty() {
                names.push("REPLY".into());
            }
            let mut line = String::new();
            let mut eof = false;
            loop {
                let Some(bytes) = self.io.stdin.read_line(MAX_WORD).await else {
                    eof = true;
                    break;
                };
                let mut text = String::from_utf8_lossy(&bytes).into_owned();
                let had_newline = text.ends_with('\n');
                if had_newline {
                    text.pop();
                } else {
                    eof = true;
                }
                if !raw && text.ends_with('\\') && had_newline {
                    text.pop();
                    line.push_str(&text);
                    continue;
                }
                line.push_str(&text);
                break;
            }
            if !raw {
                let mut out = String::new();
                let mut chars = line.chars();
                while let Some(c) = chars.next() {
                    if c == '\\' {
                        if let Some(n) = chars.next() {
                            out.push(n);
                        }
                    } else {
                        out.push(c);
                    }
                }
                line = out;
            }
            let ifs = self.ifs();
            let is_ws = |c: char| ifs.contains(c) && c.is_whitespace();
            let mut rest = line.trim_start_matches(is_ws).to_string();
            let count = names.len();
            for (k, name) in names.iter().enumerate() {
                if k + 1 == count {
                    let v = rest.trim_end_matches(is_ws).to_string();
                    self.set_var(name, v);
                    break;
                }
                let end = rest.find(|c: char| ifs.contains(c)).unwrap_or(rest.len());
                let field = rest[..end].to_string();
                let mut remainder = &rest[end..];
                remainder = remainder.trim_start_matches(is_ws);
                if let Some(c) = remainder.chars().next()
                    && ifs.contains(c)
                    && !c.is_whitespace()
                {
                    remainder = remainder[c.len_utf8()..].trim_start_matches(is_ws);
                }
                rest = remainder.to_string();
                self.set_var(name, field);
            }
            Ok(if eof && line.is_empty() {
                1
            } else {
                i32::from(eof)
            })
        })
    }
}

/// Field builder for word expansion.
#[derive(Debug)]
struct Fields {
    /// Finished fields.
    done: Vec<Vec<(char, bool)>>,
    /// The field being built: characters and whether each is an active pattern character.
    cur: Vec<(char, bool)>,
    /// The current field exists even if empty (it had a quoted part).
    marked: bool,
    /// Field separators; `None`: no splitting.
    ifs: Option<String>,
    /// Total characters, against [`MAX_WORD`].
    total: usize,
}

impl Fields {
    /// An empty builder.
    fn new(ifs: Option<String>) -> Self {
        Fields {
            done: Vec::new(),
            cur: Vec::new(),
            marked: false,
            ifs,
            total: 0,
        }
    }

    /// Characters so far.
    fn len(&self) -> usize {
        self.total
    }

    /// Marks the current field as present even if empty.
    fn mark(&mut self) {
        self.marked = true;
    }

    /// Ends the current field unconditionally (between `"$@"` parameters).
    fn force_break(&mut self) {
        self.done.push(std::mem::take(&mut self.cur));
        self.marked = false;
    }

    /// Ends the current field if it has anything.
    fn soft_break(&mut self) {
        if !self.cur.is_empty() || self.marked {
            self.force_break();
        }
    }

    /// Appends text. `active`: unquoted literal (pattern characters work). `split`: the result
    /// of an unquoted expansion (field splitting applies; pattern characters work too).
    fn push(&mut self, s: &str, active: bool, split: bool) {
        self.total = self.total.saturating_add(s.len());
        let Some(ifs) = self.ifs.as_deref().filter(|_| split) else {
            if !s.is_empty() && !active {
                self.marked = true;
            }
            self.cur.extend(s.chars().map(|c| (c, active)));
            return;
        };
        let ifs = ifs.to_string();
        for c in s.chars() {
            if ifs.contains(c) {
                if c.is_whitespace() {
                    self.soft_break();
                } else {
                    self.force_break();
                }
            } else {
                self.cur.push((c, true));
            }
        }
    }

    /// The fields.
    fn finish(mut self) -> Vec<Vec<(char, bool)>> {
        if !self.cur.is_empty() || self.marked {
            self.done.push(self.cur);
        }
        self.done
    }
}

/// Variable access for `$((…))`.
struct ArithVars<'a>(&'a mut Shell);

impl Vars for ArithVars<'_> {
    fn get(&self, name: &str) -> Option<String> {
        self.0.var(name)
    }

    fn set(&mut self, name: &str, value: i64) {
        self.0.set_var(name, value.to_string());
    }
}
