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

/// The kinds a node's components read and write, each a core (or `coordination.k8s.io`,
/// `discovery.k8s.io`) resource of the stable version.
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
    /// `services` (the cluster network: names and ClusterIPs).
    Service,
    /// `endpointslices` of `discovery.k8s.io` (the cluster network: a Service's endpoints).
    EndpointSlice,
}

impl Kind {
    /// Every kind, in a fixed order.
    pub const ALL: [Kind; 10] = [
        Kind::Pod,
        Kind::Node,
        Kind::Lease,
        Kind::PersistentVolumeClaim,
        Kind::PersistentVolume,
        Kind::Secret,
        Kind::ConfigMap,
        Kind::Event,
        Kind::Service,
        Kind::EndpointSlice,
    ];

    /// Its API group (empty for core).
    pub fn group(self) -> &'static str {
        match self {
            Kind::Lease => "coordination.k8s.io",
            Kind::EndpointSlice => "discovery.k8s.io",
            _ => "",
        }
    }

    /// Its version.
    pub fn version(self) -> &'static str {
        "v1"
    }

    /// Its resource name (plural), as in URLs.
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Pod => "pods",
            Kind::Node => "nodes",
            Kind::Lease => "leases",
            Kind::PersistentVolumeClaim => "persistentvolumeclaims",
            Kind::PersistentVolume => "persistentvolumes",
            Kind::Secret => "secrets",
            Kind::ConfigMap => "configmaps",
            Kind::Event => "events",
            Kind::Service => "services",
            Kind::EndpointSlice => "endpointslices",
        }
    }

    /// Its kind name.
    pub fn kind(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Node => "Node",
            Kind::Lease => "Lease",
            Kind::PersistentVolumeClaim => "PersistentVolumeClaim",
            Kind::PersistentVolume => "PersistentVolume",
            Kind::Secret => "Secret",
            Kind::ConfigMap => "ConfigMap",
            Kind::Event => "Event",
            Kind::Service => "Service",
            Kind::EndpointSlice => "EndpointSlice",
        }
    }

    /// Whether its objects live in a namespace.
    pub fn namespaced(self) -> bool {
        !matches!(self, Kind::Node | Kind::PersistentVolume)
    }

    /// `apiVersion` of its objects.
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Lease => "coordination.k8s.io/v1",
            Kind::EndpointSlice => "discovery.k8s.io/v1",
            _ => "v1",
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

/// A delete's options: the grace period and a uid precondition.
#[derive(Debug, Clone, Default)]
pub struct Delete {
    /// `gracePeriodSeconds` (`None`: the object's own).
    pub grace_period: Option<i64>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
}

/// The Kubernetes API, as a node's components use it. Reads are answered at once (from the
/// store, or from a watch-fed cache); writes are made before the call returns. Errors are the
/// API server's `Status` as an [`ApiError`].
pub trait Client: Send + Sync + fmt::Debug {
    /// Object `ns/name` (`ns` empty for a cluster-scoped kind), if it exists.
    fn get(&self, kind: Kind, ns: &str, name: &str) -> Option<Arc<Value>>;

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
