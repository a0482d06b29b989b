//! Label and field selectors for list and watch requests (`?labelSelector=`, `?fieldSelector=`),
//! read, matched and worded as the API server does it.
//!
//! Label selectors follow apimachinery's `labels.Parse`: requirements separated by commas, each
//! one of `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`
//! (exists), `!key` (does not exist), and the numeric `key>n` and `key<n`. Field selectors follow
//! `fields.ParseSelector`: `field=value`, `field==value` and `field!=value` terms whose values
//! escape `\`, `,` and `=` with a backslash.
//!
//! Behaviours that look odd but are the API server's, kept on purpose:
//! - `!=` and `notin` match objects that lack the key;
//! - `key in ()` is not an error: the parser reads it as `key in ("")` (apimachinery rejects an
//!   empty `values` list only in a `metav1.LabelSelector` object, which no request here reads);
//! - but `key in (x,,)` and `key in (,,)` are errors, because apimachinery's list reader wants a
//!   value after a double comma;
//! - field selectors are not trimmed: ` metadata.name=x` names the field ` metadata.name`;
//! - a field the object lacks compares as the empty string.

use std::fmt;

use serde_json::{Map, Value};

/// Why a selector was rejected. Its text becomes the message of a 400 BadRequest Status, worded
/// close to the API server's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SelectorError {
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
pub(crate) enum RequirementError {
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

/// How a label requirement relates a key to its values. `==` is read as [`Operator::Equals`]:
/// the two mean the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Operator {
    /// `key=value`: the key is present with that value.
    Equals,
    /// `key!=value`: the key is absent or has another value.
    NotEquals,
    /// `key in (a,b)`: the key is present with one of the values.
    In,
    /// `key notin (a,b)`: the key is absent or has none of the values.
    NotIn,
    /// `key`: the key is present.
    Exists,
    /// `!key`: the key is absent.
    DoesNotExist,
    /// `key>n`: the key holds an integer greater than n.
    GreaterThan,
    /// `key<n`: the key holds an integer less than n.
    LessThan,
}

/// One condition of a label selector. Values are sorted and free of duplicates, so two
/// requirements that mean the same compare equal.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Requirement {
    /// The label key the condition is about.
    key: String,
    /// How the key relates to the values.
    operator: Operator,
    /// The values; empty for `Exists` and `DoesNotExist`, one for the exact-match operators.
    values: Vec<String>,
}

impl Requirement {
    /// Checks the key and values as apimachinery's `NewRequirement` does and builds the
    /// requirement. Callers pass one value for the exact-match and numeric operators.
    fn new(key: String, operator: Operator, values: Vec<String>) -> Result<Self, RequirementError> {
        validate_label_key(&key)?;
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(RequirementError::EmptyValues);
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(RequirementError::UnexpectedValues(values));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if let Some(bad) = values.iter().find(|v| v.parse::<i64>().is_err()) {
                    return Err(RequirementError::NotAnInteger(bad.clone()));
                }
            }
            _ => {}
        }
        for value in &values {
            let problems = label_value_problems(value);
            if !problems.is_empty() {
                return Err(RequirementError::InvalidValue {
                    key,
                    value: value.clone(),
                    details: problems.join("; "),
                });
            }
        }
        let mut values = values;
        values.sort();
        values.dedup();
        Ok(Self {
            key,
            operator,
            values,
        })
    }

    /// Whether an object with these labels meets the condition. A label whose value is not a
    /// string meets no condition on its key.
    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let value = match labels.and_then(|l| l.get(&self.key)) {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return false,
        };
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !listed(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(actual) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let Some(bound) = self.values.first().and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.values.first().map_or("", String::as_str);
        match self.operator {
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::Equals => write!(f, "{}={first}", self.key),
            Operator::NotEquals => write!(f, "{}!={first}", self.key),
            Operator::GreaterThan => write!(f, "{}>{first}", self.key),
            Operator::LessThan => write!(f, "{}<{first}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
        }
    }
}

/// A label selector: requirements that must all hold. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    /// The requirements, sorted so that equal selectors compare equal.
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Reads a `?labelSelector=` value as the API server does. The empty string (or only
    /// whitespace) selects everything.
    pub(crate) fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut parser = Parser::new(input);
        let mut requirements = parser.requirements()?;
        requirements.sort();
        Ok(Self { requirements })
    }

    /// Reads a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`); the error
    /// says why it is not one. The empty object selects everything.
    pub(crate) fn from_object(s: &Value) -> Result<Self, String> {
        let mut parts = Vec::new();
        if let Some(labels) = s.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in labels {
                let v = v.as_str().ok_or("matchLabels values must be strings")?;
                parts.push(format!("{k}={v}"));
            }
        }
        for e in s
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let values = values.join(",");
            parts.push(match op {
                "In" => format!("{key} in ({values})"),
                "NotIn" => format!("{key} notin ({values})"),
                "Exists" => key.to_string(),
                "DoesNotExist" => format!("!{key}"),
                other => {
                    return Err(format!(
                        "\"{other}\" is not a valid label selector operator"
                    ));
                }
            });
        }
        LabelSelector::parse(&parts.join(",")).map_err(|e| e.to_string())
    }

    /// Whether the selector selects nothing but what every object has: it has no requirement.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object with these `metadata.labels` is selected. Objects without labels
    /// (`None`) are selected by the empty selector and by `!=`, `notin` and `!key` alone.
    pub(crate) fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

/// Prints the canonical form: requirements sorted by key, values sorted, `==` as `=`. It parses
/// back to an equal selector.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

/// The kinds of token in a label selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    /// The end of the input (or a NUL byte where a token would start, as in apimachinery).
    EndOfString,
    /// `(`
    OpenPar,
    /// `)`
    ClosedPar,
    /// `,`
    Comma,
    /// `!`
    DoesNotExist,
    /// `=`
    Equals,
    /// `==`
    DoubleEquals,
    /// `!=`
    NotEquals,
    /// `>`
    GreaterThan,
    /// `<`
    LessThan,
    /// The word `in`.
    In,
    /// The word `notin`.
    NotIn,
    /// Any other run of characters: a key or a value.
    Identifier,
}

/// One token of a label selector with its text.
#[derive(Debug, Clone)]
struct Token {
    /// What the token is.
    kind: TokenKind,
    /// The text it was read from (empty for the end).
    literal: String,
}

/// The token seen past the end of the list.
static END: Token = Token {
    kind: TokenKind::EndOfString,
    literal: String::new(),
};

