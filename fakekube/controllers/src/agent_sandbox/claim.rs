//! The SandboxClaim controller (`extensions/controllers/sandboxclaim_controller.go` upstream).
//!
//! A claim names a warm pool. It adopts a member of that pool — a Ready one with Pod IPs first,
//! spread towards the node with the most members, else an unready one with IPs — without
//! restarting its Pod: the claim records the member in its `agents.x-k8s.io/sandbox-name`
//! annotation, then the member's warm-pool labels and eviction hint go, its ownerReferences
//! become a single controller reference to the claim, and its pod template metadata becomes the
//! template's plus the claim's identity labels and `additionalPodMetadata`. The member keeps
//! its `<pool>-xxxxx` name. When the pool's members have no Pod IPs yet, a new claim waits for
//! them (see `Config::warm_candidate_grace`) before it cold-starts.
//!
//! A claim that sets `env` or `volumeClaimTemplates` skips the pool and cold-starts a Sandbox
//! named after the claim from the pool's template, with env injected only when the template's
//! `envVarsInjectionPolicy` allows it and VCTs merged by its `volumeClaimTemplatesPolicy`;
//! otherwise the claim is Ready False with the reason upstream gives. The claim mirrors the
//! Sandbox's `Ready` (with its own `observedGeneration`) and `Finished`, and
//! `status.sandbox.{name,podIPs}`.
//!
//! Lifecycle: the claim expires at `lifecycle.shutdownTime` or `ttlSecondsAfterFinished` after
//! the Sandbox finished, whichever is first; it is then Ready False / `ClaimExpired` and, per
//! `shutdownPolicy`, deleted (`Delete`), deleted in the foreground (`DeleteForeground`), or kept
//! while its Sandbox is deleted (`Retain`). Deleting a claim removes its Sandbox (and through it
//! the Pod, Service and PVCs) by garbage collection only.
//!
//! The claim is stamped `agents.x-k8s.io/controller-first-observed-at` when first seen and
//! `agents.x-k8s.io/claim-first-ready-at` when first Ready (`unknown` if it was Ready before
//! the stamp); Events: `SandboxAdopted`, `SandboxProvisioned`, `ClaimExpired`. A claim hears of
//! a template only at its creation and of its pool's creation, deletion and spec changes only
//! while unbound, as upstream's watches are filtered, so template and pool edits reach a bound
//! claim at its next reconcile, not at once.
//!
//! Differences from upstream: candidates come from a list of the pool's members rather than an
//! in-memory queue fed by watch events; the pending-member window (2 s, re-checked every
//! 500 ms) is measured, as upstream, from the claim's `creationTimestamp`; the legacy
//! per-claim NetworkPolicy clean-up and the trace-context annotation are left out.

use super::warmpool::{apply_secure_defaults, blueprint, blueprint_hash, same_blueprint};
use super::{
    CLAIM_UID_LABEL, CONFLICT_RETRY, CREATED_BY_LABEL, Cluster, Cond, EXTENSIONS_GROUP,
    LAUNCH_TYPE_LABEL, POD_NAME_ANNOTATION, POD_TEMPLATE_HASH_LABEL, Requeue, SAFE_TO_EVICT,
    SANDBOX_NAME_ANNOTATION, TEMPLATE_HASH_LABEL, TEMPLATE_REF_ANNOTATION, TEMPLATE_REF_HASH_LABEL,
    WARM_POOL_LABEL, WriteError, annotation, at, condition_true, conditions, controlled_by,
    controller_of, controller_ref, created_at, deleting, find_condition, generation, label, modify,
    name_hash, obj_at, owner_group, owner_kind, owner_name, parse_time, remove_condition,
    set_condition, set_map_key, str_at, string_map, until,
};
use crate::client::{Delete, Kind, Part, Propagation};
use crate::events::EventType;
use crate::meta::meta_str;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;

/// Why a claim has no usable Sandbox; each maps to the Ready reason upstream reports.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ClaimError {
    /// The pool's template is missing (`TemplateNotFound`).
    #[error("{0}")]
    TemplateNotFound(String),
    /// The pool is missing (`WarmPoolNotFound`).
    #[error("SandboxWarmPool {0:?} not found")]
    WarmPoolNotFound(String),
    /// `additionalPodMetadata` is refused (`InvalidMetadata`).
    #[error("invalid additionalPodMetadata: {0}")]
    InvalidMetadata(String),
    /// The template does not allow the claim's env (`EnvVarsInjectionRejected`).
    #[error("environment variable injection rejected: {0}")]
    EnvVarsInjectionRejected(String),
    /// The claim's volume claim templates are refused (`VolumeClaimTemplatesError`).
    #[error("{0}")]
    VolumeClaimTemplates(String),
    /// An expired claim's Sandbox is not its own (`ClaimExpired`, deletion skipped).
    #[error("sandbox not owned by this claim: sandbox {sandbox:?} is not owned by claim {claim:?}")]
    SandboxNotOwned {
        /// The Sandbox.
        sandbox: String,
        /// The claim.
        claim: String,
    },
    /// The Sandbox to create already exists (`SandboxCreatePending`).
    #[error("sandbox already exists (cache lag)")]
    CreatePending,
    /// An adoption lost a race (`AdoptionConflict`).
    #[error("adoption write conflict: {0}")]
    AdoptionConflict(String),
    /// Anything else (`ReconcilerError`).
    #[error("{0}")]
    Reconciler(String),
}

impl ClaimError {
    /// The Ready condition this error gives.
    fn ready(&self, gen_: i64) -> Cond {
        let (reason, message) = match self {
            ClaimError::TemplateNotFound(m) => ("TemplateNotFound", m.clone()),
            ClaimError::WarmPoolNotFound(_) => ("WarmPoolNotFound", self.to_string()),
            ClaimError::InvalidMetadata(_) => ("InvalidMetadata", self.to_string()),
            ClaimError::EnvVarsInjectionRejected(_) => {
                ("EnvVarsInjectionRejected", self.to_string())
            }
            ClaimError::VolumeClaimTemplates(_) => ("VolumeClaimTemplatesError", self.to_string()),
            ClaimError::SandboxNotOwned { .. } => (
                "ClaimExpired",
                format!("Claim expired. {self}; deletion skipped."),
            ),
            ClaimError::CreatePending => (
                "SandboxCreatePending",
                "Sandbox already created; waiting for cache to converge".to_string(),
            ),
            ClaimError::AdoptionConflict(_) => (
                "AdoptionConflict",
                format!("{self}; the next pass retries from a converged view"),
            ),
            ClaimError::Reconciler(m) => ("ReconcilerError", format!("Error seen: {m}")),
        };
        Cond::new("Ready", "False", reason, &message, gen_)
    }

    /// The same error with a prefix on its message, keeping its kind.
    fn prefixed(self, prefix: &str) -> Self {
        match self {
            ClaimError::TemplateNotFound(m) => ClaimError::TemplateNotFound(format!("{prefix}{m}")),
            ClaimError::Reconciler(m) => ClaimError::Reconciler(format!("{prefix}{m}")),
            // Wrapped with %w upstream: still WarmPoolNotFound, whose message names the pool.
            ClaimError::WarmPoolNotFound(pool) => ClaimError::WarmPoolNotFound(pool),
            other => ClaimError::Reconciler(format!("{prefix}{other}")),
        }
    }

    fn from_write(step: &str, e: &WriteError) -> Self {
        if e.is_conflict() {
            ClaimError::AdoptionConflict(format!("{step}: {e}"))
        } else {
            ClaimError::Reconciler(format!("{step}: {e}"))
        }
    }
}

