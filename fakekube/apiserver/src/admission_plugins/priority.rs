//! The `Priority` admission plugin (plugin/pkg/admission/priority) and the system
//! PriorityClasses the API server creates at start (its `scheduling/bootstrap-system-priority-classes`
//! post-start hook).
//!
//! A new pod's `priority` and `preemptionPolicy` come from the PriorityClass it names, or from
//! the global default class when it names none (whose name it then gets), or are 0 and
//! `PreemptLowerPriority` when there is none; a class that does not exist, or a pod that sets a
//! value other than the one computed, is refused. A second global default class is refused.

use super::{Lookup, forbidden, spec_mut};
#[cfg(test)]
use crate::defaults::system_priority_classes;
use crate::status::ApiError;
use serde_json::{Value, json};

/// The global default class: the one of lowest value when a race made several.
fn default_class(cluster: &dyn Lookup) -> Option<std::sync::Arc<Value>> {
    cluster
        .list("scheduling.k8s.io", "priorityclasses")
        .into_iter()
        .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .min_by_key(|c| c.get("value").and_then(Value::as_i64).unwrap_or(0))
}

/// Admits a new pod; the reason for a refusal otherwise.
pub(super) fn admit(cluster: &dyn Lookup, pod: &mut Value) -> Result<(), String> {
    let Some(spec) = spec_mut(pod) else {
        return Ok(());
    };
    let named = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let (priority, policy) = match named {
        Some(name) => {
            let class = cluster
                .get("scheduling.k8s.io", "priorityclasses", "", &name)
                .ok_or_else(|| format!("no PriorityClass with name {name} was found"))?;
            (
                class.get("value").and_then(Value::as_i64).unwrap_or(0),
                class
                    .get("preemptionPolicy")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            )
        }
        None => match default_class(cluster) {
            Some(class) => {
                if let Some(name) = class.pointer("/metadata/name") {
                    spec.insert("priorityClassName".into(), name.clone());
                }
                (
                    class.get("value").and_then(Value::as_i64).unwrap_or(0),
                    class
                        .get("preemptionPolicy")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                )
            }
            None => (0, Some("PreemptLowerPriority".to_string())),
        },
    };
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != priority
    {
        return Err(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
        ));
    }
    spec.insert("priority".into(), json!(priority));
    if let Some(policy) = policy {
        if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
            && given != policy
        {
            return Err(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            ));
        }
        spec.insert("preemptionPolicy".into(), json!(policy));
    }
    Ok(())
}

/// The plugin's check of a PriorityClass written (`validatePriorityClass`): only one class may
/// be the global default.
pub(crate) fn validate(cluster: &dyn Lookup, class: &Value, update: bool) -> Result<(), ApiError> {
    if class.get("globalDefault").and_then(Value::as_bool) != Some(true) {
        return Ok(());
    }
    let name = class
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    match default_class(cluster) {
        Some(other)
            if !update || other.pointer("/metadata/name").and_then(Value::as_str) != Some(name) =>
        {
            let other_name = other
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let mut e = forbidden(
                "priorityclasses.scheduling.k8s.io",
                name,
                &format!(
                    "PriorityClass {other_name} is already marked as default. Only one default can exist"
                ),
            );
            e.details = Some(Box::new(
                json!({ "name": name, "group": "scheduling.k8s.io", "kind": "priorityclasses" }),
            ));
            Err(e)
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    struct Classes(Vec<Value>);

    impl Lookup for Classes {
        fn get(&self, _: &str, _: &str, _: &str, name: &str) -> Option<Arc<Value>> {
            self.0
                .iter()
                .find(|c| c["metadata"]["name"] == name)
                .cloned()
                .map(Arc::new)
        }
        fn list(&self, _: &str, _: &str) -> Vec<Arc<Value>> {
            self.0.iter().cloned().map(Arc::new).collect()
        }
    }

    #[test]
    fn a_pod_naming_a_class_gets_its_value_and_policy() {
        let classes = Classes(system_priority_classes());
        let mut pod = json!({ "spec": { "priorityClassName": "system-node-critical" } });
        admit(&classes, &mut pod).expect("admitted");
        assert_eq!(pod["spec"]["priority"], 2_000_001_000);
        assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    }

    #[test]
    fn a_pod_naming_no_class_gets_the_global_default_or_zero() {
        let mut pod = json!({ "spec": {} });
        admit(&Classes(Vec::new()), &mut pod).expect("admitted");
        assert_eq!(pod["spec"]["priority"], 0);
        assert!(pod["spec"].get("priorityClassName").is_none());
        let classes = Classes(vec![json!({
            "metadata": { "name": "low" }, "value": -5, "globalDefault": true, "preemptionPolicy": "Never",
        })]);
        let mut pod = json!({ "spec": {} });
        admit(&classes, &mut pod).expect("admitted");
        assert_eq!(pod["spec"]["priorityClassName"], "low");
        assert_eq!(pod["spec"]["priority"], -5);
        assert_eq!(pod["spec"]["preemptionPolicy"], "Never");
    }

    #[test]
    fn a_missing_class_or_a_priority_of_the_pods_own_is_refused() {
        let classes = Classes(system_priority_classes());
        let mut missing = json!({ "spec": { "priorityClassName": "high" } });
        assert_eq!(
            admit(&classes, &mut missing),
            Err("no PriorityClass with name high was found".into())
        );
        let mut own = json!({ "spec": { "priority": 7 } });
        assert_eq!(
            admit(&classes, &mut own),
            Err("the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name".into())
        );
    }
}
