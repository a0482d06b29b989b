//! The checksum programs, as BusyBox's: `md5sum`, `sha1sum`, `sha256sum` (`-c` checks a
//! list). SHA-256 comes from the `sha2` crate; MD5 (RFC 1321) and SHA-1 (FIPS 180-4) are
//! written here, streaming, as small as they are.

use sha2::{Digest, Sha256};

use super::cli::{emit, open_input, slurp, usage};
use fakekube_runtime::process::Process;

/// Which checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algo {
    Md5,
    Sha1,
    Sha256,
}

/// A running checksum.
enum Hasher {
    Md5(Blocks<4>),
    Sha1(Blocks<5>),
    Sha256(Box<Sha256>),
}

/// The 64-byte block framing MD5 and SHA-1 share: state words, a partial block, the length.
struct Blocks<const N: usize> {
    state: [u32; N],
    buf: Vec<u8>,
    len: u64,
}

impl<const N: usize> Blocks<N> {
    /// Feeds bytes, compressing each full block with `f`.
    fn update(&mut self, data: &[u8], f: fn(&mut [u32; N], &[u8])) {
        self.len = self.len.wrapping_add(data.len() as u64);
        self.buf.extend_from_slice(data);
        let full = self.buf.len() / 64 * 64;
        for block in self.buf[..full].chunks_exact(64) {
            f(&mut self.state, block);
        }
        self.buf.drain(..full);
    }

    /// Pads (`0x80`, zeros, the bit length in `big` or little endian) and compresses the rest.
    fn finish(mut self, f: fn(&mut [u32; N], &[u8]), big: bool) -> [u32; N] {
        let bits = self.len.wrapping_mul(8);
        let mut pad = vec![0x80u8];
        while (self.buf.len() + pad.len()) % 64 != 56 {
            pad.push(0);
        }
        pad.extend_from_slice(&if big {
            bits.to_be_bytes()
        } else {
            bits.to_le_bytes()
        });
        let len = self.len;
        self.update(&pad, f);
        self.len = len;
        self.state
    }
}

/// MD5's compression of one block.
fn md5_block(s: &mut [u32; 4], block: &[u8]) {
    const SHIFTS: [u32; 16] = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
    let m: Vec<u32> = block
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let (mut a, mut b, mut c, mut d) = (s[0], s[1], s[2], s[3]);
    for i in 0..64 {
        let (f, g) = match i / 16 {
            0 => ((b & c) | (!b & d), i),
            1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
            2 => (b ^ c ^ d, (3 * i + 5) % 16),
            _ => (c ^ (b | !d), (7 * i) % 16),
        };
        let k = ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32;
        let rotated = a
            .wrapping_add(f)
            .wrapping_add(k)
            .wrapping_add(m[g])
            .rotate_left(SHIFTS[(i / 16) * 4 + i % 4]);
        a = d;
        d = c;
        c = b;
        b = b.wrapping_add(rotated);
    }
    for (x, y) in s.iter_mut().zip([a, b, c, d]) {
        *x = x.wrapping_add(y);
    }
}

/// SHA-1's compression of one block.
fn sha1_block(s: &mut [u32; 5], block: &[u8]) {
    let mut w = [0u32; 80];
    for (i, c) in block.chunks_exact(4).enumerate() {
        w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
    }
    for i in 16..80 {
        w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
    }
    let (mut a, mut b, mut c, mut d, mut e) = (s[0], s[1], s[2], s[3], s[4]);
    for (i, wi) in w.iter().enumerate() {
        let (f, k) = match i / 20 {
            0 => ((b & c) | (!b & d), 0x5a82_7999),
            1 => (b ^ c ^ d, 0x6ed9_eba1),
            2 => ((b & c) | (b & d) | (c & d), 0x8f1b_bcdc),
            _ => (b ^ c ^ d, 0xca62_c1d6),
        };
        let t = a
            .rotate_left(5)
            .wrapping_add(f)
            .wrapping_add(e)
            .wrapping_add(k)
            .wrapping_add(*wi);
        e = d;
        d = c;
        c = b.rotate_left(30);
        b = a;
        a = t;
    }
    for (x, y) in s.iter_mut().zip([a, b, c, d, e]) {
        *x = x.wrapping_add(y);
    }
}

