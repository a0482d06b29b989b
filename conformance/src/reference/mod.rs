//! The reference provider: in-memory sandboxes that declare every capability and pass every
//! trial, and its mutants, each with one [`Bug`].
//!
//! It runs commands with a tiny interpreter that knows exactly the commands the trials use (see
//! the README), keeps each sandbox's files in memory (only the volume path survives a stop), and
//! needs a tokio runtime (its commands sleep and run as tasks).

mod bugs;
mod fs;
mod shell;

use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use sandbox_contract::{
    Capabilities, Capability, CreateRequest, EXIT_TIMEOUT, Error, ExecEvent, ExecOutput,
    ExecRequest, ExecSession, FileInfo, FileKind, Health, Limits, Provider, ProviderInfo, Sandbox,
    SandboxId, SandboxState, Snapshot, SnapshotKind, Stdin, StdinSink, Template, async_trait,
    validate_path,
};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

pub use bugs::Bug;

use crate::fixtures::{ClusterClock, Fault, Faults, Fixtures};
use fs::{Fs, PathError};
use shell::{Input, Output, SandboxFs, Shell};

/// The directory whose files survive stop and start.
pub const VOLUME_PATH: &str = "/workspace";

/// The templates the reference provider lists.
const TEMPLATES: [&str; 2] = ["base", "alt"];

/// How many sandboxes one page of the reference's internal list holds.
const PAGE_SIZE: usize = 3;

/// The size at which the truncating mutants cut.
const CUT: usize = 64 * 1024;

/// The largest file read_file returns.
const MAX_READ: u64 = 64 * 1024;

/// The largest content write_file accepts.
const MAX_WRITE: u64 = 256 * 1024;

/// An in-memory provider that follows the whole contract, or a mutant that breaks one rule.
#[derive(Clone)]
pub struct ReferenceProvider {
    /// The shared state.
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ReferenceProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReferenceProvider")
            .field("capabilities", &self.inner.capabilities)
            .field("bug", &self.inner.bug)
            .finish_non_exhaustive()
    }
}

/// The provider's state behind the handle.
struct Inner {
    /// What it declares.
    capabilities: Capabilities,
    /// Its bug, for a mutant.
    bug: Option<Bug>,
    /// The sandboxes and snapshots.
    state: Mutex<State>,
    /// Whether list pages after the first fail.
    fail_list_pages: AtomicBool,
    /// How many times info was called.
    info_calls: AtomicU64,
    /// Stdin senders the stdin mutants keep alive, so that end of input never comes.
    leaked: Mutex<Vec<mpsc::UnboundedSender<Bytes>>>,
    /// How far its clock was moved ahead of the host's, in nanoseconds (see
    /// [`ReferenceProvider::clock`]).
    moved_nanos: AtomicU64,
}

/// Everything that changes.
#[derive(Default)]
struct State {
    /// The sandboxes by id.
    sandboxes: BTreeMap<SandboxId, Sb>,
    /// Extra sandboxes that the duplicating mutants make (listed, never adopted).
    ghosts: Vec<Sandbox>,
    /// Snapshots by template name.
    snapshots: BTreeMap<String, SnapshotData>,
    /// The next provider name number.
    next_ref: u64,
    /// Every command task, for breaking connections.
    running: Vec<AbortHandle>,
}

/// What a snapshot holds.
#[derive(Clone)]
enum SnapshotData {
    /// A copy of the files, and the sandbox it came from.
    Copy(Fs, SandboxId),
    /// A reference to the source's live files (the live-snapshot mutant).
    Live(SandboxId),
}

/// One sandbox.
struct Sb {
    /// What get returns.
    record: Sandbox,
    /// Env from create.
    env: BTreeMap<String, String>,
    /// Its files.
    fs: Fs,
    /// The files commands see under the separate-filesystem mutant.
    shadow: Fs,
    /// Another sandbox whose files this one uses (the sharing-fork mutant).
    link: Option<SandboxId>,
    /// When the TTL backstop removes it.
    backstop: Option<Instant>,
    /// Its running commands.
    tasks: Vec<AbortHandle>,
    /// The latest command's output channel, for the cross-talk mutant.
    latest: Arc<Mutex<Option<mpsc::UnboundedSender<ExecEvent>>>>,
}

impl State {
    /// Returns the files of sandbox `id`, following a link.
    fn fs_mut(&mut self, id: &SandboxId, shadow: bool) -> Option<&mut Fs> {
        let target = self
            .sandboxes
            .get(id)?
            .link
            .clone()
            .unwrap_or_else(|| id.clone());
        let sb = self.sandboxes.get_mut(&target)?;
        Some(if shadow { &mut sb.shadow } else { &mut sb.fs })
    }

    /// Ends every command of `sb`.
    fn abort(sb: &mut Sb) {
        for task in sb.tasks.drain(..) {
            task.abort();
        }
    }
}

impl Default for ReferenceProvider {
    fn default() -> Self {
        ReferenceProvider::new()
    }
}

impl ReferenceProvider {
    /// Returns a provider that declares every capability and follows every rule.
    pub fn new() -> ReferenceProvider {
        ReferenceProvider::build(Capabilities::from(Capability::ALL), None)
    }

    /// Returns a provider that declares only `capabilities` (the others answer
    /// `unsupported_operation`) and follows every rule.
    pub fn with_capabilities(capabilities: Capabilities) -> ReferenceProvider {
        ReferenceProvider::build(capabilities, None)
    }

    /// Returns the mutant with `bug`.
    pub fn mutant(bug: Bug) -> ReferenceProvider {
        ReferenceProvider::build(bug.declared(), Some(bug))
    }

    /// Builds a provider.
    fn build(capabilities: Capabilities, bug: Option<Bug>) -> ReferenceProvider {
        ReferenceProvider {
            inner: Arc::new(Inner {
                capabilities,
                bug,
                state: Mutex::new(State::default()),
                fail_list_pages: AtomicBool::new(false),
                info_calls: AtomicU64::new(0),
                leaked: Mutex::new(Vec::new()),
                moved_nanos: AtomicU64::new(0),
            }),
        }
    }

    /// Returns the fault switches of this provider.
    pub fn faults(&self) -> Arc<dyn Faults> {
        Arc::new(ReferenceFaults(self.inner.clone()))
    }

