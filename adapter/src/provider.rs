//! [`AgentSandbox`]: the [`Provider`] implementation: its lifecycle, exec and files over the
//! agent-sandbox objects (`crate::connect` says how it reaches the API server).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use sandbox_contract::{
    Capabilities, Capability, CreateRequest, Error, ErrorCode, ExecEvent, ExecOutput, ExecRequest,
    ExecSession, FileInfo, Health, Limits, Provider, ProviderInfo, Sandbox, SandboxId,
    SandboxState, Stdin, Template, async_trait, validate_path,
};
use serde_json::json;

use crate::client::{KubeClient, KubeError, UpgradeConnection, tls_config};
use crate::clock::Clock;
use crate::config::{ADAPTER_NAME, DEFAULT_NAMESPACE, PoolConfig};
use crate::connect::{ConnectOptions, SetupError, resolve_endpoint};
use crate::credentials::Credentials;
use crate::exec::{self, OpenError, Protocol, StdinPlan, Target};
use crate::files::{self, MAX_READ_BYTES};
use crate::manifest::{
    self, ClaimReadiness, ClaimView, ID_LABEL, ListView, POOL_LABEL, PodProblem, PodView,
    Readiness, SandboxView, TEMPLATE_ANNOTATION,
};
use crate::poll::{self, AsyncProbe, Step};
use crate::preflight::{PreflightError, PreflightProblem};

/// The mode of a pool.
#[derive(Debug, Clone)]
enum Mode {
    /// Sandboxes created directly.
    Direct,
    /// Claims on a warm pool.
    Warm {
        /// The SandboxWarmPool's name.
        pool: String,
    },
}

/// Which kind of object the pool created for a sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CreatedKind {
    /// A Sandbox (direct mode).
    Sandbox,
    /// A SandboxClaim (warm-pool mode).
    SandboxClaim,
}

/// An object the pool created, as [`AgentSandbox::list_created`] finds it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CreatedObject {
    /// Its kind.
    pub kind: CreatedKind,
    /// Its name in the pool's namespace.
    pub name: String,
    /// The sandbox id it was created for (from its id label, else its name).
    pub id: String,
}

/// The agent-sandbox provider of one pool.
///
/// Cheap to clone; clones share the connection pool and the state.
#[derive(Clone)]
pub struct AgentSandbox {
    /// The shared state.
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AgentSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSandbox")
            .field("pool", &self.inner.pool.name)
            .field("namespace", &self.inner.namespace)
            .field("mode", &self.inner.mode)
            .finish_non_exhaustive()
    }
}

/// What every clone shares.
struct Inner {
    /// The pool.
    pool: PoolConfig,
    /// Where its objects live.
    namespace: String,
    /// Direct or warm pool.
    mode: Mode,
    /// The REST client.
    client: KubeClient,
    /// The declared capabilities.
    capabilities: Capabilities,
    /// The exec protocol the server chose last time.
    protocol: Mutex<Option<Protocol>>,
    /// In direct mode, the pod of each Sandbox an exec last ran in, by sandbox name: the next
    /// exec goes straight there, without reading the Sandbox first. Forgotten on delete and stop
    /// through this provider, and when the pod is gone or refuses the exec (the Sandbox is then
    /// read again, which says why).
    targets: Mutex<HashMap<String, Target>>,
    /// How long create and start wait.
    ready_timeout: Duration,
    /// Objects per list page.
    page_size: u32,
    /// What `shutdownTime` is computed from.
    clock: Clock,
}

impl AgentSandbox {
    /// Sets up the provider of `pool`: checks the config and works out the API server, its CA
    /// and the token (nothing is sent yet; [`Provider::health`] checks the connection).
    pub async fn connect(pool: PoolConfig, options: ConnectOptions) -> Result<Self, SetupError> {
        pool.validate()?;
        let endpoint = resolve_endpoint(&pool, &options)?;
        let tls = tls_config(&endpoint.ca_pem, endpoint.identity.clone()).map_err(|e| {
            crate::config::ConfigError::caused_by("config.caFile", "the CA cannot be trusted", e)
        })?;
        let credentials = Arc::new(Credentials::new(endpoint.token));
        let client = KubeClient::new(&endpoint.server, tls, credentials).map_err(|e| {
            crate::config::ConfigError::caused_by(
                "config.apiServer",
                "the API server URL cannot be used",
                e,
            )
        })?;
        let namespace = pool
            .config
            .namespace
            .clone()
            .or(endpoint.namespace)
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
        let mode = match &pool.config.warm_pool {
            Some(name) => Mode::Warm { pool: name.clone() },
            None => Mode::Direct,
        };
        let capabilities = pool.config.capabilities();
        tracing::debug!(pool = %pool.name, %namespace, "agent-sandbox provider set up");
        Ok(AgentSandbox {
            inner: Arc::new(Inner {
                pool,
                namespace,
                mode,
                client,
                capabilities,
                protocol: Mutex::new(None),
                targets: Mutex::new(HashMap::new()),
                ready_timeout: options.ready_timeout,
                page_size: options.page_size,
                clock: options.clock,
            }),
        })
    }

    /// Checks that the pool's cluster is ready for it: the namespace, the warm pool and its
    /// template, and every permission of the provider page's Role. Returns each problem found
    /// with its fix; an empty list means the pool can run.
    pub async fn preflight(&self) -> Result<Vec<PreflightProblem>, PreflightError> {
        let warm = match &self.inner.mode {
            Mode::Warm { pool } => Some(pool.as_str()),
            Mode::Direct => None,
        };
        crate::preflight::check(
            &self.inner.client,
            &self.inner.pool.name,
            &self.inner.namespace,
            warm,
        )
        .await
    }

    /// Returns the namespace the pool works in.
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// Returns the pool's config.
    pub fn pool(&self) -> &PoolConfig {
        &self.inner.pool
    }

