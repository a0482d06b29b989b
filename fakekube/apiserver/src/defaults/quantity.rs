//! Resource quantities (`resource.Quantity`) as the plugins compare them: by exact value, so
//! that `1`, `1000m` and `1e3m` are equal, as `apiequality.Semantic` compares them. The
//! parsing is the CRD schemas' ([`Quantity`], the same as their CEL quantity library's).

use fakekube_schema::{Quantity, QuantityFormat};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

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

/// A quantity with the format its text was written in, as `resource.Quantity` keeps both:
/// what the plugins add up and print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Amount {
    /// The exact value.
    pub(crate) value: Quantity,
    /// The suffix family it prints in.
    pub(crate) format: QuantityFormat,
}

impl Amount {
    /// Zero, printed as `0`.
    pub(crate) fn zero() -> Amount {
        Amount::of_int(0)
    }

    /// A whole number of things (pods, services).
    pub(crate) fn of_int(n: i64) -> Amount {
        Amount {
            value: Quantity::from_int(n),
            format: QuantityFormat::DecimalSi,
        }
    }

    /// Reads a quantity as JSON carries it.
    pub(crate) fn read(v: &Value) -> Result<Amount, String> {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Ok(Amount {
            value: parse(v)?,
            format: QuantityFormat::of(&text),
        })
    }

    /// `self + other`, in `self`'s format unless `self` is zero (Go's `Quantity.Add`); an
    /// overflow saturates to `self`.
    #[must_use]
    pub(crate) fn plus(self, other: Amount) -> Amount {
        let format = if self.value.sign() == 0 {
            other.format
        } else {
            self.format
        };
        Amount {
            value: self.value.checked_add(other.value).unwrap_or(self.value),
            format,
        }
    }

    /// The greater of the two (the first when equal).
    #[must_use]
    pub(crate) fn max(self, other: Amount) -> Amount {
        if other.value.compare(self.value).is_gt() {
            other
        } else {
            self
        }
    }

    /// Compares the values.
    pub(crate) fn cmp_value(self, other: Amount) -> std::cmp::Ordering {
        self.value.compare(other.value)
    }

    /// The canonical text (`resource.Quantity.String()`).
    pub(crate) fn text(self) -> String {
        self.value.canonical(self.format)
    }
}

/// A resource list (`requests`, `spec.hard`), by resource name in order.
pub(crate) type ResourceList = BTreeMap<String, Amount>;

/// Reads a resource list, skipping entries that are not quantities (validation reports them).
pub(crate) fn read_list(v: Option<&Value>) -> ResourceList {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, q)| Amount::read(q).ok().map(|a| (k.clone(), a)))
                .collect()
        })
        .unwrap_or_default()
}

/// A resource list as JSON, each quantity in its canonical text.
pub(crate) fn write_list(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, a)| (k.clone(), Value::String(a.text())))
            .collect::<Map<String, Value>>(),
    )
}

/// `key=value` pairs in key order joined by commas, as the quota admission's messages print
/// a resource list.
pub(crate) fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, a)| format!("{k}={}", a.text()))
        .collect::<Vec<_>>()
        .join(",")
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
        assert_eq!(
            Amount::zero()
                .plus(Amount::read(&json!("64Mi")).unwrap_or_else(|e| panic!("{e}")))
                .text(),
            "64Mi"
        );
        assert!(same_list(
            &json!({ "cpu": "250m", "memory": "120Mi" }),
            &json!({ "memory": "125829120", "cpu": "0.25" })
        ));
    }
}
