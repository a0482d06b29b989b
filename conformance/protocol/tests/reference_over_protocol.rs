//! The reference provider over the protocol: served by [`serve`], used through
//! [`RemoteProvider`], it passes the whole suite, and every message both ends exchange follows
//! the schemas. Bugs in the protocol layer itself (a lost exit, merged streams, a lost end of
//! input) are caught by the trials named for them.

mod support;

use std::sync::Arc;
use std::time::Duration;

use sandbox_conformance::{Outcome, ReferenceProvider, Report, Suite, TrialKind};
use sandbox_contract::Provider;
use sandbox_protocol::{Direction, RemoteProvider, Transport, serve};
use serde_json::Value;
use support::{Conversation, Schemas};

/// A runtime for the two ends (the suite brings its own).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Serves `provider` at one end of an in-memory pair and connects to it through `wrap`.
fn connect(
    rt: &tokio::runtime::Runtime,
    provider: ReferenceProvider,
    wrap: impl FnOnce(Transport) -> Transport,
) -> RemoteProvider {
    rt.block_on(async {
        let (runner, server) = Transport::pair();
        tokio::spawn(serve(Arc::new(provider), server));
        RemoteProvider::connect(wrap(runner), Duration::from_secs(60))
            .await
            .expect("initialize over an in-memory pair")
    })
}

