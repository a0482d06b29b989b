//! Defaults and the few validations the API server applies to the core kinds fakekube serves.
//!
//! Only what clients of this server observe is done: the fields kubectl and the controllers
//! read back, and the required fields whose absence a real server refuses. The workload kinds
//! (apps, batch, policy, EndpointSlices, ReplicationControllers) are in `workloads`.

pub(crate) mod admission;
mod autoscaling;
mod classes;
mod errs;
pub(crate) mod flowcontrol;
mod networking;
mod policy;
pub(crate) mod quantity;
mod storage;
mod workloads;

pub(crate) use classes::system_priority_classes;
pub(crate) use policy::quota_scopes;

use crate::registry::ResourceType;
use crate::status::Cause;
use base64::Engine;
use serde_json::{Map, Value, json};

/// A `FieldValueRequired` cause for `field`.
pub(crate) fn required(field: &str) -> Cause {
    Cause {
        reason: "FieldValueRequired".into(),
        message: "Required value".into(),
        field: Some(field.into()),
    }
}

/// Sets `key` unless it holds a value.
pub(crate) fn set_default(map: &mut Map<String, Value>, key: &str, v: Value) {
    if !map.contains_key(key) || map.get(key).is_some_and(Value::is_null) {
        map.insert(key.to_string(), v);
    }
}

/// Defaults and validates a core object; returns the causes of a 422, empty when admitted.
pub(crate) fn admit_core(rt: &ResourceType, obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    if rt.group == crate::rbac::GROUP {
        return crate::rbac::admit(&rt.kind, obj, old);
    }
    if matches!(
        rt.group.as_str(),
        "apps" | "batch" | "policy" | "discovery.k8s.io"
    ) {
        return workloads::admit(rt, obj, old);
    }
    match rt.group.as_str() {
        "admissionregistration.k8s.io" => return admission::admit(&rt.kind, obj, old),
        "storage.k8s.io" => return storage::admit(&rt.kind, obj, old),
        "flowcontrol.apiserver.k8s.io" => return flowcontrol::admit(&rt.kind, obj),
        "node.k8s.io" if rt.kind == "RuntimeClass" => return classes::runtime_class(obj, old),
        "autoscaling" => return autoscaling::hpa(&rt.version, obj),
        "networking.k8s.io" if rt.kind == "Ingress" => return networking::ingress(obj, old),
        "networking.k8s.io" if rt.kind == "IngressClass" => {
            return networking::ingress_class(obj, old);
        }
        "scheduling.k8s.io" if rt.kind == "PriorityClass" => {
            return classes::priority_class(obj, old);
        }
        "" => {}
        _ => return Vec::new(),
    }
    match rt.kind.as_str() {
        "ReplicationController" => workloads::admit(rt, obj, old),
        "Pod" => pod(obj, old),
        "Service" => service(obj, old),
        "PersistentVolumeClaim" => pvc(obj),
        "Namespace" => namespace(obj),
        "Secret" => secret(obj),
        "LimitRange" => policy::limit_range(obj),
        "ResourceQuota" => policy::resource_quota(obj),
        "PodTemplate" => policy::pod_template(obj),
        _ => Vec::new(),
    }
}

fn image_pull_policy(image: &str) -> &'static str {
    let last = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') {
        return "IfNotPresent";
    }
    match last.split_once(':') {
        None => "Always",
        Some((_, "latest")) => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn containers(spec: &mut Map<String, Value>, at: &str, key: &str, causes: &mut Vec<Cause>) {
    let Some(Value::Array(list)) = spec.get_mut(key) else {
        return;
    };
    for (i, c) in list.iter_mut().enumerate() {
        let Some(c) = c.as_object_mut() else {
            causes.push(required(&format!("{at}.{key}[{i}]")));
            continue;
        };
        if c.get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(required(&format!("{at}.{key}[{i}].name")));
        }
        let image = c
            .get("image")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if image.is_empty() {
            causes.push(required(&format!("{at}.{key}[{i}].image")));
        }
        set_default(c, "imagePullPolicy", json!(image_pull_policy(&image)));
        set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
        set_default(c, "terminationMessagePolicy", json!("File"));
        set_default(c, "resources", json!({}));
        resources(c, &format!("{at}.{key}[{i}].resources"), causes);
        if let Some(Value::Array(ports)) = c.get_mut("ports") {
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                set_default(p, "protocol", json!("TCP"));
            }
        }
    }
}

