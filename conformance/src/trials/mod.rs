//! The rules the suite checks: one trial per normative rule of the contract, grouped by
//! capability, and the [`TrialScope`] every trial runs in.

mod coherence;
mod core;
mod exec;
mod files;
mod lifecycle;
mod misc;
mod ports_ttl;
mod snapshots;
mod stdin;
mod stream;

use std::fmt::{self, Write as _};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use sandbox_contract::{
    Capability, CreateRequest, Error, ErrorCode, ExecEvent, ExecOutput, ExecRequest, ExecSession,
    Provider, ProviderInfo, Sandbox, SandboxId,
};

use crate::fixtures::{Fault, Fixtures};

/// Why a trial failed: a sentence for the person reading the report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Failure(pub(crate) String);

impl Failure {
    /// Builds a failure with `message`.
    pub(crate) fn new(message: impl Into<String>) -> Failure {
        Failure(message.into())
    }
}

/// Fails the trial with a formatted message.
macro_rules! fail {
    ($($arg:tt)*) => {
        return Err($crate::trials::Failure::new(format!($($arg)*)))
    };
}

/// Fails the trial with a formatted message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            $crate::trials::fail!($($arg)*);
        }
    };
}

pub(crate) use {ensure, fail};

/// What a trial's body returns.
pub(crate) type TrialResult = Result<(), Failure>;

/// A trial's body, boxed.
pub(crate) type TrialFuture = Pin<Box<dyn Future<Output = TrialResult> + Send>>;

/// The row of the capability table a rule belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// Identity, idempotency, get, list, delete, info and health: what every provider does.
    Core,
    /// Templates listed by `info` and refused when unknown.
    Templates,
    /// Compute resources in create requests.
    Resources,
    /// Many sandboxes and commands at once.
    Concurrency,
    /// The rules of one capability.
    Capability(Capability),
}

impl Group {
    /// Returns the group's name, the first part of a trial name (`exec.stream`, `core`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Group::Core => "core",
            Group::Templates => "templates",
            Group::Resources => "resources",
            Group::Concurrency => "concurrency",
            Group::Capability(capability) => capability.as_str(),
        }
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a trial checks a promise or the refusal of an undeclared capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TrialKind {
    /// Checks a rule of a declared capability (or of the core contract).
    Promise,
    /// Checks that an undeclared capability answers `unsupported_operation` and does nothing.
    Coherence,
}

impl TrialKind {
    /// Returns `promise` or `coherence`.
    pub const fn as_str(self) -> &'static str {
        match self {
            TrialKind::Promise => "promise",
            TrialKind::Coherence => "coherence",
        }
    }
}

/// Decides, from what the provider says and the fixtures, why a rule cannot run (if it cannot).
type Gate = fn(&ProviderInfo, &Fixtures) -> Option<String>;

/// One normative rule and the trial that checks it.
pub(crate) struct Rule {
    /// Its row in the capability table.
    pub(crate) group: Group,
    /// Its name within the group.
    pub(crate) name: &'static str,
    /// Promise or coherence.
    pub(crate) kind: TrialKind,
    /// Capabilities besides the group's that must be declared for it to run.
    pub(crate) requires: &'static [Capability],
    /// Further table rows it stands behind.
    pub(crate) also: &'static [Capability],
    /// A fault it injects; it then runs alone in its pool.
    pub(crate) fault: Option<Fault>,
    /// Whether it reads what every trial's sandboxes make (it lists the pool), and so runs
    /// alone: other trials' sandboxes coming and going at once would change what it sees from
    /// run to run, and a recorded run could not be replayed.
    pub(crate) alone: bool,
    /// Whether it spends most of its time waiting out the provider's timers (the TTL
    /// backstop). When the fixtures give a [`clock`](Fixtures::clock) it moves that clock
    /// instead, and so runs alone after every other trial (a move would make other trials'
    /// timers jump); otherwise it is started early, so that its wait overlaps the other
    /// trials instead of trailing after them.
    pub(crate) waits: bool,
    /// Other conditions on the provider and fixtures.
    pub(crate) gate: Gate,
    /// The body.
    pub(crate) run: fn(TrialScope) -> TrialFuture,
}

