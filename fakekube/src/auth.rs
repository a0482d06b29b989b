//! Bearer tokens and per-token rules: who may do what, answered as 401 and 403 Statuses worded as
//! the real API server words them.

use crate::status::ApiError;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

/// One rule of a token's policy, shaped like an RBAC `PolicyRule` plus an optional list of
/// namespaces it is limited to.
///
/// `"*"` matches anything in `verbs`, `api_groups` and `resources`; a resource is matched as
/// `pods` or, for a subresource, `pods/exec`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    resource_names: Vec<String>,
    namespaces: Option<Vec<String>>,
}

impl Rule {
    /// A rule granting `verbs` on `resources` of `api_groups` (`""` is the core group).
    pub fn new<V, G, R>(api_groups: G, resources: R, verbs: V) -> Self
    where
        V: IntoIterator,
        V::Item: Into<String>,
        G: IntoIterator,
        G::Item: Into<String>,
        R: IntoIterator,
        R::Item: Into<String>,
    {
        Rule {
            verbs: verbs.into_iter().map(Into::into).collect(),
            api_groups: api_groups.into_iter().map(Into::into).collect(),
            resources: resources.into_iter().map(Into::into).collect(),
            resource_names: Vec::new(),
            namespaces: None,
        }
    }

    /// A rule that allows everything (a cluster admin).
    pub fn all() -> Self {
        Rule::new(["*"], ["*"], ["*"])
    }

    /// Limits the rule to these namespaces (like a Role bound there).
    pub fn in_namespaces<I>(mut self, namespaces: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.namespaces = Some(namespaces.into_iter().map(Into::into).collect());
        self
    }

    /// Limits the rule to objects with these names.
    pub fn with_names<I>(mut self, names: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.resource_names = names.into_iter().map(Into::into).collect();
        self
    }

    fn allows(&self, a: &Attributes<'_>) -> bool {
        let any = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
        if !any(&self.verbs, a.verb) || !any(&self.api_groups, a.group) {
            return false;
        }
        let resource_ok = if a.subresource.is_empty() {
            any(&self.resources, a.resource)
        } else {
            let full = format!("{}/{}", a.resource, a.subresource);
            let star = format!("*/{}", a.subresource);
            self.resources
                .iter()
                .any(|x| x == "*" || *x == full || *x == star)
        };
        if !resource_ok {
            return false;
        }
        if !self.resource_names.is_empty() && !self.resource_names.iter().any(|n| n == a.name) {
            return false;
        }
        match &self.namespaces {
            None => true,
            Some(list) => {
                !a.namespace.is_empty() && list.iter().any(|n| n == "*" || n == a.namespace)
            }
        }
    }

    /// The rule as a `SelfSubjectRulesReview` resource rule.
    fn to_json(&self) -> Value {
        let mut v = json!({
            "verbs": self.verbs,
            "apiGroups": self.api_groups,
            "resources": self.resources,
        });
        if !self.resource_names.is_empty() {
            v["resourceNames"] = json!(self.resource_names);
        }
        v
    }
}

/// A bearer token the server accepts.
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
            .field("rules", &self.rules)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl Token {
    /// A token with this secret for `user`, allowed everything until rules are given.
    pub fn new(secret: impl Into<String>, user: impl Into<String>) -> Self {
        Token {
            secret: secret.into(),
            user: user.into(),
            groups: vec!["system:authenticated".into()],
            rules: None,
            expires_at: None,
        }
    }

    /// Limits the token to exactly these rules (an empty list allows nothing).
    pub fn with_rules(mut self, rules: Vec<Rule>) -> Self {
        self.rules = Some(Arc::new(rules));
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
}

/// The authenticated caller of one request.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) user: String,
    rules: Option<Arc<Vec<Rule>>>,
}

/// What a request wants to do, as the authorizer sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attributes<'a> {
    pub(crate) verb: &'a str,
    pub(crate) group: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) subresource: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
}

impl Caller {
    /// Whether the caller may do `a`.
    pub(crate) fn allows(&self, a: &Attributes<'_>) -> bool {
        match &self.rules {
            None => true,
            Some(rules) => rules.iter().any(|r| r.allows(a)),
        }
    }

