//! Programs that use the pod's network: `nc` ([`nc`]), `httpd` ([`httpd`]) and `wget`
//! ([`wget`]), as BusyBox has them. What they share is here: which names and addresses are the
//! pod itself and which the cluster's (resolved and reached through the pod network's
//! [`Cluster`](fakekube_runtime::net::Cluster), if it has one; nothing ever leaves the process), service
//! names of ports, and pumps between a connection and standard streams (`nc -e`, `httpd -i`).

pub(crate) mod httpd;
pub(crate) mod nc;
pub(crate) mod wget;

#[cfg(test)]
mod end_to_end;

use std::net::IpAddr;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

use fakekube_runtime::io::{CHUNK, Input, Output, PIPE_CHUNKS};
use fakekube_runtime::process::Process;

/// Where a host name or address leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// The pod itself (loopback, its own name, the any-address), with the address to print.
    Local(String),
    /// Another address, reached through the pod network's cluster (unreachable without one).
    Remote(String),
}

/// Connects to `port` of `host`: the pod's own listener, or the cluster's for another address.
pub(crate) fn connect_host(
    proc: &Process,
    host: &Host,
    port: u16,
) -> Result<fakekube_runtime::net::Connection, fakekube_runtime::net::NetError> {
    match host {
        Host::Local(_) => proc.network.connect(port),
        Host::Remote(dotted) => match dotted.parse::<IpAddr>() {
            Ok(ip) => proc.network.connect_to(ip, port),
            Err(_) => Err(fakekube_runtime::net::NetError::HostUnreachable),
        },
    }
}

/// Resolves a host as `nc` would: a numeric address, `localhost`, the pod's own name
/// (`$HOSTNAME`, which `/etc/hosts` maps to the pod), or a name the cluster's DNS knows (a
/// Service's); `None` for a name that does not resolve.
pub(crate) fn resolve(proc: &Process, name: &str) -> Option<Host> {
    if let Ok(ip) = name.parse::<IpAddr>() {
        let local = ip.is_loopback() || ip.is_unspecified();
        let dotted = ip.to_string();
        return Some(if local {
            Host::Local(dotted)
        } else {
            Host::Remote(dotted)
        });
    }
    let own = proc.var("HOSTNAME").filter(|h| !h.is_empty());
    if name.eq_ignore_ascii_case("localhost")
        || name.eq_ignore_ascii_case("localhost.localdomain")
        || own.is_some_and(|h| h.eq_ignore_ascii_case(name))
    {
        return Some(Host::Local("127.0.0.1".into()));
    }
    proc.network
        .lookup(name)
        .first()
        .map(|ip| Host::Remote(ip.to_string()))
}

/// A port as BusyBox's `bb_lookup_port` reads it: a decimal number up to 65535, or a service
/// name from `/etc/services`; `None` for anything else.
pub(crate) fn lookup_port(text: &str) -> Option<u16> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok();
    }
    let port = match text {
        "echo" => 7,
        "discard" => 9,
        "ftp" => 21,
        "ssh" => 22,
        "telnet" => 23,
        "smtp" => 25,
        "domain" => 53,
        "http" | "www" => 80,
        "pop3" => 110,
        "imap" => 143,
        "https" => 443,
        "mysql" => 3306,
        "postgresql" => 5432,
        "http-alt" | "webcache" => 8080,
        _ => return None,
    };
    Some(port)
}

/// Standard streams that read from and write to `io` (what `nc -e PROG` gives PROG): the
/// input ends at the connection's end of file; when every clone of the output is gone, the
/// connection's write side is shut down.
pub(crate) fn stdio_over<S>(io: S) -> (Input, Output)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut rd, mut wr) = tokio::io::split(io);
    let (in_tx, in_rx) = mpsc::channel::<Bytes>(PIPE_CHUNKS);
    tokio::spawn(async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if in_tx.send(Bytes::copy_from_slice(&buf[..n])).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(PIPE_CHUNKS);
    tokio::spawn(async move {
        while let Some(chunk) = out_rx.recv().await {
            if wr.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = wr.shutdown().await;
    });
    (Input::channel(in_rx), Output::channel(out_tx))
}

/// A byte stream fed by `stdin` whose writes go to `stdout` (what `httpd -i` serves: inetd
/// passes the connection as the standard streams). Both pumps end with the stream.
pub(crate) fn stream_over(stdin: Input, stdout: Output) -> DuplexStream {
    let (near, far) = tokio::io::duplex(2 * CHUNK);
    let (mut rd, mut wr) = tokio::io::split(far);
    tokio::spawn(async move {
        while let Some(chunk) = stdin.read().await {
            if wr.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = wr.shutdown().await;
    });
    tokio::spawn(async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if stdout
                        .write(Bytes::copy_from_slice(&buf[..n]))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    near
}

#[cfg(test)]
mod tests {
    use super::*;
    use fakekube_runtime::fs::PodFs;
    use fakekube_runtime::io::Stdio;
    use tokio_util::sync::CancellationToken;

    fn process(hostname: &str) -> Process {
        Process::new(
            vec!["nc".into()],
            vec![("HOSTNAME".into(), hostname.into())],
            "/".into(),
            PodFs::new(vec![]),
            crate::registry(),
            Stdio {
                stdin: Input::empty(),
                stdout: Output::null(),
                stderr: Output::null(),
            },
            CancellationToken::new(),
        )
    }

    #[test]
    fn loopback_any_and_the_pods_own_name_are_local_and_nothing_else_is() {
        let p = process("web-0");
        assert_eq!(
            resolve(&p, "127.0.0.1"),
            Some(Host::Local("127.0.0.1".into()))
        );
        assert_eq!(
            resolve(&p, "127.1.2.3"),
            Some(Host::Local("127.1.2.3".into()))
        );
        assert_eq!(resolve(&p, "::1"), Some(Host::Local("::1".into())));
        assert_eq!(resolve(&p, "0.0.0.0"), Some(Host::Local("0.0.0.0".into())));
        assert_eq!(
            resolve(&p, "localhost"),
            Some(Host::Local("127.0.0.1".into()))
        );
        assert_eq!(resolve(&p, "WEB-0"), Some(Host::Local("127.0.0.1".into())));
        assert_eq!(
            resolve(&p, "10.244.0.7"),
            Some(Host::Remote("10.244.0.7".into()))
        );
        assert_eq!(resolve(&p, "example.com"), None);
    }

    #[test]
    fn ports_are_numbers_up_to_65535_or_service_names() {
        assert_eq!(lookup_port("8080"), Some(8080));
        assert_eq!(lookup_port("0"), Some(0));
        assert_eq!(lookup_port("65536"), None);
        assert_eq!(lookup_port("http"), Some(80));
        assert_eq!(lookup_port("-1"), None);
        assert_eq!(lookup_port(""), None);
        assert_eq!(lookup_port("nope"), None);
    }
}