/// Checks a container's `resources` as `ValidateResourceRequirements` does: quantities not
/// negative, and no request above its limit (a 422 naming the request).
fn resources(c: &Map<String, Value>, at: &str, causes: &mut Vec<Cause>) {
    let Some(r) = c.get("resources") else { return };
    let mut read = |key: &str| {
        let mut list = quantity::ResourceList::new();
        for (name, v) in r.get(key).and_then(Value::as_object).into_iter().flatten() {
            let shown = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            match quantity::Amount::read(v) {
                Ok(a) if a.value.sign() < 0 => causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!(
                        "Invalid value: \"{shown}\": must be greater than or equal to 0"
                    ),
                    field: Some(format!("{at}.{key}[{name}]")),
                }),
                Ok(a) => {
                    list.insert(name.clone(), a);
                }
                Err(why) => causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!("Invalid value: \"{shown}\": {why}"),
                    field: Some(format!("{at}.{key}[{name}]")),
                }),
            }
        }
        list
    };
    let limits = read("limits");
    let requests = read("requests");
    for (name, request) in &requests {
        if let Some(limit) = limits.get(name)
            && request.cmp_value(*limit).is_gt()
        {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: \"{}\": must be less than or equal to {name} limit of {}",
                    request.text(),
                    limit.text()
                ),
                field: Some(format!("{at}.requests[{name}]")),
            });
        }
    }
}

/// A pod's containers that set a limit and no request for a resource get the limit as their
/// request (`SetDefaults_Pod`; pod templates are not defaulted so).
pub(crate) fn requests_from_limits(spec: &mut Map<String, Value>) {
    for key in ["containers", "initContainers"] {
        let Some(Value::Array(list)) = spec.get_mut(key) else {
            continue;
        };
        for c in list.iter_mut() {
            let Some(r) = c.get_mut("resources").and_then(Value::as_object_mut) else {
                continue;
            };
            let Some(limits) = r.get("limits").and_then(Value::as_object).cloned() else {
                continue;
            };
            let requests = r.entry("requests").or_insert_with(|| json!({}));
            if requests.is_null() {
                *requests = json!({});
            }
            if let Some(requests) = requests.as_object_mut() {
                for (name, v) in limits {
                    requests.entry(name).or_insert(v);
                }
            }
        }
    }
}

/// Defaults and checks a pod spec found at the field path `at` (`spec` of a Pod,
/// `spec.template.spec` of a workload's pod template), as the API server defaults both.
pub(crate) fn pod_spec(spec: &mut Map<String, Value>, at: &str, causes: &mut Vec<Cause>) {
    if spec
        .get("containers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        causes.push(required(&format!("{at}.containers")));
    }
    containers(spec, at, "containers", causes);
    containers(spec, at, "initContainers", causes);
    containers(spec, at, "ephemeralContainers", causes);
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    // `serviceAccount` is the deprecated name of `serviceAccountName`: read when the latter is
    // empty, and always written equal to it (the v1 conversion of a pod spec).
    let account = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(name) = account("serviceAccountName").or_else(|| account("serviceAccount")) {
        spec.insert("serviceAccountName".into(), json!(name));
        spec.insert("serviceAccount".into(), json!(name));
    }
}

