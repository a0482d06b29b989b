//! What the endpoints controllers write for one Service and the pods it selects, without a
//! api: the Endpoints (ready pods as `addresses`, the others as `notReadyAddresses`) and the
//! EndpointSlice (every pod with an IP, with its `ready`, `serving` and `terminating`
//! conditions), their ports resolved from each service port's `targetPort` (a number, or a
//! container port's name).

use crate::meta::meta_str;
use serde_json::{Map, Value, json};

/// The label naming a slice's Service.
pub(crate) const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming who manages a slice.
pub(crate) const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The endpoint slice controller's value of [`MANAGED_BY_LABEL`].
pub(crate) const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// The label of a headless Service's endpoints.
const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// One pod as the endpoints see it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Endpoint {
    /// The pod's IP.
    pub(crate) ip: String,
    /// The pod's node.
    pub(crate) node: Option<String>,
    /// `{kind: Pod, namespace, name, uid}`.
    pub(crate) target: Value,
    /// Ready (or the Service publishes addresses that are not ready).
    pub(crate) ready: bool,
    /// The pod's Ready condition, whatever the Service says.
    pub(crate) serving: bool,
    /// Marked for deletion.
    pub(crate) terminating: bool,
    /// The resolved ports: name, port, protocol.
    pub(crate) ports: Vec<Value>,
}

fn ready_condition(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conds| {
            conds.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// The container port of `pod` named `name`.
fn named_port(pod: &Value, name: &str) -> Option<i64> {
    pod.pointer("/spec/containers")?
        .as_array()?
        .iter()
        .filter_map(|c| c.get("ports").and_then(Value::as_array))
        .flatten()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))?
        .get("containerPort")?
        .as_i64()
}

/// The endpoint `pod` makes for `service`, `None` for a pod without an IP or one that has
/// finished.
pub(crate) fn endpoint(service: &Value, pod: &Value) -> Option<Endpoint> {
    let ip = pod.pointer("/status/podIP").and_then(Value::as_str)?;
    if ip.is_empty()
        || matches!(
            pod.pointer("/status/phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        )
    {
        return None;
    }
    let publish = service
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        == Some(true);
    let terminating = pod.pointer("/metadata/deletionTimestamp").is_some();
    let serving = ready_condition(pod);
    let mut ports = Vec::new();
    for p in service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let target = p.get("targetPort").or_else(|| p.get("port"));
        let port = match target {
            Some(Value::String(name)) => match named_port(pod, name) {
                Some(n) => n,
                None => continue,
            },
            Some(v) => match v.as_i64() {
                Some(n) => n,
                None => continue,
            },
            None => continue,
        };
        let mut out = json!({
            "port": port,
            "protocol": p.get("protocol").cloned().unwrap_or_else(|| json!("TCP")),
        });
        if let Some(name) = p.get("name").and_then(Value::as_str) {
            out["name"] = json!(name);
        }
        if let Some(ap) = p.get("appProtocol") {
            out["appProtocol"] = ap.clone();
        }
        ports.push(out);
    }
    Some(Endpoint {
        ip: ip.to_string(),
        node: pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string),
        target: json!({
            "kind": "Pod",
            "namespace": meta_str(pod, "namespace").unwrap_or(""),
            "name": meta_str(pod, "name").unwrap_or(""),
            "uid": meta_str(pod, "uid").unwrap_or(""),
        }),
        ready: (serving || publish) && !terminating,
        serving,
        terminating,
        ports,
    })
}

/// The labels the endpoints of `service` carry: the Service's own, and `headless` for a
/// Service without a ClusterIP.
fn labels(service: &Value) -> Map<String, Value> {
    let mut labels = crate::meta::labels(service).cloned().unwrap_or_default();
    if service.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None") {
        labels.insert(HEADLESS_LABEL.into(), json!(""));
    }
    labels
}

/// The Endpoints of `service`: its endpoints grouped by their ports into subsets, the ready
/// ones as `addresses`, the others (not terminating) as `notReadyAddresses`.
pub(crate) fn endpoints(service: &Value, endpoints: &[Endpoint]) -> Value {
    let mut subsets: Vec<(Vec<Value>, Vec<Value>, Vec<Value>)> = Vec::new();
    for e in endpoints {
        if e.terminating {
            continue;
        }
        let mut address = json!({ "ip": e.ip, "targetRef": e.target });
        if let Some(n) = &e.node {
            address["nodeName"] = json!(n);
        }
        let at = match subsets.iter().position(|(ports, _, _)| *ports == e.ports) {
            Some(i) => i,
            None => {
                subsets.push((e.ports.clone(), Vec::new(), Vec::new()));
                subsets.len() - 1
            }
        };
        if let Some((_, ready, not_ready)) = subsets.get_mut(at) {
            if e.ready {
                ready.push(address);
            } else {
                not_ready.push(address);
            }
        }
    }
    let subsets: Vec<Value> = subsets
        .into_iter()
        .map(|(ports, ready, not_ready)| {
            let mut s = json!({});
            if !ready.is_empty() {
                s["addresses"] = json!(ready);
            }
            if !not_ready.is_empty() {
                s["notReadyAddresses"] = json!(not_ready);
            }
            if !ports.is_empty() {
                s["ports"] = json!(ports);
            }
            s
        })
        .collect();
    let mut out = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": meta_str(service, "name").unwrap_or(""),
            "namespace": meta_str(service, "namespace").unwrap_or(""),
            "labels": labels(service),
        },
    });
    if !subsets.is_empty() {
        out["subsets"] = json!(subsets);
    }
    out
}

