//! Static bearer tokens: [`Token`] (the public API) and the table of those a server accepts,
//! changeable while it runs, as a token file's entries would be.

use super::user::{MASTERS, UserInfo, service_account_groups, service_account_user};
use crate::rbac::Rule;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

/// A bearer token the server accepts, and who it authenticates as.
///
/// [`Token::new`] makes a token in `system:masters`, allowed everything (as the admin is).
/// [`Token::with_rules`] takes it out of that group and gives it its own rules instead: the
/// token may then do what those rules grant **and** what RBAC grants its user and groups (on a
/// fresh server, what every authenticated user may: discovery and the self reviews). The rules
/// are the token's own, not RBAC objects, so two tokens of one user can hold different rules.
/// [`Token::service_account`] makes a token that authenticates as a service account and is
/// authorized by RBAC alone, as a service account's token is.
#[derive(Clone)]
pub struct Token {
    secret: String,
    user: String,
    groups: Vec<String>,
    rules: Option<Arc<Vec<Rule>>>,
    expires_at: Option<SystemTime>,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("secret", &"[REDACTED]")
            .field("user", &self.user)
            .field("groups", &self.groups)
            .field("rules", &self.rules)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl Token {
    /// A token with this secret for `user`, in `system:masters` (allowed everything) until
    /// rules or groups are given.
    pub fn new(secret: impl Into<String>, user: impl Into<String>) -> Self {
        Token {
            secret: secret.into(),
            user: user.into(),
            groups: vec![MASTERS.into()],
            rules: None,
            expires_at: None,
        }
    }

    /// A token that authenticates as service account `namespace/name` (user
    /// `system:serviceaccount:<namespace>:<name>`, its groups), authorized by RBAC alone. The
    /// service account need not exist: the token is accepted as a token file's would be.
    pub fn service_account(secret: impl Into<String>, namespace: &str, name: &str) -> Self {
        Token {
            secret: secret.into(),
            user: service_account_user(namespace, name),
            groups: service_account_groups(namespace),
            rules: None,
            expires_at: None,
        }
    }

    /// Authorizes the token by these rules (an empty list adds nothing) on top of what RBAC
    /// grants its user and groups; takes it out of `system:masters`.
    pub fn with_rules(mut self, rules: Vec<Rule>) -> Self {
        self.groups.retain(|g| g != MASTERS);
        self.rules = Some(Arc::new(rules));
        self
    }

    /// Replaces the token's groups (`system:authenticated` is always added): RBAC bindings to
    /// those groups then apply. Without `system:masters` among them the token is authorized by
    /// RBAC (and its rules, if any).
    pub fn with_groups<I>(mut self, groups: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.groups = groups.into_iter().map(Into::into).collect();
        self
    }

    /// Makes the token expire at `at`.
    pub fn expires_at(mut self, at: SystemTime) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// Makes the token expire `after` from now.
    pub fn expires_in(self, after: Duration) -> Self {
        self.expires_at(SystemTime::now() + after)
    }

    /// The secret a client sends as `Authorization: Bearer <secret>`.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The user the token authenticates as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The groups the token's user is in (besides `system:authenticated`).
    pub fn groups(&self) -> &[String] {
        &self.groups
    }
}

/// Who a static token authenticated as, with its own rules.
pub(crate) struct Authenticated {
    pub(crate) user: UserInfo,
    pub(crate) rules: Option<Arc<Vec<Rule>>>,
}

/// The static tokens a server accepts. Its `Debug` shows how many there are, never a secret.
#[derive(Default)]
pub struct Tokens {
    by_secret: RwLock<HashMap<String, Token>>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.by_secret.read().map(|m| m.len()).unwrap_or(0);
        f.debug_struct("Tokens").field("count", &n).finish()
    }
}

/// What a lookup of a static token found.
pub(crate) enum Lookup {
    /// No static token has this secret.
    Unknown,
    /// The token exists but has expired.
    Expired,
    /// The token is valid.
    Valid(Authenticated),
}

impl Tokens {
    /// Adds or replaces a token.
    pub fn add(&self, token: Token) {
        if let Ok(mut m) = self.by_secret.write() {
            m.insert(token.secret.clone(), token);
        }
    }

    /// Removes a token; returns whether it was there.
    pub fn revoke(&self, secret: &str) -> bool {
        self.by_secret
            .write()
            .map(|mut m| m.remove(secret).is_some())
            .unwrap_or(false)
    }

    /// Sets or clears the expiry of a token; returns whether it was there.
    pub fn set_expiry(&self, secret: &str, at: Option<SystemTime>) -> bool {
        match self.by_secret.write() {
            Ok(mut m) => match m.get_mut(secret) {
                Some(t) => {
                    t.expires_at = at;
                    true
                }
                None => false,
            },
            Err(_) => false,
        }
    }

    /// Looks a bearer token up.
    pub(crate) fn lookup(&self, secret: &str) -> Lookup {
        let Ok(m) = self.by_secret.read() else {
            return Lookup::Unknown;
        };
        let Some(t) = m.get(secret) else {
            return Lookup::Unknown;
        };
        if t.expires_at.is_some_and(|exp| SystemTime::now() >= exp) {
            return Lookup::Expired;
        }
        Lookup::Valid(Authenticated {
            user: UserInfo::new(t.user.clone(), t.groups.clone()).authenticated(),
            rules: t.rules.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_and_revoked_tokens_are_no_longer_valid() {
        let t = Tokens::default();
        t.add(Token::new("a", "alice"));
        t.add(Token::new("b", "bob").expires_at(SystemTime::now() - Duration::from_secs(1)));
        assert!(matches!(t.lookup("a"), Lookup::Valid(_)));
        assert!(matches!(t.lookup("b"), Lookup::Expired));
        assert!(t.revoke("a"));
        assert!(matches!(t.lookup("a"), Lookup::Unknown));
    }

    #[test]
    fn a_new_token_is_a_master_until_it_gets_rules() {
        let master = Token::new("s", "alice");
        assert_eq!(master.groups(), ["system:masters"]);
        let limited = master.with_rules(Vec::new());
        assert!(limited.groups().is_empty());
        let sa = Token::service_account("s", "ns", "runner");
        assert_eq!(sa.user(), "system:serviceaccount:ns:runner");
        let t = Tokens::default();
        t.add(sa);
        let Lookup::Valid(a) = t.lookup("s") else {
            panic!("valid")
        };
        assert_eq!(
            a.user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
    }

    #[test]
    fn debug_output_shows_no_secret() {
        let t = Token::new("very-secret-value", "alice");
        assert!(!format!("{t:?}").contains("very-secret-value"));
        let table = Tokens::default();
        table.add(t);
        assert!(!format!("{table:?}").contains("very-secret-value"));
    }
}
