//! Programs that transform text line by line or field by field: `sort`, `uniq`, `tr`, `cut`
//! (`sed` has its own module). Options and error wording follow BusyBox.

use std::cmp::Ordering;

use super::cli::{emit, finish, getopt, lines, slurp, usage};
use fakekube_runtime::process::Process;

/// One `sort -k` key: fields (1-based) and characters (1-based, 0 = whole field / to its end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    /// Start field.
    start_field: usize,
    /// Start character within it (1-based).
    start_char: usize,
    /// End field (0: end of line).
    end_field: usize,
    /// End character within it (0: end of the field).
    end_char: usize,
    /// `n` on the key.
    numeric: bool,
    /// `r` on the key.
    reverse: bool,
    /// `b` on the key.
    blanks: bool,
    /// `f` on the key.
    fold: bool,
}

/// Parses `F[.C][opts][,F[.C][opts]]`.
fn parse_key(spec: &str) -> Option<Key> {
    let (start, end) = match spec.split_once(',') {
        Some((s, e)) => (s, Some(e)),
        None => (spec, None),
    };
    let mut key = Key {
        start_field: 0,
        start_char: 1,
        end_field: 0,
        end_char: 0,
        numeric: false,
        reverse: false,
        blanks: false,
        fold: false,
    };
    let pos = |text: &str, key: &mut Key| -> Option<(usize, usize)> {
        let digits_end = text
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(text.len());
        let (num, opts) = text.split_at(digits_end);
        for o in opts.chars() {
            match o {
                'n' => key.numeric = true,
                'r' => key.reverse = true,
                'b' => key.blanks = true,
                'f' => key.fold = true,
                _ => return None,
            }
        }
        let (f, c) = match num.split_once('.') {
            Some((f, c)) => (f.parse().ok()?, c.parse().ok()?),
            None => (num.parse().ok()?, 0),
        };
        Some((f, c))
    };
    let (f, c) = pos(start, &mut key)?;
    if f == 0 {
        return None;
    }
    key.start_field = f;
    key.start_char = c.max(1);
    if let Some(end) = end {
        let (f, c) = pos(end, &mut key)?;
        key.end_field = f;
        key.end_char = c;
    }
    Some(key)
}

/// The fields of a line: split at `sep`, or at runs of blanks (each field keeping the blanks
/// before it, as POSIX says).
fn fields(line: &[u8], sep: Option<u8>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    match sep {
        Some(s) => {
            let mut start = 0;
            for (i, b) in line.iter().enumerate() {
                if *b == s {
                    out.push((start, i));
                    start = i + 1;
                }
            }
            out.push((start, line.len()));
        }
        None => {
            let mut i = 0;
            while i < line.len() {
                let start = i;
                while i < line.len() && matches!(line[i], b' ' | b'\t') {
                    i += 1;
                }
                while i < line.len() && !matches!(line[i], b' ' | b'\t') {
                    i += 1;
                }
                out.push((start, i));
            }
        }
    }
    out
}

/// The text a key selects from a line.
fn key_text<'a>(line: &'a [u8], key: &Key, sep: Option<u8>) -> &'a [u8] {
    let f = fields(line, sep);
    let Some(&(fs, fe)) = f.get(key.start_field - 1) else {
        return b"";
    };
    let mut field_start = fs;
    if key.blanks || sep.is_none() {
        while field_start < fe && matches!(line[field_start], b' ' | b'\t') && key.blanks {
            field_start += 1;
        }
    }
    let start = (field_start + key.start_char - 1).min(fe).max(fs);
    let end = if key.end_field == 0 {
        line.len()
    } else {
        match f.get(key.end_field - 1) {
            Some(&(es, ee)) if key.end_char == 0 => ee.max(es),
            Some(&(es, ee)) => (es + key.end_char).min(ee),
            None => line.len(),
        }
    };
    if start >= end { b"" } else { &line[start..end] }
}

/// The number at the start of `text` (after blanks), as `sort -n` reads it; 0 when none.
fn leading_number(text: &[u8]) -> f64 {
    let s = String::from_utf8_lossy(text);
    let s = s.trim_start();
    let end = s
        .char_indices()
        .take_while(|(i, c)| c.is_ascii_digit() || *c == '.' || (*i == 0 && *c == '-'))
        .map(|(i, c)| i + c.len_utf8())
        .last()
        .unwrap_or(0);
    s[..end].parse().unwrap_or(0.0)
}

/// Compares two key texts.
fn compare_text(a: &[u8], b: &[u8], numeric: bool, fold: bool) -> Ordering {
    if numeric {
        return leading_number(a)
            .partial_cmp(&leading_number(b))
            .unwrap_or(Ordering::Equal);
    }
    if fold {
        return a.to_ascii_uppercase().cmp(&b.to_ascii_uppercase());
    }
    a.cmp(b)
}

