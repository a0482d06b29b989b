//! [`FieldError`], one cause of a 422 `Invalid` Status, with the API server's `reason`s and
//! wording.

/// `reason` of a missing required field.
pub(super) const FIELD_VALUE_REQUIRED: &str = "FieldValueRequired";
/// `reason` of a value outside an `enum`.
pub(super) const FIELD_VALUE_NOT_SUPPORTED: &str = "FieldValueNotSupported";
/// `reason` of a value breaking a constraint (minimum, pattern, CEL rule...).
pub(super) const FIELD_VALUE_INVALID: &str = "FieldValueInvalid";
/// `reason` of a value of the wrong JSON type or string format.
pub(super) const FIELD_VALUE_TYPE_INVALID: &str = "FieldValueTypeInvalid";
/// `reason` of a repeated element of a `set` or `map` list.
pub(super) const FIELD_VALUE_DUPLICATE: &str = "FieldValueDuplicate";
/// `reason` of a string longer than `maxLength`.
pub(super) const FIELD_VALUE_TOO_LONG: &str = "FieldValueTooLong";
/// `reason` of a list longer than `maxItems`.
pub(super) const FIELD_VALUE_TOO_MANY: &str = "FieldValueTooMany";
/// `reason` of a value a CEL rule forbids (`reason: FieldValueForbidden`).
pub(super) const FIELD_VALUE_FORBIDDEN: &str = "FieldValueForbidden";

/// One field error, as the API server lists it in a 422 `Invalid` Status's `details.causes[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The path of the field (`spec.podTemplate`, `spec.volumeClaimTemplates[0].spec`).
    pub field: String,
    /// The cause type (`FieldValueRequired`, `FieldValueInvalid`, ...).
    pub reason: &'static str,
    /// The message without the field (`Required value`, `Invalid value: -1: ...`).
    pub message: String,
}

/// Constructors in the API server's wording, and the CEL blocking test.
impl FieldError {
    /// Whether this error keeps the API server from evaluating the CEL rules.
    pub(super) fn blocks_rules(&self) -> bool {
        matches!(
            self.reason,
            FIELD_VALUE_NOT_SUPPORTED
                | FIELD_VALUE_REQUIRED
                | FIELD_VALUE_TOO_LONG
                | FIELD_VALUE_TOO_MANY
                | FIELD_VALUE_TYPE_INVALID
        )
    }

    /// An error on `field` (`<nil>` when empty, like a nil `field.Path`).
    pub(super) fn new(field: &str, reason: &'static str, message: String) -> Self {
        let field = if field.is_empty() {
            "<nil>".to_string()
        } else {
            field.to_string()
        };
        Self {
            field,
            reason,
            message,
        }
    }

    /// `field.Required`.
    pub(super) fn required(field: &str) -> Self {
        Self::new(field, FIELD_VALUE_REQUIRED, "Required value".to_string())
    }

    /// `field.Invalid`, with the bad value already formatted.
    pub(super) fn invalid(field: &str, bad: &str, detail: &str) -> Self {
        Self::new(
            field,
            FIELD_VALUE_INVALID,
            format!("Invalid value: {bad}: {detail}"),
        )
    }

    /// `field.TypeInvalid`, with the bad value already formatted.
    pub(super) fn type_invalid(field: &str, bad: &str, detail: &str) -> Self {
        Self::new(
            field,
            FIELD_VALUE_TYPE_INVALID,
            format!("Invalid value: {bad}: {detail}"),
        )
    }
}
