//! `httpd`: BusyBox's small static web server, over the pod's network and filesystem.
//!
//! `httpd -f -p PORT -h DIR` serves the files under DIR: one request per connection (every
//! reply says `Connection: close`), `GET` and `HEAD` only, a directory URL without its slash
//! redirected (302) to the one with it, a directory URL served from its `index.html`, and
//! replies worded as BusyBox words them: `Content-type` by file extension (none for unknown
//! ones), `Last-Modified`, `ETag` (`If-None-Match` gives 304), `Accept-Ranges` and one
//! `Range` (206), and the small HTML error pages (400, 404, 408, 501). Without `-f` it serves
//! in the background and exits 0 at once, as a daemon would; `-i` serves one request on its
//! standard streams (inetd mode). `-d STRING` and `-e STRING` print STRING URL-decoded or
//! HTML-encoded.

use std::fmt::Write as _;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::stream_over;
use crate::cli::{getopt, usage};
use fakekube_runtime::fs::{self, NodeKind, PodFs};
use fakekube_runtime::net::Listener;
use fakekube_runtime::process::Process;

/// The port without `-p`.
const DEFAULT_PORT: u16 = 80;
/// How long a client has to send its request head (BusyBox's alarm).
const HEADER_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest request line or header line kept (longer ones are cut, as BusyBox's buffer cuts
/// them).
const MAX_LINE: usize = 8 * 1024;
/// The most request-head bytes read before the request is refused.
const MAX_HEAD: usize = 64 * 1024;

/// The MIME types BusyBox knows, by extension (the part after the last `.`).
const MIME_TYPES: &[(&[&str], &str)] = &[
    (&["txt", "h", "c", "cc", "cpp"], "text/plain"),
    (&["htm", "html"], "text/html"),
    (&["jpg", "jpeg"], "image/jpeg"),
    (&["gif"], "image/gif"),
    (&["png"], "image/png"),
    (&["svg"], "image/svg+xml"),
    (&["css"], "text/css"),
    (&["js"], "application/javascript"),
    (&["wav"], "audio/wav"),
    (&["avi"], "video/x-msvideo"),
    (&["qt", "mov"], "video/quicktime"),
    (&["mpe", "mpeg"], "video/mpeg"),
    (&["mid", "midi"], "audio/midi"),
    (&["mp3"], "audio/mpeg"),
];

/// The replies httpd sends, with BusyBox's reason phrases and error-page lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// 200.
    Ok,
    /// 206.
    PartialContent,
    /// 302, to the directory URL with its slash.
    Found,
    /// 304.
    NotModified,
    /// 400.
    BadRequest,
    /// 404.
    NotFound,
    /// 408.
    RequestTimeout,
    /// 413.
    EntityTooLarge,
    /// 501.
    NotImplemented,
}

impl Reply {
    /// The status code.
    fn code(self) -> u16 {
        match self {
            Reply::Ok => 200,
            Reply::PartialContent => 206,
            Reply::Found => 302,
            Reply::NotModified => 304,
            Reply::BadRequest => 400,
            Reply::NotFound => 404,
            Reply::RequestTimeout => 408,
            Reply::EntityTooLarge => 413,
            Reply::NotImplemented => 501,
        }
    }

    /// The reason phrase.
    fn reason(self) -> &'static str {
        match self {
            Reply::Ok => "OK",
            Reply::PartialContent => "Partial Content",
            Reply::Found => "Found",
            Reply::NotModified => "Not Modified",
            Reply::BadRequest => "Bad Request",
            Reply::NotFound => "Not Found",
            Reply::RequestTimeout => "Request Timeout",
            Reply::EntityTooLarge => "Entity Too Large",
            Reply::NotImplemented => "Not Implemented",
        }
    }

    /// The line of the HTML error page, for the replies that have one.
    fn info(self) -> Option<&'static str> {
        match self {
            Reply::BadRequest => Some("Unsupported method"),
            Reply::NotFound => Some("The requested URL was not found"),
            Reply::RequestTimeout => Some("No request appeared within 60 seconds"),
            Reply::EntityTooLarge => Some("Entity Too Large"),
            Reply::NotImplemented => Some("The requested method is not recognized"),
            Reply::Ok | Reply::PartialContent | Reply::Found | Reply::NotModified => None,
        }
    }
}

