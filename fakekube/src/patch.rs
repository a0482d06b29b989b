//! The four bodies the PATCH verb accepts, applied to a stored object.
//!
//! The caller parses the request body (JSON, or YAML for apply) and hands this module the stored
//! object and the parsed patch; [`apply_patch`] returns the patched object or a [`PatchError`]
//! that says which HTTP status the API server would answer.
//!
//! - [`PatchKind::Merge`]: JSON merge patch (RFC 7386).
//! - [`PatchKind::Json`]: JSON patch (RFC 6902), through the `json-patch` crate.
//! - [`PatchKind::StrategicMerge`]: the strategic merge patch of apimachinery's `strategicpatch`
//!   package, with its `$patch`, `$retainKeys`, `$setElementOrder/…` and
//!   `$deleteFromPrimitiveList/…` directives. Which lists merge, and by which key, comes from a
//!   [`MergeKeys`] table instead of Go struct tags.
//! - [`PatchKind::Apply`]: a simplified server-side apply (see [`PatchKind::Apply`] for what is
//!   left out).
//!
//! # Known limitations
//!
//! - JSON patch operations are not counted (the API server refuses more than 10 000 with 413).
//! - An unknown JSON patch `op` is refused as malformed (400) when the patch is read; the API
//!   server reads it and fails while applying it (422).
//! - Strategic merge patch errors keep the API server's status codes, but their messages are
//!   this module's own wording (values print as JSON, not as Go maps).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The deepest nesting of objects and arrays a merge or strategic merge patch may have.
///
/// The recursive merges below use one or two stack frames per level; the bound keeps a hostile
/// patch from exhausting a worker thread's stack. It is above the 128 levels `serde_json` parses.
const MAX_DEPTH: usize = 200;

/// The key that carries a `$patch` directive in a map or in a list element.
const DIRECTIVE_MARKER: &str = "$patch";
/// The key of the `$retainKeys` directive (the keys a map keeps).
const RETAIN_KEYS: &str = "$retainKeys";
/// The prefix of the `$setElementOrder/<field>` parallel list.
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
/// The prefix of the `$deleteFromPrimitiveList/<field>` parallel list.
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// The message the API server puts in a 422 Status built from a patch failure: the details are
/// dropped, only this sentence reaches the client.
const INVALID_STATUS_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// One of the patch formats of the PATCH verb, named by the request's `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PatchKind {
    /// `application/merge-patch+json`: JSON merge patch (RFC 7386). `null` deletes a key,
    /// objects merge recursively, anything else (lists included) replaces.
    Merge,
    /// `application/json-patch+json`: JSON patch (RFC 6902), a list of
    /// add/remove/replace/move/copy/test operations applied all-or-nothing.
    Json,
    /// `application/strategic-merge-patch+json`: what kubectl sends for built-in kinds; lists
    /// with a merge key merge element by element. Only for built-in kinds: the caller answers
    /// 415 for custom resources, as the API server does.
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply. The body is the full intended
    /// object, merged here into the live object as a strategic merge patch with the same
    /// [`MergeKeys`] (lists with a key merge, atomic lists are replaced), then `apiVersion`,
    /// `kind`, `metadata.name` and `metadata.namespace` are taken from the applied object.
    /// Field ownership is the store's next step (`managed_fields::apply`: managers,
    /// conflicts, `force`, and removing the fields the applier dropped since its last apply).
    /// When there is no live object the caller creates the applied object as it is.
    Apply,
}

impl PatchKind {
    /// Every patch kind, in the order the API server lists accepted media types.
    pub(crate) const ALL: [PatchKind; 4] = [
        PatchKind::Json,
        PatchKind::Merge,
        PatchKind::StrategicMerge,
        PatchKind::Apply,
    ];

    /// Returns the patch kind a `Content-Type` header names, or `None` for any other media type.
    ///
    /// Parameters such as `; charset=utf-8` are ignored and the media type is compared without
    /// regard to case, as media types are.
    pub(crate) fn from_content_type(ct: &str) -> Option<Self> {
        let essence = ct.split(';').next().unwrap_or_default().trim();
        Self::ALL
            .into_iter()
            .find(|kind| kind.content_type().eq_ignore_ascii_case(essence))
    }

    /// Returns the media type of this patch kind, as a `Content-Type` header spells it.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            PatchKind::Merge => "application/merge-patch+json",
            PatchKind::Json => "application/json-patch+json",
            PatchKind::StrategicMerge => "application/strategic-merge-patch+json",
            PatchKind::Apply => "application/apply-patch+yaml",
        }
    }
}

/// Why a patch could not be applied, sorted by the HTTP status the API server answers.
///
/// [`Display`](std::fmt::Display) gives the detailed message; [`PatchError::status_message`]
/// gives what the API server would put in the `metav1.Status` it returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PatchError {
    /// The body is not a patch of its kind: a JSON patch that is not a list of operations, a
    /// strategic merge patch that is not an object, a badly formed `$retainKeys`,
    /// `$setElementOrder` or `$deleteFromPrimitiveList` directive. 400 BadRequest.
    #[error("{message}")]
    Malformed {
        /// What is wrong with the patch.
        message: String,
    },
    /// The patch is well formed but does not apply to this object: a JSON patch `test` that
    /// fails, a path that does not exist, a list of lists in a strategic merge, a result that
    /// is not an object. 422 Invalid.
    #[error("{message}")]
    DoesNotApply {
        /// Why the patch does not apply.
        message: String,
    },
    /// The strategic merge failed on the patch's content in a way the API server does not
    /// classify, so it answers 500 InternalError: a list element without its merge key, list
    /// elements of different types, an unknown `$patch` value, a `$setElementOrder` list that
    /// does not match the patch list.
    #[error("{message}")]
    MergeFailed {
        /// Why the merge failed.
        message: String,
    },
}

