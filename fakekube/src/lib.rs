//! A TLS fake Kubernetes API server that starts in milliseconds and serves what it is given,
//! for tests of anything that talks to Kubernetes and to
//! [kubernetes-sigs/agent-sandbox](https://github.com/kubernetes-sigs/agent-sandbox).
//!
//! It serves discovery, its built-in kinds (namespaces, pods, services,
//! persistentvolumeclaims, secrets, serviceaccounts, events, networkpolicies, deployments, the
//! RBAC kinds, customresourcedefinitions...) and every kind a CustomResourceDefinition defines,
//! validated, pruned and defaulted by the CRD's structural schema and CEL rules, with the object
//! semantics real clients rely on: resourceVersions and conflicts, generations, status and scale
//! subresources, versions, patches, finalizers, garbage collection, label and field selectors,
//! paged lists and watches. The agent-sandbox CRDs are installed at start (unless
//! [`Builder::agent_sandbox_crds`] says not to: an envtest) and their controllers run.
//! Requests are authenticated as the API server authenticates them (client certificates signed
//! by the server's CA, static bearer tokens, service-account tokens from TokenRequest and from
//! token Secrets, impersonation) and authorized by RBAC over stored Roles, ClusterRoles and
//! their bindings, starting from the default ClusterRoles every cluster has; 401 and 403 come
//! exactly where a real server gives them, worded as it words them.
//! `fakekube/README.md` says what is served and what is not.
//!
//! ```no_run
//! # async fn demo() -> Result<(), fakekube::Error> {
//! let kube = fakekube::FakeKube::builder().start().await?;
//! std::fs::write("/tmp/kubeconfig", kube.kubeconfig()).ok();
//! // KUBECONFIG=/tmp/kubeconfig kubectl get sandboxes
//! kube.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! The public surface is [`FakeKube`] (the builder and the running server's handle), [`Token`],
//! [`Rule`] and [`ClientCertificate`] for credentials, [`Faults`] for injected failures, the
//! kubelet's [`Images`] and [`CommandCall`], [`Converter`] for kinds whose CRD asks for a
//! conversion webhook, [`Mutator`] standing in for a mutating admission webhook, [`Client`]
//! (the API in process, [`FakeKube::client`]) and [`KubeletNode`] (the kubelet joined to
//! another cluster).
//!
//! fakekube is a few crates along Kubernetes' own seams, and this one composes them; none of
//! the parts below imports a part beside it except through the API:
//!
//! | crate | stands for | holds |
//! |---|---|---|
//! | [`fakekube_machinery`] | k8s.io/apimachinery, client-go | metadata, selectors, patches, managed fields, encodings, `Status`, the [`Client`] trait and its HTTPS implementation, Event recorders, the TLS listener |
//! | [`fakekube_schema`] | apiextensions-apiserver's `schema` | CRD structural schemas, pruning, defaulting, validation, CEL rules |
//! | [`fakekube_apiserver`] | k8s.io/apiserver, kube-apiserver | serving, authentication, RBAC, admission, the registry and the store, watches, CRDs, discovery, OpenAPI |
//! | `fakekube_printers` | pkg/printers, client-go's jsonpath | the built-in kinds' table columns and cells, CRD printer columns' JSONPath, ages |
//! | [`fakekube_controllers`] | agent-sandbox's controller, kube-controller-manager | the agent-sandbox, workload, endpoints and cluster controllers, clients of the API |
//! | [`fakekube_kubelet`] | the kubelet | pods, probes, the node and its lease, the kubelet's API, exec/attach/port-forward/log streams |
//! | [`fakekube_runtime`] | a container runtime (containerd, runc) and the kernel a container sees | in-memory filesystems, processes and signals, streams and terminals, the pod network, a POSIX shell |
//! | `fakekube_programs` | the images' userland | BusyBox-like programs and the agent-sandbox images' servers, the table `/bin` is filled from |
//!
//! Here, in layers (`python3 ci/module-cycles.py fakekube/src`):
//!
//! - [`FakeKube`]'s builder (this file): the API server's store, authenticators and router,
//!   the kubelet over the store's [`Client`], the controllers over the same client, the
//!   kubelet's own HTTPS listener, started in that order.
//! - `node_streams`: the API server's [`Nodes`](fakekube_apiserver::nodes::Nodes) over the
//!   in-process kubelet (exec, attach, port-forward, logs and the node proxy, once the API
//!   server has authorized them).
//! - `kubelet_api`: the kubelet API's `Authorize` over the API server's authenticators and
//!   RBAC, as a kubelet delegates to the API server.
//! - `kind_system`: what a fresh kind cluster runs in `kube-system` and `local-path-storage`
//!   (mirror pods, CoreDNS, kube-proxy, kindnet, the local-path provisioner).
//! - `control_plane`: the bootstrap RBAC policy the API server creates at start, the token
//!   controller's signer (the API server's service-account key), and kind's default
//!   StorageClass.
//! - For tests only: `kubelet_tests` (the kubelet driven over the store: pods from Pending to
//!   Running, images, init containers, probes, graceful stops, logs) and `fuzzing` (the
//!   cargo-fuzz targets' entry points of every crate, behind the `fuzzing` feature; not an
//!   API).
//!
//! # Known limitations
//!
//! - Server-side apply merges the applied object into the live one as a strategic merge (by
//!   the strategic merge keys of built-in kinds, the list types of CRD schemas); field
//!   ownership keys lists by one key only (see `managed_fields`).
//! - Lists with `continue` are not snapshots: a page reflects the store when it is served.
//! - Only the agent-sandbox controllers run on a thread of their own (as a controller manager
//!   is its own process); the kubelet, the workload and endpoint controllers still run as
//!   tasks on the runtime that started the server. [`FakeKube::controllers_settled`] covers
//!   the agent-sandbox controllers only.
//! - Core kinds are not validated beyond the fields their clients need.
//! - Admission webhooks are not called over HTTP (their configurations are stored); a
//!   [`Mutator`] runs in process, before defaulting (an API server defaults first), and no
//!   validating webhook is modelled. ValidatingAdmissionPolicies are enforced, without the
//!   `authorizer` variable or audit annotations.
//! - CEL rules are not type-checked and have no cost limit; validation ratcheting is not done
//!   (see `schema` and `fakekube/README.md`).
//! - Responses are JSON or YAML, never protobuf; the items of a built-in kind's list carry
//!   `kind` and `apiVersion` (the API server leaves them out of typed lists).
//! - Service-account tokens are signed with HMAC-SHA256 (`HS256`), not RS256: only fakekube
//!   verifies them, and there is no `/openid/v1/jwks` to publish a key at.
//! - A request without credentials is anonymous and authorized by RBAC (health and version are
//!   public); when refused it gets 401, where the API server would answer 403 for
//!   `system:anonymous`.
//! - A pod's grace period is counted from when the kubelet begins to stop it, on the cluster's
//!   clock; [`FakeKube::advance_clock`] moves that clock (and every timestamp) ahead of the
//!   clients' clocks.
//! - RBAC escalation checks (`bind`, `escalate`) are not made: whoever may create a Role or
//!   binding may grant anything in it.
//! - The bootstrap policy holds the roles of users, service accounts and discovery, not those of
//!   cluster components fakekube has no counterpart of (nodes, scheduler, controllers).
//! - A request target (path and query) longer than 63 KiB is answered 414 with a Status, where
//!   the API server serves targets up to its 1 MiB header limit: the `http` crate holds no URI
//!   past 65,534 bytes. Past that the stack refuses the request before fakekube sees it:
//!   HTTP/1.1 gets hyper's 414 without a Status (431 past 400 KiB) and the connection closes;
//!   HTTP/2 gets its stream reset with `PROTOCOL_ERROR`, and the connection stays up.
//! - The agent-sandbox `v1alpha1` conversion passes embedded Kubernetes types (pod and PVC
//!   specs) through as sent, without the zero values upstream's typed Go round trip adds, and
//!   its state annotations are not Go's bytes (see `conversion`). Managed fields are not
//!   converted between versions.
//! - The kubelet's API (`kubelet_api`) presents the API server's certificate, and serves no
//!   `/stats`, `/metrics`, `/logs`, `/configz` or `/checkpoint`.
//! - Memory a pod's processes freed goes back to the allocator; glibc keeps some of it in its
//!   arenas, so the first heavy pod (a fork bomb) raises the RSS once, by a few MiB.
//! - A Sandbox expires at the first look at or after its `shutdownTime`, as upstream: a quiet
//!   one is looked at again `max(remaining, 2 s)` after its last pass, so a 1 s TTL fires after
//!   up to 2 s.
//! - The warm pool's template hashes are upstream's values, except where the template holds a
//!   `resource.Quantity` not in canonical form (`1024Mi`): Go hashes the canonical form, fakekube
//!   the text as sent.
//! - The cluster's clock is what controllers, the kubelet, CRD conditions, the node and container
//!   logs (with `sinceSeconds`) read; managed fields' `time`, table `AGE` columns, the
//!   APIService conditions and token expiry still read the wall clock.

