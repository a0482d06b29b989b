//! Building responses: JSON bodies, `Warning` headers, and every [`ApiError`] as the
//! `metav1.Status` it stands for (with `Retry-After` when it has one).

use crate::encoding::{self, Shape};
use crate::status::ApiError;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = json_response(self.code, &self.to_status());
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

/// A JSON response, its fields in a Go struct's order (`kind` and `apiVersion` first).
pub(crate) fn json_response(code: StatusCode, body: &Value) -> Response {
    let bytes = encoding::to_json(body, Shape::Typed);
    let mut resp = Response::new(Body::from(bytes));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// Adds one `Warning: 299 - "<text>"` header per warning of a write (unknown fields under
/// `fieldValidation=Warn`).
pub(crate) fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}
