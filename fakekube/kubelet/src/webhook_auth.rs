//! The kubelet API's callers authenticated and authorized as a kubelet joined to a cluster does
//! it when started with `--client-ca-file`, `--authentication-token-webhook`,
//! `--anonymous-auth=false` and `--authorization-mode=Webhook` (as kubeadm and kind start it):
//! cmd/kubelet/app/auth.go's `BuildAuth`, over k8s.io/apiserver's delegating authenticator and
//! webhook authorizer.
//!
//! - **Authentication**, in the order of the kubelet's union of authenticators, the first to
//!   name a user winning: the request's client certificate, when the client CA signed it
//!   (the TLS layer only requested it: Go's `tls.RequestClientCert`), as the user its subject
//!   names (the Common Name, the Organizations as groups: the machinery's
//!   [`certificate_user`]); then the `Authorization: Bearer` token, then the token of a
//!   WebSocket's `base64url.bearer.authorization.k8s.io.` subprotocol, each checked with a
//!   TokenReview. A certificate of another CA, or a refused token, is an error that lets the
//!   next one try; when none names a user the answer is 401 (anonymous access is off).
//!   `system:authenticated` is added to the user's groups.
//! - **Authorization**: a SubjectAccessReview for each of the request's `nodes` subresources in
//!   turn (the user, its uid, groups and extra; the verb, `v1`, `nodes`, the subresource, the
//!   node's name), allowed by the first that allows; a review that fails is the kubelet's 500.
//! - The reviews are created with the node's own credentials, as the kubelet's are: upstream's
//!   Node authorizer lets a node create TokenReviews and SubjectAccessReviews (its static rules,
//!   `bootstrappolicy.NodeRules`), with no RBAC binding needed.
//! - Their answers are cached for the kubelet's default times: a token's for 2 minutes
//!   (`authentication.webhook.cacheTTL`), an allowed review for 5 minutes and a denied one for
//!   30 seconds (`authorization.webhook.cacheAuthorizedTTL`, `cacheUnauthorizedTTL`); a review
//!   that failed is not cached.
//!
//! # Known limitations
//!
//! - A client certificate is verified alone (the listener keeps no intermediates): a chain
//!   through an intermediate CA is refused.
//! - A failed review is not retried with the webhook's back-off.

use crate::client::http::HttpClient;
use crate::kubelet_api::{Authorize, Refusal};
use crate::status::ApiError;
use crate::subprotocol::protocol_token;
use crate::tls::ClientCa;
use crate::x509::{CREDENTIAL_ID, certificate_user};
use fakekube_machinery::server::PeerCertificate;
use http::header;
use http::request::Parts;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a token's review is kept (the kubelet's `authentication.webhook.cacheTTL`).
const TOKEN_TTL: Duration = Duration::from_secs(120);
/// How long an allowed SubjectAccessReview is kept (`authorization.webhook.cacheAuthorizedTTL`).
const ALLOWED_TTL: Duration = Duration::from_secs(300);
/// How long a denied one is kept (`authorization.webhook.cacheUnauthorizedTTL`).
const DENIED_TTL: Duration = Duration::from_secs(30);
/// The most answers a cache keeps.
const CACHE_CAPACITY: usize = 4096;
/// The collection TokenReviews are created in.
const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
/// The collection SubjectAccessReviews are created in.
const SUBJECT_ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
/// The group every authenticated user is in.
const AUTHENTICATED: &str = "system:authenticated";
/// The group of unauthenticated requests (a user in it gets no `system:authenticated`).
const UNAUTHENTICATED: &str = "system:unauthenticated";

/// The API server's review endpoints, as the kubelet's webhook clients reach them.
pub trait Reviews: Send + Sync + fmt::Debug {
    /// Creates `review` in the collection at `path` and returns the API server's answer (the
    /// review with its `status`), or why there is none.
    fn create_review(&self, path: &str, review: &Value) -> Result<Arc<Value>, ApiError>;
}

impl Reviews for HttpClient {
    fn create_review(&self, path: &str, review: &Value) -> Result<Arc<Value>, ApiError> {
        HttpClient::create_review(self, path, review)
    }
}

