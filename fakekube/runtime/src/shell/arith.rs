//! `$((…))` arithmetic: signed 64-bit, wrapping, C operator precedence, variables by name.

/// Deepest parenthesis/unary nesting accepted.
const MAX_DEPTH: usize = 64;

/// An arithmetic error (the shell prints `sh: arithmetic syntax error` and so on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArithError {
    /// Malformed expression.
    #[error("arithmetic syntax error")]
    Syntax,
    /// Division or remainder by zero.
    #[error("divide by zero")]
    DivideByZero,
}

/// Variable access for the evaluator.
pub trait Vars {
    /// A variable's value, if set.
    fn get(&self, name: &str) -> Option<String>;
    /// Sets a variable (`x = 1`, `x += 2`).
    fn set(&mut self, name: &str, value: i64);
}

/// Tokens.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A number.
    Num(i64),
    /// A variable name.
    Name(String),
    /// An operator or parenthesis.
    Op(&'static str),
}

/// Operators, longest first so the tokenizer is greedy.
const OPS: &[&str] = &[
    "<<=", ">>=", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "+=", "-=", "*=", "/=", "%=",
    "&=", "|=", "^=", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "!", "~", "?", ":", "(",
    ")", "=",
];

/// Parses a number the way the shell does: decimal, `0x` hex or leading-`0` octal.
pub fn parse_number(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(hex, 16).ok()? as i64
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()? as i64
    } else {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<i64>().ok()?
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Splits an expression into tokens.
fn tokenize(src: &str) -> Result<Vec<Tok>, ArithError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            out.push(Tok::Num(parse_number(&text).ok_or(ArithError::Syntax)?));
        } else if c == '_' || c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && (chars[i] == '_' || chars[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(Tok::Name(chars[start..i].iter().collect()));
        } else {
            let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
            let op = OPS
                .iter()
                .find(|op| rest.starts_with(**op))
                .ok_or(ArithError::Syntax)?;
            out.push(Tok::Op(op));
            i += op.len();
        }
    }
    Ok(out)
}

/// Evaluates an expression; an empty one is 0.
pub fn eval(src: &str, vars: &mut dyn Vars) -> Result<i64, ArithError> {
    let toks = tokenize(src)?;
    if toks.is_empty() {
        return Ok(0);
    }
    let mut p = Eval {
        toks,
        pos: 0,
        vars,
        depth: 0,
    };
    let v = p.assign(true)?;
    if p.pos != p.toks.len() {
        return Err(ArithError::Syntax);
    }
    Ok(v)
}

/// Evaluator state. `live` is false in the branch not taken by `&&`, `||` and `?:`, where
/// nothing is assigned and division by zero is not an error.
struct Eval<'a> {
    /// Tokens.
    toks: Vec<Tok>,
    /// Cursor.
    pos: usize,
    /// Variables.
    vars: &'a mut dyn Vars,
    /// Nesting.
    depth: usize,
}

/// Binary operators by precedence level, lowest first.
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", "<=", ">", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Eval<'_> {
    /// The next token, if it is an operator.
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.pos) {
            Some(Tok::Op(op)) => Some(op),
            _ => None,
        }
    }

    /// Value of a variable (unset or empty is 0; a non-number is an error).
    fn var(&self, name: &str) -> Result<i64, ArithError> {
        match self.vars.get(name) {
            None => Ok(0),
            Some(v) if v.trim().is_empty() => Ok(0),
            Some(v) => parse_number(&v).ok_or(ArithError::Syntax),
        }
    }

    /// Assignment level (right associative).
    fn assign(&mut self, live: bool) -> Result<i64, ArithError> {
        if let (Some(Tok::Name(name)), Some(Tok::Op(op))) =
            (self.toks.get(self.pos), self.toks.get(self.pos + 1))
            && op.ends_with('=')
            && !matches!(*op, "==" | "!=" | "<=" | ">=")
        {
            let name = name.clone();
            let op: &'static str = op;
            self.pos += 2;
            let rhs = self.assign(live)?;
            let value = if op == "=" {
                rhs
            } else {
                let cur = self.var(&name)?;
                apply(&op[..op.len() - 1], cur, rhs, live)?
            };
            if live {
                self.vars.set(&name, value);
            }
            return Ok(value);
        }
        self.ternary(live)
    }

    /// `c ? a : b`.
    fn ternary(&mut self, live: bool) -> Result<i64, ArithError> {
        let cond = self.binary(0, live)?;
        if self.peek_op() != Some("?") {
            return Ok(cond);
        }
        self.pos += 1;
        let a = self.assign(live && cond != 0)?;
        if self.peek_op() != Some(":") {
            return Err(ArithError::Syntax);
        }
        self.pos += 1;
        let b = self.assign(live && cond == 0)?;
        Ok(if cond != 0 { a } else { b })
    }

    /// Left-associative binary operators from `level` up.
    fn binary(&mut self, level: usize, live: bool) -> Result<i64, ArithError> {
        let Some(ops) = LEVELS.get(level) else {
            return self.unary(live);
        };
        let mut left = self.binary(level + 1, live)?;
        while let Some(op) = self.peek_op().filter(|op| ops.contains(op)) {
            self.pos += 1;
            let right_live = match op {
                "&&" => live && left != 0,
                "||" => live && left == 0,
                _ => live,
            };
            let right = self.binary(level + 1, right_live)?;
            left = apply(op, left, right, right_live)?;
        }
        Ok(left)
    }

    /// Unary operators, parentheses, numbers and names.
    fn unary(&mut self, live: bool) -> Result<i64, ArithError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ArithError::Syntax);
        }
        let r = self.unary_inner(live);
        self.depth -= 1;
        r
    }

    /// Body of [`Eval::unary`].
    fn unary_inner(&mut self, live: bool) -> Result<i64, ArithError> {
        let tok = self.toks.get(self.pos).cloned().ok_or(ArithError::Syntax)?;
        self.pos += 1;
        match tok {
            Tok::Num(n) => Ok(n),
            Tok::Name(name) => self.var(&name),
            Tok::Op("(") => {
                let v = self.assign(live)?;
                if self.peek_op() != Some(")") {
                    return Err(ArithError::Syntax);
                }
                self.pos += 1;
                Ok(v)
            }
            Tok::Op("-") => Ok(self.unary(live)?.wrapping_neg()),
            Tok::Op("+") => self.unary(live),
            Tok::Op("!") => Ok(i64::from(self.unary(live)? == 0)),
            Tok::Op("~") => Ok(!self.unary(live)?),
            Tok::Op(_) => Err(ArithError::Syntax),
        }
    }
}

