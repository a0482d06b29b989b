//! How a strategic merge compares, keys and orders list elements, as apimachinery does.

use serde_json::Value;

use super::error::{PatchError, json_type_name};

/// The JSON type of list elements, as strategic merge compares them (Go's dynamic types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ElementKind {
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
    pub(super) fn of_lists(lists: &[&[Value]]) -> Result<Option<Self>, PatchError> {
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
pub(super) fn merge_key_value<'v>(item: &'v Value, key: &str) -> Result<&'v Value, PatchError> {
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
pub(super) fn partition_by_presence(
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
pub(super) fn normalize_element_order(
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
