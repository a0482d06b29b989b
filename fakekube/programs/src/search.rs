//! Programs that find files and build command lines: `find` and `xargs`, as BusyBox words
//! them.

use fakekube_runtime::fs::{self, NodeKind};
use fakekube_runtime::process::Process;
use fakekube_runtime::shell::pattern::Pattern;

use super::cli::{MAX_INPUT, emit, usage};

/// A `find` expression.
#[derive(Debug, Clone)]
enum Expr {
    /// Both.
    And(Box<Expr>, Box<Expr>),
    /// Either.
    Or(Box<Expr>, Box<Expr>),
    /// Negation.
    Not(Box<Expr>),
    /// `-name` / `-iname` (`true`: case-insensitive) and `-path`.
    Name(Pattern, bool, bool),
    /// `-type C`.
    Type(char),
    /// `-empty`.
    Empty,
    /// `-true` / `-false`.
    Const(bool),
    /// `-print` (`true`: `-print0`).
    Print(bool),
    /// `-delete`.
    Delete,
    /// `-exec CMD… {} ;` (`false`) or `+` (`true`).
    Exec(Vec<String>, bool),
}

/// A compiled pattern for `-name`.
fn pattern(text: &str, fold: bool) -> Pattern {
    let chars: Vec<(char, bool)> = if fold {
        text.to_lowercase().chars().map(|c| (c, true)).collect()
    } else {
        text.chars().map(|c| (c, true)).collect()
    };
    Pattern::new(&chars)
}

/// Parses the expression tokens of `find`.
struct ExprParser<'a> {
    /// The tokens.
    toks: &'a [String],
    /// Cursor.
    pos: usize,
    /// Set when an action appeared (no implicit `-print` then).
    has_action: bool,
}

impl ExprParser<'_> {
    /// `or := and (-o and)*`.
    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while matches!(
            self.toks.get(self.pos).map(String::as_str),
            Some("-o" | "-or")
        ) {
            self.pos += 1;
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    /// `and := unary ([-a] unary)*`.
    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        loop {
            match self.toks.get(self.pos).map(String::as_str) {
                None | Some("-o" | "-or" | ")") => return Ok(left),
                Some("-a" | "-and") => self.pos += 1,
                Some(_) => {}
            }
            let right = self.unary()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
    }

    /// `!`, `( … )` or a primary.
    fn unary(&mut self) -> Result<Expr, String> {
        let Some(tok) = self.toks.get(self.pos).cloned() else {
            return Err("missing argument".into());
        };
        self.pos += 1;
        let mut arg = |name: &str| -> Result<String, String> {
            let v = self
                .toks
                .get(self.pos)
                .cloned()
                .ok_or_else(|| format!("{name}: requires an argument"))?;
            self.pos += 1;
            Ok(v)
        };
        Ok(match tok.as_str() {
            "!" | "-not" => Expr::Not(Box::new(self.unary()?)),
            "(" => {
                let e = self.or()?;
                if self.toks.get(self.pos).map(String::as_str) != Some(")") {
                    return Err("missing ')'".into());
                }
                self.pos += 1;
                e
            }
            "-name" => Expr::Name(pattern(&arg("-name")?, false), false, false),
            "-iname" => Expr::Name(pattern(&arg("-iname")?, true), true, false),
            "-path" | "-wholename" => Expr::Name(pattern(&arg("-path")?, false), false, true),
            "-type" => {
                let t = arg("-type")?;
                match t.as_str() {
                    "f" | "d" | "l" | "c" | "b" | "p" | "s" => {
                        Expr::Type(t.chars().next().unwrap_or('f'))
                    }
                    _ => return Err(format!("invalid argument '{t}' to '-type'")),
                }
            }
            "-empty" => Expr::Empty,
            "-true" => Expr::Const(true),
            "-false" => Expr::Const(false),
            "-print" | "-print0" => {
                self.has_action = true;
                Expr::Print(tok == "-print0")
            }
            "-delete" => {
                self.has_action = true;
                Expr::Delete
            }
            "-exec" => {
                self.has_action = true;
                let mut argv = Vec::new();
                loop {
                    let Some(t) = self.toks.get(self.pos).cloned() else {
                        return Err("-exec: requires an argument".into());
                    };
                    self.pos += 1;
                    if t == ";" {
                        break Expr::Exec(argv, false);
                    }
                    if t == "+" && argv.last().is_some_and(|a| a == "{}") {
                        argv.pop();
                        break Expr::Exec(argv, true);
                    }
                    argv.push(t);
                }
            }
            other => return Err(format!("unrecognized: {other}")),
        })
    }
}

