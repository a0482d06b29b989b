//! `expr`, as BusyBox's: `|`, `&`, comparisons, `+ - * / %`, `STRING : REGEX` (anchored
//! BRE; the length of the match, or the first `\(…\)`), `match`, `substr`, `index`,
//! `length`, parentheses. Exit 0 when the result is neither empty nor 0, 1 when it is, 2 for
//! a bad expression (`expr: syntax error`, `non-numeric argument`, `division by zero`).

use super::cli::emit;
use super::posix_regex;
use fakekube_runtime::process::Process;

/// A value: an integer, or a string.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(i64),
    Str(String),
}

impl Val {
    /// The value as text.
    fn text(&self) -> String {
        match self {
            Val::Int(n) => n.to_string(),
            Val::Str(s) => s.clone(),
        }
    }

    /// The value as an integer, if it is one.
    fn int(&self) -> Option<i64> {
        match self {
            Val::Int(n) => Some(*n),
            Val::Str(s) => s.trim().parse().ok(),
        }
    }

    /// Empty or zero.
    fn null(&self) -> bool {
        match self {
            Val::Int(n) => *n == 0,
            Val::Str(s) => s.is_empty() || s == "0",
        }
    }
}

/// A recursive-descent evaluator over the arguments.
struct Eval<'a> {
    args: &'a [String],
    pos: usize,
    depth: usize,
}