/// What looking for the claim's Sandbox found.
enum Lookup {
    /// The claim's Sandbox.
    Found(Arc<Value>),
    /// Warm members exist but have no Pod IPs yet: look again after this long.
    Pending(Duration),
    /// Nothing: cold-start.
    Missing,
}

/// Reconciles one SandboxClaim.
pub(crate) fn reconcile(cluster: Cluster<'_>, ns: &str, name: &str) -> Requeue {
    let claim = cluster.api.get(Kind::SandboxClaim, ns, name)?;
    if deleting(&claim) {
        return None;
    }
    let gen_ = generation(&claim);
    let mut conds = conditions(&claim);
    let mut sandbox_status = at(&claim, &["status", "sandbox"]).cloned();
    let claim = match first_observed(cluster, claim) {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(claim = name, error = %e, "stamping first-observed");
            return Some(CONFLICT_RETRY);
        }
    };
    let was_ready = condition_true(&claim, "Ready");
    let now = cluster.api.clock().now_utc();
    let (expired, _) = expiry(&claim, &conds, now);
    if expired && !claim_expired(&conds) {
        set_condition(&mut conds, expired_condition(gen_), &cluster.now());
        return match write_status(cluster, &claim, &conds, sandbox_status.as_ref()) {
            Ok(()) => {
                expired_event(cluster, &claim);
                Some(Duration::ZERO)
            }
            Err(e) => e.is_conflict().then_some(CONFLICT_RETRY),
        };
    }
    let policy = str_at(&claim, &["spec", "lifecycle", "shutdownPolicy"]).unwrap_or("Retain");
    if expired && matches!(policy, "Delete" | "DeleteForeground") {
        cluster.recorders.claim.emit(
            cluster.api,
            &claim,
            EventType::Normal,
            "ClaimExpired",
            "Deleting",
            &format!("Deleting Claim (ShutdownPolicy={policy})"),
        );
        let opts = Delete {
            propagation: (policy == "DeleteForeground").then_some(Propagation::Foreground),
            ..Default::default()
        };
        if let Err(e) = super::delete(cluster, Kind::SandboxClaim, ns, name, &opts) {
            tracing::debug!(claim = name, error = %e.message, "deleting an expired claim");
            return Some(CONFLICT_RETRY);
        }
        return None;
    }
    let (sandbox, err) = if expired {
        match reconcile_expired(cluster, &claim) {
            Ok(sb) => (sb, None),
            Err(e) => (None, Some(e)),
        }
    } else {
        match reconcile_active(cluster, &claim) {
            Ok(Lookup::Pending(after)) => return Some(after),
            Ok(Lookup::Found(sb)) => (Some(sb), None),
            Ok(Lookup::Missing) => (None, None),
            Err(e) => (None, Some(e)),
        }
    };
    // Cache-lag retry upstream: a claim that already names its Sandbox keeps its status.
    let keep = sandbox.is_none()
        && err == Some(ClaimError::CreatePending)
        && str_at(&claim, &["status", "sandbox", "name"]).is_some_and(|n| !n.is_empty());
    if !keep {
        let ready = ready_condition(&claim, sandbox.as_deref(), err.as_ref(), expired);
        set_condition(&mut conds, ready, &cluster.now());
        match &sandbox {
            Some(sb) => {
                match find_condition(&conditions(sb), "Finished").and_then(Cond::from_value) {
                    Some(f) => set_condition(&mut conds, f, &cluster.now()),
                    None => remove_condition(&mut conds, "Finished"),
                }
                let mut s = Map::new();
                if let Some(n) = meta_str(sb, "name") {
                    s.insert("name".into(), json!(n));
                }
                if let Some(ips) = at(sb, &["status", "podIPs"])
                    .and_then(Value::as_array)
                    .filter(|a| !a.is_empty())
                {
                    s.insert("podIPs".into(), json!(ips));
                }
                sandbox_status = Some(Value::Object(s));
            }
            None => {
                if !expired {
                    remove_condition(&mut conds, "Finished");
                }
                if err.is_none() || matches!(err, Some(ClaimError::SandboxNotOwned { .. })) {
                    sandbox_status = sandbox_status.map(|_| json!({}));
                }
            }
        }
    }
    let (expired_now, left) = expiry(&claim, &conds, cluster.api.clock().now_utc());
    if expired_now && !claim_expired(&conds) {
        set_condition(&mut conds, expired_condition(gen_), &cluster.now());
        return match write_status(cluster, &claim, &conds, sandbox_status.as_ref()) {
            Ok(()) => {
                expired_event(cluster, &claim);
                Some(Duration::ZERO)
            }
            Err(e) => e.is_conflict().then_some(CONFLICT_RETRY),
        };
    }
    let wrote = write_status(cluster, &claim, &conds, sandbox_status.as_ref());
    if let Err(e) = &wrote {
        tracing::debug!(claim = name, error = %e, "writing claim status");
    }
    let ready_now = find_condition(&conds, "Ready")
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True");
    if wrote.is_ok()
        && (ready_now || was_ready)
        && let Err(e) = first_ready(cluster, &claim, was_ready)
    {
        tracing::debug!(claim = name, error = %e, "stamping first-ready");
        return Some(CONFLICT_RETRY);
    }
    let conflict = wrote.as_ref().is_err_and(WriteError::is_conflict)
        || matches!(err, Some(ClaimError::AdoptionConflict(_)));
    if conflict {
        return Some(CONFLICT_RETRY);
    }
    if expired_now {
        return None;
    }
    let left = left.map(|d| d.max(Duration::from_millis(1)));
    // Upstream's bounded requeues, each cut short by an earlier expiry.
    let bounded = |delay: Duration| Some(left.map_or(delay, |l| l.min(delay)));
    match err {
        Some(ClaimError::WarmPoolNotFound(_) | ClaimError::TemplateNotFound(_)) => {
            bounded(MISSING_DEPENDENCY_RETRY)
        }
        Some(ClaimError::CreatePending) => bounded(CREATE_PENDING_RETRY),
        _ => left,
    }
}

/// How soon a claim whose pool or template is missing looks again without a change
/// (upstream: a one-minute fallback behind the dependency watches, which act at once).
pub(crate) const MISSING_DEPENDENCY_RETRY: Duration = Duration::from_secs(60);

/// How soon a claim whose Sandbox create met an existing Sandbox looks again
/// (`cacheLagRequeueDelay` upstream).
pub(crate) const CREATE_PENDING_RETRY: Duration = Duration::from_millis(200);

/// The annotation the controller stamps on a claim the first time it sees it.
const FIRST_OBSERVED_ANNOTATION: &str = "agents.x-k8s.io/controller-first-observed-at";
/// The annotation the controller stamps on a claim the first time it is Ready.
const FIRST_READY_ANNOTATION: &str = "agents.x-k8s.io/claim-first-ready-at";

/// `initializeAnnotations`: a claim without the first-observed annotation gets it (the
/// cluster's time, RFC 3339 with nanoseconds); returns the claim as stored then.
fn first_observed(cluster: Cluster<'_>, claim: Arc<Value>) -> Result<Arc<Value>, WriteError> {
    if annotation(&claim, FIRST_OBSERVED_ANNOTATION).is_some_and(|v| !v.is_empty()) {
        return Ok(claim);
    }
    let stamp = cluster.api.clock().now_rfc3339_nano();
    let ns = meta_str(&claim, "namespace").unwrap_or("").to_string();
    let name = meta_str(&claim, "name").unwrap_or("").to_string();
    let stored = modify(cluster, Kind::SandboxClaim, &ns, &name, Part::Main, |v| {
        if annotation(v, FIRST_OBSERVED_ANNOTATION).is_none_or(str::is_empty) {
            set_map_key(
                v,
                &["metadata", "annotations"],
                FIRST_OBSERVED_ANNOTATION,
                Some(&stamp),
            );
        }
    })?;
    Ok(stored.unwrap_or(claim))
}