/// What evaluating the expression on one file asks for.
struct Visit<'a> {
    /// The process.
    proc: &'a Process,
    /// Output gathered.
    out: Vec<u8>,
    /// Paths collected for `-exec … +`, by the index of their expression in the walk.
    batch: Vec<String>,
    /// The status so far.
    status: i32,
}

impl Visit<'_> {
    /// Evaluates `e` on `path` (as shown) at absolute `abs`.
    fn eval<'b>(
        &'b mut self,
        e: &'b Expr,
        shown: &'b str,
        abs: &'b str,
    ) -> fakekube_runtime::process::BoxFuture<'b, bool> {
        Box::pin(async move {
            match e {
                Expr::And(a, b) => self.eval(a, shown, abs).await && self.eval(b, shown, abs).await,
                Expr::Or(a, b) => self.eval(a, shown, abs).await || self.eval(b, shown, abs).await,
                Expr::Not(a) => !self.eval(a, shown, abs).await,
                Expr::Name(p, fold, whole) => {
                    let text = if *whole {
                        shown.to_string()
                    } else {
                        let base = shown.trim_end_matches('/');
                        base.rsplit('/').next().unwrap_or(base).to_string()
                    };
                    let text = if *fold { text.to_lowercase() } else { text };
                    let chars: Vec<char> = text.chars().collect();
                    p.matches(&chars)
                }
                Expr::Type(t) => {
                    let kind = self.proc.fs.symlink_metadata(abs).map(|m| m.kind);
                    matches!(
                        (t, kind),
                        ('f', Ok(NodeKind::Regular))
                            | ('d', Ok(NodeKind::Directory))
                            | ('c', Ok(NodeKind::CharDevice))
                            | ('l', Ok(NodeKind::Symlink))
                    )
                }
                Expr::Empty => match self.proc.fs.metadata(abs) {
                    Ok(m) if m.kind == NodeKind::Directory => {
                        self.proc.fs.read_dir(abs).is_ok_and(|e| e.is_empty())
                    }
                    Ok(m) => m.size == 0,
                    Err(_) => false,
                },
                Expr::Const(v) => *v,
                Expr::Print(nul) => {
                    self.out.extend_from_slice(shown.as_bytes());
                    self.out.push(if *nul { 0 } else { b'\n' });
                    true
                }
                Expr::Delete => {
                    if let Err(e) = self.proc.fs.remove(abs, false, true) {
                        self.proc.err(&format!("{shown}: {e}")).await;
                        self.status = 1;
                        return false;
                    }
                    true
                }
                Expr::Exec(argv, batch) => {
                    if *batch {
                        self.batch.push(shown.to_string());
                        return true;
                    }
                    if !self.flush().await {
                        return false;
                    }
                    let argv: Vec<String> = argv.iter().map(|a| a.replace("{}", shown)).collect();
                    self.proc.child(argv).spawn_as("find: can't execute ").await == 0
                }
            }
        })
    }

    /// Writes the output gathered so far; `false` when stdout is gone.
    async fn flush(&mut self) -> bool {
        if self.out.is_empty() {
            return true;
        }
        let out = std::mem::take(&mut self.out);
        match emit(self.proc, out).await {
            Ok(()) => true,
            Err(code) => {
                self.status = code;
                false
            }
        }
    }
}

