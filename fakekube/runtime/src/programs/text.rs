//! Text and process programs: `echo`, `printf`, `yes`, `seq`, `dirname`, `basename`, `test`/`[`,
//! `pwd`, `env`, `printenv`, `sleep`, `timeout`, `uname`, `id`, `whoami`, `hostname`.

use std::time::Duration;

use bytes::Bytes;

use super::{emit, getopt, usage};
use crate::fs::NodeKind;
use crate::io::CHUNK;
use crate::process::Process;
use crate::shell::arith::parse_number;

/// Longest sleep or timeout honoured (about a century: "forever" for a test).
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
/// Largest field width or precision `printf` honours.
const MAX_WIDTH: usize = 1 << 20;

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

/// A parsed `printf` conversion specification.
#[derive(Debug, Default, Clone)]
struct Spec {
    /// `-`.
    left: bool,
    /// `0`.
    zero: bool,
    /// `+`.
    plus: bool,
    /// ` `.
    space: bool,
    /// `#`.
    alt: bool,
    /// Field width.
    width: Option<usize>,
    /// Precision.
    precision: Option<usize>,
}

/// Pads a converted value to the spec's width.
fn pad(spec: &Spec, body: String, numeric: bool) -> String {
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

/// C-style `%e` formatting.
fn format_exp(v: f64, precision: usize, upper: bool) -> String {
    let s = format!("{v:.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    let out = format!("{mantissa}e{sign}{:02}", exp.abs());
    if upper { out.to_uppercase() } else { out }
}

/// C-style `%g` formatting.
fn format_general(v: f64, precision: usize, alt: bool, upper: bool) -> String {
    let p = precision.max(1);
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            format!("{v}")
        };
    }
    let exp = v.abs().log10().floor() as i64;
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
                    let (neg, mag) = if conv == 'd' || conv == 'i' {
                        (v < 0, v.unsigned_abs())
                    } else {
                        (false, v as u64)
                    };
                    let mut digits = match conv {
                        'x' => format!("{mag:x}"),
                        'X' => format!("{mag:X}"),
                        'o' => format!("{mag:o}"),
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
                    } else if spec.plus && (conv == 'd' || conv == 'i') {
                        "+"
                    } else if spec.space && (conv == 'd' || conv == 'i') {
                        " "
                    } else {
                        ""
                    };
                    pad(&spec, format!("{sign}{digits}"), true)
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

/// `yes [string…]`: repeats a line until the reader goes away.
pub(crate) async fn yes(proc: Process) -> i32 {
    let line = if proc.args().is_empty() {
        "y".to_string()
    } else {
        proc.args().join(" ")
    };
    let line = format!("{line}\n");
    let reps = (CHUNK / line.len().max(1)).max(1);
    let buf = Bytes::from(line.repeat(reps));
    loop {
        if let Err(code) = emit(&proc, buf.clone()).await {
            return code;
        }
    }
}

/// `seq [-s SEP] [-w] [FIRST [INCREMENT]] LAST`.
pub(crate) async fn seq(proc: Process) -> i32 {
    let mut sep = "\n".to_string();
    let mut equal_width = false;
    let mut nums = Vec::new();
    let args = proc.args().to_vec();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        match a.as_str() {
            "-s" => {
                sep = args.get(i).cloned().unwrap_or_default();
                i += 1;
            }
            "-w" => equal_width = true,
            s if s.starts_with("-s") => sep = s[2..].to_string(),
            s => nums.push(s.to_string()),
        }
    }
    let parsed: Vec<Option<f64>> = nums
        .iter()
        .map(|n| n.parse::<f64>().ok().filter(|v| v.is_finite()))
        .collect();
    if let Some(k) = parsed.iter().position(Option::is_none) {
        return usage(
            &proc,
            &format!("invalid floating point argument: '{}'", nums[k]),
            1,
        )
        .await;
    }
    let v: Vec<f64> = parsed.into_iter().flatten().collect();
    let (first, step, last) = match v.as_slice() {
        [l] => (1.0, 1.0, *l),
        [f, l] => (*f, 1.0, *l),
        [f, s, l] => (*f, *s, *l),
        [] => return usage(&proc, "missing operand", 1).await,
        _ => return usage(&proc, &format!("extra operand '{}'", nums[3]), 1).await,
    };
    if step == 0.0 {
        return usage(
            &proc,
            &format!("invalid Zero increment value: '{}'", nums[1]),
            1,
        )
        .await;
    }
    let decimals = nums
        .iter()
        .map(|n| n.split_once('.').map(|(_, d)| d.len()).unwrap_or(0))
        .max()
        .unwrap_or(0);
    let width = if equal_width {
        [first, last]
            .iter()
            .map(|x| format!("{x:.decimals$}").len())
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    let mut out = String::new();
    let mut k: u64 = 0;
    loop {
        let x = first + step * k as f64;
        if (step > 0.0 && x > last + 1e-9) || (step < 0.0 && x < last - 1e-9) {
            break;
        }
        if k > 0 {
            out.push_str(&sep);
        }
        let text = format!("{x:.decimals$}");
        if equal_width && text.len() < width {
            out.push_str(&"0".repeat(width - text.len()));
        }
        out.push_str(&text);
        if out.len() >= CHUNK
            && let Err(code) = emit(&proc, std::mem::take(&mut out)).await
        {
            return code;
        }
        k += 1;
        if k == u64::MAX {
            break;
        }
    }
    if k > 0 {
        out.push('\n');
    }
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// GNU `dirname` of one path.
pub(crate) fn dirname_of(p: &str) -> String {
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return if p.starts_with('/') {
            "/".into()
        } else {
            ".".into()
        };
    }
    match trimmed.rfind('/') {
        None => ".".into(),
        Some(i) => {
            let d = trimmed[..i].trim_end_matches('/');
            if d.is_empty() {
                "/".into()
            } else {
                d.to_string()
            }
        }
    }
}

/// GNU `basename` of one path, minus `suffix` when it is a proper suffix.
pub(crate) fn basename_of(p: &str, suffix: Option<&str>) -> String {
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return if p.starts_with('/') {
            "/".into()
        } else {
            String::new()
        };
    }
    let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
    match suffix {
        Some(s) if !s.is_empty() && base.len() > s.len() && base.ends_with(s) => {
            base[..base.len() - s.len()].to_string()
        }
        _ => base.to_string(),
    }
}

