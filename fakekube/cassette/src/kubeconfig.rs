//! Kubeconfigs: reading the one that names the cluster to record (its current context's
//! server, CA, and token or client certificate), and writing the one a recording proxy or a
//! replay gives its clients.

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

/// Why a kubeconfig cannot be used. No variant carries a credential.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The file could not be read.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not a kubeconfig.
    #[error("not a kubeconfig")]
    Yaml(#[source] serde_saphyr::Error),
    /// No context to use: no `current-context`, and not exactly one context.
    #[error("the kubeconfig has no current-context and not exactly one context")]
    NoContext,
    /// The context, cluster or user it names does not exist.
    #[error("the kubeconfig names {what} `{name}`, which it does not define")]
    Missing {
        /// `context`, `cluster` or `user`.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// The cluster has no server URL.
    #[error("the cluster has no server")]
    NoServer,
    /// The server URL is not `https://`.
    #[error("the server `{0}` is not an https:// URL")]
    NotHttps(String),
    /// The cluster names no CA: the recorder trusts exactly the CA the kubeconfig names.
    #[error("the cluster names no certificate-authority")]
    NoCertificateAuthority,
    /// The cluster skips TLS verification, which the recorder refuses.
    #[error("the cluster sets insecure-skip-tls-verify; the recorder always verifies TLS")]
    InsecureSkipTlsVerify,
    /// The user authenticates in a way the recorder does not support.
    #[error(
        "the user authenticates with {0}, which the recorder does not support (use a token or a client certificate)"
    )]
    Unsupported(&'static str),
    /// A client certificate without its key, or the other way round.
    #[error("the user has a client certificate or key without the other")]
    HalfClientCertificate,
    /// A `*-data` field is not base64.
    #[error("{field} is not base64")]
    Base64 {
        /// The field.
        field: &'static str,
        /// Why.
        #[source]
        source: base64::DecodeError,
    },
    /// A file the kubeconfig names could not be read.
    #[error("reading the {field} file {path}")]
    ReadNamed {
        /// The field naming it.
        field: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The cluster a kubeconfig's current context names, and how to authenticate to it.
pub struct Kubeconfig {
    /// The server URL (`https://host:port[/prefix]`).
    pub(crate) server: String,
    /// The name to check the server's certificate against, when not the URL's host.
    pub(crate) tls_server_name: Option<String>,
    /// The CA certificates (PEM).
    pub(crate) ca_pem: Vec<u8>,
    /// The bearer token, if the user has one.
    pub(crate) token: Option<SecretString>,
    /// The client certificate (PEM), if the user has one.
    pub(crate) client_cert_pem: Option<Vec<u8>>,
    /// The client key (PEM), with the certificate.
    pub(crate) client_key_pem: Option<SecretString>,
    /// The context's namespace.
    pub(crate) namespace: Option<String>,
}

impl fmt::Debug for Kubeconfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redacted = |set: bool| if set { Some("[REDACTED]") } else { None };
        f.debug_struct("Kubeconfig")
            .field("server", &self.server)
            .field("tls_server_name", &self.tls_server_name)
            .field("token", &redacted(self.token.is_some()))
            .field("client_certificate", &self.client_cert_pem.is_some())
            .field("client_key", &redacted(self.client_key_pem.is_some()))
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "current-context", default)]
    current_context: Option<String>,
    #[serde(default)]
    clusters: Vec<NamedCluster>,
    #[serde(default)]
    users: Vec<NamedUser>,
    #[serde(default)]
    contexts: Vec<NamedContext>,
}

#[derive(Deserialize)]
struct NamedCluster {
    name: String,
    cluster: Cluster,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: Option<String>,
    certificate_authority_data: Option<String>,
    certificate_authority: Option<PathBuf>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
}