/// `find [PATH]… [-maxdepth N] [-mindepth N] [EXPRESSION]`: `-name`, `-iname`, `-path`,
/// `-type`, `-empty`, `!`, `-a`, `-o`, `( )`, `-print`, `-print0`, `-exec … ;`/`+`, `-delete`.
pub(crate) async fn find(proc: Process) -> i32 {
    let args = proc.args().to_vec();
    let first_expr = args
        .iter()
        .position(|a| (a.starts_with('-') && a.len() > 1) || a == "!" || a == "(")
        .unwrap_or(args.len());
    let mut starts: Vec<String> = args[..first_expr].to_vec();
    if starts.is_empty() {
        starts.push(".".into());
    }
    let mut toks = Vec::new();
    let (mut max_depth, mut min_depth, mut depth_first) = (usize::MAX, 0usize, false);
    let mut i = first_expr;
    while let Some(a) = args.get(i) {
        i += 1;
        match a.as_str() {
            "-maxdepth" | "-mindepth" => {
                let Some(n) = args.get(i).and_then(|v| v.parse::<usize>().ok()) else {
                    proc.err(&format!("{a}: requires an argument")).await;
                    return 1;
                };
                i += 1;
                if a == "-maxdepth" {
                    max_depth = n;
                } else {
                    min_depth = n;
                }
            }
            "-depth" => depth_first = true,
            "-xdev" | "-mount" | "-follow" => {}
            _ => toks.push(a.clone()),
        }
    }
    let mut parser = ExprParser {
        toks: &toks,
        pos: 0,
        has_action: false,
    };
    let expr = if toks.is_empty() {
        Expr::Const(true)
    } else {
        match parser.or() {
            Ok(e) if parser.pos == toks.len() => e,
            Ok(_) => {
                proc.err("unexpected ')'").await;
                return 1;
            }
            Err(e) => {
                proc.err(&e).await;
                return 1;
            }
        }
    };
    let depth_first = depth_first || toks.iter().any(|t| t == "-delete");
    let expr = if parser.has_action {
        expr
    } else {
        Expr::And(Box::new(expr), Box::new(Expr::Print(false)))
    };
    let mut visit = Visit {
        proc: &proc,
        out: Vec::new(),
        batch: Vec::new(),
        status: 0,
    };
    for start in &starts {
        let abs = proc.path(start);
        if proc.fs.symlink_metadata(&abs).is_err() {
            proc.err(&format!("{start}: No such file or directory"))
                .await;
            visit.status = 1;
            continue;
        }
        let mut stack: Vec<(String, String, usize, bool)> = vec![(start.clone(), abs, 0, false)];
        while let Some((shown, abs, depth, expanded)) = stack.pop() {
            // Links below the starting points are not followed (find's default, -P).
            let meta = if depth == 0 {
                proc.fs.metadata(&abs)
            } else {
                proc.fs.symlink_metadata(&abs)
            };
            let is_dir = matches!(meta, Ok(m) if m.kind == NodeKind::Directory);
            if is_dir && !expanded && depth < max_depth {
                if depth_first {
                    stack.push((shown.clone(), abs.clone(), depth, true));
                }
                let mut entries = proc.fs.read_dir(&abs).unwrap_or_default();
                entries.sort_by(|a, b| b.name.cmp(&a.name));
                let children: Vec<_> = entries
                    .into_iter()
                    .map(|e| {
                        let child_shown = if shown.ends_with('/') {
                            format!("{shown}{}", e.name)
                        } else {
                            format!("{shown}/{}", e.name)
                        };
                        (child_shown, fs::join(&abs, &e.name), depth + 1, false)
                    })
                    .collect();
                if !depth_first && depth >= min_depth {
                    visit.eval(&expr, &shown, &abs).await;
                }
                stack.extend(children);
                if depth_first {
                    continue;
                }
                if visit.out.len() > 32 * 1024 && !visit.flush().await {
                    return visit.status;
                }
                continue;
            }
            if depth >= min_depth {
                visit.eval(&expr, &shown, &abs).await;
            }
            if visit.out.len() > 32 * 1024 && !visit.flush().await {
                return visit.status;
            }
        }
    }
    if !visit.flush().await {
        return visit.status;
    }
    for e in collect_batches(&expr) {
        if !visit.batch.is_empty() {
            let mut argv = e;
            argv.extend(std::mem::take(&mut visit.batch));
            if proc.child(argv).spawn_as("find: can't execute ").await != 0 {
                visit.status = 1;
            }
        }
    }
    visit.status
}

/// The commands of the `-exec … +` in an expression.
fn collect_batches(e: &Expr) -> Vec<Vec<String>> {
    match e {
        Expr::And(a, b) | Expr::Or(a, b) => {
            let mut v = collect_batches(a);
            v.extend(collect_batches(b));
            v
        }
        Expr::Not(a) => collect_batches(a),
        Expr::Exec(argv, true) => vec![argv.clone()],
        _ => Vec::new(),
    }
}