/// `dirname path…`.
pub(crate) async fn dirname(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "z", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let end = if p.has('z') { "\0" } else { "\n" };
    let out: String = p
        .operands
        .iter()
        .map(|o| format!("{}{end}", dirname_of(o)))
        .collect();
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `basename NAME [SUFFIX]` or `basename -a [-s SUFFIX] NAME…`.
pub(crate) async fn basename(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "asz", "s", &["suffix"], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let suffix = p.value('s').or(p.long_value("suffix")).map(str::to_string);
    let multiple = p.has('a') || suffix.is_some();
    let (names, suffix): (Vec<String>, Option<String>) = match (multiple, p.operands.as_slice()) {
        (_, []) => return usage(&proc, "missing operand", 1).await,
        (true, ops) => (ops.to_vec(), suffix),
        (false, [n]) => (vec![n.clone()], None),
        (false, [n, s]) => (vec![n.clone()], Some(s.clone())),
        (false, [_, _, extra, ..]) => {
            return usage(&proc, &format!("extra operand '{extra}'"), 1).await;
        }
    };
    let end = if p.has('z') { "\0" } else { "\n" };
    let out: String = names
        .iter()
        .map(|n| format!("{}{end}", basename_of(n, suffix.as_deref())))
        .collect();
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// Evaluates a `test` expression; `Err` is a usage message (exit 2).
fn eval_test(proc: &Process, args: &[String]) -> Result<bool, String> {
    let mut p = TestParser {
        proc,
        args,
        pos: 0,
        depth: 0,
    };
    let v = match args.len() {
        0 => false,
        1 => !args[0].is_empty(),
        2 if args[0] == "!" => args[1].is_empty(),
        2 => p.unary(&args[0], &args[1])?,
        3 if is_binary(&args[1]) => p.binary(&args[0], &args[1], &args[2])?,
        3 if args[0] == "!" => !eval_test(proc, &args[1..])?,
        3 if args[0] == "(" && args[2] == ")" => !args[1].is_empty(),
        4 if args[0] == "!" => !eval_test(proc, &args[1..])?,
        4 if args[0] == "(" && args[3] == ")" => eval_test(proc, &args[1..3])?,
        _ => {
            let v = p.or()?;
            if p.pos < args.len() {
                return Err(format!("{}: unexpected operator", args[p.pos]));
            }
            v
        }
    };
    Ok(v)
}

/// Whether `op` is a binary `test` operator.
fn is_binary(op: &str) -> bool {
    matches!(
        op,
        "=" | "=="
            | "!="
            | "<"
            | ">"
            | "-eq"
            | "-ne"
            | "-lt"
            | "-le"
            | "-gt"
            | "-ge"
            | "-nt"
            | "-ot"
            | "-ef"
            | "-a"
            | "-o"
    )
}

/// Whether `op` is a unary `test` operator.
fn is_unary(op: &str) -> bool {
    op.len() == 2 && op.starts_with('-') && "efdsrwxnzLhpSbcgukOGt".contains(&op[1..])
}

/// Recursive-descent `test` parser for the general case.
struct TestParser<'a> {
    /// The process (for file tests).
    proc: &'a Process,
    /// Arguments.
    args: &'a [String],
    /// Cursor.
    pos: usize,
    /// Nesting (parentheses and `!`).
    depth: usize,
}

impl TestParser<'_> {
    /// `expr -o expr`.
    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.args.get(self.pos).map(String::as_str) == Some("-o") {
            self.pos += 1;
            let r = self.and()?;
            v = v || r;
        }
        Ok(v)
    }

    /// `expr -a expr`.
    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.not()?;
        while self.args.get(self.pos).map(String::as_str) == Some("-a") {
            self.pos += 1;
            let r = self.not()?;
            v = v && r;
        }
        Ok(v)
    }

    /// `! expr`, `( expr )`, primaries.
    fn not(&mut self) -> Result<bool, String> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("expression too deep".into());
        }
        let a = self
            .args
            .get(self.pos)
            .cloned()
            .ok_or_else(|| "argument expected".to_string())?;
        let r = if a == "!" {
            self.pos += 1;
            self.not().map(|v| !v)
        } else if a == "("
            && (self.args.get(self.pos + 2).map(String::as_str) != Some(")")
                || self.args.len() > self.pos + 3)
        {
            self.pos += 1;
            let v = self.or()?;
            if self.args.get(self.pos).map(String::as_str) != Some(")") {
                return Err("')' expected".into());
            }
            self.pos += 1;
            Ok(v)
        } else if let Some(op) = self
            .args
            .get(self.pos + 1)
            .filter(|op| is_binary(op) && *op != "-a" && *op != "-o")
        {
            let op = op.clone();
            let rhs = self
                .args
                .get(self.pos + 2)
                .cloned()
                .ok_or_else(|| format!("{op}: argument expected"))?;
            self.pos += 3;
            self.binary(&a, &op, &rhs)
        } else if is_unary(&a) && self.args.get(self.pos + 1).is_some() {
            let operand = self.args[self.pos + 1].clone();
            self.pos += 2;
            self.unary(&a, &operand)
        } else {
            self.pos += 1;
            Ok(!a.is_empty())
        };
        self.depth -= 1;
        r
    }

    /// A unary primary.
    fn unary(&self, op: &str, operand: &str) -> Result<bool, String> {
        let meta = || self.proc.fs.metadata(&self.proc.path(operand)).ok();
        Ok(match op {
            "-n" => !operand.is_empty(),
            "-z" => operand.is_empty(),
            "-e" | "-r" | "-w" => meta().is_some(),
            "-f" => meta().is_some_and(|m| m.kind == NodeKind::Regular),
            "-d" => meta().is_some_and(|m| m.kind == NodeKind::Directory),
            "-c" => meta().is_some_and(|m| m.kind == NodeKind::CharDevice),
            "-s" => meta().is_some_and(|m| {
                m.size > 0 && m.kind != NodeKind::Directory || m.kind == NodeKind::Directory
            }),
            "-x" => meta().is_some_and(|m| m.kind == NodeKind::Directory || m.is_executable()),
            "-u" => meta().is_some_and(|m| m.mode & 0o4000 != 0),
            "-g" => meta().is_some_and(|m| m.mode & 0o2000 != 0),
            "-k" => meta().is_some_and(|m| m.mode & 0o1000 != 0),
            "-O" | "-G" => meta().is_some(),
            "-L" | "-h" | "-p" | "-S" | "-b" | "-t" => false,
            _ => return Err(format!("{op}: unary operator expected")),
        })
    }

    /// A binary primary.
    fn binary(&self, a: &str, op: &str, b: &str) -> Result<bool, String> {
        let int = |s: &str| -> Result<i64, String> {
            let t = s.trim();
            let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(format!("Illegal number: {s}"));
            }
            t.parse::<i64>().map_err(|_| format!("Illegal number: {s}"))
        };
        let mtime = |p: &str| {
            self.proc
                .fs
                .metadata(&self.proc.path(p))
                .ok()
                .map(|m| m.mtime)
        };
        Ok(match op {
            "=" | "==" => a == b,
            "!=" => a != b,
            "<" => a < b,
            ">" => a > b,
            "-eq" => int(a)? == int(b)?,
            "-ne" => int(a)? != int(b)?,
            "-lt" => int(a)? < int(b)?,
            "-le" => int(a)? <= int(b)?,
            "-gt" => int(a)? > int(b)?,
            "-ge" => int(a)? >= int(b)?,
            "-nt" => {
                matches!((mtime(a), mtime(b)), (Some(x), Some(y)) if x > y)
                    || (mtime(a).is_some() && mtime(b).is_none())
            }
            "-ot" => {
                matches!((mtime(a), mtime(b)), (Some(x), Some(y)) if x < y)
                    || (mtime(a).is_none() && mtime(b).is_some())
            }
            "-ef" => {
                let norm = |p: &str| crate::fs::normalize(&self.proc.path(p)).ok();
                mtime(a).is_some() && norm(a) == norm(b)
            }
            "-a" => !a.is_empty() && !b.is_empty(),
            "-o" => !a.is_empty() || !b.is_empty(),
            _ => return Err(format!("{op}: binary operator expected")),
        })
    }
}

