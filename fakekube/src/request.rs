//! What a request carries besides its path: the query parameters ([`Query`], and the options
//! of each verb parsed from them) and the body (read up to [`MAX_BODY`], decoded from JSON,
//! YAML or protobuf). Errors are the `metav1.Status` the API server answers for the same input.

use crate::protobuf::{self, ProtobufError};
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{DeleteOptions, FieldValidation, ListQuery, Propagation, WriteOptions};
use axum::body::{Body, Bytes};
use http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::Duration;

/// The largest request body the server reads (the API server's limit is 3 MiB).
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

/// Query parameters, first value wins.
#[derive(Debug, Default)]
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    /// Parses a query string (`None`: no query).
    pub(crate) fn parse(q: Option<&str>) -> Self {
        Query(
            q.map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default(),
        )
    }

    /// The first value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean the way apimachinery parses one: missing is false, `0`/`false` in any case
    /// are false, anything else (even empty) is true.
    pub(crate) fn flag(&self, key: &str) -> bool {
        match self.get(key) {
            None => false,
            Some(v) => !(v == "0" || v.eq_ignore_ascii_case("false")),
        }
    }
}

/// Parses `timeoutSeconds`.
pub(crate) fn timeout_param(query: &Query) -> Option<Duration> {
    query
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
}

/// The list options (`labelSelector`, `fieldSelector`, `limit`, `continue`) of a list,
/// watch or deletecollection of `rt`.
pub(crate) fn list_query(rt: &ResourceType, query: &Query) -> Result<ListQuery, ApiError> {
    let labels = match query.get("labelSelector") {
        None | Some("") => None,
        Some(s) => Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?),
    };
    let fields = match query.get("fieldSelector") {
        None | Some("") => None,
        Some(s) => {
            let f = FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?;
            let mut supported = vec!["metadata.name", "metadata.namespace"];
            supported.extend(rt.selectable_fields.iter().map(String::as_str));
            f.check_supported(&supported)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            Some(f)
        }
    };
    let limit = match query.get("limit") {
        None | Some("") => 0,
        Some(s) => s
            .parse::<i64>()
            .map_err(|_| {
                ApiError::bad_request(format!("limit: Invalid value: \"{s}\": must be an integer"))
            })?
            .max(0) as usize,
    };
    let continue_token = query
        .get("continue")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    Ok(ListQuery {
        labels,
        fields,
        limit,
        continue_token,
    })
}

/// The write options (`fieldValidation`, `dryRun`) of a create, update or patch.
pub(crate) fn write_options(query: &Query) -> Result<WriteOptions, ApiError> {
    let field_validation = match query.get("fieldValidation") {
        None | Some("") => FieldValidation::Warn,
        Some(v) if v.eq_ignore_ascii_case("strict") => FieldValidation::Strict,
        Some(v) if v.eq_ignore_ascii_case("warn") => FieldValidation::Warn,
        Some(v) if v.eq_ignore_ascii_case("ignore") => FieldValidation::Ignore,
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: \"{v}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
            )));
        }
    };
    let dry_run = match query.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: \"{v}\": supported values: \"All\""
            )));
        }
    };
    Ok(WriteOptions {
        field_validation,
        dry_run,
        patch: false,
    })
}

/// The `DeleteOptions` of a delete, from the query and the body (the query wins).
pub(crate) fn delete_options(query: &Query, raw: &[u8]) -> Result<DeleteOptions, ApiError> {
    let body: Value = if raw.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(raw)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    let policy = query
        .get("propagationPolicy")
        .map(str::to_string)
        .or_else(|| {
            body.get("propagationPolicy")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let orphan = query
        .get("orphanDependents")
        .map(|v| v == "true")
        .or_else(|| body.get("orphanDependents").and_then(Value::as_bool));
    let propagation = match (policy.as_deref(), orphan) {
        (Some("Orphan"), _) | (None, Some(true)) => Some(Propagation::Orphan),
        (Some("Background"), _) => Some(Propagation::Background),
        (Some("Foreground"), _) => Some(Propagation::Foreground),
        (None, _) => None,
        (Some(other), _) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
    };
    let grace_period = match query.get("gracePeriodSeconds") {
        Some(v) => Some(v.parse::<i64>().map_err(|_| {
            ApiError::bad_request(format!(
                "gracePeriodSeconds: Invalid value: \"{v}\": must be an integer"
            ))
        })?),
        None => body.get("gracePeriodSeconds").and_then(Value::as_i64),
    };
    let pre = body.get("preconditions");
    let dry_run = query.get("dryRun") == Some("All")
        || body
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        propagation,
        uid: pre
            .and_then(|p| p.get("uid"))
            .and_then(Value::as_str)
            .map(str::to_string),
        resource_version: pre
            .and_then(|p| p.get("resourceVersion"))
            .and_then(Value::as_str)
            .map(str::to_string),
        dry_run,
        grace_period,
    })
}

/// Reads the whole body, refusing one larger than [`MAX_BODY`] with 413.
pub(crate) async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiError::too_large(MAX_BODY))
        }
        Err(_) => Err(ApiError::bad_request("the request body could not be read")),
    }
}

/// Decodes a JSON or YAML body into a JSON value.
pub(crate) fn decode(headers: &HeaderMap, bytes: &[u8]) -> Result<Value, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if bytes.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    if essence == "application/vnd.kubernetes.protobuf" {
        return protobuf::decode(bytes).map_err(|e| match e {
            ProtobufError::UnsupportedKind(kind) => ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UnsupportedMediaType",
                format!("fakekube reads protobuf bodies only for the kinds kubectl sends that way, not {kind}; send application/json"),
            ),
            other => ApiError::bad_request(other.to_string()),
        });
    }
    if essence.contains("protobuf") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml; got {essence}"
            ),
        ));
    }
    if essence.ends_with("yaml") {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| ApiError::bad_request("the YAML body is not UTF-8"))?;
        return serde_saphyr::from_str::<Value>(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "Object 'Kind' is missing or the body is not valid JSON: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boolean_parameters_parse_as_apimachinery_does() {
        let q = Query::parse(Some("&a=true&b=False&c=0&d=&e=yes"));
        assert!(q.flag("a"));
        assert!(!q.flag("b"));
        assert!(!q.flag("c"));
        assert!(q.flag("d"));
        assert!(q.flag("e"));
        assert!(!q.flag("missing"));
    }
}
