//! `x-kubernetes-validations` rules and `messageExpression`s as CEL programs, through the `cel`
//! crate: compiled once per process (with the checks the API server's compiler makes, and a
//! refusal naming any Kubernetes function fakekube does not implement), evaluated with `self`
//! and `oldSelf` bound to the values at the rule's node.
//!
//! # Layout
//! - `library`: the environment (standard library, strings extension, Kubernetes' lists,
//!   regex, sets, quantity, IP, CIDR and URL libraries, `cel.bind`).
//! - `check`: declared names and functions, as the API server's compiler checks them.
//! - `convert`: objects as typed CEL values.
//! - `quantity`, `net`: the values of the quantity, IP, CIDR and URL libraries.

mod check;
mod convert;
mod library;
mod net;
pub(crate) mod quantity;

pub(crate) use check::Selection;
pub(super) use convert::to_cel_reads;

/// The CEL value of a JSON value no schema types.
pub(crate) fn to_cel_value(v: &serde_json::Value) -> Value {
    convert::to_cel(v, None, false)
}

/// A fresh evaluation context over the environment.
pub(crate) fn context() -> Result<Context<'static, 'static>, String> {
    let env = env().ok_or("fakekube's CEL environment could not be built")?;
    Ok(Context::with_env(env.clone()))
}

/// Compiles `source` with `declared` as its variables (no `self`, no `oldSelf`), with the
/// same checks as a rule's.
pub(crate) fn compile_declared(source: &str, declared: &[&str]) -> Result<Program, String> {
    let env = env().ok_or("fakekube's CEL environment could not be built")?;
    let program = env.compile(source).map_err(|e| {
        let text = e.to_string();
        if text.starts_with("ERROR:") {
            text
        } else {
            format!("ERROR: <input>: {text}")
        }
    })?;
    check::check_declared(program.expression(), declared).map_err(|e| match e {
        check::CheckError::Undeclared { name, expr } => check::report(
            source,
            program.source_info(),
            expr,
            &format!("undeclared reference to '{name}' (in container '')"),
        ),
        check::CheckError::NotImplemented { function, library } => format!(
            "fakekube does not implement the CEL function '{function}' (Kubernetes' {library} library), so it cannot evaluate this expression"
        ),
    })?;
    Ok(program)
}

use cel::objects::OptionalValue;
use cel::{Context, Env, Program, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A compiled rule or message expression.
#[derive(Debug)]
pub(super) struct Compiled {
    program: Program,
    /// Whether it reads `oldSelf`.
    pub(super) uses_old_self: bool,
    /// What it reads of `self`.
    pub(super) self_reads: Selection,
    /// What it reads of `oldSelf`.
    pub(super) old_self_reads: Selection,
}

/// The environment, built once per process; `None` if the `cel` crate refused a declaration
/// (every rule is then refused).
fn env() -> Option<&'static Arc<Env>> {
    static ENV: OnceLock<Option<Arc<Env>>> = OnceLock::new();
    ENV.get_or_init(|| match library::env() {
        Ok(env) => Some(Arc::new(env)),
        Err(e) => {
            tracing::error!(error = %e, "building the CEL environment");
            None
        }
    })
    .as_ref()
}

/// Compiles `source`, from the process-wide cache; the error is the API server's wording
/// after "compilation failed: ".
pub(super) fn compile(source: &str) -> Result<Arc<Compiled>, String> {
    type Cache = Mutex<HashMap<String, Result<Arc<Compiled>, String>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(source) {
        return hit.clone();
    }
    let compiled = compile_uncached(source);
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(source.to_string(), compiled.clone());
    compiled
}

