//! Programs that print their arguments: `echo` and `printf` (with C's conversions).

use super::cli::{emit, usage};
use fakekube_runtime::process::Process;
use fakekube_runtime::shell::arith::parse_number;

/// Largest field width or precision `printf` honours.
pub(super) const MAX_WIDTH: usize = 1 << 20;

/// Interprets `echo -e` / `printf %b` escapes; the flag is set when `\c` ends all output.
fn backslash_escapes(s: &str, out: &mut Vec<u8>) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(&e) = bytes.get(i) else {
            out.push(b'\\');
            break;
        };
        i += 1;
        match e {
            b'\\' => out.push(b'\\'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'c' => return true,
            b'e' => out.push(27),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                // `\0NNN` (echo) or `\NNN`: up to three octal digits after an optional 0.
                let mut v: u32 = 0;
                let mut digits = 0;
                if e != b'0' {
                    v = u32::from(e - b'0');
                    digits = 1;
                }
                while digits < 3 {
                    match bytes.get(i) {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                            digits += 1;
                        }
                        _ => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            b'x' => {
                let mut v: u32 = 0;
                let mut digits = 0;
                while digits < 2 {
                    match bytes.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            i += 1;
                            digits += 1;
                        }
                        None => break,
                    }
                }
                if digits == 0 {
                    out.extend_from_slice(b"\\x");
                } else {
                    out.push((v & 0xff) as u8);
                }
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    false
}

/// `echo [-neE] [arg…]`.
pub(crate) async fn echo(proc: Process) -> i32 {
    let args = proc.args();
    let mut newline = true;
    let mut escapes = false;
    let mut start = 0;
    for a in args {
        if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'))
        {
            for c in a[1..].chars() {
                match c {
                    'n' => newline = false,
                    'e' => escapes = true,
                    _ => escapes = false,
                }
            }
            start += 1;
        } else {
            break;
        }
    }
    let mut out = Vec::new();
    let mut stopped = false;
    for (i, a) in args[start..].iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        if escapes {
            if backslash_escapes(a, &mut out) {
                stopped = true;
                break;
            }
        } else {
            out.extend_from_slice(a.as_bytes());
        }
    }
    if newline && !stopped {
        out.push(b'\n');
    }
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// A parsed `printf` conversion specification (awk's `printf` shares it).
#[derive(Debug, Default, Clone)]
pub(super) struct Spec {
    /// `-`.
    pub(super) left: bool,
    /// `0`.
    pub(super) zero: bool,
    /// `+`.
    pub(super) plus: bool,
    /// ` `.
    pub(super) space: bool,
    /// `#`.
    pub(super) alt: bool,
    /// Field width.
    pub(super) width: Option<usize>,
    /// Precision.
    pub(super) precision: Option<usize>,
}

/// Pads a converted value to the spec's width.
pub(super) fn pad(spec: &Spec, body: String, numeric: bool) -> String {
    let width = spec.width.unwrap_or(0).min(MAX_WIDTH);
    let len = body.chars().count();
    if len >= width {
        return body;
    }
    let fill = width - len;
    if spec.left {
        format!("{body}{}", " ".repeat(fill))
    } else if spec.zero && numeric {
        let (sign, digits) = match body.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (c.to_string(), body[1..].to_string()),
            _ => (String::new(), body.clone()),
        };
        let (prefix, digits) = match digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            Some(rest) => (digits[..2].to_string(), rest.to_string()),
            None => (String::new(), digits),
        };
        format!("{sign}{prefix}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{body}", " ".repeat(fill))
    }
}

/// `%d %i %o %u %x %X` of `n`, with `spec`'s precision, flags and width (a precision turns
/// off `0` padding; negative values of the unsigned conversions wrap as C's `long` does).
pub(super) fn integer(spec: &mut Spec, conv: char, n: i64) -> String {
    let signed = matches!(conv, 'd' | 'i');
    let (neg, mag) = if signed {
        (n < 0, n.unsigned_abs())
    } else {
        (false, n as u64)
    };
    let mut digits = match conv {
        'o' => format!("{mag:o}"),
        'x' => format!("{mag:x}"),
        'X' => format!("{mag:X}"),
        _ => mag.to_string(),
    };
    if let Some(p) = spec.precision {
        let p = p.min(MAX_WIDTH);
        if digits.len() < p {
            digits = format!("{}{digits}", "0".repeat(p - digits.len()));
        }
        spec.zero = false;
    }
    if spec.alt && mag != 0 {
        match conv {
            'x' => digits = format!("0x{digits}"),
            'X' => digits = format!("0X{digits}"),
            'o' if !digits.starts_with('0') => digits = format!("0{digits}"),
            _ => {}
        }
    }
    let sign = if neg {
        "-"
    } else if spec.plus && signed {
        "+"
    } else if spec.space && signed {
        " "
    } else {
        ""
    };
    pad(spec, format!("{sign}{digits}"), true)
}

