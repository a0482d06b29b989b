//! The objects the adapter sends (a Sandbox in direct mode, a SandboxClaim in warm-pool mode),
//! views of the objects it reads back (Sandboxes, claims, pods, lists), and the pure rules that
//! turn what it reads into a contract [`SandboxState`].
//!
//! Nothing here does I/O: the provider fetches, these functions decide.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use sandbox_contract::{CreateRequest, Resources, SandboxState};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::config::AdapterConfig;

/// The API group and version of Sandboxes.
pub(crate) const SANDBOX_API_VERSION: &str = "agents.x-k8s.io/v1beta1";

/// The API group and version of SandboxClaims and SandboxWarmPools.
pub(crate) const EXTENSIONS_API_VERSION: &str = "extensions.agents.x-k8s.io/v1beta1";

/// The label naming the pool that created an object; list and reconcile select on it.
pub const POOL_LABEL: &str = "sandbox.differently.dev/pool";

/// The label holding the sandbox id of an object the pool created.
pub const ID_LABEL: &str = "sandbox.differently.dev/id";

/// The prefix under which a request's labels are stored as Kubernetes labels.
pub const REQUEST_LABEL_PREFIX: &str = "labels.sandbox.differently.dev/";

/// The annotation holding the request's template.
pub const TEMPLATE_ANNOTATION: &str = "sandbox.differently.dev/template";

/// The container the adapter creates in direct mode.
pub(crate) const CONTAINER_NAME: &str = "sandbox";

/// The name of the per-sandbox volume (its PVC is `workspace-<sandbox>`).
pub(crate) const VOLUME_NAME: &str = "workspace";

/// The command that replaces the image's entrypoint: a shell loop that keeps the pod alive and
/// ends at once on SIGTERM, so a stop does not wait out the grace period.
pub(crate) const KEEP_ALIVE: &str = "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done";

/// Metadata of an object the adapter creates.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NewMeta {
    /// The object's name (the sandbox id).
    pub(crate) name: String,
    /// The pool, id and request labels.
    pub(crate) labels: BTreeMap<String, String>,
    /// The template annotation, when the request named one.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) annotations: BTreeMap<String, String>,
}

/// A Sandbox as direct mode creates it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SandboxManifest {
    /// `agents.x-k8s.io/v1beta1`.
    pub(crate) api_version: &'static str,
    /// `Sandbox`.
    pub(crate) kind: &'static str,
    /// Name, labels, annotations.
    pub(crate) metadata: NewMeta,
    /// The pod template, volume, service and shutdown.
    pub(crate) spec: SandboxSpec,
}

/// The spec of a created Sandbox.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SandboxSpec {
    /// The pod.
    pub(crate) pod_template: PodTemplate,
    /// One PVC template when `volumeSize` is set.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) volume_claim_templates: Vec<VolumeClaimTemplate>,
    /// `true` when `ports.expose` is offered: a headless Service gives the sandbox a DNS name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) service: Option<bool>,
    /// The TTL backstop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shutdown_time: Option<String>,
    /// `Delete` with a shutdown time, so the controller removes the whole Sandbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shutdown_policy: Option<&'static str>,
}

/// The pod template of a created Sandbox.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PodTemplate {
    /// The pod's labels.
    pub(crate) metadata: PodTemplateMeta,
    /// The pod's spec.
    pub(crate) spec: PodSpec,
}

/// Labels of the pod.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PodTemplateMeta {
    /// The pool and id labels.
    pub(crate) labels: BTreeMap<String, String>,
}

/// The pod's spec: one container, no service account token.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSpec {
    /// Always `false`: the sandbox gets no Kubernetes credentials.
    pub(crate) automount_service_account_token: bool,
    /// `serviceAccountName`, when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) service_account_name: Option<String>,
    /// `runtimeClassName`, when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) runtime_class_name: Option<String>,
    /// The sandbox container.
    pub(crate) containers: Vec<Container>,
}