/// The body of `service`'s EndpointSlice (without its name): every endpoint with its
/// conditions, and the ports of the first endpoint (or the Service's own ports, unresolved,
/// when there is none).
pub(crate) fn endpoint_slice(service: &Value, endpoints: &[Endpoint]) -> Value {
    let name = meta_str(service, "name").unwrap_or("");
    let mut labels = labels(service);
    labels.insert(SERVICE_NAME_LABEL.into(), json!(name));
    labels.insert(MANAGED_BY_LABEL.into(), json!(MANAGED_BY));
    let list: Vec<Value> = endpoints
        .iter()
        .map(|e| {
            let mut v = json!({
                "addresses": [e.ip],
                "conditions": {
                    "ready": e.ready,
                    "serving": e.serving,
                    "terminating": e.terminating,
                },
                "targetRef": e.target,
            });
            if let Some(n) = &e.node {
                v["nodeName"] = json!(n);
            }
            v
        })
        .collect();
    let ports = endpoints.first().map(|e| e.ports.clone()).unwrap_or_else(|| {
        service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| {
                        let port = p.get("targetPort").and_then(Value::as_i64)?;
                        let mut out = json!({ "port": port, "protocol": p.get("protocol").cloned().unwrap_or_else(|| json!("TCP")) });
                        if let Some(n) = p.get("name") {
                            out["name"] = n.clone();
                        }
                        Some(out)
                    })
                    .collect()
            })
            .unwrap_or_default()
    });
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": format!("{name}-"),
            "namespace": meta_str(service, "namespace").unwrap_or(""),
            "labels": labels,
        },
        "addressType": "IPv4",
        "endpoints": list,
        "ports": ports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service() -> Value {
        json!({
            "metadata": { "name": "web", "namespace": "default", "labels": { "app": "web" } },
            "spec": { "selector": { "app": "web" }, "clusterIP": "10.96.3.4",
                "ports": [ { "name": "http", "port": 80, "targetPort": "http", "protocol": "TCP" } ] },
        })
    }

    fn pod(name: &str, ip: Option<&str>, ready: bool) -> Value {
        let mut p = json!({
            "metadata": { "name": name, "namespace": "default", "uid": format!("uid-{name}") },
            "spec": { "nodeName": "fakekube-node", "containers": [ { "name": "c",
                "ports": [ { "name": "http", "containerPort": 8080 } ] } ] },
            "status": { "phase": "Running", "conditions": [
                { "type": "Ready", "status": if ready { "True" } else { "False" } } ] },
        });
        if let Some(ip) = ip {
            p["status"]["podIP"] = json!(ip);
        }
        p
    }

    #[test]
    fn ready_pods_are_addresses_and_the_others_not_ready_addresses() {
        let svc = service();
        let eps: Vec<Endpoint> = [
            pod("a", Some("10.244.0.2"), true),
            pod("b", Some("10.244.0.3"), false),
            pod("c", None, false),
        ]
        .iter()
        .filter_map(|p| endpoint(&svc, p))
        .collect();
        assert_eq!(eps.len(), 2, "a pod without an IP is no endpoint");
        let ep = endpoints(&svc, &eps);
        let subset = &ep["subsets"][0];
        assert_eq!(subset["addresses"][0]["ip"], "10.244.0.2");
        assert_eq!(subset["addresses"][0]["targetRef"]["name"], "a");
        assert_eq!(subset["notReadyAddresses"][0]["ip"], "10.244.0.3");
        assert_eq!(
            subset["ports"][0]["port"], 8080,
            "the named target port resolves"
        );
        let slice = endpoint_slice(&svc, &eps);
        assert_eq!(slice["metadata"]["labels"][SERVICE_NAME_LABEL], "web");
        assert_eq!(slice["endpoints"][0]["conditions"]["ready"], true);
        assert_eq!(slice["endpoints"][1]["conditions"]["ready"], false);
        assert_eq!(slice["ports"][0]["name"], "http");
    }

    #[test]
    fn a_terminating_pod_leaves_the_endpoints_and_stays_in_the_slice_as_terminating() {
        let svc = service();
        let mut p = pod("a", Some("10.244.0.2"), true);
        p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        let eps: Vec<Endpoint> = endpoint(&svc, &p).into_iter().collect();
        assert!(endpoints(&svc, &eps).get("subsets").is_none());
        let slice = endpoint_slice(&svc, &eps);
        assert_eq!(
            slice["endpoints"][0]["conditions"],
            json!({ "ready": false, "serving": true, "terminating": true })
        );
    }
}
