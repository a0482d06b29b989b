//! `/openapi/v2`: one Swagger 2.0 document of every served kind, its operations and its
//! schema (converted from the v3 one), with `ObjectMeta` and `ListMeta`; in JSON, or encoded
//! as gnostic's `openapi_v2.Document` protobuf, which kubectl 1.27 and 1.28 read before
//! `apply` and `explain`.

use super::schemas::{self, Dialect, LIST_META, OBJECT_META};
use super::{collection_path, gnostic};
use crate::discovery::Version;
use crate::registry::{Registry, ResourceType};
use serde_json::{Map, Value, json};

/// The media type of the protobuf document (what the server answers with).
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// Its deprecated spelling, which client-go asks for (an `@` that Go's `mime` refuses, so
/// the answer is always labelled with [`PROTOBUF`]).
const PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The encodings `/openapi/v2` is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum V2Format {
    /// `application/json`.
    Json,
    /// gnostic's protobuf.
    Protobuf,
}

impl V2Format {
    /// The encoding an `Accept` header asks for, as kube-openapi's handler picks it (the
    /// first clause, by quality, that names JSON or a protobuf spelling, or a wildcard);
    /// `None` when none does (406).
    pub(crate) fn negotiate(accept: Option<&str>) -> Option<Self> {
        let header = accept
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .unwrap_or("*/*");
        let offered = [
            ("application/json", V2Format::Json),
            (PROTOBUF_DEPRECATED, V2Format::Protobuf),
            (PROTOBUF, V2Format::Protobuf),
        ];
        for clause in crate::accept::parse_accept(header) {
            for (media, format) in offered {
                let (t, s) = media.split_once('/').unwrap_or(("", ""));
                if (clause.type_ == t || clause.type_ == "*")
                    && (clause.subtype == s || clause.subtype == "*")
                {
                    return Some(format);
                }
            }
        }
        None
    }

    /// The `Content-Type` of the encoding.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            V2Format::Json => "application/json",
            V2Format::Protobuf => PROTOBUF,
        }
    }
}

/// A query parameter of an operation.
fn query_param(name: &str, description: &str) -> Value {
    json!({ "uniqueItems": true, "type": "string", "description": description, "name": name, "in": "query" })
}

/// The parameters of a write operation: `dryRun`, `fieldManager`, `fieldValidation`.
fn write_params() -> Vec<Value> {
    vec![
        query_param(
            "dryRun",
            "When present, indicates that modifications should not be persisted.",
        ),
        query_param(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
        ),
        query_param(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn (the default) or Strict.",
        ),
    ]
}

