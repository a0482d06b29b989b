//! How [`AgentSandbox`](crate::AgentSandbox) connects: the API server, its CA and the token
//! (or client certificate), from the pool config, a kubeconfig or the in-cluster service
//! account, and the options that choose among them ([`ConnectOptions`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use secrecy::ExposeSecret;

use crate::clock::Clock;
use crate::config::{CredentialSource, PoolConfig};
use crate::credentials::{EnvLookup, ExecPlugin, SecretResolver, TokenSource};
use crate::identity::{CertSlot, certified_key, filled_slot};
use crate::kubeconfig::{KubeToken, Kubeconfig, KubeconfigError};

/// Where an in-cluster pod finds its service account token, CA and namespace.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// How long create and start wait for readiness by default.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(300);

/// The page size of lists by default.
const PAGE_SIZE: u32 = 100;

/// Why a provider could not be set up.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SetupError {
    /// A pool key is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The kubeconfig cannot be used.
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
}

/// Which kubeconfig to consider when the pool sets no `apiServer`.
#[derive(Debug, Clone)]
enum KubeconfigChoice {
    /// The first file named by the `KUBECONFIG` environment variable, if set.
    FromEnv,
    /// This file.
    Path(PathBuf),
    /// This text (for tests and embedding).
    Text(String),
    /// None: only `apiServer` or in-cluster.
    Disabled,
}

/// How [`AgentSandbox::connect`] finds what the pool config does not say: the kubeconfig, the
/// environment, the host's secret resolver, the in-cluster service account, timeouts.
#[derive(Clone)]
pub struct ConnectOptions {
    /// Which kubeconfig.
    kubeconfig: KubeconfigChoice,
    /// The kubeconfig context to use instead of its current one.
    context: Option<String>,
    /// How environment variables are read.
    env: EnvLookup,
    /// The host's secret resolver.
    secrets: Option<Arc<dyn SecretResolver>>,
    /// The service account directory.
    service_account_dir: PathBuf,
    /// How long create and start wait for readiness.
    pub(crate) ready_timeout: Duration,
    /// How many objects a list asks for per page.
    pub(crate) page_size: u32,
    /// What `shutdownTime` is computed from.
    pub(crate) clock: Clock,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field(
                "kubeconfig",
                &matches!(self.kubeconfig, KubeconfigChoice::Text(_)),
            )
            .field("service_account_dir", &self.service_account_dir)
            .field("ready_timeout", &self.ready_timeout)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            kubeconfig: KubeconfigChoice::FromEnv,
            context: None,
            env: Arc::new(|name| std::env::var(name).ok()),
            secrets: None,
            service_account_dir: PathBuf::from(SERVICE_ACCOUNT_DIR),
            ready_timeout: DEFAULT_READY_TIMEOUT,
            page_size: PAGE_SIZE,
            clock: Clock::system(),
        }
    }
}

impl ConnectOptions {
    /// Options reading the process environment (`KUBECONFIG`, `KUBERNETES_SERVICE_HOST`, and
    /// `credentials.env` variables) and the standard service account directory.
    pub fn from_env() -> Self {
        ConnectOptions::default()
    }

    /// Uses the kubeconfig at `path` when the pool sets no `apiServer`.
    pub fn with_kubeconfig_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.kubeconfig = KubeconfigChoice::Path(path.into());
        self
    }

    /// Uses this kubeconfig text when the pool sets no `apiServer`.
    pub fn with_kubeconfig_yaml(mut self, text: impl Into<String>) -> Self {
        self.kubeconfig = KubeconfigChoice::Text(text.into());
        self
    }

    /// Uses the kubeconfig's context `name` instead of its `current-context`.
    pub fn with_context(mut self, name: impl Into<String>) -> Self {
        self.context = Some(name.into());
        self
    }

    /// Ignores any kubeconfig.
    pub fn without_kubeconfig(mut self) -> Self {
        self.kubeconfig = KubeconfigChoice::Disabled;
        self
    }

    /// Reads environment variables through `lookup` instead of the process environment.
    pub fn with_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.env = Arc::new(lookup);
        self
    }

    /// Resolves `credentials: {secret: <name>}` through `resolver`.
    pub fn with_secret_resolver(mut self, resolver: Arc<dyn SecretResolver>) -> Self {
        self.secrets = Some(resolver);
        self
    }

    /// Looks for the in-cluster token, `ca.crt` and namespace in `dir`.
    pub fn with_service_account_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.service_account_dir = dir.into();
        self
    }

    /// Waits at most `timeout` for a sandbox to become ready in create and start.
    pub fn with_ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Lists `size` objects per page (100 by default; at least 1).
    pub fn with_page_size(mut self, size: u32) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// Computes `shutdownTime` from `clock` instead of the system clock: for tests against a
    /// fake API server whose clock they move (see [`Clock`]). On a real cluster keep the
    /// default.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }
}

/// The server, CA, token source and namespace a pool resolves to.
pub(crate) struct Endpoint {
    /// The API server URL.
    pub(crate) server: String,
    /// Its CA, PEM.
    pub(crate) ca_pem: Vec<u8>,
    /// Where the token comes from.
    pub(crate) token: TokenSource,
    /// The client certificate TLS presents, when there is one.
    pub(crate) identity: Option<CertSlot>,
    /// The namespace when the pool sets none.
    pub(crate) namespace: Option<String>,
}