/// `recordCreationLatencyMetric`'s stamp: the first time the claim turns Ready it gets the
/// first-ready annotation (now); one that was Ready already and lacks it gets `unknown`.
fn first_ready(cluster: Cluster<'_>, claim: &Value, was_ready: bool) -> Result<(), WriteError> {
    if annotation(claim, FIRST_READY_ANNOTATION).is_some_and(|v| !v.is_empty()) {
        return Ok(());
    }
    let stamp = if was_ready {
        "unknown".to_string()
    } else {
        cluster.api.clock().now_rfc3339_nano()
    };
    let ns = meta_str(claim, "namespace").unwrap_or("").to_string();
    let name = meta_str(claim, "name").unwrap_or("").to_string();
    modify(cluster, Kind::SandboxClaim, &ns, &name, Part::Main, |v| {
        if annotation(v, FIRST_READY_ANNOTATION).is_none_or(str::is_empty) {
            set_map_key(
                v,
                &["metadata", "annotations"],
                FIRST_READY_ANNOTATION,
                Some(&stamp),
            );
        }
    })
    .map(|_| ())
}

/// The Event of a claim that just expired.
fn expired_event(cluster: Cluster<'_>, claim: &Value) {
    cluster.recorders.claim.emit(
        cluster.api,
        claim,
        EventType::Normal,
        "ClaimExpired",
        "Claim Expired",
        "Claim expired",
    );
}

fn expired_condition(gen_: i64) -> Cond {
    Cond::new(
        "Ready",
        "False",
        "ClaimExpired",
        "Claim expired. Sandbox cleanup initiated.",
        gen_,
    )
}

fn claim_expired(conds: &[Value]) -> bool {
    find_condition(conds, "Ready")
        .and_then(|c| c.get("reason"))
        .and_then(Value::as_str)
        == Some("ClaimExpired")
}

/// Whether the claim has expired, and otherwise how long until it does (if ever): the earlier
/// of `lifecycle.shutdownTime` and the Finished transition plus `ttlSecondsAfterFinished`.
fn expiry(claim: &Value, conds: &[Value], now: OffsetDateTime) -> (bool, Option<Duration>) {
    let Some(lc) = at(claim, &["spec", "lifecycle"]).filter(|v| v.is_object()) else {
        return (false, None);
    };
    let mut at_time = lc
        .get("shutdownTime")
        .and_then(Value::as_str)
        .and_then(parse_time);
    if let Some(ttl) = lc.get("ttlSecondsAfterFinished").and_then(Value::as_i64)
        && let Some(f) = find_condition(conds, "Finished")
        && f.get("status").and_then(Value::as_str) == Some("True")
        && let Some(done) = f
            .get("lastTransitionTime")
            .and_then(Value::as_str)
            .and_then(parse_time)
    {
        let ttl_at = done + time::Duration::seconds(ttl);
        if at_time.is_none_or(|t| ttl_at < t) {
            at_time = Some(ttl_at);
        }
    }
    match at_time {
        None => (false, None),
        Some(t) if now >= t => (true, None),
        Some(t) => (false, Some(until(now, t))),
    }
}

/// Writes the claim status (conditions sorted by type) when it changed.
fn write_status(
    cluster: Cluster<'_>,
    claim: &Value,
    conds: &[Value],
    sandbox: Option<&Value>,
) -> Result<(), WriteError> {
    let mut sorted = conds.to_vec();
    sorted.sort_by(|a, b| {
        a.get("type")
            .and_then(Value::as_str)
            .cmp(&b.get("type").and_then(Value::as_str))
    });
    let mut status = Map::new();
    if !sorted.is_empty() {
        status.insert("conditions".into(), json!(sorted));
    }
    // A struct field upstream (`omitempty` does not drop a struct): `{}` until bound.
    status.insert(
        "sandbox".into(),
        sandbox.cloned().unwrap_or_else(|| json!({})),
    );
    let status = Value::Object(status);
    if claim.get("status").unwrap_or(&json!({})) == &status {
        return Ok(());
    }
    let ns = meta_str(claim, "namespace").unwrap_or("");
    let name = meta_str(claim, "name").unwrap_or("");
    modify(cluster, Kind::SandboxClaim, ns, name, Part::Status, |v| {
        if let Some(o) = v.as_object_mut() {
            o.insert("status".into(), status.clone());
        }
    })
    .map(|_| ())
}

fn ready_condition(
    claim: &Value,
    sandbox: Option<&Value>,
    err: Option<&ClaimError>,
    expired: bool,
) -> Cond {
    let gen_ = generation(claim);
    if let Some(e) = err {
        return e.ready(gen_);
    }
    if expired {
        return expired_condition(gen_);
    }
    let Some(sb) = sandbox else {
        return Cond::new(
            "Ready",
            "False",
            "SandboxMissing",
            "Sandbox does not exist",
            gen_,
        );
    };
    let sb_conds = conditions(sb);
    let ready = find_condition(&sb_conds, "Ready").and_then(Cond::from_value);
    match ready {
        Some(c) if c.reason == "SandboxExpired" => Cond::new(
            "Ready",
            "False",
            "SandboxExpired",
            "Underlying Sandbox resource has expired independently of the Claim.",
            gen_,
        ),
        Some(mut c) => {
            c.observed_generation = gen_;
            c
        }
        None => Cond::new(
            "Ready",
            "False",
            "SandboxNotReady",
            "Sandbox is not ready",
            gen_,
        ),
    }
}

/// Retain policy after expiry: deletes the claim's Sandbox, keeps the claim.
fn reconcile_expired(
    cluster: Cluster<'_>,
    claim: &Value,
) -> Result<Option<Arc<Value>>, ClaimError> {
    let ns = meta_str(claim, "namespace").unwrap_or("");
    let claim_name = meta_str(claim, "name").unwrap_or("");
    let sb_name = str_at(claim, &["status", "sandbox", "name"])
        .filter(|n| !n.is_empty())
        .unwrap_or(claim_name);
    let Some(sb) = cluster.api.get(Kind::Sandbox, ns, sb_name) else {
        return Ok(None);
    };
    if !controlled_by(&sb, claim) {
        return Err(ClaimError::SandboxNotOwned {
            sandbox: sb_name.to_string(),
            claim: claim_name.to_string(),
        });
    }
    if !deleting(&sb)
        && let Err(e) = super::delete(cluster, Kind::Sandbox, ns, sb_name, &Delete::default())
    {
        return Err(ClaimError::Reconciler(format!(
            "failed to delete expired sandbox: {}",
            e.message
        )));
    }
    Ok(Some(sb))
}

fn reconcile_active(cluster: Cluster<'_>, claim: &Value) -> Result<Lookup, ClaimError> {
    let extra_labels = string_map(claim, &["spec", "additionalPodMetadata", "labels"]);
    let extra_annotations = string_map(claim, &["spec", "additionalPodMetadata", "annotations"]);
    validate_metadata(
        &extra_labels,
        &extra_annotations,
        &cluster.config.allowed_label_domains,
    )
    .map_err(ClaimError::InvalidMetadata)?;
    match get_or_adopt(cluster, claim)? {
        Lookup::Found(sb) => sync_sandbox_metadata(cluster, claim, sb).map(Lookup::Found),
        Lookup::Pending(d) => Ok(Lookup::Pending(d)),
        Lookup::Missing => {
            let (_, tpl) = pool_and_template(cluster, claim)?;
            create_sandbox(cluster, claim, &tpl).map(Lookup::Found)
        }
    }
}

