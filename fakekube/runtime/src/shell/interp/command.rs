//! Simple commands: expanding the words and assignments, then finding what the name stands for
//! (special builtin, function, builtin, program) and running it with the command's streams.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::builtins::{PROGRAM_BUILTINS, REGULAR_BUILTINS, SPECIAL_BUILTINS};
use super::{Flow, Res, Shell, Var};
use crate::io::Stdio;
use crate::process::{
    BoxFuture, DEFAULT_PATH, MAX_NESTING, PROGRAM_NESTING, Process, SpawnError, resolve,
};
use crate::shell::ast::{Command, SimpleCommand};

impl Shell {
    /// Runs a simple command.
    pub(super) fn run_simple<'a>(&'a mut self, sc: &'a SimpleCommand) -> BoxFuture<'a, Res> {
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
                let _ =
                    Box::pin(self.io.stderr.write_str(&format!("+ {}\n", line.join(" ")))).await;
            }
            let io = match self.redirect(&sc.redirects).await? {
                Ok(io) => io,
                Err(status) => return Ok(status),
            };
            if std::mem::take(&mut self.execs_last) {
                // The streams the redirections replaced are let go now, not when the job ends.
                self.io = io.clone();
            }
            if argv.is_empty() {
                for (name, value) in assigns {
                    self.set_var(&name, value);
                }
                return Ok(self.subst_status.unwrap_or(0));
            }
            self.dispatch(argv, assigns, io).await
        })
    }

    /// Finds and runs a command: special builtin, function, registered program, builtin,
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
            Ok(self.run_program(argv, assigns, io).await)
        })
    }

    /// Sets temporary assignments, returning what to restore.
    fn overlay(&mut self, assigns: &[(String, String)]) -> Vec<(String, Option<Var>)> {
        let mut saved = Vec::new();
        for (k, v) in assigns {
            let old = self.vars.get(k).cloned();
            let exported = old.as_ref().is_some_and(|o| o.exported);
            self.vars_mut().insert(
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
                Some(v) => self.vars_mut().insert(k, v),
                None => self.vars_mut().remove(&k),
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
    pub(super) fn run_program<'a>(
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
                        let _ = Box::pin(
                            io.stderr
                                .write_str(&format!("{}: {name}: nesting too deep\n", self.arg0)),
                        )
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
                    )
                    .with_network(self.network.clone());
                    proc.depth = self.depth + PROGRAM_NESTING;
                    proc.pid = self.pid;
                    proc.processes = self.processes.clone();
                    proc.run(handler).await & 0xff
                }
                Err(e) => {
                    let msg = match e {
                        SpawnError::NotFound => "not found".to_string(),
                        SpawnError::Fs(e) => e.to_string(),
                        _ => "Permission denied".to_string(),
                    };
                    let _ = Box::pin(
                        io.stderr
                            .write_str(&format!("{}: {name}: {msg}\n", self.arg0)),
                    )
                    .await;
                    e.exit_code()
                }
            }
        })
    }
}
