//! Builtins that set variables and parameters: `export`, `readonly`, `local`, `unset`, `set`,
//! `shift` and `read`.

use super::super::{MAX_WORD, Res, Shell, Var};
use crate::process::BoxFuture;
use crate::shell::parser::is_name;

impl Shell {
    /// `export`/`readonly [-p] [name[=value]…]`: marks variables (setting them when a value is
    /// given); without names, lists them.
    pub(super) async fn export(&mut self, name: &str, args: &[String]) -> Res {
        if args.is_empty() || args[0] == "-p" {
            let mut lines: Vec<String> = self
                .vars
                .iter()
                .filter(|(_, v)| v.exported || name == "readonly")
                .map(|(k, v)| format!("{name} {k}='{}'\n", v.value.replace('\'', "'\\''")))
                .collect();
            lines.sort();
            return Ok(self.print(&lines.concat()).await);
        }
        for a in args {
            let (k, v) = match a.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (a.as_str(), None),
            };
            if !is_name(k) {
                self.error(&format!("{name}: {k}: bad variable name")).await;
                return Ok(2);
            }
            let entry = self.vars_mut().entry(k.to_string()).or_insert(Var {
                value: String::new(),
                exported: false,
            });
            if let Some(v) = v {
                entry.value = v;
            }
            if name == "export" {
                entry.exported = true;
            }
        }
        Ok(0)
    }

    /// `local name[=value]…` (not scoped: it sets the variables, creating missing ones empty).
    pub(super) fn local(&mut self, args: &[String]) -> i32 {
        for a in args {
            if let Some((k, v)) = a.split_once('=') {
                self.set_var(k, v.to_string());
            } else if !self.vars.contains_key(a.as_str()) {
                self.set_var(a, String::new());
            }
        }
        0
    }

    /// `unset [-v|-f] name…`: removes variables, or with `-f` functions.
    pub(super) fn unset(&mut self, args: &[String]) -> i32 {
        let mut functions = false;
        for a in args {
            match a.as_str() {
                "-f" => functions = true,
                "-v" => functions = false,
                n if functions => {
                    self.functions.remove(n);
                }
                n => {
                    self.vars_mut().remove(n);
                }
            }
        }
        0
    }

    /// `shift [n]`: drops the first `n` positional parameters.
    pub(super) async fn shift(&mut self, args: &[String]) -> Res {
        let n = match args.first().map(|a| a.parse::<usize>()) {
            None => 1,
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                self.error(&format!("shift: Illegal number: {}", args[0]))
                    .await;
                return Ok(2);
            }
        };
        if n > self.params.len() {
            self.error("shift: can't shift that many").await;
            return Ok(2);
        }
        self.params.drain(..n);
        Ok(0)
    }

    /// `set [-eux] [-o opt] [--] [args…]`.
    pub(super) fn set_builtin<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            if args.is_empty() {
                let mut lines: Vec<String> = self
                    .vars
                    .iter()
                    .map(|(k, v)| format!("{k}='{}'\n", v.value.replace('\'', "'\\''")))
                    .collect();
                lines.sort();
                return Ok(self.print(&lines.concat()).await);
            }
            let mut i = 0;
            while let Some(a) = args.get(i) {
                if a == "--" {
                    i += 1;
                    self.params = args[i..].to_vec();
                    return Ok(0);
                }
                let on = a.starts_with('-');
                if !(on || a.starts_with('+')) || a.len() < 2 {
                    if a == "-" {
                        i += 1;
                    }
                    break;
                }
                for c in a.chars().skip(1) {
                    match c {
                        'e' => self.opts.errexit = on,
                        'u' => self.opts.nounset = on,
                        'x' => self.opts.xtrace = on,
                        'o' => {
                            i += 1;
                            match args.get(i).map(String::as_str) {
                                Some("errexit") => self.opts.errexit = on,
                                Some("nounset") => self.opts.nounset = on,
                                Some("xtrace") => self.opts.xtrace = on,
                                Some("pipefail") => self.opts.pipefail = on,
                                Some(_) => {}
                                None => {
                                    let e = self.opts.errexit;
                                    let line =
                                        format!("errexit\t{}\n", if e { "on" } else { "off" });
                                    self.print(&line).await;
                                }
                            }
                        }
                        'f' | 'v' | 'h' | 'm' | 'C' | 'a' | 'n' | 'b' => {}
                        other => {
                            self.error(&format!("set: illegal option -{other}")).await;
                            return Ok(2);
                        }
                    }
                }
                i += 1;
            }
            if i < args.len() {
                self.params = args[i..].to_vec();
            }
            Ok(0)
        })
    }

    /// `read [-r] [-p prompt] [name…]`.
    pub(super) fn read<'a>(&'a mut self, args: &'a [String]) -> BoxFuture<'a, Res> {
        Box::pin(async move {
            let mut raw = false;
            let mut names = Vec::new();
            let mut i = 0;
            while let Some(a) = args.get(i) {
                match a.as_str() {
                    "-r" => raw = true,
                    "-p" => i += 1,
                    n if n.starts_with('-') && names.is_empty() => {}
                    n => names.push(n.to_string()),
                }
                i += 1;
            }
            if names.is_empty() {
                names.push("REPLY".into());
            }
            let mut line = String::new();
            let mut eof = false;
            loop {
                let Some(bytes) = self.io.stdin.read_line(MAX_WORD).await else {
                    eof = true;
                    break;
                };
                let mut text = String::from_utf8_lossy(&bytes).into_owned();
                let had_newline = text.ends_with('\n');
                if had_newline {
                    text.pop();
                } else {
                    eof = true;
                }
                if !raw && text.ends_with('\\') && had_newline {
                    text.pop();
                    line.push_str(&text);
                    continue;
                }
                line.push_str(&text);
                break;
            }
            if !raw {
                let mut out = String::new();
                let mut chars = line.chars();
                while let Some(c) = chars.next() {
                    if c == '\\' {
                        if let Some(n) = chars.next() {
                            out.push(n);
                        }
                    } else {
                        out.push(c);
                    }
                }
                line = out;
            }
            let ifs = self.ifs();
            let is_ws = |c: char| ifs.contains(c) && c.is_whitespace();
            let mut rest = line.trim_start_matches(is_ws).to_string();
            let count = names.len();
            for (k, name) in names.iter().enumerate() {
                if k + 1 == count {
                    let v = rest.trim_end_matches(is_ws).to_string();
                    self.set_var(name, v);
                    break;
                }
                let end = rest.find(|c: char| ifs.contains(c)).unwrap_or(rest.len());
                let field = rest[..end].to_string();
                let mut remainder = &rest[end..];
                remainder = remainder.trim_start_matches(is_ws);
                if let Some(c) = remainder.chars().next()
                    && ifs.contains(c)
                    && !c.is_whitespace()
                {
                    remainder = remainder[c.len_utf8()..].trim_start_matches(is_ws);
                }
                rest = remainder.to_string();
                self.set_var(name, field);
            }
            Ok(if eof && line.is_empty() {
                1
            } else {
                i32::from(eof)
            })
        })
    }
}
