//! The provider adapter for [kubernetes-sigs/agent-sandbox](https://github.com/kubernetes-sigs/agent-sandbox):
//! sandboxes as `Sandbox` objects (or `SandboxClaim`s on a warm pool), commands and files
//! through `pods/exec` over WebSocket, implementing [`sandbox_contract::Provider`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
//! use sandbox_contract::{CreateRequest, ExecRequest, Provider, SandboxId};
//!
//! let pool = PoolConfig::from_yaml(
//!     "name: k8s\ntrust: private\nconfig:\n  namespace: sandboxes\n  volumeSize: 1Gi\n",
//! )?;
//! // The API server, its CA and the token come from KUBECONFIG or the in-cluster service account.
//! let provider = AgentSandbox::connect(pool, ConnectOptions::from_env()).await?;
//! let id = SandboxId::new("sb-1")?;
//! provider.create(CreateRequest::new(id.clone())).await?;
//! let out = provider.exec(&id, ExecRequest::new(["echo", "hello"])).await?;
//! assert_eq!(out.stdout, "hello\n");
//! provider.delete(&id).await?;
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! - [`config`]: the pool config ([`PoolConfig`]), read from YAML or JSON, errors naming keys.
//! - `credentials`, `kubeconfig`, `identity`: where the token comes from (a file, a variable,
//!   an exec plugin) and how it is re-read; the client certificate TLS presents.
//! - `client`: the REST client (hyper + rustls with ring) and the Status → error mapping;
//!   `retry`: which failed requests it sends again (client-go's rules).
//! - `manifest`: the objects sent and the rules reading the objects back.
//! - `exec`, `files`: the exec WebSocket protocol, and files on top of it.
//! - `connect`: how it reaches the API server ([`ConnectOptions`], [`SetupError`]): the pool
//!   config, a kubeconfig or the in-cluster service account.
//! - `provider`: [`AgentSandbox`], the [`Provider`](sandbox_contract::Provider).
//! - `clock`: [`Clock`], the time `shutdownTime` is computed from (the system's, or a fake
//!   cluster's that tests move).
//! - `preflight`: [`AgentSandbox::preflight`], whether a pool's cluster is ready for it.
//! - `fuzzing` (the `fuzzing` feature, for `fuzz/` only; not an API): the decoders of `exec`,
//!   `client`, `manifest`, `kubeconfig` and `config` as fuzz targets.
//!
//! # Known limitations
//!
//! - Stdin (and so `write_file`) needs the `v5.channel.k8s.io` exec protocol (Kubernetes 1.30
//!   or later); against a v4-only server they answer `unsupported_operation`.
//! - Readiness is polled with GET (the Role has no `watch`), from 1 ms up to every 250 ms.
//! - An exec plugin's renewed client certificate is presented by new connections only; an
//!   open HTTP/2 connection keeps the certificate of its handshake.
//! - `stop` returns once the sandbox's pod is gone, and `start` of a sandbox still stopping
//!   first waits for that: the new pod takes the old one's name. In direct mode the pod's main
//!   process is a shell loop that traps SIGTERM and exits 0 (`trap 'exit 0' TERM; while true;
//!   do sleep 3600 & wait; done`), so a stop takes well under the 30 s default grace period. A
//!   pod whose main process ignores SIGTERM (a Sandbox edited by hand) stops only when its
//!   `terminationGracePeriodSeconds` run out; if that outlasts the readiness timeout, the stop
//!   fails with `unavailable` ("its pod is still terminating").
//! - Kubeconfig `auth-provider` entries and exec plugins that need a terminal are refused.
//! - `list_dir` cannot represent names holding a newline.
//! - In direct mode an exec goes straight to the pod an earlier exec ran in, without reading
//!   the Sandbox. Stop and delete through the same provider forget the pod, and a pod that is
//!   gone or refuses sends the exec through the lookup again; but within a pod's grace period
//!   after another client deleted or stopped its Sandbox, an exec still runs in the pod.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod client;
mod clock;
pub mod config;
mod connect;
mod credentials;
mod exec;
mod files;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod identity;
mod kubeconfig;
mod manifest;
mod poll;
mod preflight;
mod provider;
mod retry;

// The public interface is:
pub use clock::Clock;
pub use config::{AdapterConfig, ConfigError, CredentialSource, Isolation, PoolConfig, Trust};
pub use connect::{ConnectOptions, DEFAULT_READY_TIMEOUT, SERVICE_ACCOUNT_DIR, SetupError};
pub use credentials::{CredentialError, EnvLookup, SecretResolver};
pub use files::MAX_READ_BYTES;
pub use identity::ClientCertError;
pub use kubeconfig::KubeconfigError;
pub use manifest::{ID_LABEL, POOL_LABEL, REQUEST_LABEL_PREFIX, TEMPLATE_ANNOTATION};
pub use preflight::{PreflightError, PreflightProblem};
pub use provider::{AgentSandbox, CreatedKind, CreatedObject};
