//! `nc`: BusyBox's netcat (its nc 1.10-compatible build, as in the `busybox` image), over the
//! pod's network.
//!
//! `nc HOST PORT` connects, `nc -l -p PORT` listens for one connection; either way it then
//! copies stdin to the connection and the connection to stdout, shutting down its sending side
//! at the end of stdin, and exits 0 when both directions have ended. `-e PROG [ARGS]` runs PROG
//! on the connection instead (`-lk -e PROG`: one PROG per connection, for ever). Failures are
//! quiet unless `-v`, as in BusyBox: a refused connection is exit status 1 with no message.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Host, connect_host, lookup_port, resolve, stdio_over};
use crate::cli::getopt;
use fakekube_runtime::io::{CHUNK, WriteError};
use fakekube_runtime::net::{Connection, NetError};
use fakekube_runtime::process::Process;

/// What `nc` prints for a usage error, after the error itself.
const USAGE: &str = "Usage: nc [OPTIONS] HOST PORT  - connect\n   or: nc [OPTIONS] -l -p PORT [HOST] [PORT]  - listen\n";

/// The options every form of `nc` takes.
struct Options {
    /// `-v` given this many times.
    verbose: usize,
    /// `-w SEC`: how long to wait for a connection and, after stdin ended, for the network.
    wait: Option<Duration>,
    /// `-l` given at least once.
    listen: bool,
    /// `-k` (or `-ll`): with `-e`, keep accepting.
    persistent: bool,
    /// `-z`: connect, report, and send nothing.
    zero: bool,
    /// `-p PORT`: the local port.
    local_port: Option<String>,
    /// `-e PROG [ARGS]`: what runs on the connection.
    program: Option<Vec<String>>,
    /// HOST and PORT.
    operands: Vec<String>,
}

/// Prints `nc: MESSAGE` then the usage; returns 1.
async fn usage_error(proc: &Process, message: &str) -> i32 {
    proc.err(message).await;
    let _ = proc.stderr.write_str(USAGE).await;
    1
}

/// Splits off `-e PROG [ARGS]` (which must come last, and may end a cluster: `-le PROG`).
fn split_program(args: &[String]) -> (Vec<String>, Option<Vec<String>>) {
    for (i, a) in args.iter().enumerate() {
        let Some(cluster) = a.strip_prefix('-') else {
            continue;
        };
        if cluster == "e" {
            return (args[..i].to_vec(), Some(args[i + 1..].to_vec()));
        }
        let flags = cluster.trim_start_matches(|c| "nuvlkz".contains(c));
        if flags == "e" && cluster.len() > 1 {
            let mut head = args[..i].to_vec();
            head.push(format!("-{}", &cluster[..cluster.len() - 1]));
            return (head, Some(args[i + 1..].to_vec()));
        }
    }
    (args.to_vec(), None)
}

/// Reads the options; `Err` is the usage error to print.
fn options(args: &[String]) -> Result<Options, String> {
    let (head, program) = split_program(args);
    let p = getopt(&head, "np:s:uvw:lki:o:z", "pswio", &[], &[])?;
    if p.operands.len() > 2 {
        return Err("too many arguments".into());
    }
    if p.has('u') {
        return Err("UDP mode is not supported".into());
    }
    let wait = match p.value('w') {
        Some(w) => Some(Duration::from_secs(
            w.parse::<u64>()
                .map_err(|_| format!("invalid number '{w}'"))?,
        )),
        None => None,
    };
    let count = |c: char| p.short.iter().filter(|(o, _)| *o == c).count();
    Ok(Options {
        verbose: count('v'),
        wait: wait.filter(|w| !w.is_zero()),
        listen: count('l') > 0,
        persistent: p.has('k') || count('l') > 1,
        zero: p.has('z'),
        local_port: p.value('p').map(str::to_string),
        program: program.filter(|argv| !argv.is_empty()),
        operands: p.operands,
    })
}

/// `nc [-nuvz] [-w SEC] [-p PORT] [-s ADDR] HOST PORT` or `nc -l [-k] -p PORT`, each with an
/// optional final `-e PROG [ARGS]`.
pub(crate) async fn nc(proc: Process) -> i32 {
    let o = match options(proc.args()) {
        Ok(o) => o,
        Err(e) => return usage_error(&proc, &e).await,
    };
    if o.listen {
        listen(&proc, &o).await
    } else {
        connect(&proc, &o).await
    }
}

/// `nc -l`: takes the port, accepts a connection (or, with `-k -e`, every one).
async fn listen(proc: &Process, o: &Options) -> i32 {
    let port = match &o.local_port {
        Some(text) => match lookup_port(text).filter(|p| *p != 0) {
            Some(p) => p,
            None => {
                proc.err(&format!("bad local port '{text}'")).await;
                return 1;
            }
        },
        None => 0,
    };
    let listener = match proc.network.listen(port) {
        Ok(l) => l,
        Err(e) => {
            proc.err(&format!("bind: {e}")).await;
            return 1;
        }
    };
    if o.verbose > 0 {
        let _ = proc
            .stderr
            .write_str(&format!("listening on [::]:{} ...\n", listener.port()))
            .await;
    }
    loop {
        let accepted = match o.wait {
            Some(w) => tokio::time::timeout(w, listener.accept()).await.ok(),
            None => Some(listener.accept().await),
        };
        let conn = match accepted {
            Some(Some(c)) => c,
            Some(None) => return 1,
            None => {
                proc.err("timeout").await;
                return 1;
            }
        };
        if o.verbose > 0 {
            let _ = proc
                .stderr
                .write_str(&format!(
                    "connect to [::ffff:127.0.0.1]:{} from localhost ([::ffff:127.0.0.1]:{})\n",
                    conn.local_port(),
                    conn.peer_port()
                ))
                .await;
        }
        match &o.program {
            Some(argv) if o.persistent => {
                let child = run_on(proc, argv.clone(), conn);
                let token = proc.cancel.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = child => {}
                        () = token.cancelled() => {}
                    }
                });
            }
            Some(argv) => return run_on(proc, argv.clone(), conn).await,
            None => return copy(proc, conn, o.wait).await,
        }
    }
}

