//! What a request carries besides its path: the query parameters ([`Query`], and the options
//! of each verb parsed from them) and the body (read up to [`MAX_BODY`], decoded from JSON,
//! YAML or protobuf). Errors are the `metav1.Status` the API server answers for the same input.

use crate::protobuf::{self, ProtobufError};
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{ApiError, Cause, Target};
use crate::store::{DeleteOptions, FieldValidation, ListQuery, Propagation, WriteOptions};
use axum::body::{Body, Bytes, HttpBody};
use http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::Duration;

/// The largest request body the server reads (the API server's limit is 3 MiB).
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

pub(crate) use fakekube_machinery::query::Query;

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
            Some(f.on_fields(|field| rt.stored_field(field)))
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

/// The verb whose options a write's query carries, for the API server's option checks and the
/// kind it names in their errors (`CreateOptions.meta.k8s.io "" is invalid: …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteVerb {
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH, with whether it is a server-side apply (which requires `fieldManager` and alone
    /// may say `force`).
    Patch {
        /// The patch is `application/apply-patch+yaml`.
        apply: bool,
    },
}

impl WriteVerb {
    /// `CreateOptions`, `UpdateOptions` or `PatchOptions`.
    fn options_kind(self) -> &'static str {
        match self {
            WriteVerb::Create => "CreateOptions",
            WriteVerb::Update => "UpdateOptions",
            WriteVerb::Patch { .. } => "PatchOptions",
        }
    }
}

/// The longest `fieldManager` the API server takes.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The write options (`fieldValidation`, `dryRun`, `fieldManager`, `force`) of a create,
/// update or patch, checked as the API server's `Validate*Options` check them: an option it
/// does not take is a 422 about `<Verb>Options.meta.k8s.io`.
pub(crate) fn write_options(query: &Query, verb: WriteVerb) -> Result<WriteOptions, ApiError> {
    let mut causes = Vec::new();
    let unsupported = |field: &str, shown: String, supported: &str| Cause {
        reason: "FieldValueNotSupported".into(),
        message: format!("Unsupported value: {shown}: supported values: {supported}"),
        field: Some(field.into()),
    };
    let manager = query.get("fieldManager").unwrap_or("");
    let force = query.get("force").map(|_| query.flag("force"));
    match verb {
        WriteVerb::Patch { apply: true } if manager.is_empty() => causes.push(Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: is required for apply patch".into(),
            field: Some("fieldManager".into()),
        }),
        WriteVerb::Patch { apply: false } if force.is_some() => causes.push(Cause {
            reason: "FieldValueForbidden".into(),
            message: "Forbidden: may not be specified for non-apply patch".into(),
            field: Some("force".into()),
        }),
        _ => {}
    }
    if manager.chars().count() > FIELD_MANAGER_MAX_LENGTH {
        causes.push(Cause {
            reason: "FieldValueTooLong".into(),
            message: format!("Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"),
            field: Some("fieldManager".into()),
        });
    }
    if let Some((i, c)) = manager.chars().enumerate().find(|(_, c)| c.is_control()) {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {manager:?}: invalid character {} (at position {i})",
                go_rune(c)
            ),
            field: Some("fieldManager".into()),
        });
    }
    let dry_run = match query.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(v) => {
            causes.push(unsupported(
                "dryRun",
                format!("[]string{{{v:?}}}"),
                "\"All\"",
            ));
            false
        }
    };
    let field_validation = match query.get("fieldValidation").unwrap_or("") {
        "" | "Warn" => FieldValidation::Warn,
        "Strict" => FieldValidation::Strict,
        "Ignore" => FieldValidation::Ignore,
        v => {
            causes.push(unsupported(
                "fieldValidation",
                format!("{v:?}"),
                "\"\", \"Ignore\", \"Strict\", \"Warn\"",
            ));
            FieldValidation::Warn
        }
    };
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            Target {
                group: "meta.k8s.io",
                resource: "",
                kind: verb.options_kind(),
                name: "",
            },
            causes,
        ));
    }
    Ok(WriteOptions {
        field_validation,
        dry_run,
        patch: false,
        manager: (!manager.is_empty()).then(|| manager.to_owned()),
        force: force.unwrap_or(false),
        binding: false,
        user: None,
    })
}

