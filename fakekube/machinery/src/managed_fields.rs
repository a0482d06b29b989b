//! Field managers: which writer owns which fields of an object (`metadata.managedFields`), and
//! the conflicts server-side apply reports between them.
//!
//! Every write that names a field manager (a `fieldManager` query parameter, or the prefix of
//! the `User-Agent`) is recorded as the API server records it:
//!
//! - an **apply** ([`apply`]) makes the manager own exactly the fields of its applied
//!   configuration (an `Apply` entry), removes the fields it applied before and dropped now
//!   (unless another manager owns them), and fails with a 409 listing every field whose value
//!   it would change while another manager owns it, unless `force` is given, which moves those
//!   fields to the applier (and `kubectl`, the manager of `kubectl apply --server-side`, takes
//!   over without a conflict the fields a client-side `kubectl apply` set and nobody changed
//!   since, as the API server lets it);
//! - any other write ([`record_update`]) makes the manager own the fields it added or changed
//!   (an `Update` entry, one per manager and API version) and takes them from every other
//!   manager, without conflicts.
//!
//! Field sets are [`FieldSet`]s, the `fieldsV1` trees of structured-merge-diff: `f:<field>`,
//! `k:{"<key>":<value>}` for an element of a list merged by key, `v:<value>` for an element of
//! a list of primitives merged as a set, `i:<index>`, and `.` for a node that is itself a
//! member. Which lists are keyed comes from the same [`MergeKeys`] table the patches use.
//!
//! # Known limitations
//!
//! - Lists are keyed by their strategic merge key alone (the API server keys container ports
//!   by `containerPort` and `protocol`); a keyed list with an element that lacks its key is
//!   treated as atomic.
//! - Maps are always granular: no kind here marks a struct atomic, so a `LabelSelector` is
//!   owned field by field.
//! - Managed fields are not converted between the versions of a kind.

use std::collections::BTreeMap;

use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::meta;
use crate::patch::{ListStrategy, MergeKeys};
use crate::status::ApiError;

/// `metadata` fields no manager owns: the server sets them (`stripSet` of the API server).
const SERVER_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "managedFields",
];

/// The `operation` of a managed fields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    /// A server-side apply.
    Apply,
    /// Any other write: create, update, non-apply patch.
    Update,
}

impl Operation {
    /// As the entry's `operation` spells it.
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Where a write lands, which decides the fields it can own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The main resource of a kind without a status subresource: every field.
    Whole,
    /// The main resource of a kind with a status subresource: every field but `status`.
    MainOnly,
    /// The status subresource: only `status`; the entry says `subresource: status`.
    Status,
}

impl Scope {
    /// The entry's `subresource`, empty for the main resource.
    fn subresource(self) -> &'static str {
        match self {
            Scope::Status => "status",
            Scope::Whole | Scope::MainOnly => "",
        }
    }
}

/// A set of field paths, in the shape of `fieldsV1`: children by path element, each of which
/// may itself be a member of the set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// Path element (`f:name`, `k:{...}`, `v:...`, `i:0`) to what lies under it.
    children: BTreeMap<String, Node>,
}

/// One path element's node in a [`FieldSet`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Node {
    /// The path to this node is itself in the set.
    member: bool,
    /// Paths below it.
    children: FieldSet,
}

impl Node {
    /// A node that holds nothing (neither a member nor above one).
    fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }
}

impl FieldSet {
    /// Reads a `fieldsV1` object; what is not an object is an empty set.
    pub fn from_fields_v1(v: &Value) -> Self {
        let mut set = FieldSet::default();
        if let Some(map) = v.as_object() {
            for (elem, child) in map {
                if elem == "." {
                    continue;
                }
                let children = FieldSet::from_fields_v1(child);
                let member = child
                    .as_object()
                    .is_none_or(|m| m.is_empty() || m.contains_key("."));
                let node = Node { member, children };
                if !node.is_empty() {
                    set.children.insert(elem.clone(), node);
                }
            }
        }
        set
    }

    /// Writes the set as `fieldsV1`: a member with children gets a `.` key.
    pub fn to_fields_v1(&self) -> Value {
        let mut out = Map::new();
        for (elem, node) in &self.children {
            let mut inner = Map::new();
            if node.member && !node.children.is_empty() {
                inner.insert(".".into(), json!({}));
            }
            if let Value::Object(kids) = node.children.to_fields_v1() {
                inner.extend(kids);
            }
            out.insert(elem.clone(), Value::Object(inner));
        }
        Value::Object(out)
    }

