//! `x-kubernetes-validations`: each rule evaluated as CEL at its node, with `self` the value
//! there and, for a transition rule (one that reads `oldSelf`), `oldSelf` the correlated old
//! value (by key in objects and maps, by map keys in `map` lists). A failed rule is reported
//! as the API server reports it: its `message` (or `messageExpression`, or
//! `failed rule: <rule>`), at its node or its `fieldPath`, with its `reason`.

use serde_json::Value;
use std::collections::HashSet;

use super::cel::{self, OldSelf, Selection, to_cel_reads};
use super::field_error::{
    FIELD_VALUE_DUPLICATE, FIELD_VALUE_FORBIDDEN, FIELD_VALUE_INVALID, FIELD_VALUE_REQUIRED,
    FieldError,
};
use super::node::{Additional, additional, address, child, flag, items, properties, str_of};
use super::validate::schema_types;
use crate::go_format::go_quote;

/// The detail the API server adds when schema errors kept it from running the CEL rules.
const RULES_NOT_CHECKED: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// The API server's note that schema errors kept the rules from running.
pub(super) fn not_checked() -> FieldError {
    FieldError::new(
        "",
        FIELD_VALUE_INVALID,
        format!("Invalid value: null: {RULES_NOT_CHECKED}"),
    )
}

/// `rule.message`, trimmed, or `failed rule: <rule>`.
fn default_message(rule: &Value, text: &str) -> String {
    str_of(rule, "message")
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map_or_else(|| format!("failed rule: {}", text.trim()), str::to_string)
}

/// `rule.message`, trimmed, or the rule itself: how an evaluation error names the rule.
fn rule_error_string(rule: &Value, text: &str) -> String {
    str_of(rule, "message")
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .unwrap_or(text.trim())
        .to_string()
}

/// The message of a failed rule at a node of schema `s`: its `messageExpression` when that
/// evaluates to a non-empty line, else its default message.
fn failure_message(
    rule: &Value,
    text: &str,
    new: &Value,
    old: Option<&Value>,
    s: &Value,
    root: bool,
) -> String {
    let fallback = || default_message(rule, text);
    let Some(expr) = str_of(rule, "messageExpression") else {
        return fallback();
    };
    let Ok(compiled) = cel::compile(expr) else {
        return fallback();
    };
    let this = to_cel_reads(new, Some(s), root, &compiled.self_reads);
    let old = match old {
        Some(o) => OldSelfValue::Present(to_cel_reads(o, Some(s), root, &compiled.old_self_reads)),
        None => OldSelfValue::Absent,
    };
    match cel::evaluate(&compiled, this, old.bind(compiled.uses_old_self)) {
        Ok(::cel::Value::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
            s.trim().to_string()
        }
        _ => fallback(),
    }
}

/// What `oldSelf` may be bound to at one node.
enum OldSelfValue {
    /// No correlated old value.
    Absent,
    /// The correlated old value.
    Present(::cel::Value),
}

impl OldSelfValue {
    /// The binding of a program that reads `oldSelf` (or not).
    fn bind(&self, uses: bool) -> OldSelf {
        match (uses, self) {
            (false, _) | (true, OldSelfValue::Absent) => OldSelf::Unbound,
            (true, OldSelfValue::Present(v)) => OldSelf::Value(v.clone()),
        }
    }
}

/// The field a failed rule reports: its node, or its `fieldPath` below it.
fn rule_field(path: &str, rule: &Value) -> String {
    match str_of(rule, "fieldPath")
        .map(|f| f.trim_start_matches('.'))
        .filter(|f| !f.is_empty())
    {
        Some(fp) if fp.starts_with('[') => format!("{path}{fp}"),
        Some(fp) => child(path, fp),
        None => path.to_string(),
    }
}