    /// Returns its clock, which the suite may move: its TTLs and expiries read it. The
    /// [`fixtures`](ReferenceProvider::fixtures) do not give it; add it to run the TTL
    /// backstop trials on a moved clock.
    pub fn clock(&self) -> Arc<dyn ClusterClock> {
        Arc::new(ReferenceClock(self.inner.clone()))
    }

    /// How far its clock is ahead of the host's.
    fn moved(&self) -> Duration {
        Duration::from_nanos(self.inner.moved_nanos.load(Ordering::SeqCst))
    }

    /// Its clock's monotonic time now (for the TTL backstop).
    fn instant_now(&self) -> Instant {
        Instant::now() + self.moved()
    }

    /// Its clock's calendar time now (for expiries and creation times).
    fn system_now(&self) -> SystemTime {
        SystemTime::now() + self.moved()
    }

    /// Returns fixtures for this provider: short timeouts, its volume path and its faults.
    pub fn fixtures(&self) -> Fixtures {
        Fixtures {
            op_timeout: Duration::from_secs(2),
            trial_timeout: Duration::from_secs(10),
            exec_timeout: Duration::from_millis(100),
            stream_gap: Duration::from_millis(100),
            large_bytes: 200_000,
            ttl: Duration::from_millis(150),
            ttl_backstop_wait: Some(Duration::from_millis(300)),
            delete_wait: Duration::from_millis(300),
            volume_path: Some(VOLUME_PATH.to_owned()),
            faults: Some(self.faults()),
            ..Fixtures::default()
        }
    }

    /// Returns the number of sandboxes that exist now (to check that a run left none).
    pub fn sandbox_count(&self) -> usize {
        self.state()
            .map(|s| s.sandboxes.len() + s.ghosts.len())
            .unwrap_or(0)
    }

    /// Returns whether the mutant has `bug`.
    fn has(&self, bug: Bug) -> bool {
        self.inner.bug == Some(bug)
    }

