//! File programs: `cat`, `ls`, `stat`, `mkdir`, `rmdir`, `rm`, `touch`, `chmod`, `cp`, `mv`,
//! `head`, `tail`, `wc`, `tee`.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use super::{emit, getopt, open_input, usage};
use crate::fs::{self as vfs, FsError, Metadata, NodeKind};
use crate::io::{CHUNK, Output};
use crate::process::Process;

/// `cat [-u] [file…]`: copies files (or stdin) to stdout in chunks.
pub(crate) async fn cat(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "u", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands
    };
    let mut status = 0;
    for f in &files {
        let input = match open_input(&proc, f) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("{f}: {e}")).await;
                status = 1;
                continue;
            }
        };
        while let Some(chunk) = input.read().await {
            if let Err(code) = emit(&proc, chunk).await {
                return code;
            }
        }
    }
    status
}

/// `ls [-1aAlRdFp] [path…]`: one name per line (as when not writing to a terminal).
pub(crate) async fn ls(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "1aAlhdFpRrtS", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 2).await,
    };
    let all = p.has('a');
    let almost_all = p.has('A');
    let long = p.has('l');
    let dir_itself = p.has('d');
    let classify = p.has('F') || p.has('p');
    let reverse = p.has('r');
    let operands = if p.operands.is_empty() {
        vec![".".to_string()]
    } else {
        p.operands.clone()
    };
    let mut status = 0;
    let mut files: Vec<(String, Metadata)> = Vec::new();
    let mut dirs: Vec<(String, Metadata)> = Vec::new();
    for o in &operands {
        match proc.fs.metadata(&proc.path(o)) {
            Ok(m) if m.kind == NodeKind::Directory && !dir_itself => dirs.push((o.clone(), m)),
            Ok(m) => files.push((o.clone(), m)),
            Err(e) => {
                proc.err(&format!("cannot access '{o}': {e}")).await;
                status = 2;
            }
        }
    }
    let mut out = String::new();
    let render = |entries: &[(String, Metadata)], out: &mut String| {
        let width = entries
            .iter()
            .map(|(_, m)| m.size.to_string().len())
            .max()
            .unwrap_or(1);
        for (name, m) in entries {
            let suffix = if classify && m.kind == NodeKind::Directory {
                "/"
            } else if p.has('F') && m.kind == NodeKind::Regular && m.is_executable() {
                "*"
            } else {
                ""
            };
            if long {
                let links = if m.kind == NodeKind::Directory { 2 } else { 1 };
                out.push_str(&format!(
                    "{} {links} root root {:>width$} {} {name}{suffix}\n",
                    mode_string(m),
                    m.size,
                    ls_time(m.mtime)
                ));
            } else {
                out.push_str(&format!("{name}{suffix}\n"));
            }
        }
    };
    if reverse {
        files.reverse();
    }
    render(&files, &mut out);
    let headers = operands.len() > 1 || p.has('R');
    let mut queue: VecDeque<(String, Metadata)> = dirs.into();
    let mut first = files.is_empty();
    while let Some((dir, _)) = queue.pop_front() {
        let abs = proc.path(&dir);
        let mut entries: Vec<(String, Metadata)> = match proc.fs.read_dir(&abs) {
            Ok(list) => list.into_iter().map(|e| (e.name, e.meta)).collect(),
            Err(e) => {
                proc.err(&format!("cannot open directory '{dir}': {e}"))
                    .await;
                status = 2;
                continue;
            }
        };
        entries.retain(|(n, _)| all || almost_all || !n.starts_with('.'));
        if all && let Ok(m) = proc.fs.metadata(&abs) {
            entries.insert(0, ("..".to_string(), m));
            entries.insert(0, (".".to_string(), m));
        }
        if reverse {
            entries.reverse();
        }
        if headers {
            if !first {
                out.push('\n');
            }
            out.push_str(&format!("{dir}:\n"));
        }
        first = false;
        if long {
            let blocks: u64 = entries.iter().map(|(_, m)| m.size.div_ceil(4096) * 4).sum();
            out.push_str(&format!("total {blocks}\n"));
        }
        render(&entries, &mut out);
        if p.has('R') {
            for (name, m) in entries.iter().rev() {
                if m.kind == NodeKind::Directory && name != "." && name != ".." {
                    let child = if dir.ends_with('/') {
                        format!("{dir}{name}")
                    } else {
                        format!("{dir}/{name}")
                    };
                    queue.push_front((child, *m));
                }
            }
        }
        if out.len() > CHUNK
            && let Err(code) = emit(&proc, std::mem::take(&mut out)).await
        {
            return code;
        }
    }
    if let Err(code) = emit(&proc, out).await {
        return code;
    }
    status
}