impl PatchError {
    /// Builds a [`PatchError::Malformed`].
    fn malformed(message: impl Into<String>) -> Self {
        PatchError::Malformed {
            message: message.into(),
        }
    }

    /// Builds a [`PatchError::DoesNotApply`].
    fn does_not_apply(message: impl Into<String>) -> Self {
        PatchError::DoesNotApply {
            message: message.into(),
        }
    }

    /// Builds a [`PatchError::MergeFailed`].
    fn merge_failed(message: impl Into<String>) -> Self {
        PatchError::MergeFailed {
            message: message.into(),
        }
    }

    /// Returns the HTTP status code the API server answers with.
    pub(crate) fn status_code(&self) -> u16 {
        match self {
            PatchError::Malformed { .. } => 400,
            PatchError::DoesNotApply { .. } => 422,
            PatchError::MergeFailed { .. } => 500,
        }
    }

    /// Returns the `reason` of the `metav1.Status` the API server answers with.
    pub(crate) fn status_reason(&self) -> &'static str {
        match self {
            PatchError::Malformed { .. } => "BadRequest",
            PatchError::DoesNotApply { .. } => "Invalid",
            PatchError::MergeFailed { .. } => "InternalError",
        }
    }

    /// Returns the `message` of the `metav1.Status` the API server answers with.
    ///
    /// A 400 carries the detailed message, a 422 only a generic sentence (the API server
    /// drops the details), a 500 the detailed message behind `Internal error occurred: `.
    pub(crate) fn status_message(&self) -> String {
        match self {
            PatchError::Malformed { message } => message.clone(),
            PatchError::DoesNotApply { .. } => INVALID_STATUS_MESSAGE.to_owned(),
            PatchError::MergeFailed { message } => format!("Internal error occurred: {message}"),
        }
    }

    /// Returns the detailed message, without any status wording around it.
    pub(crate) fn message(&self) -> &str {
        match self {
            PatchError::Malformed { message }
            | PatchError::DoesNotApply { message }
            | PatchError::MergeFailed { message } => message,
        }
    }
}

/// How a strategic merge patch treats the list at one path of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListStrategy {
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
pub(crate) struct MergeKeys {
    /// The strategy of each mergeable list, by path.
    lists: BTreeMap<String, ListStrategy>,
}

