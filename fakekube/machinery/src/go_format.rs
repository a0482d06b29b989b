//! Values printed the way the Go API server prints them in messages: `%v`, `strconv.Quote`,
//! `encoding/json`.

use serde_json::Value;

/// A value as `field.Error` prints a bad value: strings quoted, numbers and booleans plain,
/// anything else as JSON.
pub fn go_v(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        Value::Number(n) if n.is_i64() => n.to_string(),
        Value::Number(n) => go_float(n.as_f64().unwrap_or(0.0)),
        Value::Bool(b) => b.to_string(),
        other => go_json(other),
    }
}

/// Go's `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)))
            }
            c if go_printable(c) => out.push(c),
            c if u32::from(c) < 0x10000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`.
fn go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

/// The shortest decimal digits and exponent of a finite non-zero float (`1.5` is `("15", 0)`).
fn float_digits(f: f64) -> (String, i32) {
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// Go's `%v` of a float64 (shortest digits, exponent form below 1e-4 and from 1e21).
pub fn go_float(f: f64) -> String {
    go_float_with(f, |exp| !(-4..21).contains(&exp), true)
}

/// Lays out a float the way Go's `strconv` does for `%v` and for `encoding/json`.
fn go_float_with(f: f64, use_exp: impl Fn(i32) -> bool, two_digit_exp: bool) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0");
    }
    let (digits, exp) = float_digits(f);
    if use_exp(exp) {
        let (head, tail) = digits.split_at(1.min(digits.len()));
        let frac = if tail.is_empty() {
            String::new()
        } else {
            format!(".{tail}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        let width = if two_digit_exp { 2 } else { 1 };
        return format!("{sign}{head}{frac}e{esign}{:0width$}", exp.unsigned_abs());
    }
    let n = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    let point = i64::from(exp) + 1;
    let body = if point <= 0 {
        format!(
            "0.{}{digits}",
            "0".repeat(usize::try_from(-point).unwrap_or(0))
        )
    } else if point >= n {
        format!(
            "{digits}{}",
            "0".repeat(usize::try_from(point - n).unwrap_or(0))
        )
    } else {
        let (a, b) = digits.split_at(usize::try_from(point).unwrap_or(0));
        format!("{a}.{b}")
    };
    format!("{sign}{body}")
}

/// Go's `encoding/json` rendering of a decoded value (sorted keys, HTML-safe escapes).
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

/// Appends `s` as Go's `encoding/json` writes a string: quoted, with HTML-safe escapes.
pub fn write_go_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)))
            }
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends [`go_json`] of `v`: what Go's `encoding/json` writes for a value decoded into an
/// `interface{}` (numbers are `float64` there; integers print alike).
pub fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if n.is_i64() => out.push_str(&n.to_string()),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            out.push_str(&go_float_with(f, |exp| !(-6..21).contains(&exp), false));
        }
        Value::String(s) => write_go_string(s, out),
        Value::Array(list) => write_go_array(list, out, write_go_json),
        Value::Object(map) => write_go_map(map, out, write_go_json),
    }
}

/// Appends a JSON array of `items`, each written by `item`.
pub fn write_go_array(
    items: &[Value],
    out: &mut String,
    mut item: impl FnMut(&Value, &mut String),
) {
    out.push('[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        item(x, out);
    }
    out.push(']');
}

/// Appends a JSON object as Go writes a map: keys sorted and escaped as Go does, each value
/// written by `value`.
pub fn write_go_map(
    map: &serde_json::Map<String, Value>,
    out: &mut String,
    mut value: impl FnMut(&Value, &mut String),
) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by_key(|(k, _)| *k);
    out.push('{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_go_string(k, out);
        out.push(':');
        value(v, out);
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_formatting_matches_fmt_and_encoding_json() {
        assert_eq!(
            go_quote("a\"b\\c\n\u{1}é\u{a0}"),
            "\"a\\\"b\\\\c\\n\\x01é\\u00a0\""
        );
        assert_eq!(go_float(-1.5), "-1.5");
        assert_eq!(go_float(1e20), "100000000000000000000");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(123.456e-10), "1.23456e-08");
        assert_eq!(
            go_json(&json!({"b": [1, 2.5, null], "a": "<&>"})),
            r#"{"a":"\u003c\u0026\u003e","b":[1,2.5,null]}"#
        );
        assert_eq!(go_json(&json!(1e-7)), "1e-7");
        assert_eq!(go_json(&json!(1e21)), "1e+21");
        assert_eq!(go_json(&json!(0.000001)), "0.000001");
    }
}
