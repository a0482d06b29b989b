//! CEL expressions outside a CRD's schema: those of admission policies
//! (`ValidatingAdmissionPolicy` validations, `messageExpression`s, `matchConditions` and
//! `variables`), whose variables are named by the caller (`object`, `oldObject`, `request`,
//! `params`, `namespaceObject`, `variables`) instead of `self` and `oldSelf`.
//!
//! The same environment as the CRD rules' (libraries, the API server's compile-time checks,
//! a refusal naming any function fakekube lacks). Values are bound as untyped JSON: no schema
//! types them, so a timestamp in an object is a string, as for a field without a format.

use crate::cel::{self, to_cel_value};
use ::cel::{Context, Program, Value as CelValue};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A compiled expression.
#[derive(Debug)]
pub struct Expression {
    program: Program,
}

/// Compiles `source`, in which `declared` are the variables it may read; the error is the
/// API server's wording after "compilation failed: ". Compiled once per process and set of
/// variables.
pub fn compile_expression(source: &str, declared: &[&str]) -> Result<Arc<Expression>, String> {
    type Cache = Mutex<HashMap<(String, String), Result<Arc<Expression>, String>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (declared.join(","), source.to_string());
    if let Some(hit) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return hit.clone();
    }
    let compiled =
        cel::compile_declared(source, declared).map(|program| Arc::new(Expression { program }));
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, compiled.clone());
    compiled
}

/// What an expression evaluated to, as far as its callers tell values apart.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A bool (what validations and match conditions must return).
    Bool(bool),
    /// A string (what a `messageExpression` must return).
    String(String),
    /// Anything else, by its CEL type name.
    Other(&'static str),
}

/// The variables an evaluation reads: JSON values by name, and the policy's composited
/// `variables`, each defined from an expression.
#[derive(Debug, Default)]
pub struct Activation {
    values: HashMap<String, CelValue>,
    /// The `variables` defined so far; a variable whose expression failed is absent and its
    /// error kept for an expression that reads it.
    variables: HashMap<String, CelValue>,
    failed: HashMap<String, String>,
}

impl Activation {
    /// An activation with nothing bound.
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds `name` to a JSON value (`null` for an absent object, as the API server binds
    /// `oldObject` on a create).
    pub fn bind(&mut self, name: &str, value: &Value) {
        self.values.insert(name.to_string(), to_cel_value(value));
    }

    /// Defines `variables.<name>` as what `expr` evaluates to; a failure is kept and reported
    /// by the expressions that read it (the API server evaluates variables lazily).
    pub fn define_variable(&mut self, name: &str, expr: &Expression) {
        match self.run(expr) {
            Ok(v) => {
                self.variables.insert(name.to_string(), v);
            }
            Err(e) => {
                self.failed.insert(name.to_string(), e);
            }
        }
    }

    /// Evaluates `expr`; the error is cel-go's text where it is known.
    pub fn evaluate(&self, expr: &Expression) -> Result<Outcome, String> {
        Ok(match self.run(expr)? {
            CelValue::Bool(b) => Outcome::Bool(b),
            CelValue::String(s) => Outcome::String(s.to_string()),
            CelValue::Int(_) => Outcome::Other("int"),
            CelValue::UInt(_) => Outcome::Other("uint"),
            CelValue::Float(_) => Outcome::Other("double"),
            CelValue::List(_) => Outcome::Other("list"),
            CelValue::Map(_) => Outcome::Other("map"),
            CelValue::Null => Outcome::Other("null_type"),
            CelValue::Bytes(_) => Outcome::Other("bytes"),
            CelValue::Timestamp(_) => Outcome::Other("google.protobuf.Timestamp"),
            CelValue::Duration(_) => Outcome::Other("google.protobuf.Duration"),
            _ => Outcome::Other("dyn"),
        })
    }

    fn run(&self, expr: &Expression) -> Result<CelValue, String> {
        let mut ctx: Context = cel::context()?;
        for (k, v) in &self.values {
            ctx.add_variable_from_value(k.clone(), v.clone());
        }
        let vars: HashMap<String, CelValue> = self.variables.clone();
        ctx.add_variable_from_value("variables", CelValue::from(vars));
        expr.program.execute(&ctx).map_err(|e| {
            let text = cel::error_text(&e);
            // A read of a variable whose own expression failed reports that failure.
            match text.strip_prefix("no such key: ") {
                Some(k) if self.failed.contains_key(k) => self.failed[k].clone(),
                _ => text,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn declared_variables_are_bound_and_others_refused_at_compile_time() {
        let e = compile_expression("object.spec.replicas <= params.max", &["object", "params"])
            .expect("compiles");
        let mut act = Activation::new();
        act.bind("object", &json!({ "spec": { "replicas": 3 } }));
        act.bind("params", &json!({ "max": 2 }));
        assert_eq!(act.evaluate(&e), Ok(Outcome::Bool(false)));
        let refused = compile_expression("object.spec.replicas <= limit", &["object"])
            .expect_err("limit is not declared");
        assert!(
            refused.contains("undeclared reference to 'limit'"),
            "{refused}"
        );
    }

    #[test]
    fn a_variable_that_fails_reports_its_own_error_where_it_is_read() {
        let declared = ["object", "variables"];
        let bad = compile_expression("object.missing", &declared).expect("compiles");
        let mut act = Activation::new();
        act.bind("object", &json!({}));
        act.define_variable("v", &bad);
        let reader = compile_expression("variables.v == 1", &declared).expect("compiles");
        assert_eq!(
            act.evaluate(&reader),
            Err("no such key: missing".to_string())
        );
        let fine = compile_expression("'x' + 'y'", &declared).expect("compiles");
        assert_eq!(act.evaluate(&fine), Ok(Outcome::String("xy".into())));
    }
}