/// The sandbox container.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Container {
    /// `sandbox`.
    pub(crate) name: &'static str,
    /// The request's template, or `image`.
    pub(crate) image: String,
    /// `/bin/sh -c <keep-alive loop>`.
    pub(crate) command: Vec<String>,
    /// The request's environment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) env: Vec<EnvVar>,
    /// Requests and limits from the request's resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) resources: Option<ResourceRequirements>,
    /// The volume's mount, when there is one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) volume_mounts: Vec<VolumeMount>,
}

/// One environment variable.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvVar {
    /// Its name.
    pub(crate) name: String,
    /// Its value.
    pub(crate) value: String,
    /// For claims: the container it goes to (`container`), else the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) container_name: Option<String>,
}

/// Requests and limits (equal).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ResourceRequirements {
    /// What the scheduler reserves.
    pub(crate) requests: BTreeMap<&'static str, String>,
    /// What the container may use.
    pub(crate) limits: BTreeMap<&'static str, String>,
}

/// A volume mount.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VolumeMount {
    /// `workspace`.
    pub(crate) name: &'static str,
    /// `volumePath`.
    pub(crate) mount_path: String,
}

/// The PVC template of a Sandbox with a volume.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct VolumeClaimTemplate {
    /// Its name (`workspace`) and labels.
    pub(crate) metadata: PvcMeta,
    /// Size, access mode, storage class.
    pub(crate) spec: PvcSpec,
}

/// Metadata of the PVC template.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PvcMeta {
    /// `workspace`.
    pub(crate) name: &'static str,
    /// The pool and id labels.
    pub(crate) labels: BTreeMap<String, String>,
}

/// The PVC spec.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PvcSpec {
    /// `ReadWriteOnce`.
    pub(crate) access_modes: Vec<&'static str>,
    /// The requested size.
    pub(crate) resources: PvcResources,
    /// `storageClassName`, when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) storage_class_name: Option<String>,
}

/// The PVC's requested storage.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PvcResources {
    /// `storage: <volumeSize>`.
    pub(crate) requests: BTreeMap<&'static str, String>,
}

/// A SandboxClaim as warm-pool mode creates it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClaimManifest {
    /// `extensions.agents.x-k8s.io/v1beta1`.
    pub(crate) api_version: &'static str,
    /// `SandboxClaim`.
    pub(crate) kind: &'static str,
    /// Name, labels, annotations.
    pub(crate) metadata: NewMeta,
    /// The warm pool, lifecycle and env.
    pub(crate) spec: ClaimSpec,
}

/// The spec of a created claim.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClaimSpec {
    /// The warm pool to claim from.
    pub(crate) warm_pool_ref: NameRef,
    /// The TTL backstop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lifecycle: Option<ClaimLifecycle>,
    /// The request's env; non-empty env makes the controller start a fresh Sandbox.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) env: Vec<EnvVar>,
}

/// A reference by name.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NameRef {
    /// The name.
    pub(crate) name: String,
}

/// The claim's lifecycle.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClaimLifecycle {
    /// When the claim expires.
    pub(crate) shutdown_time: String,
    /// `Delete`: the claim goes, and its Sandbox with it.
    pub(crate) shutdown_policy: &'static str,
}

/// The labels every object of `pool` for sandbox `id` carries, plus the request's labels.
pub(crate) fn object_labels(
    pool: &str,
    id: &str,
    request_labels: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (POOL_LABEL.to_owned(), pool.to_owned()),
        (ID_LABEL.to_owned(), id.to_owned()),
    ]);
    for (key, value) in request_labels {
        labels.insert(format!("{REQUEST_LABEL_PREFIX}{key}"), value.clone());
    }
    labels
}

/// The request labels stored on an object, without the prefix.
pub(crate) fn request_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .filter_map(|(key, value)| {
            key.strip_prefix(REQUEST_LABEL_PREFIX)
                .map(|k| (k.to_owned(), value.clone()))
        })
        .collect()
}