    /// Whether the set has no member.
    pub fn is_empty(&self) -> bool {
        self.children.values().all(Node::is_empty)
    }

    /// Adds every member of `other`.
    fn union_with(&mut self, other: &FieldSet) {
        for (elem, theirs) in &other.children {
            let ours = self.children.entry(elem.clone()).or_default();
            ours.member |= theirs.member;
            ours.children.union_with(&theirs.children);
        }
    }

    /// The members of `self` that are not members of `other`.
    fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::default();
        for (elem, ours) in &self.children {
            let node = match other.children.get(elem) {
                None => ours.clone(),
                Some(theirs) => Node {
                    member: ours.member && !theirs.member,
                    children: ours.children.difference(&theirs.children),
                },
            };
            if !node.is_empty() {
                out.children.insert(elem.clone(), node);
            }
        }
        out
    }

    /// Every member's path, depth first in element order.
    fn members(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        self.collect_members(&mut Vec::new(), &mut out);
        out
    }

    fn collect_members(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for (elem, node) in &self.children {
            prefix.push(elem.clone());
            if node.member {
                out.push(prefix.clone());
            }
            node.children.collect_members(prefix, out);
            prefix.pop();
        }
    }

    /// The members with no member below them: the paths that hold values rather than
    /// structure.
    fn leaves(&self) -> Vec<Vec<String>> {
        self.members()
            .into_iter()
            .filter(|p| self.node(p).is_some_and(|n| n.children.is_empty()))
            .collect()
    }

    /// The node at `path`.
    fn node(&self, path: &[String]) -> Option<&Node> {
        let (first, rest) = path.split_first()?;
        let node = self.children.get(first)?;
        if rest.is_empty() {
            Some(node)
        } else {
            node.children.node(rest)
        }
    }

    /// Removes the node at `path` with everything below it.
    fn remove(&mut self, path: &[String]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if rest.is_empty() {
            self.children.remove(first);
        } else if let Some(node) = self.children.get_mut(first) {
            node.children.remove(rest);
            if node.is_empty() {
                self.children.remove(first);
            }
        }
    }

    /// Drops the fields no manager owns, and those outside `scope`.
    fn strip(&mut self, scope: Scope) {
        for top in ["f:apiVersion", "f:kind"] {
            self.children.remove(top);
        }
        if let Some(md) = self.children.get_mut("f:metadata") {
            for field in SERVER_METADATA {
                md.children.children.remove(&format!("f:{field}"));
            }
            md.member = false;
            if md.is_empty() {
                self.children.remove("f:metadata");
            }
        }
        match scope {
            Scope::Whole => {}
            Scope::MainOnly => {
                self.children.remove("f:status");
            }
            Scope::Status => self.children.retain(|elem, _| elem == "f:status"),
        }
    }
}

/// How an object's nodes become members when its field set is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// The fields of an applied configuration: values and list elements; a map is a member
    /// only when it is empty.
    Applied,
    /// Every node of an object below the top-level fields, maps and metadata lists included,
    /// so that a map a write adds is owned as a whole (`.`) as the API server records it.
    Everything,
}

/// The field set of `obj`, with lists keyed as `keys` says.
fn field_set(obj: &Value, keys: &MergeKeys, walk: Walk) -> FieldSet {
    let mut set = FieldSet::default();
    if let Some(map) = obj.as_object() {
        walk_map(map, "", keys, walk, 0, &mut set);
    }
    set
}

fn walk_map(
    map: &Map<String, Value>,
    path: &str,
    keys: &MergeKeys,
    walk: Walk,
    depth: usize,
    set: &mut FieldSet,
) {
    for (name, value) in map {
        let child_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        let mut node = Node::default();
        walk_value(value, &child_path, keys, walk, depth + 1, &mut node);
        set.children.insert(format!("f:{name}"), node);
    }
}

fn walk_value(
    value: &Value,
    path: &str,
    keys: &MergeKeys,
    walk: Walk,
    depth: usize,
    node: &mut Node,
) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            walk_map(map, path, keys, walk, depth, &mut node.children);
            node.member = walk == Walk::Everything && depth > 1;
        }
        Value::Array(items) if !items.is_empty() => match list_elements(items, path, keys) {
            Some(elems) => {
                let items_path = format!("{path}[]");
                for (elem, item) in elems.into_iter().zip(items) {
                    let mut child = Node {
                        member: true,
                        children: FieldSet::default(),
                    };
                    if let Some(m) = item.as_object() {
                        walk_map(m, &items_path, keys, walk, depth + 1, &mut child.children);
                    }
                    node.children.children.insert(elem, child);
                }
                // Of granular lists, only the metadata ones (finalizers, owner references)
                // are recorded whole; the API server records the others element by element.
                node.member = walk == Walk::Everything && path.starts_with("metadata.");
            }
            None => node.member = true,
        },
        _ => node.member = true,
    }
}

