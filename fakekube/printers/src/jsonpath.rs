//! The subset of Kubernetes JSONPath (client-go's `jsonpath` package) that CRD printer columns
//! use: fields (`.spec.replicas`, `['a.b']`), indexes (`[0]`, `[-1]`), slices (`[1:3]`),
//! wildcards (`[*]`, `.*`), recursive descent (`..name`) and filters
//! (`[?(@.type=='Ready')]`, `[?(@.count>2)]`, `[?(@.ready)]`).
//!
//! A path is parsed once ([`JsonPath::parse`]) and evaluated against any number of objects
//! ([`JsonPath::find`]); a missing key selects nothing rather than failing, as the API server's
//! printer columns allow missing keys.

use serde_json::Value;
use std::cmp::Ordering;

/// Why a path could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized JSONPath {path:?}: {why}")]
pub struct JsonPathError {
    /// The path as written.
    path: String,
    /// What is wrong at which position.
    why: String,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// A member of an object.
    Field(String),
    /// Every member of an object or element of a list.
    Wildcard,
    /// Every value at any depth below (the next step applies to each).
    Descend,
    /// An element of a list; negative counts from the end.
    Index(i64),
    /// Elements `start..end` of a list (either end open; negative counts from the end).
    Slice(Option<i64>, Option<i64>),
    /// The elements of a list (or the object itself) the filter holds for.
    Filter(Filter),
}

/// A filter's test on the current element (`@`).
#[derive(Debug, Clone, PartialEq)]
struct Filter {
    /// The path below `@` whose value is tested.
    path: Vec<Step>,
    /// The comparison; `None` tests that the path selects something.
    compare: Option<(Op, Value)>,
}

/// A filter's comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A parsed JSONPath.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    /// Parses a path such as `.status.conditions[?(@.type=='Ready')].status`, with or without
    /// the surrounding `{}` of a template.
    pub fn parse(path: &str) -> Result<Self, JsonPathError> {
        let inner = path
            .trim()
            .strip_prefix('{')
            .and_then(|p| p.strip_suffix('}'))
            .unwrap_or(path.trim());
        let mut parser = Parser {
            text: inner,
            pos: 0,
            original: path,
        };
        let steps = parser.steps(false)?;
        Ok(JsonPath { steps })
    }

    /// Every value the path selects in `root`, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        eval(&self.steps, vec![root])
    }
}

/// The recursive-descent parser over a path's text.
struct Parser<'a> {
    text: &'a str,
    pos: usize,
    original: &'a str,
}