/// What the server needs to answer requests.
#[derive(Debug, Clone)]
struct Site {
    /// The filesystem.
    fs: PodFs,
    /// The absolute, normalised document root (`-h`).
    root: String,
    /// `-v` given this many times.
    verbose: usize,
    /// Where `-v` logs go (httpd's stderr).
    log: fakekube_runtime::io::Output,
}

/// `httpd [-ifv[v]] [-c CONFFILE] [-p [IP:]PORT] [-u USER[:GRP]] [-r REALM] [-h HOME]`, or
/// `httpd -d/-e STRING`.
pub(crate) async fn httpd(proc: Process) -> i32 {
    let p = match getopt(proc.args(), "c:d:h:e:r:m:u:p:ifv", "cdhermup", &[], &[]) {
        Ok(p) => p,
        Err(e) => return usage(&proc, &e, 1).await,
    };
    if let Some(text) = p.value('d') {
        let decoded = percent_decode(text, false).unwrap_or_default();
        return match proc.out(decoded).await {
            Ok(()) => 0,
            Err(_) => 1,
        };
    }
    if let Some(text) = p.value('e') {
        return match proc.out(html_encode(text)).await {
            Ok(()) => 0,
            Err(_) => 1,
        };
    }
    if p.has('m') {
        proc.err("-m: MD5 passwords are not supported").await;
        return 1;
    }
    let home = p.value('h').unwrap_or(".");
    let root = match fs::normalize(&proc.path(home)) {
        Ok(r)
            if proc
                .fs
                .metadata(&r)
                .is_ok_and(|m| m.kind == NodeKind::Directory) =>
        {
            r
        }
        _ => {
            proc.err(&format!(
                "can't change directory to '{home}': No such file or directory"
            ))
            .await;
            return 1;
        }
    };
    let site = Site {
        fs: proc.fs.clone(),
        root,
        verbose: p.short.iter().filter(|(c, _)| *c == 'v').count(),
        log: proc.stderr.clone(),
    };
    if p.has('i') {
        let stream = stream_over(proc.stdin.clone(), proc.stdout.clone());
        serve_connection(stream, &site, "127.0.0.1:0").await;
        return 0;
    }
    let spec = p.value('p').unwrap_or("80");
    let Some(port) = bind_port(spec) else {
        proc.err(&format!("bad address '{spec}'")).await;
        return 1;
    };
    let listener = match proc.network.listen(port) {
        Ok(l) => l,
        Err(e) => {
            proc.err(&format!("bind: {e}")).await;
            return 1;
        }
    };
    if p.has('f') {
        serve(listener, site, proc.cancel.clone()).await;
        return 0;
    }
    let cancel = proc.cancel.clone();
    tokio::spawn(serve(listener, site, cancel));
    0
}

/// The port of `-p PORT` or `-p IP:PORT` (an address of the pod itself); `None` when it is not
/// one.
fn bind_port(spec: &str) -> Option<u16> {
    if let Ok(n) = spec.parse::<u16>()
        && n != 0
    {
        return Some(n);
    }
    let (addr, port) = match spec.rsplit_once(':') {
        Some((a, p)) => (a.trim_start_matches('[').trim_end_matches(']'), p),
        None => (spec, ""),
    };
    let ip: std::net::IpAddr = addr.parse().ok()?;
    if !(ip.is_loopback() || ip.is_unspecified()) {
        return None;
    }
    if port.is_empty() {
        return Some(DEFAULT_PORT);
    }
    port.parse().ok().filter(|p| *p != 0)
}

