//! The 403 the API server answers when no authorizer allows a request, worded as it words it.

use super::attributes::Action;
use crate::status::ApiError;
use serde_json::json;

/// `User "u" cannot get resource "pods" in API group "" in the namespace "ns"`, or for a path
/// `User "u" cannot get path "/api"`: the authorizer's sentence, without the resource prefix.
fn denial(user: &str, action: &Action<'_>) -> String {
    match action {
        Action::NonResource(n) => {
            format!("User \"{user}\" cannot {} path \"{}\"", n.verb, n.path)
        }
        Action::Resource(a) => {
            let resource = a.resource_with_subresource();
            if a.namespace.is_empty() {
                format!(
                    "User \"{user}\" cannot {} resource \"{resource}\" in API group \"{}\" at the cluster scope",
                    a.verb, a.group
                )
            } else {
                format!(
                    "User \"{user}\" cannot {} resource \"{resource}\" in API group \"{}\" in the namespace \"{}\"",
                    a.verb, a.group, a.namespace
                )
            }
        }
    }
}

/// The Forbidden Status for `user` refused `action`; a non-empty `reason` (the authorizer's,
/// such as a binding to a missing role) follows the sentence after a colon.
pub(crate) fn forbidden(user: &str, action: &Action<'_>, reason: &str) -> ApiError {
    let mut why = denial(user, action);
    if !reason.is_empty() {
        why.push_str(": ");
        why.push_str(reason);
    }
    match action {
        Action::NonResource(_) => ApiError::forbidden(format!("forbidden: {why}"), json!({})),
        Action::Resource(a) => {
            let gr = if a.group.is_empty() {
                a.resource.to_string()
            } else {
                format!("{}.{}", a.resource, a.group)
            };
            let message = if a.name.is_empty() {
                format!("{gr} is forbidden: {why}")
            } else {
                format!("{gr} \"{}\" is forbidden: {why}", a.name)
            };
            let mut details = json!({ "kind": a.resource });
            if !a.name.is_empty() {
                details["name"] = json!(a.name);
            }
            if !a.group.is_empty() {
                details["group"] = json!(a.group);
            }
            ApiError::forbidden(message, details)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::attributes::{Attributes, NonResource};

    fn attrs<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
        name: &'a str,
    ) -> Action<'a> {
        Action::Resource(Attributes {
            verb,
            group,
            resource,
            subresource: sub,
            namespace: ns,
            name,
        })
    }

    #[test]
    fn forbidden_is_worded_as_the_api_server_words_it() {
        let e = forbidden(
            "alice",
            &attrs("delete", "agents.x-k8s.io", "sandboxes", "", "sb", "x"),
            "",
        );
        assert_eq!(
            e.message,
            "sandboxes.agents.x-k8s.io \"x\" is forbidden: User \"alice\" cannot delete resource \"sandboxes\" in API group \"agents.x-k8s.io\" in the namespace \"sb\""
        );
        let e = forbidden(
            "bob",
            &attrs("create", "", "pods", "exec", "default", "p"),
            "",
        );
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: User \"bob\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\""
        );
        let e = forbidden("bob", &attrs("list", "", "namespaces", "", "", ""), "");
        assert_eq!(
            e.message,
            "namespaces is forbidden: User \"bob\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
        );
    }

    #[test]
    fn a_path_is_forbidden_without_a_resource_and_a_reason_follows_a_colon() {
        let path = Action::NonResource(NonResource {
            verb: "get",
            path: "/metrics",
        });
        assert_eq!(
            forbidden("system:anonymous", &path, "").message,
            "forbidden: User \"system:anonymous\" cannot get path \"/metrics\""
        );
        let e = forbidden(
            "u",
            &attrs("get", "", "pods", "", "ns", ""),
            "RBAC: role.rbac.authorization.k8s.io \"gone\" not found",
        );
        assert!(
            e.message.ends_with(
                "in the namespace \"ns\": RBAC: role.rbac.authorization.k8s.io \"gone\" not found"
            ),
            "{}",
            e.message
        );
    }
}
