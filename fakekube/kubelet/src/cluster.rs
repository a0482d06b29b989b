//! The cluster network as the node's pods see it, in process: what cluster DNS and kube-proxy
//! give a pod, answered from the API (Services and EndpointSlices, through
//! [`client::Client`](crate::client::Client)) and the pods this kubelet runs.
//!
//! - **Names** ([`PodCluster::lookup`]): `NAME.NS.svc.cluster.local`, `NAME.NS.svc`,
//!   `NAME.NS` and `NAME` (the pod's own namespace), as the search path of a pod's
//!   `resolv.conf` completes them, resolve to the Service's ClusterIP, or, for a headless
//!   Service, to the addresses of its ready endpoints.
//! - **Connections** ([`PodCluster::connect`]): to a Service's ClusterIP and one of its
//!   ports, one of the ready endpoints behind that port, taken in turn (round robin), on the
//!   port the EndpointSlice gives; to a pod's address, that pod's own listener. No ready
//!   endpoint, a port the Service does not have, or nothing listening on the endpoint is
//!   `Connection refused` (kube-proxy's reject); an address no Service or pod of this node
//!   has is `No route to host`.
//!
//! Everything stays in process: a pod address names a [`PodNetwork`] of this kubelet, never a
//! socket. Pods of other nodes are not reachable (a `fakekube kubelet` of a larger cluster
//! reaches the pods it runs itself).

use std::net::IpAddr;
use std::sync::Weak;
use std::sync::atomic::Ordering;

use fakekube_runtime::{Cluster, Connection, NetError};
use serde_json::Value;

use crate::client::Kind;
use crate::kubelet::Kubelet;
use crate::meta::meta_str;

/// The cluster's DNS domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// The label that ties an EndpointSlice to its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The cluster as one pod sees it: its namespace completes short names.
#[derive(Debug)]
pub struct PodCluster {
    /// The kubelet (weak: the pods' networks must not keep it alive).
    kubelet: Weak<Kubelet>,
    /// The pod's namespace.
    namespace: String,
}

impl PodCluster {
    /// The cluster of a pod of namespace `namespace` on `kubelet`'s node.
    pub fn new(kubelet: Weak<Kubelet>, namespace: &str) -> Self {
        PodCluster {
            kubelet,
            namespace: namespace.to_string(),
        }
    }
}

impl Cluster for PodCluster {
    fn lookup(&self, name: &str) -> Vec<IpAddr> {
        let Some(kubelet) = self.kubelet.upgrade() else {
            return Vec::new();
        };
        let Some((service, ns)) = service_name(name, &self.namespace) else {
            return Vec::new();
        };
        let Some(svc) = kubelet.api.get(Kind::Service, &ns, &service) else {
            return Vec::new();
        };
        match cluster_ip(&svc) {
            Some(ip) => vec![ip],
            None if is_headless(&svc) => {
                let mut ips: Vec<IpAddr> = ready_endpoints(&kubelet, &svc, None)
                    .into_iter()
                    .map(|(ip, _)| ip)
                    .collect();
                ips.dedup();
                ips
            }
            None => Vec::new(),
        }
    }

    fn connect(&self, ip: IpAddr, port: u16) -> Result<Connection, NetError> {
        let kubelet = self.kubelet.upgrade().ok_or(NetError::NetworkUnreachable)?;
        let services = kubelet.api.list(Kind::Service, None);
        if let Some(svc) = services.iter().find(|s| cluster_ips(s).contains(&ip)) {
            let name = service_port(svc, port).ok_or(NetError::ConnectionRefused)?;
            let endpoints = ready_endpoints(&kubelet, svc, Some(&name));
            if endpoints.is_empty() {
                return Err(NetError::ConnectionRefused);
            }
            let turn = kubelet.connections.fetch_add(1, Ordering::Relaxed);
            let (pod_ip, pod_port) = endpoints[turn % endpoints.len()];
            return connect_pod(&kubelet, pod_ip, pod_port).map_err(|e| match e {
                NetError::HostUnreachable => NetError::ConnectionRefused,
                other => other,
            });
        }
        connect_pod(&kubelet, ip, port)
    }
}

/// The Service and namespace a DNS name asks for, completed as a pod in `own` completes it;
/// `None` for a name that cannot be a Service's.
fn service_name(name: &str, own: &str) -> Option<(String, String)> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let labels: Vec<&str> = name.split('.').collect();
    let domain: Vec<&str> = CLUSTER_DOMAIN.split('.').collect();
    match labels.as_slice() {
        [svc] => Some((svc.to_string(), own.to_string())),
        [svc, ns] | [svc, ns, "svc"] => Some((svc.to_string(), ns.to_string())),
        [svc, ns, "svc", rest @ ..] if rest == domain.as_slice() => {
            Some((svc.to_string(), ns.to_string()))
        }
        _ => None,
    }
    .filter(|(svc, ns)| !svc.is_empty() && !ns.is_empty())
}

