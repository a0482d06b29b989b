//! [`FieldSelector`]: `?fieldSelector=` values, read and matched as
//! k8s.io/apimachinery/pkg/fields does, and [`field_value`], the value of a field path in an
//! object.

use std::fmt;

use serde_json::Value;

use super::error::SelectorError;

/// How a field selector term compares a field with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum FieldOperator {
    /// `=` or `==`.
    Equals,
    /// `!=`.
    NotEquals,
}

/// One `field=value` or `field!=value` term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct FieldTerm {
    /// The field path, as written (`metadata.name`).
    field: String,
    /// How the field is compared.
    operator: FieldOperator,
    /// The value, with escapes removed.
    value: String,
}

/// A field selector: terms that must all hold. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// The terms, sorted so that equal selectors compare equal.
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Reads a `?fieldSelector=` value as the API server does. Empty terms are skipped, so the
    /// empty string selects everything. Nothing is trimmed.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut parts = split_field_terms(input);
        // apimachinery reads the terms in sorted order, which decides which error is reported.
        parts.sort_unstable();
        let mut terms = Vec::with_capacity(parts.len());
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((field, operator, raw)) = split_field_term(part) else {
                return Err(SelectorError::UnreadableFieldTerm {
                    selector: input.to_string(),
                    term: part.to_string(),
                });
            };
            terms.push(FieldTerm {
                field: field.to_string(),
                operator,
                value: unescape_field_value(raw)?,
            });
        }
        terms.sort();
        Ok(Self { terms })
    }

    /// Rejects the selector when a term names a field outside `supported`, with the API
    /// server's message.
    pub fn check_supported(&self, supported: &[&str]) -> Result<(), SelectorError> {
        match self
            .terms
            .iter()
            .find(|t| !supported.contains(&t.field.as_str()))
        {
            Some(term) => Err(SelectorError::FieldNotSupported(term.field.clone())),
            None => Ok(()),
        }
    }

    /// The same selector on other field paths: `stored` names the field each path is read
    /// from (a second view of a resource selects on the fields its objects are stored with).
    pub fn on_fields(mut self, stored: impl Fn(&str) -> &str) -> Self {
        for t in &mut self.terms {
            t.field = stored(&t.field).to_string();
        }
        self.terms.sort();
        self
    }

    /// Whether an object is selected; `value_of` gives the object's value for a field path, and
    /// a missing value compares as the empty string.
    pub fn matches(&self, value_of: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|term| {
            let actual = value_of(&term.field).unwrap_or_default();
            match term.operator {
                FieldOperator::Equals => actual == term.value,
                FieldOperator::NotEquals => actual != term.value,
            }
        })
    }
}

/// Prints the canonical form: terms sorted, `==` as `=`, values escaped. It parses back to an
/// equal selector.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, term) in self.terms.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            let operator = match term.operator {
                FieldOperator::Equals => "=",
                FieldOperator::NotEquals => "!=",
            };
            write!(f, "{}{operator}", term.field)?;
            for c in term.value.chars() {
                if matches!(c, '\\' | ',' | '=') {
                    f.write_str("\\")?;
                }
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// Splits a field selector at the commas that no backslash escapes; escapes stay in the terms.
fn split_field_terms(input: &str) -> Vec<&str> {
    if input.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (index, c) in input.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(input.get(start..index).unwrap_or_default());
            start = index + 1;
        }
    }
    terms.push(input.get(start..).unwrap_or_default());
    terms
}

/// Splits a term at its first operator (`!=`, `==` or `=`, tried in that order at each
/// position) into the field, the operator and the still-escaped value.
fn split_field_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (index, _) in term.char_indices() {
        let rest = term.get(index..)?;
        let found = if rest.starts_with("!=") {
            Some((FieldOperator::NotEquals, 2))
        } else if rest.starts_with("==") {
            Some((FieldOperator::Equals, 2))
        } else if rest.starts_with('=') {
            Some((FieldOperator::Equals, 1))
        } else {
            None
        };
        if let Some((operator, len)) = found {
            return Some((term.get(..index)?, operator, term.get(index + len..)?));
        }
    }
    None
}

/// Removes the backslash escapes of a field selector value; a bare `,` or `=` and any other
/// escape are errors.
fn unescape_field_value(raw: &str) -> Result<String, SelectorError> {
    let mut value = String::with_capacity(raw.len());
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::InvalidEscape(format!("\\{c}")));
            }
            value.push(c);
            escaped = false;
        } else {
            match c {
                '\\' => escaped = true,
                ',' | '=' => return Err(SelectorError::UnescapedCharacter(c)),
                _ => value.push(c),
            }
        }
    }
    if escaped {
        return Err(SelectorError::InvalidEscape("\\".to_string()));
    }
    Ok(value)
}

