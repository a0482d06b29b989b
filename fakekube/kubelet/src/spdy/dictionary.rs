//! The preset zlib dictionary of SPDY/3 header compression (section 2.6.10.1 of the draft).
//!
//! The draft prints it as 1423 bytes; they are a list of common header names and values, each
//! preceded by its length as a 32-bit big-endian number (the shape of a name/value block), then
//! a run of plain text (status codes and phrases, dates, content types). It is built here from
//! that structure; a test checks its length and its Adler-32, which is the dictionary id every
//! SPDY/3 zlib stream carries (`0xe3c6a7c2`).

use std::sync::LazyLock;

/// The length-prefixed entries, in the draft's order.
const ENTRIES: &[&str] = &[
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];

/// The plain text after the entries.
const TAIL: &[&str] = &[
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information",
    "204 No Content",
    "301 Moved Permanently",
    "400 Bad Request",
    "401 Unauthorized",
    "403 Forbidden",
    "404 Not Found",
    "500 Internal Server Error",
    "501 Not Implemented",
    "503 Service Unavailable",
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT",
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,",
    "text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdch",
    "charset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
];

/// The dictionary's bytes.
pub static DICTIONARY: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut out = Vec::with_capacity(1423);
    for entry in ENTRIES {
        out.extend_from_slice(&(entry.len() as u32).to_be_bytes());
        out.extend_from_slice(entry.as_bytes());
    }
    for part in TAIL {
        out.extend_from_slice(part.as_bytes());
    }
    out
});

#[cfg(test)]
mod tests {
    use super::*;

    /// Adler-32 (RFC 1950), written out so the test does not lean on the codec it checks.
    fn adler32(data: &[u8]) -> u32 {
        let (mut a, mut b) = (1u32, 0u32);
        for &byte in data {
            a = (a + u32::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        (b << 16) | a
    }

    #[test]
    fn the_dictionary_has_the_drafts_length_and_dictionary_id() {
        assert_eq!(DICTIONARY.len(), 1423);
        assert_eq!(adler32(&DICTIONARY), 0xe3c6_a7c2);
    }
}
