//! `kubectl port-forward` from the installed kubectl binaries against the `fakekube` binary,
//! into listeners inside the pod: BusyBox `httpd` (a file fetched with a plain TCP client
//! through 127.0.0.1:LOCALPORT) and `nc -lk -e` (a line each way). kubectl 1.27 speaks SPDY
//! (`POST`), 1.30 tunnels SPDY in a WebSocket with `KUBECTL_PORT_FORWARD_WEBSOCKETS=true`, and
//! 1.33 does so by default; `-v=6` shows which request each made. A refused port is reported
//! as the kubelet words it. kube-rs's `Api::portforward` (WebSocket channels) reaches `nc`
//! against an in-process fakekube, and so does the Python client's `portforward`.
//!
//! Nothing dials a pod IP: every byte goes through the API server's connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

mod support;

use support::process::Process as Server;

/// Where the Cloud SDK keeps its versioned kubectl binaries.
const SDK: &str = "/usr/lib/google-cloud-sdk/bin";
/// How long a kubectl command (or a forwarded connection) may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The pod serving `/www` with httpd on 8080 (a small page and a 300 000-byte file) and a
/// line answerer on 9000 with `nc -lk -e`.
const WEB_POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: httpd
    image: busybox
    command: ["sh", "-c", "mkdir -p /www && echo '<h1>hello from the pod</h1>' > /www/index.html && head -c 300000 /dev/zero > /www/big.bin && httpd -f -p 8080 -h /www"]
  - name: nc
    image: busybox
    command: ["nc", "-lk", "-p", "9000", "-e", "sh", "-c", "read line; echo \"got $line\""]
"#;

/// The path of `kubectl.1.<minor>` when it is installed.
fn kubectl(minor: u32) -> Option<String> {
    let bin = format!("{SDK}/kubectl.1.{minor}");
    if Path::new(&bin).exists() {
        Some(bin)
    } else {
        println!("skipping: {bin} not installed");
        None
    }
}

/// The newest installed kubectl, for setting things up.
fn newest() -> String {
    (27..=33)
        .rev()
        .find_map(|m| {
            let b = format!("{SDK}/kubectl.1.{m}");
            Path::new(&b).exists().then_some(b)
        })
        .unwrap_or_else(|| "kubectl".to_string())
}

/// A kubectl command with a fresh HOME and the server's kubeconfig.
fn command(kubeconfig: &Path, bin: &str, home: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("KUBECONFIG", kubeconfig);
    cmd
}

/// Runs a setup command to its end; fails the test on a non-zero exit.
fn setup(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) {
    let home = tempfile::tempdir().expect("a temporary HOME");
    let mut child = command(kubeconfig, &newest(), home.path())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl starts");
    if let Some(mut w) = child.stdin.take() {
        let _ = w.write_all(stdin.unwrap_or_default().as_bytes());
    }
    let out = child.wait_with_output().expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A server with the `web` pod Ready and both its listeners up.
fn server_with_web_pod() -> Server {
    let server = Server::start(&[]);
    setup(&server.kubeconfig, &["apply", "-f", "-"], Some(WEB_POD));
    setup(
        &server.kubeconfig,
        &["wait", "--for=condition=Ready", "pod/web", "--timeout=50s"],
        None,
    );
    // Running says the programs started, not that they listen yet: ask from inside the pod
    // (`nc -z` only connects).
    setup(
        &server.kubeconfig,
        &[
            "exec",
            "web",
            "-c",
            "nc",
            "--",
            "sh",
            "-c",
            "until nc -z 127.0.0.1 8080 && nc -z 127.0.0.1 9000; do sleep 0.05; done",
        ],
        None,
    );
    server
}

/// A running `kubectl port-forward`, killed when dropped.
struct Forward {
    child: Child,
    /// The local port kubectl listens on.
    port: u16,
    /// Its stderr, collected by a thread until it exits.
    stderr: Option<thread::JoinHandle<String>>,
    _home: tempfile::TempDir,
}

impl Forward {
    /// Starts `kubectl port-forward pod/web :REMOTE` (a free local port, which kubectl prints)
    /// with `-v=6` and `env`; waits for its `Forwarding from 127.0.0.1:PORT` line.
    fn start(kubeconfig: &Path, bin: &str, remote: u16, env: &[(&str, &str)]) -> Forward {
        let home = tempfile::tempdir().expect("a temporary HOME");
        let mut cmd = command(kubeconfig, bin, home.path());
        cmd.args(["-v=6", "port-forward", "pod/web", &format!(":{remote}")])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("kubectl starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:") {
                    let port = rest.split_whitespace().next().and_then(|p| p.parse().ok());
                    let _ = tx.send(port);
                }
            }
        });
        let mut err = child.stderr.take().expect("stderr is piped");
        let stderr = Some(thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        }));
        let port = rx.recv_timeout(TIMEOUT).ok().flatten();
        let mut forward = Forward {
            child,
            port: 0,
            stderr,
            _home: home,
        };
        match port {
            Some(p) => forward.port = p,
            None => panic!(
                "kubectl port-forward printed no local port: {}",
                forward.stop()
            ),
        }
        forward
    }

    /// Stops kubectl (if it still runs) and returns its stderr.
    fn stop(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    /// Waits (bounded) for kubectl to exit by itself; returns its stderr.
    fn wait_exit(&mut self) -> Option<String> {
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Some(self.stop());
            }
            thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `request` to 127.0.0.1:`port`, shuts the sending side, and reads to the end.
fn exchange(port: u16, request: &[u8]) -> Vec<u8> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("kubectl listens");
    conn.set_read_timeout(Some(TIMEOUT))
        .expect("a read timeout");
    conn.write_all(request).expect("the request is sent");
    let mut reply = Vec::new();
    conn.read_to_end(&mut reply).expect("the reply is read");
    reply
}

