//! The programs every container has: [`TABLE`], one entry per program (name → handler), from
//! which the registry fills `/bin` and finds a program by name. Adding a program is writing its
//! handler in the file of its family and adding its entry.
//!
//! - [`files`]: `cat`, `ls`, `stat`, `mkdir`, `rmdir`, `rm`, `touch`, `chmod`, `cp`, `mv`, `head`,
//!   `tail`, `wc`, `tee`;
//! - [`text`]: `echo`, `printf`, `yes`, `seq`, `dirname`, `basename`, `test`/`[`, `pwd`, `env`,
//!   `printenv`, `sleep`, `timeout`, `uname`, `id`, `whoami`, `hostname`;
//! - `true` and `false`, here; `sh` (see [`crate::shell`]).
//!
//! Messages and exit codes follow GNU coreutils where the tools differ from BusyBox.

pub(crate) mod files;
pub(crate) mod text;

use bytes::Bytes;

use crate::io::{Input, WriteError};
use crate::process::{Process, Program, Programs};
use crate::shell;

/// The program table: every program a container has, each with its `/bin` entry.
pub(crate) static TABLE: &[Program] = &[
    Program::new("sh", |p| Box::pin(shell::sh_main(p))),
    Program::new("cat", |p| Box::pin(files::cat(p))),
    Program::new("ls", |p| Box::pin(files::ls(p))),
    Program::new("stat", |p| Box::pin(files::stat(p))),
    Program::new("mkdir", |p| Box::pin(files::mkdir(p))),
    Program::new("rmdir", |p| Box::pin(files::rmdir(p))),
    Program::new("rm", |p| Box::pin(files::rm(p))),
    Program::new("touch", |p| Box::pin(files::touch(p))),
    Program::new("chmod", |p| Box::pin(files::chmod(p))),
    Program::new("cp", |p| Box::pin(files::cp(p))),
    Program::new("mv", |p| Box::pin(files::mv(p))),
    Program::new("head", |p| Box::pin(files::head(p))),
    Program::new("tail", |p| Box::pin(files::tail(p))),
    Program::new("wc", |p| Box::pin(files::wc(p))),
    Program::new("tee", |p| Box::pin(files::tee(p))),
    Program::new("echo", |p| Box::pin(text::echo(p))),
    Program::new("printf", |p| Box::pin(text::printf(p))),
    Program::new("yes", |p| Box::pin(text::yes(p))),
    Program::new("seq", |p| Box::pin(text::seq(p))),
    Program::new("dirname", |p| Box::pin(text::dirname(p))),
    Program::new("basename", |p| Box::pin(text::basename(p))),
    Program::new("test", |p| Box::pin(text::test(p))),
    Program::new("[", |p| Box::pin(text::test(p))),
    Program::new("true", |_| Box::pin(async { 0 })),
    Program::new("false", |_| Box::pin(async { 1 })),
    Program::new("pwd", |p| Box::pin(text::pwd(p))),
    Program::new("env", |p| Box::pin(text::env(p))).in_dirs(&["/bin", "/usr/bin"]),
    Program::new("printenv", |p| Box::pin(text::printenv(p))),
    Program::new("sleep", |p| Box::pin(text::sleep(p))),
    Program::new("timeout", |p| Box::pin(text::timeout(p))),
    Program::new("uname", |p| Box::pin(text::uname(p))),
    Program::new("id", |p| Box::pin(text::id(p))),
    Program::new("whoami", |p| Box::pin(text::whoami(p))),
    Program::new("hostname", |p| Box::pin(text::hostname(p))),
];

// Defined here, beside the table, so that the registry (crate::process) never names a program:
// the shell and the programs depend on the registry, not the reverse.
impl Programs {
    /// Every program of the runtime (`sh`, `cat`, `ls`, ...), with nothing registered yet.
    pub fn new() -> Self {
        Programs::with_table(TABLE)
    }
}

impl Default for Programs {
    fn default() -> Self {
        Self::new()
    }
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
pub(crate) fn open_input(proc: &Process, name: &str) -> Result<Input, crate::fs::FsError> {
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
