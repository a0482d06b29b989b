//! The defaults and validation of `node.k8s.io/v1` RuntimeClasses (pkg/apis/node/validation)
//! and `scheduling.k8s.io/v1` PriorityClasses (pkg/apis/scheduling/validation).

use super::quantity;
use crate::status::Cause;
use serde_json::{Value, json};

fn invalid(field: String, value: &str, why: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: \"{value}\": {why}"),
        field: Some(field),
    }
}

fn not_supported(field: String, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    Cause {
        reason: "FieldValueNotSupported".into(),
        message: format!(
            "Unsupported value: \"{value}\": supported values: {}",
            list.join(", ")
        ),
        field: Some(field),
    }
}

fn forbidden(field: &str, why: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {why}"),
        field: Some(field.into()),
    }
}

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Checks a RuntimeClass (and, on update, its immutable `handler`).
pub(super) fn runtime_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let handler = text(obj, "handler");
    if let Some(mut c) = crate::meta::validate_name(handler, true) {
        c.field = Some("handler".into());
        causes.push(c);
    }
    if let Some(old) = old {
        let before = text(old, "handler");
        if before != handler {
            causes.push(invalid("handler".into(), handler, "field is immutable"));
        }
    }
    if let Some(fixed) = obj.pointer("/overhead/podFixed").and_then(Value::as_object) {
        for (resource, q) in fixed {
            // The overhead is checked as a container's limits are, under their field name.
            let field = format!("overhead.limits[{resource}]");
            match quantity::parse(q) {
                Ok(n) if n.sign() < 0 => causes.push(invalid(
                    field,
                    q.as_str().unwrap_or(&q.to_string()),
                    "must be greater than or equal to 0",
                )),
                Ok(_) => {}
                Err(message) => causes.push(invalid(field, &q.to_string(), &message)),
            }
        }
    }
    if let Some(tolerations) = obj
        .pointer("/scheduling/tolerations")
        .and_then(Value::as_array)
    {
        for (i, t) in tolerations.iter().enumerate() {
            toleration(t, &format!("scheduling.tolerations[{i}]"), &mut causes);
        }
    }
    if let Some(selector) = obj
        .pointer("/scheduling/nodeSelector")
        .and_then(Value::as_object)
    {
        for (k, v) in selector {
            if !v.is_string() {
                causes.push(invalid(
                    format!("scheduling.nodeSelector[{k}]"),
                    &v.to_string(),
                    "must be a string",
                ));
            }
        }
    }
    causes
}

