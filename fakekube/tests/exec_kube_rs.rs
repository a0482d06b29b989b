//! `pods/exec` and `pods/attach` through kube-rs (`Api::exec`, `Api::attach`, with its `ws`
//! feature) against an in-process fakekube, under v5 and, with the `v4_only_exec` fault, under
//! v4; then the handshake's edges through a bare WebSocket client (tokio-tungstenite over TLS):
//! negotiation in client order, 403 when nothing matches, the bearer-token subprotocol, RBAC,
//! the SPDY handshake's 101 and 403 and the non-upgrade 400, Pings, and the connection-drop
//! fault.

mod support;

use futures_util::{SinkExt, StreamExt};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// How long any one step may take before the test fails.
const STEP: Duration = Duration::from_secs(60);

/// Runs `f` with a [`STEP`] timeout.
async fn step<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(STEP, f)
        .await
        .unwrap_or_else(|_| panic!("{what} took over {STEP:?}"))
}

/// A kube client with the server's admin token.
async fn client(kube: &fakekube::FakeKube) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&kube.kubeconfig()).expect("the kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube accepts the kubeconfig");
    Client::try_from(config).expect("kube builds a client")
}

/// A server with one Running pod `box` (container `main`) in `default`, whose main process is
/// `command` (the image's default keep-alive when empty).
async fn server_with_pod(command: &[&str]) -> (fakekube::FakeKube, Api<Pod>) {
    let kube = fakekube::FakeKube::builder()
        .start()
        .await
        .expect("fakekube starts");
    let pods: Api<Pod> = Api::default_namespaced(client(&kube).await);
    let mut container = json!({ "name": "main", "image": "busybox:1.36" });
    if !command.is_empty() {
        container["command"] = json!(command);
    }
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "box" },
        "spec": { "containers": [container] }
    }))
    .expect("a Pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("the pod is created");
    kube.wait_for("pods", "default", "box", STEP, |p| {
        p.and_then(|p| p.pointer("/status/phase"))
            .and_then(Value::as_str)
            == Some("Running")
    })
    .await
    .expect("the pod runs");
    (kube, pods)
}

/// What an exec printed and its status.
struct Ran {
    stdout: String,
    stderr: String,
    status: Option<Status>,
}

/// Runs `command` through kube-rs's exec, writing `stdin` (then closing it) when given.
async fn kube_exec(pods: &Api<Pod>, command: &[&str], stdin: Option<&[u8]>) -> Ran {
    let params = AttachParams::default()
        .stdin(stdin.is_some())
        .stdout(true)
        .stderr(true);
    let mut p = step(
        "the exec upgrade",
        pods.exec("box", command.to_vec(), &params),
    )
    .await
    .expect("kube-rs execs");
    if let Some(data) = stdin {
        let mut w = p.stdin().expect("stdin was asked for");
        w.write_all(data).await.expect("stdin is written");
        w.shutdown().await.expect("stdin is closed");
        drop(w);
    }
    let mut out = p.stdout().expect("stdout was asked for");
    let mut err = p.stderr().expect("stderr was asked for");
    let status = p.take_status().expect("a status future");
    let (mut o, mut e) = (Vec::new(), Vec::new());
    let (ro, re) = step("reading the output", async {
        tokio::join!(out.read_to_end(&mut o), err.read_to_end(&mut e))
    })
    .await;
    ro.expect("stdout is read");
    re.expect("stderr is read");
    let status = step("the status", status).await;
    let _ = step("the session's end", p.join()).await;
    Ran {
        stdout: String::from_utf8_lossy(&o).into_owned(),
        stderr: String::from_utf8_lossy(&e).into_owned(),
        status,
    }
}

