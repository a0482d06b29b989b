//! `sed`: the stream editor, with the commands scripts use (`s`, `p`, `d`, `q`, `=`, `a`,
//! `i`, `c`, `y`, `n`, `N`, `D`, `P`, `h`, `H`, `g`, `G`, `x`, `b`, `t`, `T`, `{…}`, `!`) and
//! line addressing (`N`, `$`, `/re/`, `first~step`, `a,b`, `a,+n`). Regular expressions are POSIX
//! basic ones (extended with `-E`/`-r`), translated to the `regex` crate's syntax; back
//! references inside a pattern are not supported.

use std::collections::HashMap;

use regex::{Captures, Regex};

use super::cli::{emit, slurp, usage};
use super::posix_regex;
use fakekube_runtime::process::Process;

/// An address.
#[derive(Debug, Clone)]
enum Addr {
    /// A line number.
    Line(usize),
    /// `$`.
    Last,
    /// `/re/` (`None`: the last regex used).
    Re(Option<Regex>),
    /// `first~step`.
    Step(usize, usize),
    /// `+n` (second address only).
    Plus(usize),
}

/// One part of an `s` replacement.
#[derive(Debug, Clone)]
enum Repl {
    /// Literal text.
    Text(String),
    /// `&` (0) or `\N`.
    Group(usize),
}

/// What a command does.
#[derive(Debug, Clone)]
enum Op {
    /// `{`: the index of the matching `}`.
    Block(usize),
    /// `}`.
    End,
    /// `s/re/repl/flags`.
    Subst {
        /// The pattern (`None`: the last one used).
        re: Option<Regex>,
        /// The replacement.
        repl: Vec<Repl>,
        /// `g`.
        global: bool,
        /// `N`: replace only the Nth match.
        nth: usize,
        /// `p`.
        print: bool,
    },
    /// `y/src/dst/`.
    Translit(HashMap<char, char>),
    /// `p`.
    Print,
    /// `P`.
    PrintFirst,
    /// `d`.
    Delete,
    /// `D`.
    DeleteFirst,
    /// `q [code]` (`true`: print first) and `Q [code]`.
    Quit(bool, i32),
    /// `=`.
    LineNumber,
    /// `a text`.
    Append(String),
    /// `i text`.
    Insert(String),
    /// `c text`.
    Change(String),
    /// `n`.
    Next,
    /// `N`.
    NextAppend,
    /// `h`.
    Hold,
    /// `H`.
    HoldAppend,
    /// `g`.
    Get,
    /// `G`.
    GetAppend,
    /// `x`.
    Exchange,
    /// `b label`, `t label` (`Some(true)`), `T label` (`Some(false)`).
    Branch(Option<bool>, String),
    /// `:label`.
    Label,
}

/// A command with its addresses.
#[derive(Debug, Clone)]
struct Cmd {
    /// First address.
    a1: Option<Addr>,
    /// Second address.
    a2: Option<Addr>,
    /// `!`.
    negate: bool,
    /// What it does.
    op: Op,
}

/// A script being parsed.
struct Parser<'a> {
    /// The script.
    src: &'a [char],
    /// Cursor.
    pos: usize,
    /// `-E`.
    extended: bool,
    /// Labels defined so far, with the index of their command.
    labels_pending: Vec<(String, usize)>,
}

