//! Running a parsed awk program: variables and arrays, records and fields, the patterns and
//! actions, and output (stdout buffered, `>`/`>>` files, `|` commands run at `close` or the
//! end). Input (records, `getline`) is in [`super::input`], the built-in functions in
//! [`super::builtins`].

use std::collections::{BTreeMap, HashMap};

use regex::Regex;

use super::Error;
use super::ast::{BinOp, Expr, Pattern, Program, Redirect, Stmt, Var};
use super::bridge::Bridge;
use super::records::{MainInput, Reader};
use super::value::{Value, compare, num_to_str};
use fakekube_runtime::io::WriteError;
use fakekube_runtime::process::Process;

/// Deepest nesting of user function calls (bounded by the thread's stack, see
/// [`super::bridge::STACK`]).
const MAX_CALL_DEPTH: usize = 1024;

/// Longest string awk builds (a runaway `s = s s` stops here).
const MAX_STRING: usize = fakekube_runtime::fs::MAX_FILE_SIZE;

/// Bytes of stdout held before they are written.
const FLUSH_AT: usize = 16 * 1024;

/// A variable's storage: a scalar, or an array (an index into the interpreter's arrays, so
/// that a function's parameter can refer to its caller's array).
#[derive(Debug, Clone)]
pub(super) enum Cell {
    /// A scalar (or a variable not used yet).
    Val(Value),
    /// An array.
    Arr(usize),
}

/// How a statement ended.
#[derive(Debug)]
pub(super) enum Flow {
    /// On to the next statement.
    Normal,
    /// `next`.
    Next,
    /// `nextfile`.
    NextFile,
    /// `exit`.
    Exit,
    /// `return`, with the value.
    Return(Value),
    /// `break`.
    Break,
    /// `continue`.
    Continue,
}

/// Where an assignment goes, its subscripts and field number already evaluated.
#[derive(Debug, Clone)]
pub(super) enum Place {
    /// A variable.
    Var(Var),
    /// An element of an array.
    Elem(usize, String),
    /// A field (0: the record).
    Field(usize),
}

/// The running program.
pub(super) struct Interp<'p> {
    pub(super) proc: &'p Process,
    /// The way to the async side, for input, output and commands.
    pub(super) bridge: &'p Bridge,
    pub(super) prog: &'p Program,
    /// Global variables.
    pub(super) globals: HashMap<String, Cell>,
    /// Every array, by index.
    pub(super) arrays: Vec<BTreeMap<String, Value>>,
    /// The parameters of the functions being run, innermost last.
    pub(super) frames: Vec<Vec<Cell>>,
    /// `$0`.
    pub(super) record: String,
    /// `$1`… once split.
    pub(super) fields: Vec<String>,
    /// Whether `fields` is `record` split.
    pub(super) split: bool,
    /// Which range patterns are between their two ends.
    ranges: Vec<bool>,
    /// Compiled dynamic regular expressions.
    regexes: HashMap<String, Regex>,
    /// Standard output not yet written.
    pub(super) out: Vec<u8>,
    /// Files written with `>` or `>>` (whether opened), by name.
    files: HashMap<String, ()>,
    /// Output for `| COMMAND`, by command, run at `close` or the end.
    pipes: Vec<(String, Vec<u8>)>,
    /// `getline < FILE` and `COMMAND | getline` sources, by name.
    pub(super) readers: HashMap<String, Reader>,
    /// The main input (the operands, or stdin).
    pub(super) main: MainInput,
    /// The status `exit` set.
    pub(super) exit_code: i32,
    /// `rand()`'s state and `srand()`'s last seed.
    pub(super) rand_state: u64,
    pub(super) seed: f64,
}