/// The path elements of a list's items when the list merges granularly (by key or as a set of
/// primitives), `None` when it is atomic: no strategy for it, or items that do not fit it.
fn list_elements(items: &[Value], path: &str, keys: &MergeKeys) -> Option<Vec<String>> {
    let elems: Vec<String> = match keys.strategy(path)? {
        ListStrategy::MergeByKey(key) => items
            .iter()
            .map(|item| {
                let k = item.get(key).filter(|k| !k.is_null() && !k.is_object())?;
                Some(format!("k:{}", json!({ key.as_str(): k })))
            })
            .collect::<Option<_>>()?,
        ListStrategy::MergePrimitives => items
            .iter()
            .map(|item| (!item.is_object() && !item.is_array()).then(|| format!("v:{item}")))
            .collect::<Option<_>>()?,
    };
    let mut seen = std::collections::BTreeSet::new();
    elems
        .iter()
        .all(|e| seen.insert(e.as_str()))
        .then_some(elems)
}

/// The value one path element names inside `v`.
fn child<'a>(v: &'a Value, elem: &str) -> Option<&'a Value> {
    if let Some(name) = elem.strip_prefix("f:") {
        v.as_object()?.get(name)
    } else if let Some(key) = elem.strip_prefix("k:") {
        let key: Map<String, Value> = serde_json::from_str(key).ok()?;
        v.as_array()?
            .iter()
            .find(|item| key.iter().all(|(k, want)| item.get(k) == Some(want)))
    } else if let Some(value) = elem.strip_prefix("v:") {
        let value: Value = serde_json::from_str(value).ok()?;
        v.as_array()?.iter().find(|item| **item == value)
    } else {
        let i: usize = elem.strip_prefix("i:")?.parse().ok()?;
        v.as_array()?.get(i)
    }
}

/// The value at `path` inside `v`.
fn lookup<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, elem| child(v, elem))
}

/// Removes the value at `path` from `v` (a field from its map, an element from its list).
fn remove_value(v: &mut Value, path: &[String]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let mut at = v;
    for elem in parent {
        let next = match elem.strip_prefix("f:") {
            Some(name) => at.as_object_mut().and_then(|m| m.get_mut(name)),
            None => {
                let Some(found) = child(at, elem).cloned() else {
                    return;
                };
                at.as_array_mut()
                    .and_then(|items| items.iter_mut().find(|i| **i == found))
            }
        };
        match next {
            Some(n) => at = n,
            None => return,
        }
    }
    if let Some(name) = last.strip_prefix("f:") {
        if let Some(m) = at.as_object_mut() {
            m.remove(name);
        }
    } else if let Some(found) = child(at, last).cloned()
        && let Some(items) = at.as_array_mut()
        && let Some(i) = items.iter().position(|item| *item == found)
    {
        items.remove(i);
    }
}

/// A path as the API server prints it in a conflict: `.spec.containers[name="app"].image`.
fn display_path(path: &[String]) -> String {
    let mut out = String::new();
    for elem in path {
        if let Some(name) = elem.strip_prefix("f:") {
            out.push('.');
            out.push_str(name);
        } else if let Some(key) = elem.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(key).unwrap_or_default();
            let parts: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(value) = elem.strip_prefix("v:") {
            out.push_str(&format!("[={value}]"));
        } else if let Some(i) = elem.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        }
    }
    out
}

/// One entry of `metadata.managedFields`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    time: Option<String>,
    subresource: String,
    fields: FieldSet,
}

impl Entry {
    /// Reads an entry; one without a manager or with an unknown operation is dropped.
    fn parse(v: &Value) -> Option<Self> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let operation = match text("operation")?.as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return None,
        };
        Some(Entry {
            manager: text("manager")?,
            operation,
            api_version: text("apiVersion").unwrap_or_default(),
            time: text("time"),
            subresource: text("subresource").unwrap_or_default(),
            fields: v
                .get("fieldsV1")
                .map(FieldSet::from_fields_v1)
                .unwrap_or_default(),
        })
    }

    /// The entry as `managedFields` holds it.
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), json!(self.manager));
        m.insert("operation".into(), json!(self.operation.as_str()));
        m.insert("apiVersion".into(), json!(self.api_version));
        if let Some(t) = &self.time {
            m.insert("time".into(), json!(t));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(m)
    }

    /// Whether `self` and `other` are the same manager (an applier is one whatever the API
    /// version it applied with; an updater is one per API version).
    fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// The manager as a conflict names it: `"m"`, `"m" with subresource "status"`,
    /// `"m" using apps/v1`.
    fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// The entries of an object's `metadata.managedFields` (unreadable entries dropped).