/// Runs the suite against `remote`, with the fixtures (and fault switches) of `provider`.
fn run(provider: &ReferenceProvider, remote: RemoteProvider) -> Report {
    Suite::new()
        .pool(
            "remote",
            Arc::new(remote) as Arc<dyn Provider>,
            provider.fixtures(),
        )
        .run_quietly()
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
fn reference_over_the_protocol_passes_every_promise_trial_and_follows_the_schemas() {
    let rt = runtime();
    let provider = ReferenceProvider::new();
    let conversation = Conversation::default();
    let remote = connect(&rt, provider.clone(), |t| conversation.tap(t));
    assert_eq!(remote.negotiated().protocol_version, "1");
    let report = run(&provider, remote);
    assert!(!report.has_failed(), "{}", failures(&report));
    for trial in &report.trials {
        let skipped = matches!(trial.outcome, Outcome::Skipped { .. });
        assert_eq!(
            skipped,
            trial.kind == TrialKind::Coherence,
            "{}: {:?}",
            trial.name,
            trial.outcome
        );
    }
    assert_eq!(provider.sandbox_count(), 0, "the run left sandboxes behind");
    let messages = conversation.messages();
    let (problems, checked) = Schemas::load().check(&messages);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let methods: std::collections::BTreeSet<String> = messages
        .iter()
        .filter_map(|(_, text)| serde_json::from_str::<Value>(text).ok())
        .filter_map(|v| v.get("method").and_then(Value::as_str).map(str::to_owned))
        .collect();
    for name in sandbox_protocol::method::ALL
        .into_iter()
        .chain(sandbox_protocol::notification::ALL)
        .filter(|n| *n != sandbox_protocol::notification::CANCEL)
    {
        assert!(methods.contains(name), "the run never used {name}");
    }
    assert!(checked > 1000, "only {checked} messages");
}

#[test]
fn reference_with_no_optional_capability_answers_unsupported_over_the_protocol() {
    let rt = runtime();
    let provider = ReferenceProvider::with_capabilities(sandbox_contract::Capabilities::new());
    let remote = connect(&rt, provider.clone(), |t| t);
    let report = run(&provider, remote);
    assert!(!report.has_failed(), "{}", failures(&report));
    let coherence = report
        .trials
        .iter()
        .filter(|t| t.kind == TrialKind::Coherence && t.outcome == Outcome::Passed)
        .count();
    assert_eq!(coherence, 11);
}

/// A bug in the protocol layer: a filter on the runner's side of the transport that changes
/// what the provider sent, or what the runner sends.
struct ProtocolBug {
    /// What it does.
    name: &'static str,
    /// The trial that must catch it.
    caught_by: &'static str,
    /// The change: the direction and message in, the message out (or none).
    filter: fn(Direction, String) -> Option<String>,
}

/// Returns the `method` of a message.
fn method_of(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("method")?
        .as_str()
        .map(str::to_owned)
}

const PROTOCOL_BUGS: [ProtocolBug; 3] = [
    ProtocolBug {
        name: "the exit of a streamed command is lost",
        caught_by: "exec.stream::exactly_one_exit_after_all_output",
        filter: |direction, text| {
            let exit = direction == Direction::Received
                && method_of(&text).as_deref() == Some("exec/exit");
            (!exit).then_some(text)
        },
    },
    ProtocolBug {
        name: "stderr chunks are forwarded as stdout",
        caught_by: "exec.stream::stdout_and_stderr_come_as_separate_events",
        filter: |_, text| Some(text.replace("\"stream\":\"stderr\"", "\"stream\":\"stdout\"")),
    },
    ProtocolBug {
        name: "the end of streamed stdin is never sent",
        caught_by: "stdin::closing_streamed_stdin_delivers_end_of_input",
        filter: |direction, text| {
            let close = direction == Direction::Sent
                && method_of(&text).as_deref() == Some("exec/close_stdin");
            (!close).then_some(text)
        },
    },
];

#[test]
fn every_protocol_bug_fails_the_trial_named_for_it() {
    let rt = runtime();
    let mut misses = Vec::new();
    for bug in PROTOCOL_BUGS {
        let provider = ReferenceProvider::new();
        let remote = connect(&rt, provider.clone(), |t| t.filter(bug.filter));
        let report = run(&provider, remote);
        let caught = report.failures().iter().any(|t| t.name == bug.caught_by);
        if !caught {
            let outcome = report.trial(bug.caught_by).map(|t| t.outcome.clone());
            misses.push(format!("{}: {} was {outcome:?}", bug.name, bug.caught_by));
        }
    }
    assert!(
        misses.is_empty(),
        "protocol bugs the suite missed:\n{}",
        misses.join("\n")
    );
}

#[test]
fn calls_after_the_provider_goes_away_are_unavailable() {
    let rt = runtime();
    rt.block_on(async {
        let (runner, server) = Transport::pair();
        let serving = tokio::spawn(serve(Arc::new(ReferenceProvider::new()), server));
        let remote = RemoteProvider::connect(runner, Duration::from_secs(60))
            .await
            .unwrap();
        assert!(remote.health().await.unwrap().is_healthy());
        serving.abort();
        let _ = serving.await;
        let error = remote.health().await.unwrap_err();
        assert!(error.is_unavailable(), "{error}");
    });
}

#[test]
fn dropping_a_session_before_its_exit_cancels_it_at_the_provider() {
    let rt = runtime();
    let conversation = Conversation::default();
    let remote = connect(&rt, ReferenceProvider::new(), |t| conversation.tap(t));
    rt.block_on(async {
        let id = sandbox_contract::SandboxId::new("sb-cancel").unwrap();
        remote
            .create(sandbox_contract::CreateRequest::new(id.clone()))
            .await
            .unwrap();
        let request = sandbox_contract::ExecRequest::new(["sh", "-c", "echo started; sleep 30"]);
        let mut session = remote.exec_stream(&id, request).await.unwrap();
        let first = session.next_event().await.unwrap().unwrap();
        assert_eq!(
            first,
            sandbox_contract::ExecEvent::Stdout(bytes::Bytes::from_static(b"started\n"))
        );
        drop(session);
        remote.delete(&id).await.unwrap();
    });
    let cancels: Vec<String> = conversation
        .messages()
        .into_iter()
        .filter(|(d, text)| *d == Direction::Sent && text.contains("exec/cancel"))
        .map(|(_, text)| text)
        .collect();
    assert_eq!(cancels.len(), 1, "{cancels:?}");
    let (problems, _) = Schemas::load().check(&conversation.messages());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