impl Rule {
    /// Builds a rule with no extra requirement.
    fn new(
        kind: TrialKind,
        group: Group,
        name: &'static str,
        run: fn(TrialScope) -> TrialFuture,
    ) -> Rule {
        Rule {
            group,
            name,
            kind,
            requires: &[],
            also: &[],
            fault: None,
            alone: false,
            waits: false,
            gate: |_, _| None,
            run,
        }
    }

    /// Adds capabilities that must be declared too.
    fn requires(mut self, requires: &'static [Capability]) -> Rule {
        self.requires = requires;
        self
    }

    /// Adds table rows this rule stands behind.
    fn also(mut self, also: &'static [Capability]) -> Rule {
        self.also = also;
        self
    }

    /// Marks the rule as injecting `fault`.
    fn fault(mut self, fault: Fault) -> Rule {
        self.fault = Some(fault);
        self
    }

    /// Marks the rule as reading the whole pool (see [`Rule::alone`]).
    fn alone(mut self) -> Rule {
        self.alone = true;
        self
    }

    /// Marks the rule as waiting out the provider's timers (see [`Rule::waits`]).
    fn waits(mut self) -> Rule {
        self.waits = true;
        self
    }

    /// Whether it runs alone in its pool: it injects a fault or lists the pool.
    pub(crate) fn runs_alone(&self) -> bool {
        self.fault.is_some() || self.alone
    }

    /// Adds a condition on the provider and fixtures.
    fn gate(mut self, gate: Gate) -> Rule {
        self.gate = gate;
        self
    }

    /// Returns `group::name`.
    pub(crate) fn full_name(&self) -> String {
        format!("{}::{}", self.group, self.name)
    }

    /// Returns why the rule does not run against this provider, or `None` when it runs.
    pub(crate) fn skip_reason(&self, info: &ProviderInfo, fixtures: &Fixtures) -> Option<String> {
        let declared = |c: Capability| info.capabilities.contains(c);
        if let Group::Capability(capability) = self.group {
            match self.kind {
                TrialKind::Promise if !declared(capability) => {
                    let coherent = catalog()
                        .iter()
                        .any(|rule| rule.kind == TrialKind::Coherence && rule.group == self.group);
                    return Some(if coherent {
                        format!(
                            "capability {capability} not declared; coherence trial \
                             {capability}::undeclared_answers_unsupported runs instead"
                        )
                    } else {
                        format!("capability {capability} not declared")
                    });
                }
                TrialKind::Coherence if declared(capability) => {
                    return Some(format!(
                        "capability {capability} declared; its promise trials run instead"
                    ));
                }
                _ => {}
            }
        }
        if self.kind == TrialKind::Promise
            && let Some(missing) = self.requires.iter().find(|c| !declared(**c))
        {
            return Some(format!("needs capability {missing}, which is not declared"));
        }
        if let Some(fault) = self.fault {
            match &fixtures.faults {
                None => {
                    return Some(format!(
                        "needs the fault {}; the fixtures give no fault switches",
                        fault.as_str()
                    ));
                }
                Some(faults) if !faults.supports(fault) => {
                    return Some(format!(
                        "needs the fault {}, which this backend cannot inject",
                        fault.as_str()
                    ));
                }
                Some(_) => {}
            }
        }
        (self.gate)(info, fixtures)
    }
}

/// Builds a promise rule from `module::function`, named after the function.
macro_rules! promise {
    ($group:expr, $module:ident :: $name:ident) => {
        Rule::new(TrialKind::Promise, $group, stringify!($name), |scope| {
            Box::pin($module::$name(scope))
        })
    };
}

/// Builds a coherence rule for a capability.
macro_rules! coherence {
    ($capability:expr, $name:ident) => {
        Rule::new(
            TrialKind::Coherence,
            Group::Capability($capability),
            "undeclared_answers_unsupported",
            |scope| Box::pin(coherence::$name(scope)),
        )
    };
}