    /// Locks the state.
    fn state(&self) -> Result<MutexGuard<'_, State>, Error> {
        self.inner
            .state
            .lock()
            .map_err(|_| Error::internal("reference state lock poisoned"))
    }

    /// Locks the state after removing sandboxes whose TTL ran out.
    fn swept(&self) -> Result<MutexGuard<'_, State>, Error> {
        let mut state = self.state()?;
        if !self.has(Bug::BackstopNeverFires) {
            let now = self.instant_now();
            let expired: Vec<SandboxId> = state
                .sandboxes
                .iter()
                .filter(|(_, sb)| sb.backstop.is_some_and(|at| at <= now))
                .map(|(id, _)| id.clone())
                .collect();
            for id in expired {
                if let Some(mut sb) = state.sandboxes.remove(&id) {
                    State::abort(&mut sb);
                }
            }
        }
        Ok(state)
    }

    /// Answers `unsupported_operation` for `operation` unless `capability` is declared (or
    /// pretended).
    fn gate(&self, capability: Capability, operation: &str) -> Result<(), Error> {
        if self.inner.capabilities.contains(capability)
            || self.has(Bug::PretendsToOffer(capability))
        {
            Ok(())
        } else {
            Err(Error::unsupported(operation))
        }
    }

    /// Returns whether `capability` is declared or pretended.
    fn offers(&self, capability: Capability) -> bool {
        self.gate(capability, "").is_ok()
    }

    /// Checks a file path, unless the relative-path mutant skips it.
    fn check_path(&self, path: &str) -> Result<String, Error> {
        if self.has(Bug::RelativePathsAccepted) && !path.starts_with('/') && !path.is_empty() {
            return Ok(format!("/{path}"));
        }
        validate_path(path)?;
        Ok(path.to_owned())
    }

    /// Checks that sandbox `id` exists and can serve file operations.
    fn files_ready(state: &State, id: &SandboxId, stopped_ok: bool) -> Result<(), Error> {
        let sb = state.sandboxes.get(id).ok_or_else(|| not_found(id))?;
        match sb.record.state {
            SandboxState::Running => Ok(()),
            SandboxState::Stopped if stopped_ok => Ok(()),
            other => Err(Error::invalid_state(format!("sandbox {id} is {other}"))),
        }
    }

    /// Returns the provider name for a new sandbox.
    async fn next_ref(&self) -> Result<String, Error> {
        if self.has(Bug::ProviderRefCollides) {
            let seen = self.state()?.next_ref;
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.state()?.next_ref = seen + 1;
            return Ok(format!("ref-{seen}"));
        }
        let mut state = self.state()?;
        let n = state.next_ref;
        state.next_ref += 1;
        Ok(format!("ref-{n}"))
    }

    /// Builds a new sandbox record and files for `request`.
    async fn new_sandbox(&self, request: &CreateRequest, fs: Fs) -> Result<Sb, Error> {
        let provider_ref = self.next_ref().await?;
        let ttl = request
            .ttl
            .filter(|_| self.offers(Capability::Ttl) && !self.has(Bug::CreateIgnoresTtl));
        let labels = if self.has(Bug::CreateDropsLabels) {
            BTreeMap::new()
        } else {
            request.labels.clone()
        };
        let template = if self.has(Bug::TemplateNotRecorded) {
            None
        } else {
            request.template.clone()
        };
        Ok(Sb {
            record: Sandbox {
                id: request.id.clone(),
                state: SandboxState::Running,
                template,
                created_at: Some(self.system_now()),
                expires_at: ttl.map(|ttl| self.system_now() + ttl),
                provider_ref,
                labels,
                reason: None,
            },
            env: request.env.clone(),
            shadow: fs.clone(),
            fs,
            link: None,
            backstop: ttl.map(|ttl| self.instant_now() + ttl),
            tasks: Vec::new(),
            latest: Arc::new(Mutex::new(None)),
        })
    }

    /// Validates a create request as this provider (or mutant) does.
    fn validate_create(&self, request: &CreateRequest) -> Result<(), Error> {
        if self.has(Bug::CreateSkipsValidation) {
            return Ok(());
        }
        let mut checked = request.clone();
        if self.has(Bug::ZeroResourcesAccepted) {
            checked.resources = sandbox_contract::Resources::default();
        }
        checked.validate().map_err(|error| {
            if self.has(Bug::ErrorEchoesRequest) {
                let values: Vec<&str> = request.env.values().map(String::as_str).collect();
                Error::invalid_request(format!("{} (env {values:?})", error.message()))
            } else {
                error
            }
        })?;
        if self.has(Bug::DiskResourceRefused) && request.resources.disk_gib.is_some() {
            return Err(Error::invalid_request("disk size cannot be applied"));
        }
        Ok(())
    }

    /// Returns the files a sandbox created from `template` starts with.
    fn starting_fs(&self, state: &State, template: Option<&str>) -> Result<Fs, Error> {
        let fresh = Fs::fresh(VOLUME_PATH);
        let Some(template) = template else {
            return Ok(fresh);
        };
        if let Some(snapshot) = state.snapshots.get(template) {
            if self.has(Bug::SnapshotEmpty) {
                return Ok(fresh);
            }
            return Ok(match snapshot {
                SnapshotData::Copy(fs, _) => fs.clone(),
                SnapshotData::Live(source) => state
                    .sandboxes
                    .get(source)
                    .map_or(fresh, |sb| sb.fs.clone()),
            });
        }
        if TEMPLATES.contains(&template) || self.has(Bug::UnknownTemplateUsesDefault) {
            return Ok(fresh);
        }
        Err(Error::invalid_request(format!(
            "template {template} does not exist; this provider offers base and alt"
        )))
    }

    /// Starts `argv` in sandbox `id`; returns the command's events and, for streamed stdin,
    /// the sender of its input.
    fn start_command(
        &self,
        id: &SandboxId,
        request: &ExecRequest,
        allowed: &[SandboxState],
    ) -> Result<
        (
            mpsc::UnboundedReceiver<ExecEvent>,
            Option<mpsc::UnboundedSender<Bytes>>,
        ),
        Error,
    > {
        let mut state = self.swept()?;
        let sb = state.sandboxes.get(id).ok_or_else(|| not_found(id))?;
        if !allowed.contains(&sb.record.state) {
            return Err(Error::invalid_state(format!(
                "sandbox {id} is {}",
                sb.record.state
            )));
        }
        let mut env = BTreeMap::from([
            ("HOME".to_owned(), "/root".to_owned()),
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ]);
        if !self.has(Bug::CreateEnvIgnored) {
            env.extend(sb.env.clone());
        }
        if !self.has(Bug::RequestEnvIgnored) {
            env.extend(request.env.clone());
        }
        let shadow = self.has(Bug::FilesSeparateFromExec);
        let mut cwd = match &request.cwd {
            Some(cwd) if !self.has(Bug::CwdIgnored) => fs::normalize(cwd),
            _ => "/".to_owned(),
        };
        let cwd_is_dir = state
            .fs_mut(id, shadow)
            .is_some_and(|fs| matches!(fs.get(&cwd), Some(fs::Node::Dir { .. })));
        let (events, receiver) = mpsc::unbounded_channel();
        let sb = state.sandboxes.get_mut(id).ok_or_else(|| not_found(id))?;
        let output = if self.has(Bug::ExecOutputCrossTalk) {
            if let Ok(mut latest) = sb.latest.lock() {
                *latest = Some(events.clone());
            }
            Output::shared(events.clone(), sb.latest.clone())
        } else {
            Output::new(events.clone())
        };
        let (stdin, sender) = match &request.stdin {
            Stdin::Empty => (Input::Empty, None),
            Stdin::Bytes(_) if self.has(Bug::StdinBytesIgnored) => (Input::Empty, None),
            Stdin::Bytes(bytes) if self.has(Bug::StdinTruncated) => (
                Input::Bytes(Some(bytes.slice(..bytes.len().min(CUT)))),
                None,
            ),
            Stdin::Bytes(bytes) => (Input::Bytes(Some(bytes.clone())), None),
            Stdin::Streamed => {
                let (sender, receiver) = mpsc::unbounded_channel();
                (Input::Channel(receiver), Some(sender))
            }
        };
        let mut argv = request.argv.clone();
        if self.has(Bug::ArgvJoinedWithSpaces) {
            argv = argv
                .join(" ")
                .split_whitespace()
                .map(str::to_owned)
                .collect();
        }
        let missing_cwd = !cwd_is_dir;
        if missing_cwd && self.has(Bug::MissingCwdFallsBackToRoot) {
            cwd = "/".to_owned();
        }
        let fs_handle: Arc<dyn SandboxFs> = Arc::new(FsHandle {
            inner: self.inner.clone(),
            id: id.clone(),
            shadow,
        });
        let timeout = request.timeout;
        let bug = self.inner.bug;
        let refuse_cwd = missing_cwd && !self.has(Bug::MissingCwdFallsBackToRoot);
        let task = tokio::spawn(async move {
            if refuse_cwd {
                let _ = events.send(ExecEvent::Stderr(Bytes::from_static(
                    b"sh: cd: the working directory does not exist\n",
                )));
                let _ = events.send(ExecEvent::Exit(2));
                return;
            }
            let shell = Shell::new(env, cwd, fs_handle, stdin, output);
            let shell = if bug == Some(Bug::ShellWaitsForEndOfInput) {
                shell.batch_stdin()
            } else {
                shell
            };
            let code = match timeout {
                Some(limit) => match tokio::time::timeout(limit, shell.run(argv)).await {
                    Ok(code) => code,
                    Err(_) if bug == Some(Bug::TimeoutIsAnError) => return,
                    Err(_) if bug == Some(Bug::StreamTimeoutExit137) => 137,
                    Err(_) => EXIT_TIMEOUT,
                },
                None => shell.run(argv).await,
            };
            let _ = events.send(ExecEvent::Exit(code));
        });
        let handle = task.abort_handle();
        sb.tasks.retain(|t| !t.is_finished());
        sb.tasks.push(handle.clone());
        state.running.retain(|t| !t.is_finished());
        state.running.push(handle);
        Ok((receiver, sender))
    }

    /// The states in which commands may run, for this provider or mutant.
    fn exec_states(&self) -> Vec<SandboxState> {
        let mut states = vec![SandboxState::Running];
        if self.has(Bug::ExecRunsWhileStopped) {
            states.push(SandboxState::Stopped);
        }
        if self.has(Bug::ExecRunsWhilePaused) {
            states.push(SandboxState::Paused);
        }
        states
    }

    /// Applies the checks exec and exec_stream share, in the contract's order.
    fn check_exec(
        &self,
        id: &SandboxId,
        request: &ExecRequest,
        streamed_ok: bool,
    ) -> Result<(), Error> {
        if self.has(Bug::ExecChecksSandboxFirst) {
            let state = self.swept()?;
            if !state.sandboxes.contains_key(id) {
                return Err(not_found(id));
            }
        }
        request.validate()?;
        if matches!(request.stdin, Stdin::Streamed) && !streamed_ok {
            return Err(Error::invalid_request(
                "exec cannot take streamed stdin; use exec_stream",
            ));
        }
        Ok(())
    }

    /// Whether a request's stdin needs the stdin capability that is missing.
    fn stdin_refused(&self, request: &ExecRequest) -> bool {
        !matches!(request.stdin, Stdin::Empty) && !self.offers(Capability::Stdin)
    }

    /// Gathers a command's events into its output, as exec returns it.
    async fn collect(
        &self,
        mut events: mpsc::UnboundedReceiver<ExecEvent>,
    ) -> Result<ExecOutput, Error> {
        let mut stdout = BytesMut::new();
        let mut stderr = BytesMut::new();
        let exit_code = loop {
            match events.recv().await {
                Some(ExecEvent::Stdout(chunk)) => stdout.extend_from_slice(&chunk),
                Some(ExecEvent::Stderr(chunk)) if self.has(Bug::StderrMergedIntoStdout) => {
                    stdout.extend_from_slice(&chunk);
                }
                Some(ExecEvent::Stderr(chunk)) => stderr.extend_from_slice(&chunk),
                Some(ExecEvent::Exit(code)) => break code,
                None if self.has(Bug::DroppedExecReportsExit) => break 0,
                None => {
                    return Err(Error::unavailable(
                        "the exec connection dropped before the exit code arrived",
                    ));
                }
            }
        };
        let mut stdout = stdout.freeze();
        if self.has(Bug::OutputTruncated) {
            stdout = stdout.slice(..stdout.len().min(CUT));
        }
        if self.has(Bug::OutputLossyUtf8) {
            stdout = Bytes::from(String::from_utf8_lossy(&stdout).into_owned());
        }
        let exit_code = match exit_code {
            _ if self.has(Bug::ExitAlwaysZero) => 0,
            127 if self.has(Bug::MissingProgramIsNotFoundError) => {
                return Err(Error::not_found("the program does not exist"));
            }
            126 if self.has(Bug::NotExecutableIs127) => 127,
            code if code != 0 && self.has(Bug::NonzeroExitIsError) => {
                return Err(Error::internal(format!("command failed with exit {code}")));
            }
            code => code,
        };
        Ok(ExecOutput {
            exit_code,
            stdout,
            stderr: stderr.freeze(),
        })
    }

    /// Maps a filesystem path error to the contract's code.
    fn path_error(error: PathError) -> Error {
        match error {
            PathError::NotFound(_) => Error::not_found(error.to_string()),
            PathError::IsDir(_) | PathError::NotDir(_) => Error::invalid_request(error.to_string()),
        }
    }

    /// Runs `f` on the files of `id` after the file-operation checks.
    fn with_files<T>(
        &self,
        id: &SandboxId,
        path: &str,
        f: impl FnOnce(&mut Fs, &str) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.gate(Capability::Files, "write_file")?;
        let path = self.check_path(path)?;
        let mut state = self.swept()?;
        Self::files_ready(&state, id, self.has(Bug::FilesWorkWhileStopped))?;
        let fs = state.fs_mut(id, false).ok_or_else(|| not_found(id))?;
        f(fs, &path)
    }

    /// Takes a snapshot without the capability check.
    fn take_snapshot(&self, id: &SandboxId, kind: SnapshotKind) -> Result<Snapshot, Error> {
        let mut state = self.swept()?;
        let sb = state.sandboxes.get(id).ok_or_else(|| not_found(id))?;
        let stopped_ok = kind == SnapshotKind::Disk;
        match sb.record.state {
            SandboxState::Running => {}
            SandboxState::Stopped if stopped_ok => {}
            other => return Err(Error::invalid_state(format!("sandbox {id} is {other}"))),
        }
        let data = if self.has(Bug::SnapshotIsLive) {
            SnapshotData::Live(id.clone())
        } else {
            SnapshotData::Copy(sb.fs.clone(), id.clone())
        };
        let name = format!("snap-{}-{}", id, state.snapshots.len());
        state.snapshots.insert(name.clone(), data);
        let kind = if self.has(Bug::MemorySnapshotSaysDisk) {
            SnapshotKind::Disk
        } else {
            kind
        };
        Ok(Snapshot {
            template: name,
            kind,
            source: id.clone(),
        })
    }

    /// Forks without the capability check.
    async fn make_fork(&self, source: &SandboxId, id: SandboxId) -> Result<Sandbox, Error> {
        let (template, labels, fs, ttl_state) = {
            let state = self.swept()?;
            let sb = state
                .sandboxes
                .get(source)
                .ok_or_else(|| not_found(source))?;
            if sb.record.state != SandboxState::Running {
                return Err(Error::invalid_state(format!(
                    "sandbox {source} is {}",
                    sb.record.state
                )));
            }
            if let Some(existing) = state.sandboxes.get(&id)
                && !self.has(Bug::ForkDuplicates)
            {
                return Ok(existing.record.clone());
            }
            (
                sb.record.template.clone(),
                sb.record.labels.clone(),
                sb.fs.clone(),
                (sb.record.expires_at, sb.backstop),
            )
        };
        let mut request = CreateRequest::new(id.clone());
        request.template = template;
        request.labels = labels;
        let mut sb = self.new_sandbox(&request, fs).await?;
        if self.has(Bug::ForkSharesFiles) {
            sb.link = Some(source.clone());
        }
        if self.has(Bug::ForkCopiesTtl) {
            (sb.record.expires_at, sb.backstop) = ttl_state;
        }
        let record = sb.record.clone();
        let mut guard = self.state()?;
        let state = &mut *guard;
        match state.sandboxes.entry(id) {
            std::collections::btree_map::Entry::Occupied(_) => state.ghosts.push(record.clone()),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(sb);
            }
        }
        Ok(record)
    }

    /// Stops without the capability check.
    fn do_stop(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let mut state = self.swept()?;
        let sb = state.sandboxes.get_mut(id).ok_or_else(|| not_found(id))?;
        match sb.record.state {
            SandboxState::Stopped if !self.has(Bug::StopTwiceFails) => Ok(sb.record.clone()),
            SandboxState::Running => {
                if self.has(Bug::StopOnlyReports) {
                    let mut record = sb.record.clone();
                    record.state = SandboxState::Stopped;
                    return Ok(record);
                }
                State::abort(sb);
                sb.fs = if self.has(Bug::StopLosesVolume) {
                    Fs::fresh(VOLUME_PATH)
                } else if self.has(Bug::StopKeepsRootFs) {
                    sb.fs.clone()
                } else {
                    sb.fs.keep_only_volume(VOLUME_PATH)
                };
                sb.record.state = SandboxState::Stopped;
                Ok(sb.record.clone())
            }
            other => Err(Error::invalid_state(format!("sandbox {id} is {other}"))),
        }
    }
}

