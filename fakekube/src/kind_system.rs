//! What a fresh kind cluster runs besides what a test creates: the control plane's static pods
//! (as the kubelet's mirror pods: `etcd`, `kube-apiserver`, `kube-controller-manager` and
//! `kube-scheduler`, named `<component>-<node>`, owned by the Node, with the
//! `kubernetes.io/config.mirror` annotation), CoreDNS (its Deployment, with the `kube-dns`
//! Service and the `coredns` ConfigMap), the `kube-proxy` and `kindnet` DaemonSets, and the
//! local-path provisioner's Deployment in `local-path-storage`, with their service accounts
//! ConfigMaps and the ClusterRoles kind grants them, and the node's CSINode (no driver
//! registered). The workload controllers make their ReplicaSets and pods, and the kubelet
//! runs them, so they become Running and Ready as on kind.
//!
//! They do nothing: their containers run the fake images' keep-alive (kind's manifests give
//! each a command, and have probes on ports nothing here listens on; both are left out), so no
//! DNS is served and no iptables or volume is touched. The objects are created once the
//! kubelet has registered its Node (the mirror pods' owner), as a node's kubelet creates its
//! mirror pods once it has registered.

use crate::store::{Store, WriteOptions};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The namespace of the local-path provisioner.
pub(crate) const LOCAL_PATH_NAMESPACE: &str = "local-path-storage";

/// One object to create: group, plural, namespace and the object.
type Object = (&'static str, &'static str, &'static str, Value);

/// Creates kind's system objects in the background once `node` is registered.
pub(crate) fn spawn(store: Arc<Store>, node: String, minor: u32, shutdown: CancellationToken) {
    tokio::spawn(async move {
        let mut changes = store.subscribe();
        let Some(nodes) = store.registry().find("", "v1", "nodes") else {
            return;
        };
        loop {
            changes.borrow_and_update();
            if let Some(n) = store.get_opt(&nodes, "", &node) {
                install(&store, &n, minor);
                return;
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { return },
                () = shutdown.cancelled() => return,
            }
        }
    });
}

/// Creates every object of [`objects`]; one that exists already is left as it is.
fn install(store: &Store, node: &Value, minor: u32) {
    for (group, plural, ns, obj) in objects(node, minor) {
        let Some(rt) = store.registry().find(group, "v1", plural) else {
            continue;
        };
        if let Err(e) = store.create(&rt, ns, obj, WriteOptions::default())
            && e.code != 409
        {
            tracing::warn!(resource = plural, error = %e.message, "creating kind's system objects");
        }
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The node's InternalIP (where kind's components advertise themselves).
fn internal_ip(node: &Value) -> String {
    node.pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|a| text(a, "/type") == "InternalIP")
        .map_or_else(
            || "127.0.0.1".to_string(),
            |a| text(a, "/address").to_string(),
        )
}

/// Everything kind's fresh cluster has, for `node` and Kubernetes `1.<minor>`, in creation
/// order.
pub(crate) fn objects(node: &Value, minor: u32) -> Vec<Object> {
    let node_name = text(node, "/metadata/name").to_string();
    let ip = internal_ip(node);
    let version = format!("v1.{minor}.1");
    let mut out: Vec<Object> = vec![(
        "",
        "namespaces",
        "",
        json!({ "apiVersion": "v1", "kind": "Namespace",
            "metadata": { "name": LOCAL_PATH_NAMESPACE } }),
    )];
    for (ns, name) in [
        ("kube-system", "coredns"),
        ("kube-system", "kube-proxy"),
        ("kube-system", "kindnet"),
        (
            LOCAL_PATH_NAMESPACE,
            "local-path-provisioner-service-account",
        ),
    ] {
        out.push((
            "",
            "serviceaccounts",
            ns,
            json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": { "name": name } }),
        ));
    }
    out.extend(rbac());
    out.extend(config_maps());
    out.push(("", "services", "kube-system", kube_dns()));
    out.push(("apps", "deployments", "kube-system", coredns()));
    out.push(("apps", "daemonsets", "kube-system", kube_proxy(&version)));
    out.push(("apps", "daemonsets", "kube-system", kindnet(&node_name)));
    out.push((
        "apps",
        "deployments",
        LOCAL_PATH_NAMESPACE,
        local_path_provisioner(),
    ));
    out.push(("storage.k8s.io", "csinodes", "", csi_node(node)));
    for component in [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    ] {
        out.push((
            "",
            "pods",
            "kube-system",
            mirror_pod(component, node, &ip, &version),
        ));
    }
    out
}

/// A ClusterRole with `rules` and the ClusterRoleBinding of it to service account `ns/sa`,
/// as kind's manifests grant its add-ons.
fn role_for(role: &str, binding: &str, rules: Value, ns: &str, sa: &str) -> [Object; 2] {
    [
        (
            "rbac.authorization.k8s.io",
            "clusterroles",
            "",
            json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": { "name": role }, "rules": rules }),
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            "",
            json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": { "name": binding },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": role },
                "subjects": [{ "kind": "ServiceAccount", "name": sa, "namespace": ns }] }),
        ),
    ]
}