impl<'p> Interp<'p> {
    /// An interpreter with POSIX's initial variables, `ARGV` from the operands and `ENVIRON`
    /// from the process.
    pub(super) fn new(
        proc: &'p Process,
        bridge: &'p Bridge,
        prog: &'p Program,
        operands: &[String],
    ) -> Self {
        let mut it = Interp {
            proc,
            bridge,
            prog,
            globals: HashMap::new(),
            arrays: Vec::new(),
            frames: Vec::new(),
            record: String::new(),
            fields: Vec::new(),
            split: true,
            ranges: vec![false; prog.ranges],
            regexes: HashMap::new(),
            out: Vec::new(),
            files: HashMap::new(),
            pipes: Vec::new(),
            readers: HashMap::new(),
            main: MainInput::default(),
            exit_code: 0,
            rand_state: 0,
            seed: 0.0,
        };
        for (name, v) in [
            ("FS", " "),
            ("OFS", " "),
            ("ORS", "\n"),
            ("RS", "\n"),
            ("SUBSEP", "\x1c"),
            ("CONVFMT", "%.6g"),
            ("OFMT", "%.6g"),
            ("FILENAME", ""),
        ] {
            it.set_global(name, Value::Str(v.to_string()));
        }
        for (name, v) in [
            ("NR", 0.0),
            ("FNR", 0.0),
            ("RSTART", 0.0),
            ("RLENGTH", -1.0),
        ] {
            it.set_global(name, Value::Num(v));
        }
        let env = it.new_array();
        for (k, v) in proc.env() {
            it.arrays[env].insert(k.clone(), Value::StrNum(v.clone()));
        }
        it.globals.insert("ENVIRON".into(), Cell::Arr(env));
        let argv = it.new_array();
        it.arrays[argv].insert("0".into(), Value::Str("awk".into()));
        for (k, a) in operands.iter().enumerate() {
            it.arrays[argv].insert((k + 1).to_string(), Value::StrNum(a.clone()));
        }
        it.globals.insert("ARGV".into(), Cell::Arr(argv));
        it.set_global("ARGC", Value::Num((operands.len() + 1) as f64));
        it
    }

    /// A new empty array; its index.
    pub(super) fn new_array(&mut self) -> usize {
        self.arrays.push(BTreeMap::new());
        self.arrays.len() - 1
    }

    /// Sets a global scalar.
    pub(super) fn set_global(&mut self, name: &str, v: Value) {
        self.globals.insert(name.to_string(), Cell::Val(v));
    }

    /// A global scalar's value (`Uninit` for an array or nothing).
    pub(super) fn global(&self, name: &str) -> Value {
        match self.globals.get(name) {
            Some(Cell::Val(v)) => v.clone(),
            _ => Value::Uninit,
        }
    }

    /// A global as a string (`FS`, `OFS`, …).
    pub(super) fn global_str(&self, name: &str) -> String {
        let fmt = self.convfmt();
        self.global(name).str(&fmt)
    }

    /// `CONVFMT`.
    pub(super) fn convfmt(&self) -> String {
        match self.globals.get("CONVFMT") {
            Some(Cell::Val(Value::Str(s) | Value::StrNum(s))) => s.clone(),
            _ => "%.6g".into(),
        }
    }

    /// A value as a string through `CONVFMT`.
    pub(super) fn to_str(&self, v: &Value) -> String {
        match v {
            Value::Num(n) => num_to_str(*n, &self.convfmt()),
            other => other.str("%.6g"),
        }
    }

    /// The cell of a variable.
    fn cell(&mut self, v: &Var) -> &mut Cell {
        match v {
            Var::Global(name) => self
                .globals
                .entry(name.clone())
                .or_insert(Cell::Val(Value::Uninit)),
            Var::Local(k) => {
                let frame = self.frames.last_mut();
                match frame.and_then(|f| {
                    if f.len() <= *k {
                        f.resize(*k + 1, Cell::Val(Value::Uninit));
                    }
                    f.get_mut(*k)
                }) {
                    Some(c) => c,
                    // A local outside any function cannot be parsed; a global stands in.
                    None => self
                        .globals
                        .entry(String::new())
                        .or_insert(Cell::Val(Value::Uninit)),
                }
            }
        }
    }