/// The metadata of a created object.
fn new_meta(pool: &str, request: &CreateRequest) -> NewMeta {
    let mut annotations = BTreeMap::new();
    if let Some(template) = &request.template {
        annotations.insert(TEMPLATE_ANNOTATION.to_owned(), template.clone());
    }
    NewMeta {
        name: request.id.as_str().to_owned(),
        labels: object_labels(pool, request.id.as_str(), &request.labels),
        annotations,
    }
}

/// A CPU quantity from thousandths of a core: `2` or `500m`.
pub(crate) fn cpu_quantity(millis: u32) -> String {
    if millis.is_multiple_of(1000) {
        (millis / 1000).to_string()
    } else {
        format!("{millis}m")
    }
}

/// Requests and limits for `resources`, or `None` when it asks for nothing.
fn resource_requirements(resources: &Resources) -> Option<ResourceRequirements> {
    let mut amounts = BTreeMap::new();
    if let Some(cpu) = resources.cpu_millis {
        amounts.insert("cpu", cpu_quantity(cpu));
    }
    if let Some(memory) = resources.memory_mib {
        amounts.insert("memory", format!("{memory}Mi"));
    }
    if let Some(disk) = resources.disk_gib {
        amounts.insert("ephemeral-storage", format!("{disk}Gi"));
    }
    (!amounts.is_empty()).then(|| ResourceRequirements {
        requests: amounts.clone(),
        limits: amounts,
    })
}

/// Builds the Sandbox for `request` in direct mode.
pub(crate) fn sandbox_manifest(
    pool: &str,
    config: &AdapterConfig,
    request: &CreateRequest,
    expose: bool,
    shutdown_time: Option<String>,
) -> SandboxManifest {
    let metadata = new_meta(pool, request);
    let ids = object_labels(pool, request.id.as_str(), &BTreeMap::new());
    let image = request
        .template
        .clone()
        .unwrap_or_else(|| config.image.clone());
    let (volume_claim_templates, volume_mounts) = match &config.volume_size {
        Some(size) => (
            vec![VolumeClaimTemplate {
                metadata: PvcMeta {
                    name: VOLUME_NAME,
                    labels: ids.clone(),
                },
                spec: PvcSpec {
                    access_modes: vec!["ReadWriteOnce"],
                    resources: PvcResources {
                        requests: BTreeMap::from([("storage", size.clone())]),
                    },
                    storage_class_name: config.storage_class_name.clone(),
                },
            }],
            vec![VolumeMount {
                name: VOLUME_NAME,
                mount_path: config.volume_path.clone(),
            }],
        ),
        None => (Vec::new(), Vec::new()),
    };
    let env = request
        .env
        .iter()
        .map(|(name, value)| EnvVar {
            name: name.clone(),
            value: value.clone(),
            container_name: None,
        })
        .collect();
    let has_shutdown = shutdown_time.is_some();
    SandboxManifest {
        api_version: SANDBOX_API_VERSION,
        kind: "Sandbox",
        metadata,
        spec: SandboxSpec {
            pod_template: PodTemplate {
                metadata: PodTemplateMeta { labels: ids },
                spec: PodSpec {
                    automount_service_account_token: false,
                    service_account_name: config.service_account_name.clone(),
                    runtime_class_name: config.runtime_class_name.clone(),
                    containers: vec![Container {
                        name: CONTAINER_NAME,
                        image,
                        command: vec!["/bin/sh".into(), "-c".into(), KEEP_ALIVE.into()],
                        env,
                        resources: resource_requirements(&request.resources),
                        volume_mounts,
                    }],
                },
            },
            volume_claim_templates,
            service: expose.then_some(true),
            shutdown_time,
            shutdown_policy: has_shutdown.then_some("Delete"),
        },
    }
}

