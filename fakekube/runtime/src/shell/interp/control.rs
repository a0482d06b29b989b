//! Lists, pipelines and compound commands: what runs in what order, in this shell or in a
//! subshell, and how `break`, `continue` and `set -e` travel through them.

use std::sync::Arc;

use futures_util::future::join_all;

use super::{Flow, Job, Res, Shell};
use crate::io::{Input, Stdio, pipe};
use crate::process::{BoxFuture, MAX_NESTING};
use crate::shell::ast::{AndOr, Command, Compound, Connector, Item, List, Pipeline};
use crate::shell::pattern::Pattern;

impl Shell {
    /// Runs a list.
    pub(super) fn run_list<'a>(&'a mut self, list: &'a List) -> BoxFuture<'a, Res> {
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
            let slot = match self
                .processes
                .start(self.pid, vec![self.arg0.clone()], &self.cancel)
            {
                Ok(slot) => slot,
                Err(e) => {
                    self.error(&format!("can't fork: {e}")).await;
                    return Ok(2);
                }
            };
            // Made after the only await, so that no copy of the shell state lives in this
            // future (one per running list item).
            let mut sub = self.subshell();
            sub.io.stdin = Input::empty();
            sub.pid = slot.pid;
            sub.cancel = slot.token.clone();
            sub.execs_last = item.and_or.rest.is_empty()
                && !item.and_or.first.negated
                && matches!(item.and_or.first.commands.as_slice(), [Command::Simple(_)]);
            let pid = slot.pid;
            let and_or = item.and_or.clone();
            let handle = tokio::spawn(async move {
                tokio::select! {
                    biased;
                    () = slot.token.cancelled() => slot.killed_status(),
                    s = async {
                        let r = sub.run_and_or(&and_or).await;
                        let s = sub.settle(r);
                        sub.finish(s).await
                    } => slot.status(s),
                }
            });
            self.jobs
                .retain(|j| !j.handle.is_finished() || Some(j.pid) == self.last_bg);
            self.jobs.push(Job { pid, handle });
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
    pub(super) fn run_command<'a>(&'a mut self, cmd: &'a Command) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            tokio::task::consume_budget().await;
            self.step().await?;
            if self.signals.is_some() {
                self.run_pending_traps().await?;
            }
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
}
