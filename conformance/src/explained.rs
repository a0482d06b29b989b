//! Failures under faults the run does not control, told apart from real ones: every provider
//! call counted by operation and outcome ([`Counted`], [`Tally`]), a failed trial or check
//! counted as explained only when its message quotes one of the contract's codes a fault
//! explains ([`EXPLAINED`], [`explaining_code`], [`Verdicts`]), and a reconcile after the run
//! that deletes what cleanups could not and finds anything the run never created
//! ([`reconcile`]).
//!
//! The `conformance` binary uses it under `--chaos-seed` (its embedded fakekube's faults) and
//! `--chaos` (a cluster's); the live tests under `LIVE_CHAOS=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sandbox_contract::{
    Bytes, CreateRequest, Error, ErrorCode, ExecOutput, ExecRequest, ExecSession, FileInfo, Health,
    Provider, ProviderInfo, Sandbox, SandboxId, Snapshot, SnapshotKind, async_trait,
};

use crate::report::{Outcome, Report};

/// The contract's codes a fault explains: the server unavailable (a reset, a 503, a dropped
/// exec stream), throttled past the retries, failing (a 500), a sandbox whose pod went, an
/// object gone meanwhile (a file in a pod chaos deleted), a create that raced its own retry.
pub const EXPLAINED: [ErrorCode; 6] = [
    ErrorCode::Unavailable,
    ErrorCode::RateLimited,
    ErrorCode::Internal,
    ErrorCode::SandboxFailed,
    ErrorCode::NotFound,
    ErrorCode::Conflict,
];

/// The codes a run's faults explain: [`EXPLAINED`], and any its own faults add. A run that
/// kills kube-apiserver adds `permission_denied`: started again, the API server answers 403
/// until its RBAC caches have synced (`--chaos-explains`, `LIVE_CHAOS_EXPLAINS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained(Vec<ErrorCode>);

impl Default for Explained {
    fn default() -> Self {
        Explained(EXPLAINED.to_vec())
    }
}

impl Explained {
    /// [`EXPLAINED`] and `also`.
    pub fn with(also: &[ErrorCode]) -> Self {
        let mut codes = EXPLAINED.to_vec();
        codes.extend(also.iter().filter(|c| !EXPLAINED.contains(c)));
        Explained(codes)
    }

