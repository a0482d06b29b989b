//! Programs that rearrange lines, as BusyBox's: `tac`, `rev`, `nl`, `fold`, `paste`, `comm`,
//! `split`.

use super::cli::{finish, getopt, lines, slurp, usage};
use fakekube_runtime::process::Process;

/// Reads every operand (stdin without any) whole; `None` after a `can't open` message.
async fn inputs(proc: &Process, operands: &[String]) -> (Vec<Vec<u8>>, i32) {
    let names: Vec<String> = if operands.is_empty() {
        vec!["-".into()]
    } else {
        operands.to_vec()
    };
    let mut out = Vec::new();
    let mut status = 0;
    for n in &names {
        match slurp(proc, n).await {
            Some(d) => out.push(d),
            None => status = 1,
        }
    }
    (out, status)
}

/// `tac [FILE]…`: lines in reverse order, file by file.
pub(crate) async fn tac(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (datas, status) = inputs(&proc, &p.operands).await;
    let mut out = Vec::new();
    for d in &datas {
        for l in lines(d).iter().rev() {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
    }
    let code = finish(&proc, out).await;
    if code != 0 { code } else { status }
}

/// `rev [FILE]…`: each line's characters reversed.
pub(crate) async fn rev(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (datas, status) = inputs(&proc, &p.operands).await;
    let mut out = String::new();
    for d in &datas {
        for l in lines(d) {
            out.extend(String::from_utf8_lossy(l).chars().rev());
            out.push('\n');
        }
    }
    let code = finish(&proc, out).await;
    if code != 0 { code } else { status }
}

/// `nl [-b a|t|n] [-n ln|rn|rz] [-s SEP] [-v START] [-i INCR] [-w WIDTH] [FILE]…`: numbers
/// lines (by default the non-empty ones, right-aligned in 6 columns, then a tab).
pub(crate) async fn nl(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "b:n:s:v:i:w:", "bnsviw", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let style = p.value('b').unwrap_or("t");
    let format = p.value('n').unwrap_or("rn");
    let sep = p.value('s').unwrap_or("\t").to_string();
    let num = |c: char, d: i64| -> Option<i64> { p.value(c).map_or(Some(d), |v| v.parse().ok()) };
    let (Some(mut n), Some(incr), Some(width)) = (num('v', 1), num('i', 1), num('w', 6)) else {
        return usage(&proc, "invalid number", 1).await;
    };
    if !matches!(style, "a" | "t" | "n") || !matches!(format, "ln" | "rn" | "rz") {
        return usage(&proc, "invalid option", 1).await;
    }
    let width = usize::try_from(width.clamp(1, 1000)).unwrap_or(6);
    let (datas, status) = inputs(&proc, &p.operands).await;
    let mut out = String::new();
    for d in &datas {
        for l in lines(d) {
            let text = String::from_utf8_lossy(l);
            let numbered = match style {
                "a" => true,
                "t" => !text.is_empty(),
                _ => false,
            };
            if numbered {
                let s = match format {
                    "ln" => format!("{n:<width$}"),
                    "rz" => format!("{n:0width$}"),
                    _ => format!("{n:>width$}"),
                };
                out.push_str(&s);
                out.push_str(&sep);
                n += incr;
            } else {
                out.push_str(&" ".repeat(width + sep.chars().count()));
            }
            out.push_str(&text);
            out.push('\n');
        }
    }
    let code = finish(&proc, out).await;
    if code != 0 { code } else { status }
}

/// `fold [-bs] [-w WIDTH] [FILE]…`: lines broken at WIDTH columns (80), at the last blank
/// before it with `-s`.
pub(crate) async fn fold(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "bsw:", "w", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let Some(width) = p
        .value('w')
        .map_or(Some(80), |w| w.parse::<usize>().ok())
        .filter(|w| *w > 0)
    else {
        proc.err(&format!(
            "invalid number '{}'",
            p.value('w').unwrap_or_default()
        ))
        .await;
        return 1;
    };
    let (datas, status) = inputs(&proc, &p.operands).await;
    let mut out = String::new();
    for d in &datas {
        let text = String::from_utf8_lossy(d);
        for (k, line) in text.split('\n').enumerate() {
            if k > 0 {
                out.push('\n');
            }
            let mut rest: Vec<char> = line.chars().collect();
            while rest.len() > width {
                let mut cut = width;
                if p.has('s')
                    && let Some(blank) = rest[..width].iter().rposition(|c| *c == ' ')
                {
                    cut = blank + 1;
                }
                out.extend(&rest[..cut]);
                out.push('\n');
                rest.drain(..cut);
            }
            out.extend(&rest);
        }
    }
    let code = finish(&proc, out).await;
    if code != 0 { code } else { status }
}

/// `paste [-s] [-d LIST] [FILE]…`: corresponding lines side by side (each file's lines on
/// one line with `-s`), separated by the delimiters of LIST in turn (a tab).
pub(crate) async fn paste(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "sd:", "d", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let delims: Vec<String> = {
        let raw = p.value('d').unwrap_or("\t");
        let mut v = Vec::new();
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            v.push(match (c, c == '\\') {
                (_, true) => match chars.next() {
                    Some('n') => "\n".to_string(),
                    Some('t') => "\t".to_string(),
                    Some('0') => String::new(),
                    Some(o) => o.to_string(),
                    None => "\\".to_string(),
                },
                (c, false) => c.to_string(),
            });
        }
        if v.is_empty() { vec![String::new()] } else { v }
    };
    let (datas, status) = inputs(&proc, &p.operands).await;
    let files: Vec<Vec<String>> = datas
        .iter()
        .map(|d| {
            lines(d)
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect()
        })
        .collect();
    let mut out = String::new();
    if p.has('s') {
        for f in &files {
            for (k, l) in f.iter().enumerate() {
                if k > 0 {
                    out.push_str(&delims[(k - 1) % delims.len()]);
                }
                out.push_str(l);
            }
            out.push('\n');
        }
    } else {
        let rows = files.iter().map(Vec::len).max().unwrap_or(0);
        for r in 0..rows {
            for (k, f) in files.iter().enumerate() {
                if k > 0 {
                    out.push_str(&delims[(k - 1) % delims.len()]);
                }
                out.push_str(f.get(r).map_or("", String::as_str));
            }
            out.push('\n');
        }
    }
    let code = finish(&proc, out).await;
    if code != 0 { code } else { status }
}