impl MergeKeys {
    /// Returns a table where every list is atomic, as for custom resources (kubectl sends them
    /// merge patches, and the API server refuses strategic merge for them).
    pub(crate) fn none() -> Self {
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
    pub(crate) fn for_core_kind(kind: &str) -> Self {
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
    pub(crate) fn from_schema(schema: &Value) -> Self {
        let mut keys = Self::none()
            .with_list("metadata.finalizers", ListStrategy::MergePrimitives)
            .with_key("metadata.ownerReferences", "uid");
        schema_lists(schema, "", &mut keys);
        keys
    }

    /// Returns the table with the list at `path` given `strategy`, replacing any earlier one.
    pub(crate) fn with_list(mut self, path: &str, strategy: ListStrategy) -> Self {
        self.lists.insert(path.to_owned(), strategy);
        self
    }

    /// Returns the table with the list at `path` merged by the object key `key`.
    pub(crate) fn with_key(self, path: &str, key: &str) -> Self {
        self.with_list(path, ListStrategy::MergeByKey(key.to_owned()))
    }

    /// Returns the strategy of the list at `path`, or `None` when that list is atomic.
    pub(crate) fn strategy(&self, path: &str) -> Option<&ListStrategy> {
        self.lists.get(path)
    }

    /// Returns the merge key of the list at `path`, if it merges by one.
    fn merge_key(&self, path: &str) -> Option<&str> {
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

/// Applies a patch of the given kind to `target` and returns the patched object.
///
/// `patch` is the parsed body: for [`PatchKind::Apply`] the full intended object. `merge_keys`
/// matters only to [`PatchKind::StrategicMerge`] and [`PatchKind::Apply`]. The result is
/// always a JSON object; `target` is not changed.
pub(crate) fn apply_patch(
    kind: PatchKind,
    target: &Value,
    patch: &Value,
    merge_keys: &MergeKeys,
) -> Result<Value, PatchError> {
    let patched = match kind {
        PatchKind::Merge => merge_patch(target, patch)?,
        PatchKind::Json => json_patch_apply(target, patch)?,
        PatchKind::StrategicMerge => strategic_merge(target, patch, merge_keys)?,
        PatchKind::Apply => server_side_apply(target, patch, merge_keys)?,
    };
    if patched.is_object() {
        Ok(patched)
    } else {
        Err(PatchError::does_not_apply(format!(
            "the patched object is a JSON {}, not an object",
            json_type_name(&patched)
        )))
    }
}

/// Names the JSON type of a value, for messages.
fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

// ---------------------------------------------------------------------------------------------
// JSON merge patch (RFC 7386)

/// Applies a JSON merge patch to a copy of `target`.
fn merge_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let mut result = target.clone();
    merge_into(&mut result, patch, 0)?;
    Ok(result)
}

/// Merges `patch` into `doc` in place, as RFC 7386's MergePatch does.
fn merge_into(doc: &mut Value, patch: &Value, depth: usize) -> Result<(), PatchError> {
    let Value::Object(patch_map) = patch else {
        *doc = patch.clone();
        return Ok(());
    };
    check_depth(depth)?;
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    if let Value::Object(doc_map) = doc {
        for (key, value) in patch_map {
            if value.is_null() {
                doc_map.shift_remove(key);
            } else {
                let slot = doc_map.entry(key.clone()).or_insert(Value::Null);
                merge_into(slot, value, depth + 1)?;
            }
        }
    }
    Ok(())
}

/// Refuses a patch nested deeper than [`MAX_DEPTH`].
fn check_depth(depth: usize) -> Result<(), PatchError> {
    if depth > MAX_DEPTH {
        Err(PatchError::malformed(format!(
            "the patch is nested more than {MAX_DEPTH} levels deep"
        )))
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// JSON patch (RFC 6902)

/// Reads `patch` as a JSON patch and applies it to a copy of `target`, all or nothing.
fn json_patch_apply(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let operations: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|err| PatchError::malformed(format!("invalid JSON patch: {err}")))?;
    let mut doc = target.clone();
    // The copy is thrown away on error, so the crate's undo log is not needed.
    json_patch::patch_unsafe(&mut doc, &operations)
        .map_err(|err| PatchError::does_not_apply(describe_json_patch_error(&operations, &err)))?;
    Ok(doc)
}

/// Words a failed JSON patch operation the way the API server's JSON patch library does.
fn describe_json_patch_error(
    operations: &json_patch::Patch,
    err: &json_patch::PatchError,
) -> String {
    use json_patch::{PatchErrorKind, PatchOperation};

    let path = err.path.as_str();
    let Some(op) = operations.0.get(err.operation) else {
        return err.to_string();
    };
    match (op, &err.kind) {
        (PatchOperation::Test(_), PatchErrorKind::TestFailed) => {
            format!("testing value {path} failed: test failed")
        }
        (PatchOperation::Test(_), PatchErrorKind::InvalidPointer) => {
            format!("test operation does not apply: is missing path: {path}: missing value")
        }
        (PatchOperation::Add(_), PatchErrorKind::InvalidPointer) => {
            format!("add operation does not apply: doc is missing path: \"{path}\": missing value")
        }
        (PatchOperation::Remove(_), PatchErrorKind::InvalidPointer) => format!(
            "remove operation does not apply: doc is missing path: \"{path}\": missing value"
        ),
        (PatchOperation::Replace(_), PatchErrorKind::InvalidPointer) => {
            format!("replace operation does not apply: doc is missing key: {path}: missing value")
        }
        (PatchOperation::Move(mv), PatchErrorKind::InvalidFromPointer) => format!(
            "move operation does not apply: doc is missing from path: {}: missing value",
            mv.from.as_str()
        ),
        (PatchOperation::Move(_), PatchErrorKind::InvalidPointer) => format!(
            "move operation does not apply: doc is missing destination path: {path}: missing value"
        ),
        (PatchOperation::Move(mv), PatchErrorKind::CannotMoveInsideItself) => format!(
            "move operation does not apply: cannot move {} into its own child {path}",
            mv.from.as_str()
        ),
        (PatchOperation::Copy(cp), PatchErrorKind::InvalidFromPointer) => format!(
            "copy operation does not apply: doc is missing from path: {}: missing value",
            cp.from.as_str()
        ),
        (PatchOperation::Copy(_), PatchErrorKind::InvalidPointer) => format!(
            "copy operation does not apply: doc is missing destination path: {path}: missing value"
        ),
        _ => err.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch and apply

/// Applies a strategic merge patch to a copy of `target`.
fn strategic_merge(
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

/// Applies an applied object to a copy of the live object, as [`PatchKind::Apply`] describes.
fn server_side_apply(
    live: &Value,
    applied: &Value,
    merge_keys: &MergeKeys,
) -> Result<Value, PatchError> {
    if !applied.is_object() {
        return Err(PatchError::malformed(format!(
            "error decoding YAML: the applied configuration must be an object, not a {}",
            json_type_name(applied)
        )));
    }
    let mut result = strategic_merge(live, applied, merge_keys)?;
    keep_live_order_of_sets(live, &mut result, merge_keys);
    if let Value::Object(result_map) = &mut result {
        for field in ["apiVersion", "kind"] {
            if let Some(value) = applied.get(field).filter(|value| value.is_string()) {
                result_map.insert(field.to_owned(), value.clone());
            }
        }
        for field in ["name", "namespace"] {
            let Some(value) = applied
                .get("metadata")
                .and_then(|meta| meta.get(field))
                .filter(|value| value.is_string())
            else {
                continue;
            };
            let metadata = result_map
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if !metadata.is_object() {
                *metadata = Value::Object(Map::new());
            }
            if let Value::Object(metadata) = metadata {
                metadata.insert(field.to_owned(), value.clone());
            }
        }
    }
    Ok(result)
}

/// Server-side apply merges sets and keyed lists keeping the live elements in their places,
/// the applied ones that are new after them (a strategic merge patch puts the patch's first).
/// Lists inside list elements (`a[].b`) keep the strategic merge order.
fn keep_live_order_of_sets(live: &Value, result: &mut Value, merge_keys: &MergeKeys) {
    for (path, strategy) in &merge_keys.lists {
        if path.contains("[]") {
            continue;
        }
        let pointer = format!("/{}", path.replace('.', "/"));
        let Some(Value::Array(old)) = live.pointer(&pointer) else {
            continue;
        };
        let Some(Value::Array(merged)) = result.pointer_mut(&pointer) else {
            continue;
        };
        let same = |a: &Value, b: &Value| match strategy {
            ListStrategy::MergePrimitives => a == b,
            ListStrategy::MergeByKey(key) => a.get(key).is_some() && a.get(key) == b.get(key),
        };
        let mut ordered: Vec<Value> = old
            .iter()
            .filter_map(|o| merged.iter().find(|m| same(o, m)).cloned())
            .collect();
        for v in merged.iter() {
            if !ordered.iter().any(|o| same(o, v)) {
                ordered.push(v.clone());
            }
        }
        *merged = ordered;
    }
}

/// Tells whether a map key is a strategic merge patch directive rather than data.
fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// Removes every directive key left anywhere in a merged object, so none is ever stored.
///
/// The merge consumes the patch's directives; this catches any that the live object itself
/// carried. It descends no deeper than a patch may nest.
fn strip_leftover_directives(value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            map.retain(|key, _| !is_directive_key(key));
            for child in map.values_mut() {
                strip_leftover_directives(child, depth + 1);
            }
        }
        Value::Array(items) => {
            for child in items {
                strip_leftover_directives(child, depth + 1);
            }
        }
        _ => {}
    }
}

/// Returns a patch value as it is stored where the live object had nothing to merge it with:
/// without directives and without `null` map entries.
///
/// `None` means the value is dropped: a map whose `$patch` is anything but `replace` (there is
/// nothing to delete), and, inside a list, any map carrying `$patch` (list markers), as
/// apimachinery does. A map with `$patch: replace` becomes its other keys.
fn strip_directives(value: &Value, depth: usize) -> Result<Option<Value>, PatchError> {
    check_depth(depth)?;
    Ok(match value {
        Value::Object(map) => {
            match map.get(DIRECTIVE_MARKER) {
                None => {}
                Some(directive) if directive.as_str() == Some("replace") => {}
                Some(_) => return Ok(None),
            }
            let mut out = Map::new();
            for (key, child) in map {
                if child.is_null() || is_directive_key(key) {
                    continue;
                }
                if let Some(child) = strip_directives(child, depth + 1)? {
                    out.insert(key.clone(), child);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                if item.get(DIRECTIVE_MARKER).is_some() {
                    continue;
                }
                if let Some(item) = strip_directives(item, depth + 1)? {
                    out.push(item);
                }
            }
            Some(Value::Array(out))
        }
        other => Some(other.clone()),
    })
}

/// Returns a map's key under the path of the map, in [`MergeKeys`] syntax.
fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Splits a parallel-list key such as `$setElementOrder/containers` into the list's field.
///
/// `None` when the key has the prefix but not the `/` right after it.
fn parallel_list_field<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    key.strip_prefix(prefix)?.strip_prefix('/')
}

/// The JSON type of list elements, as strategic merge compares them (Go's dynamic types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementKind {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool,
    /// A number without a fraction or exponent.
    Integer,
    /// Any other number.
    Float,
    /// A string.
    String,
    /// An array: a list of lists, which strategic merge refuses.
    Array,
    /// An object.
    Object,
}

impl ElementKind {
    /// Returns the kind of one value.
    fn of(value: &Value) -> Self {
        match value {
            Value::Null => ElementKind::Null,
            Value::Bool(_) => ElementKind::Bool,
            Value::Number(n) if n.is_f64() => ElementKind::Float,
            Value::Number(_) => ElementKind::Integer,
            Value::String(_) => ElementKind::String,
            Value::Array(_) => ElementKind::Array,
            Value::Object(_) => ElementKind::Object,
        }
    }

    /// Returns the one kind all elements of the given lists share, `None` if they are empty.
    fn of_lists(lists: &[&[Value]]) -> Result<Option<Self>, PatchError> {
        let mut kind = None;
        for item in lists.iter().flat_map(|list| list.iter()) {
            let this = ElementKind::of(item);
            match kind {
                None if this == ElementKind::Array => {
                    return Err(PatchError::does_not_apply(
                        "lists of lists are not supported",
                    ));
                }
                None => kind = Some(this),
                Some(seen) if seen != this => {
                    return Err(PatchError::merge_failed(format!(
                        "list element types are not identical: {}",
                        show_lists(lists)
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(kind)
    }
}

/// Prints lists for an error message.
fn show_lists(lists: &[&[Value]]) -> String {
    lists
        .iter()
        .map(|list| Value::Array(list.to_vec()).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Returns the merge key's value of a list element, or the error apimachinery gives when the
/// element is not an object or lacks the key.
fn merge_key_value<'v>(item: &'v Value, key: &str) -> Result<&'v Value, PatchError> {
    match item {
        Value::Object(map) => map.get(key).ok_or_else(|| {
            PatchError::merge_failed(format!(
                "map: {item} does not contain declared merge key: {key}"
            ))
        }),
        other => Err(PatchError::merge_failed(format!(
            "expected a map, but received a {}: {other}",
            json_type_name(other)
        ))),
    }
}

/// Returns where an element stands in `order`: by merge key value when there is a key, by
/// equality otherwise. Elements without the key are never found.
fn position_in(order: &[Value], item: &Value, merge_key: Option<&str>) -> Option<usize> {
    match merge_key {
        Some(key) => {
            let wanted = item.get(key)?;
            order
                .iter()
                .position(|other| other.get(key) == Some(wanted))
        }
        None => order.iter().position(|other| other == item),
    }
}

/// Splits merged elements into those named in `partition_by` and the others, keeping order.
fn partition_by_presence(
    merged: Vec<Value>,
    partition_by: &[Value],
    merge_key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::new();
    let mut absent = Vec::new();
    for item in merged {
        let found = match merge_key {
            Some(key) => {
                let value = merge_key_value(&item, key)?;
                partition_by
                    .iter()
                    .any(|other| other.get(key) == Some(value))
            }
            None => partition_by.contains(&item),
        };
        if found {
            present.push(item);
        } else {
            absent.push(item);
        }
    }
    Ok((present, absent))
}

/// Orders a merged list as apimachinery does.
///
/// `patch_items` (elements the patch or its `$setElementOrder` names) are sorted by
/// `patch_order`, `server_only` elements by `server_order` (the live list); the two are then
/// interleaved: a server-only element goes before a patch element only when it came before
/// that element in the live list.
fn normalize_element_order(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Vec<Value> {
    patch_items.sort_by_key(|item| position_in(patch_order, item, merge_key).unwrap_or(usize::MAX));
    server_only
        .sort_by_key(|item| position_in(server_order, item, merge_key).unwrap_or(usize::MAX));

    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (
                    position_in(server_order, l, merge_key),
                    position_in(server_order, r, merge_key),
                ),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        if let Some(item) = next {
            out.push(item);
        }
    }
    out
}

/// Checks that the patch list names its elements in the order `$setElementOrder` gives.
fn validate_patch_with_set_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), PatchError> {
    if patch_list.is_empty() || order.is_empty() {
        return Ok(());
    }
    let mut kept = Vec::with_capacity(patch_list.len());
    for item in patch_list {
        if merge_key.is_some() {
            let Value::Object(map) = item else {
                return Err(PatchError::merge_failed(format!(
                    "expected a map, but received a {}: {item}",
                    json_type_name(item)
                )));
            };
            if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        kept.push(item);
    }
    let (mut patch_index, mut order_index) = (0, 0);
    while let (Some(item), Some(ordered)) = (kept.get(patch_index), order.get(order_index)) {
        if item.get(DIRECTIVE_MARKER).is_some() {
            patch_index += 1;
            continue;
        }
        let same = match merge_key {
            Some(key) => merge_key_value(item, key)? == merge_key_value(ordered, key)?,
            None => *item == ordered,
        };
        if same {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < kept.len() {
        return Err(PatchError::merge_failed(format!(
            "The order in patch list: {} doesn't match {SET_ELEMENT_ORDER} list: {}",
            Value::Array(patch_list.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
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

/// Applies a `$retainKeys` directive: checks the patch sets only listed keys, then drops the
/// live map's keys that are not listed.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    retain: &Value,
) -> Result<(), PatchError> {
    let bad_format = || PatchError::malformed("invalid patch format of retainKeys");
    let retain = retain.as_array().ok_or_else(bad_format)?;
    let listed = |key: &str| retain.iter().any(|k| k.as_str() == Some(key));
    for (key, value) in patch {
        if value.is_null()
            || key == RETAIN_KEYS
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(key) {
            return Err(bad_format());
        }
    }
    original.retain(|key, _| listed(key));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Applies a strategic merge patch with the merge keys of `kind`.
    fn smp(kind: &str, target: Value, patch: Value) -> Result<Value, PatchError> {
        apply_patch(
            PatchKind::StrategicMerge,
            &target,
            &patch,
            &MergeKeys::for_core_kind(kind),
        )
    }

    /// Applies a JSON patch.
    fn json_patch(target: Value, patch: Value) -> Result<Value, PatchError> {
        apply_patch(PatchKind::Json, &target, &patch, &MergeKeys::none())
    }

    /// Applies a merge patch.
    fn merge(target: Value, patch: Value) -> Result<Value, PatchError> {
        apply_patch(PatchKind::Merge, &target, &patch, &MergeKeys::none())
    }

    /// Tells whether any directive key is left anywhere in a value.
    fn has_directive(value: &Value) -> bool {
        match value {
            Value::Object(map) => map
                .iter()
                .any(|(key, child)| is_directive_key(key) || has_directive(child)),
            Value::Array(items) => items.iter().any(has_directive),
            _ => false,
        }
    }

    // --- content types -------------------------------------------------------------------

    #[test]
    fn content_types_name_their_patch_kinds() {
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json"),
            Some(PatchKind::Merge)
        );
        assert_eq!(
            PatchKind::from_content_type("application/json-patch+json"),
            Some(PatchKind::Json)
        );
        assert_eq!(
            PatchKind::from_content_type("application/strategic-merge-patch+json"),
            Some(PatchKind::StrategicMerge)
        );
        assert_eq!(
            PatchKind::from_content_type("application/apply-patch+yaml"),
            Some(PatchKind::Apply)
        );
    }

    #[test]
    fn content_type_parameters_and_case_are_ignored() {
        assert_eq!(
            PatchKind::from_content_type("application/strategic-merge-patch+json; charset=utf-8"),
            Some(PatchKind::StrategicMerge)
        );
        assert_eq!(
            PatchKind::from_content_type(" Application/Merge-Patch+JSON ;charset=UTF-8"),
            Some(PatchKind::Merge)
        );
    }

    #[test]
    fn other_content_types_are_not_patches() {
        for ct in [
            "application/json",
            "application/yaml",
            "application/apply-patch+cbor",
            "",
            ";",
            "application/merge-patch+json-ish",
        ] {
            assert_eq!(PatchKind::from_content_type(ct), None, "{ct}");
        }
    }

    #[test]
    fn content_type_round_trips_through_from_content_type() {
        for kind in PatchKind::ALL {
            assert_eq!(
                PatchKind::from_content_type(kind.content_type()),
                Some(kind)
            );
        }
    }

    // --- errors ------------------------------------------------------------------------

    #[test]
    fn errors_map_to_the_api_servers_status_codes_and_reasons() {
        let malformed = PatchError::malformed("bad");
        let invalid = PatchError::does_not_apply("nope");
        let failed = PatchError::merge_failed("boom");
        assert_eq!(
            (malformed.status_code(), malformed.status_reason()),
            (400, "BadRequest")
        );
        assert_eq!(
            (invalid.status_code(), invalid.status_reason()),
            (422, "Invalid")
        );
        assert_eq!(
            (failed.status_code(), failed.status_reason()),
            (500, "InternalError")
        );
        assert_eq!(malformed.status_message(), "bad");
        assert_eq!(invalid.status_message(), INVALID_STATUS_MESSAGE);
        assert_eq!(failed.status_message(), "Internal error occurred: boom");
        assert_eq!(invalid.message(), "nope");
        assert_eq!(invalid.to_string(), "nope");
    }

    #[test]
    fn a_patch_whose_result_is_not_an_object_does_not_apply() {
        let err = merge(json!({"a": 1}), json!([1, 2])).unwrap_err();
        assert_eq!(err.status_code(), 422);
        let err = json_patch(
            json!({"a": 1}),
            json!([{"op": "replace", "path": "", "value": 3}]),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
    }

    #[test]
    fn apply_patch_leaves_the_target_unchanged() {
        let target = json!({"metadata": {"name": "p", "labels": {"a": "1"}}});
        let copy = target.clone();
        let patch = json!({"metadata": {"labels": {"a": null}}});
        for kind in [
            PatchKind::Merge,
            PatchKind::StrategicMerge,
            PatchKind::Apply,
        ] {
            let out = apply_patch(kind, &target, &patch, &MergeKeys::for_core_kind("Pod"));
            assert!(out.is_ok(), "{kind:?}");
        }
        assert_eq!(target, copy);
    }

    // --- merge patch ----------------------------------------------------------------------

    #[test]
    fn merge_patch_null_deletes_a_key() {
        let out = merge(
            json!({"metadata": {"labels": {"app": "web", "tier": "fe"}}}),
            json!({"metadata": {"labels": {"tier": null}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"labels": {"app": "web"}}}));
    }

    #[test]
    fn merge_patch_null_for_a_missing_key_changes_nothing() {
        let target = json!({"spec": {"replicas": 1}});
        let out = merge(target.clone(), json!({"spec": {"paused": null}})).unwrap();
        assert_eq!(out, target);
    }

    #[test]
    fn merge_patch_merges_objects_recursively_and_keeps_other_keys() {
        let out = merge(
            json!({"spec": {"a": {"x": 1, "y": 2}, "b": true}}),
            json!({"spec": {"a": {"y": 3, "z": 4}}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"a": {"x": 1, "y": 3, "z": 4}, "b": true}})
        );
    }

    #[test]
    fn merge_patch_replaces_lists_whole() {
        let out = merge(
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
            json!({"spec": {"containers": [{"name": "c"}]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"containers": [{"name": "c"}]}}));
    }

    #[test]
    fn merge_patch_drops_nulls_inside_new_objects() {
        let out = merge(json!({}), json!({"spec": {"a": 1, "b": null}})).unwrap();
        assert_eq!(out, json!({"spec": {"a": 1}}));
    }

    #[test]
    fn merge_patch_replaces_a_scalar_with_an_object() {
        let out = merge(json!({"spec": 5}), json!({"spec": {"a": 1}})).unwrap();
        assert_eq!(out, json!({"spec": {"a": 1}}));
    }

    #[test]
    fn merge_patch_keeps_the_order_of_remaining_keys() {
        let out = merge(json!({"a": 1, "b": 2, "c": 3}), json!({"a": null})).unwrap();
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b", "c"]);
    }

    #[test]
    fn merge_patch_nested_too_deeply_is_malformed() {
        let mut patch = json!(1);
        for _ in 0..(MAX_DEPTH + 5) {
            patch = json!({ "a": patch });
        }
        let err = merge(json!({}), patch).unwrap_err();
        assert_eq!(err.status_code(), 400);
    }

    // --- JSON patch -----------------------------------------------------------------------

    #[test]
    fn json_patch_applies_every_operation_kind() {
        let out = json_patch(
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2], "x": "v"}}),
            json!([
                {"op": "test", "path": "/spec/x", "value": "v"},
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "replace", "path": "/spec/x", "value": "w"},
                {"op": "add", "path": "/spec/list/-", "value": 3},
                {"op": "copy", "from": "/spec/x", "path": "/spec/y"},
                {"op": "move", "from": "/spec/list", "path": "/spec/moved"}
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"b": "2"}},
                   "spec": {"x": "w", "y": "w", "moved": [1, 2, 3]}})
        );
    }

    #[test]
    fn json_patch_failing_test_does_not_apply_and_changes_nothing() {
        let target = json!({"spec": {"x": "v"}});
        let err = json_patch(
            target.clone(),
            json!([
                {"op": "replace", "path": "/spec/x", "value": "changed"},
                {"op": "test", "path": "/spec/x", "value": "other"}
            ]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::DoesNotApply {
                message: "testing value /spec/x failed: test failed".into()
            }
        );
        assert_eq!(err.status_code(), 422);
    }

    #[test]
    fn json_patch_remove_of_a_missing_path_does_not_apply() {
        // kubectl patch pod p --type=json -p '[{"op":"remove","path":"/metadata/labels/nope"}]'
        let err = json_patch(
            json!({"metadata": {"labels": {}}}),
            json!([{"op": "remove", "path": "/metadata/labels/nope"}]),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
        assert_eq!(
            err.message(),
            "remove operation does not apply: doc is missing path: \"/metadata/labels/nope\": missing value"
        );
    }

    #[test]
    fn json_patch_add_under_a_missing_parent_does_not_apply() {
        let err = json_patch(
            json!({"metadata": {}}),
            json!([{"op": "add", "path": "/metadata/labels/app", "value": "x"}]),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
        assert!(
            err.message().starts_with("add operation does not apply"),
            "{err}"
        );
    }

    #[test]
    fn json_patch_replace_and_move_and_copy_of_missing_paths_do_not_apply() {
        let target = json!({"a": 1});
        for (patch, start) in [
            (
                json!([{"op": "replace", "path": "/b", "value": 1}]),
                "replace operation",
            ),
            (
                json!([{"op": "move", "from": "/b", "path": "/c"}]),
                "move operation",
            ),
            (
                json!([{"op": "copy", "from": "/b", "path": "/c"}]),
                "copy operation",
            ),
            (
                json!([{"op": "test", "path": "/b", "value": 1}]),
                "test operation",
            ),
            (
                json!([{"op": "add", "path": "/a/b/c", "value": 1}]),
                "add operation",
            ),
        ] {
            let err = json_patch(target.clone(), patch).unwrap_err();
            assert_eq!(err.status_code(), 422, "{err}");
            assert!(err.message().starts_with(start), "{err}");
        }
    }

    #[test]
    fn json_patch_index_out_of_range_does_not_apply() {
        let err = json_patch(
            json!({"spec": {"list": [1]}}),
            json!([{"op": "add", "path": "/spec/list/5", "value": 2}]),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 422);
    }

    #[test]
    fn json_patch_that_is_not_a_list_is_malformed() {
        let err =
            json_patch(json!({}), json!({"op": "add", "path": "/a", "value": 1})).unwrap_err();
        assert_eq!(err.status_code(), 400);
        assert!(err.message().starts_with("invalid JSON patch"), "{err}");
    }

    #[test]
    fn json_patch_with_an_unknown_op_or_bad_pointer_is_malformed() {
        for patch in [
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"op": "add", "path": "no-leading-slash", "value": 1}]),
            json!([{"op": "add", "value": 1}]),
        ] {
            let err = json_patch(json!({}), patch).unwrap_err();
            assert_eq!(err.status_code(), 400, "{err}");
        }
    }

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

    // --- strategic merge: primitive lists ------------------------------------------------------

    #[test]
    fn smp_finalizers_are_a_union() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["b", "c"]}}),
        )
        .unwrap();
        // "b" is named by the patch and by the live list, "a" precedes it in the live list.
        assert_eq!(out, json!({"metadata": {"finalizers": ["a", "b", "c"]}}));
    }

    #[test]
    fn smp_new_primitive_goes_before_live_ones_the_patch_does_not_name() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c"]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["c", "a", "b"]}}));
    }

    #[test]
    fn smp_delete_from_primitive_list_removes_values() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zzz"]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["a", "c"]}}));
    }

    #[test]
    fn smp_delete_from_primitive_list_works_on_atomic_lists_too() {
        let out = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a", "args": ["x", "y"]}]}}),
            json!({"spec": {"containers": [{"name": "a", "$deleteFromPrimitiveList/args": ["x"]}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "a", "args": ["y"]}]}})
        );
    }

