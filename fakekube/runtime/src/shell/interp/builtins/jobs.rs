//! Builtins for background jobs and signals: `wait`, `kill` and `trap`, and running the traps
//! of signals that arrived.
//!
//! A trapped signal is handled between commands, as dash does: a foreground program runs to
//! its end first, while `wait` is interrupted at once (it returns `128 + n` after the trap ran).

use tokio::sync::mpsc;

use super::super::{Flow, Res, Shell};
use crate::process::{BoxFuture, Signal};

impl Shell {
    /// `wait [pid…]`: waits for background jobs (all of them without operands); a trapped
    /// signal interrupts it.
    pub(super) fn wait<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if args.is_empty() {
                while let Some(job) = self.jobs.first_mut() {
                    let Some(signals) = self.signals.as_mut() else {
                        let _ = (&mut job.handle).await;
                        self.jobs.remove(0);
                        continue;
                    };
                    tokio::select! {
                        _ = &mut job.handle => {
                            self.jobs.remove(0);
                        }
                        Some(sig) = signals.recv() => return self.interrupted_wait(sig).await,
                    }
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
                let Some(i) = idx else {
                    status = 127;
                    continue;
                };
                let job = &mut self.jobs[i];
                match self.signals.as_mut() {
                    None => status = (&mut job.handle).await.unwrap_or(127),
                    Some(signals) => {
                        tokio::select! {
                            s = &mut job.handle => status = s.unwrap_or(127),
                            Some(sig) = signals.recv() => return self.interrupted_wait(sig).await,
                        }
                    }
                }
                self.jobs.remove(i);
            }
            Ok(status)
        })
    }

    /// Runs the trap of a signal that interrupted `wait`; `wait` then returns `128 + n`.
    async fn interrupted_wait(&mut self, sig: Signal) -> Res {
        self.run_trap(sig).await?;
        Ok(128 + sig.number())
    }

    /// `kill [-s SIG | -SIG] pid|%job…`, `kill -l`: the `kill` program, with job numbers
    /// (`%1`) turned into their pids first.
    pub(super) fn kill<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let mut argv = vec!["kill".to_string()];
            for a in args {
                let job = a
                    .strip_prefix('%')
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|i| self.jobs.get(i));
                match job {
                    Some(j) => argv.push(j.pid.to_string()),
                    None if a.starts_with('%') => {
                        self.error(&format!("kill: {a}: no such job")).await;
                        return Ok(1);
                    }
                    None => argv.push(a.clone()),
                }
            }
            let io = self.io.clone();
            Ok(self.run_program(argv, Vec::new(), io).await)
        })
    }

    /// `trap [action] [conditions…]`, `trap`, `trap -p`, `trap -l`.
    pub(super) fn trap<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
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
                let names: Vec<&str> = Signal::ALL.iter().map(|s| s.name()).collect();
                return Ok(self.print(&format!("{}\n", names.join(" "))).await);
            }
            let (action, conds) = if args.len() == 1 || args[0].parse::<u32>().is_ok() {
                (None, args)
            } else {
                (Some(args[0].as_str()), &args[1..])
            };
            let mut status = 0;
            for c in conds {
                let name = match c.as_str() {
                    "0" | "EXIT" => "EXIT".to_string(),
                    other => match Signal::parse(other) {
                        Some(sig) => sig.name().to_string(),
                        None => {
                            self.error(&format!("trap: {c}: bad trap")).await;
                            status = 1;
                            continue;
                        }
                    },
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
            self.publish_traps();
            Ok(status)
        })
    }

    /// Tells the process table which signals this shell traps and ignores.
    fn publish_traps(&mut self) {
        let mut trapped = Vec::new();
        let mut ignored = Vec::new();
        for (name, action) in self.traps.iter() {
            if let Some(sig) = Signal::parse(name) {
                if action.is_empty() {
                    ignored.push(sig);
                } else {
                    trapped.push(sig);
                }
            }
        }
        if self.signals_tx.is_none() && (!trapped.is_empty() || !ignored.is_empty()) {
            let (tx, rx) = mpsc::unbounded_channel();
            self.signals_tx = Some(tx);
            self.signals = Some(rx);
        }
        if let Some(tx) = &self.signals_tx {
            self.processes
                .set_traps(self.pid, tx.clone(), &trapped, &ignored);
        }
    }

    /// Runs the traps of signals that arrived since the last command.
    pub(in crate::shell::interp) fn run_pending_traps(
        &mut self,
    ) -> BoxFuture<'_, Result<(), Flow>> {
        Box::pin(async move {
            while let Some(sig) = self.signals.as_mut().and_then(|rx| rx.try_recv().ok()) {
                self.run_trap(sig).await?;
            }
            Ok(())
        })
    }

    /// Runs the action trapped for `sig`, keeping `$?`; an `exit` in it leaves the shell.
    fn run_trap(&mut self, sig: Signal) -> BoxFuture<'_, Result<(), Flow>> {
        Box::pin(async move {
            let Some(action) = self.traps.get(sig.name()).cloned() else {
                return Ok(());
            };
            let saved = self.status;
            match self.run_source(&action).await {
                Err(Flow::Exit(s)) => return Err(Flow::Exit(s)),
                _ => self.status = saved,
            }
            Ok(())
        })
    }
}
