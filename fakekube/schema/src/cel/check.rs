//! What the API server's CEL compiler would say of a rule before it runs: every identifier
//! declared (`self`, `oldSelf`, comprehension variables, type names), every function one that
//! Kubernetes declares. A function Kubernetes declares but fakekube does not implement is
//! refused by name, so that no rule is silently left unchecked.

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr, SourceInfo};
use std::collections::BTreeSet;

/// Type names an expression may use as values (`type(x) == map`).
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "duration",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "timestamp",
    "type",
    "uint",
    "optional_type",
];

/// Identifiers that name a library, not a variable, when a call is made on them.
const NAMESPACES: &[&str] = &[
    "base64",
    "cel",
    "format",
    "ip",
    "jsonpatch",
    "lists",
    "math",
    "optional",
    "semver",
    "sets",
    "strings",
];

/// The functions fakekube implements, by the name a call uses (`sets.contains` for a call on
/// a namespace).
const IMPLEMENTED: &[&str] = &[
    // the standard library
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "hasValue",
    "value",
    "or",
    "orValue",
    // the strings extension
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "format",
    "strings.quote",
    "reverse",
    "base64.encode",
    "base64.decode",
    // Kubernetes' lists, regex and sets
    "isSorted",
    "sum",
    "min",
    "max",
    "find",
    "findAll",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // Kubernetes' quantity, IP, CIDR and URL libraries
    "quantity",
    "isQuantity",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "sign",
    "add",
    "sub",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
];

/// Functions Kubernetes declares for CRD rules that fakekube does not implement, with the
/// library each belongs to.
const NOT_IMPLEMENTED: &[(&str, &str)] = &[
    ("semver", "semver"),
    ("isSemver", "semver"),
    ("major", "semver"),
    ("minor", "semver"),
    ("patch", "semver"),
    ("format.named", "format"),
    ("validate", "format"),
    ("transformList", "two-variable comprehensions"),
    ("transformMap", "two-variable comprehensions"),
    ("transformMapEntry", "two-variable comprehensions"),
    ("jsonpatch.escapeKey", "jsonpatch"),
    ("lists.range", "lists"),
    ("slice", "lists"),
    ("flatten", "lists"),
    ("distinct", "lists"),
    ("sort", "lists"),
    ("sortBy", "lists"),
    ("math.greatest", "math"),
    ("math.least", "math"),
    ("math.ceil", "math"),
    ("math.floor", "math"),
    ("math.round", "math"),
    ("math.trunc", "math"),
    ("math.abs", "math"),
    ("math.sign", "math"),
    ("math.isInf", "math"),
    ("math.isNaN", "math"),
    ("math.isFinite", "math"),
    ("math.bitAnd", "math"),
    ("math.bitOr", "math"),
    ("math.bitXor", "math"),
    ("math.bitNot", "math"),
    ("math.bitShiftLeft", "math"),
    ("math.bitShiftRight", "math"),
];

/// What the compiler found in a rule that compiles.
#[derive(Debug, Clone, Default)]
pub(super) struct Findings {
    /// Whether the rule reads `oldSelf` (a transition rule).
    pub(super) uses_old_self: bool,
    /// What the rule reads of `self`.
    pub(super) self_reads: Selection,
    /// What the rule reads of `oldSelf`.
    pub(super) old_self_reads: Selection,
}

/// What an expression reads of a variable: only the fields it selects by name (`self.a`,
/// `has(self.a)`), or the whole value when it uses the variable any other way. A value
/// converted with only the selected fields evaluates the expression exactly as the whole
/// value does, for less.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Selection {
    /// These fields and nothing else (none: the variable is not read).
    Fields(BTreeSet<String>),
    /// The whole value.
    Whole,
}

impl Default for Selection {
    fn default() -> Self {
        Selection::Fields(BTreeSet::new())
    }
}

impl Selection {
    /// Adds what `other` reads.
    pub(crate) fn add(&mut self, other: &Selection) {
        match (&mut *self, other) {
            (Selection::Whole, _) => {}
            (_, Selection::Whole) => *self = Selection::Whole,
            (Selection::Fields(mine), Selection::Fields(theirs)) => {
                mine.extend(theirs.iter().cloned());
            }
        }
    }

    /// Whether field `name` is read.
    pub(crate) fn reads(&self, name: &str) -> bool {
        match self {
            Selection::Whole => true,
            Selection::Fields(fields) => fields.contains(name),
        }
    }

    fn field(&mut self, name: &str) {
        if let Selection::Fields(fields) = self {
            fields.insert(name.to_string());
        }
    }
}

/// Why a rule does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CheckError {
    /// What the API server's compiler reports, at an expression of the source.
    Undeclared { name: String, expr: u64 },
    /// A function Kubernetes has and fakekube lacks.
    NotImplemented {
        function: String,
        library: &'static str,
    },
}

/// Walks a parsed rule.
pub(super) fn check(expr: &IdedExpr) -> Result<Findings, CheckError> {
    check_declared(expr, &[])
}

/// Walks a parsed expression in which `declared` names variables besides `self` and
/// `oldSelf` (an admission policy's `object`, `request`, `params`...).
pub(super) fn check_declared(expr: &IdedExpr, declared: &[&str]) -> Result<Findings, CheckError> {
    let mut findings = Findings::default();
    let mut scope: Vec<String> = declared.iter().map(|d| (*d).to_string()).collect();
    walk(expr, &mut scope, &mut findings)?;
    Ok(findings)
}

