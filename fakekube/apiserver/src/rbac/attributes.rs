//! What a request asks to do, as an authorizer sees it: a verb on a resource
//! ([`Attributes`]) or on a path that names no resource ([`NonResource`]).

/// A verb on a resource (or subresource), in a namespace or at the cluster scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attributes<'a> {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or a
    /// special verb (`impersonate`, `bind`, `escalate`...).
    pub verb: &'a str,
    /// The API group (`""` is the core group).
    pub group: &'a str,
    /// The plural resource name.
    pub resource: &'a str,
    /// The subresource (`exec`, `status`...), empty for the resource itself.
    pub subresource: &'a str,
    /// The namespace, empty at the cluster scope.
    pub namespace: &'a str,
    /// The object's name, empty for collections.
    pub name: &'a str,
}

/// A verb on a path that names no resource (`/api`, `/healthz`, `/version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NonResource<'a> {
    /// The verb of the HTTP method (`get` for GET and HEAD, `post`, `put`, `delete`...).
    pub(crate) verb: &'a str,
    /// The request path.
    pub(crate) path: &'a str,
}

/// Any request an authorizer decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<'a> {
    /// A resource request.
    Resource(Attributes<'a>),
    /// A non-resource request.
    NonResource(NonResource<'a>),
}

impl Attributes<'_> {
    /// `pods` or `pods/exec`: how rules and messages name the resource.
    pub(crate) fn resource_with_subresource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// The verb a non-resource request's HTTP method stands for, as the API server names it.
pub fn non_resource_verb(method: &http::Method) -> String {
    match method.as_str() {
        "GET" | "HEAD" => "get".to_string(),
        other => other.to_ascii_lowercase(),
    }
}