/// The roles kind grants CoreDNS, kindnet and the local-path provisioner.
fn rbac() -> Vec<Object> {
    let watch = ["list", "watch"];
    let mut out = Vec::new();
    out.extend(role_for(
        "system:coredns",
        "system:coredns",
        json!([
            { "apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
              "verbs": watch },
            { "apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": watch },
        ]),
        "kube-system",
        "coredns",
    ));
    out.extend(role_for(
        "kindnet",
        "kindnet",
        json!([
            { "apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch", "patch"] },
            { "apiGroups": [""], "resources": ["namespaces", "pods"], "verbs": watch },
            { "apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": watch },
        ]),
        "kube-system",
        "kindnet",
    ));
    out.extend(role_for(
        "local-path-provisioner-role",
        "local-path-provisioner-bind",
        json!([
            { "apiGroups": [""],
              "resources": ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"],
              "verbs": ["get", "list", "watch"] },
            { "apiGroups": [""], "resources": ["persistentvolumes"],
              "verbs": ["get", "list", "watch", "create", "patch", "update", "delete"] },
            { "apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"] },
            { "apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"],
              "verbs": ["get", "list", "watch"] },
        ]),
        LOCAL_PATH_NAMESPACE,
        "local-path-provisioner-service-account",
    ));
    out
}

fn config_maps() -> Vec<Object> {
    let corefile = ".:53 {\n    errors\n    health {\n       lameduck 5s\n    }\n    ready\n    kubernetes cluster.local in-addr.arpa ip6.arpa {\n       pods insecure\n       fallthrough in-addr.arpa ip6.arpa\n       ttl 30\n    }\n    prometheus :9153\n    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n    cache 30 {\n       disable success cluster.local\n       disable denial cluster.local\n    }\n    loop\n    reload\n    loadbalance\n}\n";
    let proxy = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10.244.0.0/16\nmode: iptables\n";
    let local_path = "{\n        \"nodePathMap\":[\n        {\n                \"node\":\"DEFAULT_PATH_FOR_NON_LISTED_NODES\",\n                \"paths\":[\"/var/local-path-provisioner\"]\n        }\n        ]\n}";
    vec![
        (
            "",
            "configmaps",
            "kube-system",
            json!({ "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "coredns" }, "data": { "Corefile": corefile } }),
        ),
        (
            "",
            "configmaps",
            "kube-system",
            json!({ "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "kube-proxy", "labels": { "app": "kube-proxy" } },
                "data": { "config.conf": proxy } }),
        ),
        (
            "",
            "configmaps",
            LOCAL_PATH_NAMESPACE,
            json!({ "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "local-path-config" },
                "data": { "config.json": local_path } }),
        ),
    ]
}

fn kube_dns() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kube-dns",
            "labels": {
                "k8s-app": "kube-dns",
                "kubernetes.io/cluster-service": "true",
                "kubernetes.io/name": "CoreDNS",
            },
            "annotations": { "prometheus.io/port": "9153", "prometheus.io/scrape": "true" },
        },
        "spec": {
            "clusterIP": "10.96.0.10",
            "selector": { "k8s-app": "kube-dns" },
            "ports": [
                { "name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53 },
                { "name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53 },
                { "name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153 },
            ],
        },
    })
}

fn coredns() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": "coredns", "labels": { "k8s-app": "kube-dns" } },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "k8s-app": "kube-dns" } },
            "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxUnavailable": 1 } },
            "template": {
                "metadata": { "labels": { "k8s-app": "kube-dns" } },
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "coredns",
                    "dnsPolicy": "Default",
                    "nodeSelector": { "kubernetes.io/os": "linux" },
                    "tolerations": [
                        { "key": "CriticalAddonsOnly", "operator": "Exists" },
                        { "key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule" },
                    ],
                    "containers": [{
                        "name": "coredns",
                        "image": "registry.k8s.io/coredns/coredns:v1.12.0",
                        "imagePullPolicy": "IfNotPresent",
                        "ports": [
                            { "name": "dns", "containerPort": 53, "protocol": "UDP" },
                            { "name": "dns-tcp", "containerPort": 53, "protocol": "TCP" },
                            { "name": "metrics", "containerPort": 9153, "protocol": "TCP" },
                        ],
                        "resources": {
                            "limits": { "memory": "170Mi" },
                            "requests": { "cpu": "100m", "memory": "70Mi" },
                        },
                        "volumeMounts": [
                            { "name": "config-volume", "mountPath": "/etc/coredns", "readOnly": true },
                        ],
                    }],
                    "volumes": [{
                        "name": "config-volume",
                        "configMap": { "name": "coredns",
                            "items": [{ "key": "Corefile", "path": "Corefile" }] },
                    }],
                },
            },
        },
    })
}