fn walk(e: &IdedExpr, scope: &mut Vec<String>, f: &mut Findings) -> Result<(), CheckError> {
    match &e.expr {
        Expr::Ident(name) => ident(name, e.id, scope, f),
        Expr::Select(s) => {
            if let Expr::Ident(name) = &s.operand.expr
                && !scope.contains(name)
            {
                match name.as_str() {
                    "self" => f.self_reads.field(&s.field),
                    "oldSelf" => {
                        f.uses_old_self = true;
                        f.old_self_reads.field(&s.field);
                    }
                    _ => return walk(&s.operand, scope, f),
                }
                return Ok(());
            }
            walk(&s.operand, scope, f)
        }
        Expr::Call(c) => {
            let namespace = match c.target.as_deref().map(|t| &t.expr) {
                Some(Expr::Ident(ns))
                    if NAMESPACES.contains(&ns.as_str()) && !scope.contains(ns) =>
                {
                    Some(ns.as_str())
                }
                _ => None,
            };
            let name = match namespace {
                Some(ns) => format!("{ns}.{}", c.func_name),
                None => c.func_name.clone(),
            };
            function(&name, c.target.is_some(), c.args.len(), e.id)?;
            if namespace.is_none()
                && let Some(t) = &c.target
            {
                walk(t, scope, f)?;
            }
            for a in &c.args {
                walk(a, scope, f)?;
            }
            Ok(())
        }
        Expr::Comprehension(c) => {
            walk(&c.iter_range, scope, f)?;
            walk(&c.accu_init, scope, f)?;
            let pushed = 2 + usize::from(c.iter_var2.is_some());
            scope.push(c.iter_var.clone());
            scope.push(c.accu_var.clone());
            if let Some(v2) = &c.iter_var2 {
                scope.push(v2.clone());
            }
            let r = walk(&c.loop_cond, scope, f)
                .and_then(|()| walk(&c.loop_step, scope, f))
                .and_then(|()| walk(&c.result, scope, f));
            scope.truncate(scope.len() - pushed);
            r
        }
        Expr::List(l) => l.elements.iter().try_for_each(|x| walk(x, scope, f)),
        Expr::Map(m) => m.entries.iter().try_for_each(|x| match &x.expr {
            EntryExpr::MapEntry(me) => {
                walk(&me.key, scope, f).and_then(|()| walk(&me.value, scope, f))
            }
            EntryExpr::StructField(sf) => walk(&sf.value, scope, f),
        }),
        Expr::Struct(s) => s.entries.iter().try_for_each(|x| match &x.expr {
            EntryExpr::MapEntry(me) => {
                walk(&me.key, scope, f).and_then(|()| walk(&me.value, scope, f))
            }
            EntryExpr::StructField(sf) => walk(&sf.value, scope, f),
        }),
        Expr::Literal(_) | Expr::Unspecified => Ok(()),
    }
}

fn ident(name: &str, id: u64, scope: &[String], f: &mut Findings) -> Result<(), CheckError> {
    let shadowed = scope.iter().any(|s| s == name);
    if name == "oldSelf" {
        f.uses_old_self = true;
        if !shadowed {
            f.old_self_reads = Selection::Whole;
        }
        return Ok(());
    }
    if name == "self" && !shadowed {
        f.self_reads = Selection::Whole;
        return Ok(());
    }
    if shadowed || TYPE_NAMES.contains(&name) {
        return Ok(());
    }
    Err(CheckError::Undeclared {
        name: name.to_string(),
        expr: id,
    })
}

fn function(name: &str, member: bool, argc: usize, id: u64) -> Result<(), CheckError> {
    let operator = name.starts_with('_') || name.starts_with('@') || name == "!_" || name == "-_";
    if operator {
        return Ok(());
    }
    if member && argc == 3 && matches!(name, "all" | "exists" | "existsOne" | "exists_one") {
        return Err(CheckError::NotImplemented {
            function: name.to_string(),
            library: "two-variable comprehensions",
        });
    }
    if IMPLEMENTED.contains(&name) {
        return Ok(());
    }
    if let Some((_, library)) = NOT_IMPLEMENTED.iter().find(|(n, _)| *n == name) {
        return Err(CheckError::NotImplemented {
            function: name.to_string(),
            library,
        });
    }
    if name.starts_with("format.") {
        return Err(CheckError::NotImplemented {
            function: name.to_string(),
            library: "format",
        });
    }
    Err(CheckError::Undeclared {
        name: name.to_string(),
        expr: id,
    })
}

/// The cel-go style report of an undeclared name in `source`: the position, then the line
/// with a caret under it.
pub(super) fn report(source: &str, info: &SourceInfo, expr: u64, message: &str) -> String {
    let offset = info
        .offset_for(expr)
        .map_or(0, |(start, _)| usize::try_from(start).unwrap_or(0));
    let before: String = source.chars().take(offset).collect();
    let line_no = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    let line = source.lines().nth(line_no - 1).unwrap_or("");
    format!(
        "ERROR: <input>:{line_no}:{}: {message}\n | {line}\n | {}^",
        col + 1,
        ".".repeat(col)
    )
}