    /// The array a variable holds, made if it held nothing; `Not an array` for a scalar.
    pub(super) fn array_of(&mut self, v: &Var) -> Result<usize, Error> {
        if let Var::Global(name) = v
            && name == "NF"
        {
            return Err(Error::runtime("Not an array"));
        }
        match self.cell(v).clone() {
            Cell::Arr(id) => Ok(id),
            Cell::Val(Value::Uninit) => {
                let id = self.new_array();
                *self.cell(v) = Cell::Arr(id);
                Ok(id)
            }
            Cell::Val(_) => Err(Error::runtime("Not an array")),
        }
    }

    /// A variable's scalar value.
    pub(super) fn get_var(&mut self, v: &Var) -> Value {
        if let Var::Global(name) = v
            && name == "NF"
        {
            self.ensure_split();
            return Value::Num(self.fields.len() as f64);
        }
        match self.cell(v) {
            Cell::Val(val) => val.clone(),
            Cell::Arr(_) => Value::Uninit,
        }
    }

    /// Assigns a variable (`NF` rebuilds the record).
    pub(super) fn set_var(&mut self, v: &Var, val: Value) -> Result<(), Error> {
        if let Var::Global(name) = v
            && name == "NF"
        {
            let n = val.num();
            if n < 0.0 {
                return Err(Error::runtime("NF set to negative value"));
            }
            self.ensure_split();
            self.fields.resize(
                usize::try_from(n as i64).unwrap_or(0).min(1 << 20),
                String::new(),
            );
            self.rebuild();
            return Ok(());
        }
        let cell = self.cell(v);
        if matches!(cell, Cell::Arr(_)) {
            return Err(Error::runtime("Can't assign to an array"));
        }
        *cell = Cell::Val(val);
        Ok(())
    }

    /// The record's fields, split by `FS` if not already.
    pub(super) fn ensure_split(&mut self) {
        if !self.split {
            let fs = self.global_str("FS");
            let record = self.record.clone();
            self.fields = self.split_by(&record, &fs);
            self.split = true;
        }
    }

    /// Splits text as `FS` (or `split`'s third argument) says: a blank splits on runs of
    /// blanks and newlines with those at the ends dropped, another single character splits on
    /// itself, an empty one into characters, anything longer is a regular expression.
    pub(super) fn split_by(&mut self, text: &str, fs: &str) -> Vec<String> {
        if text.is_empty() {
            return Vec::new();
        }
        if fs == " " {
            return text
                .split([' ', '\t', '\n'])
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
        }
        if fs.is_empty() {
            return text.chars().map(String::from).collect();
        }
        let mut chars = fs.chars();
        if let (Some(c), None) = (chars.next(), chars.next())
            && c != '\\'
        {
            return text.split(c).map(str::to_string).collect();
        }
        match self.regex(fs) {
            Ok(re) => re.split(text).map(str::to_string).collect(),
            Err(_) => text.split(fs).map(str::to_string).collect(),
        }
    }

    /// A compiled ERE (cached).
    pub(super) fn regex(&mut self, pattern: &str) -> Result<Regex, Error> {
        if let Some(re) = self.regexes.get(pattern) {
            return Ok(re.clone());
        }
        let re = super::super::posix_regex::compile(pattern, true, false)
            .map_err(|_| Error::runtime(&format!("bad regex '{pattern}'")))?;
        if self.regexes.len() > 1000 {
            self.regexes.clear();
        }
        self.regexes.insert(pattern.to_string(), re.clone());
        Ok(re)
    }

    /// Sets `$0` (fields split when next asked for).
    pub(super) fn set_record(&mut self, text: String) {
        self.record = text;
        self.split = false;
    }

    /// `$0` from the fields, joined by `OFS`.
    fn rebuild(&mut self) {
        let ofs = self.global_str("OFS");
        self.record = self.fields.join(&ofs);
    }

    /// Field `n`'s value (`$0` for 0).
    pub(super) fn field(&mut self, n: usize) -> Value {
        if n == 0 {
            return Value::StrNum(self.record.clone());
        }
        self.ensure_split();
        Value::StrNum(self.fields.get(n - 1).cloned().unwrap_or_default())
    }

