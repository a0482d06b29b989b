//! `x-kubernetes-validations`, without a CEL engine: each rule of the four CRDs is implemented by
//! hand and known by its exact text.
//!
//! A rule that is not known is not checked, so the test
//! `every_pattern_and_rule_of_the_fixture_crds_is_enforced` fails for any rule of
//! `fixtures/crds/` missing here. `messageExpression` is not evaluated (the static `message` is
//! used).

use serde_json::Value;

use super::field_error::{
    FIELD_VALUE_DUPLICATE, FIELD_VALUE_FORBIDDEN, FIELD_VALUE_INVALID, FIELD_VALUE_REQUIRED,
    FieldError,
};
use super::go_format::go_quote;
use super::node::{Additional, additional, child, items, properties, str_of};
use super::validate::{loose_equal, schema_types};

/// The detail the API server adds when schema errors kept it from running the CEL rules.
const RULES_NOT_CHECKED: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// `Sandbox.spec`: `volumeClaimTemplates` may be neither added, removed nor changed.
pub(super) const VCT_IMMUTABLE_RULE: &str = "has(self.volumeClaimTemplates) == has(oldSelf.volumeClaimTemplates) && (!has(self.volumeClaimTemplates) || self.volumeClaimTemplates == oldSelf.volumeClaimTemplates)";

/// A rule implemented by hand.
struct HandRule {
    /// The rule's CEL text, exactly as the CRD gives it.
    text: &'static str,
    /// Whether it uses `oldSelf`: such a transition rule is evaluated only on update, where the
    /// old object has a correlated value (the API server skips it on create).
    transition: bool,
    /// Whether the rule holds for `self` (and `oldSelf`, for a transition rule).
    holds: fn(new: &Value, old: Option<&Value>) -> bool,
}

/// Every rule implemented here.
const KNOWN: [HandRule; 1] = [HandRule {
    text: VCT_IMMUTABLE_RULE,
    transition: true,
    holds: volume_claim_templates_unchanged,
}];

/// [`VCT_IMMUTABLE_RULE`]: `volumeClaimTemplates` is absent on both sides or equal.
fn volume_claim_templates_unchanged(new: &Value, old: Option<&Value>) -> bool {
    let key = "volumeClaimTemplates";
    match (new.get(key), old.and_then(|o| o.get(key))) {
        (None, None) => true,
        (Some(a), Some(b)) => loose_equal(a, b),
        _ => false,
    }
}

/// Whether `rule` is implemented here.
#[cfg(test)]
pub(super) fn is_known(rule: &str) -> bool {
    KNOWN.iter().any(|known| known.text == rule)
}

/// The result of a rule: `Some(passed)`; `None` for a rule not implemented here or a
/// transition rule without an old value (both are skipped).
fn evaluate(rule: &str, new: &Value, old: Option<&Value>) -> Option<bool> {
    let known = KNOWN.iter().find(|known| known.text == rule)?;
    if known.transition && old.is_none() {
        return None;
    }
    Some((known.holds)(new, old))
}

/// The API server's note that schema errors kept the rules from running.
pub(super) fn not_checked() -> FieldError {
    FieldError::new(
        "",
        FIELD_VALUE_INVALID,
        format!("Invalid value: null: {RULES_NOT_CHECKED}"),
    )
}

/// Evaluates the known `x-kubernetes-validations` of this node and those below it, with the
/// old value correlated by key (and by map keys in `map` lists).
pub(super) fn rules_node(
    new: &Value,
    old: Option<&Value>,
    s: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    for rule in s
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(text) = str_of(rule, "rule") else {
            continue;
        };
        if evaluate(text, new, old) != Some(false) {
            continue;
        }
        let message = str_of(rule, "message")
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map_or_else(|| format!("failed rule: {}", text.trim()), str::to_string);
        let mut field = path.to_string();
        if let Some(fp) = str_of(rule, "fieldPath")
            .map(|f| f.trim_start_matches('.'))
            .filter(|f| !f.is_empty())
        {
            field = child(&field, fp);
        }
        let kind = schema_types(s).first().copied().unwrap_or("object");
        out.push(match str_of(rule, "reason") {
            Some(FIELD_VALUE_FORBIDDEN) => FieldError::new(
                &field,
                FIELD_VALUE_FORBIDDEN,
                format!("Forbidden: {message}"),
            ),
            Some(FIELD_VALUE_REQUIRED) => FieldError::new(
                &field,
                FIELD_VALUE_REQUIRED,
                format!("Required value: {message}"),
            ),
            Some(FIELD_VALUE_DUPLICATE) => FieldError::new(
                &field,
                FIELD_VALUE_DUPLICATE,
                format!("Duplicate value: {}", go_quote(kind)),
            ),
            _ => FieldError::invalid(&field, &go_quote(kind), &message),
        });
    }
    match new {
        Value::Object(map) => {
            for (k, v) in map {
                let old_v = old.and_then(|o| o.get(k));
                if let Some(prop) = properties(s).and_then(|p| p.get(k)) {
                    rules_node(v, old_v, prop, &child(path, k), out);
                } else if let Additional::Schema(a) = additional(s) {
                    rules_node(v, old_v, a, &format!("{path}[{k}]"), out);
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
                for (i, v) in list.iter().enumerate() {
                    let old_v = map_keys.and_then(|keys| {
                        old.and_then(Value::as_array)?.iter().find(|o| {
                            keys.iter()
                                .filter_map(Value::as_str)
                                .all(|k| o.get(k) == v.get(k))
                        })
                    });
                    rules_node(v, old_v, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}