/// A plain HTTP/1.0 GET through the forward; the whole reply.
fn http_get(port: u16, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    String::from_utf8_lossy(&exchange(port, request.as_bytes())).into_owned()
}

/// How one kubectl forwards: its minor version, its environment, and what its `-v=6` log
/// shows of the upgrade request.
struct Transport {
    minor: u32,
    env: &'static [(&'static str, &'static str)],
    request: &'static str,
}

/// kubectl 1.27 over SPDY, 1.30 with the WebSocket tunnel switched on, 1.33 by default.
const TRANSPORTS: [Transport; 3] = [
    Transport {
        minor: 27,
        env: &[],
        request: "POST https://",
    },
    Transport {
        minor: 30,
        env: &[("KUBECTL_PORT_FORWARD_WEBSOCKETS", "true")],
        request: "GET https://",
    },
    Transport {
        minor: 33,
        env: &[],
        request: "verb=\"GET\"",
    },
];

#[test]
fn kubectl_port_forward_reaches_httpd_in_the_pod_over_spdy_and_over_the_websocket_tunnel() {
    let server = server_with_web_pod();
    for Transport {
        minor,
        env,
        request,
    } in TRANSPORTS
    {
        let Some(bin) = kubectl(minor) else { continue };
        let mut f = Forward::start(&server.kubeconfig, &bin, 8080, env);
        let page = http_get(f.port, "/");
        assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "1.{minor}: {page}");
        assert!(
            page.contains("Content-type: text/html\r\n"),
            "1.{minor}: {page}"
        );
        assert!(
            page.ends_with("\r\n\r\n<h1>hello from the pod</h1>\n"),
            "1.{minor}: {page}"
        );
        let missing = http_get(f.port, "/nope");
        assert!(
            missing.starts_with("HTTP/1.1 404 Not Found\r\n"),
            "1.{minor}: {missing}"
        );
        let big = exchange(f.port, b"GET /big.bin HTTP/1.0\r\n\r\n");
        let body = big
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|at| big.len() - at - 4);
        assert_eq!(body, Some(300_000), "1.{minor}");
        let stderr = f.stop();
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(request) && l.contains("/pods/web/portforward")),
            "1.{minor} made no {request} to portforward: {stderr}"
        );
    }
}

#[test]
fn kubectl_port_forward_reaches_nc_in_the_pod_both_ways() {
    let server = server_with_web_pod();
    for Transport { minor, env, .. } in TRANSPORTS {
        let Some(bin) = kubectl(minor) else { continue };
        let f = Forward::start(&server.kubeconfig, &bin, 9000, env);
        for word in ["one", "two"] {
            let reply = exchange(f.port, format!("{word} from 1.{minor}\n").as_bytes());
            assert_eq!(
                String::from_utf8_lossy(&reply),
                format!("got {word} from 1.{minor}\n")
            );
        }
    }
}

