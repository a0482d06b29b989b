//! How a patch fails: [`PatchError`], with the HTTP status the API server answers, and the
//! depth guard and wording helpers every patch type shares.

use serde_json::Value;

/// The deepest nesting of objects and arrays a merge or strategic merge patch may have.
///
/// The recursive merges below use one or two stack frames per level; the bound keeps a hostile
/// patch from exhausting a worker thread's stack. It is above the 128 levels `serde_json` parses.
pub(super) const MAX_DEPTH: usize = 200;

/// The message the API server puts in a 422 Status built from a patch failure: the details are
/// dropped, only this sentence reaches the client.
const INVALID_STATUS_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// Why a patch could not be applied, sorted by the HTTP status the API server answers.
///
/// [`Display`](std::fmt::Display) gives the detailed message; [`PatchError::status_message`]
/// gives what the API server would put in the `metav1.Status` it returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The body is not a patch of its kind: a JSON patch that is not a list of operations, a
    /// strategic merge patch that is not an object, a badly formed `$retainKeys`,
    /// `$setElementOrder` or `$deleteFromPrimitiveList` directive. 400 BadRequest.
    #[error("{message}")]
    Malformed {
        /// What is wrong with the patch.
        message: String,
    },
    /// The patch is well formed but does not apply to this object: a JSON patch `test` that
    /// fails, a path that does not exist, a list of lists in a strategic merge, a result that
    /// is not an object. 422 Invalid.
    #[error("{message}")]
    DoesNotApply {
        /// Why the patch does not apply.
        message: String,
    },
    /// The strategic merge failed on the patch's content in a way the API server does not
    /// classify, so it answers 500 InternalError: a list element without its merge key, list
    /// elements of different types, an unknown `$patch` value, a `$setElementOrder` list that
    /// does not match the patch list.
    #[error("{message}")]
    MergeFailed {
        /// Why the merge failed.
        message: String,
    },
}

impl PatchError {
    /// Builds a [`PatchError::Malformed`].
    pub(super) fn malformed(message: impl Into<String>) -> Self {
        PatchError::Malformed {
            message: message.into(),
        }
    }

    /// Builds a [`PatchError::DoesNotApply`].
    pub(super) fn does_not_apply(message: impl Into<String>) -> Self {
        PatchError::DoesNotApply {
            message: message.into(),
        }
    }

    /// Builds a [`PatchError::MergeFailed`].
    pub(super) fn merge_failed(message: impl Into<String>) -> Self {
        PatchError::MergeFailed {
            message: message.into(),
        }
    }

    /// Returns the HTTP status code the API server answers with.
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::Malformed { .. } => 400,
            PatchError::DoesNotApply { .. } => 422,
            PatchError::MergeFailed { .. } => 500,
        }
    }

    /// Returns the `reason` of the `metav1.Status` the API server answers with.
    pub fn status_reason(&self) -> &'static str {
        match self {
            PatchError::Malformed { .. } => "BadRequest",
            PatchError::DoesNotApply { .. } => "Invalid",
            PatchError::MergeFailed { .. } => "InternalError",
        }
    }

    /// Returns the `message` of the `metav1.Status` the API server answers with.
    ///
    /// A 400 carries the detailed message, a 422 only a generic sentence (the API server
    /// drops the details), a 500 the detailed message behind `Internal error occurred: `.
    pub fn status_message(&self) -> String {
        match self {
            PatchError::Malformed { message } => message.clone(),
            PatchError::DoesNotApply { .. } => INVALID_STATUS_MESSAGE.to_owned(),
            PatchError::MergeFailed { message } => format!("Internal error occurred: {message}"),
        }
    }

    /// Returns the detailed message, without any status wording around it.
    pub fn message(&self) -> &str {
        match self {
            PatchError::Malformed { message }
            | PatchError::DoesNotApply { message }
            | PatchError::MergeFailed { message } => message,
        }
    }
}

/// Names the JSON type of a value, for messages.
pub(super) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Refuses a patch nested deeper than [`MAX_DEPTH`].
pub(super) fn check_depth(depth: usize) -> Result<(), PatchError> {
    if depth > MAX_DEPTH {
        Err(PatchError::malformed(format!(
            "the patch is nested more than {MAX_DEPTH} levels deep"
        )))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_the_api_servers_status_codes_and_reasons() {
        let malformed = PatchError::malformed("bad");
        let invalid = PatchError::does_not_apply("nope");
        let failed = PatchError::merge_failed("boom");
        assert_eq!(
            (malformed.status_code(), malformed.status_reason()),
            (400, "BadRequest")
        );
        assert_eq!(
            (invalid.status_code(), invalid.status_reason()),
            (422, "Invalid")
        );
        assert_eq!(
            (failed.status_code(), failed.status_reason()),
            (500, "InternalError")
        );
        assert_eq!(malformed.status_message(), "bad");
        assert_eq!(invalid.status_message(), INVALID_STATUS_MESSAGE);
        assert_eq!(failed.status_message(), "Internal error occurred: boom");
        assert_eq!(invalid.message(), "nope");
        assert_eq!(invalid.to_string(), "nope");
    }
}