/// Returns every rule, in the order trials are listed.
pub(crate) fn catalog() -> Vec<Rule> {
    use Capability as C;
    let core = Group::Core;
    let templates = Group::Templates;
    let resources = Group::Resources;
    let concurrency = Group::Concurrency;
    let exec = Group::Capability(C::Exec);
    let stream = Group::Capability(C::ExecStream);
    let stdin = Group::Capability(C::Stdin);
    let files = Group::Capability(C::Files);
    let stop = Group::Capability(C::LifecycleStopStart);
    let pause = Group::Capability(C::LifecyclePauseResume);
    let disk = Group::Capability(C::SnapshotsDisk);
    let memory = Group::Capability(C::SnapshotsMemory);
    let fork = Group::Capability(C::Fork);
    let ports = Group::Capability(C::PortsExpose);
    let ttl = Group::Capability(C::Ttl);
    vec![
        promise!(core, core::info_is_the_same_on_every_call),
        promise!(core, core::health_reports_healthy),
        promise!(core, core::create_returns_the_sandbox_running_as_requested),
        promise!(core, core::create_adopts_an_existing_id).alone(),
        promise!(core, core::concurrent_creates_of_one_id_make_one_sandbox).alone(),
        promise!(
            core,
            core::create_refuses_a_malformed_request_leaving_nothing
        ),
        promise!(core, core::get_returns_what_create_returned),
        promise!(core, core::get_of_an_unknown_id_is_not_found),
        promise!(core, core::get_after_delete_is_not_found),
        promise!(core, core::delete_tolerates_a_sandbox_that_is_gone),
        promise!(core, core::list_includes_every_sandbox_once).alone(),
        promise!(core, core::list_fails_rather_than_returning_part).fault(Fault::FailListPages),
        promise!(
            core,
            core::every_operation_on_an_unknown_sandbox_is_not_found
        ),
        promise!(core, core::errors_do_not_repeat_env_values),
        promise!(templates, misc::listed_templates_are_recorded).gate(|info, _| {
            info.templates
                .is_empty()
                .then(|| "the provider lists no templates".to_owned())
        }),
        promise!(
            templates,
            misc::unknown_template_is_invalid_request_leaving_nothing
        )
        .gate(|info, fixtures| {
            (info.accepts_unlisted_templates && fixtures.missing_image.is_none()).then(|| {
                "the provider accepts unlisted templates and the fixtures name no missing \
                     image"
                    .to_owned()
            })
        }),
        promise!(resources, misc::requested_resources_never_fail_create),
        promise!(resources, misc::zero_resource_is_invalid_request),
        promise!(concurrency, misc::many_sandboxes_at_once).alone(),
        promise!(concurrency, misc::many_execs_at_once_keep_their_output).requires(&[C::Exec]),
        promise!(exec, exec::nonzero_exit_is_data),
        promise!(exec, exec::argv_reaches_the_program_verbatim),
        promise!(exec, exec::request_env_is_seen),
        promise!(exec, exec::create_env_is_seen_and_request_env_overrides_it),
        promise!(exec, exec::cwd_is_used),
        promise!(exec, exec::missing_cwd_never_runs_elsewhere),
        promise!(exec, exec::timeout_exits_124_keeping_earlier_output),
        promise!(exec, exec::missing_program_exits_127),
        promise!(exec, exec::non_executable_program_exits_126),
        promise!(exec, exec::large_output_is_complete),
        promise!(exec, exec::binary_output_is_byte_exact),
        promise!(exec, exec::stdout_and_stderr_are_separate),
        promise!(
            exec,
            exec::malformed_request_is_invalid_request_before_not_found
        ),
        promise!(exec, exec::streamed_stdin_is_invalid_request),
        promise!(exec, exec::dropped_connection_is_unavailable).fault(Fault::BreakExecConnections),
        coherence!(C::Exec, exec),
        promise!(stream, stream::stdout_and_stderr_come_as_separate_events),
        promise!(stream, stream::output_arrives_while_the_command_runs),
        promise!(stream, stream::order_is_kept_within_and_across_streams),
        promise!(stream, stream::exactly_one_exit_after_all_output),
        promise!(stream, stream::exit_codes_match_exec),
        promise!(stream, stream::timeout_exits_124),
        promise!(stream, stream::large_output_arrives_complete),
        promise!(stream, stream::broken_stream_is_an_error_not_an_exit)
            .fault(Fault::BreakExecConnections),
        coherence!(C::ExecStream, exec_stream),
        promise!(stdin, stdin::bytes_reach_the_command_then_end_of_input).requires(&[C::Exec]),
        promise!(stdin, stdin::large_stdin_arrives_complete).requires(&[C::Exec]),
        promise!(stdin, stdin::streamed_chunks_arrive_in_order).requires(&[C::ExecStream]),
        promise!(stdin, stdin::streamed_input_is_not_held_until_close).requires(&[C::ExecStream]),
        promise!(stdin, stdin::closing_streamed_stdin_delivers_end_of_input)
            .requires(&[C::ExecStream]),
        promise!(stdin, stdin::dropping_the_handle_delivers_end_of_input)
            .requires(&[C::ExecStream]),
        promise!(
            stdin,
            stdin::one_session_answers_each_command_before_the_next
        )
        .requires(&[C::ExecStream]),
        coherence!(C::Stdin, stdin),
        promise!(files, files::binary_data_round_trips),
        promise!(files, files::write_creates_missing_parents),
        promise!(files, files::write_replaces_the_whole_content),
        promise!(files, files::read_cap_refuses_larger_file),
        promise!(files, files::provider_read_limit_applies).gate(|info, fixtures| {
            match info.limits.max_read_bytes {
                None => Some("the provider declares no max_read_bytes".to_owned()),
                Some(limit) if limit >= fixtures.max_limit_probe => Some(format!(
                    "max_read_bytes {limit} is not below the fixtures' max_limit_probe {}",
                    fixtures.max_limit_probe
                )),
                Some(limit) if info.limits.max_write_bytes.is_some_and(|w| w <= limit) => Some(
                    "max_write_bytes does not allow a file larger than max_read_bytes".to_owned(),
                ),
                Some(_) => None,
            }
        }),
        promise!(files, files::write_limit_refuses_larger_content).gate(
            |info, fixtures| match info.limits.max_write_bytes {
                None => Some("the provider declares no max_write_bytes".to_owned()),
                Some(limit) if limit >= fixtures.max_limit_probe => Some(format!(
                    "max_write_bytes {limit} is not below the fixtures' max_limit_probe {}",
                    fixtures.max_limit_probe
                )),
                Some(_) => None,
            },
        ),
        promise!(files, files::stat_describes_files_and_directories),
        promise!(files, files::list_dir_is_sorted_with_joined_paths),
        promise!(files, files::missing_paths_are_not_found),
        promise!(files, files::mkdir_makes_parents_and_is_idempotent),
        promise!(files, files::wrong_kind_is_invalid_request),
        promise!(files, files::bad_paths_are_invalid_request),
        promise!(files, files::files_and_exec_see_the_same_filesystem).requires(&[C::Exec]),
        coherence!(C::Files, files),
        promise!(stop, lifecycle::stop_returns_stopped_and_get_agrees),
        promise!(stop, lifecycle::start_runs_the_sandbox_again),
        promise!(stop, lifecycle::exec_while_stopped_is_invalid_state).requires(&[C::Exec]),
        promise!(stop, lifecycle::files_while_stopped_are_invalid_state).requires(&[C::Files]),
        promise!(stop, lifecycle::stop_and_start_are_idempotent),
        promise!(stop, lifecycle::volume_survives_only_under_volume_path)
            .requires(&[C::PersistenceDisk, C::Files])
            .also(&[C::PersistenceDisk])
            .gate(|_, fixtures| {
                fixtures
                    .volume_path
                    .is_none()
                    .then(|| "the fixtures give no volume_path".to_owned())
            }),
        promise!(stop, lifecycle::stopped_sandbox_is_listed).alone(),
        promise!(stop, lifecycle::create_returns_a_stopped_sandbox_as_it_is),
        coherence!(C::LifecycleStopStart, stop_start),
        promise!(
            pause,
            lifecycle::pause_returns_paused_and_exec_is_invalid_state
        ),
        promise!(pause, lifecycle::resume_keeps_every_file).requires(&[C::Files]),
        promise!(pause, lifecycle::pause_and_resume_are_idempotent),
        coherence!(C::LifecyclePauseResume, pause_resume),
        promise!(disk, snapshots::snapshot_starts_sandboxes_with_its_files).requires(&[C::Files]),
        promise!(disk, snapshots::snapshot_is_not_changed_by_later_writes).requires(&[C::Files]),
        promise!(disk, snapshots::snapshot_outlives_its_sandbox).requires(&[C::Files]),
        coherence!(C::SnapshotsDisk, snapshots_disk),
        promise!(
            memory,
            snapshots::memory_snapshot_keeps_files_and_says_memory
        )
        .requires(&[C::Files]),
        coherence!(C::SnapshotsMemory, snapshots_memory),
        promise!(fork, snapshots::copy_has_the_files_and_then_diverges).requires(&[C::Files]),
        promise!(fork, snapshots::fork_is_idempotent_on_the_new_id).alone(),
        promise!(fork, snapshots::copy_keeps_labels_and_template_but_no_ttl),
        coherence!(C::Fork, fork),
        promise!(ports, ports_ttl::same_port_gives_the_same_url),
        promise!(ports, ports_ttl::different_ports_give_different_urls),
        promise!(ports, ports_ttl::port_zero_is_invalid_request),
        coherence!(C::PortsExpose, ports),
        promise!(ttl, ports_ttl::create_sets_expires_at_from_ttl),
        promise!(ttl, ports_ttl::set_ttl_moves_the_reported_expiry),
        promise!(ttl, ports_ttl::set_ttl_none_clears_the_expiry),
        promise!(ttl, ports_ttl::zero_ttl_is_invalid_request),
        promise!(ttl, ports_ttl::backstop_removes_the_sandbox)
            .gate(backstop_gate)
            .waits(),
        promise!(ttl, ports_ttl::moved_expiry_is_what_the_backstop_uses)
            .gate(backstop_gate)
            .waits(),
        coherence!(C::Ttl, ttl),
    ]
}

