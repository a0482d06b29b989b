//! Programs that describe the system and the user: `uname`, `id`, `whoami`, `hostname`,
//! `date`, `uptime`, `du`, `df`, `nproc`, and `sync`.

use time::OffsetDateTime;

use super::cli::{emit, finish, getopt, usage};
use fakekube_runtime::fs::{self, NodeKind};
use fakekube_runtime::process::Process;

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

/// When the node booted, for `uptime`: the first time the runtime was asked.
static BOOT: std::sync::LazyLock<std::time::Instant> =
    std::sync::LazyLock::new(std::time::Instant::now);

/// Weekday names, Monday first.
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Formats a UTC time as `strftime` does (the container's zone is UTC).
fn strftime(t: OffsetDateTime, format: &str) -> String {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut pad = None;
        if let Some(&p) = chars.peek()
            && matches!(p, '-' | '_' | '0')
        {
            pad = Some(p);
            chars.next();
        }
        let Some(spec) = chars.next() else {
            out.push('%');
            break;
        };
        let num = |v: i64, width: usize, default_pad: char| -> String {
            match pad.unwrap_or(default_pad) {
                '-' => v.to_string(),
                '_' => format!("{v:>width$}"),
                _ => format!("{v:0width$}"),
            }
        };
        let day = DAYS[t.weekday().number_days_from_monday() as usize];
        let month = t.month().to_string();
        let hour12 = match t.hour() % 12 {
            0 => 12,
            h => h,
        };
        let piece = match spec {
            'a' => day[..3].to_string(),
            'A' => day.to_string(),
            'b' | 'h' => month[..3].to_string(),
            'B' => month,
            'c' => strftime(t, "%a %b %e %H:%M:%S %Y"),
            'C' => num(i64::from(t.year()) / 100, 2, '0'),
            'd' => num(i64::from(t.day()), 2, '0'),
            'D' => strftime(t, "%m/%d/%y"),
            'e' => num(i64::from(t.day()), 2, '_'),
            'F' => strftime(t, "%Y-%m-%d"),
            'H' => num(i64::from(t.hour()), 2, '0'),
            'I' => num(i64::from(hour12), 2, '0'),
            'j' => num(i64::from(t.ordinal()), 3, '0'),
            'k' => num(i64::from(t.hour()), 2, '_'),
            'l' => num(i64::from(hour12), 2, '_'),
            'm' => num(i64::from(u8::from(t.month())), 2, '0'),
            'M' => num(i64::from(t.minute()), 2, '0'),
            'n' => "\n".to_string(),
            'N' => format!("{:09}", t.nanosecond()),
            'p' => if t.hour() < 12 { "AM" } else { "PM" }.to_string(),
            'P' => if t.hour() < 12 { "am" } else { "pm" }.to_string(),
            'r' => strftime(t, "%I:%M:%S %p"),
            'R' => strftime(t, "%H:%M"),
            's' => t.unix_timestamp().to_string(),
            'S' => num(i64::from(t.second()), 2, '0'),
            't' => "\t".to_string(),
            'T' => strftime(t, "%H:%M:%S"),
            'u' => t.weekday().number_from_monday().to_string(),
            'w' => t.weekday().number_days_from_sunday().to_string(),
            'V' => num(i64::from(t.iso_week()), 2, '0'),
            'y' => num(i64::from(t.year()) % 100, 2, '0'),
            'Y' => t.year().to_string(),
            'z' => "+0000".to_string(),
            'Z' => "UTC".to_string(),
            '%' => "%".to_string(),
            other => format!("%{other}"),
        };
        out.push_str(&piece);
    }
    out
}

