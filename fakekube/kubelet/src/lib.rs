//! fakekube's kubelet: the counterpart of Kubernetes' `pkg/kubelet`. It runs pods in the
//! hermetic runtime ([`fakekube_runtime`]) and reaches the API server only through the
//! machinery's [`client::Client`] (in-process over the store for the embedded fake, over
//! HTTPS for [`KubeletNode`]): this crate has no path to the store.
//!
//! # Layout
//!
//! - [`kubelet`]: the [`Kubelet`] handle and its one task, driven by the API's change feed
//!   (pkg/kubelet's `syncLoop` and pod workers, with the scheduler's binding and a volume
//!   provisioner folded in). Beside it, the pieces it runs pods with: [`pod`] (a pod's run:
//!   its containers' states, IPs, back-offs), [`containers`] (starting and stopping containers
//!   in the runtime: pkg/kubelet/kuberuntime), [`run`] (the sync of one pod: admission,
//!   sandbox, init containers, restarts), [`pod_status`] (pod status as the status manager
//!   writes it: pkg/kubelet/status), [`probe`] (liveness, readiness and startup probes:
//!   pkg/kubelet/prober), [`termination`] (graceful stops and termination messages), [`env`]
//!   (container environment: pkg/kubelet/kubelet_pods.go), [`images`] ([`Images`]: pulls,
//!   back-offs, missing images, the programs images run), [`cluster`] (the cluster network
//!   the pods reach Services and other pods by: cluster DNS and kube-proxy, in process), [`limits`] (resource limits on the runtime), [`output`]
//!   (container logs kept per run), [`command`] ([`CommandCall`]: programs registered as
//!   commands) and [`registration`] (the Node and its Lease: pkg/kubelet's node status and
//!   nodelease controller).
//! - The kubelet's server (pkg/kubelet/server and its `streaming` and `portforward`
//!   packages): [`kubelet_api`] (the HTTPS API on port 10250: `/exec`, `/attach`,
//!   `/portForward`, `/containerLogs`, `/pods`, `/runningpods`, `/healthz`, authenticated and
//!   authorized through a [`kubelet_api::Authorize`]: the embedded API server's, or a node's
//!   [`webhook_auth`], its client CA with TokenReviews and SubjectAccessReviews: cmd/kubelet's
//!   `BuildAuth`), [`exec`] (exec and attach sessions over WebSocket and SPDY), [`portforward`]
//!   (port forwarding over SPDY and WebSocket), [`logs`] (container logs, followed), with
//!   [`upgrade`] (recognising upgrades, the SPDY handshake, 101 replies) and the framing the
//!   upgraded connections speak: [`websocket`] (RFC 6455) and [`spdy`] (SPDY/3.1). The API
//!   server's `pods/exec`, `pods/attach`, `pods/portforward` and `pods/log` authorize with RBAC
//!   and then call the same `serve_authorized` entries, as its node proxy reaches the kubelet.
//! - [`pod_access`]: what those handlers need of a node ([`pod_access::PodAccess`]: its
//!   kubelet, the API, the faults, the shutdown).
//! - [`node`]: [`KubeletNode`], the kubelet joined to any cluster through `client::http`
//!   (cmd/kubelet; `fakekube kubelet`).
//!
//! `python3 ci/module-cycles.py fakekube/kubelet/src` finds any cycle between these modules.

pub mod cluster;
pub mod command;
pub mod containers;
pub mod env;
pub mod exec;
pub mod images;
pub mod kubelet;
pub mod kubelet_api;
pub mod limits;
pub mod logs;
pub mod node;
pub mod output;
pub mod pod;
pub mod pod_access;
pub mod pod_status;
pub mod portforward;
pub mod probe;
pub mod registration;
pub mod run;
pub mod spdy;
pub mod termination;
pub mod upgrade;
pub mod volumes;
pub mod webhook_auth;
pub mod websocket;

use fakekube_machinery::{
    client, clock, events, faults, meta, query, response, route, server, status, subprotocol, tls,
    x509,
};

pub use command::{CommandCall, CommandError};
pub use images::Images;
pub use kubelet::Kubelet;
pub use node::{KubeletNode, NodeConfig, NodeError};
