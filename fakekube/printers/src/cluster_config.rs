//! The columns and cells of the cluster-configuration kinds: admission webhooks and policies
//! (`admissionregistration.k8s.io`), the CSI kinds of `storage.k8s.io`, and API priority and
//! fairness (`flowcontrol.apiserver.k8s.io`), as pkg/printers/internalversion prints them.

use crate::age;
use crate::builtin::{AGE, Column, NAME, Row, col, format_selector};
use fakekube_machinery::meta;
use serde_json::{Value, json};
use time::OffsetDateTime;

const WEBHOOKS: &[Column] = &[
    NAME,
    col(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];

const POLICY: &[Column] = &[
    NAME,
    col(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined in this configuration",
    ),
    col(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE,
];

const POLICY_BINDING: &[Column] = &[
    NAME,
    col(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy binding binded to",
    ),
    col(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the configration param",
    ),
    AGE,
];

const CSI_DRIVER: &[Column] = &[
    NAME,
    col(
        "AttachRequired",
        "boolean",
        "Whether the driver needs an attach step.",
    ),
    col(
        "PodInfoOnMount",
        "boolean",
        "Whether the driver gets pod information on mount.",
    ),
    col(
        "StorageCapacity",
        "boolean",
        "Whether the scheduler considers storage capacity.",
    ),
    col(
        "TokenRequests",
        "string",
        "The audiences of the tokens the driver gets.",
    ),
    col(
        "RequiresRepublish",
        "boolean",
        "Whether volumes are published again periodically.",
    ),
    col(
        "Modes",
        "string",
        "The volume lifecycle modes the driver supports.",
    ),
    AGE,
];

const CSI_NODE: &[Column] = &[
    NAME,
    col(
        "Drivers",
        "integer",
        "Drivers indicates the number of CSI drivers registered on the node",
    ),
    AGE,
];

const CSI_STORAGE_CAPACITY: &[Column] = &[
    NAME,
    col(
        "StorageClassName",
        "string",
        "The storage class the capacity is for.",
    ),
    col("Capacity", "string", "The capacity reported."),
];

const VOLUME_ATTACHMENT: &[Column] = &[
    NAME,
    Column {
        format: "name",
        ..col("Attacher", "string", "The driver that attaches the volume.")
    },
    col("PV", "string", "The persistent volume attached."),
    col("Node", "string", "The node the volume is attached to."),
    col("Attached", "boolean", "Whether the volume is attached."),
    AGE,
];

const FLOW_SCHEMA: &[Column] = &[
    NAME,
    col(
        "PriorityLevel",
        "string",
        "The priority level the schema's requests go to.",
    ),
    col(
        "MatchingPrecedence",
        "string",
        "The schema's precedence among schemas.",
    ),
    col("DistinguisherMethod", "string", "How flows are told apart."),
    AGE,
    col(
        "MissingPL",
        "string",
        "references a broken or non-existent PriorityLevelConfiguration",
    ),
];

const PRIORITY_LEVEL: &[Column] = &[
    NAME,
    col("Type", "string", "Exempt or Limited."),
    col(
        "NominalConcurrencyShares",
        "string",
        "The level's share of the concurrency limit.",
    ),
    col("Queues", "string", "The number of queues."),
    col(
        "HandSize",
        "string",
        "The queues a flow is shuffle-sharded over.",
    ),
    col("QueueLengthLimit", "string", "The requests a queue holds."),
    AGE,
];

/// The columns of `kind` of `group`, when it is one of these kinds.
pub(crate) fn columns(group: &str, kind: &str) -> Option<&'static [Column]> {
    Some(match (group, kind) {
        ("admissionregistration.k8s.io", k) => match k {
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => WEBHOOKS,
            "ValidatingAdmissionPolicy" => POLICY,
            "ValidatingAdmissionPolicyBinding" => POLICY_BINDING,
            _ => return None,
        },
        ("storage.k8s.io", k) => match k {
            "CSIDriver" => CSI_DRIVER,
            "CSINode" => CSI_NODE,
            "CSIStorageCapacity" => CSI_STORAGE_CAPACITY,
            "VolumeAttachment" => VOLUME_ATTACHMENT,
            _ => return None,
        },
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => FLOW_SCHEMA,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => PRIORITY_LEVEL,
        _ => return None,
    })
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn count(v: &Value, pointer: &str) -> usize {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

fn flag(v: &Value, pointer: &str, default: bool) -> bool {
    v.pointer(pointer)
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

/// A number cell as the printer gives it (an integer), `<none>` when absent.
fn shown(v: &Value, pointer: &str) -> Value {
    match v.pointer(pointer) {
        Some(n @ Value::Number(_)) => n.clone(),
        _ => json!("<none>"),
    }
}

/// The cells of `obj` at `now`, when it is one of these kinds.
pub(crate) fn row(group: &str, kind: &str, obj: &Value, now: OffsetDateTime) -> Option<Row> {
    columns(group, kind)?;
    let name = json!(meta::str_at(obj, &["metadata", "name"]).unwrap_or_default());
    let age = json!(age::since(
        meta::str_at(obj, &["metadata", "creationTimestamp"]),
        now
    ));
    let cells = match kind {
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
            vec![name, json!(count(obj, "/webhooks")), age]
        }
        "ValidatingAdmissionPolicy" => {
            let param_kind = match obj.pointer("/spec/paramKind").filter(|p| !p.is_null()) {
                Some(p) => format!(
                    "{}/{}",
                    text(p, "/apiVersion").unwrap_or(""),
                    text(p, "/kind").unwrap_or("")
                ),
                None => "<unset>".to_string(),
            };
            vec![
                name,
                json!(count(obj, "/spec/validations")),
                json!(param_kind),
                age,
            ]
        }
        "ValidatingAdmissionPolicyBinding" => {
            let param = match obj.pointer("/spec/paramRef").filter(|p| !p.is_null()) {
                None => "<unset>".to_string(),
                Some(p) => match (text(p, "/name"), text(p, "/namespace")) {
                    (Some(n), Some(ns)) if !n.is_empty() && !ns.is_empty() => format!("{ns}/{n}"),
                    (Some(n), _) if !n.is_empty() => format!("*/{n}"),
                    _ if p.get("selector").is_some_and(|s| !s.is_null()) => {
                        format_selector(p.get("selector"))
                    }
                    _ => "<unset>".to_string(),
                },
            };
            vec![
                name,
                json!(text(obj, "/spec/policyName").unwrap_or("")),
                json!(param),
                age,
            ]
        }
        "CSIDriver" => {
            let audiences: Option<Vec<&str>> = obj
                .pointer("/spec/tokenRequests")
                .and_then(Value::as_array)
                .map(|l| l.iter().filter_map(|t| text(t, "/audience")).collect());
            let modes: Vec<&str> = obj
                .pointer("/spec/volumeLifecycleModes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            vec![
                name,
                json!(flag(obj, "/spec/attachRequired", true)),
                json!(flag(obj, "/spec/podInfoOnMount", false)),
                json!(flag(obj, "/spec/storageCapacity", false)),
                json!(audiences.map_or("<unset>".to_string(), |a| a.join(","))),
                json!(flag(obj, "/spec/requiresRepublish", false)),
                json!(if modes.is_empty() {
                    "<none>".to_string()
                } else {
                    modes.join(",")
                }),
                age,
            ]
        }
        "CSINode" => vec![name, json!(count(obj, "/spec/drivers")), age],
        "CSIStorageCapacity" => vec![
            name,
            json!(text(obj, "/storageClassName").unwrap_or("")),
            json!(text(obj, "/capacity").unwrap_or("<unset>")),
        ],
        "VolumeAttachment" => vec![
            name,
            json!(text(obj, "/spec/attacher").unwrap_or("")),
            json!(text(obj, "/spec/source/persistentVolumeName").unwrap_or("")),
            json!(text(obj, "/spec/nodeName").unwrap_or("")),
            json!(flag(obj, "/status/attached", false)),
            age,
        ],
        "FlowSchema" => {
            let dangling = obj
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|c| text(c, "/type") == Some("Dangling"))
                .and_then(|c| text(c, "/status"))
                .unwrap_or("?");
            vec![
                name,
                json!(text(obj, "/spec/priorityLevelConfiguration/name").unwrap_or("")),
                json!(
                    obj.pointer("/spec/matchingPrecedence")
                        .and_then(Value::as_i64)
                        .unwrap_or(0)
                ),
                json!(text(obj, "/spec/distinguisherMethod/type").unwrap_or("<none>")),
                age,
                json!(dangling),
            ]
        }
        "PriorityLevelConfiguration" => {
            let queuing = "/spec/limited/limitResponse/queuing";
            vec![
                name,
                json!(text(obj, "/spec/type").unwrap_or("")),
                shown(obj, "/spec/limited/nominalConcurrencyShares"),
                shown(obj, &format!("{queuing}/queues")),
                shown(obj, &format!("{queuing}/handSize")),
                shown(obj, &format!("{queuing}/queueLengthLimit")),
                age,
            ]
        }
        _ => return None,
    };
    Some(Row {
        cells,
        conditions: None,
    })
}
