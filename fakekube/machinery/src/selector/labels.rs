//! [`LabelSelector`]: `?labelSelector=` values and `metav1.LabelSelector` objects, read and
//! matched as k8s.io/apimachinery/pkg/labels does.

use std::fmt;

use serde_json::{Map, Value};

use super::error::SelectorError;
use super::parse::Parser;
use super::requirement::Requirement;

/// A label selector: requirements that must all hold. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// The requirements, sorted so that equal selectors compare equal.
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Reads a `?labelSelector=` value as the API server does. The empty string (or only
    /// whitespace) selects everything.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut parser = Parser::new(input);
        let mut requirements = parser.requirements()?;
        requirements.sort();
        Ok(Self { requirements })
    }

    /// Reads a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`); the error
    /// says why it is not one. The empty object selects everything.
    pub fn from_object(s: &Value) -> Result<Self, String> {
        let mut parts = Vec::new();
        if let Some(labels) = s.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in labels {
                let v = v.as_str().ok_or("matchLabels values must be strings")?;
                parts.push(format!("{k}={v}"));
            }
        }
        for e in s
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let values = values.join(",");
            parts.push(match op {
                "In" => format!("{key} in ({values})"),
                "NotIn" => format!("{key} notin ({values})"),
                "Exists" => key.to_string(),
                "DoesNotExist" => format!("!{key}"),
                other => {
                    return Err(format!(
                        "\"{other}\" is not a valid label selector operator"
                    ));
                }
            });
        }
        LabelSelector::parse(&parts.join(",")).map_err(|e| e.to_string())
    }

    /// Whether the selector selects nothing but what every object has: it has no requirement.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object with these `metadata.labels` is selected. Objects without labels
    /// (`None`) are selected by the empty selector and by `!=`, `notin` and `!key` alone.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

