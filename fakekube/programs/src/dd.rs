//! `dd`, as BusyBox's: `if= of= bs= ibs= obs= count= skip= seek= conv= iflag= oflag=
//! status=`, block counts with BusyBox's suffixes, and its report on stderr (`N+M records in`,
//! `N+M records out`, `B bytes (H) copied, S seconds, R/s`). Every read fills its block unless
//! the input ends (as `iflag=fullblock`), so a pipe counts its records as a file does. An
//! output file is built in memory and written once at the end (`seek=` and `conv=notrunc`
//! place the blocks inside what it held).

use std::time::Instant;

use bytes::Bytes;

use super::cli::{MAX_INPUT, open_input};
use fakekube_runtime::io::{Input, Output, WriteError};
use fakekube_runtime::process::Process;

/// BusyBox's multiplier suffixes for block sizes and counts (`cwbkMG_suffixes`).
const SUFFIXES: &[(&str, u64)] = &[
    ("c", 1),
    ("w", 2),
    ("b", 512),
    ("kB", 1000),
    ("kD", 1000),
    ("k", 1024),
    ("KB", 1000),
    ("KD", 1000),
    ("K", 1024),
    ("MB", 1_000_000),
    ("MD", 1_000_000),
    ("M", 1_048_576),
    ("GB", 1_000_000_000),
    ("GD", 1_000_000_000),
    ("G", 1_073_741_824),
];

/// Largest block accepted (larger ones could not be held in memory).
const MAX_BLOCK: u64 = MAX_INPUT as u64;

/// A number with an optional suffix; `None` when it is not one.
fn number(text: &str) -> Option<u64> {
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    let n: u64 = digits.parse().ok()?;
    if suffix.is_empty() {
        return Some(n);
    }
    let mult = SUFFIXES.iter().find(|(s, _)| *s == suffix)?.1;
    n.checked_mul(mult)
}

/// BusyBox's `make_human_readable_str(n, 1, 0)`: powers of 1024 with one decimal (`1.0K`).
fn human(n: u64) -> String {
    const UNITS: [&str; 9] = ["", "K", "M", "G", "T", "P", "E", "Z", "Y"];
    if n == 0 {
        return "0".to_string();
    }
    let (mut val, mut frac, mut unit) = (n, 0u64, 0usize);
    while val >= 1024 {
        unit += 1;
        frac = ((val % 1024) * 10 + 512) / 1024;
        val /= 1024;
    }
    if frac >= 10 {
        val += 1;
        frac = 0;
    }
    if unit == 0 {
        val.to_string()
    } else {
        format!("{val}.{frac}{}", UNITS.get(unit).copied().unwrap_or("?"))
    }
}

/// What the operands ask for.
#[derive(Debug)]
struct Job {
    input: Option<String>,
    output: Option<String>,
    ibs: u64,
    obs: u64,
    count: Option<u64>,
    skip: u64,
    seek: u64,
    notrunc: bool,
    sync: bool,
    swab: bool,
    skip_bytes: bool,
    count_bytes: bool,
    seek_bytes: bool,
    append: bool,
    status_none: bool,
    status_noxfer: bool,
}

/// Parses the `KEY=VALUE` operands; `Err` holds the message, or `None` for the usage text.
fn parse(args: &[String]) -> Result<Job, Option<String>> {
    let mut j = Job {
        input: None,
        output: None,
        ibs: 512,
        obs: 512,
        count: None,
        skip: 0,
        seek: 0,
        notrunc: false,
        sync: false,
        swab: false,
        skip_bytes: false,
        count_bytes: false,
        seek_bytes: false,
        append: false,
        status_none: false,
        status_noxfer: false,
    };
    let num = |v: &str| number(v).ok_or_else(|| Some(format!("invalid number '{v}'")));
    let block = |v: &str| {
        num(v).and_then(|n| {
            if (1..=MAX_BLOCK).contains(&n) {
                Ok(n)
            } else {
                Err(Some(format!("number {v} is not in 1..{MAX_BLOCK} range")))
            }
        })
    };
    for arg in args {
        if arg == "--" {
            continue;
        }
        let Some((key, val)) = arg.split_once('=') else {
            return Err(None);
        };
        let words = |allowed: &[&str], what: &str| -> Result<Vec<String>, Option<String>> {
            val.split(',')
                .map(|w| {
                    if allowed.contains(&w) {
                        Ok(w.to_string())
                    } else {
                        Err(Some(format!("invalid argument '{w}' to '{what}'")))
                    }
                })
                .collect()
        };
        match key {
            "if" => j.input = Some(val.to_string()),
            "of" => j.output = Some(val.to_string()),
            "bs" => {
                j.ibs = block(val)?;
                j.obs = j.ibs;
            }
            "ibs" => j.ibs = block(val)?,
            "obs" => j.obs = block(val)?,
            "count" => j.count = Some(num(val)?),
            "skip" => j.skip = num(val)?,
            "seek" => j.seek = num(val)?,
            "conv" => {
                for w in words(&["notrunc", "sync", "noerror", "fsync", "swab"], "conv")? {
                    match w.as_str() {
                        "notrunc" => j.notrunc = true,
                        "sync" => j.sync = true,
                        "swab" => j.swab = true,
                        _ => {}
                    }
                }
            }
            "iflag" => {
                for w in words(
                    &["skip_bytes", "count_bytes", "fullblock", "direct"],
                    "iflag",
                )? {
                    match w.as_str() {
                        "skip_bytes" => j.skip_bytes = true,
                        "count_bytes" => j.count_bytes = true,
                        _ => {}
                    }
                }
            }
            "oflag" => {
                for w in words(&["seek_bytes", "append", "direct"], "oflag")? {
                    match w.as_str() {
                        "seek_bytes" => j.seek_bytes = true,
                        "append" => j.append = true,
                        _ => {}
                    }
                }
            }
            "status" => match val {
                "none" => j.status_none = true,
                "noxfer" => j.status_noxfer = true,
                "progress" => {}
                other => return Err(Some(format!("invalid argument '{other}' to 'status'"))),
            },
            _ => return Err(None),
        }
    }
    Ok(j)
}

