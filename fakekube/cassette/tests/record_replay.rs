//! Record through the proxy against a scripted API server, then replay the cassette with no
//! server: plain exchanges over HTTP/1.1 and HTTP/2, a watch, a WebSocket exec, the secrets
//! that must never reach the cassette, and the side-by-side stop of a replay.

mod support;

use std::net::SocketAddr;

use fakekube_cassette::{
    Cassette, Kubeconfig, Pacing, Proxy, Recorder, Replay, ReplayOptions,
    format::{Side, Stream},
};
use serde_json::json;
use support::{Client, Upstream};

const EXEC: &str = "/api/v1/namespaces/ns/pods/p/exec?command=cat&stdin=true&stdout=true";

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Records what `run` does through a proxy in front of a fresh scripted server; returns the
/// cassette's path (in `dir`), its text, and the proxy client's token.
async fn record<F, Fut>(dir: &tempfile::TempDir, run: F) -> (std::path::PathBuf, String, String)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    record_from(&Upstream::start().await, dir, run).await
}

/// Records what `run` does through a proxy in front of `upstream`.
async fn record_from<F, Fut>(
    upstream: &Upstream,
    dir: &tempfile::TempDir,
    run: F,
) -> (std::path::PathBuf, String, String)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let kubeconfig = Kubeconfig::from_yaml(&upstream.kubeconfig(), None).expect("recording works");
    let path = dir.path().join("run.jsonl");
    let recorder = Recorder::create(&path).expect("recording works");
    let proxy = Proxy::start(&kubeconfig, &recorder, "default", loopback())
        .await
        .expect("recording works");
    let client = Client::new(proxy.kubeconfig());
    let token = client.token().to_owned();
    run(client).await;
    proxy.shutdown().await;
    recorder.finish().expect("recording works");
    let text = std::fs::read_to_string(&path).expect("recording works");
    (path, text, token)
}

/// The same client sequence, as a function, so that recording and replay run it alike.
async fn sequence(client: Client) -> Vec<String> {
    let mut seen = Vec::new();
    let (status, version) = client.get("/version").await;
    seen.push(format!("{status} {version}"));
    let (status, created) = client
        .send(
            "POST",
            "/api/v1/namespaces/ns/configmaps",
            Some(json!({"metadata": {"name": "cf-k3x9qa-1"}})),
            true,
        )
        .await;
    seen.push(format!("{status} {}", created["metadata"]["name"]));
    seen.push(format!(
        "{:?}",
        client.watch("/api/v1/namespaces/ns/pods?watch=1").await
    ));
    seen.push(format!(
        "{:?}",
        client.exec(EXEC, &["hello ", "world"]).await
    ));
    seen
}

#[tokio::test]
async fn a_replay_with_no_server_answers_as_the_recording_did() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = recorded.clone();
    let (path, text, _) = record(&dir, |client| async move {
        *keep.lock().unwrap() = sequence(client).await;
    })
    .await;
    let recorded = recorded.lock().unwrap().clone();
    assert!(recorded[3].contains("(1, \"hello \")"), "{recorded:?}");

    let errors = support::schema::check_cassette(&support::schema::schema(), &text);
    assert!(
        errors.is_empty(),
        "the cassette breaks its schema: {errors:#?}"
    );
    let cassette = Cassette::parse(&text).unwrap();
    assert_eq!(cassette.exchanges.len(), 4);
    let create = &cassette.exchanges[1];
    assert_eq!(create.exchange.http, "2", "the create went over HTTP/2");
    let watch = &cassette.exchanges[2];
    assert_eq!(watch.exchange.response.stream, Some(Stream::Lines));
    assert_eq!(watch.events.len(), 3, "a watch is recorded event by event");
    let exec = &cassette.exchanges[3];
    assert_eq!(exec.exchange.response.stream, Some(Stream::Websocket));
    let channels = |from| {
        exec.frames
            .iter()
            .filter(|f| f.from == from && f.close.is_none())
            .map(|f| f.channel)
            .collect::<Vec<_>>()
    };
    assert_eq!(channels(Side::Client), [Some(0), Some(0), Some(255)]);
    assert_eq!(channels(Side::Server), [Some(1), Some(1), Some(3)]);
    assert!(
        exec.frames.iter().any(|f| f.close.is_some()),
        "the close is recorded"
    );
    assert!(exec.frames.windows(2).all(|w| w[0].t <= w[1].t));

    let replay = Replay::start(&Cassette::load(&path).unwrap(), ReplayOptions::default())
        .await
        .unwrap();
    let client = Client::new(replay.kubeconfig("default").unwrap());
    // Another run generates another name; the answer must carry this run's.
    let (status, created) = client
        .send(
            "POST",
            "/api/v1/namespaces/ns/configmaps",
            Some(json!({"metadata": {"name": "cf-zz11yy-1"}})),
            true,
        )
        .await;
    assert_eq!(
        (status, created["metadata"]["name"].as_str()),
        (201, Some("cf-zz11yy-1"))
    );
    let (status, version) = client.get("/version").await;
    assert_eq!(format!("{status} {version}"), recorded[0]);
    assert_eq!(
        format!(
            "{:?}",
            client.watch("/api/v1/namespaces/ns/pods?watch=1").await
        ),
        recorded[2]
    );
    assert_eq!(
        format!("{:?}", client.exec(EXEC, &["hello ", "world"]).await),
        recorded[3]
    );
    let summary = replay.shutdown().await;
    assert_eq!(summary.failure, None);
    assert_eq!(summary.progress.served, 4);
    assert_eq!(summary.progress.unused, 0);
}

