//! The run's own view of the cluster, through kube-rs: the server's version, the warm pool,
//! objects by name, and what is left behind.
//!
//! It is separate from the adapter on purpose: the adapter is what the run tests, and the run
//! must see the cluster through its own eyes (with `LIVE_OBSERVER_KUBECONFIG`, another token
//! than the pool's). kube-rs reads the kubeconfig's current context; the observer refuses one
//! that turns TLS verification off. Core kinds are read as k8s-openapi types, the agent-sandbox
//! kinds as [`DynamicObject`]s, all in the run's namespace.

use std::error::Error as _;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::version::Info;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Client, Config, Resource};
use serde::de::DeserializeOwned;

/// How long opening a connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an answer may take once a request is sent.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How many objects a list asks for per page.
const PAGE_SIZE: u32 = 250;

/// Why an observation failed. Never holds a credential.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// The kubeconfig cannot be read, or its current context cannot be used.
    #[error("kubeconfig {}: cannot be loaded", path.display())]
    LoadKubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        /// What kube-rs found wrong.
        #[source]
        source: KubeconfigError,
    },
    /// The kubeconfig is not YAML. The parser's own words are left out: they may quote the
    /// document, and so a token.
    #[error("kubeconfig {}: is not valid YAML", path.display())]
    ParseKubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
    },
    /// The kubeconfig would have the run talk to the server without verified TLS.
    #[error("kubeconfig {}: {reason}; the live run always verifies TLS", path.display())]
    Unverified {
        /// The kubeconfig file.
        path: PathBuf,
        /// What turns verification off.
        reason: &'static str,
    },
    /// kube-rs cannot make a client of the kubeconfig (its TLS material, say).
    #[error("kubeconfig {}: no client can be made of it", path.display())]
    BuildClient {
        /// The kubeconfig file.
        path: PathBuf,
        /// Why not.
        #[source]
        source: kube::Error,
    },
    /// Nothing answered at the server's address (refused, unresolvable, timed out).
    #[error("cannot reach {server}")]
    Unreachable {
        /// The server URL.
        server: String,
        /// The network error.
        #[source]
        source: std::io::Error,
    },
    /// The server answered with an error `Status`.
    #[error("{request}: HTTP {code}: {message}")]
    Refused {
        /// The request, `GET <path>`.
        request: String,
        /// The HTTP status.
        code: u16,
        /// The `Status` message.
        message: String,
    },
    /// The request got no usable answer: TLS, the connection, or a body that is not the kind
    /// asked for.
    #[error("{request} failed")]
    Request {
        /// The request, `GET <path>`.
        request: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
}

impl ObserveError {
    /// The error and its causes in one line, for a failure message. A cause whose text the
    /// previous one already holds (kube-rs's errors quote their sources) is not repeated.
    pub fn report(&self) -> String {
        let mut text = self.to_string();
        let mut last = text.clone();
        let mut cause = self.source();
        while let Some(error) = cause {
            let next = error.to_string();
            if !last.contains(&next) {
                text.push_str(": ");
                text.push_str(&next);
            }
            last = next;
            cause = error.source();
        }
        text
    }

    /// Wraps a failed request, keeping an error `Status` as data.
    fn request(request: String, error: kube::Error) -> ObserveError {
        match error {
            kube::Error::Api(status) => ObserveError::Refused {
                request,
                code: status.code,
                message: status.message,
            },
            source => ObserveError::Request { request, source },
        }
    }
}

