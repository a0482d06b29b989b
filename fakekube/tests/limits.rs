//! The limits a real API server and kubelet keep: media types (415), parameters (400), body
//! size (413 on both HTTP versions, with its Status, for curl as for hyper), URL length (served up to 63 KiB, then 414 on both HTTP
//! versions, over HTTP/2 without losing the connection), WebSocket message size (1009 and a Status), header-read and idle timeouts,
//! `--max-requests-inflight`, and a pod's memory, ephemeral storage and the storage budget.

mod support;

use fakekube::{FakeKube, Token};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::time::Duration;
use support::Client;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a test waits for what it expects before it fails (a hang guard, not a measure).
const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_create_in_text_plain_is_refused_with_415_and_nothing_is_stored() {
    let kube = FakeKube::builder().start().await.expect("starts");
    let c = Client::new(&kube);
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"}});
    let r = c
        .call(
            Method::POST,
            "/api/v1/namespaces/default/secrets",
            Some("text/plain"),
            serde_json::to_vec(&secret).unwrap(),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(r.json()["reason"], "UnsupportedMediaType");
    assert_eq!(kube.get("secrets", "default", "plain"), None);
}

#[tokio::test]
async fn bad_list_and_watch_parameters_are_400() {
    let kube = FakeKube::builder().start().await.expect("starts");
    let c = Client::new(&kube);
    for q in [
        "resourceVersion=abc&resourceVersionMatch=Exact",
        "watch=1&timeoutSeconds=-5",
        "watch=1&timeoutSeconds=1e12",
        "limit=-1",
    ] {
        let r = c.get(&format!("/api/v1/namespaces/default/pods?{q}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{q}: {:?}", r.body);
        assert_eq!(r.json()["kind"], "Status", "{q}");
    }
}

/// Sends a body of `size` bytes as a create over `client` and returns the answer.
async fn big_create(client: &Client, size: usize) -> support::Reply {
    client
        .call(
            Method::POST,
            "/api/v1/namespaces/default/secrets",
            Some("application/json"),
            vec![b' '; size],
        )
        .await
}

#[tokio::test]
async fn a_body_over_the_limit_gets_the_same_413_status_over_http1_and_http2() {
    let kube = FakeKube::builder().start().await.expect("starts");
    let h1 = Client::new(&kube);
    let h2 = h1.h2(kube.ca_pem());
    let a = big_create(&h1, 8 << 20).await;
    let b = big_create(&h2, 8 << 20).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(b.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(a.json(), b.json());
    assert_eq!(a.json()["reason"], "RequestEntityTooLarge");
}

/// curl's verdict on a 4 MiB pod sent over `version` (`--http1.1`, `--http2`): the status it
/// read (`000` for none), its exit code and the body it kept.
fn curl_big_pod(kube: &FakeKube, version: &str, dir: &std::path::Path) -> (String, i32, Value) {
    let body = dir.join("pod.json");
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "big", "annotations": { "pad": "x".repeat(4 << 20) } },
        "spec": { "containers": [{ "name": "c", "image": "busybox" }] },
    });
    std::fs::write(&body, serde_json::to_vec(&pod).expect("a pod serializes")).expect("writes");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, kube.ca_pem()).expect("writes the CA");
    let answer = dir.join("answer.json");
    let _ = std::fs::remove_file(&answer);
    let out = std::process::Command::new("curl")
        .args(["-sS", version, "--cacert"])
        .arg(&ca)
        .args(["-o"])
        .arg(&answer)
        .args(["-w", "%{http_code}", "-X", "POST"])
        .args(["-H", "Content-Type: application/json"])
        .args(["-H", &format!("Authorization: Bearer {}", kube.token())])
        .arg("--data-binary")
        .arg(format!("@{}", body.display()))
        .arg(format!(
            "{}/api/v1/namespaces/default/pods",
            kube.base_url()
        ))
        .output()
        .expect("curl runs (this machine kind ships it)");
    let answer = std::fs::read(&answer)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
        answer,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_gets_413_and_its_status_for_a_body_over_the_limit_over_http2_as_over_http1() {
    let kube = FakeKube::builder().start().await.expect("starts");
    let dir = tempfile::tempdir().expect("a temporary directory");
    for version in ["--http1.1", "--http2"] {
        let (code, exit, answer) =
            tokio::task::block_in_place(|| curl_big_pod(&kube, version, dir.path()));
        assert_eq!((code.as_str(), exit), ("413", 0), "curl {version}");
        assert_eq!(answer["reason"], "RequestEntityTooLarge", "curl {version}");
        assert_eq!(answer["code"], 413, "curl {version}");
    }
}