    /// Checks `a`, answering the API server's 403 when refused.
    pub(crate) fn authorize(&self, a: &Attributes<'_>) -> Result<(), ApiError> {
        if self.allows(a) {
            return Ok(());
        }
        Err(forbidden(&self.user, a))
    }

    /// The caller's rules in a namespace, for `SelfSubjectRulesReview`.
    pub(crate) fn rules_in(&self, namespace: &str) -> Vec<Value> {
        match &self.rules {
            None => vec![Rule::all().to_json()],
            Some(rules) => rules
                .iter()
                .filter(|r| match &r.namespaces {
                    None => true,
                    Some(l) => l.iter().any(|n| n == "*" || n == namespace),
                })
                .map(Rule::to_json)
                .collect(),
        }
    }
}

/// The 403 the API server answers for a refused request.
pub(crate) fn forbidden(user: &str, a: &Attributes<'_>) -> ApiError {
    let resource = if a.subresource.is_empty() {
        a.resource.to_string()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    let why = if a.namespace.is_empty() {
        format!(
            "User \"{user}\" cannot {} resource \"{resource}\" in API group \"{}\" at the cluster scope",
            a.verb, a.group
        )
    } else {
        format!(
            "User \"{user}\" cannot {} resource \"{resource}\" in API group \"{}\" in the namespace \"{}\"",
            a.verb, a.group, a.namespace
        )
    };
    let gr = if a.group.is_empty() {
        a.resource.to_string()
    } else {
        format!("{}.{}", a.resource, a.group)
    };
    let message = if a.name.is_empty() {
        format!("{gr} is forbidden: {why}")
    } else {
        format!("{gr} \"{}\" is forbidden: {why}", a.name)
    };
    let mut details = json!({ "kind": a.resource });
    if !a.name.is_empty() {
        details["name"] = json!(a.name);
    }
    if !a.group.is_empty() {
        details["group"] = json!(a.group);
    }
    ApiError::forbidden(message, details)
}

/// A service account: namespace and name.
type ServiceAccountKey = (String, String);

/// The tokens a server accepts, changeable while it runs.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    by_secret: RwLock<HashMap<String, Token>>,
    service_accounts: RwLock<HashMap<ServiceAccountKey, Arc<Vec<Rule>>>>,
}

impl Tokens {
    /// Adds or replaces a token.
    pub(crate) fn add(&self, token: Token) {
        if let Ok(mut m) = self.by_secret.write() {
            m.insert(token.secret.clone(), token);
        }
    }

    /// Removes a token; returns whether it was there.
    pub(crate) fn revoke(&self, secret: &str) -> bool {
        self.by_secret
            .write()
            .map(|mut m| m.remove(secret).is_some())
            .unwrap_or(false)
    }