impl Parser<'_> {
    /// The character at the cursor.
    fn cur(&self) -> Option<char> {
        self.src.get(self.pos).copied()
    }

    /// Skips blanks (and, with `newlines`, newlines and `;`).
    fn skip(&mut self, newlines: bool) {
        while let Some(c) = self.cur() {
            if c == ' ' || c == '\t' || (newlines && (c == '\n' || c == ';')) {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// Reads text delimited by `delim` (cursor after the opening one), undoing `\delim`.
    fn delimited(&mut self, delim: char) -> Result<String, String> {
        let mut out = String::new();
        loop {
            match self.cur() {
                None => return Err("unterminated address regex".into()),
                Some(c) if c == delim => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.cur() {
                        Some(c) if c == delim => out.push(c),
                        Some('n') if delim != 'n' => out.push_str("\\n"),
                        Some(c) => {
                            out.push('\\');
                            out.push(c);
                        }
                        None => return Err("unterminated address regex".into()),
                    }
                    self.pos += 1;
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// A number at the cursor.
    fn number(&mut self) -> Option<usize> {
        let start = self.pos;
        while self.cur().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.src[start..self.pos]
            .iter()
            .collect::<String>()
            .parse()
            .ok()
    }

    /// An address at the cursor, if any.
    fn address(&mut self, second: bool) -> Result<Option<Addr>, String> {
        match self.cur() {
            Some(c) if c.is_ascii_digit() => {
                let n = self.number().unwrap_or(0);
                if self.cur() == Some('~') {
                    self.pos += 1;
                    let step = self.number().unwrap_or(0);
                    return Ok(Some(Addr::Step(n, step)));
                }
                Ok(Some(Addr::Line(n)))
            }
            Some('+') if second => {
                self.pos += 1;
                Ok(Some(Addr::Plus(self.number().unwrap_or(0))))
            }
            Some('$') => {
                self.pos += 1;
                Ok(Some(Addr::Last))
            }
            Some(d @ ('/' | '\\')) => {
                self.pos += 1;
                let delim = if d == '\\' {
                    let c = self.cur().ok_or("unexpected end of script")?;
                    self.pos += 1;
                    c
                } else {
                    '/'
                };
                let text = self.delimited(delim)?;
                let mut insensitive = false;
                if self.cur() == Some('I') {
                    insensitive = true;
                    self.pos += 1;
                }
                Ok(Some(Addr::Re(compile(&text, self.extended, insensitive)?)))
            }
            _ => Ok(None),
        }
    }

    /// The text argument of `a`, `i`, `c`: `a\` + lines, or GNU's one-line `a text`.
    fn text(&mut self) -> String {
        self.skip(false);
        if self.cur() == Some('\\') {
            self.pos += 1;
            if self.cur() == Some('\n') {
                self.pos += 1;
            }
        }
        let mut out = String::new();
        while let Some(c) = self.cur() {
            self.pos += 1;
            match c {
                '\\' => match self.cur() {
                    Some(n) => {
                        out.push(n);
                        self.pos += 1;
                    }
                    None => break,
                },
                '\n' => break,
                c => out.push(c),
            }
        }
        out
    }

    /// A label or file name: up to a newline or `;`.
    fn word(&mut self) -> String {
        self.skip(false);
        let start = self.pos;
        while self.cur().is_some_and(|c| c != '\n' && c != ';') {
            self.pos += 1;
        }
        self.src[start..self.pos]
            .iter()
            .collect::<String>()
            .trim_end()
            .to_string()
    }

    /// The whole script.
    fn script(&mut self) -> Result<Vec<Cmd>, String> {
        let mut cmds: Vec<Cmd> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        loop {
            self.skip(true);
            let Some(_) = self.cur() else { break };
            if self.cur() == Some('#') {
                while self.cur().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                continue;
            }
            let a1 = self.address(false)?;
            let mut a2 = None;
            if a1.is_some() && self.cur() == Some(',') {
                self.pos += 1;
                a2 = Some(self.address(true)?.ok_or("unexpected ','")?);
            }
            self.skip(false);
            let mut negate = false;
            while self.cur() == Some('!') {
                negate = true;
                self.pos += 1;
                self.skip(false);
            }
            let c = self.cur().ok_or("missing command")?;
            self.pos += 1;
            let op = match c {
                '{' => {
                    open.push(cmds.len());
                    Op::Block(0)
                }
                '}' => {
                    let start = open.pop().ok_or("unexpected '}'")?;
                    let end = cmds.len();
                    if let Some(Cmd {
                        op: Op::Block(e), ..
                    }) = cmds.get_mut(start)
                    {
                        *e = end;
                    }
                    Op::End
                }
                's' => self.subst()?,
                'y' => {
                    let delim = self.cur().ok_or("unterminated `y' command")?;
                    self.pos += 1;
                    let from: Vec<char> = unescape(&self.delimited(delim)?).chars().collect();
                    let to: Vec<char> = unescape(&self.delimited(delim)?).chars().collect();
                    if from.len() != to.len() {
                        return Err("strings for `y' command are different lengths".into());
                    }
                    Op::Translit(from.into_iter().zip(to).collect())
                }
                'p' => Op::Print,
                'P' => Op::PrintFirst,
                'd' => Op::Delete,
                'D' => Op::DeleteFirst,
                'q' | 'Q' => {
                    self.skip(false);
                    let code = self.number().unwrap_or(0);
                    Op::Quit(c == 'q', i32::try_from(code).unwrap_or(0))
                }
                '=' => Op::LineNumber,
                'a' => Op::Append(self.text()),
                'i' => Op::Insert(self.text()),
                'c' => Op::Change(self.text()),
                'n' => Op::Next,
                'N' => Op::NextAppend,
                'h' => Op::Hold,
                'H' => Op::HoldAppend,
                'g' => Op::Get,
                'G' => Op::GetAppend,
                'x' => Op::Exchange,
                'b' => Op::Branch(None, self.word()),
                't' => Op::Branch(Some(true), self.word()),
                'T' => Op::Branch(Some(false), self.word()),
                ':' => {
                    let label = self.word();
                    if label.is_empty() {
                        return Err("\":\" lacks a label".into());
                    }
                    cmds.push(Cmd {
                        a1,
                        a2,
                        negate,
                        op: Op::Label,
                    });
                    let at = cmds.len() - 1;
                    self.labels_pending.push((label, at));
                    continue;
                }
                other => return Err(format!("unknown command: '{other}'")),
            };
            cmds.push(Cmd { a1, a2, negate, op });
        }
        if !open.is_empty() {
            return Err("unmatched '{'".into());
        }
        Ok(cmds)
    }

    /// `s/re/repl/flags` (cursor after `s`).
    fn subst(&mut self) -> Result<Op, String> {
        let delim = self.cur().ok_or("unterminated `s' command")?;
        if delim == '\n' || delim == '\\' {
            return Err("unterminated `s' command".into());
        }
        self.pos += 1;
        let pattern = self
            .delimited(delim)
            .map_err(|_| "unterminated `s' command".to_string())?;
        let mut repl_text = String::new();
        loop {
            match self.cur() {
                None => return Err("unterminated `s' command".into()),
                Some(c) if c == delim => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    self.pos += 1;
                    let n = self.cur().ok_or("unterminated `s' command")?;
                    if n == delim {
                        repl_text.push_str(&escape_literal(n));
                    } else {
                        repl_text.push('\\');
                        repl_text.push(n);
                    }
                    self.pos += 1;
                }
                Some(c) => {
                    repl_text.push(c);
                    self.pos += 1;
                }
            }
        }
        let (mut global, mut nth, mut print, mut insensitive) = (false, 1, false, false);
        while let Some(c) = self.cur() {
            match c {
                'g' => global = true,
                'p' => print = true,
                'i' | 'I' => insensitive = true,
                d if d.is_ascii_digit() => {
                    nth = self.number().unwrap_or(1).max(1);
                    continue;
                }
                ' ' | '\t' | '\n' | ';' | '}' | '#' => break,
                other => return Err(format!("unknown option to `s': '{other}'")),
            }
            self.pos += 1;
        }
        Ok(Op::Subst {
            re: compile(&pattern, self.extended, insensitive)?,
            repl: parse_replacement(&repl_text),
            global,
            nth,
            print,
        })
    }
}

/// A replacement character written `\c` that stands for itself.
fn escape_literal(c: char) -> String {
    if c == '&' || c == '\\' {
        format!("\\{c}")
    } else {
        c.to_string()
    }
}

/// Undoes `\n`, `\t` and `\\` in `y` strings.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

/// Parses an `s` replacement.
fn parse_replacement(s: &str) -> Vec<Repl> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '&' => {
                if !text.is_empty() {
                    parts.push(Repl::Text(std::mem::take(&mut text)));
                }
                parts.push(Repl::Group(0));
            }
            '\\' => match chars.next() {
                Some(d @ '0'..='9') => {
                    if !text.is_empty() {
                        parts.push(Repl::Text(std::mem::take(&mut text)));
                    }
                    parts.push(Repl::Group(d as usize - '0' as usize));
                }
                Some('n') => text.push('\n'),
                Some('t') => text.push('\t'),
                Some(o) => text.push(o),
                None => text.push('\\'),
            },
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        parts.push(Repl::Text(text));
    }
    parts
}

/// Compiles a POSIX regex (`None` for the empty one: the last regex used).
fn compile(pattern: &str, extended: bool, insensitive: bool) -> Result<Option<Regex>, String> {
    if pattern.is_empty() {
        return Ok(None);
    }
    posix_regex::compile(pattern, extended, insensitive)
        .map(Some)
        .map_err(|_| format!("bad regex '{pattern}'"))
}

/// Parses a whole script.
fn parse_script(text: &str, extended: bool) -> Result<(Vec<Cmd>, HashMap<String, usize>), String> {
    let src: Vec<char> = text.chars().collect();
    let mut p = Parser {
        src: &src,
        pos: 0,
        extended,
        labels_pending: Vec::new(),
    };
    let cmds = p.script()?;
    let labels: HashMap<String, usize> = p.labels_pending.into_iter().collect();
    for c in &cmds {
        if let Op::Branch(_, l) = &c.op
            && !l.is_empty()
            && !labels.contains_key(l)
        {
            return Err(format!("can't find label for jump to '{l}'"));
        }
    }
    Ok((cmds, labels))
}

/// Running state of a script over some input.
struct Run<'a> {
    /// The commands.
    cmds: &'a [Cmd],
    /// Label → command index.
    labels: &'a HashMap<String, usize>,
    /// The input lines.
    lines: Vec<String>,
    /// The next line to read.
    next: usize,
    /// The current line number.
    line_no: usize,
    /// Range state per command: `Some(start line)` while inside its range.
    ranges: Vec<Option<usize>>,
    /// The last regex used.
    last_re: Option<Regex>,
    /// `-n`.
    quiet: bool,
    /// Output.
    out: String,
}

/// What a cycle ended with.
enum End {
    /// Go on to the next line.
    Next,
    /// Stop, with this exit code.
    Quit(i32),
}

impl Run<'_> {
    /// Whether `addr` matches the current line.
    fn matches(&mut self, addr: &Addr, space: &str) -> bool {
        match addr {
            Addr::Line(n) => self.line_no == *n,
            Addr::Last => self.next >= self.lines.len(),
            Addr::Step(first, step) => {
                if *step == 0 {
                    self.line_no == *first
                } else {
                    self.line_no >= *first && (self.line_no - first).is_multiple_of(*step)
                }
            }
            Addr::Plus(_) => false,
            Addr::Re(re) => {
                let re = match re {
                    Some(r) => {
                        self.last_re = Some(r.clone());
                        r.clone()
                    }
                    None => match &self.last_re {
                        Some(r) => r.clone(),
                        None => return false,
                    },
                };
                re.is_match(space)
            }
        }
    }

    /// Whether command `k` applies to the current line.
    fn selected(&mut self, k: usize, space: &str) -> bool {
        let cmd = &self.cmds[k];
        let hit = match (&cmd.a1, &cmd.a2) {
            (None, _) => true,
            (Some(a1), None) => self.matches(a1, space),
            (Some(a1), Some(a2)) => match self.ranges[k] {
                Some(start) => {
                    let end = match a2 {
                        Addr::Line(n) => self.line_no >= *n,
                        Addr::Plus(n) => self.line_no >= start + n,
                        other => self.matches(other, space),
                    };
                    if end {
                        self.ranges[k] = None;
                    }
                    true
                }
                None => {
                    if self.matches(a1, space) {
                        let single = match a2 {
                            Addr::Line(n) => *n <= self.line_no,
                            Addr::Plus(0) => true,
                            _ => false,
                        };
                        if !single {
                            self.ranges[k] = Some(self.line_no);
                        }
                        true
                    } else {
                        false
                    }
                }
            },
        };
        hit != cmd.negate
    }

    /// Reads the next input line, if any.
    fn read(&mut self) -> Option<String> {
        let l = self.lines.get(self.next).cloned()?;
        self.next += 1;
        self.line_no += 1;
        Some(l)
    }

    /// Runs the script on one pattern space.
    fn cycle(&mut self, mut space: String, hold: &mut String) -> End {
        let mut appends: Vec<String> = Vec::new();
        let mut substituted = false;
        let mut pc = 0;
        let mut print_end = !self.quiet;
        let mut restart_with: Option<String> = None;
        while pc < self.cmds.len() {
            if !self.selected(pc, &space) {
                if let Op::Block(end) = self.cmds[pc].op {
                    pc = end + 1;
                } else {
                    pc += 1;
                }
                continue;
            }
            let op = self.cmds[pc].op.clone();
            pc += 1;
            match op {
                Op::Block(_) | Op::End | Op::Label => {}
                Op::Subst {
                    re,
                    repl,
                    global,
                    nth,
                    print,
                } => {
                    let re = match re {
                        Some(r) => {
                            self.last_re = Some(r.clone());
                            r
                        }
                        None => match &self.last_re {
                            Some(r) => r.clone(),
                            None => continue,
                        },
                    };
                    if let Some(new) = substitute(&re, &space, &repl, global, nth) {
                        space = new;
                        substituted = true;
                        if print {
                            self.out.push_str(&space);
                            self.out.push('\n');
                        }
                    }
                }
                Op::Translit(map) => {
                    space = space.chars().map(|c| *map.get(&c).unwrap_or(&c)).collect();
                }
                Op::Print => {
                    self.out.push_str(&space);
                    self.out.push('\n');
                }
                Op::PrintFirst => {
                    self.out
                        .push_str(space.split('\n').next().unwrap_or_default());
                    self.out.push('\n');
                }
                Op::Delete => {
                    print_end = false;
                    break;
                }
                Op::DeleteFirst => {
                    if let Some((_, rest)) = space.split_once('\n') {
                        restart_with = Some(rest.to_string());
                    }
                    print_end = false;
                    break;
                }
                Op::Quit(print, code) => {
                    if print && !self.quiet {
                        self.out.push_str(&space);
                        self.out.push('\n');
                    }
                    for a in appends {
                        self.out.push_str(&a);
                    }
                    return End::Quit(code);
                }
                Op::LineNumber => self.out.push_str(&format!("{}\n", self.line_no)),
                Op::Append(text) => appends.push(format!("{text}\n")),
                Op::Insert(text) => {
                    self.out.push_str(&text);
                    self.out.push('\n');
                }
                Op::Change(text) => {
                    let k = pc - 1;
                    if self.cmds[k].a2.is_none() || self.ranges[k].is_none() {
                        self.out.push_str(&text);
                        self.out.push('\n');
                    }
                    print_end = false;
                    break;
                }
                Op::Next => {
                    if !self.quiet {
                        self.out.push_str(&space);
                        self.out.push('\n');
                    }
                    for a in appends.drain(..) {
                        self.out.push_str(&a);
                    }
                    match self.read() {
                        Some(l) => space = l,
                        None => return End::Quit(0),
                    }
                }
                Op::NextAppend => match self.read() {
                    Some(l) => {
                        space.push('\n');
                        space.push_str(&l);
                    }
                    None => break,
                },
                Op::Hold => *hold = space.clone(),
                Op::HoldAppend => {
                    hold.push('\n');
                    hold.push_str(&space);
                }
                Op::Get => space = hold.clone(),
                Op::GetAppend => {
                    space.push('\n');
                    space.push_str(hold);
                }
                Op::Exchange => std::mem::swap(&mut space, hold),
                Op::Branch(cond, label) => {
                    let go = match cond {
                        None => true,
                        Some(true) => std::mem::take(&mut substituted),
                        Some(false) => !std::mem::take(&mut substituted),
                    };
                    if go {
                        pc = if label.is_empty() {
                            self.cmds.len()
                        } else {
                            self.labels.get(&label).copied().unwrap_or(self.cmds.len())
                        };
                    }
                }
            }
        }
        if print_end {
            self.out.push_str(&space);
            self.out.push('\n');
        }
        for a in appends {
            self.out.push_str(&a);
        }
        if let Some(rest) = restart_with.filter(|r| !r.is_empty()) {
            return self.cycle(rest, hold);
        }
        End::Next
    }
}

