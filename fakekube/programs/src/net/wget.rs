//! `wget`: BusyBox's HTTP downloader, over the pod's network (the pod itself, or the cluster's
//! Services and pods through its [`Cluster`](fakekube_runtime::net::Cluster)).
//!
//! `wget [-qS] [-O FILE] [--header 'NAME: VALUE'] [-T SEC] [-U AGENT] [-P DIR] [--spider] URL...`
//! fetches each URL with one `GET` (HTTP/1.1, `Connection: close`), follows redirects, and
//! saves the body to FILE (`-` or `-O-`: standard output; by default the URL's last path
//! component, or `index.html`). Without `-q` it tells on stderr what it does (`Connecting to
//! HOST (IP:PORT)`, `saving to 'FILE'`, `'FILE' saved`); `-S` prints the server's response
//! head there, each line indented by two spaces. Failures end it with status 1 and BusyBox's
//! words: `bad address 'HOST'`, `can't connect to remote host (IP): Connection refused`,
//! `server returned error: HTTP/1.1 404 Not Found`, `download timed out`. There is no TLS, so
//! `https://` URLs fail as in a BusyBox built without it.

use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::{Host, connect_host, resolve};
use crate::cli::getopt;
use fakekube_runtime::fs;
use fakekube_runtime::process::Process;

/// How often a redirect is followed before wget gives up.
const MAX_REDIRECTS: usize = 20;
/// The longest response head read.
const MAX_HEAD: usize = 64 * 1024;

/// What one run was asked to do.
#[derive(Debug, Default)]
struct Options {
    /// `-q`.
    quiet: bool,
    /// `-S`.
    server_response: bool,
    /// `--spider`: only check that the URL exists.
    spider: bool,
    /// `-O FILE` (`-` is stdout).
    output: Option<String>,
    /// `-P DIR`.
    prefix: Option<String>,
    /// `--header` lines, in order.
    headers: Vec<String>,
    /// `-U AGENT`.
    agent: String,
    /// `-T SEC`.
    timeout: Option<Duration>,
    /// The URLs.
    urls: Vec<String>,
}

/// Why a download failed: BusyBox's message (printed as `wget: MESSAGE`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failure(String);

/// A URL as wget splits it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Url {
    /// The host as written (without the port).
    host: String,
    /// The port.
    port: u16,
    /// `host[:port]` as the `Host` header carries it.
    authority: String,
    /// The path with its query, starting with `/`.
    path: String,
}

/// Splits `url` as BusyBox's `parse_url` does: `http://` (or no scheme at all) only.
fn parse_url(url: &str) -> Result<Url, Failure> {
    let rest = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some(_) => return Err(Failure(format!("not an http or ftp url: {url}"))),
        None => url,
    };
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let path = path.split('#').next().unwrap_or_default();
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let authority = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => match p.parse::<u16>() {
            Ok(p) => (h, p),
            Err(_) => return Err(Failure(format!("bad port spec '{p}'"))),
        },
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok(Url {
        host: host.to_string(),
        port,
        authority: authority.to_string(),
        path,
    })
}

/// Reads the options; `Err` is the usage message.
fn options(args: &[String]) -> Result<Options, String> {
    let p = getopt(
        args,
        "cqSO:o:P:U:T:Y:t:",
        "OoPUTYt",
        &[
            "output-document",
            "output-file",
            "directory-prefix",
            "header",
            "user-agent",
            "timeout",
            "proxy",
            "tries",
        ],
        &[
            "quiet",
            "server-response",
            "spider",
            "continue",
            "no-check-certificate",
            "no-verbose",
        ],
    )?;
    let short = |c: char| p.value(c).map(str::to_string);
    let long = |n: &str| p.long_value(n).map(str::to_string);
    let timeout = match short('T').or_else(|| long("timeout")) {
        Some(t) => Some(Duration::from_secs(
            t.parse::<u64>()
                .map_err(|_| format!("invalid number '{t}'"))?,
        )),
        None => None,
    };
    Ok(Options {
        quiet: p.has('q') || p.has_long("quiet") || p.has_long("no-verbose"),
        server_response: p.has('S') || p.has_long("server-response"),
        spider: p.has_long("spider"),
        output: short('O').or_else(|| long("output-document")),
        prefix: short('P').or_else(|| long("directory-prefix")),
        headers: p
            .long
            .iter()
            .filter(|(n, _)| n == "header")
            .filter_map(|(_, v)| v.clone())
            .collect(),
        agent: short('U')
            .or_else(|| long("user-agent"))
            .unwrap_or_else(|| "Wget".into()),
        timeout: timeout.filter(|t| !t.is_zero()),
        urls: p.operands,
    })
}