/// `test expr` and `[ expr ]`: 0 true, 1 false, 2 usage error.
pub(crate) async fn test(proc: Process) -> i32 {
    let mut args = proc.args().to_vec();
    if proc.name() == "[" {
        if args.last().map(String::as_str) != Some("]") {
            proc.err("missing ]").await;
            return 2;
        }
        args.pop();
    }
    match eval_test(&proc, &args) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            proc.err(&e).await;
            2
        }
    }
}

/// `pwd`.
pub(crate) async fn pwd(proc: Process) -> i32 {
    match emit(&proc, format!("{}\n", proc.cwd)).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `env [-i] [-u NAME] [-C DIR] [NAME=VALUE…] [command [arg…]]`.
pub(crate) async fn env(proc: Process) -> i32 {
    let args = proc.args().to_vec();
    let mut env = proc.env.clone();
    let mut cwd = proc.cwd.clone();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-i" | "-" | "--ignore-environment" => env.clear(),
            "-u" | "--unset" => {
                i += 1;
                let Some(name) = args.get(i) else {
                    return usage(&proc, "option requires an argument -- 'u'", 125).await;
                };
                env.retain(|(k, _)| k != name);
            }
            "-C" | "--chdir" => {
                i += 1;
                let Some(dir) = args.get(i) else {
                    return usage(&proc, "option requires an argument -- 'C'", 125).await;
                };
                cwd = crate::fs::join(&cwd, dir);
            }
            "--" => {
                i += 1;
                break;
            }
            s if s.starts_with("-u") && s.len() > 2 => env.retain(|(k, _)| k != &s[2..]),
            s if s.starts_with('-') && s.len() > 1 => {
                return usage(&proc, &format!("invalid option -- '{}'", &s[1..2]), 125).await;
            }
            _ => break,
        }
        i += 1;
    }
    while let Some((k, v)) = args.get(i).and_then(|a| a.split_once('=')) {
        env.retain(|(ek, _)| ek != k);
        env.push((k.to_string(), v.to_string()));
        i += 1;
    }
    if i >= args.len() {
        let out: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        return match emit(&proc, out).await {
            Ok(()) => 0,
            Err(code) => code,
        };
    }
    let mut child = proc.child(args[i..].to_vec());
    child.env = env;
    child.cwd = cwd;
    child.spawn_as("env: ").await
}