#[tokio::test]
async fn every_secret_of_a_run_stays_out_of_the_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = Upstream::start().await;
    let (_, text, proxy_token) = record_from(&upstream, &dir, |client| async move {
        assert_eq!(client.get("/api/v1/namespaces/ns/secrets/s").await.0, 200);
        let secret = json!({"kind": "Secret", "metadata": {"name": "t"},
            "stringData": {"password": support::STRING_DATA}});
        assert_eq!(
            client.post("/api/v1/namespaces/ns/secrets", secret).await.0,
            201
        );
        let request = json!({"kind": "TokenRequest", "spec": {"audiences": ["api"]}});
        let (status, answer) = client
            .post("/api/v1/namespaces/ns/serviceaccounts/sa/token", request)
            .await;
        assert_eq!(
            (status, answer["status"]["token"].as_str()),
            (201, Some(support::ISSUED_TOKEN))
        );
        let review = json!({"kind": "TokenReview", "spec": {"token": support::REVIEWED_TOKEN}});
        assert_eq!(
            client
                .post("/apis/authentication.k8s.io/v1/tokenreviews", review)
                .await
                .0,
            201
        );
        assert_eq!(
            client.get("/api/v1/namespaces/ns/configmaps/leaky").await.0,
            200
        );
    })
    .await;
    let b64 = |s: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    let mut markers = vec![
        support::UPSTREAM_TOKEN.to_owned(),
        support::SECRET_DATA.to_owned(),
        b64(support::SECRET_DATA),
        support::STRING_DATA.to_owned(),
        support::ISSUED_TOKEN.to_owned(),
        support::REVIEWED_TOKEN.to_owned(),
        proxy_token,
        "MARKER".to_owned(),
    ];
    // The client key of the kubeconfig: its armour and its base64 lines.
    markers.push("PRIVATE KEY".to_owned());
    markers.extend(
        upstream
            .client_key_pem
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::to_owned),
    );
    for marker in &markers {
        assert!(
            !text.contains(marker.as_str()),
            "the cassette holds {marker:?}"
        );
    }
    assert!(text.contains("[REDACTED]"), "redactions are visible");
    let errors = support::schema::check_cassette(&support::schema::schema(), &text);
    assert!(
        errors.is_empty(),
        "the cassette breaks its schema: {errors:#?}"
    );
    assert_eq!(Cassette::parse(&text).unwrap().exchanges.len(), 5);
}

#[tokio::test]
async fn an_altered_answer_stops_the_replay_at_the_request_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = record(&dir, |client| async move {
        let (_, a) = client.get("/api/v1/namespaces/ns/configmaps/a").await;
        let next = a["data"]["next"].as_str().unwrap().to_owned();
        assert_eq!(client.get(&next).await.0, 200);
    })
    .await;
    let altered = text.replacen(
        "\"next\":\"/api/v1/namespaces/ns/configmaps/b\"",
        "\"next\":\"/api/v1/namespaces/ns/configmaps/altered\"",
        1,
    );
    assert_ne!(altered, text);
    std::fs::write(&path, altered).unwrap();

    let replay = Replay::start(&Cassette::load(&path).unwrap(), ReplayOptions::default())
        .await
        .unwrap();
    let client = Client::new(replay.kubeconfig("default").unwrap());
    let (_, a) = client.get("/api/v1/namespaces/ns/configmaps/a").await;
    let next = a["data"]["next"].as_str().unwrap().to_owned();
    let (status, answer) = client.get(&next).await;
    assert_eq!(status, 500);
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("no recorded exchange matches")
    );
    let message = replay.failed().await;
    let row = message
        .lines()
        .find(|l| l.starts_with('!'))
        .unwrap_or_else(|| panic!("no differing row in:\n{message}"));
    assert!(
        row.contains("/configmaps/altered") && row.contains("/configmaps/b"),
        "{message}"
    );
    assert!(message.contains("request 2 of this replay"), "{message}");
    let summary = replay.shutdown().await;
    assert_eq!(summary.failure.as_deref(), Some(message.as_str()));
}