/// The `not_found` error for `id`.
fn not_found(id: &SandboxId) -> Error {
    Error::not_found(format!("sandbox {id} does not exist"))
}

/// Gives a command access to its sandbox's files.
struct FsHandle {
    /// The provider.
    inner: Arc<Inner>,
    /// The sandbox.
    id: SandboxId,
    /// Whether to use the shadow filesystem (the separate-filesystem mutant).
    shadow: bool,
}

impl SandboxFs for FsHandle {
    fn with_fs(&self, f: &mut dyn FnMut(&mut Fs)) -> Option<()> {
        let mut state = self.inner.state.lock().ok()?;
        let fs = state.fs_mut(&self.id, self.shadow)?;
        f(fs);
        Some(())
    }
}

/// The fault switches of a reference provider.
struct ReferenceFaults(Arc<Inner>);

/// The reference provider's clock, for the suite to move.
struct ReferenceClock(Arc<Inner>);

#[async_trait]
impl ClusterClock for ReferenceClock {
    async fn advance(&self, by: Duration) -> Result<(), Error> {
        let nanos = u64::try_from(by.as_nanos())
            .map_err(|_| Error::invalid_request("cannot move the clock that far"))?;
        self.0.moved_nanos.fetch_add(nanos, Ordering::SeqCst);
        Ok(())
    }
}

