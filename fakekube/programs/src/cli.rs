//! The command-line conventions every program shares: GNU-style options ([`getopt`]), usage
//! errors, `-` for standard input, and writing to standard output with SIGPIPE's status.

use bytes::Bytes;

use fakekube_runtime::fs::FsError;
use fakekube_runtime::io::{Input, WriteError};
use fakekube_runtime::process::{BoxFuture, Process};

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
pub(crate) fn open_input(proc: &Process, name: &str) -> Result<Input, FsError> {
    if name == "-" {
        Ok(proc.stdin.clone())
    } else {
        Input::open(&proc.fs, &proc.path(name), &proc.stdio())
    }
}

/// Prints a usage error and GNU's hint; returns `code`.
pub(crate) fn usage<'a>(proc: &'a Process, msg: &'a str, code: i32) -> BoxFuture<'a, i32> {
    Box::pin(async move {
        proc.err(msg).await;
        proc.err_line(format!(
            "Try '{} --help' for more information.\n",
            proc.name()
        ))
        .await;
        code
    })
}

/// Most bytes a program that needs all of its input at once (`sort`, `tar`, `sed -i`) reads.
pub(crate) const MAX_INPUT: usize = fakekube_runtime::fs::MAX_FILE_SIZE;

/// Reads an operand whole (`-` is stdin); on failure prints BusyBox's `NAME: can't open
/// 'FILE': REASON` and gives `None`.
pub(crate) async fn slurp(proc: &Process, name: &str) -> Option<Vec<u8>> {
    match open_input(proc, name) {
        Ok(input) => Some(input.read_to_end(MAX_INPUT).await),
        Err(e) => {
            proc.err(&format!("can't open '{name}': {e}")).await;
            None
        }
    }
}

/// The exit status of a final write: 0, or the code [`emit`] gave.
pub(crate) async fn finish(proc: &Process, data: impl Into<Bytes>) -> i32 {
    match emit(proc, data).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// Splits input into lines without their newlines (a last line without one counts).
pub(crate) fn lines(data: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    if data.is_empty() || data.ends_with(b"\n") {
        lines.pop();
    }
    lines
}
