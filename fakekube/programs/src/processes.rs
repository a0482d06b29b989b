//! Programs that look at or signal the container's processes: `ps` and `kill`, as BusyBox
//! words them.

use std::time::SystemTime;

use super::cli::emit;
use fakekube_runtime::process::{Process, ProcessInfo, Signal, SignalError};

/// A `ps -o` column: its name, header and width (negative: left-aligned).
const COLUMNS: &[(&str, &str, i32)] = &[
    ("pid", "PID", 5),
    ("ppid", "PPID", 5),
    ("user", "USER", -8),
    ("time", "TIME", 5),
    ("etime", "ELAPSED", 7),
    ("comm", "COMMAND", 0),
    ("args", "COMMAND", 0),
];

/// `ps [-o col,…]` (other options, as `aux` or `-ef`, are accepted and change nothing): every
/// process of the container, `PID USER TIME COMMAND` by default.
pub(crate) async fn ps(proc: Process) -> i32 {
    let mut columns: Vec<&str> = vec!["pid", "user", "time", "args"];
    let args = proc.args();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        let list = if a == "-o" {
            let Some(v) = args.get(i) else {
                proc.err("option requires an argument -- 'o'").await;
                return 1;
            };
            i += 1;
            v.as_str()
        } else if let Some(v) = a.strip_prefix("-o") {
            v
        } else {
            continue;
        };
        columns.clear();
        for name in list.split(',').map(|c| c.split('=').next().unwrap_or(c)) {
            if !COLUMNS.iter().any(|(n, _, _)| *n == name) {
                proc.err(&format!("bad -o argument '{name}'")).await;
                return 1;
            }
            columns.push(
                COLUMNS
                    .iter()
                    .find(|(n, _, _)| *n == name)
                    .map_or("", |c| c.0),
            );
        }
    }
    let mut out = row(&columns, |c| header(c).to_string(), true);
    let now = SystemTime::now();
    for p in proc.processes.list() {
        out.push_str(&row(&columns, |c| cell(c, &p, now), false));
    }
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// The header of a column.
fn header(column: &str) -> &'static str {
    COLUMNS
        .iter()
        .find(|(n, _, _)| *n == column)
        .map_or("", |c| c.1)
}

/// One output line: each column at its width (headers all left-aligned), separated by a space.
fn row(columns: &[&str], value: impl Fn(&str) -> String, header: bool) -> String {
    let cells: Vec<String> = columns
        .iter()
        .map(|c| {
            let width = COLUMNS.iter().find(|(n, _, _)| n == c).map_or(0, |c| c.2);
            let v = value(c);
            match width {
                0 => v,
                w if w < 0 || header => format!("{v:<width$}", width = w.unsigned_abs() as usize),
                w => format!("{v:>width$}", width = w as usize),
            }
        })
        .collect();
    let mut line = cells.join(" ").trim_end().to_string();
    line.push('\n');
    line
}

/// One cell of a process's row.
fn cell(column: &str, p: &ProcessInfo, now: SystemTime) -> String {
    match column {
        "pid" => p.pid.to_string(),
        "ppid" => p.ppid.to_string(),
        "user" => "root".to_string(),
        "time" => "0:00".to_string(),
        "etime" => {
            let secs = now.duration_since(p.started).unwrap_or_default().as_secs();
            format!("{}:{:02}", secs / 60, secs % 60)
        }
        "comm" => p
            .argv
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
            .unwrap_or_default(),
        _ => p.argv.join(" "),
    }
}

/// `kill [-SIG | -s SIG | -n NUM] PID…`, `kill -l [SIG]`: sends a signal (TERM by default) to
/// processes of the container; `-0` only checks that they exist.
pub(crate) async fn kill(proc: Process) -> i32 {
    let args = proc.args();
    let mut signal: Option<Signal> = Some(Signal::Term);
    let mut i = 0;
    match args.first().map(String::as_str) {
        Some("-l") => return list_signals(&proc, args.get(1..).unwrap_or_default()).await,
        Some("-s" | "-n") => {
            let Some(name) = args.get(1) else {
                return usage(&proc).await;
            };
            match parse_signal(name) {
                Ok(s) => signal = s,
                Err(()) => return bad_signal(&proc, name).await,
            }
            i = 2;
        }
        Some("--") => i = 1,
        Some(a) if a.len() > 1 && a.starts_with('-') => {
            match parse_signal(&a[1..]) {
                Ok(s) => signal = s,
                Err(()) => return bad_signal(&proc, &a[1..]).await,
            }
            i = 1;
            if args.get(1).map(String::as_str) == Some("--") {
                i = 2;
            }
        }
        _ => {}
    }
    let pids = args.get(i..).unwrap_or_default();
    if pids.is_empty() {
        return usage(&proc).await;
    }
    let mut status = 0;
    for p in pids {
        let Ok(pid) = p.parse::<u32>() else {
            proc.err(&format!("invalid number '{p}'")).await;
            status = 1;
            continue;
        };
        let sent = match signal {
            None if proc.processes.exists(pid) => Ok(()),
            None => Err(SignalError::NoSuchProcess),
            Some(sig) => proc.processes.signal_from_inside(pid, sig),
        };
        if let Err(e) = sent {
            proc.err(&format!("can't kill pid {pid}: {e}")).await;
            status = 1;
        }
    }
    status
}

/// A signal operand: a name or number; `0` (only check) is `None`.
fn parse_signal(text: &str) -> Result<Option<Signal>, ()> {
    if text == "0" {
        return Ok(None);
    }
    Signal::parse(text).map(Some).ok_or(())
}

/// `kill -l`: every signal as ` N) NAME`; with operands, each number's name or name's number.
async fn list_signals(proc: &Process, which: &[String]) -> i32 {
    let mut out = String::new();
    if which.is_empty() {
        for s in Signal::ALL {
            out.push_str(&format!("{:2}) {}\n", s.number(), s.name()));
        }
    }
    for w in which {
        match Signal::parse(w) {
            Some(s) if w.parse::<i32>().is_ok() => out.push_str(&format!("{}\n", s.name())),
            Some(s) => out.push_str(&format!("{}\n", s.number())),
            None => return bad_signal(proc, w).await,
        }
    }
    match emit(proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `kill: bad signal name 'X'`, exit 1.
async fn bad_signal(proc: &Process, name: &str) -> i32 {
    proc.err(&format!("bad signal name '{name}'")).await;
    1
}

/// The usage line, exit 1.
async fn usage(proc: &Process) -> i32 {
    let _ = proc
        .stderr
        .write_str("Usage: kill [-l] [-SIG] PID...\n")
        .await;
    1
}