/// Parses `date -d` text: `@SECONDS`, `now`, `YYYY-MM-DD[ HH:MM[:SS]]` (or with `T`, and a
/// trailing `Z`).
fn parse_date(text: &str) -> Option<OffsetDateTime> {
    let text = text.trim();
    if let Some(secs) = text.strip_prefix('@') {
        return OffsetDateTime::from_unix_timestamp(secs.parse().ok()?).ok();
    }
    if text == "now" || text.is_empty() {
        return Some(OffsetDateTime::now_utc());
    }
    let text = text.trim_end_matches('Z');
    let (date, clock) = match text.split_once([' ', 'T']) {
        Some((d, c)) => (d, Some(c)),
        None => (text, None),
    };
    let mut d = date.split('-');
    let (y, m, day) = (
        d.next()?.parse::<i32>().ok()?,
        d.next()?.parse::<u8>().ok()?,
        d.next()?.parse::<u8>().ok()?,
    );
    if d.next().is_some() {
        return None;
    }
    let date = time::Date::from_calendar_date(y, time::Month::try_from(m).ok()?, day).ok()?;
    let clock = match clock {
        None => time::Time::MIDNIGHT,
        Some(c) => {
            let mut parts = c.split(':');
            let h = parts.next()?.parse().ok()?;
            let min = parts.next()?.parse().ok()?;
            let s = parts.next().map_or(Some(0), |s| s.parse().ok())?;
            if parts.next().is_some() {
                return None;
            }
            time::Time::from_hms(h, min, s).ok()?
        }
    };
    Some(time::PrimitiveDateTime::new(date, clock).assume_utc())
}

/// `date [-u] [-R] [-I[SPEC]] [-d TIME] [+FORMAT]`: the time in UTC (the container's zone).
pub(crate) async fn date(proc: Process) -> i32 {
    let args = proc.args();
    let mut when = None;
    let mut format = "%a %b %e %H:%M:%S %Z %Y".to_string();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        match a.as_str() {
            "-u" | "--utc" | "--universal" => {}
            "-R" | "--rfc-2822" => format = "%a, %d %b %Y %H:%M:%S %z".into(),
            "-d" | "--date" => {
                let Some(v) = args.get(i) else {
                    return usage(&proc, "option requires an argument -- 'd'", 1).await;
                };
                i += 1;
                when = Some(v.clone());
            }
            s if s.starts_with("--date=") => when = Some(s[7..].to_string()),
            s if s.starts_with("-d") => when = Some(s[2..].to_string()),
            s if s.starts_with("-I") || s.starts_with("--iso-8601") => {
                let spec = s.trim_start_matches("--iso-8601").trim_start_matches("-I");
                format = match spec.trim_start_matches('=') {
                    "" | "date" => "%Y-%m-%d",
                    "hours" => "%Y-%m-%dT%H+00:00",
                    "minutes" => "%Y-%m-%dT%H:%M+00:00",
                    "seconds" => "%Y-%m-%dT%H:%M:%S+00:00",
                    other => {
                        proc.err(&format!("invalid argument '{other}' for '--iso-8601'"))
                            .await;
                        return 1;
                    }
                }
                .into();
            }
            s if s.starts_with('+') => format = s[1..].to_string(),
            s if s.starts_with('-') && s.len() > 1 => {
                return usage(&proc, &format!("invalid option -- '{}'", &s[1..2]), 1).await;
            }
            s => {
                proc.err(&format!("invalid date '{s}'")).await;
                return 1;
            }
        }
    }
    let t = match when {
        None => OffsetDateTime::now_utc(),
        Some(text) => match parse_date(&text) {
            Some(t) => t,
            None => {
                proc.err(&format!("invalid date '{text}'")).await;
                return 1;
            }
        },
    };
    finish(&proc, format!("{}\n", strftime(t, &format))).await
}

/// `uptime`: the time, how long the node has been up, and a load of 0.
pub(crate) async fn uptime(proc: Process) -> i32 {
    let now = OffsetDateTime::now_utc();
    let up = BOOT.elapsed().as_secs();
    let (days, hours, mins) = (up / 86400, (up / 3600) % 24, (up / 60) % 60);
    let mut text = format!(" {} up ", strftime(now, "%H:%M:%S"));
    if days > 0 {
        text.push_str(&format!("{days} day{}, ", if days == 1 { "" } else { "s" }));
    }
    if hours > 0 {
        text.push_str(&format!("{hours:2}:{mins:02}"));
    } else {
        text.push_str(&format!("{mins} min"));
    }
    text.push_str(",  load average: 0.00, 0.00, 0.00\n");
    finish(&proc, text).await
}

/// Bytes used under `path` (not crossing into other mounts is not modelled: volumes count
/// where they are mounted), as `du` counts them: 4 KiB blocks, a directory one block.
fn disk_usage(proc: &Process, path: &str, each: &mut dyn FnMut(&str, u64, bool)) -> u64 {
    let Ok(meta) = proc.fs.metadata(path) else {
        return 0;
    };
    match meta.kind {
        NodeKind::Directory => {
            let mut total = 4096;
            if let Ok(entries) = proc.fs.read_dir(path) {
                for e in entries {
                    total += disk_usage(proc, &fs::join(path, &e.name), each);
                }
            }
            each(path, total, true);
            total
        }
        NodeKind::Regular => {
            let used = meta.size.div_ceil(4096) * 4096;
            each(path, used, false);
            used
        }
        NodeKind::CharDevice | NodeKind::Symlink => 0,
    }
}

