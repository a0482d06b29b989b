//! `/openapi/v3`: the index of per-group-version documents, each URL carrying a hash of its
//! document (clients cache a document by its URL for good), and the documents themselves: the
//! operations of each kind, with the `fieldValidation` parameter that tells kubectl to
//! validate on the server, and each kind's schema (a CRD's with its descriptions) as
//! `kubectl explain` reads it.

use super::schemas::{self, Dialect, OBJECT_META};
use super::{collection_path, group_versions};
use crate::discovery::Version;
use crate::registry::Registry;
use crate::registry::{ResourceType, fnv1a};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The hash of one group version's document: of the server version and of each kind's
/// description, so it changes exactly when the document does.
fn hash(kinds: &[Arc<ResourceType>], v: &Version) -> String {
    let mut text = v.git_version();
    for r in kinds {
        text.push_str(&format!(
            "|{}/{}/{}/{}/{}/{:016X}",
            r.group,
            r.version,
            r.kind,
            r.plural,
            r.namespaced,
            r.fingerprint()
        ));
    }
    format!("{:016X}", fnv1a(text.as_bytes()))
}

/// `GET /openapi/v3`: the index of per-group-version documents.
pub(crate) fn root(registry: &Registry, v: &Version) -> Value {
    let mut paths = Map::new();
    for (k, kinds) in group_versions(registry) {
        let url = format!("/openapi/v3/{k}?hash={}", hash(&kinds, v));
        paths.insert(k, json!({ "serverRelativeURL": url }));
    }
    json!({ "paths": paths })
}

/// `GET /openapi/v3/<key>`: the operations and the schemas of each kind.
pub(crate) fn document(registry: &Registry, k: &str, v: &Version) -> Option<Value> {
    let (_, kinds) = group_versions(registry)
        .into_iter()
        .find(|(key, _)| key == k)?;
    let mut paths = Map::new();
    let mut schemas = Map::new();
    let param = |name: &str| json!({ "name": name, "in": "query", "schema": { "type": "string", "uniqueItems": true } });
    for r in kinds.iter().filter(|r| !r.create_only) {
        let collection = collection_path(r);
        let gvk = schemas::gvk(r, &r.kind);
        let op = |verb: &str, action: &str| {
            json!({
                "operationId": format!("{verb}{}", r.kind),
                "parameters": [param("dryRun"), param("fieldManager"), param("fieldValidation")],
                "responses": { "200": { "description": "OK" } },
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
            })
        };
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({ "get": op("read", "get"), "put": op("replace", "put"), "patch": op("patch", "patch"), "delete": op("delete", "delete") }),
        );
        paths.insert(
            collection,
            json!({ "get": op("list", "list"), "post": op("create", "post") }),
        );
        schemas.insert(
            schemas::name(r, &r.kind),
            schemas::kind_schema(r, Dialect::V3),
        );
        schemas.insert(
            schemas::name(r, &r.list_kind),
            schemas::list_schema(r, Dialect::V3),
        );
    }
    if !schemas.is_empty() {
        schemas.insert(OBJECT_META.into(), schemas::object_meta());
        schemas.insert(schemas::LIST_META.into(), schemas::list_meta());
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": v.git_version() },
        "paths": paths,
        "components": { "schemas": schemas },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_group_version_has_a_document_whose_url_carries_its_hash() {
        let registry = Registry::new();
        let v = Version {
            minor: 33,
            patch: 1,
        };
        let index = root(&registry, &v);
        let url = index["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap_or_default();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
        let doc = document(&registry, "api/v1", &v).expect("a document for api/v1");
        let op = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(op["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert!(
            op["parameters"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["name"] == "fieldValidation"))
        );
        let pod = &doc["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
        assert_eq!(pod["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
        assert!(pod["properties"]["spec"].is_object(), "{pod}");
        assert!(document(&registry, "apis/nope.example.com/v1", &v).is_none());
    }
}
