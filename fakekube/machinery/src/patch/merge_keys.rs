//! [`MergeKeys`]: which lists a strategic merge patch (or an apply) merges, and by which key, in
//! place of the `patchStrategy`/`patchMergeKey` tags of the Go API types (and, for custom
//! resources, of the `x-kubernetes-list-type` markers of their schemas).

use std::collections::BTreeMap;

use serde_json::Value;

/// How a strategic merge patch treats the list at one path of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListStrategy {
    /// The list holds objects, merged element by element by the value of this key
    /// (`patchStrategy:"merge"` with a `patchMergeKey`).
    MergeByKey(String),
    /// The list holds primitives and a patch adds to it as a set union
    /// (`patchStrategy:"merge"` without a key, such as `metadata.finalizers`).
    MergePrimitives,
}

/// `keys` with the mergeable lists of a pod spec at `at` (`spec` in a Pod, `spec.template.spec`
/// in the workload kinds that hold a pod template).
fn pod_spec_keys(mut keys: MergeKeys, at: &str) -> MergeKeys {
    keys = keys
        .with_key(&format!("{at}.volumes"), "name")
        .with_key(&format!("{at}.imagePullSecrets"), "name")
        .with_key(&format!("{at}.hostAliases"), "ip")
        .with_key(&format!("{at}.topologySpreadConstraints"), "topologyKey")
        .with_key(&format!("{at}.schedulingGates"), "name")
        .with_key(&format!("{at}.resourceClaims"), "name");
    for containers in ["initContainers", "containers", "ephemeralContainers"] {
        let list = format!("{at}.{containers}");
        keys = keys
            .with_key(&format!("{list}[].ports"), "containerPort")
            .with_key(&format!("{list}[].env"), "name")
            .with_key(&format!("{list}[].volumeMounts"), "mountPath")
            .with_key(&format!("{list}[].volumeDevices"), "devicePath")
            .with_key(&list, "name");
    }
    keys
}

/// The lists of one kind that a strategic merge patch merges instead of replacing.
///
/// A path names a list field from the object's root: field names joined by `.`, with `[]`
/// after a list field to step into its elements, as in `spec.containers[].ports`. A list whose
/// path is not in the table is atomic: a patch replaces it whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeKeys {
    /// The strategy of each mergeable list, by path.
    pub(super) lists: BTreeMap<String, ListStrategy>,
}

impl MergeKeys {
    /// Returns a table where every list is atomic, as for custom resources (kubectl sends them
    /// merge patches, and the API server refuses strategic merge for them).
    pub fn none() -> Self {
        Self::default()
    }

    /// Returns the merge keys of a built-in kind, from the `patchMergeKey`/`patchStrategy`
    /// tags of its Kubernetes API types.
    ///
    /// `kind` is the object's `kind` (`Pod`, `Service`, `PersistentVolumeClaim`,
    /// `ServiceAccount`, `Namespace`...), compared without regard to case. Every kind gets the
    /// `metadata` lists (`ownerReferences` by `uid`, `finalizers` as a set); kinds without
    /// other mergeable lists (`Secret`, `ConfigMap`, `Event`, `NetworkPolicy`, and any kind
    /// not listed here) get only those.
    pub fn for_core_kind(kind: &str) -> Self {
        let mut keys = Self::none()
            .with_list("metadata.finalizers", ListStrategy::MergePrimitives)
            .with_key("metadata.ownerReferences", "uid");
        let kind = kind.to_ascii_lowercase();
        match kind.as_str() {
            "pod" => {
                keys = pod_spec_keys(keys, "spec")
                    .with_key("status.conditions", "type")
                    .with_key("status.podIPs", "ip")
                    .with_key("status.hostIPs", "ip")
                    .with_key("status.resourceClaimStatuses", "name");
                for statuses in [
                    "initContainerStatuses",
                    "containerStatuses",
                    "ephemeralContainerStatuses",
                ] {
                    keys = keys
                        .with_key(&format!("status.{statuses}[].volumeMounts"), "mountPath")
                        .with_key(
                            &format!("status.{statuses}[].allocatedResourcesStatus"),
                            "name",
                        );
                }
            }
            "deployment"
            | "replicaset"
            | "statefulset"
            | "daemonset"
            | "replicationcontroller"
            | "job" => {
                keys =
                    pod_spec_keys(keys, "spec.template.spec").with_key("status.conditions", "type");
            }
            "cronjob" => {
                keys = pod_spec_keys(keys, "spec.jobTemplate.spec.template.spec");
            }
            "node" => {
                keys = keys
                    .with_key("status.conditions", "type")
                    .with_key("status.addresses", "type");
            }
            "service" => {
                keys = keys
                    .with_key("spec.ports", "port")
                    .with_key("status.conditions", "type");
            }
            "persistentvolumeclaim" | "namespace" => {
                keys = keys.with_key("status.conditions", "type");
            }
            "serviceaccount" => {
                keys = keys.with_key("secrets", "name");
            }
            _ => {}
        }
        keys
    }

    /// Returns the merge keys server-side apply uses for a custom kind, from its CRD schema:
    /// a list of `x-kubernetes-list-type: set` merges as a set, one of `map` by its single
    /// `x-kubernetes-list-map-keys` key; every other list is atomic.
    pub fn from_schema(schema: &Value) -> Self {
        let mut keys = Self::none()
            .with_list("metadata.finalizers", ListStrategy::MergePrimitives)
            .with_key("metadata.ownerReferences", "uid");
        schema_lists(schema, "", &mut keys);
        keys
    }

    /// Returns the table with the list at `path` given `strategy`, replacing any earlier one.
    pub fn with_list(mut self, path: &str, strategy: ListStrategy) -> Self {
        self.lists.insert(path.to_owned(), strategy);
        self
    }

