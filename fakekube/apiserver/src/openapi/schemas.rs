//! Each kind's schema, the one source of both OpenAPI documents: a custom kind's CRD schema
//! with `apiVersion`, `kind` and `metadata` added, or a built-in kind's top-level fields with
//! their descriptions (each field's content is left open); `ObjectMeta` and `ListMeta`; the
//! kinds' lists. Written in the v3 dialect and converted to v2 ([`to_v2`]) as the API server
//! converts CRD schemas for `/openapi/v2`.

use crate::registry::ResourceType;
use serde_json::{Map, Value, json};

/// The definition name of `ObjectMeta`.
pub(super) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// The definition name of `ListMeta`.
pub(super) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// Where a document keeps its schemas, for references between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// OpenAPI v3: `#/components/schemas/`, a reference with siblings wrapped in `allOf`.
    V3,
    /// Swagger 2.0: `#/definitions/`, a bare reference.
    V2,
}

impl Dialect {
    /// A property that refers to definition `name`, with a description.
    fn reference(self, name: &str, description: &str) -> Value {
        match self {
            Dialect::V3 => json!({
                "allOf": [ { "$ref": format!("#/components/schemas/{name}") } ],
                "description": description,
            }),
            Dialect::V2 => json!({
                "$ref": format!("#/definitions/{name}"),
                "description": description,
            }),
        }
    }
}

/// The definition name of a kind (or of its list, with `kind` the list kind): the API
/// server's Go package path for built-in kinds (`io.k8s.api.core.v1.Pod`), the reversed group
/// for custom ones (`io.x-k8s.agents.v1beta1.Sandbox`).
pub(super) fn name(r: &ResourceType, kind: &str) -> String {
    if r.custom {
        let group: Vec<&str> = r.group.split('.').rev().collect();
        return format!("{}.{}.{kind}", group.join("."), r.version);
    }
    let package = match r.group.as_str() {
        "" => "io.k8s.api.core".to_string(),
        "apiextensions.k8s.io" => "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions".into(),
        "apiregistration.k8s.io" => "io.k8s.kube-aggregator.pkg.apis.apiregistration".into(),
        g => format!("io.k8s.api.{}", g.split('.').next().unwrap_or(g)),
    };
    format!("{package}.{}.{kind}", r.version)
}

/// The group, version and kind extension value of a kind.
pub(super) fn gvk(r: &ResourceType, kind: &str) -> Value {
    json!({ "group": r.group, "version": r.version, "kind": kind })
}

const API_VERSION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.";
const KIND: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to.";

/// The type of a built-in kind's top-level field.
#[derive(Debug, Clone, Copy)]
enum Field {
    /// An object whose content is not described.
    Object,
    /// A map of strings.
    Strings,
    /// A list of objects whose content is not described.
    Objects,
    /// A string.
    Text,
    /// A boolean.
    Flag,
    /// An integer.
    Integer,
}

