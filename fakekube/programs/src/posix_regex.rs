//! POSIX regular expressions for `sed`, `grep` and `awk`: basic (BRE) and extended (ERE)
//! syntax translated into the `regex` crate's, which has no back references (a pattern with
//! one is refused) and matches leftmost-first rather than leftmost-longest (the same match for
//! the patterns scripts write, where alternatives do not overlap).

use regex::{Regex, RegexBuilder};

/// Translates a POSIX basic (or extended) regex into the `regex` crate's syntax.
pub(super) fn translate(p: &str, extended: bool) -> Result<String, String> {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut at_start = true;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let was_start = at_start;
        at_start = false;
        match c {
            '\\' => {
                let Some(&n) = chars.get(i) else {
                    return Err("trailing backslash (\\)".into());
                };
                i += 1;
                match n {
                    '(' | ')' | '{' | '}' | '|' | '+' | '?' if !extended => {
                        out.push(n);
                        at_start = n == '(' || n == '|';
                    }
                    '1'..='9' => return Err("back references are not supported".into()),
                    '<' | '>' => out.push_str("\\b"),
                    'n' => out.push_str("\\n"),
                    't' => out.push_str("\\t"),
                    'w' | 'W' | 's' | 'S' | 'b' | 'B' => {
                        out.push('\\');
                        out.push(n);
                    }
                    other => out.push_str(&regex::escape(&other.to_string())),
                }
            }
            '(' | ')' | '{' | '}' | '|' | '+' | '?' if !extended => {
                out.push('\\');
                out.push(c);
            }
            '(' | '|' if extended => {
                out.push(c);
                at_start = true;
            }
            '*' if was_start => out.push_str("\\*"),
            '^' if !was_start => out.push_str("\\^"),
            '^' => {
                out.push('^');
                at_start = true;
            }
            '$' => {
                let at_end = i == chars.len()
                    || (!extended
                        && chars.get(i) == Some(&'\\')
                        && matches!(chars.get(i + 1), Some(')' | '|')))
                    || (extended && matches!(chars.get(i), Some(')' | '|')));
                out.push_str(if at_end { "$" } else { "\\$" });
            }
            '[' => {
                out.push('[');
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
                loop {
                    let Some(&b) = chars.get(i) else {
                        return Err("unterminated [".into());
                    };
                    i += 1;
                    match b {
                        ']' => {
                            out.push(']');
                            break;
                        }
                        '[' if matches!(chars.get(i), Some(':' | '.' | '=')) => {
                            let close = chars[i..]
                                .windows(2)
                                .position(|w| w[1] == ']' && w[0] == chars[i])
                                .ok_or("unterminated [")?;
                            let class: String = chars[i - 1..i + close + 2].iter().collect();
                            out.push_str(&class);
                            i += close + 2;
                        }
                        '\\' | '[' | '&' | '~' => {
                            out.push('\\');
                            out.push(b);
                        }
                        other => out.push(other),
                    }
                }
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Compiles a POSIX pattern: `extended` for ERE, `insensitive` for `-i`; `Err` holds the
/// translation's complaint or the `regex` crate's.
pub(super) fn compile(pattern: &str, extended: bool, insensitive: bool) -> Result<Regex, String> {
    let translated = translate(pattern, extended)?;
    RegexBuilder::new(&translated)
        .case_insensitive(insensitive)
        .dot_matches_new_line(true)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_and_extended_regexes_translate() {
        assert_eq!(translate("a+b", false).ok(), Some("a\\+b".into()));
        assert_eq!(translate("a\\+b", false).ok(), Some("a+b".into()));
        assert_eq!(translate("(a|b)+", true).ok(), Some("(a|b)+".into()));
        assert_eq!(translate("*a", false).ok(), Some("\\*a".into()));
        assert_eq!(translate("[]a]", false).ok(), Some("[\\]a]".into()));
        assert!(translate("\\(a\\)\\1", false).is_err());
    }
}