/// Reads a file the pool names, with an error naming `key`.
fn read_named(key: &str, path: &Path) -> Result<Vec<u8>, SetupError> {
    std::fs::read(path).map_err(|e| {
        crate::config::ConfigError::caused_by(key, format!("cannot read {}", path.display()), e)
            .into()
    })
}

/// The token source of the pool's `credentials`, if it has them.
fn pool_token(pool: &PoolConfig, options: &ConnectOptions) -> Option<TokenSource> {
    pool.credentials.as_ref().map(|source| match source {
        CredentialSource::Env(var) => TokenSource::Env {
            var: var.clone(),
            lookup: options.env.clone(),
        },
        CredentialSource::File(path) => TokenSource::File(path.clone()),
        CredentialSource::Secret(name) => TokenSource::Secret {
            name: name.clone(),
            resolver: options.secrets.clone(),
        },
    })
}

/// Works out the endpoint: `apiServer`, else a kubeconfig, else the in-cluster service account.
pub(crate) fn resolve_endpoint(
    pool: &PoolConfig,
    options: &ConnectOptions,
) -> Result<Endpoint, SetupError> {
    let config = &pool.config;
    let sa = &options.service_account_dir;
    let sa_token = || {
        let path = sa.join("token");
        path.exists().then_some(TokenSource::File(path))
    };
    let ca_from_pool = || -> Result<Option<Vec<u8>>, SetupError> {
        config
            .ca_file
            .as_deref()
            .map(|path| read_named("config.caFile", path))
            .transpose()
    };
    let no_token = || -> SetupError {
        crate::config::ConfigError::new(
            "credentials",
            "no token: set credentials ({env|file|secret}), or run in a cluster with a service account",
        )
        .into()
    };
    if let Some(server) = &config.api_server {
        let ca_pem = match ca_from_pool()? {
            Some(pem) => pem,
            None if sa.join("ca.crt").exists() => read_named("config.caFile", &sa.join("ca.crt"))?,
            None => {
                return Err(crate::config::ConfigError::new(
                    "config.caFile",
                    "required with apiServer outside a cluster (TLS is always verified)",
                )
                .into());
            }
        };
        let token = pool_token(pool, options)
            .or_else(sa_token)
            .ok_or_else(no_token)?;
        return Ok(Endpoint {
            server: server.clone(),
            ca_pem,
            token,
            identity: None,
            namespace: None,
        });
    }
    let context = options.context.as_deref();
    let kubeconfig = match &options.kubeconfig {
        KubeconfigChoice::FromEnv => match (options.env)("KUBECONFIG") {
            Some(list) => list
                .split(':')
                .find(|p| !p.is_empty())
                .map(|p| Kubeconfig::from_path(Path::new(p), context))
                .transpose()?,
            None => None,
        },
        KubeconfigChoice::Path(path) => Some(Kubeconfig::from_path(path, context)?),
        KubeconfigChoice::Text(text) => Some(Kubeconfig::parse(text, "(inline)", None, context)?),
        KubeconfigChoice::Disabled => None,
    };
    if let Some(kc) = kubeconfig {
        let ca_pem = match ca_from_pool()? {
            Some(pem) => pem,
            None => kc.ca_pem.clone().ok_or_else(|| {
                crate::config::ConfigError::new(
                    "config.caFile",
                    "the kubeconfig's cluster has no certificate-authority; set caFile",
                )
            })?,
        };
        let identity = match &kc.client_cert {
            Some(pem) => Some(filled_slot(
                certified_key(&pem.cert_pem, pem.key_pem.expose_secret()).map_err(|e| {
                    crate::config::ConfigError::caused_by(
                        "kubeconfig",
                        "the user's client certificate cannot be used",
                        e,
                    )
                })?,
            )),
            None if kc.exec.is_some() => Some(CertSlot::default()),
            None => None,
        };
        let token = match (pool_token(pool, options), kc.token.clone(), &kc.exec) {
            (Some(token), _, _) => token,
            (None, Some(KubeToken::Inline(token)), _) => TokenSource::Static(token),
            (None, Some(KubeToken::File(path)), _) => TokenSource::File(path),
            (None, None, Some(exec)) => TokenSource::Exec(Arc::new(ExecPlugin::new(
                exec.clone(),
                &kc.server,
                &ca_pem,
                identity.clone().unwrap_or_default(),
            ))),
            (None, None, None) if identity.is_some() => TokenSource::None,
            (None, None, None) => return Err(no_token()),
        };
        return Ok(Endpoint {
            server: kc.server.clone(),
            ca_pem,
            token,
            identity,
            namespace: kc.namespace.clone(),
        });
    }
    if let Some(host) = (options.env)("KUBERNETES_SERVICE_HOST").filter(|h| !h.is_empty()) {
        let port = (options.env)("KUBERNETES_SERVICE_PORT").unwrap_or_else(|| "443".to_owned());
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        let ca_pem = match ca_from_pool()? {
            Some(pem) => pem,
            None => read_named("config.caFile", &sa.join("ca.crt"))?,
        };
        let token = pool_token(pool, options)
            .or_else(sa_token)
            .ok_or_else(no_token)?;
        return Ok(Endpoint {
            server: format!("https://{host}:{port}"),
            ca_pem,
            token,
            identity: None,
            namespace: None,
        });
    }
    Err(crate::config::ConfigError::new(
        "config.apiServer",
        "not set, and there is neither a KUBECONFIG nor an in-cluster service account \
         (KUBERNETES_SERVICE_HOST)",
    )
    .into())
}