/// `printenv [NAME…]`.
pub(crate) async fn printenv(proc: Process) -> i32 {
    let mut status = 0;
    let out: String = if proc.args().is_empty() {
        proc.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
    } else {
        let mut s = String::new();
        for name in proc.args() {
            match proc.var(name) {
                Some(v) => {
                    s.push_str(v);
                    s.push('\n');
                }
                None => status = 1,
            }
        }
        s
    };
    match emit(&proc, out).await {
        Ok(()) => status,
        Err(code) => code,
    }
}

/// Parses a duration like `1`, `0.5`, `1s`, `2m`, `1h`, `1d`, `infinity`.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    if s == "infinity" || s == "inf" {
        return Some(FOREVER);
    }
    let (num, mult) = match s.chars().last()? {
        's' => (&s[..s.len() - 1], 1.0),
        'm' => (&s[..s.len() - 1], 60.0),
        'h' => (&s[..s.len() - 1], 3600.0),
        'd' => (&s[..s.len() - 1], 86400.0),
        _ => (s, 1.0),
    };
    if num.is_empty()
        || !num
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == 'e' || c == '+' || c == '-')
    {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    let secs = v * mult;
    if secs >= FOREVER.as_secs_f64() {
        return Some(FOREVER);
    }
    Duration::try_from_secs_f64(secs).ok()
}