    /// Sets or clears the expiry of a token; returns whether it was there.
    pub(crate) fn set_expiry(&self, secret: &str, at: Option<SystemTime>) -> bool {
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

    /// Grants the tokens of a service account these rules.
    pub(crate) fn bind_service_account(&self, namespace: &str, name: &str, rules: Vec<Rule>) {
        if let Ok(mut m) = self.service_accounts.write() {
            m.insert((namespace.to_string(), name.to_string()), Arc::new(rules));
        }
    }

    /// Mints a token for a service account (TokenRequest), with the rules bound to it (none:
    /// it may do nothing, as an unbound service account on a real cluster).
    pub(crate) fn mint_for_service_account(
        &self,
        namespace: &str,
        name: &str,
        ttl: Duration,
    ) -> (String, SystemTime) {
        let rules = self
            .service_accounts
            .read()
            .ok()
            .and_then(|m| m.get(&(namespace.to_string(), name.to_string())).cloned())
            .unwrap_or_else(|| Arc::new(Vec::new()));
        let secret = format!("fk-sa-{}", uuid::Uuid::new_v4().simple());
        let expires = SystemTime::now() + ttl;
        let mut token = Token::new(
            secret.clone(),
            format!("system:serviceaccount:{namespace}:{name}"),
        );
        token.groups.push("system:serviceaccounts".into());
        token
            .groups
            .push(format!("system:serviceaccounts:{namespace}"));
        token.rules = Some(rules);
        token.expires_at = Some(expires);
        self.add(token);
        (secret, expires)
    }

    /// Authenticates an `Authorization` header value (or a token from the WebSocket subprotocol).
    pub(crate) fn authenticate(&self, bearer: Option<&str>) -> Result<Caller, ApiError> {
        let secret = bearer.ok_or_else(ApiError::unauthorized)?;
        let m = self
            .by_secret
            .read()
            .map_err(|_| ApiError::internal("token table poisoned"))?;
        let t = m.get(secret).ok_or_else(ApiError::unauthorized)?;
        if let Some(exp) = t.expires_at
            && SystemTime::now() >= exp
        {
            return Err(ApiError::unauthorized());
        }
        Ok(Caller {
            user: t.user.clone(),
            rules: t.rules.clone(),
        })
    }
}

/// The token in an `Authorization: Bearer …` header, if any.
pub(crate) fn bearer(header: Option<&http::HeaderValue>) -> Option<&str> {
    let v = header?.to_str().ok()?;
    let (scheme, rest) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let t = rest.trim();
    (!t.is_empty()).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            verb,
            group,
            resource,
            subresource: sub,
            namespace: ns,
            name,
        }
    }

    #[test]
    fn forbidden_is_worded_as_the_api_server_words_it() {
        let e = forbidden(
            "alice",
            &attrs("delete", "agents.x-k8s.io", "sandboxes", "", "sb", "x"),
        );
        assert_eq!(
            e.message,
            "sandboxes.agents.x-k8s.io \"x\" is forbidden: User \"alice\" cannot delete resource \"sandboxes\" in API group \"agents.x-k8s.io\" in the namespace \"sb\""
        );
        let e = forbidden("bob", &attrs("create", "", "pods", "exec", "default", "p"));
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: User \"bob\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\""
        );
        let e = forbidden("bob", &attrs("list", "", "namespaces", "", "", ""));
        assert!(e.message.ends_with("at the cluster scope"), "{}", e.message);
        assert!(
            e.message.starts_with("namespaces is forbidden"),
            "{}",
            e.message
        );
    }

    #[test]
    fn rule_matches_subresource_only_when_named() {
        let r = Rule::new([""], ["pods"], ["get"]);
        assert!(r.allows(&attrs("get", "", "pods", "", "ns", "p")));
        assert!(!r.allows(&attrs("get", "", "pods", "exec", "ns", "p")));
        let r = Rule::new([""], ["pods/exec"], ["get", "create"]);
        assert!(r.allows(&attrs("create", "", "pods", "exec", "ns", "p")));
        assert!(!r.allows(&attrs("get", "", "pods", "", "ns", "p")));
    }

    #[test]
    fn rule_limited_to_namespaces_refuses_other_namespaces_and_cluster_scope() {
        let r = Rule::all().in_namespaces(["a"]);
        assert!(r.allows(&attrs("get", "", "pods", "", "a", "p")));
        assert!(!r.allows(&attrs("get", "", "pods", "", "b", "p")));
        assert!(!r.allows(&attrs("list", "", "namespaces", "", "", "")));
    }

    #[test]
    fn expired_and_revoked_tokens_are_unauthorized() {
        let t = Tokens::default();
        t.add(Token::new("a", "alice"));
        t.add(Token::new("b", "bob").expires_at(SystemTime::now() - Duration::from_secs(1)));
        assert!(t.authenticate(Some("a")).is_ok());
        assert_eq!(
            t.authenticate(Some("b"))
                .map(|_| ())
                .expect_err("refused")
                .code,
            401
        );
        assert!(t.revoke("a"));
        assert_eq!(
            t.authenticate(Some("a"))
                .map(|_| ())
                .expect_err("refused")
                .code,
            401
        );
        assert_eq!(
            t.authenticate(None).map(|_| ()).expect_err("refused").code,
            401
        );
    }

    #[test]
    fn token_debug_hides_the_secret() {
        let t = Token::new("very-secret-value", "alice");
        assert!(!format!("{t:?}").contains("very-secret-value"));
    }

    #[test]
    fn bearer_header_is_parsed_case_insensitively() {
        let h = http::HeaderValue::from_static("bearer abc");
        assert_eq!(bearer(Some(&h)), Some("abc"));
        let h = http::HeaderValue::from_static("Basic abc");
        assert_eq!(bearer(Some(&h)), None);
    }
}
