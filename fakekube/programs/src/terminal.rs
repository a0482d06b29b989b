//! Programs about the terminal on standard input: `tty` and `stty`.

use super::cli::emit;
use fakekube_runtime::process::Process;
use fakekube_runtime::tty::{Modes, TTY_NAME};

/// `tty [-s]`: the terminal's name, or `not a tty` (exit 1).
pub(crate) async fn tty(proc: Process) -> i32 {
    let silent = proc.args().iter().any(|a| a == "-s");
    let (text, status) = match proc.stdin.tty().await {
        Some(_) => (format!("{TTY_NAME}\n"), 0),
        None => ("not a tty\n".to_string(), 1),
    };
    if silent {
        return status;
    }
    match emit(&proc, text).await {
        Ok(()) => status,
        Err(code) => code,
    }
}

/// `stty [-a | size | SETTING…]` on the terminal of standard input: shows the size and modes,
/// or switches `echo`, `icanon`, `isig`, `icrnl`, `onlcr`/`opost` (each with `-` to turn it
/// off), `raw`, `-raw`/`cooked`/`sane`. `rows N` and `cols N` are accepted and change nothing:
/// the client's resize messages set the size.
pub(crate) async fn stty(proc: Process) -> i32 {
    let Some(term) = proc.stdin.tty().await else {
        proc.err("standard input: Not a tty").await;
        return 1;
    };
    let args = proc.args();
    let size = term.size();
    let text = match args.first().map(String::as_str) {
        None => Some("speed 38400 baud; line = 0;\n".to_string()),
        Some("size") => Some(format!("{} {}\n", size.rows, size.cols)),
        Some("-a" | "--all") => {
            let m = term.modes();
            let flag = |on: bool, name: &str| format!("{}{name}", if on { "" } else { "-" });
            Some(format!(
                "speed 38400 baud; rows {}; columns {}; line = 0;\n\
                 intr = ^C; quit = ^\\; erase = ^?; kill = ^U; eof = ^D; werase = ^W;\n\
                 {} {}\n{} {}\n{} {} echoe echok echoctl\n",
                size.rows,
                size.cols,
                flag(m.icrnl, "icrnl"),
                "ixon",
                flag(m.onlcr, "opost"),
                flag(m.onlcr, "onlcr"),
                flag(m.isig, "isig"),
                flag(m.icanon, "icanon") + " " + &flag(m.echo, "echo"),
            ))
        }
        Some(_) => None,
    };
    if let Some(text) = text {
        return match emit(&proc, text).await {
            Ok(()) => 0,
            Err(code) => code,
        };
    }
    let mut modes = term.modes();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        let (on, name) = match a.strip_prefix('-') {
            Some(n) => (false, n),
            None => (true, a.as_str()),
        };
        match name {
            "echo" => modes.echo = on,
            "icanon" => modes.icanon = on,
            "isig" => modes.isig = on,
            "icrnl" => modes.icrnl = on,
            "onlcr" | "opost" => modes.onlcr = on,
            "raw" if on => {
                modes = Modes {
                    icanon: false,
                    isig: false,
                    icrnl: false,
                    onlcr: false,
                    ..modes
                }
            }
            "raw" | "cooked" | "sane" => modes = Modes::default(),
            "rows" | "cols" | "columns" if on => {
                if args.get(i).and_then(|v| v.parse::<u16>().ok()).is_none() {
                    proc.err(&format!("invalid argument '{a}'")).await;
                    return 1;
                }
                i += 1;
            }
            _ => {
                proc.err(&format!("invalid argument '{a}'")).await;
                return 1;
            }
        }
    }
    term.set_modes(modes);
    0
}
