//! The built-in programs, each behind a `/bin` entry of every pod.
//!
//! - [`files`]: `cat`, `ls`, `stat`, `mkdir`, `rmdir`, `rm`, `touch`, `chmod`, `cp`, `mv`, `head`,
//!   `tail`, `wc`, `tee`;
//! - [`text`]: `echo`, `printf`, `yes`, `seq`, `dirname`, `basename`, `test`/`[`, `true`, `false`,
//!   `pwd`, `env`, `printenv`, `sleep`, `timeout`, `uname`, `id`, `whoami`, `hostname`;
//! - `sh` (see [`super::shell`]).
//!
//! Messages and exit codes follow GNU coreutils where the tools differ from BusyBox.

pub(crate) mod files;
pub(crate) mod text;

use std::sync::Arc;

use bytes::Bytes;

use super::io::{Input, WriteError};
use super::process::{BoxFuture, Handler, Process};

/// Every built-in program name (each gets a `/bin` entry).
pub(crate) const BUILTIN_NAMES: &[&str] = &[
    "sh", "cat", "ls", "stat", "mkdir", "rmdir", "rm", "touch", "chmod", "cp", "mv", "head",
    "tail", "wc", "tee", "echo", "printf", "yes", "seq", "dirname", "basename", "test", "[",
    "true", "false", "pwd", "env", "printenv", "sleep", "timeout", "uname", "id", "whoami",
    "hostname",
];

/// The built-in program called `name`.
pub(crate) fn builtin(name: &str) -> Option<Handler> {
    let f: fn(Process) -> BoxFuture<'static, i32> = match name {
        "sh" => |c| Box::pin(super::shell::sh_main(c)),
        "cat" => |c| Box::pin(files::cat(c)),
        "ls" => |c| Box::pin(files::ls(c)),
        "stat" => |c| Box::pin(files::stat(c)),
        "mkdir" => |c| Box::pin(files::mkdir(c)),
        "rmdir" => |c| Box::pin(files::rmdir(c)),
        "rm" => |c| Box::pin(files::rm(c)),
        "touch" => |c| Box::pin(files::touch(c)),
        "chmod" => |c| Box::pin(files::chmod(c)),
        "cp" => |c| Box::pin(files::cp(c)),
        "mv" => |c| Box::pin(files::mv(c)),
        "head" => |c| Box::pin(files::head(c)),
        "tail" => |c| Box::pin(files::tail(c)),
        "wc" => |c| Box::pin(files::wc(c)),
        "tee" => |c| Box::pin(files::tee(c)),
        "echo" => |c| Box::pin(text::echo(c)),
        "printf" => |c| Box::pin(text::printf(c)),
        "yes" => |c| Box::pin(text::yes(c)),
        "seq" => |c| Box::pin(text::seq(c)),
        "dirname" => |c| Box::pin(text::dirname(c)),
        "basename" => |c| Box::pin(text::basename(c)),
        "test" | "[" => |c| Box::pin(text::test(c)),
        "true" => |_| Box::pin(async { 0 }),
        "false" => |_| Box::pin(async { 1 }),
        "pwd" => |c| Box::pin(text::pwd(c)),
        "env" => |c| Box::pin(text::env(c)),
        "printenv" => |c| Box::pin(text::printenv(c)),
        "sleep" => |c| Box::pin(text::sleep(c)),
        "timeout" => |c| Box::pin(text::timeout(c)),
        "uname" => |c| Box::pin(text::uname(c)),
        "id" => |c| Box::pin(text::id(c)),
        "whoami" => |c| Box::pin(text::whoami(c)),
        "hostname" => |c| Box::pin(text::hostname(c)),
        _ => return None,
    };
    Some(Arc::new(f))
}

/// Options parsed GNU style: short flags (clustered, with values), long options, operands.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// Short options in order, with their values.
    pub(crate) short: Vec<(char, Option<String>)>,
    /// Long options (`--name[=value]`) in order.
    pub(crate) long: Vec<(String, Option<String>)>,
    /// Operands.
    pub(crate) operands: Vec<String>,
}

