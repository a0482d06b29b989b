//! The authorization reviews: may this user do this (SelfSubjectAccessReview,
//! SubjectAccessReview, LocalSubjectAccessReview), and what may it do in a namespace
//! (SelfSubjectRulesReview). Decided by the same authorizer as requests.

use super::invalid;
use crate::authn::UserInfo;
use crate::authz::{Caller, Decision};
use crate::rbac::{Action, Attributes, NonResource, PolicyRule};
use crate::status::ApiError;
use serde_json::{Map, Value, json};

/// The API group of the authorization reviews.
const AUTHORIZATION_GROUP: &str = "authorization.k8s.io";

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The strings of a JSON list (anything else reads as none).
fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// The action a review's spec asks about, or the 422 of a spec naming none or both.
fn action_of<'a>(kind: &str, spec: &'a Value) -> Result<Action<'a>, ApiError> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(_), Some(n)) => Err(invalid(
            kind,
            AUTHORIZATION_GROUP,
            "spec.nonResourceAttributes",
            &format!(
                "Invalid value: {n}: cannot be specified in combination with resourceAttributes"
            ),
        )),
        (None, None) => Err(invalid(
            kind,
            AUTHORIZATION_GROUP,
            "spec.resourceAttributes",
            "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        (Some(ra), None) => Ok(Action::Resource(Attributes {
            verb: text(ra, "verb"),
            group: text(ra, "group"),
            resource: text(ra, "resource"),
            subresource: text(ra, "subresource"),
            namespace: text(ra, "namespace"),
            name: text(ra, "name"),
        })),
        (None, Some(n)) => Ok(Action::NonResource(NonResource {
            verb: text(n, "verb"),
            path: text(n, "path"),
        })),
    }
}

/// A decision as a review's `status`.
fn status_of(d: &Decision) -> Value {
    let mut s = json!({ "allowed": d.allowed });
    if !d.reason.is_empty() {
        s["reason"] = json!(d.reason);
    }
    s
}

/// SelfSubjectAccessReview: may the caller do this?
pub(super) fn self_access(caller: &Caller, spec: &Value) -> Result<Value, ApiError> {
    let action = action_of("SelfSubjectAccessReview", spec)?;
    Ok(status_of(&caller.decide(&action)))
}

/// SubjectAccessReview and LocalSubjectAccessReview: may the user the spec names do this?
pub(super) fn subject_access(
    caller: &Caller,
    spec: &Value,
    namespace: Option<&str>,
) -> Result<Value, ApiError> {
    let kind = if namespace.is_some() {
        "LocalSubjectAccessReview"
    } else {
        "SubjectAccessReview"
    };
    let groups = string_list(spec.get("groups"));
    let name = text(spec, "user");
    if name.is_empty() && groups.is_empty() {
        return Err(invalid(
            kind,
            AUTHORIZATION_GROUP,
            "spec.user",
            "Invalid value: \"\": at least one of user or group must be specified",
        ));
    }
    let action = action_of(kind, spec)?;
    let mut user = UserInfo::new(name, groups);
    user.uid = text(spec, "uid").to_string();
    if let Some(extra) = spec.get("extra").and_then(Value::as_object) {
        for (k, v) in extra {
            user.extra.insert(k.clone(), string_list(Some(v)));
        }
    }
    Ok(status_of(&caller.authorizer().decide(&user, None, &action)))
}

/// A LocalSubjectAccessReview's spec with its namespace checked against (or defaulted to) the
/// one in the path.
pub(super) fn local_spec(mut spec: Value, namespace: &str) -> Result<Value, ApiError> {
    if spec
        .get("nonResourceAttributes")
        .is_some_and(|v| !v.is_null())
    {
        return Err(invalid(
            "LocalSubjectAccessReview",
            AUTHORIZATION_GROUP,
            "spec.nonResourceAttributes",
            "Invalid value: {}: disallowed on this kind of request",
        ));
    }
    if let Some(ra) = spec
        .get_mut("resourceAttributes")
        .and_then(Value::as_object_mut)
    {
        let given = ra.get("namespace").and_then(Value::as_str).unwrap_or("");
        if given.is_empty() {
            ra.insert("namespace".into(), json!(namespace));
        } else if given != namespace {
            return Err(ApiError::bad_request(format!(
                "spec.resourceAttributes.namespace must match namespace: {namespace}"
            )));
        }
    }
    Ok(spec)
}

/// SelfSubjectRulesReview: every rule the caller holds in `spec.namespace`.
pub(super) fn self_rules(caller: &Caller, spec: &Value) -> Value {
    let review = caller.rules_in(text(spec, "namespace"));
    let rule_json = |r: &PolicyRule, keys: &[(&str, &Vec<String>)]| {
        let mut o = Map::new();
        o.insert("verbs".into(), json!(r.verbs));
        for (k, list) in keys {
            if !list.is_empty() {
                o.insert((*k).to_string(), json!(list));
            }
        }
        Value::Object(o)
    };
    let resource_rules: Vec<Value> = review
        .resource_rules
        .iter()
        .map(|r| {
            rule_json(
                r,
                &[
                    ("apiGroups", &r.api_groups),
                    ("resources", &r.resources),
                    ("resourceNames", &r.resource_names),
                ],
            )
        })
        .collect();
    let non_resource_rules: Vec<Value> = review
        .non_resource_rules
        .iter()
        .map(|r| rule_json(r, &[("nonResourceURLs", &r.non_resource_urls)]))
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !review.errors.is_empty(),
    });
    if !review.errors.is_empty() {
        status["evaluationError"] = json!(review.errors.join(", "));
    }
    status
}
