//! Resource quantities (`resource.Quantity`) as the plugins compare them: by exact value, so
//! that `1`, `1000m` and `1e3m` are equal, as `apiequality.Semantic` compares them. The
//! parsing is the CRD schemas' ([`Quantity`], the same as their CEL quantity library's).

use fakekube_schema::Quantity;
use serde_json::Value;

/// Parses a quantity as JSON carries it (a string, or a number); the error is
/// `resource.ParseQuantity`'s.
pub(crate) fn parse(v: &Value) -> Result<Quantity, String> {
    match v {
        Value::String(s) => Quantity::parse(s),
        Value::Number(n) => Quantity::parse(&n.to_string()),
        _ => Quantity::parse(&v.to_string()),
    }
}

/// Whether two resource lists hold the same resources with equal quantities.
pub(crate) fn same_list(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.get(k).is_some_and(|w| match (parse(v), parse(w)) {
                (Ok(x), Ok(y)) => x == y,
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
        assert_eq!(parse(&json!("-1")), parse(&json!("-1000000000n")));
        assert_eq!(parse(&json!("-1")).map(Quantity::sign), Ok(-1));
        assert!(parse(&json!("1x")).is_err());
        assert!(same_list(
            &json!({ "cpu": "250m", "memory": "120Mi" }),
            &json!({ "memory": "125829120", "cpu": "0.25" })
        ));
    }
}
