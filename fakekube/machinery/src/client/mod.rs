//! The Kubernetes API as the kubelet sees it: the one way it reads and writes the cluster, as a
//! real kubelet reaches the API server only through client-go (`k8s.io/client-go`: a clientset
//! for writes, informers for reads, a watch feeding them).
//!
//! [`Client`] is small on purpose: reads of one object or of a kind, the writes a kubelet
//! makes (create, update, merge patch, delete with a uid precondition), a feed of changes and
//! the cluster's clock. It has two implementations:
//!
//! - the store itself (`store::client`), for the embedded fake: in process, synchronous, as fast
//!   as the store;
//! - [`http::HttpClient`], over HTTPS to any API server a kubeconfig names (fakekube's own or
//!   upstream's): reads come from caches its watches keep (as informers), writes are requests,
//!   and its change feed is those watches' events.
//!
//! Neither the kubelet nor its Event recorders reach the store another way.

pub mod http;

use crate::clock::Clock;
use crate::status::ApiError;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use tokio::sync::watch;

/// The kinds the cluster's components (the kubelet, the scheduler, the controllers) read and
/// write, each at the version those components use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `pods` (its `status` and `binding` parts too).
    Pod,
    /// `nodes`.
    Node,
    /// `leases` of `coordination.k8s.io`.
    Lease,
    /// `persistentvolumeclaims`.
    PersistentVolumeClaim,
    /// `persistentvolumes`.
    PersistentVolume,
    /// `secrets`.
    Secret,
    /// `configmaps`.
    ConfigMap,
    /// core `events`.
    Event,
    /// `namespaces`.
    Namespace,
    /// `services`.
    Service,
    /// core `endpoints`.
    Endpoints,
    /// `endpointslices` of `discovery.k8s.io`.
    EndpointSlice,
    /// `serviceaccounts`.
    ServiceAccount,
    /// `replicationcontrollers`.
    ReplicationController,
    /// `deployments` of `apps`.
    Deployment,
    /// `replicasets` of `apps`.
    ReplicaSet,
    /// `statefulsets` of `apps`.
    StatefulSet,
    /// `daemonsets` of `apps`.
    DaemonSet,
    /// `jobs` of `batch`.
    Job,
    /// `networkpolicies` of `networking.k8s.io`.
    NetworkPolicy,
    /// `clusterroles` of `rbac.authorization.k8s.io`.
    ClusterRole,
    /// `clusterrolebindings` of `rbac.authorization.k8s.io`.
    ClusterRoleBinding,
    /// agent-sandbox's `sandboxes` (`agents.x-k8s.io/v1beta1`), served once its CRD is.
    Sandbox,
    /// `sandboxtemplates` (`extensions.agents.x-k8s.io/v1beta1`).
    SandboxTemplate,
    /// `sandboxwarmpools` (`extensions.agents.x-k8s.io/v1beta1`).
    SandboxWarmPool,
    /// `sandboxclaims` (`extensions.agents.x-k8s.io/v1beta1`).
    SandboxClaim,
}

/// What names a kind: group, version, resource, kind, whether namespaced.
struct Names(&'static str, &'static str, &'static str, &'static str, bool);

impl Kind {
    /// Every kind, in a fixed order.
    pub const ALL: [Kind; 26] = [
        Kind::Pod,
        Kind::Node,
        Kind::Lease,
        Kind::PersistentVolumeClaim,
        Kind::PersistentVolume,
        Kind::Secret,
        Kind::ConfigMap,
        Kind::Event,
        Kind::Namespace,
        Kind::Service,
        Kind::Endpoints,
        Kind::EndpointSlice,
        Kind::ServiceAccount,
        Kind::ReplicationController,
        Kind::Deployment,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::DaemonSet,
        Kind::Job,
        Kind::NetworkPolicy,
        Kind::ClusterRole,
        Kind::ClusterRoleBinding,
        Kind::Sandbox,
        Kind::SandboxTemplate,
        Kind::SandboxWarmPool,
        Kind::SandboxClaim,
    ];