#[tokio::test]
async fn a_body_declared_over_the_limit_is_answered_413_without_a_100_continue_first() {
    let kube = FakeKube::builder().start().await.expect("starts");
    let (mut tls, _) = Client::new(&kube).connect().await;
    // What curl sends before a large upload: the headers, then it waits for 100 Continue.
    let request = format!(
        "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        kube.token(),
        4 << 20
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    tokio::time::timeout(PATIENCE, tls.read_exact(&mut head))
        .await
        .expect("an answer before any byte of the body")
        .expect("a status line");
    assert_eq!(String::from_utf8_lossy(&head), "HTTP/1.1 413");
}

/// fakekube's longest request target (path and query): 1 KiB under the 65,534 bytes the `http`
/// crate holds (fakekube's `server::MAX_URI`).
const MAX_URI: usize = 65_534 - 1024;

/// A pod list whose target is `len` bytes long, padded with a parameter the server ignores.
fn pods_target(len: usize) -> String {
    let mut t = "/api/v1/namespaces/default/pods?pad=".to_owned();
    t.push_str(&"x".repeat(len - t.len()));
    t
}

#[tokio::test]
async fn a_url_at_the_limit_is_served_and_one_byte_more_gets_the_same_414_status_over_http1_and_http2()
 {
    let kube = FakeKube::builder().start().await.expect("starts");
    let h1 = Client::new(&kube);
    let h2 = h1.h2(kube.ca_pem());
    for client in [&h1, &h2] {
        let at = client.get(&pods_target(MAX_URI)).await;
        assert_eq!(at.status, StatusCode::OK, "{:?}", at.body);
    }
    let a = h1.get(&pods_target(MAX_URI + 1)).await;
    let b = h2.get(&pods_target(MAX_URI + 1)).await;
    assert_eq!(a.status, StatusCode::URI_TOO_LONG);
    assert_eq!(b.status, StatusCode::URI_TOO_LONG);
    assert_eq!(a.json(), b.json());
    assert_eq!(a.json()["reason"], "RequestURITooLong");
}

#[tokio::test]
async fn a_url_past_what_the_http_crate_holds_gets_hypers_bare_414_over_http1() {
    let kube = FakeKube::builder().start().await.expect("starts");
    let (mut tls, _) = Client::new(&kube).connect().await;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
        pods_target(65_535),
        kube.token()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    tokio::time::timeout(PATIENCE, tls.read_exact(&mut head))
        .await
        .expect("an answer")
        .expect("a status line");
    assert_eq!(&head, b"HTTP/1.1 414");
}

#[tokio::test]
async fn an_over_long_url_over_http2_is_answered_414_and_the_connection_stays_up() {
    let kube = FakeKube::builder().start().await.expect("starts");
    let client = Client::new(&kube).h2(kube.ca_pem());
    let (tls, proto) = client.connect().await;
    assert_eq!(proto, support::Proto::H2);
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        TokioIo::new(tls),
    )
    .await
    .expect("h2 handshake");
    tokio::spawn(conn);
    let request = |path: String| {
        http::Request::builder()
            .uri(path)
            .header("authorization", format!("Bearer {}", kube.token()))
            .body(Full::new(bytes::Bytes::new()))
            .unwrap()
    };
    let r = send
        .send_request(request(pods_target(MAX_URI + 1)))
        .await
        .expect("an answer, not a reset");
    assert_eq!(r.status(), StatusCode::URI_TOO_LONG);
    let body = r.into_body().collect().await.unwrap().to_bytes();
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["code"], 414);
    let again = send
        .send_request(request("/api/v1/namespaces/default/pods".into()))
        .await
        .expect("the same connection serves the next request");
    assert_eq!(again.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_connection_that_sends_headers_too_slowly_is_closed() {
    let kube = FakeKube::builder()
        .header_read_timeout(Duration::from_millis(200))
        .start()
        .await
        .expect("starts");
    let (mut tls, _) = Client::new(&kube).connect().await;
    // On a loaded machine the server may already have closed the connection: the write may
    // then fail, and the read below sees the close all the same.
    let _ = tls.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n").await;
    let mut buf = [0u8; 256];
    let read = tokio::time::timeout(PATIENCE, tls.read(&mut buf))
        .await
        .expect("the server closes the connection");
    // Closed: end of stream, an error, or hyper's 408 before closing.
    if let Ok(n) = read
        && n > 0
    {
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 408"));
    }
}

#[tokio::test]
async fn an_idle_connection_is_closed() {
    let kube = FakeKube::builder()
        .idle_timeout(Duration::from_millis(200))
        .start()
        .await
        .expect("starts");
    let (mut tls, _) = Client::new(&kube).connect().await;
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(PATIENCE, tls.read(&mut buf))
        .await
        .expect("the server closes the idle connection");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}

#[tokio::test]
async fn requests_past_max_requests_inflight_get_429_with_retry_after() {
    let kube = FakeKube::builder()
        .max_requests_inflight(1)
        .token(Token::new("slow-user-token", "slow-user").with_groups(["slow-users"]))
        .start()
        .await
        .expect("starts");
    kube.faults().slow_responses(Duration::from_secs(2));
    let user = Client::new(&kube).with_token(Some("slow-user-token"));
    // Four at once, each held 2 s once admitted: only one has the place, the others are
    // refused (a round that happens to serialise them is tried again).
    let refused = loop {
        let path = "/api/v1/namespaces/default/pods";
        let (a, b, c, d) = tokio::join!(
            user.get(path),
            user.get(path),
            user.get(path),
            user.get(path)
        );
        if let Some(r) = [a, b, c, d]
            .into_iter()
            .find(|r| r.status == StatusCode::TOO_MANY_REQUESTS)
        {
            break r;
        }
    };
    assert_eq!(refused.headers["retry-after"], "1");
    assert_eq!(
        String::from_utf8_lossy(&refused.body),
        "Too many requests, please try again later.\n"
    );
    // The admin (system:masters) is served all the same.
    kube.faults().slow_responses(Duration::ZERO);
    assert_ne!(
        Client::new(&kube).get("/api/v1/namespaces").await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// A pod running `script` with these container resources.
fn pod(name: &str, script: &str, limits: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        // The shell as pid 1 ignores SIGTERM: a short grace period, so a deleted pod goes in
        // the kubelet's minimum of 2 s rather than the default 30 s.
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "containers": [{
            "name": "main", "image": "busybox",
            "command": ["sh", "-c", script],
            "resources": {"limits": limits}
        }]}
    })
}