/// Applies a binary operator (wrapping on overflow).
fn apply(op: &str, a: i64, b: i64, live: bool) -> Result<i64, ArithError> {
    Ok(match op {
        "+" => a.wrapping_add(b),
        "-" => a.wrapping_sub(b),
        "*" => a.wrapping_mul(b),
        "/" | "%" if b == 0 => {
            if live {
                return Err(ArithError::DivideByZero);
            }
            0
        }
        "/" => a.wrapping_div(b),
        "%" => a.wrapping_rem(b),
        "<<" => a.wrapping_shl((b & 63) as u32),
        ">>" => a.wrapping_shr((b & 63) as u32),
        "<" => i64::from(a < b),
        "<=" => i64::from(a <= b),
        ">" => i64::from(a > b),
        ">=" => i64::from(a >= b),
        "==" => i64::from(a == b),
        "!=" => i64::from(a != b),
        "&" => a & b,
        "|" => a | b,
        "^" => a ^ b,
        "&&" => i64::from(a != 0 && b != 0),
        "||" => i64::from(a != 0 || b != 0),
        _ => return Err(ArithError::Syntax),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    impl Vars for HashMap<String, String> {
        fn get(&self, name: &str) -> Option<String> {
            HashMap::get(self, name).cloned()
        }
        fn set(&mut self, name: &str, value: i64) {
            self.insert(name.to_string(), value.to_string());
        }
    }

    #[test]
    fn precedence_and_variables_follow_c() {
        let mut vars: HashMap<String, String> = HashMap::new();
        vars.insert("i".into(), "4".into());
        assert_eq!(eval("1 + 2 * 3", &mut vars), Ok(7));
        assert_eq!(eval("(1 + 2) * 3", &mut vars), Ok(9));
        assert_eq!(eval("i % 3 == 1 ? 10 : 20", &mut vars), Ok(10));
        assert_eq!(eval("i += 1", &mut vars), Ok(5));
        assert_eq!(vars.get("i").map(String::as_str), Some("5"));
        assert_eq!(eval("0x10 + 010", &mut vars), Ok(24));
    }

    #[test]
    fn division_by_zero_is_an_error_but_not_in_a_dead_branch() {
        let mut vars: HashMap<String, String> = HashMap::new();
        assert_eq!(eval("1 / 0", &mut vars), Err(ArithError::DivideByZero));
        assert_eq!(eval("0 && 1 / 0", &mut vars), Ok(0));
    }

    #[test]
    fn overflow_wraps_instead_of_panicking() {
        let mut vars: HashMap<String, String> = HashMap::new();
        assert_eq!(eval("9223372036854775807 + 1", &mut vars), Ok(i64::MIN));
        assert_eq!(
            eval("-9223372036854775807 - 1 / -1", &mut vars),
            Ok(-9223372036854775806)
        );
        assert!(eval("99999999999999999999", &mut vars).is_err());
        assert!(eval(&"(".repeat(1000), &mut vars).is_err());
    }
}