/// Skips the trials that wait for the TTL backstop when the fixtures give no wait.
fn backstop_gate(_: &ProviderInfo, fixtures: &Fixtures) -> Option<String> {
    fixtures
        .ttl_backstop_wait
        .is_none()
        .then(|| "the fixtures give no ttl_backstop_wait".to_owned())
}

/// Makes sandbox ids unique within a run and across runs.
#[derive(Debug)]
pub(crate) struct IdSource {
    /// `prefix-token`, where the token differs between runs.
    stem: String,
    /// The next number.
    next: AtomicU64,
}

impl IdSource {
    /// Returns a source of ids starting with `prefix`.
    pub(crate) fn new(prefix: &str) -> IdSource {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = (nanos as u64) ^ (u64::from(std::process::id()) << 20);
        let mut token = String::new();
        let mut value = seed;
        for _ in 0..6 {
            let digit = u32::try_from(value % 36).unwrap_or(0);
            token.push(char::from_digit(digit, 36).unwrap_or('x'));
            value /= 36;
        }
        IdSource {
            stem: format!("{prefix}-{token}"),
            next: AtomicU64::new(1),
        }
    }

    /// Returns the source of trial `number`'s ids, `prefix-token-tNUMBER-N`: a trial's ids
    /// do not depend on which trials started before it, so a run with several test threads
    /// names its sandboxes alike every time (a recorded run replays).
    pub(crate) fn for_trial(&self, number: usize) -> IdSource {
        IdSource {
            stem: format!("{}-t{number}", self.stem),
            next: AtomicU64::new(1),
        }
    }