/// Whether `in` and `notin` are operators (right after a key) or plain words (everywhere else,
/// so that `in in (in)` is a valid requirement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// After a key: `in` and `notin` are operators.
    KeyAndOperator,
    /// Keys and values: `in` and `notin` are identifiers.
    Values,
}

/// Whether the lexer skips this byte between tokens.
fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

/// The one-character token this byte starts, if it is an operator character.
fn special_kind(byte: u8) -> Option<TokenKind> {
    match byte {
        b'(' => Some(TokenKind::OpenPar),
        b')' => Some(TokenKind::ClosedPar),
        b',' => Some(TokenKind::Comma),
        b'!' => Some(TokenKind::DoesNotExist),
        b'=' => Some(TokenKind::Equals),
        b'>' => Some(TokenKind::GreaterThan),
        b'<' => Some(TokenKind::LessThan),
        _ => None,
    }
}

/// Splits a label selector into tokens. It works on bytes, as apimachinery's lexer does; every
/// split point is an ASCII byte, so identifiers keep whole UTF-8 characters.
struct Lexer<'a> {
    /// The input.
    input: &'a [u8],
    /// The next byte to read.
    pos: usize,
}

impl Lexer<'_> {
    /// Returns the next byte and moves past it, or 0 at the end. A NUL byte in the input reads
    /// as 0 too, which makes it end a token, as in apimachinery.
    fn read(&mut self) -> u8 {
        match self.input.get(self.pos) {
            Some(&byte) => {
                self.pos += 1;
                byte
            }
            None => 0,
        }
    }

    /// Steps back over the byte just read (never called after reading the end).
    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// Reads all tokens, ending with [`TokenKind::EndOfString`].
    fn tokens(mut self) -> Vec<Token> {
        let mut tokens = Vec::new();
        loop {
            let token = self.next_token();
            let end = token.kind == TokenKind::EndOfString;
            tokens.push(token);
            if end {
                return tokens;
            }
        }
    }

    /// Reads one token after any whitespace.
    fn next_token(&mut self) -> Token {
        let mut byte = self.read();
        while is_whitespace(byte) {
            byte = self.read();
        }
        if byte == 0 {
            return END.clone();
        }
        match special_kind(byte) {
            Some(single) => self.operator(byte, single),
            None => {
                self.unread();
                self.identifier()
            }
        }
    }

    /// Reads an operator that starts with `first`: the longest of `==`, `!=` or one character.
    fn operator(&mut self, first: u8, single: TokenKind) -> Token {
        let second = self.read();
        let kind = match (first, second) {
            (b'=', b'=') => TokenKind::DoubleEquals,
            (b'!', b'=') => TokenKind::NotEquals,
            _ => {
                if second != 0 {
                    self.unread();
                }
                single
            }
        };
        let literal = match kind {
            TokenKind::DoubleEquals => "==".to_string(),
            TokenKind::NotEquals => "!=".to_string(),
            _ => char::from(first).to_string(),
        };
        if matches!(kind, TokenKind::DoubleEquals | TokenKind::NotEquals) {
            // apimachinery looks one byte further and swallows it when it is a NUL.
            if self.read() != 0 {
                self.unread();
            }
        }
        Token { kind, literal }
    }

    /// Reads a key, a value or one of the words `in` and `notin`.
    fn identifier(&mut self) -> Token {
        let mut bytes = Vec::new();
        loop {
            let byte = self.read();
            if byte == 0 {
                break;
            }
            if is_whitespace(byte) || special_kind(byte).is_some() {
                self.unread();
                break;
            }
            bytes.push(byte);
        }
        let literal = String::from_utf8_lossy(&bytes).into_owned();
        let kind = match literal.as_str() {
            "in" => TokenKind::In,
            "notin" => TokenKind::NotIn,
            _ => TokenKind::Identifier,
        };
        Token { kind, literal }
    }
}

/// A recursive-descent reader of label selector tokens, following apimachinery's grammar and
/// error wording.
struct Parser {
    /// All tokens, ending with the end token.
    tokens: Vec<Token>,
    /// The next token to consume.
    position: usize,
}

impl Parser {
    /// Tokenises `input`.
    fn new(input: &str) -> Self {
        let lexer = Lexer {
            input: input.as_bytes(),
            pos: 0,
        };
        Self {
            tokens: lexer.tokens(),
            position: 0,
        }
    }

    /// The kind and text of the next token, seen in `context`, without consuming it.
    fn peek(&self, context: Context) -> (TokenKind, String) {
        let token = self.tokens.get(self.position).unwrap_or(&END);
        let kind = match (context, token.kind) {
            (Context::Values, TokenKind::In | TokenKind::NotIn) => TokenKind::Identifier,
            (_, kind) => kind,
        };
        (kind, token.literal.clone())
    }

    /// The kind and text of the next token, seen in `context`, consuming it.
    fn take(&mut self, context: Context) -> (TokenKind, String) {
        let token = self.peek(context);
        self.position = self.position.saturating_add(1);
        token
    }

