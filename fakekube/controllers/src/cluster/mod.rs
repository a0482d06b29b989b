//! The kube-controller-manager's controllers that authentication, RBAC and storage rely on,
//! emulated: ClusterRole aggregation ([`aggregation`]), the service-account token controller
//! ([`token_secrets`]), the root CA publisher ([`root_ca`]: `kube-root-ca.crt` in every
//! namespace) and the PVC protection controller ([`pvc_protection`]), plus the bootstrap policy
//! a server starts with.
//!
//! One task runs them all. Like the agent-sandbox controllers it follows the API's change feed,
//! reconciles what a change concerns, and sleeps until the next change; it runs whether or not
//! the agent-sandbox controllers do, since without it `admin`, `edit` and `view` would hold no
//! rules and token Secrets no token.

mod aggregation;
mod aggregation_rule;
mod pvc_protection;
mod root_ca;
mod token_secrets;

use crate::client::{ChangeType, Client, Kind};
use crate::meta::{TOKEN_SECRET_TYPE, meta_str};
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Mints the legacy token the token controller writes into a service account's token Secret,
/// as kube-controller-manager signs them with its `--service-account-private-key-file`.
pub trait TokenSigner: Send + Sync + fmt::Debug {
    /// The token of service account `account` (the object) for Secret `secret_name`.
    fn legacy_token(&self, account: &Value, secret_name: &str) -> String;
}

/// Brings every aggregated ClusterRole up to date once, so that a server can serve a settled
/// policy from its first request (the controller then keeps it so).
pub fn aggregate(api: &dyn Client) {
    aggregation::reconcile(api);
}

/// What the controllers must look at after a batch of changes.
#[derive(Debug, Default)]
struct Work {
    aggregate: bool,
    /// Token Secrets, as namespace and name.
    secrets: BTreeSet<(String, String)>,
    /// Deleted service accounts, as namespace, name and uid.
    gone_accounts: Vec<(String, String, String)>,
    /// Namespaces whose root CA ConfigMap must be checked.
    namespaces: BTreeSet<String>,
    /// Claims that may have lost their last pod, as namespace and name.
    claims: BTreeSet<(String, String)>,
}

/// Starts the controllers as one task that runs until `shutdown`. Tokens are signed by
/// `signer`; token Secrets get `ca_pem` as their `ca.crt`.
pub fn spawn(
    api: Arc<dyn Client>,
    signer: Arc<dyn TokenSigner>,
    ca_pem: String,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    // The namespaces that exist now hold their root CA before the first request is served.
    for ns in api.list(Kind::Namespace, None) {
        root_ca::reconcile(api.as_ref(), &ca_pem, meta_str(&ns, "name").unwrap_or(""));
    }
    tokio::spawn(async move {
        let api = api.as_ref();
        let mut changes = api.subscribe();
        changes.borrow_and_update();
        let mut last = api.position();
        let mut work = full_resync(api);
        loop {
            changes.borrow_and_update();
            match api.changes_since(last) {
                Ok((events, reached)) => {
                    last = last.max(reached);
                    for e in &events {
                        last = last.max(e.position);
                        let ns = meta_str(&e.object, "namespace").unwrap_or("").to_string();
                        let name = meta_str(&e.object, "name").unwrap_or("").to_string();
                        if e.kind == Kind::ClusterRole {
                            work.aggregate = true;
                        } else if e.kind == Kind::Secret
                            && e.change != ChangeType::Deleted
                            && e.object.get("type").and_then(|t| t.as_str())
                                == Some(TOKEN_SECRET_TYPE)
                        {
                            work.secrets.insert((ns, name));
                        } else if e.kind == Kind::ServiceAccount && e.change == ChangeType::Deleted
                        {
                            let uid = meta_str(&e.object, "uid").unwrap_or("").to_string();
                            work.gone_accounts.push((ns, name, uid));
                        } else if e.kind == Kind::Namespace && e.change == ChangeType::Added {
                            work.namespaces.insert(name);
                        } else if e.kind == Kind::ConfigMap
                            && name == root_ca::NAME
                            && e.change != ChangeType::Added
                        {
                            work.namespaces.insert(ns);
                        } else if e.kind == Kind::PersistentVolumeClaim
                            && e.change != ChangeType::Deleted
                        {
                            work.claims.insert((ns, name));
                        } else if e.kind == Kind::Pod {
                            work.claims.extend(pvc_protection::claims_of(&e.object));
                        }
                    }
                }
                Err(_) => {
                    last = api.position();
                    work = full_resync(api);
                }
            }
            let batch = std::mem::take(&mut work);
            if batch.aggregate {
                aggregation::reconcile(api);
            }
            for (ns, name, uid) in &batch.gone_accounts {
                token_secrets::delete_for_account(api, ns, name, uid);
            }
            for (ns, name) in &batch.secrets {
                token_secrets::reconcile(api, signer.as_ref(), &ca_pem, ns, name);
            }
            for ns in &batch.namespaces {
                root_ca::reconcile(api, &ca_pem, ns);
            }
            for (ns, name) in &batch.claims {
                pvc_protection::reconcile(api, ns, name);
            }
            if changes.has_changed().unwrap_or(false) {
                continue;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                r = changes.changed() => if r.is_err() { return },
            }
        }
    })
}

/// Everything the controllers look after.
fn full_resync(api: &dyn Client) -> Work {
    let mut work = Work {
        aggregate: true,
        ..Work::default()
    };
    for ns in api.list(Kind::Namespace, None) {
        work.namespaces
            .insert(meta_str(&ns, "name").unwrap_or("").to_string());
    }
    for c in api.list(Kind::PersistentVolumeClaim, None) {
        work.claims.insert((
            meta_str(&c, "namespace").unwrap_or("").to_string(),
            meta_str(&c, "name").unwrap_or("").to_string(),
        ));
    }
    for s in api.list(Kind::Secret, None) {
        if s.get("type").and_then(|t| t.as_str()) == Some(TOKEN_SECRET_TYPE) {
            work.secrets.insert((
                meta_str(&s, "namespace").unwrap_or("").to_string(),
                meta_str(&s, "name").unwrap_or("").to_string(),
            ));
        }
    }
    work
}
