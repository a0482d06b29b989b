//! A CRD's status as the naming and establishing controllers of the API server set it:
//! accepted names (a name another CRD of the group, or a built-in kind, already uses is not
//! accepted), the `NamesAccepted` and `Established` conditions with their reasons and
//! messages, and `storedVersions`.

use super::Others;
use super::spec::{Crd, Names};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The finalizer that holds a deleted CRD until its objects are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// One condition of a CRD's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    /// `NamesAccepted`, `Established`, `Terminating`.
    pub(crate) type_name: &'static str,
    /// `True`, `False` or `Unknown`.
    pub(crate) status: &'static str,
    /// The machine-readable reason.
    pub(crate) reason: String,
    /// The human-readable message.
    pub(crate) message: String,
}

/// Sets a condition in the CRD's status; its `lastTransitionTime` moves (to `now`, the
/// cluster's time) only when its status changes.
pub(crate) fn set_condition(obj: &mut Value, c: Condition, now: &str) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    let status = o
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if !status.is_object() {
        *status = Value::Object(Map::new());
    }
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let list = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let Some(list) = list.as_array_mut() else {
        return;
    };
    let fresh = |time: Value| {
        json!({
            "type": c.type_name,
            "status": c.status,
            "lastTransitionTime": time,
            "reason": c.reason,
            "message": c.message,
        })
    };
    match list
        .iter_mut()
        .find(|x| x.get("type").and_then(Value::as_str) == Some(c.type_name))
    {
        Some(existing) => {
            let time = if existing.get("status").and_then(Value::as_str) == Some(c.status) {
                existing
                    .get("lastTransitionTime")
                    .cloned()
                    .unwrap_or(json!(now))
            } else {
                json!(now)
            };
            *existing = fresh(time);
        }
        None => list.push(fresh(json!(now))),
    }
}

/// Whether the CRD's condition `type_name` is `True`.
pub(crate) fn condition_is_true(obj: &Value, type_name: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some(type_name)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// `status.storedVersions` of a CRD.
pub(crate) fn stored_versions(obj: &Value) -> Vec<String> {
    obj.pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The resource names and kinds already taken in `group`: by the accepted names of the other
/// CRDs of the group, and by the built-in kinds served in it.
fn taken(group: &str, others: Others<'_>) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut resources = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for other in others.crds {
        let Ok(crd) = Crd::parse(other) else {
            continue;
        };
        if crd.spec.group != group {
            continue;
        }
        let n = &crd.status.accepted_names;
        resources.insert(n.plural.clone());
        resources.insert(n.singular.clone());
        resources.extend(n.short_names.iter().cloned());
        kinds.insert(n.kind.clone());
        kinds.insert(n.list_kind.clone());
    }
    for r in others.registry.served() {
        if r.group == group && r.defined_by.is_none() {
            resources.insert(r.plural.clone());
            resources.insert(r.singular.clone());
            resources.extend(r.short_names.iter().cloned());
            kinds.insert(r.kind.clone());
            kinds.insert(r.list_kind.clone());
        }
    }
    resources.remove("");
    kinds.remove("");
    (resources, kinds)
}

/// `Ok` when `requested` is the name already accepted or a name nobody uses.
fn equal_to_accepted_or_fresh(
    requested: &str,
    accepted: &str,
    used: &BTreeSet<String>,
) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("\"{requested}\" is already in use"))
    }
}

/// The names the CRD may serve, and its `NamesAccepted` condition.
fn accept_names(crd: &Crd, others: Others<'_>) -> (Names, Condition) {
    let (resources, kinds) = taken(&crd.spec.group, others);
    let requested = &crd.spec.names;
    let accepted = &crd.status.accepted_names;
    let mut names = accepted.clone();
    let mut conflict: Option<(&str, String)> = None;
    match equal_to_accepted_or_fresh(&requested.plural, &accepted.plural, &resources) {
        Ok(()) => names.plural = requested.plural.clone(),
        Err(e) => conflict = Some(("PluralConflict", e)),
    }
    match equal_to_accepted_or_fresh(&requested.singular, &accepted.singular, &resources) {
        Ok(()) => names.singular = requested.singular.clone(),
        Err(e) => conflict = Some(("SingularConflict", e)),
    }
    if requested.short_names != accepted.short_names {
        let errs: Vec<String> = requested
            .short_names
            .iter()
            .filter(|s| {
                !accepted.short_names.contains(s)
                    && **s != accepted.plural
                    && **s != accepted.singular
            })
            .filter_map(|s| equal_to_accepted_or_fresh(s, "", &resources).err())
            .collect();
        match errs.as_slice() {
            [] => names.short_names = requested.short_names.clone(),
            [one] => conflict = Some(("ShortNamesConflict", one.clone())),
            many => conflict = Some(("ShortNamesConflict", format!("[{}]", many.join(", ")))),
        }
    }
    match equal_to_accepted_or_fresh(&requested.kind, &accepted.kind, &kinds) {
        Ok(()) => names.kind = requested.kind.clone(),
        Err(e) => conflict = Some(("KindConflict", e)),
    }
    match equal_to_accepted_or_fresh(&requested.list_kind, &accepted.list_kind, &kinds) {
        Ok(()) => names.list_kind = requested.list_kind.clone(),
        Err(e) => conflict = Some(("ListKindConflict", e)),
    }
    names.categories = requested.categories.clone();
    let condition = match conflict {
        Some((reason, message)) => Condition {
            type_name: "NamesAccepted",
            status: "False",
            reason: reason.to_string(),
            message,
        },
        None => Condition {
            type_name: "NamesAccepted",
            status: "True",
            reason: "NoConflicts".into(),
            message: "no conflicts found".into(),
        },
    };
    (names, condition)
}

/// The JSON of accepted names, as the API server writes them (empty lists left out).
fn names_json(n: &Names) -> Value {
    let mut v = json!({
        "plural": n.plural,
        "singular": n.singular,
        "kind": n.kind,
        "listKind": n.list_kind,
    });
    if !n.short_names.is_empty() {
        v["shortNames"] = json!(n.short_names);
    }
    if !n.categories.is_empty() {
        v["categories"] = json!(n.categories);
    }
    v
}

/// Sets the CRD's accepted names, `NamesAccepted` and `Established` conditions, and stored
/// versions, as the naming and establishing controllers would right after this write.
pub(super) fn update_status(obj: &mut Value, crd: &Crd, others: Others<'_>, now: &str) {
    let (names, names_accepted) = accept_names(crd, others);
    let accepted = names_accepted.status == "True";
    let established = if condition_is_true(obj, "Established") {
        None
    } else if accepted {
        Some(Condition {
            type_name: "Established",
            status: "True",
            reason: "InitialNamesAccepted".into(),
            message: "the initial names have been accepted".into(),
        })
    } else {
        Some(Condition {
            type_name: "Established",
            status: "False",
            reason: "NotAccepted".into(),
            message: "not all names are accepted".into(),
        })
    };
    let mut stored = stored_versions(obj);
    if let Some(v) = crd.storage_version()
        && !stored.iter().any(|s| s == v)
    {
        stored.push(v.to_string());
    }
    if let Some(o) = obj.as_object_mut() {
        let status = o
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        if !status.is_object() {
            *status = Value::Object(Map::new());
        }
        if let Some(s) = status.as_object_mut() {
            s.insert("acceptedNames".into(), names_json(&names));
            s.insert("storedVersions".into(), json!(stored));
        }
    }
    set_condition(obj, names_accepted, now);
    if let Some(e) = established {
        set_condition(obj, e, now);
    }
}