#[derive(Deserialize)]
struct NamedUser {
    name: String,
    #[serde(default)]
    user: User,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct User {
    token: Option<SecretString>,
    #[serde(rename = "tokenFile")]
    token_file: Option<PathBuf>,
    client_certificate_data: Option<String>,
    client_key_data: Option<SecretString>,
    client_certificate: Option<PathBuf>,
    client_key: Option<PathBuf>,
    exec: Option<serde_json::Value>,
    auth_provider: Option<serde_json::Value>,
    username: Option<String>,
}

#[derive(Deserialize)]
struct NamedContext {
    name: String,
    context: Context,
}

#[derive(Deserialize)]
struct Context {
    cluster: String,
    #[serde(default)]
    user: Option<String>,
    namespace: Option<String>,
}

impl Kubeconfig {
    /// Reads the kubeconfig at `path`; files it names are relative to its directory.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Kubeconfig, KubeconfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| KubeconfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Kubeconfig::from_yaml(&text, path.parent())
    }

    /// Parses a kubeconfig's text; files it names are relative to `base` when given.
    pub fn from_yaml(text: &str, base: Option<&Path>) -> Result<Kubeconfig, KubeconfigError> {
        let file: File = serde_saphyr::from_str(text).map_err(KubeconfigError::Yaml)?;
        let context_name = match (&file.current_context, file.contexts.as_slice()) {
            (Some(name), _) if !name.is_empty() => name.clone(),
            (_, [only]) => only.name.clone(),
            _ => return Err(KubeconfigError::NoContext),
        };
        let missing = |what, name: &str| KubeconfigError::Missing {
            what,
            name: name.to_owned(),
        };
        let context = &file
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .ok_or_else(|| missing("context", &context_name))?
            .context;
        let cluster = &file
            .clusters
            .iter()
            .find(|c| c.name == context.cluster)
            .ok_or_else(|| missing("cluster", &context.cluster))?
            .cluster;
        let user = match &context.user {
            Some(name) if !name.is_empty() => {
                &file
                    .users
                    .iter()
                    .find(|u| &u.name == name)
                    .ok_or_else(|| missing("user", name))?
                    .user
            }
            _ => &User::default(),
        };
        let read = |field: &'static str, path: &Path| {
            let path = match base {
                Some(dir) if path.is_relative() => dir.join(path),
                _ => path.to_path_buf(),
            };
            std::fs::read(&path).map_err(|source| KubeconfigError::ReadNamed {
                field,
                path,
                source,
            })
        };
        let decode = |field: &'static str, data: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|source| KubeconfigError::Base64 { field, source })
        };

        let server = cluster.server.clone().ok_or(KubeconfigError::NoServer)?;
        if !server.starts_with("https://") {
            return Err(KubeconfigError::NotHttps(server));
        }
        if cluster.insecure_skip_tls_verify {
            return Err(KubeconfigError::InsecureSkipTlsVerify);
        }
        let ca_pem = match (
            &cluster.certificate_authority_data,
            &cluster.certificate_authority,
        ) {
            (Some(data), _) => decode("certificate-authority-data", data)?,
            (None, Some(path)) => read("certificate-authority", path)?,
            (None, None) => return Err(KubeconfigError::NoCertificateAuthority),
        };
        if user.exec.is_some() {
            return Err(KubeconfigError::Unsupported("an exec plugin"));
        }
        if user.auth_provider.is_some() {
            return Err(KubeconfigError::Unsupported("an auth-provider"));
        }
        if user.username.is_some() {
            return Err(KubeconfigError::Unsupported("a username and password"));
        }
        let token = match (&user.token, &user.token_file) {
            (Some(token), _) => Some(token.clone()),
            (None, Some(path)) => {
                let bytes = read("tokenFile", path)?;
                Some(SecretString::from(
                    String::from_utf8_lossy(&bytes).trim().to_owned(),
                ))
            }
            (None, None) => None,
        };
        let client_cert_pem = match (&user.client_certificate_data, &user.client_certificate) {
            (Some(data), _) => Some(decode("client-certificate-data", data)?),
            (None, Some(path)) => Some(read("client-certificate", path)?),
            (None, None) => None,
        };
        let client_key_pem = match (&user.client_key_data, &user.client_key) {
            (Some(data), _) => Some(decode("client-key-data", data.expose_secret())?),
            (None, Some(path)) => Some(read("client-key", path)?),
            (None, None) => None,
        }
        .map(|bytes| SecretString::from(String::from_utf8_lossy(&bytes).into_owned()));
        if client_cert_pem.is_some() != client_key_pem.is_some() {
            return Err(KubeconfigError::HalfClientCertificate);
        }
        Ok(Kubeconfig {
            server: server.trim_end_matches('/').to_owned(),
            tls_server_name: cluster.tls_server_name.clone(),
            ca_pem,
            token,
            client_cert_pem,
            client_key_pem,
            namespace: context.namespace.clone(),
        })
    }

    /// The server URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The current context's namespace, if it sets one.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The credentials in it, for the [`crate::Redactor`]: the token and the client key.
    pub(crate) fn credentials(&self) -> Vec<&str> {
        let mut out = Vec::new();
        if let Some(token) = &self.token {
            out.push(token.expose_secret());
        }
        if let Some(key) = &self.client_key_pem {
            out.push(key.expose_secret());
            // The key's base64 lines, which could appear apart from the PEM armour.
            out.extend(
                key.expose_secret()
                    .lines()
                    .filter(|l| !l.starts_with("-----") && l.len() >= 16),
            );
        }
        out
    }
}

