//! Service-account tokens: the bound tokens TokenRequest issues (`kubectl create token`) and
//! the legacy long-lived ones the token controller writes into Secrets of type
//! `kubernetes.io/service-account-token`, and how both are authenticated.
//!
//! A bound token carries the usual claims (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti` and
//! the `kubernetes.io` claim naming the namespace, the service account and the object it is
//! bound to, with uids); it is valid until it expires, for the audiences it names, while its
//! service account (and bound object) still exist with those uids. A legacy token carries the
//! `kubernetes.io/serviceaccount/*` claims; it is valid while its Secret exists and still holds
//! it, and its service account still exists.

use super::jwt::{JwtError, Signer};
use super::user::UserInfo;
use crate::meta::meta_str;
use crate::registry::ResourceType;
use crate::store::Store;
use base64::Engine;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The issuer of bound tokens, and the API server's audience.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The issuer of legacy Secret tokens.
const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The user extra naming the credential (`JTI=<id>`).
pub(crate) const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// Why a service-account token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a token this server signed.
    #[error("invalid bearer token")]
    Jwt(#[source] JwtError),
    /// Past its `exp` (or before its `nbf`).
    #[error("service account token has expired")]
    Expired,
    /// None of its audiences is one the request accepts.
    #[error("token audiences {token:?} is invalid for the target audiences {wanted:?}")]
    Audience {
        /// The token's audiences.
        token: Vec<String>,
        /// The audiences accepted.
        wanted: Vec<String>,
    },
    /// Its service account, Secret or bound object is gone (or was replaced).
    #[error("{0}")]
    Revoked(String),
    /// The claims are not those of a service-account token.
    #[error("the token's claims are not a service account's")]
    Claims,
}

/// What a TokenRequest asks for.
#[derive(Debug, Clone)]
pub struct TokenSpec {
    /// The audiences (the API server's when empty).
    pub(crate) audiences: Vec<String>,
    /// How long the token lives.
    pub(crate) ttl: Duration,
    /// The object the token is bound to: kind, name and uid.
    pub(crate) bound: Option<(String, String, String)>,
}

/// Issues and checks service-account tokens.
#[derive(Debug)]
pub struct ServiceAccountTokens {
    signer: Signer,
    store: Arc<Store>,
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl ServiceAccountTokens {
    /// Tokens signed by `signer`, checked against the objects in `store`.
    pub fn new(signer: Signer, store: Arc<Store>) -> Self {
        ServiceAccountTokens { signer, store }
    }

    /// The core kind of `plural`.
    fn kind(&self, plural: &str) -> Option<Arc<ResourceType>> {
        self.store.registry().find("", "v1", plural)
    }

    /// A bound token for the service account `sa` (the stored object); returns it with its
    /// expiry.
    pub(crate) fn issue(&self, sa: &Value, spec: &TokenSpec) -> (String, SystemTime) {
        let now = SystemTime::now();
        let expires = now + spec.ttl;
        let audiences = if spec.audiences.is_empty() {
            vec![ISSUER.to_string()]
        } else {
            spec.audiences.clone()
        };
        let ns = meta_str(sa, "namespace").unwrap_or("");
        let name = meta_str(sa, "name").unwrap_or("");
        let mut k8s = json!({
            "namespace": ns,
            "serviceaccount": { "name": name, "uid": meta_str(sa, "uid").unwrap_or("") },
        });
        if let Some((kind, bound_name, uid)) = &spec.bound {
            k8s[kind.to_ascii_lowercase()] = json!({ "name": bound_name, "uid": uid });
        }
        let claims = json!({
            "aud": audiences,
            "exp": unix(expires),
            "iat": unix(now),
            "iss": ISSUER,
            "jti": uuid::Uuid::new_v4().to_string(),
            "kubernetes.io": k8s,
            "nbf": unix(now),
            "sub": super::user::service_account_user(ns, name),
        });
        (self.signer.sign(&claims), expires)
    }

    /// A token of `request`'s service account bound to its pod, as TokenRequest issues one
    /// to a kubelet; 404 when the account or the pod (with that uid) is not there.
    pub fn pod_token(
        &self,
        request: &crate::client::PodTokenRequest<'_>,
    ) -> Result<String, crate::status::ApiError> {
        use crate::status::{ApiError, Target};
        let target = |resource, kind, name| Target {
            group: "",
            resource,
            kind,
            name,
        };
        let ns = request.namespace;
        let account = self
            .kind("serviceaccounts")
            .and_then(|rt| self.store.get_opt(&rt, ns, request.account))
            .ok_or_else(|| {
                ApiError::not_found(target("serviceaccounts", "ServiceAccount", request.account))
            })?;
        let pod = self
            .kind("pods")
            .and_then(|rt| self.store.get_opt(&rt, ns, request.pod_name))
            .filter(|p| meta_str(p, "uid") == Some(request.pod_uid))
            .ok_or_else(|| ApiError::not_found(target("pods", "Pod", request.pod_name)))?;
        let spec = TokenSpec {
            audiences: request.audience.map(str::to_string).into_iter().collect(),
            ttl: Duration::from_secs(request.expiration_seconds.max(600)),
            bound: Some((
                "Pod".into(),
                request.pod_name.to_string(),
                meta_str(&pod, "uid").unwrap_or("").to_string(),
            )),
        };
        Ok(self.issue(&account, &spec).0)
    }

    /// The legacy token the token controller writes into Secret `secret_name` for `sa`.
    pub fn issue_legacy(&self, sa: &Value, secret_name: &str) -> String {
        let ns = meta_str(sa, "namespace").unwrap_or("");
        let name = meta_str(sa, "name").unwrap_or("");
        self.signer.sign(&json!({
            "iss": LEGACY_ISSUER,
            "kubernetes.io/serviceaccount/namespace": ns,
            "kubernetes.io/serviceaccount/secret.name": secret_name,
            "kubernetes.io/serviceaccount/service-account.name": name,
            "kubernetes.io/serviceaccount/service-account.uid": meta_str(sa, "uid").unwrap_or(""),
            "sub": super::user::service_account_user(ns, name),
        }))
    }

    /// Authenticates a service-account token for one of `audiences`; returns the user and
    /// the audiences it was accepted for.
    pub fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), TokenError> {
        let claims = self.signer.verify(token).map_err(TokenError::Jwt)?;
        match claims.get("iss").and_then(Value::as_str) {
            Some(LEGACY_ISSUER) => self.legacy(token, &claims, audiences),
            Some(ISSUER) => self.bound(&claims, audiences),
            _ => Err(TokenError::Claims),
        }
    }

