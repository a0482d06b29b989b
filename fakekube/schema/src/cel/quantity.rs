//! Kubernetes' CEL quantity library: `quantity()`, `isQuantity()` and the methods of a
//! quantity (`isInteger`, `asInteger`, `asApproximateFloat`, `sign`, `add`, `sub`,
//! `isGreaterThan`, `isLessThan`, `compareTo`), over resource quantities as
//! `resource.Quantity` parses them (`500m`, `1Gi`, `1e3`).

use cel::ExecutionError;
use cel::objects::Opaque;
use std::cmp::Ordering;

/// The CEL type name of a quantity.
pub(super) const TYPE_NAME: &str = "kubernetes.Quantity";

/// A quantity, exactly: `mantissa × 10^exponent`, normalized (no trailing zero in the
/// mantissa), so that equal quantities are equal values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    exponent: i32,
}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// Why a text is not a quantity, as `resource.ParseQuantity` says it.
const NOT_A_QUANTITY: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

impl Quantity {
    /// `mantissa × 10^exponent`, normalized.
    fn new(mut mantissa: i128, mut exponent: i32) -> Quantity {
        if mantissa == 0 {
            return Quantity {
                mantissa: 0,
                exponent: 0,
            };
        }
        while mantissa % 10 == 0 {
            mantissa /= 10;
            exponent += 1;
        }
        Quantity { mantissa, exponent }
    }

    /// Parses a quantity as `resource.ParseQuantity` accepts it.
    pub fn parse(text: &str) -> Result<Quantity, String> {
        let bad = || NOT_A_QUANTITY.to_string();
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let number_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let (number, suffix) = rest.split_at(number_len);
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
            return Err(bad());
        }
        let digits = format!("{int_part}{frac_part}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 36 {
            return Err(bad());
        }
        let mut mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| bad())?
        };
        let mut exponent = -i32::try_from(frac_part.len()).map_err(|_| bad())?;
        let binary = |power: u32| 1024i128.checked_pow(power);
        let scale: Option<(i128, i32)> = match suffix {
            "" => Some((1, 0)),
            "n" => Some((1, -9)),
            "u" => Some((1, -6)),
            "m" => Some((1, -3)),
            "k" => Some((1, 3)),
            "M" => Some((1, 6)),
            "G" => Some((1, 9)),
            "T" => Some((1, 12)),
            "P" => Some((1, 15)),
            "E" => Some((1, 18)),
            "Ki" => binary(1).map(|m| (m, 0)),
            "Mi" => binary(2).map(|m| (m, 0)),
            "Gi" => binary(3).map(|m| (m, 0)),
            "Ti" => binary(4).map(|m| (m, 0)),
            "Pi" => binary(5).map(|m| (m, 0)),
            "Ei" => binary(6).map(|m| (m, 0)),
            s if s.starts_with(['e', 'E']) => {
                let e: i32 = s[1..].parse().map_err(|_| bad())?;
                Some((1, e))
            }
            _ => None,
        };
        let (multiplier, shift) = scale.ok_or_else(bad)?;
        mantissa = mantissa.checked_mul(multiplier).ok_or_else(bad)?;
        exponent = exponent.checked_add(shift).ok_or_else(bad)?;
        if negative {
            mantissa = -mantissa;
        }
        Ok(Quantity::new(mantissa, exponent))
    }

    /// The quantity of an integer.
    pub(super) fn from_int(n: i64) -> Quantity {
        Quantity::new(i128::from(n), 0)
    }

    /// Both mantissas at the smaller exponent, if they fit.
    fn aligned(self, other: Quantity) -> Option<(i128, i128, i32)> {
        let e = self.exponent.min(other.exponent);
        let scale = |q: Quantity| {
            let shift = u32::try_from(q.exponent - e).ok()?;
            q.mantissa.checked_mul(10i128.checked_pow(shift)?)
        };
        Some((scale(self)?, scale(other)?, e))
    }

    /// The quantity's approximate value.
    pub(super) fn as_f64(self) -> f64 {
        // The mantissa has at most 38 digits: a float holds it approximately, as intended.
        #[expect(
            clippy::cast_precision_loss,
            reason = "asApproximateFloat is approximate"
        )]
        let m = self.mantissa as f64;
        m * 10f64.powi(self.exponent)
    }

    /// Compares two quantities.
    pub fn compare(self, other: Quantity) -> Ordering {
        match self.aligned(other) {
            Some((a, b, _)) => a.cmp(&b),
            None => self
                .as_f64()
                .partial_cmp(&other.as_f64())
                .unwrap_or(Ordering::Equal),
        }
    }

    /// Whether it is a whole number.
    pub(super) fn is_integer(self) -> bool {
        self.exponent >= 0
    }

    /// The whole number it is, if it is one that fits an int64.
    pub(super) fn as_integer(self) -> Result<i64, ExecutionError> {
        let fail = || {
            ExecutionError::function_error(
                "asInteger",
                "cannot convert value to integer, it is either not an integer or it is too large",
            )
        };
        if !self.is_integer() {
            return Err(fail());
        }
        let shift = u32::try_from(self.exponent).map_err(|_| fail())?;
        let v = self
            .mantissa
            .checked_mul(10i128.checked_pow(shift).ok_or_else(fail)?)
            .ok_or_else(fail)?;
        i64::try_from(v).map_err(|_| fail())
    }

    /// -1, 0 or 1.
    pub fn sign(self) -> i64 {
        match self.mantissa.cmp(&0) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    }

    /// `self + other` (`self - other` with `negate`).
    pub(super) fn add(self, other: Quantity, negate: bool) -> Result<Quantity, ExecutionError> {
        let (a, b, e) = self.aligned(other).ok_or_else(|| {
            ExecutionError::function_error("add", "the quantities are too far apart to add")
        })?;
        let b = if negate { -b } else { b };
        let sum = a
            .checked_add(b)
            .ok_or_else(|| ExecutionError::function_error("add", "overflow"))?;
        Ok(Quantity::new(sum, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parsing_never_panics_and_what_parses_compares_equal_to_itself(s in "[-+]?[0-9.]{0,12}[eEinumkKMGTP]{0,2}[-+]?[0-9]{0,3}") {
            if let Ok(q) = Quantity::parse(&s) {
                prop_assert_eq!(q.compare(q), Ordering::Equal);
                prop_assert_eq!(q.add(q, true).map(|z| z.sign()).ok(), Some(0));
            }
        }
    }

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn quantities_parse_and_compare_as_kubernetes_does() {
        assert_eq!(q("1Gi"), q("1024Mi"));
        assert_eq!(q("1k"), q("1000"));
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("500m").compare(q("1")), Ordering::Less);
        assert_eq!(q("-1.5").sign(), -1);
        assert!(q("2").is_integer());
        assert!(!q("1500m").is_integer());
        assert_eq!(q("1.5k").as_integer().ok(), Some(1500));
        assert_eq!(q("1").add(q("500m"), false).ok(), Some(q("1500m")));
        assert_eq!(q("1").add(q("500m"), true).ok(), Some(q("0.5")));
        for bad in ["", "1.2.3", "1x", "Gi", "+", "1 Gi"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
    }
}
