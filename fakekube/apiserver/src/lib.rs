//! fakekube's API server, the counterpart of `k8s.io/apiserver` with kube-apiserver's
//! registry and apiextensions-apiserver's CRDs: it serves discovery, the built-in kinds and
//! every kind a CustomResourceDefinition defines, with the object semantics real clients rely
//! on, authenticates and authorizes every request, and keeps the objects in its store. It knows
//! no kubelet and no controller: the pod subresources a kubelet serves go through a
//! [`nodes::Nodes`] its owner gives it, and the controllers and kubelets reach its store
//! through [`Client`](fakekube_machinery::client::Client), which the store implements. The
//! `fakekube` crate composes it with them into the server users start.
//!
//! Every module imports modules of the layers below its own, and of its own layer without a
//! cycle, never one above (`python3 ci/module-cycles.py fakekube/apiserver/src`):
//!
//! - Dispatch: [`api`], the router and the one handler every request reaches: it routes the
//!   path, applies the request faults, authenticates (and impersonates), checks the kind, scope
//!   and verb, authorizes, and hands the request to a handler; `checks` (415 for a body no
//!   serializer reads, 400 for bad query parameters) and [`inflight`]
//!   (`--max-requests-inflight`).
//! - Handlers: `objects` (get, list, create, update, patch, delete, deletecollection),
//!   `watch`, `subresources` (`scale`, `serviceaccounts/token`), `eviction` (`pods/eviction`
//!   and PodDisruptionBudgets), `ephemeral` (`pods/ephemeralcontainers`), `reviews` (access,
//!   rules, token and self-subject reviews); the pod streams, logs and the node proxy go to
//!   [`nodes`] once authorized.
//! - Request and response: `request` (each verb's options, bodies read and decoded),
//!   `negotiation` (the `Accept` header), `representation` (an answer converted as
//!   negotiated), `table` (`Table` rows), `accept` (`Accept` headers parsed), and [`state`]
//!   (what the handlers share).
//! - Authentication and authorization: `impersonation`, above [`authz`] (the RBAC authorizer
//!   over the stored RBAC objects), above [`authn`] (client certificates, static and
//!   service-account tokens, the token signer), above `user` ([`UserInfo`](user::UserInfo): who a
//!   request is made by, which the store and the admission plugins also read).
//! - Store: [`store`] (objects, resourceVersions, the change log watches and controllers
//!   follow, graceful deletion, garbage collection, pages, the Events' TTL; the in-process
//!   [`Client`](fakekube_machinery::client::Client)), [`events`] (the Events' TTL task),
//!   [`inspect`] (in-process reads for the server's handle: one object, waiting for a state,
//!   the leak check), [`finalizer`] (the CRD finalizer), `admission_plugins` (the pod
//!   admission plugins that read the cluster: ServiceAccount, Priority,
//!   DefaultTolerationSeconds, RuntimeClass).
//! - Registry: [`registry`] (the served kinds, built-in and CRD-defined; conversion between
//!   versions; in-process mutating webhooks), `resources` (the static table of built-in
//!   kinds), [`crd`] (CustomResourceDefinitions), [`conversion`] (agent-sandbox's conversion
//!   webhook between `v1alpha1` and `v1beta1`, registered in process), `defaults` (defaults and
//!   checks of the core kinds), [`rbac`] (RBAC rules, their matching, the Forbidden wording,
//!   the RBAC kinds' admission, the bootstrap policy), [`discovery`] and `openapi`, both built
//!   from the registry, and [`cluster_objects`] (the APIServices a cluster has); their schemas
//!   and CEL rules are `fakekube-schema`'s.
//! - Foundation: [`fixtures`] (the agent-sandbox CRDs, embedded) and, for CI only,
//!   [`secret_log`] (every secret made, recorded for the credential scan) and `fuzzing` (the
//!   fuzz targets' entry points, behind the `fuzzing` feature).

#![forbid(unsafe_code)]

mod accept;
mod admission_plugins;
pub mod api;
pub mod authn;
pub mod authz;
mod checks;
pub mod cluster_objects;
pub mod conversion;
pub mod crd;
mod defaults;
pub mod discovery;
mod ephemeral;
pub mod events;
mod eviction;
pub mod finalizer;
pub mod fixtures;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod impersonation;
pub mod inflight;
pub mod inspect;
mod negotiation;
pub mod nodes;
mod objects;
mod openapi;
pub mod rbac;
pub mod registry;
mod representation;
mod request;
mod resources;
mod reviews;
pub mod secret_log;
pub mod state;
pub mod store;
mod subresources;
mod table;
mod user;
mod watch;

// The machinery's modules and the schema crate under their own names, so `crate::status` and
// the like resolve in every module.
use fakekube_machinery::{
    client, clock, encoding, faults, managed_fields, meta, patch, protobuf, query, response, route,
    selector, server, status, subprotocol,
};
use fakekube_schema as schema;