    /// Reads the whole selector.
    fn requirements(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (kind, literal) = self.peek(Context::Values);
            match kind {
                TokenKind::Identifier | TokenKind::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(SelectorError::ParseRequirement)?;
                    requirements.push(requirement);
                    let (kind, literal) = self.take(Context::Values);
                    match kind {
                        TokenKind::EndOfString => return Ok(requirements),
                        TokenKind::Comma => {
                            let (next, literal) = self.peek(Context::Values);
                            if !matches!(next, TokenKind::Identifier | TokenKind::DoesNotExist) {
                                return Err(SelectorError::UnexpectedToken {
                                    found: literal,
                                    expected: "identifier after ','",
                                });
                            }
                        }
                        _ => {
                            return Err(SelectorError::UnexpectedToken {
                                found: literal,
                                expected: "',' or 'end of string'",
                            });
                        }
                    }
                }
                TokenKind::EndOfString => return Ok(requirements),
                _ => {
                    return Err(SelectorError::UnexpectedToken {
                        found: literal,
                        expected: "!, identifier, or 'end of string'",
                    });
                }
            }
        }
    }

    /// Reads one requirement.
    fn requirement(&mut self) -> Result<Requirement, RequirementError> {
        let (key, unary) = self.key_and_unary_operator()?;
        if let Some(operator) = unary {
            return Requirement::new(key, operator, Vec::new());
        }
        let operator = self.binary_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_set()?,
            _ => vec![self.exact_value()?],
        };
        Requirement::new(key, operator, values)
    }

    /// Reads `key` or `!key`. Returns `Exists` or `DoesNotExist` when the requirement has no
    /// binary operator: a `!`, or a key followed by a comma or the end.
    fn key_and_unary_operator(&mut self) -> Result<(String, Option<Operator>), RequirementError> {
        let (mut kind, mut literal) = self.take(Context::Values);
        let mut operator = None;
        if kind == TokenKind::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (kind, literal) = self.take(Context::Values);
        }
        if kind != TokenKind::Identifier {
            return Err(RequirementError::UnexpectedToken {
                found: literal,
                expected: "identifier",
            });
        }
        validate_label_key(&literal)?;
        let (next, _) = self.peek(Context::Values);
        if operator.is_none() && matches!(next, TokenKind::EndOfString | TokenKind::Comma) {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    /// Reads the operator after a key.
    fn binary_operator(&mut self) -> Result<Operator, RequirementError> {
        let (kind, literal) = self.take(Context::KeyAndOperator);
        match kind {
            TokenKind::In => Ok(Operator::In),
            TokenKind::NotIn => Ok(Operator::NotIn),
            TokenKind::Equals | TokenKind::DoubleEquals => Ok(Operator::Equals),
            TokenKind::NotEquals => Ok(Operator::NotEquals),
            TokenKind::GreaterThan => Ok(Operator::GreaterThan),
            TokenKind::LessThan => Ok(Operator::LessThan),
            _ => Err(RequirementError::UnexpectedToken {
                found: literal,
                expected: "in, notin, =, ==, !=, gt, lt",
            }),
        }
    }

    /// Reads `(a,b,...)`. Empty entries are the empty value; `()` is the set holding only it.
    fn value_set(&mut self) -> Result<Vec<String>, RequirementError> {
        let (kind, literal) = self.take(Context::Values);
        if kind != TokenKind::OpenPar {
            return Err(RequirementError::UnexpectedToken {
                found: literal,
                expected: "'('",
            });
        }
        let (kind, literal) = self.peek(Context::Values);
        match kind {
            TokenKind::Identifier | TokenKind::Comma => {
                let values = self.value_list()?;
                let (kind, _) = self.take(Context::Values);
                if kind != TokenKind::ClosedPar {
                    return Err(RequirementError::UnexpectedToken {
                        found: literal,
                        expected: "')'",
                    });
                }
                Ok(values)
            }
            TokenKind::ClosedPar => {
                self.take(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(RequirementError::UnexpectedToken {
                found: literal,
                expected: "',', ')' or identifier",
            }),
        }
    }

    /// Reads comma-separated, possibly empty values up to (not including) the `)`.
    fn value_list(&mut self) -> Result<Vec<String>, RequirementError> {
        let mut values = Vec::new();
        loop {
            let (kind, literal) = self.take(Context::Values);
            match kind {
                TokenKind::Identifier => {
                    values.push(literal);
                    let (next, literal) = self.peek(Context::Values);
                    match next {
                        TokenKind::Comma => {}
                        TokenKind::ClosedPar => return Ok(values),
                        _ => {
                            return Err(RequirementError::UnexpectedToken {
                                found: literal,
                                expected: "',' or ')'",
                            });
                        }
                    }
                }
                TokenKind::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (next, _) = self.peek(Context::Values);
                    if next == TokenKind::ClosedPar {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if next == TokenKind::Comma {
                        self.take(Context::Values);
                        values.push(String::new());
                    }
                }
                _ => {
                    return Err(RequirementError::UnexpectedToken {
                        found: literal,
                        expected: "',', or identifier",
                    });
                }
            }
        }
    }

    /// Reads the value after `=`, `==`, `!=`, `>` or `<`; nothing before a comma or the end is
    /// the empty value.
    fn exact_value(&mut self) -> Result<String, RequirementError> {
        let (next, _) = self.peek(Context::Values);
        if matches!(next, TokenKind::EndOfString | TokenKind::Comma) {
            return Ok(String::new());
        }
        let (kind, literal) = self.take(Context::Values);
        if kind == TokenKind::Identifier {
            Ok(literal)
        } else {
            Err(RequirementError::UnexpectedToken {
                found: literal,
                expected: "identifier",
            })
        }
    }
}

/// The longest name part of a label key, and the longest label value.
const LABEL_NAME_MAX: usize = 63;
/// The longest DNS-1123 subdomain, used as a label key prefix.
const SUBDOMAIN_MAX: usize = 253;
/// apimachinery's explanation of the name part of a label key.
const LABEL_NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and \
must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', \
regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
/// apimachinery's explanation of a label key with more than one `/`.
const LABEL_KEY_RULE: &str = "a valid label key must consist of alphanumeric characters, '-', \
'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  \
or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an \
optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
/// apimachinery's explanation of a DNS-1123 subdomain.
const SUBDOMAIN_RULE: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. \
'example.com', regex used for validation is \
'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/// apimachinery's explanation of a label value.
const LABEL_VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric \
characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
'MyValue',  or 'my_value',  or '12345', regex used for validation is \
'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// Whether `s` is non-empty, starts and ends with an ASCII letter or digit, and holds only
/// those, `-`, `_` and `.` (the name part of a label key, and a non-empty label value).
fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Whether `s` is a lowercase DNS-1123 subdomain (length aside): dot-separated labels of
/// lowercase letters, digits and `-`, each starting and ending with a letter or digit.
fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let bytes = label.as_bytes();
        let end_ok =
            |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        end_ok(bytes.first())
            && end_ok(bytes.last())
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
    })
}

/// Every rule a label key breaks, worded as apimachinery's `IsQualifiedName`.
fn label_key_problems(key: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > SUBDOMAIN_MAX {
                    problems.push(format!(
                        "prefix part must be no more than {SUBDOMAIN_MAX} characters"
                    ));
                }
                if !is_dns1123_subdomain(prefix) {
                    problems.push(format!("prefix part {SUBDOMAIN_RULE}"));
                }
            }
            *name
        }
        _ => return vec![LABEL_KEY_RULE.to_string()],
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_NAME_MAX {
        problems.push(format!(
            "name part must be no more than {LABEL_NAME_MAX} characters"
        ));
    }
    if !is_label_name(name) {
        problems.push(format!("name part {LABEL_NAME_RULE}"));
    }
    problems
}

/// Every rule a label value breaks, worded as apimachinery's `IsValidLabelValue`.
fn label_value_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > LABEL_NAME_MAX {
        problems.push(format!("must be no more than {LABEL_NAME_MAX} characters"));
    }
    if !value.is_empty() && !is_label_name(value) {
        problems.push(LABEL_VALUE_RULE.to_string());
    }
    problems
}