#![forbid(unsafe_code)]

mod control_plane;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod kind_system;
mod kubelet_api;
#[cfg(test)]
mod kubelet_tests;
mod node_streams;
mod start_state;

// The object machinery and the API client, shared by every layer, are their own crate; they
// keep their module names here, so `crate::status::ApiError` and the like resolve as before.
use fakekube_apiserver::{
    api, authn, authz, cluster_objects, conversion, discovery, events, finalizer, fixtures,
    inflight, inspect, rbac, registry, secret_log, state, store,
};
use fakekube_controllers::{
    agent_sandbox as controllers, cluster as kube_controllers, endpoints, workloads,
};
use fakekube_kubelet::{kubelet, node, pod_access, registration};
#[cfg(any(test, feature = "fuzzing"))]
use fakekube_kubelet::{spdy, websocket};
use fakekube_machinery::{
    client, clock, faults, meta, query, route, server, status, subprotocol, tls,
};
#[cfg(any(test, feature = "fuzzing"))]
use fakekube_machinery::{patch, protobuf, selector};
#[cfg(any(test, feature = "fuzzing"))]
use fakekube_schema as schema;

// The public interface is:
pub use authn::Token;
pub use client::Client;
pub use faults::{Chaos, ChaosRates, Faults};
pub use inspect::WaitTimeout;
pub use kubelet::{CommandCall, CommandError, Images};
pub use node::{KubeletNode, NodeConfig, NodeError};
pub use rbac::Rule;
pub use registry::{Converter, Mutator};
pub use tls::{ClientCertificate, TlsError};