/// `wget [-cqS] [--spider] [-O FILE] [--header 'HEADER: VALUE'] [-P DIR] [-U AGENT] [-T SEC]
/// URL...`.
pub(crate) async fn wget(proc: Process) -> i32 {
    let o = match options(proc.args()) {
        Ok(o) => o,
        Err(e) => {
            proc.err(&e).await;
            let _ = proc.stderr.write_str(USAGE).await;
            return 1;
        }
    };
    if o.urls.is_empty() {
        let _ = proc.stderr.write_str(USAGE).await;
        return 1;
    }
    for url in &o.urls {
        if let Err(e) = fetch(&proc, &o, url).await {
            proc.err(&e.0).await;
            return 1;
        }
    }
    0
}

/// What `wget` prints for a usage error.
const USAGE: &str = "Usage: wget [-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR]\n\t[--post-data STR | --post-file FILE] [-Y on/off]\n\t[-P DIR] [-U AGENT] [-T SEC] URL...\n";

/// A response head.
#[derive(Debug, Default)]
struct Head {
    /// The status line, as sent.
    status_line: String,
    /// The status code.
    code: u16,
    /// Header lines, as sent.
    lines: Vec<String>,
}

impl Head {
    /// A header's value (the first of that name).
    fn header(&self, name: &str) -> Option<&str> {
        self.lines.iter().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Fetches one URL, following redirects, and writes its body where the options say.
async fn fetch(proc: &Process, o: &Options, url: &str) -> Result<(), Failure> {
    let mut target = parse_url(url)?;
    for _ in 0..=MAX_REDIRECTS {
        let host = resolve(proc, &target.host)
            .ok_or_else(|| Failure(format!("bad address '{}'", target.host)))?;
        let (Host::Local(ip) | Host::Remote(ip)) = &host;
        if !o.quiet {
            say(
                proc,
                &format!("Connecting to {} ({ip}:{})\n", target.host, target.port),
            )
            .await;
        }
        let conn = connect_host(proc, &host, target.port)
            .map_err(|e| Failure(format!("can't connect to remote host ({ip}): {e}")))?;
        let (mut rd, mut wr) = tokio::io::split(conn);
        let mut request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {}\r\nConnection: close\r\n",
            target.path, target.authority, o.agent
        );
        for h in &o.headers {
            request.push_str(h);
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        timed(o.timeout, wr.write_all(request.as_bytes()))
            .await?
            .map_err(|e| Failure(format!("error writing: {e}")))?;
        let mut buf = Vec::new();
        let head = timed(o.timeout, read_head(&mut rd, &mut buf))
            .await?
            .ok_or_else(|| Failure("no response from server".into()))?;
        if o.server_response {
            let mut text = format!("  {}\n", head.status_line);
            for l in &head.lines {
                text.push_str(&format!("  {l}\n"));
            }
            say(proc, &text).await;
        }
        match head.code {
            200..=299 => {}
            301 | 302 | 303 | 307 | 308 => {
                let location = head
                    .header("Location")
                    .ok_or_else(|| Failure("no Location".into()))?;
                target = if location.starts_with('/') {
                    Url {
                        path: location.to_string(),
                        ..target
                    }
                } else {
                    parse_url(location)?
                };
                continue;
            }
            _ => {
                return Err(Failure(format!(
                    "server returned error: {}",
                    head.status_line
                )));
            }
        }
        if o.spider {
            if !o.quiet {
                say(proc, "remote file exists\n").await;
            }
            return Ok(());
        }
        let body = timed(o.timeout, read_body(&head, &mut rd, buf))
            .await?
            .map_err(Failure)?;
        return save(proc, o, &target, body).await;
    }
    Err(Failure("too many redirections".into()))
}

/// Writes the body to stdout or to the output file, with the messages BusyBox prints.
async fn save(proc: &Process, o: &Options, target: &Url, body: Vec<u8>) -> Result<(), Failure> {
    let name = match &o.output {
        Some(n) => n.clone(),
        None => {
            let path = target.path.split('?').next().unwrap_or_default();
            let last = path.rsplit('/').next().unwrap_or_default();
            if last.is_empty() {
                "index.html".to_string()
            } else {
                last.to_string()
            }
        }
    };
    if name == "-" {
        if !o.quiet {
            say(proc, "writing to stdout\n").await;
        }
        proc.out(Bytes::from(body))
            .await
            .map_err(|e| Failure(format!("write error: {e}")))?;
        if !o.quiet {
            say(proc, "written to stdout\n").await;
        }
        return Ok(());
    }
    let path = match (&o.prefix, &o.output) {
        (Some(dir), None) => fs::join(&proc.path(dir), &name),
        _ => proc.path(&name),
    };
    if !o.quiet {
        say(proc, &format!("saving to '{name}'\n")).await;
    }
    proc.fs
        .write(&path, &body)
        .map_err(|e| Failure(format!("can't open '{name}': {e}")))?;
    if !o.quiet {
        say(proc, &format!("'{name}' saved\n")).await;
    }
    Ok(())
}

/// Prints on stderr (failures ignored, as BusyBox ignores them).
async fn say(proc: &Process, text: &str) {
    let _ = proc.stderr.write_str(text).await;
}

/// Runs `f` within the `-T` timeout, if any.
async fn timed<F: Future>(timeout: Option<Duration>, f: F) -> Result<F::Output, Failure> {
    match timeout {
        Some(t) => tokio::time::timeout(t, f)
            .await
            .map_err(|_| Failure("download timed out".into())),
        None => Ok(f.await),
    }
}

/// Reads the response head; what was read past it stays in `buf`. `None` when the server
/// closed before a whole head.
async fn read_head<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut Vec<u8>) -> Option<Head> {
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if let Some(i) = buf.windows(2).position(|w| w == b"\n\n") {
            break i + 2;
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
        let mut chunk = [0u8; 4096];
        let n = rd.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head: Vec<u8> = buf.drain(..end).collect();
    let text = String::from_utf8_lossy(&head);
    let mut lines = text
        .lines()
        .map(|l| l.trim_end_matches('\r').to_string())
        .filter(|l| !l.is_empty());
    let status_line = lines.next()?;
    let code = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())?;
    Some(Head {
        status_line,
        code,
        lines: lines.collect(),
    })
}

/// Reads the body after `head`: chunked, by `Content-Length`, or to the end of the connection.
async fn read_body<R: AsyncRead + Unpin>(
    head: &Head,
    rd: &mut R,
    mut buf: Vec<u8>,
) -> Result<Vec<u8>, String> {
    let chunked = head
        .header("Transfer-Encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let length = head
        .header("Content-Length")
        .and_then(|v| v.parse::<usize>().ok());
    if head.code == 204 || head.code == 304 {
        return Ok(Vec::new());
    }
    if !chunked {
        let limit = length.unwrap_or(fs::MAX_FILE_SIZE);
        while buf.len() < limit {
            let mut chunk = vec![0u8; 64 * 1024];
            let n = rd
                .read(&mut chunk)
                .await
                .map_err(|e| format!("error getting response: {e}"))?;
            if n == 0 {
                if length.is_some() {
                    return Err("connection closed prematurely".into());
                }
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        buf.truncate(limit);
        return Ok(buf);
    }
    let mut all = std::mem::take(&mut buf);
    loop {
        let mut chunk = vec![0u8; 64 * 1024];
        let n = rd
            .read(&mut chunk)
            .await
            .map_err(|e| format!("error getting response: {e}"))?;
        if n == 0 {
            break;
        }
        all.extend_from_slice(&chunk[..n]);
        if all.len() > fs::MAX_FILE_SIZE {
            break;
        }
    }
    dechunk(&all).ok_or_else(|| "bad chunk length".to_string())
}

/// Joins the chunks of a chunked body (`None` when it is malformed).
fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_path_with_http_as_the_default_scheme() {
        let u = parse_url("http://web.default:8080/a/b?x=1#frag").expect("a URL");
        assert_eq!(
            (
                u.host.as_str(),
                u.port,
                u.authority.as_str(),
                u.path.as_str()
            ),
            ("web.default", 8080, "web.default:8080", "/a/b?x=1")
        );
        let u = parse_url("web").expect("a URL");
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("web", 80, "/"));
        assert_eq!(
            parse_url("https://x/").map(|_| ()).map_err(|e| e.0),
            Err("not an http or ftp url: https://x/".to_string())
        );
    }

    #[test]
    fn chunked_bodies_are_joined_and_malformed_ones_refused() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").as_deref(),
            Some(&b"abcde"[..])
        );
        assert_eq!(dechunk(b"zz\r\n"), None);
    }

    #[test]
    fn options_take_busybox_short_and_long_forms() {
        let args: Vec<String> = ["-qO-", "--header", "A: b", "-T", "5", "http://x/"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let o = options(&args).expect("valid options");
        assert!(o.quiet);
        assert_eq!(o.output.as_deref(), Some("-"));
        assert_eq!(o.headers, vec!["A: b".to_string()]);
        assert_eq!(o.timeout, Some(Duration::from_secs(5)));
        assert_eq!(o.urls, vec!["http://x/".to_string()]);
    }
}
