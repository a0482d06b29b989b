//! The cluster network inside fakekube, seen from pods: BusyBox `wget` in one pod reaches
//! another pod's `httpd` through a Service's DNS name and ClusterIP, connections are shared
//! out among the ready endpoints, a Service without one refuses, and the agent-sandbox router
//! image forwards to a sandbox's Service. Everything runs in process: no pod or cluster
//! address is ever a socket. Waits follow the store's change notifications; the client pods
//! wait for their Service's endpoints by retrying in their own script.

mod support;

use fakekube::FakeKube;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;
use support::Client;

/// How long a test waits for a condition before it fails: generous, since a loaded machine is
/// slow, and every wait returns as soon as its condition holds.
const WAIT: Duration = Duration::from_secs(60);
const PODS: &str = "/api/v1/namespaces/default/pods";
const SERVICES: &str = "/api/v1/namespaces/default/services";

async fn start() -> (FakeKube, Client) {
    support::start(FakeKube::builder()).await
}

async fn create(c: &Client, path: &str, body: &Value) -> Value {
    let r = c.json(Method::POST, path, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    r.json()
}

/// A pod labelled `app: LABEL` running `script` in BusyBox's image.
fn pod(name: &str, label: &str, script: &str, policy: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "labels": { "app": label } },
        "spec": {
            "restartPolicy": policy,
            "containers": [{ "name": "c", "image": "busybox", "command": ["sh", "-c", script] }],
        },
    })
}

/// A web server pod whose index page says `text`.
fn web(name: &str, text: &str) -> Value {
    pod(
        name,
        "web",
        &format!("mkdir -p /www; echo {text} > /www/index.html; exec httpd -f -p 8080 -h /www"),
        "Always",
    )
}

/// A Service `name` selecting `app: LABEL`, port 80 to the pods' 8080.
fn service(name: &str, label: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": name },
        "spec": {
            "selector": { "app": label },
            "ports": [{ "name": "http", "port": 80, "targetPort": 8080 }],
        },
    })
}

