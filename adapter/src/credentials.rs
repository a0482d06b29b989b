//! Bearer tokens: where they come from, when they are read again, and how they are kept out of
//! every message.
//!
//! An `exec` credential plugin (a kubeconfig user's `exec`, as kubectl runs it) is a source
//! too: its `ExecCredential` answer is cached until its `expirationTimestamp` and asked for
//! again then, or after a 401; a client certificate in the answer goes to the TLS client's
//! [`CertSlot`]. Nothing the plugin prints is ever repeated in an error.
//!
//! A token is held as a [`SecretString`] from the moment it is read; nothing in this module
//! formats one. File tokens (the in-cluster service account's, a `tokenFile`, a pool's
//! `credentials.file`) are re-read when the file changes (the kubelet rotates the service
//! account token by swapping a symlink, which changes what `stat` sees) and once more after the
//! API server answers 401, since a rotation can land within the same second and size.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use crate::identity::{CertSlot, ClientCertError, certified_key};

/// Resolves a named secret (a pool's `credentials: {secret: <name>}`) to a token; the host
/// supplies it.
#[async_trait::async_trait]
pub trait SecretResolver: Send + Sync {
    /// Returns the secret `name`. The error message must not contain the secret.
    async fn resolve(&self, name: &str) -> Result<SecretString, String>;
}

/// Reads an environment variable; hosts and tests may replace the process environment.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Why a token could not be had. No variant carries the token.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CredentialError {
    /// The environment variable is unset or empty.
    #[error("the environment variable {0} holding the token is not set")]
    MissingEnv(String),
    /// The token file could not be read.
    #[error("reading the token file {path}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The token file is empty.
    #[error("the token file {0} is empty")]
    EmptyFile(PathBuf),
    /// The host's resolver refused or failed.
    #[error("resolving the secret {name}: {reason}")]
    Secret {
        /// The secret's name.
        name: String,
        /// The resolver's message.
        reason: String,
    },
    /// The pool names a secret but the host gave no resolver.
    #[error("the pool names the secret {0} but the host gave no secret resolver")]
    NoResolver(String),
    /// The exec credential plugin could not be started.
    #[error("starting the exec credential plugin {command}")]
    ExecSpawn {
        /// The plugin's command.
        command: PathBuf,
        /// Why.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The exec credential plugin failed (its output is not repeated: it may hold secrets).
    #[error("the exec credential plugin {command} exited with {status}")]
    ExecFailed {
        /// The plugin's command.
        command: PathBuf,
        /// Its exit status.
        status: String,
    },
    /// The exec credential plugin's answer is not a usable `ExecCredential`.
    #[error("the exec credential plugin {command} answered no usable ExecCredential: {problem}")]
    ExecMalformed {
        /// The plugin's command.
        command: PathBuf,
        /// What is wrong, never quoting the answer.
        problem: &'static str,
    },
    /// The exec credential plugin's client certificate cannot be used.
    #[error("the exec credential plugin {command} gave a client certificate that cannot be used")]
    ExecCertificate {
        /// The plugin's command.
        command: PathBuf,
        /// Why.
        #[source]
        source: Arc<ClientCertError>,
    },
}

/// Whether an exec plugin may talk to a person (kubeconfig `interactiveMode`). The adapter
/// never gives it a terminal, so `Always` is refused when the kubeconfig is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InteractiveMode {
    /// `Never`.
    Never,
    /// `IfAvailable` (the default): it runs without a terminal.
    IfAvailable,
}

/// A kubeconfig user's `exec` section.
#[derive(Clone)]
pub(crate) struct ExecConfig {
    /// The `ExecCredential` API version it speaks.
    pub(crate) api_version: String,
    /// The program.
    pub(crate) command: PathBuf,
    /// Its arguments.
    pub(crate) args: Vec<String>,
    /// Extra environment; values are secrets (plugins take keys this way).
    pub(crate) env: Vec<(String, SecretString)>,
    /// Its interactive mode.
    pub(crate) interactive: InteractiveMode,
    /// Whether it is told the cluster (`KUBERNETES_EXEC_INFO.spec.cluster`).
    pub(crate) provide_cluster_info: bool,
}

