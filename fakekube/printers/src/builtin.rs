//! The columns the API server prints for its built-in kinds (what `kubectl get` and
//! `kubectl get -o wide` show), and each kind's cells for one object. Kinds without columns of
//! their own get `NAME` and `CREATED AT`, as the API server's default table convertor prints.

use crate::age;
use fakekube_machinery::meta;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use time::OffsetDateTime;

/// One column: its header, JSON type, format and whether only `-o wide` shows it.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// The header (`Name`, `Ready`).
    pub name: &'static str,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_name: &'static str,
    /// `name` for the name column.
    pub format: &'static str,
    /// What the column shows.
    pub description: &'static str,
    /// 0 for the default columns, 1 for `-o wide`.
    pub priority: i64,
}

pub(crate) const fn col(
    name: &'static str,
    type_name: &'static str,
    description: &'static str,
) -> Column {
    Column {
        name,
        type_name,
        format: "",
        description,
        priority: 0,
    }
}

const fn wide(name: &'static str, type_name: &'static str, description: &'static str) -> Column {
    Column {
        priority: 1,
        ..col(name, type_name, description)
    }
}

pub(crate) const NAME: Column = Column {
    format: "name",
    ..col(
        "Name",
        "string",
        "Name must be unique within a namespace. It is required when creating resources.",
    )
};
pub(crate) const AGE: Column = col(
    "Age",
    "string",
    "The time since the object was created (its creationTimestamp).",
);
const CONTAINERS: Column = wide(
    "Containers",
    "string",
    "Names of each container in the template.",
);
const IMAGES: Column = wide(
    "Images",
    "string",
    "Images referenced by each container in the template.",
);
const SELECTOR: Column = wide(
    "Selector",
    "string",
    "A label query over the pods of the object.",
);

/// The columns of a kind without printer columns of its own.
pub const DEFAULT: &[Column] = &[
    NAME,
    col(
        "Created At",
        "date",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    ),
];

const POD: &[Column] = &[
    NAME,
    col(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    col(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    wide("IP", "string", "The pod's IP address."),
    wide("Node", "string", "The node the pod is bound to."),
    wide(
        "Nominated Node",
        "string",
        "The node the scheduler nominated for the pod.",
    ),
    wide(
        "Readiness Gates",
        "string",
        "How many of the pod's readiness gates hold.",
    ),
];

const SERVICE: &[Column] = &[
    NAME,
    col("Type", "string", "How the service is exposed."),
    col("Cluster-IP", "string", "The service's cluster IP."),
    col(
        "External-IP",
        "string",
        "IPs the service is reachable at from outside the cluster.",
    ),
    col("Port(s)", "string", "The ports the service exposes."),
    AGE,
    wide(
        "Selector",
        "string",
        "The labels of the pods the service routes to.",
    ),
];

const NAMESPACE: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the namespace"),
    AGE,
];

const SECRET: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        "Used to facilitate programmatic handling of secret data.",
    ),
    col("Data", "string", "How many keys the secret holds."),
    AGE,
];

const SERVICE_ACCOUNT: &[Column] = &[
    NAME,
    col(
        "Secrets",
        "string",
        "How many secrets the service account lists.",
    ),
    AGE,
];

const PVC: &[Column] = &[
    NAME,
    col("Status", "string", "The phase of the claim."),
    col("Volume", "string", "The volume bound to the claim."),
    col("Capacity", "string", "The capacity of the bound volume."),
    col(
        "Access Modes",
        "string",
        "The access modes of the bound volume.",
    ),
    col("StorageClass", "string", "StorageClass of the pvc"),
    col(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "The volume mode the claim asks for.",
    ),
];

const STORAGE_CLASS: &[Column] = &[
    NAME,
    col(
        "Provisioner",
        "string",
        "The provisioner of the class's volumes.",
    ),
    col(
        "ReclaimPolicy",
        "string",
        "What happens to a provisioned volume when its claim goes.",
    ),
    col(
        "VolumeBindingMode",
        "string",
        "When a claim of the class is bound and provisioned.",
    ),
    col(
        "AllowVolumeExpansion",
        "string",
        "Whether claims of the class may grow.",
    ),
    AGE,
];

const RUNTIME_CLASS: &[Column] = &[
    NAME,
    col(
        "Handler",
        "string",
        "The CRI handler the class's pods run with.",
    ),
    AGE,
];

const PRIORITY_CLASS: &[Column] = &[
    NAME,
    col("Value", "integer", "The priority of the class's pods."),
    col(
        "Global-Default",
        "boolean",
        "Whether pods naming no class get this one.",
    ),
    AGE,
    col(
        "PreemptionPolicy",
        "string",
        "Whether the class's pods may preempt lower-priority ones.",
    ),
];

const EVENT: &[Column] = &[
    col("Last Seen", "string", "When the event was last seen."),
    col("Type", "string", "Normal or Warning."),
    col("Reason", "string", "Why the event happened, in CamelCase."),
    col("Object", "string", "The object the event is about."),
    wide(
        "Subobject",
        "string",
        "The part of the object the event is about.",
    ),
    wide("Source", "string", "The component that reported the event."),
    col("Message", "string", "What happened."),
    wide("First Seen", "string", "When the event was first seen."),
    wide("Count", "string", "How many times the event happened."),
    Column {
        priority: 1,
        ..NAME
    },
];

const NETWORK_POLICY: &[Column] = &[
    NAME,
    col("Pod-Selector", "string", "The pods the policy applies to."),
    AGE,
];

