//! Lexer and recursive-descent parser for the POSIX shell language subset the runtime runs.
//!
//! The lexer works on characters and is driven by the parser, because a word can contain a whole
//! program (`$(…)`). Here-document bodies are cut out of the source as soon as their operator is
//! read, so the rest of the line lexes as if they were not there. Nesting is limited to
//! [`MAX_PARSE_DEPTH`] so hostile input cannot exhaust the stack.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::ast::{
    AndOr, Command, Compound, Connector, Item, List, Param, ParamOp, Part, Pipeline, RedirOp,
    Redirect, SimpleCommand, Word,
};

/// Deepest nesting of compound commands, substitutions and quotes the parser accepts.
pub(crate) const MAX_PARSE_DEPTH: usize = 48;

/// A syntax error, worded as BusyBox `sh` words it (the shell prefixes `sh: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParseError {
    /// A token where it cannot be.
    #[error("syntax error: unexpected {0}")]
    Unexpected(String),
    /// The input ended inside a construct that needs a closing word.
    #[error("syntax error: unexpected end of file (expecting \"{0}\")")]
    Expecting(String),
    /// A quote, backquote or `$(` without its end.
    #[error("syntax error: unterminated quoted string")]
    Unterminated,
    /// A malformed `${…}`.
    #[error("syntax error: bad substitution")]
    BadSubstitution,
    /// Nesting beyond [`MAX_PARSE_DEPTH`].
    #[error("syntax error: nesting too deep")]
    TooDeep,
}

/// Operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `;`
    Semi,
    /// `;;`
    DSemi,
    /// `&`
    Amp,
    /// `&&`
    AndIf,
    /// `||`
    OrIf,
    /// `|`
    Pipe,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `<`
    Less,
    /// `>`
    Great,
    /// `>>`
    DGreat,
    /// `<&`
    LessAnd,
    /// `>&`
    GreatAnd,
    /// `<>`
    LessGreat,
    /// `>|`
    Clobber,
    /// `<<`
    DLess,
    /// `<<-`
    DLessDash,
}

impl Op {
    /// The operator's text.
    fn text(self) -> &'static str {
        match self {
            Op::Semi => ";",
            Op::DSemi => ";;",
            Op::Amp => "&",
            Op::AndIf => "&&",
            Op::OrIf => "||",
            Op::Pipe => "|",
            Op::LParen => "(",
            Op::RParen => ")",
            Op::Less => "<",
            Op::Great => ">",
            Op::DGreat => ">>",
            Op::LessAnd => "<&",
            Op::GreatAnd => ">&",
            Op::LessGreat => "<>",
            Op::Clobber => ">|",
            Op::DLess => "<<",
            Op::DLessDash => "<<-",
        }
    }

    /// Whether this operator starts a redirection.
    fn is_redirect(self) -> bool {
        matches!(
            self,
            Op::Less
                | Op::Great
                | Op::DGreat
                | Op::LessAnd
                | Op::GreatAnd
                | Op::LessGreat
                | Op::Clobber
                | Op::DLess
                | Op::DLessDash
        )
    }
}

/// A token.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A word.
    Word(Word),
    /// Digits right before a redirection operator.
    IoNumber(u32),
    /// An operator.
    Op(Op),
    /// A newline.
    Newline,
    /// End of input.
    Eof,
}

impl Tok {
    /// How an error message names this token.
    fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("\"{}\"", w.literal_text()),
            Tok::IoNumber(n) => format!("\"{n}\""),
            Tok::Op(op) => format!("\"{}\"", op.text()),
            Tok::Newline => "newline".to_string(),
            Tok::Eof => "end of file".to_string(),
        }
    }

    /// Whether this is the reserved word `kw`.
    fn is_keyword(&self, kw: &str) -> bool {
        matches!(self, Tok::Word(w) if w.0.len() == 1 && matches!(&w.0[0], Part::Lit(s) if s == kw))
    }
}

impl Word {
    /// The word's text with quoting removed and expansions shown as written roughly (for keyword
    /// checks, here-document delimiters and messages).
    pub(crate) fn literal_text(&self) -> String {
        fn push(parts: &[Part], out: &mut String) {
            for p in parts {
                match p {
                    Part::Lit(s) | Part::Quoted(s) => out.push_str(s),
                    Part::Double(inner) => push(inner, out),
                    Part::Param(p) => {
                        out.push('$');
                        out.push_str(&p.name);
                    }
                    Part::Command(_) => out.push_str("$(...)"),
                    Part::Arith(_) => out.push_str("$((...))"),
                }
            }
        }
        let mut out = String::new();
        push(&self.0, &mut out);
        out
    }

    /// Whether any part of the word is quoted.
    fn has_quotes(&self) -> bool {
        self.0
            .iter()
            .any(|p| matches!(p, Part::Quoted(_) | Part::Double(_)))
    }
}

/// Whether `s` is a valid variable name.
pub(crate) fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Reserved words that end a list.
const LIST_ENDS: &[&str] = &["then", "else", "elif", "fi", "do", "done", "esac", "}"];

/// Which construct a word-part scan runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Inside `"…"`: ends at `"`.
    Double,
    /// A here-document body or `$((…))` text: ends at end of input, `"` is literal.
    HereDoc,
}

/// The line that ends an open here-document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HereDocEnd {
    /// The delimiter word, quotes removed.
    pub(crate) delimiter: String,
    /// `<<-`: leading tabs are stripped before comparing.
    pub(crate) strip_tabs: bool,
}