/// An authenticated caller, as the kubelet's authenticators name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The user name.
    pub name: String,
    /// The uid (empty for most users).
    pub uid: String,
    /// The groups, `system:authenticated` among them.
    pub groups: Vec<String>,
    /// Extra attributes (`authentication.kubernetes.io/credential-id`, ...).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// The user with `system:authenticated` added to its groups, unless it is in it (or in
    /// `system:unauthenticated`) already (k8s.io/apiserver's `AuthenticatedGroupAdder`).
    fn authenticated(mut self) -> User {
        if !self
            .groups
            .iter()
            .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
        {
            self.groups.push(AUTHENTICATED.to_string());
        }
        self
    }
}

/// A SubjectAccessReview's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Answer {
    allowed: bool,
    denied: bool,
}

/// Answers kept until they expire, by key.
struct Expiring<V> {
    entries: HashMap<String, (Instant, V)>,
}

impl<V: Clone> Expiring<V> {
    fn new() -> Self {
        Expiring {
            entries: HashMap::new(),
        }
    }

    /// The answer kept for `key`, unless it expired by `now`.
    fn get(&mut self, key: &str, now: Instant) -> Option<V> {
        match self.entries.get(key) {
            Some((expires, v)) if *expires > now => Some(v.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` for `key` until `expires`; a full cache first drops what expired by
    /// `now`, and everything when that is not enough.
    fn put(&mut self, key: String, value: V, now: Instant, expires: Instant) {
        if self.entries.len() >= CACHE_CAPACITY {
            self.entries.retain(|_, (e, _)| *e > now);
            if self.entries.len() >= CACHE_CAPACITY {
                self.entries.clear();
            }
        }
        self.entries.insert(key, (expires, value));
    }
}

/// The kubelet API's [`Authorize`] as a node of a cluster: its client CA, and the API server's
/// reviews through the node's client. `Debug` shows no token.
pub struct WebhookAccess {
    client_ca: ClientCa,
    reviews: Arc<dyn Reviews>,
    /// Token reviews by token: the user, or `None` for a token refused without an error.
    tokens: Mutex<Expiring<Option<User>>>,
    /// SubjectAccessReview answers by the review's spec.
    answers: Mutex<Expiring<Answer>>,
}

impl fmt::Debug for WebhookAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookAccess")
            .field("client_ca", &self.client_ca)
            .field("reviews", &self.reviews)
            .finish_non_exhaustive()
    }
}

/// Locks a cache, whatever a panicking holder left in it (answers only, each whole).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The `Authorization` header's bearer token, read as k8s.io/apiserver's bearer-token
/// authenticator reads it: the header trimmed, split on its first two spaces, the first part
/// `bearer` in any case, the second non-empty.
fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let mut fields = value.trim().splitn(3, ' ');
    let scheme = fields.next()?;
    let token = fields.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The strings of a JSON list (anything else reads as none).
fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// A TokenReview's answer: the user, `None` when the token is refused without an error, or
/// the error the review names.
fn token_user(answer: &Value) -> Result<Option<User>, String> {
    let status = answer.get("status").unwrap_or(&Value::Null);
    if status.get("authenticated").and_then(Value::as_bool) != Some(true) {
        return match status.get("error").and_then(Value::as_str) {
            Some(e) if !e.is_empty() => Err(e.to_string()),
            _ => Ok(None),
        };
    }
    let user = status.get("user").unwrap_or(&Value::Null);
    let text = |k: &str| {
        user.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let extra = user
        .get("extra")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), strings(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    Ok(Some(User {
        name: text("username"),
        uid: text("uid"),
        groups: strings(user.get("groups")),
        extra,
    }))
}

/// The spec of the SubjectAccessReview asking whether `user` may `verb` `nodes/<subresource>`
/// of `node`, with Go's empty fields left out.
fn review_spec(user: &User, node: &str, subresource: &str, verb: &str) -> Value {
    let mut attributes = Map::new();
    for (k, v) in [
        ("verb", verb),
        ("version", "v1"),
        ("resource", "nodes"),
        ("subresource", subresource),
        ("name", node),
    ] {
        if !v.is_empty() {
            attributes.insert(k.into(), json!(v));
        }
    }
    let mut spec = Map::new();
    spec.insert("resourceAttributes".into(), Value::Object(attributes));
    if !user.name.is_empty() {
        spec.insert("user".into(), json!(user.name));
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
    if !user.uid.is_empty() {
        spec.insert("uid".into(), json!(user.uid));
    }
    Value::Object(spec)
}

impl WebhookAccess {
    /// The access of a node whose client CA is `client_ca`, reviewing tokens and access through
    /// `reviews` (the node's client).
    pub fn new(client_ca: ClientCa, reviews: Arc<dyn Reviews>) -> Self {
        WebhookAccess {
            client_ca,
            reviews,
            tokens: Mutex::new(Expiring::new()),
            answers: Mutex::new(Expiring::new()),
        }
    }

    /// The caller of a request, `None` when no authenticator names one (401).
    pub fn authenticate(&self, parts: &Parts, now: Instant) -> Option<User> {
        if let Some(PeerCertificate(cert)) = parts.extensions.get::<PeerCertificate>() {
            if self.client_ca.verifies(cert) {
                match certificate_user(cert.as_ref()) {
                    Ok(Some(named)) => {
                        let extra = BTreeMap::from([(
                            CREDENTIAL_ID.to_string(),
                            vec![named.credential_id],
                        )]);
                        return Some(
                            User {
                                name: named.name,
                                uid: named.uid,
                                groups: named.groups,
                                extra,
                            }
                            .authenticated(),
                        );
                    }
                    Ok(None) => {}
                    Err(e) => tracing::debug!(error = %e, "a client certificate names no user"),
                }
            } else {
                tracing::debug!("a client certificate the client CA did not sign");
            }
        }
        let protocol = protocol_token(&parts.headers);
        for token in [bearer_token(parts), protocol.as_deref()]
            .into_iter()
            .flatten()
        {
            if let Some(user) = self.review_token(token, now) {
                return Some(user.authenticated());
            }
        }
        None
    }

    /// The user the API server says `token` is, `None` when it refuses it or cannot be asked.
    fn review_token(&self, token: &str, now: Instant) -> Option<User> {
        if let Some(kept) = lock(&self.tokens).get(token, now) {
            return kept;
        }
        let review = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": { "token": token },
        });
        let answer = match self.reviews.create_review(TOKEN_REVIEWS, &review) {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(error = %e.message, "the TokenReview failed");
                return None;
            }
        };
        match token_user(&answer) {
            Ok(user) => {
                lock(&self.tokens).put(token.to_string(), user.clone(), now, now + TOKEN_TTL);
                user
            }
            Err(why) => {
                tracing::debug!(%why, "a bearer token was refused");
                None
            }
        }
    }

    /// Whether the API server allows `user` to `verb` `nodes/<subresource>` of `node`:
    /// `Ok(true)` allowed, `Ok(false)` denied or no opinion, `Err` when the review failed.
    fn allowed(
        &self,
        user: &User,
        node: &str,
        subresource: &str,
        verb: &str,
        now: Instant,
    ) -> Result<bool, String> {
        let spec = review_spec(user, node, subresource, verb);
        let key = spec.to_string();
        let kept = lock(&self.answers).get(&key, now);
        let answer = match kept {
            Some(answer) => answer,
            None => {
                let review = json!({
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SubjectAccessReview",
                    "spec": spec,
                });
                let status = self
                    .reviews
                    .create_review(SUBJECT_ACCESS_REVIEWS, &review)
                    .map_err(|e| e.message)?
                    .get("status")
                    .cloned()
                    .unwrap_or(Value::Null);
                let flag = |k: &str| status.get(k).and_then(Value::as_bool).unwrap_or(false);
                let answer = Answer {
                    allowed: flag("allowed"),
                    denied: flag("denied"),
                };
                let ttl = if answer.allowed {
                    ALLOWED_TTL
                } else {
                    DENIED_TTL
                };
                lock(&self.answers).put(key, answer, now, now + ttl);
                answer
            }
        };
        if answer.allowed && answer.denied {
            return Err(
                "webhook subject access review returned both allow and deny response".into(),
            );
        }
        Ok(answer.allowed)
    }
}

impl Authorize for WebhookAccess {
    fn caller_allowed(
        &self,
        parts: &Parts,
        node: &str,
        subresources: &[&str],
        verb: &str,
    ) -> Result<(), Refusal> {
        let now = Instant::now();
        let Some(user) = self.authenticate(parts, now) else {
            return Err(Refusal::Unauthorized);
        };
        for subresource in subresources {
            match self.allowed(&user, node, subresource, verb, now) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(
                        user = %user.name,
                        verb,
                        subresource,
                        %error,
                        "the SubjectAccessReview failed"
                    );
                    return Err(Refusal::AuthorizationError {
                        user: user.name,
                        subresource: (*subresource).to_string(),
                    });
                }
            }
        }
        tracing::debug!(user = %user.name, verb, ?subresources, "forbidden");
        Err(Refusal::Forbidden { user: user.name })
    }
}

#[cfg(test)]
mod tests;
