//! The core Sandbox controller (`controllers/sandbox_controller.go` upstream).
//!
//! One pass over a Sandbox, in the upstream order: expiry first (`spec.shutdownTime`), else the
//! children — PVCs from `volumeClaimTemplates` (`<template>-<sandbox>`), the Pod (named after
//! the Sandbox, filtered template labels and annotations, the name-hash label, a controller
//! ownerReference), the headless Service (`spec.service`) — then the conditions `Suspended`,
//! `Finished`, `PodScheduled` and `Ready` with `observedGeneration`, and the status fields
//! `serviceFQDN`, `service`, `selector`, `podIPs` and `nodeName`, written only when they change.
//!
//! `operatingMode: Suspended` deletes the owned Pod and keeps the Service and PVCs; `Running`
//! again creates a new Pod with the same name. An expired Sandbox is marked Ready False /
//! `SandboxExpired`, then loses its Pod and Service, and is deleted (`shutdownPolicy: Delete`)
//! or keeps only its conditions (`Retain`); moving `shutdownTime` later revives it.
//!
//! Two or more owned Pods give one `MultiplePods` Warning Event per episode.
//!
//! Expiry is checked as upstream's `checkSandboxExpiry` does: a pass before `shutdownTime`
//! asks to look again after `max(remaining, 2 s)` ([`EXPIRY_RECHECK_FLOOR`]), so a Sandbox
//! expires at the first pass at or after its `shutdownTime`: up to 2 s late when nothing else
//! touches it (a 1 s TTL set on a quiet Sandbox fires after 2 s), at once when a change to the
//! Sandbox or its Pod makes a pass after `shutdownTime`.
//!
//! Differences from upstream: the Pod spec is never updated after creation (as upstream); there
//! is no write-behind deferral of Pod metadata patches.

use super::{
    ADOPTABLE_LABEL, CONFLICT_RETRY, CREATED_BY_LABEL, Cluster, Cond, EXTENSIONS_GROUP,
    NAME_HASH_LABEL, POD_NAME_ANNOTATION, PROPAGATED_ANNOTATIONS, PROPAGATED_LABELS, Requeue,
    TEMPLATE_REF_HASH_LABEL, TRACE_ANNOTATION, WARM_POOL_LABEL, WriteError, annotation, at,
    conditions, controlled_by, controller_of, controller_ref, create, delete, deleting,
    find_condition, generation, label, modify, name_hash, owner_group, owner_kind, owner_name,
    owner_uid, parse_time, remove_condition, set_condition, set_controller_ref, set_map_key,
    str_at, string_map, until,
};
use crate::client::{Delete, Kind, Part};
use crate::events::EventType;
use crate::meta::meta_str;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// Why a child of a Sandbox could not be reconciled. The text is what the Ready condition
/// reports after "Error seen: ".
#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    /// The object is controlled by someone else.
    #[error("{noun} \"{name}\" is owned by {controller}, not by sandbox \"{sandbox}\"")]
    OwnedByOther {
        /// `pod`, `service` or `PVC`.
        noun: &'static str,
        /// The object's name.
        name: String,
        /// The controller, as `<kind>/<name> (UID: <uid>)`.
        controller: String,
        /// The Sandbox.
        sandbox: String,
    },
    /// An unowned object lacks the labels that allow adopting it.
    #[error(
        "cannot adopt unowned {noun} \"{name}\": missing required pool authorization label (\"{ADOPTABLE_LABEL}\") or sandbox tracking label (\"{NAME_HASH_LABEL}\")"
    )]
    NotAdoptable {
        /// `pod`, `service` or `PVC`.
        noun: &'static str,
        /// The object's name.
        name: String,
    },
    /// An unowned Service is not headless.
    #[error(
        "cannot adopt service \"{name}\": ClusterIP is \"{ip}\" (expected \"None\", field is immutable)"
    )]
    ClusterIp {
        /// The Service.
        name: String,
        /// Its cluster IP.
        ip: String,
    },
    /// More than one Pod is controlled by the Sandbox.
    #[error(
        "multiple Pods ({0}) are controlled by this Sandbox; refusing to choose or create a Pod"
    )]
    MultiplePods(usize),
    /// A create was refused.
    #[error("{0}")]
    Create(String),
    /// An update or delete failed.
    #[error("{step}: {cause}")]
    Write {
        /// What was being done.
        step: &'static str,
        /// Why it failed.
        cause: WriteError,
    },
}

impl SandboxError {
    fn write(step: &'static str, cause: WriteError) -> Self {
        SandboxError::Write { step, cause }
    }

    fn is_conflict(&self) -> bool {
        matches!(self, SandboxError::Write { cause, .. } if cause.is_conflict())
    }
}

/// A Sandbox's `status`, as upstream's struct (empty fields are omitted when written).
#[derive(Debug, Clone, PartialEq, Default)]
struct Status {
    service_fqdn: String,
    service: String,
    conditions: Vec<Value>,
    selector: String,
    pod_ips: Vec<String>,
    node_name: String,
}

impl Status {
    fn read(obj: &Value) -> Self {
        let s = |k: &str| str_at(obj, &["status", k]).unwrap_or("").to_string();
        Status {
            service_fqdn: s("serviceFQDN"),
            service: s("service"),
            conditions: conditions(obj),
            selector: s("selector"),
            pod_ips: at(obj, &["status", "podIPs"])
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            node_name: s("nodeName"),
        }
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: &str| {
            if !v.is_empty() {
                m.insert(k.into(), json!(v));
            }
        };
        put("serviceFQDN", &self.service_fqdn);
        put("service", &self.service);
        if !self.conditions.is_empty() {
            m.insert("conditions".into(), json!(self.conditions));
        }
        if !self.selector.is_empty() {
            m.insert("selector".into(), json!(self.selector));
        }
        if !self.pod_ips.is_empty() {
            m.insert("podIPs".into(), json!(self.pod_ips));
        }
        if !self.node_name.is_empty() {
            m.insert("nodeName".into(), json!(self.node_name));
        }
        Value::Object(m)
    }

    fn ready_true(&self) -> bool {
        find_condition(&self.conditions, "Ready")
            .and_then(|c| c.get("status"))
            .and_then(Value::as_str)
            == Some("True")
    }
}

/// How an object relates to a Sandbox.
enum Ownership<'a> {
    /// Its controller is the Sandbox.
    Owned,
    /// It has no controller.
    Unowned,
    /// Its controller is something else (this reference).
    Other(&'a Value),
}

