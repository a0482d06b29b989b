//! `od`, as BusyBox's full (`od_bloaty`, GNU-compatible) one: `-A o|d|x|n`, `-t` with `a c
//! d o u x` and sizes `1 2 4 8` (or `C S I L`), the shorthands `-b -c -d -o -s -x -i -l`, `-j
//! SKIP`, `-N COUNT`, `-w WIDTH`, `-v`. By default: octal addresses, two-byte octal words, a
//! run of identical lines printed once and then `*`.

use super::cli::{MAX_INPUT, emit, getopt, open_input, usage};
use fakekube_runtime::process::Process;

/// One output format: what a unit of `size` bytes is printed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Format {
    /// `a`, `c`, `d`, `o`, `u` or `x`.
    kind: char,
    /// Bytes per unit.
    size: usize,
}

impl Format {
    /// Characters a unit takes, without the space before it.
    fn width(self) -> usize {
        match (self.kind, self.size) {
            ('a' | 'c', _) => 3,
            ('o', 1) => 3,
            ('o', 2) => 6,
            ('o', 4) => 11,
            ('o', _) => 22,
            ('x', n) => n * 2,
            ('u', 1) => 3,
            ('u', 2) => 5,
            ('u', 4) => 10,
            ('u', _) => 20,
            ('d', 1) => 4,
            ('d', 2) => 6,
            ('d', 4) => 11,
            _ => 20,
        }
    }

    /// One unit (little-endian), right-aligned in its width.
    fn unit(self, bytes: &[u8]) -> String {
        let mut raw = [0u8; 8];
        raw[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
        let v = u64::from_le_bytes(raw);
        let w = self.width();
        let text = match self.kind {
            'o' => format!("{v:0w$o}"),
            'x' => format!("{v:0w$x}"),
            'u' => v.to_string(),
            'd' => {
                let bits = self.size * 8;
                let signed = if bits >= 64 {
                    v as i64
                } else {
                    let shift = 64 - bits;
                    ((v << shift) as i64) >> shift
                };
                signed.to_string()
            }
            'c' => char_c(raw[0]),
            _ => char_a(raw[0]),
        };
        format!(" {text:>w$}")
    }
}

/// `-t c`: a printable character, a C escape, or three octal digits.
fn char_c(b: u8) -> String {
    match b {
        0 => "\\0".into(),
        7 => "\\a".into(),
        8 => "\\b".into(),
        9 => "\\t".into(),
        10 => "\\n".into(),
        11 => "\\v".into(),
        12 => "\\f".into(),
        13 => "\\r".into(),
        0x20..=0x7e => char::from(b).to_string(),
        _ => format!("{b:03o}"),
    }
}

/// `-t a`: the character's name (`nul`, `sp`, …), the high bit ignored.
fn char_a(b: u8) -> String {
    const NAMES: [&str; 33] = [
        "nul", "soh", "stx", "etx", "eot", "enq", "ack", "bel", "bs", "ht", "nl", "vt", "ff", "cr",
        "so", "si", "dle", "dc1", "dc2", "dc3", "dc4", "nak", "syn", "etb", "can", "em", "sub",
        "esc", "fs", "gs", "rs", "us", "sp",
    ];
    let b = b & 0x7f;
    match b {
        0..=32 => NAMES[usize::from(b)].to_string(),
        127 => "del".to_string(),
        _ => char::from(b).to_string(),
    }
}

/// Parses a `-t` type string (several types may follow each other: `-t x1c`).
fn parse_type(spec: &str, out: &mut Vec<Format>) -> Result<(), String> {
    let chars: Vec<char> = spec.chars().collect();
    let mut i = 0;
    while let Some(&kind) = chars.get(i) {
        i += 1;
        match kind {
            'a' | 'c' => out.push(Format { kind, size: 1 }),
            'd' | 'o' | 'u' | 'x' => {
                let mut size = 4;
                match chars.get(i) {
                    Some('C') => {
                        size = 1;
                        i += 1;
                    }
                    Some('S') => {
                        size = 2;
                        i += 1;
                    }
                    Some('I') => {
                        size = 4;
                        i += 1;
                    }
                    Some('L') => {
                        size = 8;
                        i += 1;
                    }
                    Some(d) if d.is_ascii_digit() => {
                        let start = i;
                        while chars.get(i).is_some_and(char::is_ascii_digit) {
                            i += 1;
                        }
                        let n: String = chars[start..i].iter().collect();
                        size = n.parse().unwrap_or(0);
                        if ![1, 2, 4, 8].contains(&size) {
                            return Err(format!("invalid type string '{spec}'"));
                        }
                    }
                    _ => {}
                }
                out.push(Format { kind, size });
            }
            _ => {
                return Err(format!(
                    "invalid character '{kind}' in type string '{spec}'"
                ));
            }
        }
    }
    Ok(())
}

/// A count with GNU od's suffixes (`b` 512, `k` 1024, `m` 1048576) and `0x` hex.
fn count(text: &str) -> Option<u64> {
    let (body, mult) = match text.as_bytes().last() {
        Some(b'b') if !text.starts_with("0x") => (&text[..text.len() - 1], 512),
        Some(b'k') => (&text[..text.len() - 1], 1024),
        Some(b'm') => (&text[..text.len() - 1], 1_048_576),
        _ => (text, 1),
    };
    let n = if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        u64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse().ok()?
    };
    n.checked_mul(mult)
}

