//! SPDY/3 name/value header blocks: their layout ([`encode_block`], [`decode_block`]) and their
//! compression, zlib with the draft's preset [`DICTIONARY`] and
//! one running context per direction for the whole connection ([`Compressor`],
//! [`Decompressor`]): each block ends in a zlib sync flush and the next one continues the same
//! stream, so blocks must be compressed and decompressed in the order their frames travel.
//!
//! A block is a 32-bit count of pairs, then per pair a 32-bit length and the name, a 32-bit
//! length and the value; names are lowercase and a value holding several values separates them
//! with NUL bytes.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::dictionary::DICTIONARY;

/// The largest decompressed header block accepted (a zlib bomb stops here).
pub const MAX_BLOCK: usize = 256 * 1024;

/// A stream's headers, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    /// No headers.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same headers with `name: value` added (the name lowercased, as SPDY requires).
    #[cfg(test)]
    pub fn with(mut self, name: &str, value: &str) -> Self {
        self.0.push((name.to_ascii_lowercase(), value.to_string()));
        self
    }

    /// The first value of `name` (compared without case; the first of NUL-separated values).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.split('\0').next())
    }
}

/// Why a header block could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    /// The decompressed block ends inside a length or a string.
    #[error("the header block is truncated")]
    Truncated,
    /// The decompressed block is longer than [`MAX_BLOCK`].
    #[error("the header block is longer than {MAX_BLOCK} bytes")]
    TooLarge,
    /// zlib refused the compressed bytes (the connection's context is lost with it).
    #[error("the header block does not decompress")]
    Inflate(#[source] flate2::DecompressError),
    /// zlib failed to compress.
    #[error("the header block does not compress")]
    Deflate(#[source] flate2::CompressError),
}

/// The uncompressed block of `headers`.
pub fn encode_block(headers: &Headers) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(headers.0.len() as u32).to_be_bytes());
    for (name, value) in &headers.0 {
        out.extend_from_slice(&(name.len() as u32).to_be_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(value.len() as u32).to_be_bytes());
        out.extend_from_slice(value.as_bytes());
    }
    out
}

/// Reads an uncompressed block (bytes that are not UTF-8 are replaced, as nothing here reads
/// them).
pub fn decode_block(raw: &[u8]) -> Result<Headers, HeaderError> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], HeaderError> {
        let end = at.checked_add(n).ok_or(HeaderError::Truncated)?;
        let part = raw.get(at..end).ok_or(HeaderError::Truncated)?;
        at = end;
        Ok(part)
    };
    let number = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let count = number(take(4)?);
    let mut pairs = Vec::with_capacity(count.min(raw.len() / 8));
    for _ in 0..count {
        let len = number(take(4)?);
        let name = String::from_utf8_lossy(take(len)?).into_owned();
        let len = number(take(4)?);
        let value = String::from_utf8_lossy(take(len)?).into_owned();
        pairs.push((name, value));
    }
    Ok(Headers(pairs))
}

/// The compressing side of one direction of a connection.
pub struct Compressor(Compress);

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("total_in", &self.0.total_in())
            .finish_non_exhaustive()
    }
}

impl Compressor {
    /// A context primed with the dictionary.
    pub fn new() -> Result<Self, HeaderError> {
        let mut z = Compress::new(Compression::default(), true);
        z.set_dictionary(&DICTIONARY)
            .map_err(HeaderError::Deflate)?;
        Ok(Compressor(z))
    }

    /// The compressed block of `headers`, ending in a sync flush.
    pub fn compress(&mut self, headers: &Headers) -> Result<Vec<u8>, HeaderError> {
        let raw = encode_block(headers);
        let start = self.0.total_in();
        let mut out = Vec::with_capacity(raw.len() / 2 + 64);
        loop {
            if out.len() == out.capacity() {
                out.reserve(out.capacity().max(64));
            }
            let consumed = usize::try_from(self.0.total_in() - start).unwrap_or(usize::MAX);
            let rest = raw.get(consumed..).unwrap_or_default();
            self.0
                .compress_vec(rest, &mut out, FlushCompress::Sync)
                .map_err(HeaderError::Deflate)?;
            let consumed = usize::try_from(self.0.total_in() - start).unwrap_or(usize::MAX);
            // A sync flush is complete once zlib stops short of filling the output.
            if consumed >= raw.len() && out.len() < out.capacity() {
                return Ok(out);
            }
        }
    }
}

/// The decompressing side of one direction of a connection.
pub struct Decompressor(Decompress);

