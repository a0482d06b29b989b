//! [`UserInfo`]: who a request is made by, as authenticators produce it and authorizers read
//! it, and the names Kubernetes gives its special users and groups.

use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The group of every authenticated user.
pub(crate) const AUTHENTICATED: &str = "system:authenticated";
/// The group of the anonymous user.
pub(crate) const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group the API server lets do anything, before any authorizer is asked.
pub(crate) const MASTERS: &str = "system:masters";
/// The user of a request without credentials.
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group of every service account.
pub(crate) const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// The prefix of a service account's user name.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// An authenticated (or anonymous) user: name, uid, groups and extra attributes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name (`system:serviceaccount:ns:name` for a service account).
    pub name: String,
    /// The uid (a service account's uid; empty for most users).
    pub(crate) uid: String,
    /// The groups.
    pub(crate) groups: Vec<String>,
    /// Extra attributes (`authentication.kubernetes.io/credential-id`...).
    pub(crate) extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with this name and groups.
    pub(crate) fn new(name: impl Into<String>, groups: Vec<String>) -> Self {
        UserInfo {
            name: name.into(),
            groups,
            ..UserInfo::default()
        }
    }

    /// The anonymous user of a request without credentials.
    pub(crate) fn anonymous() -> Self {
        UserInfo::new(ANONYMOUS, vec![UNAUTHENTICATED.into()])
    }

    /// The user of service account `namespace/name`, with the groups every service account
    /// has.
    pub(crate) fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        UserInfo {
            name: service_account_user(namespace, name),
            uid: uid.to_string(),
            groups: service_account_groups(namespace),
            extra: BTreeMap::new(),
        }
    }

    /// Adds `system:authenticated` unless the user already has it.
    pub(crate) fn authenticated(mut self) -> Self {
        if !self.groups.iter().any(|g| g == AUTHENTICATED) {
            self.groups.push(AUTHENTICATED.into());
        }
        self
    }

    /// Whether the user is in `system:masters`.
    pub(crate) fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }

    /// The user as a `UserInfo` JSON object (TokenReview, SelfSubjectReview).
    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({ "username": self.name, "groups": self.groups });
        if !self.uid.is_empty() {
            v["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            v["extra"] = json!(self.extra);
        }
        v
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub(crate) fn service_account_user(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// The groups of a service account in `namespace`.
pub(crate) fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        SERVICE_ACCOUNTS.into(),
        format!("{SERVICE_ACCOUNTS}:{namespace}"),
    ]
}

/// The namespace and name of a service account's user name.
pub(crate) fn parse_service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_round_trip() {
        let u = UserInfo::service_account("ns", "sa", "uid-1");
        assert_eq!(u.name, "system:serviceaccount:ns:sa");
        assert_eq!(parse_service_account(&u.name), Some(("ns", "sa")));
        assert_eq!(parse_service_account("system:serviceaccount:ns"), None);
        assert_eq!(parse_service_account("alice"), None);
        assert_eq!(
            u.authenticated().groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
    }
}
