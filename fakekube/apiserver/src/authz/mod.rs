//! Authorization: whether a [`Caller`] may do what it asks, answered by the RBAC
//! [`Authorizer`] over the store's Roles, ClusterRoles and bindings (with `system:masters`
//! allowed everything before RBAC is asked), and the 403 worded as the API server words it.
//!
//! - `policy`: the RBAC objects read for quick checks.
//! - `authorizer`: decisions and rule listings.
//! - `bindings`: service-account bindings made of RBAC objects (the handle's sugar).

mod authorizer;
mod bindings;
mod policy;

pub use authorizer::{Authorizer, Decision, RulesReview};
pub use bindings::bind_service_account;

use crate::authn::{Identity, UserInfo};
use crate::rbac::{Action, Attributes};
use crate::status::ApiError;
use std::fmt;
use std::sync::Arc;

/// The caller of one request: who it is, and the authorizer that answers for it.
#[derive(Clone)]
pub struct Caller {
    identity: Identity,
    authorizer: Arc<Authorizer>,
}

impl fmt::Debug for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Caller")
            .field("user", &self.identity.user.name)
            .field("groups", &self.identity.user.groups)
            .finish_non_exhaustive()
    }
}

impl Caller {
    /// `identity`, authorized by `authorizer`.
    pub fn new(identity: Identity, authorizer: Arc<Authorizer>) -> Self {
        Caller {
            identity,
            authorizer,
        }
    }

    /// Who the caller is.
    pub fn user(&self) -> &UserInfo {
        &self.identity.user
    }

    /// The same authorizer answering for another identity (impersonation).
    pub(crate) fn as_identity(&self, identity: Identity) -> Caller {
        Caller::new(identity, self.authorizer.clone())
    }

    /// The authorizer's answer for `action`.
    pub fn decide(&self, action: &Action<'_>) -> Decision {
        self.authorizer.decide(
            &self.identity.user,
            self.identity.rules.as_deref().map(Vec::as_slice),
            action,
        )
    }

    /// The caller's rules in `namespace`.
    pub(crate) fn rules_in(&self, namespace: &str) -> RulesReview {
        self.authorizer.rules(
            &self.identity.user,
            self.identity.rules.as_deref().map(Vec::as_slice),
            namespace,
        )
    }

    /// Checks `action`: the API server's 403 when refused (401 for an anonymous caller, who
    /// is told to authenticate rather than that anonymous access is not allowed).
    pub(crate) fn authorize_action(&self, action: &Action<'_>) -> Result<(), ApiError> {
        let d = self.decide(action);
        if d.allowed {
            return Ok(());
        }
        if self.identity.is_anonymous() {
            return Err(ApiError::unauthorized());
        }
        Err(crate::rbac::forbidden(
            &self.identity.user.name,
            action,
            &d.reason,
        ))
    }

    /// Checks a resource request.
    pub fn authorize(&self, a: &Attributes<'_>) -> Result<(), ApiError> {
        self.authorize_action(&Action::Resource(*a))
    }

    /// The authorizer, for reviews about other users.
    pub(crate) fn authorizer(&self) -> &Authorizer {
        &self.authorizer
    }
}
