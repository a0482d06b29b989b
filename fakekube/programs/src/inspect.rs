//! Programs that inspect bytes, as BusyBox's: `cmp`, `strings`, `hexdump -C`, `xxd`.

use super::cli::{finish, getopt, slurp, usage};
use fakekube_runtime::process::Process;

/// `cmp [-l | -s] FILE1 [FILE2]`: 0 when equal; 1 with `FILE1 FILE2 differ: char N, line
/// L` (every differing byte with `-l`, nothing with `-s`) or `cmp: EOF on FILE`; 2 when a
/// file cannot be read.
pub(crate) async fn cmp(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "ls", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 2).await,
    };
    let (a, b) = match p.operands.as_slice() {
        [a] => (a.clone(), "-".to_string()),
        [a, b, ..] => (a.clone(), b.clone()),
        [] => return usage(&proc, "missing operand", 2).await,
    };
    let (Some(da), Some(db)) = (slurp(&proc, &a).await, slurp(&proc, &b).await) else {
        return 2;
    };
    let mut out = String::new();
    let mut line = 1;
    let mut differ = false;
    for (k, (x, y)) in da.iter().zip(db.iter()).enumerate() {
        if x != y {
            differ = true;
            if p.has('s') {
                break;
            }
            if p.has('l') {
                out.push_str(&format!("{} {x:o} {y:o}\n", k + 1));
                continue;
            }
            out.push_str(&format!("{a} {b} differ: char {}, line {line}\n", k + 1));
            break;
        }
        if *x == b'\n' {
            line += 1;
        }
    }
    let code = finish(&proc, out).await;
    if code != 0 {
        return code;
    }
    if da.len() != db.len() && (!differ || p.has('l')) {
        if !p.has('s') {
            let shorter = if da.len() < db.len() { &a } else { &b };
            proc.err(&format!("EOF on {shorter}")).await;
        }
        return 1;
    }
    i32::from(differ)
}

/// `strings [-n LEN] [FILE]…`: runs of at least LEN (4) printable characters.
pub(crate) async fn strings(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "n:afo", "n", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let Some(min) = p.value('n').map_or(Some(4), |v| v.parse::<usize>().ok()) else {
        return usage(&proc, "invalid number", 1).await;
    };
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let mut out = Vec::new();
    let mut status = 0;
    for f in &files {
        let Some(data) = slurp(&proc, f).await else {
            status = 1;
            continue;
        };
        let mut run: Vec<u8> = Vec::new();
        for b in data.iter().copied().chain(std::iter::once(0)) {
            if (0x20..0x7f).contains(&b) || b == b'\t' {
                run.push(b);
                continue;
            }
            if run.len() >= min.max(1) {
                out.extend_from_slice(&run);
                out.push(b'\n');
            }
            run.clear();
        }
    }
    let code = finish(&proc, out).await;
    if code != 0 { code } else { status }
}

/// A byte as a printable character, `.` otherwise.
fn printable(b: u8) -> char {
    if (0x20..0x7f).contains(&b) {
        char::from(b)
    } else {
        '.'
    }
}

/// `hexdump -C [FILE]…` (the canonical form: offset, 16 bytes in hex, the text): the only
/// form BusyBox scripts use; `hexdump` without `-C` is refused.
pub(crate) async fn hexdump(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "Cv", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if !p.has('C') {
        return usage(&proc, "only -C is supported", 1).await;
    }
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let mut data = Vec::new();
    for f in &files {
        match slurp(&proc, f).await {
            Some(d) => data.extend_from_slice(&d),
            None => return 1,
        }
    }
    let mut out = String::new();
    let mut previous: Option<&[u8]> = None;
    let mut starred = false;
    for (k, row) in data.chunks(16).enumerate() {
        if !p.has('v') && row.len() == 16 && previous == Some(row) {
            if !starred {
                out.push_str("*\n");
                starred = true;
            }
            continue;
        }
        starred = false;
        previous = Some(row);
        out.push_str(&format!("{:08x} ", k * 16));
        for i in 0..16 {
            if i == 8 {
                out.push(' ');
            }
            match row.get(i) {
                Some(b) => out.push_str(&format!(" {b:02x}")),
                None => out.push_str("   "),
            }
        }
        out.push_str("  |");
        out.extend(row.iter().map(|b| printable(*b)));
        out.push_str("|\n");
    }
    if !data.is_empty() {
        out.push_str(&format!("{:08x}\n", data.len()));
    }
    finish(&proc, out).await
}

/// `xxd [-p] [-c COLS] [FILE]`: `OFFSET: HEX PAIRS  TEXT` lines of 16 bytes (plain hex with
/// `-p`).
pub(crate) async fn xxd(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "pc:", "c", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let plain = p.has('p');
    let Some(cols) = p
        .value('c')
        .map_or(Some(if plain { 30 } else { 16 }), |v| {
            v.parse::<usize>().ok()
        })
        .filter(|c| *c > 0 && *c <= 256)
    else {
        return usage(&proc, "invalid number of columns", 1).await;
    };
    let Some(data) = slurp(&proc, p.operands.first().map_or("-", String::as_str)).await else {
        return 2;
    };
    let mut out = String::new();
    for (k, row) in data.chunks(cols).enumerate() {
        if plain {
            out.extend(row.iter().map(|b| format!("{b:02x}")));
            out.push('\n');
            continue;
        }
        out.push_str(&format!("{:08x}:", k * cols));
        let mut hex = String::new();
        for (i, b) in row.iter().enumerate() {
            if i % 2 == 0 {
                hex.push(' ');
            }
            hex.push_str(&format!("{b:02x}"));
        }
        let width = cols * 2 + cols.div_ceil(2);
        out.push_str(&format!("{hex:<width$}  "));
        out.extend(row.iter().map(|b| printable(*b)));
        out.push('\n');
    }
    finish(&proc, out).await
}