impl fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecConfig")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field("env", &self.env.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .field("interactive", &self.interactive)
            .finish()
    }
}

/// What an exec plugin answered, until it expires.
struct ExecCached {
    /// The token, when it gave one.
    token: Option<SecretString>,
    /// When the answer expires, when it said.
    expires: Option<SystemTime>,
}

/// An exec credential plugin with its cached answer.
pub(crate) struct ExecPlugin {
    /// Its kubeconfig section.
    config: ExecConfig,
    /// The cluster it is told about, when `provideClusterInfo` is set.
    cluster: Value,
    /// The last answer; the lock also keeps two runs from overlapping.
    cache: tokio::sync::Mutex<Option<ExecCached>>,
    /// Where a client certificate it gives goes.
    certificate: CertSlot,
}

impl ExecPlugin {
    /// Wraps a plugin for the cluster at `server` with CA `ca_pem`; its certificates go to
    /// `certificate`.
    pub(crate) fn new(
        config: ExecConfig,
        server: &str,
        ca_pem: &[u8],
        certificate: CertSlot,
    ) -> Self {
        use base64::Engine;
        ExecPlugin {
            cluster: json!({
                "server": server,
                "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            }),
            config,
            cache: tokio::sync::Mutex::new(None),
            certificate,
        }
    }

    /// Returns the cached token, running the plugin when there is none or it expired (or
    /// always, with `fresh`).
    async fn token(&self, fresh: bool) -> Result<Option<SecretString>, CredentialError> {
        let mut cache = self.cache.lock().await;
        if !fresh
            && let Some(cached) = cache.as_ref()
            && cached.expires.is_none_or(|at| SystemTime::now() < at)
        {
            return Ok(cached.token.clone());
        }
        let answer = self.run().await?;
        let token = answer.token.clone();
        *cache = Some(answer);
        Ok(token)
    }

    /// Runs the plugin once and reads its `ExecCredential`.
    async fn run(&self) -> Result<ExecCached, CredentialError> {
        let config = &self.config;
        let mut spec = json!({"interactive": false});
        if config.provide_cluster_info {
            spec["cluster"] = self.cluster.clone();
        }
        let info =
            json!({"apiVersion": config.api_version, "kind": "ExecCredential", "spec": spec});
        let mut command = tokio::process::Command::new(&config.command);
        command
            .args(&config.args)
            .env("KUBERNETES_EXEC_INFO", info.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (name, value) in &config.env {
            command.env(name, value.expose_secret());
        }
        tracing::debug!(command = %config.command.display(), "running the exec credential plugin");
        let output = command
            .output()
            .await
            .map_err(|e| CredentialError::ExecSpawn {
                command: config.command.clone(),
                source: Arc::new(e),
            })?;
        if !output.status.success() {
            return Err(CredentialError::ExecFailed {
                command: config.command.clone(),
                status: output.status.to_string(),
            });
        }
        let malformed = |problem| CredentialError::ExecMalformed {
            command: config.command.clone(),
            problem,
        };
        let answer: Value =
            serde_json::from_slice(&output.stdout).map_err(|_| malformed("not JSON"))?;
        if answer.get("kind").and_then(Value::as_str) != Some("ExecCredential") {
            return Err(malformed("its kind is not ExecCredential"));
        }
        if answer.get("apiVersion").and_then(Value::as_str) != Some(config.api_version.as_str()) {
            return Err(malformed("its apiVersion is not the kubeconfig's"));
        }
        let status = answer
            .get("status")
            .ok_or_else(|| malformed("it has no status"))?;
        let text = |key: &str| {
            status
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let token = text("token").map(|t| SecretString::from(t.to_owned()));
        match (text("clientCertificateData"), text("clientKeyData")) {
            (Some(cert), Some(key)) => {
                let key = secrecy::SecretString::from(key.to_owned());
                let identity = certified_key(cert.as_bytes(), key.expose_secret().as_bytes())
                    .map_err(|e| CredentialError::ExecCertificate {
                        command: config.command.clone(),
                        source: Arc::new(e),
                    })?;
                if let Ok(mut slot) = self.certificate.write() {
                    *slot = Some(identity);
                }
            }
            (None, None) if token.is_some() => {}
            (None, None) => {
                return Err(malformed(
                    "it holds neither a token nor a client certificate",
                ));
            }
            _ => {
                return Err(malformed(
                    "it holds a client certificate without its key, or a key without its certificate",
                ));
            }
        }
        let expires = match text("expirationTimestamp") {
            None => None,
            Some(at) => Some(
                time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
                    .map(SystemTime::from)
                    .map_err(|_| malformed("its expirationTimestamp is not an RFC 3339 time"))?,
            ),
        };
        Ok(ExecCached { token, expires })
    }
}

/// Where a token is read from.
#[derive(Clone)]
pub(crate) enum TokenSource {
    /// A fixed token (from a kubeconfig's `token`).
    Static(SecretString),
    /// An environment variable, read on every use.
    Env {
        /// The variable's name.
        var: String,
        /// How to read it.
        lookup: EnvLookup,
    },
    /// A file, re-read when it changes.
    File(PathBuf),
    /// A secret the host resolves.
    Secret {
        /// The secret's name.
        name: String,
        /// The host's resolver, if it gave one.
        resolver: Option<Arc<dyn SecretResolver>>,
    },
    /// An exec credential plugin.
    Exec(Arc<ExecPlugin>),
    /// No bearer token: the client certificate alone authenticates.
    None,
}

impl fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Static(_) => f.write_str("Static([REDACTED])"),
            TokenSource::Env { var, .. } => write!(f, "Env({var})"),
            TokenSource::File(path) => write!(f, "File({})", path.display()),
            TokenSource::Secret { name, .. } => write!(f, "Secret({name})"),
            TokenSource::Exec(plugin) => write!(f, "Exec({:?})", plugin.config),
            TokenSource::None => f.write_str("None"),
        }
    }
}

/// What `stat` said about a token file when it was last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    /// Modification time.
    modified: Option<SystemTime>,
    /// Length in bytes.
    len: u64,
}

