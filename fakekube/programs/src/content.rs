//! Programs that read or copy file content: `cat`, `head`, `tail`, `wc`, `tee`.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use super::cli::{emit, getopt, open_input, usage};
use fakekube_runtime::io::Output;
use fakekube_runtime::process::Process;

/// `cat [-u] [file…]`: copies files (or stdin) to stdout in chunks.
pub(crate) async fn cat(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "u", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands
    };
    let mut status = 0;
    for f in &files {
        let input = match open_input(&proc, f) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("{f}: {e}")).await;
                status = 1;
                continue;
            }
        };
        while let Some(chunk) = input.read().await {
            if let Err(code) = emit(&proc, chunk).await {
                return code;
            }
        }
    }
    status
}

/// Parses a count like `10`, `1K`, `2M` (GNU suffixes, binary).
fn parse_count(s: &str) -> Option<u64> {
    let (digits, mult) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        None => (s, 1u64),
        Some((i, _)) => {
            let mult = match &s[i..] {
                "b" => 512,
                "K" | "KiB" | "k" => 1024,
                "KB" | "kB" => 1000,
                "M" | "MiB" => 1024 * 1024,
                "MB" => 1000 * 1000,
                "G" | "GiB" => 1024 * 1024 * 1024,
                "GB" => 1000 * 1000 * 1000,
                _ => return None,
            };
            (&s[..i], mult)
        }
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// Rewrites `-5` into `-n 5` (the obsolete `head -5` form).
fn legacy_count(args: &[String]) -> Vec<String> {
    args.iter()
        .flat_map(|a| {
            if a.len() > 1 && a.starts_with('-') && a[1..].bytes().all(|b| b.is_ascii_digit()) {
                vec!["-n".to_string(), a[1..].to_string()]
            } else {
                vec![a.clone()]
            }
        })
        .collect()
}

/// `head [-n N | -c N] [file…]`: streams the first lines or bytes.
pub(crate) async fn head(proc: Process) -> i32 {
    let args = legacy_count(proc.args());
    let p = match getopt(&args, "ncqv", "nc", &["lines", "bytes"], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (by_bytes, count_text) = match (
        p.value('c').or(p.long_value("bytes")),
        p.value('n').or(p.long_value("lines")),
    ) {
        (Some(c), _) => (true, c.to_string()),
        (None, Some(n)) => (false, n.to_string()),
        (None, None) => (false, "10".to_string()),
    };
    let Some(count) = parse_count(count_text.trim_start_matches('+')) else {
        let what = if by_bytes { "bytes" } else { "lines" };
        proc.err(&format!("invalid number of {what}: '{count_text}'"))
            .await;
        return 1;
    };
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let headers = (files.len() > 1 && !p.has('q')) || p.has('v');
    let mut status = 0;
    for (k, f) in files.iter().enumerate() {
        let input = match open_input(&proc, f) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("cannot open '{f}' for reading: {e}"))
                    .await;
                status = 1;
                continue;
            }
        };
        if headers {
            let name = if f == "-" { "standard input" } else { f };
            let sep = if k > 0 { "\n" } else { "" };
            if let Err(code) = emit(&proc, format!("{sep}==> {name} <==\n")).await {
                return code;
            }
        }
        let mut left = count;
        while left > 0 {
            let Some(chunk) = input.read().await else {
                break;
            };
            let take = if by_bytes {
                usize::try_from(left).unwrap_or(usize::MAX).min(chunk.len())
            } else {
                let mut end = chunk.len();
                for (i, b) in chunk.iter().enumerate() {
                    if *b == b'\n' {
                        left -= 1;
                        if left == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                }
                end
            };
            if by_bytes {
                left -= take as u64;
            }
            let (used, rest) = (chunk.slice(..take), chunk.slice(take..));
            input.unread(rest).await;
            if let Err(code) = emit(&proc, used).await {
                return code;
            }
        }
    }
    status
}