#[tokio::test]
async fn a_container_over_its_memory_limit_is_oom_killed_with_137() {
    let kube = FakeKube::builder().start().await.expect("starts");
    let script = "x=$(head -c 33554432 /dev/zero | tr '\\0' a); sleep 1000";
    kube.create(pod("hog", script, json!({"memory": "16Mi"})))
        .expect("created");
    let pod = kube
        .wait_for("pods", "default", "hog", PATIENCE, |p| {
            p.and_then(|p| p.pointer("/status/containerStatuses/0/state/terminated"))
                .is_some()
        })
        .await
        .expect("the container ends")
        .expect("the pod exists");
    let term = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(term["reason"], "OOMKilled", "{term}");
    assert_eq!(term["exitCode"], 137);
}

#[tokio::test]
async fn a_pod_over_its_ephemeral_storage_is_evicted_with_the_kubelets_reason() {
    let kube = FakeKube::builder().start().await.expect("starts");
    let script = "head -c 2097152 /dev/zero > /scratch; sleep 1000";
    kube.create(pod("filler", script, json!({"ephemeral-storage": "1Mi"})))
        .expect("created");
    let pod = kube
        .wait_for("pods", "default", "filler", PATIENCE, |p| {
            p.and_then(|p| p.pointer("/status/reason")).is_some()
        })
        .await
        .expect("the pod is evicted")
        .expect("the pod exists");
    assert_eq!(pod["status"]["phase"], "Failed");
    assert_eq!(pod["status"]["reason"], "Evicted");
    let message = pod["status"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("exceeded its local ephemeral storage limit \"1Mi\""),
        "{message}"
    );
}

