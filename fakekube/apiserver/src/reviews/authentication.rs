//! The authentication reviews: TokenReview (is this token valid, and whose is it) and
//! SelfSubjectReview (who am I, `kubectl auth whoami`).

use crate::authn::ISSUER;
use crate::authz::Caller;
use crate::state::Shared;
use serde_json::{Value, json};

/// TokenReview: authenticates `spec.token` for `spec.audiences` (the API server's when none).
/// A refused token is a review that says so, never an error.
pub(super) fn token_review(shared: &Shared, spec: &Value) -> Value {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    let mut audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    if audiences.is_empty() {
        audiences.push(ISSUER.to_string());
    }
    if token.is_empty() {
        return json!({ "user": {}, "error": "the token is empty" });
    }
    match shared.authn.token(token, &audiences) {
        Ok((identity, matched)) => json!({
            "authenticated": true,
            "user": identity.user.to_json(),
            "audiences": matched,
        }),
        Err(why) => json!({ "user": {}, "error": why }),
    }
}

/// SelfSubjectReview: the caller's user info.
pub(super) fn self_subject(caller: &Caller) -> Value {
    json!({ "userInfo": caller.user().to_json() })
}
