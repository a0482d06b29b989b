//! Why a selector is rejected: [`SelectorError`], and [`RequirementError`] for one label
//! requirement.

/// Why a selector was rejected. Its text becomes the message of a 400 BadRequest Status, worded
/// close to the API server's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// One requirement of a label selector could not be read or is invalid.
    #[error("unable to parse requirement: {0}")]
    ParseRequirement(RequirementError),
    /// A label selector has a token where a requirement, a comma or the end was due.
    #[error("found '{found}', expected: {expected}")]
    UnexpectedToken {
        /// The text of the token found (empty at the end of the input).
        found: String,
        /// What the parser would have accepted there.
        expected: &'static str,
    },
    /// A field selector term has none of the operators `=`, `==` and `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    UnreadableFieldTerm {
        /// The whole field selector.
        selector: String,
        /// The term that has no operator.
        term: String,
    },
    /// A field selector value has a backslash before a character other than `\`, `,` and `=`,
    /// or ends with a lone backslash.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscape(String),
    /// A field selector value has a `,` or `=` without a backslash before it.
    #[error("invalid field selector: unescaped character in value: {0:?}")]
    UnescapedCharacter(char),
    /// A field selector names a field the resource does not support.
    #[error("field label not supported: {0}")]
    FieldNotSupported(String),
}

/// What is wrong with one label selector requirement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// A token other than the ones the grammar allows at this point.
    #[error("found '{found}', expected: {expected}")]
    UnexpectedToken {
        /// The text of the token found (empty at the end of the input).
        found: String,
        /// What the parser would have accepted there.
        expected: &'static str,
    },
    /// The key is not a valid label key.
    #[error("invalid label key {key:?}: {details}")]
    InvalidKey {
        /// The rejected key.
        key: String,
        /// Every rule the key breaks, joined by `; `.
        details: String,
    },
    /// A value is not a valid label value.
    #[error("invalid label value: {value:?}: at key: {key:?}: {details}")]
    InvalidValue {
        /// The key the value belongs to.
        key: String,
        /// The rejected value.
        value: String,
        /// Every rule the value breaks, joined by `; `.
        details: String,
    },
    /// An `In` or `NotIn` expression with no values.
    #[error("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty")]
    EmptyValues,
    /// An `Exists` or `DoesNotExist` expression with values.
    #[error("values: Invalid value: {0:?}: values set must be empty for exists and does not exist")]
    UnexpectedValues(Vec<String>),
    /// The value of a `>` or `<` requirement is not a 64-bit integer.
    #[error(
        "values[0]: Invalid value: {0:?}: for 'Gt', 'Lt' operators, the value must be an integer"
    )]
    NotAnInteger(String),
}