/// `drwxr-xr-x`-style mode text.
pub(crate) fn mode_string(m: &Metadata) -> String {
    let mut s = String::with_capacity(10);
    s.push(match m.kind {
        NodeKind::Directory => 'd',
        NodeKind::CharDevice => 'c',
        NodeKind::Regular => '-',
    });
    let bits = m.mode;
    for (shift, special, lower, upper) in [
        (6, 0o4000, 's', 'S'),
        (3, 0o2000, 's', 'S'),
        (0, 0o1000, 't', 'T'),
    ] {
        let part = (bits >> shift) & 7;
        s.push(if part & 4 != 0 { 'r' } else { '-' });
        s.push(if part & 2 != 0 { 'w' } else { '-' });
        s.push(match (part & 1 != 0, bits & special != 0) {
            (true, true) => lower,
            (false, true) => upper,
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// `Jan  2 15:04` (recent) or `Jan  2  2020` (older than about six months), in UTC.
fn ls_time(secs: i64) -> String {
    let Ok(t) = time::OffsetDateTime::from_unix_timestamp(secs) else {
        return "Jan  1  1970".to_string();
    };
    let month = &format!("{:?}", t.month())[..3];
    let recent = (vfs::now() - secs).abs() < 180 * 24 * 3600;
    if recent {
        format!("{month} {:>2} {:02}:{:02}", t.day(), t.hour(), t.minute())
    } else {
        format!("{month} {:>2}  {}", t.day(), t.year())
    }
}

/// `2024-01-02 15:04:05.000000000 +0000`.
fn full_time(secs: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(secs) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.000000000 +0000",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => "1970-01-01 00:00:00.000000000 +0000".to_string(),
    }
}

/// Expands one GNU `stat` format for a file.
pub(crate) fn stat_format(fmt: &str, name: &str, m: &Metadata) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            out.push('%');
            break;
        };
        match d {
            '%' => out.push('%'),
            'a' => out.push_str(&format!("{:o}", m.mode)),
            'A' => out.push_str(&mode_string(m)),
            'b' => out.push_str(&(m.size.div_ceil(512)).to_string()),
            'B' => out.push_str("512"),
            'd' | 'D' => out.push('0'),
            'f' => out.push_str(&format!("{:x}", m.raw_mode())),
            'F' => out.push_str(m.kind.describe(m.size)),
            'g' | 'u' => out.push('0'),
            'G' | 'U' => out.push_str("root"),
            'h' => out.push_str(if m.kind == NodeKind::Directory {
                "2"
            } else {
                "1"
            }),
            'i' => out.push('0'),
            'm' => out.push('/'),
            'n' => out.push_str(name),
            'N' => out.push_str(&format!("'{name}'")),
            'o' => out.push_str("4096"),
            's' => out.push_str(&m.size.to_string()),
            't' | 'T' => out.push('0'),
            'w' => out.push('-'),
            'W' => out.push('0'),
            'x' | 'y' | 'z' => out.push_str(&full_time(m.mtime)),
            'X' | 'Y' | 'Z' => out.push_str(&m.mtime.to_string()),
            other => {
                out.push('?');
                out.push(other);
            }
        }
    }
    out
}

/// GNU `stat`'s default multi-line report.
fn default_stat(name: &str, m: &Metadata) -> String {
    let blocks = m.size.div_ceil(512);
    let links = if m.kind == NodeKind::Directory { 2 } else { 1 };
    let t = full_time(m.mtime);
    format!(
        "  File: {name}\n  Size: {:<10}\tBlocks: {blocks:<10} IO Block: 4096   {}\n\
         Device: 0,0\tInode: 0           Links: {links}\n\
         Access: ({:04o}/{})  Uid: (    0/    root)   Gid: (    0/    root)\n\
         Access: {t}\nModify: {t}\nChange: {t}\n Birth: -\n",
        m.size,
        m.kind.describe(m.size),
        m.mode,
        mode_string(m)
    )
}