    /// [`EXPLAINED`] and the codes of a comma-separated list (`permission_denied,conflict`);
    /// the error names a word that is not a contract code.
    pub fn parse(list: &str) -> Result<Self, String> {
        let also = list
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(|w| {
                w.parse::<ErrorCode>()
                    .map_err(|_| format!("{w:?} is not a contract error code"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Explained::with(&also))
    }

    /// The first of these codes that a failure message quotes (`create failed: unavailable:
    /// ...`, `exec answered rate_limited: ...`, or an error's Debug form, `Err(Error { code:
    /// Unavailable, ... })`).
    pub fn code_in(&self, message: &str) -> Option<ErrorCode> {
        // A provider error is quoted by its Display, `code: message`, or by its Debug form.
        self.0
            .iter()
            .flat_map(|code| {
                [
                    (format!("{code}: "), *code),
                    (format!("code: {code:?},"), *code),
                ]
            })
            .filter_map(|(quoted, code)| {
                message
                    .match_indices(&quoted)
                    .find(|(at, _)| {
                        // The code is a whole word: not the tail of a longer identifier.
                        message[..*at]
                            .chars()
                            .next_back()
                            .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
                    })
                    .map(|(at, _)| (at, code))
            })
            .min_by_key(|(at, _)| *at)
            .map(|(_, code)| code)
    }
}

/// How many times the reconcile tries each delete.
const RECONCILE_TRIES: usize = 20;

/// What the provider calls of a run did, by operation and outcome (`ok` or an error code).
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Outcomes by operation, then by `ok` or code.
    calls: Arc<Mutex<BTreeMap<&'static str, BTreeMap<String, u64>>>>,
    /// Every id a create or fork asked for.
    created: Arc<Mutex<BTreeSet<String>>>,
}

impl Tally {
    /// Counts one call of `op`.
    fn record<T>(&self, op: &'static str, result: &Result<T, Error>) {
        let outcome = match result {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.code().to_string(),
        };
        if let Ok(mut calls) = self.calls.lock() {
            *calls.entry(op).or_default().entry(outcome).or_default() += 1;
        }
    }

    /// Notes an id the run asked to create.
    fn created(&self, id: &SandboxId) {
        if let Ok(mut created) = self.created.lock() {
            created.insert(id.as_str().to_owned());
        }
    }

    /// Whether the run asked to create `id`.
    fn made(&self, id: &SandboxId) -> bool {
        self.created
            .lock()
            .is_ok_and(|created| created.contains(id.as_str()))
    }

    /// The counts, one line per operation: `exec: ok 120, unavailable 3`.
    pub fn lines(&self) -> Vec<String> {
        let calls = self.calls.lock().map(|c| c.clone()).unwrap_or_default();
        calls
            .iter()
            .map(|(op, outcomes)| {
                let parts: Vec<String> = outcomes.iter().map(|(o, n)| format!("{o} {n}")).collect();
                format!("{op}: {}", parts.join(", "))
            })
            .collect()
    }

    /// Every call counted.
    pub fn total(&self) -> u64 {
        self.calls
            .lock()
            .map(|c| c.values().flat_map(BTreeMap::values).sum())
            .unwrap_or(0)
    }
}

/// A provider whose every call is counted in a [`Tally`].
pub struct Counted<P> {
    /// The provider.
    inner: P,
    /// Where its calls are counted.
    tally: Tally,
}

impl<P> Counted<P> {
    /// Counts `inner`'s calls in `tally`.
    pub fn new(inner: P, tally: Tally) -> Self {
        Counted { inner, tally }
    }
}

#[async_trait]
impl<P: Provider> Provider for Counted<P> {
    async fn info(&self) -> Result<ProviderInfo, Error> {
        let r = self.inner.info().await;
        self.tally.record("info", &r);
        r
    }

    async fn health(&self) -> Result<Health, Error> {
        let r = self.inner.health().await;
        self.tally.record("health", &r);
        r
    }

    async fn create(&self, request: CreateRequest) -> Result<Sandbox, Error> {
        self.tally.created(&request.id);
        let r = self.inner.create(request).await;
        self.tally.record("create", &r);
        r
    }

    async fn get(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let r = self.inner.get(id).await;
        self.tally.record("get", &r);
        r
    }

    async fn list(&self) -> Result<Vec<Sandbox>, Error> {
        let r = self.inner.list().await;
        self.tally.record("list", &r);
        r
    }

    async fn delete(&self, id: &SandboxId) -> Result<(), Error> {
        let r = self.inner.delete(id).await;
        self.tally.record("delete", &r);
        r
    }

    async fn exec(&self, id: &SandboxId, request: ExecRequest) -> Result<ExecOutput, Error> {
        let r = self.inner.exec(id, request).await;
        self.tally.record("exec", &r);
        r
    }

    async fn exec_stream(
        &self,
        id: &SandboxId,
        request: ExecRequest,
    ) -> Result<ExecSession, Error> {
        let r = self.inner.exec_stream(id, request).await;
        self.tally.record("exec_stream", &r);
        r
    }

    async fn write_file(&self, id: &SandboxId, path: &str, data: Bytes) -> Result<(), Error> {
        let r = self.inner.write_file(id, path, data).await;
        self.tally.record("write_file", &r);
        r
    }

    async fn read_file(&self, id: &SandboxId, path: &str, max_bytes: u64) -> Result<Bytes, Error> {
        let r = self.inner.read_file(id, path, max_bytes).await;
        self.tally.record("read_file", &r);
        r
    }

    async fn list_dir(&self, id: &SandboxId, path: &str) -> Result<Vec<FileInfo>, Error> {
        let r = self.inner.list_dir(id, path).await;
        self.tally.record("list_dir", &r);
        r
    }

    async fn stat(&self, id: &SandboxId, path: &str) -> Result<FileInfo, Error> {
        let r = self.inner.stat(id, path).await;
        self.tally.record("stat", &r);
        r
    }

    async fn mkdir(&self, id: &SandboxId, path: &str) -> Result<(), Error> {
        let r = self.inner.mkdir(id, path).await;
        self.tally.record("mkdir", &r);
        r
    }

    async fn stop(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let r = self.inner.stop(id).await;
        self.tally.record("stop", &r);
        r
    }

    async fn start(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let r = self.inner.start(id).await;
        self.tally.record("start", &r);
        r
    }

    async fn pause(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let r = self.inner.pause(id).await;
        self.tally.record("pause", &r);
        r
    }

    async fn resume(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let r = self.inner.resume(id).await;
        self.tally.record("resume", &r);
        r
    }

    async fn snapshot(&self, id: &SandboxId, kind: SnapshotKind) -> Result<Snapshot, Error> {
        let r = self.inner.snapshot(id, kind).await;
        self.tally.record("snapshot", &r);
        r
    }

    async fn fork(&self, source: &SandboxId, id: SandboxId) -> Result<Sandbox, Error> {
        self.tally.created(&id);
        let r = self.inner.fork(source, id).await;
        self.tally.record("fork", &r);
        r
    }

    async fn expose_port(&self, id: &SandboxId, port: u16) -> Result<String, Error> {
        let r = self.inner.expose_port(id, port).await;
        self.tally.record("expose_port", &r);
        r
    }

    async fn set_ttl(&self, id: &SandboxId, ttl: Option<Duration>) -> Result<Sandbox, Error> {
        let r = self.inner.set_ttl(id, ttl).await;
        self.tally.record("set_ttl", &r);
        r
    }
}

/// The trials of a run under chaos: passed, failed with a code a fault explains (by code),
/// and failed otherwise (by name, with the message).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// Trials that passed.
    pub passed: usize,
    /// Failed trials a fault explains, by the first code their message names.
    pub explained: BTreeMap<String, usize>,
    /// Failed trials no fault explains: name and message.
    pub unexplained: Vec<(String, String)>,
}

impl Verdicts {
    /// Sorts the trials of `report`, a failure explained when it quotes a code of `explained`.
    pub fn of(report: &Report, explained: &Explained) -> Verdicts {
        let mut v = Verdicts::default();
        for trial in &report.trials {
            match &trial.outcome {
                Outcome::Passed => v.passed += 1,
                Outcome::Skipped { .. } => {}
                Outcome::Failed { message } => v.failed(&trial.name, message, explained),
            }
        }
        v
    }

