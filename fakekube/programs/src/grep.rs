//! `grep` (and `egrep`, `fgrep`), as BusyBox's: BRE by default, ERE with `-E`, fixed strings
//! with `-F`; `-i -v -c -l -L -n -q -s -h -H -o -w -x -r -R -m -A -B -C -e -f`. The exit code
//! is 0 when a line was selected, 1 when none was, 2 after an error (a missing file, a bad
//! pattern, a bad option), except that `-q` exits 0 at its first match whatever came before.

use regex::Regex;

use super::cli::{emit, getopt, open_input};
use super::posix_regex;
use fakekube_runtime::fs::NodeKind;
use fakekube_runtime::process::Process;

/// Longest line grep reads at once; a longer one is handled in pieces of this size.
const MAX_LINE: usize = 1 << 20;

/// What the options ask for.
#[derive(Debug, Default)]
struct Opts {
    invert: bool,
    count: bool,
    list: bool,
    list_unmatched: bool,
    numbers: bool,
    quiet: bool,
    silent: bool,
    only: bool,
    word: bool,
    line: bool,
    recursive: bool,
    follow: bool,
    max: Option<u64>,
    after: usize,
    before: usize,
    filenames: Option<bool>,
}

/// The compiled patterns: one regex for all of them (alternatives), or none when an empty
/// pattern selects every line.
struct Matcher {
    re: Option<Regex>,
    word: bool,
}

impl Matcher {
    /// The first acceptable match in `text` at or after `from`: `-w` skips matches that touch
    /// a word character on either side, as BusyBox retries further along the line.
    fn find(&self, text: &str, from: usize) -> Option<(usize, usize)> {
        let Some(re) = &self.re else {
            return Some((from, from));
        };
        let mut at = from;
        while at <= text.len() {
            let m = re.find_at(text, at)?;
            if !self.word || is_word_bounded(text, m.start(), m.end()) {
                return Some((m.start(), m.end()));
            }
            // Try the next position (the same start may match a shorter, bounded word).
            at = next_char(text, m.start());
        }
        None
    }
}

/// Whether the bytes before `start` and after `end` are not word characters.
fn is_word_bounded(text: &str, start: usize, end: usize) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let before = text[..start].chars().next_back().is_none_or(|c| !word(c));
    let after = text[end..].chars().next().is_none_or(|c| !word(c));
    before && after && end > start
}

/// The byte index after the character at `i`.
fn next_char(text: &str, i: usize) -> usize {
    text[i..]
        .chars()
        .next()
        .map_or(text.len() + 1, |c| i + c.len_utf8())
}

/// Builds the matcher from the patterns (each may hold several, one per line).
fn matcher(
    patterns: &[String],
    fixed: bool,
    extended: bool,
    o: &Opts,
    fold: bool,
) -> Result<Matcher, String> {
    let mut parts = Vec::new();
    for p in patterns.iter().flat_map(|p| p.split('\n')) {
        let body = if fixed {
            regex::escape(p)
        } else {
            posix_regex::translate(p, extended).map_err(|_| format!("bad regex '{p}'"))?
        };
        if body.is_empty() && !o.line && !o.word {
            // An empty pattern selects every line.
            return Ok(Matcher {
                re: None,
                word: false,
            });
        }
        parts.push(if o.line {
            format!("^(?:{body})$")
        } else {
            format!("(?:{body})")
        });
    }
    let joined = parts.join("|");
    regex::RegexBuilder::new(&joined)
        .case_insensitive(fold)
        .size_limit(1 << 22)
        .build()
        .map(|re| Matcher {
            re: Some(re),
            word: o.word,
        })
        .map_err(|_| format!("bad regex '{}'", patterns.join("\n")))
}