impl Eval<'_> {
    /// The next argument if it is `op`.
    fn eat(&mut self, op: &str) -> bool {
        if self.args.get(self.pos).is_some_and(|a| a == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `A | B`.
    fn or(&mut self) -> Result<Val, String> {
        let mut v = self.and()?;
        while self.eat("|") {
            let r = self.and()?;
            if v.null() {
                v = if r.null() { Val::Int(0) } else { r };
            }
        }
        Ok(v)
    }

    /// `A & B`.
    fn and(&mut self) -> Result<Val, String> {
        let mut v = self.compare()?;
        while self.eat("&") {
            let r = self.compare()?;
            if v.null() || r.null() {
                v = Val::Int(0);
            }
        }
        Ok(v)
    }

    /// `A < B` and the other comparisons: numeric when both are integers.
    fn compare(&mut self) -> Result<Val, String> {
        let mut v = self.additive()?;
        loop {
            let op = match self.args.get(self.pos).map(String::as_str) {
                Some(o @ ("<" | "<=" | "=" | "==" | "!=" | ">=" | ">")) => o.to_string(),
                _ => return Ok(v),
            };
            self.pos += 1;
            let r = self.additive()?;
            let ord = match (v.int(), r.int()) {
                (Some(a), Some(b)) => a.cmp(&b),
                _ => v.text().cmp(&r.text()),
            };
            let yes = match op.as_str() {
                "<" => ord.is_lt(),
                "<=" => ord.is_le(),
                "=" | "==" => ord.is_eq(),
                "!=" => !ord.is_eq(),
                ">=" => ord.is_ge(),
                _ => ord.is_gt(),
            };
            v = Val::Int(i64::from(yes));
        }
    }

    /// `A + B`, `A - B`.
    fn additive(&mut self) -> Result<Val, String> {
        let mut v = self.multiplicative()?;
        loop {
            let add = if self.eat("+") {
                true
            } else if self.eat("-") {
                false
            } else {
                return Ok(v);
            };
            let r = self.multiplicative()?;
            let (a, b) = numbers(&v, &r)?;
            v = Val::Int(if add {
                a.wrapping_add(b)
            } else {
                a.wrapping_sub(b)
            });
        }
    }

    /// `A * B`, `A / B`, `A % B`.
    fn multiplicative(&mut self) -> Result<Val, String> {
        let mut v = self.matching()?;
        loop {
            let op = match self.args.get(self.pos).map(String::as_str) {
                Some(o @ ("*" | "/" | "%")) => o.to_string(),
                _ => return Ok(v),
            };
            self.pos += 1;
            let r = self.matching()?;
            let (a, b) = numbers(&v, &r)?;
            if op != "*" && b == 0 {
                return Err("division by zero".into());
            }
            v = Val::Int(match op.as_str() {
                "*" => a.wrapping_mul(b),
                "/" => a.wrapping_div(b),
                _ => a.wrapping_rem(b),
            });
        }
    }

    /// `STRING : REGEX`.
    fn matching(&mut self) -> Result<Val, String> {
        let mut v = self.primary()?;
        while self.eat(":") {
            let re = self.primary()?;
            v = regex_match(&v.text(), &re.text())?;
        }
        Ok(v)
    }

    /// A token, a keyword function, or a parenthesised expression.
    fn primary(&mut self) -> Result<Val, String> {
        self.depth += 1;
        if self.depth > 200 {
            return Err("syntax error".into());
        }
        let Some(tok) = self.args.get(self.pos).cloned() else {
            return Err("syntax error".into());
        };
        self.pos += 1;
        let v = match tok.as_str() {
            "(" => {
                let v = self.or()?;
                if !self.eat(")") {
                    return Err("syntax error".into());
                }
                v
            }
            "+" => Val::Str(self.token()?),
            "length" => Val::Int(self.primary()?.text().chars().count() as i64),
            "match" => {
                let s = self.primary()?.text();
                let re = self.primary()?.text();
                regex_match(&s, &re)?
            }
            "substr" => {
                let s: Vec<char> = self.primary()?.text().chars().collect();
                let pos = self.primary()?.int().ok_or("non-numeric argument")?;
                let len = self.primary()?.int().ok_or("non-numeric argument")?;
                if pos < 1 || len < 1 || pos as usize > s.len() {
                    Val::Str(String::new())
                } else {
                    let from = pos as usize - 1;
                    let to = (from + len as usize).min(s.len());
                    Val::Str(s[from..to].iter().collect())
                }
            }
            "index" => {
                let s = self.primary()?.text();
                let chars = self.primary()?.text();
                let at = s
                    .chars()
                    .position(|c| chars.contains(c))
                    .map_or(0, |p| p + 1);
                Val::Int(at as i64)
            }
            _ => match tok.parse::<i64>() {
                Ok(n) => Val::Int(n),
                Err(_) => Val::Str(tok),
            },
        };
        self.depth -= 1;
        Ok(v)
    }

    /// The next argument taken as a plain string (after `+`).
    fn token(&mut self) -> Result<String, String> {
        let t = self.args.get(self.pos).cloned().ok_or("syntax error")?;
        self.pos += 1;
        Ok(t)
    }
}

/// Both values as integers, or `non-numeric argument`.
fn numbers(a: &Val, b: &Val) -> Result<(i64, i64), String> {
    match (a.int(), b.int()) {
        (Some(x), Some(y)) => Ok((x, y)),
        _ => Err("non-numeric argument".into()),
    }
}

/// `STRING : REGEX`: anchored at the start; the first group's text if the regex has one,
/// else the length of the match.
fn regex_match(s: &str, re: &str) -> Result<Val, String> {
    let anchored = format!("^(?:{})", posix_regex::translate(re, false)?);
    let compiled = regex::Regex::new(&anchored).map_err(|_| "syntax error".to_string())?;
    let groups = compiled.captures_len() > 1;
    Ok(match compiled.captures(s) {
        Some(c) if groups => Val::Str(c.get(1).map_or("", |m| m.as_str()).to_string()),
        Some(c) => Val::Int(c.get(0).map_or(0, |m| m.as_str().chars().count()) as i64),
        None if groups => Val::Str(String::new()),
        None => Val::Int(0),
    })
}

/// `expr EXPRESSION`.
pub(crate) async fn expr(proc: Process) -> i32 {
    let args = proc.args();
    if args.is_empty() {
        proc.err("syntax error").await;
        return 2;
    }
    let mut e = Eval {
        args,
        pos: 0,
        depth: 0,
    };
    let v = match e.or() {
        Ok(v) if e.pos == args.len() => v,
        Ok(_) => {
            proc.err("syntax error").await;
            return 2;
        }
        Err(msg) => {
            proc.err(&msg).await;
            return 2;
        }
    };
    match emit(&proc, format!("{}\n", v.text())).await {
        Ok(()) => i32::from(v.null()),
        Err(code) => code,
    }
}