impl HereDocEnd {
    /// Whether `line` (without its newline) closes the here-document.
    pub(crate) fn closes(&self, line: &str) -> bool {
        let line = if self.strip_tabs {
            line.trim_start_matches('\t')
        } else {
            line
        };
        line == self.delimiter
    }
}

/// What [`parse_next`] found at the start of its input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next {
    /// One complete command line: the and-or lists up to the end of a line (a compound command
    /// once closed, here-document bodies included), and how many bytes of the input it used.
    Complete(List, usize),
    /// The input ends inside a command: more lines are needed (for an open here-document, up to
    /// its delimiter line) before it can be run or rejected.
    NeedMore(Option<HereDocEnd>),
}

/// Parses the first complete command line of `src`, as an interactive or streaming shell does:
/// it never looks past the newline that ends the command, so what follows stays unread. With
/// `at_eof` unset, input that ends inside a command asks for more instead of failing.
pub(crate) fn parse_next(src: &str, at_eof: bool) -> Result<Next, ParseError> {
    let mut p = Parser::new(src, 0);
    let total = p.src.len();
    let parsed = p.parse_command_line();
    if p.hit_end.get() && !at_eof {
        return Ok(Next::NeedMore(p.open_heredoc));
    }
    let list = parsed?;
    let used_chars = total - (p.src.len() - p.pos.min(p.src.len()));
    let used = src
        .char_indices()
        .nth(used_chars)
        .map_or(src.len(), |(i, _)| i);
    Ok(Next::Complete(list, used))
}

/// Parses a whole program.
pub(crate) fn parse(src: &str) -> Result<List, ParseError> {
    parse_at_depth(src, 0)
}

/// Longest program [`parse_shared`] keeps.
const SHARED_MAX_SOURCE: usize = 1024;
/// Most programs [`parse_shared`] keeps; past it, it starts over.
const SHARED_MAX_PROGRAMS: usize = 128;

/// [`parse`], sharing the result with every other caller of the same short program: every
/// container started with the same command line (thousands of pods of one template) and every
/// exec of the same `sh -c` holds one parsed program between them instead of a copy each.
pub(crate) fn parse_shared(src: &str) -> Result<Arc<List>, ParseError> {
    static SHARED: OnceLock<Mutex<HashMap<String, Arc<List>>>> = OnceLock::new();
    if src.len() > SHARED_MAX_SOURCE {
        return parse(src).map(Arc::new);
    }
    let shared = SHARED.get_or_init(Mutex::default);
    let lock = || shared.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(list) = lock().get(src) {
        return Ok(list.clone());
    }
    let list = Arc::new(parse(src)?);
    let mut map = lock();
    if map.len() >= SHARED_MAX_PROGRAMS {
        map.clear();
    }
    map.insert(src.to_string(), list.clone());
    Ok(list)
}

/// Parses a whole program, counting nesting from `depth` (for backquotes).
fn parse_at_depth(src: &str, depth: usize) -> Result<List, ParseError> {
    let mut p = Parser::new(src, depth);
    let list = p.parse_list()?;
    match p.next()? {
        Tok::Eof => Ok(list),
        other => Err(ParseError::Unexpected(other.describe())),
    }
}

/// Parses here-document or arithmetic text: expansions and backslashes, no other quoting.
fn parse_expanding_text(src: &str, depth: usize) -> Result<Word, ParseError> {
    let mut p = Parser::new(src, depth);
    Ok(Word(p.quoted_parts(Mode::HereDoc)?))
}

/// Parser state: the source, a cursor and one token of look-ahead.
struct Parser {
    /// Source characters (here-document bodies are removed as they are read).
    src: Vec<char>,
    /// Cursor.
    pos: usize,
    /// Look-ahead token.
    peeked: Option<Tok>,
    /// Current nesting.
    depth: usize,
    /// Set once the parser needed a character past the end of the source: with more input to
    /// come, what it found there (an error, or a list that ran to the end) is not final.
    hit_end: Cell<bool>,
    /// A here-document whose delimiter line the source does not hold yet.
    open_heredoc: Option<HereDocEnd>,
}

impl Parser {
    /// A parser at the start of `src`, counting nesting from `depth`.
    fn new(src: &str, depth: usize) -> Self {
        Parser {
            src: src.chars().collect(),
            pos: 0,
            peeked: None,
            depth,
            hit_end: Cell::new(false),
            open_heredoc: None,
        }
    }

    /// The character at the cursor; at the end of the source, notes that the end was reached.
    fn cur(&self) -> Option<char> {
        let c = self.src.get(self.pos).copied();
        if c.is_none() {
            self.hit_end.set(true);
        }
        c
    }

    /// The character `n` after the cursor.
    fn at(&self, n: usize) -> Option<char> {
        self.src.get(self.pos + n).copied()
    }