/// Reads up to `n` bytes, as many as the input gives before it ends.
async fn read_block(input: &Input, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n.min(1 << 20));
    while out.len() < n {
        let Some(chunk) = input.read().await else {
            break;
        };
        let room = n - out.len();
        if chunk.len() > room {
            out.extend_from_slice(&chunk[..room]);
            input.unread(chunk.slice(room..)).await;
        } else {
            out.extend_from_slice(&chunk);
        }
    }
    out
}

/// Where the blocks go: a stream as they come (stdout, a device), or a file's bytes in
/// memory.
enum Sink {
    /// Standard output or a device (`/dev/stderr`, `/dev/null`, `/dev/full`).
    Stream(Output, String),
    /// A file: its path, its bytes, and where the next write lands.
    File(String, Vec<u8>, usize),
}

/// The counts BusyBox reports.
#[derive(Debug, Default)]
struct Stats {
    in_full: u64,
    in_part: u64,
    out_full: u64,
    out_part: u64,
    bytes: u64,
}

/// `dd [if=FILE] [of=FILE] [ibs=N obs=N/bs=N] [count=N] [skip=N] [seek=N] [conv=…]
/// [iflag=…] [oflag=…] [status=none|noxfer]`.
pub(crate) async fn dd(proc: Process) -> i32 {
    let j = match parse(proc.args()) {
        Ok(j) => j,
        Err(Some(msg)) => {
            proc.err(&msg).await;
            return 1;
        }
        Err(None) => {
            proc.err_line(
                "BusyBox v1.37.0 multi-call binary.\n\nUsage: dd [if=FILE] [of=FILE] \
                 [ibs=N obs=N/bs=N] [count=N] [skip=N] [seek=N]\n\
                 \t[conv=notrunc|noerror|sync|fsync]\n\
                 \t[iflag=skip_bytes|count_bytes|fullblock|direct] \
                 [oflag=seek_bytes|append|direct]\n"
                    .to_string(),
            )
            .await;
            return 1;
        }
    };
    let started = Instant::now();
    let in_name = j.input.clone().unwrap_or_else(|| "-".into());
    let input = match open_input(&proc, &in_name) {
        Ok(i) => i,
        Err(e) => {
            proc.err(&format!("can't open '{in_name}': {e}")).await;
            return 1;
        }
    };
    let ibs = usize::try_from(j.ibs).unwrap_or(usize::MAX);
    let obs = usize::try_from(j.obs).unwrap_or(usize::MAX);
    let mut sink = match &j.output {
        None => Sink::Stream(proc.stdout.clone(), "standard output".into()),
        Some(name)
            if matches!(
                proc.fs.open_read(&proc.path(name)),
                Ok(fakekube_runtime::fs::ReadTarget::Device(_))
            ) =>
        {
            match Output::open(&proc.fs, &proc.path(name), true, &proc.stdio()) {
                Ok(o) => Sink::Stream(o, name.clone()),
                Err(e) => {
                    proc.err(&format!("can't open '{name}': {e}")).await;
                    return 1;
                }
            }
        }
        Some(name) => {
            let path = proc.path(name);
            let existing = if j.notrunc || j.seek > 0 || j.append {
                proc.fs.read(&path).map(|b| b.to_vec()).unwrap_or_default()
            } else {
                Vec::new()
            };
            if let Err(e) = proc.fs.open_write(&path, false) {
                proc.err(&format!("can't open '{name}': {e}")).await;
                return 1;
            }
            let seek_at = usize::try_from(if j.seek_bytes {
                j.seek
            } else {
                j.seek.saturating_mul(j.obs)
            })
            .unwrap_or(usize::MAX)
            .min(fakekube_runtime::fs::MAX_FILE_SIZE);
            let mut data = existing;
            if !j.notrunc && !j.append {
                data.truncate(seek_at);
            }
            if data.len() < seek_at {
                data.resize(seek_at, 0);
            }
            let at = if j.append { data.len() } else { seek_at };
            Sink::File(path, data, at)
        }
    };
    // Skip input blocks (or bytes).
    let skip_bytes = if j.skip_bytes {
        j.skip
    } else {
        j.skip.saturating_mul(j.ibs)
    };
    let mut left = skip_bytes;
    while left > 0 {
        let n = usize::try_from(left.min(1 << 20)).unwrap_or(1 << 20);
        let got = read_block(&input, n).await;
        if got.is_empty() {
            break;
        }
        left -= got.len() as u64;
    }
    let mut st = Stats::default();
    let mut count = j.count;
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let mut want = ibs;
        if let Some(c) = count {
            if c == 0 {
                break;
            }
            if j.count_bytes && c < j.ibs {
                want = usize::try_from(c).unwrap_or(ibs);
            }
        }
        let mut block = read_block(&input, want).await;
        if block.is_empty() {
            break;
        }
        let n = block.len() as u64;
        count = count.map(|c| c.saturating_sub(if j.count_bytes { n } else { 1 }));
        if block.len() == ibs {
            st.in_full += 1;
        } else {
            st.in_part += 1;
            if j.sync {
                block.resize(ibs, 0);
            }
        }
        if j.swab {
            for pair in block.chunks_exact_mut(2) {
                pair.swap(0, 1);
            }
        }
        pending.extend_from_slice(&block);
        while pending.len() >= obs {
            let rest = pending.split_off(obs);
            let full = std::mem::replace(&mut pending, rest);
            if let Err(code) = write(&proc, &mut sink, full, obs, &mut st).await {
                return code;
            }
        }
    }
    if !pending.is_empty()
        && let Err(code) = write(&proc, &mut sink, pending, obs, &mut st).await
    {
        return code;
    }
    if let Sink::File(path, data, _) = &sink
        && let Err(e) = proc.fs.write(path, data)
    {
        proc.err(&format!(
            "error writing '{}': {e}",
            j.output.as_deref().unwrap_or_default()
        ))
        .await;
        report(&proc, &j, &st, started).await;
        return 1;
    }
    report(&proc, &j, &st, started).await;
    0
}

