//! `nc`, `httpd` and `wget` run through [`fakekube_runtime::exec`], several execs sharing one pod
//! network, and reaching another pod through a [`Cluster`].

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use fakekube_runtime::net::{Cluster, Connection, NetError};
use fakekube_runtime::{ExecIo, ExecSpec, ExitStatus, PodFs, PodNetwork, Programs, exec};

/// A pod: its filesystem, programs and network.
struct Pod {
    fs: PodFs,
    programs: Programs,
    network: PodNetwork,
}

/// What an exec printed and how it ended.
#[derive(Debug)]
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Pod {
    fn new() -> Self {
        let programs = crate::registry();
        Pod {
            fs: programs.pod_fs(vec![]),
            programs,
            network: PodNetwork::new(),
        }
    }

    /// Starts `script` under `sh -c` with `stdin`, killed by `cancel`.
    fn start(&self, script: &str, stdin: &[u8], cancel: CancellationToken) -> JoinHandle<Run> {
        let spec = ExecSpec {
            processes: Default::default(),
            argv: vec!["sh".into(), "-c".into(), script.into()],
            env: vec![("HOSTNAME".into(), "web-0".into())],
            cwd: "/".into(),
            fs: self.fs.clone(),
            programs: self.programs.clone(),
            cancel,
            network: self.network.clone(),
        };
        let (in_tx, in_rx) = mpsc::channel(4);
        let (out_tx, out_rx) = mpsc::channel(8);
        let (err_tx, err_rx) = mpsc::channel(8);
        let data = Bytes::copy_from_slice(stdin);
        tokio::spawn(async move {
            if !data.is_empty() {
                let _ = in_tx.send(data).await;
            }
        });
        tokio::spawn(async move {
            let io = ExecIo {
                tty: None,
                stdin: Some(in_rx),
                stdout: out_tx,
                stderr: err_tx,
            };
            let (status, stdout, stderr) =
                tokio::join!(exec(spec, io), collect(out_rx), collect(err_rx));
            Run {
                status,
                stdout,
                stderr,
            }
        })
    }

    /// Runs `script` to its end.
    async fn run(&self, script: &str, stdin: &[u8]) -> Run {
        let run = self.start(script, stdin, CancellationToken::new());
        match tokio::time::timeout(Duration::from_secs(10), run).await {
            Ok(Ok(r)) => r,
            other => panic!("{script:?} did not finish: {other:?}"),
        }
    }

    /// Waits until something listens on `port` (a program started in another exec).
    async fn listening(&self, port: u16) {
        let wait = async {
            while !self.network.listening().contains(&port) {
                tokio::task::yield_now().await;
            }
        };
        assert!(
            tokio::time::timeout(Duration::from_secs(10), wait)
                .await
                .is_ok(),
            "nothing listens on {port}"
        );
    }
}

async fn collect(mut rx: mpsc::Receiver<Bytes>) -> String {
    let mut out = Vec::new();
    while let Some(chunk) = rx.recv().await {
        out.extend_from_slice(&chunk);
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn finished(run: JoinHandle<Run>) -> Run {
    match tokio::time::timeout(Duration::from_secs(10), run).await {
        Ok(Ok(r)) => r,
        other => panic!("the exec did not finish: {other:?}"),
    }
}

#[tokio::test]
async fn nc_listens_in_one_exec_and_connects_from_another_both_ways() {
    let pod = Pod::new();
    let server = pod.start("nc -l -p 9000", b"from server\n", CancellationToken::new());
    pod.listening(9000).await;
    let client = pod.run("nc 127.0.0.1 9000", b"from client\n").await;
    assert_eq!(client.status, ExitStatus::Code(0), "{client:?}");
    assert_eq!(client.stdout, "from server\n");
    let server = finished(server).await;
    assert_eq!(server.status, ExitStatus::Code(0), "{server:?}");
    assert_eq!(server.stdout, "from client\n");
    assert!(pod.network.listening().is_empty());
}

#[tokio::test]
async fn nc_is_quiet_on_a_refused_port_unless_very_verbose() {
    let pod = Pod::new();
    let r = pod.run("nc localhost 81; echo status=$?", b"").await;
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("status=1\n", ""));
    let r = pod.run("nc -vv web-0 81", b"").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "nc: web-0 (127.0.0.1:81): Connection refused\n");
}

#[tokio::test]
async fn nc_never_reaches_beyond_the_pod() {
    let pod = Pod::new();
    let r = pod.run("nc -v 10.244.0.9 80", b"").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(
        r.stderr,
        "nc: 10.244.0.9 (10.244.0.9:80): Network is unreachable\n"
    );
    let r = pod.run("nc example.com 80", b"").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "nc: bad address 'example.com'\n");
}