use base64::Engine;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// A request the server refused, as its `metav1.Status` says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct StatusError {
    /// The HTTP status code.
    pub code: u16,
    /// The Status reason (`AlreadyExists`, `Invalid`, ...).
    pub reason: String,
    /// The Status message.
    pub message: String,
}

impl From<status::ApiError> for StatusError {
    fn from(e: status::ApiError) -> Self {
        StatusError {
            code: e.code.as_u16(),
            reason: e.reason.to_string(),
            message: e.message,
        }
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listening socket could not be bound.
    #[error("binding {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The TLS material could not be made.
    #[error("making TLS material")]
    Tls(#[from] TlsError),
    /// An agent-sandbox CRD of `fixtures/crds/` was refused at start.
    #[error("installing the CRD of {file}")]
    InstallCrd {
        /// Its file in `fixtures/crds/`.
        file: String,
        /// The Status the create answered.
        #[source]
        source: StatusError,
    },
    /// The key that signs service-account tokens could not be made (ring reports no cause:
    /// the system's random source failed).
    #[error("making the service-account token key: no random bytes from the system")]
    TokenKey,
    /// The agent-sandbox controllers' thread (or its runtime) could not be started.
    #[error("starting the agent-sandbox controllers' thread")]
    Controllers(#[source] std::io::Error),
}

/// Configures a [`FakeKube`] before it starts. Its `Debug` shows no token.
#[derive(Clone)]
pub struct Builder {
    addr: SocketAddr,
    minor: u32,
    admin_token: Option<String>,
    tokens: Vec<Token>,
    namespaces: Vec<String>,
    /// The watch history and continue-token window.
    store: store::StoreSettings,
    bookmark_interval: Duration,
    shutdown_grace: Duration,
    kubelet: bool,
    controllers: bool,
    agent_sandbox_crds: bool,
    kind_system: bool,
    crd_cleanup_delay: Duration,
    pod_start_delay: Duration,
    crash_backoff: Duration,
    clock: clock::ClockMode,
    pod_process_limit: usize,
    pod_storage_budget: u64,
    limits: server::Limits,
    /// The port of the kubelet's own HTTPS API, when it is served.
    kubelet_port: Option<u16>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("addr", &self.addr)
            .field("minor", &self.minor)
            .field(
                "admin_token",
                &self.admin_token.as_ref().map(|_| "[REDACTED]"),
            )
            .field("tokens", &self.tokens)
            .field("namespaces", &self.namespaces)
            .field("controllers", &self.controllers)
            .field("kubelet", &self.kubelet)
            .finish_non_exhaustive()
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            minor: 33,
            admin_token: None,
            tokens: Vec::new(),
            namespaces: Vec::new(),
            store: store::StoreSettings::default(),
            bookmark_interval: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(5),
            kubelet: true,
            controllers: true,
            agent_sandbox_crds: true,
            kind_system: false,
            crd_cleanup_delay: Duration::from_millis(10),
            pod_start_delay: Duration::from_millis(2),
            crash_backoff: Duration::from_millis(10),
            clock: clock::ClockMode::Real,
            pod_process_limit: fakekube_runtime::DEFAULT_PROCESS_LIMIT,
            pod_storage_budget: kubelet::DEFAULT_STORAGE_BUDGET,
            limits: server::Limits::default(),
            kubelet_port: None,
        }
    }
}

impl Builder {
    /// Listens on `addr` instead of 127.0.0.1 on a free port.
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Reports Kubernetes `1.<minor>` from `/version` (33 by default). `/usr/bin/kubectl`'s
    /// dispatcher picks its kubectl binary by this number.
    pub fn kubernetes_minor(mut self, minor: u32) -> Self {
        self.minor = minor;
        self
    }

    /// Uses this secret for the admin token instead of a random one.
    pub fn admin_token(mut self, secret: impl Into<String>) -> Self {
        self.admin_token = Some(secret.into());
        self
    }

    /// Accepts another token from the start.
    pub fn token(mut self, token: Token) -> Self {
        self.tokens.push(token);
        self
    }

    /// Creates this namespace at start (`default`, `kube-system`, `kube-public` and
    /// `kube-node-lease` always exist).
    pub fn namespace(mut self, name: impl Into<String>) -> Self {
        self.namespaces.push(name.into());
        self
    }

    /// How long a list's continue token stays valid (5 minutes by default); older ones get 410.
    pub fn compaction_window(mut self, window: Duration) -> Self {
        self.store.compaction_window = window;
        self
    }