/// Interprets backslash escapes of `stat --printf`.
fn printf_escapes(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// `stat [-L] [-c FORMAT | --format=FORMAT | --printf=FORMAT] file…`.
pub(crate) async fn stat(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "Lc", "c", &["format", "printf"], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let format = p.long_value("printf").map(printf_escapes).or_else(|| {
        p.value('c')
            .or(p.long_value("format"))
            .map(|f| format!("{f}\n"))
    });
    let mut status = 0;
    for f in &p.operands {
        let m = match proc.fs.metadata(&proc.path(f)) {
            Ok(m) => m,
            Err(e) => {
                proc.err(&format!("cannot stat '{f}': {e}")).await;
                status = 1;
                continue;
            }
        };
        let text = match &format {
            Some(fmt) => stat_format(fmt, f, &m),
            None => default_stat(f, &m),
        };
        if let Err(code) = emit(&proc, text).await {
            return code;
        }
    }
    status
}

/// Parses an octal mode.
fn parse_octal(s: &str) -> Option<u32> {
    u32::from_str_radix(s, 8).ok().filter(|m| *m <= 0o7777)
}

/// `mkdir [-p] [-m MODE] dir…`.
pub(crate) async fn mkdir(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "pmv", "m", &["mode"], &["parents", "verbose"]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let mode = match p.value('m').or(p.long_value("mode")) {
        Some(m) => match parse_octal(m).or_else(|| apply_symbolic(0o755, m)) {
            Some(m) => m,
            None => {
                proc.err(&format!("invalid mode '{m}'")).await;
                return 1;
            }
        },
        None => 0o755,
    };
    let parents = p.has('p') || p.has_long("parents");
    let mut status = 0;
    for d in &p.operands {
        let path = proc.path(d);
        let r = if parents {
            proc.fs.mkdir_all(&path, mode)
        } else {
            proc.fs.mkdir(&path, mode)
        };
        if let Err(e) = r {
            proc.err(&format!("cannot create directory '{d}': {e}"))
                .await;
            status = 1;
        }
    }
    status
}

/// `rmdir dir…`.
pub(crate) async fn rmdir(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "pv", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing operand", 1).await;
    }
    let mut status = 0;
    for d in &p.operands {
        let path = proc.path(d);
        let r = match proc.fs.metadata(&path) {
            Ok(m) if m.kind != NodeKind::Directory => Err(FsError::NotADirectory),
            Ok(_) => proc.fs.remove(&path, false, true),
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            proc.err(&format!("failed to remove '{d}': {e}")).await;
            status = 1;
        }
    }
    status
}

/// `rm [-rRfdv] path…`.
pub(crate) async fn rm(proc: Process) -> i32 {
    let p = match getopt(
        proc.args(),
        "rRfdvi",
        "",
        &[],
        &["force", "recursive", "no-preserve-root", "verbose"],
    ) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let force = p.has('f') || p.has_long("force");
    let recursive = p.has('r') || p.has('R') || p.has_long("recursive");
    if p.operands.is_empty() {
        return if force {
            0
        } else {
            usage(&proc, "missing operand", 1).await
        };
    }
    let mut status = 0;
    for f in &p.operands {
        let base = f.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        if base == "." || base == ".." {
            proc.err(&format!(
                "refusing to remove '.' or '..' directory: skipping '{f}'"
            ))
            .await;
            status = 1;
            continue;
        }
        let path = proc.path(f);
        if recursive
            && vfs::normalize(&path).as_deref() == Ok("/")
            && !p.has_long("no-preserve-root")
        {
            proc.err(&format!("it is dangerous to operate recursively on '{f}'"))
                .await;
            proc.err("use --no-preserve-root to override this failsafe")
                .await;
            status = 1;
            continue;
        }
        match proc.fs.remove(&path, recursive, p.has('d')) {
            Ok(()) => {}
            Err(FsError::NotFound) if force => {}
            Err(e) => {
                proc.err(&format!("cannot remove '{f}': {e}")).await;
                status = 1;
            }
        }
    }
    status
}

/// `touch [-c] file…`: creates files or sets their modification time to now.
pub(crate) async fn touch(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "cam", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if p.operands.is_empty() {
        return usage(&proc, "missing file operand", 1).await;
    }
    let mut status = 0;
    for f in &p.operands {
        let path = proc.path(f);
        if p.has('c') && !proc.fs.exists(&path) {
            continue;
        }
        if let Err(e) = proc.fs.touch(&path, vfs::now()) {
            proc.err(&format!("cannot touch '{f}': {e}")).await;
            status = 1;
        }
    }
    status
}