#[tokio::test]
async fn a_taken_port_is_in_use_and_a_killed_listener_frees_its_port() {
    let pod = Pod::new();
    let cancel = CancellationToken::new();
    let server = pod.start("nc -l -p 7000", b"", cancel.clone());
    pod.listening(7000).await;
    let r = pod.run("nc -l -p 7000", b"").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "nc: bind: Address already in use\n");
    cancel.cancel();
    assert_eq!(finished(server).await.status, ExitStatus::Killed);
    assert!(pod.network.listening().is_empty());
    let r = pod.run("nc -l -p bad", b"").await;
    assert_eq!(r.stderr, "nc: bad local port 'bad'\n");
}

#[tokio::test]
async fn nc_e_runs_a_program_on_each_connection_with_k() {
    let pod = Pod::new();
    let cancel = CancellationToken::new();
    let server = pod.start("nc -lk -p 7007 -e cat", b"", cancel.clone());
    pod.listening(7007).await;
    for word in ["one", "two"] {
        let r = pod
            .run(&format!("echo {word} | nc 127.0.0.1 7007"), b"")
            .await;
        assert_eq!(r.stdout, format!("{word}\n"), "{r:?}");
    }
    cancel.cancel();
    finished(server).await;
}

#[tokio::test]
async fn a_connection_from_outside_the_runtime_reaches_nc() {
    let pod = Pod::new();
    let server = pod.start("nc -l -p 8000", b"hello\n", CancellationToken::new());
    pod.listening(8000).await;
    let mut conn = pod.network.connect(8000).expect("nc listens");
    conn.write_all(b"ping\n").await.expect("written");
    conn.shutdown().await.expect("half-closed");
    let mut got = String::new();
    conn.read_to_string(&mut got).await.expect("read");
    assert_eq!(got, "hello\n");
    assert_eq!(finished(server).await.stdout, "ping\n");
}

#[tokio::test]
async fn httpd_serves_files_from_its_home_to_nc_and_keeps_serving() {
    let pod = Pod::new();
    assert!(pod.fs.mkdir_all("/www/sub", 0o755).is_ok());
    assert!(pod.fs.write("/www/index.html", b"<p>hi</p>\n").is_ok());
    assert!(pod.fs.write("/www/sub/a.css", b"p{}").is_ok());
    let cancel = CancellationToken::new();
    let server = pod.start("httpd -f -p 8080 -h /www", b"", cancel.clone());
    pod.listening(8080).await;
    let get = |path: &str| {
        format!("printf 'GET {path} HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n' | nc 127.0.0.1 8080")
    };
    let r = pod.run(&get("/"), b"").await;
    assert!(r.stdout.starts_with("HTTP/1.1 200 OK\r\n"), "{r:?}");
    assert!(r.stdout.contains("Content-type: text/html\r\n"), "{r:?}");
    assert!(r.stdout.ends_with("\r\n\r\n<p>hi</p>\n"), "{r:?}");
    let r = pod.run(&get("/sub/a.css"), b"").await;
    assert!(r.stdout.contains("Content-type: text/css\r\n"), "{r:?}");
    let r = pod.run(&get("/missing"), b"").await;
    assert!(r.stdout.starts_with("HTTP/1.1 404 Not Found\r\n"), "{r:?}");
    cancel.cancel();
    assert_eq!(finished(server).await.status, ExitStatus::Killed);
    assert!(pod.network.listening().is_empty());
}

#[tokio::test]
async fn httpd_without_f_serves_in_the_background_and_i_serves_stdin() {
    let pod = Pod::new();
    assert!(pod.fs.mkdir_all("/srv", 0o755).is_ok());
    assert!(pod.fs.write("/srv/f.txt", b"text").is_ok());
    let cancel = CancellationToken::new();
    let daemon = pod.start("httpd -p 8081 -h /srv; echo started", b"", cancel.clone());
    pod.listening(8081).await;
    let r = pod
        .run(
            "printf 'HEAD /f.txt HTTP/1.1\\r\\n\\r\\n' | nc localhost 8081",
            b"",
        )
        .await;
    assert!(r.stdout.contains("Content-Length: 4\r\n\r\n"), "{r:?}");
    assert!(r.stdout.ends_with("\r\n\r\n"), "{r:?}");
    cancel.cancel();
    finished(daemon).await;
    let r = pod
        .run("httpd -i -h /srv", b"GET /f.txt HTTP/1.0\r\n\r\n")
        .await;
    assert!(r.stdout.ends_with("\r\n\r\ntext"), "{r:?}");
    let r = pod.run("httpd -f -h /nowhere", b"").await;
    assert_eq!(
        r.stderr,
        "httpd: can't change directory to '/nowhere': No such file or directory\n"
    );
    let r = pod.run("httpd -d 'a%20b+c'; httpd -e 'a<b'", b"").await;
    assert_eq!(r.stdout, "a b ca&#60;b");
}