/// The token last read and what it was read from.
struct Cached {
    /// The token.
    token: SecretString,
    /// For file sources, the file's stamp at that read.
    stamp: Option<Stamp>,
}

/// A token source with its cache: hands out the current token and re-reads it when due.
pub(crate) struct Credentials {
    /// Where the token comes from.
    source: TokenSource,
    /// The last token read.
    cache: Mutex<Option<Cached>>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Wraps a source; nothing is read until [`Credentials::token`].
    pub(crate) fn new(source: TokenSource) -> Self {
        Credentials {
            source,
            cache: Mutex::new(None),
        }
    }

    /// Returns the current token (`None` when the client certificate alone authenticates):
    /// cached, or read again when the source may have changed.
    pub(crate) async fn token(&self) -> Result<Option<SecretString>, CredentialError> {
        match &self.source {
            TokenSource::Static(token) => Ok(Some(token.clone())),
            TokenSource::Env { var, lookup } => match lookup(var) {
                Some(value) if !value.trim().is_empty() => {
                    Ok(Some(SecretString::from(value.trim().to_owned())))
                }
                _ => Err(CredentialError::MissingEnv(var.clone())),
            },
            TokenSource::File(path) => {
                let stamp = stamp_of(path).await;
                if let Some(cached) = self.cached_if(|c| stamp.is_some() && c.stamp == stamp) {
                    return Ok(Some(cached));
                }
                self.read_file(path).await.map(Some)
            }
            TokenSource::Secret { name, resolver } => {
                if let Some(cached) = self.cached_if(|_| true) {
                    return Ok(Some(cached));
                }
                self.resolve(name, resolver.as_deref()).await.map(Some)
            }
            TokenSource::Exec(plugin) => plugin.token(false).await,
            TokenSource::None => Ok(None),
        }
    }

    /// Reads the token again whatever the cache says (after a 401) and returns it.
    pub(crate) async fn refresh(&self) -> Result<Option<SecretString>, CredentialError> {
        match &self.source {
            TokenSource::File(path) => self.read_file(path).await.map(Some),
            TokenSource::Secret { name, resolver } => {
                self.resolve(name, resolver.as_deref()).await.map(Some)
            }
            TokenSource::Exec(plugin) => plugin.token(true).await,
            TokenSource::Static(_) | TokenSource::Env { .. } | TokenSource::None => {
                self.token().await
            }
        }
    }

