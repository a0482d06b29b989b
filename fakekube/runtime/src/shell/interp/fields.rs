//! The last steps of word expansion: field splitting by `IFS` ([`Fields`]) and pathname
//! expansion ([`Shell::glob`]).

use super::Shell;
use crate::fs as vfs;
use crate::shell::pattern::{Pattern, has_wildcards};

/// Field builder for word expansion.
#[derive(Debug)]
pub(super) struct Fields {
    /// Finished fields.
    done: Vec<Vec<(char, bool)>>,
    /// The field being built: characters and whether each is an active pattern character.
    cur: Vec<(char, bool)>,
    /// The current field exists even if empty (it had a quoted part).
    marked: bool,
    /// Field separators; `None`: no splitting.
    ifs: Option<String>,
    /// Total characters, against [`MAX_WORD`](super::MAX_WORD).
    total: usize,
}

impl Fields {
    /// An empty builder.
    pub(super) fn new(ifs: Option<String>) -> Self {
        Fields {
            done: Vec::new(),
            cur: Vec::new(),
            marked: false,
            ifs,
            total: 0,
        }
    }

    /// Characters so far.
    pub(super) fn len(&self) -> usize {
        self.total
    }

    /// Marks the current field as present even if empty.
    pub(super) fn mark(&mut self) {
        self.marked = true;
    }

    /// Ends the current field unconditionally (between `"$@"` parameters).
    pub(super) fn force_break(&mut self) {
        self.done.push(std::mem::take(&mut self.cur));
        self.marked = false;
    }

    /// Ends the current field if it has anything.
    pub(super) fn soft_break(&mut self) {
        if !self.cur.is_empty() || self.marked {
            self.force_break();
        }
    }

    /// Appends text. `active`: unquoted literal (pattern characters work). `split`: the result
    /// of an unquoted expansion (field splitting applies; pattern characters work too).
    pub(super) fn push(&mut self, s: &str, active: bool, split: bool) {
        self.total = self.total.saturating_add(s.len());
        let Some(ifs) = self.ifs.as_deref().filter(|_| split) else {
            if !s.is_empty() && !active {
                self.marked = true;
            }
            self.cur.extend(s.chars().map(|c| (c, active)));
            return;
        };
        let ifs = ifs.to_string();
        for c in s.chars() {
            if ifs.contains(c) {
                if c.is_whitespace() {
                    self.soft_break();
                } else {
                    self.force_break();
                }
            } else {
                self.cur.push((c, true));
            }
        }
    }

    /// The fields.
    pub(super) fn finish(mut self) -> Vec<Vec<(char, bool)>> {
        if !self.cur.is_empty() || self.marked {
            self.done.push(self.cur);
        }
        self.done
    }
}

impl Shell {
    /// Pathname expansion of one field; empty when nothing matches.
    pub(super) fn glob(&self, field: &[(char, bool)]) -> Vec<String> {
        let absolute = field.first().is_some_and(|(c, _)| *c == '/');
        let comps: Vec<&[(char, bool)]> = field
            .split(|(c, _)| *c == '/')
            .filter(|c| !c.is_empty())
            .collect();
        let mut results: Vec<String> = vec![if absolute {
            "/".to_string()
        } else {
            String::new()
        }];
        for comp in comps {
            let mut next = Vec::new();
            for base in &results {
                let dir = if base.is_empty() {
                    self.cwd.clone()
                } else {
                    vfs::join(&self.cwd, base)
                };
                let join = |name: &str| {
                    if base.is_empty() {
                        name.to_string()
                    } else if base.ends_with('/') {
                        format!("{base}{name}")
                    } else {
                        format!("{base}/{name}")
                    }
                };
                if has_wildcards(comp) {
                    let pat = Pattern::new(comp);
                    let Ok(entries) = self.fs.read_dir(&dir) else {
                        continue;
                    };
                    for e in entries {
                        if e.name.starts_with('.') && !pat.starts_with_dot() {
                            continue;
                        }
                        if pat.matches(&e.name.chars().collect::<Vec<_>>()) {
                            next.push(join(&e.name));
                        }
                    }
                } else {
                    let name: String = comp.iter().map(|(c, _)| c).collect();
                    let candidate = join(&name);
                    if self.fs.exists(&vfs::join(&self.cwd, &candidate)) {
                        next.push(candidate);
                    }
                }
            }
            results = next;
            if results.is_empty() || results.len() > 100_000 {
                return Vec::new();
            }
        }
        results.sort();
        results
    }
}
