//! Reading a kubeconfig (the file `KUBECONFIG` names) for the server, its CA, the token and the
//! namespace of the current context.
//!
//! Only what a pool needs is read: `server`, `certificate-authority-data` or
//! `certificate-authority`, and a bearer `token` or `tokenFile`. Client certificates and exec
//! plugins are refused with a message saying so.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use secrecy::SecretString;
use serde_json::Value;

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

/// What the current context of a kubeconfig says.
#[derive(Debug, Clone)]
pub(crate) struct Kubeconfig {
    /// The API server URL.
    pub(crate) server: String,
    /// The CA certificate(s), PEM.
    pub(crate) ca_pem: Option<Vec<u8>>,
    /// The user's token, if it has one.
    pub(crate) token: Option<KubeToken>,
    /// The context's namespace, if it sets one.
    pub(crate) namespace: Option<String>,
}

impl Kubeconfig {
    /// Reads the kubeconfig at `path`.
    pub(crate) fn from_path(path: &Path) -> Result<Self, KubeconfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| KubeconfigError {
            origin: origin.clone(),
            message: "cannot be read".to_owned(),
            cause: Some(Arc::new(e)),
        })?;
        Kubeconfig::parse(&text, &origin, path.parent())
    }

    /// Reads kubeconfig text; relative file paths in it are taken from `base`.
    pub(crate) fn parse(
        text: &str,
        origin: &str,
        base: Option<&Path>,
    ) -> Result<Self, KubeconfigError> {
        let fail = |message: String| KubeconfigError {
            origin: origin.to_owned(),
            message,
            cause: None,
        };
        // The parser's error could quote the document, which holds the token: say only where.
        let doc: Value =
            serde_saphyr::from_str(text).map_err(|_| fail("is not valid YAML".to_owned()))?;
        let context_name = doc
            .get("current-context")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| fail("has no current-context".to_owned()))?;
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
        let token = match context.get("user").and_then(Value::as_str) {
            None => None,
            Some(user_name) => {
                let user = named(&doc, "users", user_name)
                    .and_then(|u| u.get("user"))
                    .ok_or_else(|| fail(format!("has no user named {user_name}")))?;
                if let Some(token) = user.get("token").and_then(Value::as_str) {
                    Some(KubeToken::Inline(SecretString::from(
                        token.trim().to_owned(),
                    )))
                } else if let Some(file) = user.get("tokenFile").and_then(Value::as_str) {
                    Some(KubeToken::File(resolve(file)))
                } else if user.get("exec").is_some()
                    || user.get("client-certificate-data").is_some()
                    || user.get("client-certificate").is_some()
                    || user.get("auth-provider").is_some()
                {
                    return Err(fail(format!(
                        "user {user_name}: only token and tokenFile are supported"
                    )));
                } else {
                    None
                }
            }
        };
        let namespace = context
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        Ok(Kubeconfig {
            server,
            ca_pem,
            token,
            namespace,
        })
    }
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
        let kc = Kubeconfig::parse(CONFIG, "(inline)", None).unwrap();
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
        let kc = Kubeconfig::parse(&text, "kc", Some(Path::new("/etc/k"))).unwrap();
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
            let e = Kubeconfig::parse(&text, "(inline)", None).unwrap_err();
            assert!(!e.to_string().contains("s3cr3t-token"), "{e}");
        }
    }

    #[test]
    fn debug_output_hides_the_inline_token() {
        let kc = Kubeconfig::parse(CONFIG, "(inline)", None).unwrap();
        let debug = format!("{kc:?}");
        assert!(!debug.contains("s3cr3t-token"), "{debug}");
    }
}
