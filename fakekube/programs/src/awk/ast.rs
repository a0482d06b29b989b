//! The parsed program: rules, functions, statements and expressions.

use std::collections::HashMap;

/// A variable: a global by name, or a function's parameter (or extra local) by position.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Var {
    /// A global.
    Global(String),
    /// The n-th parameter of the running function.
    Local(usize),
}

/// A binary arithmetic or comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// Where `getline` reads from.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum GetlineSource {
    /// The main input (`getline`).
    Main,
    /// A file (`getline < FILE`).
    File(Box<Expr>),
    /// A command's output (`CMD | getline`).
    Command(Box<Expr>),
}

/// An expression.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expr {
    /// A numeric literal.
    Num(f64),
    /// A string literal.
    Str(String),
    /// A regex literal: `$0 ~ /re/` where a value is wanted.
    Regex(String),
    /// `$EXPR`.
    Field(Box<Expr>),
    /// A variable.
    Var(Var),
    /// `NAME[SUBSCRIPT, …]`.
    Index(Var, Vec<Expr>),
    /// `LVALUE = EXPR` (and `+=` …: the operator).
    Assign(Option<BinOp>, Box<Expr>, Box<Expr>),
    /// `C ? A : B`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `A && B`.
    And(Box<Expr>, Box<Expr>),
    /// `A || B`.
    Or(Box<Expr>, Box<Expr>),
    /// `!A`.
    Not(Box<Expr>),
    /// `-A`.
    Neg(Box<Expr>),
    /// `+A`.
    Plus(Box<Expr>),
    /// An arithmetic or comparison operation.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `A ~ B` (`true`: `!~`).
    Match(bool, Box<Expr>, Box<Expr>),
    /// `(K, …) in ARRAY`.
    In(Vec<Expr>, Var),
    /// `A B`.
    Concat(Box<Expr>, Box<Expr>),
    /// `++X`/`--X` (`true`: increment) and `X++`/`X--` (the `post` flag).
    IncDec {
        /// Increment rather than decrement.
        inc: bool,
        /// The value before the change is the result.
        post: bool,
        /// The lvalue.
        target: Box<Expr>,
    },
    /// A call of a user function.
    Call(String, Vec<Expr>),
    /// A call of a built-in function (`length` without parentheses has no arguments).
    Builtin(String, Vec<Expr>),
    /// `getline [LVALUE]` from a source.
    Getline(GetlineSource, Option<Box<Expr>>),
    /// `(A, B)`: a parenthesised list, only valid before `in` or as `print`'s arguments.
    Group(Vec<Expr>),
}

impl Expr {
    /// Whether the expression can be assigned to.
    pub(super) fn is_lvalue(&self) -> bool {
        matches!(self, Expr::Var(_) | Expr::Index(..) | Expr::Field(_))
    }
}

/// Where `print` and `printf` send their output.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Redirect {
    /// `> FILE`.
    Write(Expr),
    /// `>> FILE`.
    Append(Expr),
    /// `| COMMAND`.
    Pipe(Expr),
}

/// A statement.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Stmt {
    /// An expression for its effect.
    Expr(Expr),
    /// `print [ARGS] [REDIRECT]`.
    Print(Vec<Expr>, Option<Redirect>),
    /// `printf FORMAT[, ARGS] [REDIRECT]`.
    Printf(Vec<Expr>, Option<Redirect>),
    /// `if (C) A [else B]`.
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    /// `while (C) BODY`.
    While(Expr, Box<Stmt>),
    /// `do BODY while (C)`.
    Do(Box<Stmt>, Expr),
    /// `for (INIT; COND; STEP) BODY`.
    For(
        Option<Box<Stmt>>,
        Option<Expr>,
        Option<Box<Stmt>>,
        Box<Stmt>,
    ),
    /// `for (VAR in ARRAY) BODY`.
    ForIn(Var, Var, Box<Stmt>),
    /// `{ … }`.
    Block(Vec<Stmt>),
    /// `next`.
    Next,
    /// `nextfile`.
    NextFile,
    /// `exit [CODE]`.
    Exit(Option<Expr>),
    /// `return [VALUE]`.
    Return(Option<Expr>),
    /// `break`.
    Break,
    /// `continue`.
    Continue,
    /// `delete ARRAY[SUBSCRIPT]` or `delete ARRAY`.
    Delete(Var, Option<Vec<Expr>>),
}

/// A rule's pattern.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Pattern {
    /// Every record.
    All,
    /// Records for which the expression is true.
    Expr(Expr),
    /// From a record matching the first to one matching the second (the index of its state).
    Range(Expr, Expr, usize),
}

/// A user function.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Func {
    /// Parameter names, in order.
    pub(super) params: Vec<String>,
    /// Which parameters the body uses as arrays (passed by reference).
    pub(super) array_params: Vec<bool>,
    /// The body.
    pub(super) body: Vec<Stmt>,
}

/// A whole program.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Program {
    /// `BEGIN` actions, in order.
    pub(super) begin: Vec<Stmt>,
    /// `END` actions, in order.
    pub(super) end: Vec<Stmt>,
    /// Pattern-action rules, in order (`None`: print the record).
    pub(super) rules: Vec<(Pattern, Option<Vec<Stmt>>)>,
    /// Functions by name.
    pub(super) funcs: HashMap<String, Func>,
    /// How many range patterns there are.
    pub(super) ranges: usize,
}