/// Replaces the matches `s` asks for; `None` when nothing matched.
fn substitute(re: &Regex, space: &str, repl: &[Repl], global: bool, nth: usize) -> Option<String> {
    let mut out = String::new();
    let mut last = 0;
    let mut count = 0;
    let mut done = false;
    for caps in re.captures_iter(space) {
        let Some(m) = caps.get(0) else { continue };
        count += 1;
        if count < nth {
            continue;
        }
        out.push_str(&space[last..m.start()]);
        expand(&caps, repl, &mut out);
        last = m.end();
        done = true;
        if !global {
            break;
        }
    }
    if !done {
        return None;
    }
    out.push_str(&space[last..]);
    Some(out)
}

/// Appends a replacement for one match.
fn expand(caps: &Captures<'_>, repl: &[Repl], out: &mut String) {
    for part in repl {
        match part {
            Repl::Text(t) => out.push_str(t),
            Repl::Group(n) => out.push_str(caps.get(*n).map_or("", |m| m.as_str())),
        }
    }
}

/// Runs a script over input text; returns the output and the exit code.
fn run_script(
    cmds: &[Cmd],
    labels: &HashMap<String, usize>,
    input: &str,
    quiet: bool,
) -> (String, i32) {
    let mut lines: Vec<String> = input.split('\n').map(str::to_string).collect();
    if input.is_empty() || input.ends_with('\n') {
        lines.pop();
    }
    let mut run = Run {
        cmds,
        labels,
        lines,
        next: 0,
        line_no: 0,
        ranges: vec![None; cmds.len()],
        last_re: None,
        quiet,
        out: String::new(),
    };
    let mut hold = String::new();
    while let Some(line) = run.read() {
        if let End::Quit(code) = run.cycle(line, &mut hold) {
            return (run.out, code);
        }
    }
    (run.out, 0)
}