/// Builds the SandboxClaim for `request` in warm-pool mode.
pub(crate) fn claim_manifest(
    pool: &str,
    warm_pool: &str,
    container: Option<&str>,
    request: &CreateRequest,
    shutdown_time: Option<String>,
) -> ClaimManifest {
    ClaimManifest {
        api_version: EXTENSIONS_API_VERSION,
        kind: "SandboxClaim",
        metadata: new_meta(pool, request),
        spec: ClaimSpec {
            warm_pool_ref: NameRef {
                name: warm_pool.to_owned(),
            },
            lifecycle: shutdown_time.map(|shutdown_time| ClaimLifecycle {
                shutdown_time,
                shutdown_policy: "Delete",
            }),
            env: request
                .env
                .iter()
                .map(|(name, value)| EnvVar {
                    name: name.clone(),
                    value: value.clone(),
                    container_name: container.map(str::to_owned),
                })
                .collect(),
        },
    }
}

/// Formats the time `ttl` from `now` for `shutdownTime`, rounded up to a whole second.
pub(crate) fn shutdown_time(now: SystemTime, ttl: Duration) -> Option<String> {
    let at = now.checked_add(ttl)?;
    let since = at.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    let secs = since
        .as_secs()
        .checked_add(u64::from(since.subsec_nanos() > 0))?;
    let at = OffsetDateTime::from_unix_timestamp(i64::try_from(secs).ok()?).ok()?;
    at.format(&Rfc3339).ok()
}

/// Parses a Kubernetes timestamp.
pub(crate) fn parse_time(text: &str) -> Option<SystemTime> {
    let at = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    Some(SystemTime::from(at))
}

/// Metadata of an object read back.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ObjectMeta {
    /// Name.
    pub(crate) name: String,
    /// Labels.
    pub(crate) labels: BTreeMap<String, String>,
    /// Annotations.
    pub(crate) annotations: BTreeMap<String, String>,
    /// Spec generation.
    pub(crate) generation: i64,
    /// Resource version.
    pub(crate) resource_version: String,
    /// When the object was created.
    pub(crate) creation_timestamp: Option<String>,
    /// Set once deletion has begun.
    pub(crate) deletion_timestamp: Option<String>,
}

/// Any object, read for its metadata only.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ObjectMetaOnly {
    /// Metadata.
    pub(crate) metadata: ObjectMeta,
}

/// A status condition.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Condition {
    /// `Ready`, `Suspended`...
    #[serde(rename = "type")]
    pub(crate) kind: String,
    /// `True`, `False` or `Unknown`.
    pub(crate) status: String,
    /// A CamelCase reason.
    pub(crate) reason: String,
    /// A sentence.
    pub(crate) message: String,
    /// The generation the condition was computed for.
    pub(crate) observed_generation: Option<i64>,
}

/// Finds the condition of type `kind`.
fn condition<'a>(conditions: &'a [Condition], kind: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.kind == kind)
}

/// A Sandbox read back.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SandboxView {
    /// Metadata.
    pub(crate) metadata: ObjectMeta,
    /// The parts of the spec the adapter reads.
    pub(crate) spec: SandboxSpecView,
    /// The status.
    pub(crate) status: SandboxStatusView,
}

/// The parts of a Sandbox spec the adapter reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct SandboxSpecView {
    /// `Running` or `Suspended`.
    pub(crate) operating_mode: Option<String>,
    /// The TTL backstop.
    pub(crate) shutdown_time: Option<String>,
}

/// A Sandbox's status.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct SandboxStatusView {
    /// Conditions.
    pub(crate) conditions: Vec<Condition>,
    /// The pod's IPs.
    #[serde(rename = "podIPs")]
    pub(crate) pod_ips: Vec<String>,
}

impl SandboxView {
    /// Returns whether the spec asks for the sandbox to be suspended.
    pub(crate) fn is_suspended_mode(&self) -> bool {
        self.spec.operating_mode.as_deref() == Some("Suspended")
    }

    /// Returns the name of the pod behind the Sandbox.
    pub(crate) fn pod_name(&self) -> &str {
        self.metadata
            .annotations
            .get("agents.x-k8s.io/pod-name")
            .filter(|n| !n.is_empty())
            .map_or(self.metadata.name.as_str(), String::as_str)
    }
}

