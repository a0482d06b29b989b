//! Bearer tokens: where they come from, when they are read again, and how they are kept out of
//! every message.
//!
//! A token is held as a [`SecretString`] from the moment it is read; nothing in this module
//! formats one. File tokens (the in-cluster service account's, a `tokenFile`, a pool's
//! `credentials.file`) are re-read when the file changes (the kubelet rotates the service
//! account token by swapping a symlink, which changes what `stat` sees) and once more after the
//! API server answers 401, since a rotation can land within the same second and size.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use secrecy::{ExposeSecret, SecretString};

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
}

impl fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Static(_) => f.write_str("Static([REDACTED])"),
            TokenSource::Env { var, .. } => write!(f, "Env({var})"),
            TokenSource::File(path) => write!(f, "File({})", path.display()),
            TokenSource::Secret { name, .. } => write!(f, "Secret({name})"),
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

    /// Returns the current token: cached, or read again when the source may have changed.
    pub(crate) async fn token(&self) -> Result<SecretString, CredentialError> {
        match &self.source {
            TokenSource::Static(token) => Ok(token.clone()),
            TokenSource::Env { var, lookup } => match lookup(var) {
                Some(value) if !value.trim().is_empty() => {
                    Ok(SecretString::from(value.trim().to_owned()))
                }
                _ => Err(CredentialError::MissingEnv(var.clone())),
            },
            TokenSource::File(path) => {
                let stamp = stamp_of(path).await;
                if let Some(cached) = self.cached_if(|c| stamp.is_some() && c.stamp == stamp) {
                    return Ok(cached);
                }
                self.read_file(path).await
            }
            TokenSource::Secret { name, resolver } => {
                if let Some(cached) = self.cached_if(|_| true) {
                    return Ok(cached);
                }
                self.resolve(name, resolver.as_deref()).await
            }
        }
    }

    /// Reads the token again whatever the cache says (after a 401) and returns it.
    pub(crate) async fn refresh(&self) -> Result<SecretString, CredentialError> {
        match &self.source {
            TokenSource::File(path) => self.read_file(path).await,
            TokenSource::Secret { name, resolver } => self.resolve(name, resolver.as_deref()).await,
            TokenSource::Static(_) | TokenSource::Env { .. } => self.token().await,
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
        assert_eq!(creds.token().await.unwrap().expose_secret(), "first-token");
        std::fs::write(&path, "second-token-longer\n").unwrap();
        assert_eq!(
            creds.token().await.unwrap().expose_secret(),
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
        assert_eq!(creds.token().await.unwrap().expose_secret(), "aaaa");
        assert_eq!(creds.refresh().await.unwrap().expose_secret(), "bbbb");
    }

    #[tokio::test]
    async fn env_token_is_read_through_the_lookup() {
        let lookup: EnvLookup =
            Arc::new(|var| (var == "K8S_TOKEN").then(|| "env-token".to_owned()));
        let creds = Credentials::new(TokenSource::Env {
            var: "K8S_TOKEN".into(),
            lookup: lookup.clone(),
        });
        assert_eq!(creds.token().await.unwrap().expose_secret(), "env-token");
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
            creds.token().await.unwrap().expose_secret(),
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
}
