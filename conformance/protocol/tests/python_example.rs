//! The Python example provider (`conformance/examples/python-provider/`) passes the suite for
//! what it declares, over stdio and over WebSocket, and every message the runner's end and the
//! example exchange follows the schemas.

mod support;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use sandbox_conformance::{Fixtures, Outcome, Report, Suite, TrialKind};
use sandbox_contract::{Capability, Provider};
use sandbox_protocol::{ProviderProcess, RemoteProvider, Transport};
use support::{Conversation, Schemas, schema_dir};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The example's entry point.
fn provider_py() -> PathBuf {
    schema_dir()
        .join("../../examples/python-provider/provider.py")
        .canonicalize()
        .expect("the Python example exists")
}

/// Fixtures for a provider whose commands are local processes.
fn fixtures() -> Fixtures {
    Fixtures {
        op_timeout: Duration::from_secs(20),
        trial_timeout: Duration::from_secs(60),
        exec_timeout: Duration::from_millis(500),
        // Twice the default gap: the example's Python processes and their commands share the
        // test machine's cores with the runner and the other transport's run. At 200 ms a busy
        // machine once held the first output past the gap (167 ms before the exit of a 400 ms
        // sleep), and at 500 ms one of ten `cargo test` runs at load 8-14 did (485 ms before
        // the exit of a 1 s sleep), though the example streams it at once.
        stream_gap: Duration::from_secs(1),
        // Long enough for the create and the set_ttl that moves it to land before it expires
        // on a loaded machine: at 1 s, three of seven loaded `cargo test` runs saw the sandbox
        // expire (or its expiry fire) between the two calls.
        ttl: Duration::from_secs(4),
        ttl_backstop_wait: Some(Duration::from_secs(3)),
        delete_wait: Duration::from_secs(30),
        id_prefix: "py".to_owned(),
        ..Fixtures::default()
    }
}

/// Runs the suite against `remote` and checks the verdict and the conversation.
fn judge(remote: RemoteProvider, conversation: &Conversation) {
    let declared = remote.negotiated().info.capabilities.clone();
    for capability in [
        Capability::Exec,
        Capability::ExecStream,
        Capability::Files,
        Capability::Stdin,
        Capability::Ttl,
    ] {
        assert!(declared.contains(capability), "{capability} not declared");
    }
    let report = Suite::new()
        .pool("python", Arc::new(remote) as Arc<dyn Provider>, fixtures())
        .run_quietly();
    assert!(!report.has_failed(), "{}", failures(&report));
    let promises_run = report
        .trials
        .iter()
        .filter(|t| t.kind == TrialKind::Promise && t.outcome == Outcome::Passed)
        .count();
    assert!(
        promises_run >= 60,
        "only {promises_run} promise trials passed"
    );
    let (problems, checked) = Schemas::load().check(&conversation.messages());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked > 500, "only {checked} messages");
}

/// Lists the failures of a report.
fn failures(report: &Report) -> String {
    report
        .failures()
        .iter()
        .map(|t| match &t.outcome {
            Outcome::Failed { message } => format!("{}: {message}", t.name),
            _ => t.name.clone(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn python_example_passes_over_stdio() {
    let root = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let conversation = Conversation::default();
    let (mut child, remote) = rt.block_on(async {
        let command = format!(
            "python3 {} --root {}",
            provider_py().display(),
            root.path().display()
        );
        let (child, transport) = ProviderProcess::spawn(&command).unwrap();
        let remote = RemoteProvider::connect(conversation.tap(transport), Duration::from_secs(60))
            .await
            .unwrap();
        (child, remote)
    });
    judge(remote, &conversation);
    rt.block_on(child.kill()).unwrap();
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "sandboxes left"
    );
}

#[test]
fn python_example_passes_over_websocket() {
    let root = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let conversation = Conversation::default();
    let (mut child, remote) = rt.block_on(async {
        let mut child = tokio::process::Command::new("python3")
            .arg(provider_py())
            .args(["--listen", "127.0.0.1:0", "--root"])
            .arg(root.path())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut url = String::new();
        BufReader::new(stdout).read_line(&mut url).await.unwrap();
        assert!(url.starts_with("ws://127.0.0.1:"), "{url:?}");
        let transport = Transport::connect_websocket(url.trim()).await.unwrap();
        let remote = RemoteProvider::connect(conversation.tap(transport), Duration::from_secs(60))
            .await
            .unwrap();
        (child, remote)
    });
    judge(remote, &conversation);
    rt.block_on(child.kill()).unwrap();
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "sandboxes left"
    );
}