/// Evaluates the rules of one node; when the value is `unchanged` from an old value that
/// passed them, only the transition rules (which read `oldSelf`).
fn node_rules(
    new: &Value,
    old: Option<&Value>,
    s: &Value,
    path: &str,
    root: bool,
    unchanged: bool,
    out: &mut Vec<FieldError>,
) {
    let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
    let kind = schema_types(s).first().copied().unwrap_or("object");
    let mut due = Vec::with_capacity(rules.len());
    let (mut self_reads, mut old_reads) = (Selection::default(), Selection::default());
    for rule in rules {
        let Some(text) = str_of(rule, "rule") else {
            continue;
        };
        let Ok(compiled) = cel::compile(text) else {
            // Refused when the CRD was created: a stored CRD only has rules that compile.
            continue;
        };
        if unchanged && !compiled.uses_old_self {
            continue;
        }
        let optional_old = flag(rule, "optionalOldSelf");
        if compiled.uses_old_self && old.is_none() && !optional_old {
            continue;
        }
        self_reads.add(&compiled.self_reads);
        old_reads.add(&compiled.old_self_reads);
        due.push((rule, text, compiled, optional_old));
    }
    if due.is_empty() {
        return;
    }
    // Converted once for every rule due here, with only what they read.
    let this = to_cel_reads(new, Some(s), root, &self_reads);
    let old_v = match old {
        Some(o) => OldSelfValue::Present(to_cel_reads(o, Some(s), root, &old_reads)),
        None => OldSelfValue::Absent,
    };
    for (rule, text, compiled, optional_old) in due {
        let binding = match (compiled.uses_old_self, optional_old) {
            (true, true) => OldSelf::Optional(match &old_v {
                OldSelfValue::Present(v) => Some(v.clone()),
                OldSelfValue::Absent => None,
            }),
            (uses, false) => old_v.bind(uses),
            (false, true) => OldSelf::Unbound,
        };
        let field = path.to_string();
        match cel::evaluate(&compiled, this.clone(), binding) {
            Ok(::cel::Value::Bool(true)) => {}
            Ok(::cel::Value::Bool(false)) => {
                let message = failure_message(rule, text, new, old, s, root);
                let at = rule_field(path, rule);
                out.push(match str_of(rule, "reason") {
                    Some(FIELD_VALUE_FORBIDDEN) => {
                        FieldError::new(&at, FIELD_VALUE_FORBIDDEN, format!("Forbidden: {message}"))
                    }
                    Some(FIELD_VALUE_REQUIRED) => FieldError::new(
                        &at,
                        FIELD_VALUE_REQUIRED,
                        format!("Required value: {message}"),
                    ),
                    Some(FIELD_VALUE_DUPLICATE) => FieldError::new(
                        &at,
                        FIELD_VALUE_DUPLICATE,
                        format!("Duplicate value: {}", go_quote(kind)),
                    ),
                    _ => FieldError::invalid(&at, &go_quote(kind), &message),
                });
            }
            Ok(other) => out.push(FieldError::invalid(
                &field,
                &go_quote(kind),
                &format!(
                    "rule did not evaluate to a bool (got {other:?}) evaluating rule: {}",
                    rule_error_string(rule, text)
                ),
            )),
            Err(e) if e.starts_with("no such overload") => out.push(FieldError::invalid(
                &field,
                &go_quote(kind),
                &format!(
                    "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                    rule_error_string(rule, text)
                ),
            )),
            Err(e) => out.push(FieldError::invalid(
                &field,
                &go_quote(kind),
                &format!("{e} evaluating rule: {}", rule_error_string(rule, text)),
            )),
        }
    }
}

/// The rules' walk over one object.
pub(super) struct Walk<'a> {
    /// The schema nodes with a rule at or below them (see `node::collect_ruled`).
    pub(super) ruled: &'a HashSet<usize>,
    /// Whether the old object passed these rules when it was written: a value equal to its
    /// old value then passes every rule that does not read `oldSelf`.
    pub(super) old_passed: bool,
}

impl Walk<'_> {
    /// Evaluates the rules of this node and those below it, with the old value correlated by
    /// key (and by map keys in `map` lists). `root` is set at the root and at embedded
    /// resources, whose `metadata` rules see only in part. Subtrees whose schema has no rules
    /// are not walked.
    pub(super) fn rules_node(
        &self,
        new: &Value,
        old: Option<&Value>,
        s: &Value,
        path: &str,
        root: bool,
        out: &mut Vec<FieldError>,
    ) {
        self.walk(new, old, s, path, root, false, out);
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        new: &Value,
        old: Option<&Value>,
        s: &Value,
        path: &str,
        root: bool,
        unchanged_above: bool,
        out: &mut Vec<FieldError>,
    ) {
        if !self.ruled.contains(&address(s)) {
            return;
        }
        let unchanged = unchanged_above || (self.old_passed && old == Some(new));
        node_rules(new, old, s, path, root, unchanged, out);
        match new {
            Value::Object(map) => {
                for (k, v) in map {
                    if root && k == "metadata" {
                        continue;
                    }
                    let old_v = old.and_then(|o| o.get(k));
                    if let Some(prop) = properties(s).and_then(|p| p.get(k)) {
                        let embedded = flag(prop, "x-kubernetes-embedded-resource");
                        self.walk(v, old_v, prop, &child(path, k), embedded, unchanged, out);
                    } else if let Additional::Schema(a) = additional(s) {
                        let embedded = flag(a, "x-kubernetes-embedded-resource");
                        let at = format!("{path}[{k}]");
                        self.walk(v, old_v, a, &at, embedded, unchanged, out);
                    }
                }
            }
            Value::Array(list) => {
                if let Some(item) = items(s) {
                    let map_keys = (str_of(s, "x-kubernetes-list-type") == Some("map"))
                        .then(|| {
                            s.get("x-kubernetes-list-map-keys")
                                .and_then(Value::as_array)
                        })
                        .flatten();
                    let embedded = flag(item, "x-kubernetes-embedded-resource");
                    for (i, v) in list.iter().enumerate() {
                        let old_v = map_keys.and_then(|keys| {
                            old.and_then(Value::as_array)?.iter().find(|o| {
                                keys.iter()
                                    .filter_map(Value::as_str)
                                    .all(|k| o.get(k) == v.get(k))
                            })
                        });
                        let at = format!("{path}[{i}]");
                        // In a list equal to its old one, each element is the old element
                        // at its index, which passed the rules there.
                        self.walk(v, old_v, item, &at, embedded, unchanged, out);
                    }
                }
            }
            _ => {}
        }
    }
}
