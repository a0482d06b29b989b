//! Programs that compress or encode data: `gzip`, `gunzip`, `zcat` and `base64`, worded as
//! BusyBox words them (`tar` is [`super::tar`], the checksums [`super::digest`]). Formats
//! come from crates: `flate2` (gzip), `base64`.

use std::io::Write;

use base64::Engine;
use bytes::Bytes;
use flate2::Compression;
use flate2::write::{GzEncoder, MultiGzDecoder};

use super::cli::{emit, finish, open_input, slurp, usage};
use fakekube_runtime::process::Process;

/// Streams `input` through a gzip encoder (or decoder) to stdout; `Err` holds the exit code.
async fn pipe_gzip(proc: &Process, name: &str, decompress: bool, level: u32) -> Result<(), i32> {
    let input = match open_input(proc, name) {
        Ok(i) => i,
        Err(e) => {
            proc.err(&format!("can't open '{name}': {e}")).await;
            return Err(1);
        }
    };
    let mut coder = Coder::new(decompress, level);
    let mut first = true;
    while let Some(chunk) = input.read().await {
        if decompress
            && std::mem::take(&mut first)
            && !GZIP_MAGIC.starts_with(&chunk[..chunk.len().min(2)])
        {
            proc.err("invalid magic").await;
            return Err(1);
        }
        let out = match coder.push(&chunk) {
            Ok(out) => out,
            Err(()) => {
                proc.err("invalid magic").await;
                return Err(1);
            }
        };
        emit(proc, out).await?;
    }
    match coder.finish() {
        Ok(out) => emit(proc, out).await,
        Err(()) => {
            proc.err("unexpected end of file").await;
            Err(1)
        }
    }
}

/// The first bytes of a gzip stream.
const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// A gzip encoder or decoder that gives back what it produced after each push.
enum Coder {
    /// Compressing.
    Encode(GzEncoder<Vec<u8>>),
    /// Decompressing (concatenated members too, as gunzip does).
    Decode(MultiGzDecoder<Vec<u8>>),
}

impl Coder {
    /// A coder.
    fn new(decompress: bool, level: u32) -> Self {
        if decompress {
            Coder::Decode(MultiGzDecoder::new(Vec::new()))
        } else {
            Coder::Encode(GzEncoder::new(Vec::new(), Compression::new(level)))
        }
    }

    /// Feeds bytes; returns the output produced so far.
    fn push(&mut self, data: &[u8]) -> Result<Bytes, ()> {
        match self {
            Coder::Encode(e) => {
                e.write_all(data).map_err(|_| ())?;
                Ok(Bytes::from(std::mem::take(e.get_mut())))
            }
            Coder::Decode(d) => {
                d.write_all(data).map_err(|_| ())?;
                Ok(Bytes::from(std::mem::take(d.get_mut())))
            }
        }
    }

    /// Ends the stream; returns the rest of the output.
    fn finish(self) -> Result<Bytes, ()> {
        match self {
            Coder::Encode(e) => e.finish().map(Bytes::from).map_err(|_| ()),
            Coder::Decode(d) => d.finish().map(Bytes::from).map_err(|_| ()),
        }
    }
}

/// Compresses or decompresses bytes whole.
pub(super) fn gzip_bytes(data: &[u8], decompress: bool, level: u32) -> Result<Bytes, ()> {
    let mut c = Coder::new(decompress, level);
    let mut out = c.push(data)?.to_vec();
    out.extend_from_slice(&c.finish()?);
    Ok(Bytes::from(out))
}

