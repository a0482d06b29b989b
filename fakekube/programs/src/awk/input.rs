//! awk's input: the main input walked through `ARGV` (operands of the form `NAME=VALUE`
//! assign as they are reached, `-` is stdin, no operand means stdin), and `getline` from the
//! main input, a file or a command's output. Records themselves are [`super::records`].

use super::Error;
use super::ast::{Expr, GetlineSource};
use super::interp::Interp;
use super::records::{Reader, Separator};
use super::value::Value;
use fakekube_runtime::io::Input;

/// Whether an operand is an assignment (`NAME=VALUE` with a valid name).
fn assignment(arg: &str) -> Option<(&str, &str)> {
    let (name, value) = arg.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    if !(first.is_ascii_alphabetic() || first == '_')
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    Some((name, value))
}

/// Applies the escapes of a command-line assignment's value (`-v` and operands).
pub(super) fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some('/') => out.push('/'),
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('f') => out.push('\x0c'),
            Some('v') => out.push('\x0b'),
            Some(d @ '0'..='7') => {
                let mut v = d.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(x) => {
                            v = v * 8 + x;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v & 0xff).unwrap_or('\0'));
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

impl Interp<'_> {
    /// Assigns `NAME=VALUE` from the command line (the value a numeric string).
    pub(super) fn assign_operand(&mut self, arg: &str) -> bool {
        let Some((name, value)) = assignment(arg) else {
            return false;
        };
        let v = Value::StrNum(unescape(value));
        let _ = self.set_var(&super::ast::Var::Global(name.to_string()), v);
        true
    }

    /// How records end, from `RS`.
    fn separator(&mut self) -> Result<Separator, Error> {
        let rs = self.global_str("RS");
        let mut chars = rs.chars();
        Ok(match (chars.next(), chars.next()) {
            (None, _) => Separator::Paragraph,
            (Some(c), None) if c.is_ascii() => Separator::Byte(c as u8),
            _ => Separator::Regex(self.regex(&rs)?),
        })
    }

    /// The next record of the main input, opening the next operand as needed.
    pub(super) fn next_main_record(&mut self) -> Result<Option<String>, Error> {
        let sep = self.separator()?;
        // On a terminal, what was printed shows before awk waits for the next line (stdout
        // is line-buffered there, as C's stdio makes it).
        if self.proc.stdout.tty().is_some() {
            self.flush()?;
        }
        loop {
            if self.main.done {
                return Ok(None);
            }
            if let Some(r) = self.main.reader.as_mut() {
                if let Some(rec) = r.next(&sep, self.bridge) {
                    return Ok(Some(rec));
                }
                self.main.reader = None;
                continue;
            }
            self.open_next_operand()?;
        }
    }

    /// Opens the next file operand (applying assignments on the way), or stdin when no
    /// operand named a file; marks the input done after the last.
    fn open_next_operand(&mut self) -> Result<(), Error> {
        loop {
            self.main.argind += 1;
            let argc = self.global("ARGC").num();
            if self.main.argind as f64 >= argc {
                if self.main.used_file {
                    self.main.done = true;
                } else {
                    self.main.used_file = true;
                    self.main.reader = Some(Reader::new(self.proc.stdin.clone()));
                }
                return Ok(());
            }
            let argv = self.array_of(&super::ast::Var::Global("ARGV".into()))?;
            let key = self.main.argind.to_string();
            let arg = self
                .arrays
                .get(argv)
                .and_then(|a| a.get(&key))
                .map(|v| v.str("%.6g"))
                .unwrap_or_default();
            if arg.is_empty() || self.assign_operand(&arg) {
                continue;
            }
            self.main.used_file = true;
            let input = super::super::cli::open_input(self.proc, &arg)
                .map_err(|e| Error::fatal(&format!("can't open '{arg}': {e}")))?;
            self.main.reader = Some(Reader::new(input));
            self.set_global("FILENAME", Value::Str(arg));
            self.set_global("FNR", Value::Num(0.0));
            return Ok(());
        }
    }

    /// `getline`: 1 with a record, 0 at the end, -1 when the source cannot be opened.
    pub(super) fn getline(
        &mut self,
        src: &GetlineSource,
        target: Option<&Expr>,
    ) -> Result<Value, Error> {
        let rec = match src {
            GetlineSource::Main => {
                let Some(rec) = self.next_main_record()? else {
                    return Ok(Value::Num(0.0));
                };
                self.bump("NR");
                self.bump("FNR");
                rec
            }
            GetlineSource::File(e) | GetlineSource::Command(e) => {
                let name = self.eval(e)?;
                let name = self.to_str(&name);
                if !self.readers.contains_key(&name) {
                    let input = match src {
                        GetlineSource::Command(_) => self.command_output(&name)?,
                        _ => match super::super::cli::open_input(self.proc, &name) {
                            Ok(i) => i,
                            Err(_) => return Ok(Value::Num(-1.0)),
                        },
                    };
                    self.readers.insert(name.clone(), Reader::new(input));
                }
                let sep = self.separator()?;
                let next = match self.readers.get_mut(&name) {
                    Some(r) => r.next(&sep, self.bridge),
                    None => None,
                };
                let Some(rec) = next else {
                    return Ok(Value::Num(0.0));
                };
                if matches!(src, GetlineSource::Command(_)) {
                    self.bump("NR");
                }
                rec
            }
        };
        match target {
            Some(t) => {
                let p = self.place(t)?;
                self.set_place(&p, Value::StrNum(rec))?;
            }
            None => self.set_record(rec),
        }
        Ok(Value::Num(1.0))
    }

    /// Runs `sh -c CMD` to its end and gives its output as an input.
    fn command_output(&mut self, cmd: &str) -> Result<Input, Error> {
        self.flush()?;
        let (out, capture) = fakekube_runtime::io::Output::capture();
        let mut child = self
            .proc
            .child(vec!["sh".into(), "-c".into(), cmd.to_string()]);
        child.stdout = out;
        child.stdin = Input::empty();
        self.bridge.run(child);
        Ok(Input::bytes(bytes::Bytes::from(capture.take())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_assign_only_with_a_valid_name() {
        assert_eq!(assignment("x=1"), Some(("x", "1")));
        assert_eq!(assignment("a/b=1"), None);
        assert_eq!(assignment("1x=1"), None);
        assert_eq!(unescape("a\\tb\\n"), "a\tb\n");
    }
}
