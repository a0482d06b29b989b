//! What the API server prints: the columns and cells of `kubectl get` for the built-in kinds
//! (`-o wide` included), the JSONPath subset that CRD `additionalPrinterColumns` use, and the
//! ages their cells show. Upstream, this is `pkg/printers` (the internal-version printers of
//! kube-apiserver), client-go's `jsonpath` package and apimachinery's `HumanDuration`. The API
//! server (`fakekube-apiserver`'s `table`) builds `Table` answers from them.
//!
//! # Layout
//!
//! - [`age`]: how long ago a timestamp was (`5m20s`), as the printers write it;
//! - [`jsonpath`]: the JSONPath subset printer columns use ([`JsonPath`]);
//! - `builtin`: the built-in kinds' columns ([`columns`], [`Column`]) and cells ([`row`],
//!   [`Row`]);
//! - `cluster_config`: those of the admission, CSI and flow-control kinds.

pub mod age;
mod builtin;
mod cluster_config;
pub mod jsonpath;

pub use builtin::{Column, DEFAULT, Row};

use serde_json::Value;
use time::OffsetDateTime;

/// The columns of built-in `kind` of `group`.
pub fn columns(group: &str, kind: &str) -> &'static [Column] {
    cluster_config::columns(group, kind).unwrap_or_else(|| builtin::columns(group, kind))
}

/// The cells of `obj`, a built-in `kind` of `group`, at `now`.
pub fn row(group: &str, kind: &str, obj: &Value, now: OffsetDateTime) -> Row {
    cluster_config::row(group, kind, obj, now)
        .unwrap_or_else(|| builtin::row(group, kind, obj, now))
}
pub use jsonpath::JsonPath;