    fn names(self) -> Names {
        const RBAC: &str = "rbac.authorization.k8s.io";
        const EXTENSIONS: &str = "extensions.agents.x-k8s.io";
        match self {
            Kind::Pod => Names("", "v1", "pods", "Pod", true),
            Kind::Node => Names("", "v1", "nodes", "Node", false),
            Kind::Lease => Names("coordination.k8s.io", "v1", "leases", "Lease", true),
            Kind::PersistentVolumeClaim => Names(
                "",
                "v1",
                "persistentvolumeclaims",
                "PersistentVolumeClaim",
                true,
            ),
            Kind::PersistentVolume => {
                Names("", "v1", "persistentvolumes", "PersistentVolume", false)
            }
            Kind::Secret => Names("", "v1", "secrets", "Secret", true),
            Kind::ConfigMap => Names("", "v1", "configmaps", "ConfigMap", true),
            Kind::Event => Names("", "v1", "events", "Event", true),
            Kind::Namespace => Names("", "v1", "namespaces", "Namespace", false),
            Kind::Service => Names("", "v1", "services", "Service", true),
            Kind::Endpoints => Names("", "v1", "endpoints", "Endpoints", true),
            Kind::EndpointSlice => Names(
                "discovery.k8s.io",
                "v1",
                "endpointslices",
                "EndpointSlice",
                true,
            ),
            Kind::ServiceAccount => Names("", "v1", "serviceaccounts", "ServiceAccount", true),
            Kind::ReplicationController => Names(
                "",
                "v1",
                "replicationcontrollers",
                "ReplicationController",
                true,
            ),
            Kind::Deployment => Names("apps", "v1", "deployments", "Deployment", true),
            Kind::ReplicaSet => Names("apps", "v1", "replicasets", "ReplicaSet", true),
            Kind::StatefulSet => Names("apps", "v1", "statefulsets", "StatefulSet", true),
            Kind::DaemonSet => Names("apps", "v1", "daemonsets", "DaemonSet", true),
            Kind::Job => Names("batch", "v1", "jobs", "Job", true),
            Kind::NetworkPolicy => Names(
                "networking.k8s.io",
                "v1",
                "networkpolicies",
                "NetworkPolicy",
                true,
            ),
            Kind::ClusterRole => Names(RBAC, "v1", "clusterroles", "ClusterRole", false),
            Kind::ClusterRoleBinding => Names(
                RBAC,
                "v1",
                "clusterrolebindings",
                "ClusterRoleBinding",
                false,
            ),
            Kind::Sandbox => Names("agents.x-k8s.io", "v1beta1", "sandboxes", "Sandbox", true),
            Kind::SandboxTemplate => Names(
                EXTENSIONS,
                "v1beta1",
                "sandboxtemplates",
                "SandboxTemplate",
                true,
            ),
            Kind::SandboxWarmPool => Names(
                EXTENSIONS,
                "v1beta1",
                "sandboxwarmpools",
                "SandboxWarmPool",
                true,
            ),
            Kind::SandboxClaim => {
                Names(EXTENSIONS, "v1beta1", "sandboxclaims", "SandboxClaim", true)
            }
        }
    }

    /// Its API group (empty for core).
    pub fn group(self) -> &'static str {
        self.names().0
    }

    /// Its version.
    pub fn version(self) -> &'static str {
        self.names().1
    }

    /// Its resource name (plural), as in URLs.
    pub fn resource(self) -> &'static str {
        self.names().2
    }

    /// Its kind name.
    pub fn kind(self) -> &'static str {
        self.names().3
    }

    /// Whether its objects live in a namespace.
    pub fn namespaced(self) -> bool {
        self.names().4
    }

    /// Whether a CustomResourceDefinition defines it (so that it may be served or not, and
    /// come and go while the cluster runs).
    pub fn is_custom(self) -> bool {
        matches!(
            self,
            Kind::Sandbox | Kind::SandboxTemplate | Kind::SandboxWarmPool | Kind::SandboxClaim
        )
    }

    /// `apiVersion` of its objects.
    pub fn api_version(self) -> String {
        match self.group() {
            "" => self.version().to_string(),
            group => format!("{group}/{}", self.version()),
        }
    }

    /// The kind a group and resource name, if it is one of these.
    pub fn of(group: &str, resource: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.group() == group && k.resource() == resource)
    }
}

/// Which part of an object a write targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource.
    Main,
    /// The status subresource.
    Status,
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    /// It was created (or first seen).
    Added,
    /// It changed.
    Modified,
    /// It is gone.
    Deleted,
}