#[async_trait]
impl Faults for ReferenceFaults {
    fn supports(&self, _fault: Fault) -> bool {
        true
    }

    async fn inject(&self, fault: Fault) -> Result<(), Error> {
        match fault {
            Fault::BreakExecConnections => {
                let mut state = self
                    .0
                    .state
                    .lock()
                    .map_err(|_| Error::internal("reference state lock poisoned"))?;
                for task in state.running.drain(..) {
                    task.abort();
                }
            }
            Fault::FailListPages => self.0.fail_list_pages.store(true, Ordering::SeqCst),
        }
        Ok(())
    }

    async fn clear(&self, fault: Fault) -> Result<(), Error> {
        if fault == Fault::FailListPages {
            self.0.fail_list_pages.store(false, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// A command's events as a session reads them, with the streaming mutants' bugs.
struct Events {
    /// The command's channel.
    receiver: mpsc::UnboundedReceiver<ExecEvent>,
    /// The mutant's bug.
    bug: Option<Bug>,
    /// Events ready to yield.
    ready: VecDeque<ExecEvent>,
    /// Events held back by a buffering bug.
    held: Vec<ExecEvent>,
    /// Output bytes seen so far.
    seen: usize,
    /// Whether the stream has ended.
    done: bool,
}

impl Events {
    /// Takes in one event from the command, as the mutant would.
    fn take(&mut self, event: ExecEvent) {
        let event = match (self.bug, event) {
            (Some(Bug::StreamStderrAsStdout), ExecEvent::Stderr(b)) => ExecEvent::Stdout(b),
            (Some(Bug::StreamExitAlwaysZero), ExecEvent::Exit(_)) => ExecEvent::Exit(0),
            (_, event) => event,
        };
        let is_exit = matches!(event, ExecEvent::Exit(_));
        if let ExecEvent::Stdout(b) | ExecEvent::Stderr(b) = &event {
            self.seen += b.len();
            if self.bug == Some(Bug::StreamDropsChunksWhenFull) && self.seen > CUT {
                return;
            }
        }
        match self.bug {
            Some(Bug::StreamBuffersUntilExit) if !is_exit => self.held.push(event),
            Some(Bug::StreamDelaysStderr) if matches!(event, ExecEvent::Stderr(_)) => {
                self.held.push(event);
            }
            Some(Bug::StreamExitBeforeLastOutput) if !is_exit => {
                self.ready.extend(self.held.drain(..));
                self.held.push(event);
            }
            Some(Bug::StreamExitBeforeLastOutput) => {
                self.held.clear();
                self.ready.push_back(event);
            }
            _ if is_exit => {
                self.ready.extend(self.held.drain(..));
                self.ready.push_back(event);
            }
            _ => self.ready.push_back(event),
        }
    }
}

impl Stream for Events {
    type Item = Result<ExecEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(event) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match this.receiver.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(event)) => this.take(event),
                Poll::Ready(None) => {
                    this.done = true;
                    if this.bug == Some(Bug::StreamSynthesisesExit) {
                        this.ready.push_back(ExecEvent::Exit(0));
                    }
                }
            }
        }
    }
}

/// The provider's side of streamed stdin, with the stdin mutants' bugs.
struct Sink {
    /// The command's input channel, until closed.
    sender: Option<mpsc::UnboundedSender<Bytes>>,
    /// The provider, to leak senders into.
    inner: Arc<Inner>,
    /// A chunk held back by the reordering mutant.
    pending: Option<Bytes>,
    /// Chunks held back by the buffering mutant.
    buffered: Vec<Bytes>,
    /// Whether close was called.
    closed: bool,
}

impl Sink {
    /// Sends a chunk down the channel.
    fn forward(&self, data: Bytes) -> Result<(), Error> {
        match &self.sender {
            Some(sender) => sender
                .send(data)
                .map_err(|_| Error::invalid_state("the command has exited")),
            None => Err(Error::invalid_state("stdin is closed")),
        }
    }

    /// Keeps the sender alive forever, so that end of input never comes.
    fn leak(&mut self) {
        if let (Some(sender), Ok(mut leaked)) = (self.sender.take(), self.inner.leaked.lock()) {
            leaked.push(sender);
        }
    }
}

#[async_trait]
impl StdinSink for Sink {
    async fn send(&mut self, data: Bytes) -> Result<(), Error> {
        match self.inner.bug {
            Some(Bug::StreamedStdinBufferedUntilClose) => {
                self.buffered.push(data);
                Ok(())
            }
            Some(Bug::StreamedStdinReordered) => match self.pending.take() {
                None => {
                    self.pending = Some(data);
                    Ok(())
                }
                Some(earlier) => {
                    self.forward(data)?;
                    self.forward(earlier)
                }
            },
            _ => self.forward(data),
        }
    }