/// C-style `%e` formatting.
pub(super) fn format_exp(v: f64, precision: usize, upper: bool) -> String {
    let s = format!("{v:.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    let out = format!("{mantissa}e{sign}{:02}", exp.abs());
    if upper { out.to_uppercase() } else { out }
}

/// C-style `%g` formatting: `%e` when the exponent (after rounding to `precision`
/// significant digits) is below -4 or at least the precision, `%f` otherwise; trailing zeros
/// dropped unless `alt`.
pub(super) fn format_general(v: f64, precision: usize, alt: bool, upper: bool) -> String {
    let p = precision.max(1);
    if !v.is_finite() {
        let s = if v.is_nan() {
            "nan"
        } else if v > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        return if upper {
            s.to_uppercase()
        } else {
            s.to_string()
        };
    }
    if v == 0.0 {
        return if alt {
            format!("{:.*}", p - 1, 0.0)
        } else {
            "0".into()
        };
    }
    // The exponent %e would show, rounding included (9.9999995 is 1.00000e+01).
    let e_form = format!("{v:.prec$e}", prec = p - 1);
    let exp: i64 = e_form
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let strip = |s: String| {
        if alt || !s.contains('.') {
            return s;
        }
        let (num, rest) = match s.find(['e', 'E']) {
            Some(i) => (s[..i].to_string(), s[i..].to_string()),
            None => (s.clone(), String::new()),
        };
        let num = num.trim_end_matches('0').trim_end_matches('.').to_string();
        format!("{num}{rest}")
    };
    if exp < -4 || exp >= p as i64 {
        strip(format_exp(v, p - 1, upper))
    } else {
        let decimals = usize::try_from(p as i64 - 1 - exp).unwrap_or(0);
        strip(format!("{v:.decimals$}"))
    }
}

/// Parses a `printf` integer argument (`'c` gives the character code); `Err` carries the value to
/// use after a warning.
fn int_arg(a: &str) -> Result<i64, i64> {
    if let Some(rest) = a.strip_prefix('\'').or_else(|| a.strip_prefix('"')) {
        return Ok(rest.chars().next().map(|c| c as i64).unwrap_or(0));
    }
    if a.trim().is_empty() {
        return Ok(0);
    }
    parse_number(a).ok_or_else(|| {
        let digits: String = a
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse().unwrap_or(0)
    })
}

/// Parses a `printf` floating-point argument.
fn float_arg(a: &str) -> Result<f64, f64> {
    if let Some(rest) = a.strip_prefix('\'').or_else(|| a.strip_prefix('"')) {
        return Ok(rest
            .chars()
            .next()
            .map(|c| f64::from(c as u32))
            .unwrap_or(0.0));
    }
    if a.trim().is_empty() {
        return Ok(0.0);
    }
    a.trim().parse::<f64>().map_err(|_| 0.0)
}

/// Runs a `printf` format over the arguments (reusing it while arguments remain).
/// Returns the output and whether any argument was malformed.
fn run_printf(fmt: &str, args: &[String], warn: &mut Vec<String>) -> Vec<u8> {
    let mut out = Vec::new();
    let f: Vec<char> = fmt.chars().collect();
    let mut next = 0usize;
    loop {
        let start_next = next;
        let mut i = 0;
        while i < f.len() {
            let c = f[i];
            i += 1;
            if c == '\\' {
                let mut esc = String::from('\\');
                if let Some(&n) = f.get(i) {
                    esc.push(n);
                    i += 1;
                    if n.is_digit(8) || n == 'x' {
                        while esc.len() < 5 && f.get(i).is_some_and(|d| d.is_ascii_hexdigit()) {
                            esc.push(f[i]);
                            i += 1;
                        }
                    }
                }
                // Octal escapes in formats take up to three digits without a leading 0.
                if backslash_escapes(&esc, &mut out) {
                    return out;
                }
                continue;
            }
            if c != '%' {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            if f.get(i) == Some(&'%') {
                out.push(b'%');
                i += 1;
                continue;
            }
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
            let take_arg = |next: &mut usize| {
                let a = args.get(*next).cloned();
                if a.is_some() {
                    *next += 1;
                }
                a
            };
            let number = |i: &mut usize, next: &mut usize| -> Option<usize> {
                if f.get(*i) == Some(&'*') {
                    *i += 1;
                    let v = take_arg(next)
                        .map(|a| int_arg(&a).unwrap_or_else(|e| e))
                        .unwrap_or(0);
                    return Some(usize::try_from(v.max(0)).unwrap_or(0).min(MAX_WIDTH));
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
            spec.width = number(&mut i, &mut next);
            if f.get(i) == Some(&'.') {
                i += 1;
                spec.precision = Some(number(&mut i, &mut next).unwrap_or(0));
            }
            while matches!(f.get(i), Some('l' | 'h' | 'j' | 'z' | 't' | 'L' | 'q')) {
                i += 1;
            }
            let Some(&conv) = f.get(i) else {
                warn.push("missing format character".into());
                return out;
            };
            i += 1;
            let arg = args.get(next).cloned();
            if arg.is_some() {
                next += 1;
            }
            let arg = arg.unwrap_or_default();
            let text = match conv {
                's' => {
                    let s = match spec.precision {
                        Some(p) => arg.chars().take(p).collect(),
                        None => arg,
                    };
                    pad(&spec, s, false)
                }
                'b' => {
                    let mut b = Vec::new();
                    let stop = backslash_escapes(&arg, &mut b);
                    out.extend_from_slice(
                        pad(&spec, String::from_utf8_lossy(&b).into_owned(), false).as_bytes(),
                    );
                    if stop {
                        return out;
                    }
                    continue;
                }
                'c' => pad(
                    &spec,
                    arg.chars().next().map(String::from).unwrap_or_default(),
                    false,
                ),
                'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                    let v = int_arg(&arg).unwrap_or_else(|v| {
                        warn.push(format!("'{arg}': expected a numeric value"));
                        v
                    });
                    integer(&mut spec, conv, v)
                }
                'f' | 'F' | 'e' | 'E' | 'g' | 'G' => {
                    let v = float_arg(&arg).unwrap_or_else(|v| {
                        warn.push(format!("'{arg}': expected a numeric value"));
                        v
                    });
                    let p = spec.precision.unwrap_or(6).min(1000);
                    let body = match conv {
                        'f' | 'F' => format!("{v:.p$}"),
                        'e' | 'E' => format_exp(v, p, conv == 'E'),
                        _ => format_general(v, p, spec.alt, conv == 'G'),
                    };
                    let body = if v >= 0.0 && spec.plus {
                        format!("+{body}")
                    } else if v >= 0.0 && spec.space {
                        format!(" {body}")
                    } else {
                        body
                    };
                    pad(&spec, body, true)
                }
                other => {
                    warn.push(format!("%{other}: invalid conversion specification"));
                    return out;
                }
            };
            out.extend_from_slice(text.as_bytes());
        }
        if next >= args.len() || next == start_next {
            break;
        }
    }
    out
}

/// `printf FORMAT [arg…]`.
pub(crate) async fn printf(proc: Process) -> i32 {
    let args = proc.args();
    let args = if args.first().map(String::as_str) == Some("--") {
        &args[1..]
    } else {
        args
    };
    let Some((fmt, rest)) = args.split_first() else {
        return usage(&proc, "missing operand", 1).await;
    };
    let mut warnings = Vec::new();
    let out = run_printf(fmt, rest, &mut warnings);
    if let Err(code) = emit(&proc, out).await {
        return code;
    }
    for w in &warnings {
        proc.err(w).await;
    }
    i32::from(!warnings.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs printf on a format and arguments.
    fn pf(fmt: &str, args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut w = Vec::new();
        String::from_utf8_lossy(&run_printf(fmt, &args, &mut w)).into_owned()
    }

    #[test]
    fn printf_formats_like_c() {
        assert_eq!(pf("%s-%d\\n", &["a", "5"]), "a-5\n");
        assert_eq!(pf("%5s|%-5s|", &["ab", "cd"]), "   ab|cd   |");
        assert_eq!(
            pf("%05d %x %X %o %#x", &["-42", "255", "255", "8", "255"]),
            "-0042 ff FF 10 0xff"
        );
        assert_eq!(pf("%.2f %e", &["3.14159", "1234.5"]), "3.14 1.234500e+03");
        assert_eq!(pf("%s\\n", &["a", "b", "c"]), "a\nb\nc\n");
        assert_eq!(pf("%c%c", &["hello", "world"]), "hw");
        assert_eq!(pf("%b", &["x\\ty"]), "x\ty");
        assert_eq!(pf("%%|%.3s|%g", &["abcdef", "0.0001"]), "%|abc|0.0001");
        assert_eq!(pf("\\101\\x42", &[]), "AB");
    }

    #[test]
    fn printf_g_rounds_before_choosing_between_e_and_f() {
        assert_eq!(pf("%g", &["9.9999995"]), "10");
        assert_eq!(pf("%g", &["999999.5"]), "1e+06");
        assert_eq!(pf("%g", &["123456789"]), "1.23457e+08");
        assert_eq!(pf("%g", &["0.00001"]), "1e-05");
        assert_eq!(pf("%g", &["100"]), "100");
    }

    #[test]
    fn printf_huge_width_is_capped_not_fatal() {
        assert_eq!(pf("%99999999999999999999d", &["1"]).len(), MAX_WIDTH);
    }
}
