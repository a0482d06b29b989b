//! The kubelet's HTTPS API (`fakekube_kubelet::kubelet_api`, re-exported here) as the embedded
//! fake serves it: its callers authenticated by the API server's authenticators and authorized
//! by its RBAC, as a kubelet's webhook authentication (TokenReviews) and authorization
//! (SubjectAccessReviews) ask the API server.

pub(crate) use fakekube_kubelet::kubelet_api::*;

use crate::authn::{Authenticator, Credentials, Identity};
use crate::authz::{Authorizer, Caller};
use crate::rbac::{Action, Attributes};
use crate::server::PeerCertificate;
use crate::subprotocol::protocol_token;
use http::header;
use http::request::Parts;
use std::sync::Arc;

/// The embedded API server's answer to the kubelet's reviews: its authenticators and RBAC.
#[derive(Debug)]
pub(crate) struct ClusterAccess {
    /// The API server's authenticators.
    pub(crate) authn: Arc<Authenticator>,
    /// The API server's RBAC authorizer.
    pub(crate) authz: Arc<Authorizer>,
}

impl Authorize for ClusterAccess {
    fn caller_allowed(
        &self,
        parts: &Parts,
        node: &str,
        subresources: &[&str],
        verb: &str,
    ) -> Result<(), Refusal> {
        let caller = authenticate(&self.authn, &self.authz, parts).ok_or(Refusal::Unauthorized)?;
        let allowed = subresources.iter().any(|sub| {
            caller
                .decide(&Action::Resource(Attributes {
                    verb,
                    group: "",
                    resource: "nodes",
                    subresource: sub,
                    namespace: "",
                    name: node,
                }))
                .allowed
        });
        if allowed {
            Ok(())
        } else {
            Err(Refusal::Forbidden {
                user: caller.user().name.clone(),
            })
        }
    }
}

/// The caller, as the kubelet's authenticators see it: a client certificate signed by the
/// cluster's CA, or a bearer token the API server accepts (in the `Authorization` header or a
/// WebSocket subprotocol); `None` without credentials or with refused ones.
fn authenticate(authn: &Authenticator, authz: &Arc<Authorizer>, parts: &Parts) -> Option<Caller> {
    let protocol_token = protocol_token(&parts.headers);
    let bearer = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty())
        .or(protocol_token.as_deref());
    let certificate = parts
        .extensions
        .get::<PeerCertificate>()
        .map(|c| c.0.as_ref().as_ref());
    let identity: Identity = authn
        .authenticate(Credentials {
            certificate,
            bearer,
        })
        .ok()?;
    (!identity.is_anonymous()).then(|| Caller::new(identity, authz.clone()))
}