/// A size for `-h`: `4.0K`, `1.2M`, `512`.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes}")
    } else if v < 10.0 {
        format!("{v:.1}{}", UNITS[u])
    } else {
        format!("{v:.0}{}", UNITS[u])
    }
}

/// `du [-ahkmsc] [-d N] [PATH]…`: disk usage in KiB (or human-readable), per directory.
pub(crate) async fn du(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "ahkmscxLd", "d", &["max-depth"], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let max_depth: Option<usize> = if p.has('s') {
        Some(0)
    } else {
        p.value('d')
            .or(p.long_value("max-depth"))
            .and_then(|d| d.parse().ok())
    };
    let paths = if p.operands.is_empty() {
        vec![".".to_string()]
    } else {
        p.operands.clone()
    };
    let show = |bytes: u64| -> String {
        if p.has('h') {
            human(bytes)
        } else if p.has('m') {
            bytes.div_ceil(1024 * 1024).to_string()
        } else {
            bytes.div_ceil(1024).to_string()
        }
    };
    let mut out = String::new();
    let mut status = 0;
    let mut grand = 0;
    for name in &paths {
        let abs = proc.path(name);
        if !proc.fs.exists(&abs) {
            proc.err(&format!("{name}: No such file or directory"))
                .await;
            status = 1;
            continue;
        }
        let root_depth = fs::components(&abs).map(|c| c.len()).unwrap_or(0);
        let mut rows = Vec::new();
        let total = disk_usage(&proc, &abs, &mut |path, bytes, is_dir| {
            let depth = fs::components(path).map(|c| c.len()).unwrap_or(0) - root_depth;
            if (is_dir || p.has('a') || depth == 0) && max_depth.is_none_or(|m| depth <= m) {
                let shown = if depth == 0 {
                    name.clone()
                } else {
                    let rel = &path[abs.len()..];
                    format!("{}{rel}", name.trim_end_matches('/'))
                };
                rows.push((bytes, shown));
            }
        });
        grand += total;
        for (bytes, shown) in rows {
            out.push_str(&format!("{}\t{shown}\n", show(bytes)));
        }
    }
    if p.has('c') {
        out.push_str(&format!("{}\ttotal\n", show(grand)));
    }
    match emit(&proc, out).await {
        Ok(()) => status,
        Err(code) => code,
    }
}

/// Size of the container's root filesystem as `df` reports it.
const ROOT_BYTES: u64 = 64 * 1024 * 1024 * 1024;

/// `df [-hkPT] [PATH]…`: the root filesystem (`overlay`, 64 GiB) with what the container
/// wrote to it.
pub(crate) async fn df(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "hkPTam", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    for name in &p.operands {
        if !proc.fs.exists(&proc.path(name)) {
            proc.err(&format!("{name}: can't find mount point")).await;
            return 1;
        }
    }
    let used = disk_usage(&proc, "/", &mut |_, _, _| {});
    let avail = ROOT_BYTES.saturating_sub(used);
    let pct = (used * 100).div_ceil(ROOT_BYTES);
    let cell = |b: u64| {
        if p.has('h') {
            human(b)
        } else {
            (b / 1024).to_string()
        }
    };
    let header = if p.has('h') { "Size" } else { "1K-blocks" };
    let text = format!(
        "Filesystem           {header:<15}Used Available Use% Mounted on\n{:<20} {:>9} {:>9} {:>9} {:>3}% /\n",
        "overlay",
        cell(ROOT_BYTES),
        cell(used),
        cell(avail),
        pct
    );
    finish(&proc, text).await
}

/// `nproc`: the CPUs a container sees, fixed at 1 (a pod's runtime has no CPU count of its
/// own to report).
pub(crate) async fn nproc(proc: Process) -> i32 {
    if let Some(a) = proc.args().first() {
        return super::cli::usage(&proc, &format!("invalid option -- '{a}'"), 1).await;
    }
    super::cli::finish(&proc, "1\n").await
}

/// `sync`: the filesystem is in memory, nothing to write back.
pub(crate) async fn sync(_proc: Process) -> i32 {
    0
}
