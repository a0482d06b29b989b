//! `fakekube record` and `fakekube replay` as processes: the record proxy's first line and its
//! client kubeconfig, a cassette closed on SIGTERM, a replay that answers kube-rs as the
//! recording did and exits 0, then 1 (with the side-by-side message) at a request it lacks.

mod support;

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use support::process::{finish, kube_client, spawn, terminate};

async fn namespaces(kubeconfig: &Path) -> Api<Namespace> {
    Api::all(kube_client(kubeconfig).await)
}

async fn names(api: &Api<Namespace>) -> Vec<String> {
    let list = api
        .list(&ListParams::default())
        .await
        .expect("namespaces listed");
    list.items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect()
}

#[tokio::test]
async fn a_recorded_run_replays_from_the_binary_and_a_request_it_lacks_stops_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (server, first) = spawn(&["--kubeconfig", &path("admin"), "--namespace", "recorded"]);
    assert!(first.starts_with("fakekube listening on "), "{first}");
    let (recorder, first) = spawn(&[
        "record",
        "--kubeconfig",
        &path("admin"),
        "--cassette",
        &path("run.jsonl"),
        "--client-kubeconfig",
        &path("proxy"),
    ]);
    assert!(
        first.starts_with("fakekube record listening on https://127.0.0.1:"),
        "{first}"
    );
    let recorded = names(&namespaces(&dir.path().join("proxy")).await).await;
    assert!(recorded.contains(&"recorded".to_owned()), "{recorded:?}");
    let (code, out, err) = terminate(recorder);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("fakekube record: 1 exchanges in"), "{out}");
    assert_eq!(terminate(server).0, Some(0));

    let (replay, first) = spawn(&[
        "replay",
        &path("run.jsonl"),
        "--kubeconfig",
        &path("replay"),
    ]);
    assert!(
        first.starts_with("fakekube replay listening on https://127.0.0.1:"),
        "{first}"
    );
    let api = namespaces(&dir.path().join("replay")).await;
    assert_eq!(names(&api).await, recorded);
    let (code, out, _) = terminate(replay);
    assert_eq!(code, Some(0));
    assert!(out.contains("done; 1 recorded exchanges served"), "{out}");

    let (mut replay, _) = spawn(&[
        "replay",
        &path("run.jsonl"),
        "--kubeconfig",
        &path("replay"),
    ]);
    let api = namespaces(&dir.path().join("replay")).await;
    assert!(api.get("never-recorded").await.is_err());
    let (code, _, err) = finish(&mut replay);
    assert_eq!(code, Some(1), "the replay stops by itself");
    let row = err.lines().find(|l| l.starts_with('!')).unwrap_or_default();
    assert!(row.contains("/api/v1/namespaces/never-recorded"), "{err}");
}

#[test]
fn a_replay_of_a_missing_cassette_says_so_and_exits_one() {
    let output = Command::new(env!("CARGO_BIN_EXE_fakekube"))
        .args(["replay", "/nonexistent/run.jsonl"])
        .output()
        .expect("fakekube runs");
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.starts_with("fakekube replay: /nonexistent/run.jsonl: reading the cassette: "),
        "{err}"
    );
}