#[tokio::test]
async fn writes_past_the_servers_storage_budget_fail_with_enospc_and_a_deleted_pod_gives_it_back() {
    let kube = FakeKube::builder()
        .pod_storage_budget(3 << 20)
        .start()
        .await
        .expect("starts");
    let script = "head -c 2097152 /dev/zero > /blob && echo wrote || echo refused; sleep 1000";
    kube.create(pod("one", script, json!({}))).expect("created");
    let log = |name: &'static str| {
        let kube = &kube;
        async move {
            kube.wait_for("pods", "default", name, PATIENCE, |_| {
                kube.container_log("default", name, "")
                    .is_some_and(|l| l.contains('\n'))
            })
            .await
            .expect("the container logs");
            kube.container_log("default", name, "").unwrap_or_default()
        }
    };
    assert!(log("one").await.contains("wrote"));
    kube.create(pod("two", script, json!({}))).expect("created");
    let two = log("two").await;
    assert!(
        two.contains("No space left on device") && two.contains("refused"),
        "{two}"
    );
    let before = kube.pod_storage_used();
    kube.delete("pods", "default", "one").expect("deleted");
    kube.wait_for("pods", "default", "one", PATIENCE, |p| p.is_none())
        .await
        .expect("the pod goes");
    let freed = tokio::time::timeout(PATIENCE, async {
        while kube.pod_storage_used() + (2 << 20) > before {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        freed.is_ok(),
        "the deleted pod's 2 MiB came back to the budget"
    );
}

/// The resident memory of process `pid` in bytes (`VmRSS` of `/proc/<pid>/status`).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// Waits until `check` holds for the pod `name` (a missing pod reads as its 404 Status).
async fn wait_pod(client: &Client, name: &str, check: impl Fn(&Value) -> bool) {
    let path = format!("/api/v1/namespaces/default/pods/{name}");
    tokio::time::timeout(PATIENCE, async {
        while !check(&client.get(&path).await.json()) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("pod {name} never got there"));
}

/// Runs `script` through `pods/exec` (v5 over WebSocket) in container `main` of pod `name`
/// and returns the exec's Status from the error channel.
async fn exec_status(client: &Client, name: &str, script: &str) -> Value {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut path = format!(
        "wss://127.0.0.1/api/v1/namespaces/default/pods/{name}/exec?stdout=true&stderr=true&command=sh&command=-c&command="
    );
    path.extend(form_urlencoded::byte_serialize(script.as_bytes()));
    let mut req = path.into_client_request().expect("a request");
    let h = req.headers_mut();
    h.insert(
        "sec-websocket-protocol",
        "v5.channel.k8s.io".parse().expect("a header value"),
    );
    h.insert(
        "authorization",
        format!("Bearer {}", client.token())
            .parse()
            .expect("a header value"),
    );
    let (tls, _) = client.connect().await;
    let (mut ws, _) = tokio_tungstenite::client_async(req, tls)
        .await
        .expect("the exec upgrades");
    tokio::time::timeout(PATIENCE, async {
        let mut status = Value::Null;
        while let Some(Ok(m)) = ws.next().await {
            if let Message::Binary(b) = m
                && b.first() == Some(&3)
            {
                status = serde_json::from_slice(&b[1..]).unwrap_or(Value::Null);
            }
        }
        status
    })
    .await
    .expect("the exec ends")
}

#[tokio::test]
async fn a_fork_bomb_fails_non_zero_and_the_binarys_memory_comes_back_once_its_pod_is_gone() {
    let process = support::process::Process::start(&[]);
    let kubeconfig = std::fs::read_to_string(&process.kubeconfig).expect("kubeconfig");
    let client = Client::from_kubeconfig(&kubeconfig);
    let pods = "/api/v1/namespaces/default/pods";
    let running = |p: &Value| {
        p.pointer("/status/containerStatuses/0/state/running")
            .is_some()
    };
    let gone = |p: &Value| p["reason"] == "NotFound";
    // A first pod warms up what every pod uses (the image, the kubelet's tasks, buffers) and
    // runs a first fork bomb, which raises the allocator's high-water mark once (glibc keeps
    // freed pages in its arenas; this crate has no unsafe code to call `malloc_trim`). The
    // baseline is read once that pod is gone; a second bomb must then give back all it took.
    for name in ["warm", "bomb"] {
        let r = client
            .json(Method::POST, pods, &pod(name, "sleep 1000", json!({})))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        wait_pod(&client, name, running).await;
    }
    let fresh = rss(process.pid());
    let warm = exec_status(&client, "warm", "echo up").await;
    assert_eq!(warm["status"], "Success", "{warm}");
    let first = exec_status(&client, "warm", "f(){ f|f& }; f").await;
    assert_eq!(first["reason"], "NonZeroExitCode", "{first}");
    let path = |name: &str| format!("{pods}/{name}");
    client
        .call(Method::DELETE, &path("warm"), None, Vec::new())
        .await;
    wait_pod(&client, "warm", gone).await;
    let before = rss(process.pid());
    let bomb = exec_status(&client, "bomb", "f(){ f|f& }; f").await;
    assert_eq!(bomb["status"], "Failure", "{bomb}");
    assert_eq!(bomb["reason"], "NonZeroExitCode", "{bomb}");
    let peak = rss(process.pid());
    client
        .call(Method::DELETE, &path("bomb"), None, Vec::new())
        .await;
    wait_pod(&client, "bomb", gone).await;
    // Freed memory goes back to the allocator at once; whether the allocator hands it back to
    // the system shows within a few quiet moments.
    let back = tokio::time::timeout(PATIENCE, async {
        while rss(process.pid()) > before + before / 10 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    println!(
        "fork bomb: {}; RSS {} KiB fresh, {} KiB after a first bomb's pod went; before the second {} KiB, when it ended {} KiB, after its pod went {} KiB",
        bomb["message"],
        fresh / 1024,
        before / 1024,
        before / 1024,
        peak / 1024,
        rss(process.pid()) / 1024
    );
    assert!(
        back.is_ok(),
        "RSS {} KiB after the pod went, from {} KiB before",
        rss(process.pid()) / 1024,
        before / 1024
    );
}