    /// Returns a fresh id.
    pub(crate) fn next(&self) -> Result<SandboxId, Failure> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}-{n}", self.stem);
        SandboxId::new(id.clone())
            .map_err(|e| Failure::new(format!("the fixtures' id_prefix makes a bad id {id}: {e}")))
    }
}

/// A streamed command's events as the trial saw them.
#[derive(Debug)]
pub(crate) struct Streamed {
    /// The chunks, each with when it arrived.
    pub(crate) chunks: Vec<(Instant, ExecEvent)>,
    /// The terminal item: the exit code or the error, with when it arrived.
    pub(crate) terminal: Result<i32, Error>,
    /// When the terminal item arrived.
    pub(crate) terminal_at: Instant,
}

impl Streamed {
    /// Describes the terminal item for a failure message: `exit N`, or the error as its
    /// Display quotes it (`unavailable: ...`), so that the code can be read from the message.
    pub(crate) fn terminal_text(&self) -> String {
        match &self.terminal {
            Ok(code) => format!("exit {code}"),
            Err(error) => format!("error {error}"),
        }
    }

    /// Returns all stdout bytes.
    pub(crate) fn stdout(&self) -> Vec<u8> {
        self.chunks
            .iter()
            .filter_map(|(_, e)| match e {
                ExecEvent::Stdout(b) => Some(b.as_ref()),
                _ => None,
            })
            .flatten()
            .copied()
            .collect()
    }

