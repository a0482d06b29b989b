//! The [`Provider`] trait: every operation a sandbox provider offers, with the rules a conforming
//! provider follows.

use std::time::Duration;

use bytes::Bytes;

use crate::error::Error;
use crate::exec::{ExecOutput, ExecRequest, ExecSession};
use crate::files::FileInfo;
use crate::info::{Health, ProviderInfo};
use crate::sandbox::{CreateRequest, Sandbox, SandboxId, Snapshot, SnapshotKind};

/// A sandbox provider: creates sandboxes from one pool and runs commands and file operations in
/// them.
///
/// Implement it with [`#[async_trait]`](crate::async_trait) (re-exported by this crate). The
/// trait is object safe, so a host holds providers as `Arc<dyn Provider>`; calls may run
/// concurrently, on any thread.
///
/// Six methods are required: [`info`](Provider::info), [`health`](Provider::health),
/// [`create`](Provider::create), [`get`](Provider::get), [`list`](Provider::list) and
/// [`delete`](Provider::delete). Every other method is gated by a [`Capability`] and has a
/// default body answering `unsupported_operation` with a message naming the operation; override
/// exactly the ones whose capability [`ProviderInfo::capabilities`] declares. The conformance
/// suite checks each declared capability's rules below, and checks that the operations of each
/// undeclared one answer `unsupported_operation` without doing anything.
///
/// # Rules for every method
///
/// - **Order of checks.** When several errors apply, the first in this list wins:
///   1. an operation the provider does not offer: `unsupported_operation`, whatever the
///      arguments;
///   2. a malformed request: `invalid_request` (use [`CreateRequest::validate`],
///      [`ExecRequest::validate`] and [`validate_path`](crate::validate_path));
///   3. a feature of an offered operation that the provider lacks (stdin without
///      [`Capability::Stdin`]): `unsupported_operation` naming the feature;
///   4. a sandbox id that names no sandbox of this provider: `not_found`;
///   5. the sandbox's state: `sandbox_failed` when it is
///      [`Failed`](crate::SandboxState::Failed), `invalid_state` when the operation cannot use
///      its state.
/// - **Scope.** A provider sees only its own sandboxes (its pool); a sandbox of another pool is
///   `not_found`.
/// - **Backend trouble** maps to `unauthenticated`, `permission_denied`, `rate_limited` (with
///   the backend's delay), `unavailable` or `internal`, never to `not_found`.
/// - **No credential** appears in any error message, [`Sandbox::reason`] or [`Health`] message.
/// - **Cancellation.** Dropping a returned future may leave the operation half done. Every
///   operation except exec is idempotent, so the host retries it; create and fork are idempotent
///   on the new sandbox's id for that reason.
///
/// [`Capability`]: crate::Capability
/// [`Capability::Stdin`]: crate::Capability::Stdin
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// Returns the provider's name, declared capabilities, templates and limits.
    ///
    /// Answers the same value on every call for the provider's whole life: the host and the
    /// conformance suite read it once, before anything else.
    async fn info(&self) -> Result<ProviderInfo, Error>;

    /// Reports whether the provider can serve requests now.
    ///
    /// A backend that is down, or that refuses the provider's credentials, is reported as
    /// [`HealthStatus::Unhealthy`](crate::HealthStatus::Unhealthy) with a message, not as an
    /// `Err`; callers treat an `Err` as unhealthy too. It creates nothing.
    async fn health(&self) -> Result<Health, Error>;

    /// Creates the sandbox `request.id` and returns it once it is
    /// [`Running`](crate::SandboxState::Running).
    ///
    /// - **Idempotent on `request.id`.** If the sandbox already exists, create adopts it: it
    ///   returns that sandbox (waiting while it is still being created or started) and never
    ///   makes a second one nor fails because it exists. The first request's settings win. A
    ///   stopped or paused sandbox is returned as it is; one being deleted answers `conflict`.
    /// - **Returns** a sandbox with `id`, `template` and `labels` as requested, and `expires_at`
    ///   set from `ttl` when the provider declares `ttl` (others ignore `ttl`).
    /// - `invalid_request` for a malformed request ([`CreateRequest::validate`]), a template not
    ///   in [`ProviderInfo::templates`] unless [`ProviderInfo::accepts_unlisted_templates`], or
    ///   an image that does not exist; in these cases no sandbox is left behind.
    /// - `sandbox_failed` when the sandbox is created but cannot run (a crash loop). The provider
    ///   then either removes it or leaves it [`Failed`](crate::SandboxState::Failed) so that
    ///   [`delete`](Provider::delete) cleans it up.
    /// - `rate_limited` or `unavailable` when the provider is out of capacity.
    ///
    /// Resources the provider cannot apply are ignored, never an error.
    async fn create(&self, request: CreateRequest) -> Result<Sandbox, Error>;

    /// Returns the sandbox `id` as it is now.
    ///
    /// `not_found` means the sandbox does not exist, for good (never a transient failure). A
    /// sandbox in any state, including `Stopped`, `Failed` and `Deleting`, is returned.
    async fn get(&self, id: &SandboxId) -> Result<Sandbox, Error>;

    /// Returns every sandbox of this provider, each once, in no particular order.
    ///
    /// The list is complete or the call fails: a backend that fails part way through (a page
    /// that errors, an expired continue token that cannot be resumed) answers the error, never a
    /// silently partial list. Sandboxes in every state are included.
    async fn list(&self) -> Result<Vec<Sandbox>, Error>;

    /// Deletes the sandbox `id` and everything the provider made for it (processes, disks,
    /// network names).
    ///
    /// **Idempotent**: deleting a sandbox that does not exist, or is already being deleted,
    /// succeeds. It works in every state, including `Creating` and `Failed`. After it returns,
    /// [`get`](Provider::get) answers `not_found` or a sandbox in state
    /// [`Deleting`](crate::SandboxState::Deleting), and soon only `not_found`.
    async fn delete(&self, id: &SandboxId) -> Result<(), Error>;

    /// Runs a command to completion and returns its exit code and output.
    ///
    /// Needs [`Capability::Exec`](crate::Capability::Exec).
    ///
    /// - A non-zero exit is data, not an error. A timeout ends the command with exit 124, a
    ///   program that does not exist gives 127 and one that cannot be executed 126 (see
    ///   [`crate::exec`]).
    /// - The command sees the sandbox's environment from create, overridden by `request.env`,
    ///   and runs in `request.cwd`.
    /// - `invalid_request` for a malformed request and for [`Stdin::Streamed`]; a request with
    ///   [`Stdin::Bytes`] answers `unsupported_operation` (naming `stdin`) unless the provider
    ///   declares [`Capability::Stdin`](crate::Capability::Stdin).
    /// - `invalid_state` unless the sandbox is `Running`.
    /// - `unavailable` when the connection drops before the exit code arrives; the command may
    ///   or may not have run, so exec is never retried automatically.
    ///
    /// [`Stdin::Streamed`]: crate::Stdin::Streamed
    /// [`Stdin::Bytes`]: crate::Stdin::Bytes
    async fn exec(&self, id: &SandboxId, request: ExecRequest) -> Result<ExecOutput, Error> {
        let _ = (id, request);
        Err(Error::unsupported("exec"))
    }

    /// Starts a command and returns a session that streams its output as it arrives.
    ///
    /// Needs [`Capability::ExecStream`](crate::Capability::ExecStream).
    ///
    /// - Returns once the command has started. Stdout and stderr chunks come as separate events
    ///   as the command writes them (output written before the command sleeps arrives before it
    ///   exits), then exactly one [`ExecEvent::Exit`](crate::ExecEvent::Exit) with the same exit
    ///   codes as [`exec`](Provider::exec). A stream that ends without an exit is an error
    ///   (the session enforces this).
    /// - With [`Stdin::Streamed`](crate::Stdin::Streamed) the session has a
    ///   [`StdinHandle`](crate::StdinHandle): what is sent reaches the command in order, and
    ///   closing (or dropping) the handle gives the command end of input. Needs
    ///   [`Capability::Stdin`](crate::Capability::Stdin), like
    ///   [`Stdin::Bytes`](crate::Stdin::Bytes); without it both answer
    ///   `unsupported_operation` naming `stdin`.
    /// - Errors before the command starts are as for [`exec`](Provider::exec).
    async fn exec_stream(
        &self,
        id: &SandboxId,
        request: ExecRequest,
    ) -> Result<ExecSession, Error> {
        let _ = (id, request);
        Err(Error::unsupported("exec_stream"))
    }

    /// Writes `data` as the whole content of the file at `path`.
    ///
    /// Needs [`Capability::Files`](crate::Capability::Files).
    ///
    /// Creates missing parent directories and replaces an existing file. `invalid_request` for a
    /// bad path, a path that is a directory, or more data than
    /// [`Limits::max_write_bytes`](crate::Limits::max_write_bytes); `invalid_state` unless the
    /// sandbox is `Running`.
    async fn write_file(&self, id: &SandboxId, path: &str, data: Bytes) -> Result<(), Error> {
        let _ = (id, path, data);
        Err(Error::unsupported("write_file"))
    }

    /// Returns the whole content of the file at `path`, if it has at most `max_bytes` bytes.
    ///
    /// Needs [`Capability::Files`](crate::Capability::Files).
    ///
    /// The cap is the smaller of `max_bytes` and
    /// [`Limits::max_read_bytes`](crate::Limits::max_read_bytes). A larger file answers
    /// `invalid_request` saying its size and the cap (the request asks for more than may be
    /// read; it is never truncated). `not_found` for a missing file, `invalid_request` for a bad
    /// path or a directory, `invalid_state` unless the sandbox is `Running`.
    async fn read_file(&self, id: &SandboxId, path: &str, max_bytes: u64) -> Result<Bytes, Error> {
        let _ = (id, path, max_bytes);
        Err(Error::unsupported("read_file"))
    }

    /// Returns the entries of the directory at `path`, sorted by name (byte order).
    ///
    /// Needs [`Capability::Files`](crate::Capability::Files).
    ///
    /// `.` and `..` are not listed; each entry's [`FileInfo::path`] is `path` joined with its
    /// name. `not_found` for a missing directory, `invalid_request` for a bad path or a path that
    /// is not a directory, `invalid_state` unless the sandbox is `Running`.
    async fn list_dir(&self, id: &SandboxId, path: &str) -> Result<Vec<FileInfo>, Error> {
        let _ = (id, path);
        Err(Error::unsupported("list_dir"))
    }

    /// Returns what `path` is: kind, size, permission bits, modification time.
    ///
    /// Needs [`Capability::Files`](crate::Capability::Files).
    ///
    /// Describes the path itself: a final symbolic link is not followed. `not_found` for a
    /// missing path, `invalid_request` for a bad path, `invalid_state` unless the sandbox is
    /// `Running`.
    async fn stat(&self, id: &SandboxId, path: &str) -> Result<FileInfo, Error> {
        let _ = (id, path);
        Err(Error::unsupported("stat"))
    }

    /// Creates the directory `path` and any missing parents.
    ///
    /// Needs [`Capability::Files`](crate::Capability::Files).
    ///
    /// Idempotent: an existing directory is success. `invalid_request` for a bad path or when a
    /// non-directory is in the way; `invalid_state` unless the sandbox is `Running`.
    async fn mkdir(&self, id: &SandboxId, path: &str) -> Result<(), Error> {
        let _ = (id, path);
        Err(Error::unsupported("mkdir"))
    }

    /// Stops the sandbox: its processes end; files survive only where
    /// [`Capability::PersistenceDisk`](crate::Capability::PersistenceDisk) promises. Returns it
    /// [`Stopped`](crate::SandboxState::Stopped).
    ///
    /// Needs [`Capability::LifecycleStopStart`](crate::Capability::LifecycleStopStart).
    ///
    /// Idempotent: stopping a stopped sandbox succeeds. While stopped, exec and files answer
    /// `invalid_state`. `invalid_state` from states other than `Running` and `Stopped`.
    async fn stop(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let _ = id;
        Err(Error::unsupported("stop"))
    }

    /// Starts a stopped sandbox and returns it once it is
    /// [`Running`](crate::SandboxState::Running).
    ///
    /// Needs [`Capability::LifecycleStopStart`](crate::Capability::LifecycleStopStart).
    ///
    /// Idempotent: starting a running sandbox succeeds. Processes start afresh; persistent files
    /// are as they were at stop. `invalid_state` from states other than `Stopped` and `Running`.
    async fn start(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let _ = id;
        Err(Error::unsupported("start"))
    }

    /// Pauses the sandbox keeping its memory and processes; returns it
    /// [`Paused`](crate::SandboxState::Paused).
    ///
    /// Needs [`Capability::LifecyclePauseResume`](crate::Capability::LifecyclePauseResume).
    ///
    /// Idempotent: pausing a paused sandbox succeeds. While paused, exec and files answer
    /// `invalid_state`. `invalid_state` from states other than `Running` and `Paused`.
    async fn pause(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let _ = id;
        Err(Error::unsupported("pause"))
    }

    /// Resumes a paused sandbox and returns it [`Running`](crate::SandboxState::Running), with
    /// its processes where they were and its files as they were.
    ///
    /// Needs [`Capability::LifecyclePauseResume`](crate::Capability::LifecyclePauseResume).
    ///
    /// Idempotent: resuming a running sandbox succeeds. `invalid_state` from states other than
    /// `Paused` and `Running`.
    async fn resume(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        let _ = id;
        Err(Error::unsupported("resume"))
    }

    /// Takes a snapshot of the sandbox and returns it; creating a sandbox with
    /// [`Snapshot::template`] as its template starts from the snapshot.
    ///
    /// Needs [`SnapshotKind::capability`]: `snapshots.disk` for [`SnapshotKind::Disk`],
    /// `snapshots.memory` for [`SnapshotKind::Memory`]. A provider with only one of them answers
    /// `unsupported_operation` for the other.
    ///
    /// The sandbox must be `Running` (a disk snapshot may also be taken while `Stopped`),
    /// otherwise `invalid_state`. The snapshot outlives the sandbox, which keeps running.
    async fn snapshot(&self, id: &SandboxId, kind: SnapshotKind) -> Result<Snapshot, Error> {
        let _ = (id, kind);
        Err(Error::unsupported("snapshot"))
    }

    /// Creates the sandbox `id` as a copy of the running sandbox `source` and returns it once it
    /// is [`Running`](crate::SandboxState::Running).
    ///
    /// Needs [`Capability::Fork`](crate::Capability::Fork).
    ///
    /// The copy has the source's files (and processes, where the provider can copy memory), its
    /// template and labels, and no TTL; later changes to either do not reach the other.
    /// Idempotent on `id` like [`create`](Provider::create). `not_found` when `source` does not
    /// exist, `invalid_state` unless it is `Running`.
    async fn fork(&self, source: &SandboxId, id: SandboxId) -> Result<Sandbox, Error> {
        let _ = (source, id);
        Err(Error::unsupported("fork"))
    }

    /// Returns a URL at which TCP port `port` inside the sandbox is reachable, such as
    /// `http://sb-1.sandboxes.svc.cluster.local:8080`.
    ///
    /// Needs [`Capability::PortsExpose`](crate::Capability::PortsExpose).
    ///
    /// From where the URL is reachable is the provider's to document (inside a cluster only,
    /// say). Idempotent: the same port gives the same URL. `invalid_request` for port 0.
    async fn expose_port(&self, id: &SandboxId, port: u16) -> Result<String, Error> {
        let _ = (id, port);
        Err(Error::unsupported("expose_port"))
    }

    /// Sets when the provider deletes the sandbox on its own: `ttl` from now, or never with
    /// `None`. Returns the sandbox with its new [`Sandbox::expires_at`].
    ///
    /// Needs [`Capability::Ttl`](crate::Capability::Ttl).
    ///
    /// The expiry may move earlier or later. Once it passes, the provider deletes the sandbox as
    /// [`delete`](Provider::delete) would, and [`get`](Provider::get) answers `not_found`.
    /// `invalid_request` for a zero `ttl`.
    async fn set_ttl(&self, id: &SandboxId, ttl: Option<Duration>) -> Result<Sandbox, Error> {
        let _ = (id, ttl);
        Err(Error::unsupported("set_ttl"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::block_on;
    use crate::{Capabilities, ErrorCode, ExecRequest, Limits};
    use std::sync::Arc;

    /// A provider that implements only the required methods.
    struct Minimal;

    #[async_trait::async_trait]
    impl Provider for Minimal {
        async fn info(&self) -> Result<ProviderInfo, Error> {
            Ok(ProviderInfo {
                name: "minimal".to_owned(),
                capabilities: Capabilities::new(),
                templates: Vec::new(),
                accepts_unlisted_templates: false,
                limits: Limits::default(),
            })
        }

        async fn health(&self) -> Result<Health, Error> {
            Ok(Health::healthy())
        }

        async fn create(&self, request: CreateRequest) -> Result<Sandbox, Error> {
            Err(Error::unavailable(format!("no room for {}", request.id)))
        }

        async fn get(&self, id: &SandboxId) -> Result<Sandbox, Error> {
            Err(Error::not_found(format!("sandbox {id} does not exist")))
        }

        async fn list(&self) -> Result<Vec<Sandbox>, Error> {
            Ok(Vec::new())
        }

        async fn delete(&self, _id: &SandboxId) -> Result<(), Error> {
            Ok(())
        }
    }

    /// Calls every optional method and pairs each result with the operation's name.
    fn optional_results(provider: &dyn Provider) -> Vec<(&'static str, Option<Error>)> {
        let id = SandboxId::new("sb-1").unwrap();
        let other = SandboxId::new("sb-2").unwrap();
        let exec = || ExecRequest::new(["true"]);
        block_on(async {
            vec![
                ("exec", provider.exec(&id, exec()).await.err()),
                ("exec_stream", provider.exec_stream(&id, exec()).await.err()),
                (
                    "write_file",
                    provider.write_file(&id, "/f", Bytes::new()).await.err(),
                ),
                ("read_file", provider.read_file(&id, "/f", 1).await.err()),
                ("list_dir", provider.list_dir(&id, "/").await.err()),
                ("stat", provider.stat(&id, "/").await.err()),
                ("mkdir", provider.mkdir(&id, "/d").await.err()),
                ("stop", provider.stop(&id).await.err()),
                ("start", provider.start(&id).await.err()),
                ("pause", provider.pause(&id).await.err()),
                ("resume", provider.resume(&id).await.err()),
                (
                    "snapshot",
                    provider.snapshot(&id, SnapshotKind::Disk).await.err(),
                ),
                ("fork", provider.fork(&id, other).await.err()),
                ("expose_port", provider.expose_port(&id, 80).await.err()),
                ("set_ttl", provider.set_ttl(&id, None).await.err()),
            ]
        })
    }

    #[test]
    fn default_methods_answer_unsupported_operation_naming_the_operation() {
        let results = optional_results(&Minimal);
        assert_eq!(results.len(), 15);
        for (operation, error) in results {
            let error = error.unwrap_or_else(|| panic!("{operation} succeeded"));
            assert_eq!(error.code(), ErrorCode::UnsupportedOperation, "{operation}");
            assert_eq!(error.http_status(), 501, "{operation}");
            assert!(
                error.message().contains(&format!("`{operation}`")),
                "{operation}: {error}"
            );
        }
    }

    #[test]
    fn capability_operations_name_exactly_the_optional_methods() {
        let gated: std::collections::BTreeSet<&str> = crate::Capability::ALL
            .into_iter()
            .flat_map(|capability| capability.operations().iter().copied())
            .collect();
        let optional: std::collections::BTreeSet<&str> = optional_results(&Minimal)
            .into_iter()
            .map(|(operation, _)| operation)
            .collect();
        assert_eq!(gated, optional);
    }

    #[test]
    fn provider_works_behind_an_arc_dyn() {
        let provider: Arc<dyn Provider> = Arc::new(Minimal);
        let info = block_on(provider.info()).unwrap();
        assert_eq!(info.name, "minimal");
        let missing = SandboxId::new("sb-9").unwrap();
        assert!(block_on(provider.get(&missing)).unwrap_err().is_not_found());
        assert_eq!(block_on(provider.delete(&missing)), Ok(()));
    }
}