/// `sort [-nrufbs] [-t SEP] [-k KEY]… [-o FILE] [FILE]…`.
pub(crate) async fn sort(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "nrufbsczkto", "tko", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let sep = match p.value('t') {
        Some(t) if t.len() == 1 => Some(t.as_bytes()[0]),
        Some(t) => {
            proc.err(&format!("bad field separator '{t}'")).await;
            return 1;
        }
        None => None,
    };
    let mut keys = Vec::new();
    for (o, v) in &p.short {
        if *o == 'k' {
            match v.as_deref().and_then(parse_key) {
                Some(k) => keys.push(k),
                None => {
                    proc.err(&format!(
                        "bad field specification '{}'",
                        v.as_deref().unwrap_or("")
                    ))
                    .await;
                    return 1;
                }
            }
        }
    }
    let (numeric, reverse, unique, fold, stable) =
        (p.has('n'), p.has('r'), p.has('u'), p.has('f'), p.has('s'));
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let mut data = Vec::new();
    for f in &files {
        let Some(d) = slurp(&proc, f).await else {
            return 1;
        };
        data.push(d);
    }
    let mut all: Vec<&[u8]> = data.iter().flat_map(|d| lines(d)).collect();
    let cmp = |a: &&[u8], b: &&[u8]| -> Ordering {
        let mut ord = Ordering::Equal;
        for k in &keys {
            let o = compare_text(
                key_text(a, k, sep),
                key_text(b, k, sep),
                k.numeric || numeric,
                k.fold || fold,
            );
            let o = if k.reverse { o.reverse() } else { o };
            if o != Ordering::Equal {
                ord = o;
                break;
            }
        }
        if ord == Ordering::Equal && keys.is_empty() {
            ord = compare_text(a, b, numeric, fold);
        }
        ord
    };
    all.sort_by(|a, b| {
        let o = cmp(a, b);
        let o = if o == Ordering::Equal && !stable && !unique {
            a.cmp(b)
        } else {
            o
        };
        if reverse { o.reverse() } else { o }
    });
    if unique {
        all.dedup_by(|b, a| cmp(a, b) == Ordering::Equal);
    }
    let mut out = Vec::new();
    for l in all {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    if let Some(path) = p.value('o') {
        return match proc.fs.write(&proc.path(path), &out) {
            Ok(()) => 0,
            Err(e) => {
                proc.err(&format!("can't open '{path}': {e}")).await;
                1
            }
        };
    }
    finish(&proc, out).await
}

/// `uniq [-cdui] [-f N] [-s N] [INPUT [OUTPUT]]`: adjacent duplicate lines, once.
pub(crate) async fn uniq(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "cduifsw", "fsw", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let num = |c: char| {
        p.value(c)
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0)
    };
    let (skip_fields, skip_chars) = (num('f'), num('s'));
    let width = p.value('w').and_then(|v| v.parse::<usize>().ok());
    let input = p.operands.first().cloned().unwrap_or_else(|| "-".into());
    let Some(data) = slurp(&proc, &input).await else {
        return 1;
    };
    let key = |line: &[u8]| -> Vec<u8> {
        let mut rest = line;
        for _ in 0..skip_fields {
            let blanks = rest
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            rest = &rest[blanks..];
            let word = rest
                .iter()
                .take_while(|b| !matches!(b, b' ' | b'\t'))
                .count();
            rest = &rest[word..];
        }
        let rest = &rest[skip_chars.min(rest.len())..];
        let rest = &rest[..width.unwrap_or(rest.len()).min(rest.len())];
        if p.has('i') {
            rest.to_ascii_lowercase()
        } else {
            rest.to_vec()
        }
    };
    let mut out = Vec::new();
    let all = lines(&data);
    let mut i = 0;
    while i < all.len() {
        let k = key(all[i]);
        let mut n = 1;
        while i + n < all.len() && key(all[i + n]) == k {
            n += 1;
        }
        let show = (!p.has('d') || n > 1) && (!p.has('u') || n == 1);
        if show {
            if p.has('c') {
                out.extend_from_slice(format!("{n:7} ").as_bytes());
            }
            out.extend_from_slice(all[i]);
            out.push(b'\n');
        }
        i += n;
    }
    if let Some(path) = p.operands.get(1) {
        return match proc.fs.write(&proc.path(path), &out) {
            Ok(()) => 0,
            Err(e) => {
                proc.err(&format!("can't open '{path}': {e}")).await;
                1
            }
        };
    }
    finish(&proc, out).await
}

