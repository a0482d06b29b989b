//! `pods/log` over a real socket: the options (`tailLines`, `limitBytes`, `sinceTime`,
//! `timestamps`, `previous`), `follow` streaming while the container runs and ending when it
//! exits, and the API server's and kubelet's errors. Every wait follows the store's change
//! notifications or the stream itself; nothing sleeps.

mod support;

use bytes::Bytes;
use fakekube::FakeKube;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use support::{Client, Reply};
use tokio::sync::{Mutex, mpsc};

/// How long a test waits for a condition before it fails: generous, since a loaded machine is
/// slow, and every wait returns as soon as its condition holds.
const WAIT: Duration = Duration::from_secs(60);
const PODS: &str = "/api/v1/namespaces/default/pods";

async fn start() -> (FakeKube, Client) {
    support::start(FakeKube::builder().crash_backoff(Duration::from_millis(5))).await
}

fn pod(name: &str, command: &[&str], policy: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name },
        "spec": {
            "restartPolicy": policy,
            "containers": [ { "name": "c", "image": "busybox", "command": command } ],
        },
    })
}

async fn create(c: &Client, body: &Value) {
    let r = c.json(Method::POST, PODS, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
}

async fn wait_pod(kube: &FakeKube, name: &str, pred: impl Fn(&Value) -> bool) -> Value {
    kube.wait_for("pods", "default", name, WAIT, |p| p.is_some_and(&pred))
        .await
        .unwrap_or_else(|e| panic!("{e}; last: {:?}", e.last))
        .unwrap_or(Value::Null)
}

async fn log(c: &Client, pod: &str, query: &str) -> Reply {
    c.get(&format!("{PODS}/{pod}/log?{query}")).await
}

fn text(r: &Reply) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

#[tokio::test]
async fn a_finished_containers_log_is_cut_by_the_options() {
    let (kube, c) = start().await;
    create(
        &c,
        &pod(
            "p",
            &["sh", "-c", "echo one; echo two; echo three"],
            "Never",
        ),
    )
    .await;
    wait_pod(&kube, "p", |p| p["status"]["phase"] == "Succeeded").await;
    let all = log(&c, "p", "").await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(all.headers["content-type"], "text/plain");
    assert_eq!(text(&all), "one\ntwo\nthree\n");
    assert_eq!(text(&log(&c, "p", "tailLines=2").await), "two\nthree\n");
    assert_eq!(text(&log(&c, "p", "tailLines=0").await), "");
    assert_eq!(text(&log(&c, "p", "limitBytes=6").await), "one\ntw");
    assert_eq!(
        text(&log(&c, "p", "container=c&sinceTime=2999-01-01T00:00:00Z").await),
        ""
    );
    assert_eq!(
        text(&log(&c, "p", "sinceSeconds=3600").await),
        "one\ntwo\nthree\n"
    );
    let stamped = text(&log(&c, "p", "timestamps=true&tailLines=1").await);
    let (at, line) = stamped.split_once(' ').unwrap_or_default();
    assert_eq!(line, "three\n");
    // The kubelet's stamp: RFC 3339 with always nine fractional digits.
    let fraction = at
        .strip_suffix('Z')
        .and_then(|t| t.split_once('.'))
        .map(|(_, f)| f);
    assert!(
        fraction.is_some_and(|f| f.len() == 9 && f.bytes().all(|b| b.is_ascii_digit())),
        "{stamped}"
    );
    let bad = log(&c, "p", "tailLines=-3").await;
    assert_eq!(bad.status.as_u16(), 422, "{}", bad.json());
    kube.shutdown().await;
}

#[tokio::test]
async fn follow_streams_while_the_container_runs_and_ends_when_it_exits() {
    let (kube, c) = start().await;
    let (tx, rx) = mpsc::channel::<String>(8);
    let rx = Arc::new(Mutex::new(rx));
    kube.register_command("talker", move |call| {
        let rx = rx.clone();
        async move {
            let _ = call.write_stdout("first\n").await;
            while let Some(line) = rx.lock().await.recv().await {
                if line == "bye" {
                    return 0;
                }
                let _ = call.write_stdout(format!("{line}\n")).await;
            }
            0
        }
    });
    create(&c, &pod("p", &["talker"], "Never")).await;
    wait_pod(&kube, "p", |p| p["status"]["phase"] == "Running").await;
    // The first line is written as the process starts: it comes as kept output or live,
    // once either way.
    let resp = c
        .send(
            Method::GET,
            &format!("{PODS}/p/log?follow=true"),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let mut got = Vec::new();
    let mut read_until = async |want: &str, got: &mut Vec<u8>| {
        while !String::from_utf8_lossy(got).ends_with(want) {
            match tokio::time::timeout(WAIT, body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        got.extend_from_slice(&data);
                    }
                }
                other => panic!("the log stream stopped before {want:?}: {other:?}"),
            }
        }
    };
    read_until("first\n", &mut got).await;
    tx.send("second".into()).await.ok();
    read_until("second\n", &mut got).await;
    tx.send("bye".into()).await.ok();
    // The stream ends with the container.
    let end = tokio::time::timeout(WAIT, async {
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.map(|f| f.into_data().unwrap_or_default()) {
                got.extend_from_slice(&data);
            }
        }
    })
    .await;
    assert!(
        end.is_ok(),
        "the stream did not end: {:?}",
        String::from_utf8_lossy(&got)
    );
    assert_eq!(String::from_utf8_lossy(&got), "first\nsecond\n");
    kube.shutdown().await;
}