fn pod(obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(o) = obj.as_object_mut() else {
        return causes;
    };
    let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) else {
        causes.push(required("spec.containers"));
        return causes;
    };
    if old.is_none() {
        requests_from_limits(spec);
    }
    pod_spec(spec, "spec", &mut causes);
    set_default(spec, "enableServiceLinks", json!(true));
    set_default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    set_default(spec, "priority", json!(0));
    if !spec.contains_key("serviceAccountName") {
        // Where the ServiceAccount admission did not run (a pod written straight to the store).
        spec.insert("serviceAccountName".into(), json!("default"));
        spec.insert("serviceAccount".into(), json!("default"));
    }
    if let Some(old) = old {
        // The pod spec is immutable but for a few fields; the fake keeps the stored one for the
        // fields the kubelet uses and refuses changes to containers.
        let old_containers = old.get("spec").and_then(|s| s.get("containers"));
        let images = |v: Option<&Value>| -> Vec<(String, String)> {
            v.and_then(Value::as_array)
                .map(|l| {
                    l.iter()
                        .map(|c| {
                            (
                                c.get("name")
                                    .and_then(Value::as_str)
                                    .unwrap_or("")
                                    .to_string(),
                                c.get("image")
                                    .and_then(Value::as_str)
                                    .unwrap_or("")
                                    .to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let new_names: Vec<String> = images(spec.get("containers"))
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let old_names: Vec<String> = images(old_containers).into_iter().map(|(n, _)| n).collect();
        if new_names != old_names {
            causes.push(Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: pod updates may not add or remove containers".into(),
                field: Some("spec.containers".into()),
            });
        }
    } else if !o.contains_key("status") {
        let qos = qos_class(o.get("spec").unwrap_or(&Value::Null));
        o.insert(
            "status".into(),
            json!({ "phase": "Pending", "qosClass": qos }),
        );
    }
    causes
}

/// A pod's QoS class (`GetPodQOS`): `BestEffort` without any cpu or memory request or
/// limit, `Guaranteed` when every container limits both and requests equal limits,
/// `Burstable` otherwise.
pub(crate) fn qos_class(spec: &Value) -> &'static str {
    let all: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    let compute = |c: &Value, key: &str| {
        let list = quantity::read_list(c.pointer(&format!("/resources/{key}")));
        list.into_iter()
            .filter(|(k, a)| matches!(k.as_str(), "cpu" | "memory") && a.value.sign() != 0)
            .collect::<quantity::ResourceList>()
    };
    let mut any = false;
    let mut guaranteed = true;
    for c in all {
        let (requests, limits) = (compute(c, "requests"), compute(c, "limits"));
        any |= !requests.is_empty() || !limits.is_empty();
        let both = limits.contains_key("cpu") && limits.contains_key("memory");
        let equal = requests
            .iter()
            .all(|(k, r)| limits.get(k).is_some_and(|l| l.cmp_value(*r).is_eq()));
        if !both || !equal {
            guaranteed = false;
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

fn service(obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(o) = obj.as_object_mut() else {
        return causes;
    };
    let spec = o.entry("spec").or_insert_with(|| json!({}));
    let Some(spec) = spec.as_object_mut() else {
        causes.push(required("spec"));
        return causes;
    };
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    set_default(spec, "ipFamilies", json!(["IPv4"]));
    set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
    let old_ip = old
        .and_then(|o| o.get("spec"))
        .and_then(|s| s.get("clusterIP"))
        .cloned();
    match (spec.get("clusterIP").and_then(Value::as_str), old_ip) {
        (_, Some(ip)) => {
            spec.insert("clusterIP".into(), ip.clone());
            spec.insert("clusterIPs".into(), json!([ip]));
        }
        (Some("None"), None) => {
            spec.insert("clusterIPs".into(), json!(["None"]));
        }
        (Some(ip), None) if !ip.is_empty() => {
            let ip = ip.to_string();
            spec.insert("clusterIPs".into(), json!([ip]));
        }
        _ => {
            let b = uuid::Uuid::new_v4().into_bytes();
            // 10.96.0.1 is the `kubernetes` Service's.
            let last = if b[0] == 0 { b[1].max(2) } else { b[1].max(1) };
            let ip = format!("10.96.{}.{last}", b[0]);
            spec.insert("clusterIP".into(), json!(ip));
            spec.insert("clusterIPs".into(), json!([ip]));
        }
    }
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for (i, p) in ports.iter_mut().enumerate() {
            let Some(p) = p.as_object_mut() else { continue };
            let Some(port) = p.get("port").cloned().filter(Value::is_number) else {
                causes.push(required(&format!("spec.ports[{i}].port")));
                continue;
            };
            set_default(p, "protocol", json!("TCP"));
            set_default(p, "targetPort", port);
        }
    }
    if old.is_none() {
        o.insert("status".into(), json!({ "loadBalancer": {} }));
    }
    causes
}

fn pvc(obj: &mut Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(o) = obj.as_object_mut() else {
        return causes;
    };
    let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) else {
        causes.push(required("spec"));
        return causes;
    };
    set_default(spec, "volumeMode", json!("Filesystem"));
    if spec
        .get("accessModes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        causes.push(required("spec.accessModes"));
    }
    if spec
        .get("resources")
        .and_then(|r| r.get("requests"))
        .and_then(|r| r.get("storage"))
        .is_none()
    {
        causes.push(required("spec.resources[storage]"));
    }
    if !o.contains_key("status") {
        o.insert("status".into(), json!({ "phase": "Pending" }));
    }
    causes
}

fn namespace(obj: &mut Value) -> Vec<Cause> {
    let Some(o) = obj.as_object_mut() else {
        return Vec::new();
    };
    let name = o
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Some(md) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = md.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = labels.as_object_mut() {
            l.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
    }
    o.entry("spec")
        .or_insert_with(|| json!({ "finalizers": ["kubernetes"] }));
    o.insert("status".into(), json!({ "phase": "Active" }));
    Vec::new()
}

fn secret(obj: &mut Value) -> Vec<Cause> {
    let Some(o) = obj.as_object_mut() else {
        return Vec::new();
    };
    set_default(o, "type", json!("Opaque"));
    let mut causes = Vec::new();
    if o.get("type").and_then(Value::as_str) == Some("kubernetes.io/service-account-token")
        && o.get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get("kubernetes.io/service-account.name"))
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        causes.push(required(
            "metadata.annotations[kubernetes.io/service-account.name]",
        ));
    }
    if let Some(Value::Object(string_data)) = o.remove("stringData") {
        let data = o.entry("data").or_insert_with(|| json!({}));
        if let Some(d) = data.as_object_mut() {
            for (k, v) in string_data {
                if let Some(s) = v.as_str() {
                    d.insert(
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(s)),
                    );
                }
            }
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Registry, ResourceType};
    use std::sync::Arc;

    fn core(plural: &str) -> Arc<ResourceType> {
        Registry::new()
            .find("", "v1", plural)
            .unwrap_or_else(|| panic!("{plural} served"))
    }

    #[test]
    fn pod_without_containers_is_refused_with_the_field() {
        let rt = core("pods");
        let mut pod = json!({ "metadata": { "name": "p" }, "spec": {} });
        let causes = admit_core(&rt, &mut pod, None);
        assert_eq!(causes[0].field.as_deref(), Some("spec.containers"));
    }

    #[test]
    fn pod_gets_the_api_server_defaults_and_pending_phase() {
        let rt = core("pods");
        let mut pod = json!({ "metadata": { "name": "p" }, "spec": { "containers": [ { "name": "c", "image": "busybox" } ] } });
        assert!(admit_core(&rt, &mut pod, None).is_empty());
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(pod["status"]["phase"], "Pending");
    }

    #[test]
    fn headless_service_keeps_cluster_ip_none_and_ports_get_target_port() {
        let rt = core("services");
        let mut svc = json!({ "metadata": { "name": "s" }, "spec": { "clusterIP": "None", "ports": [ { "port": 80 } ] } });
        assert!(admit_core(&rt, &mut svc, None).is_empty());
        assert_eq!(svc["spec"]["clusterIP"], "None");
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
    }

    #[test]
    fn secret_string_data_is_folded_into_data() {
        let rt = core("secrets");
        let mut s = json!({ "metadata": { "name": "s" }, "stringData": { "k": "v" } });
        admit_core(&rt, &mut s, None);
        assert_eq!(s["data"]["k"], "dg==");
        assert!(s.get("stringData").is_none());
    }
}