fn kube_proxy(version: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": { "name": "kube-proxy", "labels": { "k8s-app": "kube-proxy" } },
        "spec": {
            "selector": { "matchLabels": { "k8s-app": "kube-proxy" } },
            "template": {
                "metadata": { "labels": { "k8s-app": "kube-proxy" } },
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "serviceAccountName": "kube-proxy",
                    "hostNetwork": true,
                    "nodeSelector": { "kubernetes.io/os": "linux" },
                    "tolerations": [{ "operator": "Exists" }],
                    "containers": [{
                        "name": "kube-proxy",
                        "image": format!("registry.k8s.io/kube-proxy:{version}"),
                        "imagePullPolicy": "IfNotPresent",
                        "env": [{ "name": "NODE_NAME",
                            "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } } }],
                        "securityContext": { "privileged": true },
                    }],
                },
            },
        },
    })
}

fn kindnet(node: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "kindnet",
            "labels": { "app": "kindnet", "k8s-app": "kindnet", "tier": "node" },
        },
        "spec": {
            "selector": { "matchLabels": { "app": "kindnet" } },
            "template": {
                "metadata": { "labels": { "app": "kindnet", "k8s-app": "kindnet", "tier": "node" } },
                "spec": {
                    "serviceAccountName": "kindnet",
                    "hostNetwork": true,
                    "nodeSelector": { "kubernetes.io/os": "linux" },
                    "tolerations": [{ "operator": "Exists" }],
                    "containers": [{
                        "name": "kindnet-cni",
                        "image": "docker.io/kindest/kindnetd:v20250512-df8de77b",
                        "env": [
                            { "name": "HOST_IP",
                              "valueFrom": { "fieldRef": { "fieldPath": "status.hostIP" } } },
                            { "name": "POD_IP",
                              "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } },
                            { "name": "POD_SUBNET", "value": "10.244.0.0/16" },
                            { "name": "CONTROL_PLANE_ENDPOINT", "value": format!("{node}:6443") },
                        ],
                        "resources": {
                            "limits": { "cpu": "100m", "memory": "50Mi" },
                            "requests": { "cpu": "100m", "memory": "50Mi" },
                        },
                        "securityContext": {
                            "privileged": false,
                            "capabilities": { "add": ["NET_RAW", "NET_ADMIN"] },
                        },
                    }],
                },
            },
        },
    })
}

fn local_path_provisioner() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": "local-path-provisioner" },
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": { "app": "local-path-provisioner" } },
            "template": {
                "metadata": { "labels": { "app": "local-path-provisioner" } },
                "spec": {
                    "serviceAccountName": "local-path-provisioner-service-account",
                    "nodeSelector": { "kubernetes.io/os": "linux" },
                    "tolerations": [
                        { "key": "node-role.kubernetes.io/control-plane",
                          "operator": "Equal", "effect": "NoSchedule" },
                    ],
                    "containers": [{
                        "name": "local-path-provisioner",
                        "image": "docker.io/kindest/local-path-provisioner:v20250214-acbabc1a",
                        "imagePullPolicy": "IfNotPresent",
                        "env": [
                            { "name": "POD_NAMESPACE",
                              "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
                            { "name": "CONFIG_MOUNT_PATH", "value": "/etc/config/" },
                        ],
                        "volumeMounts": [{ "name": "config-volume", "mountPath": "/etc/config/" }],
                    }],
                    "volumes": [{ "name": "config-volume",
                        "configMap": { "name": "local-path-config" } }],
                },
            },
        },
    })
}

