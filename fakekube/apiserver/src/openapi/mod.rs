//! The OpenAPI documents of the served kinds, built from the registry as it is now:
//! `/openapi/v3` (an index and one document per group version) and `/openapi/v2` (one
//! Swagger 2.0 document, in JSON or in the protobuf form kubectl 1.27 and 1.28 read).
//!
//! Both are built from one source, each kind's schema in its OpenAPI v3 form (`schemas`): a
//! CRD version's structural schema for a custom kind, a description of the top-level fields
//! for a built-in one. `/openapi/v2` converts those schemas as the API server converts CRD
//! schemas for it. Every operation lists the `fieldValidation` parameter, which tells kubectl
//! to leave validation to the server; no PATCH operation takes strategic merge patches (the
//! built-in schemas carry no merge keys), so kubectl computes those from its compiled-in types.
//!
//! # Layout
//! - `schemas`: the kinds' schemas, `ObjectMeta` and `ListMeta`, in either dialect.
//! - `v3`: `/openapi/v3`.
//! - `v2`: `/openapi/v2`, the Swagger 2.0 document.
//! - `gnostic`: the protobuf encoding of a Swagger document (gnostic's `openapi_v2` messages).

mod gnostic;
mod schemas;
mod v2;
mod v3;

pub(crate) use v2::{V2Format, v2_document};
pub(crate) use v3::{document, root};

use crate::registry::{Registry, ResourceType};
use std::sync::Arc;

/// The document key of a group version (`api/v1`, `apis/<group>/<version>`).
fn key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The served group versions, each with its kinds, in registry order.
fn group_versions(registry: &Registry) -> Vec<(String, Vec<Arc<ResourceType>>)> {
    let mut out: Vec<(String, Vec<Arc<ResourceType>>)> = Vec::new();
    for r in registry.served() {
        let k = key(&r.group, &r.version);
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some((_, kinds)) => kinds.push(r),
            None => out.push((k, vec![r])),
        }
    }
    out
}

/// The URL prefix of a group version (`/api/v1`, `/apis/<group>/<version>`).
fn base_path(r: &ResourceType) -> String {
    if r.group.is_empty() {
        format!("/api/{}", r.version)
    } else {
        format!("/apis/{}/{}", r.group, r.version)
    }
}

/// The collection path of a kind, with `{namespace}` for namespaced ones.
fn collection_path(r: &ResourceType) -> String {
    if r.namespaced {
        format!("{}/namespaces/{{namespace}}/{}", base_path(r), r.plural)
    } else {
        format!("{}/{}", base_path(r), r.plural)
    }
}
