//! awk's `printf` and `sprintf`: C's conversions (`c d i o u x X e E f F g G s %`) with flags,
//! width and precision (`*` takes them from the arguments), over awk values. The padding and
//! the floating-point forms are the `printf` program's.

use super::super::print::{self, MAX_WIDTH, Spec, format_exp, format_general, pad};

/// What `printf` needs of an argument (awk's values implement it).
pub(super) trait FormatArg {
    /// The argument as a number.
    fn number(&self) -> f64;
    /// The argument as a string (numbers through `convfmt`).
    fn text(&self, convfmt: &str) -> String;
    /// Whether it is a number (for `%c`: a character code rather than a first character).
    fn is_number(&self) -> bool;
}

/// A missing argument: 0 and "".
struct Missing;

impl FormatArg for Missing {
    fn number(&self) -> f64 {
        0.0
    }
    fn text(&self, _: &str) -> String {
        String::new()
    }
    fn is_number(&self) -> bool {
        false
    }
}

/// Formats `args` by `fmt`; missing arguments count as empty (0, ""), extra ones are ignored.
pub(super) fn sprintf<A: FormatArg>(fmt: &str, args: &[A], convfmt: &str) -> String {
    let f: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut next = 0usize;
    let take = |next: &mut usize| -> &dyn FormatArg {
        let v: &dyn FormatArg = match args.get(*next) {
            Some(a) => a,
            None => &Missing,
        };
        *next += 1;
        v
    };
    let mut i = 0;
    while let Some(&c) = f.get(i) {
        i += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        if f.get(i) == Some(&'%') {
            out.push('%');
            i += 1;
            continue;
        }
        let start = i - 1;
        let mut spec = Spec::default();
        while let Some(&fl) = f.get(i) {
            match fl {
                '-' => spec.left = true,
                '0' => spec.zero = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '#' => spec.alt = true,
                _ => break,
            }
            i += 1;
        }
        let number = |i: &mut usize, next: &mut usize, spec: &mut Spec| -> Option<usize> {
            if f.get(*i) == Some(&'*') {
                *i += 1;
                let v = take(next).number();
                if v < 0.0 {
                    spec.left = true;
                }
                return Some((v.abs() as usize).min(MAX_WIDTH));
            }
            let mut n: Option<usize> = None;
            while let Some(d) = f.get(*i).and_then(|c| c.to_digit(10)) {
                n = Some(
                    n.unwrap_or(0)
                        .saturating_mul(10)
                        .saturating_add(d as usize)
                        .min(MAX_WIDTH),
                );
                *i += 1;
            }
            n
        };
        spec.width = number(&mut i, &mut next, &mut spec);
        if f.get(i) == Some(&'.') {
            i += 1;
            let mut ignored = Spec::default();
            spec.precision = Some(number(&mut i, &mut next, &mut ignored).unwrap_or(0));
        }
        while matches!(f.get(i), Some('l' | 'h' | 'L' | 'q' | 'j' | 'z')) {
            i += 1;
        }
        let Some(&conv) = f.get(i) else {
            // An unfinished conversion is printed as written.
            out.extend(&f[start..]);
            break;
        };
        i += 1;
        let text = match conv {
            's' => {
                let s = take(&mut next).text(convfmt);
                let s = match spec.precision {
                    Some(p) => s.chars().take(p).collect(),
                    None => s,
                };
                pad(&spec, s, false)
            }
            'c' => {
                let v = take(&mut next);
                let ch = if v.is_number() {
                    char::from_u32(v.number() as u32)
                        .map(String::from)
                        .unwrap_or_default()
                } else {
                    v.text(convfmt)
                        .chars()
                        .next()
                        .map(String::from)
                        .unwrap_or_default()
                };
                pad(&spec, ch, false)
            }
            'd' | 'i' | 'o' | 'u' | 'x' | 'X' => integer(&mut spec, conv, take(&mut next).number()),
            'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
                let v = take(&mut next).number();
                let p = spec.precision.unwrap_or(6).min(1000);
                let body = match conv {
                    'f' | 'F' if v.is_finite() => format!("{v:.p$}"),
                    'e' | 'E' if v.is_finite() => format_exp(v, p, conv == 'E'),
                    _ => format_general(v, p, spec.alt, conv.is_ascii_uppercase()),
                };
                let body = if v >= 0.0 && spec.plus {
                    format!("+{body}")
                } else if v >= 0.0 && spec.space {
                    format!(" {body}")
                } else {
                    body
                };
                pad(&spec, body, v.is_finite())
            }
            other => {
                // Not a conversion: printed as written.
                let mut s: String = f[start..i - 1].iter().collect();
                s.push(other);
                s
            }
        };
        out.push_str(&text);
    }
    out
}

/// `%d %i %o %u %x %X` of a number (truncated toward zero; negative values of the unsigned
/// conversions wrap as C's `long` does).
fn integer(spec: &mut Spec, conv: char, v: f64) -> String {
    let n = if v.is_nan() {
        0
    } else {
        v.clamp(i64::MIN as f64, i64::MAX as f64) as i64
    };
    print::integer(spec, conv, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test argument.
    enum Value {
        Num(f64),
        Str(String),
    }

    impl FormatArg for Value {
        fn number(&self) -> f64 {
            match self {
                Value::Num(n) => *n,
                Value::Str(s) => s.parse().unwrap_or(0.0),
            }
        }
        fn text(&self, _: &str) -> String {
            match self {
                Value::Num(n) => n.to_string(),
                Value::Str(s) => s.clone(),
            }
        }
        fn is_number(&self) -> bool {
            matches!(self, Value::Num(_))
        }
    }

    fn f(fmt: &str, args: &[Value]) -> String {
        sprintf(fmt, args, "%.6g")
    }

    #[test]
    fn conversions_format_as_c_does() {
        let n = Value::Num;
        let s = |t: &str| Value::Str(t.to_string());
        assert_eq!(
            f(
                "%d|%5.2f|%-4s|%x",
                &[n(42.9), n(1.23456), s("ab"), n(255.0)]
            ),
            "42| 1.23|ab  |ff"
        );
        assert_eq!(f("%c%c", &[n(65.0), s("hello")]), "Ah");
        assert_eq!(
            f("%05d|%+d|%e", &[n(-42.0), n(5.0), n(1234.5)]),
            "-0042|+5|1.234500e+03"
        );
        assert_eq!(
            f("%*d|%.*f", &[n(4.0), n(7.0), n(1.0), n(2.25)]),
            "   7|2.2"
        );
        assert_eq!(f("%s %s", &[s("only")]), "only ");
        assert_eq!(f("100%% %q %", &[]), "100% %q %");
        assert_eq!(f("%g", &[n(0.0001)]), "0.0001");
    }
}