/// A character as Go's `%#U` prints it (`U+0007`), for the fieldManager error.
fn go_rune(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// The `DeleteOptions` of a delete: from the body when it has one, else from the query (the
/// API server reads one or the other, never both), checked as `ValidateDeleteOptions` checks
/// them (a 422 about `DeleteOptions.meta.k8s.io`).
pub(crate) fn delete_options(query: &Query, raw: &[u8]) -> Result<DeleteOptions, ApiError> {
    let from_body = !raw.is_empty();
    let body: Value = if from_body {
        serde_json::from_slice(raw)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    } else {
        json!({})
    };
    if from_body && !body.is_object() {
        return Err(ApiError::bad_request(
            "decoded object cannot be converted to DeleteOptions",
        ));
    }
    let text = |key: &str| -> Option<String> {
        if from_body {
            body.get(key).and_then(Value::as_str).map(str::to_string)
        } else {
            query.get(key).map(str::to_string)
        }
    };
    let policy = text("propagationPolicy");
    let orphan = if from_body {
        body.get("orphanDependents").and_then(Value::as_bool)
    } else {
        query
            .get("orphanDependents")
            .map(|_| query.flag("orphanDependents"))
    };
    let dry_run: Vec<String> = if from_body {
        body.get("dryRun")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        query.all("dryRun").map(str::to_string).collect()
    };
    let mut causes = Vec::new();
    if orphan.is_some() && policy.is_some() {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {:?}: orphanDependents and deletionPropagation cannot be both set",
                policy.as_deref().unwrap_or("")
            ),
            field: Some("propagationPolicy".into()),
        });
    }
    let propagation = match (policy.as_deref(), orphan) {
        (Some("Orphan"), _) | (None, Some(true)) => Some(Propagation::Orphan),
        (Some("Background"), _) => Some(Propagation::Background),
        (Some("Foreground"), _) => Some(Propagation::Foreground),
        (None, _) => None,
        (Some(other), _) => {
            causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
                field: Some("propagationPolicy".into()),
            });
            None
        }
    };
    // `gracePeriodSeconds` (pods): from the body when there is one, else the query.
    let grace_period = if from_body {
        body.get("gracePeriodSeconds").and_then(Value::as_i64)
    } else {
        match query.get("gracePeriodSeconds") {
            Some(v) => match v.parse::<i64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    causes.push(Cause {
                        reason: "FieldValueInvalid".into(),
                        message: format!("Invalid value: {v:?}: must be an integer"),
                        field: Some("gracePeriodSeconds".into()),
                    });
                    None
                }
            },
            None => None,
        }
    };
    if let Some(bad) = dry_run.iter().find(|v| v.as_str() != "All") {
        causes.push(Cause {
            reason: "FieldValueNotSupported".into(),
            message: format!("Unsupported value: []string{{{bad:?}}}: supported values: \"All\""),
            field: Some("dryRun".into()),
        });
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            Target {
                group: "meta.k8s.io",
                resource: "",
                kind: "DeleteOptions",
                name: "",
            },
            causes,
        ));
    }
    let pre = body.get("preconditions");
    Ok(DeleteOptions {
        user: None,
        propagation,
        uid: pre
            .and_then(|p| p.get("uid"))
            .and_then(Value::as_str)
            .map(str::to_string),
        resource_version: pre
            .and_then(|p| p.get("resourceVersion"))
            .and_then(Value::as_str)
            .map(str::to_string),
        dry_run: !dry_run.is_empty(),
        grace_period,
        orphan_dependents: orphan,
    })
}

/// Reads the whole body, refusing one larger than [`MAX_BODY`] with 413.
///
/// A body whose declared length (`Content-Length`) is already over the limit is refused before
/// a byte of it is read: over HTTP/1.1 hyper sends `100 Continue` to a client that waits for it
/// (curl, for any large upload) when the body is first polled, and a client that was told to go
/// on is still sending when the 413 closes the connection, so it may never read the answer.
pub(crate) async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    if HttpBody::size_hint(&body).lower() > MAX_BODY as u64 {
        return Err(ApiError::too_large(MAX_BODY));
    }
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