/// Applies a symbolic mode (`u+x,go-w`, `+x`, `a=r`) to `mode`; `None` if malformed.
pub(crate) fn apply_symbolic(mode: u32, spec: &str) -> Option<u32> {
    let mut mode = mode;
    for clause in spec.split(',') {
        let chars: Vec<char> = clause.chars().collect();
        let mut i = 0;
        let mut who = 0u32;
        while let Some(c) = chars.get(i) {
            match c {
                'u' => who |= 0o4700,
                'g' => who |= 0o2070,
                'o' => who |= 0o1007,
                'a' => who |= 0o7777,
                _ => break,
            }
            i += 1;
        }
        let implicit = who == 0;
        if implicit {
            who = 0o7777;
        }
        if i >= chars.len() {
            return None;
        }
        while let Some(&op) = chars.get(i) {
            if !matches!(op, '+' | '-' | '=') {
                return None;
            }
            i += 1;
            let mut bits = 0u32;
            while let Some(c) = chars.get(i) {
                bits |= match c {
                    'r' => 0o444,
                    'w' => 0o222,
                    'x' => 0o111,
                    'X' => 0o111,
                    's' => 0o6000,
                    't' => 0o1000,
                    _ => break,
                };
                i += 1;
            }
            let mut bits = bits & who;
            if implicit {
                bits &= !0o022;
            }
            match op {
                '+' => mode |= bits,
                '-' => mode &= !bits,
                _ => mode = (mode & !(who & 0o7777)) | bits,
            }
        }
    }
    Some(mode & 0o7777)
}

/// `chmod [-R] MODE file…` (octal or symbolic modes).
pub(crate) async fn chmod(proc: Process) -> i32 {
    let args = proc.args().to_vec();
    let mut recursive = false;
    let mut rest = Vec::new();
    for a in args {
        if a == "-R" {
            recursive = true;
        } else {
            rest.push(a);
        }
    }
    let Some((spec, files)) = rest.split_first() else {
        return usage(&proc, "missing operand", 1).await;
    };
    if files.is_empty() {
        return usage(&proc, &format!("missing operand after '{spec}'"), 1).await;
    }
    let mut status = 0;
    let mut todo: Vec<String> = files.iter().map(|f| proc.path(f)).collect();
    let mut shown: Vec<String> = files.to_vec();
    while let Some(path) = todo.pop() {
        let shown_name = shown.pop().unwrap_or_default();
        let m = match proc.fs.metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                proc.err(&format!("cannot access '{shown_name}': {e}"))
                    .await;
                status = 1;
                continue;
            }
        };
        let Some(new) = parse_octal(spec).or_else(|| apply_symbolic(m.mode, spec)) else {
            proc.err(&format!("invalid mode: '{spec}'")).await;
            return 1;
        };
        if let Err(e) = proc.fs.chmod(&path, new) {
            proc.err(&format!("changing permissions of '{shown_name}': {e}"))
                .await;
            status = 1;
        }
        if recursive && m.kind == NodeKind::Directory {
            for e in proc.fs.read_dir(&path).unwrap_or_default() {
                todo.push(vfs::join(&path, &e.name));
                shown.push(format!("{shown_name}/{}", e.name));
            }
        }
    }
    status
}

/// The destination for `cp`/`mv` of `src` into `dst`: `dst/base(src)` when `dst` is a directory.
fn destination(proc: &Process, src: &str, dst: &str) -> String {
    let dst_abs = proc.path(dst);
    match proc.fs.metadata(&dst_abs) {
        Ok(m) if m.kind == NodeKind::Directory => {
            let base = src.trim_end_matches('/').rsplit('/').next().unwrap_or(src);
            vfs::join(&dst_abs, base)
        }
        _ => dst_abs,
    }
}

/// `cp [-rRapf] src… dst`.
pub(crate) async fn cp(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "rRapfvdL", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let recursive = p.has('r') || p.has('R') || p.has('a');
    copy_or_move(proc, p.operands, Some(recursive)).await
}

/// `mv [-fv] src… dst`.
pub(crate) async fn mv(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "fvin", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    copy_or_move(proc, p.operands, None).await
}

