//! Strategic merge patch, [`PatchKind::StrategicMerge`](super::PatchKind::StrategicMerge): the
//! merge of a patch into a live object, list by list as [`MergeKeys`] says.

use serde_json::{Map, Value};

use super::directives::{
    DELETE_FROM_PRIMITIVE_LIST, DIRECTIVE_MARKER, RETAIN_KEYS, SET_ELEMENT_ORDER,
    apply_retain_keys, parallel_list_field, strip_directives, strip_leftover_directives,
    validate_patch_with_set_order,
};
use super::error::{PatchError, check_depth, json_type_name};
use super::lists::{ElementKind, merge_key_value, normalize_element_order, partition_by_presence};
use super::merge_keys::{ListStrategy, MergeKeys, child_path};

/// Applies a strategic merge patch to a copy of `target`.
pub(super) fn strategic_merge(
    target: &Value,
    patch: &Value,
    merge_keys: &MergeKeys,
) -> Result<Value, PatchError> {
    let Value::Object(patch_map) = patch else {
        return Err(PatchError::malformed(format!(
            "a strategic merge patch must be a JSON object, not a {}",
            json_type_name(patch)
        )));
    };
    let original = match target {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let merger = StrategicMerger { keys: merge_keys };
    let mut merged = Value::Object(merger.merge_map(original, patch_map, "", 0)?);
    strip_leftover_directives(&mut merged, 0);
    Ok(merged)
}

/// Expects a list under a directive or a field the directive names.
fn expect_list<'v>(value: &'v Value, what: &str) -> Result<&'v [Value], PatchError> {
    value.as_array().map(Vec::as_slice).ok_or_else(|| {
        PatchError::merge_failed(format!(
            "expected a list for {what}, but received a {}",
            json_type_name(value)
        ))
    })
}

/// Strategic merge of patches into live objects, driven by one [`MergeKeys`] table.
struct StrategicMerger<'k> {
    /// Which lists merge, and how.
    keys: &'k MergeKeys,
}

