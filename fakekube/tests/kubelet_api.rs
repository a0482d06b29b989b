//! The kubelet's own HTTPS API (`Builder::kubelet_port`) and the API server's node proxy:
//! kube-rs's `kubelet_node_exec` (its `kubelet-debug` feature) runs a command and a shell fed
//! on stdin, authenticated by a client certificate as kube-rs's own cluster test is, and a
//! command through the API server's node proxy (an upgrade forwarded in process); 401 and
//! 403 as the kubelet words them; the kubelet's answers to a wrong uid and a missing pod; the
//! node's advertised port; `/pods`, `/healthz` and `containerLogs` through
//! `kubectl get --raw /api/v1/nodes/<node>/proxy/...`.

mod support;

use futures_util::StreamExt;
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::kubelet_debug::KubeletDebugParams;
use kube::{Client, Config};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// How long any one step may take before the test fails.
const STEP: Duration = Duration::from_secs(60);

/// Runs `f` with a [`STEP`] timeout.
async fn step<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(STEP, f)
        .await
        .unwrap_or_else(|_| panic!("{what} took over {STEP:?}"))
}

/// All an attached process writes to stdout, once it has ended.
async fn output_to_the_end(mut attached: kube::api::AttachedProcess) -> String {
    let stdout = tokio_util::io::ReaderStream::new(attached.stdout().expect("stdout"));
    let out: Vec<String> = step(
        "the output",
        stdout
            .filter_map(|r| async { r.ok().map(|b| String::from_utf8_lossy(&b).into_owned()) })
            .collect(),
    )
    .await;
    step("the end", attached.join()).await.expect("it ends");
    out.concat()
}

/// A kube config from a kubeconfig's text.
async fn config(kubeconfig: &str) -> Config {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).expect("the kubeconfig parses");
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube accepts the kubeconfig")
}

/// A server with the kubelet's API on a free port and one Running pod `box` (container
/// `main`) in `default`.
async fn server_with_pod() -> fakekube::FakeKube {
    let kube = fakekube::FakeKube::builder()
        .kubelet_port(0)
        .start()
        .await
        .expect("fakekube starts");
    let client = Client::try_from(config(&kube.kubeconfig()).await).expect("a client");
    let pods: Api<Pod> = Api::default_namespaced(client);
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "box" },
        "spec": { "containers": [{
            "name": "main",
            "image": "busybox:stable",
            "command": ["sh", "-c", "echo started; sleep 300"],
        }] }
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
    kube
}

/// The kubelet's address.
fn kubelet(kube: &fakekube::FakeKube) -> std::net::SocketAddr {
    kube.kubelet_addr().expect("the kubelet API listens")
}