/// Shared body of `cp` (`recursive` given) and `mv` (`None`).
async fn copy_or_move(proc: Process, operands: Vec<String>, recursive: Option<bool>) -> i32 {
    let Some((dst, srcs)) = operands.split_last() else {
        return usage(&proc, "missing file operand", 1).await;
    };
    if srcs.is_empty() {
        return usage(
            &proc,
            &format!("missing destination file operand after '{dst}'"),
            1,
        )
        .await;
    }
    let dst_is_dir =
        matches!(proc.fs.metadata(&proc.path(dst)), Ok(m) if m.kind == NodeKind::Directory);
    if srcs.len() > 1 && !dst_is_dir {
        proc.err(&format!("target '{dst}' is not a directory"))
            .await;
        return 1;
    }
    let mut status = 0;
    for src in srcs {
        let from = proc.path(src);
        let meta = match proc.fs.metadata(&from) {
            Ok(m) => m,
            Err(e) => {
                proc.err(&format!("cannot stat '{src}': {e}")).await;
                status = 1;
                continue;
            }
        };
        let to = destination(&proc, src, dst);
        let r = match recursive {
            Some(false) if meta.kind == NodeKind::Directory => {
                proc.err(&format!("-r not specified; omitting directory '{src}'"))
                    .await;
                status = 1;
                continue;
            }
            Some(_) if meta.kind != NodeKind::Directory => match proc.fs.read(&from) {
                Ok(data) => proc.fs.write(&to, &data),
                Err(e) => Err(e),
            },
            Some(_) => proc.fs.copy(&from, &to, true),
            None => proc.fs.rename(&from, &to),
        };
        if let Err(e) = r {
            let verb = if recursive.is_some() {
                "cannot create regular file"
            } else {
                "cannot move"
            };
            proc.err(&format!("{verb} '{src}' to '{dst}': {e}")).await;
            status = 1;
        }
    }
    status
}

/// Parses a count like `10`, `1K`, `2M` (GNU suffixes, binary).
fn parse_count(s: &str) -> Option<u64> {
    let (digits, mult) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        None => (s, 1u64),
        Some((i, _)) => {
            let mult = match &s[i..] {
                "b" => 512,
                "K" | "KiB" | "k" => 1024,
                "KB" | "kB" => 1000,
                "M" | "MiB" => 1024 * 1024,
                "MB" => 1000 * 1000,
                "G" | "GiB" => 1024 * 1024 * 1024,
                "GB" => 1000 * 1000 * 1000,
                _ => return None,
            };
            (&s[..i], mult)
        }
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// Rewrites `-5` into `-n 5` (the obsolete `head -5` form).
fn legacy_count(args: &[String]) -> Vec<String> {
    args.iter()
        .flat_map(|a| {
            if a.len() > 1 && a.starts_with('-') && a[1..].bytes().all(|b| b.is_ascii_digit()) {
                vec!["-n".to_string(), a[1..].to_string()]
            } else {
                vec![a.clone()]
            }
        })
        .collect()
}

/// `head [-n N | -c N] [file…]`: streams the first lines or bytes.
pub(crate) async fn head(proc: Process) -> i32 {
    let args = legacy_count(proc.args());
    let p = match getopt(&args, "ncqv", "nc", &["lines", "bytes"], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (by_bytes, count_text) = match (
        p.value('c').or(p.long_value("bytes")),
        p.value('n').or(p.long_value("lines")),
    ) {
        (Some(c), _) => (true, c.to_string()),
        (None, Some(n)) => (false, n.to_string()),
        (None, None) => (false, "10".to_string()),
    };
    let Some(count) = parse_count(count_text.trim_start_matches('+')) else {
        let what = if by_bytes { "bytes" } else { "lines" };
        proc.err(&format!("invalid number of {what}: '{count_text}'"))
            .await;
        return 1;
    };
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let headers = (files.len() > 1 && !p.has('q')) || p.has('v');
    let mut status = 0;
    for (k, f) in files.iter().enumerate() {
        let input = match open_input(&proc, f) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("cannot open '{f}' for reading: {e}"))
                    .await;
                status = 1;
                continue;
            }
        };
        if headers {
            let name = if f == "-" { "standard input" } else { f };
            let sep = if k > 0 { "\n" } else { "" };
            if let Err(code) = emit(&proc, format!("{sep}==> {name} <==\n")).await {
                return code;
            }
        }
        let mut left = count;
        while left > 0 {
            let Some(chunk) = input.read().await else {
                break;
            };
            let take = if by_bytes {
                usize::try_from(left).unwrap_or(usize::MAX).min(chunk.len())
            } else {
                let mut end = chunk.len();
                for (i, b) in chunk.iter().enumerate() {
                    if *b == b'\n' {
                        left -= 1;
                        if left == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                }
                end
            };
            if by_bytes {
                left -= take as u64;
            }
            let (used, rest) = (chunk.slice(..take), chunk.slice(take..));
            input.unread(rest).await;
            if let Err(code) = emit(&proc, used).await {
                return code;
            }
        }
    }
    status
}