/// Rejects a key that is not a valid label key.
fn validate_label_key(key: &str) -> Result<(), RequirementError> {
    let problems = label_key_problems(key);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(RequirementError::InvalidKey {
            key: key.to_string(),
            details: problems.join("; "),
        })
    }
}

/// How a field selector term compares a field with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum FieldOperator {
    /// `=` or `==`.
    Equals,
    /// `!=`.
    NotEquals,
}

/// One `field=value` or `field!=value` term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct FieldTerm {
    /// The field path, as written (`metadata.name`).
    field: String,
    /// How the field is compared.
    operator: FieldOperator,
    /// The value, with escapes removed.
    value: String,
}

/// A field selector: terms that must all hold. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    /// The terms, sorted so that equal selectors compare equal.
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Reads a `?fieldSelector=` value as the API server does. Empty terms are skipped, so the
    /// empty string selects everything. Nothing is trimmed.
    pub(crate) fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut parts = split_field_terms(input);
        // apimachinery reads the terms in sorted order, which decides which error is reported.
        parts.sort_unstable();
        let mut terms = Vec::with_capacity(parts.len());
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((field, operator, raw)) = split_field_term(part) else {
                return Err(SelectorError::UnreadableFieldTerm {
                    selector: input.to_string(),
                    term: part.to_string(),
                });
            };
            terms.push(FieldTerm {
                field: field.to_string(),
                operator,
                value: unescape_field_value(raw)?,
            });
        }
        terms.sort();
        Ok(Self { terms })
    }

    /// Rejects the selector when a term names a field outside `supported`, with the API
    /// server's message.
    pub(crate) fn check_supported(&self, supported: &[&str]) -> Result<(), SelectorError> {
        match self
            .terms
            .iter()
            .find(|t| !supported.contains(&t.field.as_str()))
        {
            Some(term) => Err(SelectorError::FieldNotSupported(term.field.clone())),
            None => Ok(()),
        }
    }

    /// The same selector on other field paths: `stored` names the field each path is read
    /// from (a second view of a resource selects on the fields its objects are stored with).
    pub(crate) fn on_fields(mut self, stored: impl Fn(&str) -> &str) -> Self {
        for t in &mut self.terms {
            t.field = stored(&t.field).to_string();
        }
        self.terms.sort();
        self
    }

    /// Whether an object is selected; `value_of` gives the object's value for a field path, and
    /// a missing value compares as the empty string.
    pub(crate) fn matches(&self, value_of: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|term| {
            let actual = value_of(&term.field).unwrap_or_default();
            match term.operator {
                FieldOperator::Equals => actual == term.value,
                FieldOperator::NotEquals => actual != term.value,
            }
        })
    }
}

/// Prints the canonical form: terms sorted, `==` as `=`, values escaped. It parses back to an
/// equal selector.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, term) in self.terms.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            let operator = match term.operator {
                FieldOperator::Equals => "=",
                FieldOperator::NotEquals => "!=",
            };
            write!(f, "{}{operator}", term.field)?;
            for c in term.value.chars() {
                if matches!(c, '\\' | ',' | '=') {
                    f.write_str("\\")?;
                }
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// Splits a field selector at the commas that no backslash escapes; escapes stay in the terms.
fn split_field_terms(input: &str) -> Vec<&str> {
    if input.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (index, c) in input.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(input.get(start..index).unwrap_or_default());
            start = index + 1;
        }
    }
    terms.push(input.get(start..).unwrap_or_default());
    terms
}

/// Splits a term at its first operator (`!=`, `==` or `=`, tried in that order at each
/// position) into the field, the operator and the still-escaped value.
fn split_field_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (index, _) in term.char_indices() {
        let rest = term.get(index..)?;
        let found = if rest.starts_with("!=") {
            Some((FieldOperator::NotEquals, 2))
        } else if rest.starts_with("==") {
            Some((FieldOperator::Equals, 2))
        } else if rest.starts_with('=') {
            Some((FieldOperator::Equals, 1))
        } else {
            None
        };
        if let Some((operator, len)) = found {
            return Some((term.get(..index)?, operator, term.get(index + len..)?));
        }
    }
    None
}

/// Removes the backslash escapes of a field selector value; a bare `,` or `=` and any other
/// escape are errors.
fn unescape_field_value(raw: &str) -> Result<String, SelectorError> {
    let mut value = String::with_capacity(raw.len());
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::InvalidEscape(format!("\\{c}")));
            }
            value.push(c);
            escaped = false;
        } else {
            match c {
                '\\' => escaped = true,
                ',' | '=' => return Err(SelectorError::UnescapedCharacter(c)),
                _ => value.push(c),
            }
        }
    }
    if escaped {
        return Err(SelectorError::InvalidEscape("\\".to_string()));
    }
    Ok(value)
}

/// Selectable boolean fields the API server prints even when the object leaves them out
/// (`false`).
const BOOLEAN_FIELDS: &[&str] = &["spec.unschedulable"];