fn ownership<'a>(obj: &'a Value, sb: &Value) -> Ownership<'a> {
    match controller_of(obj) {
        None => Ownership::Unowned,
        Some(r) if owner_uid(r) == meta_str(sb, "uid").unwrap_or("") => Ownership::Owned,
        Some(r) => Ownership::Other(r),
    }
}

fn owned_by_other(noun: &'static str, name: &str, r: &Value, sb: &Value) -> SandboxError {
    SandboxError::OwnedByOther {
        noun,
        name: name.to_string(),
        controller: format!(
            "{}/{} (UID: {})",
            owner_kind(r),
            owner_name(r),
            owner_uid(r)
        ),
        sandbox: meta_str(sb, "name").unwrap_or("").to_string(),
    }
}

/// Whether an unowned object may be adopted: `adoptable=true` or the matching tracking label.
fn adoptable(obj: &Value, hash: &str) -> bool {
    label(obj, ADOPTABLE_LABEL) == Some("true") || label(obj, NAME_HASH_LABEL) == Some(hash)
}

/// The reserved key prefixes a pod template may not set on the Pod.
fn system_key(key: &str) -> bool {
    key.starts_with("agents.x-k8s.io/") || key.starts_with("extensions.agents.x-k8s.io/")
}

fn system_annotation(key: &str) -> bool {
    system_key(key) || key == TRACE_ANNOTATION
}

/// `created-by` as it lands on a Pod: the known clients, else `unknown`.
fn normalize_created_by(v: &str) -> &str {
    match v {
        "go-client" | "python-client" | "controller" => v,
        _ => "unknown",
    }
}

/// The extension labels a Pod carries while its Sandbox is controlled by an extension kind.
fn extension_pod_labels(sb: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(r) = controller_of(sb) else {
        return out;
    };
    if owner_group(r) != EXTENSIONS_GROUP {
        return out;
    }
    if owner_kind(r) == "SandboxWarmPool"
        && let Some(v) = label(sb, WARM_POOL_LABEL).filter(|v| !v.is_empty())
    {
        out.insert(WARM_POOL_LABEL.to_string(), v.to_string());
    }
    if let Some(v) = label(sb, TEMPLATE_REF_HASH_LABEL).filter(|v| !v.is_empty()) {
        out.insert(TEMPLATE_REF_HASH_LABEL.to_string(), v.to_string());
    }
    out
}

/// The shortest wait before a Sandbox that has not expired yet is looked at again
/// (upstream's `checkSandboxExpiry` requeues after `max(remaining, 2s)`).
pub(crate) const EXPIRY_RECHECK_FLOOR: Duration = Duration::from_secs(2);

/// Reconciles one Sandbox; returns when to look again without a change.
pub(crate) fn reconcile(cluster: Cluster<'_>, ns: &str, name: &str) -> Requeue {
    let mut sb = cluster.api.get(Kind::Sandbox, ns, name)?;
    if deleting(&sb) {
        return None;
    }
    let old = Status::read(&sb);
    let mut st = old.clone();
    let gen_ = generation(&sb);
    let shutdown = str_at(&sb, &["spec", "shutdownTime"]).and_then(parse_time);
    let now = cluster.api.clock().now_utc();
    if shutdown.is_some_and(|t| now >= t) {
        if !marked_expired(&st) {
            set_expired(&mut st, gen_, &cluster.now());
            return match write_status(cluster, &sb, &old, &st) {
                Ok(()) => Some(Duration::ZERO),
                Err(e) => e.is_conflict().then_some(CONFLICT_RETRY),
            };
        }
        let (gone, errors) = handle_expiry(cluster, &sb, &mut st, gen_);
        if gone {
            return None;
        }
        let wrote = write_status(cluster, &sb, &old, &st);
        let conflict = errors.iter().any(SandboxError::is_conflict)
            || wrote.as_ref().is_err_and(WriteError::is_conflict);
        return conflict.then_some(CONFLICT_RETRY);
    }
    let errors = reconcile_children(cluster, &mut sb, &mut st);
    let mut requeue = None;
    if let Some(t) = shutdown {
        let now = cluster.api.clock().now_utc();
        if now >= t {
            set_expired(&mut st, gen_, &cluster.now());
            requeue = Some(Duration::ZERO);
        } else {
            requeue = Some(until(now, t).max(EXPIRY_RECHECK_FLOOR));
        }
    }
    let wrote = write_status(cluster, &sb, &old, &st);
    if let Err(e) = &wrote {
        tracing::debug!(sandbox = name, error = %e, "writing sandbox status");
    }
    if errors.iter().any(SandboxError::is_conflict)
        || wrote.as_ref().is_err_and(WriteError::is_conflict)
    {
        requeue = Some(requeue.map_or(CONFLICT_RETRY, |r| r.min(CONFLICT_RETRY)));
    }
    requeue
}

fn marked_expired(st: &Status) -> bool {
    find_condition(&st.conditions, "Ready")
        .and_then(|c| c.get("reason"))
        .and_then(Value::as_str)
        == Some("SandboxExpired")
}

fn set_expired(st: &mut Status, gen_: i64, now: &str) {
    set_condition(
        &mut st.conditions,
        Cond::new(
            "Ready",
            "False",
            "SandboxExpired",
            "Sandbox has expired",
            gen_,
        ),
        now,
    );
    remove_condition(&mut st.conditions, "PodScheduled");
}

