//! Splitting a command line into words as Python's `shlex.split` does in POSIX mode (what the
//! runtime image's `/execute` does before it starts the command, without a shell): blanks
//! separate words, `'…'` is literal, `"…"` lets a backslash escape only `"` and `\`, and a
//! backslash outside quotes escapes any character.

/// Why a command line could not be split: Python's `ValueError` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SplitError {
    /// A quote is not closed.
    #[error("No closing quotation")]
    NoClosingQuotation,
    /// The line ends with a backslash.
    #[error("No escaped character")]
    NoEscapedCharacter,
}

/// The words of `line`.
pub(crate) fn split(line: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(SplitError::NoClosingQuotation),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(SplitError::NoClosingQuotation),
                        },
                        Some(c) => word.push(c),
                        None => return Err(SplitError::NoClosingQuotation),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(SplitError::NoEscapedCharacter),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// A string as Python's `repr` prints it (single quotes unless the text has one and no double
/// quote), for messages that quote an argument list.
pub(crate) fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        split(line).unwrap_or_default()
    }

    #[test]
    fn quotes_group_words_and_backslashes_escape_as_in_posix_shlex() {
        assert_eq!(words("echo 'Hello from SDK'"), ["echo", "Hello from SDK"]);
        assert_eq!(words(r#"a "b \"c\" \n" d\ e"#), ["a", r#"b "c" \n"#, "d e"]);
        assert_eq!(words("  x''y  "), ["xy"]);
        assert_eq!(words("''"), [""]);
        assert!(words("").is_empty());
        assert_eq!(split("'open"), Err(SplitError::NoClosingQuotation));
        assert_eq!(split("end\\"), Err(SplitError::NoEscapedCharacter));
    }

    #[test]
    fn repr_quotes_as_python_does() {
        assert_eq!(py_repr("sleep"), "'sleep'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a'b\"c"), "'a\\'b\"c'");
    }
}