/// `tail [-n N | -n +N | -c N] [file…]`: keeps only the last lines or bytes in memory.
pub(crate) async fn tail(proc: Process) -> i32 {
    let args = legacy_count(proc.args());
    let p = match getopt(&args, "ncqvf", "nc", &["lines", "bytes"], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (by_bytes, text) = match (
        p.value('c').or(p.long_value("bytes")),
        p.value('n').or(p.long_value("lines")),
    ) {
        (Some(c), _) => (true, c.to_string()),
        (None, Some(n)) => (false, n.to_string()),
        (None, None) => (false, "10".to_string()),
    };
    let from_start = text.starts_with('+');
    let Some(count) = parse_count(text.trim_start_matches(['+', '-'])) else {
        let what = if by_bytes { "bytes" } else { "lines" };
        proc.err(&format!("invalid number of {what}: '{text}'"))
            .await;
        return 1;
    };
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let mut status = 0;
    for f in &files {
        let input = match open_input(&proc, f) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("cannot open '{f}' for reading: {e}"))
                    .await;
                status = 1;
                continue;
            }
        };
        if from_start {
            // Skip the first count-1 units, then stream the rest.
            let mut skip = count.saturating_sub(1);
            while let Some(chunk) = input.read().await {
                let mut start = 0;
                while skip > 0 && start < chunk.len() {
                    if by_bytes {
                        let n = usize::try_from(skip)
                            .unwrap_or(usize::MAX)
                            .min(chunk.len() - start);
                        start += n;
                        skip -= n as u64;
                    } else {
                        match chunk[start..].iter().position(|b| *b == b'\n') {
                            Some(i) => {
                                start += i + 1;
                                skip -= 1;
                            }
                            None => start = chunk.len(),
                        }
                    }
                }
                if start < chunk.len()
                    && let Err(code) = emit(&proc, chunk.slice(start..)).await
                {
                    return code;
                }
            }
            continue;
        }
        let limit = usize::try_from(count).unwrap_or(usize::MAX);
        let mut kept: VecDeque<Bytes> = VecDeque::new();
        let mut kept_bytes = 0usize;
        let mut partial = BytesMut::new();
        while let Some(chunk) = input.read().await {
            if by_bytes {
                kept_bytes += chunk.len();
                kept.push_back(chunk);
                while kept_bytes > limit {
                    let Some(front) = kept.front_mut() else { break };
                    let excess = kept_bytes - limit;
                    if front.len() <= excess {
                        kept_bytes -= front.len();
                        kept.pop_front();
                    } else {
                        let _ = front.split_to(excess);
                        kept_bytes -= excess;
                    }
                }
            } else {
                partial.extend_from_slice(&chunk);
                while let Some(i) = partial.iter().position(|b| *b == b'\n') {
                    let line = partial.split_to(i + 1).freeze();
                    kept.push_back(line);
                    if kept.len() > limit {
                        kept.pop_front();
                    }
                }
            }
        }
        if !by_bytes && !partial.is_empty() {
            kept.push_back(partial.freeze());
            if kept.len() > limit {
                kept.pop_front();
            }
        }
        for b in kept {
            if let Err(code) = emit(&proc, b).await {
                return code;
            }
        }
    }
    status
}

/// `wc [-lwcm] [file…]`.
pub(crate) async fn wc(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "lwcm", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (mut l, mut w, mut c) = (p.has('l'), p.has('w'), p.has('c') || p.has('m'));
    if !l && !w && !c {
        (l, w, c) = (true, true, true);
    }
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let mut rows: Vec<([u64; 3], Option<String>)> = Vec::new();
    let mut total = [0u64; 3];
    let mut status = 0;
    for f in &files {
        let input = match open_input(&proc, f) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("{f}: {e}")).await;
                status = 1;
                continue;
            }
        };
        let mut counts = [0u64; 3];
        let mut in_word = false;
        while let Some(chunk) = input.read().await {
            counts[2] += chunk.len() as u64;
            for b in chunk.iter() {
                if *b == b'\n' {
                    counts[0] += 1;
                }
                let space = b.is_ascii_whitespace();
                if !space && !in_word {
                    counts[1] += 1;
                }
                in_word = !space;
            }
        }
        for k in 0..3 {
            total[k] += counts[k];
        }
        rows.push((
            counts,
            if p.operands.is_empty() {
                None
            } else {
                Some(f.clone())
            },
        ));
    }
    if rows.len() > 1 {
        rows.push((total, Some("total".to_string())));
    }
    let selected = [l, w, c];
    let single = selected.iter().filter(|s| **s).count() == 1 && files.len() == 1;
    let width = if single {
        1
    } else if p.operands.is_empty() {
        7
    } else {
        total.iter().map(|n| n.to_string().len()).max().unwrap_or(1)
    };
    let mut out = String::new();
    for (counts, name) in rows {
        let fields: Vec<String> = (0..3)
            .filter(|k| selected[*k])
            .map(|k| format!("{:>width$}", counts[k]))
            .collect();
        out.push_str(&fields.join(" "));
        if let Some(n) = name {
            out.push(' ');
            out.push_str(&n);
        }
        out.push('\n');
    }
    if let Err(code) = emit(&proc, out).await {
        return code;
    }
    status
}

/// `tee [-a] [file…]`: copies stdin to stdout and to each file.
pub(crate) async fn tee(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "ai", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let mut status = 0;
    let mut outs: Vec<Output> = Vec::new();
    for f in &p.operands {
        match Output::open(&proc.fs, &proc.path(f), p.has('a'), &proc.stdio()) {
            Ok(o) => outs.push(o),
            Err(e) => {
                proc.err(&format!("{f}: {e}")).await;
                status = 1;
            }
        }
    }
    while let Some(chunk) = proc.stdin.read().await {
        for o in &outs {
            if o.write(chunk.clone()).await.is_err() {
                status = 1;
            }
        }
        if let Err(code) = emit(&proc, chunk).await {
            return code;
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_accept_gnu_suffixes_and_refuse_overflow() {
        assert_eq!(parse_count("10"), Some(10));
        assert_eq!(parse_count("2K"), Some(2048));
        assert_eq!(parse_count("99999999999999999999"), None);
        assert_eq!(parse_count("18446744073709551615G"), None);
        assert_eq!(parse_count("x"), None);
    }
}
