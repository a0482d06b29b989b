//! The lexer and parser of label selector strings, after apimachinery's `labels.Lexer` and
//! `labels.Parser`.

use super::error::{RequirementError, SelectorError};
use super::requirement::{Operator, Requirement, validate_label_key};

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
pub(super) struct Parser {
    /// All tokens, ending with the end token.
    tokens: Vec<Token>,
    /// The next token to consume.
    position: usize,
}

impl Parser {
    /// Tokenises `input`.
    pub(super) fn new(input: &str) -> Self {
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
    pub(super) fn requirements(&mut self) -> Result<Vec<Requirement>, SelectorError> {
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
