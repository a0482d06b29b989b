//! Builtins for background jobs and traps: `wait`, `kill` and `trap`.

use super::super::{Res, Shell};
use crate::process::BoxFuture;

impl Shell {
    /// `wait [pid…]`.
    pub(super) fn wait<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
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
    pub(super) fn kill<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
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

    /// `trap [action] [conditions…]`.
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
}