/// What the Sandbox's conditions say about readiness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Ready for the current generation.
    Ready,
    /// Not (yet) ready; the reason and message say why.
    Pending(String),
    /// The cluster's admission refuses the Sandbox's pod (a RuntimeClass, service account or
    /// PriorityClass that does not exist): it will not be created until the cluster changes.
    Refused(String),
    /// Suspended (or being suspended).
    Suspended {
        /// Whether the pod is gone.
        done: bool,
    },
    /// Expired by its shutdown time.
    Expired,
    /// Failed for good (`PodFailed`, `PodSucceeded`).
    Failed(String),
}

/// Reads a Sandbox's readiness, trusting only conditions computed for its current generation.
pub(crate) fn sandbox_readiness(sandbox: &SandboxView) -> Readiness {
    let generation = sandbox.metadata.generation;
    let conditions = &sandbox.status.conditions;
    if sandbox.is_suspended_mode() {
        let done = condition(conditions, "Suspended").is_some_and(|c| {
            c.status == "True" && c.observed_generation.is_none_or(|g| g == generation)
        });
        return Readiness::Suspended { done };
    }
    let Some(ready) = condition(conditions, "Ready") else {
        return Readiness::Pending("no Ready condition yet".to_owned());
    };
    if ready.reason == "SandboxExpired" {
        return Readiness::Expired;
    }
    if ready.observed_generation.is_some_and(|g| g != generation) {
        return Readiness::Pending(format!(
            "Ready is for generation {}, the Sandbox is at {generation}",
            ready.observed_generation.unwrap_or_default()
        ));
    }
    match (ready.status.as_str(), ready.reason.as_str()) {
        ("True", _) => Readiness::Ready,
        (_, "PodFailed" | "PodSucceeded") => {
            Readiness::Failed(format!("{}: {}", ready.reason, ready.message))
        }
        (_, "ReconcilerError") if pod_refused(&ready.message) => {
            Readiness::Refused(ready.message.trim_start_matches("Error seen: ").to_owned())
        }
        _ => Readiness::Pending(format!("{}: {}", ready.reason, ready.message)),
    }
}

/// Whether a controller's error says the API server's admission refused to create the pod
/// (`pods "NAME" is forbidden: pod rejected: RuntimeClass "kata" not found`), as opposed to a
/// transient error or RBAC's refusal of the controller itself (`... cannot create resource`).
fn pod_refused(message: &str) -> bool {
    message
        .find("pods \"")
        .and_then(|at| message[at..].find("\" is forbidden: "))
        .is_some()
        && !message.contains("cannot create resource")
}

/// A claim read back.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ClaimView {
    /// Metadata.
    pub(crate) metadata: ObjectMeta,
    /// The parts of the spec the adapter reads.
    pub(crate) spec: ClaimSpecView,
    /// The status.
    pub(crate) status: ClaimStatusView,
}

/// The parts of a claim spec the adapter reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ClaimSpecView {
    /// The lifecycle.
    pub(crate) lifecycle: Option<ClaimLifecycleView>,
}

/// A claim's lifecycle.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ClaimLifecycleView {
    /// When the claim expires.
    pub(crate) shutdown_time: Option<String>,
}

/// A claim's status.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ClaimStatusView {
    /// Conditions.
    pub(crate) conditions: Vec<Condition>,
    /// The Sandbox the claim got.
    pub(crate) sandbox: Option<ClaimSandbox>,
}

/// The Sandbox a claim got.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ClaimSandbox {
    /// Its name.
    pub(crate) name: String,
    /// Its pod's IPs.
    #[serde(rename = "podIPs")]
    pub(crate) pod_ips: Vec<String>,
}

