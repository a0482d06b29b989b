//! `SelfSubjectAccessReview` and `SelfSubjectRulesReview`: what `kubectl auth can-i` asks.

use crate::auth::{Attributes, Caller};
use crate::registry::ResourceType;
use crate::request;
use crate::response::json_response;
use crate::status::ApiError;
use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

/// Reads a review of the caller's own permissions from the body and answers it. Every
/// authenticated user may ask what it may do (`system:basic-user`), so nothing is authorized.
pub(crate) async fn serve(
    rt: &ResourceType,
    caller: &Caller,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let body = request::decode(headers, &request::read_body(body).await?)?;
    Ok(review(rt, caller, body))
}

/// Answers a review of the caller's own permissions.
fn review(rt: &ResourceType, caller: &Caller, mut body: Value) -> Response {
    let str_at = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let status = match rt.kind.as_str() {
        "SelfSubjectAccessReview" => {
            let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
            if let Some(ra) = spec.get("resourceAttributes") {
                let (verb, group, resource, sub, ns, name) = (
                    str_at(ra, "verb"),
                    str_at(ra, "group"),
                    str_at(ra, "resource"),
                    str_at(ra, "subresource"),
                    str_at(ra, "namespace"),
                    str_at(ra, "name"),
                );
                let allowed = caller.allows(&Attributes {
                    verb: &verb,
                    group: &group,
                    resource: &resource,
                    subresource: &sub,
                    namespace: &ns,
                    name: &name,
                });
                json!({ "allowed": allowed })
            } else {
                // Non-resource URLs (discovery, health) are open to every authenticated user.
                json!({ "allowed": true })
            }
        }
        _ => {
            let ns = body
                .get("spec")
                .map(|s| str_at(s, "namespace"))
                .unwrap_or_default();
            json!({
                "resourceRules": caller.rules_in(&ns),
                "nonResourceRules": [ { "verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"] } ],
                "incomplete": false,
            })
        }
    };
    if let Some(o) = body.as_object_mut() {
        o.insert(
            "apiVersion".into(),
            json!(format!("{}/{}", rt.group, rt.version)),
        );
        o.insert("kind".into(), json!(rt.kind));
        o.insert("status".into(), status);
        o.entry("metadata").or_insert_with(|| json!({}));
    }
    json_response(StatusCode::CREATED, &body)
}
