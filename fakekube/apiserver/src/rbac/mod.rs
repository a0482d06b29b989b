//! RBAC (`rbac.authorization.k8s.io/v1`) as data and rules, with no store behind it: the
//! request attributes an authorizer decides on, `PolicyRule` matching, the Forbidden wording,
//! the admission of Roles, ClusterRoles and their bindings, and the bootstrap policy every
//! server starts with (ClusterRole aggregation is a controller's, in `fakekube-controllers`). The authorizer over stored objects is
//! [`authz`](crate::authz).
//!
//! - `attributes`: what a request asks ([`Attributes`], [`NonResource`], [`Action`]).
//! - `rule`: [`PolicyRule`] and how it matches a request.
//! - `scoped`: [`Rule`], a policy rule a token carries (the public API).
//! - `forbidden`: the 403 Status.
//! - `validation`: defaults and 422s of the four kinds.
//! - `bootstrap`: the default ClusterRoles and ClusterRoleBindings.

mod attributes;
pub mod bootstrap;
mod forbidden;
mod rule;
mod scoped;
mod validation;

pub use attributes::{Action, Attributes, NonResource, non_resource_verb};
pub(crate) use forbidden::forbidden;
pub(crate) use rule::PolicyRule;
pub use scoped::Rule;
pub use validation::{GROUP, admit, path_segment_problem};
