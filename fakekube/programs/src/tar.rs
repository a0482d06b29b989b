//! `tar`, as BusyBox's: create (`-c`), extract (`-x`) and list (`-t`) ustar/GNU archives built
//! and read in memory with the `tar` crate, gzipped with `-z` (or recognised by their magic on
//! extract), with the short and long options `kubectl cp` and scripts send: `-xmf - -C DIR`,
//! `--no-same-owner`, `--no-same-permissions`, `--strip-components`, `--exclude`.

use super::archive::gzip_bytes;
use super::cli::{MAX_INPUT, emit, finish, usage};
use fakekube_runtime::fs::{self, NodeKind};
use fakekube_runtime::process::Process;
use fakekube_runtime::shell::pattern::Pattern;

/// What `tar` is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TarMode {
    /// `-c`.
    Create,
    /// `-x`.
    Extract,
    /// `-t`.
    List,
}

/// Everything the command line says, parsed.
#[derive(Debug, Default)]
struct TarOptions {
    /// `-c`, `-x` or `-t` (the last one given).
    mode: Option<TarMode>,
    /// `-v`.
    verbose: bool,
    /// `-z`.
    gzip: bool,
    /// `-O`: extract to stdout.
    to_stdout: bool,
    /// `-m` (`--touch`): extracted files get the time of extraction, not the archive's.
    touch: bool,
    /// `--no-same-permissions`: extracted modes lose the group and other write bits (the
    /// umask of a container, 022).
    no_same_permissions: bool,
    /// `-k` (`--keep-old`): existing files are not overwritten.
    keep_old: bool,
    /// `--no-recursion`: directories are stored without their contents.
    no_recursion: bool,
    /// `-h` (`--dereference`): symbolic links are stored as what they point to.
    dereference: bool,
    /// `--strip-components N`.
    strip: usize,
    /// `--exclude PATTERN` (shell patterns on member names).
    exclude: Vec<String>,
    /// `-f ARCHIVE` (`-` or none: stdin/stdout).
    archive: Option<String>,
    /// `-C DIR`.
    dir: Option<String>,
    /// The FILE operands.
    names: Vec<String>,
}

/// Long options that take a value, each with the short option it stands for (`\0`: none).
const LONG_WITH_VALUE: &[(&str, char)] = &[
    ("directory", 'C'),
    ("file", 'f'),
    ("strip-components", '\0'),
    ("exclude", '\0'),
];

/// Long options without a value, each with the short option it stands for (`\0`: none).
const LONG_FLAGS: &[(&str, char)] = &[
    ("list", 't'),
    ("extract", 'x'),
    ("get", 'x'),
    ("create", 'c'),
    ("to-stdout", 'O'),
    ("no-same-owner", 'o'),
    ("same-owner", '\0'),
    ("same-permissions", 'p'),
    ("preserve-permissions", 'p'),
    ("verbose", 'v'),
    ("keep-old", 'k'),
    ("dereference", 'h'),
    ("gzip", 'z'),
    ("auto-compress", 'a'),
    ("touch", 'm'),
    ("no-recursion", '\0'),
    ("numeric-owner", '\0'),
    ("no-same-permissions", '\0'),
    ("overwrite", '\0'),
];

impl TarOptions {
    /// Applies a short option (`value` for `-f` and `-C`).
    fn short(&mut self, c: char, value: Option<String>) {
        match c {
            'c' => self.mode = Some(TarMode::Create),
            'x' => self.mode = Some(TarMode::Extract),
            't' => self.mode = Some(TarMode::List),
            'v' => self.verbose = true,
            'z' => self.gzip = true,
            'O' => self.to_stdout = true,
            'm' => self.touch = true,
            'k' => self.keep_old = true,
            'h' => self.dereference = true,
            'f' => self.archive = value,
            'C' => self.dir = value,
            _ => {}
        }
    }

