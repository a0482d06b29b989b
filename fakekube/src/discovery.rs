//! Discovery and meta documents: `/version`, `/api`, `/apis`, the per-group-version resource
//! lists, and the `/openapi/v3` documents `kubectl apply` reads to decide on server-side
//! field validation.

use crate::resources::{self, RESOURCES, ResourceType};
use serde_json::{Value, json};

/// The Kubernetes version the server reports.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub(crate) minor: u32,
    pub(crate) patch: u32,
}

impl Version {
    fn git_version(&self) -> String {
        format!("v1.{}.{}", self.minor, self.patch)
    }
}

/// `GET /version`.
pub(crate) fn version(v: &Version) -> Value {
    json!({
        "major": "1",
        "minor": v.minor.to_string(),
        "emulationMajor": "1",
        "emulationMinor": v.minor.to_string(),
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": v.minor.saturating_sub(1).to_string(),
        "gitVersion": v.git_version(),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `GET /api`.
pub(crate) fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [ { "clientCIDR": "0.0.0.0/0", "serverAddress": server_address } ],
    })
}

fn group_json(group: &str, version: &str) -> Value {
    let gv = json!({ "groupVersion": format!("{group}/{version}"), "version": version });
    json!({ "name": group, "versions": [gv.clone()], "preferredVersion": gv })
}

/// `GET /apis`.
pub(crate) fn group_list() -> Value {
    let groups: Vec<Value> = resources::group_versions()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, v)| group_json(g, v))
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `GET /apis/<group>`, if served.
pub(crate) fn group(group: &str) -> Option<Value> {
    let (g, v) = resources::group_versions()
        .into_iter()
        .find(|(g, _)| *g == group && !g.is_empty())?;
    let mut doc = group_json(g, v);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn resource_json(r: &ResourceType) -> Value {
    let mut v = json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": r.verbs,
    });
    if !r.short_names.is_empty() {
        v["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        v["categories"] = json!(r.categories);
    }
    v
}