/// `nc HOST PORT`: connects, then copies (or runs `-e PROG`).
async fn connect(proc: &Process, o: &Options) -> i32 {
    let Some(name) = o.operands.first() else {
        let _ = proc.stderr.write_str(USAGE).await;
        return 1;
    };
    let port = o.operands.get(1).and_then(|p| lookup_port(p)).unwrap_or(0);
    let Some(host) = resolve(proc, name) else {
        proc.err(&format!("bad address '{name}'")).await;
        return 1;
    };
    let (Host::Local(dotted) | Host::Remote(dotted)) = &host;
    let them = format!("{dotted}:{port}");
    let result = connect_host(proc, &host, port).map_err(|e| e.to_string());
    let conn = match result {
        Ok(c) => c,
        Err(e) => {
            let refused = e == NetError::ConnectionRefused.to_string();
            if o.verbose > 1 || (o.verbose > 0 && !refused) {
                proc.err(&format!("{name} ({them}): {e}")).await;
            }
            return 1;
        }
    };
    if o.verbose > 0 {
        let _ = proc
            .stderr
            .write_str(&format!("{name} ({them}) open\n"))
            .await;
    }
    if let Some(argv) = &o.program {
        return run_on(proc, argv.clone(), conn).await;
    }
    if o.zero {
        return 0;
    }
    copy(proc, conn, o.wait).await
}

/// Runs `argv` with the connection as its stdin and stdout (stderr stays nc's).
fn run_on(
    proc: &Process,
    argv: Vec<String>,
    conn: Connection,
) -> impl Future<Output = i32> + Send + 'static {
    let (stdin, stdout) = stdio_over(conn);
    let mut child = proc.child(argv);
    child.stdin = stdin;
    child.stdout = stdout;
    child.spawn_as("nc: can't execute ")
}

/// Copies stdin to the connection and the connection to stdout until both have ended. After
/// the end of stdin, `wait` (if any) bounds the silence on the network: twice that long
/// without data ends the copy, as nc's two select timeouts do.
async fn copy(proc: &Process, conn: Connection, wait: Option<Duration>) -> i32 {
    let (mut rd, mut wr) = tokio::io::split(conn);
    let mut stdin_open = true;
    let mut net_open = true;
    let mut quiet = 0;
    let mut buf = vec![0u8; CHUNK];
    while stdin_open || net_open {
        let idle = async {
            match wait {
                Some(w) if !stdin_open => tokio::time::sleep(w).await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            chunk = proc.stdin.read(), if stdin_open => match chunk {
                Some(data) => {
                    if wr.write_all(&data).await.is_err() {
                        return 1;
                    }
                }
                None => {
                    stdin_open = false;
                    let _ = wr.shutdown().await;
                }
            },
            n = rd.read(&mut buf), if net_open => match n {
                Ok(0) | Err(_) => net_open = false,
                Ok(n) => {
                    quiet = 0;
                    match proc.stdout.write(Bytes::copy_from_slice(&buf[..n])).await {
                        Ok(()) => {}
                        Err(WriteError::BrokenPipe) => return 1,
                        Err(e) => {
                            proc.err(&format!("write error: {e}")).await;
                            return 1;
                        }
                    }
                }
            },
            () = idle, if net_open => {
                quiet += 1;
                if quiet >= 2 {
                    return 0;
                }
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn e_takes_the_rest_of_the_line_even_at_the_end_of_a_cluster() {
        let (head, prog) = split_program(&strings(&["-l", "-p", "80", "-e", "cat", "-n"]));
        assert_eq!(head, strings(&["-l", "-p", "80"]));
        assert_eq!(prog, Some(strings(&["cat", "-n"])));
        let (head, prog) = split_program(&strings(&["-lke", "sh", "-c", "x"]));
        assert_eq!(head, strings(&["-lk"]));
        assert_eq!(prog, Some(strings(&["sh", "-c", "x"])));
        let (head, prog) = split_program(&strings(&["-p", "-e"]));
        assert_eq!(head, strings(&["-p"]));
        assert_eq!(prog, Some(vec![]));
        assert_eq!(split_program(&strings(&["host", "80"])).1, None);
    }

    #[test]
    fn options_count_verbosity_and_refuse_udp_and_extra_operands() {
        let o = options(&strings(&["-vv", "-l", "-p", "8080"])).ok();
        assert_eq!(o.as_ref().map(|o| o.verbose), Some(2));
        assert_eq!(o.as_ref().map(|o| o.listen), Some(true));
        assert!(options(&strings(&["-ll"])).is_ok_and(|o| o.persistent));
        assert!(options(&strings(&["-u", "h", "1"])).is_err());
        assert!(options(&strings(&["a", "b", "c"])).is_err());
        assert!(options(&strings(&["-w", "x", "h", "1"])).is_err());
    }
}