impl Parser<'_> {
    fn err(&self, why: &str) -> JsonPathError {
        JsonPathError {
            path: self.original.to_string(),
            why: format!("{why} at position {}", self.pos),
        }
    }

    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn skip_spaces(&mut self) {
        let trimmed = self.rest().trim_start();
        self.pos = self.text.len() - trimmed.len();
    }

    /// Steps until the end of the text (or, inside a filter, until an operator or `)`).
    fn steps(&mut self, in_filter: bool) -> Result<Vec<Step>, JsonPathError> {
        let mut steps = Vec::new();
        // `$` and a leading `@` (in filters) name the root and add no step.
        let _ = self.eat("$");
        loop {
            if in_filter {
                self.skip_spaces();
            }
            let rest = self.rest();
            if rest.is_empty() {
                break;
            }
            if in_filter
                && (rest.starts_with(')')
                    || ["==", "!=", "<", ">", "="]
                        .iter()
                        .any(|op| rest.starts_with(op)))
            {
                break;
            }
            if self.eat("..") {
                steps.push(Step::Descend);
                if self.rest().starts_with('[') {
                    continue;
                }
                steps.push(self.field()?);
            } else if self.eat(".") {
                if self.rest().is_empty() {
                    // A lone `.` selects the root.
                    break;
                }
                steps.push(self.field()?);
            } else if self.eat("[") {
                steps.push(self.bracket()?);
            } else {
                return Err(self.err("expected '.' or '['"));
            }
        }
        Ok(steps)
    }

    /// A field name after `.` (`*` is the wildcard).
    fn field(&mut self) -> Result<Step, JsonPathError> {
        let rest = self.rest();
        let end = rest
            .find(|c: char| {
                matches!(
                    c,
                    '.' | '[' | ']' | '(' | ')' | '=' | '!' | '<' | '>' | ' ' | '}'
                )
            })
            .unwrap_or(rest.len());
        let name = rest[..end].to_string();
        if name.is_empty() {
            return Err(self.err("expected a field name"));
        }
        self.pos += end;
        Ok(if name == "*" {
            Step::Wildcard
        } else {
            Step::Field(name)
        })
    }

    /// What follows a `[`: a quoted name, `*`, an index, a slice or a filter.
    fn bracket(&mut self) -> Result<Step, JsonPathError> {
        self.skip_spaces();
        let step = if self.eat("?(") {
            let filter = self.filter()?;
            self.skip_spaces();
            if !self.eat(")") {
                return Err(self.err("expected ')' closing the filter"));
            }
            Step::Filter(filter)
        } else if self.eat("*") {
            Step::Wildcard
        } else if self.rest().starts_with('\'') || self.rest().starts_with('"') {
            match self.literal()? {
                Value::String(s) => Step::Field(s),
                _ => return Err(self.err("expected a quoted name")),
            }
        } else {
            let rest = self.rest();
            let end = rest.find(']').ok_or_else(|| self.err("expected ']'"))?;
            let inside = rest[..end].trim();
            let number = |s: &str| -> Result<Option<i64>, JsonPathError> {
                let s = s.trim();
                if s.is_empty() {
                    Ok(None)
                } else {
                    s.parse::<i64>()
                        .map(Some)
                        .map_err(|_| self.err("expected an index"))
                }
            };
            let step = match inside.split_once(':') {
                Some((a, b)) => {
                    // `[a:b:step]` is not in the subset printer columns use.
                    if b.contains(':') {
                        return Err(self.err("slices with a step are not supported"));
                    }
                    Step::Slice(number(a)?, number(b)?)
                }
                None => Step::Index(number(inside)?.ok_or_else(|| self.err("expected an index"))?),
            };
            self.pos += end;
            step
        };
        self.skip_spaces();
        if !self.eat("]") {
            return Err(self.err("expected ']'"));
        }
        Ok(step)
    }

    /// A filter's body, after `?(`.
    fn filter(&mut self) -> Result<Filter, JsonPathError> {
        self.skip_spaces();
        if !self.eat("@") {
            return Err(self.err("a filter must test '@'"));
        }
        let path = self.steps(true)?;
        self.skip_spaces();
        let op = [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
            ("=", Op::Eq),
        ]
        .into_iter()
        .find(|(text, _)| self.rest().starts_with(text));
        let Some((text, op)) = op else {
            return Ok(Filter {
                path,
                compare: None,
            });
        };
        self.pos += text.len();
        self.skip_spaces();
        let value = self.literal()?;
        Ok(Filter {
            path,
            compare: Some((op, value)),
        })
    }

    /// A quoted string, a number, `true`, `false` or `null`.
    fn literal(&mut self) -> Result<Value, JsonPathError> {
        let rest = self.rest();
        if let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') {
            let mut out = String::new();
            let mut chars = rest[1..].char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, next)) = chars.next() {
                            out.push(next);
                        }
                    }
                    c if c == quote => {
                        self.pos += 1 + i + c.len_utf8();
                        return Ok(Value::String(out));
                    }
                    c => out.push(c),
                }
            }
            return Err(self.err("unterminated string"));
        }
        let end = rest
            .find(|c: char| c == ')' || c == ']' || c.is_whitespace())
            .unwrap_or(rest.len());
        let word = &rest[..end];
        let value = match word {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            _ => serde_json::from_str::<serde_json::Number>(word)
                .map(Value::Number)
                .map_err(|_| self.err("expected a literal"))?,
        };
        self.pos += end;
        Ok(value)
    }
}

