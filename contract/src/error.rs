//! The closed error taxonomy: [`ErrorCode`] with its HTTP status, and the [`Error`] every
//! provider operation returns.
//!
//! Codes are sorted by who is at fault and what the caller can do:
//!
//! | code | HTTP | at fault | the caller should |
//! | --- | --- | --- | --- |
//! | `invalid_request` | 400 | caller | fix the request |
//! | `unauthenticated` | 401 | configuration | fix the provider's credentials |
//! | `permission_denied` | 403 | configuration | grant the provider's identity the permission |
//! | `not_found` | 404 | nobody | treat the sandbox or path as gone for good |
//! | `invalid_state` | 409 | caller | bring the sandbox to the right state first (start it) |
//! | `conflict` | 409 | a concurrent change | re-read and retry later |
//! | `rate_limited` | 429 | load | wait [`Error::retry_after`], then retry |
//! | `internal` | 500 | the provider code | report a bug |
//! | `unsupported_operation` | 501 | nobody | not use the operation with this provider |
//! | `sandbox_failed` | 502 | the sandbox | delete it and create another |
//! | `unavailable` | 503 | the provider's backend | retry idempotent operations with backoff |

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The kind of an [`Error`]: one of a closed set, each with one HTTP status.
///
/// Closed on purpose: adding a code breaks every exhaustive `match` until it is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorCode {
    /// `invalid_request` (400): the request is malformed or asks for something the provider
    /// refuses as stated: an empty argv, a relative path, an unknown template or image, a file
    /// larger than the read cap.
    InvalidRequest,
    /// `not_found` (404): the sandbox, or the file or directory inside it, does not exist. For a
    /// sandbox this means gone for good, never "temporarily unreachable".
    NotFound,
    /// `invalid_state` (409): the sandbox exists but its state forbids the operation, such as
    /// exec in a stopped sandbox, or stdin sent after the command exited.
    InvalidState,
    /// `unsupported_operation` (501): the provider does not offer the operation; the capability
    /// that gates it is not declared.
    UnsupportedOperation,
    /// `sandbox_failed` (502): the sandbox itself is broken (a crash loop, a runtime that died);
    /// retrying the same operation will not help, a new sandbox may.
    ///
    /// 502 because the host acts as a gateway to the provider and the failure is upstream of it:
    /// not the caller's fault (so not 4xx), not a bug in the host or adapter (so not 500), and
    /// not transient (so not 503).
    SandboxFailed,
    /// `conflict` (409): a concurrent change got in the way, such as a create for an id whose
    /// sandbox is still being deleted. Unlike `invalid_state`, waiting and retrying can succeed.
    Conflict,
    /// `unauthenticated` (401): the provider's backend refused its credentials (missing, expired).
    Unauthenticated,
    /// `permission_denied` (403): the provider's backend knows its identity but refuses the action.
    PermissionDenied,
    /// `rate_limited` (429): the backend asks to slow down, usually with a delay in
    /// [`Error::retry_after`].
    RateLimited,
    /// `unavailable` (503): the backend cannot be reached or dropped the connection; the outcome
    /// of a non-idempotent operation (exec) is unknown.
    Unavailable,
    /// `internal` (500): a bug or an answer the provider cannot make sense of.
    Internal,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::InvalidRequest,
        ErrorCode::NotFound,
        ErrorCode::InvalidState,
        ErrorCode::UnsupportedOperation,
        ErrorCode::SandboxFailed,
        ErrorCode::Conflict,
        ErrorCode::Unauthenticated,
        ErrorCode::PermissionDenied,
        ErrorCode::RateLimited,
        ErrorCode::Unavailable,
        ErrorCode::Internal,
    ];

    /// Returns the code's snake-case wire name, such as `unsupported_operation`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::NotFound => "not_found",
            ErrorCode::InvalidState => "invalid_state",
            ErrorCode::UnsupportedOperation => "unsupported_operation",
            ErrorCode::SandboxFailed => "sandbox_failed",
            ErrorCode::Conflict => "conflict",
            ErrorCode::Unauthenticated => "unauthenticated",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Internal => "internal",
        }
    }

    /// Returns the HTTP status a host answers with for this code.
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidRequest => 400,
            ErrorCode::Unauthenticated => 401,
            ErrorCode::PermissionDenied => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::InvalidState | ErrorCode::Conflict => 409,
            ErrorCode::RateLimited => 429,
            ErrorCode::Internal => 500,
            ErrorCode::UnsupportedOperation => 501,
            ErrorCode::SandboxFailed => 502,
            ErrorCode::Unavailable => 503,
        }
    }

    /// Returns whether the same request may succeed later without any change:
    /// `rate_limited` and `unavailable`.
    ///
    /// Only idempotent operations should be retried automatically; exec never is, since the
    /// command may already have run.
    pub const fn is_transient(self) -> bool {
        matches!(self, ErrorCode::RateLimited | ErrorCode::Unavailable)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ErrorCode {
    type Err = ParseErrorCodeError;

    /// Parses a snake-case wire name exactly as [`ErrorCode::as_str`] prints it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorCode::ALL
            .into_iter()
            .find(|code| code.as_str() == s)
            .ok_or_else(|| ParseErrorCodeError {
                name: s.chars().take(64).collect(),
            })
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A name that is not one of the error codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown error code `{name}`")]
pub struct ParseErrorCodeError {
    /// The refused name, cut to 64 characters.
    pub name: String,
}

/// The error every provider operation returns: a code, a message, and for `rate_limited` a delay.
///
/// Callers decide what to do from [`code`](Error::code) (or the `is_*` predicates), never from
/// the message: its wording is for people and may change. `Display` prints `code: message`.
///
/// **The message must never contain a credential**: no token, password, key or header value, and
/// no request body that might hold one. Providers build it from what failed and why, such as
/// `sandbox sb-1 does not exist` or `the API server refused the token (401)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// What kind of failure this is.
    code: ErrorCode,
    /// A short human-readable explanation, free of credentials.
    message: String,
    /// How long to wait before retrying; only `rate_limited` carries one.
    retry_after: Option<Duration>,
}

impl Error {
    /// Builds an error with `code` and `message`.
    ///
    /// For `rate_limited` with a known delay use [`Error::rate_limited`].
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// Builds an `invalid_request` error.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidRequest, message)
    }

    /// Builds a `not_found` error.
    pub fn not_found(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::NotFound, message)
    }

    /// Builds an `invalid_state` error.
    pub fn invalid_state(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidState, message)
    }

    /// Builds the `unsupported_operation` error for `operation`, whose message names it:
    /// `` `stop` is not supported by this provider ``.
    ///
    /// `operation` is the [`Provider`](crate::Provider) method's name (`exec_stream`,
    /// `set_ttl`) or a feature of one (`stdin`).
    pub fn unsupported(operation: &str) -> Self {
        Error::new(
            ErrorCode::UnsupportedOperation,
            format!("`{operation}` is not supported by this provider"),
        )
    }

    /// Builds a `sandbox_failed` error.
    pub fn sandbox_failed(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::SandboxFailed, message)
    }

    /// Builds a `conflict` error.
    pub fn conflict(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::Conflict, message)
    }

    /// Builds an `unauthenticated` error.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::Unauthenticated, message)
    }

    /// Builds a `permission_denied` error.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::PermissionDenied, message)
    }

    /// Builds a `rate_limited` error, with the delay the backend asked for when it gave one.
    pub fn rate_limited(message: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Error {
            retry_after,
            ..Error::new(ErrorCode::RateLimited, message)
        }
    }

    /// Builds an `unavailable` error.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::Unavailable, message)
    }

    /// Builds an `internal` error.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::Internal, message)
    }

    /// Returns the error's code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// Returns the human-readable message (without the code). Not for matching on.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Returns how long to wait before retrying, when the error is `rate_limited` and the backend
    /// said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Returns the HTTP status of the error's code.
    pub fn http_status(&self) -> u16 {
        self.code.http_status()
    }

    /// Returns whether the code is `invalid_request`.
    pub fn is_invalid_request(&self) -> bool {
        self.code == ErrorCode::InvalidRequest
    }

    /// Returns whether the code is `not_found`.
    pub fn is_not_found(&self) -> bool {
        self.code == ErrorCode::NotFound
    }

    /// Returns whether the code is `invalid_state`.
    pub fn is_invalid_state(&self) -> bool {
        self.code == ErrorCode::InvalidState
    }

    /// Returns whether the code is `unsupported_operation`.
    pub fn is_unsupported(&self) -> bool {
        self.code == ErrorCode::UnsupportedOperation
    }

    /// Returns whether the code is `sandbox_failed`.
    pub fn is_sandbox_failed(&self) -> bool {
        self.code == ErrorCode::SandboxFailed
    }

    /// Returns whether the code is `conflict`.
    pub fn is_conflict(&self) -> bool {
        self.code == ErrorCode::Conflict
    }

    /// Returns whether the code is `unauthenticated`.
    pub fn is_unauthenticated(&self) -> bool {
        self.code == ErrorCode::Unauthenticated
    }

    /// Returns whether the code is `permission_denied`.
    pub fn is_permission_denied(&self) -> bool {
        self.code == ErrorCode::PermissionDenied
    }

    /// Returns whether the code is `rate_limited`.
    pub fn is_rate_limited(&self) -> bool {
        self.code == ErrorCode::RateLimited
    }

    /// Returns whether the code is `unavailable`.
    pub fn is_unavailable(&self) -> bool {
        self.code == ErrorCode::Unavailable
    }

    /// Returns whether the code is `internal`.
    pub fn is_internal(&self) -> bool {
        self.code == ErrorCode::Internal
    }

    /// Returns whether retrying the same idempotent request later may succeed; see
    /// [`ErrorCode::is_transient`].
    pub fn is_transient(&self) -> bool {
        self.code.is_transient()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_status_table_matches_the_contract() {
        let table: Vec<(&str, u16)> = ErrorCode::ALL
            .iter()
            .map(|code| (code.as_str(), code.http_status()))
            .collect();
        assert_eq!(
            table,
            [
                ("invalid_request", 400),
                ("not_found", 404),
                ("invalid_state", 409),
                ("unsupported_operation", 501),
                ("sandbox_failed", 502),
                ("conflict", 409),
                ("unauthenticated", 401),
                ("permission_denied", 403),
                ("rate_limited", 429),
                ("unavailable", 503),
                ("internal", 500),
            ]
        );
    }

    #[test]
    fn every_code_parses_back_from_its_name() {
        for code in ErrorCode::ALL {
            assert_eq!(code.to_string().parse::<ErrorCode>(), Ok(code));
        }
    }

    #[test]
    fn near_miss_code_names_are_refused() {
        for near_miss in [
            "NotFound",
            "not-found",
            "NOT_FOUND",
            "not_found ",
            "unsupported",
            "unsupported-operation",
            "rate_limit",
            "",
        ] {
            let error = near_miss.parse::<ErrorCode>().unwrap_err();
            assert_eq!(error.name, near_miss);
        }
    }

    #[test]
    fn code_serializes_as_its_snake_name() {
        let json = serde_json::to_string(&ErrorCode::UnsupportedOperation).unwrap();
        assert_eq!(json, "\"unsupported_operation\"");
        assert_eq!(
            serde_json::from_str::<ErrorCode>(&json).unwrap(),
            ErrorCode::UnsupportedOperation
        );
        assert!(serde_json::from_str::<ErrorCode>("\"UnsupportedOperation\"").is_err());
    }

    #[test]
    fn only_rate_limited_and_unavailable_are_transient() {
        let transient: Vec<ErrorCode> = ErrorCode::ALL
            .into_iter()
            .filter(|code| code.is_transient())
            .collect();
        assert_eq!(transient, [ErrorCode::RateLimited, ErrorCode::Unavailable]);
    }

    #[test]
    fn error_display_is_code_then_message() {
        let error = Error::not_found("sandbox sb-1 does not exist");
        assert_eq!(error.to_string(), "not_found: sandbox sb-1 does not exist");
    }

    #[test]
    fn unsupported_error_names_the_operation() {
        let error = Error::unsupported("set_ttl");
        assert_eq!(error.code(), ErrorCode::UnsupportedOperation);
        assert!(error.message().contains("set_ttl"), "{error}");
        assert_eq!(
            error.to_string(),
            "unsupported_operation: `set_ttl` is not supported by this provider"
        );
    }

    #[test]
    fn rate_limited_error_carries_its_retry_after() {
        let error = Error::rate_limited("slow down", Some(Duration::from_secs(3)));
        assert!(error.is_rate_limited());
        assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(error.http_status(), 429);
        assert_eq!(Error::not_found("x").retry_after(), None);
    }

    #[test]
    fn each_constructor_sets_its_code_and_only_its_predicate() {
        type Predicate = fn(&Error) -> bool;
        let cases: [(Error, ErrorCode, Predicate); 11] = [
            (
                Error::invalid_request("m"),
                ErrorCode::InvalidRequest,
                Error::is_invalid_request,
            ),
            (
                Error::not_found("m"),
                ErrorCode::NotFound,
                Error::is_not_found,
            ),
            (
                Error::invalid_state("m"),
                ErrorCode::InvalidState,
                Error::is_invalid_state,
            ),
            (
                Error::unsupported("m"),
                ErrorCode::UnsupportedOperation,
                Error::is_unsupported,
            ),
            (
                Error::sandbox_failed("m"),
                ErrorCode::SandboxFailed,
                Error::is_sandbox_failed,
            ),
            (
                Error::conflict("m"),
                ErrorCode::Conflict,
                Error::is_conflict,
            ),
            (
                Error::unauthenticated("m"),
                ErrorCode::Unauthenticated,
                Error::is_unauthenticated,
            ),
            (
                Error::permission_denied("m"),
                ErrorCode::PermissionDenied,
                Error::is_permission_denied,
            ),
            (
                Error::rate_limited("m", None),
                ErrorCode::RateLimited,
                Error::is_rate_limited,
            ),
            (
                Error::unavailable("m"),
                ErrorCode::Unavailable,
                Error::is_unavailable,
            ),
            (
                Error::internal("m"),
                ErrorCode::Internal,
                Error::is_internal,
            ),
        ];
        let predicates: Vec<Predicate> = cases.iter().map(|case| case.2).collect();
        for (index, (error, code, _)) in cases.iter().enumerate() {
            assert_eq!(error.code(), *code);
            for (other, predicate) in predicates.iter().enumerate() {
                assert_eq!(
                    predicate(error),
                    index == other,
                    "{error} predicate {other}"
                );
            }
        }
    }

    #[test]
    fn errors_compare_by_code_message_and_retry_after() {
        assert_eq!(Error::conflict("a"), Error::new(ErrorCode::Conflict, "a"));
        assert_ne!(Error::conflict("a"), Error::invalid_state("a"));
        assert_ne!(Error::conflict("a"), Error::conflict("b"));
        assert_ne!(
            Error::rate_limited("a", None),
            Error::rate_limited("a", Some(Duration::from_secs(1)))
        );
    }
}