/// `od [-abcdfhilovxs] [-A RADIX] [-j SKIP] [-N COUNT] [-t TYPE] [-w[WIDTH]] [-v] [FILE]…`.
pub(crate) async fn od(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "A:N:j:t:w:vbcdoxsilB", "ANjtw", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let mut formats = Vec::new();
    for (c, v) in &p.short {
        let shorthand = match c {
            'b' => Some("o1"),
            'c' => Some("c"),
            'd' => Some("u2"),
            'o' | 'B' => Some("o2"),
            's' => Some("d2"),
            'x' => Some("x2"),
            'i' => Some("dI"),
            'l' => Some("dL"),
            _ => None,
        };
        let spec = match (c, shorthand) {
            (_, Some(s)) => s.to_string(),
            ('t', None) => v.clone().unwrap_or_default(),
            _ => continue,
        };
        if let Err(e) = parse_type(&spec, &mut formats) {
            proc.err(&e).await;
            return 1;
        }
    }
    if formats.is_empty() {
        formats.push(Format { kind: 'o', size: 2 });
    }
    let radix = p.value('A').unwrap_or("o");
    if !matches!(radix, "o" | "d" | "x" | "n") {
        proc.err(&format!(
            "bad output address radix '{radix}'; it must be one character from [doxn]"
        ))
        .await;
        return 1;
    }
    let parse_count = |c: char| -> Result<Option<u64>, String> {
        p.value(c)
            .map(|v| count(v).ok_or_else(|| format!("invalid number '{v}'")))
            .transpose()
    };
    let (skip, limit) = match (parse_count('j'), parse_count('N')) {
        (Ok(s), Ok(n)) => (s.unwrap_or(0), n),
        (Err(e), _) | (_, Err(e)) => {
            proc.err(&e).await;
            return 1;
        }
    };
    let width = match p.value('w') {
        None => 16,
        Some(w) => match w.parse::<usize>() {
            Ok(w) if w > 0 && formats.iter().all(|f| w % f.size == 0) => w,
            _ => {
                proc.err(&format!("invalid number '{w}'")).await;
                return 1;
            }
        },
    };
    // Every operand read in turn, as one stream.
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let mut data = Vec::new();
    let mut status = 0;
    for f in &files {
        match open_input(&proc, f) {
            Ok(input) => {
                let room = MAX_INPUT.saturating_sub(data.len());
                data.extend_from_slice(&input.read_to_end(room).await);
            }
            Err(e) => {
                proc.err(&format!("{f}: {e}")).await;
                status = 1;
            }
        }
    }
    let start = usize::try_from(skip).unwrap_or(usize::MAX).min(data.len());
    let end = limit.map_or(data.len(), |n| {
        start
            .saturating_add(usize::try_from(n).unwrap_or(usize::MAX))
            .min(data.len())
    });
    let text = dump(&data[start..end], skip, radix, &formats, width, p.has('v'));
    match emit(&proc, text).await {
        Ok(()) => status,
        Err(code) => code,
    }
}

/// An address in the radix asked (`None` for `-A n`).
fn address(at: u64, radix: &str) -> Option<String> {
    match radix {
        "d" => Some(format!("{at:07}")),
        "x" => Some(format!("{at:06x}")),
        "n" => None,
        _ => Some(format!("{at:07o}")),
    }
}

/// The whole dump of `data`, whose first byte is at offset `base` of the input.
fn dump(
    data: &[u8],
    base: u64,
    radix: &str,
    formats: &[Format],
    width: usize,
    all: bool,
) -> String {
    let mut out = String::new();
    let mut previous: Option<&[u8]> = None;
    let mut starred = false;
    for (k, line) in data.chunks(width).enumerate() {
        let at = base + (k * width) as u64;
        if !all && line.len() == width && previous == Some(line) {
            if !starred {
                out.push_str("*\n");
                starred = true;
            }
            continue;
        }
        starred = false;
        previous = Some(line);
        for (n, f) in formats.iter().enumerate() {
            match (n, address(at, radix)) {
                (0, Some(a)) => out.push_str(&a),
                (_, Some(a)) => out.push_str(&" ".repeat(a.len())),
                (_, None) => {}
            }
            // A last line shorter than a unit is padded with zero bytes.
            let mut padded = line.to_vec();
            padded.resize(line.len().div_ceil(f.size) * f.size, 0);
            for unit in padded.chunks(f.size) {
                out.push_str(&f.unit(unit));
            }
            out.push('\n');
        }
    }
    if let Some(a) = address(base + data.len() as u64, radix) {
        out.push_str(&a);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_strings_parse_sizes_and_letters() {
        let mut f = Vec::new();
        parse_type("x1c", &mut f).expect("valid");
        assert_eq!(
            f,
            vec![Format { kind: 'x', size: 1 }, Format { kind: 'c', size: 1 }]
        );
        assert!(parse_type("x3", &mut Vec::new()).is_err());
        assert!(parse_type("q", &mut Vec::new()).is_err());
        assert_eq!(count("0x10"), Some(16));
        assert_eq!(count("2k"), Some(2048));
        assert_eq!(count("010"), Some(8));
    }
}