/// `grep [-EFHLRcfhiLlmnoqrsvwxABC] PATTERN [FILE]…`.
pub(crate) async fn grep(proc: Process) -> i32 {
    let name = proc.name().to_string();
    let p = match getopt(
        proc.args(),
        "lnqvscFiHhe:f:LorRm:wxA:B:C:EaIz",
        "efmABC",
        &[],
        &[],
    ) {
        Ok(p) => p,
        Err(msg) => {
            proc.err(&msg).await;
            return 2;
        }
    };
    let num = |c: char| -> Result<Option<u64>, String> {
        p.short
            .iter()
            .rev()
            .find(|(o, _)| *o == c)
            .and_then(|(_, v)| v.as_deref())
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| format!("invalid number '{v}'"))
            })
            .transpose()
    };
    let (max, after, before, context) = match (num('m'), num('A'), num('B'), num('C')) {
        (Ok(m), Ok(a), Ok(b), Ok(c)) => (m, a, b, c),
        (Err(e), ..) | (_, Err(e), ..) | (_, _, Err(e), _) | (.., Err(e)) => {
            proc.err(&e).await;
            return 2;
        }
    };
    let to_usize = |n: Option<u64>| n.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut o = Opts {
        invert: p.has('v'),
        count: p.has('c'),
        list: p.has('l'),
        list_unmatched: p.has('L'),
        numbers: p.has('n'),
        quiet: p.has('q'),
        silent: p.has('s'),
        only: p.has('o'),
        word: p.has('w'),
        line: p.has('x'),
        recursive: p.has('r') || p.has('R'),
        follow: p.has('R'),
        max,
        after: to_usize(after.or(context)),
        before: to_usize(before.or(context)),
        filenames: None,
    };
    // The last of -H and -h wins.
    o.filenames = p
        .short
        .iter()
        .rev()
        .find(|(c, _)| *c == 'H' || *c == 'h')
        .map(|(c, _)| *c == 'H');
    let mut patterns: Vec<String> = p
        .short
        .iter()
        .filter(|(c, _)| *c == 'e')
        .filter_map(|(_, v)| v.clone())
        .collect();
    for (c, v) in &p.short {
        if *c != 'f' {
            continue;
        }
        let file = v.clone().unwrap_or_default();
        let input = match open_input(&proc, &file) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("can't open '{file}': {e}")).await;
                return 2;
            }
        };
        let text = input.read_to_end(super::cli::MAX_INPUT).await;
        let text = String::from_utf8_lossy(&text);
        patterns.extend(text.lines().map(str::to_string));
    }
    let mut operands = p.operands.clone();
    let from_file = p.has('f');
    if patterns.is_empty() && !from_file {
        if operands.is_empty() {
            proc.err_line(format!(
                "BusyBox v1.37.0 multi-call binary.\n\nUsage: {name} [-HhnlLoqvsrRiwFE] [-m N] \
                 [-A|B|C N] {{ PATTERN | -e PATTERN... | -f FILE... }} [FILE]...\n"
            ))
            .await;
            return 2;
        }
        patterns.push(operands.remove(0));
    }
    let extended = p.has('E') || name == "egrep";
    let fixed = p.has('F') || name == "fgrep";
    let m = if from_file && patterns.is_empty() {
        // -f of an empty file: no pattern, nothing matches.
        Matcher {
            re: regex::Regex::new("[^\\s\\S]").ok(),
            word: false,
        }
    } else {
        match matcher(&patterns, fixed, extended, &o, p.has('i')) {
            Ok(m) => m,
            Err(msg) => {
                proc.err(&msg).await;
                return 2;
            }
        }
    };
    let show_names = o.filenames.unwrap_or(operands.len() > 1);
    let mut g = Grep {
        proc: &proc,
        o: &o,
        m: &m,
        matched: false,
        errors: false,
        show_names,
        last_printed: None,
    };
    if operands.is_empty() {
        operands.push(if o.recursive { ".".into() } else { "-".into() });
    }
    for f in &operands {
        match g.operand(f).await {
            Ok(()) => {}
            Err(Stop::Quiet) => return 0,
            Err(Stop::Code(code)) => return code,
        }
    }
    if g.errors {
        2
    } else if g.matched {
        0
    } else {
        1
    }
}

/// Why grep stops before its operands are done.
enum Stop {
    /// `-q` saw a match: exit 0 at once.
    Quiet,
    /// Writing failed (SIGPIPE's 141, or 1).
    Code(i32),
}

impl From<i32> for Stop {
    fn from(code: i32) -> Self {
        Stop::Code(code)
    }
}

/// One grep run over its operands.
struct Grep<'a> {
    proc: &'a Process,
    o: &'a Opts,
    m: &'a Matcher,
    /// A line was selected somewhere.
    matched: bool,
    /// A file could not be read.
    errors: bool,
    /// Lines are prefixed with their file's name.
    show_names: bool,
    /// The number of the last line printed, for the `--` between groups of context.
    last_printed: Option<u64>,
}

