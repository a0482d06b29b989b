//! Reading a kubeconfig (the file `KUBECONFIG` names) for the server, its CA, the user's
//! credentials and the namespace of the current context (or of a context named by the caller).
//!
//! Only what a pool needs is read: `server`, `certificate-authority-data` or
//! `certificate-authority`, and the user's bearer `token` or `tokenFile`, client certificate
//! (`client-certificate`/`-data` with `client-key`/`-data`) and `exec` credential plugin
//! (`client.authentication.k8s.io/v1`). `auth-provider` is refused with a message saying so.
//! Keys are held as secrets from the moment they are read.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use secrecy::{SecretBox, SecretString};
use serde_json::Value;

use crate::credentials::{ExecConfig, InteractiveMode};

/// Why a kubeconfig could not be used. Neither the message nor the cause quotes the document,
/// which holds the token.
#[derive(Debug, Clone, thiserror::Error)]
#[error("kubeconfig {origin}: {message}")]
pub struct KubeconfigError {
    /// Where it came from (a path, or `(inline)`).
    pub origin: String,
    /// What is wrong, free of credentials.
    pub message: String,
    /// The file read that failed, if one did.
    #[source]
    cause: Option<Arc<std::io::Error>>,
}

/// The bearer token a kubeconfig's user gives.
#[derive(Clone)]
pub(crate) enum KubeToken {
    /// `token`.
    Inline(SecretString),
    /// `tokenFile`.
    File(PathBuf),
}

impl fmt::Debug for KubeToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KubeToken::Inline(_) => f.write_str("Inline([REDACTED])"),
            KubeToken::File(path) => write!(f, "File({})", path.display()),
        }
    }
}

/// A client certificate and its private key, PEM. The key is a secret.
#[derive(Clone)]
pub(crate) struct ClientCertPem {
    /// The certificate chain, PEM.
    pub(crate) cert_pem: Vec<u8>,
    /// The private key, PEM.
    pub(crate) key_pem: Arc<SecretBox<[u8]>>,
}

impl fmt::Debug for ClientCertPem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCertPem")
            .field("cert_pem", &format_args!("<{} bytes>", self.cert_pem.len()))
            .field("key_pem", &"[REDACTED]")
            .finish()
    }
}

/// What the chosen context of a kubeconfig says.
#[derive(Debug, Clone)]
pub(crate) struct Kubeconfig {
    /// The API server URL.
    pub(crate) server: String,
    /// The CA certificate(s), PEM.
    pub(crate) ca_pem: Option<Vec<u8>>,
    /// The user's token, if it has one.
    pub(crate) token: Option<KubeToken>,
    /// The user's client certificate, if it has one.
    pub(crate) client_cert: Option<ClientCertPem>,
    /// The user's exec credential plugin, if it has one.
    pub(crate) exec: Option<ExecConfig>,
    /// The context's namespace, if it sets one.
    pub(crate) namespace: Option<String>,
}

