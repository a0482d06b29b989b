//! The Node the kubelet registers and the Lease it renews: one Node, [`NODE_NAME`], that every
//! pod is bound to, Ready, with capacity, allocatable, addresses (its InternalIP is the
//! [`HOST_IP`] pods report as `hostIP`; reported, never dialled) and `nodeInfo`; and its Lease
//! in `kube-node-lease`, owned by the Node and renewed every 10 s (a quarter of its 40 s
//! duration), as a kubelet's node-lease controller does.
//!
//! The node's status is written once at registration; a real kubelet rewrites it every few
//! minutes even when nothing changed, fakekube does not (its heartbeat is the Lease).

use crate::client::{Client, Kind, Part};
use crate::kubelet::{Config, Role};
use crate::meta::meta_str;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The namespace of the node leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// How long a node lease is valid.
const LEASE_DURATION_SECS: u64 = 40;
/// How often the kubelet renews its lease.
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// The Node object of the kubelet of `config` reporting Kubernetes `1.<minor>`, its conditions
/// stamped `now`. The embedded fake's one node is its control plane's too (kind's node); a
/// node of a cluster carries only the labels a kubelet may set on itself (the
/// NodeRestriction admission plugin refuses `node-role.kubernetes.io/*`).
fn node(config: &Config, minor: u32, now: &str, kubelet_port: u16) -> Value {
    let name = config.node_name.as_str();
    let cidr = format!("10.244.{}.0/24", config.pod_subnet);
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
    let mut labels = json!({
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
    });
    if config.role == Role::AllInOne {
        labels["node-role.kubernetes.io/control-plane"] = json!("");
    }
    let mut spec = json!({ "providerID": format!("fakekube://{name}") });
    if config.role == Role::AllInOne {
        // A cluster's node gets its range from the controller manager's IPAM.
        spec["podCIDR"] = json!(cidr);
        spec["podCIDRs"] = json!([cidr]);
    }
    json!({
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": spec,
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
                { "type": "InternalIP", "address": config.host_ip },
                { "type": "Hostname", "address": name },
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

/// Registers the Node (a Node that exists is kept, cordoned or not) and writes its status,
/// which advertises `kubelet_port` as the kubelet's. A node of a cluster rewrites the status of
/// a Node that exists (a kubelet that restarts reports its new port and addresses).
pub fn register(api: &dyn Client, config: &Config, minor: u32, kubelet_port: u16) {
    let wanted = node(config, minor, &api.clock().now_rfc3339(), kubelet_port);
    match api.create(Kind::Node, "", wanted.clone()) {
        Ok(_) => {}
        // A kubelet that restarts finds its Node and reports its new port and addresses.
        Err(e) if e.code == 409 && config.role == Role::Node => {}
        Err(e) => {
            if e.code != 409 {
                tracing::warn!(error = %e.message, "registering the node");
            }
            return;
        }
    }
    // A patch of the status alone: a whole object would also carry the spec as this kubelet
    // last saw it, and the NodeRestriction plugin refuses a kubelet's write that changes the
    // taints the node controller set meanwhile.
    let status = json!({ "status": wanted["status"] });
    if let Err(e) = api.merge_patch(Kind::Node, "", &config.node_name, &status, Part::Status) {
        tracing::warn!(error = %e.message, "writing the node's status");
    }
}

/// The Lease of node `name`, held by the node and renewed at `now`.
fn lease(name: &str, node_uid: &str, now: &str) -> Value {
    json!({
        "metadata": {
            "name": name,
            "ownerReferences": [ {
                "apiVersion": "v1",
                "kind": "Node",
                "name": name,
                "uid": node_uid,
            } ],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECS,
            "renewTime": now,
        },
    })
}

/// Creates the Lease of node `name`, or renews it (a new `renewTime`) when it exists.
pub fn renew_lease(api: &dyn Client, name: &str) {
    let Some(node) = api.get(Kind::Node, "", name) else {
        return;
    };
    let uid = meta_str(&node, "uid").unwrap_or("");
    let now = api.clock().now_micro();
    match api.get(Kind::Lease, NODE_LEASE_NAMESPACE, name) {
        None => {
            if let Err(e) = api.create(Kind::Lease, NODE_LEASE_NAMESPACE, lease(name, uid, &now))
                && e.code != 409
            {
                tracing::debug!(error = %e.message, "creating the node lease");
            }
        }
        Some(current) => {
            let mut next = Value::clone(&current);
            next["spec"]["renewTime"] = json!(now);
            next["spec"]["holderIdentity"] = json!(name);
            if let Err(e) = api.update(Kind::Lease, NODE_LEASE_NAMESPACE, name, next, Part::Main) {
                tracing::debug!(error = %e.message, "renewing the node lease");
            }
        }
    }
}

/// Registers the Node of `config` (advertising `kubelet_port`), creates its Lease, and renews
/// the Lease until `shutdown`.
pub fn spawn(
    api: Arc<dyn Client>,
    config: Config,
    minor: u32,
    kubelet_port: u16,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    register(&*api, &config, minor, kubelet_port);
    renew_lease(&*api, &config.node_name);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(RENEW_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = every.tick() => renew_lease(&*api, &config.node_name),
            }
        }
    })
}