/// Waits for pod `name` to finish and returns its log.
async fn finished_log(kube: &FakeKube, name: &str) -> String {
    kube.wait_for("pods", "default", name, WAIT, |p| {
        p.is_some_and(|p| matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; last: {:?}", e.last));
    kube.container_log("default", name, "c").unwrap_or_default()
}

/// Retries `wget URL` in the pod's script until it succeeds (the Service's endpoints are
/// written by a controller after the pods are ready), then runs `then`.
fn until_reached(url: &str, then: &str) -> String {
    format!("until wget -q -O /dev/null {url} 2>/dev/null; do sleep 0.01; done; {then}")
}

#[tokio::test]
async fn wget_reaches_another_pods_httpd_through_the_service_name() {
    let (kube, c) = start().await;
    create(&c, PODS, &web("web-0", "hello-from-web")).await;
    let svc = create(&c, SERVICES, &service("web", "web")).await;
    let ip = svc["spec"]["clusterIP"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!ip.is_empty(), "{svc}");
    let script = until_reached(
        "http://web/",
        &format!(
            "wget -qO- http://web/; wget -qO- http://web.default:80/; \
             wget -qO- http://web.default.svc.cluster.local/index.html; wget -qO- http://{ip}/"
        ),
    );
    create(&c, PODS, &pod("client", "client", &script, "Never")).await;
    let log = finished_log(&kube, "client").await;
    assert_eq!(log, "hello-from-web\n".repeat(4));
    kube.shutdown().await;
}

#[tokio::test]
async fn connections_to_a_service_are_shared_out_among_its_ready_endpoints() {
    let (kube, c) = start().await;
    create(&c, PODS, &web("web-a", "a")).await;
    create(&c, PODS, &web("web-b", "b")).await;
    create(&c, SERVICES, &service("web", "web")).await;
    kube.wait_for("endpoints", "default", "web", WAIT, |e| {
        e.is_some_and(|e| {
            e["subsets"][0]["addresses"]
                .as_array()
                .is_some_and(|a| a.len() == 2)
        })
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; last: {:?}", e.last));
    let script = until_reached(
        "http://web/",
        "for i in 1 2 3 4; do wget -qO- http://web/; done",
    );
    create(&c, PODS, &pod("client", "client", &script, "Never")).await;
    let log = finished_log(&kube, "client").await;
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort_unstable();
    lines.dedup();
    assert_eq!(lines, ["a", "b"], "{log}");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_service_without_ready_endpoints_refuses_and_an_unknown_name_is_a_bad_address() {
    let (kube, c) = start().await;
    let svc = create(&c, SERVICES, &service("empty", "nobody")).await;
    let ip = svc["spec"]["clusterIP"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let script = "wget -qO- http://empty/ 2>&1; echo \"status $?\"; \
                  wget -qO- http://nosuch.default.svc.cluster.local/ 2>&1; echo \"status $?\"";
    create(&c, PODS, &pod("client", "client", script, "Never")).await;
    let log = finished_log(&kube, "client").await;
    assert_eq!(
        log,
        format!(
            "wget: can't connect to remote host ({ip}): Connection refused\nstatus 1\n\
             wget: bad address 'nosuch.default.svc.cluster.local'\nstatus 1\n"
        )
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn the_sandbox_router_image_forwards_to_a_sandbox_runtime_through_its_service() {
    let (kube, c) = start().await;
    let runtime = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "sb-1", "labels": { "app": "sb-1" } },
        "spec": { "containers": [{ "name": "c", "image": "example.com/agent-sandbox/python-runtime-sandbox:v1" }] },
    });
    create(&c, PODS, &runtime).await;
    let headless = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": "sb-1" },
        "spec": { "clusterIP": "None", "selector": { "app": "sb-1" } },
    });
    create(&c, SERVICES, &headless).await;
    let router = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "router", "labels": { "app": "router" } },
        "spec": { "containers": [{ "name": "c", "image": "kind.local/sandbox-router:latest",
            "env": [{ "name": "ALLOW_UNAUTHENTICATED_ROUTER", "value": "true" }] }] },
    });
    create(&c, PODS, &router).await;
    let body = r#"{"command":"echo routed"}"#;
    let script = format!(
        "until wget -q -O /dev/null --header 'X-Sandbox-ID: sb-1' http://router.default:8080/ 2>/dev/null; \
         do sleep 0.01; done; \
         wget -qO- http://router.default:8080/healthz; echo; \
         printf '%s' '{body}' > /tmp/b; \
         printf 'POST /execute HTTP/1.1\\r\\nHost: r\\r\\nX-Sandbox-ID: sb-1\\r\\nContent-Type: application/json\\r\\nContent-Length: {len}\\r\\nConnection: close\\r\\n\\r\\n' > /tmp/req; \
         cat /tmp/b >> /tmp/req; nc router 8080 < /tmp/req | tail -n 1; echo; \
         wget -qO- --header 'X-Sandbox-ID: nosuch' http://router.default:8080/ 2>&1; echo \"status $?\"",
        len = body.len()
    );
    let router_svc = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": "router" },
        "spec": { "selector": { "app": "router" }, "ports": [{ "port": 8080 }] },
    });
    create(&c, SERVICES, &router_svc).await;
    create(&c, PODS, &pod("client", "client", &script, "Never")).await;
    let log = finished_log(&kube, "client").await;
    assert_eq!(
        log,
        "{\"status\":\"ok\"}\n\
         {\"stdout\":\"routed\\n\",\"stderr\":\"\",\"exit_code\":0}\n\
         wget: server returned error: HTTP/1.1 502 Bad Gateway\nstatus 1\n",
        "{log}"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn an_image_given_a_program_runs_it_when_its_container_gives_no_command() {
    let (kube, c) = start().await;
    kube.images()
        .set_program("registry.example/team/runtime", "python-runtime-sandbox");
    let runtime = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "rt", "labels": { "app": "rt" } },
        "spec": { "containers": [{ "name": "c", "image": "registry.example/team/runtime:v7" }] },
    });
    create(&c, PODS, &runtime).await;
    let svc = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": "rt" },
        "spec": { "selector": { "app": "rt" }, "ports": [{ "port": 8888 }] },
    });
    create(&c, SERVICES, &svc).await;
    let script = until_reached("http://rt:8888/", "wget -qO- http://rt:8888/");
    create(&c, PODS, &pod("client", "client", &script, "Never")).await;
    let log = finished_log(&kube, "client").await;
    assert_eq!(
        log,
        "{\"status\":\"ok\",\"message\":\"Sandbox Runtime is active.\"}"
    );
    kube.shutdown().await;
}
