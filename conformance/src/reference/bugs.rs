//! The mutants: one realistic bug each, and the trial that must catch it.

use sandbox_contract::{Capabilities, Capability};

/// Declares [`Bug`] and the list of its plain variants once, so the two cannot drift apart.
macro_rules! bugs {
    ($($name:ident),* $(,)?) => {
        /// One bug a mutant of the reference provider has.
        ///
        /// Each variant names a mistake real providers make; [`Bug::caught_by`] names the trial
        /// that must fail because of it. The crate's mutant tests run the whole suite against
        /// every mutant.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(missing_docs, reason = "each variant is described by Bug::describe")]
        pub enum Bug {
            $($name,)*
            /// The capability is not declared, yet its operations work.
            PretendsToOffer(Capability),
        }

        /// Every bug but [`Bug::PretendsToOffer`], in declaration order.
        const PLAIN: &[Bug] = &[$(Bug::$name),*];
    };
}

bugs! {
    InfoUnstable,
    HealthUnhealthy,
    CreateDropsLabels,
    CreateDuplicates,
    CreateRaces,
    CreateSkipsValidation,
    GetOmitsLabels,
    GetMissingIsInternal,
    DeleteLeavesTombstone,
    DeleteErrsOnMissing,
    ListIgnoresContinue,
    ListSwallowsFailedPage,
    StopUnknownIsInvalidState,
    ErrorEchoesRequest,
    TemplateNotRecorded,
    UnknownTemplateUsesDefault,
    DiskResourceRefused,
    ZeroResourcesAccepted,
    ProviderRefCollides,
    ExecOutputCrossTalk,
    ExitAlwaysZero,
    NonzeroExitIsError,
    ArgvJoinedWithSpaces,
    RequestEnvIgnored,
    CreateEnvIgnored,
    CwdIgnored,
    MissingCwdFallsBackToRoot,
    TimeoutIsAnError,
    MissingProgramIsNotFoundError,
    NotExecutableIs127,
    OutputTruncated,
    OutputLossyUtf8,
    StderrMergedIntoStdout,
    ExecChecksSandboxFirst,
    ExecAcceptsStreamedStdin,
    DroppedExecReportsExit,
    StreamStderrAsStdout,
    StreamBuffersUntilExit,
    StreamDelaysStderr,
    StreamExitBeforeLastOutput,
    StreamExitAlwaysZero,
    StreamTimeoutExit137,
    StreamDropsChunksWhenFull,
    StreamSynthesisesExit,
    StdinBytesIgnored,
    StdinTruncated,
    StreamedStdinReordered,
    StreamedStdinBufferedUntilClose,
    StdinEndNeverDelivered,
    StdinDropDoesNotClose,
    ShellWaitsForEndOfInput,
    FilesLossyUtf8,
    WriteNeedsParents,
    WriteDoesNotTruncate,
    ReadIgnoresCap,
    ReadIgnoresProviderLimit,
    WriteIgnoresLimit,
    StatReportsKindFile,
    ListDirUnsorted,
    ReadMissingIsEmpty,
    MkdirExistingFails,
    ReadDirectoryIsEmpty,
    RelativePathsAccepted,
    FilesSeparateFromExec,
    StopOnlyReports,
    StartForgetsToRestart,
    ExecRunsWhileStopped,
    FilesWorkWhileStopped,
    StopTwiceFails,
    StopLosesVolume,
    StopKeepsRootFs,
    ListOnlyRunning,
    CreateRestartsStopped,
    ExecRunsWhilePaused,
    ResumeLosesFiles,
    PauseTwiceFails,
    SnapshotEmpty,
    SnapshotIsLive,
    SnapshotDeletedWithSandbox,
    MemorySnapshotSaysDisk,
    ForkSharesFiles,
    ForkDuplicates,
    ForkCopiesTtl,
    PortUrlNotStable,
    PortIgnored,
    PortZeroAccepted,
    CreateIgnoresTtl,
    SetTtlNotSaved,
    SetTtlNoneIgnored,
    ZeroTtlAccepted,
    BackstopNeverFires,
    TtlNotMoved,
    StdinHalfWorks,
    StopHalfWorks,
    ForkHalfWorks,
}

