//! Resource quantities (`resource.Quantity`) as far as the plugins compare them: parsed to an
//! exact value so that `1`, `1000m` and `1e3m` are equal, as `apiequality.Semantic` compares
//! them.

use serde_json::Value;

/// A quantity's value in units of 10⁻⁹ (the API server's smallest scale), rounded up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Nanos(pub(crate) i128);

/// Parses a quantity as JSON carries it (a string, or a number); `None` when it is not one.
pub(crate) fn parse(v: &Value) -> Option<Nanos> {
    match v {
        Value::String(s) => parse_str(s),
        Value::Number(n) => parse_str(&n.to_string()),
        _ => None,
    }
}

fn parse_str(s: &str) -> Option<Nanos> {
    let (sign, rest) = match s.as_bytes().first()? {
        b'-' => (-1, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(end);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let digits = format!("{int}{frac}");
    let mantissa: i128 = digits.parse().ok()?;
    // value = mantissa × 10^(exp10 − frac digits) × 2^exp2
    let (mut exp10, exp2): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        e if e.starts_with(['e', 'E']) => (e[1..].parse().ok()?, 0),
        _ => return None,
    };
    exp10 -= i32::try_from(frac.len()).ok()?;
    exp10 += 9;
    let mut value = mantissa.checked_mul(1i128.checked_shl(exp2)?)?;
    if exp10 >= 0 {
        value = value.checked_mul(10i128.checked_pow(u32::try_from(exp10).ok()?)?)?;
    } else {
        let div = 10i128.checked_pow(u32::try_from(-exp10).ok()?)?;
        value = (value + div - 1) / div;
    }
    Some(Nanos(sign * value))
}

/// Whether two resource lists hold the same resources with equal quantities.
pub(crate) fn same_list(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.get(k).is_some_and(|w| match (parse(v), parse(w)) {
                (Some(x), Some(y)) => x == y,
                _ => v == w,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities_compare_by_value_whatever_their_suffix() {
        assert_eq!(parse(&json!("1")), parse(&json!("1000m")));
        assert_eq!(parse(&json!("1Ki")), parse(&json!(1024)));
        assert_eq!(parse(&json!("1e3")), parse(&json!("1k")));
        assert_eq!(parse(&json!("0.5")), parse(&json!("500m")));
        assert_eq!(parse(&json!("-1")), Some(Nanos(-1_000_000_000)));
        assert_eq!(parse(&json!("1x")), None);
        assert!(same_list(
            &json!({ "cpu": "250m", "memory": "120Mi" }),
            &json!({ "memory": "125829120", "cpu": "0.25" })
        ));
    }
}