    /// Assigns field `n` (`$0` for 0), rebuilding the record or the fields.
    fn set_field(&mut self, n: usize, text: String) {
        if n == 0 {
            self.set_record(text);
            return;
        }
        self.ensure_split();
        if self.fields.len() < n {
            self.fields.resize(n, String::new());
        }
        self.fields[n - 1] = text;
        self.rebuild();
    }

    /// The value at a place.
    pub(super) fn get_place(&mut self, p: &Place) -> Value {
        match p {
            Place::Var(v) => self.get_var(v),
            Place::Elem(id, key) => self
                .arrays
                .get_mut(*id)
                .map(|a| a.entry(key.clone()).or_default().clone())
                .unwrap_or_default(),
            Place::Field(n) => self.field(*n),
        }
    }

    /// Stores a value at a place.
    pub(super) fn set_place(&mut self, p: &Place, v: Value) -> Result<(), Error> {
        match p {
            Place::Var(var) => self.set_var(var, v),
            Place::Elem(id, key) => {
                if let Some(a) = self.arrays.get_mut(*id) {
                    a.insert(key.clone(), v);
                }
                Ok(())
            }
            Place::Field(n) => {
                let text = self.to_str(&v);
                self.set_field(*n, text);
                Ok(())
            }
        }
    }

    /// A field number from a value; negative ones are an error.
    fn field_number(v: &Value) -> Result<usize, Error> {
        let n = v.num();
        if n < 0.0 {
            return Err(Error::runtime("Access to negative field"));
        }
        Ok(usize::try_from(n as i64).unwrap_or(0).min(1 << 20))
    }

    /// The subscript of `a[e1, e2, …]`: the values joined by `SUBSEP`.
    pub(super) fn subscript(&mut self, subs: &[Expr]) -> Result<String, Error> {
        let mut parts = Vec::with_capacity(subs.len());
        for s in subs {
            let v = self.eval(s)?;
            parts.push(self.to_str(&v));
        }
        let sep = self.global_str("SUBSEP");
        Ok(parts.join(&sep))
    }

    /// Where an lvalue is, its subscripts or field number evaluated.
    pub(super) fn place(&mut self, e: &Expr) -> Result<Place, Error> {
        match e {
            Expr::Var(v) => Ok(Place::Var(v.clone())),
            Expr::Index(v, subs) => {
                let key = self.subscript(subs)?;
                let id = self.array_of(v)?;
                Ok(Place::Elem(id, key))
            }
            Expr::Field(n) => {
                let v = self.eval(n)?;
                Ok(Place::Field(Self::field_number(&v)?))
            }
            _ => Err(Error::runtime("Unexpected token")),
        }
    }