/// Applies `steps` to each of `current`.
fn eval<'a>(steps: &[Step], mut current: Vec<&'a Value>) -> Vec<&'a Value> {
    for (i, step) in steps.iter().enumerate() {
        let mut next = Vec::new();
        match step {
            Step::Field(name) => {
                next.extend(current.iter().filter_map(|v| v.get(name.as_str())));
            }
            Step::Wildcard => {
                for v in &current {
                    match v {
                        Value::Object(m) => next.extend(m.values()),
                        Value::Array(a) => next.extend(a.iter()),
                        _ => {}
                    }
                }
            }
            Step::Descend => {
                for v in &current {
                    descendants(v, &mut next);
                }
                // The rest of the path applies at every depth.
                return eval(&steps[i + 1..], next);
            }
            Step::Index(n) => {
                for v in &current {
                    if let Value::Array(a) = v
                        && let Some(at) = resolve_index(*n, a.len())
                    {
                        next.push(&a[at]);
                    }
                }
            }
            Step::Slice(start, end) => {
                for v in &current {
                    if let Value::Array(a) = v {
                        let len = a.len();
                        let from = start.map_or(0, |s| clamp_index(s, len));
                        let to = end.map_or(len, |e| clamp_index(e, len));
                        if from < to {
                            next.extend(a[from..to].iter());
                        }
                    }
                }
            }
            Step::Filter(f) => {
                for v in &current {
                    match v {
                        Value::Array(a) => next.extend(a.iter().filter(|e| f.holds(e))),
                        other if f.holds(other) => next.push(*other),
                        _ => {}
                    }
                }
            }
        }
        current = next;
    }
    current
}

/// A value and everything below it, depth first.
fn descendants<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(v);
    match v {
        Value::Object(m) => m.values().for_each(|c| descendants(c, out)),
        Value::Array(a) => a.iter().for_each(|c| descendants(c, out)),
        _ => {}
    }
}

/// A possibly negative index into a list of `len`, or `None` past either end.
fn resolve_index(n: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let at = if n < 0 { len + n } else { n };
    (0..len)
        .contains(&at)
        .then(|| usize::try_from(at).ok())
        .flatten()
}

/// A slice bound clamped into `0..=len`.
fn clamp_index(n: i64, len: usize) -> usize {
    let l = i64::try_from(len).unwrap_or(i64::MAX);
    let at = if n < 0 { l + n } else { n };
    usize::try_from(at.clamp(0, l)).unwrap_or(0)
}

impl Filter {
    /// Whether the filter holds for `element`.
    fn holds(&self, element: &Value) -> bool {
        let found = eval(&self.path, vec![element]);
        match &self.compare {
            None => !found.is_empty(),
            Some((op, want)) => found.iter().any(|got| compare(got, *op, want)),
        }
    }
}

/// `got <op> want`: numbers compare as numbers, strings as strings, anything else only for
/// (in)equality.
fn compare(got: &Value, op: Op, want: &Value) -> bool {
    let order = match (got, want) {
        (Value::Number(a), Value::Number(b)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    };
    match (op, order) {
        (Op::Eq, Some(o)) => o == Ordering::Equal,
        (Op::Ne, Some(o)) => o != Ordering::Equal,
        (Op::Eq, None) => got == want,
        (Op::Ne, None) => got != want,
        (Op::Lt, Some(o)) => o == Ordering::Less,
        (Op::Le, Some(o)) => o != Ordering::Greater,
        (Op::Gt, Some(o)) => o == Ordering::Greater,
        (Op::Ge, Some(o)) => o != Ordering::Less,
        (_, None) => false,
    }
}

/// A selected value as client-go's JSONPath printer writes it: strings bare, other scalars as
/// Go prints them, objects and lists as compact JSON with their keys sorted.
pub fn print(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Object(_) | Value::Array(_) => sorted_json(v),
    }
}