    /// Returns the cached token when `fresh` says it still holds.
    fn cached_if(&self, fresh: impl Fn(&Cached) -> bool) -> Option<SecretString> {
        let cache = self.cache.lock().ok()?;
        cache.as_ref().filter(|c| fresh(c)).map(|c| c.token.clone())
    }

    /// Stores a token read now.
    fn store(&self, token: &SecretString, stamp: Option<Stamp>) {
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some(Cached {
                token: token.clone(),
                stamp,
            });
        }
    }

    /// Reads a token file and caches it with its stamp.
    async fn read_file(&self, path: &Path) -> Result<SecretString, CredentialError> {
        let stamp = stamp_of(path).await;
        let text =
            tokio::fs::read_to_string(path)
                .await
                .map_err(|e| CredentialError::ReadFile {
                    path: path.to_owned(),
                    source: Arc::new(e),
                })?;
        let token = text.trim();
        if token.is_empty() {
            return Err(CredentialError::EmptyFile(path.to_owned()));
        }
        let token = SecretString::from(token.to_owned());
        self.store(&token, stamp);
        Ok(token)
    }

    /// Asks the host's resolver and caches the answer.
    async fn resolve(
        &self,
        name: &str,
        resolver: Option<&dyn SecretResolver>,
    ) -> Result<SecretString, CredentialError> {
        let resolver = resolver.ok_or_else(|| CredentialError::NoResolver(name.to_owned()))?;
        let token = resolver
            .resolve(name)
            .await
            .map_err(|reason| CredentialError::Secret {
                name: name.to_owned(),
                reason,
            })?;
        if token.expose_secret().trim().is_empty() {
            return Err(CredentialError::Secret {
                name: name.to_owned(),
                reason: "the secret is empty".to_owned(),
            });
        }
        self.store(&token, None);
        Ok(token)
    }
}

