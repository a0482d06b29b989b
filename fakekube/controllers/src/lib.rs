//! fakekube's controllers: the agent-sandbox controllers, and those of kube-controller-manager
//! whose work a client of a cluster sees. It stands for
//! [kubernetes-sigs/agent-sandbox](https://github.com/kubernetes-sigs/agent-sandbox)'s
//! controller manager and for `k8s.io/kubernetes/pkg/controller`.
//!
//! Like their real counterparts they are clients of the API: they read, write and follow the
//! cluster only through a [`Client`](fakekube_machinery::client::Client), the store in
//! process for the embedded fake or any API server over HTTPS. Nothing here can reach a store.
//!
//! - [`agent_sandbox`]: the Sandbox, SandboxTemplate, SandboxWarmPool and SandboxClaim
//!   controllers, on a thread of their own.
//! - [`workloads`]: Deployments, ReplicaSets, ReplicationControllers, StatefulSets, DaemonSets
//!   and Jobs.
//! - [`endpoints`]: the Endpoints and EndpointSlices of every Service with a selector.
//! - [`cluster`]: ClusterRole aggregation, the service-account token controller, the root CA
//!   publisher and PVC protection.
//! - `owners`: controller references, written and read.
//! - `index`: what the controllers index from the change feed (objects by their controller
//!   reference or by a label), never by scanning a kind.
//!
//! No module imports one above it; `python3 ci/module-cycles.py fakekube/controllers/src`
//! finds any cycle.

#![forbid(unsafe_code)]

pub mod agent_sandbox;
pub mod cluster;
pub mod endpoints;
mod index;
mod owners;
pub mod workloads;

// The machinery's modules under their own names, as `crate::meta` and the like.
use fakekube_machinery::{client, events, go_format, meta, selector, status};