    /// How many changes the server remembers for watches (10 000 by default; it bounds the memory
    /// that history takes, each change holding a whole object); a watch from an
    /// older resourceVersion gets 410.
    pub fn event_log_capacity(mut self, events: usize) -> Self {
        self.store.event_log_capacity = events.max(1);
        self
    }

    /// How long an Event lives after its last write (1 hour by default, as the API server's
    /// `--event-ttl`): then it is deleted, and watchers see it go.
    pub fn event_ttl(mut self, ttl: Duration) -> Self {
        self.store.event_ttl = ttl;
        self
    }

    /// How often an idle watch that allows bookmarks gets one (1 s by default).
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every;
        self
    }

    /// Runs the agent-sandbox controllers (on by default). Without them the server is only an
    /// API server, as envtest is: objects stay exactly as clients write them. (The cluster's
    /// own ClusterRole aggregation and token Secret controllers always run: without them the
    /// default roles would grant nothing.) The controllers' deployment also serves upstream's
    /// conversion webhook, so with them the agent-sandbox CRDs' deprecated `v1alpha1` versions
    /// are converted; without them a `v1alpha1` request fails as with the webhook down.
    pub fn controllers(mut self, on: bool) -> Self {
        self.controllers = on;
        self
    }

    /// Installs the agent-sandbox CRDs of `fixtures/crds/` at start (on by default), through
    /// the same path as a CRD a client creates. Without them the server starts bare, with only
    /// its built-in kinds, as envtest does: a test creates the CRDs it needs.
    pub fn agent_sandbox_crds(mut self, on: bool) -> Self {
        self.agent_sandbox_crds = on;
        self
    }

    /// Creates what a fresh kind cluster runs in `kube-system` and `local-path-storage` (off
    /// by default; the `fakekube` binary turns it on unless `--bare`): the control plane's
    /// mirror pods, CoreDNS with the `kube-dns` Service, the `kube-proxy` and `kindnet`
    /// DaemonSets and the local-path provisioner, Running and Ready, their containers running
    /// a harmless keep-alive. Needs the kubelet and the controllers (without either it does
    /// nothing): the kubelet registers the Node that owns the mirror pods and runs them, the
    /// controllers make the workloads' pods. [`FakeKube::leaks`] does not count them.
    pub fn kind_system(mut self, on: bool) -> Self {
        self.kind_system = on;
        self
    }

    /// How long after a CustomResourceDefinition is deleted its cleanup runs (10 ms by
    /// default): the API server's finalizer also takes a moment, and clients that delete a
    /// CRD and then watch for it to go rely on it.
    pub fn crd_cleanup_delay(mut self, delay: Duration) -> Self {
        self.crd_cleanup_delay = delay;
        self
    }

    /// Runs the fake kubelet (on by default). Without it pods stay as created, so a test can
    /// play the kubelet itself by writing pod status, as on a cluster with no nodes.
    pub fn kubelet(mut self, on: bool) -> Self {
        self.kubelet = on;
        self
    }

    /// How long the kubelet takes from admitting a pod to starting its containers (2 ms by
    /// default); until then the pod is Pending with its containers `ContainerCreating`.
    pub fn pod_start_delay(mut self, delay: Duration) -> Self {
        self.pod_start_delay = delay;
        self
    }

    /// The kubelet's first back-off before restarting a container or pulling a missing image
    /// again (10 ms by default; a real kubelet waits 10 s). Each next back-off doubles, up to 30
    /// times this; the status messages still print the real durations.
    pub fn crash_backoff(mut self, backoff: Duration) -> Self {
        self.crash_backoff = backoff;
        self
    }

    /// Runs the cluster on a manual clock: it stands still at the time the server started and
    /// moves only by [`FakeKube::advance_clock`], so timestamps are exact and every timer (the
    /// kubelet's start delay and back-offs, grace periods, probes, expiry, the controllers'
    /// waits) fires only when a test moves it past the deadline. (Without this the clock runs
    /// on real time, and may still be advanced.)
    pub fn manual_clock(mut self) -> Self {
        self.clock = clock::ClockMode::Manual;
        self
    }

    /// Runs the cluster on real time, but whenever a timer is pending and the store has seen no
    /// change for `quiet`, the clock jumps to the earliest pending deadline: a run never waits
    /// out a grace period, a back-off or a TTL. Its timestamps run ahead of the clients' clocks
    /// by what was skipped.
    pub fn auto_advance_clock(mut self, quiet: Duration) -> Self {
        self.clock = clock::ClockMode::AutoAdvance(quiet);
        self
    }

    /// How many processes each container may run at once (1024 by default, as a node's
    /// `podPidsLimit` would set it): a fork past it fails and the process tree it was made in
    /// is killed, so a fork bomb in one pod stops there.
    pub fn pod_process_limit(mut self, processes: usize) -> Self {
        self.pod_process_limit = processes.max(1);
        self
    }

    /// How many bytes all pods' in-memory filesystems may hold together (512 MiB by default);
    /// a write past it fails with `No space left on device`.
    pub fn pod_storage_budget(mut self, bytes: u64) -> Self {
        self.pod_storage_budget = bytes;
        self
    }