#[test]
fn a_closed_port_is_reported_as_the_kubelet_reports_it() {
    let server = server_with_web_pod();
    let Some(bin) = kubectl(33) else { return };
    let mut f = Forward::start(&server.kubeconfig, &bin, 9999, &[]);
    let reply = exchange(f.port, b"anyone?\n");
    assert!(reply.is_empty());
    // kubectl 1.33 gives up on the whole forward after an error on the error stream.
    let stderr = f.wait_exit().unwrap_or_else(|| f.stop());
    assert!(
        stderr.contains("an error occurred forwarding")
            && stderr.contains("-> 9999: error forwarding port 9999 to pod "),
        "{stderr}"
    );
    assert!(
        stderr.contains("dial tcp4 127.0.0.1:9999: connect: connection refused"),
        "{stderr}"
    );
}

#[tokio::test]
async fn kube_rs_portforward_reaches_nc_over_websocket_channels() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, AttachParams, PostParams};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let kube = fakekube::FakeKube::builder()
        .start()
        .await
        .expect("fakekube starts");
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&kube.kubeconfig()).expect("the kubeconfig parses"),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("a kube config");
    let client = kube::Client::try_from(config).expect("a client");
    let pods: Api<Pod> = Api::default_namespaced(client);
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "echo" },
        "spec": { "containers": [ {
            "name": "nc",
            "image": "busybox",
            "command": ["nc", "-lk", "-p", "7000", "-e", "sh", "-c", "read l; echo \"got $l\""],
        } ] },
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("the pod is created");
    kube.wait_for("pods", "default", "echo", TIMEOUT, |p| {
        p.and_then(|p| p.pointer("/status/phase"))
            .and_then(|v| v.as_str())
            == Some("Running")
    })
    .await
    .expect("the pod runs");
    // Running says nc started, not that it listens yet: ask from inside the pod.
    let mut ready = pods
        .exec(
            "echo",
            [
                "sh",
                "-c",
                "until nc -z 127.0.0.1 7000; do sleep 0.05; done",
            ],
            &AttachParams::default(),
        )
        .await
        .expect("an exec");
    let status = ready.take_status().expect("a status");
    assert_eq!(
        status.await.and_then(|s| s.status).as_deref(),
        Some("Success")
    );
    ready.join().await.expect("the exec ends");
    let mut pf = pods
        .portforward("echo", &[7000])
        .await
        .expect("the upgrade");
    let mut stream = pf.take_stream(7000).expect("the port's stream");
    stream.write_all(b"hi kube-rs\n").await.expect("written");
    let mut reply = String::new();
    stream
        .read_to_string(&mut reply)
        .await
        .expect("the reply is read");
    drop(stream);
    assert_eq!(pf.take_error(7000).expect("the port's errors").await, None);
    // The server closes first once the pod's side ended, as the kubelet does; kube-rs then
    // fails its own Close (`SendAfterClosing`), which says nothing about the data.
    let _ = pf.join().await;
    assert_eq!(reply, "got hi kube-rs\n");
    kube.shutdown().await;
}

/// The Python interpreter of `target/<venv>`, made by `ci/python-venv.sh`.
fn python(venv: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."));
    let bin = root.join("target").join(venv).join("bin").join("python");
    assert!(
        bin.exists(),
        "{} is missing: run ci/python-venv.sh (ci/test.sh does) to create the Python venvs",
        bin.display()
    );
    bin
}

#[test]
fn the_python_clients_portforward_fetches_a_page_from_httpd() {
    let server = server_with_web_pod();
    for venv in ["py-venv-current", "py-venv-31"] {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join("python")
            .join("portforward.py");
        let out = Command::new(python(venv))
            .arg(script)
            .arg(&server.kubeconfig)
            .args(["default", "web", "8080"])
            .stdin(Stdio::null())
            .output()
            .expect("python starts");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{venv}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.starts_with("HTTP/1.1 200 OK\r\n"),
            "{venv}: {stdout}"
        );
        assert!(
            stdout.ends_with("<h1>hello from the pod</h1>\n"),
            "{venv}: {stdout}"
        );
    }
}
