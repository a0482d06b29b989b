//! The sandbox provider contract: the [`Provider`] trait every adapter implements, the
//! [`Capability`] names a provider declares, and the closed [`ErrorCode`] taxonomy.
//!
//! A host runs untrusted code in *sandboxes* from several pools; each pool is served by one
//! provider. The host names each sandbox with a [`SandboxId`] it chooses (the idempotency key),
//! asks the provider what it offers ([`Provider::info`]), and uses only the operations whose
//! capabilities are declared. Every other operation answers `unsupported_operation`.
//!
//! # Example: a provider skeleton
//!
//! Implement the six required methods; every optional one already answers
//! `unsupported_operation`, so a provider that declares no capability is complete.
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::sync::{Arc, Mutex};
//!
//! use sandbox_contract::{
//!     async_trait, Capabilities, CreateRequest, Error, Health, Limits, Provider, ProviderInfo,
//!     Sandbox, SandboxId, SandboxState,
//! };
//!
//! /// Sandboxes that exist only as records.
//! #[derive(Default)]
//! struct Records(Mutex<BTreeMap<SandboxId, Sandbox>>);
//!
//! impl Records {
//!     fn lock(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<SandboxId, Sandbox>>, Error> {
//!         self.0.lock().map_err(|_| Error::internal("state lock poisoned"))
//!     }
//! }
//!
//! #[async_trait]
//! impl Provider for Records {
//!     async fn info(&self) -> Result<ProviderInfo, Error> {
//!         Ok(ProviderInfo {
//!             name: "records".to_owned(),
//!             capabilities: Capabilities::new(),
//!             templates: Vec::new(),
//!             accepts_unlisted_templates: false,
//!             limits: Limits::default(),
//!         })
//!     }
//!
//!     async fn health(&self) -> Result<Health, Error> {
//!         Ok(Health::healthy())
//!     }
//!
//!     async fn create(&self, request: CreateRequest) -> Result<Sandbox, Error> {
//!         request.validate()?;
//!         if request.template.is_some() {
//!             return Err(Error::invalid_request("this provider offers no templates"));
//!         }
//!         let mut sandboxes = self.lock()?;
//!         // Idempotent on the id: a second create returns the first sandbox.
//!         let sandbox = sandboxes.entry(request.id.clone()).or_insert_with(|| Sandbox {
//!             id: request.id.clone(),
//!             state: SandboxState::Running,
//!             template: None,
//!             created_at: Some(std::time::SystemTime::now()),
//!             expires_at: None,
//!             provider_ref: format!("record-{}", request.id),
//!             labels: request.labels.clone(),
//!             reason: None,
//!         });
//!         Ok(sandbox.clone())
//!     }
//!
//!     async fn get(&self, id: &SandboxId) -> Result<Sandbox, Error> {
//!         self.lock()?
//!             .get(id)
//!             .cloned()
//!             .ok_or_else(|| Error::not_found(format!("sandbox {id} does not exist")))
//!     }
//!
//!     async fn list(&self) -> Result<Vec<Sandbox>, Error> {
//!         Ok(self.lock()?.values().cloned().collect())
//!     }
//!
//!     async fn delete(&self, id: &SandboxId) -> Result<(), Error> {
//!         // Idempotent: a missing sandbox is already deleted.
//!         self.lock()?.remove(id);
//!         Ok(())
//!     }
//! }
//!
//! // Hosts hold providers as trait objects.
//! let provider: Arc<dyn Provider> = Arc::new(Records::default());
//! # let _ = provider;
//! ```
//!
//! # Layout
//!
//! - [`capability`]: [`Capability`] and the [`Capabilities`] set, by their dotted names.
//! - [`error`]: [`ErrorCode`] with its HTTP status, and [`Error`].
//! - [`provider`]: the [`Provider`] trait and the rules each method follows.
//! - [`sandbox`]: [`SandboxId`], [`CreateRequest`], [`Sandbox`], snapshots.
//! - [`exec`]: [`ExecRequest`], [`ExecOutput`], the streaming [`ExecSession`].
//! - [`files`]: [`FileInfo`] and the path rule.
//! - [`info`]: [`ProviderInfo`], [`Limits`], [`Health`].
//!
//! Everything a provider author needs is re-exported at the crate root.
//!
//! # Runtime
//!
//! The contract depends on no async runtime: futures are boxed by
//! [`async_trait`](macro@async_trait) and exec streams are [`futures_core::Stream`]s, so an adapter
//! can serve them from tokio, a WebSocket, or plain channels.
//!
//! # Stability
//!
//! [`Capability`] and [`ErrorCode`] are closed on purpose: adding a variant is a breaking change
//! that every exhaustive `match` must handle. Error messages are for people; their wording may
//! change, so match on [`Error::code`].
//!
//! # Known limitations
//!
//! - Snapshots can be taken but not listed or deleted through the contract.
//! - An exposed port cannot be withdrawn; it goes with the sandbox.
//! - [`Provider::list`] has no label filter; the host filters.
//! - Exec output is not capped by the contract; [`ExecRequest::timeout`] bounds it in time only.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod capability;
pub mod error;
pub mod exec;
pub mod files;
pub mod info;
pub mod provider;
pub mod sandbox;

#[cfg(test)]
mod test_support;

// The public interface is:
pub use async_trait::async_trait;
pub use bytes::Bytes;
pub use capability::{Capabilities, Capability, ParseCapabilityError};
pub use error::{Error, ErrorCode, ParseErrorCodeError};
pub use exec::{
    EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_TIMEOUT, ExecEvent, ExecOutput, ExecRequest,
    ExecSession, Stdin, StdinHandle, StdinSink,
};
pub use files::{FileInfo, FileKind, MAX_PATH_LEN, validate_path};
pub use info::{Health, HealthStatus, Limits, ProviderInfo, Template};
pub use provider::Provider;
pub use sandbox::{
    CreateRequest, InvalidSandboxId, MAX_SANDBOX_ID_LEN, Resources, Sandbox, SandboxId,
    SandboxState, Snapshot, SnapshotKind, validate_env, validate_labels,
};