/// `comm [-123] FILE1 FILE2`: lines only in FILE1, only in FILE2, and in both, in three
/// tab-indented columns (sorted inputs).
pub(crate) async fn comm(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "123", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let [a, b] = p.operands.as_slice() else {
        return usage(&proc, "needs two files", 1).await;
    };
    let (Some(da), Some(db)) = (slurp(&proc, a).await, slurp(&proc, b).await) else {
        return 1;
    };
    let (la, lb) = (lines(&da), lines(&db));
    let show = [!p.has('1'), !p.has('2'), !p.has('3')];
    let mut out = Vec::new();
    let mut put = |col: usize, line: &[u8]| {
        if !show[col] {
            return;
        }
        for shown in &show[..col] {
            if *shown {
                out.push(b'\t');
            }
        }
        out.extend_from_slice(line);
        out.push(b'\n');
    };
    let (mut i, mut j) = (0, 0);
    while i < la.len() || j < lb.len() {
        match (la.get(i), lb.get(j)) {
            (Some(x), Some(y)) if x == y => {
                put(2, x);
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                put(0, x);
                i += 1;
            }
            (Some(_), Some(y)) => {
                put(1, y);
                j += 1;
            }
            (Some(x), None) => {
                put(0, x);
                i += 1;
            }
            (None, Some(y)) => {
                put(1, y);
                j += 1;
            }
            (None, None) => break,
        }
    }
    finish(&proc, out).await
}

/// The `n`-th (from 0) suffix of `len` letters: `aa`, `ab`, …; `None` past `zz…`.
fn split_suffix(mut n: usize, len: usize) -> Option<String> {
    let mut s = vec![b'a'; len];
    for k in (0..len).rev() {
        s[k] = b'a' + (n % 26) as u8;
        n /= 26;
    }
    (n == 0).then(|| String::from_utf8_lossy(&s).into_owned())
}

/// `split [-l LINES | -b BYTES[kmg]] [-a SUFFIXLEN] [INPUT [PREFIX]]`: pieces of 1000 lines
/// (or of BYTES) in `PREFIXaa`, `PREFIXab`, … (`x` by default).
pub(crate) async fn split(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "l:b:a:", "lba", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let size = |v: &str| -> Option<usize> {
        let (digits, mult) = match v.chars().last()? {
            'k' => (&v[..v.len() - 1], 1024),
            'm' => (&v[..v.len() - 1], 1024 * 1024),
            'g' => (&v[..v.len() - 1], 1024 * 1024 * 1024),
            _ => (v, 1),
        };
        digits
            .parse::<usize>()
            .ok()?
            .checked_mul(mult)
            .filter(|n| *n > 0)
    };
    let (lines_per, bytes_per) = match (p.value('l'), p.value('b')) {
        (_, Some(b)) => match size(b) {
            Some(n) => (None, Some(n)),
            None => return usage(&proc, &format!("invalid number '{b}'"), 1).await,
        },
        (Some(l), None) => match l.parse::<usize>().ok().filter(|n| *n > 0) {
            Some(n) => (Some(n), None),
            None => return usage(&proc, &format!("invalid number '{l}'"), 1).await,
        },
        (None, None) => (Some(1000), None),
    };
    let Some(suffix_len) = p
        .value('a')
        .map_or(Some(2), |a| a.parse::<usize>().ok())
        .filter(|n| (1..=16).contains(n))
    else {
        return usage(&proc, "invalid suffix length", 1).await;
    };
    let input = p.operands.first().map_or("-", String::as_str);
    let prefix = p.operands.get(1).map_or("x", String::as_str);
    let Some(data) = slurp(&proc, input).await else {
        return 1;
    };
    let mut pieces: Vec<&[u8]> = Vec::new();
    if let Some(n) = bytes_per {
        pieces.extend(data.chunks(n));
    } else if let Some(n) = lines_per {
        let mut start = 0;
        let mut count = 0;
        for (i, b) in data.iter().enumerate() {
            if *b == b'\n' {
                count += 1;
                if count == n {
                    pieces.push(&data[start..=i]);
                    start = i + 1;
                    count = 0;
                }
            }
        }
        if start < data.len() {
            pieces.push(&data[start..]);
        }
    }
    for (k, piece) in pieces.iter().enumerate() {
        let Some(suffix) = split_suffix(k, suffix_len) else {
            proc.err("suffixes exhausted").await;
            return 1;
        };
        let name = format!("{prefix}{suffix}");
        if let Err(e) = proc.fs.write(&proc.path(&name), piece) {
            proc.err(&format!("can't open '{name}': {e}")).await;
            return 1;
        }
    }
    0
}