/// The exit code an exec's status carries (0 for Success).
fn exit_code(status: &Option<Status>) -> Option<String> {
    let s = status.as_ref()?;
    if s.status.as_deref() == Some("Success") {
        return Some("0".into());
    }
    assert_eq!(s.reason.as_deref(), Some("NonZeroExitCode"), "{s:?}");
    s.details
        .as_ref()?
        .causes
        .as_ref()?
        .iter()
        .find(|c| c.reason.as_deref() == Some("ExitCode"))
        .and_then(|c| c.message.clone())
}

#[tokio::test]
async fn kube_rs_exec_under_v5_reads_stdout_stderr_and_the_exit_code() {
    let (kube, pods) = server_with_pod(&[]).await;
    let ran = kube_exec(&pods, &["sh", "-c", "echo out; echo err >&2; exit 5"], None).await;
    assert_eq!(ran.stdout, "out\n");
    assert_eq!(ran.stderr, "err\n");
    assert_eq!(exit_code(&ran.status).as_deref(), Some("5"));
    let ok = kube_exec(&pods, &["true"], None).await;
    assert_eq!(exit_code(&ok.status).as_deref(), Some("0"));
    kube.shutdown().await;
}

#[tokio::test]
async fn kube_rs_exec_closes_stdin_under_v5_and_the_command_sees_its_end() {
    let (kube, pods) = server_with_pod(&[]).await;
    let ran = kube_exec(
        &pods,
        &["sh", "-c", "cat; echo end"],
        Some(b"line one\nline two\n"),
    )
    .await;
    assert_eq!(ran.stdout, "line one\nline two\nend\n");
    assert_eq!(exit_code(&ran.status).as_deref(), Some("0"));
    kube.shutdown().await;
}

#[tokio::test]
async fn kube_rs_exec_closes_stdin_under_v4_and_output_and_status_still_arrive() {
    let (kube, pods) = server_with_pod(&[]).await;
    kube.faults().v4_only_exec(true);
    let ran = kube_exec(
        &pods,
        &["sh", "-c", "cat; sleep 0.2; echo late; exit 4"],
        Some(b"piped\n"),
    )
    .await;
    assert_eq!(ran.stdout, "piped\nlate\n");
    assert_eq!(exit_code(&ran.status).as_deref(), Some("4"));
    kube.shutdown().await;
}

