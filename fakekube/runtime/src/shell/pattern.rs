//! Shell pattern matching (`*`, `?`, `[…]`) for `case`, `${x%pat}` and pathname expansion.
//!
//! A pattern is a sequence of characters, each marked active (unquoted, so `*` is a wildcard) or
//! not (quoted, so it matches itself).

/// One compiled pattern element.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A character that matches itself.
    Char(char),
    /// `?`.
    Any,
    /// `*`.
    Star,
    /// `[…]`: ranges, negated when `!` or `^` comes first.
    Class(Vec<(char, char)>, bool),
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern(Vec<Tok>);

/// Whether any active character would make the text a pattern (for pathname expansion).
pub fn has_wildcards(chars: &[(char, bool)]) -> bool {
    chars
        .iter()
        .any(|(c, active)| *active && matches!(c, '*' | '?' | '['))
}

impl Pattern {
    /// Compiles characters marked active or quoted.
    pub fn new(chars: &[(char, bool)]) -> Self {
        let mut toks = Vec::new();
        let mut i = 0;
        while let Some(&(c, active)) = chars.get(i) {
            i += 1;
            if !active {
                toks.push(Tok::Char(c));
                continue;
            }
            match c {
                '*' => {
                    if toks.last() != Some(&Tok::Star) {
                        toks.push(Tok::Star);
                    }
                }
                '?' => toks.push(Tok::Any),
                '[' => match parse_class(chars, i) {
                    Some((tok, next)) => {
                        toks.push(tok);
                        i = next;
                    }
                    None => toks.push(Tok::Char('[')),
                },
                '\\' => {
                    if let Some(&(n, _)) = chars.get(i) {
                        toks.push(Tok::Char(n));
                        i += 1;
                    } else {
                        toks.push(Tok::Char('\\'));
                    }
                }
                c => toks.push(Tok::Char(c)),
            }
        }
        Pattern(toks)
    }

    /// Compiles a string in which every character is active.
    #[cfg(test)]
    pub fn from_str_active(s: &str) -> Self {
        let chars: Vec<(char, bool)> = s.chars().map(|c| (c, true)).collect();
        Self::new(&chars)
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &[char]) -> bool {
        let pat = &self.0;
        let (mut p, mut t) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            if let Some(tok) = pat.get(p) {
                let step = match tok {
                    Tok::Star => {
                        star = Some((p + 1, t));
                        p += 1;
                        continue;
                    }
                    Tok::Any => true,
                    Tok::Char(c) => *c == text[t],
                    Tok::Class(ranges, negated) => {
                        ranges
                            .iter()
                            .any(|(lo, hi)| *lo <= text[t] && text[t] <= *hi)
                            != *negated
                    }
                };
                if step {
                    p += 1;
                    t += 1;
                    continue;
                }
            }
            match star {
                Some((sp, st)) => {
                    p = sp;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            }
        }
        pat[p..].iter().all(|tok| *tok == Tok::Star)
    }

    /// Whether the pattern's first element is a literal `.` (so it may match hidden names).
    pub fn starts_with_dot(&self) -> bool {
        self.0.first() == Some(&Tok::Char('.'))
    }

    /// `${v#pat}` / `${v##pat}`: `v` without its shortest (or longest) matching prefix.
    pub fn remove_prefix(&self, v: &str, longest: bool) -> String {
        let chars: Vec<char> = v.chars().collect();
        let mut cut = None;
        for i in 0..=chars.len() {
            if self.matches(&chars[..i]) {
                cut = Some(i);
                if !longest {
                    break;
                }
            }
        }
        match cut {
            Some(i) => chars[i..].iter().collect(),
            None => v.to_string(),
        }
    }

    /// `${v%pat}` / `${v%%pat}`: `v` without its shortest (or longest) matching suffix.
    pub fn remove_suffix(&self, v: &str, longest: bool) -> String {
        let chars: Vec<char> = v.chars().collect();
        let mut cut = None;
        for i in (0..=chars.len()).rev() {
            if self.matches(&chars[i..]) {
                cut = Some(i);
                if !longest {
                    break;
                }
            }
        }
        match cut {
            Some(i) => chars[..i].iter().collect(),
            None => v.to_string(),
        }
    }
}

/// Parses a bracket expression starting after `[` at `start`; `None` if it is not closed.
fn parse_class(chars: &[(char, bool)], start: usize) -> Option<(Tok, usize)> {
    let mut i = start;
    let mut negated = false;
    if let Some(&(c, true)) = chars.get(i)
        && (c == '!' || c == '^')
    {
        negated = true;
        i += 1;
    }
    let mut ranges = Vec::new();
    let first = i;
    loop {
        let &(c, active) = chars.get(i)?;
        if c == ']' && active && i > first {
            return Some((Tok::Class(ranges, negated), i + 1));
        }
        let lo = c;
        if let (Some(&('-', _)), Some(&(hi, _))) = (chars.get(i + 1), chars.get(i + 2))
            && hi != ']'
        {
            ranges.push((lo, hi));
            i += 3;
        } else {
            ranges.push((lo, lo));
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `text` matches the all-active pattern `pat`.
    fn m(pat: &str, text: &str) -> bool {
        Pattern::from_str_active(pat).matches(&text.chars().collect::<Vec<_>>())
    }

    #[test]
    fn wildcards_match_like_fnmatch() {
        assert!(m("*.txt", "a.txt"));
        assert!(!m("*.txt", "a.txt.bak"));
        assert!(m("a?c", "abc"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[!a-c]x", "bx"));
        assert!(m("*", ""));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(m("[]]", "]"));
        assert!(m("[", "["));
    }

    #[test]
    fn quoted_star_matches_only_a_star() {
        let pat = Pattern::new(&[('*', false)]);
        assert!(pat.matches(&['*']));
        assert!(!pat.matches(&['a']));
    }

    #[test]
    fn prefix_and_suffix_removal_pick_shortest_or_longest() {
        let p = Pattern::from_str_active("*/");
        assert_eq!(p.remove_prefix("a/b/c", false), "b/c");
        assert_eq!(p.remove_prefix("a/b/c", true), "c");
        let s = Pattern::from_str_active(".*");
        assert_eq!(s.remove_suffix("f.tar.gz", false), "f.tar");
        assert_eq!(s.remove_suffix("f.tar.gz", true), "f");
    }
}
