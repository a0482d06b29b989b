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
    pub fn from_int(n: i64) -> Quantity {
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

/// How a quantity is written, which decides its canonical form as `resource.Quantity`
/// prints it: the suffix family of the text it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuantityFormat {
    /// Decimal SI suffixes (`500m`, `2k`, `1G`) or none.
    #[default]
    DecimalSi,
    /// Binary SI suffixes (`Ki`, `Mi`, `Gi`...).
    BinarySi,
    /// A decimal exponent (`1e3`).
    DecimalExponent,
}

impl QuantityFormat {
    /// The format of a quantity's text, as `resource.ParseQuantity` records it.
    pub fn of(text: &str) -> QuantityFormat {
        let suffix = text
            .trim_start_matches(['+', '-'])
            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        if suffix.len() == 2 && suffix.ends_with('i') {
            QuantityFormat::BinarySi
        } else if suffix.len() > 1 && suffix.starts_with(['e', 'E']) {
            QuantityFormat::DecimalExponent
        } else {
            QuantityFormat::DecimalSi
        }
    }
}

impl Quantity {
    /// `self + other`, or `None` when the two are too far apart to be added exactly.
    pub fn checked_add(self, other: Quantity) -> Option<Quantity> {
        let (a, b, e) = self.aligned(other)?;
        Some(Quantity::new(a.checked_add(b)?, e))
    }

    /// `self - other`, or `None` when the two are too far apart to be subtracted exactly.
    pub fn checked_sub(self, other: Quantity) -> Option<Quantity> {
        let (a, b, e) = self.aligned(other)?;
        Some(Quantity::new(a.checked_sub(b)?, e))
    }

    /// The quantity's approximate value, as `AsApproximateFloat64` gives it.
    pub fn approximate(self) -> f64 {
        self.as_f64()
    }

    /// The canonical text `resource.Quantity.String()` prints for this value in `format`:
    /// the largest suffix of the format that keeps the number whole (`1500m`, `2k`, `1Gi`,
    /// `1536Mi`, `1e3`), nanos rounded up; a binary value below 1024 or with a fraction is
    /// printed in decimal SI, as Go does.
    pub fn canonical(self, format: QuantityFormat) -> String {
        if self.mantissa == 0 {
            return "0".to_string();
        }
        if format == QuantityFormat::BinarySi
            && let Some(text) = self.binary_text()
        {
            return text;
        }
        // Round up to nanos, as Go keeps nine fractional digits at most.
        let (mut m, mut e) = (self.mantissa, self.exponent);
        if e < -9 {
            let Some(div) = u32::try_from(-9 - e)
                .ok()
                .and_then(|s| 10i128.checked_pow(s))
            else {
                return if m > 0 { "1n".into() } else { "0".into() };
            };
            let q = m / div;
            m = if m % div != 0 && m > 0 { q + 1 } else { q };
            e = -9;
            if m == 0 {
                return "0".to_string();
            }
        }
        // The exponent down to a multiple of three, and no higher than exa.
        let target = (e.div_euclid(3) * 3).min(18);
        let scaled = u32::try_from(e - target)
            .ok()
            .and_then(|s| 10i128.checked_pow(s))
            .and_then(|p| m.checked_mul(p));
        let Some(m) = scaled else {
            return format!("{}e{}", self.mantissa, self.exponent);
        };
        let suffix = match (format, target) {
            (_, 0) => String::new(),
            (QuantityFormat::DecimalExponent, t) => format!("e{t}"),
            (_, -9) => "n".into(),
            (_, -6) => "u".into(),
            (_, -3) => "m".into(),
            (_, 3) => "k".into(),
            (_, 6) => "M".into(),
            (_, 9) => "G".into(),
            (_, 12) => "T".into(),
            (_, 15) => "P".into(),
            (_, 18) => "E".into(),
            (_, t) => format!("e{t}"),
        };
        format!("{m}{suffix}")
    }

    /// The binary SI text of a whole value of at least 1024 in magnitude.
    fn binary_text(self) -> Option<String> {
        if self.exponent < 0 {
            return None;
        }
        let mut v = self
            .mantissa
            .checked_mul(10i128.checked_pow(u32::try_from(self.exponent).ok()?)?)?;
        if v.abs() < 1024 {
            return None;
        }
        let mut power = 0;
        while power < 6 && v % 1024 == 0 {
            v /= 1024;
            power += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
        Some(format!("{v}{suffix}"))
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
                let text = q.canonical(QuantityFormat::of(&s));
                let back = Quantity::parse(&text);
                prop_assert!(back.is_ok(), "{} printed {}", s, text);
            }
        }

        #[test]
        fn canonical_text_parses_back_to_the_same_value(m in -10_000_000i64..10_000_000, e in -9i32..12, binary in any::<bool>()) {
            let q = Quantity::new(i128::from(m), e);
            let format = if binary { QuantityFormat::BinarySi } else { QuantityFormat::DecimalSi };
            let text = q.canonical(format);
            prop_assert_eq!(Quantity::parse(&text).ok(), Some(q), "{}", text);
        }
    }

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn quantities_print_in_the_canonical_form_of_their_format() {
        let canon = |s: &str| q(s).canonical(QuantityFormat::of(s));
        assert_eq!(canon("1000m"), "1");
        assert_eq!(canon("0.5"), "500m");
        assert_eq!(canon("1500"), "1500");
        assert_eq!(canon("2000"), "2k");
        assert_eq!(canon("1024Mi"), "1Gi");
        assert_eq!(canon("1536Mi"), "1536Mi");
        assert_eq!(canon("512"), "512");
        assert_eq!(canon("0.5Gi"), "512Mi");
        assert_eq!(canon("1e3"), "1e3");
        assert_eq!(canon("0"), "0");
        assert_eq!(canon("-250m"), "-250m");
        assert_eq!(canon("0.1n"), "1n");
        assert_eq!(q("100Mi").canonical(QuantityFormat::DecimalSi), "104857600");
        assert_eq!(q("1k").canonical(QuantityFormat::BinarySi), "1k");
        assert_eq!(
            q("250m")
                .checked_add(q("0.5"))
                .map(|s| s.canonical(QuantityFormat::DecimalSi)),
            Some("750m".into())
        );
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
