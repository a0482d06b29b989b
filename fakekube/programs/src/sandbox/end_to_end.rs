//! `python-runtime-sandbox` and `sandbox-router` run through [`fakekube_runtime::exec`] and called over
//! HTTP through their pods' networks, as the SDK calls them.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use fakekube_runtime::net::{Cluster, Connection, NetError};
use fakekube_runtime::{ExecIo, ExecSpec, PodFs, PodNetwork, exec};

/// A pod running one of the image programs until the test ends.
struct Pod {
    fs: PodFs,
    network: PodNetwork,
    cancel: CancellationToken,
}

impl Drop for Pod {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Starts `argv` in a new pod with `env` and waits until it listens on `port`.
async fn start(argv: &[&str], env: &[(&str, &str)], port: u16) -> Pod {
    let programs = crate::registry();
    let pod = Pod {
        fs: programs.pod_fs(vec![]),
        network: PodNetwork::new(),
        cancel: CancellationToken::new(),
    };
    let spec = ExecSpec {
        processes: Default::default(),
        argv: argv.iter().map(|a| a.to_string()).collect(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        cwd: "/".into(),
        fs: pod.fs.clone(),
        programs,
        cancel: pod.cancel.clone(),
        network: pod.network.clone(),
    };
    let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(8);
    let (err_tx, mut err_rx) = mpsc::channel::<Bytes>(8);
    tokio::spawn(async move { while out_rx.recv().await.is_some() {} });
    tokio::spawn(async move { while err_rx.recv().await.is_some() {} });
    tokio::spawn(exec(
        spec,
        ExecIo {
            tty: None,
            stdin: None,
            stdout: out_tx,
            stderr: err_tx,
        },
    ));
    let net = pod.network.clone();
    let wait = async move {
        while !net.listening().contains(&port) {
            tokio::task::yield_now().await;
        }
    };
    assert!(
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .is_ok(),
        "{argv:?} does not listen on {port}"
    );
    pod
}

/// An answer: status, headers, body as text.
type Answer = (StatusCode, HeaderMap, String);

/// Sends one request to `port` of `network`.
async fn call(
    network: &PodNetwork,
    port: u16,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let conn = network.connect(port).expect("the server listens");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(conn))
        .await
        .expect("an HTTP/1.1 connection");
    tokio::spawn(connection);
    let mut req = Request::new(Full::new(Bytes::copy_from_slice(body)));
    *req.method_mut() = method;
    *req.uri_mut() = path.parse().expect("a path");
    req.headers_mut()
        .insert("host", http::HeaderValue::from_static("sandbox"));
    for (k, v) in headers {
        req.headers_mut().insert(
            http::HeaderName::from_bytes(k.as_bytes()).expect("a header name"),
            http::HeaderValue::from_str(v).expect("a header value"),
        );
    }
    let resp = sender.send_request(req).await.expect("an answer");
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.expect("a body").to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// The JSON of an answer's body.
fn json_of(answer: &Answer) -> Value {
    serde_json::from_str(&answer.2).unwrap_or(Value::Null)
}

/// `POST /execute` of `command`.
async fn execute(pod: &Pod, command: &str) -> Value {
    let body = json!({ "command": command }).to_string();
    let a = call(
        &pod.network,
        8888,
        Method::POST,
        "/execute",
        &[("content-type", "application/json")],
        body.as_bytes(),
    )
    .await;
    assert_eq!(a.0, StatusCode::OK, "{a:?}");
    json_of(&a)
}

#[tokio::test]
async fn execute_runs_the_split_command_in_the_base_directory_with_its_exit_code() {
    let pod = start(&["python-runtime-sandbox"], &[], 8888).await;
    assert_eq!(
        execute(&pod, "echo 'Hello from SDK'").await,
        json!({ "stdout": "Hello from SDK\n", "stderr": "", "exit_code": 0 })
    );
    assert_eq!(
        execute(&pod, "sh -c 'echo out; echo err >&2; exit 3'").await,
        json!({ "stdout": "out\n", "stderr": "err\n", "exit_code": 3 })
    );
    assert_eq!(execute(&pod, "pwd").await["stdout"], "/app\n");
    assert_eq!(
        execute(&pod, "nope arg").await,
        json!({ "stdout": "", "stderr": "Failed to execute command: [Errno 2] No such file or directory: 'nope'", "exit_code": 1 })
    );
    assert_eq!(
        execute(&pod, "echo 'open").await["stderr"],
        "Failed to execute command: No closing quotation"
    );
    let a = call(&pod.network, 8888, Method::POST, "/execute", &[], b"{}").await;
    assert_eq!(a.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        json_of(&a),
        json!({ "detail": [{ "type": "missing", "loc": ["body", "command"], "msg": "Field required", "input": {} }] })
    );
}

#[tokio::test]
async fn a_command_past_the_time_limit_is_killed_and_reported_as_python_reports_it() {
    let pod = start(
        &["python-runtime-sandbox"],
        &[("SANDBOX_EXEC_TIMEOUT_SECONDS", "0.05")],
        8888,
    )
    .await;
    assert_eq!(
        execute(&pod, "sleep 5").await,
        json!({ "stdout": "", "stderr": "Failed to execute command: Command '['sleep', '5']' timed out after 0.05 seconds", "exit_code": 1 })
    );
}

#[tokio::test]
async fn files_go_up_and_down_under_the_base_directory_and_nowhere_else() {
    let pod = start(
        &["python-runtime-sandbox", "--port", "9000"],
        &[("SANDBOX_BASE_DIR", "/work")],
        9000,
    )
    .await;
    let net = &pod.network;
    let form = b"--b0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"d/t.txt\"\r\n\r\ncontent\r\n--b0--\r\n";
    let ct = [("content-type", "multipart/form-data; boundary=b0")];
    let a = call(net, 9000, Method::POST, "/upload", &ct, form).await;
    assert_eq!(
        (a.0, json_of(&a)),
        (
            StatusCode::OK,
            json!({ "message": "File 'd/t.txt' uploaded successfully." })
        )
    );
    assert_eq!(pod.fs.read("/work/d/t.txt").as_deref(), Ok(&b"content"[..]));
    let a = call(net, 9000, Method::GET, "/download/d%2Ft.txt", &[], b"").await;
    assert_eq!((a.0, a.2.as_str()), (StatusCode::OK, "content"));
    assert_eq!(a.1["content-type"], "application/octet-stream");
    assert_eq!(
        a.1["content-disposition"],
        "attachment; filename=\"d/t.txt\""
    );
    let a = call(net, 9000, Method::GET, "/list/d", &[], b"").await;
    let listed = json_of(&a);
    assert_eq!(listed[0]["name"], "t.txt", "{listed}");
    assert_eq!(listed[0]["size"], 7);
    assert_eq!(listed[0]["type"], "file");
    let a = call(net, 9000, Method::GET, "/exists/d%2Ft.txt", &[], b"").await;
    assert_eq!(json_of(&a), json!({ "path": "d/t.txt", "exists": true }));
    let a = call(net, 9000, Method::GET, "/download/missing", &[], b"").await;
    assert_eq!(
        (a.0, json_of(&a)),
        (
            StatusCode::NOT_FOUND,
            json!({ "message": "File not found" })
        )
    );
    let a = call(net, 9000, Method::GET, "/list/d%2Ft.txt", &[], b"").await;
    assert_eq!(
        (a.0, json_of(&a)),
        (
            StatusCode::NOT_FOUND,
            json!({ "message": "Path is not a directory" })
        )
    );
    let a = call(
        net,
        9000,
        Method::GET,
        "/download/..%2Fetc%2Fpasswd",
        &[],
        b"",
    )
    .await;
    assert_eq!(
        (a.0, json_of(&a)),
        (StatusCode::FORBIDDEN, json!({ "message": "Access denied" }))
    );
    let a = call(net, 9000, Method::GET, "/nowhere", &[], b"").await;
    assert_eq!(
        (a.0, json_of(&a)),
        (StatusCode::NOT_FOUND, json!({ "detail": "Not Found" }))
    );
    let a = call(net, 9000, Method::GET, "/execute", &[], b"").await;
    assert_eq!(
        (a.0, json_of(&a)),
        (
            StatusCode::METHOD_NOT_ALLOWED,
            json!({ "detail": "Method Not Allowed" })
        )
    );
}

/// Request headers, as name and value.
type Headers<'a> = &'a [(&'a str, &'a str)];

/// A cluster where the sandbox `sb` of namespace `team` is `runtime`'s pod.
#[derive(Debug)]
struct Sandboxes {
    runtime: PodNetwork,
}

/// The address of the sandbox's pod in [`Sandboxes`].
const SANDBOX_IP: [u8; 4] = [10, 244, 0, 7];

impl Cluster for Sandboxes {
    fn lookup(&self, name: &str) -> Vec<IpAddr> {
        if name == "sb.team.svc.cluster.local" {
            vec![IpAddr::from(SANDBOX_IP)]
        } else {
            Vec::new()
        }
    }

    fn connect(&self, ip: IpAddr, port: u16) -> Result<Connection, NetError> {
        if ip == IpAddr::from(SANDBOX_IP) {
            self.runtime.connect(port)
        } else {
            Err(NetError::HostUnreachable)
        }
    }
}

#[tokio::test]
async fn the_router_forwards_by_its_headers_and_answers_upstreams_errors() {
    let runtime = start(&["python-runtime-sandbox"], &[], 8888).await;
    let router = start(&["sandbox-router"], &[("ROUTER_AUTH_TOKEN", "t0ken")], 8080).await;
    router.network.set_cluster(Arc::new(Sandboxes {
        runtime: runtime.network.clone(),
    }));
    let net = &router.network;
    let a = call(net, 8080, Method::GET, "/healthz", &[], b"").await;
    assert_eq!(
        (a.0, json_of(&a)),
        (StatusCode::OK, json!({ "status": "ok" }))
    );
    let auth = ("authorization", "Bearer t0ken");
    let route = [
        auth,
        ("x-sandbox-id", "sb"),
        ("x-sandbox-namespace", "team"),
        ("content-type", "application/json"),
    ];
    let a = call(
        net,
        8080,
        Method::POST,
        "/execute",
        &route,
        br#"{"command":"echo via router"}"#,
    )
    .await;
    assert_eq!(
        (a.0, json_of(&a)),
        (
            StatusCode::OK,
            json!({ "stdout": "via router\n", "stderr": "", "exit_code": 0 })
        )
    );
    let cases: [(Headers, StatusCode, &str); 4] = [
        (
            &[("x-sandbox-id", "sb")],
            StatusCode::UNAUTHORIZED,
            "Missing or invalid Authorization header.",
        ),
        (
            &[auth],
            StatusCode::BAD_REQUEST,
            "X-Sandbox-ID header is required.",
        ),
        (
            &[auth, ("x-sandbox-id", "gone")],
            StatusCode::BAD_GATEWAY,
            "Could not connect to the backend sandbox: gone",
        ),
        (
            &[
                auth,
                ("x-sandbox-id", "sb"),
                ("x-sandbox-namespace", "team"),
                ("x-sandbox-port", "9"),
            ],
            StatusCode::BAD_GATEWAY,
            "Could not connect to the backend sandbox: sb",
        ),
    ];
    for (headers, status, message) in cases {
        let a = call(net, 8080, Method::GET, "/", headers, b"").await;
        assert_eq!(
            (a.0, json_of(&a)),
            (status, json!({ "detail": message })),
            "{headers:?}"
        );
    }
}

#[tokio::test]
async fn the_router_refuses_to_start_without_a_token_or_the_unauthenticated_switch() {
    let programs = crate::registry();
    let spec = ExecSpec {
        processes: Default::default(),
        argv: vec!["sandbox-router".into()],
        env: vec![],
        cwd: "/".into(),
        fs: programs.pod_fs(vec![]),
        programs,
        cancel: CancellationToken::new(),
        network: PodNetwork::new(),
    };
    let (out_tx, _out) = mpsc::channel::<Bytes>(8);
    let (err_tx, mut err) = mpsc::channel::<Bytes>(8);
    let status = tokio::spawn(exec(
        spec,
        ExecIo {
            tty: None,
            stdin: None,
            stdout: out_tx,
            stderr: err_tx,
        },
    ));
    let mut text = Vec::new();
    while let Some(chunk) = err.recv().await {
        text.extend_from_slice(&chunk);
    }
    assert_eq!(
        status.await.ok(),
        Some(fakekube_runtime::ExitStatus::Code(1))
    );
    let text = String::from_utf8_lossy(&text);
    assert!(
        text.contains("RuntimeError: ROUTER_AUTH_TOKEN must be set"),
        "{text}"
    );
}