/// Accepts connections until `cancel` fires, each served by a task of its own (all of them end
/// with the server).
async fn serve(listener: Listener, site: Site, cancel: CancellationToken) {
    let mut tasks = JoinSet::new();
    loop {
        let conn = tokio::select! {
            c = listener.accept() => c,
            () = cancel.cancelled() => return,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let Some(conn) = conn else { return };
        let site = site.clone();
        let peer = format!("127.0.0.1:{}", conn.peer_port());
        tasks.spawn(async move { serve_connection(conn, &site, &peer).await });
    }
}

/// A request head as httpd reads it.
#[derive(Debug, Default)]
struct Request {
    /// The method, as sent.
    method: String,
    /// The URL, as sent.
    url: String,
    /// `If-None-Match`.
    if_none_match: Option<String>,
    /// `Range: bytes=START-[END]`.
    range: Option<(u64, Option<u64>)>,
}

/// Reads one line (without `\r` and `\n`); `None` at end of input before any byte.
async fn read_line<R: AsyncRead + Unpin>(
    io: &mut R,
    buf: &mut Vec<u8>,
    total: &mut usize,
) -> Option<String> {
    let mut line = Vec::new();
    loop {
        if let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            line.extend(buf.drain(..=pos).filter(|b| *b != b'\r' && *b != b'\n'));
            line.truncate(MAX_LINE);
            return Some(String::from_utf8_lossy(&line).into_owned());
        }
        line.extend(buf.drain(..).filter(|b| *b != b'\r'));
        let mut chunk = [0u8; 4096];
        let n = io.read(&mut chunk).await.ok()?;
        if n == 0 {
            return (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned());
        }
        *total += n;
        if *total > MAX_HEAD {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads the request head: `Ok(None)` when the client sent nothing at all, `Err` for the reply
/// to a head that cannot be read.
async fn read_request<R: AsyncRead + Unpin>(io: &mut R) -> Result<Option<Request>, Reply> {
    let mut buf = Vec::new();
    let mut total = 0;
    let Some(first) = read_line(io, &mut buf, &mut total).await else {
        return if total > MAX_HEAD {
            Err(Reply::EntityTooLarge)
        } else {
            Ok(None)
        };
    };
    if first.is_empty() {
        return Ok(None);
    }
    let (method, rest) = first.split_once(' ').ok_or(Reply::BadRequest)?;
    if !rest.starts_with('/') {
        return Err(Reply::BadRequest);
    }
    let (url, version) = rest.split_once(' ').ok_or(Reply::BadRequest)?;
    if !version.starts_with("HTTP/") {
        return Err(Reply::BadRequest);
    }
    let mut req = Request {
        method: method.to_string(),
        url: url.to_string(),
        ..Request::default()
    };
    loop {
        let Some(line) = read_line(io, &mut buf, &mut total).await else {
            if total > MAX_HEAD {
                return Err(Reply::EntityTooLarge);
            }
            break;
        };
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("If-None-Match") {
            req.if_none_match = Some(value.to_string());
        } else if name.eq_ignore_ascii_case("Range") {
            req.range = parse_range(value);
        }
    }
    Ok(Some(req))
}

/// `bytes=START-` or `bytes=START-END`.
fn parse_range(value: &str) -> Option<(u64, Option<u64>)> {
    let spec = value.strip_prefix("bytes=")?;
    let (start, end) = spec.split_once('-')?;
    let start = start.trim().parse().ok()?;
    let end = match end.trim() {
        "" => None,
        e => Some(e.parse().ok()?),
    };
    Some((start, end))
}

/// Serves one request on `io`, then closes it.
async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(mut io: S, site: &Site, peer: &str) {
    let head = tokio::time::timeout(HEADER_TIMEOUT, read_request(&mut io)).await;
    let out = match head {
        Err(_) => error_reply(Reply::RequestTimeout),
        Ok(Err(reply)) => error_reply(reply),
        Ok(Ok(None)) => Vec::new(),
        Ok(Ok(Some(req))) => {
            if site.verbose > 1 {
                log(site, peer, &format!("url:{}", req.url)).await;
            }
            respond(site, &req)
        }
    };
    if site.verbose > 0
        && let Some(code) = std::str::from_utf8(out.get(9..12).unwrap_or_default())
            .ok()
            .filter(|_| out.starts_with(b"HTTP/1.1 "))
    {
        log(site, peer, &format!("response:{code}")).await;
    }
    let _ = io.write_all(&out).await;
    let _ = io.shutdown().await;
}

/// Prints `PEER: message` on httpd's stderr (BusyBox names the peer instead of itself).
async fn log(site: &Site, peer: &str, message: &str) {
    let _ = site.log.write_str(&format!("{peer}: {message}\n")).await;
}

/// The whole reply (head and body) to a request.
fn respond(site: &Site, req: &Request) -> Vec<u8> {
    let is_get = req.method.eq_ignore_ascii_case("GET");
    let is_head = req.method.eq_ignore_ascii_case("HEAD");
    let (path, query) = match req.url.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (req.url.as_str(), None),
    };
    let Some(decoded) = percent_decode(path, true) else {
        return error_reply(Reply::BadRequest);
    };
    let Ok(decoded) = String::from_utf8(decoded) else {
        return error_reply(Reply::NotFound);
    };
    if decoded.is_empty() {
        // An encoded `/` or NUL.
        return error_reply(Reply::NotFound);
    }
    let Some(mut url) = canonical(&decoded) else {
        return error_reply(Reply::BadRequest);
    };
    if !is_get && !is_head {
        return error_reply(Reply::NotImplemented);
    }
    let dir_url = url.ends_with('/');
    if dir_url {
        url.push_str("index.html");
    }
    let file = fs::join(&site.root, url.trim_start_matches('/'));
    let meta = match site.fs.metadata(&file) {
        Ok(m) => m,
        Err(_) => return error_reply(Reply::NotFound),
    };
    if meta.kind == NodeKind::Directory && !dir_url {
        let location = match query {
            Some(q) => format!("{url}/?{q}"),
            None => format!("{url}/"),
        };
        let mut head = status_head(Reply::Found);
        let _ = write!(
            head,
            "Content-type: text/html\r\nLocation: {location}\r\n\r\n"
        );
        return head.into_bytes();
    }
    let Ok(body) = site.fs.read(&file) else {
        return error_reply(Reply::NotFound);
    };
    let size = body.len() as u64;
    let etag = format!("\"{:x}-{:x}\"", meta.mtime, size);
    if req
        .if_none_match
        .as_deref()
        .is_some_and(|tags| tags.contains(&etag))
    {
        let mut head = status_head(Reply::NotModified);
        head.push_str("Content-type: text/html\r\n\r\n");
        return head.into_bytes();
    }
    let range = req.range.and_then(|(start, end)| {
        let last = size.checked_sub(1)?;
        let end = end.filter(|e| *e <= last).unwrap_or(last);
        (start <= end).then_some((start, end))
    });
    let reply = if range.is_some() {
        Reply::PartialContent
    } else {
        Reply::Ok
    };
    let mut head = status_head(reply);
    if let Some(mime) = mime_type(&url) {
        let _ = write!(head, "Content-type: {mime}\r\n");
    }
    let (from, to) = range.unwrap_or((0, size.saturating_sub(1)));
    if let Some((start, end)) = range {
        let _ = write!(head, "Content-Range: bytes {start}-{end}/{size}\r\n");
    }
    let length = if size == 0 { 0 } else { to - from + 1 };
    let _ = write!(
        head,
        "Accept-Ranges: bytes\r\nLast-Modified: {}\r\nETag: {etag}\r\nContent-Length: {length}\r\n\r\n",
        http_date(meta.mtime)
    );
    let mut out = head.into_bytes();
    if !is_head && length > 0 {
        let from = usize::try_from(from).unwrap_or(usize::MAX);
        let to = usize::try_from(to).unwrap_or(usize::MAX);
        out.extend_from_slice(body.get(from..=to).unwrap_or_default());
    }
    out
}

/// The status line, `Date` and `Connection: close`.
fn status_head(reply: Reply) -> String {
    format!(
        "HTTP/1.1 {} {}\r\nDate: {}\r\nConnection: close\r\n",
        reply.code(),
        reply.reason(),
        http_date(time::OffsetDateTime::now_utc().unix_timestamp())
    )
}

/// A reply with no file: the head and, when the reply has one, BusyBox's HTML page.
fn error_reply(reply: Reply) -> Vec<u8> {
    let mut out = status_head(reply);
    out.push_str("Content-type: text/html\r\n\r\n");
    if let Some(info) = reply.info() {
        let (code, reason) = (reply.code(), reply.reason());
        let _ = write!(
            out,
            "<HTML><HEAD><TITLE>{code} {reason}</TITLE></HEAD>\n<BODY><H1>{code} {reason}</H1>\n{info}\n</BODY></HTML>\n"
        );
    }
    out.into_bytes()
}

/// An RFC 1123 date (`Sun, 06 Nov 1994 08:49:37 GMT`) of a Unix time.
fn http_date(secs: i64) -> String {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

/// The MIME type of a URL's extension, when BusyBox knows it.
fn mime_type(url: &str) -> Option<&'static str> {
    let (_, ext) = url.rsplit_once('.')?;
    MIME_TYPES
        .iter()
        .find(|(exts, _)| exts.contains(&ext))
        .map(|(_, mime)| *mime)
}

/// Decodes `%XX` escapes (and, when not `strict`, `+` as a space). `strict` refuses a bad
/// escape (`None`) and an encoded `/` or NUL (an empty result, which the caller answers 404).
fn percent_decode(text: &str, strict: bool) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&c) = bytes.get(i) {
        i += 1;
        if !strict && c == b'+' {
            out.push(b' ');
            continue;
        }
        if c != b'%' {
            out.push(c);
            continue;
        }
        let hex = |b: Option<&u8>| b.and_then(|b| (*b as char).to_digit(16));
        match (hex(bytes.get(i)), hex(bytes.get(i + 1))) {
            (Some(h), Some(l)) => {
                let v = (h * 16 + l) as u8;
                if strict && (v == b'/' || v == 0) {
                    return Some(Vec::new());
                }
                out.push(v);
                i += 2;
            }
            _ if strict => return None,
            _ => out.push(b'%'),
        }
    }
    Some(out)
}