/// The run's read-only client, working in the run's namespace.
#[derive(Clone)]
pub struct Observer {
    /// The kube-rs client.
    client: Client,
    /// The server URL, for messages.
    server: String,
    /// `host:port` of the server, for [`Observer::reach`].
    address: String,
    /// The run's namespace.
    namespace: String,
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("server", &self.server)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Observer {
    /// An observer of `namespace` through the current context of the kubeconfig at `path`.
    pub async fn from_kubeconfig(path: &Path, namespace: &str) -> Result<Observer, ObserveError> {
        let load = |source| match source {
            KubeconfigError::Parse(_) => ObserveError::ParseKubeconfig {
                path: path.to_owned(),
            },
            source => ObserveError::LoadKubeconfig {
                path: path.to_owned(),
                source,
            },
        };
        let kubeconfig = Kubeconfig::read_from(path).map_err(load)?;
        let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(load)?;
        let unverified = |reason| ObserveError::Unverified {
            path: path.to_owned(),
            reason,
        };
        if config.accept_invalid_certs {
            return Err(unverified("insecure-skip-tls-verify is set"));
        }
        if config.cluster_url.scheme_str() != Some("https") {
            return Err(unverified("the server is not https://"));
        }
        let server = config.cluster_url.to_string();
        let address = format!(
            "{}:{}",
            config.cluster_url.host().unwrap_or_default(),
            config.cluster_url.port_u16().unwrap_or(443)
        );
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        let client = Client::try_from(config).map_err(|source| ObserveError::BuildClient {
            path: path.to_owned(),
            source,
        })?;
        Ok(Observer {
            client,
            server: server.trim_end_matches('/').to_owned(),
            address,
            namespace: namespace.to_owned(),
        })
    }

    /// The server URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Checks that something accepts connections at the server's address, so that a run can
    /// tell "no cluster here" ([`ObserveError::Unreachable`]) from a cluster it cannot use.
    pub async fn reach(&self) -> Result<(), ObserveError> {
        let connect = tokio::net::TcpStream::connect(self.address.as_str());
        let outcome = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(connected) => connected.map(drop),
            Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
        };
        outcome.map_err(|source| ObserveError::Unreachable {
            server: self.server.clone(),
            source,
        })
    }

    /// The server's version (`/version`).
    pub async fn version(&self) -> Result<Info, ObserveError> {
        self.client
            .apiserver_version()
            .await
            .map_err(|e| ObserveError::request("GET /version".to_owned(), e))
    }

    /// Objects of a core kind (`Pod`, `Service`, `PersistentVolumeClaim`...).
    pub fn core<K>(&self) -> Objects<K>
    where
        K: Resource<Scope = NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Objects {
            api: Api::namespaced(self.client.clone(), &self.namespace),
        }
    }

    /// The Sandboxes.
    pub fn sandboxes(&self) -> Objects<DynamicObject> {
        self.agent_sandbox("agents.x-k8s.io", "Sandbox", "sandboxes")
    }

    /// The SandboxClaims.
    pub fn claims(&self) -> Objects<DynamicObject> {
        self.agent_sandbox(
            "extensions.agents.x-k8s.io",
            "SandboxClaim",
            "sandboxclaims",
        )
    }

    /// The SandboxWarmPools.
    pub fn warm_pools(&self) -> Objects<DynamicObject> {
        self.agent_sandbox(
            "extensions.agents.x-k8s.io",
            "SandboxWarmPool",
            "sandboxwarmpools",
        )
    }

    /// Objects of an agent-sandbox kind, `v1beta1`.
    fn agent_sandbox(&self, group: &str, kind: &str, plural: &str) -> Objects<DynamicObject> {
        let gvk = GroupVersionKind::gvk(group, "v1beta1", kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
        Objects {
            api: Api::namespaced_with(self.client.clone(), &self.namespace, &resource),
        }
    }
}

/// One kind of object in the run's namespace, as the observer reads it.
pub struct Objects<K> {
    /// The kind's API in the namespace.
    api: Api<K>,
}

impl<K> Objects<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug,
{
    /// The object `name`.
    pub async fn get(&self, name: &str) -> Result<K, ObserveError> {
        self.api
            .get(name)
            .await
            .map_err(|e| ObserveError::request(self.get_request(name), e))
    }

