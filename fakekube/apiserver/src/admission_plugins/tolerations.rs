//! The `DefaultTolerationSeconds` admission plugin, and the merge of toleration lists the
//! `RuntimeClass` plugin uses (pkg/util/tolerations' `MergeTolerations`).
//!
//! A pod that does not tolerate `node.kubernetes.io/not-ready:NoExecute` (or
//! `unreachable`) gets a toleration of it for 300 s (the API server's
//! `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`),
//! appended after its own. A toleration with an empty key or an empty effect counts as one.

use super::spec_mut;
use serde_json::{Value, json};

/// The taints tolerated by default.
const TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];
/// How long, by default.
const SECONDS: u64 = 300;

/// Adds the default tolerations the pod lacks.
pub(super) fn admit(pod: &mut Value) {
    let Some(spec) = spec_mut(pod) else {
        return;
    };
    let list = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = list.as_array_mut() else {
        return;
    };
    let field = |t: &Value, k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let missing: Vec<&str> = TAINTS
        .into_iter()
        .filter(|taint| {
            !list.iter().any(|t| {
                let (key, effect) = (field(t, "key"), field(t, "effect"));
                (key == *taint || key.is_empty()) && (effect == "NoExecute" || effect.is_empty())
            })
        })
        .collect();
    for taint in missing {
        list.push(json!({
            "key": taint,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": SECONDS,
        }));
    }
}

/// Merges two toleration lists as `MergeTolerations` does: every toleration of both, in order,
/// but one that another tolerates a superset of (the first of equal ones kept).
pub(super) fn merge(first: &[Value], second: &[Value]) -> Vec<Value> {
    let all: Vec<&Value> = first.iter().chain(second).collect();
    let mut merged: Vec<Value> = Vec::new();
    for (i, t) in all.iter().enumerate() {
        if merged.iter().any(|m| is_superset(m, t)) {
            continue;
        }
        if all[i + 1..]
            .iter()
            .any(|later| !same(t, later) && is_superset(later, t))
        {
            continue;
        }
        merged.push((*t).clone());
    }
    merged
}

/// A toleration's fields, with the defaults Go's zero values give them.
struct Fields {
    key: String,
    operator: String,
    value: String,
    effect: String,
    seconds: Option<i64>,
}

fn fields(t: &Value) -> Fields {
    let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Fields {
        key: text("key"),
        operator: text("operator"),
        value: text("value"),
        effect: text("effect"),
        seconds: t.get("tolerationSeconds").and_then(Value::as_i64),
    }
}

fn same(a: &Value, b: &Value) -> bool {
    let (a, b) = (fields(a), fields(b));
    a.key == b.key
        && a.operator == b.operator
        && a.value == b.value
        && a.effect == b.effect
        && a.seconds == b.seconds
}

/// Whether `ss` tolerates everything `t` does.
fn is_superset(ss: &Value, t: &Value) -> bool {
    if same(ss, t) {
        return true;
    }
    let (ss, t) = (fields(ss), fields(t));
    if t.key != ss.key && (!ss.key.is_empty() || ss.operator != "Exists") {
        return false;
    }
    if t.effect != ss.effect && !ss.effect.is_empty() {
        return false;
    }
    if ss.effect == "NoExecute"
        && let Some(limit) = ss.seconds
        && t.seconds.is_none_or(|s| s > limit)
    {
        return false;
    }
    match ss.operator.as_str() {
        "Equal" | "" => t.operator == "Equal" && t.value == ss.value,
        "Exists" => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_gets_both_default_tolerations_after_its_own() {
        let mut pod =
            json!({ "spec": { "tolerations": [ { "key": "gpu", "operator": "Exists" } ] } });
        admit(&mut pod);
        let list = pod["spec"]["tolerations"].as_array().expect("list");
        assert_eq!(list.len(), 3);
        assert_eq!(list[0]["key"], "gpu");
        assert_eq!(
            list[1],
            json!({ "key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 })
        );
        assert_eq!(list[2]["key"], "node.kubernetes.io/unreachable");
    }

    #[test]
    fn a_pod_tolerating_everything_gets_no_default_toleration() {
        let mut pod = json!({ "spec": { "tolerations": [ { "operator": "Exists" } ] } });
        admit(&mut pod);
        assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(1));
        let mut own = json!({ "spec": { "tolerations": [
            { "key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5 },
        ] } });
        admit(&mut own);
        let list = own["spec"]["tolerations"].as_array().expect("list");
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["tolerationSeconds"], 5);
        assert_eq!(list[1]["key"], "node.kubernetes.io/not-ready");
    }

    #[test]
    fn merging_keeps_the_superset_of_two_tolerations() {
        let pods =
            [json!({ "key": "a", "operator": "Equal", "value": "x", "effect": "NoSchedule" })];
        let class = [
            json!({ "key": "a", "operator": "Exists" }),
            json!({ "key": "b", "operator": "Exists" }),
        ];
        assert_eq!(merge(&pods, &class), class.to_vec());
        let equal = [json!({ "key": "b", "operator": "Exists" })];
        assert_eq!(merge(&equal, &class[1..]), equal.to_vec());
    }
}