    async fn close(&mut self) -> Result<(), Error> {
        self.closed = true;
        if let Some(pending) = self.pending.take() {
            self.forward(pending)?;
        }
        for chunk in std::mem::take(&mut self.buffered) {
            self.forward(chunk)?;
        }
        if self.inner.bug == Some(Bug::StdinEndNeverDelivered) {
            self.leak();
        }
        self.sender = None;
        Ok(())
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let leaks = matches!(
            self.inner.bug,
            Some(Bug::StdinEndNeverDelivered | Bug::StdinDropDoesNotClose)
        );
        if leaks && !self.closed {
            self.leak();
        }
    }
}

#[async_trait]
impl Provider for ReferenceProvider {
    async fn info(&self) -> Result<ProviderInfo, Error> {
        let calls = self.inner.info_calls.fetch_add(1, Ordering::Relaxed);
        let mut templates: Vec<Template> = TEMPLATES.into_iter().map(Template::new).collect();
        if self.has(Bug::InfoUnstable) && calls % 2 == 1 {
            templates.reverse();
        }
        Ok(ProviderInfo {
            name: "reference".to_owned(),
            capabilities: self.inner.capabilities.clone(),
            templates,
            accepts_unlisted_templates: false,
            limits: Limits {
                max_read_bytes: Some(MAX_READ),
                max_write_bytes: Some(MAX_WRITE),
                max_sandboxes: None,
            },
        })
    }

    async fn health(&self) -> Result<Health, Error> {
        if self.has(Bug::HealthUnhealthy) {
            return Ok(Health::unhealthy("the health probe got no answer"));
        }
        Ok(Health::healthy())
    }

    async fn create(&self, request: CreateRequest) -> Result<Sandbox, Error> {
        self.validate_create(&request)?;
        let fs = {
            let mut state = self.swept()?;
            let fs = self.starting_fs(&state, request.template.as_deref())?;
            if state.sandboxes.contains_key(&request.id) && !self.has(Bug::CreateRaces) {
                return self.adopt(&mut state, &request);
            }
            fs
        };
        let sb = self.new_sandbox(&request, fs).await?;
        let record = sb.record.clone();
        if self.has(Bug::CreateRaces) {
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.state()?.sandboxes.insert(request.id.clone(), sb);
            return Ok(record);
        }
        let mut state = self.state()?;
        if state.sandboxes.contains_key(&request.id) {
            return self.adopt(&mut state, &request);
        }
        state.sandboxes.insert(request.id.clone(), sb);
        Ok(record)
    }

    async fn get(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let state = self.swept()?;
        match state.sandboxes.get(id) {
            Some(sb) => {
                let mut record = sb.record.clone();
                if self.has(Bug::GetOmitsLabels) {
                    record.labels.clear();
                }
                Ok(record)
            }
            None if self.has(Bug::GetMissingIsInternal) => Err(Error::internal("lookup failed")),
            None => Err(not_found(id)),
        }
    }

    async fn list(&self) -> Result<Vec<Sandbox>, Error> {
        let state = self.swept()?;
        let all: Vec<Sandbox> = state
            .sandboxes
            .values()
            .map(|sb| sb.record.clone())
            .filter(|s| !self.has(Bug::ListOnlyRunning) || s.state == SandboxState::Running)
            .chain(state.ghosts.iter().cloned())
            .collect();
        drop(state);
        let mut listed = Vec::new();
        for (page, chunk) in all.chunks(PAGE_SIZE).enumerate() {
            if page > 0 {
                if self.has(Bug::ListIgnoresContinue) {
                    break;
                }
                if self.inner.fail_list_pages.load(Ordering::SeqCst) {
                    if self.has(Bug::ListSwallowsFailedPage) {
                        break;
                    }
                    return Err(Error::unavailable(
                        "a list page failed; the list is incomplete",
                    ));
                }
            }
            listed.extend_from_slice(chunk);
        }
        Ok(listed)
    }

    async fn delete(&self, id: &SandboxId) -> Result<(), Error> {
        let mut state = self.swept()?;
        state.ghosts.retain(|s| &s.id != id);
        if self.has(Bug::SnapshotDeletedWithSandbox) {
            state.snapshots.retain(|_, data| match data {
                SnapshotData::Copy(_, source) | SnapshotData::Live(source) => source != id,
            });
        }
        if self.has(Bug::DeleteLeavesTombstone) {
            return match state.sandboxes.get_mut(id) {
                Some(sb) => {
                    State::abort(sb);
                    sb.record.state = SandboxState::Deleting;
                    Ok(())
                }
                None => Ok(()),
            };
        }
        match state.sandboxes.remove(id) {
            Some(mut sb) => {
                State::abort(&mut sb);
                Ok(())
            }
            None if self.has(Bug::DeleteErrsOnMissing) => Err(not_found(id)),
            None => Ok(()),
        }
    }

    async fn exec(&self, id: &SandboxId, request: ExecRequest) -> Result<ExecOutput, Error> {
        self.gate(Capability::Exec, "exec")?;
        if matches!(request.stdin, Stdin::Streamed) && self.has(Bug::ExecAcceptsStreamedStdin) {
            let mut request = request;
            request.stdin = Stdin::Empty;
            let (events, _) = self.start_command(id, &request, &self.exec_states())?;
            return self.collect(events).await;
        }
        self.check_exec(id, &request, false)?;
        if self.stdin_refused(&request) {
            if self.has(Bug::StdinHalfWorks) {
                let mut request = request;
                request.stdin = Stdin::Empty;
                if let Ok((events, _)) = self.start_command(id, &request, &self.exec_states()) {
                    let _ = self.collect(events).await;
                }
            }
            return Err(Error::unsupported("stdin"));
        }
        let (events, _) = self.start_command(id, &request, &self.exec_states())?;
        self.collect(events).await
    }

    async fn exec_stream(
        &self,
        id: &SandboxId,
        request: ExecRequest,
    ) -> Result<ExecSession, Error> {
        self.gate(Capability::ExecStream, "exec_stream")?;
        self.check_exec(id, &request, true)?;
        if self.stdin_refused(&request) {
            return Err(Error::unsupported("stdin"));
        }
        let (receiver, sender) = self.start_command(id, &request, &self.exec_states())?;
        let session = ExecSession::new(Events {
            receiver,
            bug: self.inner.bug,
            ready: VecDeque::new(),
            held: Vec::new(),
            seen: 0,
            done: false,
        });
        Ok(match sender {
            Some(sender) => session.with_stdin(Sink {
                sender: Some(sender),
                inner: self.inner.clone(),
                pending: None,
                buffered: Vec::new(),
                closed: false,
            }),
            None => session,
        })
    }