/// Claim reasons after which waiting is pointless.
const TERMINAL_CLAIM_REASONS: [&str; 8] = [
    "TemplateNotFound",
    "WarmPoolNotFound",
    "InvalidMetadata",
    "EnvVarsInjectionRejected",
    "VolumeClaimTemplatesError",
    "ClaimExpired",
    "SandboxExpired",
    "ReconcilerError",
];

/// What a claim's conditions say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClaimReadiness {
    /// Ready, with the Sandbox's name.
    Ready(String),
    /// Not yet.
    Pending(String),
    /// It will not become ready: the reason and message.
    Refused {
        /// The condition's reason.
        reason: String,
        /// The condition's message.
        message: String,
    },
}

/// Reads a claim's readiness for its current generation.
pub(crate) fn claim_readiness(claim: &ClaimView) -> ClaimReadiness {
    let generation = claim.metadata.generation;
    let Some(ready) = condition(&claim.status.conditions, "Ready") else {
        return ClaimReadiness::Pending("no Ready condition yet".to_owned());
    };
    if TERMINAL_CLAIM_REASONS.contains(&ready.reason.as_str()) && ready.status != "True" {
        return ClaimReadiness::Refused {
            reason: ready.reason.clone(),
            message: ready.message.clone(),
        };
    }
    if ready.observed_generation.is_some_and(|g| g != generation) {
        return ClaimReadiness::Pending("Ready is for an older generation".to_owned());
    }
    let sandbox = claim
        .status
        .sandbox
        .as_ref()
        .map(|s| s.name.clone())
        .filter(|n| !n.is_empty());
    match (ready.status.as_str(), sandbox) {
        ("True", Some(name)) => ClaimReadiness::Ready(name),
        _ => ClaimReadiness::Pending(format!("{}: {}", ready.reason, ready.message)),
    }
}

/// A pod read back.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PodView {
    /// Metadata.
    pub(crate) metadata: ObjectMeta,
    /// Status.
    pub(crate) status: PodStatusView,
}

/// A pod's status.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodStatusView {
    /// `Pending`, `Running`, `Succeeded`, `Failed`.
    pub(crate) phase: String,
    /// The containers.
    pub(crate) container_statuses: Vec<ContainerStatus>,
    /// The init containers.
    pub(crate) init_container_statuses: Vec<ContainerStatus>,
    /// The pod's IPs.
    #[serde(rename = "podIPs")]
    pub(crate) pod_ips: Vec<PodIp>,
}

/// One pod IP.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PodIp {
    /// The address.
    pub(crate) ip: String,
}

/// A container's status.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ContainerStatus {
    /// The container's name.
    pub(crate) name: String,
    /// Its state.
    pub(crate) state: ContainerState,
}

/// A container's state.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ContainerState {
    /// Set while it waits (pulling, backing off).
    pub(crate) waiting: Option<Waiting>,
}

/// Why a container waits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Waiting {
    /// `ErrImagePull`, `CrashLoopBackOff`...
    pub(crate) reason: String,
    /// The kubelet's message.
    pub(crate) message: String,
}

/// Something wrong with a pod that waiting will not fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PodProblem {
    /// The image cannot be pulled: it does not exist (or is not reachable).
    MissingImage(String),
    /// The container keeps crashing.
    CrashLoop(String),
    /// The pod ended.
    Ended(String),
}

/// Reads the pod's container statuses for a problem waiting will not fix.
pub(crate) fn pod_problem(pod: &PodView) -> Option<PodProblem> {
    let statuses = pod
        .status
        .init_container_statuses
        .iter()
        .chain(&pod.status.container_statuses);
    for status in statuses {
        let Some(waiting) = &status.state.waiting else {
            continue;
        };
        let detail = if waiting.message.is_empty() {
            format!("container {}: {}", status.name, waiting.reason)
        } else {
            format!(
                "container {}: {}: {}",
                status.name, waiting.reason, waiting.message
            )
        };
        match waiting.reason.as_str() {
            "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" | "ErrImageNeverPull" => {
                return Some(PodProblem::MissingImage(detail));
            }
            "CrashLoopBackOff" | "RunContainerError" | "CreateContainerError" => {
                return Some(PodProblem::CrashLoop(detail));
            }
            _ => {}
        }
    }
    match pod.status.phase.as_str() {
        "Failed" | "Succeeded" => Some(PodProblem::Ended(format!(
            "the pod's phase is {}",
            pod.status.phase
        ))),
        _ => None,
    }
}