#[tokio::test]
async fn previous_is_the_log_of_the_run_before() {
    let (kube, c) = start().await;
    create(&c, &pod("p", &["sh", "-c", "echo run; exit 1"], "Always")).await;
    wait_pod(&kube, "p", |p| {
        p["status"]["containerStatuses"][0]["restartCount"]
            .as_u64()
            .is_some_and(|n| n >= 1)
    })
    .await;
    let previous = log(&c, "p", "previous=true").await;
    assert_eq!(previous.status, StatusCode::OK, "{}", text(&previous));
    assert_eq!(text(&previous), "run\n");
    kube.shutdown().await;
}

#[tokio::test]
async fn errors_are_the_api_servers_and_the_kubelets() {
    let (kube, c) = start().await;
    kube.images().mark_missing("ghost");
    let mut two = pod("two", &["sleep", "infinity"], "Always");
    two["spec"]["containers"] = json!([
        { "name": "a", "image": "busybox", "command": ["sleep", "infinity"] },
        { "name": "b", "image": "ghost" },
    ]);
    create(&c, &two).await;
    wait_pod(&kube, "two", |p| {
        p["status"]["containerStatuses"]
            .as_array()
            .is_some_and(|s| {
                s.iter()
                    .any(|c| c["state"]["waiting"]["reason"] == "ImagePullBackOff")
            })
    })
    .await;
    let cases = [
        ("nope", "", 404, "pods \"nope\" not found"),
        (
            "two",
            "",
            400,
            "a container name must be specified for pod two, choose one of: [a b]",
        ),
        (
            "two",
            "container=zz",
            400,
            "container zz is not valid for pod two",
        ),
        (
            "two",
            "container=a&previous=true",
            400,
            "previous terminated container \"a\" in pod \"two\" not found",
        ),
    ];
    for (pod, query, code, message) in cases {
        let r = log(&c, pod, query).await;
        assert_eq!(r.status.as_u16(), code, "{pod}?{query}: {}", text(&r));
        assert_eq!(r.json()["message"], message, "{pod}?{query}");
    }
    // The kubelet words the two pull failures its own way; the container goes back and forth
    // between them while the pull is retried.
    let pulling = log(&c, "two", "container=b").await;
    assert_eq!(pulling.status.as_u16(), 400);
    let message = pulling.json()["message"].as_str().unwrap_or("").to_string();
    assert!(
        [
            "container \"b\" in pod \"two\" is waiting to start: trying and failing to pull image",
            "container \"b\" in pod \"two\" is waiting to start: image can't be pulled",
        ]
        .contains(&message.as_str()),
        "{message}"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_pod_not_bound_to_a_node_has_an_empty_log() {
    let kube = FakeKube::builder()
        .kubelet(false)
        .start()
        .await
        .expect("fakekube starts");
    let c = Client::new(&kube);
    create(&c, &pod("p", &["true"], "Never")).await;
    let r = log(&c, "p", "").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, Bytes::new());
    kube.shutdown().await;
}