/// The pod's uid.
fn uid(kube: &fakekube::FakeKube) -> String {
    kube.get("pods", "default", "box")
        .and_then(|p| {
            p.pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .expect("the pod has a uid")
}

#[tokio::test]
async fn kube_rs_kubelet_node_exec_prints_output_and_reads_stdin_over_the_kubelet_api() {
    let kube = server_with_pod().await;
    let cert = kube.client_certificate("kubernetes-admin", &["system:masters"]);
    let mut config = config(&kube.kubeconfig_with_client_certificate(&cert)).await;
    config.cluster_url = format!("https://{}", kubelet(&kube))
        .parse()
        .expect("a URL");
    let client = Client::try_from(config).expect("a kubelet client");
    let params = KubeletDebugParams {
        name: "box",
        namespace: "default",
        ..Default::default()
    };

    let attached = step(
        "the exec",
        client.kubelet_node_exec(
            &params,
            "main",
            vec!["sh", "-c", "for i in $(seq 1 3); do echo $i; done"],
            &AttachParams::default().stderr(false),
        ),
    )
    .await
    .expect("the kubelet runs the command");
    assert_eq!(output_to_the_end(attached).await, "1\n2\n3\n");

    let uid = uid(&kube);
    let mut attached = step(
        "the shell",
        client.kubelet_node_exec(
            &KubeletDebugParams {
                pod_uid: Some(&uid),
                ..params
            },
            "main",
            vec!["sh"],
            &AttachParams::default().stdin(true).stderr(false),
        ),
    )
    .await
    .expect("the kubelet runs a shell for the pod's uid");
    let mut stdin = attached.stdin().expect("stdin");
    let mut stdout = tokio_util::io::ReaderStream::new(attached.stdout().expect("stdout"));
    let status = attached.take_status().expect("a status");
    stdin
        .write_all(b"echo test string 1\n")
        .await
        .expect("stdin takes a line");
    let line = step("the echoed line", stdout.next())
        .await
        .expect("output")
        .expect("a chunk");
    assert_eq!(String::from_utf8_lossy(&line), "test string 1\n");
    stdin
        .write_all(b"exit 1\n")
        .await
        .expect("stdin takes exit");
    let status = step("the status", status).await.expect("a Status");
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    kube.shutdown().await;
}

#[tokio::test]
async fn kube_rs_kubelet_node_exec_runs_through_the_api_servers_node_proxy() {
    let kube = server_with_pod().await;
    let mut config = config(&kube.kubeconfig()).await;
    config.cluster_url = format!("{}/api/v1/nodes/fakekube-node/proxy", kube.base_url())
        .parse()
        .expect("a URL");
    let client = Client::try_from(config).expect("a node-proxy client");
    let params = KubeletDebugParams {
        name: "box",
        namespace: "default",
        ..Default::default()
    };
    let attached = step(
        "the exec",
        client.kubelet_node_exec(
            &params,
            "main",
            vec!["echo", "through the proxy"],
            &AttachParams::default().stderr(false),
        ),
    )
    .await
    .expect("the node proxy upgrades to the kubelet's exec");
    assert_eq!(output_to_the_end(attached).await, "through the proxy\n");
    kube.shutdown().await;
}

#[tokio::test]
async fn the_kubelet_api_answers_401_without_credentials_and_403_without_nodes_proxy() {
    let kube = server_with_pod().await;
    let admin = support::Client::new(&kube).at(kubelet(&kube));

    let anonymous = admin.with_token(None).get("/pods").await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert_eq!(&anonymous.body[..], b"Unauthorized");
    let refused = admin
        .with_token(Some("nobody-knows-this"))
        .get("/pods")
        .await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);

    kube.add_token(fakekube::Token::new("alice-token", "alice").with_rules(Vec::new()));
    let alice = admin.with_token(Some("alice-token"));
    let forbidden = alice.get("/pods").await;
    assert_eq!(forbidden.status, StatusCode::FORBIDDEN);
    assert_eq!(
        String::from_utf8_lossy(&forbidden.body),
        "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"
    );
    let through_proxy = support::Client::new(&kube)
        .with_token(Some("alice-token"))
        .get("/api/v1/nodes/fakekube-node/proxy/pods")
        .await;
    assert_eq!(through_proxy.status, StatusCode::FORBIDDEN);
    assert_eq!(through_proxy.json()["reason"], "Forbidden");

    kube.add_token(
        fakekube::Token::new("bob-token", "bob").with_rules(vec![fakekube::Rule::new(
            [""],
            ["nodes/proxy"],
            ["get"],
        )]),
    );
    let bob = admin.with_token(Some("bob-token"));
    let pods = bob.get("/pods").await;
    assert_eq!(pods.status, StatusCode::OK);
    let list = pods.json();
    assert_eq!(list["kind"], "PodList");
    assert_eq!(list["items"][0]["metadata"]["name"], "box");
    let post = bob
        .call(
            Method::POST,
            "/exec/default/box/main?command=ls",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(post.status, StatusCode::FORBIDDEN);
    assert_eq!(
        String::from_utf8_lossy(&post.body),
        "Forbidden (user=bob, verb=create, resource=nodes, subresource(s)=[proxy])\n"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn the_kubelet_api_answers_a_wrong_uid_and_a_missing_pod_as_the_kubelet_does() {
    let kube = server_with_pod().await;
    let admin = support::Client::new(&kube).at(kubelet(&kube));
    let uid = uid(&kube);

    let wrong = admin
        .get("/exec/default/box/not-the-uid/main?command=ls&output=1")
        .await;
    assert_eq!(wrong.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        String::from_utf8_lossy(&wrong.body),
        "container not found (\"main\")"
    );
    let forward = admin
        .get("/portForward/default/box/not-the-uid?port=80")
        .await;
    assert_eq!(forward.status, StatusCode::NOT_FOUND);
    assert_eq!(String::from_utf8_lossy(&forward.body), "pod not found");
    let missing = admin.get("/exec/default/nope/main?command=ls").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(String::from_utf8_lossy(&missing.body), "pod does not exist");
    let plain = admin
        .get(&format!("/exec/default/box/{uid}/main?command=ls&output=1"))
        .await;
    assert_eq!(plain.status, StatusCode::BAD_REQUEST, "{plain:?}");
    assert_eq!(
        String::from_utf8_lossy(&plain.body),
        "Upgrade request required"
    );
    let logs = admin.get("/containerLogs/default/box/main").await;
    assert_eq!(logs.status, StatusCode::OK);
    assert_eq!(String::from_utf8_lossy(&logs.body), "started\n");
    let unknown = admin.get("/configz").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    kube.shutdown().await;
}

#[tokio::test]
async fn the_node_advertises_the_kubelet_port_it_listens_on_or_10250() {
    let kube = server_with_pod().await;
    let port = |kube: &fakekube::FakeKube| {
        kube.get("nodes", "", "fakekube-node")
            .and_then(|n| {
                n.pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
                    .and_then(Value::as_u64)
            })
            .expect("the node has a kubelet port")
    };
    assert_eq!(port(&kube), u64::from(kubelet(&kube).port()));
    kube.shutdown().await;
    let plain = fakekube::FakeKube::builder()
        .start()
        .await
        .expect("fakekube starts");
    assert_eq!(plain.kubelet_addr(), None);
    assert_eq!(port(&plain), 10250);
    plain.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_raw_reaches_the_kubelet_through_the_node_proxy() {
    let Some(bin) = support::kubectl::installed(33) else {
        return;
    };
    let kube = server_with_pod().await;
    let dir = tempfile::tempdir().expect("a scratch directory");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kube.kubeconfig()).expect("the kubeconfig is written");
    let kubectl = support::kubectl::Kubectl { bin, kubeconfig };
    let (healthz, pods, logs, elsewhere) = tokio::task::spawn_blocking(move || {
        (
            kubectl.run(&["get", "--raw", "/api/v1/nodes/fakekube-node/proxy/healthz"]),
            kubectl.run(&["get", "--raw", "/api/v1/nodes/fakekube-node/proxy/pods"]),
            kubectl.run(&[
                "get",
                "--raw",
                "/api/v1/nodes/fakekube-node:10250/proxy/containerLogs/default/box/main",
            ]),
            kubectl.run(&["get", "--raw", "/api/v1/nodes/other-node/proxy/healthz"]),
        )
    })
    .await
    .expect("kubectl ran");
    healthz.success().stdout_is("ok");
    let list = pods.success().json();
    assert_eq!(list["kind"], "PodList");
    assert_eq!(list["items"][0]["metadata"]["name"], "box");
    logs.success().stdout_is("started\n");
    elsewhere
        .failure()
        .stderr_has("nodes \"other-node\" not found");
    kube.shutdown().await;
}