impl Kubeconfig {
    /// Reads the kubeconfig at `path`, for `context` (or its current context).
    pub(crate) fn from_path(path: &Path, context: Option<&str>) -> Result<Self, KubeconfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| KubeconfigError {
            origin: origin.clone(),
            message: "cannot be read".to_owned(),
            cause: Some(Arc::new(e)),
        })?;
        Kubeconfig::parse(&text, &origin, path.parent(), context)
    }

    /// Reads kubeconfig text for `context` (or its `current-context`); relative file paths in
    /// it are taken from `base`.
    pub(crate) fn parse(
        text: &str,
        origin: &str,
        base: Option<&Path>,
        context: Option<&str>,
    ) -> Result<Self, KubeconfigError> {
        let fail = |message: String| KubeconfigError {
            origin: origin.to_owned(),
            message,
            cause: None,
        };
        // The parser's error could quote the document, which holds the token: say only where.
        let doc: Value =
            serde_saphyr::from_str(text).map_err(|_| fail("is not valid YAML".to_owned()))?;
        let context_name = match context {
            Some(name) => name,
            None => doc
                .get("current-context")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| fail("has no current-context".to_owned()))?,
        };
        let context = named(&doc, "contexts", context_name)
            .and_then(|c| c.get("context"))
            .ok_or_else(|| fail(format!("has no context named {context_name}")))?;
        let cluster_name = context
            .get("cluster")
            .and_then(Value::as_str)
            .ok_or_else(|| fail(format!("context {context_name} names no cluster")))?;
        let cluster = named(&doc, "clusters", cluster_name)
            .and_then(|c| c.get("cluster"))
            .ok_or_else(|| fail(format!("has no cluster named {cluster_name}")))?;
        let server = cluster
            .get("server")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| fail(format!("cluster {cluster_name} has no server")))?
            .to_owned();
        if !server.starts_with("https://") {
            return Err(fail(format!(
                "cluster {cluster_name}: the server must be https:// (TLS is always verified)"
            )));
        }
        let resolve = |p: &str| match base {
            Some(dir) if Path::new(p).is_relative() => dir.join(p),
            _ => PathBuf::from(p),
        };
        let ca_pem = if let Some(data) = cluster
            .get("certificate-authority-data")
            .and_then(Value::as_str)
        {
            Some(
                base64::engine::general_purpose::STANDARD
                    .decode(data.trim())
                    .map_err(|_| {
                        fail(format!(
                            "cluster {cluster_name}: certificate-authority-data is not base64"
                        ))
                    })?,
            )
        } else if let Some(file) = cluster.get("certificate-authority").and_then(Value::as_str) {
            let path = resolve(file);
            Some(std::fs::read(&path).map_err(|e| KubeconfigError {
                cause: Some(Arc::new(e)),
                ..fail(format!(
                    "cluster {cluster_name}: reading certificate-authority {}",
                    path.display()
                ))
            })?)
        } else {
            None
        };
        if cluster
            .get("insecure-skip-tls-verify")
            .and_then(Value::as_bool)
            == Some(true)
        {
            return Err(fail(format!(
                "cluster {cluster_name}: insecure-skip-tls-verify is not supported"
            )));
        }
        let user = match context.get("user").and_then(Value::as_str) {
            None => None,
            Some(user_name) => Some((
                user_name,
                named(&doc, "users", user_name)
                    .and_then(|u| u.get("user"))
                    .ok_or_else(|| fail(format!("has no user named {user_name}")))?,
            )),
        };
        let mut token = None;
        let mut client_cert = None;
        let mut exec = None;
        if let Some((user_name, user)) = user {
            let read_file = |key: &str, file: &str| {
                let path = resolve(file);
                std::fs::read(&path).map_err(|e| KubeconfigError {
                    cause: Some(Arc::new(e)),
                    ..fail(format!(
                        "user {user_name}: reading {key} {}",
                        path.display()
                    ))
                })
            };
            let data = |key: &str| -> Result<Option<Vec<u8>>, KubeconfigError> {
                match user.get(key).and_then(Value::as_str) {
                    None => Ok(None),
                    Some(text) => base64::engine::general_purpose::STANDARD
                        .decode(text.trim())
                        .map(Some)
                        .map_err(|_| fail(format!("user {user_name}: {key} is not base64"))),
                }
            };
            if user.get("auth-provider").is_some() {
                return Err(fail(format!(
                    "user {user_name}: auth-provider is not supported; use an exec plugin"
                )));
            }
            if let Some(value) = user.get("token").and_then(Value::as_str) {
                token = Some(KubeToken::Inline(SecretString::from(
                    value.trim().to_owned(),
                )));
            } else if let Some(file) = user.get("tokenFile").and_then(Value::as_str) {
                token = Some(KubeToken::File(resolve(file)));
            }
            let cert_pem = match data("client-certificate-data")? {
                Some(pem) => Some(pem),
                None => user
                    .get("client-certificate")
                    .and_then(Value::as_str)
                    .map(|f| read_file("client-certificate", f))
                    .transpose()?,
            };
            let key_pem = match data("client-key-data")? {
                Some(pem) => Some(pem),
                None => user
                    .get("client-key")
                    .and_then(Value::as_str)
                    .map(|f| read_file("client-key", f))
                    .transpose()?,
            };
            client_cert = match (cert_pem, key_pem) {
                (Some(cert_pem), Some(key_pem)) => Some(ClientCertPem {
                    cert_pem,
                    key_pem: Arc::new(SecretBox::new(key_pem.into_boxed_slice())),
                }),
                (None, None) => None,
                (Some(_), None) => {
                    return Err(fail(format!(
                        "user {user_name}: client-certificate without client-key"
                    )));
                }
                (None, Some(_)) => {
                    return Err(fail(format!(
                        "user {user_name}: client-key without client-certificate"
                    )));
                }
            };
            if let Some(plugin) = user.get("exec") {
                exec = Some(exec_config(plugin, user_name, base).map_err(fail)?);
            }
        }
        let namespace = context
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        Ok(Kubeconfig {
            server,
            ca_pem,
            token,
            client_cert,
            exec,
            namespace,
        })
    }
}

