//! The Node the kubelet registers and the Lease it renews: one Node, [`NODE_NAME`], that every
//! pod is bound to, Ready, with capacity, allocatable, addresses (its InternalIP is the
//! [`HOST_IP`] pods report as `hostIP`; reported, never dialled) and `nodeInfo`; and its Lease
//! in `kube-node-lease`, owned by the Node and renewed every 10 s (a quarter of its 40 s
//! duration), as a kubelet's node-lease controller does.
//!
//! The node's status is written once at registration; a real kubelet rewrites it every few
//! minutes even when nothing changed, fakekube does not (its heartbeat is the Lease).

use super::pod::{HOST_IP, NODE_NAME};
use crate::meta::meta_str;
use crate::registry::ResourceType;
use crate::store::{Part, Store, WriteOptions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The namespace of the node leases.
pub(crate) const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// How long a node lease is valid.
const LEASE_DURATION_SECS: u64 = 40;
/// How often the kubelet renews its lease.
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// The Node object of a kubelet reporting Kubernetes `1.<minor>`, its conditions stamped `now`.
fn node(minor: u32, now: &str, kubelet_port: u16) -> Value {
    let resources = json!({
        "cpu": "8",
        "ephemeral-storage": "102626232Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "16375228Ki",
        "pods": "110",
    });
    let condition = |ty: &str, status: &str, reason: &str, message: &str| {
        json!({
            "type": ty,
            "status": status,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        })
    };
    json!({
        "metadata": {
            "name": NODE_NAME,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": NODE_NAME,
                "kubernetes.io/os": "linux",
                "node-role.kubernetes.io/control-plane": "",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "podCIDR": "10.244.0.0/24",
            "podCIDRs": ["10.244.0.0/24"],
            "providerID": format!("fakekube://{NODE_NAME}"),
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                { "type": "InternalIP", "address": HOST_IP },
                { "type": "Hostname", "address": NODE_NAME },
            ],
            "daemonEndpoints": { "kubeletEndpoint": { "Port": kubelet_port } },
            "nodeInfo": {
                "machineID": "8c4d7a1f6f1c4a5e9a0e7b2d3c4f5a6b",
                "systemUUID": "8c4d7a1f-6f1c-4a5e-9a0e-7b2d3c4f5a6b",
                "bootID": "3f2e1d0c-9b8a-4765-8432-10fedcba9876",
                "kernelVersion": "6.1.0-fakekube",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": format!("v1.{minor}.1"),
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": [],
        },
    })
}

/// Registers the Node (once: a Node that exists is kept, cordoned or not) with its status, which
/// advertises `kubelet_port` as the kubelet's.
pub(crate) fn register(store: &Store, minor: u32, kubelet_port: u16) {
    let Some(rt) = store.registry().find("", "v1", "nodes") else {
        return;
    };
    let wanted = node(minor, &store.clock().now_rfc3339(), kubelet_port);
    let created = match store.create(&rt, "", wanted.clone(), WriteOptions::default()) {
        Ok((created, _)) => created,
        Err(e) => {
            if e.code != 409 {
                tracing::warn!(error = %e.message, "registering the node");
            }
            return;
        }
    };
    let mut next = Value::clone(&created);
    next["status"] = wanted["status"].clone();
    if let Err(e) = store.update(
        &rt,
        "",
        NODE_NAME,
        next,
        Part::Status,
        WriteOptions::default(),
    ) {
        tracing::warn!(error = %e.message, "writing the node's status");
    }
}

/// The node's Lease, held by the node and renewed at `now`.
fn lease(node_uid: &str, now: &str) -> Value {
    json!({
        "metadata": {
            "name": NODE_NAME,
            "ownerReferences": [ {
                "apiVersion": "v1",
                "kind": "Node",
                "name": NODE_NAME,
                "uid": node_uid,
            } ],
        },
        "spec": {
            "holderIdentity": NODE_NAME,
            "leaseDurationSeconds": LEASE_DURATION_SECS,
            "renewTime": now,
        },
    })
}

/// Creates the Lease, or renews it (a new `renewTime`) when it exists.
pub(crate) fn renew_lease(store: &Store) {
    let registry = store.registry();
    let (Some(leases), Some(nodes)) = (
        registry.find("coordination.k8s.io", "v1", "leases"),
        registry.find("", "v1", "nodes"),
    ) else {
        return;
    };
    let Some(node) = store.get_opt(&nodes, "", NODE_NAME) else {
        return;
    };
    let uid = meta_str(&node, "uid").unwrap_or("");
    match store.get_opt(&leases, NODE_LEASE_NAMESPACE, NODE_NAME) {
        None => create_lease(store, &leases, uid),
        Some(current) => {
            let mut next = Value::clone(&current);
            next["spec"]["renewTime"] = json!(store.clock().now_micro());
            next["spec"]["holderIdentity"] = json!(NODE_NAME);
            if let Err(e) = store.update(
                &leases,
                NODE_LEASE_NAMESPACE,
                NODE_NAME,
                next,
                Part::Main,
                WriteOptions::default(),
            ) {
                tracing::debug!(error = %e.message, "renewing the node lease");
            }
        }
    }
}

fn create_lease(store: &Store, leases: &Arc<ResourceType>, node_uid: &str) {
    if let Err(e) = store.create(
        leases,
        NODE_LEASE_NAMESPACE,
        lease(node_uid, &store.clock().now_micro()),
        WriteOptions::default(),
    ) && e.code != 409
    {
        tracing::debug!(error = %e.message, "creating the node lease");
    }
}

/// Registers the Node (advertising `kubelet_port`), creates its Lease, and renews the Lease
/// until `shutdown`.
pub(crate) fn spawn(
    store: Arc<Store>,
    minor: u32,
    kubelet_port: u16,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    register(&store, minor, kubelet_port);
    renew_lease(&store);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(RENEW_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = every.tick() => renew_lease(&store),
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
    fn the_node_is_ready_and_its_lease_is_held_by_it() {
        let s = Store::new(StoreSettings::default(), Arc::new(Registry::new()));
        let ns = s.registry().find("", "v1", "namespaces").expect("served");
        s.create(
            &ns,
            "",
            json!({ "metadata": { "name": NODE_LEASE_NAMESPACE } }),
            WriteOptions::default(),
        )
        .expect("namespace");
        register(&s, 33, 10250);
        renew_lease(&s);
        let nodes = s.registry().find("", "v1", "nodes").expect("served");
        let n = s.get(&nodes, "", NODE_NAME).expect("registered");
        let ready = n["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(ready["status"], "True");
        assert_eq!(n["status"]["addresses"][0]["address"], HOST_IP);
        assert_eq!(n["status"]["nodeInfo"]["kubeletVersion"], "v1.33.1");
        let leases = s
            .registry()
            .find("coordination.k8s.io", "v1", "leases")
            .expect("served");
        let first = s
            .get(&leases, NODE_LEASE_NAMESPACE, NODE_NAME)
            .expect("lease");
        assert_eq!(first["spec"]["holderIdentity"], NODE_NAME);
        assert_eq!(
            first["metadata"]["ownerReferences"][0]["uid"],
            n["metadata"]["uid"]
        );
        renew_lease(&s);
        let second = s
            .get(&leases, NODE_LEASE_NAMESPACE, NODE_NAME)
            .expect("lease");
        let renewed = |l: &Value| l["spec"]["renewTime"].as_str().unwrap_or("").to_string();
        assert!(renewed(&second) >= renewed(&first) && renewed(&first).ends_with('Z'));
        assert_eq!(first["metadata"]["uid"], second["metadata"]["uid"]);
    }
}
