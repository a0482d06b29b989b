//! The syntax tree of a shell program.

/// A sequence of and-or lists, each run in the foreground or in the background (`&`).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct List {
    /// The items, in order.
    pub(crate) items: Vec<Item>,
}

/// One and-or list and how it is run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    /// The commands.
    pub(crate) and_or: AndOr,
    /// Run in the background (`&`).
    pub(crate) background: bool,
}

/// Pipelines joined by `&&` and `||`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AndOr {
    /// The first pipeline.
    pub(crate) first: Pipeline,
    /// The following pipelines, each with the operator before it.
    pub(crate) rest: Vec<(Connector, Pipeline)>,
}

/// `&&` or `||`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Connector {
    /// `&&`: run when the previous status is 0.
    And,
    /// `||`: run when the previous status is not 0.
    Or,
}

/// Programs joined by `|`, optionally negated with `!`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pipeline {
    /// `!` in front: the status is inverted.
    pub(crate) negated: bool,
    /// The commands (at least one).
    pub(crate) commands: Vec<Command>,
}

/// One command of a pipeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// A simple command.
    Simple(SimpleCommand),
    /// A compound command with its redirections.
    Compound(Box<Compound>, Vec<Redirect>),
    /// `name() body`: defines a function.
    FunctionDef(String, Box<Command>),
}

/// Assignments, words and redirections.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct SimpleCommand {
    /// `NAME=value` prefixes.
    pub(crate) assigns: Vec<(String, Word)>,
    /// The command name and arguments, before expansion.
    pub(crate) words: Vec<Word>,
    /// Redirections, in order.
    pub(crate) redirects: Vec<Redirect>,
}

/// A compound command.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Compound {
    /// `{ list; }`.
    Brace(List),
    /// `( list )`, run in a subshell.
    Subshell(List),
    /// `if`/`elif` branches (condition, body) and an optional `else`.
    If(Vec<(List, List)>, Option<List>),
    /// `while cond; do body; done` (`until` when `until` is set).
    Loop {
        /// Condition list.
        cond: List,
        /// Body list.
        body: List,
        /// `until`: loop while the condition fails.
        until: bool,
    },
    /// `for var in words; do body; done` (no `in`: the positional parameters).
    For {
        /// Loop variable.
        var: String,
        /// The words after `in`, if given.
        words: Option<Vec<Word>>,
        /// Body list.
        body: List,
    },
    /// `case word in pattern|pattern) list;; esac`.
    Case(Word, Vec<(Vec<Word>, List)>),
}

/// A redirection.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Redirect {
    /// The file descriptor (defaults: 0 for input operators, 1 for output ones).
    pub(crate) fd: u32,
    /// The operator.
    pub(crate) op: RedirOp,
    /// The target word (a file, a descriptor number or `-`), or a here-document body.
    pub(crate) target: Word,
}

/// Redirection operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirOp {
    /// `<`.
    Read,
    /// `>` and `>|`.
    Write,
    /// `>>`.
    Append,
    /// `<>`.
    ReadWrite,
    /// `<&`.
    DupIn,
    /// `>&`.
    DupOut,
    /// `<<` or `<<-`; the target is the body, expanded unless `quoted`.
    HereDoc {
        /// The delimiter was quoted: the body is literal.
        quoted: bool,
    },
}

/// A word before expansion: a sequence of parts.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Word(pub(crate) Vec<Part>);

/// A piece of a word.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// Unquoted text: subject to tilde expansion and pattern matching.
    Lit(String),
    /// Quoted text (`'…'`, `\c`, or literal text inside `"…"`).
    Quoted(String),
    /// `"…"`.
    Double(Vec<Part>),
    /// `$name`, `${…}`.
    Param(Box<Param>),
    /// `$(…)` or `` `…` ``.
    Command(Box<List>),
    /// `$((…))`: the expression is expanded, then evaluated.
    Arith(Word),
}

/// A parameter expansion.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Param {
    /// The name: a variable, a digit string, or one of `@ * # ? - $ ! 0`.
    pub(crate) name: String,
    /// What to do with it.
    pub(crate) op: ParamOp,
}

/// The operator of a `${…}` expansion.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ParamOp {
    /// Plain value.
    Plain,
    /// `${#name}`.
    Length,
    /// `${name-w}` / `${name:-w}` (`colon`: also when empty).
    Default(bool, Word),
    /// `${name=w}` / `${name:=w}`.
    Assign(bool, Word),
    /// `${name?w}` / `${name:?w}`.
    Error(bool, Word),
    /// `${name+w}` / `${name:+w}`.
    Alternative(bool, Word),
    /// `${name%w}` (`true`: `%%`, longest).
    RemoveSuffix(bool, Word),
    /// `${name#w}` (`true`: `##`, longest).
    RemovePrefix(bool, Word),
}
