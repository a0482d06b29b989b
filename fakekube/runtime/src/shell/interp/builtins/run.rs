//! Builtins that run other code (`eval`, `.`, `exec`, `command`) or say what a name would run
//! (`type`).

use super::super::{Flow, MAX_SCRIPT, Res, Shell};
use super::{PROGRAM_BUILTINS, REGULAR_BUILTINS, SPECIAL_BUILTINS};
use crate::fs::{self as vfs, NodeKind};
use crate::io::Stdio;
use crate::process::{BoxFuture, DEFAULT_PATH, MAX_NESTING};

impl Shell {
    /// `eval args…`: runs the arguments, joined by spaces, as a script in this shell.
    pub(super) async fn eval(&mut self, args: &[String]) -> Res {
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

    /// `. file [args]`.
    pub(super) fn dot<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
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

    /// `exec`: with a command, run it and leave; without, make the redirections permanent.
    pub(in crate::shell::interp) fn exec_builtin<'a>(
        &'a mut self,
        argv: Vec<String>,
        io: Stdio,
    ) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if argv.len() == 1 {
                self.io = io;
                return Ok(0);
            }
            let rest: Vec<String> = argv.into_iter().skip(1).collect();
            let status = self.run_program(rest, Vec::new(), io).await;
            Err(Flow::Exit(status))
        })
    }

    /// `command [-v|-V] name args…`.
    pub(super) fn command_builtin<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
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
                    Ok(self.run_program(argv, Vec::new(), io).await)
                }
            }
        })
    }

    /// `type name…`: says what each name is; 127 when one is not found.
    pub(super) async fn type_builtin(&mut self, args: &[String]) -> i32 {
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
        status
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
}