impl Grep<'_> {
    /// Greps an operand: a file, `-`, or (with `-r`) a directory tree.
    async fn operand(&mut self, f: &str) -> Result<(), Stop> {
        if f != "-" && self.o.recursive {
            let path = self.proc.path(f);
            if matches!(self.proc.fs.metadata(&path), Ok(m) if m.kind == NodeKind::Directory) {
                if self.o.filenames != Some(false) {
                    self.show_names = true;
                }
                return Box::pin(self.tree(f)).await;
            }
        }
        self.file(f).await
    }

    /// Greps every file below a directory, in name order.
    async fn tree(&mut self, dir: &str) -> Result<(), Stop> {
        let path = self.proc.path(dir);
        let Ok(mut entries) = self.proc.fs.read_dir(&path) else {
            return Ok(());
        };
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries {
            let child = if dir.ends_with('/') {
                format!("{dir}{}", e.name)
            } else {
                format!("{dir}/{}", e.name)
            };
            match e.meta.kind {
                NodeKind::Directory => Box::pin(self.tree(&child)).await?,
                NodeKind::Regular => self.file(&child).await?,
                // -r leaves links below the operands alone, -R follows them.
                NodeKind::Symlink if self.o.follow => {
                    let target = self.proc.path(&child);
                    match self.proc.fs.metadata(&target).map(|m| m.kind) {
                        Ok(NodeKind::Directory) => Box::pin(self.tree(&child)).await?,
                        Ok(NodeKind::Regular) => self.file(&child).await?,
                        _ => {}
                    }
                }
                NodeKind::CharDevice | NodeKind::Symlink => {}
            }
        }
        Ok(())
    }

    /// Greps one file (or stdin).
    async fn file(&mut self, f: &str) -> Result<(), Stop> {
        let input = match open_input(self.proc, f) {
            Ok(i) => i,
            Err(fakekube_runtime::fs::FsError::IsADirectory) => return Ok(()),
            Err(e) => {
                if !self.o.silent {
                    self.proc.err(&format!("{f}: {e}")).await;
                }
                self.errors = true;
                return Ok(());
            }
        };
        let label = if f == "-" { "(standard input)" } else { f };
        let o = self.o;
        let mut count: u64 = 0;
        let mut lineno: u64 = 0;
        let mut before: std::collections::VecDeque<(u64, String)> = Default::default();
        let mut after_left = 0usize;
        while let Some(raw) = input.read_line(MAX_LINE).await {
            lineno += 1;
            let text = String::from_utf8_lossy(&raw);
            let text = text.strip_suffix('\n').unwrap_or(&text);
            let hit = self.m.find(text, 0).is_some();
            if hit == o.invert {
                if after_left > 0 {
                    after_left -= 1;
                    self.print_line(label, lineno, text, '-').await?;
                } else if o.before > 0 {
                    before.push_back((lineno, text.to_string()));
                    if before.len() > o.before {
                        before.pop_front();
                    }
                }
                continue;
            }
            if o.max.is_some_and(|m| count >= m) {
                break;
            }
            count += 1;
            self.matched = true;
            if o.quiet {
                return Err(Stop::Quiet);
            }
            if o.list || o.list_unmatched {
                break;
            }
            if o.count {
                continue;
            }
            for (n, l) in std::mem::take(&mut before) {
                self.print_line(label, n, &l, '-').await?;
            }
            if o.only && !o.invert {
                let mut at = 0;
                while let Some((s, e)) = self.m.find(text, at) {
                    if e > s {
                        self.print_line(label, lineno, &text[s..e], ':').await?;
                        at = e;
                    } else {
                        at = next_char(text, s);
                    }
                    if at > text.len() {
                        break;
                    }
                }
            } else if !o.only {
                self.print_line(label, lineno, text, ':').await?;
            }
            after_left = o.after;
        }
        if o.count {
            let line = if self.show_names {
                format!("{label}:{count}\n")
            } else {
                format!("{count}\n")
            };
            emit(self.proc, line).await?;
        }
        if o.list && count > 0 {
            emit(self.proc, format!("{label}\n")).await?;
        }
        if o.list_unmatched && count == 0 {
            emit(self.proc, format!("{label}\n")).await?;
        }
        Ok(())
    }

    /// Prints a selected (`:`) or context (`-`) line with its name and number as asked.
    async fn print_line(&mut self, label: &str, n: u64, text: &str, sep: char) -> Result<(), Stop> {
        let mut out = String::with_capacity(text.len() + 16);
        let context = self.o.before > 0 || self.o.after > 0;
        if context && self.last_printed.is_some_and(|l| n > l + 1) {
            out.push_str("--\n");
        }
        self.last_printed = Some(n);
        if self.show_names {
            out.push_str(label);
            out.push(sep);
        }
        if self.o.numbers {
            out.push_str(&n.to_string());
            out.push(sep);
        }
        out.push_str(text);
        out.push('\n');
        emit(self.proc, out).await.map_err(Stop::Code)
    }
}