/// The URL path with `//`, `/./` and `/../` resolved (a trailing slash kept); `None` when
/// `..` would leave the root, or the path does not start with `/`.
fn canonical(path: &str) -> Option<String> {
    let rest = path.strip_prefix('/')?;
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    let trailing = path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..");
    if trailing && !out.ends_with('/') {
        out.push('/');
    }
    Some(out)
}

/// `-e`: every byte that is not an ASCII letter or digit as `&#N;`.
fn html_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "&#{b};");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site {
        let fs = PodFs::new(vec![]);
        assert!(fs.mkdir_all("/www/docs", 0o755).is_ok());
        assert!(fs.write("/www/index.html", b"<h1>home</h1>\n").is_ok());
        assert!(fs.write("/www/notes.txt", b"0123456789").is_ok());
        assert!(fs.write("/www/data.json", b"{}").is_ok());
        Site {
            fs,
            root: "/www".into(),
            verbose: 0,
            log: fakekube_runtime::io::Output::null(),
        }
    }

    fn get(url: &str) -> String {
        let req = Request {
            method: "GET".into(),
            url: url.into(),
            ..Request::default()
        };
        String::from_utf8_lossy(&respond(&site(), &req)).into_owned()
    }

    #[test]
    fn a_file_comes_with_busybox_headers_and_its_content_type() {
        let r = get("/notes.txt");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\nDate: "), "{r}");
        assert!(r.contains("\r\nConnection: close\r\nContent-type: text/plain\r\nAccept-Ranges: bytes\r\nLast-Modified: "), "{r}");
        assert!(
            r.contains("\r\nContent-Length: 10\r\n\r\n0123456789"),
            "{r}"
        );
        assert!(!get("/data.json").contains("Content-type"));
    }

    #[test]
    fn a_directory_serves_its_index_and_redirects_without_its_slash() {
        let r = get("/");
        assert!(r.contains("Content-type: text/html\r\n"), "{r}");
        assert!(r.ends_with("<h1>home</h1>\n"), "{r}");
        let r = get("/docs?x=1");
        assert!(r.starts_with("HTTP/1.1 302 Found\r\n"), "{r}");
        assert!(r.contains("\r\nLocation: /docs/?x=1\r\n\r\n"), "{r}");
        assert!(get("/docs/").starts_with("HTTP/1.1 404 Not Found\r\n"));
    }

    #[test]
    fn missing_files_bad_paths_and_other_methods_get_the_error_pages() {
        let r = get("/nope");
        assert!(r.starts_with("HTTP/1.1 404 Not Found\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\n<HTML><HEAD><TITLE>404 Not Found</TITLE></HEAD>\n<BODY><H1>404 Not Found</H1>\nThe requested URL was not found\n</BODY></HTML>\n"), "{r}");
        assert!(get("/../etc/passwd").starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert!(get("/a%zz").starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert!(get("/a%2fb").starts_with("HTTP/1.1 404 Not Found\r\n"));
        let post = Request {
            method: "POST".into(),
            url: "/notes.txt".into(),
            ..Request::default()
        };
        let r = String::from_utf8_lossy(&respond(&site(), &post)).into_owned();
        assert!(r.starts_with("HTTP/1.1 501 Not Implemented\r\n"), "{r}");
    }

    #[test]
    fn head_ranges_and_etags_behave_as_in_busybox() {
        let s = site();
        let head = Request {
            method: "HEAD".into(),
            url: "/notes.txt".into(),
            ..Request::default()
        };
        let r = String::from_utf8_lossy(&respond(&s, &head)).into_owned();
        assert!(r.ends_with("Content-Length: 10\r\n\r\n"), "{r}");
        let ranged = Request {
            method: "GET".into(),
            url: "/notes.txt".into(),
            range: Some((2, Some(4))),
            ..Request::default()
        };
        let r = String::from_utf8_lossy(&respond(&s, &ranged)).into_owned();
        assert!(r.starts_with("HTTP/1.1 206 Partial Content\r\n"), "{r}");
        assert!(r.contains("Content-Range: bytes 2-4/10\r\n"), "{r}");
        assert!(r.ends_with("Content-Length: 3\r\n\r\n234"), "{r}");
        let etag = r
            .lines()
            .find_map(|l| l.strip_prefix("ETag: "))
            .unwrap_or_default()
            .to_string();
        let cached = Request {
            method: "GET".into(),
            url: "/notes.txt".into(),
            if_none_match: Some(etag),
            ..Request::default()
        };
        let r = String::from_utf8_lossy(&respond(&s, &cached)).into_owned();
        assert!(r.starts_with("HTTP/1.1 304 Not Modified\r\n"), "{r}");
    }

    #[tokio::test]
    async fn a_request_head_is_read_up_to_its_blank_line() {
        let mut input: &[u8] =
            b"GET /x?y HTTP/1.1\r\nHost: a\r\nrange: bytes=5-\r\nIf-None-Match: \"1-2\"\r\n\r\nbody";
        let req = read_request(&mut input).await.ok().flatten();
        let req = req.expect("a request");
        assert_eq!(req.method, "GET");
        assert_eq!(req.url, "/x?y");
        assert_eq!(req.range, Some((5, None)));
        assert_eq!(req.if_none_match.as_deref(), Some("\"1-2\""));
        let mut junk: &[u8] = b"GARBAGE\r\n\r\n";
        assert!(matches!(
            read_request(&mut junk).await,
            Err(Reply::BadRequest)
        ));
        let mut empty: &[u8] = b"";
        assert!(matches!(read_request(&mut empty).await, Ok(None)));
    }

    #[test]
    fn paths_are_canonical_and_strings_decode_and_encode() {
        assert_eq!(canonical("/a//b/./c/../d/").as_deref(), Some("/a/b/d/"));
        assert_eq!(canonical("/a/.."), Some("/".to_string()));
        assert_eq!(canonical("/.."), None);
        assert_eq!(percent_decode("a+b%41", false), Some(b"a bA".to_vec()));
        assert_eq!(percent_decode("%4", false), Some(b"%4".to_vec()));
        assert_eq!(html_encode("a b<"), "a&#32;b&#60;");
        assert_eq!(bind_port("8080"), Some(8080));
        assert_eq!(bind_port("127.0.0.1:81"), Some(81));
        assert_eq!(bind_port("0.0.0.0"), Some(80));
        assert_eq!(bind_port("10.0.0.1:80"), None);
        assert_eq!(bind_port("x"), None);
    }
}
