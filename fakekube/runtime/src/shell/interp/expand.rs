//! Word expansion: tilde, parameters (`$x`, `${x:-w}`, `${x%pat}`...), command substitution
//! and arithmetic, into fields that [`super::fields`] splits and globs.

use super::fields::Fields;
use super::{Flow, MAX_WORD, Shell};
use crate::io::Output;
use crate::process::{BoxFuture, MAX_NESTING};
use crate::shell::arith::{self, Vars};
use crate::shell::ast::{List, Param, ParamOp, Part, Word};
use crate::shell::parser::is_name;
use crate::shell::pattern::{Pattern, has_wildcards};

impl Shell {
    /// Expands words into fields (splitting and pathname expansion included).
    pub(super) fn expand_words<'a>(
        &'a mut self,
        words: &'a [Word],
    ) -> BoxFuture<'a, Result<Vec<String>, Flow>> {
        Box::pin(async move {
            let mut out = Vec::new();
            for w in words {
                let mut f = Fields::new(Some(self.ifs()));
                self.expand_parts(&w.0, &mut f, false, true).await?;
                for field in f.finish() {
                    if has_wildcards(&field) {
                        let matches = self.glob(&field);
                        if !matches.is_empty() {
                            out.extend(matches);
                            continue;
                        }
                    }
                    out.push(field.into_iter().map(|(c, _)| c).collect());
                }
            }
            Ok(out)
        })
    }

    /// Expands a word into one string (no splitting, no pathname expansion).
    pub(super) fn expand_scalar<'a>(
        &'a mut self,
        w: &'a Word,
    ) -> BoxFuture<'a, Result<String, Flow>> {
        Box::pin(async move {
            let mut f = Fields::new(None);
            self.expand_parts(&w.0, &mut f, false, true).await?;
            Ok(f.finish()
                .into_iter()
                .next()
                .map(|f| f.into_iter().map(|(c, _)| c).collect())
                .unwrap_or_default())
        })
    }

    /// Expands a word into pattern characters (quoted ones inactive).
    pub(super) fn expand_pattern<'a>(
        &'a mut self,
        w: &'a Word,
    ) -> BoxFuture<'a, Result<Vec<(char, bool)>, Flow>> {
        Box::pin(async move {
            let mut f = Fields::new(None);
            self.expand_parts(&w.0, &mut f, false, true).await?;
            Ok(f.finish().into_iter().next().unwrap_or_default())
        })
    }

    /// Fails the expansion: prints the message and leaves the shell with status 2.
    fn expansion_error<'a>(&'a mut self, msg: &'a str) -> BoxFuture<'a, Flow> {
        Box::pin(async move {
            self.error(msg).await;
            Flow::Exit(2)
        })
    }

    /// Expands parts into `f`. `quoted`: inside double quotes. `first`: at the word's start
    /// (tilde expansion).
    fn expand_parts<'a>(
        &'a mut self,
        parts: &'a [Part],
        f: &'a mut Fields,
        quoted: bool,
        first: bool,
    ) -> BoxFuture<'a, Result<(), Flow>> {
        Box::pin(async move {
            for (i, part) in parts.iter().enumerate() {
                match part {
                    Part::Lit(s) => {
                        if i == 0 && first && !quoted && s.starts_with('~') {
                            let (user, rest) = match s.find('/') {
                                Some(k) => (&s[1..k], &s[k..]),
                                None => (&s[1..], ""),
                            };
                            let home = match user {
                                "" => self.var("HOME"),
                                "root" => Some("/root".to_string()),
                                _ => None,
                            };
                            match home {
                                Some(h) => {
                                    f.push(&h, false, false);
                                    f.push(rest, !quoted, false);
                                }
                                None => f.push(s, !quoted, false),
                            }
                        } else {
                            f.push(s, !quoted, false);
                        }
                    }
                    Part::Quoted(s) => {
                        // `''` is a field of its own even though it holds nothing.
                        f.mark();
                        f.push(s, false, false);
                    }
                    Part::Double(inner) => {
                        if !matches!(inner.as_slice(), [Part::Param(p)] if p.name == "@" && p.op == ParamOp::Plain)
                        {
                            f.mark();
                        }
                        self.expand_parts(inner, f, true, false).await?;
                    }
                    Part::Param(p) => self.expand_param(p, f, quoted).await?,
                    Part::Command(list) => {
                        let text = self.command_output(list).await?;
                        f.push(&text, false, !quoted);
                    }
                    Part::Arith(w) => {
                        let expr = self.expand_scalar(w).await?;
                        let mut vars = ArithVars(self);
                        match arith::eval(&expr, &mut vars) {
                            Ok(v) => f.push(&v.to_string(), false, !quoted),
                            Err(e) => return Err(self.expansion_error(&e.to_string()).await),
                        }
                    }
                }
                if f.len() > MAX_WORD {
                    return Err(self.expansion_error("expansion too long").await);
                }
            }
            Ok(())
        })
    }

    /// Expands a parameter into `f`.
    fn expand_param<'a>(
        &'a mut self,
        p: &'a Param,
        f: &'a mut Fields,
        quoted: bool,
    ) -> BoxFuture<'a, Result<(), Flow>> {
        Box::pin(async move {
            if p.op == ParamOp::Plain && (p.name == "@" || p.name == "*") {
                let params = self.params.clone();
                if quoted && p.name == "*" {
                    let ifs = self.ifs();
                    let sep = ifs.chars().next().map(String::from).unwrap_or_default();
                    f.push(&params.join(&sep), false, false);
                    return Ok(());
                }
                for (i, v) in params.iter().enumerate() {
                    if i > 0 {
                        if quoted {
                            f.force_break();
                        } else {
                            f.soft_break();
                        }
                    }
                    if quoted {
                        f.mark();
                    }
                    f.push(v, false, !quoted);
                }
                return Ok(());
            }
            let value = self.param(&p.name);
            let null_or_unset =
                |colon: bool| value.as_deref().is_none_or(|v| colon && v.is_empty());
            match &p.op {
                ParamOp::Plain => match value {
                    Some(v) => f.push(&v, false, !quoted),
                    None if self.opts.nounset => {
                        return Err(self
                            .expansion_error(&format!("{}: parameter not set", p.name))
                            .await);
                    }
                    None => {}
                },
                ParamOp::Length => {
                    if value.is_none() && self.opts.nounset {
                        return Err(self
                            .expansion_error(&format!("{}: parameter not set", p.name))
                            .await);
                    }
                    let n = value.map(|v| v.chars().count()).unwrap_or(0);
                    f.push(&n.to_string(), false, false);
                }
                ParamOp::Default(colon, w) => {
                    if null_or_unset(*colon) {
                        self.expand_parts(&w.0, f, quoted, false).await?;
                    } else if let Some(v) = value {
                        f.push(&v, false, !quoted);
                    }
                }
                ParamOp::Assign(colon, w) => {
                    if null_or_unset(*colon) {
                        if !is_name(&p.name) {
                            return Err(self
                                .expansion_error(&format!("${}: cannot assign in this way", p.name))
                                .await);
                        }
                        let v = self.expand_scalar(w).await?;
                        self.set_var(&p.name, v.clone());
                        f.push(&v, false, !quoted);
                    } else if let Some(v) = value {
                        f.push(&v, false, !quoted);
                    }
                }
                ParamOp::Error(colon, w) => {
                    if null_or_unset(*colon) {
                        let msg = self.expand_scalar(w).await?;
                        let msg = if msg.is_empty() {
                            if *colon {
                                "parameter null or not set".to_string()
                            } else {
                                "parameter not set".to_string()
                            }
                        } else {
                            msg
                        };
                        return Err(self.expansion_error(&format!("{}: {msg}", p.name)).await);
                    }
                    if let Some(v) = value {
                        f.push(&v, false, !quoted);
                    }
                }
                ParamOp::Alternative(colon, w) => {
                    if !null_or_unset(*colon) {
                        self.expand_parts(&w.0, f, quoted, false).await?;
                    }
                }
                ParamOp::RemovePrefix(longest, w) | ParamOp::RemoveSuffix(longest, w) => {
                    let v = value.unwrap_or_default();
                    let pat = Pattern::new(&self.expand_pattern(w).await?);
                    let out = if matches!(p.op, ParamOp::RemovePrefix(..)) {
                        pat.remove_prefix(&v, *longest)
                    } else {
                        pat.remove_suffix(&v, *longest)
                    };
                    f.push(&out, false, !quoted);
                }
            }
            Ok(())
        })
    }

    /// Runs `$(…)` in a subshell and returns its output without trailing newlines.
    fn command_output<'a>(&'a mut self, list: &'a List) -> BoxFuture<'a, Result<String, Flow>> {
        Box::pin(async move {
            if self.depth >= MAX_NESTING {
                return Err(self.expansion_error("nesting too deep").await);
            }
            let (out, capture) = Output::capture();
            let mut sub = self.subshell();
            sub.io.stdout = out;
            let r = sub.run_list(list).await;
            let s = sub.settle(r);
            let status = sub.finish(s).await;
            drop(sub);
            self.subst_status = Some(status);
            self.status = status;
            let bytes = capture.take();
            // The output held at once counts against the container's memory limit.
            let held = bytes.len() as u64;
            if self.processes.charge(self.pid, held).is_err() {
                return Err(Flow::Exit(137));
            }
            self.processes.uncharge(self.pid, held);
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            while text.ends_with('\n') {
                text.pop();
            }
            Ok(text)
        })
    }
}

/// Variable access for `$((…))`.
struct ArithVars<'a>(&'a mut Shell);

impl Vars for ArithVars<'_> {
    fn get(&self, name: &str) -> Option<String> {
        self.0.var(name)
    }

    fn set(&mut self, name: &str, value: i64) {
        self.0.set_var(name, value.to_string());
    }
}
