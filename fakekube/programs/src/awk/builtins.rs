//! awk's built-in functions: `length substr index split sub gsub match sprintf tolower
//! toupper int sqrt exp log sin cos atan2 rand srand system close fflush`, with BusyBox's
//! `substr` (positions truncated, a start before 1 clipped) and `length(ARRAY)`.

use super::Error;
use super::ast::Expr;
use super::interp::{Cell, Interp};
use super::value::Value;

impl Interp<'_> {
    /// Calls a built-in function.
    pub(super) fn builtin(&mut self, name: &str, args: &[Expr]) -> Result<Value, Error> {
        let min = match name {
            "substr" | "split" | "sub" | "gsub" | "match" | "atan2" => 2,
            "index" => 2,
            "sprintf" | "tolower" | "toupper" | "int" | "sqrt" | "exp" | "log" | "sin" | "cos"
            | "system" | "close" => 1,
            _ => 0,
        };
        if args.len() < min {
            return Err(Error::runtime("Too few arguments"));
        }
        match name {
            "length" => self.length(args.first()),
            "substr" => {
                let s = self.string_arg(&args[0])?;
                let chars: Vec<char> = s.chars().collect();
                let len = chars.len() as f64;
                let start = (self.eval(&args[1])?.num() - 1.0).trunc();
                let start = start.clamp(0.0, len);
                let n = match args.get(2) {
                    Some(e) => self.eval(e)?.num().trunc().max(0.0),
                    None => len - start,
                };
                let from = start as usize;
                let to = (start + n).min(len) as usize;
                Ok(Value::Str(chars[from..to.max(from)].iter().collect()))
            }
            "index" => {
                let s = self.string_arg(&args[0])?;
                let t = self.string_arg(&args[1])?;
                let at = s.find(&t).map_or(0, |b| s[..b].chars().count() + 1);
                Ok(Value::Num(at as f64))
            }
            "split" => self.split_builtin(args),
            "sub" | "gsub" => self.substitute(name == "gsub", args),
            "match" => {
                let s = self.string_arg(&args[0])?;
                let re = self.regex_operand(&args[1])?;
                let (start, len) = match re.find(&s) {
                    Some(m) => (
                        s[..m.start()].chars().count() as f64 + 1.0,
                        m.as_str().chars().count() as f64,
                    ),
                    None => (0.0, -1.0),
                };
                self.set_global("RSTART", Value::Num(start));
                self.set_global("RLENGTH", Value::Num(len));
                Ok(Value::Num(start))
            }
            "sprintf" => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let fmt = self.to_str(&vals[0]);
                Ok(Value::Str(super::format::sprintf(
                    &fmt,
                    &vals[1..],
                    &self.convfmt(),
                )))
            }
            "tolower" => Ok(Value::Str(self.string_arg(&args[0])?.to_lowercase())),
            "toupper" => Ok(Value::Str(self.string_arg(&args[0])?.to_uppercase())),
            "int" => Ok(Value::Num(self.eval(&args[0])?.num().trunc())),
            "sqrt" | "exp" | "log" | "sin" | "cos" => {
                let x = self.eval(&args[0])?.num();
                Ok(Value::Num(match name {
                    "sqrt" => x.sqrt(),
                    "exp" => x.exp(),
                    "log" => x.ln(),
                    "sin" => x.sin(),
                    _ => x.cos(),
                }))
            }
            "atan2" => {
                let y = self.eval(&args[0])?.num();
                let x = self.eval(&args[1])?.num();
                Ok(Value::Num(y.atan2(x)))
            }
            "rand" => {
                self.rand_state = self.rand_state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let r = fakekube_runtime::random::mix(self.rand_state);
                Ok(Value::Num((r >> 11) as f64 / (1u64 << 53) as f64))
            }
            "srand" => {
                let previous = self.seed;
                let seed = match args.first() {
                    Some(e) => self.eval(e)?.num(),
                    None => fakekube_runtime::fs::now() as f64,
                };
                self.seed = seed;
                self.rand_state = seed.to_bits();
                Ok(Value::Num(previous))
            }
            "system" => {
                let cmd = self.string_arg(&args[0])?;
                self.flush()?;
                let child = self.proc.child(vec!["sh".into(), "-c".into(), cmd]);
                Ok(Value::Num(f64::from(self.bridge.run(child))))
            }
            "close" => {
                let name = self.string_arg(&args[0])?;
                Ok(Value::Num(f64::from(self.close(&name)?)))
            }
            "fflush" => {
                self.flush()?;
                Ok(Value::Num(0.0))
            }
            _ => Err(Error::runtime("Call to undefined function")),
        }
    }

    /// An argument as a string.
    fn string_arg(&mut self, e: &Expr) -> Result<String, Error> {
        let v = self.eval(e)?;
        Ok(self.to_str(&v))
    }

    /// `length`, `length(S)`, `length(ARRAY)`.
    fn length(&mut self, arg: Option<&Expr>) -> Result<Value, Error> {
        let Some(e) = arg else {
            return Ok(Value::Num(self.record.chars().count() as f64));
        };
        if let Expr::Var(v) = e {
            let cell = match v {
                super::ast::Var::Global(n) => self.globals.get(n).cloned(),
                super::ast::Var::Local(k) => self.frames.last().and_then(|f| f.get(*k)).cloned(),
            };
            if let Some(Cell::Arr(id)) = cell {
                return Ok(Value::Num(self.arrays.get(id).map_or(0, |a| a.len()) as f64));
            }
        }
        let s = self.string_arg(e)?;
        Ok(Value::Num(s.chars().count() as f64))
    }

    /// `split(S, ARRAY [, FS])`: the array cleared, then filled with the pieces from 1.
    fn split_builtin(&mut self, args: &[Expr]) -> Result<Value, Error> {
        let s = self.string_arg(&args[0])?;
        let Expr::Var(v) = &args[1] else {
            return Err(Error::runtime("Not an array"));
        };
        let pieces = match args.get(2) {
            Some(Expr::Regex(r)) => {
                let re = self.regex(r)?;
                if s.is_empty() {
                    Vec::new()
                } else {
                    re.split(&s).map(str::to_string).collect()
                }
            }
            Some(e) => {
                let fs = self.string_arg(e)?;
                self.split_by(&s, &fs)
            }
            None => {
                let fs = self.global_str("FS");
                self.split_by(&s, &fs)
            }
        };
        let id = self.array_of(v)?;
        if let Some(a) = self.arrays.get_mut(id) {
            a.clear();
            for (k, p) in pieces.iter().enumerate() {
                a.insert((k + 1).to_string(), Value::StrNum(p.clone()));
            }
        }
        Ok(Value::Num(pieces.len() as f64))
    }

    /// `sub(RE, REPL [, TARGET])` and `gsub`: `&` in the replacement is the match, `\&` a
    /// literal `&`; the number of replacements.
    fn substitute(&mut self, global: bool, args: &[Expr]) -> Result<Value, Error> {
        let re = self.regex_operand(&args[0])?;
        let repl = self.string_arg(&args[1])?;
        let target = args
            .get(2)
            .cloned()
            .unwrap_or(Expr::Field(Box::new(Expr::Num(0.0))));
        let place = if target.is_lvalue() {
            Some(self.place(&target)?)
        } else {
            None
        };
        let text = match &place {
            Some(p) => {
                let v = self.get_place(p);
                self.to_str(&v)
            }
            None => self.string_arg(&target)?,
        };
        let mut out = String::with_capacity(text.len());
        let mut count = 0;
        let mut at = 0;
        // Where the last non-empty match ended: an empty match right there does not count.
        let mut after_match = None;
        while at <= text.len() {
            let Some(m) = re.find_at(&text, at) else {
                break;
            };
            if m.start() == m.end() && after_match == Some(m.start()) {
                match text[m.start()..].chars().next() {
                    Some(c) => {
                        out.push_str(&text[at..m.start()]);
                        out.push(c);
                        at = m.start() + c.len_utf8();
                        after_match = None;
                        continue;
                    }
                    None => break,
                }
            }
            if m.end() > m.start() {
                after_match = Some(m.end());
            }
            out.push_str(&text[at..m.start()]);
            expand(&repl, m.as_str(), &mut out);
            count += 1;
            if m.end() == m.start() {
                // An empty match: keep the next character and move past it.
                match text[m.end()..].chars().next() {
                    Some(c) => {
                        out.push(c);
                        at = m.end() + c.len_utf8();
                    }
                    None => {
                        at = text.len() + 1;
                    }
                }
            } else {
                at = m.end();
            }
            if !global {
                break;
            }
        }
        if count == 0 {
            return Ok(Value::Num(0.0));
        }
        if at <= text.len() {
            out.push_str(&text[at..]);
        }
        if let Some(p) = place {
            self.set_place(&p, Value::Str(out))?;
        }
        Ok(Value::Num(f64::from(count)))
    }
}

/// A replacement with `&` as the matched text and `\&`, `\\` as literal characters.
fn expand(repl: &str, matched: &str, out: &mut String) {
    let mut chars = repl.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '&' => out.push_str(matched),
            '\\' => match chars.peek() {
                Some('&') => {
                    out.push('&');
                    chars.next();
                }
                Some('\\') => {
                    out.push('\\');
                    chars.next();
                }
                _ => out.push('\\'),
            },
            other => out.push(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacements_expand_ampersands() {
        let mut out = String::new();
        expand("[&] \\& \\\\", "x", &mut out);
        assert_eq!(out, "[x] & \\");
    }
}