    fn bound(
        &self,
        claims: &Value,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), TokenError> {
        let now = unix(SystemTime::now());
        let at = |k: &str| claims.get(k).and_then(Value::as_u64).unwrap_or(0);
        if now >= at("exp") || now < at("nbf") {
            return Err(TokenError::Expired);
        }
        let token_auds: Vec<String> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(l)) => l
                .iter()
                .filter_map(|a| a.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        let matched: Vec<String> = audiences
            .iter()
            .filter(|a| token_auds.contains(a))
            .cloned()
            .collect();
        if matched.is_empty() {
            return Err(TokenError::Audience {
                token: token_auds,
                wanted: audiences.to_vec(),
            });
        }
        let k8s = claims.get("kubernetes.io").ok_or(TokenError::Claims)?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        let ns = text(k8s.get("namespace"));
        let sa = k8s.get("serviceaccount").ok_or(TokenError::Claims)?;
        let (name, uid) = (text(sa.get("name")), text(sa.get("uid")));
        self.check_object("serviceaccounts", &ns, &name, &uid)?;
        let mut user = UserInfo::service_account(&ns, &name, &uid);
        if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
            user.extra
                .insert(CREDENTIAL_ID.into(), vec![format!("JTI={jti}")]);
        }
        for (claim, plural) in [("pod", "pods"), ("secret", "secrets")] {
            if let Some(bound) = k8s.get(claim) {
                let (bname, buid) = (text(bound.get("name")), text(bound.get("uid")));
                self.check_object(plural, &ns, &bname, &buid)?;
                if claim == "pod" {
                    user.extra
                        .insert("authentication.kubernetes.io/pod-name".into(), vec![bname]);
                    user.extra
                        .insert("authentication.kubernetes.io/pod-uid".into(), vec![buid]);
                }
            }
        }
        Ok((user, matched))
    }

    fn legacy(
        &self,
        token: &str,
        claims: &Value,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), TokenError> {
        let text = |k: &str| {
            claims
                .get(format!("kubernetes.io/serviceaccount/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (ns, secret_name) = (text("namespace"), text("secret.name"));
        let (name, uid) = (text("service-account.name"), text("service-account.uid"));
        let secret = self
            .kind("secrets")
            .and_then(|rt| self.store.get_opt(&rt, &ns, &secret_name))
            .ok_or_else(|| TokenError::Revoked(format!("secrets \"{secret_name}\" not found")))?;
        let stored = secret
            .get("data")
            .and_then(|d| d.get("token"))
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok());
        if secret.pointer("/metadata/deletionTimestamp").is_some()
            || stored.as_deref() != Some(token.as_bytes())
        {
            return Err(TokenError::Revoked(format!(
                "token of secret \"{secret_name}\" is no longer valid"
            )));
        }
        self.check_object("serviceaccounts", &ns, &name, &uid)?;
        // Legacy tokens name no audience: they are good for the API server's.
        Ok((
            UserInfo::service_account(&ns, &name, &uid),
            audiences.to_vec(),
        ))
    }

    /// Fails unless `plural` `ns/name` exists with `uid`.
    fn check_object(
        &self,
        plural: &str,
        ns: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), TokenError> {
        let obj = self
            .kind(plural)
            .and_then(|rt| self.store.get_opt(&rt, ns, name));
        match obj {
            Some(o) if meta_str(&o, "uid") == Some(uid) => Ok(()),
            Some(_) => Err(TokenError::Revoked(format!(
                "{plural} \"{name}\" has changed since the token was issued (uid mismatch)"
            ))),
            None => Err(TokenError::Revoked(format!(
                "{plural} \"{name}\" not found"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::{SA_NAME_ANNOTATION, TOKEN_SECRET_TYPE};
    use crate::store::{StoreSettings, WriteOptions};

    fn kind(plural: &str) -> Option<Arc<ResourceType>> {
        crate::registry::Registry::new().find("", "v1", plural)
    }

    /// A store with namespace `ns` and service account `ns/sa`, and tokens over it.
    fn setup() -> (Arc<Store>, ServiceAccountTokens, Value) {
        let store = Arc::new(Store::new(StoreSettings::default(), Arc::default()));
        let ns = kind("namespaces").expect("namespaces");
        store
            .create(
                &ns,
                "",
                json!({ "metadata": { "name": "ns" } }),
                WriteOptions::default(),
            )
            .expect("namespace");
        let (sa, _) = store
            .create(
                &kind("serviceaccounts").expect("serviceaccounts"),
                "ns",
                json!({ "metadata": { "name": "sa" } }),
                WriteOptions::default(),
            )
            .expect("service account");
        let tokens = ServiceAccountTokens::new(Signer::generate().expect("a key"), store.clone());
        (store, tokens, Value::clone(&sa))
    }

    fn spec(audiences: &[&str], ttl: Duration) -> TokenSpec {
        TokenSpec {
            audiences: audiences.iter().map(|a| (*a).to_string()).collect(),
            ttl,
            bound: None,
        }
    }

    #[test]
    fn a_bound_token_is_valid_for_its_audiences_until_it_expires() {
        let (_, tokens, sa) = setup();
        let api = [ISSUER.to_string()];
        let (token, _) = tokens.issue(&sa, &spec(&[], Duration::from_secs(600)));
        let (user, auds) = tokens.authenticate(&token, &api).expect("valid");
        assert_eq!(user.name, "system:serviceaccount:ns:sa");
        assert_eq!(user.uid, meta_str(&sa, "uid").unwrap_or(""));
        assert_eq!(auds, api);
        assert!(user.extra[CREDENTIAL_ID][0].starts_with("JTI="));

        let (vault, _) = tokens.issue(&sa, &spec(&["vault"], Duration::from_secs(600)));
        assert!(matches!(
            tokens.authenticate(&vault, &api),
            Err(TokenError::Audience { .. })
        ));
        assert!(tokens.authenticate(&vault, &["vault".to_string()]).is_ok());

        let (expired, _) = tokens.issue(&sa, &spec(&[], Duration::ZERO));
        assert_eq!(
            tokens.authenticate(&expired, &api),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn a_token_of_a_recreated_service_account_is_refused() {
        let (store, tokens, sa) = setup();
        let (token, _) = tokens.issue(&sa, &spec(&[], Duration::from_secs(600)));
        let rt = kind("serviceaccounts").expect("serviceaccounts");
        store
            .delete(&rt, "ns", "sa", &crate::store::DeleteOptions::default())
            .expect("deleted");
        store
            .create(
                &rt,
                "ns",
                json!({ "metadata": { "name": "sa" } }),
                WriteOptions::default(),
            )
            .expect("recreated");
        let err = tokens
            .authenticate(&token, &[ISSUER.to_string()])
            .expect_err("another account of the same name");
        assert!(matches!(err, TokenError::Revoked(_)), "{err}");
    }

    #[test]
    fn a_legacy_token_is_valid_only_while_its_secret_holds_it() {
        let (store, tokens, sa) = setup();
        let token = tokens.issue_legacy(&sa, "sa-token");
        let api = [ISSUER.to_string()];
        assert!(matches!(
            tokens.authenticate(&token, &api),
            Err(TokenError::Revoked(_))
        ));
        let secrets = kind("secrets").expect("secrets");
        let encoded = base64::engine::general_purpose::STANDARD.encode(&token);
        store
            .create(
                &secrets,
                "ns",
                json!({
                    "metadata": { "name": "sa-token", "annotations": { SA_NAME_ANNOTATION: "sa" } },
                    "type": TOKEN_SECRET_TYPE,
                    "data": { "token": encoded },
                }),
                WriteOptions::default(),
            )
            .expect("secret");
        let (user, auds) = tokens.authenticate(&token, &api).expect("valid");
        assert_eq!(user.name, "system:serviceaccount:ns:sa");
        assert_eq!(auds, api);
        let other = tokens.issue_legacy(&sa, "other-token");
        assert!(
            matches!(
                tokens.authenticate(&other, &api),
                Err(TokenError::Revoked(_))
            ),
            "a token naming another Secret is refused"
        );
    }
}