/// A kubeconfig for `server`, trusting `ca_pem`, authenticating with `token`, in
/// `namespace` when given.
pub(crate) fn for_client(
    name: &str,
    server: &str,
    ca_pem: &str,
    token: &str,
    namespace: Option<&str>,
) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    let namespace = namespace
        .map(|ns| format!("\n    namespace: {ns}"))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}{namespace}\ncurrent-context: {name}\npreferences: {{}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(user: &str, cluster_extra: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:6443/\n    certificate-authority-data: {}\n{cluster_extra}users:\n- name: u\n  user:\n{user}contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n    namespace: ns\n",
            base64::engine::general_purpose::STANDARD.encode("CA PEM")
        )
    }

    #[test]
    fn a_token_kubeconfig_gives_server_ca_token_and_namespace() {
        let k = Kubeconfig::from_yaml(&config("    token: secret-token-1\n", ""), None).unwrap();
        assert_eq!(k.server(), "https://127.0.0.1:6443");
        assert_eq!(k.ca_pem, b"CA PEM");
        assert_eq!(k.namespace(), Some("ns"));
        assert_eq!(k.credentials(), vec!["secret-token-1"]);
    }

    #[test]
    fn debug_and_errors_never_show_the_token() {
        let k = Kubeconfig::from_yaml(&config("    token: secret-token-1\n", ""), None).unwrap();
        assert!(!format!("{k:?}").contains("secret-token-1"));
        let err = Kubeconfig::from_yaml(
            &config(
                "    token: secret-token-1\n",
                "    insecure-skip-tls-verify: true\n",
            ),
            None,
        )
        .unwrap_err();
        assert!(matches!(err, KubeconfigError::InsecureSkipTlsVerify));
        assert!(!err.to_string().contains("secret-token-1"));
    }

    #[test]
    fn exec_plugins_and_half_client_certificates_are_refused() {
        let exec = config("    exec:\n      command: gke-gcloud-auth-plugin\n", "");
        assert!(matches!(
            Kubeconfig::from_yaml(&exec, None),
            Err(KubeconfigError::Unsupported(_))
        ));
        let half = config("    client-certificate-data: Q0VSVA==\n", "");
        assert!(matches!(
            Kubeconfig::from_yaml(&half, None),
            Err(KubeconfigError::HalfClientCertificate)
        ));
    }

    #[test]
    fn files_are_read_relative_to_the_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "file-token-1\n").unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, config("    tokenFile: token\n", "")).unwrap();
        let k = Kubeconfig::from_path(&path).unwrap();
        assert_eq!(k.credentials(), vec!["file-token-1"]);
    }

    #[test]
    fn the_client_kubeconfig_reads_back() {
        let text = for_client(
            "cassette",
            "https://127.0.0.1:1",
            "CA",
            "tok-abcdef",
            Some("ns"),
        );
        let k = Kubeconfig::from_yaml(&text, None).unwrap();
        assert_eq!(k.server(), "https://127.0.0.1:1");
        assert_eq!(k.namespace(), Some("ns"));
        assert_eq!(k.credentials(), vec!["tok-abcdef"]);
    }
}
