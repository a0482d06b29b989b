//! The review kinds: objects that are only ever created, answered and never stored.
//! Authorization (`authorization.k8s.io/v1`): SelfSubjectAccessReview and
//! SelfSubjectRulesReview (what `kubectl auth can-i` and `--list` ask), SubjectAccessReview and
//! LocalSubjectAccessReview (the same questions about another user). Authentication
//! (`authentication.k8s.io/v1`): TokenReview and SelfSubjectReview (`kubectl auth whoami`).
//! The caller was authorized to create the review before it gets here.
//!
//! - `access`: the authorization reviews.
//! - `authentication`: TokenReview and SelfSubjectReview.

mod access;
mod authentication;

use crate::authz::Caller;
use crate::registry::ResourceType;
use crate::request;
use crate::response::json_response;
use crate::state::Shared;
use crate::status::{ApiError, Cause, Target};
use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

/// Reads a review from the body and answers it (201, the review with its `status`).
pub(crate) async fn serve(
    shared: &Shared,
    rt: &ResourceType,
    caller: &Caller,
    namespace: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let mut review = request::decode(headers, &request::read_body(body).await?)?;
    if !review.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match rt.kind.as_str() {
        "SelfSubjectAccessReview" => access::self_access(caller, &spec)?,
        "SelfSubjectRulesReview" => access::self_rules(caller, &spec),
        "SubjectAccessReview" => access::subject_access(caller, &spec, None)?,
        "LocalSubjectAccessReview" => {
            let spec = access::local_spec(spec, namespace)?;
            if let Some(s) = review.get_mut("spec") {
                *s = spec.clone();
            }
            access::subject_access(caller, &spec, Some(namespace))?
        }
        "TokenReview" => authentication::token_review(shared, &spec),
        "SelfSubjectReview" => authentication::self_subject(caller),
        other => return Err(ApiError::internal(format!("no review handler for {other}"))),
    };
    if let Some(o) = review.as_object_mut() {
        o.insert("apiVersion".into(), json!(rt.api_version()));
        o.insert("kind".into(), json!(rt.kind));
        let md = o.entry("metadata").or_insert_with(|| json!({}));
        if let Some(md) = md.as_object_mut() {
            md.insert("creationTimestamp".into(), Value::Null);
            if !namespace.is_empty() {
                md.insert("namespace".into(), json!(namespace));
            }
        }
        o.insert("status".into(), status);
    }
    Ok(json_response(StatusCode::CREATED, &review))
}

/// A 422 for a review, naming its kind as the API server does.
fn invalid(kind: &str, group: &str, field: &str, message: &str) -> ApiError {
    ApiError::invalid(
        Target {
            group,
            resource: "",
            kind,
            name: "",
        },
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: message.into(),
            field: Some(field.into()),
        }],
    )
}