/// Returns the file's stamp, or `None` when it cannot be read.
async fn stamp_of(path: &Path) -> Option<Stamp> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    Some(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(&'static str);

    #[async_trait::async_trait]
    impl SecretResolver for Fixed {
        async fn resolve(&self, name: &str) -> Result<SecretString, String> {
            if name == "known" {
                Ok(SecretString::from(self.0.to_owned()))
            } else {
                Err(format!("no secret named {name}"))
            }
        }
    }

    #[tokio::test]
    async fn file_token_is_reread_when_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "first-token\n").unwrap();
        let creds = Credentials::new(TokenSource::File(path.clone()));
        assert_eq!(
            creds.token().await.unwrap().unwrap().expose_secret(),
            "first-token"
        );
        std::fs::write(&path, "second-token-longer\n").unwrap();
        assert_eq!(
            creds.token().await.unwrap().unwrap().expose_secret(),
            "second-token-longer"
        );
    }

    #[tokio::test]
    async fn refresh_rereads_a_file_whose_stamp_did_not_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "aaaa").unwrap();
        let creds = Credentials::new(TokenSource::File(path.clone()));
        creds.token().await.unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, "bbbb").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(modified).unwrap();
        assert_eq!(
            creds.token().await.unwrap().unwrap().expose_secret(),
            "aaaa"
        );
        assert_eq!(
            creds.refresh().await.unwrap().unwrap().expose_secret(),
            "bbbb"
        );
    }

    #[tokio::test]
    async fn env_token_is_read_through_the_lookup() {
        let lookup: EnvLookup =
            Arc::new(|var| (var == "K8S_TOKEN").then(|| "env-token".to_owned()));
        let creds = Credentials::new(TokenSource::Env {
            var: "K8S_TOKEN".into(),
            lookup: lookup.clone(),
        });
        assert_eq!(
            creds.token().await.unwrap().unwrap().expose_secret(),
            "env-token"
        );
        let missing = Credentials::new(TokenSource::Env {
            var: "OTHER".into(),
            lookup,
        });
        let e = missing.token().await.unwrap_err();
        assert!(
            matches!(&e, CredentialError::MissingEnv(var) if var == "OTHER"),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn secret_goes_through_the_host_resolver() {
        let creds = Credentials::new(TokenSource::Secret {
            name: "known".into(),
            resolver: Some(Arc::new(Fixed("resolved-token"))),
        });
        assert_eq!(
            creds.token().await.unwrap().unwrap().expose_secret(),
            "resolved-token"
        );
        let none = Credentials::new(TokenSource::Secret {
            name: "known".into(),
            resolver: None,
        });
        assert!(matches!(
            none.token().await,
            Err(CredentialError::NoResolver(_))
        ));
    }

    #[tokio::test]
    async fn missing_and_empty_files_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let creds = Credentials::new(TokenSource::File(path.clone()));
        let e = creds.token().await.unwrap_err();
        assert!(e.to_string().contains("token"), "{e}");
        assert!(
            matches!(&e, CredentialError::ReadFile { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
            "the I/O error is kept as the source: {e:?}"
        );
        std::fs::write(&path, "  \n").unwrap();
        let e = creds.token().await.unwrap_err();
        assert!(
            matches!(&e, CredentialError::EmptyFile(p) if *p == path),
            "{e:?}"
        );
    }

    #[test]
    fn debug_output_never_shows_a_static_token() {
        let creds = Credentials::new(TokenSource::Static(SecretString::from(
            "s3cr3t-token".to_owned(),
        )));
        let debug = format!("{creds:?}");
        assert!(!debug.contains("s3cr3t-token"), "{debug}");
        assert!(debug.contains("REDACTED"), "{debug}");
    }

    /// Writes an executable plugin script into `dir` and returns its exec config.
    /// A plugin running `script`. `/bin/sh` runs the script file rather than the file being
    /// executed itself: a file just written can fail to execute with ETXTBSY while another
    /// test's fork still holds the write descriptor.
    fn plugin(dir: &Path, script: &str, env: &[(&str, &str)]) -> ExecConfig {
        let path = dir.join("plugin.sh");
        std::fs::write(&path, format!("{script}\n")).unwrap();
        ExecConfig {
            api_version: "client.authentication.k8s.io/v1".to_owned(),
            command: PathBuf::from("/bin/sh"),
            args: vec![path.to_string_lossy().into_owned()],
            env: env
                .iter()
                .map(|(n, v)| ((*n).to_owned(), SecretString::from((*v).to_owned())))
                .collect(),
            interactive: InteractiveMode::IfAvailable,
            provide_cluster_info: true,
        }
    }

    /// A plugin that counts its runs in `runs` and answers token `plugin-s3cr3t-<n>` expiring
    /// at `expires`.
    fn counting_plugin(dir: &Path, expires: &str) -> (Credentials, PathBuf) {
        let runs = dir.join("runs");
        let config = plugin(
            dir,
            r#"echo run >> "$RUNS"; n=$(wc -l < "$RUNS" | tr -d ' ')
echo "$KUBERNETES_EXEC_INFO" > "$RUNS.info"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"plugin-s3cr3t-%s","expirationTimestamp":"%s"}}' "$n" "$EXPIRES""#,
            &[("RUNS", runs.to_str().unwrap()), ("EXPIRES", expires)],
        );
        let exec = ExecPlugin::new(
            config,
            "https://127.0.0.1:6443",
            b"PEM",
            CertSlot::default(),
        );
        (Credentials::new(TokenSource::Exec(Arc::new(exec))), runs)
    }

    fn runs(path: &Path) -> usize {
        std::fs::read_to_string(path)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn exec_plugin_token_is_cached_until_its_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let (creds, count) = counting_plugin(dir.path(), "2999-01-01T00:00:00Z");
        let token = creds.token().await.unwrap().unwrap();
        assert_eq!(token.expose_secret(), "plugin-s3cr3t-1");
        assert_eq!(
            creds.token().await.unwrap().unwrap().expose_secret(),
            "plugin-s3cr3t-1"
        );
        assert_eq!(runs(&count), 1);
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("runs.info")).unwrap())
                .unwrap();
        assert_eq!(info["kind"], "ExecCredential");
        assert_eq!(info["spec"]["interactive"], false);
        assert_eq!(info["spec"]["cluster"]["server"], "https://127.0.0.1:6443");
    }

    #[tokio::test]
    async fn an_expired_exec_token_is_asked_for_again_and_a_401_refreshes_it() {
        let dir = tempfile::tempdir().unwrap();
        let (creds, count) = counting_plugin(dir.path(), "2001-01-01T00:00:00Z");
        assert_eq!(
            creds.token().await.unwrap().unwrap().expose_secret(),
            "plugin-s3cr3t-1"
        );
        assert_eq!(
            creds.token().await.unwrap().unwrap().expose_secret(),
            "plugin-s3cr3t-2"
        );
        let dir = tempfile::tempdir().unwrap();
        let (creds, count2) = counting_plugin(dir.path(), "2999-01-01T00:00:00Z");
        creds.token().await.unwrap();
        assert_eq!(
            creds.refresh().await.unwrap().unwrap().expose_secret(),
            "plugin-s3cr3t-2"
        );
        assert_eq!((runs(&count), runs(&count2)), (2, 2));
    }

    #[tokio::test]
    async fn a_failing_or_malformed_plugin_never_repeats_what_it_printed() {
        let dir = tempfile::tempdir().unwrap();
        for (script, expected) in [
            (
                "echo plugin-s3cr3t-token; exit 3",
                "exited with exit status: 3",
            ),
            (
                "echo '{\"token\": \"plugin-s3cr3t-token\"}'",
                "its kind is not ExecCredential",
            ),
            (
                r#"echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"plugin-s3cr3t-token","expirationTimestamp":"soon"}}'"#,
                "not an RFC 3339 time",
            ),
            (
                r#"echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"plugin-s3cr3t-token"}}'"#,
                "apiVersion is not the kubeconfig's",
            ),
        ] {
            let exec = ExecPlugin::new(
                plugin(dir.path(), script, &[]),
                "https://h",
                b"",
                CertSlot::default(),
            );
            let creds = Credentials::new(TokenSource::Exec(Arc::new(exec)));
            let error = creds.token().await.unwrap_err();
            let text = format!("{error} {error:?}");
            assert!(text.contains(expected), "{text}");
            assert!(!text.contains("s3cr3t"), "{text}");
        }
        let missing = ExecConfig {
            command: dir.path().join("no-such-plugin"),
            ..plugin(dir.path(), "true", &[])
        };
        let creds = Credentials::new(TokenSource::Exec(Arc::new(ExecPlugin::new(
            missing,
            "https://h",
            b"",
            CertSlot::default(),
        ))));
        assert!(matches!(
            creds.token().await,
            Err(CredentialError::ExecSpawn { .. })
        ));
    }

    #[tokio::test]
    async fn an_exec_plugins_client_certificate_goes_to_the_slot() {
        let dir = tempfile::tempdir().unwrap();
        let cert = rcgen::generate_simple_self_signed(vec!["plugin-user".to_owned()]).unwrap();
        let answer = serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": {
                "clientCertificateData": cert.cert.pem(),
                "clientKeyData": cert.signing_key.serialize_pem(),
            },
        });
        std::fs::write(dir.path().join("answer.json"), answer.to_string()).unwrap();
        let script = format!("cat '{}'", dir.path().join("answer.json").display());
        let slot = CertSlot::default();
        let exec = ExecPlugin::new(
            plugin(dir.path(), &script, &[]),
            "https://h",
            b"",
            slot.clone(),
        );
        let creds = Credentials::new(TokenSource::Exec(Arc::new(exec)));
        assert!(creds.token().await.unwrap().is_none());
        assert!(slot.read().unwrap().is_some());
        let debug = format!("{creds:?}");
        assert!(!debug.contains("PRIVATE KEY"), "{debug}");
    }

    #[test]
    fn exec_config_debug_names_env_variables_but_not_their_values() {
        let dir = tempfile::tempdir().unwrap();
        let config = plugin(dir.path(), "true", &[("API_KEY", "s3cr3t-value")]);
        let debug = format!("{config:?}");
        assert!(debug.contains("API_KEY"), "{debug}");
        assert!(!debug.contains("s3cr3t-value"), "{debug}");
    }
}
