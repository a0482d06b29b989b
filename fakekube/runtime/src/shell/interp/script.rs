//! Scripts read from a stream (`sh` reading its standard input, `sh -s`, an interactive shell):
//! one line at a time, each complete command run as soon as it is read, as dash does.
//!
//! The shell reads its input one line at a time and never past the end of the current line
//! ([`Input::read_line`] gives back what it read beyond), so a command that reads the same
//! input (`read`, `head -n 1`, `cat`) gets exactly what the shell has not read yet.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Flow, Res, Shell};
use crate::io::Input;
use crate::process::BoxFuture;
use crate::shell::ast::List;
use crate::shell::parser::{self, HereDocEnd, Next};
use crate::tty::Terminal;

/// Longest line the shell reads at once (a longer one is read in pieces of this size).
const MAX_LINE: usize = 1024 * 1024;

/// What one read of the script source gave.
enum Read {
    /// A line (or the last piece of input, without a newline).
    Line(String),
    /// End of input.
    End,
    /// The terminal's interrupt key: the line being typed is dropped.
    Interrupted,
}

impl Shell {
    /// Runs the commands read from `source` as each one is complete, then the EXIT trap;
    /// returns the exit status (0–255). `interactive`: print prompts, report syntax errors and
    /// go on (a non-interactive shell exits 2 on one), and leave at end of input.
    pub(crate) fn run_stream<'a>(
        &'a mut self,
        source: Input,
        interactive: bool,
    ) -> BoxFuture<'a, i32> {
        Box::pin(async move {
            let term = if interactive {
                source.tty().await
            } else {
                None
            };
            let mut buf = String::new();
            let mut eof = false;
            'session: while !eof {
                if interactive {
                    self.prompt(buf.is_empty()).await;
                }
                match self.read_script_line(&source, term.as_ref()).await {
                    Read::Line(line) => buf.push_str(&line),
                    Read::End => {
                        eof = true;
                        if interactive {
                            let _ = self.io.stderr.write_str("\n").await;
                        }
                    }
                    Read::Interrupted => {
                        buf.clear();
                        self.status = 130;
                        let _ = self.io.stderr.write_str("\n").await;
                        continue;
                    }
                }
                loop {
                    match parser::parse_next(&buf, eof) {
                        Ok(Next::NeedMore(None)) => continue 'session,
                        Ok(Next::NeedMore(Some(end))) => {
                            if !self.read_heredoc(&source, &end, &mut buf).await {
                                eof = true;
                            }
                        }
                        Ok(Next::Complete(list, used)) => {
                            buf.drain(..used.min(buf.len()));
                            if list.items.is_empty() {
                                if buf.is_empty() {
                                    continue 'session;
                                }
                                continue;
                            }
                            match self.run_interruptible(&list, term.as_ref()).await {
                                Err(Flow::Exit(status)) => return self.finish(status).await,
                                Ok(status) | Err(Flow::Return(status)) => self.status = status,
                                Err(Flow::Break(_) | Flow::Continue(_)) => {}
                            }
                            if buf.is_empty() {
                                continue 'session;
                            }
                        }
                        Err(e) => {
                            self.error(&e.to_string()).await;
                            if !interactive {
                                return self.finish(2).await;
                            }
                            self.status = 2;
                            buf.clear();
                            continue 'session;
                        }
                    }
                }
            }
            let status = self.status;
            self.finish(status).await
        })
    }

    /// Reads the lines of an open here-document into `buf`, up to and including its delimiter
    /// line; `false` when the input ended first.
    async fn read_heredoc(&mut self, source: &Input, end: &HereDocEnd, buf: &mut String) -> bool {
        loop {
            let Some(line) = source.read_line(MAX_LINE).await else {
                return false;
            };
            let line = String::from_utf8_lossy(&line).into_owned();
            let closes = end.closes(line.strip_suffix('\n').unwrap_or(&line));
            buf.push_str(&line);
            if closes {
                return true;
            }
        }
    }

    /// Reads one line of the script; on a terminal, `^C` abandons the line.
    async fn read_script_line(&mut self, source: &Input, term: Option<&Terminal>) -> Read {
        let read = async {
            match source.read_line(MAX_LINE).await {
                Some(line) => Read::Line(String::from_utf8_lossy(&line).into_owned()),
                None => Read::End,
            }
        };
        let Some(term) = term else {
            return read.await;
        };
        let interrupted = foreground(term, &self.cancel);
        tokio::select! {
            biased;
            () = interrupted.cancelled() => Read::Interrupted,
            r = read => r,
        }
    }

    /// Runs one command line read from the stream; on a terminal, as the foreground job, which
    /// `^C` interrupts (status 130, and a newline before the next prompt, as dash prints).
    async fn run_interruptible(&mut self, list: &List, term: Option<&Terminal>) -> Res {
        let Some(term) = term else {
            return self.run_list(list).await;
        };
        let job = foreground(term, &self.cancel);
        let saved = std::mem::replace(&mut self.cancel, job.clone());
        let r = tokio::select! {
            biased;
            () = job.cancelled() => Err(130),
            r = self.run_list(list) => Ok(r),
        };
        self.cancel = saved;
        match r {
            Ok(r) => r,
            Err(status) => {
                self.status = status;
                let _ = self.io.stderr.write_str("\n").await;
                Ok(status)
            }
        }
    }

    /// Prints `PS1` (a new command) or `PS2` (a continuation line) on standard error.
    async fn prompt(&mut self, first: bool) {
        let (name, default) = if first {
            ("PS1", DEFAULT_PS1)
        } else {
            ("PS2", DEFAULT_PS2)
        };
        let text = self.var(name).unwrap_or_else(|| default.to_string());
        let _ = self.io.stderr.write_str(&text).await;
    }
}

/// Makes a new job, child of `parent`, the terminal's foreground: `^C` cancels it.
fn foreground(term: &Terminal, parent: &CancellationToken) -> CancellationToken {
    let job = parent.child_token();
    let cancel = job.clone();
    term.set_foreground(Some(Arc::new(move || cancel.cancel())));
    job
}

/// The primary prompt of an interactive shell: `# `, as dash gives root (containers here run
/// as root).
pub(crate) const DEFAULT_PS1: &str = "# ";
/// The prompt for a command's continuation lines.
pub(crate) const DEFAULT_PS2: &str = "> ";