/// One change the feed reports.
#[derive(Debug, Clone)]
pub struct Change {
    /// Its position in the feed: later changes have higher positions.
    pub position: u64,
    /// The object's kind.
    pub kind: Kind,
    /// What happened.
    pub change: ChangeType,
    /// The object after the change (for a delete, its last state).
    pub object: Arc<Value>,
    /// The object before the change, when known.
    pub prev: Option<Arc<Value>>,
}

/// The feed no longer reaches back to the position asked for: the reader lists again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

/// How a delete treats the object's dependents (`propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Orphan the dependents.
    Orphan,
    /// Delete the owner now and the dependents after.
    Background,
    /// Delete the dependents first, keeping the owner visible until they are gone.
    Foreground,
}

impl Propagation {
    /// Its name in `DeleteOptions.propagationPolicy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}

/// A delete's options: the grace period, a uid precondition and the dependents' policy.
#[derive(Debug, Clone, Default)]
pub struct Delete {
    /// `gracePeriodSeconds` (`None`: the object's own).
    pub grace_period: Option<i64>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `propagationPolicy` (`None`: the kind's default, background).
    pub propagation: Option<Propagation>,
}

/// What a kubelet asks a token for ([`Client::pod_token`]).
#[derive(Debug, Clone, Copy)]
pub struct PodTokenRequest<'a> {
    /// The pod's namespace, the service account's.
    pub namespace: &'a str,
    /// The service account.
    pub account: &'a str,
    /// The pod the token is bound to.
    pub pod_name: &'a str,
    /// Its uid.
    pub pod_uid: &'a str,
    /// How long the token lives.
    pub expiration_seconds: u64,
    /// Its audience, the API server's when `None`.
    pub audience: Option<&'a str>,
}

/// The Kubernetes API, as a node's components use it. Reads are answered at once (from the
/// store, or from a watch-fed cache); writes are made before the call returns. Errors are the
/// API server's `Status` as an [`ApiError`].
pub trait Client: Send + Sync + fmt::Debug {
    /// Object `ns/name` (`ns` empty for a cluster-scoped kind), if it exists.
    fn get(&self, kind: Kind, ns: &str, name: &str) -> Option<Arc<Value>>;

    /// Whether the cluster serves `kind` now (a custom kind only once its CRD is established).
    fn served(&self, kind: Kind) -> bool;

    /// Every object of `kind`, in namespace `ns` or in all of them.
    fn list(&self, kind: Kind, ns: Option<&str>) -> Vec<Arc<Value>>;

    /// Creates `obj` in `ns`; the stored object.
    fn create(&self, kind: Kind, ns: &str, obj: Value) -> Result<Arc<Value>, ApiError>;

    /// Replaces `part` of `ns/name` with `obj` (conditional on its resourceVersion, if any).
    fn update(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        obj: Value,
        part: Part,
    ) -> Result<Arc<Value>, ApiError>;

    /// Applies a JSON merge patch to `part` of `ns/name`.
    fn merge_patch(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        patch: &Value,
        part: Part,
    ) -> Result<Arc<Value>, ApiError>;

    /// Binds pod `ns/name` to `node`, as the scheduler's `pods/binding` does.
    fn bind(&self, ns: &str, name: &str, node: &str) -> Result<(), ApiError>;

    /// A token of service account `ns/account` bound to pod `pod_name` (uid `pod_uid`), valid
    /// for `expiration_seconds` and the audience given (the API server's when `None`), as a
    /// kubelet asks for one (TokenRequest, `serviceaccounts/<name>/token`) for a projected
    /// `serviceAccountToken` volume source. A client that cannot ask says 404.
    fn pod_token(&self, request: &PodTokenRequest<'_>) -> Result<String, ApiError> {
        let _ = request;
        Err(ApiError::path_not_found())
    }

    /// Deletes `ns/name`.
    fn delete(&self, kind: Kind, ns: &str, name: &str, opts: &Delete) -> Result<(), ApiError>;

    /// The feed's current position.
    fn position(&self) -> u64;

    /// The changes after `position`, in order, and the position they reach (past changes of
    /// kinds the client does not serve too); [`Gone`] when the feed no longer has them.
    fn changes_since(&self, position: u64) -> Result<(Vec<Change>, u64), Gone>;

    /// Told the feed's position whenever it moves.
    fn subscribe(&self) -> watch::Receiver<u64>;

    /// The cluster's clock, which timestamps and timers read.
    fn clock(&self) -> &Clock;
}
