//! awk's grammar, by recursive descent over the tokens, with POSIX's precedences (lowest
//! first): assignment, `?:`, `||`, `&&`, `in`, `~ !~`, comparisons, concatenation, `+ -`,
//! `* / %`, unary `! - +`, `^` (right-associative), `++ --`, `$`, grouping. Inside `print`'s
//! arguments an unparenthesised `>` is a redirection. Errors are BusyBox's
//! (`Unexpected token`, `Unexpected end of string`, …) with the line they are on.

use super::Error;
use super::ast::{BinOp, Expr, Func, GetlineSource, Pattern, Program, Redirect, Stmt, Var};
use super::lexer::{Tok, lex};

/// Deepest nesting of expressions and statements accepted (keeps the stack bounded).
const MAX_NESTING: usize = 200;

/// Parses a whole program.
pub(super) fn parse(src: &str) -> Result<Program, Error> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
        prog: Program::default(),
        params: None,
        array_params: Vec::new(),
        loops: 0,
        calls: Vec::new(),
    };
    p.program()?;
    for (name, line) in &p.calls {
        if !p.prog.funcs.contains_key(name) {
            return Err(Error::syntax(*line, "Call to undefined function"));
        }
    }
    Ok(p.prog)
}

/// The parser's state.
struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    depth: usize,
    prog: Program,
    /// The parameters of the function being parsed.
    params: Option<Vec<String>>,
    /// Which of them are used as arrays.
    array_params: Vec<bool>,
    /// Loops open around the statement being parsed.
    loops: usize,
    /// Every user function called, with the line, checked once all are defined.
    calls: Vec<(String, usize)>,
}

impl Parser {
    /// The current token.
    fn peek(&self) -> &Tok {
        self.peek_at(0)
    }

    /// The token `k` ahead.
    fn peek_at(&self, k: usize) -> &Tok {
        self.toks
            .get(self.pos + k)
            .or(self.toks.last())
            .map_or(&Tok::Eof, |(t, _)| t)
    }