    /// Returns the table with the list at `path` merged by the object key `key`.
    pub fn with_key(self, path: &str, key: &str) -> Self {
        self.with_list(path, ListStrategy::MergeByKey(key.to_owned()))
    }

    /// Returns the strategy of the list at `path`, or `None` when that list is atomic.
    pub fn strategy(&self, path: &str) -> Option<&ListStrategy> {
        self.lists.get(path)
    }

    /// Returns the merge key of the list at `path`, if it merges by one.
    pub(super) fn merge_key(&self, path: &str) -> Option<&str> {
        match self.strategy(path) {
            Some(ListStrategy::MergeByKey(key)) => Some(key),
            _ => None,
        }
    }
}

/// Adds the mergeable lists of a schema node at `path` and below it.
fn schema_lists(node: &Value, path: &str, keys: &mut MergeKeys) {
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            schema_lists(sub, &child_path(path, name), keys);
        }
    }
    let Some(items) = node.get("items").filter(|i| i.is_object()) else {
        return;
    };
    match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => *keys = std::mem::take(keys).with_list(path, ListStrategy::MergePrimitives),
        Some("map") => {
            let map_keys: Vec<&str> = node
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let [key] = map_keys.as_slice() {
                *keys = std::mem::take(keys).with_key(path, key);
            }
        }
        _ => {}
    }
    schema_lists(items, &format!("{path}[]"), keys);
}

/// Returns a map's key under the path of the map, in [`MergeKeys`] syntax.
pub(super) fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::patch::{PatchKind, apply_patch};

    // --- merge keys -------------------------------------------------------------------------

    #[test]
    fn core_kinds_have_the_merge_keys_of_their_api_types() {
        let pod = MergeKeys::for_core_kind("Pod");
        for (path, key) in [
            ("spec.containers", "name"),
            ("spec.initContainers", "name"),
            ("spec.ephemeralContainers", "name"),
            ("spec.containers[].ports", "containerPort"),
            ("spec.containers[].env", "name"),
            ("spec.containers[].volumeMounts", "mountPath"),
            ("spec.initContainers[].volumeDevices", "devicePath"),
            ("spec.volumes", "name"),
            ("spec.imagePullSecrets", "name"),
            ("status.conditions", "type"),
            ("metadata.ownerReferences", "uid"),
        ] {
            assert_eq!(pod.merge_key(path), Some(key), "{path}");
        }
        assert_eq!(
            pod.strategy("metadata.finalizers"),
            Some(&ListStrategy::MergePrimitives)
        );
        assert_eq!(pod.strategy("spec.tolerations"), None);
        assert_eq!(pod.strategy("spec.containers[].args"), None);

        let svc = MergeKeys::for_core_kind("service");
        assert_eq!(svc.merge_key("spec.ports"), Some("port"));
        assert_eq!(svc.merge_key("status.conditions"), Some("type"));
        assert_eq!(
            MergeKeys::for_core_kind("PersistentVolumeClaim").merge_key("status.conditions"),
            Some("type")
        );
        assert_eq!(
            MergeKeys::for_core_kind("Namespace").merge_key("status.conditions"),
            Some("type")
        );
        assert_eq!(
            MergeKeys::for_core_kind("ServiceAccount").merge_key("secrets"),
            Some("name")
        );
        assert_eq!(
            MergeKeys::for_core_kind("ServiceAccount").strategy("imagePullSecrets"),
            None
        );
        for kind in ["Secret", "Event", "NetworkPolicy", "ConfigMap"] {
            let keys = MergeKeys::for_core_kind(kind);
            assert_eq!(
                keys.merge_key("metadata.ownerReferences"),
                Some("uid"),
                "{kind}"
            );
            assert_eq!(keys.lists.len(), 2, "{kind}");
        }
    }

    #[test]
    fn server_side_apply_merges_the_set_and_map_lists_of_a_crd_schema() {
        let schema = json!({ "type": "object", "properties": { "spec": { "type": "object", "properties": {
            "tags": { "type": "array", "x-kubernetes-list-type": "set", "items": { "type": "integer" } },
            "plain": { "type": "array", "items": { "type": "integer" } },
            "ports": { "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": { "type": "object", "properties": { "name": { "type": "string" }, "n": { "type": "integer" } } } },
        } } } });
        let keys = MergeKeys::from_schema(&schema);
        let live =
            json!({ "spec": { "tags": [2], "plain": [2], "ports": [{ "name": "a", "n": 1 }] } });
        let applied =
            json!({ "spec": { "tags": [3], "plain": [3], "ports": [{ "name": "b", "n": 2 }] } });
        let out = apply_patch(PatchKind::Apply, &live, &applied, &keys).expect("applies");
        assert_eq!(out["spec"]["tags"], json!([2, 3]));
        assert_eq!(out["spec"]["plain"], json!([3]));
        assert_eq!(
            out["spec"]["ports"],
            json!([{ "name": "a", "n": 1 }, { "name": "b", "n": 2 }])
        );
    }

    #[test]
    fn no_merge_keys_makes_every_list_atomic() {
        let keys = MergeKeys::none();
        assert_eq!(keys.strategy("metadata.finalizers"), None);
        let out = apply_patch(
            PatchKind::StrategicMerge,
            &json!({"metadata": {"finalizers": ["a"]}, "spec": {"items": [{"name": "x", "v": 1}]}}),
            &json!({"metadata": {"finalizers": ["b"]}, "spec": {"items": [{"name": "x"}]}}),
            &keys,
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["b"]}, "spec": {"items": [{"name": "x"}]}})
        );
    }
}
