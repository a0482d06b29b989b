//! awk's values: numbers, strings, and the "numeric strings" that input gives (fields,
//! `getline`, `split`, `ARGV`, `ENVIRON`, `-v`), which compare as numbers when they look like
//! one. Conversions as POSIX says: a string's number is its longest numeric prefix; a number's
//! string is an integer's digits or `CONVFMT` (`OFMT` for `print`).

use std::cmp::Ordering;

use super::super::print::format_general;
use super::format::{FormatArg, sprintf};

/// A value.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) enum Value {
    /// Never assigned: both `0` and `""`.
    #[default]
    Uninit,
    /// A number.
    Num(f64),
    /// A string (from the program, or computed).
    Str(String),
    /// A string from input, numeric if it looks like a number.
    StrNum(String),
}

/// Whether a string looks like a number as a whole (blanks around allowed).
pub(super) fn looks_numeric(s: &str) -> bool {
    let t = s.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\n');
    if t.is_empty() {
        return false;
    }
    let (n, used) = prefix_number(t);
    used == t.len() && n.is_finite()
}

/// The number at the start of a string (after blanks) and how many bytes of the trimmed
/// text it used: `strtod` without hex, `inf` or `nan`.
fn prefix_number(t: &str) -> (f64, usize) {
    let b = t.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits_start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let mut mantissa = i > digits_start;
    if b.get(i) == Some(&b'.') {
        let dot = i;
        i += 1;
        let frac_start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == frac_start && !mantissa {
            i = dot;
        } else {
            mantissa = true;
        }
    }
    if !mantissa {
        return (0.0, 0);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
            i = j;
        }
    }
    (t[..i].parse().unwrap_or(0.0), i)
}

/// A string's numeric value: its longest numeric prefix, 0 if none.
pub(super) fn str_to_num(s: &str) -> f64 {
    prefix_number(s.trim_start_matches([' ', '\t', '\n'])).0
}

/// A number as a string: an integral value's digits, else `fmt` (`CONVFMT` or `OFMT`).
pub(super) fn num_to_str(n: f64, fmt: &str) -> String {
    if n == n.trunc() && n.abs() < 1e16 {
        return format!("{}", n as i64);
    }
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if n.is_infinite() {
        return if n > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if fmt == "%.6g" {
        return format_general(n, 6, false, false);
    }
    sprintf(fmt, &[Value::Num(n)], "%.6g")
}

impl Value {
    /// The value as a number.
    pub(super) fn num(&self) -> f64 {
        match self {
            Value::Uninit => 0.0,
            Value::Num(n) => *n,
            Value::Str(s) | Value::StrNum(s) => str_to_num(s),
        }
    }

    /// The value as a string, numbers through `convfmt`.
    pub(super) fn str(&self, convfmt: &str) -> String {
        match self {
            Value::Uninit => String::new(),
            Value::Num(n) => num_to_str(*n, convfmt),
            Value::Str(s) | Value::StrNum(s) => s.clone(),
        }
    }

    /// Whether the value is true: a non-zero number, a non-empty string (a numeric string by
    /// its number).
    pub(super) fn truthy(&self) -> bool {
        match self {
            Value::Uninit => false,
            Value::Num(n) => *n != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::StrNum(s) => {
                if looks_numeric(s) {
                    str_to_num(s) != 0.0
                } else {
                    !s.is_empty()
                }
            }
        }
    }

    /// Whether comparisons treat it as a number.
    fn numeric(&self) -> bool {
        match self {
            Value::Uninit | Value::Num(_) => true,
            Value::Str(_) => false,
            Value::StrNum(s) => looks_numeric(s),
        }
    }
}

impl FormatArg for Value {
    fn number(&self) -> f64 {
        self.num()
    }
    fn text(&self, convfmt: &str) -> String {
        self.str(convfmt)
    }
    fn is_number(&self) -> bool {
        matches!(self, Value::Num(_))
    }
}

/// Compares two values as POSIX awk does: numerically when both are numbers (or numeric
/// strings, or uninitialised), else as strings (numbers through `CONVFMT`).
pub(super) fn compare(a: &Value, b: &Value, convfmt: &str) -> Ordering {
    if a.numeric() && b.numeric() {
        a.num().partial_cmp(&b.num()).unwrap_or(Ordering::Equal)
    } else {
        a.str(convfmt).cmp(&b.str(convfmt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_become_numbers_by_their_numeric_prefix() {
        assert_eq!(str_to_num(" 12abc"), 12.0);
        assert_eq!(str_to_num("abc"), 0.0);
        assert_eq!(str_to_num("-3.5e2x"), -350.0);
        assert_eq!(str_to_num("."), 0.0);
        assert!(looks_numeric(" 10 "));
        assert!(!looks_numeric("10a"));
        assert!(!looks_numeric(""));
    }

    #[test]
    fn numbers_become_strings_as_integers_or_through_convfmt() {
        assert_eq!(num_to_str(3.0, "%.6g"), "3");
        assert_eq!(num_to_str(0.1 + 0.2, "%.6g"), "0.3");
        assert_eq!(num_to_str(1e20, "%.6g"), "1e+20");
        assert_eq!(num_to_str(-0.5, "%.2f"), "-0.50");
    }

    #[test]
    fn comparison_is_numeric_only_between_numbers() {
        let n = |s: &str| Value::StrNum(s.to_string());
        assert_eq!(compare(&n("10"), &n("9"), "%.6g"), Ordering::Greater);
        assert_eq!(
            compare(&Value::Str("10".into()), &n("9"), "%.6g"),
            Ordering::Less
        );
        assert_eq!(
            compare(&Value::Uninit, &Value::Num(0.0), "%.6g"),
            Ordering::Equal
        );
        assert_eq!(
            compare(&Value::Uninit, &Value::Str(String::new()), "%.6g"),
            Ordering::Equal
        );
    }
}