/// The claim's pool and that pool's template.
fn pool_and_template(
    cluster: Cluster<'_>,
    claim: &Value,
) -> Result<(Arc<Value>, Arc<Value>), ClaimError> {
    let ns = meta_str(claim, "namespace").unwrap_or("");
    let pool_name = str_at(claim, &["spec", "warmPoolRef", "name"]).unwrap_or("");
    let pool = cluster
        .api
        .get(Kind::SandboxWarmPool, ns, pool_name)
        .ok_or_else(|| ClaimError::WarmPoolNotFound(pool_name.to_string()))?;
    let tpl_name = str_at(&pool, &["spec", "sandboxTemplateRef", "name"]).unwrap_or("");
    let tpl = cluster
        .api
        .get(Kind::SandboxTemplate, ns, tpl_name)
        .ok_or_else(|| {
            ClaimError::TemplateNotFound(format!("SandboxTemplate {tpl_name:?} not found"))
        })?;
    Ok((pool, tpl))
}

/// The pod template metadata a claim's Sandbox must have: the template's, the claim's identity
/// labels, and `additionalPodMetadata` (which may not contradict the template).
fn merged_pod_metadata(
    cluster: Cluster<'_>,
    tpl: &Value,
    claim: &Value,
    ref_hash: &str,
) -> Result<Value, ClaimError> {
    let mut labels = string_map(tpl, &["spec", "podTemplate", "metadata", "labels"]);
    let mut annotations = string_map(tpl, &["spec", "podTemplate", "metadata", "annotations"]);
    labels.insert(
        CLAIM_UID_LABEL.into(),
        meta_str(claim, "uid").unwrap_or("").into(),
    );
    if !ref_hash.is_empty() {
        labels.insert(TEMPLATE_REF_HASH_LABEL.into(), ref_hash.into());
    }
    match label(claim, CREATED_BY_LABEL).filter(|v| !v.is_empty()) {
        Some(v) => {
            labels.insert(CREATED_BY_LABEL.into(), v.into());
        }
        None => {
            labels.remove(CREATED_BY_LABEL);
        }
    }
    merge_additional(cluster, claim, &mut labels, &mut annotations)?;
    Ok(pod_metadata(&labels, &annotations))
}

/// Adds the claim's `additionalPodMetadata` to a pod template's maps.
fn merge_additional(
    cluster: Cluster<'_>,
    claim: &Value,
    labels: &mut BTreeMap<String, String>,
    annotations: &mut BTreeMap<String, String>,
) -> Result<(), ClaimError> {
    let extra_labels = string_map(claim, &["spec", "additionalPodMetadata", "labels"]);
    let extra_annotations = string_map(claim, &["spec", "additionalPodMetadata", "annotations"]);
    validate_metadata(
        &extra_labels,
        &extra_annotations,
        &cluster.config.allowed_label_domains,
    )
    .map_err(ClaimError::Reconciler)?;
    for (kind, extra, base) in [
        ("label", &extra_labels, &*labels),
        ("annotation", &extra_annotations, &*annotations),
    ] {
        for (k, v) in extra {
            if let Some(tv) = base.get(k)
                && tv != v
            {
                return Err(ClaimError::Reconciler(format!(
                    "metadata override conflict: {kind} {k:?} is defined in template with value {tv:?}, but claim requests {v:?}"
                )));
            }
        }
    }
    labels.extend(extra_labels);
    annotations.extend(extra_annotations);
    Ok(())
}