fn compile_uncached(source: &str) -> Result<Arc<Compiled>, String> {
    let env = env().ok_or("fakekube's CEL environment could not be built")?;
    let program = env.compile(source).map_err(|e| {
        let text = e.to_string();
        if text.starts_with("ERROR:") {
            text
        } else {
            format!("ERROR: <input>: {text}")
        }
    })?;
    let findings = check::check(program.expression()).map_err(|e| match e {
        check::CheckError::Undeclared { name, expr } => check::report(
            source,
            program.source_info(),
            expr,
            &format!("undeclared reference to '{name}' (in container '')"),
        ),
        check::CheckError::NotImplemented { function, library } => format!(
            "fakekube does not implement the CEL function '{function}' (Kubernetes' {library} library), so it cannot evaluate this rule"
        ),
    })?;
    Ok(Arc::new(Compiled {
        program,
        uses_old_self: findings.uses_old_self,
        self_reads: findings.self_reads,
        old_self_reads: findings.old_self_reads,
    }))
}

/// What `oldSelf` is bound to.
#[derive(Debug)]
pub(super) enum OldSelf {
    /// Not bound (a rule that does not read it).
    Unbound,
    /// The correlated old value.
    Value(Value),
    /// `optionalOldSelf`: an optional, empty on create.
    Optional(Option<Value>),
}

/// Evaluates a compiled program with `self` (and `oldSelf`) bound.
pub(super) fn evaluate(c: &Compiled, this: Value, old: OldSelf) -> Result<Value, String> {
    let env = env().ok_or("fakekube's CEL environment could not be built")?;
    let mut ctx = Context::with_env(env.clone());
    ctx.add_variable_from_value("self", this);
    match old {
        OldSelf::Unbound => {}
        OldSelf::Value(v) => ctx.add_variable_from_value("oldSelf", v),
        OldSelf::Optional(v) => {
            let opt = match v {
                Some(v) => OptionalValue::of(v),
                None => OptionalValue::none(),
            };
            ctx.add_variable_from_value("oldSelf", Value::Opaque(Arc::new(opt)));
        }
    }
    c.program.execute(&ctx).map_err(|e| error_text(&e))
}

/// An evaluation error in cel-go's words where they are known.
pub(crate) fn error_text(e: &cel::ExecutionError) -> String {
    use cel::ExecutionError as E;
    match e {
        E::NoSuchKey(k) => format!("no such key: {k}"),
        E::DivisionByZero(_) => "division by zero".to_string(),
        E::RemainderByZero(_) => "modulus by zero".to_string(),
        E::IndexOutOfBounds(i) => format!("index out of bounds: {}", show(i)),
        E::Overflow(..) => "integer overflow".to_string(),
        E::NoSuchOverload(o) => format!("no such overload: {}", o.function()),
        other => other.to_string(),
    }
}

/// A CEL value as cel-go prints it in messages.
fn show(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => format!("{u}u"),
        Value::Float(f) => f.to_string(),
        Value::String(s) => s.to_string(),
        Value::Bool(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

/// A timestamp value from RFC 3339 text.
pub(super) fn timestamp(text: &str) -> Option<Value> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(Value::Timestamp)
}

/// A duration value from Go duration text (`1h30m`, `250ms`).
pub(super) fn duration(text: &str) -> Option<Value> {
    let (neg, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(Value::Duration(chrono::Duration::zero()));
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let number: f64 = rest.get(..n)?.parse().ok()?;
        rest = rest.get(n..)?;
        let unit_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_alphabetic() || *b > 0x7f)
            .count();
        let unit = rest.get(..unit_len)?;
        rest = rest.get(unit_len..)?;
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        nanos += number * scale;
    }
    // A duration beyond ±292 years does not fit, as in Go.
    if !nanos.is_finite() || nanos.abs() > 9.2e18 {
        return None;
    }
    #[expect(
        clippy::cast_possible_truncation,
        reason = "checked to fit an i64 above"
    )]
    let n = nanos as i64;
    Some(Value::Duration(chrono::Duration::nanoseconds(if neg {
        -n
    } else {
        n
    })))
}

#[cfg(test)]
mod tests;