/// `gzip [-cdfk1-9] [FILE]…`, `gunzip [-cfk] [FILE]…`, `zcat [FILE]…`: without files, stdin
/// to stdout; with files, `FILE` becomes `FILE.gz` (and back), the original removed unless
/// `-k` or `-c`.
pub(crate) async fn gzip(proc: Process) -> i32 {
    let name = proc.name().to_string();
    let mut decompress = name != "gzip";
    let mut to_stdout = name == "zcat";
    let (mut keep, mut force, mut level) = (false, false, 6);
    let mut files = Vec::new();
    for a in proc.args() {
        if a.len() > 1 && a.starts_with('-') && !a.starts_with("--") {
            for c in a[1..].chars() {
                match c {
                    'd' => decompress = true,
                    'c' => to_stdout = true,
                    'k' => keep = true,
                    'f' => force = true,
                    'n' | 'N' | 'q' | 'v' | 't' => {}
                    d @ '1'..='9' => level = d.to_digit(10).unwrap_or(6),
                    other => {
                        return usage(&proc, &format!("invalid option -- '{other}'"), 1).await;
                    }
                }
            }
        } else if a == "--stdout" {
            to_stdout = true;
        } else if a == "--decompress" {
            decompress = true;
        } else if a == "--keep" {
            keep = true;
        } else if a == "--force" {
            force = true;
        } else {
            files.push(a.clone());
        }
    }
    if files.is_empty() {
        files.push("-".into());
    }
    let mut status = 0;
    for f in &files {
        if f == "-" || to_stdout {
            if let Err(code) = pipe_gzip(&proc, f, decompress, level).await {
                status = code;
            }
            continue;
        }
        let path = proc.path(f);
        let target = if decompress {
            match path
                .strip_suffix(".gz")
                .or_else(|| path.strip_suffix(".tgz"))
            {
                Some(stem) if path.ends_with(".tgz") => format!("{stem}.tar"),
                Some(stem) => stem.to_string(),
                None => {
                    proc.err(&format!("{f}: unknown suffix - ignored")).await;
                    status = 1;
                    continue;
                }
            }
        } else {
            format!("{path}.gz")
        };
        let data = match proc.fs.read(&path) {
            Ok(d) => d,
            Err(e) => {
                proc.err(&format!("can't open '{f}': {e}")).await;
                status = 1;
                continue;
            }
        };
        if proc.fs.exists(&target) && !force {
            proc.err(&format!("can't open '{target}': File exists"))
                .await;
            status = 1;
            continue;
        }
        let Ok(out) = gzip_bytes(&data, decompress, level) else {
            proc.err("invalid magic").await;
            status = 1;
            continue;
        };
        if let Err(e) = proc.fs.write(&target, &out) {
            proc.err(&format!("can't open '{target}': {e}")).await;
            status = 1;
            continue;
        }
        if let Ok(m) = proc.fs.metadata(&path) {
            let _ = proc.fs.chmod(&target, m.mode);
            let _ = proc.fs.touch(&target, m.mtime);
        }
        if !keep {
            let _ = proc.fs.remove(&path, false, false);
        }
    }
    status
}

/// `base64 [-d] [-w COLS] [FILE]`: encodes (wrapped at 76 columns) or decodes.
pub(crate) async fn base64(proc: Process) -> i32 {
    let args = proc.args();
    let (mut decode, mut wrap) = (false, 76usize);
    let mut file = None;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        match a.as_str() {
            "-d" | "--decode" => decode = true,
            "-i" | "--ignore-garbage" => {}
            "-w" => {
                let Some(w) = args.get(i).and_then(|w| w.parse().ok()) else {
                    return usage(&proc, "invalid wrap size", 1).await;
                };
                wrap = w;
                i += 1;
            }
            s if s.starts_with("-w") => match s[2..].parse() {
                Ok(w) => wrap = w,
                Err(_) => {
                    return usage(&proc, &format!("invalid wrap size '{}'", &s[2..]), 1).await;
                }
            },
            s if s.starts_with("--wrap=") => match s[7..].parse() {
                Ok(w) => wrap = w,
                Err(_) => {
                    return usage(&proc, &format!("invalid wrap size '{}'", &s[7..]), 1).await;
                }
            },
            s if s.starts_with('-') && s.len() > 1 => {
                return usage(&proc, &format!("invalid option -- '{}'", &s[1..2]), 1).await;
            }
            _ => file = Some(a.clone()),
        }
    }
    let Some(data) = slurp(&proc, file.as_deref().unwrap_or("-")).await else {
        return 1;
    };
    let engine = base64::engine::general_purpose::STANDARD;
    if decode {
        let clean: Vec<u8> = data
            .into_iter()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        return match engine.decode(&clean) {
            Ok(out) => finish(&proc, out).await,
            Err(_) => {
                proc.err("invalid input").await;
                1
            }
        };
    }
    let text = engine.encode(&data);
    let mut out = String::with_capacity(text.len() + text.len() / 76 + 1);
    if wrap == 0 {
        out.push_str(&text);
    } else {
        for (k, c) in text.chars().enumerate() {
            if k > 0 && k % wrap == 0 {
                out.push('\n');
            }
            out.push(c);
        }
    }
    if !text.is_empty() {
        out.push('\n');
    }
    finish(&proc, out).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_round_trips_and_refuses_garbage() {
        let packed = gzip_bytes(b"hello hello hello", false, 6).expect("compresses");
        assert_eq!(&packed[..2], &[0x1f, 0x8b]);
        let unpacked = gzip_bytes(&packed, true, 6).expect("decompresses");
        assert_eq!(&unpacked[..], b"hello hello hello");
        assert!(gzip_bytes(b"not gzip", true, 6).is_err());
    }
}