/// `sed [-nErs] [-i[SUFFIX]] [-e SCRIPT]… [-f FILE]… [SCRIPT] [FILE]…`.
pub(crate) async fn sed(proc: Process) -> i32 {
    let args = proc.args();
    let (mut quiet, mut extended, mut in_place, mut suffix) = (false, false, false, String::new());
    let mut scripts: Vec<String> = Vec::new();
    let mut operands: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        match a.as_str() {
            "-n" | "--quiet" | "--silent" => quiet = true,
            "-E" | "-r" | "--regexp-extended" => extended = true,
            "-s" | "-u" | "--posix" => {}
            "-e" | "-f" => {
                let Some(v) = args.get(i) else {
                    return usage(
                        &proc,
                        &format!("option requires an argument -- '{}'", &a[1..]),
                        1,
                    )
                    .await;
                };
                i += 1;
                if a == "-e" {
                    scripts.push(v.clone());
                } else {
                    match proc.fs.read(&proc.path(v)) {
                        Ok(b) => scripts.push(String::from_utf8_lossy(&b).into_owned()),
                        Err(e) => {
                            proc.err(&format!("can't open '{v}': {e}")).await;
                            return 1;
                        }
                    }
                }
            }
            s if s.starts_with("--expression=") => scripts.push(s[13..].to_string()),
            s if s == "--in-place" || s.starts_with("--in-place=") => {
                in_place = true;
                suffix = s.strip_prefix("--in-place=").unwrap_or("").to_string();
            }
            s if s.starts_with("-i") => {
                in_place = true;
                suffix = s[2..].to_string();
            }
            s if s.starts_with('-') && s.len() > 1 => {
                let mut ok = true;
                for c in s[1..].chars() {
                    match c {
                        'n' => quiet = true,
                        'E' | 'r' => extended = true,
                        's' | 'u' => {}
                        _ => ok = false,
                    }
                }
                if !ok {
                    return usage(&proc, &format!("invalid option -- '{}'", &s[1..2]), 1).await;
                }
            }
            _ => operands.push(a.clone()),
        }
    }
    if scripts.is_empty() {
        if operands.is_empty() {
            return usage(&proc, "no script specified", 1).await;
        }
        scripts.push(operands.remove(0));
    }
    let (cmds, labels) = match parse_script(&scripts.join("\n"), extended) {
        Ok(s) => s,
        Err(e) => {
            proc.err(&e).await;
            return 1;
        }
    };
    if operands.is_empty() {
        if in_place {
            proc.err("no files to edit in place").await;
            return 1;
        }
        operands.push("-".into());
    }
    let mut status = 0;
    if in_place {
        for f in &operands {
            let path = proc.path(f);
            let data = match proc.fs.read(&path) {
                Ok(d) => d,
                Err(e) => {
                    proc.err(&format!("can't open '{f}': {e}")).await;
                    status = 1;
                    continue;
                }
            };
            let (out, code) = run_script(&cmds, &labels, &String::from_utf8_lossy(&data), quiet);
            if !suffix.is_empty() {
                let _ = proc.fs.write(&format!("{path}{suffix}"), &data);
            }
            if let Err(e) = proc.fs.write(&path, out.as_bytes()) {
                proc.err(&format!("can't write '{f}': {e}")).await;
                status = 1;
            }
            if code != 0 {
                return code;
            }
        }
        return status;
    }
    let mut input = String::new();
    for f in &operands {
        match slurp(&proc, f).await {
            Some(d) => input.push_str(&String::from_utf8_lossy(&d)),
            None => status = 1,
        }
    }
    let (out, code) = run_script(&cmds, &labels, &input, quiet);
    if let Err(c) = emit(&proc, out).await {
        return c;
    }
    if code != 0 { code } else { status }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sed(script: &str, input: &str) -> String {
        let (cmds, labels) = parse_script(script, false).expect("the script parses");
        run_script(&cmds, &labels, input, false).0
    }

    #[test]
    fn substitution_flags_groups_and_addresses() {
        assert_eq!(sed("s/o/0/", "foo\nboo\n"), "f0o\nb0o\n");
        assert_eq!(sed("s/o/0/g", "foo\n"), "f00\n");
        assert_eq!(sed("s/o/0/2", "fooo\n"), "fo0o\n");
        assert_eq!(sed("s/\\(a*\\)b/[\\1]&/", "aab\n"), "[aa]aab\n");
        assert_eq!(sed("2s/x/y/", "x\nx\nx\n"), "x\ny\nx\n");
        assert_eq!(sed("/b/,/d/d", "a\nb\nc\nd\ne\n"), "a\ne\n");
        assert_eq!(sed("$!d", "a\nb\n"), "b\n");
        assert_eq!(sed("1~2d", "1\n2\n3\n4\n"), "2\n4\n");
        assert_eq!(sed("s|/|:|g", "/a/b\n"), ":a:b\n");
    }

    #[test]
    fn commands_print_quit_insert_and_join_lines() {
        let (cmds, labels) = parse_script("2p", false).expect("parses");
        assert_eq!(run_script(&cmds, &labels, "a\nb\n", true).0, "b\n");
        assert_eq!(sed("2q", "a\nb\nc\n"), "a\nb\n");
        assert_eq!(sed("1i\\\ntop", "a\n"), "top\na\n");
        assert_eq!(sed("a end", "a\n"), "a\nend\n");
        assert_eq!(sed(":a;N;$!ba;s/\\n/,/g", "a\nb\nc\n"), "a,b,c\n");
        assert_eq!(sed("=", "x\n"), "1\nx\n");
        assert_eq!(sed("y/abc/xyz/", "cab\n"), "zxy\n");
        assert_eq!(sed("/x/{s/x/y/;p}", "x\nz\n"), "y\ny\nz\n");
    }

    #[test]
    fn bad_scripts_are_errors() {
        assert!(parse_script("k", false).is_err());
        assert!(parse_script("s/a/b", false).is_err());
        assert!(parse_script("{p", false).is_err());
        assert!(parse_script("b nowhere", false).is_err());
    }
}