    /// Lists every Sandbox and SandboxClaim this pool created (by its pool label), whatever
    /// the host knows, so it can remove what it no longer knows.
    pub async fn list_created(&self) -> Result<Vec<CreatedObject>, Error> {
        let mut created = Vec::new();
        for (kind, path) in [
            (CreatedKind::Sandbox, self.sandboxes_path()),
            (CreatedKind::SandboxClaim, self.claims_path()),
        ] {
            let items: Vec<manifest::ObjectMetaOnly> = self.list_all(&path).await?;
            for item in items {
                let id = item
                    .metadata
                    .labels
                    .get(ID_LABEL)
                    .cloned()
                    .unwrap_or_else(|| item.metadata.name.clone());
                created.push(CreatedObject {
                    kind,
                    name: item.metadata.name,
                    id,
                });
            }
        }
        created.sort();
        Ok(created)
    }

    /// Deletes every object this pool created whose sandbox id is not in `known`; returns what
    /// it deleted.
    pub async fn reconcile(
        &self,
        known: &BTreeSet<SandboxId>,
    ) -> Result<Vec<CreatedObject>, Error> {
        let known: BTreeSet<&str> = known.iter().map(SandboxId::as_str).collect();
        let mut removed = Vec::new();
        for object in self.list_created().await? {
            if known.contains(object.id.as_str()) {
                continue;
            }
            let path = match object.kind {
                CreatedKind::Sandbox => format!("{}/{}", self.sandboxes_path(), object.name),
                CreatedKind::SandboxClaim => format!("{}/{}", self.claims_path(), object.name),
            };
            self.inner.client.delete(&path).await?;
            tracing::debug!(name = %object.name, "reconcile removed an object the host no longer knows");
            removed.push(object);
        }
        Ok(removed)
    }

    /// The Sandboxes collection of the namespace.
    fn sandboxes_path(&self) -> String {
        format!(
            "/apis/agents.x-k8s.io/v1beta1/namespaces/{}/sandboxes",
            self.inner.namespace
        )
    }

    /// The SandboxClaims collection of the namespace.
    fn claims_path(&self) -> String {
        format!(
            "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{}/sandboxclaims",
            self.inner.namespace
        )
    }

    /// A pod's path.
    fn pod_path(&self, name: &str) -> String {
        format!("/api/v1/namespaces/{}/pods/{name}", self.inner.namespace)
    }

    /// Answers `unsupported_operation` for `operation` unless `capability` is declared.
    fn require(&self, capability: Capability, operation: &str) -> Result<(), Error> {
        if self.inner.capabilities.contains(capability) {
            Ok(())
        } else {
            Err(Error::unsupported(operation))
        }
    }

    /// Lists every item of a collection with this pool's label, page by page; a failing page
    /// fails the whole list.
    async fn list_all<T: serde::de::DeserializeOwned>(
        &self,
        collection: &str,
    ) -> Result<Vec<T>, Error> {
        let selector: String = form_urlencoded::byte_serialize(
            format!("{POOL_LABEL}={}", self.inner.pool.name).as_bytes(),
        )
        .collect();
        let mut items = Vec::new();
        let mut continue_token: Option<String> = None;
        loop {
            let mut path = format!(
                "{collection}?labelSelector={selector}&limit={}",
                self.inner.page_size
            );
            if let Some(token) = &continue_token {
                let token: String = form_urlencoded::byte_serialize(token.as_bytes()).collect();
                path.push_str("&continue=");
                path.push_str(&token);
            }
            let page: ListView<T> = self.inner.client.get(&path).await.map_err(|e| {
                let error = Error::from(e);
                Error::new(
                    error.code(),
                    format!("listing {collection} failed on a page: {}", error.message()),
                )
            })?;
            items.extend(page.items);
            match page.metadata.continue_token.filter(|t| !t.is_empty()) {
                Some(token) => continue_token = Some(token),
                None => return Ok(items),
            }
        }
    }