    async fn write_file(&self, id: &SandboxId, path: &str, data: Bytes) -> Result<(), Error> {
        self.gate(Capability::Files, "write_file")?;
        let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
        if len > MAX_WRITE && !self.has(Bug::WriteIgnoresLimit) {
            return Err(Error::invalid_request(format!(
                "{len} bytes is more than max_write_bytes {MAX_WRITE}"
            )));
        }
        let data = if self.has(Bug::FilesLossyUtf8) {
            Bytes::from(String::from_utf8_lossy(&data).into_owned())
        } else {
            data
        };
        let parents = !self.has(Bug::WriteNeedsParents);
        let keep_tail = self.has(Bug::WriteDoesNotTruncate);
        self.with_files(id, path, |fs, path| {
            let mut data = data;
            if keep_tail
                && let Ok(old) = fs.read(path)
                && old.len() > data.len()
            {
                let mut joined = BytesMut::from(&data[..]);
                joined.extend_from_slice(old.get(data.len()..).unwrap_or_default());
                data = joined.freeze();
            }
            fs.write(path, data, parents).map_err(Self::path_error)
        })
    }

    async fn read_file(&self, id: &SandboxId, path: &str, max_bytes: u64) -> Result<Bytes, Error> {
        self.gate(Capability::Files, "read_file")?;
        let cap = if self.has(Bug::ReadIgnoresProviderLimit) {
            max_bytes
        } else {
            max_bytes.min(MAX_READ)
        };
        let ignore_cap = self.has(Bug::ReadIgnoresCap);
        let missing_empty = self.has(Bug::ReadMissingIsEmpty);
        let dir_empty = self.has(Bug::ReadDirectoryIsEmpty);
        self.with_files(id, path, |fs, path| match fs.read(path) {
            Ok(data) => {
                let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
                if len > cap && !ignore_cap {
                    return Err(Error::invalid_request(format!(
                        "{path} has {len} bytes, more than the cap of {cap}"
                    )));
                }
                Ok(data)
            }
            Err(PathError::NotFound(_)) if missing_empty => Ok(Bytes::new()),
            Err(PathError::IsDir(_)) if dir_empty => Ok(Bytes::new()),
            Err(error) => Err(Self::path_error(error)),
        })
    }

    async fn list_dir(&self, id: &SandboxId, path: &str) -> Result<Vec<FileInfo>, Error> {
        self.gate(Capability::Files, "list_dir")?;
        let reverse = self.has(Bug::ListDirUnsorted);
        self.with_files(id, path, |fs, path| {
            let mut entries = fs.list(path).map_err(Self::path_error)?;
            if reverse {
                entries.reverse();
            }
            Ok(entries)
        })
    }

    async fn stat(&self, id: &SandboxId, path: &str) -> Result<FileInfo, Error> {
        self.gate(Capability::Files, "stat")?;
        let as_file = self.has(Bug::StatReportsKindFile);
        self.with_files(id, path, |fs, path| {
            let mut info = fs.stat(path).map_err(Self::path_error)?;
            if as_file {
                info.kind = FileKind::File;
            }
            Ok(info)
        })
    }

    async fn mkdir(&self, id: &SandboxId, path: &str) -> Result<(), Error> {
        self.gate(Capability::Files, "mkdir")?;
        let fail_existing = self.has(Bug::MkdirExistingFails);
        self.with_files(id, path, |fs, path| {
            if fail_existing && fs.get(path).is_some() {
                return Err(Error::invalid_request(format!("{path} exists")));
            }
            fs.mkdir_p(path).map_err(|error| match error {
                PathError::NotDir(_) => Error::invalid_request(error.to_string()),
                other => Self::path_error(other),
            })
        })
    }

    async fn stop(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        if self.has(Bug::StopUnknownIsInvalidState) && !self.state()?.sandboxes.contains_key(id) {
            return Err(Error::invalid_state(format!("sandbox {id} is not running")));
        }
        if let Err(error) = self.gate(Capability::LifecycleStopStart, "stop") {
            if self.has(Bug::StopHalfWorks) {
                let _ = self.do_stop(id);
            }
            return Err(error);
        }
        self.do_stop(id)
    }

    async fn start(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.gate(Capability::LifecycleStopStart, "start")?;
        let mut state = self.swept()?;
        let sb = state.sandboxes.get_mut(id).ok_or_else(|| not_found(id))?;
        match sb.record.state {
            SandboxState::Running => Ok(sb.record.clone()),
            SandboxState::Stopped => {
                if self.has(Bug::StartForgetsToRestart) {
                    let mut record = sb.record.clone();
                    record.state = SandboxState::Running;
                    return Ok(record);
                }
                sb.record.state = SandboxState::Running;
                Ok(sb.record.clone())
            }
            other => Err(Error::invalid_state(format!("sandbox {id} is {other}"))),
        }
    }

    async fn pause(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.gate(Capability::LifecyclePauseResume, "pause")?;
        let mut state = self.swept()?;
        let sb = state.sandboxes.get_mut(id).ok_or_else(|| not_found(id))?;
        match sb.record.state {
            SandboxState::Paused if !self.has(Bug::PauseTwiceFails) => Ok(sb.record.clone()),
            SandboxState::Running => {
                sb.record.state = SandboxState::Paused;
                Ok(sb.record.clone())
            }
            other => Err(Error::invalid_state(format!("sandbox {id} is {other}"))),
        }
    }

    async fn resume(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.gate(Capability::LifecyclePauseResume, "resume")?;
        let mut state = self.swept()?;
        let sb = state.sandboxes.get_mut(id).ok_or_else(|| not_found(id))?;
        match sb.record.state {
            SandboxState::Running => Ok(sb.record.clone()),
            SandboxState::Paused => {
                if self.has(Bug::ResumeLosesFiles) {
                    sb.fs = Fs::fresh(VOLUME_PATH);
                }
                sb.record.state = SandboxState::Running;
                Ok(sb.record.clone())
            }
            other => Err(Error::invalid_state(format!("sandbox {id} is {other}"))),
        }
    }