/// `sleep DURATION…` (summed); cancellable.
pub(crate) async fn sleep(proc: Process) -> i32 {
    if proc.args().is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let mut total = Duration::ZERO;
    for a in proc.args() {
        match parse_duration(a) {
            Some(d) => total = total.saturating_add(d).min(FOREVER),
            None => return usage(&proc, &format!("invalid time interval '{a}'"), 1).await,
        }
    }
    tokio::select! {
        _ = tokio::time::sleep(total) => 0,
        _ = proc.cancel.cancelled() => 143,
    }
}

/// Maps a signal name or number to its number (TERM when unknown).
fn signal_number(s: &str) -> i32 {
    match s.trim_start_matches("SIG") {
        "HUP" | "1" => 1,
        "INT" | "2" => 2,
        "QUIT" | "3" => 3,
        "KILL" | "9" => 9,
        "USR1" | "10" => 10,
        "USR2" | "12" => 12,
        "ALRM" | "14" => 14,
        _ => 15,
    }
}

/// `timeout [-s SIG] [-k DUR] [--preserve-status] DURATION command [arg…]`: 124 when the
/// deadline passes (the command and everything it started are cancelled).
pub(crate) async fn timeout(proc: Process) -> i32 {
    let args = proc.args().to_vec();
    let mut i = 0;
    let mut signal = 15;
    let mut preserve = false;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-s" | "--signal" | "-k" | "--kill-after" => {
                i += 1;
                let Some(v) = args.get(i) else {
                    return usage(
                        &proc,
                        &format!(
                            "option requires an argument -- '{}'",
                            a.trim_start_matches('-')
                        ),
                        125,
                    )
                    .await;
                };
                if a == "-s" || a == "--signal" {
                    signal = signal_number(v);
                }
            }
            "--preserve-status" => preserve = true,
            "--foreground" | "-v" | "--verbose" | "-f" => {}
            "--" => {
                i += 1;
                break;
            }
            s if s.starts_with("--signal=") => signal = signal_number(&s[9..]),
            s if s.starts_with("--kill-after=") => {}
            s if s.starts_with("-s") && s.len() > 2 => signal = signal_number(&s[2..]),
            s if s.starts_with("-k") && s.len() > 2 => {}
            s if s.starts_with('-') && s.len() > 1 && parse_duration(s).is_none() => {
                return usage(&proc, &format!("invalid option -- '{}'", &s[1..2]), 125).await;
            }
            _ => break,
        }
        i += 1;
    }
    let Some(dur_text) = args.get(i) else {
        return usage(&proc, "missing operand", 125).await;
    };
    let Some(dur) = parse_duration(dur_text) else {
        return usage(&proc, &format!("invalid time interval '{dur_text}'"), 125).await;
    };
    let command = args.get(i + 1..).unwrap_or_default().to_vec();
    if command.is_empty() {
        return usage(&proc, "missing operand", 125).await;
    }
    let token = proc.cancel.child_token();
    let mut child = proc.child(command);
    child.cancel = token.clone();
    let run = child.spawn_as("timeout: failed to run command ");
    if dur.is_zero() {
        return run.await;
    }
    tokio::select! {
        status = run => status,
        _ = tokio::time::sleep(dur) => {
            token.cancel();
            if preserve { 128 + signal } else { 124 }
        }
    }
}