/// Expands a `tr` set: ranges, escapes and `[:class:]`.
fn expand_set(spec: &str) -> Result<Vec<u8>, String> {
    let b = spec.as_bytes();
    let mut chars: Vec<u8> = Vec::new();
    let mut i = 0;
    let unit = |i: &mut usize| -> u8 {
        let c = b[*i];
        *i += 1;
        if c != b'\\' || *i >= b.len() {
            return c;
        }
        let e = b[*i];
        *i += 1;
        match e {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'\\' => b'\\',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                let mut n = 1;
                while n < 3 && *i < b.len() && (b'0'..=b'7').contains(&b[*i]) {
                    v = v * 8 + u32::from(b[*i] - b'0');
                    *i += 1;
                    n += 1;
                }
                (v & 0xff) as u8
            }
            other => other,
        }
    };
    while i < b.len() {
        if b[i] == b'['
            && b.get(i + 1) == Some(&b':')
            && let Some(end) = spec[i + 2..].find(":]")
        {
            {
                let class = &spec[i + 2..i + 2 + end];
                let test: fn(&u8) -> bool = match class {
                    "alpha" => u8::is_ascii_alphabetic,
                    "digit" => u8::is_ascii_digit,
                    "alnum" => u8::is_ascii_alphanumeric,
                    "lower" => u8::is_ascii_lowercase,
                    "upper" => u8::is_ascii_uppercase,
                    "space" => |c: &u8| c.is_ascii_whitespace() || *c == 11,
                    "blank" => |c: &u8| *c == b' ' || *c == b'\t',
                    "punct" => u8::is_ascii_punctuation,
                    "xdigit" => u8::is_ascii_hexdigit,
                    "cntrl" => u8::is_ascii_control,
                    "print" => |c: &u8| (0x20..0x7f).contains(c),
                    "graph" => u8::is_ascii_graphic,
                    _ => return Err(format!("invalid character class '{class}'")),
                };
                chars.extend((0u8..=255).filter(test));
                i += end + 4;
                continue;
            }
        }
        let c = unit(&mut i);
        if i + 1 < b.len() && b[i] == b'-' {
            let mut j = i + 1;
            let hi = unit(&mut j);
            if hi < c {
                return Err(format!(
                    "range-endpoints of '{}-{}' are in reverse collating sequence order",
                    c as char, hi as char
                ));
            }
            chars.extend(c..=hi);
            i = j;
            continue;
        }
        chars.push(c);
    }
    Ok(chars)
}

/// `tr [-cds] SET1 [SET2]`: translates, deletes or squeezes bytes from stdin to stdout.
pub(crate) async fn tr(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "cdsC", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (complement, delete, squeeze) = (p.has('c') || p.has('C'), p.has('d'), p.has('s'));
    let need = if delete == squeeze && !delete { 2 } else { 1 };
    if p.operands.len() < need || (delete && !squeeze && p.operands.len() > 1) {
        return usage(&proc, "missing operand", 1).await;
    }
    let parse = |s: &str| expand_set(s);
    let mut set1 = match parse(&p.operands[0]) {
        Ok(s) => s,
        Err(e) => {
            proc.err(&e).await;
            return 1;
        }
    };
    if complement {
        let mut has = [false; 256];
        for c in &set1 {
            has[usize::from(*c)] = true;
        }
        set1 = (0u8..=255).filter(|c| !has[usize::from(*c)]).collect();
    }
    let set2 = match p.operands.get(1).map(|s| parse(s)) {
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            proc.err(&e).await;
            return 1;
        }
        None => Vec::new(),
    };
    let mut map: [Option<u8>; 256] = [None; 256];
    let mut del = [false; 256];
    let mut squeeze_set = [false; 256];
    if delete {
        for c in &set1 {
            del[usize::from(*c)] = true;
        }
        if squeeze {
            for c in &set2 {
                squeeze_set[usize::from(*c)] = true;
            }
        }
    } else if !set2.is_empty() {
        let last = set2.last().copied().unwrap_or(0);
        for (k, c) in set1.iter().enumerate() {
            map[usize::from(*c)] = Some(set2.get(k).copied().unwrap_or(last));
        }
        if squeeze {
            for c in &set2 {
                squeeze_set[usize::from(*c)] = true;
            }
        }
    } else {
        for c in &set1 {
            squeeze_set[usize::from(*c)] = true;
        }
    }
    let mut last: Option<u8> = None;
    while let Some(chunk) = proc.stdin.read().await {
        let mut out = Vec::with_capacity(chunk.len());
        for &b in chunk.iter() {
            if del[usize::from(b)] {
                continue;
            }
            let t = map[usize::from(b)].unwrap_or(b);
            if squeeze && squeeze_set[usize::from(t)] && last == Some(t) {
                continue;
            }
            last = Some(t);
            out.push(t);
        }
        if let Err(code) = emit(&proc, out).await {
            return code;
        }
    }
    0
}

