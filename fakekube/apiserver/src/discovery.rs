//! Discovery documents, built from the registry as it is now: `/version`, `/api`, `/apis`,
//! `/apis/<group>`, the per-group-version resource lists, and the aggregated documents
//! (`apidiscovery.k8s.io` `v2` and `v2beta1`) with an ETag that changes when the registry does.
//! The OpenAPI documents are in [`crate::openapi`].

use crate::registry::{Registry, ResourceType, fnv1a, version};
use crate::resources::StatusMode;
use serde_json::{Value, json};
use std::sync::Arc;

/// The Kubernetes version the server reports.
#[derive(Debug, Clone)]
pub struct Version {
    /// The minor version (`1.<minor>`).
    pub minor: u32,
    /// The patch version.
    pub patch: u32,
}

impl Version {
    /// `v1.<minor>.<patch>`.
    pub(crate) fn git_version(&self) -> String {
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

/// One group and its served versions, highest priority first.
struct Group {
    name: String,
    versions: Vec<String>,
}

/// The served groups (core first as `""`), in the order their first kind was registered, each
/// with its versions by priority.
fn groups(registry: &Registry) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for r in registry.served() {
        match out.iter_mut().find(|g| g.name == r.group) {
            Some(g) if !g.versions.contains(&r.version) => g.versions.push(r.version.clone()),
            Some(_) => {}
            None => out.push(Group {
                name: r.group.clone(),
                versions: vec![r.version.clone()],
            }),
        }
    }
    for g in &mut out {
        version::sort_by_priority(&mut g.versions);
    }
    out
}

/// A group as `/apis` and `/apis/<group>` list it.
fn group_json(g: &Group) -> Value {
    let gv = |v: &str| json!({ "groupVersion": format!("{}/{v}", g.name), "version": v });
    let versions: Vec<Value> = g.versions.iter().map(|v| gv(v)).collect();
    let preferred = g.versions.first().map(|v| gv(v)).unwrap_or(Value::Null);
    json!({ "name": g.name, "versions": versions, "preferredVersion": preferred })
}

/// `GET /apis`.
pub(crate) fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = groups(registry)
        .iter()
        .filter(|g| !g.name.is_empty())
        .map(group_json)
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `GET /apis/<group>`, if served.
pub(crate) fn group(registry: &Registry, group: &str) -> Option<Value> {
    let g = groups(registry)
        .into_iter()
        .find(|g| g.name == group && !g.name.is_empty())?;
    let mut doc = group_json(&g);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// The kind, group and version a subresource answers with.
fn subresource_kind<'a>(r: &'a ResourceType, sub: &str) -> (&'a str, &'a str, &'a str) {
    match sub {
        "exec" => ("PodExecOptions", "", "v1"),
        "attach" => ("PodAttachOptions", "", "v1"),
        "portforward" => ("PodPortForwardOptions", "", "v1"),
        "log" => ("Pod", "", "v1"),
        "token" => ("TokenRequest", "authentication.k8s.io", "v1"),
        "eviction" => ("Eviction", "policy", "v1"),
        "ephemeralcontainers" => ("Pod", "", "v1"),
        "scale" => ("Scale", "autoscaling", "v1"),
        _ => (&r.kind, &r.group, &r.version),
    }
}

/// The subresources of `r` with their verbs.
fn subresources(r: &ResourceType) -> Vec<(&str, Vec<&str>)> {
    let mut subs: Vec<(&str, Vec<&str>)> = Vec::new();
    if r.status == StatusMode::Subresource {
        subs.push(("status", vec!["get", "patch", "update"]));
    }
    if r.scale.is_some() {
        subs.push(("scale", vec!["get", "patch", "update"]));
    }
    for (sub, verbs) in r.extra_subresources {
        subs.push((sub, verbs.to_vec()));
    }
    subs
}

/// One resource of an `APIResourceList`.
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

/// `GET /api/v1` or `GET /apis/<group>/<version>`, if served.
pub(crate) fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut list = Vec::new();
    for r in registry
        .served()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        list.push(resource_json(r));
        for (sub, verbs) in subresources(r) {
            let (kind, g, v) = subresource_kind(r, sub);
            let mut s = json!({
                "name": format!("{}/{sub}", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": verbs,
            });
            if (g, v) != (r.group.as_str(), r.version.as_str()) && !g.is_empty() {
                s["group"] = json!(g);
                s["version"] = json!(v);
            }
            list.push(s);
        }
    }
    if list.is_empty() {
        return None;
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": crate::registry::api_version(group, version),
        "resources": list,
    }))
}