impl Parsed {
    /// Whether a short flag was given.
    pub(crate) fn has(&self, c: char) -> bool {
        self.short.iter().any(|(o, _)| *o == c)
    }

    /// The last value of a short option.
    pub(crate) fn value(&self, c: char) -> Option<&str> {
        self.short
            .iter()
            .rev()
            .find(|(o, _)| *o == c)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether a long option was given.
    pub(crate) fn has_long(&self, name: &str) -> bool {
        self.long.iter().any(|(o, _)| o == name)
    }

    /// The last value of a long option.
    pub(crate) fn long_value(&self, name: &str) -> Option<&str> {
        self.long
            .iter()
            .rev()
            .find(|(o, _)| o == name)
            .and_then(|(_, v)| v.as_deref())
    }
}

/// Parses options anywhere among the arguments (until `--`). `allowed`: every accepted short
/// option; `with_value`: short options that take a value; `long_with_value` and `long_flags`: the
/// accepted long options with and without a value. Errors are GNU messages
/// (`invalid option -- 'q'`, `unrecognized option '--x'`).
pub(crate) fn getopt(
    args: &[String],
    allowed: &str,
    with_value: &str,
    long_with_value: &[&str],
    long_flags: &[&str],
) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if a == "--" {
            p.operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            };
            if !long_with_value.contains(&name.as_str()) && !long_flags.contains(&name.as_str()) {
                return Err(format!("unrecognized option '--{name}'"));
            }
            let value = if value.is_none() && long_with_value.contains(&name.as_str()) {
                let v = args
                    .get(i)
                    .cloned()
                    .ok_or_else(|| format!("option '--{name}' requires an argument"))?;
                i += 1;
                Some(v)
            } else {
                value
            };
            p.long.push((name, value));
            continue;
        }
        if a.len() < 2 || !a.starts_with('-') {
            p.operands.push(a.clone());
            continue;
        }
        let chars: Vec<char> = a.chars().skip(1).collect();
        let mut k = 0;
        while let Some(&c) = chars.get(k) {
            k += 1;
            if !allowed.contains(c) {
                return Err(format!("invalid option -- '{c}'"));
            }
            if with_value.contains(c) {
                let rest: String = chars[k..].iter().collect();
                let v = if rest.is_empty() {
                    let v = args
                        .get(i)
                        .cloned()
                        .ok_or_else(|| format!("option requires an argument -- '{c}'"))?;
                    i += 1;
                    v
                } else {
                    rest
                };
                p.short.push((c, Some(v)));
                break;
            }
            p.short.push((c, None));
        }
    }
    Ok(p)
}

/// Writes to stdout; on failure returns the exit code: 141 (as if killed by SIGPIPE) for a closed
/// reader, 1 after a `NAME: write error: …` message otherwise.
pub(crate) async fn emit(proc: &Process, data: impl Into<Bytes>) -> Result<(), i32> {
    match proc.out(data).await {
        Ok(()) => Ok(()),
        Err(WriteError::BrokenPipe) => Err(141),
        Err(e) => {
            proc.err(&format!("write error: {e}")).await;
            Err(1)
        }
    }
}

/// Opens an operand for reading: `-` is stdin.
pub(crate) fn open_input(proc: &Process, name: &str) -> Result<Input, super::fs::FsError> {
    if name == "-" {
        Ok(proc.stdin.clone())
    } else {
        Input::open(&proc.fs, &proc.path(name))
    }
}

/// Prints a usage error and GNU's hint; returns `code`.
pub(crate) async fn usage(proc: &Process, msg: &str, code: i32) -> i32 {
    proc.err(msg).await;
    let _ = proc
        .stderr
        .write_str(&format!(
            "Try '{} --help' for more information.\n",
            proc.name()
        ))
        .await;
    code
}