    /// Parses the arguments (the old `tar czf …` form too); `Err` holds BusyBox's message.
    fn parse(args: &[String]) -> Result<TarOptions, String> {
        let mut args = args.to_vec();
        if let Some(first) = args.first()
            && !first.starts_with('-')
            && !first.is_empty()
        {
            args[0] = format!("-{first}");
        }
        let mut o = TarOptions::default();
        let mut i = 0;
        while let Some(a) = args.get(i).cloned() {
            i += 1;
            if a == "--" {
                o.names.extend(args[i..].iter().cloned());
                break;
            }
            if let Some(long) = a.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (long, None),
                };
                if let Some((_, c)) = LONG_WITH_VALUE.iter().find(|(n, _)| *n == name) {
                    let value = match inline {
                        Some(v) => v,
                        None => {
                            let v = args
                                .get(i)
                                .cloned()
                                .ok_or_else(|| format!("option '--{name}' requires an argument"))?;
                            i += 1;
                            v
                        }
                    };
                    match name {
                        "strip-components" => {
                            o.strip = value
                                .parse()
                                .map_err(|_| format!("invalid number '{value}'"))?;
                        }
                        "exclude" => o.exclude.push(value),
                        _ => o.short(*c, Some(value)),
                    }
                } else if let Some((_, c)) = LONG_FLAGS.iter().find(|(n, _)| *n == name) {
                    if inline.is_some() {
                        return Err(format!("option '--{name}' doesn't allow an argument"));
                    }
                    match name {
                        "no-same-permissions" => o.no_same_permissions = true,
                        "no-recursion" => o.no_recursion = true,
                        _ => o.short(*c, None),
                    }
                } else {
                    return Err(format!("unrecognized option '--{name}'"));
                }
                continue;
            }
            if !(a.starts_with('-') && a.len() > 1) {
                o.names.push(a);
                continue;
            }
            for c in a[1..].chars() {
                match c {
                    'c' | 'x' | 't' | 'v' | 'z' | 'O' | 'm' | 'k' | 'o' | 'p' | 'h' | 'a' => {
                        o.short(c, None);
                    }
                    'f' | 'C' => {
                        let v = args
                            .get(i)
                            .cloned()
                            .ok_or_else(|| format!("option requires an argument -- '{c}'"))?;
                        i += 1;
                        o.short(c, Some(v));
                    }
                    other => return Err(format!("invalid option -- '{other}'")),
                }
            }
        }
        Ok(o)
    }

    /// Whether an `--exclude` pattern matches a member name (or one of its leading
    /// directories, as GNU and BusyBox tar match).
    fn excluded(&self, name: &str) -> bool {
        let name = name.trim_end_matches('/');
        self.exclude.iter().any(|p| {
            let p = p.trim_end_matches('/');
            let mut prefix = String::new();
            name.split('/').any(|part| {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(part);
                let pattern = Pattern::new(&p.chars().map(|c| (c, true)).collect::<Vec<_>>());
                let m = |t: &str| pattern.matches(&t.chars().collect::<Vec<_>>());
                m(&prefix) || m(part)
            })
        })
    }
}