    /// Answers requests past this many at once with 429 and `Retry-After: 1`, as the API
    /// server's `--max-requests-inflight` does (0, the default, for no limit). Watches and
    /// exec, attach and port-forward sessions are long-running and not counted; requests of
    /// `system:masters` members are served anyway.
    pub fn max_requests_inflight(mut self, requests: usize) -> Self {
        self.limits.max_inflight = requests;
        self
    }

    /// How long a connection may take to send a request's headers (10 s by default); a
    /// slower one is closed.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read_timeout = timeout;
        self
    }

    /// How long a connection may stay open without a request in flight (90 s by default,
    /// Go's `IdleTimeout` of the API server).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// Serves the kubelet's own HTTPS API (exec, attach, portForward, containerLogs, pods,
    /// runningpods, healthz; the port `10250` of a cluster's nodes) on the server's address at
    /// `port` (0: a free one; see [`FakeKube::kubelet_addr`]), with the server's certificate,
    /// authenticated and authorized as a kubelet does through the API server. Off by default;
    /// the API server's node proxy (`/api/v1/nodes/<node>/proxy/...`) reaches the same API
    /// either way. Needs the kubelet ([`Builder::kubelet`]).
    pub fn kubelet_port(mut self, port: u16) -> Self {
        self.kubelet_port = Some(port);
        self
    }

    /// Starts the server: makes the TLS material, binds, and serves in the background.
    pub async fn start(self) -> Result<FakeKube, Error> {
        let material = tls::generate(&[])?;
        let listener = tokio::net::TcpListener::bind(self.addr)
            .await
            .map_err(|source| Error::Bind {
                addr: self.addr,
                source,
            })?;
        let local = listener.local_addr().map_err(|source| Error::Bind {
            addr: self.addr,
            source,
        })?;
        let kubelet_listener = match self.kubelet_port.filter(|_| self.kubelet) {
            Some(port) => {
                let addr = SocketAddr::new(self.addr.ip(), port);
                let l = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|source| Error::Bind { addr, source })?;
                let bound = l
                    .local_addr()
                    .map_err(|source| Error::Bind { addr, source })?;
                Some((l, bound))
            }
            None => None,
        };
        let admin = self
            .admin_token
            .unwrap_or_else(|| format!("fk-admin-{}", uuid::Uuid::new_v4().simple()));
        secret_log::record(&admin);
        let tokens = authn::Tokens::default();
        tokens.add(Token::new(admin.clone(), ADMIN_USER));
        for t in self.tokens {
            tokens.add(t);
        }
        let clock = clock::Clock::new(self.clock);
        let store = Arc::new(start_state::store(
            &start_state::Config {
                settings: self.store,
                agent_sandbox_crds: self.agent_sandbox_crds,
            },
            clock.clone(),
        )?);
        let signer = authn::Signer::generate().map_err(|_| Error::TokenKey)?;
        let authn = Arc::new(authn::Authenticator::new(
            tokens,
            authn::ServiceAccountTokens::new(signer, store.clone()),
        ));
        let issuer: std::sync::Weak<dyn store::TokenIssuer> = Arc::downgrade(&authn) as _;
        store.set_token_issuer(issuer);
        let authz = Arc::new(authz::Authorizer::new(store.clone()));
        start_state::create_namespaces(&store, &self.namespaces);
        cluster_objects::install_endpoints(&store, local);
        let shutdown = CancellationToken::new();
        cluster_objects::spawn_apiservices(store.clone(), shutdown.clone());
        clock.spawn_auto_advance(store.subscribe(), shutdown.clone());
        let faults = Arc::new(Faults::default());
        let kubelet_config = kubelet::Config {
            start_delay: self.pod_start_delay,
            backoff: self.crash_backoff,
            process_limit: self.pod_process_limit,
            storage_budget: self.pod_storage_budget,
            ..kubelet::Config::default()
        };
        let api: Arc<dyn client::Client> = store.clone();
        let kubelet = Arc::new(kubelet::Kubelet::new(api.clone(), kubelet_config.clone()));
        if self.kubelet {
            // A cluster's kubelets serve on 10250; the listener, when on, says its own port.
            let kubelet_port = kubelet_listener
                .as_ref()
                .map_or(10250, |(_, bound)| bound.port());
            registration::spawn(
                api,
                kubelet_config,
                self.minor,
                kubelet_port,
                shutdown.clone(),
            );
            kubelet.spawn(shutdown.clone());
            if self.kind_system && self.controllers {
                kind_system::spawn(
                    store.clone(),
                    fakekube_kubelet::pod::NODE_NAME.to_string(),
                    self.minor,
                    shutdown.clone(),
                );
            }
        }
        kube_controllers::spawn(
            store.clone(),
            Arc::new(control_plane::LegacyTokens(authn.clone())),
            material.ca_pem.clone(),
            shutdown.clone(),
        );
        let pod_access = Arc::new(pod_access::PodAccess {
            kubelet: self.kubelet.then(|| kubelet.clone()),
            api: store.clone(),
            faults: faults.clone(),
            shutdown: shutdown.clone(),
        });
        let shared = Arc::new(state::Shared {
            store: store.clone(),
            authn: authn.clone(),
            authz,
            version: discovery::Version {
                minor: self.minor,
                patch: 1,
            },
            address: local.to_string(),
            faults: faults.clone(),
            shutdown: shutdown.clone(),
            bookmark_interval: self.bookmark_interval,
            nodes: Arc::new(node_streams::InProcess(pod_access.clone())),
            inflight: inflight::Inflight::new(self.limits.max_inflight),
        });
        let kubelet_router = kubelet_api::router(Arc::new(kubelet_api::KubeletApi::new(
            pod_access,
            Arc::new(kubelet_api::ClusterAccess {
                authn: authn.clone(),
                authz: shared.authz.clone(),
            }),
        )));
        let router = api::router(shared);
        let acceptor = tokio_rustls::TlsAcceptor::from(material.server_config.clone());
        finalizer::spawn(store.clone(), self.crd_cleanup_delay, shutdown.clone());
        events::spawn_expiry(store.clone(), shutdown.clone());
        let controllers = if self.controllers {
            conversion::register(store.registry());
            let thread = controllers::spawn(
                store.clone(),
                controllers::Config::default(),
                shutdown.clone(),
            )
            .map_err(Error::Controllers)?;
            endpoints::spawn(store.clone(), shutdown.clone());
            workloads::spawn(
                store.clone(),
                workloads::Config::default(),
                shutdown.clone(),
            );
            Some(thread)
        } else {
            None
        };
        let task = tokio::spawn(server::serve(
            listener,
            acceptor,
            router,
            shutdown.clone(),
            self.shutdown_grace,
            self.limits,
        ));
        let kubelet_addr = kubelet_listener.as_ref().map(|(_, bound)| *bound);
        let kubelet_task = kubelet_listener.map(|(listener, _)| {
            tokio::spawn(server::serve(
                listener,
                tokio_rustls::TlsAcceptor::from(material.server_config.clone()),
                kubelet_router,
                shutdown.clone(),
                self.shutdown_grace,
                self.limits,
            ))
        });
        Ok(FakeKube {
            addr: local,
            kubelet_addr,
            kubelet_task,
            ca_pem: material.ca_pem,
            ca: material.ca,
            admin_token: admin,
            authn,
            store,
            faults,
            kubelet,
            shutdown,
            task: Some(task),
            controllers,
        })
    }
}