    /// The object `name`, or `None` when the server answers 404.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>, ObserveError> {
        self.api
            .get_opt(name)
            .await
            .map_err(|e| ObserveError::request(self.get_request(name), e))
    }

    /// Every object of the kind, read page by page.
    pub async fn list(&self) -> Result<Vec<K>, ObserveError> {
        let mut items = Vec::new();
        let mut params = ListParams::default().limit(PAGE_SIZE);
        loop {
            let page = self.api.list(&params).await.map_err(|e| {
                ObserveError::request(format!("GET {}", self.api.resource_url()), e)
            })?;
            items.extend(page.items);
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => return Ok(items),
            }
        }
    }

    /// `GET <path>` of the object `name`, for messages.
    fn get_request(&self, name: &str) -> String {
        format!("GET {}/{name}", self.api.resource_url())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::convert::Infallible;

    use k8s_openapi::api::core::v1::Service;

    const TOKEN: &str = "live-secret-token-123";

    /// An observer of `sandboxes` whose requests `answer` serves, without a socket.
    fn mocked(answer: fn(&str) -> (u16, String)) -> Observer {
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            let target = request
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default();
            let (code, body) = answer(&target);
            async move {
                Ok::<_, Infallible>(
                    http::Response::builder()
                        .status(code)
                        .header("content-type", "application/json")
                        .body(kube::client::Body::from(body.into_bytes()))
                        .expect("response"),
                )
            }
        });
        Observer {
            client: Client::new(service, "sandboxes"),
            server: "https://mock".to_owned(),
            address: "mock:443".to_owned(),
            namespace: "sandboxes".to_owned(),
        }
    }

    /// A `Status` body.
    fn status(code: u16, reason: &str, message: &str) -> (u16, String) {
        let body = serde_json::json!({
            "apiVersion": "v1", "kind": "Status", "status": "Failure",
            "code": code, "reason": reason, "message": message,
        });
        (code, body.to_string())
    }

    /// A kubeconfig file in `dir` for `server` with `cluster_extra` lines, the test CA and the
    /// token.
    fn kubeconfig(dir: &Path, server: &str, cluster_extra: &str) -> PathBuf {
        let ca = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/ca.pem");
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: live\n\
             clusters:\n- name: c\n  cluster:\n    server: {server}\n    \
             certificate-authority: {ca}\n{cluster_extra}\
             users:\n- name: u\n  user:\n    token: {TOKEN}\n\
             contexts:\n- name: live\n  context: {{cluster: c, user: u}}\n"
        );
        let path = dir.join("kubeconfig");
        std::fs::write(&path, text).expect("kubeconfig written");
        path
    }

    #[tokio::test]
    async fn list_reads_every_page_following_the_continue_token() {
        let observer = mocked(|target| {
            let services = "/api/v1/namespaces/sandboxes/services?";
            if !target.starts_with(services) || !target.contains("limit=250") {
                status(400, "BadRequest", &format!("unexpected {target}"))
            } else if target.contains("continue=a%2Bb") {
                (
                    200,
                    r#"{"items":[{"metadata":{"name":"two"}}],"metadata":{}}"#.to_owned(),
                )
            } else {
                (
                    200,
                    r#"{"items":[{"metadata":{"name":"one"}}],"metadata":{"continue":"a+b"}}"#
                        .to_owned(),
                )
            }
        });
        let names: Vec<String> = observer
            .core::<Service>()
            .list()
            .await
            .map_err(|e| e.report())
            .expect("list")
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect();
        assert_eq!(names, ["one", "two"]);
    }

    #[tokio::test]
    async fn get_opt_gives_none_for_404_and_dynamic_objects_keep_their_fields() {
        let observer = mocked(|target| match target {
            "/apis/agents.x-k8s.io/v1beta1/namespaces/sandboxes/sandboxes/here" => (
                200,
                r#"{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox",
                    "metadata":{"name":"here","uid":"u-1"},"spec":{"shutdownPolicy":"Delete"}}"#
                    .to_owned(),
            ),
            _ => status(
                404,
                "NotFound",
                "sandboxes.agents.x-k8s.io \"gone\" not found",
            ),
        });
        let sandboxes = observer.sandboxes();
        assert!(sandboxes.get_opt("gone").await.expect("GET").is_none());
        let here = sandboxes
            .get_opt("here")
            .await
            .expect("GET")
            .expect("found");
        assert_eq!(here.metadata.uid.as_deref(), Some("u-1"));
        assert_eq!(here.data["spec"]["shutdownPolicy"], "Delete");
    }

    #[tokio::test]
    async fn an_error_status_is_refused_with_its_code_path_and_message() {
        let observer = mocked(|_| status(403, "Forbidden", "services is forbidden"));
        let error = observer
            .core::<Service>()
            .get("x")
            .await
            .expect_err("refused");
        assert!(
            matches!(error, ObserveError::Refused { code: 403, .. }),
            "{error:?}"
        );
        assert_eq!(
            error.report(),
            "GET /api/v1/namespaces/sandboxes/services/x: HTTP 403: services is forbidden"
        );
    }

    #[tokio::test]
    async fn an_answer_that_is_not_the_kind_is_a_request_error_with_its_cause() {
        let observer = mocked(|_| (200, "[1, 2]".to_owned()));
        let error = observer.version().await.expect_err("not a version");
        assert!(matches!(error, ObserveError::Request { .. }), "{error:?}");
        let report = error.report();
        assert!(report.starts_with("GET /version failed: "), "{report}");
        assert!(report.contains("deserializing"), "{report}");
    }

    #[test]
    fn report_does_not_repeat_a_cause_its_error_already_quotes() {
        let error = ObserveError::Unreachable {
            server: "https://127.0.0.1:1".to_owned(),
            source: std::io::ErrorKind::ConnectionRefused.into(),
        };
        assert_eq!(
            error.report(),
            "cannot reach https://127.0.0.1:1: connection refused"
        );
    }

    #[tokio::test]
    async fn a_kubeconfig_that_skips_tls_verification_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = kubeconfig(
            dir.path(),
            "https://127.0.0.1:6443",
            "    insecure-skip-tls-verify: true\n",
        );
        let error = Observer::from_kubeconfig(&path, "sandboxes")
            .await
            .expect_err("refused");
        assert!(
            matches!(error, ObserveError::Unverified { .. }),
            "{error:?}"
        );
        assert!(error.report().contains("insecure-skip-tls-verify"));
    }

    #[tokio::test]
    async fn a_server_without_tls_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = kubeconfig(dir.path(), "http://127.0.0.1:6443", "");
        let error = Observer::from_kubeconfig(&path, "sandboxes")
            .await
            .expect_err("refused");
        assert!(error.report().contains("not https://"), "{error:?}");
    }

    #[tokio::test]
    async fn kubeconfig_errors_never_quote_the_token() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("kubeconfig");
        let broken = format!("users: [{{name: a, user: {{token: {TOKEN}}}}}\n  : : [");
        std::fs::write(&path, broken).expect("written");
        let error = Observer::from_kubeconfig(&path, "sandboxes")
            .await
            .expect_err("not YAML");
        assert!(matches!(error, ObserveError::ParseKubeconfig { .. }));
        for text in [error.report(), format!("{error:?}")] {
            assert!(!text.contains(TOKEN), "{text}");
        }
        std::fs::write(
            &path,
            format!("users: [{{name: a, user: {{token: {TOKEN}}}}}]\n"),
        )
        .expect("written");
        let error = Observer::from_kubeconfig(&path, "sandboxes")
            .await
            .expect_err("no context");
        assert!(matches!(error, ObserveError::LoadKubeconfig { .. }));
        for text in [error.report(), format!("{error:?}")] {
            assert!(!text.contains(TOKEN), "{text}");
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable_and_nothing_shows_the_token() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let dir = tempfile::tempdir().expect("temp dir");
        let path = kubeconfig(dir.path(), &format!("https://127.0.0.1:{port}"), "");
        let observer = Observer::from_kubeconfig(&path, "sandboxes")
            .await
            .map_err(|e| e.report())
            .expect("observer");
        assert_eq!(observer.server(), format!("https://127.0.0.1:{port}"));
        let unreachable = observer.reach().await.expect_err("nothing listens");
        assert!(
            matches!(unreachable, ObserveError::Unreachable { .. }),
            "{unreachable:?}"
        );
        let failed = observer.version().await.expect_err("nothing listens");
        for text in [
            format!("{observer:?}"),
            unreachable.report(),
            format!("{unreachable:?}"),
            failed.report(),
            format!("{failed:?}"),
        ] {
            assert!(!text.contains(TOKEN), "{text}");
        }
    }
}
