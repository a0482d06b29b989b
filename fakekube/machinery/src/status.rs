//! `metav1.Status`: the body of every error the server answers, worded as the real API server
//! words it.

use crate::encoding::{self, Shape};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// One entry of `details.causes` in a Status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// Machine-readable cause (`FieldValueRequired`, `FieldValueNotSupported`...).
    pub reason: String,
    /// Human-readable text (`Required value`).
    pub message: String,
    /// Field path, when the cause is about a field.
    pub field: Option<String>,
}

/// An error answered as a `metav1.Status`.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status code (and the Status's `code`).
    pub code: StatusCode,
    /// The Status's `reason` (`NotFound`, `Conflict`, `Invalid`...).
    pub reason: &'static str,
    /// The Status's `message`, worded as the API server words it.
    pub message: String,
    /// The Status's `details` (name, group, kind, causes), when it has them.
    pub details: Option<Box<Value>>,
    /// Seconds for a `Retry-After` header (429).
    pub retry_after: Option<u64>,
}

/// Which object an error is about, for its message and `details`.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// API group (empty for core).
    pub group: &'a str,
    /// Plural resource name.
    pub resource: &'a str,
    /// Kind, for `Invalid` messages.
    pub kind: &'a str,
    /// Object name.
    pub name: &'a str,
}

impl Target<'_> {
    /// `pods` or `sandboxes.agents.x-k8s.io`, as the API server prints a group resource.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// `details` in `metav1.StatusDetails`' field order: name, group, kind.
    fn details(&self) -> Value {
        if self.group.is_empty() {
            json!({ "name": self.name, "kind": self.resource })
        } else {
            json!({ "name": self.name, "group": self.group, "kind": self.resource })
        }
    }
}

impl ApiError {
    /// A Status with no details.
    pub fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// 404 for a named object.
    pub fn not_found(t: Target<'_>) -> Self {
        let mut e = Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{} \"{}\" not found", t.group_resource(), t.name),
        );
        e.details = Some(Box::new(t.details()));
        e
    }

    /// 404 for a path the server does not serve.
    pub fn path_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 409 when a create names an object that exists.
    pub fn already_exists(t: Target<'_>) -> Self {
        let mut e = Self::new(
            StatusCode::CONFLICT,
            "AlreadyExists",
            format!("{} \"{}\" already exists", t.group_resource(), t.name),
        );
        e.details = Some(Box::new(t.details()));
        e
    }

    /// 409 for a write against a stale resourceVersion.
    pub fn conflict(t: Target<'_>, why: &str) -> Self {
        let mut e = Self::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {why}",
                t.group_resource(),
                t.name
            ),
        );
        e.details = Some(Box::new(t.details()));
        e
    }

    /// The standard stale-object conflict.
    pub fn stale(t: Target<'_>) -> Self {
        Self::conflict(
            t,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 with one cause per field.
    pub fn invalid(t: Target<'_>, causes: Vec<Cause>) -> Self {
        let summaries: Vec<String> = causes
            .iter()
            .map(|c| match &c.field {
                Some(f) => format!("{f}: {}", c.message),
                None => c.message.clone(),
            })
            .collect();
        let joined = if summaries.len() == 1 {
            summaries[0].clone()
        } else {
            format!("[{}]", summaries.join(", "))
        };
        let group_kind = if t.group.is_empty() {
            t.kind.to_string()
        } else {
            format!("{}.{}", t.kind, t.group)
        };
        let mut details = if t.group.is_empty() {
            json!({ "name": t.name, "kind": t.kind })
        } else {
            json!({ "name": t.name, "group": t.group, "kind": t.kind })
        };
        details["causes"] = Value::Array(
            causes
                .iter()
                .map(|c| {
                    let mut v = json!({ "reason": c.reason, "message": c.message });
                    if let Some(f) = &c.field {
                        v["field"] = json!(f);
                    }
                    v
                })
                .collect(),
        );
        let mut e = Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!("{group_kind} \"{}\" is invalid: {joined}", t.name),
        );
        e.details = Some(Box::new(details));
        e
    }

    /// 400 for a request the server cannot make sense of.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// 401 for a request without valid credentials.
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized")
    }

    /// 403 with the authorizer's wording.
    pub fn forbidden(message: String, details: Value) -> Self {
        let mut e = Self::new(StatusCode::FORBIDDEN, "Forbidden", message);
        e.details = Some(Box::new(details));
        e
    }

    /// 405 for a verb the resource does not support.
    pub fn method_not_allowed(method: &str, what: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!(
                "the server does not allow this method on the requested resource ({method} {what})"
            ),
        )
    }

    /// 410 for a continue token or watch resourceVersion older than the compaction window.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, "Expired", message)
    }

    /// 413 for a body over the server's limit.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 415 for a patch type the resource does not take.
    pub fn unsupported_media_type(ct: &str) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {ct}"
            ),
        )
    }

    /// 429 with a Retry-After.
    pub fn too_many_requests(retry_after: u64) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "TooManyRequests",
            "Too many requests, please try again later.",
        );
        e.details = Some(Box::new(json!({ "retryAfterSeconds": retry_after })));
        e.retry_after = Some(retry_after);
        e
    }

    /// 500 for a failure inside the server.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// The full `Status` object (with kind and apiVersion, as REST responses carry it).
    pub fn to_status(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        });
        if let Some(d) = &self.details {
            v["details"] = Value::clone(d);
        }
        v["code"] = json!(self.code.as_u16());
        v
    }
}

/// An error answers as its `Status` in JSON (fields in a Go struct's order), with
/// `Retry-After` when it has one. The impl lives with the type, which the orphan rule asks of
/// a foreign trait.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let bytes = encoding::to_json(&self.to_status(), Shape::Typed);
        let mut resp = Response::new(Body::from(bytes));
        *resp.status_mut() = self.code;
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

/// The `Success` Status that deletes of some kinds answer.
pub fn success(t: Target<'_>, uid: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": { "name": t.name, "group": t.group, "kind": t.resource, "uid": uid },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SANDBOX: Target<'static> = Target {
        group: "agents.x-k8s.io",
        resource: "sandboxes",
        kind: "Sandbox",
        name: "x",
    };

    #[test]
    fn not_found_names_group_resource_and_object() {
        let s = ApiError::not_found(SANDBOX).to_status();
        assert_eq!(s["message"], "sandboxes.agents.x-k8s.io \"x\" not found");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "sandboxes");
    }

    #[test]
    fn invalid_with_two_causes_brackets_the_summaries() {
        let c = |f: &str, m: &str| Cause {
            reason: "FieldValueRequired".into(),
            message: m.into(),
            field: Some(f.into()),
        };
        let s = ApiError::invalid(
            SANDBOX,
            vec![c("spec.a", "Required value"), c("spec.b", "Required value")],
        )
        .to_status();
        assert_eq!(
            s["message"],
            "Sandbox.agents.x-k8s.io \"x\" is invalid: [spec.a: Required value, spec.b: Required value]"
        );
        assert_eq!(s["details"]["causes"][1]["field"], "spec.b");
        assert_eq!(s["code"], 422);
    }
}
