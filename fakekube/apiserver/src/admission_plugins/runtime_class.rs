//! The `RuntimeClass` admission plugin (plugin/pkg/admission/runtimeclass): a pod naming a
//! RuntimeClass needs it to exist; the class's `overhead.podFixed` becomes the pod's
//! `overhead` (a pod that sets a different one is refused), its `scheduling.nodeSelector` is
//! merged into the pod's (a key the pod sets otherwise is refused) and its
//! `scheduling.tolerations` merged with the pod's. A pod that sets an `overhead` with no class
//! defining one is refused (the plugin's validation).

use super::{Lookup, spec_mut, tolerations};
use crate::defaults::quantity;
use serde_json::{Map, Value, json};

/// Admits a new pod; the reason for a refusal otherwise.
pub(super) fn admit(cluster: &dyn Lookup, pod: &mut Value) -> Result<(), String> {
    let Some(spec) = spec_mut(pod) else {
        return Ok(());
    };
    let class = match spec.get("runtimeClassName").and_then(Value::as_str) {
        None => None,
        Some(name) => Some(
            cluster
                .get("node.k8s.io", "runtimeclasses", "", name)
                .ok_or_else(|| format!("pod rejected: RuntimeClass \"{name}\" not found"))?,
        ),
    };
    let fixed = class
        .as_deref()
        .and_then(|c| c.pointer("/overhead/podFixed"))
        .filter(|f| !f.is_null());
    let own = spec.get("overhead").filter(|o| !o.is_null());
    match (fixed, own) {
        (Some(fixed), Some(own)) if !quantity::same_list(fixed, own) => {
            return Err(
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".into(),
            );
        }
        (Some(fixed), _) => {
            spec.insert("overhead".into(), fixed.clone());
        }
        (None, Some(_)) => {
            return Err(
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
                    .into(),
            );
        }
        (None, None) => {}
    }
    if let Some(scheduling) = class
        .as_deref()
        .and_then(|c| c.get("scheduling"))
        .filter(|s| s.is_object())
    {
        schedule(spec, scheduling)?;
    }
    Ok(())
}

/// Merges the class's `scheduling` into the pod's node selector and tolerations.
fn schedule(spec: &mut Map<String, Value>, scheduling: &Value) -> Result<(), String> {
    if let Some(wanted) = scheduling.get("nodeSelector").and_then(Value::as_object) {
        let selector = spec.entry("nodeSelector").or_insert_with(|| json!({}));
        if selector.is_null() {
            *selector = json!({});
        }
        if let Some(selector) = selector.as_object_mut() {
            // Go ranges over the class's map in no order; keys are checked in order here.
            for (key, value) in wanted {
                let class_value = value.as_str().unwrap_or("");
                match selector.get(key).and_then(Value::as_str) {
                    Some(pod_value) if pod_value != class_value => {
                        return Err(format!(
                            "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {class_value}; pod.spec.nodeSelector[{key}] = {pod_value}"
                        ));
                    }
                    _ => {
                        selector.insert(key.clone(), value.clone());
                    }
                }
            }
        }
    }
    let class_tolerations = scheduling
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let pod_tolerations = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let merged = tolerations::merge(&pod_tolerations, &class_tolerations);
    if merged.is_empty() {
        spec.remove("tolerations");
    } else {
        spec.insert("tolerations".into(), Value::Array(merged));
    }
    Ok(())
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

    fn kata() -> Classes {
        Classes(vec![json!({
            "metadata": { "name": "kata" },
            "handler": "kata",
            "overhead": { "podFixed": { "cpu": "250m", "memory": "120Mi" } },
            "scheduling": {
                "nodeSelector": { "runtime": "kata" },
                "tolerations": [ { "key": "kata", "operator": "Exists", "effect": "NoSchedule" } ],
            },
        })])
    }

    #[test]
    fn a_pod_naming_a_missing_class_is_refused() {
        let mut pod = json!({ "spec": { "runtimeClassName": "gvisor" } });
        assert_eq!(
            admit(&kata(), &mut pod),
            Err("pod rejected: RuntimeClass \"gvisor\" not found".into())
        );
    }

    #[test]
    fn a_class_gives_its_overhead_node_selector_and_tolerations() {
        let mut pod = json!({ "spec": {
            "runtimeClassName": "kata",
            "nodeSelector": { "zone": "a" },
            "tolerations": [ { "key": "x", "operator": "Exists" } ],
        } });
        admit(&kata(), &mut pod).expect("admitted");
        assert_eq!(
            pod["spec"]["overhead"],
            json!({ "cpu": "250m", "memory": "120Mi" })
        );
        assert_eq!(
            pod["spec"]["nodeSelector"],
            json!({ "zone": "a", "runtime": "kata" })
        );
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                { "key": "x", "operator": "Exists" },
                { "key": "kata", "operator": "Exists", "effect": "NoSchedule" },
            ])
        );
    }

    #[test]
    fn an_equal_overhead_passes_and_a_different_one_or_one_without_a_class_is_refused() {
        let mut same = json!({ "spec": { "runtimeClassName": "kata", "overhead": { "cpu": "0.25", "memory": "125829120" } } });
        assert!(admit(&kata(), &mut same).is_ok());
        let mut other =
            json!({ "spec": { "runtimeClassName": "kata", "overhead": { "cpu": "1" } } });
        assert_eq!(
            admit(&kata(), &mut other),
            Err(
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".into()
            )
        );
        let mut classless = json!({ "spec": { "overhead": { "cpu": "1" } } });
        assert_eq!(
            admit(&kata(), &mut classless),
            Err("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead".into())
        );
    }

    #[test]
    fn a_node_selector_conflicting_with_the_class_is_refused() {
        let mut pod = json!({ "spec": { "runtimeClassName": "kata", "nodeSelector": { "runtime": "runc" } } });
        assert_eq!(
            admit(&kata(), &mut pod),
            Err("conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; pod.spec.nodeSelector[runtime] = runc".into())
        );
    }
}
