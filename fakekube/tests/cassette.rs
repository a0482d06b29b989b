//! fakekube behind `fakekube-cassette`'s recording proxy, with kube-rs as the client: a run
//! recorded against fakekube is served back by a replay after fakekube has shut down, with the
//! same answers (a pod created, listed and read, an exec through kube-rs's WebSocket with
//! stdin), and a cassette recorded against fakekube holds none of its admin token.

use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig as KubeRsConfig};
use kube::{Client, Config};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use fakekube_cassette::{Cassette, Kubeconfig, Proxy, Recorder, Replay, ReplayOptions};

/// How long any one step may take before the test fails.
const STEP: Duration = Duration::from_secs(60);

async fn client(kubeconfig: &str) -> Api<Pod> {
    let kubeconfig = KubeRsConfig::from_yaml(kubeconfig).expect("the kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube accepts the kubeconfig");
    Api::namespaced(Client::try_from(config).expect("a client"), "default")
}

/// What the client does, and what it saw; `kube` (during the recording only) is waited on
/// for the pod to run, outside the proxy.
async fn run(pods: &Api<Pod>, kube: Option<&fakekube::FakeKube>) -> Vec<String> {
    let mut seen = Vec::new();
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "box"},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}
    }))
    .expect("a Pod");
    let created = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("created");
    seen.push(format!("created uid {:?}", created.metadata.uid));
    if let Some(kube) = kube {
        kube.wait_for("pods", "default", "box", STEP, |p| {
            p.and_then(|p| p.pointer("/status/phase"))
                .and_then(Value::as_str)
                == Some("Running")
        })
        .await
        .expect("the pod runs");
    }
    let listed = pods.list(&ListParams::default()).await.expect("listed");
    seen.push(format!(
        "listed {:?}",
        listed
            .items
            .iter()
            .map(|p| p.metadata.name.clone())
            .collect::<Vec<_>>()
    ));
    let params = AttachParams::default()
        .stdin(true)
        .stdout(true)
        .stderr(true);
    let mut process = pods
        .exec("box", vec!["sh", "-c", "cat; echo done >&2"], &params)
        .await
        .expect("kube-rs execs");
    let mut stdin = process.stdin().expect("stdin");
    stdin
        .write_all(b"through the cassette\n")
        .await
        .expect("stdin written");
    stdin.shutdown().await.expect("stdin closed");
    drop(stdin);
    let (mut out, mut err) = (String::new(), String::new());
    let mut stdout = process.stdout().expect("stdout");
    let mut stderr = process.stderr().expect("stderr");
    let status = process.take_status().expect("a status");
    let (a, b) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    a.expect("stdout read");
    b.expect("stderr read");
    let status = tokio::time::timeout(STEP, status)
        .await
        .expect("a status in time");
    seen.push(format!(
        "exec {out:?} {err:?} {:?}",
        status.and_then(|s| s.status)
    ));
    let _ = process.join().await;
    let phase = pods
        .get("box")
        .await
        .expect("read")
        .status
        .and_then(|s| s.phase);
    seen.push(format!("phase {phase:?}"));
    pods.delete("box", &DeleteParams::default())
        .await
        .expect("deleted");
    seen
}

#[tokio::test]
async fn a_kube_rs_run_recorded_against_fakekube_replays_without_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("run.jsonl");
    let kube = fakekube::FakeKube::builder()
        .start()
        .await
        .expect("fakekube starts");
    let admin = kube.kubeconfig();
    let recorder = Recorder::create(&path).expect("the cassette is created");
    let upstream = Kubeconfig::from_yaml(&admin, None).expect("fakekube's kubeconfig reads");
    let proxy = Proxy::start(
        &upstream,
        &recorder,
        "default",
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .expect("the proxy starts");
    let recorded = run(&client(proxy.kubeconfig()).await, Some(&kube)).await;
    proxy.shutdown().await;
    let summary = recorder.finish().expect("the cassette is written");
    kube.shutdown().await;
    assert!(summary.exchanges >= 5, "{summary}");
    assert!(recorded[2].contains("through the cassette") && recorded[2].contains("done"));

    let text = std::fs::read_to_string(&path).expect("the cassette reads");
    let token = admin
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .expect("the admin kubeconfig has a token");
    assert!(
        !text.contains(token),
        "the admin token reached the cassette"
    );

    let replay = Replay::start(
        &Cassette::parse(&text).expect("it parses"),
        ReplayOptions::default(),
    )
    .await
    .expect("the replay starts");
    let replayed = run(
        &client(replay.kubeconfig("default").expect("a kubeconfig")).await,
        None,
    )
    .await;
    let summary = replay.shutdown().await;
    assert_eq!(summary.failure, None);
    assert_eq!(replayed, recorded);
    assert_eq!(summary.progress.unused, 0, "{:?}", summary.progress);
}
