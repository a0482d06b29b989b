//! `diff`, as BusyBox's: unified output only (`--- FILE1`, `+++ FILE2`, `@@ -a,b +c,d @@`
//! hunks with 3 lines of context, `-U N` for another count), `-q`, and `-i -b -w` to compare
//! lines ignoring case or blanks. Exit 0 when the files are the same, 1 when they differ, 2
//! for trouble. Lines are matched by a longest common subsequence after the common head and
//! tail are set aside; inputs whose differing middles are too large for that are refused.

use super::cli::{finish, getopt, usage};
use fakekube_runtime::process::Process;

/// Most cells (lines of one middle × lines of the other) the LCS table may have.
const MAX_CELLS: usize = 4_000_000;

/// One step of the edit script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// A line of both.
    Keep,
    /// A line of the first only.
    Del,
    /// A line of the second only.
    Ins,
}

/// The edit script turning `a` into `b`; `None` when it would need too large a table.
fn script(a: &[String], b: &[String]) -> Option<Vec<Op>> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let (n, m) = (ma.len(), mb.len());
    if n.saturating_mul(m) > MAX_CELLS {
        return None;
    }
    // lcs[i][j]: the LCS length of ma[i..] and mb[j..].
    let w = m + 1;
    let mut lcs = vec![0u32; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i * w + j] = if ma[i] == mb[j] {
                lcs[(i + 1) * w + j + 1] + 1
            } else {
                lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
            };
        }
    }
    let mut ops = vec![Op::Keep; head];
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && ma[i] == mb[j] {
            ops.push(Op::Keep);
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i * w + j + 1] >= lcs[(i + 1) * w + j]) {
            // Deletions before insertions in a change, as diff prints them.
            if i < n && lcs[(i + 1) * w + j] == lcs[i * w + j] {
                ops.push(Op::Del);
                i += 1;
            } else {
                ops.push(Op::Ins);
                j += 1;
            }
        } else {
            ops.push(Op::Del);
            i += 1;
        }
    }
    ops.extend(std::iter::repeat_n(Op::Keep, tail));
    Some(ops)
}

/// A file's lines, and whether its last one lacks a newline.
fn split_lines(data: &[u8]) -> (Vec<String>, bool) {
    let text = String::from_utf8_lossy(data);
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let complete = text.ends_with('\n') || text.is_empty();
    if complete {
        lines.pop();
    }
    (lines, !complete)
}

/// The hunks of a script, as unified diff text.
fn unified(a: &[String], b: &[String], ops: &[Op], context: usize, no_nl: (bool, bool)) -> String {
    // Old and new line numbers (0-based) before each op, and one past the end.
    let mut pos = Vec::with_capacity(ops.len() + 1);
    let (mut i, mut j) = (0usize, 0usize);
    for op in ops {
        pos.push((i, j));
        match op {
            Op::Keep => {
                i += 1;
                j += 1;
            }
            Op::Del => i += 1,
            Op::Ins => j += 1,
        }
    }
    pos.push((i, j));
    let changes: Vec<usize> = (0..ops.len()).filter(|k| ops[*k] != Op::Keep).collect();
    let mut out = String::new();
    let mut k = 0;
    while k < changes.len() {
        let first = changes[k];
        let mut last = first;
        while k + 1 < changes.len() && changes[k + 1] - last <= 2 * context + 1 {
            k += 1;
            last = changes[k];
        }
        k += 1;
        let lo = first.saturating_sub(context);
        let hi = (last + context + 1).min(ops.len());
        let header = |start: usize, end: usize, sign: char| {
            // BusyBox's span: from the first line to the last, 1-based.
            let (a1, b1) = (start + 1, end);
            let mut s = format!(" {sign}{}", a1.min(b1));
            if a1 != b1 {
                s.push_str(&format!(",{}", if a1 < b1 { b1 - a1 + 1 } else { 0 }));
            }
            s
        };
        out.push_str("@@");
        out.push_str(&header(pos[lo].0, pos[hi].0, '-'));
        out.push_str(&header(pos[lo].1, pos[hi].1, '+'));
        out.push_str(" @@\n");
        for (op, (oi, nj)) in ops[lo..hi].iter().zip(&pos[lo..hi]) {
            let (mark, line, last_of, missing_nl) = match op {
                Op::Keep => (' ', &a[*oi], *oi + 1 == a.len(), no_nl.0),
                Op::Del => ('-', &a[*oi], *oi + 1 == a.len(), no_nl.0),
                Op::Ins => ('+', &b[*nj], *nj + 1 == b.len(), no_nl.1),
            };
            out.push(mark);
            out.push_str(line);
            out.push('\n');
            if last_of && missing_nl {
                out.push_str("\\ No newline at end of file\n");
            }
        }
    }
    out
}

/// `diff [-qibw] [-U N] [-u] FILE1 FILE2`.
pub(crate) async fn diff(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "qibwuU:aNtTsdp", "U", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 2).await,
    };
    let [f1, f2] = p.operands.as_slice() else {
        return usage(&proc, "needs exactly two files", 2).await;
    };
    let Some(context) = p.value('U').map_or(Some(3), |v| v.parse::<usize>().ok()) else {
        return usage(&proc, "invalid context length", 2).await;
    };
    let mut data = Vec::new();
    for f in [f1, f2] {
        if f != "-"
            && let Err(e) = proc.fs.metadata(&proc.path(f))
        {
            proc.err(&format!("can't stat '{f}': {e}")).await;
            return 2;
        }
        let input = match super::cli::open_input(&proc, f) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("{f}: {e}")).await;
                return 2;
            }
        };
        data.push(input.read_to_end(super::cli::MAX_INPUT).await);
    }
    let (a, a_nl) = split_lines(&data[0]);
    let (b, b_nl) = split_lines(&data[1]);
    // Lines as compared: case folded and blanks dropped or squeezed, as asked.
    let key = |l: &String| {
        let mut s = if p.has('i') {
            l.to_lowercase()
        } else {
            l.clone()
        };
        if p.has('w') {
            s.retain(|c| c != ' ' && c != '\t');
        } else if p.has('b') {
            s = s
                .split([' ', '\t'])
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
        }
        s
    };
    let (ka, kb): (Vec<String>, Vec<String>) =
        (a.iter().map(key).collect(), b.iter().map(key).collect());
    let Some(mut ops) = script(&ka, &kb) else {
        proc.err("files too big to compare").await;
        return 2;
    };
    // Last lines alike but one without its newline: they differ, as diff shows it.
    if a_nl != b_nl && ops.last() == Some(&Op::Keep) {
        ops.pop();
        ops.extend([Op::Del, Op::Ins]);
    }
    if ops.iter().all(|o| *o == Op::Keep) {
        return 0;
    }
    if p.has('q') {
        return match finish(&proc, format!("Files {f1} and {f2} differ\n")).await {
            0 => 1,
            code => code,
        };
    }
    let mut text = format!("--- {f1}\n+++ {f2}\n");
    text.push_str(&unified(&a, &b, &ops, context, (a_nl, b_nl)));
    match finish(&proc, text).await {
        0 => 1,
        code => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_script_keeps_the_longest_common_subsequence() {
        let ops = script(&strs(&["a", "b", "c"]), &strs(&["a", "x", "c"])).expect("small");
        assert_eq!(ops, vec![Op::Keep, Op::Del, Op::Ins, Op::Keep]);
        let ops = script(&strs(&[]), &strs(&["n"])).expect("small");
        assert_eq!(ops, vec![Op::Ins]);
    }
}
