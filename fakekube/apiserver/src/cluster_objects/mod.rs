//! The objects the API server itself keeps, whatever runs beside it: the `default/kubernetes`
//! Service with the Endpoints and EndpointSlice that name the server's own address, the
//! ComponentStatuses `kubectl get componentstatuses` lists, the system PriorityClasses
//! (`system-node-critical`, `system-cluster-critical`: the `scheduling/bootstrap-system-priority-classes`
//! post-start hook), API Priority and Fairness' mandatory and suggested FlowSchemas and
//! PriorityLevelConfigurations (the `priority-and-fairness-config-producer` hook; nothing is
//! throttled by them), and (in [`apiservices`]) an
//! APIService for every served group version, kept in step with the registry as CRDs come and
//! go.
//!
//! The `kubernetes` Service has the ClusterIP a kind cluster gives it (`10.96.0.1`, port 443);
//! its endpoints name the address fakekube listens on (`127.0.0.1` and its port), which only a
//! client that already has that address could dial.

mod apiservices;

pub use apiservices::spawn as spawn_apiservices;

use crate::registry::ResourceType;
use crate::store::{Part, Store, WriteOptions};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;

/// The `kubernetes` Service's ClusterIP, the first of the service range.
pub(crate) const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// Creates what the API server keeps from its start wherever it listens: the
/// `default/kubernetes` Service, the ComponentStatuses, the system PriorityClasses, the
/// flow-control bootstrap configuration, and the APIServices of the kinds served now.
/// [`install_endpoints`] adds the Service's endpoints.
pub fn install(store: &Store) {
    let registry = store.registry();
    let find = |group: &str, plural: &str| registry.find(group, "v1", plural);
    if let Some(svc) = find("", "services") {
        create(store, &svc, "default", kubernetes_service());
    }
    if let Some(cs) = find("", "componentstatuses") {
        for name in ["scheduler", "controller-manager", "etcd-0"] {
            create(store, &cs, "", component_status(name));
        }
    }
    if let Some(pc) = find("scheduling.k8s.io", "priorityclasses") {
        for class in crate::defaults::system_priority_classes() {
            create(store, &pc, "", class);
        }
    }
    if let (Some(levels), Some(schemas)) = (
        find(
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
        ),
        find("flowcontrol.apiserver.k8s.io", "flowschemas"),
    ) {
        let (level_objects, schema_objects) = crate::defaults::flowcontrol::bootstrap();
        for level in level_objects {
            create(store, &levels, "", level);
        }
        let now = store.clock().now_rfc3339();
        for mut schema in schema_objects {
            let level = schema
                .pointer("/spec/priorityLevelConfiguration/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            // What the API server's configuration controller says of a schema whose level
            // exists.
            schema["status"] = serde_json::json!({ "conditions": [{
                "type": "Dangling",
                "status": "False",
                "reason": "Found",
                "message": format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"),
                "lastTransitionTime": now,
            }] });
            create(store, &schemas, "", schema);
        }
    }
    apiservices::sync(store);
}

/// Creates the Endpoints and the EndpointSlice of `default/kubernetes` for a server listening
/// at `addr`.
pub fn install_endpoints(store: &Store, addr: SocketAddr) {
    let registry = store.registry();
    if let (Some(ep), Some(slices)) = (
        registry.find("", "v1", "endpoints"),
        registry.find("discovery.k8s.io", "v1", "endpointslices"),
    ) {
        create(store, &ep, "default", kubernetes_endpoints(addr));
        create(store, &slices, "default", kubernetes_endpoint_slice(addr));
    }
}

/// Creates `obj` in `ns`, then writes its `status` when the kind keeps status apart; an object
/// that exists already is left as it is.
pub fn create(store: &Store, rt: &Arc<ResourceType>, ns: &str, obj: Value) {
    let status = obj.get("status").cloned();
    let created = match store.create(rt, ns, obj, WriteOptions::default()) {
        Ok((created, _)) => created,
        Err(e) => {
            if e.code != 409 {
                tracing::warn!(kind = %rt.kind, error = %e.message, "creating a cluster object");
            }
            return;
        }
    };
    if let Some(status) = status
        && created.get("status") != Some(&status)
    {
        let mut next = Value::clone(&created);
        next["status"] = status;
        let name = crate::meta::meta_str(&created, "name").unwrap_or("");
        if let Err(e) = store.update(rt, ns, name, next, Part::Status, WriteOptions::default()) {
            tracing::warn!(kind = %rt.kind, error = %e.message, "writing a cluster object's status");
        }
    }
}

/// `default/kubernetes`, as the API server makes it.
fn kubernetes_service() -> Value {
    json!({
        "metadata": {
            "name": "kubernetes",
            "labels": { "component": "apiserver", "provider": "kubernetes" },
        },
        "spec": {
            "clusterIP": KUBERNETES_SERVICE_IP,
            "ports": [ { "name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443 } ],
            "sessionAffinity": "None",
            "type": "ClusterIP",
        },
    })
}

/// The Endpoints of `default/kubernetes`: the server's own address.
fn kubernetes_endpoints(addr: SocketAddr) -> Value {
    json!({
        "metadata": {
            "name": "kubernetes",
            "labels": { "endpointslice.kubernetes.io/skip-mirror": "true" },
        },
        "subsets": [ {
            "addresses": [ { "ip": addr.ip().to_string() } ],
            "ports": [ { "name": "https", "port": addr.port(), "protocol": "TCP" } ],
        } ],
    })
}

/// The EndpointSlice of `default/kubernetes`.
fn kubernetes_endpoint_slice(addr: SocketAddr) -> Value {
    json!({
        "metadata": {
            "name": "kubernetes",
            "labels": { "kubernetes.io/service-name": "kubernetes" },
        },
        "addressType": if addr.is_ipv4() { "IPv4" } else { "IPv6" },
        "endpoints": [ {
            "addresses": [ addr.ip().to_string() ],
            "conditions": { "ready": true },
        } ],
        "ports": [ { "name": "https", "port": addr.port(), "protocol": "TCP" } ],
    })
}

/// A healthy ComponentStatus.
fn component_status(name: &str) -> Value {
    let message = if name.starts_with("etcd") {
        r#"{"health":"true","reason":""}"#
    } else {
        "ok"
    };
    json!({
        "metadata": { "name": name },
        "conditions": [ { "type": "Healthy", "status": "True", "message": message, "error": null } ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::store::StoreSettings;

    fn store() -> Store {
        let s = Store::new(StoreSettings::default(), Arc::new(Registry::new()));
        if let Some(ns) = s.registry().find("", "v1", "namespaces") {
            s.create(
                &ns,
                "",
                json!({ "metadata": { "name": "default" } }),
                WriteOptions::default(),
            )
            .expect("namespace created");
        }
        s
    }

    #[test]
    fn the_kubernetes_service_and_its_endpoints_name_the_server() {
        let s = store();
        let addr: SocketAddr = "127.0.0.1:6443".parse().expect("an address");
        install(&s);
        install_endpoints(&s, addr);
        let get = |group: &str, plural: &str| {
            let rt = s.registry().find(group, "v1", plural).expect("served");
            s.get(&rt, "default", "kubernetes").expect("present")
        };
        let svc = get("", "services");
        assert_eq!(svc["spec"]["clusterIP"], KUBERNETES_SERVICE_IP);
        assert_eq!(svc["spec"]["ports"][0]["port"], 443);
        let ep = get("", "endpoints");
        assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.0.1");
        assert_eq!(ep["subsets"][0]["ports"][0]["port"], 6443);
        let slice = get("discovery.k8s.io", "endpointslices");
        assert_eq!(slice["endpoints"][0]["addresses"][0], "127.0.0.1");
        assert_eq!(
            slice["metadata"]["labels"]["kubernetes.io/service-name"],
            "kubernetes"
        );
    }
}