/// A built-in kind's description and its top-level fields besides `apiVersion`, `kind` and
/// `metadata`.
fn built_in_fields(
    group: &str,
    kind: &str,
) -> (&'static str, &'static [(&'static str, Field, &'static str)]) {
    use Field::{Flag, Integer, Object, Objects, Strings, Text};
    const SPEC: (&str, Field, &str) = ("spec", Object, "The desired state of the object.");
    const STATUS: (&str, Field, &str) = (
        "status",
        Object,
        "The most recently observed state of the object. Read-only.",
    );
    match (group, kind) {
        ("", "Pod") => (
            "Pod is a collection of containers that can run on a host.",
            &[SPEC, STATUS],
        ),
        ("", "Service") => (
            "Service is a named abstraction of software service consisting of local port that the proxy listens on, and the selector that determines which pods will answer requests sent through the proxy.",
            &[SPEC, STATUS],
        ),
        ("", "Secret") => (
            "Secret holds secret data of a certain type.",
            &[
                (
                    "data",
                    Strings,
                    "The secret data, each value base64-encoded.",
                ),
                (
                    "stringData",
                    Strings,
                    "Write-only secret data as plain strings.",
                ),
                (
                    "type",
                    Text,
                    "Used to facilitate programmatic handling of secret data.",
                ),
                ("immutable", Flag, "If true, the data cannot be updated."),
            ],
        ),
        ("", "ConfigMap") => (
            "ConfigMap holds configuration data for pods to consume.",
            &[
                ("data", Strings, "The configuration data."),
                (
                    "binaryData",
                    Strings,
                    "Binary data, each value base64-encoded.",
                ),
                ("immutable", Flag, "If true, the data cannot be updated."),
            ],
        ),
        ("", "ServiceAccount") => (
            "ServiceAccount binds together a name, a principal that can be authenticated and authorized, and a set of secrets.",
            &[
                (
                    "secrets",
                    Objects,
                    "Secrets the service account's pods may use.",
                ),
                (
                    "imagePullSecrets",
                    Objects,
                    "Secrets for pulling the images of its pods.",
                ),
                (
                    "automountServiceAccountToken",
                    Flag,
                    "Whether its pods get a token mounted.",
                ),
            ],
        ),
        ("" | "events.k8s.io", "Event") => (
            "Event is a report of an event somewhere in the cluster.",
            &[
                ("involvedObject", Object, "The object the event is about."),
                ("regarding", Object, "The object the event is about."),
                ("reason", Text, "Why the action was taken, in CamelCase."),
                (
                    "message",
                    Text,
                    "A human-readable description of the event.",
                ),
                ("note", Text, "A human-readable description of the event."),
                ("type", Text, "Normal or Warning."),
                ("source", Object, "The component reporting the event."),
                ("count", Integer, "How many times the event occurred."),
                ("firstTimestamp", Text, "When the event was first recorded."),
                ("lastTimestamp", Text, "When the event was last recorded."),
                ("eventTime", Text, "When the event was first observed."),
                ("series", Object, "Data about the event series."),
                ("action", Text, "What action was taken."),
                (
                    "reportingController",
                    Text,
                    "The controller that emitted the event.",
                ),
                (
                    "reportingComponent",
                    Text,
                    "The component that emitted the event.",
                ),
                ("reportingInstance", Text, "The instance of the component."),
            ],
        ),
        ("", "Endpoints") => (
            "Endpoints is a collection of endpoints that implement the actual service.",
            &[(
                "subsets",
                Objects,
                "The sets of addresses and ports of the service.",
            )],
        ),
        ("discovery.k8s.io", "EndpointSlice") => (
            "EndpointSlice represents a subset of the endpoints that implement a service.",
            &[
                (
                    "addressType",
                    Text,
                    "The type of address carried by the slice.",
                ),
                ("endpoints", Objects, "The endpoints of the slice."),
                ("ports", Objects, "The ports of the slice."),
            ],
        ),
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => (
            "A set of rules granting permissions.",
            &[
                ("rules", Objects, "The PolicyRules of the role."),
                (
                    "aggregationRule",
                    Object,
                    "How to build the rules of a ClusterRole.",
                ),
            ],
        ),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => (
            "A binding of a role to subjects.",
            &[
                ("roleRef", Object, "The role bound."),
                ("subjects", Objects, "Who the role is bound to."),
            ],
        ),
        ("coordination.k8s.io", "Lease") => ("Lease defines a lease concept.", &[SPEC]),
        ("", "LimitRange") => (
            "LimitRange sets resource usage limits for each kind of resource in a Namespace.",
            &[SPEC],
        ),
        ("", "ResourceQuota") => (
            "ResourceQuota sets aggregate quota restrictions enforced per namespace",
            &[SPEC, STATUS],
        ),
        ("", "PodTemplate") => (
            "PodTemplate describes a template for creating copies of a predefined pod.",
            &[(
                "template",
                Object,
                "Template defines the pods that will be created from this pod template.",
            )],
        ),
        ("networking.k8s.io", "Ingress") => (
            "Ingress is a collection of rules that allow inbound connections to reach the endpoints defined by a backend.",
            &[SPEC, STATUS],
        ),
        ("autoscaling", "HorizontalPodAutoscaler") => (
            "configuration of a horizontal pod autoscaler.",
            &[SPEC, STATUS],
        ),
        ("networking.k8s.io", "IngressClass") => (
            "IngressClass represents the class of the Ingress, referenced by the Ingress Spec.",
            &[SPEC],
        ),
        _ => ("", &[SPEC, STATUS]),
    }
}

/// The schema of one top-level field of a built-in kind.
fn field_schema(field: Field, description: &str) -> Value {
    match field {
        Field::Object => json!({
            "type": "object",
            "description": description,
            "x-kubernetes-preserve-unknown-fields": true,
        }),
        Field::Strings => json!({
            "type": "object",
            "description": description,
            "additionalProperties": { "type": "string" },
        }),
        Field::Objects => json!({
            "type": "array",
            "description": description,
            "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
        }),
        Field::Text => json!({ "type": "string", "description": description }),
        Field::Flag => json!({ "type": "boolean", "description": description }),
        Field::Integer => {
            json!({ "type": "integer", "format": "int32", "description": description })
        }
    }
}

