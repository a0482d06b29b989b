//! fakekube's kubelet as a node of any cluster ([`KubeletNode`], `fakekube kubelet`): the same
//! kubelet that runs the embedded fake's pods in the hermetic runtime, joined to an API server
//! through the Kubernetes API only, as a real kubelet joins one. It registers its Node
//! (addresses on 127.0.0.1, `daemonEndpoints.kubeletEndpoint` its own port), renews its Lease,
//! watches the pods bound to it, runs them, writes their status, deletes them when they have
//! stopped, and provisions a volume for each pending claim (a dynamic provisioner's part, as
//! kind's local-path provisioner does); it serves the kubelet API (`exec`, `attach`,
//! `portForward`, `containerLogs`, `pods`, `healthz`) on a loopback TLS port that the API
//! server's node proxy reaches, locked as a real kubelet's port is (`--client-ca-file`,
//! webhook authentication and authorization, no anonymous access: [`crate::webhook_auth`]):
//! a client certificate the cluster's client CA signed, or a token the API server's
//! TokenReview accepts, then a SubjectAccessReview of `nodes/<subresource>`; 401 and 403
//! otherwise.
//!
//! Its credentials are the kubeconfig's: a node's (`system:node:<name>` in `system:nodes`), as
//! the Node authorizer expects; it lets them create the TokenReviews and SubjectAccessReviews
//! too. Provisioning volumes also needs `list`/`watch` of claims and `create`/`delete` of
//! volumes, which nodes are not given by default (`ci/upstream-up.sh` binds a ClusterRole for
//! them).

use crate::client::http::{HttpClient, HttpClientError, Watched};
use crate::client::{Client, Kind};
use crate::faults::Faults;
use crate::kubelet::{self, Kubelet};
use crate::kubelet_api::{self, KubeletApi};
use crate::pod_access::PodAccess;
use crate::registration;
use crate::tls::ClientCa;
use crate::webhook_auth::WebhookAccess;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long [`KubeletNode::start`] waits for its first lists.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of a kubelet joining a cluster.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The kubeconfig of the node's credentials.
    pub kubeconfig: PathBuf,
    /// The node's name (the kubeconfig's user should be `system:node:<name>`).
    pub node_name: String,
    /// The CA whose client certificates authenticate to the kubelet API (the API server's
    /// `--kubelet-client-certificate` is signed by it), as the kubelet's `--client-ca-file`.
    pub client_ca_file: PathBuf,
    /// The kubelet API's port on 127.0.0.1 (0 picks a free one).
    pub port: u16,
    /// The third octet of its pods' IPs (`10.244.<subnet>.x`; reported, never dialled).
    pub pod_subnet: u8,
    /// Whether it provisions volumes for pending claims.
    pub provision_volumes: bool,
    /// The Kubernetes minor version its Node reports.
    pub kubernetes_minor: u32,
    /// Images whose pull fails (`ErrImagePull`, then `ImagePullBackOff`), as an image no
    /// registry has.
    pub missing_images: Vec<String>,
}

/// Why a kubelet could not join.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The kubeconfig could not be read, or its cluster not set up as a client.
    #[error("the node's kubeconfig")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The client CA file could not be read.
    #[error("reading the client CA file {path}")]
    ClientCa {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The serving TLS configuration could not be made.
    #[error("the kubelet API's TLS")]
    Tls(#[from] crate::tls::TlsError),
    /// The kubelet API's port could not be bound.
    #[error("binding the kubelet API on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The API server did not answer the first lists in time.
    #[error("the API server did not answer the node's first lists within {0:?}")]
    NotSynced(Duration),
}

impl From<HttpClientError> for NodeError {
    fn from(e: HttpClientError) -> Self {
        NodeError::Client(Box::new(e))
    }
}

/// A running kubelet joined to a cluster.
#[derive(Debug)]
pub struct KubeletNode {
    addr: SocketAddr,
    shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl KubeletNode {
    /// Joins the cluster: lists and watches what the node needs, registers the Node, starts the
    /// kubelet and its API. Needs a multi-threaded tokio runtime (its client blocks a worker
    /// while a request is answered).
    pub async fn start(config: NodeConfig) -> Result<KubeletNode, NodeError> {
        let shutdown = CancellationToken::new();
        let mut watched = vec![
            Watched {
                kind: Kind::Pod,
                field_selector: format!("spec.nodeName={}", config.node_name),
            },
            Watched {
                kind: Kind::Node,
                field_selector: format!("metadata.name={}", config.node_name),
            },
        ];
        if config.provision_volumes {
            for kind in [Kind::PersistentVolumeClaim, Kind::PersistentVolume] {
                watched.push(Watched {
                    kind,
                    field_selector: String::new(),
                });
            }
        }
        let user_agent = format!(
            "kubelet/v1.{}.1 (linux/amd64) fakekube/{}",
            config.kubernetes_minor,
            env!("CARGO_PKG_VERSION")
        );
        let client = HttpClient::start(&config.kubeconfig, &user_agent, watched, shutdown.clone())?;
        if !client.synced(SYNC_TIMEOUT).await {
            shutdown.cancel();
            return Err(NodeError::NotSynced(SYNC_TIMEOUT));
        }
        let client_ca =
            std::fs::read(&config.client_ca_file).map_err(|source| NodeError::ClientCa {
                path: config.client_ca_file.clone(),
                source,
            })?;
        let client_ca = ClientCa::from_pem(&client_ca)?;
        let tls = crate::tls::kubelet_serving(&config.node_name, &client_ca)?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, config.port));
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| NodeError::Bind { addr, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| NodeError::Bind { addr, source })?;
        let authorize = Arc::new(WebhookAccess::new(client_ca, client.clone()));
        let api: Arc<dyn Client> = client;
        let kubelet_config = kubelet::Config {
            node_name: config.node_name.clone(),
            host_ip: Ipv4Addr::LOCALHOST.to_string(),
            pod_subnet: config.pod_subnet,
            role: kubelet::Role::Node,
            ..kubelet::Config::default()
        };
        let kubelet = Arc::new(Kubelet::new(api.clone(), kubelet_config.clone()));
        for image in &config.missing_images {
            kubelet.images().mark_missing(image);
        }
        let mut tasks = vec![registration::spawn(
            api.clone(),
            kubelet_config,
            config.kubernetes_minor,
            bound.port(),
            shutdown.clone(),
        )];
        tasks.push(kubelet.spawn(shutdown.clone()));
        let access = Arc::new(PodAccess {
            kubelet: Some(kubelet),
            api,
            faults: Arc::new(Faults::default()),
            shutdown: shutdown.clone(),
        });
        let router = kubelet_api::router(Arc::new(KubeletApi::new(access, authorize)));
        tasks.push(tokio::spawn(crate::server::serve(
            listener,
            tokio_rustls::TlsAcceptor::from(tls),
            router,
            shutdown.clone(),
            Duration::from_secs(5),
            crate::server::Limits::default(),
        )));
        Ok(KubeletNode {
            addr: bound,
            shutdown,
            tasks,
        })
    }

    /// Where the kubelet API listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the kubelet (every pod's processes end) and its API.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
    }
}
