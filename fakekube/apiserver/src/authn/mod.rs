//! Authentication: who made a request. Each authenticator turns one kind of credential into a
//! [`UserInfo`], tried in the API server's order: a client certificate the TLS listener
//! verified, then the bearer token (a static token first, then a service-account token). A
//! request with no credentials is anonymous; one with a credential that fails is refused (401).
//!
//! - [`UserInfo`] (in `crate::user`) and the special users and groups, used here.
//! - `tokens`: static tokens ([`Token`], the public API, and their table).
//! - `jwt`: signing and verifying JSON web tokens.
//! - `service_accounts`: bound (TokenRequest) and legacy (Secret) service-account tokens.
//! - `x509`: client certificates.

mod jwt;
mod service_accounts;
mod tokens;
use crate::user;
mod x509;

pub use jwt::{JwtError, Signer};
pub use service_accounts::{ISSUER, ServiceAccountTokens, TokenError, TokenSpec};
pub use tokens::Token;
pub use tokens::Tokens;
pub use user::UserInfo;
pub(crate) use user::{ANONYMOUS, AUTHENTICATED, parse_service_account, service_account_groups};

use crate::rbac::Rule;
use crate::status::ApiError;
use std::sync::Arc;
use tokens::Lookup;

/// An authenticated caller: the user, and the rules its token carries (if any).
#[derive(Debug, Clone)]
pub struct Identity {
    /// The user.
    pub(crate) user: UserInfo,
    /// The token's own rules, granted on top of RBAC.
    pub(crate) rules: Option<Arc<Vec<Rule>>>,
}

impl Identity {
    /// The anonymous caller.
    pub(crate) fn anonymous() -> Self {
        Identity {
            user: UserInfo::anonymous(),
            rules: None,
        }
    }

    /// Whether this is the anonymous caller.
    pub fn is_anonymous(&self) -> bool {
        self.user.name == ANONYMOUS
    }
}

/// The credentials of one request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Credentials<'a> {
    /// The client certificate (DER) the TLS listener verified.
    pub certificate: Option<&'a [u8]>,
    /// The bearer token (`Authorization` header or WebSocket subprotocol).
    pub bearer: Option<&'a str>,
}

/// Every authenticator of one server.
#[derive(Debug)]
pub struct Authenticator {
    /// Static tokens.
    pub tokens: Tokens,
    /// Service-account tokens.
    pub service_accounts: ServiceAccountTokens,
}

impl crate::store::TokenIssuer for Authenticator {
    fn pod_token(
        &self,
        request: &crate::client::PodTokenRequest<'_>,
    ) -> Result<String, crate::status::ApiError> {
        self.service_accounts.pod_token(request)
    }
}

impl Authenticator {
    /// The authenticators: `tokens` and service-account tokens checked by `service_accounts`.
    pub fn new(tokens: Tokens, service_accounts: ServiceAccountTokens) -> Self {
        Authenticator {
            tokens,
            service_accounts,
        }
    }

    /// Authenticates a request: the anonymous identity when it has no credentials, 401 when
    /// they are refused.
    pub fn authenticate(&self, credentials: Credentials<'_>) -> Result<Identity, ApiError> {
        if let Some(der) = credentials.certificate {
            return x509::user_of(der)
                .map(|user| Identity {
                    user: user.authenticated(),
                    rules: None,
                })
                .ok_or_else(ApiError::unauthorized);
        }
        let Some(token) = credentials.bearer else {
            return Ok(Identity::anonymous());
        };
        self.token(token, &[ISSUER.to_string()])
            .map(|(identity, _)| identity)
            .map_err(|why| {
                tracing::debug!(%why, "a bearer token was refused");
                ApiError::unauthorized()
            })
    }

    /// Authenticates a bearer token for one of `audiences` (TokenReview); the error says why
    /// not, without the token.
    pub(crate) fn token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(Identity, Vec<String>), String> {
        match self.tokens.lookup(token) {
            Lookup::Valid(a) => {
                return Ok((
                    Identity {
                        user: a.user,
                        rules: a.rules,
                    },
                    audiences.to_vec(),
                ));
            }
            Lookup::Expired => return Err("the token has expired".into()),
            Lookup::Unknown => {}
        }
        self.service_accounts
            .authenticate(token, audiences)
            .map(|(user, auds)| {
                (
                    Identity {
                        user: user.authenticated(),
                        rules: None,
                    },
                    auds,
                )
            })
            .map_err(|e| e.to_string())
    }
}