/// Whether a Service is headless (`clusterIP: None`).
fn is_headless(svc: &Value) -> bool {
    svc.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None")
}

/// A Service's (first) ClusterIP, if it has one.
fn cluster_ip(svc: &Value) -> Option<IpAddr> {
    cluster_ips(svc).into_iter().next()
}

/// Every ClusterIP of a Service (`clusterIP` and `clusterIPs`).
fn cluster_ips(svc: &Value) -> Vec<IpAddr> {
    let mut ips: Vec<IpAddr> = svc
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .into_iter()
        .collect();
    if let Some(list) = svc.pointer("/spec/clusterIPs").and_then(Value::as_array) {
        ips.extend(
            list.iter()
                .filter_map(Value::as_str)
                .filter_map(|s| s.parse::<IpAddr>().ok()),
        );
    }
    ips
}

/// The name of the Service's port `port` (empty for an unnamed one), if it has that port.
fn service_port(svc: &Value, port: u16) -> Option<String> {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)?
        .iter()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
        .map(|p| {
            p.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        })
}

/// The ready endpoints of a Service from its EndpointSlices: each address with the slice's
/// port named `port` (any port's number when `None`, for a headless Service's addresses).
fn ready_endpoints(kubelet: &Kubelet, svc: &Value, port: Option<&str>) -> Vec<(IpAddr, u16)> {
    let ns = meta_str(svc, "namespace").unwrap_or_default();
    let name = meta_str(svc, "name").unwrap_or_default();
    let mut slices: Vec<_> = kubelet
        .api
        .list(Kind::EndpointSlice, Some(ns))
        .into_iter()
        .filter(|s| {
            s.pointer("/metadata/labels")
                .and_then(|l| l.get(SERVICE_NAME_LABEL))
                .and_then(Value::as_str)
                == Some(name)
        })
        .collect();
    slices.sort_by(|a, b| meta_str(a, "name").cmp(&meta_str(b, "name")));
    let mut out = Vec::new();
    for slice in slices {
        let ports = slice
            .get("ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let number = match port {
            Some(wanted) => ports
                .iter()
                .find(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == wanted)
                .and_then(|p| p.get("port").and_then(Value::as_u64)),
            None => ports
                .first()
                .and_then(|p| p.get("port").and_then(Value::as_u64))
                .or(Some(0)),
        };
        let Some(number) = number.and_then(|n| u16::try_from(n).ok()) else {
            continue;
        };
        for e in slice
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ready = e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false);
            if !ready {
                continue;
            }
            let ip = e
                .get("addresses")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<IpAddr>().ok());
            if let Some(ip) = ip {
                out.push((ip, number));
            }
        }
    }
    out
}

/// Connects to `port` of the running pod of this node whose address is `ip`.
fn connect_pod(kubelet: &Kubelet, ip: IpAddr, port: u16) -> Result<Connection, NetError> {
    let wanted = ip.to_string();
    let network = {
        let st = kubelet.lock();
        st.pods
            .values()
            .find(|p| !p.terminal && p.ip.as_deref() == Some(wanted.as_str()))
            .map(|p| p.network.clone())
    };
    match network {
        Some(n) => n.connect(port),
        None => Err(NetError::HostUnreachable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_and_qualified_names_name_a_service_and_its_namespace() {
        let pair = |n: &str| service_name(n, "team");
        let want = |s: &str, ns: &str| Some((s.to_string(), ns.to_string()));
        assert_eq!(pair("web"), want("web", "team"));
        assert_eq!(pair("web.other"), want("web", "other"));
        assert_eq!(pair("web.other.svc"), want("web", "other"));
        assert_eq!(pair("Web.Other.svc.cluster.local."), want("web", "other"));
        assert_eq!(pair("web.other.svc.example.com"), None);
        assert_eq!(pair("a.b.c"), None);
    }

    #[test]
    fn a_services_ports_and_addresses_are_read_from_its_spec() {
        let svc = json!({ "spec": {
            "clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"],
            "ports": [{ "name": "http", "port": 80 }, { "port": 9000 }]
        }});
        assert_eq!(cluster_ip(&svc), "10.96.0.9".parse().ok());
        assert_eq!(service_port(&svc, 80).as_deref(), Some("http"));
        assert_eq!(service_port(&svc, 9000).as_deref(), Some(""));
        assert_eq!(service_port(&svc, 81), None);
        assert!(is_headless(&json!({ "spec": { "clusterIP": "None" } })));
    }
}
