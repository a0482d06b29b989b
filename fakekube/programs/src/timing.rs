//! Programs that wait: `sleep`, `usleep`, `timeout`, which runs a program until a deadline,
//! and `watch`, which runs one again and again.

use std::time::Duration;

use super::cli::usage;
use fakekube_runtime::process::Process;

/// Longest sleep or timeout honoured (about a century: "forever" for a test).
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Parses a duration like `1`, `0.5`, `1s`, `2m`, `1h`, `1d`, `infinity`.
fn parse_duration(s: &str) -> Option<Duration> {
    if s == "infinity" || s == "inf" {
        return Some(FOREVER);
    }
    let (num, mult) = match s.chars().last()? {
        's' => (&s[..s.len() - 1], 1.0),
        'm' => (&s[..s.len() - 1], 60.0),
        'h' => (&s[..s.len() - 1], 3600.0),
        'd' => (&s[..s.len() - 1], 86400.0),
        _ => (s, 1.0),
    };
    if num.is_empty()
        || !num
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == 'e' || c == '+' || c == '-')
    {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    let secs = v * mult;
    if secs >= FOREVER.as_secs_f64() {
        return Some(FOREVER);
    }
    Duration::try_from_secs_f64(secs).ok()
}

/// `sleep DURATION…` (summed); cancellable.
pub(crate) async fn sleep(proc: Process) -> i32 {
    if proc.args().is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let mut total = Duration::ZERO;
    for a in proc.args() {
        match parse_duration(a) {
            Some(d) => total = total.saturating_add(d).min(FOREVER),
            None => return usage(&proc, &format!("invalid time interval '{a}'"), 1).await,
        }
    }
    tokio::select! {
        _ = tokio::time::sleep(total) => 0,
        _ = proc.cancel.cancelled() => 143,
    }
}

/// `usleep MICROSECONDS`; cancellable.
pub(crate) async fn usleep(proc: Process) -> i32 {
    let Some(us) = proc.args().first().and_then(|a| a.parse::<u64>().ok()) else {
        return usage(&proc, "missing or invalid operand", 1).await;
    };
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_micros(us)) => 0,
        _ = proc.cancel.cancelled() => 143,
    }
}

/// `watch [-t] [-n SECONDS] COMMAND…`, as BusyBox's: clears the screen, prints `Every Ns:
/// COMMAND` with the time at the right of an 80-column line (not with `-t`), a blank line,
/// then runs the command through `sh -c`; again every N seconds (2) until killed.
pub(crate) async fn watch(proc: Process) -> i32 {
    let args = proc.args();
    let mut i = 0;
    let (mut title, mut period) = (true, Duration::from_secs(2));
    while let Some(a) = args.get(i) {
        if a == "-t" {
            title = false;
        } else if a == "-n" || a.starts_with("-n") {
            let v = if a == "-n" {
                i += 1;
                args.get(i).cloned().unwrap_or_default()
            } else {
                a[2..].to_string()
            };
            match parse_duration(&v) {
                Some(d) if !d.is_zero() => period = d,
                _ => return usage(&proc, &format!("invalid number '{v}'"), 1).await,
            }
        } else if a.starts_with('-') && a.len() > 1 && a != "-d" {
            return usage(&proc, &format!("invalid option -- '{}'", &a[1..2]), 1).await;
        } else if a != "-d" {
            break;
        }
        i += 1;
    }
    let cmd = args[i.min(args.len())..].join(" ");
    if cmd.is_empty() {
        return usage(&proc, "missing command", 1).await;
    }
    const WIDTH: usize = 80;
    loop {
        let mut screen = String::from("\x1b[H\x1b[J");
        if title {
            let head = format!("Every {:.1}s: {cmd:<WIDTH$}", period.as_secs_f64());
            let head: String = head.chars().take(WIDTH - 20).collect();
            let now = time::OffsetDateTime::from_unix_timestamp(fakekube_runtime::fs::now())
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
            screen.push_str(&format!(
                "{head}{:04}-{:02}-{:02} {:02}:{:02}:{:02}\n\n",
                now.year(),
                u8::from(now.month()),
                now.day(),
                now.hour(),
                now.minute(),
                now.second()
            ));
        }
        if let Err(code) = super::cli::emit(&proc, screen).await {
            return code;
        }
        proc.child(vec!["sh".into(), "-c".into(), cmd.clone()])
            .spawn_as("watch: ")
            .await;
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = proc.cancel.cancelled() => return 143,
        }
    }
}

/// Maps a signal name or number to its number (TERM when unknown).
fn signal_number(s: &str) -> i32 {
    match s.trim_start_matches("SIG") {
        "HUP" | "1" => 1,
        "INT" | "2" => 2,
        "QUIT" | "3" => 3,
        "KILL" | "9" => 9,
        "USR1" | "10" => 10,
        "USR2" | "12" => 12,
        "ALRM" | "14" => 14,
        _ => 15,
    }
}

/// `timeout [-s SIG] [-k DUR] [--preserve-status] DURATION command [arg…]`: 124 when the
/// deadline passes (the command and everything it started are cancelled).
pub(crate) async fn timeout(proc: Process) -> i32 {
    let args = proc.args().to_vec();
    let mut i = 0;
    let mut signal = 15;
    let mut preserve = false;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-s" | "--signal" | "-k" | "--kill-after" => {
                i += 1;
                let Some(v) = args.get(i) else {
                    return usage(
                        &proc,
                        &format!(
                            "option requires an argument -- '{}'",
                            a.trim_start_matches('-')
                        ),
                        125,
                    )
                    .await;
                };
                if a == "-s" || a == "--signal" {
                    signal = signal_number(v);
                }
            }
            "--preserve-status" => preserve = true,
            "--foreground" | "-v" | "--verbose" | "-f" => {}
            "--" => {
                i += 1;
                break;
            }
            s if s.starts_with("--signal=") => signal = signal_number(&s[9..]),
            s if s.starts_with("--kill-after=") => {}
            s if s.starts_with("-s") && s.len() > 2 => signal = signal_number(&s[2..]),
            s if s.starts_with("-k") && s.len() > 2 => {}
            s if s.starts_with('-') && s.len() > 1 && parse_duration(s).is_none() => {
                return usage(&proc, &format!("invalid option -- '{}'", &s[1..2]), 125).await;
            }
            _ => break,
        }
        i += 1;
    }
    let Some(dur_text) = args.get(i) else {
        return usage(&proc, "missing operand", 125).await;
    };
    let Some(dur) = parse_duration(dur_text) else {
        return usage(&proc, &format!("invalid time interval '{dur_text}'"), 125).await;
    };
    let command = args.get(i + 1..).unwrap_or_default().to_vec();
    if command.is_empty() {
        return usage(&proc, "missing operand", 125).await;
    }
    let token = proc.cancel.child_token();
    let mut child = proc.child(command);
    child.cancel = token.clone();
    let run = child.spawn_as("timeout: failed to run command ");
    if dur.is_zero() {
        return run.await;
    }
    tokio::select! {
        status = run => status,
        _ = tokio::time::sleep(dur) => {
            token.cancel();
            if preserve { 128 + signal } else { 124 }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_suffixes_and_refuse_garbage() {
        assert_eq!(parse_duration("1"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("infinity"), Some(FOREVER));
        assert_eq!(parse_duration("1e308"), Some(FOREVER));
        assert_eq!(parse_duration("nan"), None);
        assert_eq!(parse_duration("-1"), None);
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration(""), None);
    }
}