/// The user the admin token authenticates as (in `system:masters`).
const ADMIN_USER: &str = "fakekube-admin";

/// A running fake API server. Dropping it stops the server; [`FakeKube::shutdown`] stops it
/// gracefully and waits. Its `Debug` shows no token or key.
pub struct FakeKube {
    addr: SocketAddr,
    /// Where the kubelet's own API listens, when it does.
    kubelet_addr: Option<SocketAddr>,
    kubelet_task: Option<tokio::task::JoinHandle<()>>,
    ca_pem: String,
    ca: tls::CertificateAuthority,
    admin_token: String,
    authn: Arc<authn::Authenticator>,
    store: Arc<store::Store>,
    faults: Arc<Faults>,
    kubelet: Arc<kubelet::Kubelet>,
    shutdown: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
    /// The agent-sandbox controllers' thread, when they run.
    controllers: Option<controllers::Thread>,
}

impl std::fmt::Debug for FakeKube {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeKube")
            .field("addr", &self.addr)
            .field("admin_token", &"[REDACTED]")
            .finish_non_exhaustive()
    }
}

impl FakeKube {
    /// A builder with the defaults: 127.0.0.1, a free port, Kubernetes 1.33.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address of the kubelet's own HTTPS API, when [`Builder::kubelet_port`] asked for
    /// it (`https://<addr>/exec/<ns>/<pod>/<container>?command=...`).
    pub fn kubelet_addr(&self) -> Option<SocketAddr> {
        self.kubelet_addr
    }

    /// `https://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The CA certificate (PEM) that signed the serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The admin token: user `fakekube-admin` in `system:masters`, allowed everything.
    pub fn token(&self) -> &str {
        &self.admin_token
    }

    /// A kubeconfig (YAML) for this server with the admin token and namespace `default`.
    pub fn kubeconfig(&self) -> String {
        self.kubeconfig_with_token(&self.admin_token)
    }

    /// A kubeconfig (YAML) for this server that authenticates with `token`.
    pub fn kubeconfig_with_token(&self, token: &str) -> String {
        secret_log::record(token);
        self.kubeconfig_with_user(&format!("    token: {token}\n"))
    }