/// `tar -c|-x|-t [-vzOmko] [-f ARCHIVE] [-C DIR] [FILE]…` (also the old `tar czf …` form):
/// creates, extracts or lists archives (gzipped with `-z`), `-` or no `-f` meaning
/// stdin/stdout.
pub(crate) async fn tar(proc: Process) -> i32 {
    let o = match TarOptions::parse(proc.args()) {
        Ok(o) => o,
        Err(msg) => return usage(&proc, &msg, 1).await,
    };
    let Some(mode) = o.mode else {
        proc.err("need exactly one of 'c', 'x' or 't'").await;
        return 1;
    };
    let base = o.dir.as_deref().map_or(proc.cwd.clone(), |d| proc.path(d));
    if !matches!(proc.fs.metadata(&base), Ok(m) if m.kind == NodeKind::Directory) {
        proc.err(&format!(
            "can't change directory to '{}': {}",
            o.dir.as_deref().unwrap_or_default(),
            proc.fs
                .metadata(&base)
                .map_or_else(|e| e.to_string(), |_| "Not a directory".into())
        ))
        .await;
        return 1;
    }
    let archive = o.archive.clone().filter(|a| a != "-");
    match mode {
        TarMode::Create => {
            if o.names.is_empty() {
                proc.err("empty archive").await;
                return 1;
            }
            let (data, listed, status) = match build(&proc, &base, &o).await {
                Ok(r) => r,
                Err(code) => return code,
            };
            let data = if o.gzip {
                gzip_bytes(&data, false, 6)
                    .map(|b| b.to_vec())
                    .unwrap_or_default()
            } else {
                data
            };
            if o.verbose {
                let text: String = listed.iter().map(|n| format!("{n}\n")).collect();
                let _ = if archive.is_some() {
                    emit(&proc, text).await
                } else {
                    proc.stderr.write_str(&text).await.map_err(|_| 1)
                };
            }
            match archive {
                Some(a) => {
                    if let Err(e) = proc.fs.write(&proc.path(&a), &data) {
                        proc.err(&format!("can't open '{a}': {e}")).await;
                        return 1;
                    }
                    status
                }
                None => match emit(&proc, data).await {
                    Ok(()) => status,
                    Err(code) => code,
                },
            }
        }
        TarMode::Extract | TarMode::List => {
            let raw = match &archive {
                Some(a) => match proc.fs.read(&proc.path(a)) {
                    Ok(d) => d.to_vec(),
                    Err(e) => {
                        proc.err(&format!("can't open '{a}': {e}")).await;
                        return 1;
                    }
                },
                None => proc.stdin.read_to_end(MAX_INPUT).await,
            };
            let raw = if o.gzip || raw.starts_with(&[0x1f, 0x8b]) {
                match gzip_bytes(&raw, true, 6) {
                    Ok(d) => d.to_vec(),
                    Err(()) => {
                        proc.err("invalid magic").await;
                        return 1;
                    }
                }
            } else {
                raw
            };
            unpack(&proc, &raw, &base, mode, &o).await
        }
    }
}

