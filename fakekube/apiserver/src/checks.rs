//! The API server's checks of a resource request before its handler runs, each answered as the
//! API server answers it: a body in a media type no serializer reads (415), and query
//! parameters it refuses (400): a `resourceVersion` that is not one, `resourceVersionMatch`
//! where it is forbidden or unknown, a negative or non-integer `timeoutSeconds` or `limit`.
//! [`request`] runs them all; the dispatcher calls it once the verb is known.

use crate::request::Query;
use crate::status::ApiError;
use http::{HeaderMap, StatusCode, header};

/// The media types a create or update body may be sent in (the API server's serializers).
const BODY_TYPES: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// Runs every check of a request for the authorization `verb` (`get`, `list`, `watch`,
/// `create`, `update`, `patch`, `delete`, `deletecollection`) of a resource or subresource.
pub(crate) fn request(verb: &str, headers: &HeaderMap, query: &Query) -> Result<(), ApiError> {
    if matches!(verb, "create" | "update") {
        body_media_type(headers)?;
    }
    query_parameters(verb, query)
}

/// 415 for a create or update body whose `Content-Type` names a media type the API server
/// has no serializer for. A request without one is read as JSON, as the API server reads it
/// (its first serializer); patches are checked by their handler, against the patch types.
pub(crate) fn body_media_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let raw = value.to_str().unwrap_or("");
    if raw.trim().is_empty() {
        return Ok(());
    }
    let essence = raw.split(';').next().unwrap_or("").trim();
    if BODY_TYPES.iter().any(|t| t.eq_ignore_ascii_case(essence)) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            BODY_TYPES.join(", ")
        ),
    ))
}

/// 400 for query parameters the API server refuses for `verb`.
pub(crate) fn query_parameters(verb: &str, query: &Query) -> Result<(), ApiError> {
    let reads = matches!(verb, "get" | "list" | "watch");
    if reads && let Some(rv) = query.get("resourceVersion") {
        resource_version(rv)?;
    }
    if matches!(verb, "list" | "watch" | "deletecollection") {
        resource_version_match(verb, query)?;
        if let Some(limit) = query.get("limit").filter(|s| !s.is_empty()) {
            non_negative("limit", limit)?;
        }
    }
    if let Some(t) = query.get("timeoutSeconds").filter(|s| !s.is_empty()) {
        non_negative("timeoutSeconds", t)?;
    }
    Ok(())
}

/// A resourceVersion is empty or a decimal number (what the store hands out; the API server's
/// storage refuses anything else).
fn resource_version(rv: &str) -> Result<(), ApiError> {
    if rv.is_empty() || rv.parse::<u64>().is_ok() {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "invalid resource version: resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": invalid syntax"
    )))
}

