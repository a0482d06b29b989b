//! What joins the API server to the controllers that run beside it in process: the bootstrap
//! RBAC policy the API server creates at start (kube-apiserver's `rbac/bootstrap-roles`
//! post-start hook), and the token controller's signer, which is the API server's
//! service-account key (kube-controller-manager's `--service-account-private-key-file`), and
//! the default StorageClass a kind cluster starts with.

use crate::authn::Authenticator;
use crate::meta::meta_str;
use crate::rbac::bootstrap;
use crate::store::{Store, WriteOptions};
use fakekube_controllers::cluster::TokenSigner;
use serde_json::Value;
use std::sync::Arc;

/// Creates the bootstrap ClusterRoles and ClusterRoleBindings (an existing one is kept).
pub(crate) fn install_bootstrap_policy(store: &Store) {
    let registry = store.registry();
    let (Some(roles), Some(bindings)) = (
        registry.find(crate::rbac::GROUP, "v1", "clusterroles"),
        registry.find(crate::rbac::GROUP, "v1", "clusterrolebindings"),
    ) else {
        tracing::error!("the RBAC kinds are missing from the resource table");
        return;
    };
    for (kind, obj) in bootstrap::objects() {
        let rt = if *kind == "ClusterRole" {
            &roles
        } else {
            &bindings
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
}

/// The token controller's signer: the API server's own service-account key, so that the
/// tokens it writes into Secrets authenticate.
#[derive(Debug)]
pub(crate) struct LegacyTokens(pub(crate) Arc<Authenticator>);

impl TokenSigner for LegacyTokens {
    fn legacy_token(&self, account: &Value, secret_name: &str) -> String {
        self.0.service_accounts.issue_legacy(account, secret_name)
    }
}

/// Creates the default StorageClass a kind cluster has, `standard` (its local-path
/// provisioner, deleting volumes with their claims, binding at the first pod): claims that name
/// no class get it, as the DefaultStorageClass admission plugin gives it on kind.
pub(crate) fn install_default_storage_class(store: &Store) {
    let Some(classes) = store
        .registry()
        .find("storage.k8s.io", "v1", "storageclasses")
    else {
        return;
    };
    let standard = serde_json::json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "standard",
            "annotations": { "storageclass.kubernetes.io/is-default-class": "true" },
        },
        "provisioner": "rancher.io/local-path",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    });
    if let Err(e) = store.create(&classes, "", standard, WriteOptions::default())
        && e.code != 409
    {
        tracing::warn!(error = %e.message, "creating the default StorageClass");
    }
}