/// Every capability whose operations a mutant can pretend to offer.
const PRETENDED: [Capability; 11] = [
    Capability::Exec,
    Capability::ExecStream,
    Capability::Files,
    Capability::Stdin,
    Capability::LifecycleStopStart,
    Capability::LifecyclePauseResume,
    Capability::SnapshotsDisk,
    Capability::SnapshotsMemory,
    Capability::Fork,
    Capability::PortsExpose,
    Capability::Ttl,
];

impl Bug {
    /// Returns every bug, one mutant each.
    pub fn all() -> Vec<Bug> {
        let mut all = PLAIN.to_vec();
        all.extend(PRETENDED.into_iter().map(Bug::PretendsToOffer));
        all
    }

    /// Returns the capabilities a mutant with this bug declares: all of them, except the one a
    /// coherence bug is about.
    pub fn declared(self) -> Capabilities {
        let mut declared = Capabilities::from(Capability::ALL);
        match self {
            Bug::PretendsToOffer(capability) => {
                declared.remove(capability);
            }
            Bug::StdinHalfWorks => {
                declared.remove(Capability::Stdin);
            }
            Bug::StopHalfWorks => {
                declared.remove(Capability::LifecycleStopStart);
                declared.remove(Capability::PersistenceDisk);
            }
            Bug::ForkHalfWorks => {
                declared.remove(Capability::Fork);
            }
            _ => {}
        }
        declared
    }

