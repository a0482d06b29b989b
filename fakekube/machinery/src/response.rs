//! Building responses: JSON bodies and `Warning` headers. Every `ApiError` answers as the
//! `metav1.Status` it stands for (with `Retry-After` when it has one) through its
//! `IntoResponse` impl, which lives with the type in `fakekube-machinery`.

use crate::encoding::{self, Shape};
use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

/// A JSON response, its fields in a Go struct's order (`kind` and `apiVersion` first).
pub fn json_response(code: StatusCode, body: &Value) -> Response {
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
pub fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}