    async fn snapshot(&self, id: &SandboxId, kind: SnapshotKind) -> Result<Snapshot, Error> {
        self.gate(kind.capability(), "snapshot")?;
        self.take_snapshot(id, kind)
    }

    async fn fork(&self, source: &SandboxId, id: SandboxId) -> Result<Sandbox, Error> {
        if let Err(error) = self.gate(Capability::Fork, "fork") {
            if self.has(Bug::ForkHalfWorks) {
                let _ = self.make_fork(source, id).await;
            }
            return Err(error);
        }
        self.make_fork(source, id).await
    }

    async fn expose_port(&self, id: &SandboxId, port: u16) -> Result<String, Error> {
        self.gate(Capability::PortsExpose, "expose_port")?;
        if port == 0 && !self.has(Bug::PortZeroAccepted) {
            return Err(Error::invalid_request("port 0 cannot be exposed"));
        }
        let mut state = self.swept()?;
        if !state.sandboxes.contains_key(id) {
            return Err(not_found(id));
        }
        if self.has(Bug::PortIgnored) {
            return Ok(format!("http://{id}.reference.invalid"));
        }
        if self.has(Bug::PortUrlNotStable) {
            state.next_ref += 1;
            return Ok(format!(
                "http://{id}.reference.invalid:{port}/?n={}",
                state.next_ref
            ));
        }
        Ok(format!("http://{id}.reference.invalid:{port}"))
    }

    async fn set_ttl(&self, id: &SandboxId, ttl: Option<Duration>) -> Result<Sandbox, Error> {
        self.gate(Capability::Ttl, "set_ttl")?;
        if ttl == Some(Duration::ZERO) && !self.has(Bug::ZeroTtlAccepted) {
            return Err(Error::invalid_request("ttl must be positive"));
        }
        let mut state = self.swept()?;
        let sb = state.sandboxes.get_mut(id).ok_or_else(|| not_found(id))?;
        let expires_at = ttl.map(|ttl| self.system_now() + ttl);
        let backstop = ttl.map(|ttl| self.instant_now() + ttl);
        if self.has(Bug::SetTtlNotSaved) {
            let mut record = sb.record.clone();
            record.expires_at = expires_at;
            return Ok(record);
        }
        if ttl.is_none() && self.has(Bug::SetTtlNoneIgnored) {
            return Ok(sb.record.clone());
        }
        sb.record.expires_at = expires_at;
        if !(self.has(Bug::TtlNotMoved) && sb.backstop.is_some()) {
            sb.backstop = backstop;
        }
        Ok(sb.record.clone())
    }
}

impl ReferenceProvider {
    /// Returns the existing sandbox for a second create of its id.
    fn adopt(&self, state: &mut State, request: &CreateRequest) -> Result<Sandbox, Error> {
        let Some(sb) = state.sandboxes.get_mut(&request.id) else {
            return Err(Error::internal("the sandbox vanished while adopting"));
        };
        match sb.record.state {
            SandboxState::Deleting => {
                return Err(Error::conflict(format!(
                    "sandbox {} is being deleted",
                    request.id
                )));
            }
            SandboxState::Stopped if self.has(Bug::CreateRestartsStopped) => {
                sb.record.state = SandboxState::Running;
            }
            _ => {}
        }
        if self.has(Bug::CreateDuplicates) {
            let mut ghost = sb.record.clone();
            state.next_ref += 1;
            ghost.provider_ref = format!("ref-dup-{}", state.next_ref);
            ghost.labels = request.labels.clone();
            state.ghosts.push(ghost.clone());
            return Ok(ghost);
        }
        Ok(sb.record.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn stop_keeps_only_the_volume() {
        runtime().block_on(async {
            let provider = ReferenceProvider::new();
            let id = SandboxId::new("sb-1").unwrap();
            provider
                .create(CreateRequest::new(id.clone()))
                .await
                .unwrap();
            provider
                .write_file(&id, "/workspace/a", Bytes::from_static(b"kept"))
                .await
                .unwrap();
            provider
                .write_file(&id, "/tmp/b", Bytes::from_static(b"lost"))
                .await
                .unwrap();
            provider.stop(&id).await.unwrap();
            provider.start(&id).await.unwrap();
            assert_eq!(
                provider.read_file(&id, "/workspace/a", 10).await.unwrap(),
                "kept"
            );
            assert!(
                provider
                    .read_file(&id, "/tmp/b", 10)
                    .await
                    .unwrap_err()
                    .is_not_found()
            );
        });
    }

    #[test]
    fn exec_in_a_sandbox_sees_create_env_and_files() {
        runtime().block_on(async {
            let provider = ReferenceProvider::new();
            let id = SandboxId::new("sb-2").unwrap();
            provider
                .create(CreateRequest::new(id.clone()).with_env("GREETING", "hi"))
                .await
                .unwrap();
            let output = provider
                .exec(
                    &id,
                    ExecRequest::new(["sh", "-c", "printf \"$GREETING\" > /tmp/g; cat /tmp/g"]),
                )
                .await
                .unwrap();
            assert_eq!(output.stdout, "hi");
            assert_eq!(provider.read_file(&id, "/tmp/g", 10).await.unwrap(), "hi");
        });
    }

    #[test]
    fn list_fails_when_a_later_page_fails() {
        runtime().block_on(async {
            let provider = ReferenceProvider::new();
            for n in 0..(PAGE_SIZE + 1) {
                let id = SandboxId::new(format!("sb-{n}")).unwrap();
                provider.create(CreateRequest::new(id)).await.unwrap();
            }
            provider
                .faults()
                .inject(Fault::FailListPages)
                .await
                .unwrap();
            assert!(provider.list().await.unwrap_err().is_unavailable());
            provider.faults().clear(Fault::FailListPages).await.unwrap();
            assert_eq!(provider.list().await.unwrap().len(), PAGE_SIZE + 1);
        });
    }

    #[test]
    fn undeclared_capability_answers_unsupported() {
        runtime().block_on(async {
            let provider = ReferenceProvider::with_capabilities(Capabilities::new());
            let id = SandboxId::new("sb-3").unwrap();
            provider
                .create(CreateRequest::new(id.clone()))
                .await
                .unwrap();
            assert!(
                provider
                    .exec(&id, ExecRequest::new(["true"]))
                    .await
                    .unwrap_err()
                    .is_unsupported()
            );
            assert!(provider.stop(&id).await.unwrap_err().is_unsupported());
        });
    }
}