/// Writes one output block and counts it (full when it is `obs` bytes).
async fn write(
    proc: &Process,
    sink: &mut Sink,
    block: Vec<u8>,
    obs: usize,
    st: &mut Stats,
) -> Result<(), i32> {
    let len = block.len();
    match sink {
        Sink::Stream(out, name) => match out.write(Bytes::from(block)).await {
            Ok(()) => {}
            Err(WriteError::BrokenPipe) => return Err(141),
            Err(e) => {
                proc.err(&format!("error writing '{name}': {e}")).await;
                report_partial(proc, st).await;
                return Err(1);
            }
        },
        Sink::File(_, data, at) => {
            let end = at.saturating_add(len);
            if end > fakekube_runtime::fs::MAX_FILE_SIZE {
                proc.err("error writing: No space left on device").await;
                return Err(1);
            }
            if data.len() < end {
                data.resize(end, 0);
            }
            data[*at..end].copy_from_slice(&block);
            *at = end;
        }
    }
    st.bytes += len as u64;
    if len == obs {
        st.out_full += 1;
    } else {
        st.out_part += 1;
    }
    Ok(())
}

/// The two record lines BusyBox prints when a write fails.
async fn report_partial(proc: &Process, st: &Stats) {
    let _ = proc
        .stderr
        .write_str(&format!(
            "{}+{} records in\n{}+{} records out\n",
            st.in_full, st.in_part, st.out_full, st.out_part
        ))
        .await;
}

/// BusyBox's report on stderr (nothing with `status=none`, two lines with `status=noxfer`).
async fn report(proc: &Process, j: &Job, st: &Stats, started: Instant) {
    if j.status_none {
        return;
    }
    let mut text = format!(
        "{}+{} records in\n{}+{} records out\n",
        st.in_full, st.in_part, st.out_full, st.out_part
    );
    if !j.status_noxfer {
        let seconds = started.elapsed().as_secs_f64().max(1e-6);
        // The rate, whole bytes per second as BusyBox's integer division gives it.
        let rate = (st.bytes as f64 / seconds) as u64;
        text.push_str(&format!(
            "{} bytes ({}B) copied, {seconds:.6} seconds, {}B/s\n",
            st.bytes,
            human(st.bytes),
            human(rate)
        ));
    }
    let _ = proc.stderr.write_str(&text).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_take_busyboxs_suffixes() {
        assert_eq!(number("512"), Some(512));
        assert_eq!(number("2b"), Some(1024));
        assert_eq!(number("1k"), Some(1024));
        assert_eq!(number("1kB"), Some(1000));
        assert_eq!(number("1M"), Some(1_048_576));
        assert_eq!(number("3w"), Some(6));
        assert_eq!(number("1x"), None);
        assert_eq!(number(""), None);
    }

    #[test]
    fn sizes_print_as_make_human_readable_str_does() {
        assert_eq!(human(0), "0");
        assert_eq!(human(512), "512");
        assert_eq!(human(1024), "1.0K");
        assert_eq!(human(1536), "1.5K");
        assert_eq!(human(2 * 1_048_576), "2.0M");
    }
}
