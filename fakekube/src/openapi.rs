//! `/openapi/v3`, built from the registry as it is now: the index of per-group-version
//! documents, each URL carrying a hash of its document (clients cache a document by its URL
//! for good), and the documents themselves. A document lists the operations of each kind, with
//! the `fieldValidation` parameter that tells kubectl to validate on the server, and, for
//! custom kinds, the CRD's schema (descriptions included) as `kubectl explain` reads it.

use crate::discovery::Version;
use crate::registry::{Registry, ResourceType, fnv1a};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The component name of `ObjectMeta`.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

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

/// The component name of a kind's schema: the reversed group, version and kind
/// (`io.x-k8s.agents.v1beta1.Sandbox`), as the API server names CRD schemas.
fn schema_name(r: &ResourceType, kind: &str) -> String {
    let group: Vec<&str> = r.group.split('.').rev().collect();
    format!("{}.{}.{kind}", group.join("."), r.version)
}

/// `GET /openapi/v3/<key>`: the operations of each kind and the schemas of custom kinds.
pub(crate) fn document(registry: &Registry, k: &str, v: &Version) -> Option<Value> {
    let (_, kinds) = group_versions(registry)
        .into_iter()
        .find(|(key, _)| key == k)?;
    let mut paths = Map::new();
    let mut schemas = Map::new();
    let param = |name: &str| json!({ "name": name, "in": "query", "schema": { "type": "string", "uniqueItems": true } });
    for r in kinds.iter().filter(|r| !r.create_only) {
        let base = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let collection = if r.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{base}/{}", r.plural)
        };
        let gvk = json!({ "group": r.group, "version": r.version, "kind": r.kind });
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
        if let Some(schema) = r.schema() {
            schemas.insert(schema_name(r, &r.kind), kind_schema(schema.root(), &gvk));
            schemas.insert(
                schema_name(r, &r.list_kind),
                list_schema(&schema_name(r, &r.kind), r),
            );
        }
    }
    if !schemas.is_empty() {
        schemas.insert(OBJECT_META.into(), object_meta());
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": v.git_version() },
        "paths": paths,
        "components": { "schemas": schemas },
    }))
}

/// A CRD version's schema as the API server publishes it: `apiVersion`, `kind` and a
/// reference to `ObjectMeta` added, its group-version-kind attached.
fn kind_schema(root: &Value, gvk: &Value) -> Value {
    let mut doc = root.clone();
    if let Some(o) = doc.as_object_mut() {
        o.insert("type".into(), json!("object"));
        let props = o
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(p) = props.as_object_mut() {
            p.insert(
                "apiVersion".into(),
                json!({ "type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values." }),
            );
            p.insert(
                "kind".into(),
                json!({ "type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to." }),
            );
            p.insert(
                "metadata".into(),
                json!({
                    "allOf": [ { "$ref": format!("#/components/schemas/{OBJECT_META}") } ],
                    "description": "Standard object's metadata.",
                }),
            );
        }
        o.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
    }
    doc
}

/// The schema of a kind's list.
fn list_schema(item: &str, r: &ResourceType) -> Value {
    json!({
        "type": "object",
        "description": format!("{} is a list of {}", r.list_kind, r.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": { "type": "string" },
            "kind": { "type": "string" },
            "items": { "type": "array", "items": { "$ref": format!("#/components/schemas/{item}") } },
            "metadata": { "type": "object" },
        },
        "x-kubernetes-group-version-kind": [ { "group": r.group, "version": r.version, "kind": r.list_kind } ],
    })
}

/// The fields of `ObjectMeta` a client sets, for `kubectl explain <kind>.metadata`.
fn object_meta() -> Value {
    let string = |d: &str| json!({ "type": "string", "description": d });
    let map = |d: &str| json!({ "type": "object", "additionalProperties": { "type": "string" }, "description": d });
    json!({
        "type": "object",
        "description": "ObjectMeta is metadata that all persisted resources must have.",
        "properties": {
            "name": string("Name must be unique within a namespace."),
            "generateName": string("An optional prefix the server uses to generate a unique name when name is not given."),
            "namespace": string("The namespace the object lives in; empty for cluster-scoped objects."),
            "labels": map("Map of string keys and values used to organize and select objects."),
            "annotations": map("Unstructured key value map stored with the object."),
            "finalizers": { "type": "array", "items": { "type": "string" }, "description": "Conditions that must hold before the object is removed from storage." },
            "ownerReferences": { "type": "array", "items": { "type": "object" }, "description": "Objects this object depends on." },
            "uid": string("Set by the server: the unique identity of this object."),
            "resourceVersion": string("Set by the server: the version of this object, for optimistic concurrency."),
            "generation": { "type": "integer", "format": "int64", "description": "Set by the server: the generation of the desired state." },
            "creationTimestamp": { "type": "string", "format": "date-time", "description": "Set by the server: when this object was created." },
            "deletionTimestamp": { "type": "string", "format": "date-time", "description": "Set by the server: when this object will be deleted." },
        },
    })
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
        assert!(document(&registry, "apis/nope.example.com/v1", &v).is_none());
    }
}
