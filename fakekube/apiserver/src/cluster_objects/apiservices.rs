//! The APIServices of the served group versions, as the API server's autoregistration keeps
//! them: one `<version>.<group>` (`v1.` for core) per group version the registry serves, local
//! (no `spec.service`) and `Available`, labelled `kube-aggregator.kubernetes.io/automanaged`
//! (`onstart` for built-in groups, `true` for CRD groups). When the registry changes (a CRD
//! established, changed or deleted) the set follows: missing ones are created and automanaged
//! ones no longer served are deleted. APIServices a client creates are left alone.

use super::create;
use crate::meta::{self, meta_str};
use crate::registry::ResourceType;
use crate::store::{DeleteOptions, Store};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The label autoregistered APIServices carry.
const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The group and version priorities the API server gives its built-in groups; others get
/// those of a CRD group.
fn priorities(group: &str) -> (i64, i64) {
    let group_priority = match group {
        "" => return (18000, 1),
        "apiregistration.k8s.io" => 18000,
        "apps" => 17800,
        "events.k8s.io" => 17750,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "apiextensions.k8s.io" => 16700,
        "coordination.k8s.io" => 16500,
        "discovery.k8s.io" => 16200,
        _ => return (1000, 100),
    };
    (group_priority, 15)
}

/// `v1.` or `<version>.<group>`.
fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// The APIServices the registry's served kinds call for, by name, with whether each group is
/// built in.
fn wanted(store: &Store) -> BTreeMap<String, (String, String, bool)> {
    let mut out = BTreeMap::new();
    for r in store.registry().served() {
        out.entry(name_of(&r.group, &r.version))
            .or_insert_with(|| (r.group.clone(), r.version.clone(), r.defined_by.is_none()));
    }
    out
}

/// One local APIService.
fn api_service(group: &str, version: &str, built_in: bool) -> Value {
    let (group_priority, version_priority) = priorities(group);
    let mut spec = json!({
        "version": version,
        "groupPriorityMinimum": group_priority,
        "versionPriority": version_priority,
    });
    if !group.is_empty() {
        spec["group"] = json!(group);
    }
    json!({
        "metadata": {
            "name": name_of(group, version),
            "labels": { AUTOMANAGED: if built_in { "onstart" } else { "true" } },
        },
        "spec": spec,
        "status": { "conditions": [ {
            "type": "Available",
            "status": "True",
            "lastTransitionTime": meta::now_rfc3339(),
            "reason": "Local",
            "message": "Local APIServices are always available",
        } ] },
    })
}

/// Brings the APIServices in line with the registry.
pub(super) fn sync(store: &Store) {
    let Some(rt) = store
        .registry()
        .find("apiregistration.k8s.io", "v1", "apiservices")
    else {
        return;
    };
    let wanted = wanted(store);
    let present: Vec<Arc<Value>> = store.list_all(&rt, None);
    for obj in &present {
        let name = meta_str(obj, "name").unwrap_or("");
        let automanaged = obj
            .pointer(&format!(
                "/metadata/labels/{}",
                AUTOMANAGED.replace('/', "~1")
            ))
            .is_some();
        if automanaged && !wanted.contains_key(name) {
            remove(store, &rt, name);
        }
    }
    for (name, (group, version, built_in)) in &wanted {
        if !present
            .iter()
            .any(|o| meta_str(o, "name") == Some(name.as_str()))
        {
            create(store, &rt, "", api_service(group, version, *built_in));
        }
    }
}

fn remove(store: &Store, rt: &Arc<ResourceType>, name: &str) {
    if let Err(e) = store.delete(rt, "", name, &DeleteOptions::default())
        && e.code != 404
    {
        tracing::debug!(apiservice = name, error = %e.message, "deleting an APIService");
    }
}

/// Follows the registry until `shutdown`: after every store change that changed the registry,
/// the APIServices are brought in line again.
pub fn spawn(store: Arc<Store>, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = store.subscribe();
        let mut generation = store.registry().generation();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                r = changes.changed() => if r.is_err() { return },
            }
            let now = store.registry().generation();
            if now != generation {
                generation = now;
                sync(&store);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::store::StoreSettings;

    #[test]
    fn every_served_group_version_has_a_local_available_api_service() {
        let s = Store::new(StoreSettings::default(), Arc::new(Registry::new()));
        sync(&s);
        let rt = s
            .registry()
            .find("apiregistration.k8s.io", "v1", "apiservices")
            .expect("served");
        let core = s.get(&rt, "", "v1.").expect("the core APIService");
        assert!(core["spec"].get("group").is_none());
        assert_eq!(core["spec"]["groupPriorityMinimum"], 18000);
        assert_eq!(core["status"]["conditions"][0]["reason"], "Local");
        let apps = s.get(&rt, "", "v1.apps").expect("the apps APIService");
        assert_eq!(apps["metadata"]["labels"][AUTOMANAGED], "onstart");
        assert!(s.get_opt(&rt, "", "v1.batch").is_some());
        assert!(s.get_opt(&rt, "", "v1.events.k8s.io").is_some());
    }
}