/// A `cut` list: ranges of 1-based positions (`N`, `N-`, `-M`, `N-M`, comma separated).
fn parse_list(spec: &str) -> Option<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    for part in spec.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (
                if a.is_empty() { 1 } else { a.parse().ok()? },
                if b.is_empty() {
                    usize::MAX
                } else {
                    b.parse().ok()?
                },
            ),
            None => {
                let n = part.parse().ok()?;
                (n, n)
            }
        };
        if a == 0 || b < a {
            return None;
        }
        out.push((a, b));
    }
    Some(out)
}

/// `cut -b LIST | -c LIST | -f LIST [-d DELIM] [-s] [FILE]…`.
pub(crate) async fn cut(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "bcfdsn", "bcfd", &["output-delimiter"], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (mode, spec) = match (p.value('b'), p.value('c'), p.value('f')) {
        (Some(s), None, None) => ('b', s),
        (None, Some(s), None) => ('c', s),
        (None, None, Some(s)) => ('f', s),
        _ => {
            proc.err("expected a list of bytes, characters, or fields")
                .await;
            return 1;
        }
    };
    let Some(ranges) = parse_list(spec) else {
        proc.err(&format!("invalid byte, character or field list '{spec}'"))
            .await;
        return 1;
    };
    let delim = match p.value('d') {
        Some(d) if d.len() == 1 => d.as_bytes()[0],
        Some(_) => {
            proc.err("the delimiter must be a single character").await;
            return 1;
        }
        None => b'\t',
    };
    let out_delim = p
        .long_value("output-delimiter")
        .map(|s| s.as_bytes().to_vec())
        .unwrap_or_else(|| vec![delim]);
    let wanted = |n: usize| ranges.iter().any(|(a, b)| *a <= n && n <= *b);
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let mut status = 0;
    for f in &files {
        let Some(data) = slurp(&proc, f).await else {
            status = 1;
            continue;
        };
        let mut out = Vec::new();
        for line in lines(&data) {
            if mode == 'f' {
                if !line.contains(&delim) {
                    if !p.has('s') {
                        out.extend_from_slice(line);
                        out.push(b'\n');
                    }
                    continue;
                }
                let picked: Vec<&[u8]> = line
                    .split(|b| *b == delim)
                    .enumerate()
                    .filter(|(k, _)| wanted(k + 1))
                    .map(|(_, f)| f)
                    .collect();
                out.extend_from_slice(&picked.join(&out_delim[..]));
            } else if mode == 'c' {
                let text = String::from_utf8_lossy(line);
                let picked: String = text
                    .chars()
                    .enumerate()
                    .filter(|(k, _)| wanted(k + 1))
                    .map(|(_, c)| c)
                    .collect();
                out.extend_from_slice(picked.as_bytes());
            } else {
                out.extend(
                    line.iter()
                        .enumerate()
                        .filter(|(k, _)| wanted(k + 1))
                        .map(|(_, b)| *b),
                );
            }
            out.push(b'\n');
        }
        if let Err(code) = emit(&proc, out).await {
            return code;
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_keys_parse_and_select_fields() {
        let k = parse_key("2,2n").expect("a key");
        assert_eq!((k.start_field, k.end_field, k.numeric), (2, 2, true));
        assert_eq!(key_text(b"a:10:x", &k, Some(b':')), b"10");
        let k = parse_key("2").expect("a key");
        assert_eq!(key_text(b"a  b c", &k, None), b"  b c");
        assert!(parse_key("0").is_none());
    }

    #[test]
    fn tr_sets_expand_ranges_classes_and_escapes() {
        assert_eq!(expand_set("a-d"), Ok(b"abcd".to_vec()));
        assert_eq!(expand_set("\\n\\t\\101"), Ok(b"\n\tA".to_vec()));
        assert_eq!(expand_set("[:digit:]"), Ok(b"0123456789".to_vec()));
        assert!(expand_set("z-a").is_err());
    }

    #[test]
    fn cut_lists_parse_open_ranges() {
        assert_eq!(
            parse_list("1,3-4,6-"),
            Some(vec![(1, 1), (3, 4), (6, usize::MAX)])
        );
        assert_eq!(parse_list("-2"), Some(vec![(1, 2)]));
        assert_eq!(parse_list("0"), None);
    }
}
