//! Programs that describe the system and the user: `uname`, `id`, `whoami`, `hostname`.

use super::cli::{emit, getopt, usage};
use crate::process::Process;

/// `uname [-asnrvmo]`.
pub(crate) async fn uname(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "asnrvmpio", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let host = proc.var("HOSTNAME").unwrap_or("localhost").to_string();
    let all = p.has('a');
    let fields = [
        ('s', "Linux".to_string()),
        ('n', host),
        ('r', "6.1.0-fakekube".to_string()),
        ('v', "#1 SMP".to_string()),
        ('m', "x86_64".to_string()),
        ('o', "GNU/Linux".to_string()),
    ];
    let mut chosen: Vec<String> = fields
        .iter()
        .filter(|(c, _)| all || p.has(*c))
        .map(|(_, v)| v.clone())
        .collect();
    if chosen.is_empty() {
        chosen.push("Linux".into());
    }
    match emit(&proc, format!("{}\n", chosen.join(" "))).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `id [-u|-g|-G] [-n]`: always root.
pub(crate) async fn id(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "ugGnr", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let out = if p.has('u') || p.has('g') || p.has('G') {
        if p.has('n') { "root\n" } else { "0\n" }
    } else {
        "uid=0(root) gid=0(root) groups=0(root)\n"
    };
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `whoami`.
pub(crate) async fn whoami(proc: Process) -> i32 {
    match emit(&proc, "root\n").await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `hostname`: `$HOSTNAME` (the runtime sets it to the pod name) or `localhost`.
pub(crate) async fn hostname(proc: Process) -> i32 {
    let name = proc.var("HOSTNAME").unwrap_or("localhost").to_string();
    match emit(&proc, format!("{name}\n")).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}