    /// Counts the failure of `name` with `message`: explained when the message quotes a code
    /// of `explained`.
    pub fn failed(&mut self, name: &str, message: &str, explained: &Explained) {
        match explained.code_in(message) {
            Some(code) => *self.explained.entry(code.to_string()).or_default() += 1,
            None => self.unexplained.push((name.to_owned(), message.to_owned())),
        }
    }

    /// One line: `110 passed, 4 failed with a code a fault explains (internal 3,
    /// unavailable 1), 0 unexplained`.
    pub fn summary(&self) -> String {
        let explained: Vec<String> = self
            .explained
            .iter()
            .map(|(code, n)| format!("{code} {n}"))
            .collect();
        format!(
            "{} passed, {} failed with a code a fault explains ({}), {} unexplained",
            self.passed,
            self.explained.values().sum::<usize>(),
            explained.join(", "),
            self.unexplained.len()
        )
    }
}

/// The first [`EXPLAINED`] code a failure message quotes ([`Explained::code_in`]).
pub fn explaining_code(message: &str) -> Option<ErrorCode> {
    Explained::default().code_in(message)
}

/// Deletes every sandbox `providers` still list (the cleanups chaos defeated), each until its
/// delete holds. Returns how many it deleted; the error names a sandbox the run never asked
/// for, or one whose delete kept failing.
pub async fn reconcile(providers: &[Arc<dyn Provider>], tally: &Tally) -> Result<usize, String> {
    let mut deleted = 0;
    let mut problems = Vec::new();
    for provider in providers {
        let mut listed = None;
        for _ in 0..RECONCILE_TRIES {
            if let Ok(l) = provider.list().await {
                listed = Some(l);
                break;
            }
        }
        let Some(listed) = listed else {
            problems.push("a pool's list kept failing".to_owned());
            continue;
        };
        for sandbox in listed {
            if !tally.made(&sandbox.id) {
                problems.push(format!("{} (not created by this run)", sandbox.id));
                continue;
            }
            let mut done = false;
            for _ in 0..RECONCILE_TRIES {
                if provider.delete(&sandbox.id).await.is_ok() {
                    done = true;
                    break;
                }
            }
            if done {
                deleted += 1;
            } else {
                problems.push(format!("{} (its delete kept failing)", sandbox.id));
            }
        }
    }
    if problems.is_empty() {
        Ok(deleted)
    } else {
        Err(problems.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_a_runs_own_faults_add_is_explained_only_in_that_run() {
        let denied = "create failed: permission_denied: sandboxes is forbidden";
        assert_eq!(explaining_code(denied), None);
        let restarts = Explained::parse("permission_denied").expect("a contract code");
        assert_eq!(restarts.code_in(denied), Some(ErrorCode::PermissionDenied));
        assert_eq!(
            restarts.code_in("create failed: unavailable: reset"),
            Some(ErrorCode::Unavailable),
            "the default codes stay explained"
        );
    }

    #[test]
    fn a_list_of_codes_to_explain_refuses_a_word_that_is_not_a_code() {
        assert_eq!(
            Explained::parse("permission_denied, nope"),
            Err("\"nope\" is not a contract error code".to_owned())
        );
        assert_eq!(Explained::parse(""), Ok(Explained::default()));
        assert_eq!(
            Explained::parse("unavailable"),
            Ok(Explained::default()),
            "a default code is not listed twice"
        );
    }

    #[test]
    fn a_failure_is_explained_by_the_first_fault_code_it_quotes() {
        assert_eq!(
            explaining_code("create failed: unavailable: connection reset; then internal: x"),
            Some(ErrorCode::Unavailable)
        );
        assert_eq!(
            explaining_code("exec answered rate_limited: slow down; expected invalid_request"),
            Some(ErrorCode::RateLimited)
        );
        assert_eq!(
            explaining_code("cleanup could not delete d-3 (internal: injected)"),
            Some(ErrorCode::Internal)
        );
    }

    #[test]
    fn a_failure_quoting_an_error_by_its_debug_form_is_explained_by_its_code() {
        let message = format!(
            "terminal item {:?}",
            Err::<(), _>(Error::new(
                ErrorCode::Unavailable,
                "the exec connection broke"
            ))
        );
        assert_eq!(explaining_code(&message), Some(ErrorCode::Unavailable));
        let other = format!(
            "terminal item {:?}",
            Err::<(), _>(Error::new(ErrorCode::InvalidRequest, "bad"))
        );
        assert_eq!(explaining_code(&other), None);
    }

    #[test]
    fn a_failure_that_quotes_no_fault_code_is_unexplained() {
        assert_eq!(explaining_code("stdout was \"a\", expected \"b\""), None);
        assert_eq!(
            explaining_code("write_file failed: invalid_request: relative path"),
            None
        );
        assert_eq!(explaining_code("exec took longer than 20s"), None);
        assert_eq!(explaining_code("the xnot_found: word is not a code"), None);
    }
}