/// One operation of a kind.
fn operation(r: &ResourceType, action: &str, verb: &str, body: bool) -> Value {
    let namespaced = if r.namespaced { "Namespaced" } else { "" };
    let reference =
        |kind: &str| json!({ "$ref": format!("#/definitions/{}", schemas::name(r, kind)) });
    let mut params = match action {
        "post" | "put" | "patch" => write_params(),
        "list" => vec![
            query_param(
                "labelSelector",
                "A selector to restrict the list of returned objects by their labels.",
            ),
            query_param(
                "fieldSelector",
                "A selector to restrict the list of returned objects by their fields.",
            ),
            query_param(
                "limit",
                "limit is a maximum number of responses to return for a list call.",
            ),
            query_param(
                "continue",
                "The continue option should be set when retrieving more results from the server.",
            ),
            query_param("watch", "Watch for changes to the described resources."),
        ],
        "delete" => vec![query_param(
            "propagationPolicy",
            "Whether and how garbage collection will be performed.",
        )],
        _ => Vec::new(),
    };
    if body {
        let schema = if action == "patch" {
            json!({ "type": "object" })
        } else {
            reference(&r.kind)
        };
        params.insert(
            0,
            json!({ "name": "body", "in": "body", "required": true, "schema": schema }),
        );
    }
    let returned = if action == "list" {
        &r.list_kind
    } else {
        &r.kind
    };
    let consumes: Value = match action {
        "patch" => json!([
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]),
        _ => json!(["*/*"]),
    };
    json!({
        "description": format!("{action} {}", r.kind),
        "consumes": consumes,
        "produces": ["application/json", "application/yaml"],
        "schemes": ["https"],
        "operationId": format!("{verb}{namespaced}{}", r.kind),
        "parameters": params,
        "responses": {
            "200": { "description": "OK", "schema": reference(returned) },
            "401": { "description": "Unauthorized" },
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": schemas::gvk(r, &r.kind),
    })
}

/// A path parameter.
fn path_param(name: &str, description: &str) -> Value {
    json!({ "uniqueItems": true, "type": "string", "description": description, "name": name, "in": "path", "required": true })
}

/// The Swagger 2.0 document of every served kind.
pub(crate) fn v2_json(registry: &Registry, v: &Version) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    definitions.insert(OBJECT_META.into(), schemas::object_meta());
    definitions.insert(LIST_META.into(), schemas::list_meta());
    for r in registry.served().iter().filter(|r| !r.create_only) {
        let collection = collection_path(r);
        let mut scope = Vec::new();
        if r.namespaced {
            scope.push(path_param(
                "namespace",
                "object name and auth scope, such as for teams and projects",
            ));
        }
        let mut item_params = vec![path_param("name", &format!("name of the {}", r.kind))];
        item_params.extend(scope.iter().cloned());
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({
                "get": operation(r, "get", "read", false),
                "put": operation(r, "put", "replace", true),
                "patch": operation(r, "patch", "patch", true),
                "delete": operation(r, "delete", "delete", false),
                "parameters": item_params,
            }),
        );
        let mut collection_item = Map::new();
        collection_item.insert("get".into(), operation(r, "list", "list", false));
        collection_item.insert("post".into(), operation(r, "post", "create", true));
        if !scope.is_empty() {
            collection_item.insert("parameters".into(), Value::Array(scope));
        }
        paths.insert(collection, Value::Object(collection_item));
        definitions.insert(
            schemas::name(r, &r.kind),
            schemas::kind_schema(r, Dialect::V2),
        );
        definitions.insert(
            schemas::name(r, &r.list_kind),
            schemas::list_schema(r, Dialect::V2),
        );
    }
    json!({
        "swagger": "2.0",
        "info": { "title": "Kubernetes", "version": v.git_version() },
        "paths": paths,
        "definitions": definitions,
    })
}

/// `GET /openapi/v2` in `format`.
pub(crate) fn v2_document(registry: &Registry, v: &Version, format: V2Format) -> Vec<u8> {
    let doc = v2_json(registry, v);
    match format {
        V2Format::Json => serde_json::to_vec(&doc).unwrap_or_default(),
        V2Format::Protobuf => gnostic::document(&doc),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        v2_json(
            &Registry::new(),
            &Version {
                minor: 33,
                patch: 1,
            },
        )
    }

    #[test]
    fn patch_operations_name_their_kind_and_take_field_validation_but_not_strategic_merge() {
        let d = doc();
        let patch = &d["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert!(patch["parameters"].as_array().is_some_and(|p| {
            p.iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        }));
        let consumes = patch["consumes"].as_array().cloned().unwrap_or_default();
        assert!(!consumes.contains(&json!("application/strategic-merge-patch+json")));
        assert_eq!(patch["operationId"], "patchNamespacedPod");
    }

    #[test]
    fn every_reference_resolves_to_a_definition() {
        let d = doc();
        let text = d.to_string();
        for part in text.split("\"$ref\":\"#/definitions/").skip(1) {
            let name = part.split('"').next().unwrap_or_default();
            assert!(
                d["definitions"].get(name).is_some(),
                "dangling reference to {name}"
            );
        }
    }

    #[test]
    fn the_format_is_picked_as_kube_openapi_picks_it() {
        assert_eq!(V2Format::negotiate(None), Some(V2Format::Json));
        assert_eq!(
            V2Format::negotiate(Some(PROTOBUF_DEPRECATED)),
            Some(V2Format::Protobuf)
        );
        assert_eq!(
            V2Format::negotiate(Some(
                "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
            )),
            Some(V2Format::Protobuf)
        );
        assert_eq!(V2Format::Protobuf.content_type(), PROTOBUF);
        assert_eq!(V2Format::negotiate(Some("text/html")), None);
    }
}
