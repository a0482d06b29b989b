//! `pattern`s, compiled as the API server compiles them.
//!
//! The API server validates `pattern` with Go's `regexp` (kube-openapi's `validate.Pattern`
//! calls `regexp.Compile`; the CRD validation refuses a pattern that does not compile), whose
//! syntax is RE2's. The `regex` crate implements the same syntax, no look-around and no
//! back-references, with one difference that matters here: Go's Perl classes (`\d`, `\w`,
//! `\s`) and word boundaries (`\b`, `\B`) are ASCII, the crate's are Unicode. A pattern is
//! rewritten to the ASCII forms before it is compiled. (An ECMA-262 engine such as `regress`
//! would accept look-arounds that the API server refuses.)
//!
//! Compiled patterns are kept for the life of the process: the same patterns come back with
//! every CRD installed, and every server of a test process installs the same CRDs.

use regex::Regex;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A compiled pattern, or why it does not compile.
pub(super) type Compiled = Result<Regex, String>;

/// Rewrites Go's ASCII Perl classes and word boundaries for the `regex` crate.
fn go_to_rust(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    let mut in_class = false;
    let mut class_start = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let (outside, inside) = match n {
                    'd' => ("[0-9]", Some("0-9")),
                    'D' => ("[^0-9]", None),
                    'w' => ("[0-9A-Za-z_]", Some("0-9A-Za-z_")),
                    'W' => ("[^0-9A-Za-z_]", None),
                    's' => ("[\\t\\n\\f\\r ]", Some("\\t\\n\\f\\r ")),
                    'S' => ("[^\\t\\n\\f\\r ]", None),
                    'b' if !in_class => ("(?-u:\\b)", None),
                    'B' if !in_class => ("(?-u:\\B)", None),
                    other => {
                        out.push('\\');
                        out.push(other);
                        class_start = false;
                        continue;
                    }
                };
                match (in_class, inside) {
                    (false, _) => out.push_str(outside),
                    (true, Some(i)) => out.push_str(i),
                    (true, None) => {
                        out.push('\\');
                        out.push(n);
                    }
                }
                class_start = false;
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push(c);
            }
            '^' if in_class && class_start => out.push(c),
            ']' if in_class && !class_start => {
                in_class = false;
                out.push(c);
            }
            '[' if in_class && chars.as_str().starts_with(':') => {
                // A POSIX class (`[[:alpha:]]`): copy it whole.
                out.push(c);
                let rest = chars.as_str();
                if let Some(end) = rest.find(":]") {
                    out.push_str(&rest[..end + 2]);
                    for _ in 0..rest[..end + 2].chars().count() {
                        chars.next();
                    }
                }
                class_start = false;
            }
            _ => {
                out.push(c);
                class_start = false;
            }
        }
    }
    out
}

/// `pattern` compiled, from the process-wide cache.
pub(super) fn compile(pattern: &str) -> Compiled {
    static CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(pattern) {
        return hit.clone();
    }
    let compiled = Regex::new(&go_to_rust(pattern)).map_err(|e| error_text(&e));
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(pattern.to_string(), compiled.clone());
    compiled
}

/// The one-line cause of a pattern that does not compile.
fn error_text(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with("error:"))
        .map(|l| l.trim_start_matches("error:").trim().to_string());
    format!("error parsing regexp: {}", last.unwrap_or(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn matches(pattern: &str, text: &str) -> bool {
        compile(pattern).map(|r| r.is_match(text)).unwrap_or(false)
    }

    #[test]
    fn perl_classes_are_ascii_as_in_go() {
        assert!(matches(r"^\d+$", "123"));
        assert!(
            !matches(r"^\d+$", "١٢٣"),
            "Arabic-Indic digits are not \\d in Go"
        );
        assert!(matches(r"^\w+$", "a_1"));
        assert!(!matches(r"^\w+$", "é"));
        assert!(matches(r"^[\w.-]+$", "a.b-c"));
        assert!(!matches(r"^\s$", "\u{a0}"));
        assert!(matches(r"\bx\b", "a x b"));
        assert!(matches(r"^[^\d]+$", "abc"));
        assert!(matches(r"^[[:alpha:]]+$", "abc"));
    }

    #[test]
    fn the_quantity_and_condition_patterns_behave_as_in_go() {
        let quantity = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
        for ok in [
            "1", "+1", "-1.5", ".5", "1.", "500m", "1Gi", "2E", "1e3", "1E-3",
        ] {
            assert!(matches(quantity, ok), "{ok}");
        }
        for bad in ["", "m", "1 m", "1Ki2", "1e", "1Gb", "."] {
            assert!(!matches(quantity, bad), "{bad}");
        }
    }

    #[test]
    fn what_go_refuses_does_not_compile() {
        for bad in [r"(?=a)", r"(a)\1", r"(abc", r"a{2,1}", r"(?<!a)b"] {
            let e = compile(bad).expect_err(bad);
            assert!(e.starts_with("error parsing regexp: "), "{e}");
        }
    }

    proptest! {
        #[test]
        fn rewriting_never_panics_and_keeps_plain_patterns(p in "[a-z^$.*+?()|\\[\\]{}0-9\\\\dswbDSWB:-]{0,24}") {
            let _ = compile(&p);
            if !p.contains('\\') {
                prop_assert_eq!(go_to_rust(&p), p);
            }
        }
    }
}
