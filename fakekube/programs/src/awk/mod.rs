//! `awk`, as BusyBox's: `awk [-F SEP] [-v VAR=VAL]… [-f FILE | -e PROGRAM | PROGRAM]
//! [FILE | VAR=VAL]…`. A POSIX awk: patterns (expressions, regular expressions, ranges, BEGIN
//! and END), fields and the special variables, associative arrays, user functions, `print` and
//! `printf` with `>`, `>>` and `|`, `getline` in its forms, and the built-in functions.
//! Errors are BusyBox's: `awk: cmd. line:LINE: MESSAGE` and exit 1.
//!
//! - [`lexer`]: tokens; [`parser`]: the grammar into [`ast`];
//! - [`value`]: values and their conversions; [`format`]: `printf`;
//! - [`interp`]: running a program; [`input`]: the main input and `getline`; [`records`]:
//!   records split by `RS`; [`builtins`]: the
//!   built-in functions;
//! - [`bridge`]: the interpreter runs on a thread of its own (deep recursion, long loops) and
//!   asks the program's future for input, output and commands.
//!
//! Known limits: runtime errors name line 1; `for (k in a)` visits keys in string order;
//! output to `| COMMAND` is given to the command when it is closed (or at the end).

mod ast;
mod bridge;
mod builtins;
mod format;
mod input;
mod interp;
mod lexer;
mod parser;
mod records;
mod value;

use super::cli::usage;
use fakekube_runtime::process::Process;

/// An error that ends awk, or a flow that unwinds through function calls.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Error {
    /// A syntax (or runtime) error at a line: `awk: cmd. line:LINE: MESSAGE`, exit 1.
    Syntax {
        /// The line.
        line: usize,
        /// BusyBox's message.
        msg: String,
    },
    /// A fatal error without a line (`awk: can't open 'FILE': …`), exit 1.
    Fatal(String),
    /// Writing failed: exit with this status (141 for a closed pipe).
    Status(i32),
    /// `exit` inside a function.
    Exit,
    /// `next` inside a function.
    Next,
}

impl Error {
    /// A syntax error at `line`.
    pub(super) fn syntax(line: usize, msg: &str) -> Self {
        Error::Syntax {
            line,
            msg: msg.to_string(),
        }
    }

    /// An error while running (reported at line 1, see the module's limits).
    pub(super) fn runtime(msg: &str) -> Self {
        Error::syntax(1, msg)
    }

    /// A fatal error without a line.
    pub(super) fn fatal(msg: &str) -> Self {
        Error::Fatal(msg.to_string())
    }
}

/// Parses a program (for the property tests): `Err` holds the message.
#[cfg(test)]
fn check_syntax(src: &str) -> Result<(), String> {
    parser::parse(src).map(|_| ()).map_err(|e| format!("{e:?}"))
}

/// `awk`.
pub(crate) async fn awk(proc: Process) -> i32 {
    let args = proc.args().to_vec();
    let mut sources: Vec<String> = Vec::new();
    let mut assigns: Vec<String> = Vec::new();
    let mut fs: Option<String> = None;
    let mut i = 0;
    // Options stop at the first operand, as getopt with a leading `+` does in BusyBox.
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        i += 1;
        let (opt, inline) = (a.chars().nth(1).unwrap_or('-'), &a[a.len().min(2)..]);
        let value = |i: &mut usize| -> Option<String> {
            if inline.is_empty() {
                let v = args.get(*i).cloned();
                *i += 1;
                v
            } else {
                Some(inline.to_string())
            }
        };
        match opt {
            'F' => match value(&mut i) {
                Some(v) => fs = Some(input::unescape(&v)),
                None => return usage(&proc, "option requires an argument -- 'F'", 1).await,
            },
            'v' => match value(&mut i) {
                Some(v) if v.contains('=') => assigns.push(v),
                _ => return usage(&proc, "option requires an argument -- 'v'", 1).await,
            },
            'f' => {
                let Some(file) = value(&mut i) else {
                    return usage(&proc, "option requires an argument -- 'f'", 1).await;
                };
                match proc.fs.read(&proc.path(&file)) {
                    Ok(text) => sources.push(String::from_utf8_lossy(&text).into_owned()),
                    Err(e) => {
                        proc.err(&format!("can't open '{file}': {e}")).await;
                        return 1;
                    }
                }
            }
            'e' => match value(&mut i) {
                Some(v) => sources.push(v),
                None => return usage(&proc, "option requires an argument -- 'e'", 1).await,
            },
            'W' => proc.err("warning: option -W is ignored").await,
            other => return usage(&proc, &format!("invalid option -- '{other}'"), 1).await,
        }
    }
    if sources.is_empty() {
        let Some(program) = args.get(i) else {
            return usage(&proc, "missing program", 1).await;
        };
        sources.push(program.clone());
        i += 1;
    }
    let operands: Vec<String> = args.get(i..).unwrap_or_default().to_vec();
    let src = sources.join("\n");
    let (bridge, requests) = bridge::Bridge::new();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let thread_proc = proc.clone();
    let spawned = std::thread::Builder::new()
        .name("awk".into())
        .stack_size(bridge::STACK)
        .spawn(move || {
            let result = run(&thread_proc, &bridge, &src, &operands, fs, &assigns);
            let _ = done_tx.send(result);
        });
    if spawned.is_err() {
        proc.err("can't create a thread: Resource temporarily unavailable")
            .await;
        return 1;
    }
    bridge::serve(requests).await;
    match done_rx.await {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => report(&proc, e).await,
        Err(_) => 1,
    }
}

/// Parses and runs a program on the interpreter's thread.
fn run(
    proc: &Process,
    bridge: &bridge::Bridge,
    src: &str,
    operands: &[String],
    fs: Option<String>,
    assigns: &[String],
) -> Result<i32, Error> {
    let prog = parser::parse(src)?;
    let mut it = interp::Interp::new(proc, bridge, &prog, operands);
    if let Some(fs) = fs {
        it.set_global("FS", value::Value::Str(fs));
    }
    for a in assigns {
        it.assign_operand(a);
    }
    match it.run() {
        Ok(code) => Ok(code),
        Err(e) => {
            let _ = it.flush();
            Err(e)
        }
    }
}

/// Prints an error as BusyBox does and gives the exit status.
async fn report(proc: &Process, e: Error) -> i32 {
    match e {
        Error::Syntax { line, msg } => {
            proc.err(&format!("cmd. line:{line}: {msg}")).await;
            1
        }
        Error::Fatal(msg) => {
            proc.err(&msg).await;
            1
        }
        Error::Status(code) => code,
        Error::Exit | Error::Next => 0,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_lexer_and_parser_never_panic_on_any_text(src in "\\PC{0,200}") {
            let _ = super::check_syntax(&src);
        }

        #[test]
        fn the_parser_never_panics_on_awk_like_text(
            src in "[ a-z0-9$(){};,+*/%^!<>=~?:\"\\[\\]\\n|&-]{0,120}"
        ) {
            let _ = super::check_syntax(&src);
        }
    }
}