/// Prints the canonical form: requirements sorted by key, values sorted, `==` as `=`. It parses
/// back to an equal selector.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::selector::requirement::{
        LABEL_KEY_RULE, LABEL_NAME_RULE, LABEL_VALUE_RULE, Operator, SUBDOMAIN_RULE,
    };

    /// Builds a label map from pairs.
    fn labels(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), Value::String((*v).to_string())))
            .collect()
    }

    /// Parses a selector that the test knows is valid.
    fn sel(input: &str) -> LabelSelector {
        match LabelSelector::parse(input) {
            Ok(selector) => selector,
            Err(e) => panic!("{input:?} should parse: {e}"),
        }
    }

    /// The error text of a label selector that must fail.
    fn label_error(input: &str) -> String {
        match LabelSelector::parse(input) {
            Ok(selector) => panic!("{input:?} should fail, parsed as {selector}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn empty_label_selector_matches_everything() {
        for input in ["", "   ", " \t\r\n "] {
            let s = sel(input);
            assert!(s.matches(None));
            assert!(s.matches(Some(&labels(&[("a", "b")]))));
            assert_eq!(s.to_string(), "");
        }
    }

    #[test]
    fn label_selector_equals_matches_only_that_value() {
        let s = sel("app=web");
        assert!(s.matches(Some(&labels(&[("app", "web"), ("x", "y")]))));
        assert!(!s.matches(Some(&labels(&[("app", "db")]))));
        assert!(!s.matches(Some(&labels(&[]))));
        assert!(!s.matches(None));
    }

    #[test]
    fn label_selector_double_equals_means_equals() {
        assert_eq!(sel("app==web"), sel("app=web"));
        assert_eq!(sel("app==web").to_string(), "app=web");
    }

    #[test]
    fn label_selector_not_equals_matches_objects_without_the_key() {
        let s = sel("app!=web");
        assert!(s.matches(None));
        assert!(s.matches(Some(&labels(&[("other", "web")]))));
        assert!(s.matches(Some(&labels(&[("app", "db")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web")]))));
    }

    #[test]
    fn label_selector_in_matches_any_listed_value() {
        let s = sel("tier in (web, db)");
        assert!(s.matches(Some(&labels(&[("tier", "web")]))));
        assert!(s.matches(Some(&labels(&[("tier", "db")]))));
        assert!(!s.matches(Some(&labels(&[("tier", "cache")]))));
        assert!(!s.matches(None));
    }

    #[test]
    fn label_selector_notin_excludes_listed_values() {
        let s = sel("tier notin (web,db)");
        assert!(!s.matches(Some(&labels(&[("tier", "web")]))));
        assert!(!s.matches(Some(&labels(&[("tier", "db")]))));
        assert!(s.matches(Some(&labels(&[("tier", "cache")]))));
    }

    #[test]
    fn label_selector_notin_matches_objects_without_the_key() {
        let s = sel("tier notin (web)");
        assert!(s.matches(None));
        assert!(s.matches(Some(&labels(&[("app", "web")]))));
    }

    #[test]
    fn label_selector_exists_requires_the_key_with_any_value() {
        let s = sel("app");
        assert!(s.matches(Some(&labels(&[("app", "")]))));
        assert!(s.matches(Some(&labels(&[("app", "x")]))));
        assert!(!s.matches(Some(&labels(&[("apps", "x")]))));
        assert!(!s.matches(None));
    }

    #[test]
    fn label_selector_does_not_exist_rejects_the_key() {
        let s = sel("!app");
        assert!(s.matches(None));
        assert!(s.matches(Some(&labels(&[("other", "x")]))));
        assert!(!s.matches(Some(&labels(&[("app", "")]))));
    }

    #[test]
    fn label_selector_greater_and_less_than_compare_integers() {
        let gt = sel("n>5");
        let lt = sel("n<5");
        assert!(gt.matches(Some(&labels(&[("n", "6")]))));
        assert!(!gt.matches(Some(&labels(&[("n", "5")]))));
        assert!(lt.matches(Some(&labels(&[("n", "4")]))));
        assert!(!lt.matches(Some(&labels(&[("n", "5")]))));
        assert!(!gt.matches(Some(&labels(&[("n", "many")]))));
        assert!(!gt.matches(None));
        assert!(!lt.matches(None));
    }

    #[test]
    fn label_selector_numeric_operator_needs_an_integer() {
        assert_eq!(
            label_error("n>abc"),
            "unable to parse requirement: values[0]: Invalid value: \"abc\": \
             for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn label_selector_ands_its_requirements() {
        let s = sel("app=web,tier!=db,!legacy");
        assert!(s.matches(Some(&labels(&[("app", "web")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("tier", "db")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("legacy", "1")]))));
        assert!(!s.matches(Some(&labels(&[("tier", "x")]))));
    }

    #[test]
    fn label_selector_non_string_label_values_never_match() {
        let map = json!({"n": 5, "b": true, "o": {}});
        let map = map.as_object();
        for input in [
            "n=5",
            "n!=5",
            "n",
            "!n",
            "n in (5)",
            "n notin (6)",
            "n>1",
            "b=true",
            "o",
        ] {
            assert!(
                !sel(input).matches(map),
                "{input} matched a non-string label"
            );
        }
    }

    #[test]
    fn label_selector_allows_whitespace_around_tokens() {
        let spaced = sel("  app = web ,\ttier in ( a , b ) ,  ! legacy , x != y , z notin(c)  ");
        assert_eq!(
            spaced,
            sel("app=web,tier in (a,b),!legacy,x!=y,z notin (c)")
        );
    }

    #[test]
    fn label_selector_empty_set_reads_as_the_empty_value() {
        let s = sel("a in ()");
        assert_eq!(s, sel("a in ( , )"));
        assert_eq!(s, sel("a in (,)"));
        assert!(s.matches(Some(&labels(&[("a", "")]))));
        assert!(!s.matches(Some(&labels(&[("a", "x")]))));
        assert_eq!(s.to_string(), "a in ()");
    }

    #[test]
    fn label_selector_rejects_a_trailing_empty_entry_after_a_double_comma() {
        // apimachinery's list reader consumes `,,` and then wants a value, not `)`.
        for input in ["a in (,,)", "a in (x,,)"] {
            assert_eq!(
                label_error(input),
                "unable to parse requirement: found ')', expected: ',', or identifier",
                "input {input:?}"
            );
        }
    }

    #[test]
    fn label_selector_empty_entries_in_a_set_are_the_empty_value() {
        assert_eq!(sel("a in (x,,y)"), sel("a in (,x,y)"));
        assert_eq!(sel("a in (x,)"), sel("a in (,x)"));
        assert_eq!(sel("a in (x,)").to_string(), "a in (,x)");
    }

    #[test]
    fn label_selector_missing_exact_value_is_the_empty_value() {
        let s = sel("a=,b");
        assert!(s.matches(Some(&labels(&[("a", ""), ("b", "1")]))));
        assert!(!s.matches(Some(&labels(&[("a", "x"), ("b", "1")]))));
        assert_eq!(s.to_string(), "a=,b");
        assert!(sel("a!=").matches(Some(&labels(&[("a", "x")]))));
    }

    #[test]
    fn label_selector_keywords_are_plain_words_as_keys_and_values() {
        let s = sel("in in (in,notin),notin=in");
        assert!(s.matches(Some(&labels(&[("in", "notin"), ("notin", "in")]))));
        assert!(!s.matches(Some(&labels(&[("in", "x"), ("notin", "in")]))));
        assert_eq!(s.to_string(), "in in (in,notin),notin=in");
    }

    #[test]
    fn label_selector_accepts_prefixed_keys() {
        let s = sel("agents.x-k8s.io/sandbox-name-hash=abc123");
        assert!(s.matches(Some(&labels(&[(
            "agents.x-k8s.io/sandbox-name-hash",
            "abc123"
        )]))));
    }

    #[test]
    fn label_selector_display_is_sorted_and_canonical() {
        let s = sel("b notin (z, y, z), a==1, !c, d, e>3");
        assert_eq!(s.to_string(), "a=1,b notin (y,z),!c,d,e>3");
        assert_eq!(sel(&s.to_string()), s);
    }

    #[test]
    fn label_selector_rejects_invalid_keys() {
        let too_long = format!("{}=x", "k".repeat(64));
        let long_prefix = format!("{}/k=x", "p".repeat(254));
        for input in [
            "Upper.Example/k=x",
            "a/b/c=x",
            "/k=x",
            "p/=x",
            "-k=x",
            "k-=x",
            "k@x=y",
            "ünïcode=x",
            too_long.as_str(),
            long_prefix.as_str(),
        ] {
            let error = label_error(input);
            assert!(
                error.starts_with("unable to parse requirement: invalid label key"),
                "{input}: {error}"
            );
        }
    }

    #[test]
    fn label_selector_key_errors_say_which_part_is_wrong() {
        assert_eq!(
            label_error("a/b/c"),
            format!("unable to parse requirement: invalid label key \"a/b/c\": {LABEL_KEY_RULE}")
        );
        assert_eq!(
            label_error("/k"),
            "unable to parse requirement: invalid label key \"/k\": prefix part must be non-empty"
        );
        assert_eq!(
            label_error("Ex/k"),
            format!(
                "unable to parse requirement: invalid label key \"Ex/k\": prefix part {SUBDOMAIN_RULE}"
            )
        );
        let long = "k".repeat(64);
        assert_eq!(
            label_error(&long),
            format!(
                "unable to parse requirement: invalid label key \"{long}\": \
                 name part must be no more than 63 characters"
            )
        );
        assert_eq!(
            label_error("p/"),
            format!(
                "unable to parse requirement: invalid label key \"p/\": \
                 name part must be non-empty; name part {LABEL_NAME_RULE}"
            )
        );
    }

    #[test]
    fn label_selector_rejects_invalid_values() {
        let too_long = format!("k={}", "v".repeat(64));
        for input in [
            "k=-v",
            "k=v-",
            "k=v@w",
            "k=é",
            "k in (ok,b@d)",
            "k notin (.x)",
            &too_long,
        ] {
            let error = label_error(input);
            assert!(
                error.starts_with("unable to parse requirement: invalid label value"),
                "{input}: {error}"
            );
        }
        assert_eq!(
            label_error("k=v@w"),
            format!(
                "unable to parse requirement: invalid label value: \"v@w\": at key: \"k\": \
                 {LABEL_VALUE_RULE}"
            )
        );
        assert_eq!(
            label_error(&too_long),
            format!(
                "unable to parse requirement: invalid label value: \"{}\": at key: \"k\": \
                 must be no more than 63 characters",
                "v".repeat(64)
            )
        );
        assert!(LabelSelector::parse(&format!("k={}", "v".repeat(63))).is_ok());
    }

    #[test]
    fn label_selector_reports_bad_syntax_with_the_token_found() {
        let cases = [
            (
                "a b",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "a in b",
                "unable to parse requirement: found 'b', expected: '('",
            ),
            (
                "a in (b",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            (
                "a in (b c)",
                "unable to parse requirement: found 'c', expected: ',' or ')'",
            ),
            (
                "a in (=)",
                "unable to parse requirement: found '=', expected: ',', ')' or identifier",
            ),
            (
                "a in (b,=)",
                "unable to parse requirement: found '=', expected: ',', or identifier",
            ),
            (
                "a notin",
                "unable to parse requirement: found '', expected: '('",
            ),
            (
                "a=(b)",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "!",
                "unable to parse requirement: found '', expected: identifier",
            ),
            (
                "!=a",
                "found '!=', expected: !, identifier, or 'end of string'",
            ),
            ("!a=b", "found '=', expected: ',' or 'end of string'"),
            ("a=b=c", "found '=', expected: ',' or 'end of string'"),
            ("a=b c", "found 'c', expected: ',' or 'end of string'"),
            ("a,", "found '', expected: identifier after ','"),
            ("a,,b", "found ',', expected: identifier after ','"),
            (
                ",a",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            (
                "(a)",
                "found '(', expected: !, identifier, or 'end of string'",
            ),
            (
                "a===b",
                "unable to parse requirement: found '=', expected: identifier",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(label_error(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn label_selector_survives_hostile_input() {
        for input in [
            "\u{0}",
            "a\u{0}",
            "((((",
            "))))",
            "!!!!",
            "=====",
            "a in ((",
            "é in (ü)",
            "a>>1",
            "<",
        ] {
            // Any outcome is fine as long as it is not a panic, and a success round-trips.
            if let Ok(s) = LabelSelector::parse(input) {
                assert_eq!(sel(&s.to_string()), s);
            }
        }
    }

    /// A requirement as the property tests generate it: key, operator and values.
    #[derive(Debug, Clone)]
    struct Generated {
        key: String,
        operator: Operator,
        values: Vec<String>,
    }

    /// Valid label keys, from a small pool so that label maps hit them often.
    fn key_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec!["a", "b", "app", "in", "notin", "x.y_z-1", "A9"])
                .prop_map(str::to_string),
            prop::sample::select(vec!["example.com/a", "k8s.io/app", "a-b.c/B"])
                .prop_map(str::to_string),
            "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,10}[a-zA-Z0-9])?",
        ]
    }

    /// Valid label values, some empty, some numeric.
    fn value_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec!["", "1", "5", "10", "web", "in", "notin", "v_1.x"])
                .prop_map(str::to_string),
            "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,6}[a-zA-Z0-9])?",
        ]
    }

    /// Requirements with operators and value counts that suit each other.
    fn requirement_strategy() -> impl Strategy<Value = Generated> {
        let numeric = "[0-9]{1,4}".prop_map(|s| vec![s]);
        (
            key_strategy(),
            prop::sample::select(vec![
                Operator::Equals,
                Operator::NotEquals,
                Operator::In,
                Operator::NotIn,
                Operator::Exists,
                Operator::DoesNotExist,
                Operator::GreaterThan,
                Operator::LessThan,
            ]),
            prop::collection::vec(value_strategy(), 1..4),
            numeric,
        )
            .prop_map(|(key, operator, set, numeric)| {
                let values = match operator {
                    // A value set: apimachinery rejects some spellings of a repeated empty
                    // value (`(x,,)`), so each value appears once.
                    Operator::In | Operator::NotIn => {
                        let mut set = set;
                        set.sort();
                        set.dedup();
                        set
                    }
                    Operator::Exists | Operator::DoesNotExist => Vec::new(),
                    Operator::GreaterThan | Operator::LessThan => numeric,
                    Operator::Equals | Operator::NotEquals => set.into_iter().take(1).collect(),
                };
                Generated {
                    key,
                    operator,
                    values,
                }
            })
    }

    /// Writes a generated requirement in one of its accepted spellings.
    fn write_generated(r: &Generated, style: u8) -> String {
        let space = if style.is_multiple_of(2) { "" } else { "  " };
        let first = r.values.first().map_or("", String::as_str);
        match r.operator {
            Operator::Equals if style.is_multiple_of(3) => {
                format!("{}{space}=={space}{first}", r.key)
            }
            Operator::Equals => format!("{}{space}={space}{first}", r.key),
            Operator::NotEquals => format!("{}{space}!={space}{first}", r.key),
            Operator::GreaterThan => format!("{}{space}>{space}{first}", r.key),
            Operator::LessThan => format!("{}{space}<{space}{first}", r.key),
            Operator::Exists => format!("{space}{}{space}", r.key),
            Operator::DoesNotExist => format!("!{space}{}", r.key),
            Operator::In => format!(
                "{} in ({space}{})",
                r.key,
                r.values.join(&format!("{space},"))
            ),
            Operator::NotIn => format!("{} notin({})", r.key, r.values.join(",")),
        }
    }

    /// What a generated requirement means, computed without the parser.
    fn oracle(r: &Generated, labels: &Map<String, Value>) -> bool {
        let actual = labels.get(&r.key).and_then(Value::as_str);
        let listed = |v: &str| r.values.iter().any(|x| x == v);
        let number = |v: &str| v.parse::<i64>().ok();
        let bound = r.values.first().and_then(|v| number(v));
        match r.operator {
            Operator::Equals | Operator::In => actual.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => !actual.is_some_and(listed),
            Operator::Exists => actual.is_some(),
            Operator::DoesNotExist => actual.is_none(),
            Operator::GreaterThan => {
                matches!((actual.and_then(number), bound), (Some(a), Some(b)) if a > b)
            }
            Operator::LessThan => {
                matches!((actual.and_then(number), bound), (Some(a), Some(b)) if a < b)
            }
        }
    }

    /// Label maps over keys and values from the same pools as the selectors.
    fn labels_strategy() -> impl Strategy<Value = Map<String, Value>> {
        prop::collection::vec((key_strategy(), value_strategy()), 0..6).prop_map(|pairs| {
            pairs
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect()
        })
    }

    proptest! {
        #[test]
        fn label_selector_display_parses_back_equal_and_matches_the_same(
            generated in prop::collection::vec(requirement_strategy(), 0..5),
            style in any::<u8>(),
            maps in prop::collection::vec(labels_strategy(), 1..8),
        ) {
            let input = generated
                .iter()
                .map(|r| write_generated(r, style))
                .collect::<Vec<_>>()
                .join(if style.is_multiple_of(5) { " , " } else { "," });
            let parsed = LabelSelector::parse(&input);
            prop_assert!(parsed.is_ok(), "{input:?}: {parsed:?}");
            let Ok(parsed) = parsed else { unreachable!() };
            let printed = parsed.to_string();
            let reparsed = LabelSelector::parse(&printed);
            prop_assert_eq!(reparsed.as_ref(), Ok(&parsed), "printed as {:?}", printed);
            for map in &maps {
                let expected = generated.iter().all(|r| oracle(r, map));
                prop_assert_eq!(parsed.matches(Some(map)), expected, "{:?} on {:?}", input, map);
                if let Ok(reparsed) = &reparsed {
                    prop_assert_eq!(reparsed.matches(Some(map)), expected);
                }
            }
            let no_labels = generated.iter().all(|r| oracle(r, &Map::new()));
            prop_assert_eq!(parsed.matches(None), no_labels);
        }
    }
}
