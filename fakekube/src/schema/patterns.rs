//! The `pattern`s of the four CRDs, each implemented by hand (no regular-expression engine):
//! the resource quantity and the two of `metav1.Condition`.
//!
//! A pattern is known by its exact text. One that is not known is not checked, so the test
//! `every_pattern_and_rule_of_the_fixture_crds_is_enforced` fails for any pattern of
//! `fixtures/crds/` missing here.

/// The resource quantity pattern of `resources.limits`/`requests` and similar.
pub(super) const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
/// The pattern of `metav1.Condition.reason`.
pub(super) const CONDITION_REASON_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
/// The pattern of `metav1.Condition.type`.
pub(super) const CONDITION_TYPE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// Whether a text matches one pattern.
type Matcher = fn(&str) -> bool;

/// Every pattern implemented here, with its matcher.
const KNOWN: [(&str, Matcher); 3] = [
    (QUANTITY_PATTERN, is_quantity),
    (CONDITION_REASON_PATTERN, is_condition_reason),
    (CONDITION_TYPE_PATTERN, is_condition_type),
];

/// The matcher of `pattern`: whether a text matches it; `None` for a pattern not implemented
/// here (which is then not checked).
pub(super) fn matcher(pattern: &str) -> Option<Matcher> {
    KNOWN
        .iter()
        .find(|(known, _)| *known == pattern)
        .map(|(_, matches)| *matches)
}

/// Digits, optionally with a fraction (`1`, `1.`, `1.5`, `.5`); the length of the longest
/// such prefix of `b`.
fn decimal_len(b: &[u8]) -> Option<usize> {
    let int = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if b.get(int) == Some(&b'.') {
        let frac = b
            .get(int + 1..)
            .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count());
        if int == 0 && frac == 0 {
            return None;
        }
        return Some(int + 1 + frac);
    }
    (int > 0).then_some(int)
}

/// `b` without one leading `+` or `-`.
fn unsigned(b: &[u8]) -> &[u8] {
    match b.split_first() {
        Some((b'+' | b'-', rest)) => rest,
        _ => b,
    }
}

/// [`QUANTITY_PATTERN`], by hand.
fn is_quantity(text: &str) -> bool {
    let body = unsigned(text.as_bytes());
    let Some(n) = decimal_len(body) else {
        return false;
    };
    let suffix = body.get(n..).unwrap_or_default();
    match suffix {
        [] | [b'n' | b'u' | b'm' | b'k' | b'M' | b'G' | b'T' | b'P' | b'E'] => true,
        [b'K' | b'M' | b'G' | b'T' | b'P' | b'E', b'i'] => true,
        [b'e' | b'E', rest @ ..] => {
            let exp = unsigned(rest);
            decimal_len(exp) == Some(exp.len())
        }
        _ => false,
    }
}

/// [`CONDITION_REASON_PATTERN`], by hand.
fn is_condition_reason(text: &str) -> bool {
    let b = text.as_bytes();
    let Some((first, rest)) = b.split_first() else {
        return false;
    };
    if !first.is_ascii_alphabetic() {
        return false;
    }
    let Some((last, middle)) = rest.split_last() else {
        return true;
    };
    middle
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'))
        && (last.is_ascii_alphanumeric() || *last == b'_')
}

/// [`CONDITION_TYPE_PATTERN`], by hand.
fn is_condition_type(text: &str) -> bool {
    let (prefix, name) = match text.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, text),
    };
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(edge)
            && b.last().is_some_and(edge)
            && b.iter().all(|c| edge(c) || *c == b'-')
    };
    let prefix_ok = prefix.is_none_or(|p| p.split('.').all(label_ok));
    let nb = name.as_bytes();
    let name_edge = |c: &u8| c.is_ascii_alphanumeric();
    let name_ok = nb.first().is_some_and(name_edge)
        && nb.last().is_some_and(name_edge)
        && nb
            .iter()
            .all(|c| name_edge(c) || matches!(c, b'-' | b'_' | b'.'));
    prefix_ok && name_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantity_pattern_follows_the_regular_expression() {
        for ok in [
            "1", "+1", "-1.5", ".5", "1.", "500m", "1Gi", "1Ei", "2E", "1e3", "1E-3", "1.5e+2.5",
            "0.1n",
        ] {
            assert!(is_quantity(ok), "{ok} should match");
        }
        for bad in [
            "", "m", "1 m", "1Ki2", "1e", "1ee3", "1.2.3", "+", "1mi", "1Gb", ".", "1e.", "--1",
        ] {
            assert!(!is_quantity(bad), "{bad} should not match");
        }
    }

    #[test]
    fn condition_patterns_follow_their_regular_expressions() {
        for ok in ["Ready", "a", "Some_Reason:1", "x,y_"] {
            assert!(is_condition_reason(ok), "{ok}");
        }
        for bad in ["", "1abc", "Ready:", "Re ady"] {
            assert!(!is_condition_reason(bad), "{bad}");
        }
        for ok in ["Ready", "example.com/Ready", "a-b.c/x_y.z", "9"] {
            assert!(is_condition_type(ok), "{ok}");
        }
        for bad in ["", "Example.com/Ready", "a/b/c", "/x", "x/", "-a", "a..b/x"] {
            assert!(!is_condition_type(bad), "{bad}");
        }
    }

    #[test]
    fn a_pattern_is_known_only_by_its_exact_text() {
        assert!(matcher(QUANTITY_PATTERN).is_some());
        assert!(matcher("^[a-z]+$").is_none());
        assert!(matcher(QUANTITY_PATTERN.trim_end_matches('$')).is_none());
    }
}