/// One resource of an aggregated discovery document.
fn aggregated_resource(r: &ResourceType) -> Value {
    let gvk = |k: &str, g: &str, v: &str| json!({ "group": g, "version": v, "kind": k });
    let subs: Vec<Value> = subresources(r)
        .into_iter()
        .map(|(sub, verbs)| {
            let (k, g, v) = subresource_kind(r, sub);
            json!({ "subresource": sub, "responseKind": gvk(k, g, v), "verbs": verbs })
        })
        .collect();
    let mut res = json!({
        "resource": r.plural,
        "responseKind": gvk(&r.kind, &r.group, &r.version),
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
}

/// The aggregated discovery document (`apidiscovery.k8s.io`, `v2` or `v2beta1`) of the core
/// group (`/api`) or of every named group (`/apis`), as 1.30+ servers answer clients that ask
/// for it in their `Accept` header.
pub(crate) fn aggregated(registry: &Registry, core: bool, api_version: &str) -> Value {
    let served: Vec<Arc<ResourceType>> = registry.served();
    let items: Vec<Value> = groups(registry)
        .into_iter()
        .filter(|g| g.name.is_empty() == core)
        .map(|g| {
            let versions: Vec<Value> = g
                .versions
                .iter()
                .map(|v| {
                    let list: Vec<Value> = served
                        .iter()
                        .filter(|r| r.group == g.name && r.version == *v)
                        .map(|r| aggregated_resource(r))
                        .collect();
                    json!({ "version": v, "resources": list, "freshness": "Current" })
                })
                .collect();
            json!({
                "metadata": { "name": g.name, "creationTimestamp": null },
                "versions": versions,
            })
        })
        .collect();
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

/// A strong ETag for a document: FNV-1a of its bytes, quoted.
pub(crate) fn etag(bytes: &[u8]) -> String {
    format!("\"{:016X}\"", fnv1a(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &Value) -> Vec<&str> {
        list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str())
            .collect()
    }

    #[test]
    fn resource_lists_name_subresources_and_short_names() {
        let registry = Registry::new();
        let list = resource_list(&registry, "", "v1").expect("core served");
        let names = names(&list);
        assert!(names.contains(&"pods/exec"));
        assert!(names.contains(&"pods/status"));
        assert!(names.contains(&"serviceaccounts/token"));
        let sa_token = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["name"] == "serviceaccounts/token");
        assert_eq!(
            sa_token.map(|r| r["group"].clone()),
            Some(json!("authentication.k8s.io"))
        );
        let pods = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["name"] == "pods");
        assert_eq!(pods.map(|r| r["shortNames"].clone()), Some(json!(["po"])));
        assert!(
            group_list(&registry)["groups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g["name"] == "apps"))
        );
        assert!(resource_list(&registry, "nope.example.com", "v1").is_none());
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
        let registry = Registry::new();
        let doc = aggregated(&registry, true, "v2");
        let pods = doc["items"][0]["versions"][0]["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["resource"] == "pods")
            .cloned()
            .expect("pods listed");
        assert_eq!(pods["scope"], "Namespaced");
        assert_eq!(pods["responseKind"]["kind"], "Pod");
        assert_eq!(pods["subresources"][0]["subresource"], "status");
        let core = aggregated(&registry, true, "v2beta1");
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2beta1");
        assert_eq!(core["items"][0]["metadata"]["name"], "");
        let named = aggregated(&registry, false, "v2");
        assert!(
            named["items"]
                .as_array()
                .is_some_and(|g| g.iter().all(|g| g["metadata"]["name"] != ""))
        );
    }

    #[test]
    fn etags_follow_the_bytes() {
        assert_eq!(etag(b"a"), etag(b"a"));
        assert_ne!(etag(b"a"), etag(b"b"));
        assert!(etag(b"a").starts_with('"') && etag(b"a").ends_with('"'));
    }
}