/// The contract state of a Sandbox, from the Sandbox and, when it is not ready, its pod.
pub(crate) fn sandbox_state(
    sandbox: &SandboxView,
    pod: Option<&PodView>,
) -> (SandboxState, Option<String>) {
    if sandbox.metadata.deletion_timestamp.is_some() {
        return (SandboxState::Deleting, None);
    }
    match sandbox_readiness(sandbox) {
        Readiness::Ready => (SandboxState::Running, None),
        Readiness::Suspended { done: true } => (SandboxState::Stopped, None),
        Readiness::Suspended { done: false } => (SandboxState::Stopping, None),
        Readiness::Expired => (SandboxState::Deleting, Some("SandboxExpired".to_owned())),
        Readiness::Failed(why) | Readiness::Refused(why) => (SandboxState::Failed, Some(why)),
        Readiness::Pending(why) => match pod.and_then(pod_problem) {
            Some(PodProblem::MissingImage(detail) | PodProblem::CrashLoop(detail)) => {
                (SandboxState::Failed, Some(detail))
            }
            Some(PodProblem::Ended(detail)) => (SandboxState::Failed, Some(detail)),
            None => (SandboxState::Creating, Some(why)),
        },
    }
}

/// One page of a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(bound = "T: Deserialize<'de>")]
pub(crate) struct ListView<T> {
    /// The list's metadata.
    #[serde(default)]
    pub(crate) metadata: ListMeta,
    /// The items (`null` for none).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(crate) items: Vec<T>,
}

/// A list's metadata.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ListMeta {
    /// The token for the next page, empty or absent on the last.
    #[serde(rename = "continue")]
    pub(crate) continue_token: Option<String>,
}

