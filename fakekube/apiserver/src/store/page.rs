//! A page of a collection as [`Store::list`](super::Store::list) reads it: the list's metadata
//! and its items, shared with the store rather than copied. An item that its version serves
//! as it is stored is the store's own revision (the same `Arc`), so whatever is derived from a
//! revision once (its JSON, in [`super::WireCache`]) serves every LIST that returns it.

use serde_json::{Map, Value};
use std::sync::Arc;

/// One page of a collection.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    /// The list's kind (`PodList`).
    pub(crate) kind: String,
    /// The list's `apiVersion`.
    pub(crate) api_version: String,
    /// The list's metadata: `resourceVersion`, and `continue` and `remainingItemCount` when
    /// more follows.
    pub(crate) metadata: Map<String, Value>,
    /// The items, in key order, as the requested version serves them.
    pub(crate) items: Vec<Item>,
}

/// One item of a [`Page`].
#[derive(Debug, Clone)]
pub(crate) struct Item {
    /// The object as its version serves it.
    pub(crate) object: Arc<Value>,
    /// Whether `object` is the stored revision itself (neither converted nor defaulted on
    /// reading): what is derived from it may be kept for as long as the revision lives.
    pub(crate) revision: bool,
}

impl Page {
    /// The items' objects.
    pub(crate) fn objects(&self) -> impl Iterator<Item = &Value> {
        self.items.iter().map(|i| &*i.object)
    }

    /// The page as one `<Kind>List` object, every item copied (for conversions, YAML and
    /// tests; the JSON answer is written from the page itself).
    pub(crate) fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("kind".into(), Value::from(self.kind.as_str()));
        out.insert("apiVersion".into(), Value::from(self.api_version.as_str()));
        out.insert("metadata".into(), Value::Object(self.metadata.clone()));
        out.insert(
            "items".into(),
            Value::Array(self.objects().cloned().collect()),
        );
        Value::Object(out)
    }
}