/// The API versions of `ExecCredential` an exec plugin may speak.
const EXEC_API_VERSIONS: [&str; 2] = [
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
];

/// Reads a user's `exec` section; the error is the message to give.
fn exec_config(plugin: &Value, user: &str, base: Option<&Path>) -> Result<ExecConfig, String> {
    let api_version = plugin
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !EXEC_API_VERSIONS.contains(&api_version) {
        return Err(format!(
            "user {user}: exec apiVersion {api_version:?} is not one of {EXEC_API_VERSIONS:?}"
        ));
    }
    let command = plugin
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| format!("user {user}: exec has no command"))?;
    // As kubectl does: a relative path with a '/' is taken from the kubeconfig's directory;
    // a bare name is looked up in PATH.
    let command = match base {
        Some(dir) if command.contains('/') && Path::new(command).is_relative() => dir.join(command),
        _ => PathBuf::from(command),
    };
    let args = match plugin.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| a.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("user {user}: exec args must be strings"))?,
        Some(_) => return Err(format!("user {user}: exec args must be a list")),
    };
    let mut env = Vec::new();
    if let Some(list) = plugin.get("env").and_then(Value::as_array) {
        for entry in list {
            let name = entry.get("name").and_then(Value::as_str);
            let value = entry.get("value").and_then(Value::as_str);
            match (name, value) {
                (Some(name), Some(value)) => {
                    env.push((name.to_owned(), SecretString::from(value.to_owned())));
                }
                _ => {
                    return Err(format!(
                        "user {user}: an exec env entry lacks name or value"
                    ));
                }
            }
        }
    }
    let interactive = match plugin.get("interactiveMode").and_then(Value::as_str) {
        None | Some("IfAvailable") => InteractiveMode::IfAvailable,
        Some("Never") => InteractiveMode::Never,
        Some("Always") => {
            return Err(format!(
                "user {user}: the exec plugin needs a terminal (interactiveMode: Always), which \
                 a server does not have"
            ));
        }
        Some(other) => {
            return Err(format!(
                "user {user}: unknown exec interactiveMode {other:?}"
            ));
        }
    };
    Ok(ExecConfig {
        api_version: api_version.to_owned(),
        command,
        args,
        env,
        interactive,
        provide_cluster_info: plugin
            .get("provideClusterInfo")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// Finds the entry called `name` in the list `list` (`clusters`, `users`, `contexts`).
fn named<'a>(doc: &'a Value, list: &str, name: &str) -> Option<&'a Value> {
    doc.get(list)?
        .as_array()?
        .iter()
        .find(|entry| entry.get("name").and_then(Value::as_str) == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    const CONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster:\n    server: https://other:6443\n- name: fake\n  cluster:\n    server: https://127.0.0.1:18443\n    certificate-authority-data: UEVN\nusers:\n- name: tester\n  user:\n    token: s3cr3t-token\ncontexts:\n- name: fake\n  context: {cluster: fake, user: tester, namespace: sandboxes}\ncurrent-context: fake\n";

    #[test]
    fn current_context_gives_server_ca_token_and_namespace() {
        let kc = Kubeconfig::parse(CONFIG, "(inline)", None, None).unwrap();
        assert_eq!(kc.server, "https://127.0.0.1:18443");
        assert_eq!(kc.ca_pem.as_deref(), Some(&b"PEM"[..]));
        assert_eq!(kc.namespace.as_deref(), Some("sandboxes"));
        match kc.token {
            Some(KubeToken::Inline(token)) => assert_eq!(token.expose_secret(), "s3cr3t-token"),
            other => panic!("unexpected token {other:?}"),
        }
    }

    #[test]
    fn token_file_is_resolved_from_the_kubeconfig_directory() {
        let text = CONFIG.replace("token: s3cr3t-token", "tokenFile: tok");
        let kc = Kubeconfig::parse(&text, "kc", Some(Path::new("/etc/k")), None).unwrap();
        assert!(
            matches!(kc.token, Some(KubeToken::File(ref p)) if p == Path::new("/etc/k/tok")),
            "{:?}",
            kc.token
        );
    }

    #[test]
    fn errors_never_quote_the_token() {
        for text in [
            CONFIG.replace("current-context: fake", "current-context: nope"),
            CONFIG.replace("https://127.0.0.1:18443", "http://127.0.0.1:80"),
            format!("{CONFIG}\n  : : [unbalanced"),
            CONFIG.replace("token: s3cr3t-token", "client-certificate-data: QQ=="),
        ] {
            let e = Kubeconfig::parse(&text, "(inline)", None, None).unwrap_err();
            assert!(!e.to_string().contains("s3cr3t-token"), "{e}");
        }
    }

    #[test]
    fn debug_output_hides_the_inline_token() {
        let kc = Kubeconfig::parse(CONFIG, "(inline)", None, None).unwrap();
        let debug = format!("{kc:?}");
        assert!(!debug.contains("s3cr3t-token"), "{debug}");
    }

    #[test]
    fn a_named_context_is_used_instead_of_the_current_one() {
        let text = CONFIG.replace(
            "current-context: fake\n",
            "- name: other\n  context: {cluster: other, user: tester}\ncurrent-context: fake\n",
        );
        let text = text.replace(
            "    server: https://other:6443\n",
            "    server: https://other:6443\n    certificate-authority-data: UEVN\n",
        );
        let kc = Kubeconfig::parse(&text, "(inline)", None, Some("other")).unwrap();
        assert_eq!(kc.server, "https://other:6443");
        assert_eq!(kc.namespace, None);
        let e = Kubeconfig::parse(&text, "(inline)", None, Some("missing")).unwrap_err();
        assert_eq!(e.message, "has no context named missing");
    }

    #[test]
    fn client_certificate_and_key_are_read_from_data_or_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("client.crt"), "CERT").unwrap();
        std::fs::write(dir.path().join("client.key"), "s3cr3t-key").unwrap();
        let files = CONFIG.replace(
            "token: s3cr3t-token",
            "client-certificate: client.crt\n    client-key: client.key",
        );
        let kc = Kubeconfig::parse(&files, "kc", Some(dir.path()), None).unwrap();
        let pem = kc.client_cert.clone().unwrap();
        assert_eq!(pem.cert_pem, b"CERT");
        assert_eq!(pem.key_pem.expose_secret(), b"s3cr3t-key");
        assert!(kc.token.is_none());
        let debug = format!("{kc:?}");
        assert!(!debug.contains("s3cr3t-key"), "{debug}");
        let data = CONFIG.replace(
            "token: s3cr3t-token",
            "client-certificate-data: Q0VSVA==\n    client-key-data: czNjcjN0LWtleQ==",
        );
        let kc = Kubeconfig::parse(&data, "kc", None, None).unwrap();
        assert_eq!(
            kc.client_cert.unwrap().key_pem.expose_secret(),
            b"s3cr3t-key"
        );
        let half = CONFIG.replace("token: s3cr3t-token", "client-key-data: czNjcjN0LWtleQ==");
        let e = Kubeconfig::parse(&half, "kc", None, None).unwrap_err();
        assert!(
            e.message.contains("client-key without client-certificate"),
            "{e}"
        );
    }

    #[test]
    fn exec_plugins_are_read_with_their_args_env_and_mode() {
        let text = CONFIG.replace(
            "token: s3cr3t-token",
            "exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./bin/get-token\n      args: [--cluster, fake]\n      env: [{name: PLUGIN_KEY, value: s3cr3t-env}]\n      interactiveMode: Never\n      provideClusterInfo: true",
        );
        let kc = Kubeconfig::parse(&text, "kc", Some(Path::new("/etc/k")), None).unwrap();
        let exec = kc.exec.clone().unwrap();
        assert_eq!(exec.command, Path::new("/etc/k/./bin/get-token"));
        assert_eq!(exec.args, ["--cluster", "fake"]);
        assert_eq!(exec.env[0].0, "PLUGIN_KEY");
        assert_eq!(exec.interactive, InteractiveMode::Never);
        assert!(exec.provide_cluster_info);
        let debug = format!("{kc:?}");
        assert!(!debug.contains("s3cr3t-env"), "{debug}");
        for (from, to, message) in [
            (
                "interactiveMode: Never",
                "interactiveMode: Always",
                "needs a terminal",
            ),
            (
                "client.authentication.k8s.io/v1\n",
                "client.authentication.k8s.io/v1alpha1\n",
                "apiVersion",
            ),
            ("command: ./bin/get-token", "command: ''", "has no command"),
        ] {
            let e = Kubeconfig::parse(&text.replace(from, to), "kc", None, None).unwrap_err();
            assert!(e.message.contains(message), "{e}");
            assert!(!e.to_string().contains("s3cr3t"), "{e}");
        }
    }

    #[test]
    fn auth_provider_users_are_refused_naming_the_way_out() {
        let text = CONFIG.replace("token: s3cr3t-token", "auth-provider: {name: gcp}");
        let e = Kubeconfig::parse(&text, "kc", None, None).unwrap_err();
        assert!(e.message.contains("use an exec plugin"), "{e}");
    }
}