/// Reads a list that may be `null` as empty.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_contract::SandboxId;
    use serde_json::json;

    fn request() -> CreateRequest {
        CreateRequest::new(SandboxId::new("sb-1").unwrap())
    }

    fn view(value: serde_json::Value) -> SandboxView {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn cpu_quantities_use_whole_cores_when_they_can() {
        assert_eq!(cpu_quantity(2000), "2");
        assert_eq!(cpu_quantity(500), "500m");
        assert_eq!(cpu_quantity(1500), "1500m");
    }

    #[test]
    fn direct_manifest_replaces_the_entrypoint_and_mounts_no_token() {
        let manifest = sandbox_manifest("k8s", &AdapterConfig::default(), &request(), false, None);
        let value = serde_json::to_value(&manifest).unwrap();
        let pod = &value["spec"]["podTemplate"]["spec"];
        assert_eq!(pod["automountServiceAccountToken"], json!(false));
        assert_eq!(pod["containers"][0]["image"], json!("ubuntu:24.04"));
        assert_eq!(
            pod["containers"][0]["command"],
            json!(["/bin/sh", "-c", KEEP_ALIVE])
        );
        assert_eq!(value["metadata"]["labels"][POOL_LABEL], json!("k8s"));
        assert!(value["spec"].get("service").is_none());
        assert!(value["spec"].get("volumeClaimTemplates").is_none());
    }

    #[test]
    fn request_labels_round_trip_through_the_object_labels() {
        let labels = BTreeMap::from([("team".to_owned(), "a".to_owned())]);
        let all = object_labels("p", "sb-1", &labels);
        assert_eq!(all.len(), 3);
        assert_eq!(request_labels(&all), labels);
    }

    #[test]
    fn shutdown_time_rounds_up_to_a_whole_second() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        assert_eq!(
            shutdown_time(now, Duration::from_secs(60)).as_deref(),
            Some("2023-11-14T22:14:21Z")
        );
        let back = parse_time("2023-11-14T22:14:21Z").unwrap();
        assert!(back >= now + Duration::from_secs(60));
    }

    #[test]
    fn readiness_ignores_a_ready_condition_of_an_older_generation() {
        let sandbox = view(json!({
            "metadata": {"name": "sb", "generation": 3},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "DependenciesReady", "observedGeneration": 2}]}
        }));
        assert!(matches!(sandbox_readiness(&sandbox), Readiness::Pending(_)));
        let current = view(json!({
            "metadata": {"name": "sb", "generation": 3},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "DependenciesReady", "observedGeneration": 3}]}
        }));
        assert_eq!(sandbox_readiness(&current), Readiness::Ready);
    }

    #[test]
    fn suspended_mode_is_stopping_until_the_pod_is_gone() {
        let stopping = view(json!({
            "metadata": {"name": "sb", "generation": 2},
            "spec": {"operatingMode": "Suspended"},
            "status": {"conditions": [{"type": "Suspended", "status": "False", "reason": "PodTerminating", "observedGeneration": 2}]}
        }));
        assert_eq!(sandbox_state(&stopping, None).0, SandboxState::Stopping);
        let stopped = view(json!({
            "metadata": {"name": "sb", "generation": 2},
            "spec": {"operatingMode": "Suspended"},
            "status": {"conditions": [{"type": "Suspended", "status": "True", "reason": "PodTerminated", "observedGeneration": 2}]}
        }));
        assert_eq!(sandbox_state(&stopped, None).0, SandboxState::Stopped);
    }

    #[test]
    fn pod_problems_are_read_from_waiting_reasons() {
        let pod = |reason: &str| -> PodView {
            serde_json::from_value(json!({
                "status": {"phase": "Pending", "containerStatuses": [{"name": "sandbox", "state": {"waiting": {"reason": reason, "message": "m"}}}]}
            }))
            .unwrap()
        };
        assert!(matches!(
            pod_problem(&pod("ErrImagePull")),
            Some(PodProblem::MissingImage(_))
        ));
        assert!(matches!(
            pod_problem(&pod("ImagePullBackOff")),
            Some(PodProblem::MissingImage(_))
        ));
        assert!(matches!(
            pod_problem(&pod("CrashLoopBackOff")),
            Some(PodProblem::CrashLoop(_))
        ));
        assert_eq!(pod_problem(&pod("ContainerCreating")), None);
    }

    #[test]
    fn deleting_wins_over_every_condition() {
        let sandbox = view(json!({
            "metadata": {"name": "sb", "generation": 1, "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]}
        }));
        assert_eq!(sandbox_state(&sandbox, None).0, SandboxState::Deleting);
    }

    #[test]
    fn claim_readiness_needs_the_sandbox_name_and_stops_on_terminal_reasons() {
        let claim = |status: serde_json::Value| -> ClaimView {
            serde_json::from_value(
                json!({"metadata": {"name": "c", "generation": 1}, "status": status}),
            )
            .unwrap()
        };
        assert_eq!(
            claim_readiness(&claim(json!({
                "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}],
                "sandbox": {"name": "warm-abcde"}
            }))),
            ClaimReadiness::Ready("warm-abcde".into())
        );
        assert!(matches!(
            claim_readiness(&claim(json!({
                "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]
            }))),
            ClaimReadiness::Pending(_)
        ));
        assert!(matches!(
            claim_readiness(&claim(json!({
                "conditions": [{"type": "Ready", "status": "False", "reason": "EnvVarsInjectionRejected", "message": "no"}]
            }))),
            ClaimReadiness::Refused { .. }
        ));
    }

    #[test]
    fn list_with_null_items_reads_as_empty() {
        let list: ListView<SandboxView> =
            serde_json::from_value(json!({"metadata": {"continue": ""}, "items": null})).unwrap();
        assert!(list.items.is_empty());
    }
}