    #[test]
    fn kubectl_apply_removing_a_finalizer_deletes_it_and_keeps_the_order() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {
                "$setElementOrder/finalizers": ["c", "a"],
                "$deleteFromPrimitiveList/finalizers": ["b"]
            }}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["c", "a"]}}));
    }

    #[test]
    fn smp_delete_from_a_missing_primitive_list_adds_nothing() {
        let out = smp(
            "Pod",
            json!({"metadata": {"name": "p"}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"name": "p"}}));
    }

    #[test]
    fn smp_delete_from_primitive_list_without_a_field_is_malformed() {
        let err = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
        assert_eq!(err.message(), "invalid patch format of primitive list");
    }

    // --- strategic merge: $setElementOrder -------------------------------------------------------

    #[test]
    fn smp_set_element_order_orders_the_merged_list() {
        let out = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]}})
        );
        assert!(!has_directive(&out));
    }

    #[test]
    fn smp_set_element_order_keeps_server_only_items_in_their_live_place() {
        // Live order 1, 2, 9, 3, 4; the patch orders 2, 1, 4, 3; 9 is server-only and stays
        // after 2 and 1, which preceded it in the live list.
        let out = smp(
            "Pod",
            json!({"spec": {"volumes": [{"name": "1"}, {"name": "2"}, {"name": "9"}, {"name": "3"}, {"name": "4"}]}}),
            json!({"spec": {"$setElementOrder/volumes": [{"name": "2"}, {"name": "1"}, {"name": "4"}, {"name": "3"}]}}),
        )
        .unwrap();
        let names: Vec<&str> = out["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["2", "1", "9", "4", "3"]);
    }

    #[test]
    fn smp_set_element_order_places_trailing_server_only_items_last() {
        let out = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "injected"}]}}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}, {"name": "injected"}]}})
        );
    }

    #[test]
    fn smp_set_element_order_on_primitives_orders_them() {
        let out = smp(
            "Pod",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "c", "a"], "finalizers": ["c"]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["b", "c", "a"]}}));
    }

    #[test]
    fn smp_set_element_order_that_contradicts_the_patch_list_fails_the_merge() {
        let err = smp(
            "Pod",
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "b", "image": "x"}, {"name": "a", "image": "y"}]
            }}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 500);
        assert!(err.message().contains("doesn't match"), "{err}");
    }

    #[test]
    fn smp_set_element_order_with_a_bad_prefix_is_malformed() {
        let err = smp(
            "Pod",
            json!({"spec": {}}),
            json!({"spec": {"$setElementOrderX": [{"name": "a"}]}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
    }

    // --- strategic merge: $retainKeys -------------------------------------------------------

    #[test]
    fn smp_retain_keys_drops_unlisted_keys() {
        let out = smp(
            "Pod",
            json!({"spec": {"volumes": [{"name": "data", "hostPath": {"path": "/x"}}]}}),
            json!({"spec": {"volumes": [{
                "$retainKeys": ["emptyDir", "name"], "emptyDir": {}, "hostPath": null, "name": "data"
            }]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"volumes": [{"name": "data", "emptyDir": {}}]}})
        );
    }

    #[test]
    fn smp_retain_keys_clears_a_key_the_patch_does_not_mention() {
        let out = smp(
            "Pod",
            json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    }

    #[test]
    fn smp_retain_keys_must_list_every_key_the_patch_sets() {
        let err = smp(
            "Pod",
            json!({"spec": {"strategy": {}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
        assert_eq!(err.message(), "invalid patch format of retainKeys");
        let err = smp(
            "Pod",
            json!({"spec": {"strategy": {}}}),
            json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
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

    // --- apply -----------------------------------------------------------------------------

    #[test]
    fn apply_merges_keyed_lists_and_takes_identity_from_the_applied_object() {
        let live = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                         "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.25",
                                     "terminationMessagePath": "/dev/termination-log"}],
                     "tolerations": [{"key": "a"}]}
        });
        let applied = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "fe"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.26"}],
                     "tolerations": [{"key": "b"}]}
        });
        let out = apply_patch(
            PatchKind::Apply,
            &live,
            &applied,
            &MergeKeys::for_core_kind("Pod"),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                             "labels": {"app": "web", "tier": "fe"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.26",
                                         "terminationMessagePath": "/dev/termination-log"}],
                         "tolerations": [{"key": "b"}]}
            })
        );
    }

    #[test]
    fn apply_to_a_custom_resource_replaces_lists() {
        let live = json!({"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox",
                          "metadata": {"name": "s"},
                          "spec": {"podTemplate": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}});
        let applied = json!({"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox",
                             "metadata": {"name": "s"},
                             "spec": {"podTemplate": {"spec": {"containers": [{"name": "a", "image": "y"}]}}}});
        let out = apply_patch(PatchKind::Apply, &live, &applied, &MergeKeys::none()).unwrap();
        assert_eq!(out, applied);
    }

    #[test]
    fn apply_of_something_other_than_an_object_is_malformed() {
        let err = apply_patch(
            PatchKind::Apply,
            &json!({}),
            &json!("x"),
            &MergeKeys::none(),
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 400);
    }

    // --- properties ----------------------------------------------------------------------------

    /// Arbitrary JSON values, a few levels deep, with keys drawn from a small alphabet so that
    /// patches and targets overlap, and with directive keys mixed in.
    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1.0e6..1.0e6f64).prop_map(|f| json!(f)),
            "[a-z]{0,4}".prop_map(Value::String),
            prop_oneof![Just("delete"), Just("replace"), Just("merge")]
                .prop_map(|s| Value::String(s.to_owned())),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((arb_key(), inner), 0..5)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    /// Map keys: plain field names, the fields that carry merge keys, and directives.
    fn arb_key() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-c]".prop_map(String::from),
            Just("name".to_owned()),
            Just("containers".to_owned()),
            Just("finalizers".to_owned()),
            Just("$patch".to_owned()),
            Just("$retainKeys".to_owned()),
            Just("$setElementOrder/containers".to_owned()),
            Just("$setElementOrder/finalizers".to_owned()),
            Just("$deleteFromPrimitiveList/finalizers".to_owned()),
            Just("$deleteFromPrimitiveList".to_owned()),
        ]
    }

    /// Arbitrary objects with a `spec` and `metadata` shaped like Kubernetes objects.
    fn arb_object() -> impl Strategy<Value = Value> {
        (arb_json(), arb_json(), arb_json()).prop_map(
            |(spec, metadata, extra)| json!({"spec": spec, "metadata": metadata, "extra": extra}),
        )
    }

    /// A JSON pointer into the kind of objects [`arb_object`] builds.
    fn arb_pointer() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                "[a-c]",
                Just("spec".to_owned()),
                Just("-".to_owned()),
                "[0-3]"
            ],
            0..4,
        )
        .prop_map(|parts| parts.iter().map(|p| format!("/{p}")).collect())
    }

    /// Arbitrary JSON patch operations, valid or not.
    fn arb_json_patch() -> impl Strategy<Value = Value> {
        let op = prop_oneof![
            Just("add"),
            Just("remove"),
            Just("replace"),
            Just("move"),
            Just("copy"),
            Just("test"),
            Just("bogus"),
        ];
        prop::collection::vec(
            (op, arb_pointer(), arb_pointer(), arb_json()).prop_map(|(op, path, from, value)| {
                json!({"op": op, "path": path, "from": from, "value": value})
            }),
            0..6,
        )
        .prop_map(Value::Array)
    }

    proptest! {
        // Failing cases are shrunk and printed; no regression file is written beside the source.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn merge_patch_of_only_new_keys_keeps_every_key(
            target in prop::collection::btree_map("[a-e]{1,3}", arb_json(), 0..6),
            additions in prop::collection::btree_map("[f-j]{1,3}", arb_json(), 0..6),
        ) {
            let target = Value::Object(target.into_iter().collect());
            let patch = Value::Object(
                additions.into_iter().filter(|(_, v)| !v.is_null()).collect(),
            );
            let out = merge(target.clone(), patch.clone()).unwrap();
            let out = out.as_object().unwrap();
            for key in target.as_object().unwrap().keys().chain(patch.as_object().unwrap().keys()) {
                prop_assert!(out.contains_key(key), "missing {key}");
            }
            for (key, value) in target.as_object().unwrap() {
                prop_assert_eq!(&out[key], value);
            }
        }

        #[test]
        fn merge_patch_applied_twice_is_idempotent(target in arb_object(), patch in arb_object()) {
            let once = merge(target, patch.clone()).unwrap();
            let twice = merge(once.clone(), patch).unwrap();
            prop_assert_eq!(once, twice);
        }

        #[test]
        fn merge_patch_equal_to_a_null_free_target_leaves_it_unchanged(target in arb_object()) {
            // A merge patch equal to the target changes nothing once the target has no nulls
            // (a null in the patch would delete the key).
            let clean = strip_directives(&target, 0).unwrap().unwrap();
            let out = merge(clean.clone(), clean.clone()).unwrap();
            prop_assert_eq!(out, clean);
        }

        #[test]
        fn json_patches_never_panic_and_fail_only_as_bad_request_or_invalid(
            target in arb_object(),
            patch in arb_json_patch(),
        ) {
            match json_patch(target, patch) {
                Ok(out) => prop_assert!(out.is_object()),
                Err(err) => prop_assert!(matches!(err.status_code(), 400 | 422), "{}", err),
            }
        }

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

        #[test]
        fn any_patch_on_any_value_never_panics(target in arb_json(), patch in arb_json()) {
            for kind in PatchKind::ALL {
                let _ = apply_patch(kind, &target, &patch, &MergeKeys::for_core_kind("Pod"));
            }
        }
    }
}
