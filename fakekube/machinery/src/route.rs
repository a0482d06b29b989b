//! Request paths: which Kubernetes endpoint a path names ([`Route`]), and for resource requests
//! its group, version, namespace, resource, name and subresource ([`ResourcePath`]). Pure
//! parsing; nothing here knows how a route is served.

/// A parsed Kubernetes request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz` and their sub-checks.
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1`, `/apis/<group>/<version>`.
    ResourceList(String, String),
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`.
    OpenApiRoot,
    /// `/openapi/v3/<key>`.
    OpenApiDoc(String),
    /// A resource or collection.
    Resource(ResourcePath),
    /// `/api/v1/nodes/<node>/proxy/<path>`: the API server's proxy to a node's kubelet.
    NodeProxy {
        /// The node, as the path names it (`name` or `name:port`, maybe with a scheme).
        node: String,
        /// The kubelet path, from its `/`.
        path: String,
    },
    /// Nothing served here.
    Unknown,
}

/// A resource request's path parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    /// The API group (empty: the core group).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The namespace (empty: cluster-scoped or all namespaces).
    pub namespace: String,
    /// The resource (plural name).
    pub plural: String,
    /// The object's name (empty: a collection).
    pub name: String,
    /// The subresource (empty: the object itself).
    pub subresource: String,
}

/// A pod subresource served over an upgraded connection by the pod's kubelet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodStream {
    /// `pods/exec`.
    Exec,
    /// `pods/attach`.
    Attach,
    /// `pods/portforward`.
    PortForward,
}

impl PodStream {
    /// The subresource name.
    pub fn as_str(self) -> &'static str {
        match self {
            PodStream::Exec => "exec",
            PodStream::Attach => "attach",
            PodStream::PortForward => "portforward",
        }
    }
}

impl ResourcePath {
    /// The streamed subresource of a core pod this path names, if it names one.
    pub fn pod_stream(&self) -> Option<PodStream> {
        if !self.group.is_empty()
            || self.version != "v1"
            || self.plural != "pods"
            || self.name.is_empty()
        {
            return None;
        }
        match self.subresource.as_str() {
            "exec" => Some(PodStream::Exec),
            "attach" => Some(PodStream::Attach),
            "portforward" => Some(PodStream::PortForward),
            _ => None,
        }
    }
}

/// Parses a request path into a route.
pub fn route(path: &str) -> Route {
    if let Some(proxy) = node_proxy(path) {
        return proxy;
    }
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        [h, ..] if matches!(*h, "healthz" | "livez" | "readyz") => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group((*g).to_string()),
        ["api", v] => Route::ResourceList(String::new(), (*v).to_string()),
        ["apis", g, v] => Route::ResourceList((*g).to_string(), (*v).to_string()),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiRoot,
        ["openapi", "v3", rest @ ..] if !rest.is_empty() => Route::OpenApiDoc(rest.join("/")),
        ["api", v, rest @ ..] => resource_route("", v, rest),
        ["apis", g, v, rest @ ..] => resource_route(g, v, rest),
        _ => Route::Unknown,
    }
}

/// `/api/v1/nodes/<node>/proxy[/<path>]` as a [`Route::NodeProxy`].
fn node_proxy(path: &str) -> Option<Route> {
    let (node, rest) = path.strip_prefix("/api/v1/nodes/")?.split_once('/')?;
    let tail = rest.strip_prefix("proxy")?;
    if node.is_empty() || !(tail.is_empty() || tail.starts_with('/')) {
        return None;
    }
    Some(Route::NodeProxy {
        node: node.to_string(),
        path: if tail.is_empty() { "/" } else { tail }.to_string(),
    })
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let mk = |ns: &str, plural: &str, name: &str, sub: &str| {
        if rest.iter().any(|s| s.is_empty()) {
            return Route::Unknown;
        }
        Route::Resource(ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            namespace: ns.to_string(),
            plural: plural.to_string(),
            name: name.to_string(),
            subresource: sub.to_string(),
        })
    };
    match rest {
        ["namespaces"] => mk("", "namespaces", "", ""),
        ["namespaces", name] => mk("", "namespaces", name, ""),
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => {
            mk("", "namespaces", name, sub)
        }
        ["namespaces", ns, plural] => mk(ns, plural, "", ""),
        ["namespaces", ns, plural, name] => mk(ns, plural, name, ""),
        ["namespaces", ns, plural, name, sub] => mk(ns, plural, name, sub),
        [plural] => mk("", plural, "", ""),
        [plural, name] => mk("", plural, name, ""),
        [plural, name, sub] => mk("", plural, name, sub),
        _ => Route::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(g: &str, ns: &str, plural: &str, name: &str, sub: &str) -> Route {
        Route::Resource(ResourcePath {
            group: g.into(),
            version: if g.is_empty() {
                "v1".into()
            } else {
                "v1beta1".into()
            },
            namespace: ns.into(),
            plural: plural.into(),
            name: name.into(),
            subresource: sub.into(),
        })
    }

    #[test]
    fn paths_route_to_resources_namespaces_and_subresources() {
        assert_eq!(
            route("/api/v1/namespaces"),
            rp("", "", "namespaces", "", "")
        );
        assert_eq!(
            route("/api/v1/namespaces/default"),
            rp("", "", "namespaces", "default", "")
        );
        assert_eq!(
            route("/api/v1/namespaces/default/status"),
            rp("", "", "namespaces", "default", "status")
        );
        assert_eq!(
            route("/api/v1/namespaces/default/pods"),
            rp("", "default", "pods", "", "")
        );
        assert_eq!(
            route("/api/v1/namespaces/d/pods/p/exec"),
            rp("", "d", "pods", "p", "exec")
        );
        assert_eq!(
            route("/apis/agents.x-k8s.io/v1beta1/namespaces/d/sandboxes/s/status"),
            rp("agents.x-k8s.io", "d", "sandboxes", "s", "status")
        );
        assert_eq!(
            route("/apis/agents.x-k8s.io/v1beta1/sandboxes"),
            rp("agents.x-k8s.io", "", "sandboxes", "", "")
        );
        assert_eq!(
            route("/apis/agents.x-k8s.io"),
            Route::Group("agents.x-k8s.io".into())
        );
        assert_eq!(route("/readyz/ping"), Route::Health);
        assert_eq!(route("/openapi/v2"), Route::OpenApiV2);
        assert_eq!(route("/nope"), Route::Unknown);
        assert_eq!(
            route("/api/v1/nodes/n:10250/proxy/runningpods/"),
            Route::NodeProxy {
                node: "n:10250".into(),
                path: "/runningpods/".into()
            }
        );
        assert_eq!(
            route("/api/v1/nodes/n/proxy"),
            Route::NodeProxy {
                node: "n".into(),
                path: "/".into()
            }
        );
        assert!(!matches!(
            route("/api/v1/nodes/n/proxyx"),
            Route::NodeProxy { .. }
        ));
        assert_eq!(route("/api/v1/namespaces/a/b/c/d/e"), Route::Unknown);
        assert_eq!(route("/api/v1/namespaces//pods"), Route::Unknown);
    }
}