impl std::fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decompressor")
            .field("total_in", &self.0.total_in())
            .finish_non_exhaustive()
    }
}

impl Default for Decompressor {
    fn default() -> Self {
        Self::new()
    }
}

impl Decompressor {
    /// A context that takes the dictionary when the stream asks for it.
    pub fn new() -> Self {
        Decompressor(Decompress::new(true))
    }

    /// The headers of the next compressed block.
    pub fn decompress(&mut self, block: &[u8]) -> Result<Headers, HeaderError> {
        let start = self.0.total_in();
        let mut out = Vec::with_capacity(block.len() * 4 + 64);
        loop {
            if out.len() == out.capacity() {
                if out.len() >= MAX_BLOCK {
                    return Err(HeaderError::TooLarge);
                }
                out.reserve(out.capacity().min(MAX_BLOCK - out.len()).max(64));
            }
            let consumed = usize::try_from(self.0.total_in() - start).unwrap_or(usize::MAX);
            let rest = block.get(consumed..).unwrap_or_default();
            let before = (self.0.total_in(), out.len());
            match self.0.decompress_vec(rest, &mut out, FlushDecompress::Sync) {
                Ok(Status::StreamEnd) => break,
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.0
                        .set_dictionary(&DICTIONARY)
                        .map_err(HeaderError::Inflate)?;
                    continue;
                }
                Err(e) => return Err(HeaderError::Inflate(e)),
            }
            let consumed = usize::try_from(self.0.total_in() - start).unwrap_or(usize::MAX);
            if consumed >= block.len() && out.len() < out.capacity() {
                break;
            }
            if (self.0.total_in(), out.len()) == before {
                // No progress with input left and room to write: the block is cut short.
                return Err(HeaderError::Truncated);
            }
        }
        if out.len() > MAX_BLOCK {
            return Err(HeaderError::TooLarge);
        }
        decode_block(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn headers() -> impl Strategy<Value = Headers> {
        proptest::collection::vec(("[a-z][a-z0-9-]{0,20}", "[ -~]{0,60}"), 0..10).prop_map(Headers)
    }

    #[test]
    fn a_block_lists_the_count_then_length_prefixed_names_and_values() {
        let h = Headers::new()
            .with("streamType", "error")
            .with("port", "80");
        assert_eq!(
            encode_block(&h),
            b"\0\0\0\x02\0\0\0\x0astreamtype\0\0\0\x05error\0\0\0\x04port\0\0\0\x0280"
        );
        let back = decode_block(&encode_block(&h)).ok();
        assert_eq!(
            back.as_ref().and_then(|b| b.get("StreamType")),
            Some("error")
        );
        assert_eq!(back.as_ref().and_then(|b| b.get("missing")), None);
    }

    #[test]
    fn nul_separated_values_read_as_their_first() {
        let h = Headers::new().with("x", "a\0b");
        assert_eq!(h.get("x"), Some("a"));
    }

    #[test]
    fn truncated_blocks_are_refused() {
        assert!(matches!(decode_block(&[0, 0]), Err(HeaderError::Truncated)));
        assert!(matches!(
            decode_block(&[0, 0, 0, 1, 0, 0, 0, 9, b'a']),
            Err(HeaderError::Truncated)
        ));
        assert!(matches!(
            decode_block(&[0xff, 0xff, 0xff, 0xff]),
            Err(HeaderError::Truncated)
        ));
    }

    #[test]
    fn the_stream_names_the_dictionary_by_its_id() {
        let mut c = Compressor::new().expect("zlib starts");
        let block = c
            .compress(&Headers::new().with("a", "b"))
            .expect("compressed");
        // zlib header: FDICT set, then the dictionary's Adler-32.
        assert_eq!(block.get(1).map(|f| f & 0x20), Some(0x20));
        assert_eq!(block.get(2..6), Some(&[0xe3, 0xc6, 0xa7, 0xc2][..]));
    }

    #[test]
    fn junk_does_not_decompress_and_does_not_panic() {
        let mut d = Decompressor::new();
        assert!(d.decompress(b"\x78\xbb\xff\xff\xff\xff garbage").is_err());
    }

    proptest! {
        #[test]
        fn blocks_round_trip_through_one_context_per_direction(
            blocks in proptest::collection::vec(headers(), 1..6),
        ) {
            let mut c = Compressor::new().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut d = Decompressor::new();
            for h in &blocks {
                let wire = c.compress(h).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let back = d.decompress(&wire).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&back, h);
            }
        }

        #[test]
        fn decompressing_junk_never_panics(junk in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Decompressor::new().decompress(&junk);
        }
    }
}
