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
//!
//! # Layout
//!
//! One submodule per patch type, after the upstream code it stands for:
//!
//! - `kind`: [`PatchKind`], the formats and their media types (the PATCH handler of
//!   k8s.io/apiserver's `pkg/endpoints/handlers/patch.go`).
//! - `error`: [`PatchError`] and the status it maps to, with the depth guard and wording
//!   helpers the patch types share.
//! - `merge`: JSON merge patch (`github.com/evanphx/json-patch`'s `MergePatch`).
//! - `json`: JSON patch (`github.com/evanphx/json-patch`'s `Patch.Apply`).
//! - `merge_keys`: [`MergeKeys`] and [`ListStrategy`], standing in for the `patchStrategy` and
//!   `patchMergeKey` struct tags that k8s.io/apimachinery/pkg/util/strategicpatch reads
//!   (`PatchMetaFromStruct`), and for a CRD schema's list types.
//! - `strategic`: strategic merge patch (k8s.io/apimachinery/pkg/util/strategicpatch,
//!   `StrategicMergeMapPatch`), with `directives` (its `$patch`, `$retainKeys`,
//!   `$setElementOrder` and `$deleteFromPrimitiveList` keys) and `lists` (how it compares and
//!   orders list elements).
//! - `apply`: the simplified server-side apply (k8s.io/apiserver's `applyPatcher`; field
//!   ownership is `managed_fields`, after sigs.k8s.io/structured-merge-diff).

use serde_json::Value;

mod apply;
mod directives;
mod error;
mod json;
mod kind;
mod lists;
mod merge;
mod merge_keys;
mod strategic;
#[cfg(test)]
mod tests;

use apply::server_side_apply;
pub use error::PatchError;
use error::json_type_name;
use json::json_patch_apply;
pub use kind::PatchKind;
use merge::merge_patch;
pub use merge_keys::{ListStrategy, MergeKeys};
use strategic::strategic_merge;

/// Applies a patch of the given kind to `target` and returns the patched object.
///
/// `patch` is the parsed body: for [`PatchKind::Apply`] the full intended object. `merge_keys`
/// matters only to [`PatchKind::StrategicMerge`] and [`PatchKind::Apply`]. The result is
/// always a JSON object; `target` is not changed.
pub fn apply_patch(
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