    /// Returns the name of the trial this bug must make fail (for a single pool).
    pub fn caught_by(self) -> String {
        use Bug::*;
        let name = match self {
            InfoUnstable => "core::info_is_the_same_on_every_call",
            HealthUnhealthy => "core::health_reports_healthy",
            CreateDropsLabels => "core::create_returns_the_sandbox_running_as_requested",
            CreateDuplicates => "core::create_adopts_an_existing_id",
            CreateRaces => "core::concurrent_creates_of_one_id_make_one_sandbox",
            CreateSkipsValidation => "core::create_refuses_a_malformed_request_leaving_nothing",
            GetOmitsLabels => "core::get_returns_what_create_returned",
            GetMissingIsInternal => "core::get_of_an_unknown_id_is_not_found",
            DeleteLeavesTombstone => "core::get_after_delete_is_not_found",
            DeleteErrsOnMissing => "core::delete_tolerates_a_sandbox_that_is_gone",
            ListIgnoresContinue => "core::list_includes_every_sandbox_once",
            ListSwallowsFailedPage => "core::list_fails_rather_than_returning_part",
            StopUnknownIsInvalidState => "core::every_operation_on_an_unknown_sandbox_is_not_found",
            ErrorEchoesRequest => "core::errors_do_not_repeat_env_values",
            TemplateNotRecorded => "templates::listed_templates_are_recorded",
            UnknownTemplateUsesDefault => {
                "templates::unknown_template_is_invalid_request_leaving_nothing"
            }
            DiskResourceRefused => "resources::requested_resources_never_fail_create",
            ZeroResourcesAccepted => "resources::zero_resource_is_invalid_request",
            ProviderRefCollides => "concurrency::many_sandboxes_at_once",
            ExecOutputCrossTalk => "concurrency::many_execs_at_once_keep_their_output",
            ExitAlwaysZero | NonzeroExitIsError => "exec::nonzero_exit_is_data",
            ArgvJoinedWithSpaces => "exec::argv_reaches_the_program_verbatim",
            RequestEnvIgnored => "exec::request_env_is_seen",
            CreateEnvIgnored => "exec::create_env_is_seen_and_request_env_overrides_it",
            CwdIgnored => "exec::cwd_is_used",
            MissingCwdFallsBackToRoot => "exec::missing_cwd_never_runs_elsewhere",
            TimeoutIsAnError => "exec::timeout_exits_124_keeping_earlier_output",
            MissingProgramIsNotFoundError => "exec::missing_program_exits_127",
            NotExecutableIs127 => "exec::non_executable_program_exits_126",
            OutputTruncated => "exec::large_output_is_complete",
            OutputLossyUtf8 => "exec::binary_output_is_byte_exact",
            StderrMergedIntoStdout => "exec::stdout_and_stderr_are_separate",
            ExecChecksSandboxFirst => "exec::malformed_request_is_invalid_request_before_not_found",
            ExecAcceptsStreamedStdin => "exec::streamed_stdin_is_invalid_request",
            DroppedExecReportsExit => "exec::dropped_connection_is_unavailable",
            StreamStderrAsStdout => "exec.stream::stdout_and_stderr_come_as_separate_events",
            StreamBuffersUntilExit => "exec.stream::output_arrives_while_the_command_runs",
            StreamDelaysStderr => "exec.stream::order_is_kept_within_and_across_streams",
            StreamExitBeforeLastOutput => "exec.stream::exactly_one_exit_after_all_output",
            StreamExitAlwaysZero => "exec.stream::exit_codes_match_exec",
            StreamTimeoutExit137 => "exec.stream::timeout_exits_124",
            StreamDropsChunksWhenFull => "exec.stream::large_output_arrives_complete",
            StreamSynthesisesExit => "exec.stream::broken_stream_is_an_error_not_an_exit",
            StdinBytesIgnored => "stdin::bytes_reach_the_command_then_end_of_input",
            StdinTruncated => "stdin::large_stdin_arrives_complete",
            StreamedStdinReordered => "stdin::streamed_chunks_arrive_in_order",
            StreamedStdinBufferedUntilClose => "stdin::streamed_input_is_not_held_until_close",
            StdinEndNeverDelivered => "stdin::closing_streamed_stdin_delivers_end_of_input",
            StdinDropDoesNotClose => "stdin::dropping_the_handle_delivers_end_of_input",
            ShellWaitsForEndOfInput => "stdin::one_session_answers_each_command_before_the_next",
            FilesLossyUtf8 => "files::binary_data_round_trips",
            WriteNeedsParents => "files::write_creates_missing_parents",
            WriteDoesNotTruncate => "files::write_replaces_the_whole_content",
            ReadIgnoresCap => "files::read_cap_refuses_larger_file",
            ReadIgnoresProviderLimit => "files::provider_read_limit_applies",
            WriteIgnoresLimit => "files::write_limit_refuses_larger_content",
            StatReportsKindFile => "files::stat_describes_files_and_directories",
            ListDirUnsorted => "files::list_dir_is_sorted_with_joined_paths",
            ReadMissingIsEmpty => "files::missing_paths_are_not_found",
            MkdirExistingFails => "files::mkdir_makes_parents_and_is_idempotent",
            ReadDirectoryIsEmpty => "files::wrong_kind_is_invalid_request",
            RelativePathsAccepted => "files::bad_paths_are_invalid_request",
            FilesSeparateFromExec => "files::files_and_exec_see_the_same_filesystem",
            StopOnlyReports => "lifecycle.stop-start::stop_returns_stopped_and_get_agrees",
            StartForgetsToRestart => "lifecycle.stop-start::start_runs_the_sandbox_again",
            ExecRunsWhileStopped => "lifecycle.stop-start::exec_while_stopped_is_invalid_state",
            FilesWorkWhileStopped => "lifecycle.stop-start::files_while_stopped_are_invalid_state",
            StopTwiceFails => "lifecycle.stop-start::stop_and_start_are_idempotent",
            StopLosesVolume | StopKeepsRootFs => {
                "lifecycle.stop-start::volume_survives_only_under_volume_path"
            }
            ListOnlyRunning => "lifecycle.stop-start::stopped_sandbox_is_listed",
            CreateRestartsStopped => {
                "lifecycle.stop-start::create_returns_a_stopped_sandbox_as_it_is"
            }
            ExecRunsWhilePaused => {
                "lifecycle.pause-resume::pause_returns_paused_and_exec_is_invalid_state"
            }
            ResumeLosesFiles => "lifecycle.pause-resume::resume_keeps_every_file",
            PauseTwiceFails => "lifecycle.pause-resume::pause_and_resume_are_idempotent",
            SnapshotEmpty => "snapshots.disk::snapshot_starts_sandboxes_with_its_files",
            SnapshotIsLive => "snapshots.disk::snapshot_is_not_changed_by_later_writes",
            SnapshotDeletedWithSandbox => "snapshots.disk::snapshot_outlives_its_sandbox",
            MemorySnapshotSaysDisk => {
                "snapshots.memory::memory_snapshot_keeps_files_and_says_memory"
            }
            ForkSharesFiles => "fork::copy_has_the_files_and_then_diverges",
            ForkDuplicates => "fork::fork_is_idempotent_on_the_new_id",
            ForkCopiesTtl => "fork::copy_keeps_labels_and_template_but_no_ttl",
            PortUrlNotStable => "ports.expose::same_port_gives_the_same_url",
            PortIgnored => "ports.expose::different_ports_give_different_urls",
            PortZeroAccepted => "ports.expose::port_zero_is_invalid_request",
            CreateIgnoresTtl => "ttl::create_sets_expires_at_from_ttl",
            SetTtlNotSaved => "ttl::set_ttl_moves_the_reported_expiry",
            SetTtlNoneIgnored => "ttl::set_ttl_none_clears_the_expiry",
            ZeroTtlAccepted => "ttl::zero_ttl_is_invalid_request",
            BackstopNeverFires => "ttl::backstop_removes_the_sandbox",
            TtlNotMoved => "ttl::moved_expiry_is_what_the_backstop_uses",
            StdinHalfWorks => "stdin::undeclared_answers_unsupported",
            StopHalfWorks => "lifecycle.stop-start::undeclared_answers_unsupported",
            ForkHalfWorks => "fork::undeclared_answers_unsupported",
            PretendsToOffer(capability) => {
                return format!("{capability}::undeclared_answers_unsupported");
            }
        };
        name.to_owned()
    }