/// Splits `xargs` input into items: blanks and newlines separate, quotes and backslashes
/// group; `Err` for an unmatched quote.
fn split_items(text: &str) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut in_item = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_item {
                    items.push(std::mem::take(&mut cur));
                    in_item = false;
                }
            }
            '\'' | '"' => {
                in_item = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(o) => cur.push(o),
                        None => {
                            return Err(format!(
                                "unmatched {} quote",
                                if c == '"' { "double" } else { "single" }
                            ));
                        }
                    }
                }
            }
            '\\' => {
                in_item = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            o => {
                in_item = true;
                cur.push(o);
            }
        }
    }
    if in_item {
        items.push(cur);
    }
    Ok(items)
}

/// `xargs [-0rt] [-n N] [-I STR] [-d DELIM] [COMMAND [ARG]…]`: runs the command (`echo` by
/// default) with items read from stdin as arguments.
pub(crate) async fn xargs(proc: Process) -> i32 {
    let args = proc.args().to_vec();
    let (mut nul, mut no_empty, mut trace) = (false, false, false);
    let (mut per, mut replace, mut delim) = (None::<usize>, None::<String>, None::<char>);
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') || a.len() < 2 {
            break;
        }
        i += 1;
        let takes = |i: &mut usize, inline: &str| -> Option<String> {
            if !inline.is_empty() {
                return Some(inline.to_string());
            }
            let v = args.get(*i).cloned();
            *i += 1;
            v
        };
        match &a[..2] {
            "-0" => nul = true,
            "-r" => no_empty = true,
            "-t" => trace = true,
            "-x" | "-p" => {}
            "-n" | "-L" | "-s" | "-P" | "-I" | "-d" | "-E" => {
                let Some(v) = takes(&mut i, &a[2..]) else {
                    return usage(
                        &proc,
                        &format!("option requires an argument -- '{}'", &a[1..2]),
                        1,
                    )
                    .await;
                };
                match &a[..2] {
                    "-n" | "-L" => match v.parse::<usize>() {
                        Ok(n) if n > 0 => per = Some(n),
                        _ => {
                            proc.err(&format!("invalid number '{v}'")).await;
                            return 1;
                        }
                    },
                    "-I" => replace = Some(v),
                    "-d" => delim = v.chars().next(),
                    _ => {}
                }
            }
            "--" if a == "--" => break,
            _ if a == "--no-run-if-empty" => no_empty = true,
            _ if a == "--null" => nul = true,
            _ => return usage(&proc, &format!("invalid option -- '{}'", &a[1..2]), 1).await,
        }
    }
    let mut command: Vec<String> = args[i..].to_vec();
    if command.is_empty() {
        command.push("echo".into());
    }
    let data = proc.stdin.read_to_end(MAX_INPUT).await;
    let text = String::from_utf8_lossy(&data);
    let items: Vec<String> = if nul || delim.is_some() {
        let d = if nul { '\0' } else { delim.unwrap_or('\n') };
        let mut v: Vec<String> = text.split(d).map(str::to_string).collect();
        if v.last().is_some_and(String::is_empty) {
            v.pop();
        }
        v
    } else if replace.is_some() {
        text.lines()
            .map(|l| l.trim_start().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    } else {
        match split_items(&text) {
            Ok(v) => v,
            Err(e) => {
                proc.err(&e).await;
                return 1;
            }
        }
    };
    let batches: Vec<Vec<String>> = if let Some(r) = &replace {
        items
            .iter()
            .map(|item| {
                command
                    .iter()
                    .map(|a| a.replace(r.as_str(), item))
                    .collect()
            })
            .collect()
    } else if items.is_empty() {
        if no_empty {
            Vec::new()
        } else {
            vec![command.clone()]
        }
    } else {
        items
            .chunks(per.unwrap_or(items.len()).max(1))
            .map(|chunk| {
                let mut argv = command.clone();
                argv.extend(chunk.iter().cloned());
                argv
            })
            .collect()
    };
    let mut status = 0;
    for argv in batches {
        if trace {
            let _ = proc
                .stderr
                .write_str(&format!("{}\n", argv.join(" ")))
                .await;
        }
        match proc.child(argv).spawn_as("xargs: ").await {
            0 => {}
            c @ (126 | 127) => return c,
            255 => return 124,
            c if c > 128 => return 125,
            _ => status = 123,
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xargs_items_split_on_blanks_and_keep_quoted_ones_whole() {
        assert_eq!(
            split_items("a b\n'c d' e\\ f\n"),
            Ok(vec!["a".into(), "b".into(), "c d".into(), "e f".into()])
        );
        assert!(split_items("'open").is_err());
    }
}