/// Reads `out` until it holds `want`; returns what was read up to the end of it.
async fn read_until<R: tokio::io::AsyncRead + Unpin>(
    out: &mut R,
    seen: &mut String,
    want: &str,
) -> String {
    step(&format!("output {want:?}"), async {
        loop {
            if let Some(at) = seen.find(want) {
                let rest = seen.split_off(at + want.len());
                return std::mem::replace(seen, rest);
            }
            let mut buf = [0u8; 4096];
            let n = out.read(&mut buf).await.expect("the output reads");
            assert!(n > 0, "the output ended before {want:?}; read {seen:?}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await
}

#[tokio::test]
async fn kube_rs_attached_process_drives_an_interactive_sh_one_command_at_a_time() {
    let (_kube, pods) = server_with_pod(&[]).await;
    for tty in [false, true] {
        let params = AttachParams::default()
            .stdin(true)
            .stdout(true)
            .stderr(!tty)
            .tty(tty);
        let mut proc = step("exec", pods.exec("box", ["sh"], &params))
            .await
            .expect("exec starts");
        let mut stdin = proc.stdin().expect("stdin");
        let mut stdout = proc.stdout().expect("stdout");
        let mut seen = String::new();
        if tty {
            read_until(&mut stdout, &mut seen, "# ").await;
        }
        let (one, two) = if tty {
            (
                "echo one\r\none\r\n# ",
                "x=2; echo \"two $x\"\r\ntwo 2\r\n# ",
            )
        } else {
            ("one\n", "two 2\n")
        };
        stdin.write_all(b"echo one\n").await.expect("writes");
        assert_eq!(read_until(&mut stdout, &mut seen, one).await, one);
        stdin
            .write_all(b"x=2; echo \"two $x\"\n")
            .await
            .expect("writes");
        assert_eq!(read_until(&mut stdout, &mut seen, two).await, two);
        stdin.write_all(b"exit 4\n").await.expect("writes");
        let status = step("the status", proc.take_status().expect("a status channel")).await;
        assert_eq!(
            exit_code(&status).as_deref(),
            Some("4"),
            "tty={tty}: {status:?}"
        );
    }
}

#[tokio::test]
async fn kube_rs_attach_reads_the_main_process_and_leaves_it_running() {
    let (kube, pods) =
        server_with_pod(&["sh", "-c", "while true; do echo tick; sleep 0.05; done"]).await;
    let params = AttachParams::default().stdout(true).stderr(false);
    let mut p = step("the attach upgrade", pods.attach("box", &params))
        .await
        .expect("kube-rs attaches");
    let mut out = p.stdout().expect("stdout was asked for");
    let mut seen = Vec::new();
    step("two ticks", async {
        let mut buf = [0u8; 64];
        while !String::from_utf8_lossy(&seen).contains("tick\ntick\n") {
            let n = out.read(&mut buf).await.expect("attach output");
            assert!(
                n > 0,
                "attach ended early: {:?}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    p.abort();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pod = kube.get("pods", "default", "box").expect("the pod exists");
    assert_eq!(pod.pointer("/status/phase"), Some(&json!("Running")));
    assert_eq!(
        pod.pointer("/status/containerStatuses/0/restartCount"),
        Some(&json!(0))
    );
    kube.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// The handshake and the wire, through a bare WebSocket client.
// ---------------------------------------------------------------------------------------------

/// A WebSocket over the server's TLS.
type Ws = WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// The exec path for `command` with stdout and stderr.
fn exec_path(command: &[&str]) -> String {
    let mut p = String::from("/api/v1/namespaces/default/pods/box/exec?stdout=true&stderr=true");
    for c in command {
        p.push_str("&command=");
        p.extend(form_urlencoded::byte_serialize(c.as_bytes()));
    }
    p
}

/// Opens a WebSocket to `path` offering `protocols`, with `token` as a bearer header (if any).
async fn ws_connect(
    kube: &fakekube::FakeKube,
    path: &str,
    protocols: &str,
    token: Option<&str>,
) -> Result<(Ws, Option<String>), WsError> {
    let (tls, _) = support::Client::new(kube).connect().await;
    let mut req = format!("wss://{}{path}", kube.addr())
        .into_client_request()
        .expect("a request");
    if !protocols.is_empty() {
        req.headers_mut().insert(
            "sec-websocket-protocol",
            protocols.parse().expect("a header value"),
        );
    }
    if let Some(t) = token {
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {t}").parse().expect("a header value"),
        );
    }
    let (ws, resp) = tokio_tungstenite::client_async(req, tls).await?;
    let chosen = resp
        .headers()
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    Ok((ws, chosen))
}

/// The HTTP status (and body) of a refused handshake.
fn refused(result: Result<(Ws, Option<String>), WsError>) -> (StatusCode, Value) {
    match result {
        Err(WsError::Http(resp)) => {
            let body = resp
                .body()
                .as_ref()
                .map(|b| serde_json::from_slice(b).unwrap_or(json!(String::from_utf8_lossy(b))))
                .unwrap_or(Value::Null);
            (resp.status(), body)
        }
        Err(e) => panic!("expected an HTTP refusal, got {e}"),
        Ok((_, p)) => panic!("expected a refusal, got an upgrade with {p:?}"),
    }
}

/// Reads until the server closes: (channel, payload) messages, the Close code, and whether the
/// connection ended without a Close.
async fn read_session(ws: &mut Ws) -> (Vec<(u8, Vec<u8>)>, Option<u16>, bool) {
    let mut messages = Vec::new();
    let mut close = None;
    let mut broken = false;
    step("the session", async {
        while let Some(m) = ws.next().await {
            match m {
                Ok(Message::Binary(b)) => {
                    if let Some((ch, rest)) = b.split_first() {
                        messages.push((*ch, rest.to_vec()));
                    }
                }
                Ok(Message::Close(c)) => close = c.map(|c| u16::from(c.code)),
                Ok(_) => {}
                Err(_) => {
                    broken = true;
                    break;
                }
            }
        }
    })
    .await;
    (messages, close, broken)
}

/// The concatenated payloads of one channel.
fn channel(messages: &[(u8, Vec<u8>)], ch: u8) -> Vec<u8> {
    messages
        .iter()
        .filter(|(c, _)| *c == ch)
        .flat_map(|(_, p)| p.iter().copied())
        .collect()
}

#[tokio::test]
async fn the_subprotocol_is_chosen_in_client_order_and_echoed_exactly() {
    let (kube, _) = server_with_pod(&[]).await;
    let path = exec_path(&["echo", "hi"]);
    let (mut ws, chosen) = ws_connect(
        &kube,
        &path,
        "v4.channel.k8s.io, v5.channel.k8s.io",
        Some(kube.token()),
    )
    .await
    .expect("the upgrade succeeds");
    assert_eq!(chosen.as_deref(), Some("v4.channel.k8s.io"));
    let (messages, close, broken) = read_session(&mut ws).await;
    assert_eq!(
        messages.first(),
        Some(&(1u8, Vec::new())),
        "the initial empty frame"
    );
    assert_eq!(channel(&messages, 1), b"hi\n");
    assert_eq!(
        serde_json::from_slice::<Value>(&channel(&messages, 3)).ok(),
        Some(json!({ "metadata": {}, "status": "Success" }))
    );
    assert_eq!(close, Some(1000));
    assert!(!broken);

    let (_, chosen) = ws_connect(
        &kube,
        &path,
        "x-unknown, base64.channel.k8s.io, v5.channel.k8s.io",
        Some(kube.token()),
    )
    .await
    .expect("the upgrade succeeds");
    assert_eq!(chosen.as_deref(), Some("base64.channel.k8s.io"));
    kube.shutdown().await;
}

#[tokio::test]
async fn no_supported_subprotocol_is_a_403_with_an_empty_body() {
    let (kube, _) = server_with_pod(&[]).await;
    let (status, body) = refused(
        ws_connect(
            &kube,
            &exec_path(&["true"]),
            "v9.channel.k8s.io",
            Some(kube.token()),
        )
        .await,
    );
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.is_null() || body == json!(""), "{body}");
    kube.shutdown().await;
}

#[tokio::test]
async fn v4_only_fault_refuses_a_v5_only_offer_and_picks_v4_from_both() {
    let (kube, _) = server_with_pod(&[]).await;
    kube.faults().v4_only_exec(true);
    let path = exec_path(&["true"]);
    let (status, _) =
        refused(ws_connect(&kube, &path, "v5.channel.k8s.io", Some(kube.token())).await);
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, chosen) = ws_connect(
        &kube,
        &path,
        "v5.channel.k8s.io, v4.channel.k8s.io",
        Some(kube.token()),
    )
    .await
    .expect("the upgrade succeeds");
    assert_eq!(chosen.as_deref(), Some("v4.channel.k8s.io"));
    kube.faults().v4_only_exec(false);
    let (_, chosen) = ws_connect(&kube, &path, "v5.channel.k8s.io", Some(kube.token()))
        .await
        .expect("the upgrade succeeds");
    assert_eq!(chosen.as_deref(), Some("v5.channel.k8s.io"));
    kube.shutdown().await;
}

#[tokio::test]
async fn a_bearer_token_in_the_subprotocol_list_authenticates_and_is_not_echoed() {
    use base64::Engine;
    let (kube, _) = server_with_pod(&[]).await;
    let entry = format!(
        "base64url.bearer.authorization.k8s.io.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(kube.token())
    );
    let (mut ws, chosen) = ws_connect(
        &kube,
        &exec_path(&["echo", "via protocol"]),
        &format!("{entry}, v5.channel.k8s.io"),
        None,
    )
    .await
    .expect("the upgrade succeeds");
    assert_eq!(chosen.as_deref(), Some("v5.channel.k8s.io"));
    let (messages, close, _) = read_session(&mut ws).await;
    assert_eq!(channel(&messages, 1), b"via protocol\n");
    assert_eq!(close, Some(1000));
    let (status, _) =
        refused(ws_connect(&kube, &exec_path(&["true"]), "v5.channel.k8s.io", None).await);
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    kube.shutdown().await;
}

#[tokio::test]
async fn exec_needs_get_on_pods_exec_and_refusals_read_as_the_api_server_words_them() {
    let (kube, _) = server_with_pod(&[]).await;
    kube.add_token(
        fakekube::Token::new("reader", "reader").with_rules(vec![fakekube::Rule::new(
            [""],
            ["pods"],
            ["get", "list"],
        )]),
    );
    let (status, body) = refused(
        ws_connect(
            &kube,
            &exec_path(&["true"]),
            "v5.channel.k8s.io",
            Some("reader"),
        )
        .await,
    );
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        body["message"],
        "pods \"box\" is forbidden: User \"reader\" cannot get resource \"pods/exec\" in API group \"\" in the namespace \"default\""
    );
    kube.add_token(
        fakekube::Token::new("execer", "execer").with_rules(vec![fakekube::Rule::new(
            [""],
            ["pods/exec"],
            ["get"],
        )]),
    );
    let (_, chosen) = ws_connect(
        &kube,
        &exec_path(&["true"]),
        "v5.channel.k8s.io",
        Some("execer"),
    )
    .await
    .expect("get on pods/exec is enough");
    assert_eq!(chosen.as_deref(), Some("v5.channel.k8s.io"));
    kube.shutdown().await;
}

#[tokio::test]
async fn missing_pods_unknown_containers_and_pods_without_a_node_get_the_api_servers_errors() {
    let (kube, _) = server_with_pod(&[]).await;
    let t = Some(kube.token());
    let (status, body) = refused(
        ws_connect(
            &kube,
            "/api/v1/namespaces/default/pods/nope/exec?command=true&stdout=true",
            "v5.channel.k8s.io",
            t,
        )
        .await,
    );
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["message"], "pods \"nope\" not found");
    let (status, body) = refused(
        ws_connect(
            &kube,
            "/api/v1/namespaces/default/pods/box/exec?command=true&stdout=true&container=other",
            "v5.channel.k8s.io",
            t,
        )
        .await,
    );
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["message"], "container other is not valid for pod box");
    let (status, body) = refused(
        ws_connect(
            &kube,
            "/api/v1/namespaces/default/pods/box/exec?command=true",
            "v5.channel.k8s.io",
            t,
        )
        .await,
    );
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["message"],
        "you must specify at least 1 of stdin, stdout, stderr"
    );
    kube.shutdown().await;

    let idle = fakekube::FakeKube::builder()
        .kubelet(false)
        .start()
        .await
        .expect("fakekube starts");
    let c = support::Client::new(&idle);
    let created = c
        .json(
            Method::POST,
            "/api/v1/namespaces/default/pods",
            &json!({ "metadata": { "name": "box" }, "spec": { "containers": [ { "name": "main", "image": "busybox:1.36" } ] } }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let (status, body) = refused(
        ws_connect(
            &idle,
            &exec_path(&["true"]),
            "v5.channel.k8s.io",
            Some(idle.token()),
        )
        .await,
    );
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["message"], "pod box does not have a host assigned");
    idle.shutdown().await;
}

/// Sends a bodiless request with extra headers over HTTP/1.1; returns status and JSON body.
async fn raw_request(
    kube: &fakekube::FakeKube,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, Value) {
    let (status, _, body) = raw_request_with_headers(kube, method, path, headers).await;
    (status, body)
}

/// Like [`raw_request`], with the response headers.
async fn raw_request_with_headers(
    kube: &fakekube::FakeKube,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, http::HeaderMap, Value) {
    let (tls, _) = support::Client::new(kube).connect().await;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("h1 handshake");
    tokio::spawn(conn);
    let mut b = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", kube.addr().to_string())
        .header("authorization", format!("Bearer {}", kube.token()));
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let resp = send
        .send_request(b.body(Empty::<bytes::Bytes>::new()).expect("a request"))
        .await
        .expect("a response");
    let status = resp.status();
    let headers = resp.headers().clone();
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return (status, headers, Value::Null);
    }
    let body = resp.into_body().collect().await.expect("a body").to_bytes();
    (
        status,
        headers,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_spdy_post_is_upgraded_with_the_protocol_it_offers_or_refused_with_403() {
    let (kube, _) = server_with_pod(&[]).await;
    let path = exec_path(&["true"]);
    let spdy = |offer: &'static str| {
        [
            ("connection", "Upgrade"),
            ("upgrade", "SPDY/3.1"),
            ("x-stream-protocol-version", offer),
            ("x-stream-protocol-version", "channel.k8s.io"),
        ]
    };
    let (status, headers, _) =
        raw_request_with_headers(&kube, Method::POST, &path, &spdy("v4.channel.k8s.io")).await;
    assert_eq!(status, StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(
        headers.get("upgrade").and_then(|v| v.to_str().ok()),
        Some("SPDY/3.1")
    );
    assert_eq!(
        headers
            .get("x-stream-protocol-version")
            .and_then(|v| v.to_str().ok()),
        Some("v4.channel.k8s.io")
    );
    let (status, headers, body) = raw_request_with_headers(
        &kube,
        Method::POST,
        &path,
        &[
            ("connection", "Upgrade"),
            ("upgrade", "SPDY/3.1"),
            ("x-stream-protocol-version", "v9.channel.k8s.io"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io]"
        ),
        "{message}"
    );
    assert_eq!(
        headers
            .get_all("x-accepted-stream-protocol-versions")
            .iter()
            .count(),
        4
    );
    let (status, body) = raw_request(&kube, Method::GET, &path, &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["message"], "Upgrade request required");
    kube.shutdown().await;
}

#[tokio::test]
async fn pings_are_answered_while_a_command_runs() {
    let (kube, _) = server_with_pod(&[]).await;
    // `cat` runs until the test closes its stdin, which it does only once the pong came.
    let (mut ws, _) = ws_connect(
        &kube,
        &format!("{}&stdin=true", exec_path(&["cat"])),
        "v5.channel.k8s.io",
        Some(kube.token()),
    )
    .await
    .expect("the upgrade succeeds");
    ws.send(Message::Ping(b"are you there".to_vec().into()))
        .await
        .expect("the ping is sent");
    let pong = tokio::time::timeout(STEP, async {
        while let Some(Ok(m)) = ws.next().await {
            if let Message::Pong(p) = m {
                return Some(p.to_vec());
            }
        }
        None
    })
    .await;
    assert_eq!(pong.ok().flatten(), Some(b"are you there".to_vec()));
    ws.send(Message::binary(vec![255u8, 0]))
        .await
        .expect("stdin is closed");
    let (_, close, _) = read_session(&mut ws).await;
    assert_eq!(close, Some(1000));
    kube.shutdown().await;
}

#[tokio::test]
async fn the_drop_fault_cuts_the_connection_after_n_output_bytes() {
    let (kube, _) = server_with_pod(&[]).await;
    kube.faults().drop_exec_after_bytes(Some(10_000));
    let (mut ws, _) = ws_connect(
        &kube,
        &exec_path(&["head", "-c", "1000000", "/dev/zero"]),
        "v5.channel.k8s.io",
        Some(kube.token()),
    )
    .await
    .expect("the upgrade succeeds");
    let (messages, close, broken) = read_session(&mut ws).await;
    assert_eq!(channel(&messages, 1).len(), 10_000);
    assert!(channel(&messages, 3).is_empty(), "no status after a drop");
    assert_eq!(close, None);
    assert!(broken, "the connection ends without a closing handshake");
    kube.faults().drop_exec_after_bytes(None);
    let (mut ws, _) = ws_connect(
        &kube,
        &exec_path(&["head", "-c", "1000000", "/dev/zero"]),
        "v5.channel.k8s.io",
        Some(kube.token()),
    )
    .await
    .expect("the upgrade succeeds");
    let (messages, close, _) = read_session(&mut ws).await;
    assert_eq!(channel(&messages, 1).len(), 1_000_000);
    assert_eq!(close, Some(1000));
    kube.shutdown().await;
}

#[tokio::test]
async fn concurrent_large_outputs_arrive_whole_and_before_their_status_under_v4_and_v5() {
    let (kube, _) = server_with_pod(&[]).await;
    let (out, err) = (3_000_001, 1_000_003);
    let path = exec_path(&[
        "sh",
        "-c",
        "head -c 3000001 /dev/zero; head -c 1000003 /dev/zero >&2",
    ]);
    for protocol in ["v4.channel.k8s.io", "v5.channel.k8s.io"] {
        let mut sessions = Vec::new();
        for _ in 0..4 {
            let (mut ws, chosen) = ws_connect(&kube, &path, protocol, Some(kube.token()))
                .await
                .expect("the upgrade succeeds");
            assert_eq!(chosen.as_deref(), Some(protocol));
            sessions.push(tokio::spawn(async move { read_session(&mut ws).await }));
        }
        for session in sessions {
            let (messages, close, broken) = session.await.expect("the reading task");
            assert_eq!(channel(&messages, 1).len(), out, "{protocol}: stdout");
            assert_eq!(channel(&messages, 2).len(), err, "{protocol}: stderr");
            let with_data = |m: &&(u8, Vec<u8>)| !m.1.is_empty();
            let last = messages.iter().rfind(|m| with_data(m));
            let status = last.filter(|(c, _)| *c == 3).map(|(_, p)| p.as_slice());
            let status: Value = serde_json::from_slice(status.unwrap_or_default())
                .expect("the last message with a payload is the status");
            assert_eq!(status["status"], "Success", "{protocol}");
            assert_eq!(close, Some(1000), "{protocol}");
            assert!(
                !broken,
                "{protocol}: the connection ends with its closing handshake"
            );
        }
    }
    kube.shutdown().await;
}

#[tokio::test]
async fn a_64_mb_websocket_frame_gets_a_status_on_the_error_channel_and_close_1009() {
    let (kube, _) = server_with_pod(&[]).await;
    let (mut ws, _) = ws_connect(
        &kube,
        &format!("{}&stdin=true", exec_path(&["sleep", "30"])),
        "v5.channel.k8s.io",
        Some(kube.token()),
    )
    .await
    .expect("the upgrade succeeds");
    // The head of a masked binary frame announcing 64 MiB, written under the client's framing:
    // the server refuses on the length, before any payload.
    let mut head = vec![0x82, 0x80 | 127];
    head.extend_from_slice(&(64u64 << 20).to_be_bytes());
    head.extend_from_slice(&[1, 2, 3, 4]);
    let tls = ws.get_mut();
    tls.write_all(&head).await.expect("the frame head is sent");
    tls.flush().await.expect("flushed");
    let (messages, close, _) = read_session(&mut ws).await;
    let status: Value =
        serde_json::from_slice(&channel(&messages, 3)).expect("a Status on the error channel");
    assert_eq!(status["reason"], "RequestEntityTooLarge", "{status}");
    assert_eq!(status["code"], 413);
    assert_eq!(close, Some(1009));
    kube.shutdown().await;
}