    /// Returns a sentence describing the bug.
    pub fn describe(self) -> String {
        use Bug::*;
        let text = match self {
            InfoUnstable => "info lists the templates in a different order on every call",
            HealthUnhealthy => "health probes the wrong endpoint and reports unhealthy",
            CreateDropsLabels => "create forgets the request's labels",
            CreateDuplicates => "create with an existing id makes a second sandbox",
            CreateRaces => "create checks for the id, then inserts, without holding the lock",
            CreateSkipsValidation => "create does not validate the request",
            GetOmitsLabels => "get returns the sandbox without its labels",
            GetMissingIsInternal => "get of a missing sandbox answers internal",
            DeleteLeavesTombstone => "delete marks the sandbox deleting and never removes it",
            DeleteErrsOnMissing => "delete of a missing sandbox answers not_found",
            ListIgnoresContinue => "list returns the first page and ignores the continue token",
            ListSwallowsFailedPage => "list returns what it has when a later page fails",
            StopUnknownIsInvalidState => "stop of an unknown sandbox answers invalid_state",
            ErrorEchoesRequest => "create's invalid_request message repeats the env values",
            TemplateNotRecorded => "create does not record the template it used",
            UnknownTemplateUsesDefault => "an unknown template silently gets the default image",
            DiskResourceRefused => "create refuses a disk size it cannot apply",
            ZeroResourcesAccepted => "create accepts zero resources",
            ProviderRefCollides => "provider names come from a counter read and written apart",
            ExecOutputCrossTalk => "every command's output goes to the latest exec session",
            ExitAlwaysZero => "exec reports exit 0 whatever the command did",
            NonzeroExitIsError => "exec turns a non-zero exit into an error",
            ArgvJoinedWithSpaces => "exec joins argv with spaces and splits it again",
            RequestEnvIgnored => "exec ignores the request's env",
            CreateEnvIgnored => "exec ignores the env given at create",
            CwdIgnored => "exec ignores the request's cwd",
            MissingCwdFallsBackToRoot => "a missing cwd runs the command in /",
            TimeoutIsAnError => "a timed-out command answers an error instead of exit 124",
            MissingProgramIsNotFoundError => "a missing program answers not_found, not exit 127",
            NotExecutableIs127 => "a non-executable program exits 127, not 126",
            OutputTruncated => "exec output is cut at 64 KiB",
            OutputLossyUtf8 => "exec output is decoded as UTF-8, lossily",
            StderrMergedIntoStdout => "exec merges stderr into stdout",
            ExecChecksSandboxFirst => "exec looks the sandbox up before validating the request",
            ExecAcceptsStreamedStdin => "exec treats streamed stdin as no input",
            DroppedExecReportsExit => "exec reports exit 0 when its connection drops",
            StreamStderrAsStdout => "streamed stderr comes as stdout events",
            StreamBuffersUntilExit => "streamed output is held until the command exits",
            StreamDelaysStderr => "streamed stderr is held until the exit",
            StreamExitBeforeLastOutput => "the exit event overtakes the last output chunk",
            StreamExitAlwaysZero => "streamed commands always exit 0",
            StreamTimeoutExit137 => "a timed-out streamed command exits 137",
            StreamDropsChunksWhenFull => "streamed chunks are dropped once 64 KiB are buffered",
            StreamSynthesisesExit => "a broken stream ends with a made-up exit 0",
            StdinBytesIgnored => "stdin bytes never reach the command",
            StdinTruncated => "stdin is cut at 64 KiB",
            StreamedStdinReordered => "streamed stdin chunks are sent in swapped pairs",
            StreamedStdinBufferedUntilClose => "streamed stdin is held until it is closed",
            StdinEndNeverDelivered => "closing streamed stdin never gives end of input",
            StdinDropDoesNotClose => "dropping the stdin handle does not end the input",
            ShellWaitsForEndOfInput => {
                "a shell reading its script from stdin runs nothing until end of input"
            }
            FilesLossyUtf8 => "write_file decodes its data as UTF-8, lossily",
            WriteNeedsParents => "write_file does not create parent directories",
            WriteDoesNotTruncate => "write_file overwrites without truncating",
            ReadIgnoresCap => "read_file ignores max_bytes",
            ReadIgnoresProviderLimit => "read_file ignores the provider's max_read_bytes",
            WriteIgnoresLimit => "write_file ignores max_write_bytes",
            StatReportsKindFile => "stat reports every path as a file",
            ListDirUnsorted => "list_dir returns entries in reverse order",
            ReadMissingIsEmpty => "read_file of a missing file returns no bytes",
            MkdirExistingFails => "mkdir of an existing directory fails",
            ReadDirectoryIsEmpty => "read_file of a directory returns no bytes",
            RelativePathsAccepted => "file operations accept relative paths",
            FilesSeparateFromExec => "file operations and commands see different filesystems",
            StopOnlyReports => "stop answers stopped but the sandbox keeps running",
            StartForgetsToRestart => "start answers running but the sandbox stays stopped",
            ExecRunsWhileStopped => "exec runs in a stopped sandbox",
            FilesWorkWhileStopped => "file operations work in a stopped sandbox",
            StopTwiceFails => "stop of a stopped sandbox answers invalid_state",
            StopLosesVolume => "stop loses the volume too",
            StopKeepsRootFs => "stop keeps every file, not just the volume",
            ListOnlyRunning => "list leaves out sandboxes that are not running",
            CreateRestartsStopped => "create of a stopped sandbox's id starts it",
            ExecRunsWhilePaused => "exec runs in a paused sandbox",
            ResumeLosesFiles => "resume starts from a fresh filesystem",
            PauseTwiceFails => "pause of a paused sandbox answers invalid_state",
            SnapshotEmpty => "sandboxes created from a snapshot start empty",
            SnapshotIsLive => "a snapshot follows its source's later writes",
            SnapshotDeletedWithSandbox => "a snapshot is deleted with its source",
            MemorySnapshotSaysDisk => "a memory snapshot reports kind disk",
            ForkSharesFiles => "a fork shares its source's filesystem",
            ForkDuplicates => "a second fork to the same id makes another copy",
            ForkCopiesTtl => "a fork copies its source's TTL",
            PortUrlNotStable => "expose_port adds a fresh nonce to every URL",
            PortIgnored => "expose_port leaves the port out of the URL",
            PortZeroAccepted => "expose_port accepts port 0",
            CreateIgnoresTtl => "create ignores the request's TTL",
            SetTtlNotSaved => "set_ttl answers the new expiry but saves nothing",
            SetTtlNoneIgnored => "set_ttl none leaves the expiry",
            ZeroTtlAccepted => "set_ttl accepts a zero TTL",
            BackstopNeverFires => "expired sandboxes are never removed",
            TtlNotMoved => "set_ttl moves the reported expiry but the backstop keeps the old one",
            PretendsToOffer(_) => "an undeclared capability's operations work anyway",
            StdinHalfWorks => "without stdin, a command given input runs, then answers unsupported",
            StopHalfWorks => "without stop-start, stop stops, then answers unsupported",
            ForkHalfWorks => "without fork, fork makes the copy, then answers unsupported",
        };
        match self {
            PretendsToOffer(capability) => format!("{text} ({capability})"),
            _ => text.to_owned(),
        }
    }
}