/// Deletes the owned Pod and Service of an expired Sandbox, then the Sandbox itself (policy
/// `Delete`) or its live status (`Retain`). Returns whether the Sandbox was deleted.
fn handle_expiry(
    cluster: Cluster<'_>,
    sb: &Value,
    st: &mut Status,
    gen_: i64,
) -> (bool, Vec<SandboxError>) {
    let ns = meta_str(sb, "namespace").unwrap_or("");
    let name = meta_str(sb, "name").unwrap_or("");
    let mut errors = Vec::new();
    let pod_name = resolve_pod_name(sb);
    if let Some(pod) = cluster.api.get(Kind::Pod, ns, &pod_name)
        && controlled_by(&pod, sb)
        && let Err(e) = delete(cluster, Kind::Pod, ns, &pod_name, &Delete::default())
    {
        errors.push(SandboxError::write(
            "failed to delete pod",
            WriteError::Api(e),
        ));
    }
    if let Some(svc) = cluster.api.get(Kind::Service, ns, name)
        && controlled_by(&svc, sb)
        && let Err(e) = delete(cluster, Kind::Service, ns, name, &Delete::default())
    {
        errors.push(SandboxError::write(
            "failed to delete service",
            WriteError::Api(e),
        ));
    }
    if str_at(sb, &["spec", "shutdownPolicy"]) == Some("Delete") {
        match delete(cluster, Kind::Sandbox, ns, name, &Delete::default()) {
            Ok(()) => return (true, errors),
            Err(e) => errors.push(SandboxError::write(
                "failed to delete sandbox",
                WriteError::Api(e),
            )),
        }
    }
    if errors.is_empty() {
        *st = Status {
            conditions: std::mem::take(&mut st.conditions),
            ..Status::default()
        };
        set_condition(
            &mut st.conditions,
            Cond::new(
                "Ready",
                "False",
                "SandboxExpired",
                "Sandbox has expired",
                gen_,
            ),
            &cluster.now(),
        );
    }
    (false, errors)
}

/// Writes the status when it changed. A change of `nodeName` alone waits for the next write
/// unless the Sandbox is Ready.
fn write_status(
    cluster: Cluster<'_>,
    sb: &Value,
    old: &Status,
    st: &Status,
) -> Result<(), WriteError> {
    if old == st {
        return Ok(());
    }
    let only_node = old.node_name != st.node_name && {
        let mut scratch = st.clone();
        scratch.node_name = old.node_name.clone();
        scratch == *old
    };
    if only_node && !st.ready_true() {
        return Ok(());
    }
    let ns = meta_str(sb, "namespace").unwrap_or("");
    let name = meta_str(sb, "name").unwrap_or("");
    let status = st.to_value();
    modify(cluster, Kind::Sandbox, ns, name, Part::Status, |v| {
        if let Some(o) = v.as_object_mut() {
            o.insert("status".into(), status.clone());
        }
    })
    .map(|_| ())
}

fn resolve_pod_name(sb: &Value) -> String {
    annotation(sb, POD_NAME_ANNOTATION)
        .filter(|n| !n.is_empty())
        .or_else(|| meta_str(sb, "name"))
        .unwrap_or("")
        .to_string()
}

/// PVCs, Pod and Service, then the status fields and conditions they give.
fn reconcile_children(
    cluster: Cluster<'_>,
    sb: &mut Arc<Value>,
    st: &mut Status,
) -> Vec<SandboxError> {
    let name = meta_str(sb, "name").unwrap_or("").to_string();
    let hash = name_hash(&name);
    let mut errors = Vec::new();
    if let Err(e) = reconcile_pvcs(cluster, sb, &hash) {
        errors.push(e);
    }
    let (pod, pod_err) = reconcile_pod(cluster, sb, &hash);
    let conflict = matches!(pod_err, Some(SandboxError::MultiplePods(_)));
    if let Some(e @ SandboxError::MultiplePods(_)) = &pod_err {
        // Once per episode: not again while Ready already says MultiplePods.
        let said = find_condition(&st.conditions, "Ready")
            .and_then(|c| c.get("reason"))
            .and_then(Value::as_str)
            == Some("MultiplePods");
        if !said {
            cluster.recorders.sandbox.emit(
                cluster.api,
                sb,
                EventType::Warning,
                "MultiplePods",
                "Reconciling",
                &e.to_string(),
            );
        }
    }
    match &pod {
        None => {
            st.pod_ips.clear();
            st.node_name.clear();
        }
        Some(p) => {
            st.selector = format!("{NAME_HASH_LABEL}={hash}");
            if controlled_by(p, sb) {
                st.pod_ips = pod_ips(p);
                st.node_name = str_at(p, &["spec", "nodeName"]).unwrap_or("").to_string();
            } else {
                st.pod_ips.clear();
                st.node_name.clear();
            }
        }
    }
    let had_pod_err = pod_err.is_some();
    if let Some(e) = pod_err {
        errors.push(e);
    }
    let svc = if conflict {
        None
    } else {
        let (svc, svc_err) = reconcile_service(cluster, sb, &hash, st);
        if let Some(e) = svc_err {
            errors.push(e);
        }
        svc
    };
    let gen_ = generation(sb);
    let mut computed = vec![suspended_condition(sb, pod.as_deref(), had_pod_err, gen_)];
    if let Some(c) = finished_condition(sb, pod.as_deref(), gen_) {
        computed.push(c);
    }
    if let Some(c) = pod_scheduled_condition(sb, pod.as_deref(), had_pod_err, gen_) {
        computed.push(c);
    }
    computed.push(ready_condition(
        sb,
        &errors,
        svc.is_some(),
        pod.as_deref(),
        gen_,
    ));
    let mut finished = false;
    let mut scheduled = false;
    for c in computed {
        finished |= c.kind == "Finished";
        scheduled |= c.kind == "PodScheduled";
        set_condition(&mut st.conditions, c, &cluster.now());
    }
    if !finished {
        remove_condition(&mut st.conditions, "Finished");
    }
    if !scheduled {
        remove_condition(&mut st.conditions, "PodScheduled");
    }
    errors
}