fn pod_metadata(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Value {
    let mut m = Map::new();
    if !labels.is_empty() {
        m.insert("labels".into(), json!(labels));
    }
    if !annotations.is_empty() {
        m.insert("annotations".into(), json!(annotations));
    }
    Value::Object(m)
}

/// The pod template metadata of a Sandbox, in the same normal form.
fn current_pod_metadata(sb: &Value) -> Value {
    pod_metadata(
        &string_map(sb, &["spec", "podTemplate", "metadata", "labels"]),
        &string_map(sb, &["spec", "podTemplate", "metadata", "annotations"]),
    )
}

/// Keeps a found Sandbox's pod template metadata, template label and `created-by` in line
/// with the claim.
fn sync_sandbox_metadata(
    cluster: Cluster<'_>,
    claim: &Value,
    sb: Arc<Value>,
) -> Result<Arc<Value>, ClaimError> {
    let extra = !string_map(claim, &["spec", "additionalPodMetadata", "labels"]).is_empty()
        || !string_map(claim, &["spec", "additionalPodMetadata", "annotations"]).is_empty();
    let tpl = match pool_and_template(cluster, claim) {
        Ok((_, t)) => t,
        Err(e) if extra => {
            return Err(e.prefixed("failed to get template for metadata propagation: "));
        }
        Err(_) => return Ok(sb),
    };
    let tpl_name = meta_str(&tpl, "name").unwrap_or("");
    let ref_hash = name_hash(tpl_name);
    let merged = merged_pod_metadata(cluster, &tpl, claim, &ref_hash)?;
    let created_by = label(claim, CREATED_BY_LABEL)
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    let needs = current_pod_metadata(&sb) != merged
        || label(&sb, TEMPLATE_REF_HASH_LABEL) != Some(ref_hash.as_str())
        || label(&sb, CREATED_BY_LABEL) != created_by.as_deref();
    if !needs {
        return Ok(sb);
    }
    let ns = meta_str(&sb, "namespace").unwrap_or("").to_string();
    let sb_name = meta_str(&sb, "name").unwrap_or("").to_string();
    match modify(cluster, Kind::Sandbox, &ns, &sb_name, Part::Main, |v| {
        if let Some(pt) = obj_at(v, &["spec", "podTemplate"]) {
            pt.insert("metadata".into(), merged.clone());
        }
        set_map_key(
            v,
            &["metadata", "labels"],
            TEMPLATE_REF_HASH_LABEL,
            Some(&ref_hash),
        );
        set_map_key(
            v,
            &["metadata", "labels"],
            CREATED_BY_LABEL,
            created_by.as_deref(),
        );
    }) {
        Ok(Some(now)) => Ok(now),
        Ok(None) => Ok(sb),
        Err(e) => Err(ClaimError::Reconciler(format!(
            "failed to patch sandbox metadata for claim {:?}: {e}",
            meta_str(claim, "name").unwrap_or("")
        ))),
    }
}

/// Sets the launch-type label on a Sandbox that has none.
fn init_launch_type(
    cluster: Cluster<'_>,
    sb: Arc<Value>,
    launch: &str,
) -> Result<Arc<Value>, ClaimError> {
    if label(&sb, LAUNCH_TYPE_LABEL).is_some() {
        return Ok(sb);
    }
    let ns = meta_str(&sb, "namespace").unwrap_or("").to_string();
    let name = meta_str(&sb, "name").unwrap_or("").to_string();
    match modify(cluster, Kind::Sandbox, &ns, &name, Part::Main, |v| {
        set_map_key(v, &["metadata", "labels"], LAUNCH_TYPE_LABEL, Some(launch));
    }) {
        Ok(now) => Ok(now.unwrap_or(sb)),
        Err(e) => Err(ClaimError::Reconciler(format!(
            "failed to initialize launch type label on sandbox {name:?}: {e}"
        ))),
    }
}

/// Drops the claim's reference to a Sandbox it could not adopt.
fn drop_reference(cluster: Cluster<'_>, claim: &Value, from_label: bool) -> Result<(), ClaimError> {
    let ns = meta_str(claim, "namespace").unwrap_or("");
    let name = meta_str(claim, "name").unwrap_or("");
    let path: &[&str] = if from_label {
        &["metadata", "labels"]
    } else {
        &["metadata", "annotations"]
    };
    modify(cluster, Kind::SandboxClaim, ns, name, Part::Main, |v| {
        set_map_key(v, path, SANDBOX_NAME_ANNOTATION, None);
    })
    .map(|_| ())
    .map_err(|e| ClaimError::from_write("failed to remove stale sandbox reference", &e))
}

/// Finds the claim's Sandbox (by status, by its adoption annotation, by name) or adopts a
/// warm member.
fn get_or_adopt(cluster: Cluster<'_>, claim: &Value) -> Result<Lookup, ClaimError> {
    let ns = meta_str(claim, "namespace").unwrap_or("");
    let claim_name = meta_str(claim, "name").unwrap_or("");
    let assigned_annotation = annotation(claim, SANDBOX_NAME_ANNOTATION).filter(|n| !n.is_empty());
    let assigned_label = label(claim, SANDBOX_NAME_ANNOTATION).filter(|n| !n.is_empty());
    if let Some(sname) = str_at(claim, &["status", "sandbox", "name"]).filter(|n| !n.is_empty())
        && let Some(sb) = cluster.api.get(Kind::Sandbox, ns, sname)
        && controlled_by(&sb, claim)
    {
        let warm = assigned_annotation == Some(sname)
            || assigned_label == Some(sname)
            || sname != claim_name;
        let launch = if warm { "warm" } else { "cold" };
        return init_launch_type(cluster, sb, launch).map(Lookup::Found);
    }
    let (assigned, from_label) = match (assigned_annotation, assigned_label) {
        (Some(a), _) => (Some(a), false),
        (None, Some(l)) => (Some(l), true),
        (None, None) => (None, false),
    };
    if let Some(sb_name) = assigned {
        match cluster.api.get(Kind::Sandbox, ns, sb_name) {
            Some(sb) => {
                if controlled_by(&sb, claim) {
                    return init_launch_type(cluster, sb, "warm").map(Lookup::Found);
                }
                let ctrl = controller_of(&sb);
                let by_pool = ctrl.is_some_and(|r| {
                    owner_group(r) == EXTENSIONS_GROUP && owner_kind(r) == "SandboxWarmPool"
                });
                let by_claim = ctrl.is_some_and(|r| {
                    owner_group(r) == EXTENSIONS_GROUP && owner_kind(r) == "SandboxClaim"
                });
                if by_pool {
                    match verify_candidate(&sb, claim) {
                        Ok(()) => return complete_adoption(cluster, claim, &sb).map(Lookup::Found),
                        Err(_) => drop_reference(cluster, claim, from_label)?,
                    }
                } else if by_claim {
                    drop_reference(cluster, claim, from_label)?;
                }
            }
            None => drop_reference(cluster, claim, from_label)?,
        }
    }
    if let Some(sb) = cluster.api.get(Kind::Sandbox, ns, claim_name) {
        if !controlled_by(&sb, claim) {
            return Err(ClaimError::Reconciler(format!(
                "sandbox {claim_name:?} is not controlled by claim {claim_name:?}. Please use a different claim name or delete the sandbox manually"
            )));
        }
        return init_launch_type(cluster, sb, "cold").map(Lookup::Found);
    }
    let has_env = at(claim, &["spec", "env"])
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let has_vcts = at(claim, &["spec", "volumeClaimTemplates"])
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if has_env || has_vcts {
        return Ok(Lookup::Missing);
    }
    adopt_from_pool(cluster, claim)
}

/// Whether a Sandbox is a member of the claim's pool that may be adopted.
fn verify_candidate(sb: &Value, claim: &Value) -> Result<(), String> {
    let ns = meta_str(sb, "namespace").unwrap_or("");
    let name = meta_str(sb, "name").unwrap_or("");
    if ns != meta_str(claim, "namespace").unwrap_or("") {
        return Err("cross-namespace adoption forbidden".into());
    }
    if deleting(sb) {
        return Err("sandbox is deleted".into());
    }
    if label(sb, WARM_POOL_LABEL).is_none() {
        return Err("sandbox is missing the warm pool sandbox label".into());
    }
    if label(sb, TEMPLATE_REF_HASH_LABEL).is_none() {
        return Err("sandbox is missing the sandbox template ref hash label".into());
    }
    let Some(r) = controller_of(sb) else {
        return Err(format!(
            "sandbox {ns}/{name} is unowned and cannot be safely adopted"
        ));
    };
    if owner_group(r) != EXTENSIONS_GROUP || owner_kind(r) != "SandboxWarmPool" {
        return Err(format!("sandbox {ns}/{name} is not managed by warm pool"));
    }
    let want = str_at(claim, &["spec", "warmPoolRef", "name"]).unwrap_or("");
    if owner_name(r) != want {
        return Err(format!("incorrect warm pool, expected {want}"));
    }
    Ok(())
}

fn pod_ips_of(sb: &Value) -> bool {
    at(sb, &["status", "podIPs"])
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// Picks a member of the claim's pool and adopts it.
fn adopt_from_pool(cluster: Cluster<'_>, claim: &Value) -> Result<Lookup, ClaimError> {
    let ns = meta_str(claim, "namespace").unwrap_or("");
    let pool = str_at(claim, &["spec", "warmPoolRef", "name"])
        .and_then(|p| cluster.api.get(Kind::SandboxWarmPool, ns, p));
    // Under Recreate only members of the current template are served. When the pool or (under
    // Recreate) its template cannot be read, upstream adopts nothing: the candidates wait
    // (counted as pending when they have no IP yet) and the claim retries or cold-starts.
    let (unresolved, recreate_template) = match &pool {
        None => (true, None),
        Some(p) if str_at(p, &["spec", "updateStrategy", "type"]) == Some("Recreate") => {
            let tpl = str_at(p, &["spec", "sandboxTemplateRef", "name"])
                .and_then(|t| cluster.api.get(Kind::SandboxTemplate, ns, t));
            (tpl.is_none(), tpl)
        }
        Some(_) => (false, None),
    };
    let want = str_at(claim, &["spec", "warmPoolRef", "name"]).unwrap_or("");
    let mut candidates: Vec<Arc<Value>> = cluster
        .index
        .owned_members(ns, want)
        .filter_map(|(sns, sname)| cluster.api.get(Kind::Sandbox, sns, sname))
        .filter(|sb| verify_candidate(sb, claim).is_ok())
        .collect();
    candidates.sort_by(|a, b| {
        created_at(a)
            .cmp(&created_at(b))
            .then_with(|| meta_str(a, "name").cmp(&meta_str(b, "name")))
    });
    let mut pending = 0usize;
    let mut ready = Vec::new();
    let mut fallback = None;
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for c in &candidates {
        if unresolved {
            if !pod_ips_of(c) {
                pending += 1;
            }
            continue;
        }
        if let Some(tpl) = &recreate_template
            && label(c, TEMPLATE_HASH_LABEL) != Some(blueprint_hash(tpl).as_str())
            && !same_blueprint(tpl, c)
        {
            continue;
        }
        if let Some(node) = str_at(c, &["status", "nodeName"]).filter(|n| !n.is_empty()) {
            *per_node.entry(node.to_string()).or_default() += 1;
        }
        if !pod_ips_of(c) {
            pending += 1;
            continue;
        }
        if condition_true(c, "Ready") {
            ready.push(c.clone());
        } else if fallback.is_none() {
            fallback = Some(c.clone());
        }
    }
    let node_count = |sb: &Value| {
        str_at(sb, &["status", "nodeName"])
            .and_then(|n| per_node.get(n))
            .copied()
            .unwrap_or(0)
    };
    let mut best: Option<Arc<Value>> = None;
    for c in ready {
        if best.as_ref().is_none_or(|b| node_count(&c) > node_count(b)) {
            best = Some(c);
        }
    }
    if let Some(picked) = best.or(fallback) {
        let sb_name = meta_str(&picked, "name").unwrap_or("").to_string();
        let claim_name = meta_str(claim, "name").unwrap_or("");
        modify(
            cluster,
            Kind::SandboxClaim,
            ns,
            claim_name,
            Part::Main,
            |v| {
                set_map_key(
                    v,
                    &["metadata", "annotations"],
                    SANDBOX_NAME_ANNOTATION,
                    Some(&sb_name),
                );
            },
        )
        .map_err(|e| ClaimError::from_write(&format!("claim {claim_name}"), &e))?;
        return complete_adoption(cluster, claim, &picked).map(Lookup::Found);
    }
    if pending > 0
        && let Some(created) = created_at(claim)
    {
        let deadline = created
            + time::Duration::try_from(cluster.config.warm_candidate_grace)
                .unwrap_or(time::Duration::ZERO);
        let now = cluster.api.clock().now_utc();
        if now < deadline {
            return Ok(Lookup::Pending(
                until(now, deadline).min(super::WARM_CANDIDATE_RETRY),
            ));
        }
    }
    Ok(Lookup::Missing)
}

/// Moves a warm member to the claim: labels, eviction hint, ownership, pod template metadata.
fn complete_adoption(
    cluster: Cluster<'_>,
    claim: &Value,
    sb: &Value,
) -> Result<Arc<Value>, ClaimError> {
    let ns = meta_str(sb, "namespace").unwrap_or("").to_string();
    let sb_name = meta_str(sb, "name").unwrap_or("").to_string();
    let tpl = pool_and_template(cluster, claim).ok().map(|(_, t)| t);
    let ref_hash = label(sb, TEMPLATE_REF_HASH_LABEL)
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .or_else(|| {
            tpl.as_ref()
                .map(|t| name_hash(meta_str(t, "name").unwrap_or("")))
        })
        .unwrap_or_default();
    let merged = match &tpl {
        Some(t) => Some(merged_pod_metadata(cluster, t, claim, &ref_hash)?),
        None => None,
    };
    let uid = meta_str(claim, "uid").unwrap_or("").to_string();
    let created_by = label(claim, CREATED_BY_LABEL)
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    let claim_ref = controller_ref(Kind::SandboxClaim, claim);
    let mut lost = None;
    let adopted = modify(cluster, Kind::Sandbox, &ns, &sb_name, Part::Main, |v| {
        if let Err(why) = verify_candidate(v, claim) {
            lost = Some(why);
            return;
        }
        lost = None;
        let labels = ["metadata", "labels"];
        for key in [
            WARM_POOL_LABEL,
            POD_TEMPLATE_HASH_LABEL,
            TEMPLATE_HASH_LABEL,
        ] {
            set_map_key(v, &labels, key, None);
        }
        set_map_key(v, &labels, LAUNCH_TYPE_LABEL, Some("warm"));
        let pt_ann = ["spec", "podTemplate", "metadata", "annotations"];
        if str_at(v, &[&pt_ann[..], &[SAFE_TO_EVICT]].concat()) == Some("true") {
            set_map_key(v, &pt_ann, SAFE_TO_EVICT, None);
        }
        if let Some(md) = crate::meta::metadata_mut(v) {
            md.insert("ownerReferences".into(), json!([claim_ref.clone()]));
        }
        set_map_key(
            v,
            &["metadata", "annotations"],
            POD_NAME_ANNOTATION,
            Some(&sb_name),
        );
        let pt_labels = ["spec", "podTemplate", "metadata", "labels"];
        for path in [&labels[..], &pt_labels[..]] {
            set_map_key(v, path, CLAIM_UID_LABEL, Some(&uid));
            set_map_key(v, path, CREATED_BY_LABEL, created_by.as_deref());
        }
        if !ref_hash.is_empty() {
            set_map_key(v, &labels, TEMPLATE_REF_HASH_LABEL, Some(&ref_hash));
        }
        match &merged {
            Some(m) => {
                if let Some(pt) = obj_at(v, &["spec", "podTemplate"]) {
                    pt.insert("metadata".into(), m.clone());
                }
            }
            None if !ref_hash.is_empty() => {
                set_map_key(v, &pt_labels, TEMPLATE_REF_HASH_LABEL, Some(&ref_hash));
            }
            None => {}
        }
    })
    .map_err(|e| ClaimError::from_write(&format!("completing adoption of {sb_name}"), &e))?;
    if let Some(why) = lost {
        return Err(ClaimError::AdoptionConflict(format!(
            "sandbox {sb_name} is no longer adoptable by claim {}: {why}",
            meta_str(claim, "name").unwrap_or("")
        )));
    }
    let adopted = adopted.ok_or_else(|| {
        ClaimError::AdoptionConflict(format!(
            "sandbox {sb_name} deleted before adoption completed"
        ))
    })?;
    cluster.recorders.claim.emit(
        cluster.api,
        claim,
        EventType::Normal,
        "SandboxAdopted",
        "Adoption",
        &format!("Adopted warm pool Sandbox {sb_name:?}"),
    );
    Ok(adopted)
}

/// Merges claim VCTs into the template's by the template's policy.
fn merge_vcts(
    tpl_vcts: &[Value],
    claim_vcts: &[Value],
    policy: &str,
) -> Result<Vec<Value>, String> {
    validate_vcts(tpl_vcts).map_err(|e| format!("template: {e}"))?;
    if claim_vcts.is_empty() {
        return Ok(tpl_vcts.to_vec());
    }
    validate_vcts(claim_vcts).map_err(|e| format!("claim: {e}"))?;
    let vname = |v: &Value| str_at(v, &["metadata", "name"]).unwrap_or("").to_string();
    match policy {
        "" | "Disallowed" => Err("volume claim templates are disallowed by the template".into()),
        "Allowed" => {
            let names: BTreeSet<String> = tpl_vcts.iter().map(vname).collect();
            if let Some(dup) = claim_vcts.iter().map(vname).find(|n| names.contains(n)) {
                return Err(format!(
                    "overriding volume claim templates is forbidden by the template: cannot override template volume {dup:?}"
                ));
            }
            Ok(tpl_vcts.iter().chain(claim_vcts).cloned().collect())
        }
        "Overrides" => {
            let mut by_name: BTreeMap<String, &Value> =
                claim_vcts.iter().map(|v| (vname(v), v)).collect();
            let mut out = Vec::new();
            for t in tpl_vcts {
                match by_name.remove(&vname(t)) {
                    Some(o) => out.push(o.clone()),
                    None => out.push(t.clone()),
                }
            }
            out.extend(
                claim_vcts
                    .iter()
                    .filter(|v| by_name.contains_key(&vname(v)))
                    .cloned(),
            );
            Ok(out)
        }
        other => Err(format!("unknown volume claim templates policy {other:?}")),
    }
}

fn validate_vcts(vcts: &[Value]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for (i, v) in vcts.iter().enumerate() {
        let n = str_at(v, &["metadata", "name"]).unwrap_or("");
        if n.is_empty() {
            return Err(format!(
                "invalid volume claim templates: name at index {i} is empty"
            ));
        }
        if !seen.insert(n.to_string()) {
            return Err(format!(
                "invalid volume claim templates: duplicate name {n:?}"
            ));
        }
    }
    Ok(())
}

/// Injects the claim's env into one container under the template's policy.
fn inject_env(
    container: &mut Value,
    envs: &[(String, String)],
    policy: &str,
) -> Result<(), ClaimError> {
    let cname = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(c) = container.as_object_mut() else {
        return Ok(());
    };
    if policy == "Allowed"
        && c.get("envFrom")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    {
        return Err(ClaimError::EnvVarsInjectionRejected(format!(
            "container {cname:?} uses EnvFrom sources; Allowed policy cannot safely prevent overriding EnvFrom-provided variables"
        )));
    }
    let list = c.entry("env").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let Some(list) = list.as_array_mut() else {
        return Ok(());
    };
    for (name, value) in envs {
        let existing = list
            .iter()
            .position(|e| e.get("name").and_then(Value::as_str) == Some(name.as_str()));
        match existing {
            Some(_) if policy != "Overrides" => {
                return Err(ClaimError::Reconciler(format!(
                    "environment variable override is not allowed by the template policy for variable {name:?}"
                )));
            }
            Some(i) => {
                if let Some(slot) = list.get_mut(i) {
                    *slot = json!({ "name": name, "value": value });
                }
            }
            None => list.push(json!({ "name": name, "value": value })),
        }
    }
    Ok(())
}

/// Applies the claim's `env` to a pod spec.
fn apply_env(spec: &mut Value, claim: &Value, policy: &str) -> Result<(), ClaimError> {
    let env = at(claim, &["spec", "env"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if env.is_empty() {
        return Ok(());
    }
    if policy != "Allowed" && policy != "Overrides" {
        return Err(ClaimError::EnvVarsInjectionRejected(
            "environment variable injection is not allowed by the template policy".into(),
        ));
    }
    let mut by_container: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut default = Vec::new();
    for e in &env {
        let pair = (
            e.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            e.get("value")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        );
        match e
            .get("containerName")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
        {
            Some(c) => by_container.entry(c.to_string()).or_default().push(pair),
            None => default.push(pair),
        }
    }
    let names: BTreeSet<String> = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    for (c, envs) in &by_container {
        if !names.contains(c) {
            let var = envs.first().map(|(n, _)| n.as_str()).unwrap_or("");
            return Err(ClaimError::Reconciler(format!(
                "target container {c:?} not found in template for environment variable {var:?}"
            )));
        }
    }
    if let Some(inits) = spec.get_mut("initContainers").and_then(Value::as_array_mut) {
        for c in inits {
            let cname = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if let Some(envs) = by_container.get(&cname) {
                inject_env(c, envs, policy)?;
            }
        }
    }
    if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) {
        for (i, c) in containers.iter_mut().enumerate() {
            let cname = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let mut envs = by_container.get(&cname).cloned().unwrap_or_default();
            if i == 0 {
                envs.extend(default.iter().cloned());
            }
            if !envs.is_empty() {
                inject_env(c, &envs, policy)?;
            }
        }
    }
    Ok(())
}

/// Cold start: a Sandbox named after the claim, from the pool's template.
fn create_sandbox(
    cluster: Cluster<'_>,
    claim: &Value,
    tpl: &Value,
) -> Result<Arc<Value>, ClaimError> {
    let ns = meta_str(claim, "namespace").unwrap_or("");
    let claim_name = meta_str(claim, "name").unwrap_or("");
    let tpl_name = meta_str(tpl, "name").unwrap_or("");
    let ref_hash = name_hash(tpl_name);
    let mut spec = blueprint(tpl);
    let tpl_vcts = at(tpl, &["spec", "volumeClaimTemplates"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let claim_vcts = at(claim, &["spec", "volumeClaimTemplates"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if claim_vcts.is_empty() {
        validate_vcts(&tpl_vcts).map_err(|e| {
            ClaimError::VolumeClaimTemplates(format!(
                "invalid volume claim templates in template: {e}"
            ))
        })?;
    } else {
        let policy = str_at(tpl, &["spec", "volumeClaimTemplatesPolicy"]).unwrap_or("");
        let merged = merge_vcts(&tpl_vcts, &claim_vcts, policy).map_err(|e| {
            ClaimError::VolumeClaimTemplates(format!("failed to merge volume claim templates: {e}"))
        })?;
        if let Some(o) = spec.as_object_mut()
            && !merged.is_empty()
        {
            o.insert("volumeClaimTemplates".into(), json!(merged));
        }
    }
    let uid = meta_str(claim, "uid").unwrap_or("");
    let created_by = label(claim, CREATED_BY_LABEL).filter(|v| !v.is_empty());
    let mut labels = BTreeMap::new();
    labels.insert(CLAIM_UID_LABEL.to_string(), uid.to_string());
    if let Some(c) = created_by {
        labels.insert(CREATED_BY_LABEL.to_string(), c.to_string());
    }
    labels.insert(LAUNCH_TYPE_LABEL.to_string(), "cold".to_string());
    labels.insert(TEMPLATE_REF_HASH_LABEL.to_string(), ref_hash.clone());
    let mut pt_labels = string_map(&spec, &["podTemplate", "metadata", "labels"]);
    let mut pt_annotations = string_map(&spec, &["podTemplate", "metadata", "annotations"]);
    pt_labels.insert(CLAIM_UID_LABEL.into(), uid.into());
    match created_by {
        Some(c) => {
            pt_labels.insert(CREATED_BY_LABEL.into(), c.into());
        }
        None => {
            pt_labels.remove(CREATED_BY_LABEL);
        }
    }
    pt_labels.insert(TEMPLATE_REF_HASH_LABEL.into(), ref_hash);
    merge_additional(cluster, claim, &mut pt_labels, &mut pt_annotations)?;
    if let Some(pt) = obj_at(&mut spec, &["podTemplate"]) {
        pt.insert("metadata".into(), pod_metadata(&pt_labels, &pt_annotations));
    }
    let policy = str_at(tpl, &["spec", "envVarsInjectionPolicy"]).unwrap_or("");
    if let Some(pt) = obj_at(&mut spec, &["podTemplate"]) {
        let pod_spec = pt.entry("spec").or_insert_with(|| json!({}));
        apply_env(pod_spec, claim, policy)?;
        apply_secure_defaults(tpl, pod_spec);
    }
    let body = json!({
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": {
            "name": claim_name,
            "namespace": ns,
            "labels": labels,
            "annotations": { TEMPLATE_REF_ANNOTATION: tpl_name },
            "ownerReferences": [controller_ref(Kind::SandboxClaim, claim)],
        },
        "spec": spec,
    });
    match super::create(cluster, Kind::Sandbox, ns, body) {
        Ok(sb) => {
            cluster.recorders.claim.emit(
                cluster.api,
                claim,
                EventType::Normal,
                "SandboxProvisioned",
                "Provisioning",
                &format!("Created Sandbox {claim_name:?}"),
            );
            Ok(sb)
        }
        Err(e) if e.code == 409 => Err(ClaimError::CreatePending),
        Err(e) => Err(ClaimError::Reconciler(format!(
            "sandbox create error: {}",
            e.message
        ))),
    }
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A label value or the name part of a qualified name: at most 63 characters, alphanumeric at
/// both ends, `-`, `_` and `.` inside.
fn is_label_value(s: &str, allow_empty: bool) -> bool {
    if s.is_empty() {
        return allow_empty;
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    s.len() <= 63
        && alnum(s.chars().next())
        && alnum(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn qualified_name_error(key: &str) -> Option<&'static str> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty() || p.len() > 253 || !p.split('.').all(is_dns_label))
    {
        return Some("prefix part must be a lowercase RFC 1123 subdomain");
    }
    if !is_label_value(name, false) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        );
    }
    None
}

/// Checks `additionalPodMetadata` as upstream does; the error names the first bad key.
fn validate_metadata(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    allowed: &[String],
) -> Result<(), String> {
    let in_domain = |domain: &str, d: &str| domain == d || domain.ends_with(&format!(".{d}"));
    for (k, v) in labels {
        let check = || -> Result<(), String> {
            if let Some(e) = qualified_name_error(k) {
                return Err(format!("invalid label key: {k:?}: {e}"));
            }
            if k.eq_ignore_ascii_case("app") && v.eq_ignore_ascii_case("sandbox-router") {
                return Err(format!(
                    "restricted system label value: {k:?}={v:?} is not allowed in AdditionalPodMetadata"
                ));
            }
            let Some((domain, _)) = k.split_once('/') else {
                return Err(format!(
                    "label {k:?} must have a domain prefix (e.g. 'sandbox.users.io/my-label') to prevent opting into unintended policy domains"
                ));
            };
            let domain = domain.to_lowercase();
            if !allowed.iter().any(|d| in_domain(&domain, d)) {
                return Err(format!("label domain {domain:?} is not in the allowlist"));
            }
            if !is_label_value(v, true) {
                return Err(format!(
                    "invalid label value: {v:?} does not match allowed pattern: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                ));
            }
            Ok(())
        };
        check().map_err(|e| format!("failed to validate label {k:?}: {e}"))?;
    }
    for k in annotations.keys() {
        let check = || -> Result<(), String> {
            if let Some(e) = qualified_name_error(k) {
                return Err(format!("invalid annotation key: {k:?}: {e}"));
            }
            let domain = k
                .split_once('/')
                .map(|(d, _)| d.to_lowercase())
                .unwrap_or_default();
            let restricted = ["kubernetes.io", "k8s.io", "agents.x-k8s.io"]
                .iter()
                .any(|d| in_domain(&domain, d));
            if restricted && k != SAFE_TO_EVICT {
                return Err(format!(
                    "restricted system domain: {k:?} is not allowed in AdditionalPodMetadata"
                ));
            }
            Ok(())
        };
        check().map_err(|e| format!("failed to validate annotation {k:?}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn metadata_labels_need_an_allowed_domain() {
        let allowed = vec!["sandbox.users.io".to_string()];
        assert!(
            validate_metadata(
                &map(&[("team.sandbox.users.io/x", "a")]),
                &map(&[]),
                &allowed
            )
            .is_ok()
        );
        let e = validate_metadata(&map(&[("plain", "a")]), &map(&[]), &allowed);
        assert!(e.is_err_and(|m| m.contains("must have a domain prefix")));
        let e = validate_metadata(&map(&[("other.io/x", "a")]), &map(&[]), &allowed);
        assert!(e.is_err_and(|m| m.contains("label domain \"other.io\" is not in the allowlist")));
    }

    #[test]
    fn metadata_annotations_may_not_use_system_domains_except_safe_to_evict() {
        let allowed = vec!["sandbox.users.io".to_string()];
        let e = validate_metadata(&map(&[]), &map(&[("foo.kubernetes.io/x", "a")]), &allowed);
        assert!(e.is_err_and(|m| m.contains("restricted system domain")));
        assert!(validate_metadata(&map(&[]), &map(&[(SAFE_TO_EVICT, "false")]), &allowed).is_ok());
        assert!(validate_metadata(&map(&[]), &map(&[("note", "x")]), &allowed).is_ok());
    }

    #[test]
    fn vct_policy_allowed_refuses_overriding_a_template_volume() {
        let v = |n: &str| json!({ "metadata": { "name": n }, "spec": {} });
        let e = merge_vcts(&[v("data")], &[v("data")], "Allowed");
        assert!(e.is_err_and(|m| m.contains("cannot override template volume \"data\"")));
        let ok = merge_vcts(&[v("data")], &[v("more")], "Allowed").unwrap_or_default();
        assert_eq!(ok.len(), 2);
        let e = merge_vcts(&[], &[v("x")], "Disallowed");
        assert_eq!(
            e,
            Err("volume claim templates are disallowed by the template".to_string())
        );
    }

    #[test]
    fn vct_policy_overrides_replaces_by_name_then_appends() {
        let v = |n: &str, s: i64| json!({ "metadata": { "name": n }, "spec": { "x": s } });
        let out = merge_vcts(
            &[v("a", 1), v("b", 1)],
            &[v("b", 2), v("c", 2)],
            "Overrides",
        )
        .unwrap_or_default();
        let got: Vec<(String, i64)> = out
            .iter()
            .map(|x| {
                (
                    str_at(x, &["metadata", "name"]).unwrap_or("").to_string(),
                    x["spec"]["x"].as_i64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a".to_string(), 1),
                ("b".to_string(), 2),
                ("c".to_string(), 2)
            ]
        );
    }

    #[test]
    fn env_goes_to_the_first_container_unless_named() {
        let mut spec = json!({ "containers": [ { "name": "a" }, { "name": "b" } ] });
        let claim = json!({ "spec": { "env": [
            { "name": "X", "value": "1" },
            { "name": "Y", "value": "2", "containerName": "b" },
        ] } });
        assert!(apply_env(&mut spec, &claim, "Allowed").is_ok());
        assert_eq!(
            spec["containers"][0]["env"],
            json!([{ "name": "X", "value": "1" }])
        );
        assert_eq!(
            spec["containers"][1]["env"],
            json!([{ "name": "Y", "value": "2" }])
        );
    }

    #[test]
    fn env_is_rejected_unless_the_template_allows_it() {
        let mut spec = json!({ "containers": [ { "name": "a" } ] });
        let claim = json!({ "spec": { "env": [ { "name": "X", "value": "1" } ] } });
        let e = apply_env(&mut spec, &claim, "Disallowed");
        assert_eq!(
            e.map_err(|e| e.ready(1).message),
            Err("environment variable injection rejected: environment variable injection is not allowed by the template policy".to_string())
        );
    }

    #[test]
    fn env_override_needs_the_overrides_policy() {
        let claim = json!({ "spec": { "env": [ { "name": "X", "value": "new" } ] } });
        let mut spec = json!({ "containers": [ { "name": "a", "env": [ { "name": "X", "value": "old" } ] } ] });
        let e = apply_env(&mut spec, &claim, "Allowed");
        assert!(matches!(e, Err(ClaimError::Reconciler(_))));
        assert!(apply_env(&mut spec, &claim, "Overrides").is_ok());
        assert_eq!(spec["containers"][0]["env"][0]["value"], "new");
    }

    #[test]
    fn expiry_takes_the_earlier_of_shutdown_time_and_ttl_after_finished() {
        let now = OffsetDateTime::now_utc();
        let fmt = |t: OffsetDateTime| crate::meta::format_time(t);
        let claim = json!({ "spec": { "lifecycle": {
            "shutdownTime": fmt(now + time::Duration::hours(1)),
            "ttlSecondsAfterFinished": 10,
        } } });
        let finished = vec![json!({ "type": "Finished", "status": "True",
            "lastTransitionTime": fmt(now - time::Duration::seconds(20)) })];
        assert_eq!(expiry(&claim, &finished, now), (true, None));
        let (expired, left) = expiry(&claim, &[], now);
        assert!(!expired);
        assert!(left.is_some_and(|d| d > Duration::from_secs(3500)));
    }

    #[test]
    fn claim_errors_give_upstream_reasons_and_messages() {
        let c = ClaimError::WarmPoolNotFound("p".into()).ready(4);
        assert_eq!(
            (c.reason.as_str(), c.message.as_str(), c.observed_generation),
            ("WarmPoolNotFound", "SandboxWarmPool \"p\" not found", 4)
        );
        let c = ClaimError::Reconciler("boom".into()).ready(1);
        assert_eq!(c.message, "Error seen: boom");
    }
}