/// Compact JSON with object keys in sorted order, as Go's `encoding/json` writes a map.
fn sorted_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        Value::String(k.clone()),
                        sorted_json(&m[k.as_str()])
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(sorted_json).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn sandbox() -> Value {
        json!({
            "metadata": { "name": "box", "labels": { "app.kubernetes.io/name": "demo" } },
            "spec": { "replicas": 3 },
            "status": {
                "conditions": [
                    { "type": "Scheduled", "status": "True", "count": 1 },
                    { "type": "Ready", "status": "False", "reason": "Starting", "count": 4 },
                ],
            },
        })
    }

    fn first(path: &str, v: &Value) -> Option<Value> {
        JsonPath::parse(path)
            .ok()?
            .find(v)
            .first()
            .map(|x| (*x).clone())
    }

    #[test]
    fn fields_and_bracketed_names_select_members() {
        let v = sandbox();
        assert_eq!(first(".spec.replicas", &v), Some(json!(3)));
        assert_eq!(first("{.metadata.name}", &v), Some(json!("box")));
        assert_eq!(
            first(".metadata.labels['app.kubernetes.io/name']", &v),
            Some(json!("demo"))
        );
        assert_eq!(first(".spec.missing", &v), None);
        assert_eq!(first(".", &v), Some(v.clone()));
    }

    #[test]
    fn filters_pick_conditions_by_type_and_compare_numbers() {
        let v = sandbox();
        assert_eq!(
            first(".status.conditions[?(@.type=='Ready')].status", &v),
            Some(json!("False"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type==\"Ready\")].reason", &v),
            Some(json!("Starting"))
        );
        assert_eq!(
            first(".status.conditions[?(@.count > 2)].type", &v),
            Some(json!("Ready"))
        );
        assert_eq!(
            first(".status.conditions[?(@.reason)].type", &v),
            Some(json!("Ready"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type!='Ready')].type", &v),
            Some(json!("Scheduled"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type=='Gone')].status", &v),
            None
        );
    }

    #[test]
    fn indexes_slices_wildcards_and_descent_walk_lists() {
        let v = sandbox();
        assert_eq!(
            first(".status.conditions[-1].type", &v),
            Some(json!("Ready"))
        );
        assert_eq!(first(".status.conditions[5].type", &v), None);
        let types = JsonPath::parse(".status.conditions[*].type")
            .map(|p| p.find(&v).into_iter().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        assert_eq!(types, vec![json!("Scheduled"), json!("Ready")]);
        let sliced = JsonPath::parse(".status.conditions[1:].type")
            .map(|p| p.find(&v).len())
            .unwrap_or_default();
        assert_eq!(sliced, 1);
        assert_eq!(first("..reason", &v), Some(json!("Starting")));
    }

    #[test]
    fn malformed_paths_are_errors() {
        for bad in [
            "spec",
            ".spec[",
            ".a[?(@.x=='y']",
            ".a['unterminated]",
            ".a[x]",
            "..",
            ".a[1:2:3]",
        ] {
            assert!(JsonPath::parse(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn values_print_as_the_go_printer_writes_them() {
        assert_eq!(print(&json!("x")), "x");
        assert_eq!(print(&json!(3)), "3");
        assert_eq!(print(&json!(true)), "true");
        assert_eq!(
            print(&json!({ "b": 1, "a": [1, "x"] })),
            r#"{"a":[1,"x"],"b":1}"#
        );
    }

    proptest! {
        #[test]
        fn any_text_parses_or_fails_without_panicking(path in ".{0,60}") {
            if let Ok(p) = JsonPath::parse(&path) {
                let _ = p.find(&sandbox());
            }
        }

        #[test]
        fn a_dotted_path_finds_the_value_set_there(keys in proptest::collection::vec("[a-z]{1,8}", 1..5), n in any::<i64>()) {
            let mut v = json!(n);
            for k in keys.iter().rev() {
                v = json!({ k.as_str(): v });
            }
            let path = format!(".{}", keys.join("."));
            prop_assert_eq!(first(&path, &v), Some(json!(n)));
        }
    }
}