    /// A kubeconfig (YAML) for this server that authenticates with a client certificate, as
    /// kind's own kubeconfig does.
    pub fn kubeconfig_with_client_certificate(&self, cert: &ClientCertificate) -> String {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
        self.kubeconfig_with_user(&format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&cert.cert_pem),
            b64(&cert.key_pem)
        ))
    }

    fn kubeconfig_with_user(&self, user_fields: &str) -> String {
        let ca = base64::engine::general_purpose::STANDARD.encode(self.ca_pem.as_bytes());
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fakekube\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: fakekube-user\n  user:\n{user_fields}contexts:\n- name: fakekube\n  context:\n    cluster: fakekube\n    user: fakekube-user\n    namespace: default\ncurrent-context: fakekube\npreferences: {{}}\n",
            self.base_url()
        )
    }

    /// A client certificate for `user` in `groups`, signed by this server's CA: the server
    /// authenticates a client that presents it as that user (its Common Name) in those groups
    /// (its Organizations), as the API server's x509 authenticator does.
    ///
    /// # Panics
    ///
    /// If rcgen cannot make a key or sign with the CA, which it always can for the keys this
    /// server makes.
    pub fn client_certificate(&self, user: &str, groups: &[&str]) -> ClientCertificate {
        let cert = self
            .ca
            .issue_client(user, groups)
            .expect("the server's CA signs a client certificate");
        secret_log::record_key(&cert.key_pem);
        cert
    }

    /// Accepts `token` from now on (replacing a token with the same secret).
    pub fn add_token(&self, token: Token) {
        self.authn.tokens.add(token);
    }

    /// Refuses `secret` from now on; returns whether it was accepted before.
    pub fn revoke_token(&self, secret: &str) -> bool {
        self.authn.tokens.revoke(secret)
    }

    /// Sets (or with `None` clears) when `secret` expires; returns whether it exists.
    pub fn set_token_expiry(&self, secret: &str, at: Option<SystemTime>) -> bool {
        self.authn.tokens.set_expiry(secret, at)
    }

    /// Grants service account `namespace/name` these rules by writing RBAC objects, as an
    /// administrator would: a Role and RoleBinding in each namespace rules are limited to, a
    /// ClusterRole and ClusterRoleBinding for the rest (a rule limited to `"*"` becomes
    /// cluster-wide), all named `fakekube:sa:<namespace>:<name>`. Binding again replaces them.
    /// Every token of the account (TokenRequest, token Secrets) then may do what they grant.
    /// Fails as creating those objects would (a namespace that does not exist: 404).
    pub fn bind_service_account(
        &self,
        namespace: &str,
        name: &str,
        rules: Vec<Rule>,
    ) -> Result<(), StatusError> {
        authz::bind_service_account(&self.store, namespace, name, &rules).map_err(StatusError::from)
    }

    /// Expires every continue token and watch position issued so far (410 from now on).
    pub fn compact(&self) {
        self.store.compact();
    }

    /// Changes how long continue tokens stay valid.
    pub fn set_compaction_window(&self, window: Duration) {
        self.store.set_compaction_window(window);
    }

    /// The fault switches of this server.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// The kubelet's image registry: mark images missing or crashing.
    pub fn images(&self) -> &Images {
        self.kubelet.images()
    }

    /// Adds a program every container can run (by `exec`, from the shell, or as a container's
    /// `command`), found before any program or file of that name. The handler gets a
    /// [`CommandCall`] (arguments, environment, streams, the pod's files) and returns the exit
    /// status; it is dropped when the call is killed. Registering a name again replaces it.
    pub fn register_command<F, Fut>(&self, name: &str, handler: F)
    where
        F: Fn(CommandCall) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = i32> + Send + 'static,
    {
        self.kubelet.register_command(name, handler);
    }

    /// What the main process of a pod's container printed (stdout and stderr, the last 64 KiB
    /// of its current or last run); `None` when the container never ran. An empty `container`
    /// means the pod's only container.
    pub fn container_log(&self, namespace: &str, pod: &str, container: &str) -> Option<String> {
        self.kubelet
            .logs(namespace, pod, container, false)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// The cluster's time now (its clock: real time plus what was advanced, or a manual
    /// clock's time).
    pub fn now(&self) -> SystemTime {
        self.store.clock().now()
    }

    /// Moves the cluster's clock forward by `by`: every timer whose deadline is now passed
    /// fires (a pod's grace period and SIGKILL, probes, back-offs, `shutdownTime`, claim
    /// expiry, the controllers' waits), and timestamps written from now on are that much later.
    pub fn advance_clock(&self, by: Duration) {
        self.store.clock().advance(by);
    }

    /// The bytes all pods' in-memory filesystems hold now (against
    /// [`Builder::pod_storage_budget`]).
    pub fn pod_storage_used(&self) -> u64 {
        self.kubelet.storage_used()
    }

    /// The API as an in-process [`Client`]: the store itself, as the embedded kubelet and
    /// controllers reach it (no HTTP, no authentication or admission webhooks of its own). For
    /// driving a controller or a kubelet of one's own against this server in a test.
    pub fn client(&self) -> Arc<dyn Client> {
        self.store.clone()
    }

    /// Waits until the agent-sandbox controllers have looked at every change made before the
    /// call and at every deadline the clock has passed, and have nothing left to do now;
    /// `false` if `timeout` passes first (`true` at once when they do not run). They run
    /// apart from the requests, as a controller manager does, so a test on a
    /// [`Builder::manual_clock`] calls this before moving the clock when a reconcile still
    /// due at the old time would change what it checks.
    pub async fn controllers_settled(&self, timeout: Duration) -> bool {
        match &self.controllers {
            Some(thread) => thread.settled(self.store.as_ref(), timeout).await,
            None => true,
        }
    }

    /// The current cluster-wide resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.store.resource_version()
    }

    /// One object by plural resource name (`sandboxes`, `pods`...), namespace and name, as
    /// stored; `None` when absent or the resource is not served.
    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<serde_json::Value> {
        inspect::get(&self.store, resource, namespace, name)
    }

    /// Waits until `pred` holds for an object (given `None` while it is absent), re-checking
    /// after every change to the store rather than at fixed intervals; returns the object as
    /// it was when `pred` held.
    pub async fn wait_for(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        timeout: Duration,
        pred: impl Fn(Option<&serde_json::Value>) -> bool,
    ) -> Result<Option<serde_json::Value>, WaitTimeout> {
        inspect::wait_for(&self.store, resource, namespace, name, timeout, pred).await
    }

    /// Waits until an Event (core/v1) in `namespace` about the object named `involved` has
    /// `reason` (`Killing`, `Started`, `SandboxAdopted`...), re-checking after every change to
    /// the store; returns the Event.
    pub async fn wait_for_event(
        &self,
        namespace: &str,
        involved: &str,
        reason: &str,
        timeout: Duration,
    ) -> Result<serde_json::Value, WaitTimeout> {
        inspect::wait_for_event(&self.store, namespace, involved, reason, timeout).await
    }

    /// The leak check: every Sandbox, SandboxClaim, Pod, Service and PVC still present, as
    /// `"<plural>/<namespace>/<name>"` (empty when a run cleaned up after itself); the
    /// cluster's own `default/kubernetes` Service is not one, nor is anything in
    /// `kube-system` or `local-path-storage` (kind's system pods, see
    /// [`Builder::kind_system`]).
    pub fn leaks(&self) -> Vec<String> {
        inspect::leaks(&self.store)
    }

    /// Creates an object in-process, as `kubectl create -f` would: its `apiVersion` and `kind`
    /// pick the resource, `metadata.namespace` the namespace (`default` when unset). The object
    /// is validated and defaulted like any create; a refusal carries the Status the API would
    /// have answered.
    pub fn create(&self, object: serde_json::Value) -> Result<serde_json::Value, StatusError> {
        let api_version = object
            .get("apiVersion")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        let kind = object
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        let rt = self
            .store
            .registry()
            .by_kind(api_version, kind)
            .filter(|r| !r.create_only)
            .ok_or_else(|| StatusError {
                code: 404,
                reason: "NotFound".into(),
                message: format!("fakekube serves no kind {kind} in {api_version}"),
            })?;
        let ns = if rt.namespaced {
            meta::meta_str(&object, "namespace")
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        self.store
            .create(&rt, &ns, object, store::WriteOptions::default())
            .map(|(obj, _)| serde_json::Value::clone(&obj))
            .map_err(StatusError::from)
    }

    /// Deletes an object in-process (background propagation), as `kubectl delete` would.
    /// `resource` is the plural (`sandboxwarmpools`); `namespace` is empty for cluster-scoped
    /// kinds.
    pub fn delete(&self, resource: &str, namespace: &str, name: &str) -> Result<(), StatusError> {
        let rt = self
            .store
            .registry()
            .by_plural(resource)
            .filter(|r| !r.create_only)
            .ok_or_else(|| StatusError {
                code: 404,
                reason: "NotFound".into(),
                message: format!("fakekube serves no resource {resource}"),
            })?;
        self.store
            .delete(&rt, namespace, name, &store::DeleteOptions::default())
            .map(|_| ())
            .map_err(StatusError::from)
    }

    /// Converts objects of `group`'s `kind` with `converter` from now on, where its CRD asks
    /// for a conversion webhook (`spec.conversion.strategy: Webhook`): fakekube calls no
    /// webhook. Registering again replaces the converter.
    pub fn register_converter(&self, group: &str, kind: &str, converter: Arc<dyn Converter>) {
        self.store
            .registry()
            .register_converter(group, kind, converter);
    }

    /// Calls `mutator` on every create and update of `group`'s `kind` (its main resource, not
    /// its status) from now on, before the object is defaulted and validated, as an API server
    /// calls a mutating admission webhook; its refusal denies the write with a 400. Registering
    /// again replaces the mutator.
    pub fn register_mutator(&self, group: &str, kind: &str, mutator: Arc<dyn Mutator>) {
        self.store.registry().register_mutator(group, kind, mutator);
    }

    /// Stops accepting connections, ends watches, waits for open requests, and returns.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take()
            && let Err(e) = task.await
        {
            tracing::warn!(error = %e, "server task");
        }
        if let Some(task) = self.kubelet_task.take()
            && let Err(e) = task.await
        {
            tracing::warn!(error = %e, "kubelet API task");
        }
        if let Some(mut thread) = self.controllers.take() {
            // A batch under way finishes before the thread sees the cancel; wait off the runtime.
            if let Err(e) = tokio::task::spawn_blocking(move || thread.stop()).await {
                tracing::warn!(error = %e, "stopping the controllers' thread");
            }
        }
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        self.shutdown.cancel();
        // Field drop then joins the controllers' thread, which ends at its next look.
    }
}