#[tokio::test]
async fn a_client_frame_that_differs_stops_the_replay_with_both_frames() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = record(&dir, |client| async move {
        client.exec(EXEC, &["hello"]).await;
    })
    .await;
    let options = ReplayOptions {
        pacing: Pacing::Immediate,
        ..ReplayOptions::default()
    };
    let replay = Replay::start(&Cassette::load(&path).unwrap(), options)
        .await
        .unwrap();
    let client = Client::new(replay.kubeconfig("default").unwrap());
    client.exec(EXEC, &["bye"]).await;
    let message = replay.failed().await;
    assert!(
        message.contains("the client's frame 1 differs"),
        "{message}"
    );
    assert!(
        message.contains("\"bye\"") && message.contains("\"hello\""),
        "{message}"
    );
}

#[tokio::test]
async fn a_client_frame_recorded_after_the_command_ended_may_be_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = record(&dir, |client| async move {
        client.exec(EXEC, &["hello"]).await;
    })
    .await;
    // As if the client had still been writing stdin when the command's status came: a last
    // chunk recorded after the status, which a client that sees the end first never sends.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let status = lines
        .iter()
        .position(|l| l.contains(r#""from":"server","channel":3"#))
        .expect("the status is recorded");
    let record: serde_json::Value = serde_json::from_str(&lines[status]).unwrap();
    let late = json!({"type": "frame", "exchange": record["exchange"], "t": record["t"],
        "from": "client", "channel": 0, "text": "late"});
    lines.insert(status + 1, late.to_string());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();

    let options = ReplayOptions {
        pacing: Pacing::Immediate,
        ..ReplayOptions::default()
    };
    let replay = Replay::start(&Cassette::load(&path).unwrap(), options)
        .await
        .unwrap();
    let client = Client::new(replay.kubeconfig("default").unwrap());
    let got = client.exec(EXEC, &["hello"]).await;
    assert_eq!(got[0], (1, "hello".to_owned()), "{got:?}");
    let summary = replay.shutdown().await;
    assert_eq!(summary.failure, None);
    assert_eq!(summary.progress.served, 1);
}

#[tokio::test]
async fn a_cluster_that_cannot_be_reached_is_a_recorded_502() {
    let upstream = Upstream::start().await;
    let closed = std::net::TcpListener::bind(loopback())
        .unwrap()
        .local_addr()
        .unwrap();
    let port = upstream.url.rsplit(':').next().unwrap();
    let yaml = upstream.kubeconfig().replace(
        &format!("127.0.0.1:{port}"),
        &format!("127.0.0.1:{}", closed.port()),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let recorder = Recorder::create(&path).unwrap();
    let proxy = Proxy::start(
        &Kubeconfig::from_yaml(&yaml, None).unwrap(),
        &recorder,
        "default",
        loopback(),
    )
    .await
    .unwrap();
    let (status, answer) = Client::new(proxy.kubeconfig()).get("/version").await;
    assert_eq!(status, 502);
    assert_eq!(answer["kind"], "Status");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .starts_with("the recorded cluster could not be asked")
    );
    proxy.shutdown().await;
    recorder.finish().unwrap();
    let cassette = Cassette::load(&path).unwrap();
    assert_eq!(cassette.exchanges[0].exchange.response.status, 502);
}

#[test]
fn the_schema_refuses_an_unknown_field_and_a_record_without_its_exchange() {
    let schema = support::schema::schema();
    let header =
        r#"{"format":"fakekube-cassette","version":1,"recorded_at":"2025-01-01T00:00:00Z"}"#;
    let good = r#"{"type":"end","exchange":1,"t":0.5,"by":"client"}"#;
    assert!(support::schema::check_cassette(&schema, &format!("{header}\n{good}")).is_empty());
    let extra = r#"{"type":"end","exchange":1,"t":0.5,"by":"client","why":"x"}"#;
    let errors = support::schema::check_cassette(&schema, &format!("{header}\n{extra}"));
    assert_eq!(errors, ["line 2: : matches 0 of oneOf, not 1"]);
    let orphan = r#"{"type":"frame","t":0.5,"from":"client"}"#;
    assert!(!support::schema::check_cassette(&schema, &format!("{header}\n{orphan}")).is_empty());
}

#[tokio::test]
async fn a_request_of_an_unknown_client_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, proxy_token) = record(&dir, |client| async move {
        client.get("/version").await;
    })
    .await;
    let replay = Replay::start(&Cassette::load(&path).unwrap(), ReplayOptions::default())
        .await
        .unwrap();
    let kubeconfig = replay.kubeconfig("default").unwrap();
    let stale = kubeconfig.replace(Client::new(kubeconfig).token(), &proxy_token);
    assert_eq!(Client::new(&stale).get("/version").await.0, 401);
    assert_eq!(replay.shutdown().await.progress.served, 0);
}
