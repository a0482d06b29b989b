//! One requirement of a label selector (apimachinery's `labels.Requirement`), and the label key
//! and value rules it checks (k8s.io/apimachinery/pkg/util/validation).

use std::fmt;

use serde_json::{Map, Value};

use super::error::RequirementError;

/// How a label requirement relates a key to its values. `==` is read as [`Operator::Equals`]:
/// the two mean the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Operator {
    /// `key=value`: the key is present with that value.
    Equals,
    /// `key!=value`: the key is absent or has another value.
    NotEquals,
    /// `key in (a,b)`: the key is present with one of the values.
    In,
    /// `key notin (a,b)`: the key is absent or has none of the values.
    NotIn,
    /// `key`: the key is present.
    Exists,
    /// `!key`: the key is absent.
    DoesNotExist,
    /// `key>n`: the key holds an integer greater than n.
    GreaterThan,
    /// `key<n`: the key holds an integer less than n.
    LessThan,
}

/// One condition of a label selector. Values are sorted and free of duplicates, so two
/// requirements that mean the same compare equal.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Requirement {
    /// The label key the condition is about.
    key: String,
    /// How the key relates to the values.
    operator: Operator,
    /// The values; empty for `Exists` and `DoesNotExist`, one for the exact-match operators.
    values: Vec<String>,
}

impl Requirement {
    /// Checks the key and values as apimachinery's `NewRequirement` does and builds the
    /// requirement. Callers pass one value for the exact-match and numeric operators.
    pub(super) fn new(
        key: String,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Self, RequirementError> {
        validate_label_key(&key)?;
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(RequirementError::EmptyValues);
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(RequirementError::UnexpectedValues(values));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if let Some(bad) = values.iter().find(|v| v.parse::<i64>().is_err()) {
                    return Err(RequirementError::NotAnInteger(bad.clone()));
                }
            }
            _ => {}
        }
        for value in &values {
            let problems = label_value_problems(value);
            if !problems.is_empty() {
                return Err(RequirementError::InvalidValue {
                    key,
                    value: value.clone(),
                    details: problems.join("; "),
                });
            }
        }
        let mut values = values;
        values.sort();
        values.dedup();
        Ok(Self {
            key,
            operator,
            values,
        })
    }

    /// Whether an object with these labels meets the condition. A label whose value is not a
    /// string meets no condition on its key.
    pub(super) fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let value = match labels.and_then(|l| l.get(&self.key)) {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return false,
        };
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !listed(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(actual) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let Some(bound) = self.values.first().and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.values.first().map_or("", String::as_str);
        match self.operator {
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::Equals => write!(f, "{}={first}", self.key),
            Operator::NotEquals => write!(f, "{}!={first}", self.key),
            Operator::GreaterThan => write!(f, "{}>{first}", self.key),
            Operator::LessThan => write!(f, "{}<{first}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
        }
    }
}

/// The longest name part of a label key, and the longest label value.
const LABEL_NAME_MAX: usize = 63;
/// The longest DNS-1123 subdomain, used as a label key prefix.
const SUBDOMAIN_MAX: usize = 253;
/// apimachinery's explanation of the name part of a label key.
pub(super) const LABEL_NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and \
must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', \
regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
/// apimachinery's explanation of a label key with more than one `/`.
pub(super) const LABEL_KEY_RULE: &str = "a valid label key must consist of alphanumeric characters, '-', \
'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  \
or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an \
optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
/// apimachinery's explanation of a DNS-1123 subdomain.
pub(super) const SUBDOMAIN_RULE: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. \
'example.com', regex used for validation is \
'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/// apimachinery's explanation of a label value.
pub(super) const LABEL_VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric \
characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
'MyValue',  or 'my_value',  or '12345', regex used for validation is \
'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// Whether `s` is non-empty, starts and ends with an ASCII letter or digit, and holds only
/// those, `-`, `_` and `.` (the name part of a label key, and a non-empty label value).
fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Whether `s` is a lowercase DNS-1123 subdomain (length aside): dot-separated labels of
/// lowercase letters, digits and `-`, each starting and ending with a letter or digit.
fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let bytes = label.as_bytes();
        let end_ok =
            |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        end_ok(bytes.first())
            && end_ok(bytes.last())
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
    })
}

/// Every rule a label key breaks, worded as apimachinery's `IsQualifiedName`.
fn label_key_problems(key: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > SUBDOMAIN_MAX {
                    problems.push(format!(
                        "prefix part must be no more than {SUBDOMAIN_MAX} characters"
                    ));
                }
                if !is_dns1123_subdomain(prefix) {
                    problems.push(format!("prefix part {SUBDOMAIN_RULE}"));
                }
            }
            *name
        }
        _ => return vec![LABEL_KEY_RULE.to_string()],
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_NAME_MAX {
        problems.push(format!(
            "name part must be no more than {LABEL_NAME_MAX} characters"
        ));
    }
    if !is_label_name(name) {
        problems.push(format!("name part {LABEL_NAME_RULE}"));
    }
    problems
}

/// Every rule a label value breaks, worded as apimachinery's `IsValidLabelValue`.
fn label_value_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > LABEL_NAME_MAX {
        problems.push(format!("must be no more than {LABEL_NAME_MAX} characters"));
    }
    if !value.is_empty() && !is_label_name(value) {
        problems.push(LABEL_VALUE_RULE.to_string());
    }
    problems
}

/// Rejects a key that is not a valid label key.
pub(super) fn validate_label_key(key: &str) -> Result<(), RequirementError> {
    let problems = label_key_problems(key);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(RequirementError::InvalidKey {
            key: key.to_string(),
            details: problems.join("; "),
        })
    }
}