    /// The line of the current token.
    fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map_or(1, |(_, l)| *l)
    }

    /// Takes the current token.
    fn next(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    /// The error for the current token: at a newline or the end, the string ended early.
    fn unexpected(&self) -> Error {
        let msg = match self.peek() {
            Tok::Newline | Tok::Eof => "Unexpected end of string",
            _ => "Unexpected token",
        };
        Error::syntax(self.line(), msg)
    }

    /// Whether the current token is the punctuation `p`.
    fn at(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    /// Whether the current token is the keyword `k`.
    fn at_keyword(&self, k: &str) -> bool {
        matches!(self.peek(), Tok::Keyword(q) if *q == k)
    }

    /// Takes `p` if it is next.
    fn eat(&mut self, p: &str) -> bool {
        if self.at(p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Takes `p` or fails.
    fn expect(&mut self, p: &str) -> Result<(), Error> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    /// Skips newlines.
    fn newlines(&mut self) {
        while matches!(self.peek(), Tok::Newline) {
            self.pos += 1;
        }
    }

    /// Skips newlines and semicolons.
    fn terminators(&mut self) {
        while matches!(self.peek(), Tok::Newline | Tok::Punct(";")) {
            self.pos += 1;
        }
    }

    /// One level deeper; fails past [`MAX_NESTING`].
    fn enter(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Error::syntax(self.line(), "Nesting too deep"));
        }
        Ok(())
    }

    /// A variable by name: a parameter of the function being parsed, or a global.
    fn var(&self, name: &str) -> Var {
        match self
            .params
            .as_ref()
            .and_then(|ps| ps.iter().position(|p| p == name))
        {
            Some(k) => Var::Local(k),
            None => Var::Global(name.to_string()),
        }
    }

    /// Notes that a variable is used as an array (a parameter then passes by reference).
    fn used_as_array(&mut self, v: &Var) {
        if let Var::Local(k) = v
            && let Some(flag) = self.array_params.get_mut(*k)
        {
            *flag = true;
        }
    }

    /// The whole program: items separated by newlines or semicolons.
    fn program(&mut self) -> Result<(), Error> {
        loop {
            self.terminators();
            match self.peek().clone() {
                Tok::Eof => return Ok(()),
                Tok::Keyword("BEGIN") => {
                    self.next();
                    self.newlines();
                    let body = self.block()?;
                    self.prog.begin.extend(body);
                }
                Tok::Keyword("END") => {
                    self.next();
                    self.newlines();
                    let body = self.block()?;
                    self.prog.end.extend(body);
                }
                Tok::Keyword("function") => self.function()?,
                Tok::Punct("{") => {
                    let body = self.block()?;
                    self.prog.rules.push((Pattern::All, Some(body)));
                }
                _ => {
                    let first = self.expr(false)?;
                    let pattern = if self.eat(",") {
                        self.newlines();
                        let second = self.expr(false)?;
                        let k = self.prog.ranges;
                        self.prog.ranges += 1;
                        Pattern::Range(first, second, k)
                    } else {
                        Pattern::Expr(first)
                    };
                    let action = if self.at("{") {
                        Some(self.block()?)
                    } else {
                        match self.peek() {
                            Tok::Newline | Tok::Punct(";") | Tok::Eof => None,
                            _ => return Err(self.unexpected()),
                        }
                    };
                    self.prog.rules.push((pattern, action));
                }
            }
        }
    }

    /// `function NAME(PARAMS) { … }`.
    fn function(&mut self) -> Result<(), Error> {
        self.next();
        let line = self.line();
        let name = match self.next() {
            Tok::Name(n) | Tok::FuncName(n) => n,
            _ => return Err(Error::syntax(line, "Unexpected token")),
        };
        if self.prog.funcs.contains_key(&name) {
            return Err(Error::syntax(line, "Duplicate function"));
        }
        self.expect("(")?;
        let mut params = Vec::new();
        self.newlines();
        if !self.at(")") {
            loop {
                self.newlines();
                match self.next() {
                    Tok::Name(p) => params.push(p),
                    _ => return Err(Error::syntax(self.line(), "Unexpected token")),
                }
                self.newlines();
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect(")")?;
        self.newlines();
        self.array_params = vec![false; params.len()];
        self.params = Some(params.clone());
        // Defined before the body, so that it may call itself.
        self.prog.funcs.insert(
            name.clone(),
            Func {
                params: params.clone(),
                array_params: Vec::new(),
                body: Vec::new(),
            },
        );
        let body = self.block();
        self.params = None;
        let body = body?;
        let array_params = std::mem::take(&mut self.array_params);
        self.prog.funcs.insert(
            name,
            Func {
                params,
                array_params,
                body,
            },
        );
        Ok(())
    }

    /// `{ STATEMENTS }`.
    fn block(&mut self) -> Result<Vec<Stmt>, Error> {
        self.expect("{")?;
        let mut body = Vec::new();
        loop {
            self.terminators();
            if self.eat("}") {
                return Ok(body);
            }
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.unexpected());
            }
            body.push(self.stmt()?);
        }
    }

    /// Ends a simple statement: `;` or a newline (taken), `}` or the end (left).
    fn end_simple(&mut self) -> Result<(), Error> {
        match self.peek() {
            Tok::Punct(";") | Tok::Newline => {
                self.next();
                Ok(())
            }
            Tok::Punct("}") | Tok::Eof => Ok(()),
            _ => Err(self.unexpected()),
        }
    }

    /// Whether a simple statement ends here (no expression follows `exit`, `return`, …).
    fn at_end_of_simple(&self) -> bool {
        matches!(
            self.peek(),
            Tok::Punct(";") | Tok::Punct("}") | Tok::Newline | Tok::Eof
        )
    }

    /// A loop body (`;` alone is an empty one).
    fn body(&mut self) -> Result<Stmt, Error> {
        if self.eat(";") {
            return Ok(Stmt::Block(Vec::new()));
        }
        self.newlines();
        self.loops += 1;
        let s = self.stmt();
        self.loops -= 1;
        s
    }

    /// One statement.
    fn stmt(&mut self) -> Result<Stmt, Error> {
        self.enter()?;
        let s = self.stmt_inner();
        self.depth -= 1;
        s
    }

    /// [`Parser::stmt`] without the nesting count.
    fn stmt_inner(&mut self) -> Result<Stmt, Error> {
        let line = self.line();
        match self.peek().clone() {
            Tok::Punct("{") => Ok(Stmt::Block(self.block()?)),
            Tok::Punct(";") => {
                self.next();
                Ok(Stmt::Block(Vec::new()))
            }
            Tok::Keyword("if") => {
                self.next();
                self.expect("(")?;
                self.newlines();
                let cond = self.expr(false)?;
                self.newlines();
                self.expect(")")?;
                self.newlines();
                let then = if self.eat(";") {
                    Stmt::Block(Vec::new())
                } else {
                    self.stmt()?
                };
                let save = self.pos;
                self.terminators();
                if self.at_keyword("else") {
                    self.next();
                    self.newlines();
                    let other = if self.eat(";") {
                        Stmt::Block(Vec::new())
                    } else {
                        self.stmt()?
                    };
                    return Ok(Stmt::If(cond, Box::new(then), Some(Box::new(other))));
                }
                self.pos = save;
                Ok(Stmt::If(cond, Box::new(then), None))
            }
            Tok::Keyword("while") => {
                self.next();
                self.expect("(")?;
                self.newlines();
                let cond = self.expr(false)?;
                self.newlines();
                self.expect(")")?;
                let body = self.body()?;
                Ok(Stmt::While(cond, Box::new(body)))
            }
            Tok::Keyword("do") => {
                self.next();
                self.newlines();
                self.loops += 1;
                let body = self.stmt();
                self.loops -= 1;
                let body = body?;
                self.terminators();
                if !self.at_keyword("while") {
                    return Err(self.unexpected());
                }
                self.next();
                self.expect("(")?;
                let cond = self.expr(false)?;
                self.expect(")")?;
                self.end_simple()?;
                Ok(Stmt::Do(Box::new(body), cond))
            }
            Tok::Keyword("for") => self.for_stmt(),
            _ => {
                let s = self.simple(line)?;
                self.end_simple()?;
                Ok(s)
            }
        }
    }

    /// `for (INIT; COND; STEP) BODY` or `for (VAR in ARRAY) BODY`.
    fn for_stmt(&mut self) -> Result<Stmt, Error> {
        self.next();
        self.expect("(")?;
        // `for (k in a)` and `for ((k) in a)`.
        let plain = matches!(
            (
                self.peek(),
                self.peek_at(1),
                self.peek_at(2),
                self.peek_at(3)
            ),
            (
                Tok::Name(_),
                Tok::Keyword("in"),
                Tok::Name(_),
                Tok::Punct(")")
            )
        );
        let wrapped = matches!(
            (
                self.peek(),
                self.peek_at(1),
                self.peek_at(2),
                self.peek_at(3),
                self.peek_at(4),
                self.peek_at(5)
            ),
            (
                Tok::Punct("("),
                Tok::Name(_),
                Tok::Punct(")"),
                Tok::Keyword("in"),
                Tok::Name(_),
                Tok::Punct(")")
            )
        );
        if plain || wrapped {
            if wrapped {
                self.next();
            }
            let Tok::Name(k) = self.next() else {
                return Err(self.unexpected());
            };
            if wrapped {
                self.next();
            }
            self.next();
            let Tok::Name(a) = self.next() else {
                return Err(self.unexpected());
            };
            self.expect(")")?;
            let (key, array) = (self.var(&k), self.var(&a));
            self.used_as_array(&array);
            let body = self.body()?;
            return Ok(Stmt::ForIn(key, array, Box::new(body)));
        }
        let line = self.line();
        let init = if self.at(";") {
            None
        } else {
            Some(Box::new(self.simple(line)?))
        };
        self.expect(";")?;
        self.newlines();
        let cond = if self.at(";") {
            None
        } else {
            Some(self.expr(false)?)
        };
        self.expect(";")?;
        self.newlines();
        let line = self.line();
        let step = if self.at(")") {
            None
        } else {
            Some(Box::new(self.simple(line)?))
        };
        self.expect(")")?;
        let body = self.body()?;
        Ok(Stmt::For(init, cond, step, Box::new(body)))
    }

    /// A simple statement (without its terminator).
    fn simple(&mut self, line: usize) -> Result<Stmt, Error> {
        match self.peek().clone() {
            Tok::Keyword(k @ ("print" | "printf")) => {
                self.next();
                let mut args =
                    if self.at_end_of_simple() || self.at(">") || self.at(">>") || self.at("|") {
                        Vec::new()
                    } else {
                        self.expr_list(true)?
                    };
                if let [Expr::Group(items)] = args.as_slice() {
                    args = items.clone();
                }
                if k == "printf" && args.is_empty() {
                    return Err(Error::syntax(line, "Too few arguments"));
                }
                let redirect = if self.eat(">") {
                    Some(Redirect::Write(self.concat(true)?))
                } else if self.eat(">>") {
                    Some(Redirect::Append(self.concat(true)?))
                } else if self.eat("|") {
                    Some(Redirect::Pipe(self.concat(true)?))
                } else {
                    None
                };
                Ok(if k == "print" {
                    Stmt::Print(args, redirect)
                } else {
                    Stmt::Printf(args, redirect)
                })
            }
            Tok::Keyword("next") => {
                self.next();
                Ok(Stmt::Next)
            }
            Tok::Keyword("nextfile") => {
                self.next();
                Ok(Stmt::NextFile)
            }
            Tok::Keyword("exit") => {
                self.next();
                let code = if self.at_end_of_simple() {
                    None
                } else {
                    Some(self.expr(false)?)
                };
                Ok(Stmt::Exit(code))
            }
            Tok::Keyword("return") => {
                self.next();
                if self.params.is_none() {
                    return Err(Error::syntax(line, "Unexpected token"));
                }
                let value = if self.at_end_of_simple() {
                    None
                } else {
                    Some(self.expr(false)?)
                };
                Ok(Stmt::Return(value))
            }
            Tok::Keyword("break") => {
                self.next();
                if self.loops == 0 {
                    return Err(Error::syntax(line, "'break' not in a loop"));
                }
                Ok(Stmt::Break)
            }
            Tok::Keyword("continue") => {
                self.next();
                if self.loops == 0 {
                    return Err(Error::syntax(line, "'continue' not in a loop"));
                }
                Ok(Stmt::Continue)
            }
            Tok::Keyword("delete") => {
                self.next();
                let Tok::Name(name) = self.next() else {
                    return Err(Error::syntax(line, "Unexpected token"));
                };
                let v = self.var(&name);
                self.used_as_array(&v);
                if self.eat("[") {
                    let subs = self.expr_list(false)?;
                    self.expect("]")?;
                    Ok(Stmt::Delete(v, Some(subs)))
                } else {
                    Ok(Stmt::Delete(v, None))
                }
            }
            _ => Ok(Stmt::Expr(self.expr(false)?)),
        }
    }

    /// Expressions separated by commas (newlines allowed after each comma).
    fn expr_list(&mut self, no_gt: bool) -> Result<Vec<Expr>, Error> {
        let mut list = vec![self.expr(no_gt)?];
        while self.eat(",") {
            self.newlines();
            list.push(self.expr(no_gt)?);
        }
        Ok(list)
    }

    /// An expression (assignment is the lowest level). `no_gt`: `>` is not a comparison
    /// (it redirects `print`).
    fn expr(&mut self, no_gt: bool) -> Result<Expr, Error> {
        self.enter()?;
        let e = self.assignment(no_gt);
        self.depth -= 1;
        e
    }

    /// `LVALUE OP= EXPR` (right-associative), else a conditional.
    fn assignment(&mut self, no_gt: bool) -> Result<Expr, Error> {
        let lhs = self.ternary(no_gt)?;
        let op = match self.peek() {
            Tok::Punct("=") => Some(None),
            Tok::Punct("+=") => Some(Some(BinOp::Add)),
            Tok::Punct("-=") => Some(Some(BinOp::Sub)),
            Tok::Punct("*=") => Some(Some(BinOp::Mul)),
            Tok::Punct("/=") => Some(Some(BinOp::Div)),
            Tok::Punct("%=") => Some(Some(BinOp::Mod)),
            Tok::Punct("^=" | "**=") => Some(Some(BinOp::Pow)),
            _ => None,
        };
        match op {
            Some(op) if lhs.is_lvalue() => {
                self.next();
                self.newlines();
                let rhs = self.expr(no_gt)?;
                Ok(Expr::Assign(op, Box::new(lhs), Box::new(rhs)))
            }
            _ => Ok(lhs),
        }
    }

    /// `C ? A : B`.
    fn ternary(&mut self, no_gt: bool) -> Result<Expr, Error> {
        let cond = self.or(no_gt)?;
        if !self.eat("?") {
            return Ok(cond);
        }
        self.newlines();
        let a = self.expr(no_gt)?;
        self.newlines();
        self.expect(":")?;
        self.newlines();
        let b = self.expr(no_gt)?;
        Ok(Expr::Cond(Box::new(cond), Box::new(a), Box::new(b)))
    }

    /// `A || B`.
    fn or(&mut self, no_gt: bool) -> Result<Expr, Error> {
        let mut lhs = self.and(no_gt)?;
        while self.eat("||") {
            self.newlines();
            let rhs = self.and(no_gt)?;
            lhs = Expr::Or(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    /// `A && B`.
    fn and(&mut self, no_gt: bool) -> Result<Expr, Error> {
        let mut lhs = self.in_expr(no_gt)?;
        while self.eat("&&") {
            self.newlines();
            let rhs = self.in_expr(no_gt)?;
            lhs = Expr::And(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    /// `K in ARRAY`.
    fn in_expr(&mut self, no_gt: bool) -> Result<Expr, Error> {
        let mut lhs = self.matching(no_gt)?;
        while self.at_keyword("in") {
            self.next();
            let Tok::Name(a) = self.next() else {
                return Err(Error::syntax(self.line(), "Unexpected token"));
            };
            let v = self.var(&a);
            self.used_as_array(&v);
            let keys = match lhs {
                Expr::Group(list) => list,
                other => vec![other],
            };
            lhs = Expr::In(keys, v);
        }
        Ok(lhs)
    }

    /// `A ~ B`, `A !~ B`.
    fn matching(&mut self, no_gt: bool) -> Result<Expr, Error> {
        let mut lhs = self.comparison(no_gt)?;
        loop {
            let negate = if self.eat("~") {
                false
            } else if self.eat("!~") {
                true
            } else {
                return Ok(lhs);
            };
            let rhs = self.comparison(no_gt)?;
            lhs = Expr::Match(negate, Box::new(lhs), Box::new(rhs));
        }
    }

    /// A comparison (not associative), and `CMD | getline` before it.
    fn comparison(&mut self, no_gt: bool) -> Result<Expr, Error> {
        let mut lhs = self.concat(no_gt)?;
        while self.at("|") && matches!(self.peek_at(1), Tok::Keyword("getline")) {
            self.next();
            self.next();
            let target = self.getline_target()?;
            lhs = Expr::Getline(GetlineSource::Command(Box::new(lhs)), target);
        }
        let op = match self.peek() {
            Tok::Punct("<") => BinOp::Lt,
            Tok::Punct("<=") => BinOp::Le,
            Tok::Punct("==") => BinOp::Eq,
            Tok::Punct("!=") => BinOp::Ne,
            Tok::Punct(">=") => BinOp::Ge,
            Tok::Punct(">") if !no_gt => BinOp::Gt,
            _ => return Ok(lhs),
        };
        self.next();
        let rhs = self.concat(no_gt)?;
        Ok(Expr::Binary(op, Box::new(lhs), Box::new(rhs)))
    }

    /// Whether the current token can start an operand of a concatenation.
    fn starts_operand(&self) -> bool {
        match self.peek() {
            Tok::Num(_)
            | Tok::Str(_)
            | Tok::Regex(_)
            | Tok::Name(_)
            | Tok::FuncName(_)
            | Tok::Builtin(_) => true,
            Tok::Punct(p) => matches!(*p, "$" | "(" | "!" | "++" | "--" | "-" | "+"),
            _ => false,
        }
    }

    /// `A B`: operands side by side. A `-` or `+` after an operand is arithmetic, so only
    /// the other starts of an operand begin a concatenation.
    fn concat(&mut self, no_gt: bool) -> Result<Expr, Error> {
        let mut lhs = self.additive()?;
        while self.starts_operand() && !self.at("-") && !self.at("+") && !self.at("!") {
            if matches!(self.peek(), Tok::Keyword("in")) {
                break;
            }
            let rhs = self.additive()?;
            lhs = Expr::Concat(Box::new(lhs), Box::new(rhs));
        }
        let _ = no_gt;
        Ok(lhs)
    }

    /// `A + B`, `A - B`.
    fn additive(&mut self) -> Result<Expr, Error> {
        let mut lhs = self.multiplicative()?;
        loop {
            let op = if self.at("+") {
                BinOp::Add
            } else if self.at("-") {
                BinOp::Sub
            } else {
                return Ok(lhs);
            };
            self.next();
            let rhs = self.multiplicative()?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
    }

    /// `A * B`, `A / B`, `A % B`.
    fn multiplicative(&mut self) -> Result<Expr, Error> {
        let mut lhs = self.unary()?;
        loop {
            let op = if self.at("*") {
                BinOp::Mul
            } else if self.at("/") {
                BinOp::Div
            } else if self.at("%") {
                BinOp::Mod
            } else {
                return Ok(lhs);
            };
            self.next();
            let rhs = self.unary()?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
    }

    /// `!A`, `-A`, `+A`, else a power.
    fn unary(&mut self) -> Result<Expr, Error> {
        self.enter()?;
        let e = if self.eat("!") {
            self.unary().map(|e| Expr::Not(Box::new(e)))
        } else if self.eat("-") {
            self.unary().map(|e| Expr::Neg(Box::new(e)))
        } else if self.eat("+") {
            self.unary().map(|e| Expr::Plus(Box::new(e)))
        } else {
            self.power()
        };
        self.depth -= 1;
        e
    }

    /// `A ^ B` (right-associative; the exponent may carry a sign).
    fn power(&mut self) -> Result<Expr, Error> {
        let base = self.postfix()?;
        if self.eat("^") || self.eat("**") {
            let exp = self.unary()?;
            return Ok(Expr::Binary(BinOp::Pow, Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }

    /// `X++`, `X--` after an lvalue.
    fn postfix(&mut self) -> Result<Expr, Error> {
        let e = self.primary()?;
        if e.is_lvalue() {
            for (p, inc) in [("++", true), ("--", false)] {
                if self.eat(p) {
                    return Ok(Expr::IncDec {
                        inc,
                        post: true,
                        target: Box::new(e),
                    });
                }
            }
        }
        Ok(e)
    }

    /// The target of `getline`: an lvalue, if one follows.
    fn getline_target(&mut self) -> Result<Option<Box<Expr>>, Error> {
        if matches!(self.peek(), Tok::Name(_) | Tok::Punct("$")) {
            let e = self.primary()?;
            if !e.is_lvalue() {
                return Err(Error::syntax(self.line(), "Unexpected token"));
            }
            return Ok(Some(Box::new(e)));
        }
        Ok(None)
    }

    /// A primary: a literal, a variable or element, `$X`, a call, a group, `++X`,
    /// `getline`.
    fn primary(&mut self) -> Result<Expr, Error> {
        self.enter()?;
        let e = self.primary_inner();
        self.depth -= 1;
        e
    }

    /// [`Parser::primary`] without the nesting count.
    fn primary_inner(&mut self) -> Result<Expr, Error> {
        let line = self.line();
        match self.peek().clone() {
            Tok::Num(n) => {
                self.next();
                Ok(Expr::Num(n))
            }
            Tok::Str(s) => {
                self.next();
                Ok(Expr::Str(s))
            }
            Tok::Regex(r) => {
                self.next();
                Ok(Expr::Regex(r))
            }
            Tok::Punct("$") => {
                self.next();
                let operand = if self.at("++") || self.at("--") || self.at("-") {
                    self.unary()?
                } else {
                    self.primary()?
                };
                Ok(Expr::Field(Box::new(operand)))
            }
            Tok::Punct("(") => {
                self.next();
                self.newlines();
                let mut list = vec![self.expr(false)?];
                self.newlines();
                while self.eat(",") {
                    self.newlines();
                    list.push(self.expr(false)?);
                    self.newlines();
                }
                self.expect(")")?;
                if list.len() == 1 {
                    Ok(list.remove(0))
                } else {
                    Ok(Expr::Group(list))
                }
            }
            Tok::Punct(p @ ("++" | "--")) => {
                self.next();
                let target = self.primary()?;
                if !target.is_lvalue() {
                    return Err(Error::syntax(line, "Unexpected token"));
                }
                Ok(Expr::IncDec {
                    inc: p == "++",
                    post: false,
                    target: Box::new(target),
                })
            }
            Tok::Punct("-" | "+" | "!") => self.unary(),
            Tok::Name(name) => {
                self.next();
                let v = self.var(&name);
                if self.eat("[") {
                    self.used_as_array(&v);
                    let subs = self.expr_list(false)?;
                    self.expect("]")?;
                    return Ok(Expr::Index(v, subs));
                }
                Ok(Expr::Var(v))
            }
            Tok::FuncName(name) => {
                self.next();
                self.expect("(")?;
                let args = self.call_args()?;
                self.calls.push((name.clone(), line));
                Ok(Expr::Call(name, args))
            }
            Tok::Builtin(name) => {
                self.next();
                if self.eat("(") {
                    let args = self.call_args()?;
                    if name == "split"
                        && let Some(Expr::Var(v)) = args.get(1)
                    {
                        let v = v.clone();
                        self.used_as_array(&v);
                    }
                    return Ok(Expr::Builtin(name, args));
                }
                if name == "length" {
                    return Ok(Expr::Builtin(name, Vec::new()));
                }
                Err(self.unexpected())
            }
            Tok::Keyword("getline") => {
                self.next();
                let target = self.getline_target()?;
                if self.eat("<") {
                    let file = self.primary()?;
                    return Ok(Expr::Getline(GetlineSource::File(Box::new(file)), target));
                }
                Ok(Expr::Getline(GetlineSource::Main, target))
            }
            _ => Err(self.unexpected()),
        }
    }

    /// A call's arguments after its `(`, through the `)`.
    fn call_args(&mut self) -> Result<Vec<Expr>, Error> {
        self.newlines();
        if self.eat(")") {
            return Ok(Vec::new());
        }
        let mut args = vec![self.expr(false)?];
        self.newlines();
        while self.eat(",") {
            self.newlines();
            args.push(self.expr(false)?);
            self.newlines();
        }
        self.expect(")")?;
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_follows_posix() {
        let p = parse("BEGIN { x = -2 ^ 2; y = 1 + 2 * 3; z = a b > c }").expect("parses");
        let Stmt::Expr(Expr::Assign(_, _, rhs)) = &p.begin[0] else {
            panic!("{p:?}");
        };
        assert!(matches!(**rhs, Expr::Neg(_)), "{rhs:?}");
        let Stmt::Expr(Expr::Assign(_, _, rhs)) = &p.begin[2] else {
            panic!("{p:?}");
        };
        assert!(matches!(**rhs, Expr::Binary(BinOp::Gt, ..)), "{rhs:?}");
    }

    #[test]
    fn print_redirects_and_ranges_and_functions_parse() {
        let p = parse(
            "function f(a, b) { a[1] = b; return b }\n/x/,/y/ { print $1, $2 > \"out\" }\nEND { print f(arr, 2) | \"sort\" }",
        )
        .expect("parses");
        assert_eq!(p.ranges, 1);
        assert_eq!(p.funcs["f"].array_params, vec![true, false]);
        assert!(matches!(
            &p.rules[0].1.as_ref().expect("an action")[0],
            Stmt::Print(args, Some(Redirect::Write(_))) if args.len() == 2
        ));
    }

    #[test]
    fn errors_are_busyboxs() {
        assert_eq!(
            parse("BEGIN { x = }").map(|_| ()),
            Err(Error::syntax(1, "Unexpected token"))
        );
        assert_eq!(
            parse("BEGIN { print (1").map(|_| ()),
            Err(Error::syntax(1, "Unexpected end of string"))
        );
        assert_eq!(
            parse("BEGIN { f(1) }").map(|_| ()),
            Err(Error::syntax(1, "Call to undefined function"))
        );
        assert_eq!(
            parse("BEGIN { break }").map(|_| ()),
            Err(Error::syntax(1, "'break' not in a loop"))
        );
        assert!(parse(&"(".repeat(10_000)).is_err());
    }
}