/// `tail [-n N | -n +N | -c N] [file…]`: keeps only the last lines or bytes in memory.
pub(crate) async fn tail(proc: Process) -> i32 {
    let args = legacy_count(proc.args());
    let p = match getopt(&args, "ncqvf", "nc", &["lines", "bytes"], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (by_bytes, text) = match (
        p.value('c').or(p.long_value("bytes")),
        p.value('n').or(p.long_value("lines")),
    ) {
        (Some(c), _) => (true, c.to_string()),
        (None, Some(n)) => (false, n.to_string()),
        (None, None) => (false, "10".to_string()),
    };
    let from_start = text.starts_with('+');
    let Some(count) = parse_count(text.trim_start_matches(['+', '-'])) else {
        let what = if by_bytes { "bytes" } else { "lines" };
        proc.err(&format!("invalid number of {what}: '{text}'"))
            .await;
        return 1;
    };
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let mut status = 0;
    for f in &files {
        let input = match open_input(&proc, f) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("cannot open '{f}' for reading: {e}"))
                    .await;
                status = 1;
                continue;
            }
        };
        if from_start {
            // Skip the first count-1 units, then stream the rest.
            let mut skip = count.saturating_sub(1);
            while let Some(chunk) = input.read().await {
                let mut start = 0;
                while skip > 0 && start < chunk.len() {
                    if by_bytes {
                        let n = usize::try_from(skip)
                            .unwrap_or(usize::MAX)
                            .min(chunk.len() - start);
                        start += n;
                        skip -= n as u64;
                    } else {
                        match chunk[start..].iter().position(|b| *b == b'\n') {
                            Some(i) => {
                                start += i + 1;
                                skip -= 1;
                            }
                            None => start = chunk.len(),
                        }
                    }
                }
                if start < chunk.len()
                    && let Err(code) = emit(&proc, chunk.slice(start..)).await
                {
                    return code;
                }
            }
            continue;
        }
        let limit = usize::try_from(count).unwrap_or(usize::MAX);
        let mut kept: VecDeque<Bytes> = VecDeque::new();
        let mut kept_bytes = 0usize;
        let mut partial = BytesMut::new();
        while let Some(chunk) = input.read().await {
            if by_bytes {
                kept_bytes += chunk.len();
                kept.push_back(chunk);
                while kept_bytes > limit {
                    let Some(front) = kept.front_mut() else { break };
                    let excess = kept_bytes - limit;
                    if front.len() <= excess {
                        kept_bytes -= front.len();
                        kept.pop_front();
                    } else {
                        let _ = front.split_to(excess);
                        kept_bytes -= excess;
                    }
                }
            } else {
                partial.extend_from_slice(&chunk);
                while let Some(i) = partial.iter().position(|b| *b == b'\n') {
                    let line = partial.split_to(i + 1).freeze();
                    kept.push_back(line);
                    if kept.len() > limit {
                        kept.pop_front();
                    }
                }
            }
        }
        if !by_bytes && !partial.is_empty() {
            kept.push_back(partial.freeze());
            if kept.len() > limit {
                kept.pop_front();
            }
        }
        for b in kept {
            if let Err(code) = emit(&proc, b).await {
                return code;
            }
        }
    }
    status
}