const RESOURCE_QUOTA: &[Column] = &[
    NAME,
    AGE,
    col(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    col(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
];

const POD_TEMPLATE: &[Column] = &[
    NAME,
    col(
        "Containers",
        "string",
        "Names of each container in the template.",
    ),
    col(
        "Images",
        "string",
        "Images referenced by each container in the template.",
    ),
    col("Pod Labels", "string", "The labels for the pod template."),
];

const INGRESS: &[Column] = &[
    NAME,
    col(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for ingress.",
    ),
    col(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    col(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
    ),
    col("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];

const INGRESS_CLASS: &[Column] = &[
    NAME,
    col(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
    ),
    col(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
    ),
    AGE,
];

const HPA: &[Column] = &[
    NAME,
    col(
        "Reference",
        "string",
        "reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource.",
    ),
    col(
        "Targets",
        "string",
        "the metrics used to calculate the desired replica count",
    ),
    col(
        "MinPods",
        "string",
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
    ),
    col(
        "MaxPods",
        "integer",
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
    ),
    col(
        "Replicas",
        "integer",
        "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
    ),
    AGE,
];

const DEPLOYMENT: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    col(
        "Up-to-date",
        "string",
        "Total number of pods of the deployment that have the desired template.",
    ),
    col(
        "Available",
        "string",
        "Total number of available pods of the deployment.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const REPLICA_SET: &[Column] = &[
    NAME,
    col("Desired", "integer", "The number of replicas wanted."),
    col("Current", "integer", "The number of replicas there are."),
    col("Ready", "integer", "The number of ready replicas."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const STATEFUL_SET: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

const DAEMON_SET: &[Column] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "The number of nodes that should run the daemon pod.",
    ),
    col(
        "Current",
        "integer",
        "The number of nodes running at least one daemon pod.",
    ),
    col(
        "Ready",
        "integer",
        "The number of nodes with a ready daemon pod.",
    ),
    col(
        "Up-to-date",
        "integer",
        "The number of nodes running the updated daemon pod.",
    ),
    col(
        "Available",
        "integer",
        "The number of nodes with an available daemon pod.",
    ),
    col(
        "Node Selector",
        "string",
        "The node selector of the pod template.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const JOB: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the job."),
    col(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded.",
    ),
    col("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const CONFIG_MAP: &[Column] = &[
    NAME,
    col("Data", "string", "How many keys the config map holds."),
    AGE,
];

const NODE: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    AGE,
    col("Version", "string", "Kubelet Version reported by the node."),
    wide("Internal-IP", "string", "The node's internal IP."),
    wide("External-IP", "string", "The node's external IP."),
    wide("OS-Image", "string", "OS Image reported by the node."),
    wide(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node.",
    ),
    wide(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node.",
    ),
];

const ENDPOINTS: &[Column] = &[
    NAME,
    col(
        "Endpoints",
        "string",
        "The addresses and ports of the endpoints.",
    ),
    AGE,
];

const ENDPOINT_SLICE: &[Column] = &[
    NAME,
    col(
        "AddressType",
        "string",
        "The type of address the slice carries.",
    ),
    col("Ports", "string", "The ports of the slice."),
    col(
        "Endpoints",
        "string",
        "The addresses of the slice's endpoints.",
    ),
    AGE,
];

const LEASE: &[Column] = &[
    NAME,
    col("Holder", "string", "The identity of the lease's holder."),
    AGE,
];

const BINDING: &[Column] = &[
    NAME,
    col("Role", "string", "The role the binding grants."),
    AGE,
    wide("Users", "string", "Users in the binding"),
    wide("Groups", "string", "Groups in the binding"),
    wide(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the binding",
    ),
];

const API_SERVICE: &[Column] = &[
    NAME,
    col(
        "Service",
        "string",
        "The service that serves the group version.",
    ),
    col(
        "Available",
        "string",
        "Whether the group version is available.",
    ),
    AGE,
];

/// The printer of one built-in kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Printer {
    Pod,
    Service,
    Namespace,
    Secret,
    ServiceAccount,
    Pvc,
    StorageClass,
    RuntimeClass,
    PriorityClass,
    Event,
    NetworkPolicy,
    ResourceQuota,
    PodTemplate,
    Ingress,
    IngressClass,
    Hpa,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    ConfigMap,
    Node,
    Endpoints,
    EndpointSlice,
    Lease,
    Binding,
    ApiService,
    Default,
}

fn printer(group: &str, kind: &str) -> Printer {
    match (group, kind) {
        ("", "Pod") => Printer::Pod,
        ("", "Service") => Printer::Service,
        ("", "Namespace") => Printer::Namespace,
        ("", "Secret") => Printer::Secret,
        ("", "ServiceAccount") => Printer::ServiceAccount,
        ("", "PersistentVolumeClaim") => Printer::Pvc,
        ("storage.k8s.io", "StorageClass") => Printer::StorageClass,
        ("node.k8s.io", "RuntimeClass") => Printer::RuntimeClass,
        ("scheduling.k8s.io", "PriorityClass") => Printer::PriorityClass,
        ("" | "events.k8s.io", "Event") => Printer::Event,
        ("", "ConfigMap") => Printer::ConfigMap,
        ("", "Node") => Printer::Node,
        ("", "Endpoints") => Printer::Endpoints,
        ("networking.k8s.io", "NetworkPolicy") => Printer::NetworkPolicy,
        ("", "ResourceQuota") => Printer::ResourceQuota,
        ("networking.k8s.io", "Ingress") => Printer::Ingress,
        ("networking.k8s.io", "IngressClass") => Printer::IngressClass,
        ("autoscaling", "HorizontalPodAutoscaler") => Printer::Hpa,
        ("", "PodTemplate") => Printer::PodTemplate,
        ("apps", "Deployment") => Printer::Deployment,
        ("apps", "ReplicaSet") | ("", "ReplicationController") => Printer::ReplicaSet,
        ("apps", "StatefulSet") => Printer::StatefulSet,
        ("apps", "DaemonSet") => Printer::DaemonSet,
        ("batch", "Job") => Printer::Job,
        ("discovery.k8s.io", "EndpointSlice") => Printer::EndpointSlice,
        ("coordination.k8s.io", "Lease") => Printer::Lease,
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => Printer::Binding,
        ("apiregistration.k8s.io", "APIService") => Printer::ApiService,
        _ => Printer::Default,
    }
}

/// The columns of built-in `kind` of `group` (the cluster configuration kinds aside).
pub(crate) fn columns(group: &str, kind: &str) -> &'static [Column] {
    match printer(group, kind) {
        Printer::Pod => POD,
        Printer::Service => SERVICE,
        Printer::Namespace => NAMESPACE,
        Printer::Secret => SECRET,
        Printer::ServiceAccount => SERVICE_ACCOUNT,
        Printer::Pvc => PVC,
        Printer::StorageClass => STORAGE_CLASS,
        Printer::RuntimeClass => RUNTIME_CLASS,
        Printer::PriorityClass => PRIORITY_CLASS,
        Printer::Event => EVENT,
        Printer::NetworkPolicy => NETWORK_POLICY,
        Printer::ResourceQuota => RESOURCE_QUOTA,
        Printer::Ingress => INGRESS,
        Printer::IngressClass => INGRESS_CLASS,
        Printer::Hpa => HPA,
        Printer::PodTemplate => POD_TEMPLATE,
        Printer::Deployment => DEPLOYMENT,
        Printer::ReplicaSet => REPLICA_SET,
        Printer::StatefulSet => STATEFUL_SET,
        Printer::DaemonSet => DAEMON_SET,
        Printer::Job => JOB,
        Printer::ConfigMap => CONFIG_MAP,
        Printer::Node => NODE,
        Printer::Endpoints => ENDPOINTS,
        Printer::EndpointSlice => ENDPOINT_SLICE,
        Printer::Lease => LEASE,
        Printer::Binding => BINDING,
        Printer::ApiService => API_SERVICE,
        Printer::Default => DEFAULT,
    }
}

/// One row: its cells, and the conditions the printer attaches (a finished pod is
/// `Completed`).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// One cell per column.
    pub cells: Vec<Value>,
    /// `conditions` of the row, when any.
    pub conditions: Option<Value>,
}

/// The cells of `obj`, a built-in `kind` of `group` (the cluster configuration kinds aside),
/// at `now`.
pub(crate) fn row(group: &str, kind: &str, obj: &Value, now: OffsetDateTime) -> Row {
    let name = json!(str_at(obj, &["metadata", "name"]));
    let age = json!(age::since(
        meta::str_at(obj, &["metadata", "creationTimestamp"]),
        now
    ));
    let plain = |cells: Vec<Value>| Row {
        cells,
        conditions: None,
    };
    match printer(group, kind) {
        Printer::Pod => pod_row(obj, now),
        Printer::Service => plain(service_cells(obj, name, age)),
        Printer::Namespace => plain(vec![name, json!(str_at(obj, &["status", "phase"])), age]),
        Printer::Secret => plain(vec![
            name,
            json!(str_at(obj, &["type"])),
            json!(len_at(obj, &["data"])),
            age,
        ]),
        Printer::ServiceAccount => plain(vec![name, json!(len_at(obj, &["secrets"])), age]),
        Printer::Pvc => plain(pvc_cells(obj, name, age)),
        Printer::StorageClass => plain(storage_class_cells(obj, age)),
        Printer::RuntimeClass => plain(vec![name, json!(str_at(obj, &["handler"])), age]),
        Printer::PriorityClass => plain(vec![
            name,
            json!(obj.get("value").and_then(Value::as_i64).unwrap_or(0)),
            json!(
                obj.get("globalDefault")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            ),
            age,
            json!(str_at(obj, &["preemptionPolicy"])),
        ]),
        Printer::Event => plain(event_cells(obj, name, now)),
        Printer::NetworkPolicy => plain(vec![
            name,
            json!(format_selector(obj.pointer("/spec/podSelector"))),
            age,
        ]),
        Printer::ResourceQuota => plain(resource_quota_cells(obj, name, age)),
        Printer::Ingress => plain(ingress_cells(obj, name, age)),
        Printer::Hpa => plain(vec![
            name,
            json!(format!(
                "{}/{}",
                str_at(obj, &["spec", "scaleTargetRef", "kind"]),
                str_at(obj, &["spec", "scaleTargetRef", "name"])
            )),
            json!(hpa_targets(obj)),
            json!(
                obj.pointer("/spec/minReplicas")
                    .and_then(Value::as_i64)
                    .map_or_else(|| "<unset>".to_string(), |n| n.to_string())
            ),
            json!(int_at(obj, "/spec/maxReplicas")),
            json!(int_at(obj, "/status/currentReplicas")),
            age,
        ]),
        Printer::IngressClass => {
            let parameters = obj.pointer("/spec/parameters").filter(|p| p.is_object());
            let parameters = parameters.map_or_else(
                || "<none>".to_string(),
                |p| {
                    let kind = str_at(p, &["kind"]);
                    let group = str_at(p, &["apiGroup"]);
                    let kind = if group.is_empty() {
                        kind.to_string()
                    } else {
                        format!("{kind}.{group}")
                    };
                    format!("{kind}/{}", str_at(p, &["name"]))
                },
            );
            plain(vec![
                name,
                json!(str_at(obj, &["spec", "controller"])),
                json!(parameters),
                age,
            ])
        }
        Printer::PodTemplate => {
            let (names, images) = containers(obj, "/template/spec/containers");
            plain(vec![
                name,
                json!(names),
                json!(images),
                json!(format_labels(
                    obj.pointer("/template/metadata/labels")
                        .and_then(Value::as_object)
                )),
            ])
        }
        Printer::Deployment => {
            let (names, images) = containers(obj, "/spec/template/spec/containers");
            plain(vec![
                name,
                json!(format!(
                    "{}/{}",
                    int_at(obj, "/status/readyReplicas"),
                    int_at(obj, "/spec/replicas")
                )),
                json!(int_at(obj, "/status/updatedReplicas")),
                json!(int_at(obj, "/status/availableReplicas")),
                age,
                json!(names),
                json!(images),
                json!(selector_string(obj.pointer("/spec/selector"))),
            ])
        }
        Printer::ReplicaSet => {
            let (names, images) = containers(obj, "/spec/template/spec/containers");
            plain(vec![
                name,
                json!(int_at(obj, "/spec/replicas")),
                json!(int_at(obj, "/status/replicas")),
                json!(int_at(obj, "/status/readyReplicas")),
                age,
                json!(names),
                json!(images),
                json!(format_selector(
                    replica_selector(obj.pointer("/spec/selector")).as_ref()
                )),
            ])
        }
        Printer::StatefulSet => {
            let (names, images) = containers(obj, "/spec/template/spec/containers");
            plain(vec![
                name,
                json!(format!(
                    "{}/{}",
                    int_at(obj, "/status/readyReplicas"),
                    int_at(obj, "/spec/replicas")
                )),
                age,
                json!(names),
                json!(images),
            ])
        }
        Printer::DaemonSet => {
            let (names, images) = containers(obj, "/spec/template/spec/containers");
            plain(vec![
                name,
                json!(int_at(obj, "/status/desiredNumberScheduled")),
                json!(int_at(obj, "/status/currentNumberScheduled")),
                json!(int_at(obj, "/status/numberReady")),
                json!(int_at(obj, "/status/updatedNumberScheduled")),
                json!(int_at(obj, "/status/numberAvailable")),
                json!(format_labels(
                    obj.pointer("/spec/template/spec/nodeSelector")
                        .and_then(Value::as_object)
                )),
                age,
                json!(names),
                json!(images),
                json!(format_selector(obj.pointer("/spec/selector"))),
            ])
        }
        Printer::Job => plain(job_cells(obj, name, age, now)),
        Printer::ConfigMap => plain(vec![
            name,
            json!(len_at(obj, &["data"]) + len_at(obj, &["binaryData"])),
            age,
        ]),
        Printer::Node => plain(node_cells(obj, name, age)),
        Printer::Endpoints => plain(vec![name, json!(format_endpoints(obj)), age]),
        Printer::EndpointSlice => plain(endpoint_slice_cells(obj, name, age)),
        Printer::Lease => plain(vec![
            name,
            json!(str_at(obj, &["spec", "holderIdentity"])),
            age,
        ]),
        Printer::Binding => plain(binding_cells(obj, name, age)),
        Printer::ApiService => plain(api_service_cells(obj, name, age)),
        Printer::Default => plain(vec![
            name,
            json!(str_at(obj, &["metadata", "creationTimestamp"])),
        ]),
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    meta::str_at(v, path).unwrap_or("")
}

fn int_at(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The number of members of an object or elements of a list at `path`.
fn len_at(v: &Value, path: &[&str]) -> usize {
    let mut cur = v;
    for p in path {
        match cur.get(*p) {
            Some(c) => cur = c,
            None => return 0,
        }
    }
    match cur {
        Value::Object(m) => m.len(),
        Value::Array(a) => a.len(),
        _ => 0,
    }
}

fn array_at<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `Terminated` state facts of a container status.
fn terminated(state: Option<&Value>) -> Option<&Value> {
    state.and_then(|s| s.get("terminated"))
}

/// The cells of a Pod, as `kubectl get pods` shows them.
fn pod_row(pod: &Value, now: OffsetDateTime) -> Row {
    let phase = str_at(pod, &["status", "phase"]);
    let mut reason = meta::str_at(pod, &["status", "reason"])
        .filter(|r| !r.is_empty())
        .unwrap_or(phase)
        .to_string();
    let conditions = array_at(pod, "/status/conditions");
    if conditions.iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("PodScheduled")
            && c.get("reason").and_then(Value::as_str) == Some("SchedulingGated")
    }) {
        reason = "SchedulingGated".to_string();
    }
    let init_specs = array_at(pod, "/spec/initContainers");
    let restartable = |name: &str| {
        init_specs.iter().any(|c| {
            c.get("name").and_then(Value::as_str) == Some(name)
                && c.get("restartPolicy").and_then(Value::as_str) == Some("Always")
        })
    };
    let total = array_at(pod, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
            .count();
    let mut ready = 0;
    let mut restarts: i64 = 0;
    let mut restartable_restarts: i64 = 0;
    let mut last_restart: Option<String> = None;
    let mut last_restartable_restart: Option<String> = None;
    let later = |a: &mut Option<String>, b: Option<&str>| {
        if let Some(b) = b
            && a.as_deref().is_none_or(|a| a < b)
        {
            *a = Some(b.to_string());
        }
    };
    let mut initializing = false;
    let init_statuses = array_at(pod, "/status/initContainerStatuses");
    for (i, c) in init_statuses.iter().enumerate() {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        let count = c.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
        restarts += count;
        let finished = terminated(c.get("lastState"))
            .and_then(|t| t.get("finishedAt"))
            .and_then(Value::as_str);
        later(&mut last_restart, finished);
        if restartable(name) {
            restartable_restarts += count;
            later(&mut last_restartable_restart, finished);
        }
        let state = c.get("state");
        let term = terminated(state);
        let exit = term.and_then(|t| t.get("exitCode")).and_then(Value::as_i64);
        let waiting = state
            .and_then(|s| s.get("waiting"))
            .and_then(|w| w.get("reason"))
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty());
        if term.is_some() && exit == Some(0) {
            continue;
        }
        if restartable(name) && c.get("started").and_then(Value::as_bool) == Some(true) {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = match (term, waiting) {
            (Some(t), _) => match t
                .get("reason")
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
            {
                Some(r) => format!("Init:{r}"),
                None => match t.get("signal").and_then(Value::as_i64).filter(|s| *s != 0) {
                    Some(sig) => format!("Init:Signal:{sig}"),
                    None => format!("Init:ExitCode:{}", exit.unwrap_or(0)),
                },
            },
            (None, Some(w)) if w != "PodInitializing" => format!("Init:{w}"),
            _ => format!("Init:{i}/{}", init_specs.len()),
        };
        initializing = true;
        break;
    }
    let initialized = conditions.iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("Initialized")
            && c.get("status").and_then(Value::as_str) == Some("True")
    });
    if !initializing || initialized {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for c in array_at(pod, "/status/containerStatuses").iter().rev() {
            restarts += c.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
            later(
                &mut last_restart,
                terminated(c.get("lastState"))
                    .and_then(|t| t.get("finishedAt"))
                    .and_then(Value::as_str),
            );
            let state = c.get("state");
            let waiting = state
                .and_then(|s| s.get("waiting"))
                .and_then(|w| w.get("reason"))
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty());
            let term = terminated(state);
            if let Some(w) = waiting {
                reason = w.to_string();
            } else if let Some(t) = term {
                reason = match t
                    .get("reason")
                    .and_then(Value::as_str)
                    .filter(|r| !r.is_empty())
                {
                    Some(r) => r.to_string(),
                    None => match t.get("signal").and_then(Value::as_i64).filter(|s| *s != 0) {
                        Some(sig) => format!("Signal:{sig}"),
                        None => format!(
                            "ExitCode:{}",
                            t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
                        ),
                    },
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                && state.and_then(|s| s.get("running")).is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = conditions.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            });
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }
    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some();
    if deleting && meta::str_at(pod, &["status", "reason"]) == Some("NodeLost") {
        reason = "Unknown".to_string();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }
    let restarts_cell = match (&last_restart, restarts) {
        (Some(at), n) if n != 0 => format!("{n} ({} ago)", age::since(Some(at), now)),
        (_, n) => n.to_string(),
    };
    let ip = array_at(pod, "/status/podIPs")
        .first()
        .and_then(|p| p.get("ip"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("<none>");
    let or_none = |s: &str| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s.to_string()
        }
    };
    let gates = array_at(pod, "/spec/readinessGates");
    let gates_cell = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let holding = gates
            .iter()
            .filter(|g| {
                let t = g.get("conditionType").and_then(Value::as_str);
                conditions
                    .iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == t)
                    .and_then(|c| c.get("status"))
                    .and_then(Value::as_str)
                    == Some("True")
            })
            .count();
        format!("{holding}/{}", gates.len())
    };
    let row_conditions = match phase {
        "Succeeded" => Some(json!([{
            "type": "Completed", "status": "True", "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }])),
        "Failed" => Some(json!([{
            "type": "Completed", "status": "True", "reason": "Failed",
            "message": "The pod failed.",
        }])),
        _ => None,
    };
    Row {
        cells: vec![
            json!(str_at(pod, &["metadata", "name"])),
            json!(format!("{ready}/{total}")),
            json!(reason),
            json!(restarts_cell),
            json!(age::since(
                meta::str_at(pod, &["metadata", "creationTimestamp"]),
                now
            )),
            json!(ip),
            json!(or_none(str_at(pod, &["spec", "nodeName"]))),
            json!(or_none(str_at(pod, &["status", "nominatedNodeName"]))),
            json!(gates_cell),
        ],
        conditions: row_conditions,
    }
}

fn service_cells(svc: &Value, name: Value, age: Value) -> Vec<Value> {
    let type_ = str_at(svc, &["spec", "type"]);
    let cluster_ip = array_at(svc, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let external: Vec<&str> = array_at(svc, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external_ip = match type_ {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".to_string(),
        "LoadBalancer" => {
            let mut ips: Vec<String> = Vec::new();
            for i in array_at(svc, "/status/loadBalancer/ingress") {
                let ip = i
                    .get("ip")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .or_else(|| i.get("hostname").and_then(Value::as_str));
                if let Some(ip) = ip.filter(|s| !s.is_empty())
                    && !ips.iter().any(|x| x == ip)
                {
                    ips.push(ip.to_string());
                }
            }
            ips.extend(external.iter().map(|s| s.to_string()));
            if ips.is_empty() {
                "<pending>".to_string()
            } else {
                ips.join(",")
            }
        }
        "ExternalName" => str_at(svc, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = array_at(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("");
            match p.get("nodePort").and_then(Value::as_i64).filter(|n| *n > 0) {
                Some(np) => format!("{port}:{np}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    };
    vec![
        name,
        json!(type_),
        json!(cluster_ip),
        json!(external_ip),
        json!(ports),
        age,
        json!(format_labels(
            svc.pointer("/spec/selector").and_then(Value::as_object)
        )),
    ]
}

/// Access modes as `RWO,ROX,RWX,RWOP`, in that order.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| has(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// A StorageClass's row as kubectl prints it: the default class's name marked `(default)`, and
/// the API's defaults (`Delete`, `Immediate`, `false`) for what the object leaves out.
fn storage_class_cells(sc: &Value, age: Value) -> Vec<Value> {
    let annotation =
        |key: &str| meta::str_at(sc, &["metadata", "annotations", key]) == Some("true");
    let mut name = str_at(sc, &["metadata", "name"]).to_string();
    if annotation("storageclass.kubernetes.io/is-default-class")
        || annotation("storageclass.beta.kubernetes.io/is-default-class")
    {
        name.push_str(" (default)");
    }
    vec![
        json!(name),
        json!(str_at(sc, &["provisioner"])),
        json!(meta::str_at(sc, &["reclaimPolicy"]).unwrap_or("Delete")),
        json!(meta::str_at(sc, &["volumeBindingMode"]).unwrap_or("Immediate")),
        json!(
            sc.get("allowVolumeExpansion")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        age,
    ]
}

fn pvc_cells(pvc: &Value, name: Value, age: Value) -> Vec<Value> {
    let phase = if pvc.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        str_at(pvc, &["status", "phase"])
    };
    let volume = str_at(pvc, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            str_at(pvc, &["status", "capacity", "storage"]).to_string(),
            access_modes(array_at(pvc, "/status/accessModes")),
        )
    };
    let class = meta::str_at(pvc, &["spec", "storageClassName"])
        .or_else(|| {
            meta::str_at(
                pvc,
                &[
                    "metadata",
                    "annotations",
                    "volume.beta.kubernetes.io/storage-class",
                ],
            )
        })
        .unwrap_or("");
    let attributes = meta::str_at(pvc, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>");
    let mode = meta::str_at(pvc, &["spec", "volumeMode"]).unwrap_or("<unset>");
    vec![
        name,
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(attributes),
        age,
        json!(mode),
    ]
}

/// An Event's cells, for the core/v1 and the events.k8s.io/v1 shape alike.
fn event_cells(ev: &Value, name: Value, now: OffsetDateTime) -> Vec<Value> {
    let first_str = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| meta::str_at(ev, &[k]).filter(|s| !s.is_empty()))
    };
    let first_seen = match first_str(&["firstTimestamp", "deprecatedFirstTimestamp"]) {
        Some(t) => age::since(Some(t), now),
        None => age::since(first_str(&["eventTime"]), now),
    };
    let mut last_seen = match first_str(&["lastTimestamp", "deprecatedLastTimestamp"]) {
        Some(t) => age::since(Some(t), now),
        None => first_seen.clone(),
    };
    let mut count = ev
        .get("count")
        .or_else(|| ev.get("deprecatedCount"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(series) = ev.get("series").filter(|s| s.is_object()) {
        last_seen = age::since(series.get("lastObservedTime").and_then(Value::as_str), now);
        count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let regarding = ev
        .get("involvedObject")
        .or_else(|| ev.get("regarding"))
        .cloned()
        .unwrap_or(Value::Null);
    let kind = regarding
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_lowercase();
    let target = match regarding.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => format!("{kind}/{n}"),
        _ => kind,
    };
    let component = meta::str_at(ev, &["source", "component"])
        .filter(|s| !s.is_empty())
        .or_else(|| meta::str_at(ev, &["deprecatedSource", "component"]).filter(|s| !s.is_empty()))
        .or_else(|| meta::str_at(ev, &["reportingController"]))
        .or_else(|| meta::str_at(ev, &["reportingComponent"]))
        .unwrap_or("");
    let instance = meta::str_at(ev, &["source", "host"])
        .filter(|s| !s.is_empty())
        .or_else(|| meta::str_at(ev, &["deprecatedSource", "host"]).filter(|s| !s.is_empty()))
        .or_else(|| meta::str_at(ev, &["reportingInstance"]))
        .unwrap_or("");
    let source = if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };
    let message = meta::str_at(ev, &["message"])
        .or_else(|| meta::str_at(ev, &["note"]))
        .unwrap_or("")
        .trim()
        .to_string();
    vec![
        json!(last_seen),
        json!(str_at(ev, &["type"])),
        json!(str_at(ev, &["reason"])),
        json!(target),
        json!(str_at(&regarding, &["fieldPath"])),
        json!(source),
        json!(message),
        json!(first_seen),
        json!(count),
        name,
    ]
}

fn job_cells(job: &Value, name: Value, age: Value, now: OffsetDateTime) -> Vec<Value> {
    let succeeded = int_at(job, "/status/succeeded");
    let completions = match job.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int_at(job, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = meta::str_at(job, &["status", "startTime"]);
    let end = meta::str_at(job, &["status", "completionTime"]);
    let duration = match (start, end) {
        (None, _) => String::new(),
        (Some(s), None) => age::since(Some(s), now),
        (Some(s), Some(e)) => {
            match time::OffsetDateTime::parse(e, &time::format_description::well_known::Rfc3339) {
                Ok(end) => age::since(Some(s), end),
                Err(_) => "<invalid>".to_string(),
            }
        }
    };
    let conditions = array_at(job, "/status/conditions");
    let holds = |t: &str| {
        conditions
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
            .and_then(|c| c.get("status"))
            .and_then(Value::as_str)
            == Some("True")
    };
    let status = if holds("Complete") {
        "Complete"
    } else if holds("Failed") {
        "Failed"
    } else if job.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if holds("Suspended") {
        "Suspended"
    } else if holds("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(job, "/spec/template/spec/containers");
    vec![
        name,
        json!(status),
        json!(completions),
        json!(duration),
        age,
        json!(names),
        json!(images),
        json!(format_selector(job.pointer("/spec/selector"))),
    ]
}

fn node_cells(node: &Value, name: Value, age: Value) -> Vec<Value> {
    let mut status: Vec<String> = Vec::new();
    if let Some(ready) = array_at(node, "/status/conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
    {
        status.push(
            if ready.get("status").and_then(Value::as_str) == Some("True") {
                "Ready".to_string()
            } else {
                "NotReady".to_string()
            },
        );
    }
    if status.is_empty() {
        status.push("Unknown".to_string());
    }
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".to_string());
    }
    let mut roles: BTreeSet<String> = BTreeSet::new();
    if let Some(labels) = node.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/")
                && !role.is_empty()
            {
                roles.insert(role.to_string());
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.insert(v.to_string());
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let address = |t: &str| {
        array_at(node, "/status/addresses")
            .iter()
            .find(|a| a.get("type").and_then(Value::as_str) == Some(t))
            .and_then(|a| a.get("address"))
            .and_then(Value::as_str)
            .unwrap_or("<none>")
            .to_string()
    };
    let info = |k: &str| {
        meta::str_at(node, &["status", "nodeInfo", k])
            .filter(|s| !s.is_empty())
            .unwrap_or("<unknown>")
            .to_string()
    };
    vec![
        name,
        json!(status.join(",")),
        json!(roles),
        age,
        json!(str_at(node, &["status", "nodeInfo", "kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

/// An IP and port joined as Go's `net.JoinHostPort` joins them.
fn host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// A list of at most three items, with `+ N more...` for the rest.
fn with_more(list: Vec<String>, count: usize, empty: &str) -> String {
    const MAX: usize = 3;
    if count > MAX {
        format!("{} + {} more...", list.join(","), count - MAX)
    } else if list.is_empty() {
        empty.to_string()
    } else {
        list.join(",")
    }
}

fn format_endpoints(ep: &Value) -> String {
    let subsets = array_at(ep, "/subsets");
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut list = Vec::new();
    let mut count = 0;
    for ss in subsets {
        let addresses: Vec<&str> = array_at(ss, "/addresses")
            .iter()
            .filter_map(|a| a.get("ip").and_then(Value::as_str))
            .collect();
        let ports = array_at(ss, "/ports");
        if ports.is_empty() {
            count += addresses.len();
            list.extend(
                addresses
                    .iter()
                    .take(3usize.saturating_sub(list.len()))
                    .map(|a| a.to_string()),
            );
            continue;
        }
        for p in ports {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            count += addresses.len();
            for a in &addresses {
                if list.len() < 3 {
                    list.push(host_port(a, port));
                }
            }
        }
    }
    with_more(list, count, "")
}

fn endpoint_slice_cells(slice: &Value, name: Value, age: Value) -> Vec<Value> {
    let ports: Vec<String> = array_at(slice, "/ports")
        .iter()
        .map(|p| match p.get("port").and_then(Value::as_i64) {
            Some(n) => n.to_string(),
            None => p
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("*")
                .to_string(),
        })
        .collect();
    let port_count = ports.len();
    let addresses: Vec<String> = array_at(slice, "/endpoints")
        .iter()
        .flat_map(|e| array_at(e, "/addresses").iter())
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let address_count = addresses.len();
    vec![
        name,
        json!(str_at(slice, &["addressType"])),
        json!(with_more(
            ports.into_iter().take(3).collect(),
            port_count,
            "<unset>"
        )),
        json!(with_more(
            addresses.into_iter().take(3).collect(),
            address_count,
            "<unset>"
        )),
        age,
    ]
}

fn binding_cells(b: &Value, name: Value, age: Value) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        str_at(b, &["roleRef", "kind"]),
        str_at(b, &["roleRef", "name"])
    );
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for s in array_at(b, "/subjects") {
        let n = str_at(s, &["name"]).to_string();
        match str_at(s, &["kind"]) {
            "User" => users.push(n),
            "Group" => groups.push(n),
            "ServiceAccount" => sas.push(format!("{}/{n}", str_at(s, &["namespace"]))),
            _ => {}
        }
    }
    vec![
        name,
        json!(role),
        age,
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ]
}

fn api_service_cells(svc: &Value, name: Value, age: Value) -> Vec<Value> {
    let service = match svc.pointer("/spec/service").filter(|s| s.is_object()) {
        Some(s) => format!("{}/{}", str_at(s, &["namespace"]), str_at(s, &["name"])),
        None => "Local".to_string(),
    };
    let available = array_at(svc, "/status/conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
        .map(|c| {
            let status = str_at(c, &["status"]);
            match meta::str_at(c, &["reason"]).filter(|r| !r.is_empty() && status != "True") {
                Some(r) => format!("{status} ({r})"),
                None => status.to_string(),
            }
        })
        .unwrap_or_else(|| "Unknown".to_string());
    vec![name, json!(service), json!(available), age]
}

/// The names and images of a template's containers, comma-joined.
/// An Ingress's cells: its class, its rules' hosts (three at most, then `+ N more...`; `*`
/// when none names one), its load balancer's addresses and `80` (`80, 443` with TLS).
fn ingress_cells(ing: &Value, name: Value, age: Value) -> Vec<Value> {
    let class = ing
        .pointer("/spec/ingressClassName")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    // kubectl's formatHosts: hosts of the first rules, three at most, blank ones skipped.
    let rules = array_at(ing, "/spec/rules");
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for r in rules {
        if list.len() == 3 {
            more = true;
        }
        let h = str_at(r, &["host"]);
        if !more && !h.is_empty() {
            list.push(h);
        }
    }
    let hosts = match (list.is_empty(), more) {
        (true, _) => "*".to_string(),
        (false, true) => format!("{} + {} more...", list.join(","), rules.len() - 3),
        (false, false) => list.join(","),
    };
    let addresses: Vec<&str> = array_at(ing, "/status/loadBalancer/ingress")
        .iter()
        .map(|i| {
            let ip = str_at(i, &["ip"]);
            if ip.is_empty() {
                str_at(i, &["hostname"])
            } else {
                ip
            }
        })
        .filter(|a| !a.is_empty())
        .collect();
    let ports = if array_at(ing, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name,
        json!(class),
        json!(hosts),
        json!(addresses.join(",")),
        json!(ports),
        age,
    ]
}

/// An autoscaler's TARGETS: each metric as `current/target` (`cpu: <unknown>/80%` before
/// any is measured), three at most, then `+ N more...`; a `v1` object's CPU target alone.
fn hpa_targets(hpa: &Value) -> String {
    let unknown = || "<unknown>".to_string();
    if let Some(cpu) = hpa
        .pointer("/spec/targetCPUUtilizationPercentage")
        .and_then(Value::as_i64)
    {
        let current = hpa
            .pointer("/status/currentCPUUtilizationPercentage")
            .and_then(Value::as_i64)
            .map_or_else(unknown, |c| format!("{c}%"));
        return format!("cpu: {current}/{cpu}%");
    }
    let specs = array_at(hpa, "/spec/metrics");
    let statuses = array_at(hpa, "/status/currentMetrics");
    let mut list = Vec::new();
    for (i, m) in specs.iter().enumerate() {
        let status = statuses.get(i);
        let at = |p: &str| status.and_then(|s| s.pointer(p));
        let shown = |v: Option<&Value>| {
            v.map_or_else(unknown, |v| {
                v.as_str().map_or_else(|| v.to_string(), str::to_string)
            })
        };
        let text = match str_at(m, &["type"]) {
            "Resource" | "ContainerResource" => {
                let key = if str_at(m, &["type"]) == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let res = m.get(key).cloned().unwrap_or(Value::Null);
                let rname = str_at(&res, &["name"]);
                match res
                    .pointer("/target/averageUtilization")
                    .and_then(Value::as_i64)
                {
                    Some(u) => {
                        let current = at(&format!("/{key}/current/averageUtilization"))
                            .and_then(Value::as_i64)
                            .map_or_else(unknown, |c| format!("{c}%"));
                        format!("{rname}: {current}/{u}%")
                    }
                    None => format!(
                        "{rname}: {}/{}",
                        shown(at(&format!("/{key}/current/averageValue"))),
                        shown(res.pointer("/target/averageValue"))
                    ),
                }
            }
            "Pods" => format!(
                "{}/{}",
                shown(at("/pods/current/averageValue")),
                shown(m.pointer("/pods/target/averageValue"))
            ),
            "Object" => format!(
                "{}/{}",
                shown(at("/object/current/value")),
                shown(m.pointer("/object/target/value"))
            ),
            "External" => format!(
                "{}/{}",
                shown(at("/external/current/value")),
                shown(m.pointer("/external/target/value"))
            ),
            _ => "<unknown type>".to_string(),
        };
        list.push(text);
    }
    match list.len() {
        0 => "<none>".to_string(),
        n if n > 3 => format!("{} + {} more...", list[..3].join(", "), n - 3),
        _ => list.join(", "),
    }
}

/// A quota's cells: each resource it limits as `name: used/hard`, the `limits.*` ones in the
/// Limit column and the others in the Request column, in name order.
fn resource_quota_cells(quota: &Value, name: Value, age: Value) -> Vec<Value> {
    let mut request = Vec::new();
    let mut limit = Vec::new();
    let hard = quota.pointer("/status/hard").and_then(Value::as_object);
    let mut names: Vec<&String> = hard.map(|h| h.keys().collect()).unwrap_or_default();
    names.sort();
    for resource in names {
        let at = |part: &str| {
            quota
                .pointer(&format!("/status/{part}"))
                .and_then(|m| m.get(resource.as_str()))
                .and_then(Value::as_str)
                .unwrap_or("0")
                .to_string()
        };
        let cell = format!("{resource}: {}/{}", at("used"), at("hard"));
        if resource.split('.').next() == Some("limits") && resource.contains('.') {
            limit.push(cell);
        } else {
            request.push(cell);
        }
    }
    vec![
        name,
        age,
        json!(request.join(", ")),
        json!(limit.join(", ")),
    ]
}

fn containers(obj: &Value, pointer: &str) -> (String, String) {
    let list = array_at(obj, pointer);
    let names: Vec<&str> = list
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let images: Vec<&str> = list
        .iter()
        .map(|c| c.get("image").and_then(Value::as_str).unwrap_or(""))
        .collect();
    (names.join(","), images.join(","))
}

/// A label map as `a=b,c=d` (sorted), `<none>` when empty.
fn format_labels(labels: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    if pairs.is_empty() {
        return "<none>".to_string();
    }
    pairs.sort();
    pairs.join(",")
}

/// A `LabelSelector` as a selector string (`app=web,tier in (a,b)`), requirements sorted by
/// key; empty for a selector that selects everything.
fn selector_string(selector: Option<&Value>) -> String {
    let Some(sel) = selector.filter(|s| s.is_object()) else {
        return String::new();
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for e in array_at(sel, "/matchExpressions") {
        let key = str_at(e, &["key"]).to_string();
        let mut values: Vec<&str> = array_at(e, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match str_at(e, &["operator"]) {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key, text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// A `LabelSelector` as `metav1.FormatLabelSelector` prints it: `<none>` when empty.
/// A ReplicaSet's label selector, or a ReplicationController's map of labels as one.
fn replica_selector(selector: Option<&Value>) -> Option<Value> {
    let sel = selector?;
    if sel.get("matchLabels").is_some() || sel.get("matchExpressions").is_some() {
        Some(sel.clone())
    } else {
        Some(json!({ "matchLabels": sel }))
    }
}

pub(crate) fn format_selector(selector: Option<&Value>) -> String {
    let s = selector_string(selector);
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests;
