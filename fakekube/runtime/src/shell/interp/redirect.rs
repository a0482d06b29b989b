//! Redirections: `<`, `>`, `>>`, `<>`, `<<` and `n>&m` applied to a copy of the current streams.

use bytes::Bytes;

use super::{Flow, Shell};
use crate::fs::{self as vfs, FsError};
use crate::io::{Input, Output, Stdio};
use crate::process::BoxFuture;
use crate::shell::ast::{RedirOp, Redirect};

impl Shell {
    /// Applies redirections to a copy of the current streams. `Ok(Err(status))`: a redirection
    /// failed (message printed).
    pub(super) fn redirect<'a>(
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
                let input = Input::open(&self.fs, &path, io)
                    .map_err(|e| format!("cannot open {target}: {e}"))?;
                if r.fd == 0 {
                    io.stdin = input;
                }
            }
            RedirOp::Write | RedirOp::Append => {
                let out = Output::open(&self.fs, &path, r.op == RedirOp::Append, io).map_err(
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
}