fn entries(obj: &Value) -> Vec<Entry> {
    obj.get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Entry::parse).collect())
        .unwrap_or_default()
}

/// Writes `entries` into `obj`'s metadata in the API server's order (appliers first, then by
/// time, manager, API version and subresource); no entries removes the field.
fn store_entries(obj: &mut Value, mut list: Vec<Entry>) {
    list.retain(|e| !e.fields.is_empty());
    list.sort_by(|a, b| {
        (
            a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    if let Some(md) = meta::metadata_mut(obj) {
        if list.is_empty() {
            md.remove("managedFields");
        } else {
            md.insert(
                "managedFields".into(),
                Value::Array(list.iter().map(Entry::to_json).collect()),
            );
        }
    }
}

/// Whether `v` asks to clear the managed fields: a list of one empty entry, as clients do.
fn asks_reset(v: &Value) -> bool {
    v.as_array()
        .is_some_and(|l| l.len() == 1 && l[0].as_object().is_some_and(Map::is_empty))
}

/// Gives a written object the managed fields it starts from: its own when it sends some
/// (none when it sends a list of one empty entry), else those of the live object (`old`,
/// `None` on create), as the API server keeps them for a client that does not send them.
pub fn carry_over(old: Option<&Value>, new: &mut Value) {
    let sent = new.get("metadata").and_then(|m| m.get("managedFields"));
    let keep_sent = sent.is_some_and(|v| v.as_array().is_some_and(|l| !l.is_empty()));
    if keep_sent && !sent.is_some_and(asks_reset) {
        return;
    }
    let reset = sent.is_some_and(asks_reset);
    let from_old = old
        .filter(|_| !reset)
        .and_then(|o| o.get("metadata"))
        .and_then(|m| m.get("managedFields"))
        .cloned();
    if let Some(md) = meta::metadata_mut(new) {
        match from_old {
            Some(list) => md.insert("managedFields".into(), list),
            None => md.remove("managedFields"),
        };
    }
}

/// Records a write other than an apply by `manager`: it owns what it added or changed
/// (between `old`, `Value::Null` on create, and `new`), every other manager loses those
/// fields, and it loses what it removed. `new` already holds the managed fields it starts
/// from (see [`carry_over`]).
pub fn record_update(
    old: &Value,
    new: &mut Value,
    manager: &str,
    api_version: &str,
    scope: Scope,
    keys: &MergeKeys,
) {
    let mut new_set = field_set(new, keys, Walk::Everything);
    new_set.strip(scope);
    let mut old_set = field_set(old, keys, Walk::Everything);
    old_set.strip(scope);
    let changed = changed_fields(old, new, &new_set);
    let removed = removed_fields(new, &old_set);
    let me = Entry {
        manager: manager.to_owned(),
        operation: Operation::Update,
        api_version: api_version.to_owned(),
        time: None,
        subresource: scope.subresource().to_owned(),
        fields: FieldSet::default(),
    };
    let mut list = entries(new);
    let mut mine = None;
    for entry in &mut list {
        if entry.same_manager(&me) {
            mine = Some(entry.clone());
        } else {
            entry.fields = entry.fields.difference(&changed);
        }
    }
    list.retain(|e| !e.same_manager(&me));
    let mut entry = mine.clone().unwrap_or(me);
    entry.fields = entry.fields.difference(&removed);
    entry.fields.union_with(&changed);
    let touched = mine.as_ref().is_none_or(|m| m.fields != entry.fields) || !changed.is_empty();
    if touched {
        entry.time = Some(meta::now_rfc3339());
    }
    list.push(entry);
    store_entries(new, list);
}

/// The members of `new_set` (the field set of `new`) that `old` does not hold with the same
/// value: leaves whose value differs or is new, and structure that is new.
fn changed_fields(old: &Value, new: &Value, new_set: &FieldSet) -> FieldSet {
    let mut out = FieldSet::default();
    for (elem, node) in &new_set.children {
        let old_child = child(old, elem);
        let new_child = child(new, elem).unwrap_or(&Value::Null);
        let member = node.member
            && if node.children.is_empty() {
                old_child != Some(new_child)
            } else {
                old_child.is_none()
            };
        let children = changed_fields(old_child.unwrap_or(&Value::Null), new_child, &node.children);
        let node = Node { member, children };
        if !node.is_empty() {
            out.children.insert(elem.clone(), node);
        }
    }
    out
}

/// The members of `old_set` that are gone from `new`.
fn removed_fields(new: &Value, old_set: &FieldSet) -> FieldSet {
    let mut out = FieldSet::default();
    for (elem, node) in &old_set.children {
        let node = match child(new, elem) {
            None => node.clone(),
            Some(new_child) => Node {
                member: false,
                children: removed_fields(new_child, &node.children),
            },
        };
        if !node.is_empty() {
            out.children.insert(elem.clone(), node);
        }
    }
    out
}

/// A server-side apply by one manager.
#[derive(Debug, Clone, Copy)]
pub struct Applier<'a> {
    /// The `fieldManager`.
    pub manager: &'a str,
    /// `force=true`: take conflicting fields instead of failing.
    pub force: bool,
    /// The API version of the request.
    pub api_version: &'a str,
    /// Which part of the object the apply writes.
    pub scope: Scope,
}

/// Records an apply of `config` by `applier` that turned `live` (`Value::Null` when the apply
/// creates the object) into `merged`: checks conflicts with the other managers (a 409 unless
/// `force`), removes from `merged` the fields the applier owned and no longer applies (when
/// no other manager owns them), and writes the managed fields into `merged`.
pub fn apply(
    live: &Value,
    config: &Value,
    merged: &mut Value,
    applier: Applier<'_>,
    keys: &MergeKeys,
) -> Result<(), ApiError> {
    if config
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let mut applied = field_set(config, keys, Walk::Applied);
    applied.strip(applier.scope);
    let me = Entry {
        manager: applier.manager.to_owned(),
        operation: Operation::Apply,
        api_version: applier.api_version.to_owned(),
        time: None,
        subresource: applier.scope.subresource().to_owned(),
        fields: FieldSet::default(),
    };
    let mut list = entries(live);
    let previous = list
        .iter()
        .find(|e| e.same_manager(&me))
        .map(|e| e.fields.clone());
    list.retain(|e| !e.same_manager(&me));

    let mut conflicts: Vec<(usize, Vec<String>)> = Vec::new();
    for (i, other) in list.iter().enumerate() {
        for path in applied.leaves() {
            if !other.fields.node(&path).is_some_and(|n| n.member) {
                continue;
            }
            let before = lookup(live, &path);
            if before.is_some() && before != lookup(merged, &path) {
                conflicts.push((i, path));
            }
        }
    }
    if !conflicts.is_empty() {
        let upgrading = applier.manager == KUBECTL_SERVER_SIDE
            && conflicts
                .iter()
                .all(|(_, path)| last_applied_unchanged(live, keys, applier.scope, path));
        if !applier.force && !upgrading {
            return Err(conflict_error(&list, &conflicts));
        }
        for (i, path) in &conflicts {
            list[*i].fields.remove(path);
        }
    }

    if let Some(previous) = &previous {
        let mut kept = applied.clone();
        for other in &list {
            kept.union_with(&other.fields);
        }
        // A path that still has owned fields below it stays (a map the applier owned whole
        // and now owns field by field).
        let dropped = previous.difference(&kept);
        for path in dropped.members() {
            if kept.node(&path).is_none() {
                remove_value(merged, &path);
            }
        }
    }

    let mut entry = me;
    let unchanged = previous.as_ref() == Some(&applied) && same_content(live, merged);
    entry.time = match list_time(live, &entry) {
        Some(t) if unchanged => Some(t),
        _ => Some(meta::now_rfc3339()),
    };
    entry.fields = applied;
    list.push(entry);
    store_entries(merged, list);
    Ok(())
}

/// The manager `kubectl apply --server-side` applies as by default: the one the API server lets
/// take over the fields a client-side `kubectl apply` set.
const KUBECTL_SERVER_SIDE: &str = "kubectl";

/// The annotation where a client-side `kubectl apply` keeps what it applied.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Whether `path` is a field of the client-side apply recorded in `live`'s last-applied
/// annotation that still has the value that apply gave it: the API server lets `kubectl apply
/// --server-side` take such fields over without a conflict, so moving from client-side to
/// server-side apply does not ask for `--force-conflicts`.
fn last_applied_unchanged(live: &Value, keys: &MergeKeys, scope: Scope, path: &[String]) -> bool {
    let Some(text) = live
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
    else {
        return false;
    };
    let Ok(last) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let mut set = field_set(&last, keys, Walk::Applied);
    set.strip(scope);
    set.node(path).is_some_and(|n| n.member) && lookup(&last, path) == lookup(live, path)
}

/// The time of `like`'s entry in `obj`'s managed fields.
fn list_time(obj: &Value, like: &Entry) -> Option<String> {
    entries(obj)
        .into_iter()
        .find(|e| e.same_manager(like))
        .and_then(|e| e.time)
}

/// Whether two objects are equal apart from their managed fields.
fn same_content(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(md) = meta::metadata_mut(&mut v) {
            md.remove("managedFields");
        }
        v
    };
    strip(a) == strip(b)
}

/// The API server's 409 for an apply that conflicts: one cause per field, the message grouped
/// by manager.
fn conflict_error(list: &[Entry], conflicts: &[(usize, Vec<String>)]) -> ApiError {
    let message = if let [(i, path)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            list[*i].describe(),
            display_path(path)
        )
    } else {
        let mut by_manager: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (i, path) in conflicts {
            by_manager
                .entry(list[*i].describe())
                .or_default()
                .push(display_path(path));
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(i, path)| {
            json!({
                "reason": "FieldManagerConflict",
                "message": format!("conflict with {}", list[*i].describe()),
                "field": display_path(path),
            })
        })
        .collect();
    let mut e = ApiError::new(StatusCode::CONFLICT, "Conflict", message);
    e.details = Some(Box::new(json!({ "causes": causes })));
    e
}

/// The manager a write without `fieldManager` is recorded under: the `User-Agent` up to its
/// first `/`, at most 128 characters, as the API server derives it.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    user_agent
        .split('/')
        .next()
        .unwrap_or_default()
        .chars()
        .take(128)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::{PatchKind, apply_patch};

    const CM: &str = "v1";

    /// Applies `config` by `manager` onto `live` as the store does: merge, then record.
    fn ssa(live: &Value, config: Value, manager: &str, force: bool) -> Result<Value, ApiError> {
        let keys = MergeKeys::for_core_kind("ConfigMap");
        let mut merged = if live.is_null() {
            config.clone()
        } else {
            apply_patch(PatchKind::Apply, live, &config, &keys).unwrap()
        };
        let applier = Applier {
            manager,
            force,
            api_version: CM,
            scope: Scope::Whole,
        };
        apply(live, &config, &mut merged, applier, &keys)?;
        Ok(merged)
    }

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "namespace": "default"}, "data": data})
    }

    fn managers(obj: &Value) -> Vec<(String, String, Value)> {
        entries(obj)
            .into_iter()
            .map(|e| {
                (
                    e.manager,
                    e.operation.as_str().to_owned(),
                    e.fields.to_fields_v1(),
                )
            })
            .collect()
    }

    #[test]
    fn fields_v1_reads_and_writes_members_with_dots() {
        let v = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                       "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}});
        let set = FieldSet::from_fields_v1(&v);
        assert_eq!(set.to_fields_v1(), v);
        let leaves: Vec<String> = set.leaves().iter().map(|p| display_path(p)).collect();
        assert_eq!(
            leaves,
            [
                ".metadata.labels.app",
                ".spec.containers[name=\"app\"].image"
            ]
        );
    }

    #[test]
    fn apply_owns_exactly_the_applied_fields() {
        let mut config = cm(json!({"a": "1"}));
        config["metadata"]["labels"] = json!({"app": "x"});
        let out = ssa(&Value::Null, config, "alice", false).unwrap();
        let mf = &out["metadata"]["managedFields"][0];
        assert_eq!(mf["manager"], "alice");
        assert_eq!(mf["operation"], "Apply");
        assert_eq!(mf["apiVersion"], "v1");
        assert_eq!(mf["fieldsType"], "FieldsV1");
        assert!(mf["time"].as_str().is_some_and(|t| t.ends_with('Z')));
        assert_eq!(
            mf["fieldsV1"],
            json!({"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
        );
    }

    #[test]
    fn create_by_update_owns_new_maps_whole_and_keys_list_items() {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "web"}, "finalizers": ["x/y"]},
            "spec": {"containers": [{"name": "app", "image": "nginx", "args": ["a", "b"]}]},
            "status": {"phase": "Pending"}});
        let keys = MergeKeys::for_core_kind("Pod");
        record_update(
            &Value::Null,
            &mut pod,
            "kubectl-create",
            "v1",
            Scope::MainOnly,
            &keys,
        );
        assert_eq!(
            pod["metadata"]["managedFields"][0]["fieldsV1"],
            json!({
                "f:metadata": {"f:finalizers": {".": {}, "v:\"x/y\"": {}},
                               "f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                    ".": {}, "f:args": {}, "f:image": {}, "f:name": {}}}}
            })
        );
        assert_eq!(pod["metadata"]["managedFields"][0]["operation"], "Update");
    }

    #[test]
    fn a_second_applier_changing_an_owned_field_conflicts_with_its_owner() {
        let live = ssa(
            &Value::Null,
            cm(json!({"a": "1", "b": "1"})),
            "alice",
            false,
        )
        .unwrap();
        let err = ssa(&live, cm(json!({"a": "2"})), "bob", false).unwrap_err();
        assert_eq!(err.code, StatusCode::CONFLICT);
        assert_eq!(err.reason, "Conflict");
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"alice\": .data.a"
        );
        let details = err.details.unwrap();
        assert_eq!(
            details["causes"],
            json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"",
                    "field": ".data.a"}])
        );
    }

    #[test]
    fn conflicts_with_several_managers_are_grouped_by_manager() {
        let live = ssa(
            &Value::Null,
            cm(json!({"a": "1", "b": "1"})),
            "alice",
            false,
        )
        .unwrap();
        let mut live = live;
        let keys = MergeKeys::for_core_kind("ConfigMap");
        let before = live.clone();
        live["data"]["c"] = json!("1");
        record_update(
            &before,
            &mut live,
            "kubectl-edit",
            "v1",
            Scope::Whole,
            &keys,
        );
        let err = ssa(
            &live,
            cm(json!({"a": "2", "b": "2", "c": "2"})),
            "bob",
            false,
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "Apply failed with 3 conflicts: conflicts with \"alice\":\n- .data.a\n- .data.b\n\
             conflicts with \"kubectl-edit\" using v1:\n- .data.c"
        );
    }

    #[test]
    fn applying_the_same_value_shares_the_field_without_conflict() {
        let live = ssa(&Value::Null, cm(json!({"a": "1"})), "alice", false).unwrap();
        let out = ssa(&live, cm(json!({"a": "1"})), "bob", false).unwrap();
        let owners: Vec<String> = managers(&out).into_iter().map(|m| m.0).collect();
        assert_eq!(owners, ["alice", "bob"]);
    }

    #[test]
    fn force_takes_the_conflicting_field_from_its_owner() {
        let live = ssa(
            &Value::Null,
            cm(json!({"a": "1", "b": "1"})),
            "alice",
            false,
        )
        .unwrap();
        let out = ssa(&live, cm(json!({"a": "2"})), "bob", true).unwrap();
        assert_eq!(out["data"], json!({"a": "2", "b": "1"}));
        assert_eq!(
            managers(&out),
            [
                (
                    "alice".into(),
                    "Apply".into(),
                    json!({"f:data": {"f:b": {}}})
                ),
                ("bob".into(), "Apply".into(), json!({"f:data": {"f:a": {}}})),
            ]
        );
    }

    #[test]
    fn a_field_dropped_from_the_configuration_is_removed_unless_another_manager_owns_it() {
        let live = ssa(
            &Value::Null,
            cm(json!({"a": "1", "b": "1", "c": "1"})),
            "alice",
            false,
        )
        .unwrap();
        let live = ssa(&live, cm(json!({"c": "1"})), "bob", false).unwrap();
        let out = ssa(&live, cm(json!({"a": "1"})), "alice", false).unwrap();
        assert_eq!(out["data"], json!({"a": "1", "c": "1"}));
    }

    #[test]
    fn a_map_owned_whole_before_is_kept_when_its_fields_are_still_applied() {
        let mut live = cm(json!({"a": "1"}));
        live["metadata"]["managedFields"] = json!([{
            "manager": "alice", "operation": "Apply", "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}}}
        }]);
        let out = ssa(&live, cm(json!({"a": "2"})), "alice", false).unwrap();
        assert_eq!(out["data"], json!({"a": "2"}));
    }

    #[test]
    fn an_update_takes_the_fields_it_changes_and_the_applier_then_conflicts() {
        let live = ssa(&Value::Null, cm(json!({"a": "1"})), "alice", false).unwrap();
        let mut edited = live.clone();
        edited["data"]["a"] = json!("9");
        let keys = MergeKeys::for_core_kind("ConfigMap");
        record_update(
            &live,
            &mut edited,
            "kubectl-edit",
            "v1",
            Scope::Whole,
            &keys,
        );
        assert_eq!(
            managers(&edited),
            [(
                "kubectl-edit".into(),
                "Update".into(),
                json!({"f:data": {"f:a": {}}})
            )]
        );
        let err = ssa(&edited, cm(json!({"a": "1"})), "alice", false).unwrap_err();
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1: .data.a"
        );
    }

    #[test]
    fn kubectl_server_side_takes_over_what_a_client_side_apply_set() {
        let keys = MergeKeys::for_core_kind("ConfigMap");
        let mut live = cm(json!({"a": "1", "b": "1"}));
        live["metadata"]["annotations"] =
            json!({LAST_APPLIED: r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1"}}"#});
        record_update(
            &Value::Null,
            &mut live,
            "kubectl-client-side-apply",
            "v1",
            Scope::Whole,
            &keys,
        );
        let out = ssa(&live, cm(json!({"a": "2"})), "kubectl", false).unwrap();
        assert_eq!(out["data"]["a"], "2");
        // A field the client-side apply did not set stays a conflict, and so does any field
        // for another manager than kubectl's.
        let err = ssa(&live, cm(json!({"b": "2"})), "kubectl", false).unwrap_err();
        assert_eq!(err.code, StatusCode::CONFLICT);
        let err = ssa(&live, cm(json!({"a": "2"})), "deployer", false).unwrap_err();
        assert_eq!(err.code, StatusCode::CONFLICT);
    }

    #[test]
    fn a_repeated_apply_that_changes_nothing_keeps_the_entry_time() {
        let mut live = ssa(&Value::Null, cm(json!({"a": "1"})), "alice", false).unwrap();
        live["metadata"]["managedFields"][0]["time"] = json!("2020-01-01T00:00:00Z");
        let out = ssa(&live, cm(json!({"a": "1"})), "alice", false).unwrap();
        assert_eq!(out, live);
        let out = ssa(&live, cm(json!({"a": "2"})), "alice", false).unwrap();
        assert_ne!(
            out["metadata"]["managedFields"][0]["time"],
            "2020-01-01T00:00:00Z"
        );
    }

    #[test]
    fn an_update_that_changes_nothing_leaves_the_managed_fields_alone() {
        let mut live = cm(json!({"a": "1"}));
        let keys = MergeKeys::for_core_kind("ConfigMap");
        record_update(&Value::Null, &mut live, "k", "v1", Scope::Whole, &keys);
        live["metadata"]["managedFields"][0]["time"] = json!("2020-01-01T00:00:00Z");
        let mut again = live.clone();
        record_update(&live, &mut again, "k", "v1", Scope::Whole, &keys);
        assert_eq!(again, live);
    }

    #[test]
    fn status_writes_own_only_status_under_the_status_subresource() {
        let old = json!({"metadata": {"name": "p"}, "spec": {"x": 1}});
        let mut new =
            json!({"metadata": {"name": "p"}, "spec": {"x": 2}, "status": {"phase": "Running"}});
        record_update(
            &old,
            &mut new,
            "kubelet",
            "v1",
            Scope::Status,
            &MergeKeys::none(),
        );
        let e = &new["metadata"]["managedFields"][0];
        assert_eq!(e["subresource"], "status");
        assert_eq!(e["fieldsV1"], json!({"f:status": {"f:phase": {}}}));
    }

    #[test]
    fn managed_fields_in_an_applied_configuration_are_refused() {
        let mut config = cm(json!({}));
        config["metadata"]["managedFields"] = json!([]);
        let err = ssa(&Value::Null, config, "alice", false).unwrap_err();
        assert_eq!(err.code, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn sent_managed_fields_replace_the_live_ones_and_one_empty_entry_clears_them() {
        let old = json!({"metadata": {"managedFields": [{"manager": "a", "operation": "Update"}]}});
        let mut kept = json!({"metadata": {}});
        carry_over(Some(&old), &mut kept);
        assert_eq!(kept, old);
        let mut cleared = json!({"metadata": {"managedFields": [{}]}});
        carry_over(Some(&old), &mut cleared);
        assert_eq!(cleared, json!({"metadata": {}}));
    }

    #[test]
    fn the_user_agent_names_the_default_manager() {
        assert_eq!(
            manager_from_user_agent("kubectl/v1.31.0 (linux/amd64) kubernetes/abc"),
            "kubectl"
        );
        assert_eq!(manager_from_user_agent(""), "");
    }
}