    /// GETs this pool's Sandbox `name`; `not_found` when it is missing or another pool's.
    async fn get_sandbox(&self, name: &str) -> Result<SandboxView, Error> {
        let path = format!("{}/{name}", self.sandboxes_path());
        match self.inner.client.get::<SandboxView>(&path).await {
            Ok(sandbox) if self.is_ours(&sandbox.metadata.labels) => Ok(sandbox),
            Ok(_) => Err(Error::not_found(format!(
                "sandbox {name} does not exist in pool {}",
                self.inner.pool.name
            ))),
            Err(e) if e.is_not_found() => {
                Err(Error::not_found(format!("sandbox {name} does not exist")))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// GETs this pool's claim `name`; `not_found` when it is missing or another pool's.
    async fn get_claim(&self, name: &str) -> Result<ClaimView, Error> {
        let path = format!("{}/{name}", self.claims_path());
        match self.inner.client.get::<ClaimView>(&path).await {
            Ok(claim) if self.is_ours(&claim.metadata.labels) => Ok(claim),
            Ok(_) => Err(Error::not_found(format!(
                "sandbox {name} does not exist in pool {}",
                self.inner.pool.name
            ))),
            Err(e) if e.is_not_found() => {
                Err(Error::not_found(format!("sandbox {name} does not exist")))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// GETs a pod, `None` when it does not exist.
    async fn get_pod(&self, name: &str) -> Result<Option<PodView>, Error> {
        match self.inner.client.get::<PodView>(&self.pod_path(name)).await {
            Ok(pod) => Ok(Some(pod)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Returns whether an object carries this pool's label.
    fn is_ours(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        labels.get(POOL_LABEL) == Some(&self.inner.pool.name)
    }

    /// Builds the contract view of a Sandbox, reading its pod when it is not ready.
    async fn sandbox_from_direct(&self, view: &SandboxView) -> Result<Sandbox, Error> {
        let pending = matches!(manifest::sandbox_readiness(view), Readiness::Pending(_))
            && view.metadata.deletion_timestamp.is_none();
        let pod = if pending {
            self.get_pod(view.pod_name()).await?
        } else {
            None
        };
        let (state, reason) = manifest::sandbox_state(view, pod.as_ref());
        self.contract_sandbox(
            &view.metadata,
            state,
            reason,
            view.spec.shutdown_time.as_deref(),
        )
    }

    /// Builds the contract view of a claim.
    fn sandbox_from_claim(&self, view: &ClaimView) -> Result<Sandbox, Error> {
        let (state, reason) = if view.metadata.deletion_timestamp.is_some() {
            (SandboxState::Deleting, None)
        } else {
            match manifest::claim_readiness(view) {
                ClaimReadiness::Ready(_) => (SandboxState::Running, None),
                ClaimReadiness::Refused { reason, .. }
                    if reason == "ClaimExpired" || reason == "SandboxExpired" =>
                {
                    (SandboxState::Deleting, Some(reason))
                }
                ClaimReadiness::Refused { reason, message } => {
                    (SandboxState::Failed, Some(format!("{reason}: {message}")))
                }
                ClaimReadiness::Pending(why) => (SandboxState::Creating, Some(why)),
            }
        };
        let shutdown = view
            .spec
            .lifecycle
            .as_ref()
            .and_then(|l| l.shutdown_time.as_deref());
        self.contract_sandbox(&view.metadata, state, reason, shutdown)
    }

    /// Builds a contract [`Sandbox`] from an object's metadata.
    fn contract_sandbox(
        &self,
        meta: &manifest::ObjectMeta,
        state: SandboxState,
        reason: Option<String>,
        shutdown_time: Option<&str>,
    ) -> Result<Sandbox, Error> {
        let id = meta
            .labels
            .get(ID_LABEL)
            .unwrap_or(&meta.name)
            .parse::<SandboxId>()
            .or_else(|_| meta.name.parse::<SandboxId>())
            .map_err(|_| {
                Error::internal(format!(
                    "the object {} of pool {} is not named after a sandbox id",
                    meta.name, self.inner.pool.name
                ))
            })?;
        Ok(Sandbox {
            id,
            state,
            template: meta.annotations.get(TEMPLATE_ANNOTATION).cloned(),
            created_at: meta
                .creation_timestamp
                .as_deref()
                .and_then(manifest::parse_time),
            expires_at: shutdown_time.and_then(manifest::parse_time),
            provider_ref: format!("{}/{}", self.inner.namespace, meta.name),
            labels: manifest::request_labels(&meta.labels),
            reason,
        })
    }

    /// Polls `probe` until it says done, within the readiness timeout ([`poll::until_ready`]).
    async fn poll<T>(&self, what: &str, probe: impl AsyncProbe<T>) -> Result<T, Error> {
        poll::until_ready(self.inner.ready_timeout, what, probe).await
    }

    /// Waits until the suspended Sandbox `name` has no pod left: its pod ends once its main
    /// process does, at the latest when `terminationGracePeriodSeconds` runs out. A timeout
    /// says the pod is still terminating.
    async fn wait_stopped(&self, name: &str) -> Result<SandboxView, Error> {
        self.poll(
            &format!("sandbox {name} had not stopped"),
            StoppedProbe {
                provider: self,
                name,
            },
        )
        .await
    }

    /// Waits until the Sandbox `name` is ready for its current generation, failing fast on a
    /// missing image (the Sandbox is then deleted) or a crash loop.
    async fn wait_sandbox_ready(&self, name: &str) -> Result<SandboxView, Error> {
        self.poll(
            &format!("sandbox {name} was not ready"),
            SandboxProbe {
                provider: self,
                name,
            },
        )
        .await
    }

    /// Waits until the claim `name` is ready, failing fast on reasons that will not change.
    async fn wait_claim_ready(&self, name: &str) -> Result<ClaimView, Error> {
        self.poll(
            &format!("sandbox {name} was not ready"),
            ClaimProbe {
                provider: self,
                name,
            },
        )
        .await
    }

    /// Reads the pod of a not-yet-ready Sandbox for a problem waiting will not fix.
    async fn check_pod(&self, sandbox: &str, pod: &str) -> Result<(), Error> {
        let Some(pod) = self.get_pod(pod).await? else {
            return Ok(());
        };
        match manifest::pod_problem(&pod) {
            None => Ok(()),
            Some(PodProblem::MissingImage(detail)) => {
                tracing::debug!(sandbox, "image cannot be pulled; removing the sandbox");
                self.remove(sandbox).await?;
                Err(Error::invalid_request(format!(
                    "the image cannot be pulled ({detail}); sandbox {sandbox} was removed"
                )))
            }
            Some(PodProblem::CrashLoop(detail) | PodProblem::Ended(detail)) => Err(
                Error::sandbox_failed(format!("sandbox {sandbox} cannot run: {detail}")),
            ),
        }
    }

    /// Deletes the object of sandbox `name` (Sandbox or claim, by mode).
    async fn remove(&self, name: &str) -> Result<(), Error> {
        let path = match self.inner.mode {
            Mode::Direct => format!("{}/{name}", self.sandboxes_path()),
            Mode::Warm { .. } => format!("{}/{name}", self.claims_path()),
        };
        self.inner.client.delete(&path).await.map_err(Error::from)
    }

    /// Returns the shutdown time for `ttl` when the pool offers the TTL backstop.
    fn shutdown_for(&self, ttl: Option<Duration>) -> Option<String> {
        if !self.inner.capabilities.contains(Capability::Ttl) {
            return None;
        }
        ttl.and_then(|ttl| manifest::shutdown_time(self.inner.clock.now(), ttl))
    }

    /// Creates (or adopts) a Sandbox in direct mode and waits for it.
    async fn create_direct(&self, request: &CreateRequest) -> Result<Sandbox, Error> {
        let expose = self.inner.capabilities.contains(Capability::PortsExpose);
        let manifest = manifest::sandbox_manifest(
            &self.inner.pool.name,
            &self.inner.pool.config,
            request,
            expose,
            self.shutdown_for(request.ttl),
        );
        let name = request.id.as_str();
        match self
            .inner
            .client
            .create::<_, SandboxView>(&self.sandboxes_path(), &manifest)
            .await
        {
            Ok(_) => tracing::debug!(sandbox = name, "Sandbox created"),
            Err(e) if e.is_conflict() => {
                let existing = adoptable(name, self.get_sandbox(name).await, |v| &v.metadata)?;
                if existing.is_suspended_mode() {
                    return self.sandbox_from_direct(&existing).await;
                }
                tracing::debug!(sandbox = name, "Sandbox exists; adopting it");
            }
            Err(e) => return Err(e.into()),
        }
        let ready = self.wait_sandbox_ready(name).await?;
        self.sandbox_from_direct(&ready).await
    }

    /// Creates (or adopts) a claim in warm-pool mode and waits for it.
    async fn create_warm(
        &self,
        request: &CreateRequest,
        warm_pool: &str,
    ) -> Result<Sandbox, Error> {
        if let Some(template) = &request.template
            && template != warm_pool
        {
            return Err(Error::invalid_request(format!(
                "template {template} is not offered; this pool offers only {warm_pool}"
            )));
        }
        let manifest = manifest::claim_manifest(
            &self.inner.pool.name,
            warm_pool,
            self.inner.pool.config.container.as_deref(),
            request,
            self.shutdown_for(request.ttl),
        );
        let name = request.id.as_str();
        match self
            .inner
            .client
            .create::<_, ClaimView>(&self.claims_path(), &manifest)
            .await
        {
            Ok(_) => tracing::debug!(sandbox = name, "SandboxClaim created"),
            Err(e) if e.is_conflict() => {
                adoptable(name, self.get_claim(name).await, |v| &v.metadata)?;
            }
            Err(e) => return Err(e.into()),
        }
        let ready = self.wait_claim_ready(name).await?;
        self.sandbox_from_claim(&ready)
    }

    /// Finds where to exec in sandbox `id`, checking that it is running.
    async fn target(&self, id: &SandboxId) -> Result<Target, Error> {
        match &self.inner.mode {
            Mode::Direct => {
                let view = self.get_sandbox(id.as_str()).await?;
                let sandbox = self.sandbox_from_direct(&view).await?;
                check_running(&sandbox)?;
                Ok(Target {
                    namespace: self.inner.namespace.clone(),
                    pod: view.pod_name().to_owned(),
                    container: Some(
                        self.inner
                            .pool
                            .config
                            .container
                            .clone()
                            .unwrap_or_else(|| manifest::CONTAINER_NAME.to_owned()),
                    ),
                })
            }
            Mode::Warm { .. } => {
                let view = self.get_claim(id.as_str()).await?;
                let sandbox = self.sandbox_from_claim(&view)?;
                check_running(&sandbox)?;
                let pod = view
                    .status
                    .sandbox
                    .as_ref()
                    .map(|s| s.name.clone())
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| Error::invalid_state(format!("sandbox {id} has no pod yet")))?;
                Ok(Target {
                    namespace: self.inner.namespace.clone(),
                    pod,
                    container: self.inner.pool.config.container.clone(),
                })
            }
        }
    }

    /// Looks up where to exec in sandbox `id` while opening the connection the exec will
    /// upgrade, so that the TLS handshake costs no time of its own. A connection that fails to
    /// open is opened again, and its failure reported, by [`open`](Self::open).
    ///
    /// In direct mode the pod an earlier exec ran in is used without a lookup (the returned
    /// flag says so), unless `fresh`: the Sandbox's pod has the Sandbox's name, so it is the
    /// same sandbox's pod or gone. The lookup, a GET of the Sandbox, cost about a fifth of an
    /// exec round trip.
    async fn exec_target(
        &self,
        id: &SandboxId,
        fresh: bool,
    ) -> Result<(Target, Option<UpgradeConnection>, bool), Error> {
        if !fresh && let Some(target) = self.remembered_target(id) {
            let connection = self.inner.client.connect_for_upgrade().await;
            return Ok((target, connection.ok(), true));
        }
        let (target, connection) =
            tokio::join!(self.target(id), self.inner.client.connect_for_upgrade());
        let target = target?;
        if matches!(self.inner.mode, Mode::Direct)
            && let Ok(mut targets) = self.inner.targets.lock()
        {
            targets.insert(id.as_str().to_owned(), target.clone());
        }
        Ok((target, connection.ok(), false))
    }

    /// The pod an earlier exec in sandbox `id` ran in, if any.
    fn remembered_target(&self, id: &SandboxId) -> Option<Target> {
        let targets = self.inner.targets.lock().ok()?;
        targets.get(id.as_str()).cloned()
    }

    /// Forgets the pod of sandbox `id` (it is being stopped or deleted, or refused an exec).
    fn forget_target(&self, id: &SandboxId) {
        if let Ok(mut targets) = self.inner.targets.lock() {
            targets.remove(id.as_str());
        }
    }

    /// Returns the protocol the server chose last, probing with `true` if unknown.
    async fn protocol(&self, target: &Target) -> Result<Protocol, Error> {
        if let Some(protocol) = self.cached_protocol() {
            return Ok(protocol);
        }
        let (socket, protocol) = self.open(target, None, &["true".to_owned()], false).await?;
        let _ = exec::session(socket, protocol, StdinPlan::None, None)
            .wait_with_output()
            .await;
        Ok(protocol)
    }

    /// The protocol the server chose last.
    fn cached_protocol(&self) -> Option<Protocol> {
        self.inner.protocol.lock().ok().and_then(|p| *p)
    }

    /// Opens an exec, remembering the protocol and mapping failures to contract errors.
    async fn open(
        &self,
        target: &Target,
        connection: Option<UpgradeConnection>,
        command: &[String],
        stdin: bool,
    ) -> Result<(exec::Socket, Protocol), Error> {
        let connection = match connection {
            Some(c) => c,
            None => self.inner.client.connect_for_upgrade().await?,
        };
        match exec::open(&self.inner.client, connection, target, command, stdin).await {
            Ok((socket, protocol)) => {
                if let Ok(mut cached) = self.inner.protocol.lock() {
                    *cached = Some(protocol);
                }
                Ok((socket, protocol))
            }
            Err(OpenError::Status { code: 404, .. }) => Err(Error::invalid_state(format!(
                "the pod {} of the sandbox is gone (stopped or being replaced)",
                target.pod
            ))),
            Err(OpenError::Status {
                code: 400, error, ..
            }) => Err(Error::invalid_state(format!(
                "the sandbox cannot run commands now: {}",
                error.message()
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Starts `argv` in sandbox `id` with `stdin` and returns its session. When the pod an
    /// earlier exec ran in refuses this one (it is gone or not running), the Sandbox is read
    /// again, which gives the error a lookup gives or the pod to try once more.
    async fn start_exec(
        &self,
        id: &SandboxId,
        argv: &[String],
        stdin: StdinPlan,
        timeout: Option<Duration>,
    ) -> Result<ExecSession, Error> {
        let wants_stdin = !matches!(stdin, StdinPlan::None);
        // The protocol's probe runs where a lookup says the sandbox runs.
        let fresh = wants_stdin && self.cached_protocol().is_none();
        let (target, connection, remembered) = self.exec_target(id, fresh).await?;
        if wants_stdin {
            let protocol = self.protocol(&target).await?;
            if !protocol.can_close_stdin() {
                return Err(exec::stdin_unsupported(protocol));
            }
        }
        let (socket, protocol) = match self.open(&target, connection, argv, wants_stdin).await {
            Err(e) if remembered && e.is_invalid_state() => {
                tracing::debug!(sandbox = %id, "the pod of the last exec refused; looking it up");
                self.forget_target(id);
                let (target, connection, _) = self.exec_target(id, true).await?;
                self.open(&target, connection, argv, wants_stdin).await?
            }
            opened => opened?,
        };
        if wants_stdin && !protocol.can_close_stdin() {
            drop(socket);
            return Err(exec::stdin_unsupported(protocol));
        }
        Ok(exec::session(socket, protocol, stdin, timeout))
    }

    /// Checks an exec request and builds its stdin plan.
    fn exec_plan(&self, request: &ExecRequest, streaming: bool) -> Result<StdinPlan, Error> {
        request.validate()?;
        match &request.stdin {
            Stdin::Empty => Ok(StdinPlan::None),
            Stdin::Streamed if !streaming => Err(Error::invalid_request(
                "streamed stdin needs exec_stream; exec takes Stdin::Bytes",
            )),
            Stdin::Bytes(data) => {
                self.require(Capability::Stdin, "stdin")?;
                Ok(StdinPlan::Bytes(data.clone()))
            }
            Stdin::Streamed => {
                self.require(Capability::Stdin, "stdin")?;
                Ok(StdinPlan::Streamed)
            }
        }
    }

    /// Runs a file script in sandbox `id` and returns its exit code and output, refusing more
    /// than `max_stdout` bytes of stdout without keeping them.
    async fn run_script(
        &self,
        id: &SandboxId,
        argv: Vec<String>,
        stdin: StdinPlan,
        max_stdout: u64,
    ) -> Result<Option<ExecOutput>, Error> {
        let mut session = self.start_exec(id, &argv, stdin, None).await?;
        let mut stdout = BytesMut::new();
        let mut stderr = BytesMut::new();
        while let Some(event) = session.next_event().await {
            match event? {
                ExecEvent::Stdout(chunk) => {
                    if (stdout.len() + chunk.len()) as u64 > max_stdout {
                        return Ok(None);
                    }
                    stdout.extend_from_slice(&chunk);
                }
                ExecEvent::Stderr(chunk) => {
                    if stderr.len() < 64 * 1024 {
                        stderr.extend_from_slice(&chunk);
                    }
                }
                ExecEvent::Exit(exit_code) => {
                    return Ok(Some(ExecOutput {
                        exit_code,
                        stdout: stdout.freeze(),
                        stderr: stderr.freeze(),
                    }));
                }
            }
        }
        Err(Error::unavailable(
            "the exec stream ended before the command's exit code arrived",
        ))
    }

    /// Runs a file script whose output is small, mapping its exit codes to errors.
    async fn file_script(
        &self,
        id: &SandboxId,
        path: &str,
        argv: Vec<String>,
        stdin: StdinPlan,
    ) -> Result<Bytes, Error> {
        let output = self
            .run_script(id, argv, stdin, 16 << 20)
            .await?
            .ok_or_else(|| Error::internal("a file operation printed too much"))?;
        if output.exit_code == 0 {
            Ok(output.stdout)
        } else {
            Err(files::script_error(
                path,
                output.exit_code,
                &output.stdout,
                &output.stderr,
            ))
        }
    }

    /// Changes a Sandbox's `operatingMode`.
    async fn set_mode(&self, name: &str, mode: &str) -> Result<(), Error> {
        let path = format!("{}/{name}", self.sandboxes_path());
        self.inner
            .client
            .merge_patch::<SandboxView>(&path, &json!({"spec": {"operatingMode": mode}}))
            .await
            .map(|_| ())
            .map_err(|e| not_found_as(e, name))
    }
}

/// Maps a 404 to this sandbox's `not_found`.
fn not_found_as(error: KubeError, name: &str) -> Error {
    if error.is_not_found() {
        Error::not_found(format!("sandbox {name} does not exist"))
    } else {
        error.into()
    }
}

/// Answers `sandbox_failed` for a failed sandbox and `invalid_state` for any other not running.
fn check_running(sandbox: &Sandbox) -> Result<(), Error> {
    match sandbox.state {
        SandboxState::Running => Ok(()),
        SandboxState::Failed => Err(Error::sandbox_failed(format!(
            "sandbox {} has failed: {}",
            sandbox.id,
            sandbox.reason.as_deref().unwrap_or("unknown reason")
        ))),
        state => Err(Error::invalid_state(format!(
            "sandbox {} is {state}, not running",
            sandbox.id
        ))),
    }
}

/// Polls a Sandbox's readiness.
struct SandboxProbe<'a> {
    /// The provider.
    provider: &'a AgentSandbox,
    /// The Sandbox.
    name: &'a str,
}

impl AsyncProbe<SandboxView> for SandboxProbe<'_> {
    async fn step(&mut self) -> Result<Step<SandboxView>, Error> {
        let view = still_starting(self.name, self.provider.get_sandbox(self.name).await, |v| {
            &v.metadata
        })?;
        match manifest::sandbox_readiness(&view) {
            Readiness::Ready => Ok(Step::Done(view)),
            Readiness::Expired => Err(Error::invalid_state(format!(
                "sandbox {} reached its shutdown time",
                self.name
            ))),
            Readiness::Failed(why) => Err(Error::sandbox_failed(format!(
                "sandbox {} cannot run: {why}",
                self.name
            ))),
            Readiness::Suspended { .. } => Ok(Step::Wait("the sandbox is suspended".into())),
            Readiness::Refused(why) => {
                tracing::debug!(
                    sandbox = self.name,
                    "the pod is refused; removing the sandbox"
                );
                self.provider.remove(self.name).await?;
                Err(Error::invalid_request(format!(
                    "the cluster refuses the sandbox's pod ({why}); sandbox {} was removed",
                    self.name
                )))
            }
            Readiness::Pending(why) => {
                self.provider.check_pod(self.name, view.pod_name()).await?;
                Ok(Step::Wait(why))
            }
        }
    }
}

/// Polls a claim's readiness.
struct ClaimProbe<'a> {
    /// The provider.
    provider: &'a AgentSandbox,
    /// The claim.
    name: &'a str,
}

impl AsyncProbe<ClaimView> for ClaimProbe<'_> {
    async fn step(&mut self) -> Result<Step<ClaimView>, Error> {
        let view = still_starting(self.name, self.provider.get_claim(self.name).await, |v| {
            &v.metadata
        })?;
        match manifest::claim_readiness(&view) {
            ClaimReadiness::Ready(_) => Ok(Step::Done(view)),
            ClaimReadiness::Refused { reason, message } => {
                let code = match reason.as_str() {
                    "EnvVarsInjectionRejected"
                    | "InvalidMetadata"
                    | "VolumeClaimTemplatesError" => ErrorCode::InvalidRequest,
                    "WarmPoolNotFound" | "TemplateNotFound" => ErrorCode::Unavailable,
                    "ClaimExpired" | "SandboxExpired" => ErrorCode::InvalidState,
                    _ => ErrorCode::SandboxFailed,
                };
                let hint = if reason == "EnvVarsInjectionRejected" {
                    " (request env needs the SandboxTemplate's envVarsInjectionPolicy: Allowed)"
                } else {
                    ""
                };
                if code != ErrorCode::SandboxFailed {
                    self.provider.remove(self.name).await?;
                }
                Err(Error::new(
                    code,
                    format!(
                        "the claim for sandbox {} was refused: {reason}: {message}{hint}",
                        self.name
                    ),
                ))
            }
            ClaimReadiness::Pending(why) => {
                if let Some(sandbox) = view.status.sandbox.as_ref().filter(|s| !s.name.is_empty()) {
                    self.provider.check_pod(self.name, &sandbox.name).await?;
                }
                Ok(Step::Wait(why))
            }
        }
    }
}

#[async_trait]
impl Provider for AgentSandbox {
    async fn info(&self) -> Result<ProviderInfo, Error> {
        let (templates, accepts_unlisted_templates) = match &self.inner.mode {
            Mode::Direct => (
                vec![Template {
                    name: self.inner.pool.config.image.clone(),
                    description: Some(
                        "the default image; any image name is accepted as a template".to_owned(),
                    ),
                }],
                true,
            ),
            Mode::Warm { pool } => (
                vec![Template {
                    name: pool.clone(),
                    description: Some("the SandboxWarmPool this pool claims from".to_owned()),
                }],
                false,
            ),
        };
        Ok(ProviderInfo {
            name: ADAPTER_NAME.to_owned(),
            capabilities: self.inner.capabilities.clone(),
            templates,
            accepts_unlisted_templates,
            limits: Limits {
                max_read_bytes: Some(MAX_READ_BYTES),
                max_write_bytes: None,
                max_sandboxes: None,
            },
        })
    }

    async fn health(&self) -> Result<Health, Error> {
        let result = match &self.inner.mode {
            Mode::Direct => {
                let path = format!("{}?limit=1", self.sandboxes_path());
                self.inner
                    .client
                    .get::<serde_json::Value>(&path)
                    .await
                    .map(|_| Health::healthy())
            }
            Mode::Warm { pool } => {
                let path = format!(
                    "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{}/sandboxwarmpools/{pool}",
                    self.inner.namespace
                );
                match self.inner.client.get::<serde_json::Value>(&path).await {
                    Ok(_) => Ok(Health::healthy()),
                    Err(e) if e.is_not_found() => Ok(Health::unhealthy(format!(
                        "the SandboxWarmPool {pool} does not exist in namespace {}",
                        self.inner.namespace
                    ))),
                    Err(e) => Err(e),
                }
            }
        };
        Ok(result.unwrap_or_else(|e| Health::unhealthy(Error::from(e).to_string())))
    }

    async fn create(&self, request: CreateRequest) -> Result<Sandbox, Error> {
        request.validate()?;
        match &self.inner.mode {
            Mode::Direct => self.create_direct(&request).await,
            Mode::Warm { pool } => {
                let pool = pool.clone();
                self.create_warm(&request, &pool).await
            }
        }
    }

    async fn get(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        match &self.inner.mode {
            Mode::Direct => {
                let view = self.get_sandbox(id.as_str()).await?;
                self.sandbox_from_direct(&view).await
            }
            Mode::Warm { .. } => {
                let view = self.get_claim(id.as_str()).await?;
                self.sandbox_from_claim(&view)
            }
        }
    }

    async fn list(&self) -> Result<Vec<Sandbox>, Error> {
        match &self.inner.mode {
            Mode::Direct => {
                let views: Vec<SandboxView> = self.list_all(&self.sandboxes_path()).await?;
                let mut sandboxes = Vec::with_capacity(views.len());
                for view in &views {
                    sandboxes.push(self.sandbox_from_direct(view).await?);
                }
                Ok(sandboxes)
            }
            Mode::Warm { .. } => {
                let views: Vec<ClaimView> = self.list_all(&self.claims_path()).await?;
                views.iter().map(|v| self.sandbox_from_claim(v)).collect()
            }
        }
    }

    async fn delete(&self, id: &SandboxId) -> Result<(), Error> {
        self.forget_target(id);
        let exists = match &self.inner.mode {
            Mode::Direct => self.get_sandbox(id.as_str()).await.map(|_| ()),
            Mode::Warm { .. } => self.get_claim(id.as_str()).await.map(|_| ()),
        };
        match exists {
            Ok(()) => {
                self.remove(id.as_str()).await?;
                tracing::debug!(sandbox = %id, "deleted");
                Ok(())
            }
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn exec(&self, id: &SandboxId, request: ExecRequest) -> Result<ExecOutput, Error> {
        self.require(Capability::Exec, "exec")?;
        let plan = self.exec_plan(&request, false)?;
        let argv = exec::command_line(&request);
        self.start_exec(id, &argv, plan, request.timeout)
            .await?
            .wait_with_output()
            .await
    }

    async fn exec_stream(
        &self,
        id: &SandboxId,
        request: ExecRequest,
    ) -> Result<ExecSession, Error> {
        self.require(Capability::ExecStream, "exec_stream")?;
        let plan = self.exec_plan(&request, true)?;
        let argv = exec::command_line(&request);
        self.start_exec(id, &argv, plan, request.timeout).await
    }

    async fn write_file(&self, id: &SandboxId, path: &str, data: Bytes) -> Result<(), Error> {
        self.require(Capability::Files, "write_file")?;
        validate_path(path)?;
        let argv = files::script(files::WRITE, &[path]);
        self.file_script(id, path, argv, StdinPlan::Bytes(data))
            .await
            .map(|_| ())
    }

    async fn read_file(&self, id: &SandboxId, path: &str, max_bytes: u64) -> Result<Bytes, Error> {
        self.require(Capability::Files, "read_file")?;
        validate_path(path)?;
        let cap = max_bytes.min(MAX_READ_BYTES);
        let argv = files::script(files::READ, &[path, &cap.to_string()]);
        let output = self
            .run_script(id, argv, StdinPlan::None, cap)
            .await?
            .ok_or_else(|| {
                Error::invalid_request(format!("{path} has more than {cap} bytes, the cap"))
            })?;
        if output.exit_code == 0 {
            Ok(output.stdout)
        } else {
            Err(files::script_error(
                path,
                output.exit_code,
                &output.stdout,
                &output.stderr,
            ))
        }
    }

    async fn list_dir(&self, id: &SandboxId, path: &str) -> Result<Vec<FileInfo>, Error> {
        self.require(Capability::Files, "list_dir")?;
        validate_path(path)?;
        let argv = files::script(files::LIST, &[path]);
        let output = self.file_script(id, path, argv, StdinPlan::None).await?;
        files::parse_list(path, &output)
    }

    async fn stat(&self, id: &SandboxId, path: &str) -> Result<FileInfo, Error> {
        self.require(Capability::Files, "stat")?;
        validate_path(path)?;
        let argv = files::script(files::STAT, &[path]);
        let output = self.file_script(id, path, argv, StdinPlan::None).await?;
        files::parse_stat(path, &output)
    }

    async fn mkdir(&self, id: &SandboxId, path: &str) -> Result<(), Error> {
        self.require(Capability::Files, "mkdir")?;
        validate_path(path)?;
        let argv = files::script(files::MKDIR, &[path]);
        self.file_script(id, path, argv, StdinPlan::None)
            .await
            .map(|_| ())
    }

    async fn stop(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.require(Capability::LifecycleStopStart, "stop")?;
        self.forget_target(id);
        let name = id.as_str();
        let view = self.get_sandbox(name).await?;
        let sandbox = self.sandbox_from_direct(&view).await?;
        match sandbox.state {
            SandboxState::Stopped => return Ok(sandbox),
            SandboxState::Running | SandboxState::Stopping => {}
            SandboxState::Failed => return check_running(&sandbox).map(|()| sandbox),
            state => {
                return Err(Error::invalid_state(format!(
                    "sandbox {id} is {state}; only a running sandbox can be stopped"
                )));
            }
        }
        if !view.is_suspended_mode() {
            self.set_mode(name, "Suspended").await?;
        }
        let stopped = self.wait_stopped(name).await?;
        self.sandbox_from_direct(&stopped).await
    }

    async fn start(&self, id: &SandboxId) -> Result<Sandbox, Error> {
        self.require(Capability::LifecycleStopStart, "start")?;
        let name = id.as_str();
        let view = self.get_sandbox(name).await?;
        let sandbox = self.sandbox_from_direct(&view).await?;
        match sandbox.state {
            SandboxState::Running => return Ok(sandbox),
            SandboxState::Stopped | SandboxState::Stopping => {}
            SandboxState::Failed => return check_running(&sandbox).map(|()| sandbox),
            state => {
                return Err(Error::invalid_state(format!(
                    "sandbox {id} is {state}; only a stopped sandbox can be started"
                )));
            }
        }
        if sandbox.state == SandboxState::Stopping {
            // The new pod takes the old one's name, so on a cluster it comes only once the old
            // pod is gone: wait for the stop to finish first, so the readiness seen next is the
            // new pod's, not the terminating one's.
            self.wait_stopped(name).await?;
        }
        self.set_mode(name, "Running").await?;
        let ready = self.wait_sandbox_ready(name).await?;
        self.sandbox_from_direct(&ready).await
    }

    async fn expose_port(&self, id: &SandboxId, port: u16) -> Result<String, Error> {
        self.require(Capability::PortsExpose, "expose_port")?;
        if port == 0 {
            return Err(Error::invalid_request("port 0 cannot be exposed"));
        }
        match &self.inner.mode {
            Mode::Direct => {
                let view = self.get_sandbox(id.as_str()).await?;
                let sandbox = self.sandbox_from_direct(&view).await?;
                if sandbox.state == SandboxState::Failed {
                    check_running(&sandbox)?;
                }
                Ok(format!(
                    "http://{}.{}.svc.cluster.local:{port}",
                    view.metadata.name, self.inner.namespace
                ))
            }
            Mode::Warm { .. } => {
                let view = self.get_claim(id.as_str()).await?;
                check_running(&self.sandbox_from_claim(&view)?)?;
                let ip = view
                    .status
                    .sandbox
                    .as_ref()
                    .and_then(|s| s.pod_ips.first())
                    .filter(|ip| !ip.is_empty())
                    .ok_or_else(|| {
                        Error::invalid_state(format!("sandbox {id} has no pod IP yet"))
                    })?;
                Ok(if ip.contains(':') {
                    format!("http://[{ip}]:{port}")
                } else {
                    format!("http://{ip}:{port}")
                })
            }
        }
    }

    async fn set_ttl(&self, id: &SandboxId, ttl: Option<Duration>) -> Result<Sandbox, Error> {
        self.require(Capability::Ttl, "set_ttl")?;
        if ttl == Some(Duration::ZERO) {
            return Err(Error::invalid_request("ttl must be positive"));
        }
        let shutdown = match ttl {
            Some(ttl) => Some(
                manifest::shutdown_time(self.inner.clock.now(), ttl)
                    .ok_or_else(|| Error::invalid_request("ttl is too large"))?,
            ),
            None => None,
        };
        let name = id.as_str();
        match &self.inner.mode {
            Mode::Direct => {
                self.get_sandbox(name).await?;
                let patch = match &shutdown {
                    Some(at) => json!({"spec": {"shutdownTime": at, "shutdownPolicy": "Delete"}}),
                    None => json!({"spec": {"shutdownTime": null}}),
                };
                let path = format!("{}/{name}", self.sandboxes_path());
                let view: SandboxView = self
                    .inner
                    .client
                    .merge_patch(&path, &patch)
                    .await
                    .map_err(|e| not_found_as(e, name))?;
                self.sandbox_from_direct(&view).await
            }
            Mode::Warm { .. } => {
                self.get_claim(name).await?;
                let patch = match &shutdown {
                    Some(at) => {
                        json!({"spec": {"lifecycle": {"shutdownTime": at, "shutdownPolicy": "Delete"}}})
                    }
                    None => json!({"spec": {"lifecycle": {"shutdownTime": null}}}),
                };
                let path = format!("{}/{name}", self.claims_path());
                let view: ClaimView = self
                    .inner
                    .client
                    .merge_patch(&path, &patch)
                    .await
                    .map_err(|e| not_found_as(e, name))?;
                self.sandbox_from_claim(&view)
            }
        }
    }
}

/// Polls a Sandbox until its pod is gone after a stop.
struct StoppedProbe<'a> {
    /// The provider.
    provider: &'a AgentSandbox,
    /// The Sandbox.
    name: &'a str,
}

impl AsyncProbe<SandboxView> for StoppedProbe<'_> {
    async fn step(&mut self) -> Result<Step<SandboxView>, Error> {
        let view = self.provider.get_sandbox(self.name).await?;
        match manifest::sandbox_readiness(&view) {
            Readiness::Suspended { done: true } => Ok(Step::Done(view)),
            _ => Ok(Step::Wait(
                "its pod is still terminating (a main process that ignores SIGTERM keeps it until \
                 the pod's terminationGracePeriodSeconds, 30 s by default, run out)"
                    .to_owned(),
            )),
        }
    }
}

/// A sandbox being waited for, as just read: one that vanished meanwhile is `unavailable` (the
/// create did not hold), one being deleted is a `conflict`.
fn still_starting<T>(
    name: &str,
    lookup: Result<T, Error>,
    meta: impl Fn(&T) -> &manifest::ObjectMeta,
) -> Result<T, Error> {
    let view = lookup.map_err(|e| {
        if e.is_not_found() {
            Error::unavailable(format!("sandbox {name} was deleted while starting"))
        } else {
            e
        }
    })?;
    if meta(&view).deletion_timestamp.is_some() {
        return Err(Error::conflict(format!("sandbox {name} is being deleted")));
    }
    Ok(view)
}

/// After a create answered AlreadyExists: the existing object, when a second create may adopt
/// it. One this pool cannot see as its own (the lookup is `not_found`) or one being deleted is
/// a `conflict`.
fn adoptable<T>(
    name: &str,
    lookup: Result<T, Error>,
    meta: impl Fn(&T) -> &manifest::ObjectMeta,
) -> Result<T, Error> {
    let existing = lookup.map_err(|error| {
        if error.is_not_found() {
            Error::conflict(format!(
                "an object named {name} exists but is not this pool's sandbox"
            ))
        } else {
            error
        }
    })?;
    if meta(&existing).deletion_timestamp.is_some() {
        return Err(Error::conflict(format!("sandbox {name} is being deleted")));
    }
    Ok(existing)
}