/// The node's CSINode, as the kubelet's CSI node-info manager creates it at start: no driver
/// yet, owned by the Node, the in-tree plugins migrated to CSI named.
fn csi_node(node: &Value) -> Value {
    let name = text(node, "/metadata/name");
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {
            "name": name,
            "annotations": {
                "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume",
            },
            "ownerReferences": [{
                "apiVersion": "v1",
                "kind": "Node",
                "name": name,
                "uid": text(node, "/metadata/uid"),
            }],
        },
        "spec": { "drivers": [] },
    })
}

/// The resources kubeadm's static pod manifests request.
fn cpu_request(component: &str) -> &'static str {
    match component {
        "kube-apiserver" => "250m",
        "kube-controller-manager" => "200m",
        _ => "100m",
    }
}

/// A control-plane component's mirror pod, as the kubelet creates it for its static pod.
fn mirror_pod(component: &str, node: &Value, ip: &str, version: &str) -> Value {
    let node_name = text(node, "/metadata/name");
    let image = if component == "etcd" {
        "registry.k8s.io/etcd:3.5.21-0".to_string()
    } else {
        format!("registry.k8s.io/{component}:{version}")
    };
    // The hash the kubelet computes of the static pod's manifest: any stable value will do.
    let hash = format!("{:032x}", fnv(&format!("{component}/{image}/{node_name}")));
    let mut annotations = json!({
        "kubernetes.io/config.hash": hash,
        "kubernetes.io/config.mirror": hash,
        "kubernetes.io/config.seen": text(node, "/metadata/creationTimestamp"),
        "kubernetes.io/config.source": "file",
    });
    match component {
        "etcd" => {
            annotations["kubeadm.kubernetes.io/etcd.advertise-client-urls"] =
                json!(format!("https://{ip}:2379"));
        }
        "kube-apiserver" => {
            annotations["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] =
                json!(format!("{ip}:6443"));
        }
        _ => {}
    }
    let mut requests = json!({ "cpu": cpu_request(component) });
    if component == "etcd" {
        requests["memory"] = json!("100Mi");
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("{component}-{node_name}"),
            "labels": { "component": component, "tier": "control-plane" },
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": "v1",
                "kind": "Node",
                "name": node_name,
                "uid": text(node, "/metadata/uid"),
                "controller": true,
            }],
        },
        "spec": {
            "nodeName": node_name,
            "hostNetwork": true,
            "priorityClassName": "system-node-critical",
            "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } },
            "tolerations": [{ "operator": "Exists", "effect": "NoExecute" }],
            "containers": [{
                "name": component,
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "resources": { "requests": requests },
            }],
        },
    })
}

/// FNV-1a, 128 bits folded from two 64-bit runs: a stable hash without a dependency.
fn fnv(s: &str) -> u128 {
    let run = |seed: u64| {
        s.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    };
    (u128::from(run(0xcbf2_9ce4_8422_2325)) << 64) | u128::from(run(0x8422_2325_cbf2_9ce4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirror_pods_are_named_for_the_node_and_owned_by_it() {
        let node = json!({ "metadata": { "name": "n1", "uid": "u1" },
            "status": { "addresses": [{ "type": "InternalIP", "address": "10.0.0.5" }] } });
        let pods: Vec<Value> = objects(&node, 33)
            .into_iter()
            .filter(|(_, plural, _, _)| *plural == "pods")
            .map(|(_, _, _, o)| o)
            .collect();
        let names: Vec<&str> = pods.iter().map(|p| text(p, "/metadata/name")).collect();
        assert_eq!(
            names,
            [
                "etcd-n1",
                "kube-apiserver-n1",
                "kube-controller-manager-n1",
                "kube-scheduler-n1"
            ]
        );
        for p in &pods {
            assert_eq!(p["metadata"]["ownerReferences"][0]["uid"], "u1");
            assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "Node");
            assert!(p["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string());
        }
        assert_eq!(
            pods[1]["metadata"]["annotations"]["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"],
            "10.0.0.5:6443"
        );
        assert_eq!(
            pods[1]["spec"]["containers"][0]["image"],
            "registry.k8s.io/kube-apiserver:v1.33.1"
        );
    }
}