/// Checks one toleration as `ValidateTolerations` does.
fn toleration(t: &Value, at: &str, causes: &mut Vec<Cause>) {
    let (key, operator, value, effect) = (
        text(t, "key"),
        text(t, "operator"),
        text(t, "value"),
        text(t, "effect"),
    );
    if key.is_empty() && operator != "Exists" {
        causes.push(invalid(
            format!("{at}.operator"),
            operator,
            "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        ));
    }
    if t.get("tolerationSeconds").is_some_and(|s| !s.is_null()) && effect != "NoExecute" {
        causes.push(invalid(
            format!("{at}.effect"),
            effect,
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
    match operator {
        "Equal" | "" => {}
        "Exists" if !value.is_empty() => causes.push(invalid(
            format!("{at}.operator"),
            value,
            "value must be empty when `operator` is 'Exists'",
        )),
        "Exists" => {}
        other => causes.push(not_supported(
            format!("{at}.operator"),
            other,
            &["Equal", "Exists"],
        )),
    }
    if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        causes.push(not_supported(
            format!("{at}.effect"),
            effect,
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
        ));
    }
}

/// `system-cluster-critical`'s and `system-node-critical`'s values, as upstream defines them.
const SYSTEM_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The system PriorityClasses, as the API server bootstraps them.
pub(crate) fn system_priority_classes() -> Vec<Value> {
    SYSTEM_CLASSES
        .iter()
        .map(|(name, value, description)| {
            json!({
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": { "name": name },
                "value": value,
                "description": description,
                "preemptionPolicy": "PreemptLowerPriority",
            })
        })
        .collect()
}

/// The largest value a PriorityClass not of the system's may have.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// Defaults and checks a PriorityClass: `preemptionPolicy` defaults to
/// `PreemptLowerPriority`; a `system-` name is the system's own, a user's value is at most a
/// billion; `value` and `preemptionPolicy` are immutable.
pub(super) fn priority_class(obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(o) = obj.as_object_mut() {
        super::set_default(o, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
    let global = obj.get("globalDefault").and_then(Value::as_bool) == Some(true);
    if name.starts_with("system-") {
        let known = system_priority_classes()
            .into_iter()
            .find(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(name));
        let error = match known {
            None => Some(format!("{name} is not a known system priority class")),
            Some(c) if c.get("value").and_then(Value::as_i64) != Some(value) => Some(format!(
                "value of {name} PriorityClass must be {}",
                c["value"]
            )),
            Some(_) if global => Some(format!(
                "globalDefault of {name} PriorityClass must be false"
            )),
            Some(_) => None,
        };
        if let Some(error) = error {
            causes.push(forbidden(
                "metadata.name",
                &format!(
                    "priority class names with 'system-' prefix are reserved for system use only. error: {error}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        causes.push(forbidden(
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    let policy = text(obj, "preemptionPolicy");
    if !matches!(policy, "PreemptLowerPriority" | "Never") {
        causes.push(not_supported(
            "preemptionPolicy".into(),
            policy,
            &["Never", "PreemptLowerPriority"],
        ));
    }
    if let Some(old) = old {
        if old.get("value").and_then(Value::as_i64).unwrap_or(0) != value {
            causes.push(forbidden("value", "may not be changed in an update."));
        }
        let before = text(old, "preemptionPolicy");
        if before != policy {
            causes.push(invalid(
                "preemptionPolicy".into(),
                policy,
                "field is immutable",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_class_needs_a_dns_label_handler_that_never_changes() {
        let bad = runtime_class(&json!({ "handler": "Kata_QEMU" }), None);
        assert_eq!(bad[0].field.as_deref(), Some("handler"));
        let missing = runtime_class(&json!({}), None);
        assert_eq!(missing[0].field.as_deref(), Some("handler"));
        assert!(runtime_class(&json!({ "handler": "kata" }), None).is_empty());
        let changed = runtime_class(
            &json!({ "handler": "runc" }),
            Some(&json!({ "handler": "kata" })),
        );
        assert_eq!(
            changed[0].message,
            "Invalid value: \"runc\": field is immutable"
        );
    }

    #[test]
    fn a_runtime_class_overhead_and_tolerations_are_checked() {
        let causes = runtime_class(
            &json!({
                "handler": "kata",
                "overhead": { "podFixed": { "cpu": "-1" } },
                "scheduling": { "tolerations": [ { "key": "k", "operator": "Sometimes" } ] },
            }),
            None,
        );
        let fields: Vec<_> = causes.iter().filter_map(|c| c.field.as_deref()).collect();
        assert_eq!(
            fields,
            ["overhead.limits[cpu]", "scheduling.tolerations[0].operator"]
        );
    }

    #[test]
    fn a_user_priority_class_stays_below_a_billion_and_system_names_are_reserved() {
        let mut high = json!({ "metadata": { "name": "high" }, "value": 1_000_000_001 });
        assert_eq!(
            priority_class(&mut high, None)[0].field.as_deref(),
            Some("value")
        );
        let mut fake = json!({ "metadata": { "name": "system-mine" }, "value": 1 });
        assert_eq!(
            priority_class(&mut fake, None)[0].message,
            "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
        );
        let mut ok = json!({ "metadata": { "name": "low" }, "value": 10 });
        assert!(priority_class(&mut ok, None).is_empty());
        assert_eq!(ok["preemptionPolicy"], "PreemptLowerPriority");
    }
}