/// A kind's schema in `dialect`: the CRD's for a custom kind (converted for v2), the
/// top-level fields of a built-in one; `apiVersion`, `kind` and `metadata` added, and the
/// group-version-kind extension.
pub(super) fn kind_schema(r: &ResourceType, dialect: Dialect) -> Value {
    let mut doc = match (r.schema(), r.custom) {
        (Some(schema), _) => schema.root().clone(),
        (None, true) => json!({ "type": "object" }),
        (None, false) => {
            let (description, fields) = built_in_fields(&r.group, &r.kind);
            let mut props = Map::new();
            for (field, type_, text) in fields {
                props.insert((*field).to_string(), field_schema(*type_, text));
            }
            let description = if description.is_empty() {
                format!("{} of {}.", r.kind, r.api_version())
            } else {
                description.to_string()
            };
            json!({ "type": "object", "description": description, "properties": props })
        }
    };
    let open = doc.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if dialect == Dialect::V2 && r.custom && open {
        // kubectl refuses fields beside those listed, so an open custom kind lists none.
        doc = json!({ "type": "object" });
    } else {
        if dialect == Dialect::V2 {
            to_v2(&mut doc);
        }
        add_embedded_properties(&mut doc, dialect);
        if let Some(o) = doc.as_object_mut() {
            o.insert("type".into(), json!("object"));
            let props = o
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(p) = props.as_object_mut() {
                p.insert(
                    "apiVersion".into(),
                    json!({ "type": "string", "description": API_VERSION }),
                );
                p.insert(
                    "kind".into(),
                    json!({ "type": "string", "description": KIND }),
                );
                p.insert(
                    "metadata".into(),
                    dialect.reference(OBJECT_META, "Standard object's metadata."),
                );
            }
        }
    }
    if let Some(o) = doc.as_object_mut() {
        o.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([gvk(r, &r.kind)]),
        );
    }
    doc
}

/// The schema of a kind's list.
pub(super) fn list_schema(r: &ResourceType, dialect: Dialect) -> Value {
    let item = match dialect {
        Dialect::V3 => format!("#/components/schemas/{}", name(r, &r.kind)),
        Dialect::V2 => format!("#/definitions/{}", name(r, &r.kind)),
    };
    json!({
        "type": "object",
        "description": format!("{} is a list of {}", r.list_kind, r.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": { "type": "string", "description": API_VERSION },
            "kind": { "type": "string", "description": KIND },
            "items": { "type": "array", "items": { "$ref": item }, "description": format!("List of {}.", r.plural) },
            "metadata": dialect.reference(LIST_META, "Standard list metadata."),
        },
        "x-kubernetes-group-version-kind": [gvk(r, &r.list_kind)],
    })
}

/// The fields of `ObjectMeta` a client sets, for `kubectl explain <kind>.metadata`.
pub(super) fn object_meta() -> Value {
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
            "ownerReferences": { "type": "array", "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true }, "description": "Objects this object depends on." },
            "managedFields": { "type": "array", "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true }, "description": "Which field managers own which fields." },
            "uid": string("Set by the server: the unique identity of this object."),
            "resourceVersion": string("Set by the server: the version of this object, for optimistic concurrency."),
            "generation": { "type": "integer", "format": "int64", "description": "Set by the server: the generation of the desired state." },
            "creationTimestamp": { "type": "string", "format": "date-time", "description": "Set by the server: when this object was created." },
            "deletionTimestamp": { "type": "string", "format": "date-time", "description": "Set by the server: when this object will be deleted." },
            "deletionGracePeriodSeconds": { "type": "integer", "format": "int64", "description": "Seconds allowed for the object to terminate gracefully." },
        },
    })
}

/// The fields of `ListMeta`.
pub(super) fn list_meta() -> Value {
    json!({
        "type": "object",
        "description": "ListMeta describes metadata that synthetic resources must have.",
        "properties": {
            "resourceVersion": { "type": "string", "description": "The version of the list." },
            "continue": { "type": "string", "description": "The token to read the next page with." },
            "remainingItemCount": { "type": "integer", "format": "int64", "description": "How many items the list has beyond this page." },
        },
    })
}