/// A cluster of one other pod: the Service name `web` (ClusterIP 10.96.0.1) and the pod's
/// address 10.244.0.2 both lead to its network.
#[derive(Debug)]
struct OnePod {
    other: PodNetwork,
}

/// The Service's ClusterIP and the pod's address in [`OnePod`].
const SERVICE_IP: [u8; 4] = [10, 96, 0, 1];
const POD_IP: [u8; 4] = [10, 244, 0, 2];

impl Cluster for OnePod {
    fn lookup(&self, name: &str) -> Vec<IpAddr> {
        if name == "web" {
            vec![IpAddr::from(SERVICE_IP)]
        } else {
            Vec::new()
        }
    }

    fn connect(&self, ip: IpAddr, port: u16) -> Result<Connection, NetError> {
        if ip == IpAddr::from(SERVICE_IP) || ip == IpAddr::from(POD_IP) {
            self.other.connect(port)
        } else {
            Err(NetError::HostUnreachable)
        }
    }
}

/// A pod serving `/www` with `httpd` on 8080, its index page saying `hello`.
async fn web_pod(cancel: &CancellationToken) -> Pod {
    let pod = Pod::new();
    assert!(pod.fs.mkdir_all("/www", 0o755).is_ok());
    assert!(pod.fs.write("/www/index.html", b"hello\n").is_ok());
    drop(pod.start("httpd -f -p 8080 -h /www", b"", cancel.clone()));
    pod.listening(8080).await;
    pod
}

#[tokio::test]
async fn wget_saves_to_a_file_or_stdout_with_busybox_messages() {
    let cancel = CancellationToken::new();
    let pod = web_pod(&cancel).await;
    let r = pod
        .run("cd /tmp && wget http://127.0.0.1:8080/index.html", b"")
        .await;
    assert_eq!(r.status, ExitStatus::Code(0), "{r:?}");
    assert_eq!(
        r.stderr,
        "Connecting to 127.0.0.1 (127.0.0.1:8080)\nsaving to 'index.html'\n'index.html' saved\n"
    );
    assert_eq!(
        pod.fs.read("/tmp/index.html").as_deref(),
        Ok(&b"hello\n"[..])
    );
    let r = pod.run("wget -qO- http://localhost:8080/", b"").await;
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("hello\n", ""));
    let r = pod
        .run(
            "wget -q -S -O /tmp/out --header 'X-A: b' http://web-0:8080/",
            b"",
        )
        .await;
    assert!(r.stderr.starts_with("  HTTP/1.1 200 OK\n"), "{r:?}");
    assert!(r.stderr.contains("  Content-Length: 6\n"), "{r:?}");
    assert_eq!(pod.fs.read("/tmp/out").as_deref(), Ok(&b"hello\n"[..]));
    cancel.cancel();
}

#[tokio::test]
async fn wget_fails_with_busybox_words_and_status_1() {
    let cancel = CancellationToken::new();
    let pod = web_pod(&cancel).await;
    let cases = [
        (
            "wget -qO- http://127.0.0.1:8080/missing",
            "wget: server returned error: HTTP/1.1 404 Not Found\n",
        ),
        (
            "wget -qO- http://127.0.0.1:9/",
            "wget: can't connect to remote host (127.0.0.1): Connection refused\n",
        ),
        ("wget -qO- http://nowhere/", "wget: bad address 'nowhere'\n"),
        (
            "wget -qO- http://10.0.0.1/",
            "wget: can't connect to remote host (10.0.0.1): Network is unreachable\n",
        ),
        (
            "wget -qO- https://127.0.0.1/",
            "wget: not an http or ftp url: https://127.0.0.1/\n",
        ),
    ];
    for (script, message) in cases {
        let r = pod.run(script, b"").await;
        assert_eq!(r.status, ExitStatus::Code(1), "{script}: {r:?}");
        assert_eq!(r.stderr, message, "{script}");
    }
    cancel.cancel();
}

#[tokio::test]
async fn wget_and_nc_reach_another_pod_through_the_cluster_by_name_and_address() {
    let cancel = CancellationToken::new();
    let web = web_pod(&cancel).await;
    let client = Pod::new();
    client.network.set_cluster(Arc::new(OnePod {
        other: web.network.clone(),
    }));
    let r = client.run("wget -qO- http://web:8080/", b"").await;
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("hello\n", ""));
    let r = client.run("wget -qO- http://10.244.0.2:8080/", b"").await;
    assert_eq!(r.stdout, "hello\n", "{r:?}");
    let r = client
        .run("printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc web 8080", b"")
        .await;
    assert!(r.stdout.ends_with("\r\n\r\nhello\n"), "{r:?}");
    let r = client.run("wget -qO- http://10.244.9.9:8080/", b"").await;
    assert_eq!(
        r.stderr,
        "wget: can't connect to remote host (10.244.9.9): No route to host\n"
    );
    cancel.cancel();
}
