//! Programs that say what is there and what it is: `ls` and `stat`.

use std::collections::VecDeque;

use super::cli::{emit, getopt, usage};
use fakekube_runtime::fs::{self as vfs, Metadata, NodeKind};
use fakekube_runtime::io::CHUNK;
use fakekube_runtime::process::Process;

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
        // `ls -l LINK` and `ls -d LINK` show the link; `ls LINK` lists what it points to.
        let meta = if long || dir_itself {
            proc.fs.symlink_metadata(&proc.path(o))
        } else {
            proc.fs.metadata(&proc.path(o))
        };
        match meta {
            Ok(m) if m.kind == NodeKind::Directory && !dir_itself => dirs.push((o.clone(), m)),
            Ok(m) => files.push((o.clone(), m)),
            Err(e) => {
                proc.err(&format!("cannot access '{o}': {e}")).await;
                status = 2;
            }
        }
    }
    let mut out = String::new();
    // `base`: the directory the entries are in (`None`: operands, relative to the cwd).
    let render = |entries: &[(String, Metadata)], base: Option<&str>, out: &mut String| {
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
                let target = if m.kind == NodeKind::Symlink {
                    let path = base.map_or_else(|| proc.path(name), |b| vfs::join(b, name));
                    proc.fs
                        .read_link(&path)
                        .map(|t| format!(" -> {t}"))
                        .unwrap_or_default()
                } else {
                    String::new()
                };
                out.push_str(&format!(
                    "{} {links} root root {:>width$} {} {name}{suffix}{target}\n",
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
    render(&files, None, &mut out);
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
        render(&entries, Some(&abs), &mut out);
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
fn mode_string(m: &Metadata) -> String {
    let mut s = String::with_capacity(10);
    s.push(match m.kind {
        NodeKind::Directory => 'd',
        NodeKind::CharDevice => 'c',
        NodeKind::Regular => '-',
        NodeKind::Symlink => 'l',
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
/// `link`: the target, when the file is a symbolic link (for `%N`).
fn stat_format(fmt: &str, name: &str, m: &Metadata, link: Option<&str>) -> String {
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
            'N' => match link {
                Some(t) => out.push_str(&format!("'{name}' -> '{t}'")),
                None => out.push_str(&format!("'{name}'")),
            },
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
fn default_stat(name: &str, m: &Metadata, link: Option<&str>) -> String {
    let blocks = m.size.div_ceil(512);
    let name = match link {
        Some(t) => format!("{name} -> {t}"),
        None => name.to_string(),
    };
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
        // A link itself, as GNU stat reports it, unless -L.
        let path = proc.path(f);
        let m = if p.has('L') {
            proc.fs.metadata(&path)
        } else {
            proc.fs.symlink_metadata(&path)
        };
        let m = match m {
            Ok(m) => m,
            Err(e) => {
                proc.err(&format!("cannot stat '{f}': {e}")).await;
                status = 1;
                continue;
            }
        };
        let link = (m.kind == NodeKind::Symlink)
            .then(|| proc.fs.read_link(&path).ok())
            .flatten();
        let text = match &format {
            Some(fmt) => stat_format(fmt, f, &m, link.as_deref()),
            None => default_stat(f, &m, link.as_deref()),
        };
        if let Err(code) = emit(&proc, text).await {
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
            stat_format("%s %Y %f %F %n %a", "/tmp/f", &m, None),
            "5 1700000000 81a4 regular file /tmp/f 644"
        );
        let d = Metadata {
            kind: NodeKind::Directory,
            size: 4096,
            mode: 0o755,
            mtime: 0,
        };
        assert_eq!(
            stat_format("%f %F %A", "d", &d, None),
            "41ed directory drwxr-xr-x"
        );
        let e = Metadata {
            kind: NodeKind::Regular,
            size: 0,
            mode: 0o600,
            mtime: 0,
        };
        assert_eq!(
            stat_format("%F %y", "e", &e, None),
            "regular empty file 1970-01-01 00:00:00.000000000 +0000"
        );
    }
}
