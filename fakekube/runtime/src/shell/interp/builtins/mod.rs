//! Shell builtins: commands the shell runs itself because they change its own state (`cd`,
//! `exit`, `set`, `read`...). Which names are builtins, and the dispatcher; the builtins
//! themselves are grouped by what they touch.
//!
//! - here: leaving (`exit`, `return`, `break`, `continue`), `cd`, `pwd`, `umask`, `:`;
//! - [`variables`]: `export`, `readonly`, `local`, `unset`, `set`, `shift`, `read`;
//! - [`run`]: `eval`, `.`, `exec`, `command`, `type`;
//! - [`jobs`]: `wait`, `kill`, `trap`.

mod jobs;
mod run;
mod variables;

use super::{Flow, Res, Shell};
use crate::fs as vfs;
use crate::fs::NodeKind;
use crate::process::BoxFuture;

/// Names of the special builtins, which are found before functions.
pub(super) const SPECIAL_BUILTINS: &[&str] = &[
    ":", ".", "break", "continue", "eval", "exec", "exit", "export", "readonly", "return", "set",
    "shift", "trap", "unset",
];
/// Names of the regular builtins run inside the shell.
pub(super) const REGULAR_BUILTINS: &[&str] = &[
    "cd", "pwd", "read", "wait", "umask", "command", "type", "kill", "true", "false", "local",
    "source",
];
/// Shell builtins that run the program of the same name without a PATH search (dash has them
/// built in; here the program table implements them).
pub(super) const PROGRAM_BUILTINS: &[&str] = &["echo", "printf", "test", "["];

impl Shell {
    /// Runs the shell builtin `argv[0]` with `self.io` already set.
    pub(super) fn builtin<'a>(&'a mut self, argv: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let args = &argv[1..];
            let name = argv[0].as_str();
            match name {
                ":" | "true" => Ok(0),
                "false" => Ok(1),
                "exit" => Err(Flow::Exit(self.status_arg(name, args).await)),
                "return" => Err(Flow::Return(self.status_arg(name, args).await)),
                "break" | "continue" => self.leave_loop(name, args).await,
                "cd" => self.cd(args).await,
                "pwd" => Ok(self.print(&format!("{}\n", self.cwd)).await),
                "umask" if args.is_empty() => Ok(self.print("0022\n").await),
                "umask" => Ok(0),
                "export" | "readonly" => self.export(name, args).await,
                "local" => Ok(self.local(args)),
                "unset" => Ok(self.unset(args)),
                "set" => self.set_builtin(args).await,
                "shift" => self.shift(args).await,
                "read" => self.read(args).await,
                "eval" => self.eval(args).await,
                "." | "source" => self.dot(args).await,
                "command" => self.command_builtin(args).await,
                "type" => Ok(self.type_builtin(args).await),
                "trap" => self.trap(args).await,
                "wait" => self.wait(args).await,
                "kill" => self.kill(args).await,
                _ => Ok(127),
            }
        })
    }

    /// The status `exit` or `return` leave with: the argument (modulo 256), else `$?`; 2 after a
    /// message when it is not a number.
    async fn status_arg(&self, name: &str, args: &[String]) -> i32 {
        match args.first() {
            None => self.status,
            Some(a) => match a.parse::<i64>() {
                Ok(n) => (n & 0xff) as i32,
                Err(_) => {
                    self.error(&format!("{name}: Illegal number: {a}")).await;
                    2
                }
            },
        }
    }

    /// `break [n]` and `continue [n]`: leave (or restart) the `n`th enclosing loop; nothing
    /// outside a loop.
    async fn leave_loop(&self, name: &str, args: &[String]) -> Res {
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
}