/// Builds an archive of the operands (relative to `base`, directories recursively unless
/// `--no-recursion`); returns it, the names stored and the status (1 if some name was missing,
/// after BusyBox's `error exit delayed from previous errors`).
async fn build(
    proc: &Process,
    base: &str,
    o: &TarOptions,
) -> Result<(Vec<u8>, Vec<String>, i32), i32> {
    let mut builder = ::tar::Builder::new(Vec::new());
    let mut listed = Vec::new();
    let mut status = 0;
    let mut said_leading = false;
    for name in &o.names {
        let mut stack = vec![name.trim_end_matches('/').to_string()];
        if name == "/" || name.is_empty() {
            stack = vec![name.clone()];
        }
        while let Some(rel) = stack.pop() {
            let path = fs::join(base, &rel);
            let meta = if o.dereference {
                proc.fs.metadata(&path)
            } else {
                proc.fs.symlink_metadata(&path)
            };
            let meta = match meta {
                Ok(m) => m,
                Err(e) => {
                    proc.err(&format!("{rel}: {e}")).await;
                    status = 1;
                    continue;
                }
            };
            let stored = rel.trim_start_matches('/').to_string();
            if o.excluded(&stored) {
                continue;
            }
            if stored.len() != rel.len() && !std::mem::replace(&mut said_leading, true) {
                proc.err("removing leading '/' from member names").await;
            }
            let mut header = ::tar::Header::new_gnu();
            header.set_mode(meta.mode);
            header.set_mtime(u64::try_from(meta.mtime).unwrap_or(0));
            header.set_uid(0);
            header.set_gid(0);
            let _ = header.set_username("root");
            let _ = header.set_groupname("root");
            match meta.kind {
                NodeKind::Directory => {
                    header.set_entry_type(::tar::EntryType::Directory);
                    header.set_size(0);
                    let dir_name = if stored.is_empty() {
                        "./".to_string()
                    } else {
                        format!("{stored}/")
                    };
                    if builder
                        .append_data(&mut header, &dir_name, std::io::empty())
                        .is_err()
                    {
                        proc.err(&format!("{rel}: can't store")).await;
                        return Err(1);
                    }
                    listed.push(dir_name);
                    if o.no_recursion {
                        continue;
                    }
                    if let Ok(mut entries) = proc.fs.read_dir(&path) {
                        entries.sort_by(|a, b| b.name.cmp(&a.name));
                        for e in entries {
                            stack.push(if rel.ends_with('/') {
                                format!("{rel}{}", e.name)
                            } else {
                                format!("{rel}/{}", e.name)
                            });
                        }
                    }
                }
                NodeKind::Regular => {
                    let data = proc.fs.read(&path).unwrap_or_default();
                    header.set_entry_type(::tar::EntryType::Regular);
                    header.set_size(data.len() as u64);
                    if builder
                        .append_data(&mut header, &stored, &data[..])
                        .is_err()
                    {
                        proc.err(&format!("{rel}: can't store")).await;
                        return Err(1);
                    }
                    listed.push(stored);
                }
                NodeKind::Symlink => {
                    let target = proc.fs.read_link(&path).unwrap_or_default();
                    header.set_entry_type(::tar::EntryType::Symlink);
                    header.set_size(0);
                    if header.set_link_name(&target).is_err()
                        || builder
                            .append_data(&mut header, &stored, std::io::empty())
                            .is_err()
                    {
                        proc.err(&format!("{rel}: can't store")).await;
                        return Err(1);
                    }
                    listed.push(stored);
                }
                NodeKind::CharDevice => {
                    proc.err(&format!("{rel}: socket ignored")).await;
                }
            }
        }
    }
    if status != 0 {
        proc.err("error exit delayed from previous errors").await;
    }
    match builder.into_inner() {
        Ok(data) => Ok((data, listed, status)),
        Err(_) => Err(1),
    }
}