/// The value at a dotted field path (`status.phase`) in a JSON object, as a field selector
/// compares it: strings as they are, numbers and booleans printed. `None` when the path is
/// missing or leads to null, an object or a list, except for the boolean fields the API server
/// always prints (a Node's `spec.unschedulable` is `false` when absent).
pub(crate) fn field_value(object: &Value, path: &str) -> Option<String> {
    let mut current = object;
    for segment in path.split('.') {
        match current.as_object().and_then(|o| o.get(segment)) {
            Some(next) => current = next,
            None if BOOLEAN_FIELDS.contains(&path) => return Some("false".to_string()),
            None => return None,
        }
    }
    match current {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Builds a label map from pairs.
    fn labels(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), Value::String((*v).to_string())))
            .collect()
    }

    /// Parses a selector that the test knows is valid.
    fn sel(input: &str) -> LabelSelector {
        match LabelSelector::parse(input) {
            Ok(selector) => selector,
            Err(e) => panic!("{input:?} should parse: {e}"),
        }
    }

    /// Parses a field selector that the test knows is valid.
    fn fsel(input: &str) -> FieldSelector {
        match FieldSelector::parse(input) {
            Ok(selector) => selector,
            Err(e) => panic!("{input:?} should parse: {e}"),
        }
    }

    /// The error text of a label selector that must fail.
    fn label_error(input: &str) -> String {
        match LabelSelector::parse(input) {
            Ok(selector) => panic!("{input:?} should fail, parsed as {selector}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn empty_label_selector_matches_everything() {
        for input in ["", "   ", " \t\r\n "] {
            let s = sel(input);
            assert!(s.matches(None));
            assert!(s.matches(Some(&labels(&[("a", "b")]))));
            assert_eq!(s.to_string(), "");
        }
    }

    #[test]
    fn label_selector_equals_matches_only_that_value() {
        let s = sel("app=web");
        assert!(s.matches(Some(&labels(&[("app", "web"), ("x", "y")]))));
        assert!(!s.matches(Some(&labels(&[("app", "db")]))));
        assert!(!s.matches(Some(&labels(&[]))));
        assert!(!s.matches(None));
    }

    #[test]
    fn label_selector_double_equals_means_equals() {
        assert_eq!(sel("app==web"), sel("app=web"));
        assert_eq!(sel("app==web").to_string(), "app=web");
    }

    #[test]
    fn label_selector_not_equals_matches_objects_without_the_key() {
        let s = sel("app!=web");
        assert!(s.matches(None));
        assert!(s.matches(Some(&labels(&[("other", "web")]))));
        assert!(s.matches(Some(&labels(&[("app", "db")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web")]))));
    }

    #[test]
    fn label_selector_in_matches_any_listed_value() {
        let s = sel("tier in (web, db)");
        assert!(s.matches(Some(&labels(&[("tier", "web")]))));
        assert!(s.matches(Some(&labels(&[("tier", "db")]))));
        assert!(!s.matches(Some(&labels(&[("tier", "cache")]))));
        assert!(!s.matches(None));
    }

    #[test]
    fn label_selector_notin_excludes_listed_values() {
        let s = sel("tier notin (web,db)");
        assert!(!s.matches(Some(&labels(&[("tier", "web")]))));
        assert!(!s.matches(Some(&labels(&[("tier", "db")]))));
        assert!(s.matches(Some(&labels(&[("tier", "cache")]))));
    }

    #[test]
    fn label_selector_notin_matches_objects_without_the_key() {
        let s = sel("tier notin (web)");
        assert!(s.matches(None));
        assert!(s.matches(Some(&labels(&[("app", "web")]))));
    }

    #[test]
    fn label_selector_exists_requires_the_key_with_any_value() {
        let s = sel("app");
        assert!(s.matches(Some(&labels(&[("app", "")]))));
        assert!(s.matches(Some(&labels(&[("app", "x")]))));
        assert!(!s.matches(Some(&labels(&[("apps", "x")]))));
        assert!(!s.matches(None));
    }

    #[test]
    fn label_selector_does_not_exist_rejects_the_key() {
        let s = sel("!app");
        assert!(s.matches(None));
        assert!(s.matches(Some(&labels(&[("other", "x")]))));
        assert!(!s.matches(Some(&labels(&[("app", "")]))));
    }

    #[test]
    fn label_selector_greater_and_less_than_compare_integers() {
        let gt = sel("n>5");
        let lt = sel("n<5");
        assert!(gt.matches(Some(&labels(&[("n", "6")]))));
        assert!(!gt.matches(Some(&labels(&[("n", "5")]))));
        assert!(lt.matches(Some(&labels(&[("n", "4")]))));
        assert!(!lt.matches(Some(&labels(&[("n", "5")]))));
        assert!(!gt.matches(Some(&labels(&[("n", "many")]))));
        assert!(!gt.matches(None));
        assert!(!lt.matches(None));
    }

    #[test]
    fn label_selector_numeric_operator_needs_an_integer() {
        assert_eq!(
            label_error("n>abc"),
            "unable to parse requirement: values[0]: Invalid value: \"abc\": \
             for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn label_selector_ands_its_requirements() {
        let s = sel("app=web,tier!=db,!legacy");
        assert!(s.matches(Some(&labels(&[("app", "web")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("tier", "db")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("legacy", "1")]))));
        assert!(!s.matches(Some(&labels(&[("tier", "x")]))));
    }

    #[test]
    fn label_selector_non_string_label_values_never_match() {
        let map = json!({"n": 5, "b": true, "o": {}});
        let map = map.as_object();
        for input in [
            "n=5",
            "n!=5",
            "n",
            "!n",
            "n in (5)",
            "n notin (6)",
            "n>1",
            "b=true",
            "o",
        ] {
            assert!(
                !sel(input).matches(map),
                "{input} matched a non-string label"
            );
        }
    }

    #[test]
    fn label_selector_allows_whitespace_around_tokens() {
        let spaced = sel("  app = web ,\ttier in ( a , b ) ,  ! legacy , x != y , z notin(c)  ");
        assert_eq!(
            spaced,
            sel("app=web,tier in (a,b),!legacy,x!=y,z notin (c)")
        );
    }

    #[test]
    fn label_selector_empty_set_reads_as_the_empty_value() {
        let s = sel("a in ()");
        assert_eq!(s, sel("a in ( , )"));
        assert_eq!(s, sel("a in (,)"));
        assert!(s.matches(Some(&labels(&[("a", "")]))));
        assert!(!s.matches(Some(&labels(&[("a", "x")]))));
        assert_eq!(s.to_string(), "a in ()");
    }

    #[test]
    fn label_selector_rejects_a_trailing_empty_entry_after_a_double_comma() {
        // apimachinery's list reader consumes `,,` and then wants a value, not `)`.
        for input in ["a in (,,)", "a in (x,,)"] {
            assert_eq!(
                label_error(input),
                "unable to parse requirement: found ')', expected: ',', or identifier",
                "input {input:?}"
            );
        }
    }

    #[test]
    fn label_selector_empty_entries_in_a_set_are_the_empty_value() {
        assert_eq!(sel("a in (x,,y)"), sel("a in (,x,y)"));
        assert_eq!(sel("a in (x,)"), sel("a in (,x)"));
        assert_eq!(sel("a in (x,)").to_string(), "a in (,x)");
    }

    #[test]
    fn label_selector_missing_exact_value_is_the_empty_value() {
        let s = sel("a=,b");
        assert!(s.matches(Some(&labels(&[("a", ""), ("b", "1")]))));
        assert!(!s.matches(Some(&labels(&[("a", "x"), ("b", "1")]))));
        assert_eq!(s.to_string(), "a=,b");
        assert!(sel("a!=").matches(Some(&labels(&[("a", "x")]))));
    }

    #[test]
    fn label_selector_keywords_are_plain_words_as_keys_and_values() {
        let s = sel("in in (in,notin),notin=in");
        assert!(s.matches(Some(&labels(&[("in", "notin"), ("notin", "in")]))));
        assert!(!s.matches(Some(&labels(&[("in", "x"), ("notin", "in")]))));
        assert_eq!(s.to_string(), "in in (in,notin),notin=in");
    }

    #[test]
    fn label_selector_accepts_prefixed_keys() {
        let s = sel("agents.x-k8s.io/sandbox-name-hash=abc123");
        assert!(s.matches(Some(&labels(&[(
            "agents.x-k8s.io/sandbox-name-hash",
            "abc123"
        )]))));
    }

    #[test]
    fn label_selector_display_is_sorted_and_canonical() {
        let s = sel("b notin (z, y, z), a==1, !c, d, e>3");
        assert_eq!(s.to_string(), "a=1,b notin (y,z),!c,d,e>3");
        assert_eq!(sel(&s.to_string()), s);
    }

    #[test]
    fn label_selector_rejects_invalid_keys() {
        let too_long = format!("{}=x", "k".repeat(64));
        let long_prefix = format!("{}/k=x", "p".repeat(254));
        for input in [
            "Upper.Example/k=x",
            "a/b/c=x",
            "/k=x",
            "p/=x",
            "-k=x",
            "k-=x",
            "k@x=y",
            "ünïcode=x",
            too_long.as_str(),
            long_prefix.as_str(),
        ] {
            let error = label_error(input);
            assert!(
                error.starts_with("unable to parse requirement: invalid label key"),
                "{input}: {error}"
            );
        }
    }

    #[test]
    fn label_selector_key_errors_say_which_part_is_wrong() {
        assert_eq!(
            label_error("a/b/c"),
            format!("unable to parse requirement: invalid label key \"a/b/c\": {LABEL_KEY_RULE}")
        );
        assert_eq!(
            label_error("/k"),
            "unable to parse requirement: invalid label key \"/k\": prefix part must be non-empty"
        );
        assert_eq!(
            label_error("Ex/k"),
            format!(
                "unable to parse requirement: invalid label key \"Ex/k\": prefix part {SUBDOMAIN_RULE}"
            )
        );
        let long = "k".repeat(64);
        assert_eq!(
            label_error(&long),
            format!(
                "unable to parse requirement: invalid label key \"{long}\": \
                 name part must be no more than 63 characters"
            )
        );
        assert_eq!(
            label_error("p/"),
            format!(
                "unable to parse requirement: invalid label key \"p/\": \
                 name part must be non-empty; name part {LABEL_NAME_RULE}"
            )
        );
    }

    #[test]
    fn label_selector_rejects_invalid_values() {
        let too_long = format!("k={}", "v".repeat(64));
        for input in [
            "k=-v",
            "k=v-",
            "k=v@w",
            "k=é",
            "k in (ok,b@d)",
            "k notin (.x)",
            &too_long,
        ] {
            let error = label_error(input);
            assert!(
                error.starts_with("unable to parse requirement: invalid label value"),
                "{input}: {error}"
            );
        }
        assert_eq!(
            label_error("k=v@w"),
            format!(
                "unable to parse requirement: invalid label value: \"v@w\": at key: \"k\": \
                 {LABEL_VALUE_RULE}"
            )
        );
        assert_eq!(
            label_error(&too_long),
            format!(
                "unable to parse requirement: invalid label value: \"{}\": at key: \"k\": \
                 must be no more than 63 characters",
                "v".repeat(64)
            )
        );
        assert!(LabelSelector::parse(&format!("k={}", "v".repeat(63))).is_ok());
    }

    #[test]
    fn label_selector_reports_bad_syntax_with_the_token_found() {
        let cases = [
            (
                "a b",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "a in b",
                "unable to parse requirement: found 'b', expected: '('",
            ),
            (
                "a in (b",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            (
                "a in (b c)",
                "unable to parse requirement: found 'c', expected: ',' or ')'",
            ),
            (
                "a in (=)",
                "unable to parse requirement: found '=', expected: ',', ')' or identifier",
            ),
            (
                "a in (b,=)",
                "unable to parse requirement: found '=', expected: ',', or identifier",
            ),
            (
                "a notin",
                "unable to parse requirement: found '', expected: '('",
            ),
            (
                "a=(b)",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "!",
                "unable to parse requirement: found '', expected: identifier",
            ),
            (
                "!=a",
                "found '!=', expected: !, identifier, or 'end of string'",
            ),
            ("!a=b", "found '=', expected: ',' or 'end of string'"),
            ("a=b=c", "found '=', expected: ',' or 'end of string'"),
            ("a=b c", "found 'c', expected: ',' or 'end of string'"),
            ("a,", "found '', expected: identifier after ','"),
            ("a,,b", "found ',', expected: identifier after ','"),
            (
                ",a",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            (
                "(a)",
                "found '(', expected: !, identifier, or 'end of string'",
            ),
            (
                "a===b",
                "unable to parse requirement: found '=', expected: identifier",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(label_error(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn label_selector_survives_hostile_input() {
        for input in [
            "\u{0}",
            "a\u{0}",
            "((((",
            "))))",
            "!!!!",
            "=====",
            "a in ((",
            "é in (ü)",
            "a>>1",
            "<",
        ] {
            // Any outcome is fine as long as it is not a panic, and a success round-trips.
            if let Ok(s) = LabelSelector::parse(input) {
                assert_eq!(sel(&s.to_string()), s);
            }
        }
    }

    #[test]
    fn field_selector_empty_matches_everything() {
        for input in ["", ",", ",,"] {
            let s = fsel(input);
            assert!(s.matches(|_| None));
        }
    }

    #[test]
    fn field_selector_equals_and_double_equals_compare_the_value() {
        let s = fsel("status.phase=Running");
        assert_eq!(s, fsel("status.phase==Running"));
        assert!(s.matches(|f| (f == "status.phase").then(|| "Running".to_string())));
        assert!(!s.matches(|_| Some("Pending".to_string())));
        assert!(!s.matches(|_| None));
    }

    #[test]
    fn field_selector_not_equals_matches_other_and_missing_values() {
        let s = fsel("spec.nodeName!=node-1");
        assert!(s.matches(|_| Some("node-2".to_string())));
        assert!(s.matches(|_| None));
        assert!(!s.matches(|_| Some("node-1".to_string())));
    }

    #[test]
    fn field_selector_missing_value_compares_as_empty_string() {
        assert!(fsel("spec.nodeName=").matches(|_| None));
        assert!(!fsel("spec.nodeName!=").matches(|_| None));
        assert!(fsel("spec.nodeName!=").matches(|_| Some("n".to_string())));
    }

    #[test]
    fn field_selector_ands_its_terms() {
        let s = fsel("metadata.name=a,metadata.namespace=ns");
        let obj = json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert!(s.matches(|p| field_value(&obj, p)));
        let other = json!({"metadata": {"name": "a", "namespace": "other"}});
        assert!(!s.matches(|p| field_value(&other, p)));
    }

    #[test]
    fn field_selector_unescapes_values() {
        let s = fsel(r"metadata.name=a\,b\=c\\d,x=y");
        assert!(s.matches(|f| match f {
            "metadata.name" => Some(r"a,b=c\d".to_string()),
            "x" => Some("y".to_string()),
            _ => None,
        }));
        assert_eq!(s.to_string(), r"metadata.name=a\,b\=c\\d,x=y");
    }

    #[test]
    fn field_selector_rejects_bad_escapes_and_bare_specials() {
        assert_eq!(
            FieldSelector::parse(r"a=b\c"),
            Err(SelectorError::InvalidEscape(r"\c".to_string()))
        );
        assert_eq!(
            FieldSelector::parse(r"a=b\"),
            Err(SelectorError::InvalidEscape(r"\".to_string()))
        );
        assert_eq!(
            FieldSelector::parse("a=b=c"),
            Err(SelectorError::UnescapedCharacter('='))
        );
        assert_eq!(
            FieldSelector::parse("a=b\\").map_err(|e| e.to_string()),
            Err(r"invalid field selector: invalid escape sequence: \".to_string())
        );
    }

    #[test]
    fn field_selector_rejects_terms_without_operator() {
        let error = FieldSelector::parse("metadata.name=a,status.phase");
        assert_eq!(
            error.map_err(|e| e.to_string()),
            Err(
                "invalid selector: 'metadata.name=a,status.phase'; can't understand 'status.phase'"
                    .to_string()
            )
        );
        assert!(FieldSelector::parse("a!b").is_err());
        assert!(FieldSelector::parse("é").is_err());
    }

    #[test]
    fn field_selector_splits_at_the_first_operator() {
        // `a!b=c` has its first operator after `a!b`; `a!=b` is a not-equals.
        let s = fsel("a!b=c");
        assert!(s.matches(|f| (f == "a!b").then(|| "c".to_string())));
        let s = fsel("a!=b");
        assert!(s.matches(|_| Some("c".to_string())));
        assert!(!s.matches(|_| Some("b".to_string())));
    }

    #[test]
    fn field_selector_check_supported_names_the_unsupported_field() {
        let s = fsel("metadata.name=a,spec.foo=b");
        let error = s.check_supported(&["metadata.name", "metadata.namespace"]);
        assert_eq!(
            error,
            Err(SelectorError::FieldNotSupported("spec.foo".to_string()))
        );
        assert_eq!(
            error.map_err(|e| e.to_string()),
            Err("field label not supported: spec.foo".to_string())
        );
        assert_eq!(s.check_supported(&["metadata.name", "spec.foo"]), Ok(()));
        assert_eq!(fsel("").check_supported(&[]), Ok(()));
    }

    #[test]
    fn field_selector_does_not_trim_whitespace() {
        let s = fsel(" metadata.name = a");
        assert_eq!(
            s.check_supported(&["metadata.name"]),
            Err(SelectorError::FieldNotSupported(
                " metadata.name ".to_string()
            ))
        );
        assert!(s.matches(|f| (f == " metadata.name ").then(|| " a".to_string())));
    }

    #[test]
    fn a_node_without_unschedulable_selects_as_false() {
        let node = json!({ "metadata": { "name": "n" }, "spec": {} });
        assert_eq!(
            field_value(&node, "spec.unschedulable").as_deref(),
            Some("false")
        );
        let cordoned = json!({ "spec": { "unschedulable": true } });
        assert_eq!(
            field_value(&cordoned, "spec.unschedulable").as_deref(),
            Some("true")
        );
        assert_eq!(field_value(&node, "spec.other"), None);
    }

    #[test]
    fn field_value_walks_dotted_paths() {
        let obj = json!({
            "metadata": {"name": "p", "generation": 3},
            "spec": {"nodeName": "n1", "paused": false, "list": [1], "none": null},
            "status": {"phase": "Running"}
        });
        assert_eq!(field_value(&obj, "metadata.name"), Some("p".to_string()));
        assert_eq!(
            field_value(&obj, "status.phase"),
            Some("Running".to_string())
        );
        assert_eq!(
            field_value(&obj, "metadata.generation"),
            Some("3".to_string())
        );
        assert_eq!(field_value(&obj, "spec.paused"), Some("false".to_string()));
        assert_eq!(field_value(&obj, "spec.list"), None);
        assert_eq!(field_value(&obj, "spec.none"), None);
        assert_eq!(field_value(&obj, "spec"), None);
        assert_eq!(field_value(&obj, "spec.missing"), None);
        assert_eq!(field_value(&obj, "metadata.name.deeper"), None);
        assert_eq!(field_value(&obj, ""), None);
    }

    /// A requirement as the property tests generate it: key, operator and values.
    #[derive(Debug, Clone)]
    struct Generated {
        key: String,
        operator: Operator,
        values: Vec<String>,
    }

    /// Valid label keys, from a small pool so that label maps hit them often.
    fn key_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec!["a", "b", "app", "in", "notin", "x.y_z-1", "A9"])
                .prop_map(str::to_string),
            prop::sample::select(vec!["example.com/a", "k8s.io/app", "a-b.c/B"])
                .prop_map(str::to_string),
            "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,10}[a-zA-Z0-9])?",
        ]
    }

    /// Valid label values, some empty, some numeric.
    fn value_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec!["", "1", "5", "10", "web", "in", "notin", "v_1.x"])
                .prop_map(str::to_string),
            "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,6}[a-zA-Z0-9])?",
        ]
    }

    /// Requirements with operators and value counts that suit each other.
    fn requirement_strategy() -> impl Strategy<Value = Generated> {
        let numeric = "[0-9]{1,4}".prop_map(|s| vec![s]);
        (
            key_strategy(),
            prop::sample::select(vec![
                Operator::Equals,
                Operator::NotEquals,
                Operator::In,
                Operator::NotIn,
                Operator::Exists,
                Operator::DoesNotExist,
                Operator::GreaterThan,
                Operator::LessThan,
            ]),
            prop::collection::vec(value_strategy(), 1..4),
            numeric,
        )
            .prop_map(|(key, operator, set, numeric)| {
                let values = match operator {
                    // A value set: apimachinery rejects some spellings of a repeated empty
                    // value (`(x,,)`), so each value appears once.
                    Operator::In | Operator::NotIn => {
                        let mut set = set;
                        set.sort();
                        set.dedup();
                        set
                    }
                    Operator::Exists | Operator::DoesNotExist => Vec::new(),
                    Operator::GreaterThan | Operator::LessThan => numeric,
                    Operator::Equals | Operator::NotEquals => set.into_iter().take(1).collect(),
                };
                Generated {
                    key,
                    operator,
                    values,
                }
            })
    }

    /// Writes a generated requirement in one of its accepted spellings.
    fn write_generated(r: &Generated, style: u8) -> String {
        let space = if style.is_multiple_of(2) { "" } else { "  " };
        let first = r.values.first().map_or("", String::as_str);
        match r.operator {
            Operator::Equals if style.is_multiple_of(3) => {
                format!("{}{space}=={space}{first}", r.key)
            }
            Operator::Equals => format!("{}{space}={space}{first}", r.key),
            Operator::NotEquals => format!("{}{space}!={space}{first}", r.key),
            Operator::GreaterThan => format!("{}{space}>{space}{first}", r.key),
            Operator::LessThan => format!("{}{space}<{space}{first}", r.key),
            Operator::Exists => format!("{space}{}{space}", r.key),
            Operator::DoesNotExist => format!("!{space}{}", r.key),
            Operator::In => format!(
                "{} in ({space}{})",
                r.key,
                r.values.join(&format!("{space},"))
            ),
            Operator::NotIn => format!("{} notin({})", r.key, r.values.join(",")),
        }
    }

    /// What a generated requirement means, computed without the parser.
    fn oracle(r: &Generated, labels: &Map<String, Value>) -> bool {
        let actual = labels.get(&r.key).and_then(Value::as_str);
        let listed = |v: &str| r.values.iter().any(|x| x == v);
        let number = |v: &str| v.parse::<i64>().ok();
        let bound = r.values.first().and_then(|v| number(v));
        match r.operator {
            Operator::Equals | Operator::In => actual.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => !actual.is_some_and(listed),
            Operator::Exists => actual.is_some(),
            Operator::DoesNotExist => actual.is_none(),
            Operator::GreaterThan => {
                matches!((actual.and_then(number), bound), (Some(a), Some(b)) if a > b)
            }
            Operator::LessThan => {
                matches!((actual.and_then(number), bound), (Some(a), Some(b)) if a < b)
            }
        }
    }

    /// Label maps over keys and values from the same pools as the selectors.
    fn labels_strategy() -> impl Strategy<Value = Map<String, Value>> {
        prop::collection::vec((key_strategy(), value_strategy()), 0..6).prop_map(|pairs| {
            pairs
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect()
        })
    }

    /// Strings made of selector characters, to reach deep into both parsers.
    fn selector_like() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[a-c =!(),<>\\\\\t]{0,24}",
            prop::collection::vec(
                prop::sample::select(vec![
                    "a",
                    "b",
                    "in",
                    "notin",
                    "(",
                    ")",
                    ",",
                    "=",
                    "==",
                    "!=",
                    "!",
                    ">",
                    "<",
                    " ",
                    "\\",
                    "\\,",
                    "é",
                    "\u{0}",
                    "metadata.name",
                    "/",
                    "x.y/z",
                    "1",
                ]),
                0..12
            )
            .prop_map(|parts| parts.concat()),
        ]
    }

    proptest! {
        #[test]
        fn label_selector_display_parses_back_equal_and_matches_the_same(
            generated in prop::collection::vec(requirement_strategy(), 0..5),
            style in any::<u8>(),
            maps in prop::collection::vec(labels_strategy(), 1..8),
        ) {
            let input = generated
                .iter()
                .map(|r| write_generated(r, style))
                .collect::<Vec<_>>()
                .join(if style.is_multiple_of(5) { " , " } else { "," });
            let parsed = LabelSelector::parse(&input);
            prop_assert!(parsed.is_ok(), "{input:?}: {parsed:?}");
            let Ok(parsed) = parsed else { unreachable!() };
            let printed = parsed.to_string();
            let reparsed = LabelSelector::parse(&printed);
            prop_assert_eq!(reparsed.as_ref(), Ok(&parsed), "printed as {:?}", printed);
            for map in &maps {
                let expected = generated.iter().all(|r| oracle(r, map));
                prop_assert_eq!(parsed.matches(Some(map)), expected, "{:?} on {:?}", input, map);
                if let Ok(reparsed) = &reparsed {
                    prop_assert_eq!(reparsed.matches(Some(map)), expected);
                }
            }
            let no_labels = generated.iter().all(|r| oracle(r, &Map::new()));
            prop_assert_eq!(parsed.matches(None), no_labels);
        }

        #[test]
        fn field_selector_display_parses_back_equal(
            terms in prop::collection::vec(
                ("[a-z.]{1,8}", any::<bool>(), "[a-z,=\\\\ é]{0,8}"),
                0..5,
            ),
        ) {
            let escaped = |v: &str| v.replace('\\', "\\\\").replace(',', "\\,").replace('=', "\\=");
            let input = terms
                .iter()
                .map(|(f, eq, v)| format!("{f}{}{}", if *eq { "=" } else { "!=" }, escaped(v)))
                .collect::<Vec<_>>()
                .join(",");
            let parsed = FieldSelector::parse(&input);
            prop_assert!(parsed.is_ok(), "{input:?}: {parsed:?}");
            let Ok(parsed) = parsed else { unreachable!() };
            prop_assert_eq!(FieldSelector::parse(&parsed.to_string()), Ok(parsed.clone()));
            let value_of = |f: &str| terms.iter().find(|t| t.0 == f).map(|t| t.2.clone());
            let expected = terms.iter().all(|(f, eq, v)| {
                let actual = value_of(f).unwrap_or_default();
                (actual == *v) == *eq
            });
            prop_assert_eq!(parsed.matches(value_of), expected);
        }

        #[test]
        fn parsers_never_panic_and_successes_round_trip(input in selector_like()) {
            if let Ok(s) = LabelSelector::parse(&input) {
                prop_assert_eq!(LabelSelector::parse(&s.to_string()), Ok(s.clone()));
                let _ = s.matches(None);
            }
            if let Ok(s) = FieldSelector::parse(&input) {
                prop_assert_eq!(FieldSelector::parse(&s.to_string()), Ok(s.clone()));
                let _ = s.check_supported(&["metadata.name"]);
            }
        }
    }
}