/// `resourceVersionMatch`: for a watch, only `NotOlderThan` with `sendInitialEvents`; for a
/// list, forbidden without `resourceVersion` or with `continue`, only `Exact` and
/// `NotOlderThan`, `Exact` not with `resourceVersion=0`.
fn resource_version_match(verb: &str, query: &Query) -> Result<(), ApiError> {
    let Some(m) = query.get("resourceVersionMatch").filter(|s| !s.is_empty()) else {
        return Ok(());
    };
    let forbidden = |why: &str| {
        Err(ApiError::bad_request(format!(
            "resourceVersionMatch: Forbidden: {why}"
        )))
    };
    if verb == "watch" {
        // A streaming list (`sendInitialEvents`) takes `NotOlderThan`; any other watch none.
        if query.get("sendInitialEvents").is_none() {
            return forbidden(
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            );
        }
        if m != "NotOlderThan" {
            return Err(ApiError::bad_request(format!(
                "resourceVersionMatch: Unsupported value: \"{m}\": supported values: \"NotOlderThan\""
            )));
        }
        return Ok(());
    }
    let rv = query.get("resourceVersion").unwrap_or("");
    if rv.is_empty() {
        return forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided");
    }
    if query.get("continue").is_some_and(|c| !c.is_empty()) {
        return forbidden("resourceVersionMatch is forbidden when continue is provided");
    }
    match m {
        "Exact" if rv == "0" => {
            forbidden("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"")
        }
        "Exact" | "NotOlderThan" => Ok(()),
        other => Err(ApiError::bad_request(format!(
            "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
        ))),
    }
}

/// An integer parameter that must be at least zero.
fn non_negative(name: &str, value: &str) -> Result<(), ApiError> {
    match value.parse::<i64>() {
        Ok(n) if n >= 0 => Ok(()),
        Ok(n) => Err(ApiError::bad_request(format!(
            "{name}: Invalid value: {n}: must be greater than or equal to 0"
        ))),
        Err(_) => Err(ApiError::bad_request(format!(
            "{name}: Invalid value: \"{value}\": strconv.ParseInt: parsing \"{value}\": invalid syntax"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Query {
        Query::parse(Some(s))
    }

    fn code(r: Result<(), ApiError>) -> u16 {
        r.err().map_or(200, |e| e.code.as_u16())
    }

    #[test]
    fn a_body_in_text_plain_is_refused_with_415_naming_the_accepted_types() {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        let e = request("create", &h, &q("")).unwrap_err();
        assert_eq!(e.code, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert!(e.message.contains("application/json, application/yaml"));
        assert_eq!(code(request("update", &h, &q(""))), 415);
        // Patches have their own media types, checked by the patch handler.
        assert_eq!(code(request("patch", &h, &q(""))), 200);
    }

    #[test]
    fn a_body_without_content_type_or_with_parameters_is_read() {
        assert_eq!(code(request("create", &HeaderMap::new(), &q(""))), 200);
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            "application/JSON; charset=utf-8".parse().unwrap(),
        );
        assert_eq!(code(request("create", &h, &q(""))), 200);
    }

    #[test]
    fn a_resource_version_that_is_not_a_number_is_a_bad_request() {
        let e = query_parameters("list", &q("resourceVersion=abc&resourceVersionMatch=Exact"))
            .unwrap_err();
        assert_eq!(e.code, StatusCode::BAD_REQUEST);
        assert!(
            e.message.contains("invalid resource version"),
            "{}",
            e.message
        );
        assert_eq!(
            code(query_parameters("get", &q("resourceVersion=abc"))),
            400
        );
        assert_eq!(
            code(query_parameters("watch", &q("resourceVersion=1x"))),
            400
        );
        assert_eq!(
            code(query_parameters("list", &q("resourceVersion=12"))),
            200
        );
    }

    #[test]
    fn resource_version_match_is_checked_as_the_api_server_checks_it() {
        for bad in [
            "resourceVersionMatch=Exact",
            "resourceVersionMatch=Exact&resourceVersion=0",
            "resourceVersionMatch=Newest&resourceVersion=1",
            "resourceVersionMatch=NotOlderThan&resourceVersion=1&continue=x",
        ] {
            assert_eq!(code(query_parameters("list", &q(bad))), 400, "{bad}");
        }
        assert_eq!(
            code(query_parameters(
                "watch",
                &q("resourceVersionMatch=NotOlderThan&resourceVersion=1")
            )),
            400
        );
        assert_eq!(
            code(query_parameters(
                "list",
                &q("resourceVersionMatch=NotOlderThan&resourceVersion=0")
            )),
            200
        );
        // A streaming list: a watch with sendInitialEvents takes NotOlderThan, and only it.
        assert_eq!(
            code(query_parameters(
                "watch",
                &q("sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
            )),
            200
        );
        assert_eq!(
            code(query_parameters(
                "watch",
                &q("sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=1")
            )),
            400
        );
    }

    #[test]
    fn negative_or_non_integer_timeouts_and_limits_are_bad_requests() {
        for bad in [
            "timeoutSeconds=-5",
            "timeoutSeconds=1e12",
            "timeoutSeconds=1.5",
            "limit=-1",
            "limit=ten",
        ] {
            assert_eq!(code(query_parameters("watch", &q(bad))), 400, "{bad}");
        }
        assert_eq!(
            code(query_parameters("watch", &q("timeoutSeconds=30&limit=5"))),
            200
        );
    }
}