/// `wc [-lwcm] [file…]`.
pub(crate) async fn wc(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "lwcm", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let (mut l, mut w, mut c) = (p.has('l'), p.has('w'), p.has('c') || p.has('m'));
    if !l && !w && !c {
        (l, w, c) = (true, true, true);
    }
    let files = if p.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        p.operands.clone()
    };
    let mut rows: Vec<([u64; 3], Option<String>)> = Vec::new();
    let mut total = [0u64; 3];
    let mut status = 0;
    for f in &files {
        let input = match open_input(&proc, f) {
            Ok(i) => i,
            Err(e) => {
                proc.err(&format!("{f}: {e}")).await;
                status = 1;
                continue;
            }
        };
        let mut counts = [0u64; 3];
        let mut in_word = false;
        while let Some(chunk) = input.read().await {
            counts[2] += chunk.len() as u64;
            for b in chunk.iter() {
                if *b == b'\n' {
                    counts[0] += 1;
                }
                let space = b.is_ascii_whitespace();
                if !space && !in_word {
                    counts[1] += 1;
                }
                in_word = !space;
            }
        }
        for k in 0..3 {
            total[k] += counts[k];
        }
        rows.push((
            counts,
            if p.operands.is_empty() {
                None
            } else {
                Some(f.clone())
            },
        ));
    }
    if rows.len() > 1 {
        rows.push((total, Some("total".to_string())));
    }
    let selected = [l, w, c];
    let single = selected.iter().filter(|s| **s).count() == 1 && files.len() == 1;
    let width = if single {
        1
    } else if p.operands.is_empty() {
        7
    } else {
        total.iter().map(|n| n.to_string().len()).max().unwrap_or(1)
    };
    let mut out = String::new();
    for (counts, name) in rows {
        let fields: Vec<String> = (0..3)
            .filter(|k| selected[*k])
            .map(|k| format!("{:>width$}", counts[k]))
            .collect();
        out.push_str(&fields.join(" "));
        if let Some(n) = name {
            out.push(' ');
            out.push_str(&n);
        }
        out.push('\n');
    }
    if let Err(code) = emit(&proc, out).await {
        return code;
    }
    status
}

/// `tee [-a] [file…]`: copies stdin to stdout and to each file.
pub(crate) async fn tee(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "ai", "", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    let mut status = 0;
    let mut outs: Vec<Output> = Vec::new();
    for f in &p.operands {
        match Output::open(&proc.fs, &proc.path(f), p.has('a')) {
            Ok(o) => outs.push(o),
            Err(e) => {
                proc.err(&format!("{f}: {e}")).await;
                status = 1;
            }
        }
    }
    while let Some(chunk) = proc.stdin.read().await {
        for o in &outs {
            if o.write(chunk.clone()).await.is_err() {
                status = 1;
            }
        }
        if let Err(code) = emit(&proc, chunk).await {
            return code;
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_format_matches_gnu_for_a_regular_file() {
        let m = Metadata {
            kind: NodeKind::Regular,
            size: 5,
            mode: 0o644,
            mtime: 1_700_000_000,
        };
        assert_eq!(
            stat_format("%s %Y %f %F %n %a", "/tmp/f", &m),
            "5 1700000000 81a4 regular file /tmp/f 644"
        );
        let d = Metadata {
            kind: NodeKind::Directory,
            size: 4096,
            mode: 0o755,
            mtime: 0,
        };
        assert_eq!(
            stat_format("%f %F %A", "d", &d),
            "41ed directory drwxr-xr-x"
        );
        let e = Metadata {
            kind: NodeKind::Regular,
            size: 0,
            mode: 0o600,
            mtime: 0,
        };
        assert_eq!(
            stat_format("%F %y", "e", &e),
            "regular empty file 1970-01-01 00:00:00.000000000 +0000"
        );
    }

    #[test]
    fn symbolic_modes_apply_like_chmod() {
        assert_eq!(apply_symbolic(0o644, "+x"), Some(0o755));
        assert_eq!(apply_symbolic(0o755, "go-rx"), Some(0o700));
        assert_eq!(apply_symbolic(0o777, "a=r"), Some(0o444));
        assert_eq!(apply_symbolic(0o644, "u+x,g+w"), Some(0o764));
        assert_eq!(apply_symbolic(0o644, "q"), None);
    }

    #[test]
    fn counts_accept_gnu_suffixes_and_refuse_overflow() {
        assert_eq!(parse_count("10"), Some(10));
        assert_eq!(parse_count("2K"), Some(2048));
        assert_eq!(parse_count("99999999999999999999"), None);
        assert_eq!(parse_count("18446744073709551615G"), None);
        assert_eq!(parse_count("x"), None);
    }
}
