//! A small POSIX shell (dash/BusyBox flavoured) for the runtime's `sh`.
//!
//! - [`parser`]: lexer and parser to the [`ast`];
//! - [`interp`]: the interpreter: control flow, simple commands, expansion, redirections and
//!   the shell builtins;
//! - [`pattern`] and [`arith`]: `case`/`${x%pat}`/glob patterns and `$((…))`.
//!
//! Known limitations: only file descriptors 0–2; `local` is not scoped; trapped signals run
//! between commands (at once in `wait`); no job control, aliases, `getopts` or `$'…'` quoting.

pub mod arith;
pub(crate) mod ast;
pub(crate) mod interp;
pub(crate) mod parser;
pub mod pattern;

pub use interp::builtin_names;
use interp::{MAX_SCRIPT, Opts, Shell};

use crate::process::Process;

/// The `sh` program: `sh [-eux] [-o opt] -c 'script' [name [args…]]`, `sh file [args…]`, or a
/// script on standard input (`sh`, `sh -s [args…]`, `sh -i`), run one command at a time as it
/// is read; interactive with `-i` or when stdin and stdout are a terminal.
pub async fn sh_main(proc: Process) -> i32 {
    let args: Vec<String> = proc.args().to_vec();
    let mut opts = Opts::default();
    let mut command_mode = false;
    let mut from_stdin = false;
    let mut force_interactive = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        let on = a.starts_with('-');
        if !(on || a.starts_with('+')) || a.len() < 2 {
            break;
        }
        for c in a.chars().skip(1) {
            match c {
                'c' => command_mode = true,
                's' => from_stdin = true,
                'e' => opts.errexit = on,
                'u' => opts.nounset = on,
                'x' => opts.xtrace = on,
                'o' => {
                    i += 1;
                    match args.get(i).map(String::as_str) {
                        Some("errexit") => opts.errexit = on,
                        Some("nounset") => opts.nounset = on,
                        Some("xtrace") => opts.xtrace = on,
                        Some("pipefail") => opts.pipefail = on,
                        _ => {}
                    }
                }
                'i' => force_interactive = on,
                'l' | 'v' | 'f' | 'm' | 'a' | 'h' | 'C' | 'n' | 'b' => {}
                other => {
                    let _ = Box::pin(
                        proc.stderr
                            .write_str(&format!("sh: -{other}: invalid option\n")),
                    )
                    .await;
                    return 2;
                }
            }
        }
        i += 1;
    }
    let rest: Vec<String> = args.get(i..).unwrap_or_default().to_vec();
    let argv0 = proc.argv.first().cloned().unwrap_or_else(|| "sh".into());
    let (script, arg0, params) = if command_mode {
        let Some(script) = rest.first().cloned() else {
            let _ = Box::pin(proc.stderr.write_str("sh: -c requires an argument\n")).await;
            return 2;
        };
        let arg0 = rest.get(1).cloned().unwrap_or(argv0);
        (script, arg0, rest.get(2..).unwrap_or_default().to_vec())
    } else if let Some(file) = rest.first().filter(|_| !from_stdin) {
        match proc.fs.read(&proc.path(file)) {
            Ok(b) if b.len() <= MAX_SCRIPT => (
                String::from_utf8_lossy(&b).into_owned(),
                file.clone(),
                rest[1..].to_vec(),
            ),
            Ok(_) => {
                let _ = Box::pin(
                    proc.stderr
                        .write_str(&format!("sh: {file}: File too large\n")),
                )
                .await;
                return 2;
            }
            Err(e) => {
                let _ = Box::pin(
                    proc.stderr
                        .write_str(&format!("sh: cannot open {file}: {e}\n")),
                )
                .await;
                return 127;
            }
        }
    } else {
        let source = proc.stdin.clone();
        let on_terminal = source.tty().await.is_some() && proc.stdout.tty().is_some();
        let mut shell = Shell::new(proc, argv0, rest, opts);
        return shell
            .run_stream(source, force_interactive || on_terminal)
            .await;
    };
    let mut shell = Shell::new(proc, arg0, params, opts);
    shell.run_script(&script).await
}
