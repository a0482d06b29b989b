//! awk's tokens. A `/` starts a regular expression where an operand may start (after an
//! operator, `(`, `,`, a keyword or the start) and divides after an operand, as every awk
//! decides it. A backslash before a newline joins lines; `#` starts a comment.

use super::Error;

/// A token.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// A number.
    Num(f64),
    /// A string literal, escapes applied.
    Str(String),
    /// A regular expression literal, as written between the slashes.
    Regex(String),
    /// A name.
    Name(String),
    /// A name immediately followed by `(`: a call of a user function.
    FuncName(String),
    /// A built-in function.
    Builtin(String),
    /// A keyword (`BEGIN`, `if`, `getline`, `print`, …).
    Keyword(&'static str),
    /// An operator or punctuation (`+=`, `{`, `!~`, …).
    Punct(&'static str),
    /// A newline (a statement terminator where one may end).
    Newline,
    /// The end of the program.
    Eof,
}

/// The keywords.
const KEYWORDS: &[&str] = &[
    "BEGIN", "END", "function", "func", "if", "else", "while", "for", "do", "break", "continue",
    "next", "nextfile", "exit", "return", "delete", "in", "getline", "print", "printf",
];

/// The built-in functions.
pub(super) const BUILTINS: &[&str] = &[
    "length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "tolower", "toupper",
    "int", "sqrt", "exp", "log", "sin", "cos", "atan2", "rand", "srand", "system", "close",
    "fflush",
];

/// Operators, longest first so that `**=` wins over `**` and `*`.
const PUNCT: &[&str] = &[
    "**=", "&&", "||", "==", "<=", ">=", "!=", "!~", "++", "--", "+=", "-=", "*=", "/=", "%=",
    "^=", ">>", "**", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "/", "%", "^", "!",
    ">", "<", "|", "?", ":", "~", "$", "=",
];

/// Whether a `/` after this token divides (the token ends an operand).
fn ends_operand(t: Option<&Tok>) -> bool {
    match t {
        Some(Tok::Num(_) | Tok::Str(_) | Tok::Name(_) | Tok::Regex(_)) => true,
        Some(Tok::Builtin(_)) => true,
        Some(Tok::Punct(p)) => matches!(*p, ")" | "]" | "$" | "++" | "--"),
        Some(Tok::Keyword("getline")) => true,
        _ => false,
    }
}

/// Splits a program into tokens, each with its line number.
pub(super) fn lex(src: &str) -> Result<Vec<(Tok, usize)>, Error> {
    let chars: Vec<char> = src.chars().collect();
    let mut out: Vec<(Tok, usize)> = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match c {
            ' ' | '\t' | '\r' => i += 1,
            '\\' if chars.get(i + 1) == Some(&'\n') => {
                i += 2;
                line += 1;
            }
            '\\' if chars.get(i + 1) == Some(&'\r') && chars.get(i + 2) == Some(&'\n') => {
                i += 3;
                line += 1;
            }
            '\n' => {
                out.push((Tok::Newline, line));
                line += 1;
                i += 1;
            }
            '#' => {
                while chars.get(i).is_some_and(|c| *c != '\n') {
                    i += 1;
                }
            }
            '"' => {
                let (s, next) = string(&chars, i + 1, line)?;
                out.push((Tok::Str(s), line));
                i = next;
            }
            '/' if !ends_operand(out.last().map(|(t, _)| t)) => {
                let (re, next) = regex(&chars, i + 1, line)?;
                out.push((Tok::Regex(re), line));
                i = next;
            }
            c if c.is_ascii_digit()
                || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                let (n, next) = number(&chars, i);
                out.push((Tok::Num(n), line));
                i = next;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while chars
                    .get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let tok = if let Some(k) = KEYWORDS.iter().find(|k| **k == word) {
                    Tok::Keyword(if *k == "func" { "function" } else { k })
                } else if BUILTINS.contains(&word.as_str()) {
                    Tok::Builtin(word)
                } else if chars.get(i) == Some(&'(') {
                    Tok::FuncName(word)
                } else {
                    Tok::Name(word)
                };
                out.push((tok, line));
            }
            _ => {
                let Some(p) = PUNCT.iter().find(|p| {
                    p.chars()
                        .enumerate()
                        .all(|(k, pc)| chars.get(i + k) == Some(&pc))
                }) else {
                    return Err(Error::syntax(line, "Unexpected token"));
                };
                i += p.chars().count();
                out.push((Tok::Punct(p), line));
            }
        }
    }
    out.push((Tok::Eof, line));
    Ok(out)
}