fn subresource_json(
    r: &ResourceType,
    sub: &str,
    kind: &str,
    gv: Option<(&str, &str)>,
    verbs: &[&str],
) -> Value {
    let mut v = json!({
        "name": format!("{}/{sub}", r.plural),
        "singularName": "",
        "namespaced": r.namespaced,
        "kind": kind,
        "verbs": verbs,
    });
    if let Some((g, ver)) = gv {
        v["group"] = json!(g);
        v["version"] = json!(ver);
    }
    v
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`, if served.
pub(crate) fn resource_list(group: &str, version: &str) -> Option<Value> {
    let mut list = Vec::new();
    for r in RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        list.push(resource_json(r));
        if r.status == resources::StatusMode::Subresource {
            list.push(subresource_json(
                r,
                "status",
                r.kind,
                None,
                &["get", "patch", "update"],
            ));
        }
        if r.scale {
            list.push(subresource_json(
                r,
                "scale",
                "Scale",
                Some(("autoscaling", "v1")),
                &["get", "patch", "update"],
            ));
        }
        for (sub, verbs) in r.extra_subresources {
            let (kind, gv) = match *sub {
                "exec" => ("PodExecOptions", None),
                "attach" => ("PodAttachOptions", None),
                "portforward" => ("PodPortForwardOptions", None),
                "log" => ("Pod", None),
                "token" => ("TokenRequest", Some(("authentication.k8s.io", "v1"))),
                _ => (r.kind, None),
            };
            list.push(subresource_json(r, sub, kind, gv, verbs));
        }
    }
    if list.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list }),
    )
}

/// The component name of a kind's schema: the reversed group, version and kind
/// (`io.x-k8s.agents.v1beta1.Sandbox`), as the API server names CRD schemas.
fn schema_name(r: &ResourceType) -> String {
    let group: Vec<&str> = r.group.split('.').rev().collect();
    format!("{}.{}.{}", group.join("."), r.version, r.kind)
}

/// The aggregated discovery document (`apidiscovery.k8s.io`, `v2` or `v2beta1`) of the core
/// group (`/api`) or of every named group (`/apis`), as 1.30+ servers answer clients that ask
/// for it in their `Accept` header.
pub(crate) fn aggregated(core: bool, api_version: &str) -> Value {
    let mut items = Vec::new();
    for (g, v) in resources::group_versions() {
        if g.is_empty() != core {
            continue;
        }
        let kind = |k: &str, group: &str, version: &str| json!({ "group": group, "version": version, "kind": k });
        let list: Vec<Value> = RESOURCES
            .iter()
            .filter(|r| r.group == g && r.version == v)
            .map(|r| {
                let mut subs = Vec::new();
                if r.status == resources::StatusMode::Subresource {
                    subs.push(json!({ "subresource": "status", "responseKind": kind(r.kind, g, v), "verbs": ["get", "patch", "update"] }));
                }
                if r.scale {
                    subs.push(json!({ "subresource": "scale", "responseKind": kind("Scale", "autoscaling", "v1"), "verbs": ["get", "patch", "update"] }));
                }
                for (sub, verbs) in r.extra_subresources {
                    let rk = match *sub {
                        "exec" => kind("PodExecOptions", "", "v1"),
                        "attach" => kind("PodAttachOptions", "", "v1"),
                        "portforward" => kind("PodPortForwardOptions", "", "v1"),
                        "token" => kind("TokenRequest", "authentication.k8s.io", "v1"),
                        _ => kind(r.kind, g, v),
                    };
                    subs.push(json!({ "subresource": sub, "responseKind": rk, "verbs": verbs }));
                }
                let mut res = json!({
                    "resource": r.plural,
                    "responseKind": kind(r.kind, g, v),
                    "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                    "singularResource": r.singular,
                    "verbs": r.verbs,
                });
                if !r.short_names.is_empty() {
                    res["shortNames"] = json!(r.short_names);
                }
                if !r.categories.is_empty() {
                    res["categories"] = json!(r.categories);
                }
                if !subs.is_empty() {
                    res["subresources"] = json!(subs);
                }
                res
            })
            .collect();
        items.push(json!({
            "metadata": { "name": g, "creationTimestamp": null },
            "versions": [ { "version": v, "resources": list, "freshness": "Current" } ],
        }));
    }
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{api_version}"),
        "metadata": {},
        "items": items,
    })
}

/// Which aggregated discovery version an `Accept` header asks for first, if any: `v2` or
/// `v2beta1`. A plain `application/json` earlier in the list wins over both.
pub(crate) fn wants_aggregated(accept: &str) -> Option<&'static str> {
    for media in accept.split(',') {
        let parts: Vec<&str> = media.split(';').map(str::trim).collect();
        let Some(essence) = parts.first() else {
            continue;
        };
        if *essence != "application/json" && *essence != "*/*" {
            continue;
        }
        let param = |k: &str| {
            parts
                .iter()
                .find_map(|p| p.strip_prefix(k))
                .map(|v| v.trim_matches('"'))
        };
        match (param("g="), param("v="), param("as=")) {
            (Some("apidiscovery.k8s.io"), Some("v2"), Some("APIGroupDiscoveryList")) => {
                return Some("v2");
            }
            (Some("apidiscovery.k8s.io"), Some("v2beta1"), Some("APIGroupDiscoveryList")) => {
                return Some("v2beta1");
            }
            (None, None, None) => return None,
            _ => {}
        }
    }
    None
}

fn openapi_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `GET /openapi/v3`: the index of per-group-version documents.
pub(crate) fn openapi_root(v: &Version) -> Value {
    let mut paths = serde_json::Map::new();
    for (g, ver) in resources::group_versions() {
        let key = openapi_key(g, ver);
        paths.insert(
            key.clone(),
            json!({ "serverRelativeURL": format!("/openapi/v3/{key}?hash={}", hash(&key, v)) }),
        );
    }
    json!({ "paths": paths })
}

fn hash(key: &str, v: &Version) -> String {
    // FNV-1a of the key and version: stable across runs, changes when the document would.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes().chain(v.git_version().bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016X}")
}

/// `GET /openapi/v3/<key>`: PATCH operations with their group-version-kind and the
/// `fieldValidation` parameter, which is what tells kubectl to validate on the server.
pub(crate) fn openapi_doc(key: &str, v: &Version) -> Option<Value> {
    let (g, ver) = resources::group_versions()
        .into_iter()
        .find(|(g, ver)| openapi_key(g, ver) == key)?;
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    let param = |name: &str| json!({ "name": name, "in": "query", "schema": { "type": "string", "uniqueItems": true } });
    for r in RESOURCES
        .iter()
        .filter(|r| r.group == g && r.version == ver && !r.create_only)
    {
        let base = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let path = if r.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{base}/{}/{{name}}", r.plural)
        };
        let gvk = json!({ "group": r.group, "version": r.version, "kind": r.kind });
        let op = |verb: &str| {
            json!({
                "operationId": format!("{verb}{}", r.kind),
                "parameters": [param("dryRun"), param("fieldManager"), param("fieldValidation")],
                "responses": { "200": { "description": "OK" } },
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
            })
        };
        paths.insert(path, json!({ "patch": op("patch"), "put": op("put") }));
        if let Some(schema) = r.schema() {
            let mut doc = schema.root().clone();
            if let Some(o) = doc.as_object_mut() {
                o.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
            }
            schemas.insert(schema_name(r), doc);
        }
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
    fn agent_sandbox_groups_are_discoverable_with_short_names_and_subresources() {
        let list = resource_list("extensions.agents.x-k8s.io", "v1beta1").expect("served");
        let names: Vec<&str> = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert!(names.contains(&"sandboxwarmpools/scale"));
        assert!(names.contains(&"sandboxclaims/status"));
        let swp = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["name"] == "sandboxwarmpools");
        assert_eq!(swp.map(|r| r["shortNames"].clone()), Some(json!(["swp"])));
        assert!(
            group_list()["groups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g["name"] == "agents.x-k8s.io"))
        );
    }

    #[test]
    fn aggregated_discovery_is_chosen_in_accept_order() {
        let kubectl_130 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wants_aggregated(kubectl_130), Some("v2"));
        let kubectl_127 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wants_aggregated(kubectl_127), Some("v2beta1"));
        assert_eq!(wants_aggregated("application/json, */*"), None);
        assert_eq!(wants_aggregated(""), None);
    }

    #[test]
    fn aggregated_discovery_lists_resources_with_scope_and_subresources() {
        let doc = aggregated(false, "v2");
        let sandbox = doc["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| g["metadata"]["name"] == "agents.x-k8s.io")
            .flat_map(|g| {
                g["versions"][0]["resources"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .find(|r| r["resource"] == "sandboxes");
        let sandbox = sandbox.expect("sandboxes listed");
        assert_eq!(sandbox["scope"], "Namespaced");
        assert_eq!(sandbox["responseKind"]["kind"], "Sandbox");
        assert_eq!(sandbox["subresources"][0]["subresource"], "status");
        let core = aggregated(true, "v2beta1");
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2beta1");
        assert_eq!(core["items"][0]["metadata"]["name"], "");
    }

    #[test]
    fn openapi_documents_carry_patch_with_field_validation_for_each_kind() {
        let v = Version {
            minor: 33,
            patch: 1,
        };
        let root = openapi_root(&v);
        assert!(root["paths"]["apis/agents.x-k8s.io/v1beta1"]["serverRelativeURL"].is_string());
        let doc = openapi_doc("apis/agents.x-k8s.io/v1beta1", &v).expect("served");
        let op = &doc["paths"]["/apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes/{name}"]
            ["patch"];
        assert_eq!(op["x-kubernetes-group-version-kind"]["kind"], "Sandbox");
        assert!(
            op["parameters"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["name"] == "fieldValidation"))
        );
    }
}