    /// Evaluates an expression.
    pub(super) fn eval(&mut self, e: &Expr) -> Result<Value, Error> {
        Ok(match e {
            Expr::Num(n) => Value::Num(*n),
            Expr::Str(s) => Value::Str(s.clone()),
            Expr::Regex(r) => {
                let re = self.regex(r)?;
                bool_value(re.is_match(&self.record))
            }
            Expr::Field(n) => {
                let v = self.eval(n)?;
                let n = Self::field_number(&v)?;
                self.field(n)
            }
            Expr::Var(v) => self.get_var(v),
            Expr::Index(..) => {
                let p = self.place(e)?;
                self.get_place(&p)
            }
            Expr::Assign(op, target, rhs) => {
                let p = self.place(target)?;
                let r = self.eval(rhs)?;
                let v = match op {
                    None => r,
                    Some(op) => {
                        let cur = self.get_place(&p).num();
                        Value::Num(arith(*op, cur, r.num())?)
                    }
                };
                self.set_place(&p, v.clone())?;
                v
            }
            Expr::Cond(c, a, b) => {
                if self.eval(c)?.truthy() {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::And(a, b) => bool_value(self.eval(a)?.truthy() && self.eval(b)?.truthy()),
            Expr::Or(a, b) => bool_value(self.eval(a)?.truthy() || self.eval(b)?.truthy()),
            Expr::Not(a) => bool_value(!self.eval(a)?.truthy()),
            Expr::Neg(a) => Value::Num(-self.eval(a)?.num()),
            Expr::Plus(a) => Value::Num(self.eval(a)?.num()),
            Expr::Binary(op, a, b) => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                let fmt = self.convfmt();
                let ord = || compare(&x, &y, &fmt);
                match op {
                    BinOp::Lt => bool_value(ord().is_lt()),
                    BinOp::Le => bool_value(ord().is_le()),
                    BinOp::Gt => bool_value(ord().is_gt()),
                    BinOp::Ge => bool_value(ord().is_ge()),
                    BinOp::Eq => bool_value(ord().is_eq()),
                    BinOp::Ne => bool_value(!ord().is_eq()),
                    _ => Value::Num(arith(*op, x.num(), y.num())?),
                }
            }
            Expr::Match(negate, a, b) => {
                let text = self.eval(a)?;
                let text = self.to_str(&text);
                let re = self.regex_operand(b)?;
                bool_value(re.is_match(&text) != *negate)
            }
            Expr::In(keys, v) => {
                let key = self.subscript(keys)?;
                let id = self.array_of(v)?;
                bool_value(self.arrays.get(id).is_some_and(|a| a.contains_key(&key)))
            }
            Expr::Concat(a, b) => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                let mut s = self.to_str(&x);
                let t = self.to_str(&y);
                if s.len() + t.len() > MAX_STRING {
                    return Err(Error::runtime("Out of memory"));
                }
                s.push_str(&t);
                Value::Str(s)
            }
            Expr::IncDec { inc, post, target } => {
                let p = self.place(target)?;
                let cur = self.get_place(&p).num();
                let new = if *inc { cur + 1.0 } else { cur - 1.0 };
                self.set_place(&p, Value::Num(new))?;
                Value::Num(if *post { cur } else { new })
            }
            Expr::Call(name, args) => self.call(name, args)?,
            Expr::Builtin(name, args) => self.builtin(name, args)?,
            Expr::Getline(src, target) => self.getline(src, target.as_deref())?,
            Expr::Group(_) => return Err(Error::runtime("Unexpected token")),
        })
    }

    /// The regex of `~`'s right side or a function's regex argument: a literal as written,
    /// anything else by its string value.
    pub(super) fn regex_operand(&mut self, e: &Expr) -> Result<Regex, Error> {
        if let Expr::Regex(r) = e {
            return self.regex(r);
        }
        let v = self.eval(e)?;
        let s = self.to_str(&v);
        self.regex(&s)
    }

    /// Calls a user function: arrays by reference, scalars by value, missing parameters as
    /// fresh locals.
    fn call(&mut self, name: &str, args: &[Expr]) -> Result<Value, Error> {
        let prog = self.prog;
        let Some(f) = prog.funcs.get(name) else {
            return Err(Error::runtime("Call to undefined function"));
        };
        if args.len() > f.params.len() {
            return Err(Error::runtime("Too many arguments"));
        }
        if self.frames.len() >= MAX_CALL_DEPTH {
            return Err(Error::runtime("Function calls nested too deeply"));
        }
        let mut frame = Vec::with_capacity(f.params.len());
        for (k, arg) in args.iter().enumerate() {
            let wants_array = f.array_params.get(k).copied().unwrap_or(false);
            let cell = match arg {
                Expr::Var(v) if wants_array => Cell::Arr(self.array_of(v)?),
                Expr::Var(v) if matches!(self.cell(v), Cell::Arr(_)) => self.cell(v).clone(),
                other => Cell::Val(self.eval(other)?),
            };
            frame.push(cell);
        }
        frame.resize(f.params.len(), Cell::Val(Value::Uninit));
        self.frames.push(frame);
        let flow = self.exec_block(&f.body);
        self.frames.pop();
        match flow? {
            Flow::Return(v) => Ok(v),
            Flow::Exit => Err(Error::Exit),
            Flow::Next => Err(Error::Next),
            _ => Ok(Value::Uninit),
        }
    }

    /// Runs statements in order until one does not end normally.
    pub(super) fn exec_block(&mut self, body: &[Stmt]) -> Result<Flow, Error> {
        for s in body {
            let flow = self.exec(s)?;
            if !matches!(flow, Flow::Normal) {
                return Ok(flow);
            }
        }
        Ok(Flow::Normal)
    }