/// A string literal from after its opening quote; returns it and the index after the quote.
fn string(chars: &[char], mut i: usize, line: usize) -> Result<(String, usize), Error> {
    let mut s = String::new();
    loop {
        match chars.get(i) {
            None | Some('\n') => return Err(Error::syntax(line, "Unexpected end of string")),
            Some('"') => return Ok((s, i + 1)),
            Some('\\') => {
                i += 1;
                let Some(&e) = chars.get(i) else {
                    return Err(Error::syntax(line, "Unexpected end of string"));
                };
                i += 1;
                match e {
                    'n' => s.push('\n'),
                    't' => s.push('\t'),
                    'r' => s.push('\r'),
                    '\\' => s.push('\\'),
                    '"' => s.push('"'),
                    '/' => s.push('/'),
                    'a' => s.push('\x07'),
                    'b' => s.push('\x08'),
                    'f' => s.push('\x0c'),
                    'v' => s.push('\x0b'),
                    '\n' => {}
                    '0'..='7' => {
                        let mut v = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match chars.get(i).and_then(|c| c.to_digit(8)) {
                                Some(d) => {
                                    v = v * 8 + d;
                                    i += 1;
                                }
                                None => break,
                            }
                        }
                        s.push(char::from_u32(v & 0xff).unwrap_or('\0'));
                    }
                    other => {
                        // An unknown escape keeps its backslash (a dynamic regex needs it).
                        s.push('\\');
                        s.push(other);
                    }
                }
            }
            Some(&c) => {
                s.push(c);
                i += 1;
            }
        }
    }
}

/// A regex literal from after its opening slash; returns it and the index after the slash.
fn regex(chars: &[char], mut i: usize, line: usize) -> Result<(String, usize), Error> {
    let mut s = String::new();
    let mut in_class = false;
    loop {
        match chars.get(i) {
            None | Some('\n') => return Err(Error::syntax(line, "Unexpected end of string")),
            Some('/') if !in_class => return Ok((s, i + 1)),
            Some('\\') => {
                match chars.get(i + 1) {
                    Some('/') => s.push('/'),
                    Some(&n) => {
                        s.push('\\');
                        s.push(n);
                    }
                    None => return Err(Error::syntax(line, "Unexpected end of string")),
                }
                i += 2;
            }
            Some(&c) => {
                if c == '[' && !in_class {
                    in_class = true;
                    s.push(c);
                    i += 1;
                    // A `]` first in a class (after an optional `^`) is literal.
                    if chars.get(i) == Some(&'^') {
                        s.push('^');
                        i += 1;
                    }
                    if chars.get(i) == Some(&']') {
                        s.push(']');
                        i += 1;
                    }
                    continue;
                }
                if c == ']' {
                    in_class = false;
                }
                s.push(c);
                i += 1;
            }
        }
    }
}

/// A numeric literal (decimal, with fraction and exponent; `0x` hex as BusyBox reads it).
fn number(chars: &[char], start: usize) -> (f64, usize) {
    let mut i = start;
    if chars.get(i) == Some(&'0') && matches!(chars.get(i + 1), Some('x' | 'X')) {
        let mut j = i + 2;
        while chars.get(j).is_some_and(char::is_ascii_hexdigit) {
            j += 1;
        }
        if j > i + 2 {
            let hex: String = chars[i + 2..j].iter().collect();
            return (u64::from_str_radix(&hex, 16).unwrap_or(0) as f64, j);
        }
    }
    while chars.get(i).is_some_and(char::is_ascii_digit) {
        i += 1;
    }
    if chars.get(i) == Some(&'.') {
        i += 1;
        while chars.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(chars.get(j), Some('+' | '-')) {
            j += 1;
        }
        if chars.get(j).is_some_and(char::is_ascii_digit) {
            while chars.get(j).is_some_and(char::is_ascii_digit) {
                j += 1;
            }
            i = j;
        }
    }
    let text: String = chars[start..i].iter().collect();
    (text.parse().unwrap_or(0.0), i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        lex(src)
            .expect("lexes")
            .into_iter()
            .map(|(t, _)| t)
            .collect()
    }

    #[test]
    fn a_slash_divides_after_an_operand_and_starts_a_regex_elsewhere() {
        assert_eq!(
            toks("a / 2"),
            vec![
                Tok::Name("a".into()),
                Tok::Punct("/"),
                Tok::Num(2.0),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("$0 ~ /a\\/b/"),
            vec![
                Tok::Punct("$"),
                Tok::Num(0.0),
                Tok::Punct("~"),
                Tok::Regex("a/b".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn strings_numbers_and_calls_lex() {
        assert_eq!(
            toks("f(\"a\\tb\", 1.5e2, 0x10)"),
            vec![
                Tok::FuncName("f".into()),
                Tok::Punct("("),
                Tok::Str("a\tb".into()),
                Tok::Punct(","),
                Tok::Num(150.0),
                Tok::Punct(","),
                Tok::Num(16.0),
                Tok::Punct(")"),
                Tok::Eof
            ]
        );
        assert!(lex("\"open").is_err());
        assert!(lex("a @ b").is_err());
    }
}