/// `uname [-asnrvmo]`.
pub(crate) async fn uname(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "asnrvmpio", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let host = proc.var("HOSTNAME").unwrap_or("localhost").to_string();
    let all = p.has('a');
    let fields = [
        ('s', "Linux".to_string()),
        ('n', host),
        ('r', "6.1.0-fakekube".to_string()),
        ('v', "#1 SMP".to_string()),
        ('m', "x86_64".to_string()),
        ('o', "GNU/Linux".to_string()),
    ];
    let mut chosen: Vec<String> = fields
        .iter()
        .filter(|(c, _)| all || p.has(*c))
        .map(|(_, v)| v.clone())
        .collect();
    if chosen.is_empty() {
        chosen.push("Linux".into());
    }
    match emit(&proc, format!("{}\n", chosen.join(" "))).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `id [-u|-g|-G] [-n]`: always root.
pub(crate) async fn id(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "ugGnr", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let out = if p.has('u') || p.has('g') || p.has('G') {
        if p.has('n') { "root\n" } else { "0\n" }
    } else {
        "uid=0(root) gid=0(root) groups=0(root)\n"
    };
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `whoami`.
pub(crate) async fn whoami(proc: Process) -> i32 {
    match emit(&proc, "root\n").await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `hostname`: `$HOSTNAME` (the runtime sets it to the pod name) or `localhost`.
pub(crate) async fn hostname(proc: Process) -> i32 {
    let name = proc.var("HOSTNAME").unwrap_or("localhost").to_string();
    match emit(&proc, format!("{name}\n")).await {
        Ok(()) => 0,
        Err(code) => code,
    }
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
    fn printf_huge_width_is_capped_not_fatal() {
        assert_eq!(pf("%99999999999999999999d", &["1"]).len(), MAX_WIDTH);
    }

    #[test]
    fn dirname_and_basename_follow_gnu() {
        assert_eq!(dirname_of("/a/b/c"), "/a/b");
        assert_eq!(dirname_of("/a/b/"), "/a");
        assert_eq!(dirname_of("a"), ".");
        assert_eq!(dirname_of("/"), "/");
        assert_eq!(dirname_of("/a"), "/");
        assert_eq!(basename_of("/a/b.txt", Some(".txt")), "b");
        assert_eq!(basename_of("/a/b/", None), "b");
        assert_eq!(basename_of("/", None), "/");
        assert_eq!(basename_of(".txt", Some(".txt")), ".txt");
    }

    #[test]
    fn durations_parse_with_suffixes_and_refuse_garbage() {
        assert_eq!(parse_duration("1"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("infinity"), Some(FOREVER));
        assert_eq!(parse_duration("1e308"), Some(FOREVER));
        assert_eq!(parse_duration("nan"), None);
        assert_eq!(parse_duration("-1"), None);
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration(""), None);
    }
}