/// Rewrites a v3 structural schema for Swagger 2.0 as the API server does for CRDs: no
/// `allOf`/`anyOf`/`oneOf`/`not`; a nullable value untyped and without `items` or
/// `properties`; a value that keeps unknown fields without `items` or `properties` (and, an
/// object, untyped); an array without `items` untyped; nullable properties not required.
pub(super) fn to_v2(schema: &mut Value) {
    let Some(o) = schema.as_object_mut() else {
        return;
    };
    for junctor in ["allOf", "anyOf", "oneOf", "not"] {
        o.remove(junctor);
    }
    if o.remove("nullable") == Some(Value::Bool(true)) {
        o.remove("type");
        o.remove("items");
        o.remove("properties");
    }
    if o.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        o.remove("items");
        o.remove("properties");
        if o.get("type").and_then(Value::as_str) == Some("object") {
            o.remove("type");
        }
    }
    if o.get("type").and_then(Value::as_str) == Some("array") && !o.contains_key("items") {
        o.remove("type");
    }
    let nullable: Vec<String> = o
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(_, s)| s.get("nullable") == Some(&Value::Bool(true)))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    if !nullable.is_empty()
        && let Some(Value::Array(required)) = o.get_mut("required")
    {
        required.retain(|r| r.as_str().is_none_or(|r| !nullable.iter().any(|n| n == r)));
    }
    if o.get("additionalProperties")
        .and_then(|a| a.get("nullable"))
        == Some(&Value::Bool(true))
    {
        o.remove("required");
    }
    if let Some(Value::Object(props)) = o.get_mut("properties") {
        props.values_mut().for_each(to_v2);
    }
    if let Some(items) = o.get_mut("items") {
        match items {
            Value::Array(a) => a.iter_mut().for_each(to_v2),
            other => to_v2(other),
        }
    }
    if let Some(extra) = o.get_mut("additionalProperties")
        && extra.is_object()
    {
        to_v2(extra);
    }
}

/// Gives every `x-kubernetes-embedded-resource` object its `apiVersion`, `kind` and
/// `metadata`, as the API server does (except, in v2, where it keeps unknown fields).
fn add_embedded_properties(schema: &mut Value, dialect: Dialect) {
    let Some(o) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(props)) = o.get_mut("properties") {
        props
            .values_mut()
            .for_each(|p| add_embedded_properties(p, dialect));
    }
    if let Some(items) = o.get_mut("items") {
        add_embedded_properties(items, dialect);
    }
    if let Some(extra) = o.get_mut("additionalProperties") {
        add_embedded_properties(extra, dialect);
    }
    let open = o.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if (open && dialect == Dialect::V2)
        || o.get("x-kubernetes-embedded-resource") != Some(&Value::Bool(true))
    {
        return;
    }
    let props = o
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(p) = props.as_object_mut() {
        p.insert(
            "apiVersion".into(),
            json!({ "type": "string", "description": API_VERSION }),
        );
        p.insert(
            "kind".into(),
            json!({ "type": "string", "description": KIND }),
        );
        p.insert(
            "metadata".into(),
            dialect.reference(OBJECT_META, "Standard object's metadata."),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn built_in_kinds_are_named_by_their_go_package() {
        let registry = Registry::new();
        let name_of = |g: &str, v: &str, p: &str| {
            registry
                .find(g, v, p)
                .map(|r| name(&r, &r.kind))
                .unwrap_or_default()
        };
        assert_eq!(name_of("", "v1", "pods"), "io.k8s.api.core.v1.Pod");
        assert_eq!(
            name_of("apps", "v1", "deployments"),
            "io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(
            name_of("rbac.authorization.k8s.io", "v1", "clusterroles"),
            "io.k8s.api.rbac.v1.ClusterRole"
        );
        assert_eq!(
            name_of("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        );
    }

    #[test]
    fn v2_drops_what_swagger_cannot_say_as_the_api_server_does() {
        let mut s = json!({
            "type": "object",
            "required": ["a", "b"],
            "properties": {
                "a": { "type": "string", "nullable": true },
                "b": { "anyOf": [ { "type": "integer" }, { "type": "string" } ], "x-kubernetes-int-or-string": true },
                "c": { "type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": { "x": { "type": "string" } } },
                "d": { "type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": { "type": "string" } },
            },
        });
        to_v2(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "required": ["b"],
                "properties": {
                    "a": {},
                    "b": { "x-kubernetes-int-or-string": true },
                    "c": { "x-kubernetes-preserve-unknown-fields": true },
                    "d": { "x-kubernetes-preserve-unknown-fields": true },
                },
            })
        );
    }

    #[test]
    fn a_built_in_kind_has_its_top_level_fields_and_metadata() {
        let registry = Registry::new();
        let Some(pods) = registry.find("", "v1", "pods") else {
            panic!("pods are served");
        };
        let v3 = kind_schema(&pods, Dialect::V3);
        assert_eq!(v3["properties"]["spec"]["type"], "object");
        assert_eq!(
            v3["properties"]["metadata"]["allOf"][0]["$ref"],
            format!("#/components/schemas/{OBJECT_META}")
        );
        assert_eq!(v3["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
        let v2 = kind_schema(&pods, Dialect::V2);
        assert_eq!(
            v2["properties"]["metadata"]["$ref"],
            format!("#/definitions/{OBJECT_META}")
        );
        assert!(v2["properties"]["spec"].get("type").is_none(), "{v2}");
    }
}
