//! Reading a `multipart/form-data` body (RFC 7578), as the runtime image's `/upload` receives
//! the SDK's file: the parts with their field name, file name and content.

/// One part of a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    /// The field name (`name=`).
    pub(crate) name: String,
    /// The file name (`filename=`), for a file field.
    pub(crate) filename: Option<String>,
    /// The content.
    pub(crate) data: Vec<u8>,
}

/// The boundary a `Content-Type: multipart/form-data; boundary=…` names.
pub(crate) fn boundary(content_type: &str) -> Option<String> {
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"').to_string())
    })
}

/// The parts of `body`, delimited by `boundary`; `None` when it is not a well-formed form.
pub(crate) fn parse(body: &[u8], boundary: &str) -> Option<Vec<Part>> {
    let delimiter = format!("--{boundary}").into_bytes();
    let mut parts = Vec::new();
    let mut rest = &body[find(body, &delimiter)? + delimiter.len()..];
    loop {
        if rest.starts_with(b"--") {
            return Some(parts);
        }
        rest = rest.strip_prefix(b"\r\n")?;
        let head_end = find(rest, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&rest[..head_end]).into_owned();
        rest = &rest[head_end + 4..];
        let mut closing = b"\r\n".to_vec();
        closing.extend_from_slice(&delimiter);
        let end = find(rest, &closing)?;
        let data = rest[..end].to_vec();
        rest = &rest[end + closing.len()..];
        let disposition = head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case("content-disposition")
                .then(|| v.trim().to_string())
        })?;
        parts.push(Part {
            name: param(&disposition, "name").unwrap_or_default(),
            filename: param(&disposition, "filename"),
            data,
        });
    }
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A parameter of a `Content-Disposition` value (`form-data; name="file"; filename="a.txt"`),
/// unquoted, with the percent-escapes HTML5 forms use for quotes and line breaks decoded.
fn param(value: &str, name: &str) -> Option<String> {
    let mut rest = value.split_once(';')?.1;
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let after = after.trim_start();
        let (raw, next) = if let Some(quoted) = after.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, e)) = chars.next() {
                            out.push(e);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => out.push(c),
                }
            }
            (out, quoted.get(end..).unwrap_or_default())
        } else {
            let end = after.find(';').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        if key.trim().eq_ignore_ascii_case(name) {
            return Some(
                raw.replace("%22", "\"")
                    .replace("%0D", "\r")
                    .replace("%0A", "\n"),
            );
        }
        let next = next.trim_start();
        rest = next.strip_prefix(';').unwrap_or(next);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_yields_its_parts_with_names_and_file_names() {
        let body = b"--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"dir/a \\\"b\\\".txt\"\r\nContent-Type: application/octet-stream\r\n\r\nline1\r\nline2\r\n--xyz\r\nContent-Disposition: form-data; name=note\r\n\r\nhi\r\n--xyz--\r\n";
        let parts = parse(body, "xyz").expect("a well-formed form");
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "file");
        assert_eq!(parts[0].filename.as_deref(), Some("dir/a \"b\".txt"));
        assert_eq!(parts[0].data, b"line1\r\nline2");
        assert_eq!(parts[1].name, "note");
        assert_eq!(parts[1].filename, None);
        assert_eq!(parts[1].data, b"hi");
    }

    #[test]
    fn the_boundary_comes_from_the_content_type() {
        assert_eq!(
            boundary("multipart/form-data; boundary=abc123").as_deref(),
            Some("abc123")
        );
        assert_eq!(boundary("application/json"), None);
        assert_eq!(parse(b"garbage", "x"), None);
    }
}