/// Extracts (or lists) an archive under `base`, as the options say.
async fn unpack(proc: &Process, raw: &[u8], base: &str, mode: TarMode, o: &TarOptions) -> i32 {
    let Ok(entries) = read_entries(raw) else {
        proc.err("invalid tar magic").await;
        return 1;
    };
    let list = o.verbose || mode == TarMode::List;
    let mut listed = String::new();
    let seen = entries.len();
    let mut found = vec![false; o.names.len()];
    let mut said_leading = false;
    for entry in entries {
        let name = entry.name.clone();
        let trimmed = name.trim_end_matches('/');
        let mut wanted = o.names.is_empty();
        for (k, want) in o.names.iter().enumerate() {
            let want = want.trim_end_matches('/');
            if trimmed == want || name.starts_with(&format!("{want}/")) {
                found[k] = true;
                wanted = true;
            }
        }
        if !wanted || o.excluded(&name) {
            continue;
        }
        // --strip-components drops leading components; a member left with none is skipped.
        let stripped: Vec<&str> = name
            .split('/')
            .filter(|c| !c.is_empty())
            .skip(o.strip)
            .collect();
        if stripped.is_empty() {
            continue;
        }
        if list {
            listed.push_str(&name);
            listed.push('\n');
        }
        if mode == TarMode::List {
            continue;
        }
        if name.starts_with('/') && !std::mem::replace(&mut said_leading, true) {
            proc.err("removing leading '/' from member names").await;
        }
        let rel = stripped.join("/");
        if stripped.contains(&"..") {
            proc.err(&format!("skipping unsafe path '{name}'")).await;
            continue;
        }
        let target_path = fs::join(base, &rel);
        let header_mode = if o.no_same_permissions {
            entry.mode & !0o022
        } else {
            entry.mode
        };
        if entry.dir {
            if o.to_stdout {
                continue;
            }
            if let Err(e) = proc.fs.mkdir_all(&target_path, header_mode) {
                proc.err(&format!("can't create directory '{rel}': {e}"))
                    .await;
                return 1;
            }
            let _ = proc.fs.chmod(&target_path, header_mode);
            continue;
        }
        if let Some(target) = &entry.link {
            if o.to_stdout || (o.keep_old && proc.fs.symlink_metadata(&target_path).is_ok()) {
                continue;
            }
            if let Some((parent, _)) = target_path.rsplit_once('/') {
                let _ = proc
                    .fs
                    .mkdir_all(if parent.is_empty() { "/" } else { parent }, 0o755);
            }
            let _ = proc.fs.remove(&target_path, false, false);
            if let Err(e) = proc.fs.symlink(target, &target_path) {
                proc.err(&format!("can't create symlink '{rel}' to '{target}': {e}"))
                    .await;
                return 1;
            }
            continue;
        }
        let Some(data) = entry.data else { continue };
        if o.to_stdout {
            if let Err(code) = emit(proc, data).await {
                return code;
            }
            continue;
        }
        if o.keep_old && proc.fs.exists(&target_path) {
            continue;
        }
        if let Some((parent, _)) = target_path.rsplit_once('/') {
            let _ = proc
                .fs
                .mkdir_all(if parent.is_empty() { "/" } else { parent }, 0o755);
        }
        if let Err(e) = proc.fs.write(&target_path, &data) {
            proc.err(&format!("can't open '{rel}': {e}")).await;
            return 1;
        }
        let _ = proc.fs.chmod(&target_path, header_mode);
        if let Some(t) = entry.mtime.filter(|_| !o.touch) {
            let _ = proc.fs.touch(&target_path, t);
        }
    }
    if seen == 0 && !raw.iter().all(|b| *b == 0) {
        proc.err("invalid tar magic").await;
        return 1;
    }
    let mut status = 0;
    if let Some(k) = found.iter().position(|f| !f) {
        proc.err(&format!("{}: not found in archive", o.names[k]))
            .await;
        status = 1;
    }
    if list && !listed.is_empty() {
        let code = finish(proc, listed).await;
        return if code == 0 { status } else { code };
    }
    status
}

/// One member of an archive, read out of it.
struct TarEntry {
    /// Its path as stored.
    name: String,
    /// A directory.
    dir: bool,
    /// Permission bits.
    mode: u32,
    /// Modification time.
    mtime: Option<i64>,
    /// A regular file's content (`None` for other kinds).
    data: Option<Vec<u8>>,
    /// A symbolic link's target.
    link: Option<String>,
}

/// Reads every member of an archive.
fn read_entries(raw: &[u8]) -> Result<Vec<TarEntry>, ()> {
    let mut archive = ::tar::Archive::new(raw);
    let mut out = Vec::new();
    for entry in archive.entries().map_err(|_| ())? {
        let mut entry = entry.map_err(|_| ())?;
        let header = entry.header();
        let kind = header.entry_type();
        let mode = header.mode().unwrap_or(0o644) & 0o7777;
        let mtime = header.mtime().ok().and_then(|t| i64::try_from(t).ok());
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let link = (kind == ::tar::EntryType::Symlink)
            .then(|| {
                entry
                    .link_name_bytes()
                    .map(|l| String::from_utf8_lossy(&l).into_owned())
            })
            .flatten();
        let data = if matches!(
            kind,
            ::tar::EntryType::Regular | ::tar::EntryType::Continuous
        ) {
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).map_err(|_| ())?;
            Some(data)
        } else {
            None
        };
        out.push(TarEntry {
            name,
            dir: kind == ::tar::EntryType::Directory,
            mode,
            mtime,
            data,
            link,
        });
    }
    Ok(out)
}