impl Hasher {
    /// A fresh checksum.
    fn new(algo: Algo) -> Self {
        match algo {
            Algo::Md5 => Hasher::Md5(Blocks {
                state: [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476],
                buf: Vec::new(),
                len: 0,
            }),
            Algo::Sha1 => Hasher::Sha1(Blocks {
                state: [
                    0x6745_2301,
                    0xefcd_ab89,
                    0x98ba_dcfe,
                    0x1032_5476,
                    0xc3d2_e1f0,
                ],
                buf: Vec::new(),
                len: 0,
            }),
            Algo::Sha256 => Hasher::Sha256(Box::new(Sha256::new())),
        }
    }

    /// Feeds bytes.
    fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Md5(b) => b.update(data, md5_block),
            Hasher::Sha1(b) => b.update(data, sha1_block),
            Hasher::Sha256(h) => h.update(data),
        }
    }

    /// The digest.
    fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Md5(b) => b
                .finish(md5_block, false)
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect(),
            Hasher::Sha1(b) => b
                .finish(sha1_block, true)
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        }
    }
}

/// `md5sum`, `sha1sum`, `sha256sum` `[-c] [FILE]…`: `HASH  NAME` lines, or checks such
/// lines.
pub(crate) async fn sum(proc: Process) -> i32 {
    let algo = match proc.name() {
        "md5sum" => Algo::Md5,
        "sha1sum" => Algo::Sha1,
        _ => Algo::Sha256,
    };
    let mut check = false;
    let mut files = Vec::new();
    for a in proc.args() {
        match a.as_str() {
            "-c" | "--check" => check = true,
            "-b" | "-t" | "-s" | "-w" | "--status" | "--quiet" => {}
            s if s.starts_with('-') && s.len() > 1 => {
                return usage(&proc, &format!("invalid option -- '{}'", &s[1..2]), 1).await;
            }
            _ => files.push(a.clone()),
        }
    }
    if files.is_empty() {
        files.push("-".into());
    }
    let mut status = 0;
    for f in &files {
        let Some(digest) = hash(&proc, algo, f).await else {
            status = 1;
            continue;
        };
        if !check {
            if let Err(code) = emit(&proc, format!("{digest}  {f}\n")).await {
                return code;
            }
            continue;
        }
        let Some(list) = slurp(&proc, f).await else {
            status = 1;
            continue;
        };
        let (mut total, mut bad) = (0, 0);
        for line in String::from_utf8_lossy(&list).lines() {
            let Some((want, name)) = line.split_once("  ").or_else(|| line.split_once(" *")) else {
                continue;
            };
            total += 1;
            let ok = hash(&proc, algo, name).await.is_some_and(|got| got == want);
            if !ok {
                bad += 1;
            }
            let verdict = if ok { "OK" } else { "FAILED" };
            if let Err(code) = emit(&proc, format!("{name}: {verdict}\n")).await {
                return code;
            }
        }
        if bad > 0 {
            proc.err(&format!(
                "WARNING: {bad} of {total} computed checksums did NOT match"
            ))
            .await;
            status = 1;
        }
    }
    status
}

/// The SHA-256 of an operand, in hex; `None` after an error message.
async fn hash(proc: &Process, algo: Algo, name: &str) -> Option<String> {
    let input = match open_input(proc, name) {
        Ok(i) => i,
        Err(e) => {
            proc.err(&format!("can't open '{name}': {e}")).await;
            return None;
        }
    };
    let mut h = Hasher::new(algo);
    while let Some(chunk) = input.read().await {
        h.update(&chunk);
    }
    Some(h.finish().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(algo: Algo, data: &[u8]) -> String {
        let mut h = Hasher::new(algo);
        // In two pieces, across a block boundary when long enough.
        let (a, b) = data.split_at(data.len() / 2);
        h.update(a);
        h.update(b);
        h.finish().iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn md5_and_sha1_match_their_published_test_vectors() {
        assert_eq!(hex(Algo::Md5, b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(Algo::Md5, b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            hex(
                Algo::Md5,
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890"
            ),
            "57edf4a22be3c955ac49da2e2107b67a"
        );
        assert_eq!(
            hex(Algo::Sha1, b"abc"),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex(
                Algo::Sha1,
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            ),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
    }
}