    /// Enters a nested construct.
    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_PARSE_DEPTH {
            Err(ParseError::TooDeep)
        } else {
            Ok(())
        }
    }

    /// Leaves a nested construct.
    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The next token, without consuming it.
    fn peek(&mut self) -> Result<&Tok, ParseError> {
        if self.peeked.is_none() {
            let t = self.lex()?;
            self.peeked = Some(t);
        }
        Ok(self.peeked.get_or_insert(Tok::Eof))
    }

    /// Consumes the next token.
    fn next(&mut self) -> Result<Tok, ParseError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lex(),
        }
    }

    /// Skips newline tokens.
    fn skip_newlines(&mut self) -> Result<(), ParseError> {
        while *self.peek()? == Tok::Newline {
            self.next()?;
        }
        Ok(())
    }

    /// Consumes the reserved word `kw` or fails.
    fn expect_keyword(&mut self, kw: &str) -> Result<(), ParseError> {
        let t = self.next()?;
        if t.is_keyword(kw) {
            Ok(())
        } else if t == Tok::Eof {
            Err(ParseError::Expecting(kw.to_string()))
        } else {
            Err(ParseError::Unexpected(t.describe()))
        }
    }

    /// Consumes the operator `op` or fails.
    fn expect_op(&mut self, op: Op) -> Result<(), ParseError> {
        match self.next()? {
            Tok::Op(o) if o == op => Ok(()),
            Tok::Eof => Err(ParseError::Expecting(op.text().to_string())),
            t => Err(ParseError::Unexpected(t.describe())),
        }
    }

    // ----- grammar -----

    /// One command line: and-or lists separated by `;` or `&`, up to and including the newline
    /// that ends the line (or the end of input); nothing after it is read.
    fn parse_command_line(&mut self) -> Result<List, ParseError> {
        let mut items = Vec::new();
        loop {
            match self.peek()? {
                Tok::Newline => {
                    self.next()?;
                    break;
                }
                Tok::Eof => break,
                _ => {}
            }
            let and_or = self.parse_and_or()?;
            let background = match self.peek()? {
                Tok::Op(Op::Semi) => {
                    self.next()?;
                    false
                }
                Tok::Op(Op::Amp) => {
                    self.next()?;
                    true
                }
                Tok::Newline | Tok::Eof => false,
                t => return Err(ParseError::Unexpected(t.describe())),
            };
            items.push(Item { and_or, background });
        }
        Ok(List { items })
    }

    /// A list of and-or lists, up to a closing word or operator (not consumed).
    fn parse_list(&mut self) -> Result<List, ParseError> {
        let mut items = Vec::new();
        loop {
            self.skip_newlines()?;
            let t = self.peek()?;
            if matches!(t, Tok::Eof | Tok::Op(Op::RParen) | Tok::Op(Op::DSemi))
                || LIST_ENDS.iter().any(|kw| t.is_keyword(kw))
            {
                break;
            }
            let and_or = self.parse_and_or()?;
            match self.peek()? {
                Tok::Op(Op::Semi) | Tok::Newline => {
                    self.next()?;
                    items.push(Item {
                        and_or,
                        background: false,
                    });
                }
                Tok::Op(Op::Amp) => {
                    self.next()?;
                    items.push(Item {
                        and_or,
                        background: true,
                    });
                }
                _ => {
                    items.push(Item {
                        and_or,
                        background: false,
                    });
                    break;
                }
            }
        }
        Ok(List { items })
    }

    /// Pipelines joined by `&&` / `||`.
    fn parse_and_or(&mut self) -> Result<AndOr, ParseError> {
        let first = self.parse_pipeline()?;
        let mut rest = Vec::new();
        loop {
            let conn = match self.peek()? {
                Tok::Op(Op::AndIf) => Connector::And,
                Tok::Op(Op::OrIf) => Connector::Or,
                _ => break,
            };
            self.next()?;
            self.skip_newlines()?;
            rest.push((conn, self.parse_pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    /// `[!] command | command …`.
    fn parse_pipeline(&mut self) -> Result<Pipeline, ParseError> {
        let mut negated = false;
        while self.peek()?.is_keyword("!") {
            self.next()?;
            negated = !negated;
        }
        let mut commands = vec![self.parse_command()?];
        while *self.peek()? == Tok::Op(Op::Pipe) {
            self.next()?;
            self.skip_newlines()?;
            commands.push(self.parse_command()?);
        }
        Ok(Pipeline { negated, commands })
    }

    /// One command: compound (with redirections), function definition or simple.
    fn parse_command(&mut self) -> Result<Command, ParseError> {
        self.enter()?;
        let r = self.parse_command_inner();
        self.leave();
        r
    }

    /// Body of [`Parser::parse_command`].
    fn parse_command_inner(&mut self) -> Result<Command, ParseError> {
        let t = self.peek()?.clone();
        let compound = if t.is_keyword("{") {
            self.next()?;
            let list = self.parse_list()?;
            self.expect_keyword("}")?;
            Compound::Brace(list)
        } else if t == Tok::Op(Op::LParen) {
            self.next()?;
            let list = self.parse_list()?;
            self.expect_op(Op::RParen)?;
            Compound::Subshell(list)
        } else if t.is_keyword("if") {
            self.parse_if()?
        } else if t.is_keyword("while") || t.is_keyword("until") {
            self.next()?;
            let cond = self.parse_list()?;
            self.expect_keyword("do")?;
            let body = self.parse_list()?;
            self.expect_keyword("done")?;
            Compound::Loop {
                cond,
                body,
                until: t.is_keyword("until"),
            }
        } else if t.is_keyword("for") {
            self.parse_for()?
        } else if t.is_keyword("case") {
            self.parse_case()?
        } else if LIST_ENDS.iter().any(|kw| t.is_keyword(kw)) {
            return Err(ParseError::Unexpected(t.describe()));
        } else {
            return self.parse_simple();
        };
        let mut redirects = Vec::new();
        while self.at_redirect()? {
            redirects.push(self.parse_redirect()?);
        }
        Ok(Command::Compound(Box::new(compound), redirects))
    }

    /// `if … then … [elif … then …] [else …] fi`.
    fn parse_if(&mut self) -> Result<Compound, ParseError> {
        self.next()?;
        let mut branches = Vec::new();
        let cond = self.parse_list()?;
        self.expect_keyword("then")?;
        branches.push((cond, self.parse_list()?));
        let mut otherwise = None;
        loop {
            let t = self.next()?;
            if t.is_keyword("elif") {
                let cond = self.parse_list()?;
                self.expect_keyword("then")?;
                branches.push((cond, self.parse_list()?));
            } else if t.is_keyword("else") {
                otherwise = Some(self.parse_list()?);
                self.expect_keyword("fi")?;
                break;
            } else if t.is_keyword("fi") {
                break;
            } else if t == Tok::Eof {
                return Err(ParseError::Expecting("fi".into()));
            } else {
                return Err(ParseError::Unexpected(t.describe()));
            }
        }
        Ok(Compound::If(branches, otherwise))
    }

    /// `for name [in words] ; do … done`.
    fn parse_for(&mut self) -> Result<Compound, ParseError> {
        self.next()?;
        let var = match self.next()? {
            Tok::Word(w) if is_name(&w.literal_text()) && !w.has_quotes() => w.literal_text(),
            Tok::Eof => return Err(ParseError::Expecting("do".into())),
            t => return Err(ParseError::Unexpected(t.describe())),
        };
        self.skip_newlines()?;
        let mut words = None;
        if self.peek()?.is_keyword("in") {
            self.next()?;
            let mut list = Vec::new();
            loop {
                match self.next()? {
                    Tok::Word(w) => list.push(w),
                    Tok::Op(Op::Semi) | Tok::Newline => break,
                    Tok::Eof => return Err(ParseError::Expecting("do".into())),
                    t => return Err(ParseError::Unexpected(t.describe())),
                }
            }
            words = Some(list);
        } else if *self.peek()? == Tok::Op(Op::Semi) {
            self.next()?;
        }
        self.skip_newlines()?;
        self.expect_keyword("do")?;
        let body = self.parse_list()?;
        self.expect_keyword("done")?;
        Ok(Compound::For { var, words, body })
    }

    /// `case word in [(]pattern[|pattern]) list ;; … esac`.
    fn parse_case(&mut self) -> Result<Compound, ParseError> {
        self.next()?;
        let word = match self.next()? {
            Tok::Word(w) => w,
            Tok::Eof => return Err(ParseError::Expecting("in".into())),
            t => return Err(ParseError::Unexpected(t.describe())),
        };
        self.skip_newlines()?;
        self.expect_keyword("in")?;
        let mut arms = Vec::new();
        loop {
            self.skip_newlines()?;
            if self.peek()?.is_keyword("esac") {
                self.next()?;
                break;
            }
            if *self.peek()? == Tok::Op(Op::LParen) {
                self.next()?;
            }
            let mut patterns = Vec::new();
            loop {
                match self.next()? {
                    Tok::Word(w) => patterns.push(w),
                    Tok::Eof => return Err(ParseError::Expecting("esac".into())),
                    t => return Err(ParseError::Unexpected(t.describe())),
                }
                if *self.peek()? == Tok::Op(Op::Pipe) {
                    self.next()?;
                } else {
                    break;
                }
            }
            self.expect_op(Op::RParen)?;
            let body = self.parse_list()?;
            arms.push((patterns, body));
            match self.peek()? {
                Tok::Op(Op::DSemi) => {
                    self.next()?;
                }
                t if t.is_keyword("esac") => {}
                Tok::Eof => return Err(ParseError::Expecting("esac".into())),
                t => return Err(ParseError::Unexpected(t.describe())),
            }
        }
        Ok(Compound::Case(word, arms))
    }

    /// Whether a redirection starts at the next token.
    fn at_redirect(&mut self) -> Result<bool, ParseError> {
        Ok(match self.peek()? {
            Tok::IoNumber(_) => true,
            Tok::Op(op) => op.is_redirect(),
            _ => false,
        })
    }

    /// Assignments, words and redirections; or a function definition `name() command`.
    fn parse_simple(&mut self) -> Result<Command, ParseError> {
        let mut sc = SimpleCommand::default();
        loop {
            if self.at_redirect()? {
                sc.redirects.push(self.parse_redirect()?);
                continue;
            }
            let Tok::Word(_) = self.peek()? else { break };
            let Tok::Word(w) = self.next()? else { break };
            if sc.words.is_empty() {
                if let Some(assign) = split_assignment(&w) {
                    sc.assigns.push(assign);
                    continue;
                }
                let name = w.literal_text();
                if sc.assigns.is_empty()
                    && sc.redirects.is_empty()
                    && is_name(&name)
                    && !w.has_quotes()
                    && *self.peek()? == Tok::Op(Op::LParen)
                {
                    self.next()?;
                    self.expect_op(Op::RParen)?;
                    self.skip_newlines()?;
                    let body = self.parse_command()?;
                    return Ok(Command::FunctionDef(name, Box::new(body)));
                }
            }
            sc.words.push(w);
        }
        if sc.words.is_empty() && sc.assigns.is_empty() && sc.redirects.is_empty() {
            let t = self.peek()?.clone();
            return Err(match t {
                Tok::Eof => ParseError::Unexpected("end of file".into()),
                t => ParseError::Unexpected(t.describe()),
            });
        }
        Ok(Command::Simple(sc))
    }

    /// `[n]op word`, reading the body of a here-document.
    fn parse_redirect(&mut self) -> Result<Redirect, ParseError> {
        let mut fd = None;
        if let Tok::IoNumber(n) = self.peek()? {
            fd = Some(*n);
            self.next()?;
        }
        let op = match self.next()? {
            Tok::Op(op) if op.is_redirect() => op,
            t => return Err(ParseError::Unexpected(t.describe())),
        };
        let word = match self.next()? {
            Tok::Word(w) => w,
            t => return Err(ParseError::Unexpected(t.describe())),
        };
        let (op, default_fd, target) = match op {
            Op::Less => (RedirOp::Read, 0, word),
            Op::Great | Op::Clobber => (RedirOp::Write, 1, word),
            Op::DGreat => (RedirOp::Append, 1, word),
            Op::LessAnd => (RedirOp::DupIn, 0, word),
            Op::GreatAnd => (RedirOp::DupOut, 1, word),
            Op::LessGreat => (RedirOp::ReadWrite, 0, word),
            Op::DLess | Op::DLessDash => {
                let quoted = word.has_quotes();
                let body = self.take_heredoc(&word.literal_text(), op == Op::DLessDash)?;
                let target = if quoted {
                    Word(vec![Part::Quoted(body)])
                } else {
                    self.enter()?;
                    let w = parse_expanding_text(&body, self.depth);
                    self.leave();
                    w?
                };
                (RedirOp::HereDoc { quoted }, 0, target)
            }
            _ => return Err(ParseError::Unexpected(op.text().to_string())),
        };
        Ok(Redirect {
            fd: fd.unwrap_or(default_fd),
            op,
            target,
        })
    }

    /// Cuts the body of a here-document (the lines after the current one, up to `delim`) out of
    /// the source and returns it.
    fn take_heredoc(&mut self, delim: &str, strip_tabs: bool) -> Result<String, ParseError> {
        let Some(nl) = self.src[self.pos..]
            .iter()
            .position(|c| *c == '\n')
            .map(|i| i + self.pos)
        else {
            self.hit_end.set(true);
            return Ok(String::new());
        };
        let start = nl + 1;
        let mut body = String::new();
        let mut i = start;
        let mut end = self.src.len();
        let mut closed = false;
        while i < self.src.len() {
            let line_end = self.src[i..].iter().position(|c| *c == '\n').map(|k| k + i);
            let stop = line_end.unwrap_or(self.src.len());
            let mut line: String = self.src[i..stop].iter().collect();
            if strip_tabs {
                line = line.trim_start_matches('\t').to_string();
            }
            let next = line_end.map(|e| e + 1).unwrap_or(self.src.len());
            if line == delim {
                end = next;
                closed = true;
                break;
            }
            body.push_str(&line);
            body.push('\n');
            i = next;
        }
        if !closed {
            self.hit_end.set(true);
            self.open_heredoc.get_or_insert(HereDocEnd {
                delimiter: delim.to_string(),
                strip_tabs,
            });
        }
        self.src.drain(start..end.min(self.src.len()).max(start));
        Ok(body)
    }

    // ----- lexer -----

    /// Reads the next token from the source.
    fn lex(&mut self) -> Result<Tok, ParseError> {
        loop {
            match (self.cur(), self.at(1)) {
                (Some(' ' | '\t' | '\r'), _) => self.pos += 1,
                (Some('\\'), Some('\n')) => self.pos += 2,
                (Some('#'), _) => {
                    while let Some(c) = self.cur() {
                        if c == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
        let Some(c) = self.cur() else {
            return Ok(Tok::Eof);
        };
        let two = self.at(1);
        let (op, len) = match (c, two) {
            ('\n', _) => {
                self.pos += 1;
                return Ok(Tok::Newline);
            }
            (';', Some(';')) => (Op::DSemi, 2),
            (';', _) => (Op::Semi, 1),
            ('&', Some('&')) => (Op::AndIf, 2),
            ('&', _) => (Op::Amp, 1),
            ('|', Some('|')) => (Op::OrIf, 2),
            ('|', _) => (Op::Pipe, 1),
            ('(', _) => (Op::LParen, 1),
            (')', _) => (Op::RParen, 1),
            ('<', Some('<')) if self.at(2) == Some('-') => (Op::DLessDash, 3),
            ('<', Some('<')) => (Op::DLess, 2),
            ('<', Some('&')) => (Op::LessAnd, 2),
            ('<', Some('>')) => (Op::LessGreat, 2),
            ('<', _) => (Op::Less, 1),
            ('>', Some('>')) => (Op::DGreat, 2),
            ('>', Some('&')) => (Op::GreatAnd, 2),
            ('>', Some('|')) => (Op::Clobber, 2),
            ('>', _) => (Op::Great, 1),
            _ => {
                let word = self.lex_word()?;
                if let [Part::Lit(digits)] = word.0.as_slice()
                    && !digits.is_empty()
                    && digits.chars().all(|c| c.is_ascii_digit())
                    && matches!(self.cur(), Some('<' | '>'))
                    && let Ok(n) = digits.parse::<u32>()
                {
                    return Ok(Tok::IoNumber(n));
                }
                return Ok(Tok::Word(word));
            }
        };
        self.pos += len;
        Ok(Tok::Op(op))
    }

    /// Reads an unquoted word up to a blank or an operator character.
    fn lex_word(&mut self) -> Result<Word, ParseError> {
        self.word_until(None)
    }

    /// Reads the word of a `${name<op>word}` up to the closing `}`, which it consumes.
    fn brace_operand(&mut self) -> Result<Word, ParseError> {
        self.word_until(Some('}'))
    }

    /// Reads a word: with no `closing`, up to a blank, an operator character or the end; with
    /// one, up to that character (consumed), where running out of input is unterminated.
    fn word_until(&mut self, closing: Option<char>) -> Result<Word, ParseError> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        loop {
            let Some(c) = self.cur() else {
                if closing.is_some() {
                    return Err(ParseError::Unterminated);
                }
                break;
            };
            if Some(c) == closing {
                self.pos += 1;
                break;
            }
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
                    if closing.is_none() =>
                {
                    break;
                }
                '\\' => match self.at(1) {
                    Some('\n') => self.pos += 2,
                    Some(n) => {
                        flush(&mut lit, &mut parts);
                        parts.push(Part::Quoted(n.to_string()));
                        self.pos += 2;
                    }
                    None if closing.is_some() => return Err(ParseError::Unterminated),
                    None => {
                        lit.push('\\');
                        self.pos += 1;
                    }
                },
                '\'' => {
                    flush(&mut lit, &mut parts);
                    self.pos += 1;
                    let start = self.pos;
                    let Some(len) = self.src[start..].iter().position(|c| *c == '\'') else {
                        self.hit_end.set(true);
                        return Err(ParseError::Unterminated);
                    };
                    parts.push(Part::Quoted(self.src[start..start + len].iter().collect()));
                    self.pos = start + len + 1;
                }
                '"' => {
                    flush(&mut lit, &mut parts);
                    self.pos += 1;
                    self.enter()?;
                    let inner = self.quoted_parts(Mode::Double);
                    self.leave();
                    parts.push(Part::Double(inner?));
                }
                '$' => match self.lex_dollar()? {
                    Some(p) => {
                        flush(&mut lit, &mut parts);
                        parts.push(p);
                    }
                    None => {
                        lit.push('$');
                        self.pos += 1;
                    }
                },
                '`' => {
                    flush(&mut lit, &mut parts);
                    parts.push(self.lex_backquote(false)?);
                }
                c => {
                    lit.push(c);
                    self.pos += 1;
                }
            }
        }
        flush(&mut lit, &mut parts);
        Ok(Word(parts))
    }

    /// Reads the inside of `"…"` (cursor after the quote) or a here-document body.
    fn quoted_parts(&mut self, mode: Mode) -> Result<Vec<Part>, ParseError> {
        let mut parts = Vec::new();
        let mut text = String::new();
        loop {
            let Some(c) = self.cur() else {
                if mode == Mode::Double {
                    return Err(ParseError::Unterminated);
                }
                break;
            };
            match c {
                '"' if mode == Mode::Double => {
                    self.pos += 1;
                    break;
                }
                '\\' => match self.at(1) {
                    Some('\n') => self.pos += 2,
                    Some(n @ ('$' | '`' | '\\')) => {
                        text.push(n);
                        self.pos += 2;
                    }
                    Some('"') if mode == Mode::Double => {
                        text.push('"');
                        self.pos += 2;
                    }
                    _ => {
                        text.push('\\');
                        self.pos += 1;
                    }
                },
                '$' => match self.lex_dollar()? {
                    Some(p) => {
                        flush_quoted(&mut text, &mut parts);
                        parts.push(p);
                    }
                    None => {
                        text.push('$');
                        self.pos += 1;
                    }
                },
                '`' => {
                    flush_quoted(&mut text, &mut parts);
                    parts.push(self.lex_backquote(mode == Mode::Double)?);
                }
                c => {
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
        flush_quoted(&mut text, &mut parts);
        Ok(parts)
    }

    /// Reads an expansion at a `$`; `None` when the `$` is literal (cursor unchanged then).
    fn lex_dollar(&mut self) -> Result<Option<Part>, ParseError> {
        let simple = |name: String| {
            Some(Part::Param(Box::new(Param {
                name,
                op: ParamOp::Plain,
            })))
        };
        match self.at(1) {
            Some('(') if self.at(2) == Some('(') => {
                self.enter()?;
                let r = self.lex_arith();
                self.leave();
                r.map(Some)
            }
            Some('(') => {
                self.pos += 2;
                self.enter()?;
                let saved = self.peeked.take();
                let r = self.parse_subst_body();
                self.peeked = saved;
                self.leave();
                Ok(Some(Part::Command(Box::new(r?))))
            }
            Some('{') => {
                self.pos += 2;
                self.enter()?;
                let r = self.lex_brace_param();
                self.leave();
                r.map(Some)
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                self.pos += 1;
                let mut name = String::new();
                while let Some(c) = self.cur() {
                    if c == '_' || c.is_ascii_alphanumeric() {
                        name.push(c);
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                Ok(simple(name))
            }
            Some(c) if c.is_ascii_digit() || "@*#?-$!".contains(c) => {
                self.pos += 2;
                Ok(simple(c.to_string()))
            }
            _ => Ok(None),
        }
    }

    /// Parses the program of a `$(…)` and its closing parenthesis.
    fn parse_subst_body(&mut self) -> Result<List, ParseError> {
        let list = self.parse_list()?;
        match self.next()? {
            Tok::Op(Op::RParen) => Ok(list),
            Tok::Eof => Err(ParseError::Expecting(")".into())),
            t => Err(ParseError::Unexpected(t.describe())),
        }
    }

    /// Reads `$((…))` (cursor at `$`).
    fn lex_arith(&mut self) -> Result<Part, ParseError> {
        self.pos += 3;
        let start = self.pos;
        let mut depth = 0usize;
        loop {
            match self.cur() {
                None => return Err(ParseError::Expecting("))".into())),
                Some('(') => depth += 1,
                Some(')') if depth == 0 => {
                    if self.at(1) != Some(')') {
                        return Err(ParseError::Unexpected("\")\"".into()));
                    }
                    let text: String = self.src[start..self.pos].iter().collect();
                    self.pos += 2;
                    return Ok(Part::Arith(parse_expanding_text(&text, self.depth)?));
                }
                Some(')') => depth -= 1,
                Some(_) => {}
            }
            self.pos += 1;
        }
    }

    /// Reads `${…}` (cursor after `{`).
    fn lex_brace_param(&mut self) -> Result<Part, ParseError> {
        let mut length = false;
        if self.cur() == Some('#') && !matches!(self.at(1), Some('}') | None) {
            length = true;
            self.pos += 1;
        }
        let mut name = String::new();
        match self.cur() {
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                while let Some(c) = self.cur() {
                    if c == '_' || c.is_ascii_alphanumeric() {
                        name.push(c);
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
            }
            Some(c) if c.is_ascii_digit() => {
                while let Some(c) = self.cur() {
                    if c.is_ascii_digit() {
                        name.push(c);
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
            }
            Some(c) if "@*#?-$!".contains(c) => {
                name.push(c);
                self.pos += 1;
            }
            _ => return Err(ParseError::BadSubstitution),
        }
        if length {
            if self.cur() != Some('}') {
                return Err(ParseError::BadSubstitution);
            }
            self.pos += 1;
            return Ok(Part::Param(Box::new(Param {
                name,
                op: ParamOp::Length,
            })));
        }
        let colon = self.cur() == Some(':');
        if colon {
            self.pos += 1;
        }
        let c = self.cur().ok_or(ParseError::Unterminated)?;
        self.pos += 1;
        let op = match c {
            '}' if !colon => {
                return Ok(Part::Param(Box::new(Param {
                    name,
                    op: ParamOp::Plain,
                })));
            }
            '-' => ParamOp::Default(colon, self.brace_operand()?),
            '=' => ParamOp::Assign(colon, self.brace_operand()?),
            '?' => ParamOp::Error(colon, self.brace_operand()?),
            '+' => ParamOp::Alternative(colon, self.brace_operand()?),
            '%' if !colon => {
                let longest = self.cur() == Some('%');
                if longest {
                    self.pos += 1;
                }
                ParamOp::RemoveSuffix(longest, self.brace_operand()?)
            }
            '#' if !colon => {
                let longest = self.cur() == Some('#');
                if longest {
                    self.pos += 1;
                }
                ParamOp::RemovePrefix(longest, self.brace_operand()?)
            }
            _ => return Err(ParseError::BadSubstitution),
        };
        Ok(Part::Param(Box::new(Param { name, op })))
    }

    /// Reads `` `…` `` (cursor at the opening backquote) and parses its content.
    fn lex_backquote(&mut self, in_double: bool) -> Result<Part, ParseError> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.cur() {
                None => return Err(ParseError::Unterminated),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    match self.at(1) {
                        Some(n @ ('`' | '\\' | '$')) => inner.push(n),
                        Some('"') if in_double => inner.push('"'),
                        Some(n) => {
                            inner.push('\\');
                            inner.push(n);
                        }
                        None => return Err(ParseError::Unterminated),
                    }
                    self.pos += 2;
                }
                Some(c) => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        self.enter()?;
        let list = parse_at_depth(&inner, self.depth);
        self.leave();
        Ok(Part::Command(Box::new(list?)))
    }
}

/// Moves pending unquoted text into the parts.
fn flush(lit: &mut String, parts: &mut Vec<Part>) {
    if !lit.is_empty() {
        parts.push(Part::Lit(std::mem::take(lit)));
    }
}

/// Moves pending quoted text into the parts.
fn flush_quoted(text: &mut String, parts: &mut Vec<Part>) {
    if !text.is_empty() {
        parts.push(Part::Quoted(std::mem::take(text)));
    }
}

/// Splits `NAME=value` into the name and the value word, if the word is an assignment.
fn split_assignment(w: &Word) -> Option<(String, Word)> {
    let Some(Part::Lit(first)) = w.0.first() else {
        return None;
    };
    let (name, value) = first.split_once('=')?;
    if !is_name(name) {
        return None;
    }
    let mut parts = Vec::new();
    if !value.is_empty() {
        parts.push(Part::Lit(value.to_string()));
    }
    parts.extend(w.0.iter().skip(1).cloned());
    Some((name.to_string(), Word(parts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of the only simple command of `src`, as literal text.
    fn words(src: &str) -> Vec<String> {
        let list = parse(src).unwrap_or_default();
        match list.items.first().map(|i| &i.and_or.first.commands[0]) {
            Some(Command::Simple(sc)) => sc.words.iter().map(Word::literal_text).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn quotes_and_escapes_are_lexed_into_one_word() {
        assert_eq!(words(r#"echo 'a b'"c d"\ e"#), vec!["echo", "a bc d e"]);
    }

    #[test]
    fn operators_split_words_without_spaces() {
        let list = parse("a&&b||c;d|e").unwrap_or_default();
        assert_eq!(list.items.len(), 2);
        assert_eq!(list.items[0].and_or.rest.len(), 2);
        assert_eq!(list.items[1].and_or.first.commands.len(), 2);
    }

    #[test]
    fn io_number_and_dup_redirect_are_recognised() {
        let list = parse("cmd 2>&1 >out").unwrap_or_default();
        let Some(Command::Simple(sc)) = list.items.first().map(|i| &i.and_or.first.commands[0])
        else {
            panic!("not a simple command");
        };
        assert_eq!(sc.redirects[0].fd, 2);
        assert_eq!(sc.redirects[0].op, RedirOp::DupOut);
        assert_eq!(sc.redirects[1].fd, 1);
        assert_eq!(sc.words.len(), 1);
    }

    #[test]
    fn compound_commands_parse() {
        for src in [
            "if true; then echo a; elif false; then echo b; else echo c; fi",
            "while true; do sleep 3600; done",
            "until false; do :; done",
            "for x in a b c; do echo $x; done",
            "for x; do echo $x; done",
            "case $x in a|b) echo ab;; (c) echo c;; *) ;; esac",
            "{ echo a; echo b; } > /tmp/f",
            "( cd /tmp && ls )",
            "f() { echo $1; }; f x",
            "trap \"exit 0\" TERM; sleep infinity & wait",
            "! true",
        ] {
            assert!(parse(src).is_ok(), "{src}: {:?}", parse(src));
        }
    }

    #[test]
    fn syntax_errors_are_reported_like_busybox() {
        assert_eq!(
            parse("if true; then echo"),
            Err(ParseError::Expecting("fi".into()))
        );
        assert_eq!(
            parse("echo a; done"),
            Err(ParseError::Unexpected("\"done\"".into()))
        );
        assert_eq!(parse("echo 'x"), Err(ParseError::Unterminated));
        assert_eq!(parse("echo ${"), Err(ParseError::BadSubstitution));
        assert_eq!(parse("&& x"), Err(ParseError::Unexpected("\"&&\"".into())));
    }

    #[test]
    fn assignment_prefix_is_split_from_the_words() {
        let list = parse("A=1 B=\"x y\" env").unwrap_or_default();
        let Some(Command::Simple(sc)) = list.items.first().map(|i| &i.and_or.first.commands[0])
        else {
            panic!("not a simple command");
        };
        assert_eq!(sc.assigns.len(), 2);
        assert_eq!(sc.assigns[1].0, "B");
        assert_eq!(sc.words.len(), 1);
    }

    #[test]
    fn heredoc_body_is_cut_from_the_source() {
        let list = parse("cat <<EOF; echo after\nline $x\nEOF\necho last\n").unwrap_or_default();
        assert_eq!(list.items.len(), 3);
        let Some(Command::Simple(sc)) = list.items.first().map(|i| &i.and_or.first.commands[0])
        else {
            panic!("not a simple command");
        };
        assert_eq!(sc.redirects[0].op, RedirOp::HereDoc { quoted: false });
        assert_eq!(sc.redirects[0].target.literal_text(), "line $x\n");
    }

    #[test]
    fn command_substitution_nests() {
        let list = parse("echo \"$(echo \"$(echo deep)\")\" `echo old`").unwrap_or_default();
        let Some(Command::Simple(sc)) = list.items.first().map(|i| &i.and_or.first.commands[0])
        else {
            panic!("not a simple command");
        };
        assert_eq!(sc.words.len(), 3);
    }

    #[test]
    fn nesting_beyond_the_limit_is_an_error_not_a_crash() {
        let deep = format!("{}true{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(parse(&deep), Err(ParseError::TooDeep));
        let deep = format!("{}x{}", "$(".repeat(5_000), ")".repeat(5_000));
        assert_eq!(parse(&deep), Err(ParseError::TooDeep));
        let ok = format!("{}true{}", "(".repeat(20), ")".repeat(20));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn parse_next_stops_at_the_end_of_the_first_command_line() {
        let src = "echo a; echo b\nread x\nrest of input\n";
        let Ok(Next::Complete(list, used)) = parse_next(src, false) else {
            panic!("a complete first line");
        };
        assert_eq!(
            (list.items.len(), &src[used..]),
            (2, "read x\nrest of input\n")
        );
        assert_eq!(parse_next("if true\n", false), Ok(Next::NeedMore(None)));
        assert_eq!(parse_next("echo a |\n", false), Ok(Next::NeedMore(None)));
        assert_eq!(parse_next("echo 'open\n", false), Ok(Next::NeedMore(None)));
        assert_eq!(
            parse_next("cat <<-END\n\tbody\n", false),
            Ok(Next::NeedMore(Some(HereDocEnd {
                delimiter: "END".into(),
                strip_tabs: true
            })))
        );
        assert_eq!(
            parse_next("if true\n", true),
            Err(ParseError::Expecting("then".into()))
        );
        assert_eq!(
            parse_next("echo a; done\nmore\n", false),
            Err(ParseError::Unexpected("\"done\"".into()))
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_input_never_panics_the_parser(src in ".{0,200}") {
            let _ = parse(&src);
        }

        #[test]
        fn shell_like_input_never_panics_the_parser(src in "[a-z $'\"`\\\\(){}|&;<>#=\n*?-]{0,120}") {
            let _ = parse(&src);
        }
    }

    #[test]
    fn the_same_short_program_is_parsed_once_and_shared() {
        let src = "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done # shared";
        // Other tests' programs may fill the table and start it over between two calls: a
        // few tries.
        let shared = (0..3).any(|_| {
            matches!(
                (parse_shared(src), parse_shared(src)),
                (Ok(a), Ok(b)) if Arc::ptr_eq(&a, &b) && parse(src).as_ref() == Ok(&*a)
            )
        });
        assert!(shared);
        let long = format!("true {}", "x".repeat(SHARED_MAX_SOURCE));
        let (Ok(c), Ok(d)) = (parse_shared(&long), parse_shared(&long)) else {
            panic!("the long program parses");
        };
        assert!(!Arc::ptr_eq(&c, &d));
        assert_eq!(
            parse_shared("if true"),
            Err(ParseError::Expecting("then".into()))
        );
    }
}