    /// Runs one statement.
    fn exec(&mut self, s: &Stmt) -> Result<Flow, Error> {
        match s {
            Stmt::Expr(e) => {
                self.eval(e)?;
            }
            Stmt::Print(args, redirect) => {
                let text = self.print_text(args)?;
                self.output(text, redirect.as_ref())?;
            }
            Stmt::Printf(args, redirect) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let fmt = vals.first().map(|v| self.to_str(v)).unwrap_or_default();
                let text = super::format::sprintf(&fmt, &vals[1..], &self.convfmt());
                self.output(text, redirect.as_ref())?;
            }
            Stmt::If(c, then, other) => {
                if self.eval(c)?.truthy() {
                    return self.exec(then);
                } else if let Some(o) = other {
                    return self.exec(o);
                }
            }
            Stmt::While(c, body) => {
                while self.eval(c)?.truthy() {
                    self.check_cancel()?;
                    match self.exec(body)? {
                        Flow::Break => break,
                        Flow::Normal | Flow::Continue => {}
                        other => return Ok(other),
                    }
                }
            }
            Stmt::Do(body, c) => loop {
                self.check_cancel()?;
                match self.exec(body)? {
                    Flow::Break => break,
                    Flow::Normal | Flow::Continue => {}
                    other => return Ok(other),
                }
                if !self.eval(c)?.truthy() {
                    break;
                }
            },
            Stmt::For(init, cond, step, body) => {
                if let Some(i) = init {
                    self.exec(i)?;
                }
                loop {
                    self.check_cancel()?;
                    if let Some(c) = cond
                        && !self.eval(c)?.truthy()
                    {
                        break;
                    }
                    match self.exec(body)? {
                        Flow::Break => break,
                        Flow::Normal | Flow::Continue => {}
                        other => return Ok(other),
                    }
                    if let Some(st) = step {
                        self.exec(st)?;
                    }
                }
            }
            Stmt::ForIn(key, array, body) => {
                let id = self.array_of(array)?;
                let keys: Vec<String> = self
                    .arrays
                    .get(id)
                    .map(|a| a.keys().cloned().collect())
                    .unwrap_or_default();
                for k in keys {
                    self.check_cancel()?;
                    if !self.arrays.get(id).is_some_and(|a| a.contains_key(&k)) {
                        continue;
                    }
                    self.set_var(key, Value::StrNum(k))?;
                    match self.exec(body)? {
                        Flow::Break => break,
                        Flow::Normal | Flow::Continue => {}
                        other => return Ok(other),
                    }
                }
            }
            Stmt::Block(body) => return self.exec_block(body),
            Stmt::Next => return Ok(Flow::Next),
            Stmt::NextFile => return Ok(Flow::NextFile),
            Stmt::Exit(code) => {
                if let Some(c) = code {
                    let v = self.eval(c)?;
                    self.exit_code = v.num() as i32;
                }
                return Ok(Flow::Exit);
            }
            Stmt::Return(v) => {
                let v = match v {
                    Some(e) => self.eval(e)?,
                    None => Value::Uninit,
                };
                return Ok(Flow::Return(v));
            }
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Continue => return Ok(Flow::Continue),
            Stmt::Delete(v, subs) => {
                let id = self.array_of(v)?;
                match subs {
                    Some(subs) => {
                        let key = self.subscript(subs)?;
                        if let Some(a) = self.arrays.get_mut(id) {
                            a.remove(&key);
                        }
                    }
                    None => {
                        if let Some(a) = self.arrays.get_mut(id) {
                            a.clear();
                        }
                    }
                }
            }
        }
        Ok(Flow::Normal)
    }

    /// What `print ARGS` writes: the values (numbers through `OFMT`) joined by `OFS`, then
    /// `ORS`.
    fn print_text(&mut self, args: &[Expr]) -> Result<String, Error> {
        let mut text = String::new();
        if args.is_empty() {
            text.push_str(&self.record);
        } else {
            let ofs = self.global_str("OFS");
            let ofmt = self.global_str("OFMT");
            for (k, a) in args.iter().enumerate() {
                if k > 0 {
                    text.push_str(&ofs);
                }
                match self.eval(a)? {
                    Value::Num(n) => text.push_str(&num_to_str(n, &ofmt)),
                    other => text.push_str(&other.str("%.6g")),
                }
            }
        }
        text.push_str(&self.global_str("ORS"));
        Ok(text)
    }

    /// Sends output to stdout or where a redirection says.
    fn output(&mut self, text: String, redirect: Option<&Redirect>) -> Result<(), Error> {
        let Some(r) = redirect else {
            self.out.extend_from_slice(text.as_bytes());
            if self.out.len() >= FLUSH_AT {
                self.flush()?;
            }
            return Ok(());
        };
        let (target, append, pipe) = match r {
            Redirect::Write(e) => (e, false, false),
            Redirect::Append(e) => (e, true, false),
            Redirect::Pipe(e) => (e, false, true),
        };
        let name = self.eval(target)?;
        let name = self.to_str(&name);
        if pipe {
            match self.pipes.iter_mut().find(|(c, _)| *c == name) {
                Some((_, buf)) => buf.extend_from_slice(text.as_bytes()),
                None => self.pipes.push((name, text.into_bytes())),
            }
            return Ok(());
        }
        match name.as_str() {
            "/dev/stdout" | "-" => {
                self.out.extend_from_slice(text.as_bytes());
                return Ok(());
            }
            "/dev/stderr" => {
                self.flush()?;
                self.stderr(&text);
                return Ok(());
            }
            _ => {}
        }
        let path = self.proc.path(&name);
        if !self.files.contains_key(&name) {
            if let Err(e) = self.proc.fs.open_write(&path, !append) {
                return Err(Error::runtime(&format!("can't open '{name}': {e}")));
            }
            self.files.insert(name.clone(), ());
        }
        self.proc
            .fs
            .append(&path, text.as_bytes())
            .map_err(|e| Error::runtime(&format!("error writing '{name}': {e}")))
    }

    /// Writes what stdout holds: 141 for a reader that went (SIGPIPE's status), 1 after a
    /// `write error` message otherwise.
    pub(super) fn flush(&mut self) -> Result<(), Error> {
        if self.out.is_empty() {
            return Ok(());
        }
        let data = bytes::Bytes::from(std::mem::take(&mut self.out));
        match self.bridge.write(&self.proc.stdout, data) {
            Ok(()) => Ok(()),
            Err(WriteError::BrokenPipe) => Err(Error::Status(141)),
            Err(e) => {
                self.stderr(&format!("awk: write error: {e}\n"));
                Err(Error::Status(1))
            }
        }
    }

    /// Writes to stderr (a failure is ignored, as C tools do).
    pub(super) fn stderr(&self, text: &str) {
        let _ = self
            .bridge
            .write(&self.proc.stderr, bytes::Bytes::from(text.to_string()));
    }

    /// Stops a program that was killed (its exec cancelled, or its future dropped).
    pub(super) fn check_cancel(&self) -> Result<(), Error> {
        if self.proc.cancel.is_cancelled() || self.bridge.closed() {
            return Err(Error::Status(137));
        }
        Ok(())
    }

    /// Closes a file, a reader or a command (a `|` command runs now, on what it was given);
    /// 0, the command's status, or -1 when nothing had that name.
    pub(super) fn close(&mut self, name: &str) -> Result<i32, Error> {
        let mut found = self.files.remove(name).is_some() || self.readers.remove(name).is_some();
        let mut status = 0;
        if let Some(k) = self.pipes.iter().position(|(c, _)| c == name) {
            let (cmd, data) = self.pipes.remove(k);
            status = self.run_pipe(&cmd, data)?;
            found = true;
        }
        Ok(if found { status } else { -1 })
    }

    /// Runs `sh -c CMD` with `data` on its stdin and this process's stdout.
    fn run_pipe(&mut self, cmd: &str, data: Vec<u8>) -> Result<i32, Error> {
        self.flush()?;
        let mut child = self
            .proc
            .child(vec!["sh".into(), "-c".into(), cmd.to_string()]);
        child.stdin = fakekube_runtime::io::Input::bytes(bytes::Bytes::from(data));
        Ok(self.bridge.run(child))
    }

    /// Whether a rule's pattern selects the current record.
    fn selects(&mut self, p: &'p Pattern) -> Result<bool, Error> {
        match p {
            Pattern::All => Ok(true),
            Pattern::Expr(e) => Ok(self.eval(e)?.truthy()),
            Pattern::Range(start, end, k) => {
                let active = self.ranges.get(*k).copied().unwrap_or(false);
                if !active {
                    if !self.eval(start)?.truthy() {
                        return Ok(false);
                    }
                    let ends = self.eval(end)?.truthy();
                    if let Some(r) = self.ranges.get_mut(*k) {
                        *r = !ends;
                    }
                    return Ok(true);
                }
                if self.eval(end)?.truthy()
                    && let Some(r) = self.ranges.get_mut(*k)
                {
                    *r = false;
                }
                Ok(true)
            }
        }
    }

    /// Runs the program: BEGIN, every record through the rules, END; then runs the `|`
    /// commands and writes what is left. The exit status.
    pub(super) fn run(&mut self) -> Result<i32, Error> {
        let prog = self.prog;
        let mut exiting = matches!(self.exec_top(&prog.begin)?, Flow::Exit);
        if !exiting && (!prog.rules.is_empty() || !prog.end.is_empty()) {
            'records: while let Some(rec) = self.next_main_record()? {
                self.set_record(rec);
                self.bump("NR");
                self.bump("FNR");
                for (pattern, action) in &prog.rules {
                    if !self.selects(pattern)? {
                        continue;
                    }
                    let flow = match action {
                        Some(body) => self.exec_top(body)?,
                        None => {
                            let text = self.print_text(&[])?;
                            self.output(text, None)?;
                            Flow::Normal
                        }
                    };
                    match flow {
                        Flow::Next => break,
                        Flow::NextFile => {
                            self.main.reader = None;
                            break;
                        }
                        Flow::Exit => {
                            exiting = true;
                            break 'records;
                        }
                        _ => {}
                    }
                }
            }
        }
        let _ = exiting;
        // END runs after an `exit` elsewhere; an `exit` inside it ends it.
        self.exec_top(&prog.end)?;
        self.finish()?;
        Ok(self.exit_code)
    }

    /// Runs top-level statements, turning an `exit` or `next` raised inside a function into
    /// the flow it stands for.
    fn exec_top(&mut self, body: &'p [Stmt]) -> Result<Flow, Error> {
        match self.exec_block(body) {
            Ok(f) => Ok(f),
            Err(Error::Exit) => Ok(Flow::Exit),
            Err(Error::Next) => Ok(Flow::Next),
            Err(e) => Err(e),
        }
    }

    /// Adds one to a numeric global (`NR`, `FNR`).
    pub(super) fn bump(&mut self, name: &str) {
        let n = self.global(name).num();
        self.set_global(name, Value::Num(n + 1.0));
    }

    /// Runs the pending `|` commands and writes stdout.
    pub(super) fn finish(&mut self) -> Result<(), Error> {
        self.flush()?;
        for (cmd, data) in std::mem::take(&mut self.pipes) {
            self.run_pipe(&cmd, data)?;
        }
        Ok(())
    }
}

/// 1 or 0.
pub(super) fn bool_value(b: bool) -> Value {
    Value::Num(if b { 1.0 } else { 0.0 })
}

/// An arithmetic operation; division by zero is an error, as in BusyBox.
fn arith(op: BinOp, x: f64, y: f64) -> Result<f64, Error> {
    Ok(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(Error::runtime("Division by zero"));
            }
            x / y
        }
        BinOp::Mod => {
            if y == 0.0 {
                return Err(Error::runtime("Division by zero"));
            }
            x % y
        }
        BinOp::Pow => x.powf(y),
        _ => 0.0,
    })
}