    /// Returns all stderr bytes.
    pub(crate) fn stderr(&self) -> Vec<u8> {
        self.chunks
            .iter()
            .filter_map(|(_, e)| match e {
                ExecEvent::Stderr(b) => Some(b.as_ref()),
                _ => None,
            })
            .flatten()
            .copied()
            .collect()
    }
}

/// One trial's view of a pool: the provider, what it declared, the fixtures, and every sandbox
/// the trial made, which the suite deletes when the trial ends (the scope of its sandboxes).
/// Trials call the provider through it, so each call has the pool's timeout and each id is
/// cleaned up.
#[derive(Clone)]
pub(crate) struct TrialScope {
    /// The provider under test.
    pub(crate) p: Arc<dyn Provider>,
    /// What it declared.
    pub(crate) info: Arc<ProviderInfo>,
    /// The pool's fixtures.
    pub(crate) fx: Arc<Fixtures>,
    /// Where ids come from.
    ids: Arc<IdSource>,
    /// Every id this trial handed out, deleted after it.
    created: Arc<Mutex<Vec<SandboxId>>>,
}

impl TrialScope {
    /// Returns the scope of one trial, with no sandbox made yet.
    pub(crate) fn new(
        p: Arc<dyn Provider>,
        info: Arc<ProviderInfo>,
        fx: Arc<Fixtures>,
        ids: Arc<IdSource>,
    ) -> TrialScope {
        TrialScope {
            p,
            info,
            fx,
            ids,
            created: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Returns the ids handed out so far.
    pub(crate) fn created(&self) -> Vec<SandboxId> {
        self.created
            .lock()
            .map(|ids| ids.clone())
            .unwrap_or_default()
    }

    /// Returns whether the provider declares `capability`.
    pub(crate) fn declares(&self, capability: Capability) -> bool {
        self.info.capabilities.contains(capability)
    }

    /// Returns a fresh id, deleted after the trial.
    pub(crate) fn new_id(&self) -> Result<SandboxId, Failure> {
        let id = self.ids.next()?;
        if let Ok(mut created) = self.created.lock() {
            created.push(id.clone());
        }
        Ok(id)
    }

    /// Returns an id that names no sandbox (never created, not deleted afterwards).
    pub(crate) fn unknown_id(&self) -> Result<SandboxId, Failure> {
        self.ids.next()
    }

    /// Returns a create request for `id` from the fixtures' template.
    pub(crate) fn request(&self, id: SandboxId) -> CreateRequest {
        let mut request = CreateRequest::new(id);
        request.template = self.fx.template.clone();
        request
    }

    /// Creates a sandbox with a fresh id and the fixtures' template.
    pub(crate) async fn create(&self) -> Result<Sandbox, Failure> {
        let request = self.request(self.new_id()?);
        self.create_with(request).await
    }

    /// Creates the sandbox `request` asks for, which must succeed.
    pub(crate) async fn create_with(&self, request: CreateRequest) -> Result<Sandbox, Failure> {
        self.ok("create", self.p.create(request)).await
    }

    /// Awaits a provider call within the fixtures' op timeout.
    pub(crate) async fn call<T>(
        &self,
        what: &str,
        call: impl Future<Output = Result<T, Error>>,
    ) -> Result<Result<T, Error>, Failure> {
        tokio::time::timeout(self.fx.op_timeout, call)
            .await
            .map_err(|_| Failure::new(format!("{what} took longer than {:?}", self.fx.op_timeout)))
    }

    /// Awaits a provider call that must succeed.
    pub(crate) async fn ok<T>(
        &self,
        what: &str,
        call: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Failure> {
        self.call(what, call)
            .await?
            .map_err(|e| Failure::new(format!("{what} failed: {e}")))
    }

    /// Awaits a provider call that must fail with `code`; returns the error.
    pub(crate) async fn fails_with<T>(
        &self,
        what: &str,
        code: ErrorCode,
        call: impl Future<Output = Result<T, Error>>,
    ) -> Result<Error, Failure> {
        match self.call(what, call).await? {
            Ok(_) => fail!("{what} succeeded; expected {code}"),
            Err(error) if error.code() == code => Ok(error),
            Err(error) => fail!("{what} answered {error}; expected {code}"),
        }
    }

    /// Runs `request` with exec, which must succeed.
    pub(crate) async fn exec(
        &self,
        id: &SandboxId,
        request: ExecRequest,
    ) -> Result<ExecOutput, Failure> {
        self.ok("exec", self.p.exec(id, request)).await
    }

    /// Runs `sh -c script` with exec.
    pub(crate) async fn sh(&self, id: &SandboxId, script: &str) -> Result<ExecOutput, Failure> {
        self.exec(id, ExecRequest::new(["sh", "-c", script])).await
    }

    /// Starts `request` with exec_stream, which must succeed.
    pub(crate) async fn stream(
        &self,
        id: &SandboxId,
        request: ExecRequest,
    ) -> Result<ExecSession, Failure> {
        self.ok("exec_stream", self.p.exec_stream(id, request))
            .await
    }

    /// Returns a session's next item within the op timeout.
    pub(crate) async fn next_event(
        &self,
        session: &mut ExecSession,
    ) -> Result<Option<Result<ExecEvent, Error>>, Failure> {
        tokio::time::timeout(self.fx.op_timeout, session.next_event())
            .await
            .map_err(|_| {
                Failure::new(format!(
                    "no exec event within {:?} (a command waiting for input that never ends?)",
                    self.fx.op_timeout
                ))
            })
    }

    /// Reads a session to its terminal item.
    pub(crate) async fn drain(&self, session: &mut ExecSession) -> Result<Streamed, Failure> {
        let mut chunks = Vec::new();
        loop {
            match self.next_event(session).await? {
                None => fail!("the session ended without a terminal item"),
                Some(Ok(ExecEvent::Exit(code))) => {
                    return Ok(Streamed {
                        chunks,
                        terminal: Ok(code),
                        terminal_at: Instant::now(),
                    });
                }
                Some(Err(error)) => {
                    return Ok(Streamed {
                        chunks,
                        terminal: Err(error),
                        terminal_at: Instant::now(),
                    });
                }
                Some(Ok(event)) => chunks.push((Instant::now(), event)),
            }
        }
    }

    /// Writes a file, which must succeed.
    pub(crate) async fn write(&self, id: &SandboxId, path: &str, data: &[u8]) -> TrialResult {
        let what = format!("write_file {path}");
        self.ok(
            &what,
            self.p.write_file(id, path, Bytes::copy_from_slice(data)),
        )
        .await
    }

    /// Reads a file without a cap of the suite's own, which must succeed.
    pub(crate) async fn read(&self, id: &SandboxId, path: &str) -> Result<Bytes, Failure> {
        let what = format!("read_file {path}");
        self.ok(&what, self.p.read_file(id, path, u64::MAX)).await
    }

    /// Returns `dir/name` under the fixtures' scratch directory.
    pub(crate) fn scratch(&self, name: &str) -> String {
        format!("{}/{name}", self.fx.scratch_dir.trim_end_matches('/'))
    }

    /// Moves the backend's clock (the fixtures' [`clock`](Fixtures::clock)) forward by `by`.
    /// Only a trial that runs alone may: other trials' timers would jump too.
    pub(crate) async fn advance_clock(&self, by: Duration) -> TrialResult {
        let Some(clock) = &self.fx.clock else {
            fail!("the fixtures give no clock to move");
        };
        self.ok("moving the clock", clock.advance(by)).await
    }

    /// Waits until `get` answers `not_found` for `id`, allowing `Deleting` meanwhile.
    pub(crate) async fn wait_gone(&self, id: &SandboxId, within: Duration) -> TrialResult {
        let deadline = Instant::now() + within;
        let mut pause = FIRST_POLL;
        loop {
            match self.call("get", self.p.get(id)).await? {
                Err(error) if error.is_not_found() => return Ok(()),
                Err(error) => fail!("get of {id} answered {error}; expected not_found"),
                Ok(sandbox) => {
                    if Instant::now() >= deadline {
                        fail!(
                            "get of {id} still answers a sandbox in state {} after {within:?}; \
                             expected not_found",
                            sandbox.state
                        );
                    }
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(poll_interval(within));
        }
    }
}

/// The first pause between polls: a provider that acts at once is seen at once.
const FIRST_POLL: Duration = Duration::from_millis(5);

/// How often to poll while waiting `within`, at most (polls start at [`FIRST_POLL`] and
/// double up to this).
pub(crate) fn poll_interval(within: Duration) -> Duration {
    (within / 50).clamp(Duration::from_millis(5), Duration::from_millis(500))
}

/// Shows bytes for a failure message: escaped, at most 80 of them, with the total length.
pub(crate) fn show(bytes: &[u8]) -> String {
    let mut text = String::from("\"");
    for &byte in bytes.iter().take(80) {
        match byte {
            b'\n' => text.push_str("\\n"),
            b'"' => text.push_str("\\\""),
            b'\\' => text.push_str("\\\\"),
            0x20..=0x7e => text.push(char::from(byte)),
            other => {
                let _ = write!(text, "\\x{other:02x}");
            }
        }
    }
    text.push('"');
    if bytes.len() > 80 {
        let _ = write!(text, "… ({} bytes)", bytes.len());
    }
    text
}

/// Formats a duration as `sleep` takes it (seconds with a fraction).
pub(crate) fn seconds(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trial_names_are_unique() {
        let mut names: Vec<String> = catalog().iter().map(Rule::full_name).collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count);
    }

    #[test]
    fn every_operation_capability_has_a_coherence_trial() {
        let rules = catalog();
        for capability in Capability::ALL {
            let has = rules.iter().any(|rule| {
                rule.kind == TrialKind::Coherence && rule.group == Group::Capability(capability)
            });
            let gates_something =
                !capability.operations().is_empty() || capability == Capability::Stdin;
            assert_eq!(has, gates_something, "{capability}");
        }
    }

    #[test]
    fn ids_are_unique_valid_and_prefixed() {
        let source = IdSource::new("cf");
        let a = source.next().unwrap();
        let b = source.next().unwrap();
        assert_ne!(a, b);
        assert!(a.as_str().starts_with("cf-"), "{a}");
        assert!(IdSource::new("Bad").next().is_err());
    }

    #[test]
    fn each_trial_numbers_its_own_ids() {
        let source = IdSource::new("cf");
        let first = source.for_trial(3).next().unwrap();
        let _ = source.for_trial(4).next().unwrap();
        let again = source.for_trial(3).next().unwrap();
        assert_eq!(
            first, again,
            "trial 3's first id does not depend on trial 4"
        );
        assert!(first.as_str().ends_with("-t3-1"), "{first}");
        assert_ne!(first, source.for_trial(4).next().unwrap());
    }

    #[test]
    fn a_terminal_error_is_described_by_its_code_and_message() {
        let streamed = |terminal| Streamed {
            chunks: Vec::new(),
            terminal,
            terminal_at: Instant::now(),
        };
        assert_eq!(streamed(Ok(3)).terminal_text(), "exit 3");
        let error = Error::unavailable("the exec connection broke");
        assert_eq!(
            streamed(Err(error)).terminal_text(),
            "error unavailable: the exec connection broke"
        );
    }

    #[test]
    fn show_escapes_and_cuts_long_bytes() {
        assert_eq!(show(b"a\n\0"), "\"a\\n\\x00\"");
        assert!(show(&[b'x'; 100]).ends_with("… (100 bytes)"));
    }
}
