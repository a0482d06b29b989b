//! The kube-controller-manager's controllers that authentication and RBAC rely on, emulated:
//! ClusterRole aggregation ([`aggregation`]), the service-account token controller
//! ([`token_secrets`]) and the root CA publisher ([`root_ca`]: `kube-root-ca.crt` in every
//! namespace), plus the bootstrap policy a server starts with.
//!
//! One task runs them all. Like the agent-sandbox controllers it follows the store's change log,
//! reconciles what a change concerns, and sleeps until the next change; it runs whether or not
//! the agent-sandbox controllers do, since without it `admin`, `edit` and `view` would hold no
//! rules and token Secrets no token.

mod aggregation;
mod root_ca;
mod token_secrets;

use crate::authn::{Authenticator, TOKEN_SECRET_TYPE};
use crate::meta::meta_str;
use crate::rbac::{GROUP, bootstrap};
use crate::registry::ResourceType;
use crate::store::{EventType, Store, WriteOptions};
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The kinds the controllers read and write, resolved once.
#[derive(Debug, Clone)]
pub(crate) struct Kinds {
    cluster_roles: Arc<ResourceType>,
    cluster_role_bindings: Arc<ResourceType>,
    secrets: Arc<ResourceType>,
    service_accounts: Arc<ResourceType>,
    namespaces: Arc<ResourceType>,
    config_maps: Arc<ResourceType>,
}

impl Kinds {
    fn resolve(store: &Store) -> Option<Kinds> {
        let registry = store.registry();
        Some(Kinds {
            cluster_roles: registry.find(GROUP, "v1", "clusterroles")?,
            cluster_role_bindings: registry.find(GROUP, "v1", "clusterrolebindings")?,
            secrets: registry.find("", "v1", "secrets")?,
            service_accounts: registry.find("", "v1", "serviceaccounts")?,
            namespaces: registry.find("", "v1", "namespaces")?,
            config_maps: registry.find("", "v1", "configmaps")?,
        })
    }
}

/// Creates the bootstrap ClusterRoles and ClusterRoleBindings and aggregates the roles once,
/// so that the server serves a settled policy from its first request.
pub(crate) fn bootstrap(store: &Store) {
    let Some(kinds) = Kinds::resolve(store) else {
        tracing::error!("the RBAC kinds are missing from the resource table");
        return;
    };
    for (kind, obj) in bootstrap::objects() {
        let rt = if *kind == "ClusterRole" {
            &kinds.cluster_roles
        } else {
            &kinds.cluster_role_bindings
        };
        if let Err(e) = store.create(rt, "", obj.clone(), WriteOptions::default())
            && e.code != 409
        {
            tracing::warn!(
                name = meta_str(obj, "name").unwrap_or(""),
                error = %e.message,
                "creating a bootstrap RBAC object"
            );
        }
    }
    aggregation::reconcile(store, &kinds.cluster_roles);
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
}

/// Starts the controllers as one task that runs until `shutdown`. Tokens are signed by
/// `authn`; token Secrets get `ca_pem` as their `ca.crt`.
pub(crate) fn spawn(
    store: Arc<Store>,
    authn: Arc<Authenticator>,
    ca_pem: String,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    let kinds = Kinds::resolve(&store);
    // The namespaces that exist now hold their root CA before the first request is served.
    if let Some(kinds) = &kinds {
        for ns in store.list_all(&kinds.namespaces, None) {
            root_ca::reconcile(&store, kinds, &ca_pem, meta_str(&ns, "name").unwrap_or(""));
        }
    }
    tokio::spawn(async move {
        let Some(kinds) = kinds else {
            return;
        };
        let mut changes = store.subscribe();
        changes.borrow_and_update();
        let mut last = store.resource_version();
        let mut work = full_resync(&store, &kinds);
        loop {
            changes.borrow_and_update();
            match store.events_since(last) {
                Ok(events) => {
                    for e in &events {
                        last = last.max(e.rv);
                        let ns = meta_str(&e.object, "namespace").unwrap_or("").to_string();
                        let name = meta_str(&e.object, "name").unwrap_or("").to_string();
                        if e.rt.same_resource(&kinds.cluster_roles) {
                            work.aggregate = true;
                        } else if e.rt.same_resource(&kinds.secrets)
                            && e.kind != EventType::Deleted
                            && e.object.get("type").and_then(|t| t.as_str())
                                == Some(TOKEN_SECRET_TYPE)
                        {
                            work.secrets.insert((ns, name));
                        } else if e.rt.same_resource(&kinds.service_accounts)
                            && e.kind == EventType::Deleted
                        {
                            let uid = meta_str(&e.object, "uid").unwrap_or("").to_string();
                            work.gone_accounts.push((ns, name, uid));
                        } else if e.rt.same_resource(&kinds.namespaces)
                            && e.kind == EventType::Added
                        {
                            work.namespaces.insert(name);
                        } else if e.rt.same_resource(&kinds.config_maps)
                            && name == root_ca::NAME
                            && e.kind != EventType::Added
                        {
                            work.namespaces.insert(ns);
                        }
                    }
                }
                Err(_) => {
                    last = store.resource_version();
                    work = full_resync(&store, &kinds);
                }
            }
            let batch = std::mem::take(&mut work);
            if batch.aggregate {
                aggregation::reconcile(&store, &kinds.cluster_roles);
            }
            for (ns, name, uid) in &batch.gone_accounts {
                token_secrets::delete_for_account(&store, &kinds, ns, name, uid);
            }
            for (ns, name) in &batch.secrets {
                token_secrets::reconcile(&store, &kinds, &authn, &ca_pem, ns, name);
            }
            for ns in &batch.namespaces {
                root_ca::reconcile(&store, &kinds, &ca_pem, ns);
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
fn full_resync(store: &Store, kinds: &Kinds) -> Work {
    let mut work = Work {
        aggregate: true,
        ..Work::default()
    };
    for ns in store.list_all(&kinds.namespaces, None) {
        work.namespaces
            .insert(meta_str(&ns, "name").unwrap_or("").to_string());
    }
    for s in store.list_all(&kinds.secrets, None) {
        if s.get("type").and_then(|t| t.as_str()) == Some(TOKEN_SECRET_TYPE) {
            work.secrets.insert((
                meta_str(&s, "namespace").unwrap_or("").to_string(),
                meta_str(&s, "name").unwrap_or("").to_string(),
            ));
        }
    }
    work
}