/// Selectable boolean fields the API server prints even when the object leaves them out
/// (`false`).
const BOOLEAN_FIELDS: &[&str] = &["spec.unschedulable"];

/// The value at a dotted field path (`status.phase`) in a JSON object, as a field selector
/// compares it: strings as they are, numbers and booleans printed. `None` when the path is
/// missing or leads to null, an object or a list, except for the boolean fields the API server
/// always prints (a Node's `spec.unschedulable` is `false` when absent).
pub fn field_value(object: &Value, path: &str) -> Option<String> {
    let mut current = object;
    for segment in path.split('.') {
        match current.as_object().and_then(|o| o.get(segment)) {
            Some(next) => current = next,
            None if BOOLEAN_FIELDS.contains(&path) => return Some("false".to_string()),
            None => return None,
        }
    }
    match current {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// Parses a field selector that the test knows is valid.
    fn fsel(input: &str) -> FieldSelector {
        match FieldSelector::parse(input) {
            Ok(selector) => selector,
            Err(e) => panic!("{input:?} should parse: {e}"),
        }
    }

    #[test]
    fn field_selector_empty_matches_everything() {
        for input in ["", ",", ",,"] {
            let s = fsel(input);
            assert!(s.matches(|_| None));
        }
    }

    #[test]
    fn field_selector_equals_and_double_equals_compare_the_value() {
        let s = fsel("status.phase=Running");
        assert_eq!(s, fsel("status.phase==Running"));
        assert!(s.matches(|f| (f == "status.phase").then(|| "Running".to_string())));
        assert!(!s.matches(|_| Some("Pending".to_string())));
        assert!(!s.matches(|_| None));
    }

    #[test]
    fn field_selector_not_equals_matches_other_and_missing_values() {
        let s = fsel("spec.nodeName!=node-1");
        assert!(s.matches(|_| Some("node-2".to_string())));
        assert!(s.matches(|_| None));
        assert!(!s.matches(|_| Some("node-1".to_string())));
    }

    #[test]
    fn field_selector_missing_value_compares_as_empty_string() {
        assert!(fsel("spec.nodeName=").matches(|_| None));
        assert!(!fsel("spec.nodeName!=").matches(|_| None));
        assert!(fsel("spec.nodeName!=").matches(|_| Some("n".to_string())));
    }

    #[test]
    fn field_selector_ands_its_terms() {
        let s = fsel("metadata.name=a,metadata.namespace=ns");
        let obj = json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert!(s.matches(|p| field_value(&obj, p)));
        let other = json!({"metadata": {"name": "a", "namespace": "other"}});
        assert!(!s.matches(|p| field_value(&other, p)));
    }

    #[test]
    fn field_selector_unescapes_values() {
        let s = fsel(r"metadata.name=a\,b\=c\\d,x=y");
        assert!(s.matches(|f| match f {
            "metadata.name" => Some(r"a,b=c\d".to_string()),
            "x" => Some("y".to_string()),
            _ => None,
        }));
        assert_eq!(s.to_string(), r"metadata.name=a\,b\=c\\d,x=y");
    }

    #[test]
    fn field_selector_rejects_bad_escapes_and_bare_specials() {
        assert_eq!(
            FieldSelector::parse(r"a=b\c"),
            Err(SelectorError::InvalidEscape(r"\c".to_string()))
        );
        assert_eq!(
            FieldSelector::parse(r"a=b\"),
            Err(SelectorError::InvalidEscape(r"\".to_string()))
        );
        assert_eq!(
            FieldSelector::parse("a=b=c"),
            Err(SelectorError::UnescapedCharacter('='))
        );
        assert_eq!(
            FieldSelector::parse("a=b\\").map_err(|e| e.to_string()),
            Err(r"invalid field selector: invalid escape sequence: \".to_string())
        );
    }

    #[test]
    fn field_selector_rejects_terms_without_operator() {
        let error = FieldSelector::parse("metadata.name=a,status.phase");
        assert_eq!(
            error.map_err(|e| e.to_string()),
            Err(
                "invalid selector: 'metadata.name=a,status.phase'; can't understand 'status.phase'"
                    .to_string()
            )
        );
        assert!(FieldSelector::parse("a!b").is_err());
        assert!(FieldSelector::parse("é").is_err());
    }

    #[test]
    fn field_selector_splits_at_the_first_operator() {
        // `a!b=c` has its first operator after `a!b`; `a!=b` is a not-equals.
        let s = fsel("a!b=c");
        assert!(s.matches(|f| (f == "a!b").then(|| "c".to_string())));
        let s = fsel("a!=b");
        assert!(s.matches(|_| Some("c".to_string())));
        assert!(!s.matches(|_| Some("b".to_string())));
    }

    #[test]
    fn field_selector_check_supported_names_the_unsupported_field() {
        let s = fsel("metadata.name=a,spec.foo=b");
        let error = s.check_supported(&["metadata.name", "metadata.namespace"]);
        assert_eq!(
            error,
            Err(SelectorError::FieldNotSupported("spec.foo".to_string()))
        );
        assert_eq!(
            error.map_err(|e| e.to_string()),
            Err("field label not supported: spec.foo".to_string())
        );
        assert_eq!(s.check_supported(&["metadata.name", "spec.foo"]), Ok(()));
        assert_eq!(fsel("").check_supported(&[]), Ok(()));
    }

    #[test]
    fn field_selector_does_not_trim_whitespace() {
        let s = fsel(" metadata.name = a");
        assert_eq!(
            s.check_supported(&["metadata.name"]),
            Err(SelectorError::FieldNotSupported(
                " metadata.name ".to_string()
            ))
        );
        assert!(s.matches(|f| (f == " metadata.name ").then(|| " a".to_string())));
    }

    #[test]
    fn a_node_without_unschedulable_selects_as_false() {
        let node = json!({ "metadata": { "name": "n" }, "spec": {} });
        assert_eq!(
            field_value(&node, "spec.unschedulable").as_deref(),
            Some("false")
        );
        let cordoned = json!({ "spec": { "unschedulable": true } });
        assert_eq!(
            field_value(&cordoned, "spec.unschedulable").as_deref(),
            Some("true")
        );
        assert_eq!(field_value(&node, "spec.other"), None);
    }

    #[test]
    fn field_value_walks_dotted_paths() {
        let obj = json!({
            "metadata": {"name": "p", "generation": 3},
            "spec": {"nodeName": "n1", "paused": false, "list": [1], "none": null},
            "status": {"phase": "Running"}
        });
        assert_eq!(field_value(&obj, "metadata.name"), Some("p".to_string()));
        assert_eq!(
            field_value(&obj, "status.phase"),
            Some("Running".to_string())
        );
        assert_eq!(
            field_value(&obj, "metadata.generation"),
            Some("3".to_string())
        );
        assert_eq!(field_value(&obj, "spec.paused"), Some("false".to_string()));
        assert_eq!(field_value(&obj, "spec.list"), None);
        assert_eq!(field_value(&obj, "spec.none"), None);
        assert_eq!(field_value(&obj, "spec"), None);
        assert_eq!(field_value(&obj, "spec.missing"), None);
        assert_eq!(field_value(&obj, "metadata.name.deeper"), None);
        assert_eq!(field_value(&obj, ""), None);
    }

    proptest! {
        #[test]
        fn field_selector_display_parses_back_equal(
            terms in prop::collection::vec(
                ("[a-z.]{1,8}", any::<bool>(), "[a-z,=\\\\ é]{0,8}"),
                0..5,
            ),
        ) {
            let escaped = |v: &str| v.replace('\\', "\\\\").replace(',', "\\,").replace('=', "\\=");
            let input = terms
                .iter()
                .map(|(f, eq, v)| format!("{f}{}{}", if *eq { "=" } else { "!=" }, escaped(v)))
                .collect::<Vec<_>>()
                .join(",");
            let parsed = FieldSelector::parse(&input);
            prop_assert!(parsed.is_ok(), "{input:?}: {parsed:?}");
            let Ok(parsed) = parsed else { unreachable!() };
            prop_assert_eq!(FieldSelector::parse(&parsed.to_string()), Ok(parsed.clone()));
            let value_of = |f: &str| terms.iter().find(|t| t.0 == f).map(|t| t.2.clone());
            let expected = terms.iter().all(|(f, eq, v)| {
                let actual = value_of(f).unwrap_or_default();
                (actual == *v) == *eq
            });
            prop_assert_eq!(parsed.matches(value_of), expected);
        }
    }
}