fn pod_ips(pod: &Value) -> Vec<String> {
    at(pod, &["status", "podIPs"])
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("ip").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn pod_phase(pod: &Value) -> &str {
    str_at(pod, &["status", "phase"]).unwrap_or("")
}

fn pod_condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a Value> {
    at(pod, &["status", "conditions"])
        .and_then(Value::as_array)
        .and_then(|a| find_condition(a, kind))
}

fn reconcile_pvcs(cluster: Cluster<'_>, sb: &Value, hash: &str) -> Result<(), SandboxError> {
    let ns = meta_str(sb, "namespace").unwrap_or("");
    let sb_name = meta_str(sb, "name").unwrap_or("");
    let vcts = at(sb, &["spec", "volumeClaimTemplates"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for vct in &vcts {
        let vname = str_at(vct, &["metadata", "name"]).unwrap_or("");
        let pvc_name = format!("{vname}-{sb_name}");
        if let Some(pvc) = cluster.api.get(Kind::PersistentVolumeClaim, ns, &pvc_name) {
            match ownership(&pvc, sb) {
                Ownership::Other(r) => return Err(owned_by_other("PVC", &pvc_name, r, sb)),
                Ownership::Unowned => {
                    if !adoptable(&pvc, hash) {
                        return Err(SandboxError::NotAdoptable {
                            noun: "PVC",
                            name: pvc_name,
                        });
                    }
                    modify(
                        cluster,
                        Kind::PersistentVolumeClaim,
                        ns,
                        &pvc_name,
                        Part::Main,
                        |v| {
                            set_controller_ref(v, Kind::Sandbox, sb);
                        },
                    )
                    .map_err(|e| {
                        SandboxError::write("failed to patch PVC with owner reference", e)
                    })?;
                }
                Ownership::Owned => {}
            }
            continue;
        }
        let mut labels = string_map(vct, &["metadata", "labels"]);
        labels.insert(NAME_HASH_LABEL.into(), hash.into());
        let mut md = json!({
            "name": pvc_name,
            "namespace": ns,
            "labels": labels,
            "ownerReferences": [controller_ref(Kind::Sandbox, sb)],
        });
        let annotations = string_map(vct, &["metadata", "annotations"]);
        if !annotations.is_empty() {
            md["annotations"] = json!(annotations);
        }
        let pvc = json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": md,
            "spec": vct.get("spec").cloned().unwrap_or_else(|| json!({})),
        });
        create(cluster, Kind::PersistentVolumeClaim, ns, pvc)
            .map_err(|e| SandboxError::Create(e.message))?;
    }
    Ok(())
}

/// Removes the pod-name annotation from the Sandbox when present.
fn clear_pod_name(cluster: Cluster<'_>, sb: &mut Arc<Value>) -> Result<(), SandboxError> {
    if at(sb, &["metadata", "annotations", POD_NAME_ANNOTATION]).is_none() {
        return Ok(());
    }
    let ns = meta_str(sb, "namespace").unwrap_or("").to_string();
    let name = meta_str(sb, "name").unwrap_or("").to_string();
    match modify(cluster, Kind::Sandbox, &ns, &name, Part::Main, |v| {
        set_map_key(v, &["metadata", "annotations"], POD_NAME_ANNOTATION, None);
    }) {
        Ok(Some(now)) => {
            *sb = now;
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => Err(SandboxError::write(
            "failed to clear pod name annotation",
            e,
        )),
    }
}

/// Records the Pod's name on the Sandbox unless it already names another Pod.
fn ensure_pod_name(
    cluster: Cluster<'_>,
    sb: &mut Arc<Value>,
    pod_name: &str,
) -> Result<(), SandboxError> {
    let current = annotation(sb, POD_NAME_ANNOTATION).unwrap_or("");
    if current == pod_name || !current.is_empty() {
        return Ok(());
    }
    let ns = meta_str(sb, "namespace").unwrap_or("").to_string();
    let name = meta_str(sb, "name").unwrap_or("").to_string();
    match modify(cluster, Kind::Sandbox, &ns, &name, Part::Main, |v| {
        set_map_key(
            v,
            &["metadata", "annotations"],
            POD_NAME_ANNOTATION,
            Some(pod_name),
        );
    }) {
        Ok(Some(now)) => {
            *sb = now;
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => Err(SandboxError::write("failed to set pod name annotation", e)),
    }
}

type PodResult = (Option<Arc<Value>>, Option<SandboxError>);

fn reconcile_pod(cluster: Cluster<'_>, sb: &mut Arc<Value>, hash: &str) -> PodResult {
    let ns = meta_str(sb, "namespace").unwrap_or("").to_string();
    let sb_name = meta_str(sb, "name").unwrap_or("").to_string();
    let uid = meta_str(sb, "uid").unwrap_or("");
    let mut owned: Vec<Arc<Value>> = cluster
        .index
        .pods_of(uid)
        .filter(|(pns, _)| *pns == ns)
        .filter_map(|(pns, pname)| cluster.api.get(Kind::Pod, pns, pname))
        .filter(|p| label(p, NAME_HASH_LABEL) == Some(hash) && controlled_by(p, sb))
        .collect();
    let pod_name = resolve_pod_name(sb);
    let annotated = at(sb, &["metadata", "annotations", POD_NAME_ANNOTATION]).is_some();
    let mut pod = cluster.api.get(Kind::Pod, &ns, &pod_name);
    if pod.is_none()
        && annotated
        && let Err(e) = clear_pod_name(cluster, sb)
    {
        return (None, Some(e));
    }
    if let Some(p) = &pod
        && controlled_by(p, sb)
        && !owned
            .iter()
            .any(|o| meta_str(o, "name") == meta_str(p, "name"))
    {
        owned.push(p.clone());
    }
    if owned.len() > 1 {
        return (None, Some(SandboxError::MultiplePods(owned.len())));
    }
    if let Some(only) = owned.first()
        && pod
            .as_ref()
            .is_none_or(|p| meta_str(p, "name") != meta_str(only, "name"))
    {
        if at(sb, &["metadata", "annotations", POD_NAME_ANNOTATION]).is_some()
            && let Err(e) = clear_pod_name(cluster, sb)
        {
            return (None, Some(e));
        }
        pod = Some(only.clone());
    }
    if str_at(sb, &["spec", "operatingMode"]) == Some("Suspended") {
        if let Some(p) = &pod
            && controlled_by(p, sb)
        {
            if !deleting(p) {
                let pname = meta_str(p, "name").unwrap_or("");
                if let Err(e) = delete(cluster, Kind::Pod, &ns, pname, &Delete::default()) {
                    return (
                        pod,
                        Some(SandboxError::write(
                            "failed to delete pod",
                            WriteError::Api(e),
                        )),
                    );
                }
            }
            // The deleted Pod is still reported this pass: the Sandbox is suspending.
            return (pod, None);
        }
        if let Err(e) = clear_pod_name(cluster, sb) {
            return (pod, Some(e));
        }
        return (pod, None);
    }
    if let Some(p) = pod {
        return reconcile_existing_pod(cluster, sb, p, hash);
    }
    let pod = build_pod(sb, hash, Kind::Sandbox);
    match create(cluster, Kind::Pod, &ns, pod) {
        Ok(created) => {
            if let Err(e) = ensure_pod_name(cluster, sb, &sb_name) {
                return (None, Some(e));
            }
            (Some(created), None)
        }
        Err(e) if e.code == 409 => match cluster.api.get(Kind::Pod, &ns, &sb_name) {
            Some(existing) => reconcile_existing_pod(cluster, sb, existing, hash),
            None => (
                None,
                Some(SandboxError::Create(format!(
                    "pod already exists but failed to fetch: {}",
                    e.message
                ))),
            ),
        },
        Err(e) => (None, Some(SandboxError::Create(e.message))),
    }
}

fn build_pod(sb: &Value, hash: &str, sandbox_rt: Kind) -> Value {
    let tpl_labels = string_map(sb, &["spec", "podTemplate", "metadata", "labels"]);
    let tpl_annotations = string_map(sb, &["spec", "podTemplate", "metadata", "annotations"]);
    let mut labels = BTreeMap::new();
    let mut label_keys = Vec::new();
    for (k, v) in &tpl_labels {
        if !system_key(k) {
            labels.insert(k.clone(), v.clone());
            label_keys.push(k.clone());
        }
    }
    labels.insert(NAME_HASH_LABEL.to_string(), hash.to_string());
    labels.extend(extension_pod_labels(sb));
    if let Some(v) = label(sb, CREATED_BY_LABEL).filter(|v| !v.is_empty()) {
        labels.insert(CREATED_BY_LABEL.into(), normalize_created_by(v).into());
    }
    let mut annotations = BTreeMap::new();
    let mut annotation_keys = Vec::new();
    for (k, v) in &tpl_annotations {
        if !system_annotation(k) {
            annotations.insert(k.clone(), v.clone());
            annotation_keys.push(k.clone());
        }
    }
    if !label_keys.is_empty() {
        annotations.insert(PROPAGATED_LABELS.into(), label_keys.join(","));
    }
    if !annotation_keys.is_empty() {
        annotations.insert(PROPAGATED_ANNOTATIONS.into(), annotation_keys.join(","));
    }
    let sb_name = meta_str(sb, "name").unwrap_or("");
    let mut spec = at(sb, &["spec", "podTemplate", "spec"])
        .cloned()
        .unwrap_or_else(|| json!({}));
    let vcts = at(sb, &["spec", "volumeClaimTemplates"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !vcts.is_empty()
        && let Some(o) = spec.as_object_mut()
    {
        let pvc_vols: Vec<Value> = vcts
            .iter()
            .map(|vct| {
                let vname = str_at(vct, &["metadata", "name"]).unwrap_or("");
                json!({
                    "name": vname,
                    "persistentVolumeClaim": { "claimName": format!("{vname}-{sb_name}") },
                })
            })
            .collect();
        let names: BTreeSet<&str> = pvc_vols
            .iter()
            .filter_map(|v| v.get("name").and_then(Value::as_str))
            .collect();
        let mut volumes: Vec<Value> = o
            .get("volumes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter(|v| {
                        !names.contains(v.get("name").and_then(Value::as_str).unwrap_or(""))
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        volumes.extend(pvc_vols.iter().cloned());
        o.insert("volumes".into(), json!(volumes));
    }
    let mut md = json!({
        "name": sb_name,
        "namespace": meta_str(sb, "namespace").unwrap_or(""),
        "labels": labels,
        "ownerReferences": [controller_ref(sandbox_rt, sb)],
    });
    if !annotations.is_empty() {
        md["annotations"] = json!(annotations);
    }
    json!({ "apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec })
}

fn reconcile_existing_pod(
    cluster: Cluster<'_>,
    sb: &mut Arc<Value>,
    pod: Arc<Value>,
    hash: &str,
) -> PodResult {
    let ns = meta_str(sb, "namespace").unwrap_or("").to_string();
    let pname = meta_str(&pod, "name").unwrap_or("").to_string();
    let adopt = match ownership(&pod, sb) {
        Ownership::Other(r) => {
            let err = owned_by_other("pod", &pname, r, sb);
            if let Err(e) = clear_pod_name(cluster, sb) {
                return (None, Some(e));
            }
            return (None, Some(err));
        }
        Ownership::Unowned => {
            if !adoptable(&pod, hash) {
                return (
                    None,
                    Some(SandboxError::NotAdoptable {
                        noun: "pod",
                        name: pname,
                    }),
                );
            }
            true
        }
        Ownership::Owned => false,
    };
    let sb_now = sb.clone();
    let updated = match modify(cluster, Kind::Pod, &ns, &pname, Part::Main, |v| {
        if adopt {
            set_controller_ref(v, Kind::Sandbox, &sb_now);
        }
        update_pod_metadata(v, &sb_now, hash);
    }) {
        Ok(p) => p.unwrap_or(pod),
        Err(e) => return (None, Some(SandboxError::write("failed to patch pod", e))),
    };
    if let Err(e) = ensure_pod_name(cluster, sb, &pname) {
        return (None, Some(e));
    }
    (Some(updated), None)
}

/// Brings an existing Pod's labels and annotations in line with the Sandbox's pod template,
/// removing keys the template dropped since they were propagated.
fn update_pod_metadata(pod: &mut Value, sb: &Value, hash: &str) {
    let tpl_labels = string_map(sb, &["spec", "podTemplate", "metadata", "labels"]);
    let tpl_annotations = string_map(sb, &["spec", "podTemplate", "metadata", "annotations"]);
    let mut labels = string_map(pod, &["metadata", "labels"]);
    let mut annotations = string_map(pod, &["metadata", "annotations"]);
    let labels_before = labels.clone();
    let annotations_before = annotations.clone();
    labels.insert(NAME_HASH_LABEL.into(), hash.into());
    let mut label_keys = Vec::new();
    for (k, v) in &tpl_labels {
        if system_key(k) {
            continue;
        }
        labels.insert(k.clone(), v.clone());
        label_keys.push(k.clone());
    }
    let propagated = annotations
        .get(PROPAGATED_LABELS)
        .cloned()
        .unwrap_or_default();
    for k in propagated.split(',').filter(|k| !k.is_empty()) {
        if system_key(k) {
            if k != NAME_HASH_LABEL {
                labels.remove(k);
            }
            continue;
        }
        if !tpl_labels.contains_key(k) {
            labels.remove(k);
        }
    }
    let ext = extension_pod_labels(sb);
    for key in [WARM_POOL_LABEL, TEMPLATE_REF_HASH_LABEL] {
        match ext.get(key) {
            Some(v) => {
                labels.insert(key.into(), v.clone());
            }
            None => {
                labels.remove(key);
            }
        }
    }
    match label(sb, CREATED_BY_LABEL).filter(|v| !v.is_empty()) {
        Some(v) => {
            labels.insert(CREATED_BY_LABEL.into(), normalize_created_by(v).into());
        }
        None => {
            labels.remove(CREATED_BY_LABEL);
        }
    }
    let mut annotation_keys = Vec::new();
    for (k, v) in &tpl_annotations {
        if system_annotation(k) {
            continue;
        }
        annotations.insert(k.clone(), v.clone());
        annotation_keys.push(k.clone());
    }
    let propagated = annotations
        .get(PROPAGATED_ANNOTATIONS)
        .cloned()
        .unwrap_or_default();
    for k in propagated.split(',').filter(|k| !k.is_empty()) {
        if system_annotation(k) {
            if k != PROPAGATED_LABELS && k != PROPAGATED_ANNOTATIONS {
                annotations.remove(k);
            }
            continue;
        }
        if !tpl_annotations.contains_key(k) {
            annotations.remove(k);
        }
    }
    for (key, keys) in [
        (PROPAGATED_LABELS, label_keys),
        (PROPAGATED_ANNOTATIONS, annotation_keys),
    ] {
        let joined = keys.join(",");
        if annotations.get(key).map_or("", String::as_str) != joined {
            annotations.insert(key.into(), joined);
        }
    }
    if labels != labels_before {
        write_map(pod, "labels", &labels);
    }
    if annotations != annotations_before {
        write_map(pod, "annotations", &annotations);
    }
}

fn write_map(obj: &mut Value, key: &str, map: &BTreeMap<String, String>) {
    if let Some(md) = crate::meta::metadata_mut(obj) {
        if map.is_empty() {
            md.remove(key);
        } else {
            md.insert(key.into(), json!(map));
        }
    }
}

/// The Service ports for a Sandbox: every container port (and those of restartable init
/// containers), deduplicated by (port, protocol), sorted, named.
fn service_ports(sb: &Value) -> Vec<Value> {
    let spec = at(sb, &["spec", "podTemplate", "spec"]);
    let mut named: BTreeMap<(i64, String), String> = BTreeMap::new();
    let mut reserved: BTreeSet<String> = BTreeSet::new();
    let mut add = |c: &Value| {
        let Some(ports) = c.get("ports").and_then(Value::as_array) else {
            return;
        };
        for p in ports {
            let port = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
            if port == 0 {
                continue;
            }
            let protocol = p
                .get("protocol")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("TCP")
                .to_string();
            let slot = named.entry((port, protocol)).or_default();
            let pname = p.get("name").and_then(Value::as_str).unwrap_or("");
            if pname.is_empty() || !slot.is_empty() || reserved.contains(pname) {
                continue;
            }
            *slot = pname.to_string();
            reserved.insert(pname.to_string());
        }
    };
    let list = |key: &str| {
        spec.and_then(|s| s.get(key))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for c in list("containers") {
        add(&c);
    }
    for c in list("initContainers") {
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&c);
        }
    }
    let mut out = Vec::new();
    for ((port, protocol), explicit) in named {
        let pname = if explicit.is_empty() {
            let base = format!("p-{port}-{}", protocol.to_lowercase());
            let mut candidate = base.clone();
            let mut suffix = 2u32;
            while reserved.contains(&candidate) {
                candidate = format!("{base}-{suffix}");
                suffix = suffix.saturating_add(1);
            }
            candidate
        } else {
            explicit
        };
        reserved.insert(pname.clone());
        out.push(json!({ "name": pname, "protocol": protocol, "port": port, "targetPort": port }));
    }
    out
}

/// Whether two port lists agree on name, protocol, port and targetPort.
fn ports_equal(a: &[Value], b: &[Value]) -> bool {
    let key = |p: &Value| {
        (
            p.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            p.get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            p.get("port").and_then(Value::as_i64).unwrap_or(0),
            p.get("targetPort").cloned().unwrap_or(Value::Null),
        )
    };
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| key(x) == key(y))
}

fn set_service_status(cluster: Cluster<'_>, st: &mut Status, svc: &Value) {
    let name = meta_str(svc, "name").unwrap_or("");
    let ns = meta_str(svc, "namespace").unwrap_or("");
    st.service = name.to_string();
    st.service_fqdn = format!("{name}.{ns}.svc.{}", cluster.config.cluster_domain);
}

fn clear_service_status(st: &mut Status) {
    st.service.clear();
    st.service_fqdn.clear();
}

type SvcResult = (Option<Arc<Value>>, Option<SandboxError>);

fn reconcile_service(cluster: Cluster<'_>, sb: &Value, hash: &str, st: &mut Status) -> SvcResult {
    let ns = meta_str(sb, "namespace").unwrap_or("");
    let name = meta_str(sb, "name").unwrap_or("");
    let desired = at(sb, &["spec", "service"]).and_then(Value::as_bool);
    let ports = service_ports(sb);
    let selector = json!({ NAME_HASH_LABEL: hash });
    let Some(svc) = cluster.api.get(Kind::Service, ns, name) else {
        if desired != Some(true) {
            clear_service_status(st);
            return (None, None);
        }
        let mut spec = json!({ "clusterIP": "None", "selector": selector });
        if !ports.is_empty() {
            spec["ports"] = json!(ports);
        }
        let body = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": { NAME_HASH_LABEL: hash },
                "ownerReferences": [controller_ref(Kind::Sandbox, sb)],
            },
            "spec": spec,
        });
        return match create(cluster, Kind::Service, ns, body) {
            Ok(svc) => {
                set_service_status(cluster, st, &svc);
                (Some(svc), None)
            }
            Err(e) => (None, Some(SandboxError::Create(e.message))),
        };
    };
    let own = ownership(&svc, sb);
    if desired == Some(false) {
        if matches!(own, Ownership::Owned)
            && let Err(e) = delete(cluster, Kind::Service, ns, name, &Delete::default())
        {
            return (
                None,
                Some(SandboxError::write(
                    "failed to delete service",
                    WriteError::Api(e),
                )),
            );
        }
        clear_service_status(st);
        return (None, None);
    }
    let result = match own {
        Ownership::Other(r) => return (None, Some(owned_by_other("service", name, r, sb))),
        Ownership::Unowned => {
            if desired.is_none() {
                clear_service_status(st);
                return (None, None);
            }
            if !adoptable(&svc, hash) {
                return (
                    None,
                    Some(SandboxError::NotAdoptable {
                        noun: "service",
                        name: name.to_string(),
                    }),
                );
            }
            let ip = str_at(&svc, &["spec", "clusterIP"]).unwrap_or("");
            if !ip.is_empty() && ip != "None" {
                return (
                    None,
                    Some(SandboxError::ClusterIp {
                        name: name.to_string(),
                        ip: ip.to_string(),
                    }),
                );
            }
            modify(cluster, Kind::Service, ns, name, Part::Main, |v| {
                set_map_key(v, &["metadata", "labels"], NAME_HASH_LABEL, Some(hash));
                if let Some(spec) = super::obj_at(v, &["spec"]) {
                    spec.insert("selector".into(), selector.clone());
                    if ports.is_empty() {
                        spec.remove("ports");
                    } else {
                        spec.insert("ports".into(), json!(ports));
                    }
                }
                set_controller_ref(v, Kind::Sandbox, sb);
            })
            .map_err(|e| SandboxError::write("failed to update service with owner reference", e))
        }
        Ownership::Owned => modify(cluster, Kind::Service, ns, name, Part::Main, |v| {
            set_map_key(v, &["metadata", "labels"], NAME_HASH_LABEL, Some(hash));
            if let Some(spec) = super::obj_at(v, &["spec"]) {
                if spec.get("selector") != Some(&selector) {
                    spec.insert("selector".into(), selector.clone());
                }
                let current: Vec<Value> = spec
                    .get("ports")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if desired == Some(true) && !ports_equal(&current, &ports) {
                    if ports.is_empty() {
                        spec.remove("ports");
                    } else {
                        spec.insert("ports".into(), json!(ports));
                    }
                }
            }
        })
        .map_err(|e| SandboxError::write("failed to patch owned service", e)),
    };
    match result {
        Ok(now) => {
            let svc = now.unwrap_or(svc);
            set_service_status(cluster, st, &svc);
            (Some(svc), None)
        }
        Err(e) => (None, Some(e)),
    }
}

fn suspended_condition(sb: &Value, pod: Option<&Value>, pod_err: bool, gen_: i64) -> Cond {
    let mut c = Cond::new(
        "Suspended",
        "False",
        "NotSuspended",
        "Sandbox is not suspended",
        gen_,
    );
    if str_at(sb, &["spec", "operatingMode"]) != Some("Suspended") {
        return c;
    }
    match pod {
        None if pod_err => {
            c.status = "Unknown".into();
            c.reason = "PodStateUnknown".into();
            c.message = "Pod state is unknown. Sandbox suspension cannot be confirmed".into();
        }
        None => {
            c.status = "True".into();
            c.reason = "PodTerminated".into();
            c.message = "Pod has been terminated. Sandbox is suspended".into();
        }
        Some(p) if !controlled_by(p, sb) => {
            c.reason = "PodNotOwned".into();
            c.message = "Refused to delete pod because it is not owned by this sandbox".into();
        }
        Some(_) => {
            c.reason = "PodTerminating".into();
            c.message = "Pod is terminating. Sandbox is suspending".into();
        }
    }
    c
}

fn finished_condition(sb: &Value, pod: Option<&Value>, gen_: i64) -> Option<Cond> {
    let pod = pod.filter(|p| controlled_by(p, sb))?;
    match pod_phase(pod) {
        "Succeeded" => Some(Cond::new(
            "Finished",
            "True",
            "PodSucceeded",
            "Pod completed successfully",
            gen_,
        )),
        "Failed" => Some(Cond::new(
            "Finished",
            "True",
            "PodFailed",
            "Pod failed",
            gen_,
        )),
        _ => None,
    }
}

fn pod_scheduled_condition(
    sb: &Value,
    pod: Option<&Value>,
    pod_err: bool,
    gen_: i64,
) -> Option<Cond> {
    let mut c = Cond::new("PodScheduled", "Unknown", "PodSchedulingUnknown", "", gen_);
    let Some(pod) = pod else {
        if pod_err {
            c.message = "Pod state is unknown. Pod scheduling cannot be determined".into();
            return Some(c);
        }
        return None;
    };
    if !controlled_by(pod, sb) {
        return None;
    }
    match pod_condition(pod, "PodScheduled") {
        Some(pc) => {
            c.status = pc
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            c.reason = pc
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            c.message = pc
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if c.reason.is_empty() {
                c.reason = if c.status == "True" {
                    "PodScheduled".into()
                } else {
                    "PodSchedulingUnknown".into()
                };
            }
        }
        None => c.message = "Pod has not reported a PodScheduled condition yet".into(),
    }
    Some(c)
}

fn ready_condition(
    sb: &Value,
    errors: &[SandboxError],
    svc_exists: bool,
    pod: Option<&Value>,
    gen_: i64,
) -> Cond {
    let mut c = Cond::new("Ready", "False", "DependenciesNotReady", "", gen_);
    if let Some(e) = errors
        .iter()
        .find(|e| matches!(e, SandboxError::MultiplePods(_)))
    {
        c.reason = "MultiplePods".into();
        c.message = e.to_string();
        return c;
    }
    if !errors.is_empty() {
        let joined: Vec<String> = errors.iter().map(ToString::to_string).collect();
        c.reason = "ReconcilerError".into();
        c.message = format!("Error seen: {}", joined.join("\n"));
        return c;
    }
    if str_at(sb, &["spec", "operatingMode"]) == Some("Suspended") {
        c.reason = "SandboxSuspended".into();
        c.message = if pod.is_some() {
            "Sandbox is suspending"
        } else {
            "Sandbox is suspended"
        }
        .into();
        return c;
    }
    if let Some(p) = pod {
        match pod_phase(p) {
            "Succeeded" => {
                c.reason = "PodSucceeded".into();
                c.message = "Pod completed successfully".into();
                return c;
            }
            "Failed" => {
                c.reason = "PodFailed".into();
                c.message = "Pod failed".into();
                return c;
            }
            _ => {}
        }
    }
    let mut pod_ready = false;
    let mut message = match pod {
        None => "Pod does not exist".to_string(),
        Some(p) => {
            let phase = pod_phase(p);
            let mut m = format!("Pod exists with phase: {phase}");
            if phase == "Running" {
                m = "Pod is Running but not Ready".into();
                if pod_condition(p, "Ready")
                    .and_then(|c| c.get("status"))
                    .and_then(Value::as_str)
                    == Some("True")
                {
                    if pod_ips(p).is_empty() {
                        m = "Pod is Ready but has no podIPs yet".into();
                    } else {
                        m = "Pod is Ready".into();
                        pod_ready = true;
                    }
                }
            }
            m
        }
    };
    let svc_required = match at(sb, &["spec", "service"]).and_then(Value::as_bool) {
        Some(b) => b,
        None => svc_exists,
    };
    let mut svc_ready = true;
    if svc_required {
        svc_ready = svc_exists;
        message.push_str(if svc_exists {
            "; Service Exists"
        } else {
            "; Service does not exist"
        });
    }
    c.message = message;
    if pod_ready && svc_ready {
        c.status = "True".into();
        c.reason = "DependenciesReady".into();
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox_with_containers(containers: Value) -> Value {
        json!({
            "metadata": { "name": "sb", "uid": "u1" },
            "spec": { "podTemplate": { "spec": { "containers": containers } } },
        })
    }

    #[test]
    fn service_ports_are_deduplicated_sorted_and_named() {
        let sb = sandbox_with_containers(json!([
            { "name": "a", "ports": [
                { "containerPort": 8080 },
                { "containerPort": 22, "name": "ssh" },
                { "containerPort": 8080, "name": "late" },
                { "containerPort": 53, "protocol": "UDP" },
            ] },
        ]));
        let ports = service_ports(&sb);
        let names: Vec<&str> = ports.iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(names, ["ssh", "p-53-udp", "late"]);
        assert_eq!(ports[2]["targetPort"], 8080);
    }

    #[test]
    fn generated_port_name_avoids_an_explicit_name() {
        let sb = sandbox_with_containers(json!([
            { "name": "a", "ports": [
                { "containerPort": 80 },
                { "containerPort": 81, "name": "p-80-tcp" },
            ] },
        ]));
        let names: Vec<String> = service_ports(&sb)
            .iter()
            .filter_map(|p| p["name"].as_str().map(str::to_string))
            .collect();
        assert_eq!(names, ["p-80-tcp-2", "p-80-tcp"]);
    }

    #[test]
    fn containers_without_ports_give_no_service_ports() {
        let sb = sandbox_with_containers(json!([{ "name": "a" }]));
        assert!(service_ports(&sb).is_empty());
    }

    #[test]
    fn pod_labels_drop_reserved_keys_and_get_the_name_hash() {
        let sb = json!({
            "metadata": { "name": "my-sandbox", "namespace": "ns", "uid": "u1",
                          "labels": { CREATED_BY_LABEL: "someone" } },
            "spec": { "podTemplate": {
                "metadata": {
                    "labels": { "app": "x", "agents.x-k8s.io/claim-uid": "c" },
                    "annotations": { "note": "n", TRACE_ANNOTATION: "t" },
                },
                "spec": { "containers": [ { "name": "c", "image": "i" } ] },
            } },
        });
        let pod = build_pod(&sb, &name_hash("my-sandbox"), Kind::Sandbox);
        let labels = &pod["metadata"]["labels"];
        assert_eq!(labels[NAME_HASH_LABEL], "374de8f5");
        assert_eq!(labels["app"], "x");
        assert!(labels.get("agents.x-k8s.io/claim-uid").is_none());
        assert_eq!(labels[CREATED_BY_LABEL], "unknown");
        let ann = &pod["metadata"]["annotations"];
        assert_eq!(ann[PROPAGATED_LABELS], "app");
        assert_eq!(ann[PROPAGATED_ANNOTATIONS], "note");
        assert!(ann.get(TRACE_ANNOTATION).is_none());
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "Sandbox");
    }

    #[test]
    fn pod_metadata_update_removes_keys_the_template_dropped() {
        let sb = json!({
            "metadata": { "name": "sb", "uid": "u1" },
            "spec": { "podTemplate": { "metadata": { "labels": { "keep": "1" } }, "spec": {} } },
        });
        let mut pod = json!({ "metadata": {
            "labels": { "keep": "0", "gone": "x", WARM_POOL_LABEL: "abc" },
            "annotations": { PROPAGATED_LABELS: "gone,keep", PROPAGATED_ANNOTATIONS: "evict", "evict": "true" },
        } });
        update_pod_metadata(&mut pod, &sb, "h");
        let labels = &pod["metadata"]["labels"];
        assert_eq!(labels["keep"], "1");
        assert!(labels.get("gone").is_none());
        assert!(labels.get(WARM_POOL_LABEL).is_none());
        assert_eq!(labels[NAME_HASH_LABEL], "h");
        let ann = &pod["metadata"]["annotations"];
        assert!(ann.get("evict").is_none());
        assert_eq!(ann[PROPAGATED_LABELS], "keep");
        assert_eq!(ann[PROPAGATED_ANNOTATIONS], "");
    }

    #[test]
    fn ready_message_appends_the_service_state_when_required() {
        let sb = json!({ "metadata": { "name": "sb", "uid": "u1" }, "spec": { "service": true } });
        let pod = json!({ "status": { "phase": "Running", "conditions": [ { "type": "Ready", "status": "True" } ], "podIPs": [ { "ip": "10.0.0.1" } ] } });
        let c = ready_condition(&sb, &[], false, Some(&pod), 3);
        assert_eq!(c.status, "False");
        assert_eq!(c.message, "Pod is Ready; Service does not exist");
        let c = ready_condition(&sb, &[], true, Some(&pod), 3);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "DependenciesReady")
        );
        assert_eq!(c.observed_generation, 3);
    }

    #[test]
    fn ready_reports_reconcile_errors_before_anything_else() {
        let sb = json!({ "metadata": { "name": "sb" }, "spec": {} });
        let errs = [SandboxError::NotAdoptable {
            noun: "pod",
            name: "sb".into(),
        }];
        let c = ready_condition(&sb, &errs, false, None, 1);
        assert_eq!(c.reason, "ReconcilerError");
        assert!(
            c.message
                .starts_with("Error seen: cannot adopt unowned pod \"sb\"")
        );
    }

    #[test]
    fn suspended_without_pod_is_true_pod_terminated() {
        let sb = json!({ "metadata": { "name": "sb" }, "spec": { "operatingMode": "Suspended" } });
        let c = suspended_condition(&sb, None, false, 2);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "PodTerminated")
        );
    }
}