impl StrategicMerger<'_> {
    /// Merges a patch map into a live map at `path`, honouring the map's directives.
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<Map<String, Value>, PatchError> {
        check_depth(depth)?;
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            return match directive.as_str() {
                Some("replace") => {
                    let mut rest = patch.clone();
                    rest.shift_remove(DIRECTIVE_MARKER);
                    match strip_directives(&Value::Object(rest), depth)? {
                        Some(Value::Object(map)) => Ok(map),
                        _ => Ok(Map::new()),
                    }
                }
                Some("delete") => Ok(Map::new()),
                _ => Err(PatchError::merge_failed(format!(
                    "unknown patch type: {directive} in map: {}",
                    Value::Object(patch.clone())
                ))),
            };
        }

        if let Some(retain) = patch.get(RETAIN_KEYS) {
            apply_retain_keys(&mut original, patch, retain)?;
        }

        let ordered = self.merge_ordered_lists(&mut original, patch, path, depth)?;

        for (key, patch_value) in patch {
            if key == RETAIN_KEYS || key.starts_with(SET_ELEMENT_ORDER) {
                continue;
            }
            let (field, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
                let field =
                    parallel_list_field(key, DELETE_FROM_PRIMITIVE_LIST).ok_or_else(|| {
                        PatchError::malformed("invalid patch format of primitive list")
                    })?;
                (field, true)
            } else {
                (key.as_str(), false)
            };
            if !is_delete_list && ordered.iter().any(|done| done == field) {
                continue;
            }
            if patch_value.is_null() {
                original.shift_remove(field);
                continue;
            }
            let field_path = child_path(path, field);
            let merged = match (original.get_mut(field), patch_value) {
                (None, _) if is_delete_list => continue,
                (None, _) => strip_directives(patch_value, depth + 1)?,
                (Some(Value::Object(live)), Value::Object(patch_map)) => {
                    let live = std::mem::take(live);
                    Some(Value::Object(self.merge_map(
                        live,
                        patch_map,
                        &field_path,
                        depth + 1,
                    )?))
                }
                (Some(Value::Array(live)), Value::Array(patch_list)) => {
                    let live = std::mem::take(live);
                    Some(Value::Array(self.merge_list_field(
                        live,
                        patch_list,
                        &field_path,
                        is_delete_list,
                        depth + 1,
                    )?))
                }
                (Some(_), _) if is_delete_list => continue,
                (Some(_), _) => strip_directives(patch_value, depth + 1)?,
            };
            match merged {
                Some(value) => {
                    original.insert(field.to_owned(), value);
                }
                None => {
                    original.shift_remove(field);
                }
            }
        }
        Ok(original)
    }

    /// Merges every list that has a `$setElementOrder/<field>` directive, then orders it as
    /// the directive says. Returns the fields it handled, which the caller must skip.
    fn merge_ordered_lists(
        &self,
        original: &mut Map<String, Value>,
        patch: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<Vec<String>, PatchError> {
        let mut handled = Vec::new();
        for (key, order) in patch {
            if !key.starts_with(SET_ELEMENT_ORDER) {
                continue;
            }
            let order = expect_list(order, key)?;
            let field = parallel_list_field(key, SET_ELEMENT_ORDER).ok_or_else(|| {
                PatchError::malformed("invalid patch format of setElementOrder list")
            })?;
            let field_path = child_path(path, field);
            let live = original
                .get(field)
                .map(|v| expect_list(v, field))
                .transpose()?;
            let patch_list = patch
                .get(field)
                .map(|v| expect_list(v, field))
                .transpose()?;
            let merge_key = self.keys.merge_key(&field_path);
            if let Some(patch_list) = patch_list {
                validate_patch_with_set_order(patch_list, order, merge_key)?;
            }
            let merged = match (live, patch_list) {
                (None, None) => continue,
                (Some(live), None) => live.to_vec(),
                (None, Some(patch_list)) => {
                    self.merge_list_field(Vec::new(), patch_list, &field_path, false, depth + 1)?
                }
                (Some(live), Some(patch_list)) => {
                    self.merge_list_field(live.to_vec(), patch_list, &field_path, false, depth + 1)?
                }
            };
            let server_order = live.unwrap_or_default();
            let (patch_items, server_only) = partition_by_presence(merged, order, merge_key)?;
            if let Some(key) = merge_key {
                for item in order.iter().chain(&server_only).chain(&patch_items) {
                    merge_key_value(item, key)?;
                }
            }
            let both =
                normalize_element_order(patch_items, server_only, order, server_order, merge_key);
            original.insert(field.to_owned(), Value::Array(both));
            handled.push(field.to_owned());
        }
        Ok(handled)
    }

    /// Merges a patch list into the live list at `path`: element by element when the list
    /// merges (or when the patch is a `$deleteFromPrimitiveList`), replacing it otherwise.
    fn merge_list_field(
        &self,
        original: Vec<Value>,
        patch: &[Value],
        path: &str,
        is_delete_list: bool,
        depth: usize,
    ) -> Result<Vec<Value>, PatchError> {
        check_depth(depth)?;
        match self.keys.strategy(path) {
            Some(strategy) => {
                self.merge_list(original, patch, strategy, path, is_delete_list, depth)
            }
            None if is_delete_list => self.merge_list(
                original,
                patch,
                &ListStrategy::MergePrimitives,
                path,
                true,
                depth,
            ),
            None => match strip_directives(&Value::Array(patch.to_vec()), depth)? {
                Some(Value::Array(items)) => Ok(items),
                _ => Ok(Vec::new()),
            },
        }
    }

    /// Merges two lists of a mergeable field.
    fn merge_list(
        &self,
        mut original: Vec<Value>,
        patch: &[Value],
        strategy: &ListStrategy,
        path: &str,
        is_delete_list: bool,
        depth: usize,
    ) -> Result<Vec<Value>, PatchError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let kind = ElementKind::of_lists(&[original.as_slice(), patch])?;
        if kind != Some(ElementKind::Object) {
            if is_delete_list {
                return Ok(original
                    .into_iter()
                    .filter(|item| !patch.contains(item))
                    .collect());
            }
            let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
            for item in original.iter().chain(patch) {
                if !merged.contains(item) {
                    merged.push(item.clone());
                }
            }
            let (patch_items, server_only) = partition_by_presence(merged, patch, None)?;
            return Ok(normalize_element_order(
                patch_items,
                server_only,
                patch,
                &original,
                None,
            ));
        }

        let ListStrategy::MergeByKey(key) = strategy else {
            return Err(PatchError::merge_failed(format!(
                "cannot merge lists without merge key for {path}"
            )));
        };
        let key = key.as_str();
        let element_path = format!("{path}[]");

        // Special elements first: `$patch: delete` removes, `$patch: replace` replaces.
        let mut plain: Vec<&Value> = Vec::with_capacity(patch.len());
        let mut replace = false;
        for item in patch {
            let Some(directive) = item.get(DIRECTIVE_MARKER) else {
                plain.push(item);
                continue;
            };
            match directive.as_str() {
                Some("delete") => {
                    let value = merge_key_value(item, key)?;
                    original.retain(|live| live.get(key) != Some(value));
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(PatchError::merge_failed(
                        "merging lists cannot yet be specified in the patch",
                    ));
                }
                _ => {
                    return Err(PatchError::merge_failed(format!(
                        "unknown patch type: {directive} in map: {item}"
                    )));
                }
            }
        }
        if replace {
            let mut items = Vec::with_capacity(plain.len());
            for item in plain {
                if let Some(item) = strip_directives(item, depth + 1)? {
                    items.push(item);
                }
            }
            return Ok(items);
        }

        let server_order = original.clone();
        let mut merged = original;
        for item in &plain {
            let value = merge_key_value(item, key)?;
            let found = merged.iter().position(|live| live.get(key) == Some(value));
            match (found, item) {
                (Some(index), Value::Object(patch_map)) => {
                    if let Some(slot) = merged.get_mut(index) {
                        let live = match std::mem::take(slot) {
                            Value::Object(map) => map,
                            _ => Map::new(),
                        };
                        *slot = Value::Object(self.merge_map(
                            live,
                            patch_map,
                            &element_path,
                            depth + 1,
                        )?);
                    }
                }
                _ => {
                    if let Some(item) = strip_directives(item, depth + 1)? {
                        merged.push(item);
                    }
                }
            }
        }
        let patch_order: Vec<Value> = plain.into_iter().cloned().collect();
        let (patch_items, server_only) = partition_by_presence(merged, &patch_order, Some(key))?;
        Ok(normalize_element_order(
            patch_items,
            server_only,
            &patch_order,
            &server_order,
            Some(key),
        ))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::super::directives::{has_directive, strip_directives};
    use super::super::error::MAX_DEPTH;
    use crate::patch::tests::{arb_object, smp};
    use crate::patch::{ListStrategy, MergeKeys, PatchKind, apply_patch};

    // --- strategic merge: maps and plain lists ------------------------------------------------

    #[test]
    fn smp_merges_maps_and_null_deletes_like_merge_patch() {
        let out = smp(
            "Pod",
            json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"b": null, "c": "3"}}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "p", "labels": {"a": "1", "c": "3"}}})
        );
    }

    #[test]
    fn smp_replaces_lists_without_a_merge_key() {
        let out = smp(
            "Pod",
            json!({"spec": {"tolerations": [{"key": "a"}, {"key": "b"}]}}),
            json!({"spec": {"tolerations": [{"key": "c"}]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"tolerations": [{"key": "c"}]}}));
    }

    #[test]
    fn smp_that_is_not_an_object_is_malformed() {
        let err = smp("Pod", json!({}), json!([1])).unwrap_err();
        assert_eq!(err.status_code(), 400);
    }

    // --- strategic merge: keyed lists -------------------------------------------------------

    #[test]
    fn smp_merges_containers_by_name_and_appends_new_ones() {
        let out = smp(
            "Pod",
            json!({"spec": {"containers": [
                {"name": "app", "image": "nginx:1.25", "ports": [{"containerPort": 80}]},
                {"name": "log", "image": "busybox"}
            ]}}),
            json!({"spec": {"containers": [
                {"name": "app", "image": "nginx:1.26"},
                {"name": "new", "image": "alpine"}
            ]}}),
        )
        .unwrap();
        // apimachinery's ordering: the patch's elements in patch order, a live-only element
        // after the patch elements that preceded it in the live list; "new" was in no live
        // list, so it goes before "log".
        assert_eq!(
            out,
            json!({"spec": {"containers": [
                {"name": "app", "image": "nginx:1.26", "ports": [{"containerPort": 80}]},
                {"name": "new", "image": "alpine"},
                {"name": "log", "image": "busybox"}
            ]}})
        );
    }

    #[test]
    fn smp_merges_nested_keyed_lists_by_their_own_keys() {
        let out = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "app",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "ports": [{"containerPort": 80, "name": "http"}],
                "volumeMounts": [{"mountPath": "/data", "name": "data"}]}]}}),
            json!({"spec": {"containers": [{"name": "app",
                "env": [{"name": "B", "value": "3"}],
                "ports": [{"containerPort": 443, "name": "https"}],
                "volumeMounts": [{"mountPath": "/data", "readOnly": true}]}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "app",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}],
                "ports": [{"containerPort": 443, "name": "https"}, {"containerPort": 80, "name": "http"}],
                "volumeMounts": [{"mountPath": "/data", "name": "data", "readOnly": true}]}]}})
        );
    }

    #[test]
    fn smp_patch_delete_removes_the_element_with_that_key() {
        let out = smp(
            "Pod",
            json!({"spec": {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}]}}),
            json!({"spec": {"volumes": [{"$patch": "delete", "name": "a"}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"volumes": [{"name": "b", "emptyDir": {}}]}})
        );
    }

    #[test]
    fn smp_patch_delete_of_a_missing_element_changes_nothing() {
        let target = json!({"spec": {"volumes": [{"name": "b"}]}});
        let out = smp(
            "Pod",
            target.clone(),
            json!({"spec": {"volumes": [{"$patch": "delete", "name": "zzz"}]}}),
        )
        .unwrap();
        assert_eq!(out, target);
    }

    #[test]
    fn smp_patch_replace_in_a_list_replaces_the_list() {
        let out = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}}),
            json!({"spec": {"containers": [{"name": "c", "image": "y"}, {"$patch": "replace"}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "c", "image": "y"}]}})
        );
    }

    #[test]
    fn smp_patch_replace_in_a_map_replaces_the_map() {
        let out = smp(
            "Pod",
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"labels": {"c": "3"}}}));
    }

    #[test]
    fn smp_patch_delete_on_a_map_empties_it() {
        let out = smp(
            "Pod",
            json!({"spec": {"securityContext": {"runAsUser": 1}, "x": 1}}),
            json!({"spec": {"securityContext": {"$patch": "delete"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"securityContext": {}, "x": 1}}));
    }

    #[test]
    fn smp_patch_delete_on_a_missing_map_adds_nothing() {
        let out = smp(
            "Pod",
            json!({"spec": {"x": 1}}),
            json!({"spec": {"securityContext": {"$patch": "delete"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"x": 1}}));
    }

    #[test]
    fn smp_unknown_patch_directive_fails_the_merge() {
        let err = smp(
            "Pod",
            json!({"spec": {"securityContext": {}}}),
            json!({"spec": {"securityContext": {"$patch": "explode"}}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 500);
        let err = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": [{"$patch": "merge"}]}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 500);
    }

    #[test]
    fn smp_list_element_without_its_merge_key_fails_the_merge() {
        let err = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": [{"image": "x"}]}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 500);
        assert!(
            err.message()
                .contains("does not contain declared merge key: name"),
            "{err}"
        );
    }

    #[test]
    fn smp_list_of_lists_does_not_apply() {
        let err = smp(
            "Pod",
            json!({"spec": {"containers": []}}),
            json!({"spec": {"containers": [["a"]]}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
    }

    #[test]
    fn smp_list_with_mixed_element_types_fails_the_merge() {
        let err = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": ["a"]}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 500);
    }

    #[test]
    fn smp_new_keyed_list_is_stored_without_directives() {
        let out = smp(
            "Pod",
            json!({"spec": {}}),
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "a"}],
                "containers": [{"name": "a", "env": [{"name": "X", "value": null}]},
                               {"$patch": "delete", "name": "gone"}]
            }}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "a", "env": [{"name": "X"}]}]}})
        );
    }

    // --- kubectl apply, three-way patches -----------------------------------------------------

    #[test]
    fn kubectl_apply_three_way_patch_to_a_pod_merges_and_strips_directives() {
        let live = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                         "labels": {"app": "web", "old": "x"},
                         "finalizers": ["example.com/keep"]},
            "spec": {
                "containers": [
                    {"name": "app", "image": "nginx:1.25",
                     "env": [{"name": "A", "value": "1"}, {"name": "OLD", "value": "x"}],
                     "ports": [{"containerPort": 80, "protocol": "TCP"}],
                     "terminationMessagePath": "/dev/termination-log"},
                    {"name": "istio-proxy", "image": "proxy"}
                ],
                "volumes": [{"name": "data", "hostPath": {"path": "/srv"}},
                            {"name": "kube-api-access", "projected": {}}],
                "restartPolicy": "Always"
            },
            "status": {"phase": "Running"}
        });
        // What kubectl apply sends after the user changed the image, an env var, a label,
        // added a container and turned the hostPath volume into an emptyDir.
        let patch = json!({
            "metadata": {
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                "labels": {"old": null, "tier": "fe"}
            },
            "spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
                "$setElementOrder/volumes": [{"name": "data"}],
                "containers": [
                    {"$setElementOrder/env": [{"name": "A"}, {"name": "B"}],
                     "env": [{"name": "B", "value": "2"}, {"$patch": "delete", "name": "OLD"}],
                     "image": "nginx:1.26", "name": "app"},
                    {"image": "busybox", "name": "sidecar"}
                ],
                "volumes": [{"$retainKeys": ["emptyDir", "name"], "emptyDir": {},
                             "hostPath": null, "name": "data"}]
            }
        });
        let out = smp("Pod", live, patch).unwrap();
        assert_eq!(
            out,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                             "labels": {"app": "web", "tier": "fe"},
                             "finalizers": ["example.com/keep"],
                             "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "nginx:1.26",
                         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "ports": [{"containerPort": 80, "protocol": "TCP"}],
                         "terminationMessagePath": "/dev/termination-log"},
                        {"image": "busybox", "name": "sidecar"},
                        {"name": "istio-proxy", "image": "proxy"}
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}},
                                {"name": "kube-api-access", "projected": {}}],
                    "restartPolicy": "Always"
                },
                "status": {"phase": "Running"}
            })
        );
        assert!(!has_directive(&out));
    }

    #[test]
    fn kubectl_apply_three_way_patch_to_a_service_merges_ports_by_port() {
        let live = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "clusterIP": "10.0.0.10",
                "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
                          {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": 9090}],
                "selector": {"app": "web", "old": "x"},
                "type": "ClusterIP"
            }
        });
        let patch = json!({
            "spec": {
                "$setElementOrder/ports": [{"port": 443}, {"port": 80}],
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443},
                          {"port": 80, "targetPort": 8081},
                          {"$patch": "delete", "port": 9090}],
                "selector": {"old": null}
            }
        });
        let out = smp("Service", live, patch).unwrap();
        assert_eq!(
            out["spec"],
            json!({
                "clusterIP": "10.0.0.10",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443},
                          {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8081}],
                "selector": {"app": "web"},
                "type": "ClusterIP"
            })
        );
        assert!(!has_directive(&out));
    }

    #[test]
    fn smp_strips_directives_the_live_object_carried() {
        let out = smp(
            "Pod",
            json!({"spec": {"$setElementOrder/containers": [], "x": {"$retainKeys": []}}}),
            json!({"metadata": {"name": "p"}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"x": {}}, "metadata": {"name": "p"}}));
    }

    #[test]
    fn smp_patch_nested_up_to_the_limit_is_applied() {
        let mut patch = json!({"leaf": 1});
        for _ in 0..(MAX_DEPTH - 1) {
            patch = json!({ "a": patch });
        }
        let out = smp("Pod", json!({}), patch.clone()).unwrap();
        assert_eq!(out, patch);
        // Onto a live object just as deep, every level goes through the map merge.
        let out = smp("Pod", patch.clone(), patch.clone()).unwrap();
        assert_eq!(out, patch);
        let deeper = json!({"a": {"a": patch}});
        assert_eq!(
            smp("Pod", json!({}), deeper).unwrap_err().status_code(),
            400
        );
    }

    proptest! {
        // Failing cases are shrunk and printed; no regression file is written beside the source.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn strategic_merge_patches_never_panic_and_leave_no_directives(
            target in arb_object(),
            patch in arb_object(),
        ) {
            let keys = MergeKeys::for_core_kind("Pod")
                .with_key("spec.containers", "name")
                .with_key("spec.a", "name")
                .with_list("spec.finalizers", ListStrategy::MergePrimitives);
            let clean_target = strip_directives(&target, 0).unwrap().unwrap();
            for kind in [PatchKind::StrategicMerge, PatchKind::Apply] {
                if let Ok(out) = apply_patch(kind, &clean_target, &patch, &keys) {
                    prop_assert!(!has_directive(&out), "{}", out);
                }
            }
        }
    }
}
