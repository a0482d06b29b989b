//! The protocol's data as JSON: one serde type per message body, and the conversions between
//! them and the contract's types.
//!
//! Field names are the contract's, in snake case. Bytes travel as standard base64 (with
//! padding), times as RFC 3339 strings in UTC, durations as whole milliseconds (a non-zero
//! duration below a millisecond is rounded up, so it stays non-zero). A value the contract
//! refuses (a sandbox id, a capability name, an error code) fails the conversion with
//! [`WireError`], naming the field.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use base64::Engine;
use bytes::Bytes;
use sandbox_contract::{
    Capabilities, Capability, CreateRequest, Error, ErrorCode, ExecOutput, ExecRequest, FileInfo,
    FileKind, Health, HealthStatus, Limits, ProviderInfo, Resources, Sandbox, SandboxId,
    SandboxState, Snapshot, SnapshotKind, Stdin, Template,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A value on the wire that the contract refuses; `field` names where it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct WireError {
    /// The field, as a dotted path (`sandbox.created_at`).
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl WireError {
    /// Builds the error for `field`.
    pub(crate) fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        WireError {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

impl From<WireError> for Error {
    /// A malformed message is the sender's mistake: `invalid_request` when a client sent it.
    fn from(error: WireError) -> Self {
        Error::invalid_request(error.to_string())
    }
}

/// Encodes bytes as standard base64.
pub(crate) fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Decodes standard base64 in `field`.
pub(crate) fn unb64(field: &str, text: &str) -> Result<Bytes, WireError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map(Bytes::from)
        .map_err(|_| WireError::new(field, "is not standard base64"))
}

/// Writes a time as RFC 3339 in UTC.
pub(crate) fn time_out(at: SystemTime) -> String {
    time::OffsetDateTime::from(at)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Reads an RFC 3339 time in `field`.
pub(crate) fn time_in(field: &str, text: &str) -> Result<SystemTime, WireError> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map(SystemTime::from)
        .map_err(|_| WireError::new(field, "is not an RFC 3339 time"))
}

/// Writes a duration as whole milliseconds, rounding a sub-millisecond remainder up.
pub(crate) fn millis(duration: Duration) -> u64 {
    let whole = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if !duration.subsec_nanos().is_multiple_of(1_000_000) {
        whole.saturating_add(1)
    } else {
        whole
    }
}

/// Reads a sandbox id in `field`.
pub(crate) fn sandbox_id(field: &str, id: &str) -> Result<SandboxId, WireError> {
    SandboxId::new(id).map_err(|e| WireError::new(field, e.to_string()))
}

/// [`ProviderInfo`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireInfo {
    /// The provider's name.
    pub name: String,
    /// Capability names.
    pub capabilities: Vec<String>,
    /// Templates offered by name.
    #[serde(default)]
    pub templates: Vec<WireTemplate>,
    /// Whether unlisted templates are accepted.
    #[serde(default)]
    pub accepts_unlisted_templates: bool,
    /// The limits.
    #[serde(default)]
    pub limits: WireLimits,
}

/// [`Template`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireTemplate {
    /// Its name.
    pub name: String,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// [`Limits`] on the wire.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WireLimits {
    /// See [`Limits::max_read_bytes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_read_bytes: Option<u64>,
    /// See [`Limits::max_write_bytes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_write_bytes: Option<u64>,
    /// See [`Limits::max_sandboxes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sandboxes: Option<u64>,
}

impl From<&ProviderInfo> for WireInfo {
    fn from(info: &ProviderInfo) -> Self {
        WireInfo {
            name: info.name.clone(),
            capabilities: info
                .capabilities
                .iter()
                .map(|c| c.as_str().to_owned())
                .collect(),
            templates: info
                .templates
                .iter()
                .map(|t| WireTemplate {
                    name: t.name.clone(),
                    description: t.description.clone(),
                })
                .collect(),
            accepts_unlisted_templates: info.accepts_unlisted_templates,
            limits: WireLimits {
                max_read_bytes: info.limits.max_read_bytes,
                max_write_bytes: info.limits.max_write_bytes,
                max_sandboxes: info.limits.max_sandboxes,
            },
        }
    }
}

impl TryFrom<WireInfo> for ProviderInfo {
    type Error = WireError;

    fn try_from(wire: WireInfo) -> Result<Self, WireError> {
        let mut capabilities = Capabilities::new();
        for name in &wire.capabilities {
            let capability: Capability =
                name.parse()
                    .map_err(|e: sandbox_contract::ParseCapabilityError| {
                        WireError::new("info.capabilities", e.to_string())
                    })?;
            capabilities.insert(capability);
        }
        Ok(ProviderInfo {
            name: wire.name,
            capabilities,
            templates: wire
                .templates
                .into_iter()
                .map(|t| Template {
                    name: t.name,
                    description: t.description,
                })
                .collect(),
            accepts_unlisted_templates: wire.accepts_unlisted_templates,
            limits: Limits {
                max_read_bytes: wire.limits.max_read_bytes,
                max_write_bytes: wire.limits.max_write_bytes,
                max_sandboxes: wire.limits.max_sandboxes,
            },
        })
    }
}

/// [`Health`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireHealth {
    /// The verdict.
    pub status: HealthStatus,
    /// Why, when not healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl From<Health> for WireHealth {
    fn from(health: Health) -> Self {
        WireHealth {
            status: health.status,
            message: health.message,
        }
    }
}

impl From<WireHealth> for Health {
    fn from(wire: WireHealth) -> Self {
        Health {
            status: wire.status,
            message: wire.message,
        }
    }
}

/// [`Resources`] on the wire.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WireResources {
    /// See [`Resources::cpu_millis`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_millis: Option<u32>,
    /// See [`Resources::memory_mib`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// See [`Resources::disk_gib`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_gib: Option<u64>,
}

/// [`CreateRequest`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireCreate {
    /// The sandbox id.
    pub id: String,
    /// The template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Environment for every command.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Resources asked for.
    #[serde(default)]
    pub resources: WireResources,
    /// Time to live in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

impl From<&CreateRequest> for WireCreate {
    fn from(request: &CreateRequest) -> Self {
        WireCreate {
            id: request.id.to_string(),
            template: request.template.clone(),
            env: request.env.clone(),
            resources: WireResources {
                cpu_millis: request.resources.cpu_millis,
                memory_mib: request.resources.memory_mib,
                disk_gib: request.resources.disk_gib,
            },
            ttl_ms: request.ttl.map(millis),
            labels: request.labels.clone(),
        }
    }
}

impl TryFrom<WireCreate> for CreateRequest {
    type Error = WireError;

    fn try_from(wire: WireCreate) -> Result<Self, WireError> {
        Ok(CreateRequest {
            id: sandbox_id("request.id", &wire.id)?,
            template: wire.template,
            env: wire.env,
            resources: Resources {
                cpu_millis: wire.resources.cpu_millis,
                memory_mib: wire.resources.memory_mib,
                disk_gib: wire.resources.disk_gib,
            },
            ttl: wire.ttl_ms.map(Duration::from_millis),
            labels: wire.labels,
        })
    }
}

/// [`Sandbox`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireSandbox {
    /// The host's id.
    pub id: String,
    /// The state.
    pub state: SandboxState,
    /// The template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// When it was created (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When the provider deletes it (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The provider's own name for it.
    pub provider_ref: String,
    /// Labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Why it is in its state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl From<&Sandbox> for WireSandbox {
    fn from(sandbox: &Sandbox) -> Self {
        WireSandbox {
            id: sandbox.id.to_string(),
            state: sandbox.state,
            template: sandbox.template.clone(),
            created_at: sandbox.created_at.map(time_out),
            expires_at: sandbox.expires_at.map(time_out),
            provider_ref: sandbox.provider_ref.clone(),
            labels: sandbox.labels.clone(),
            reason: sandbox.reason.clone(),
        }
    }
}

impl TryFrom<WireSandbox> for Sandbox {
    type Error = WireError;

    fn try_from(wire: WireSandbox) -> Result<Self, WireError> {
        Ok(Sandbox {
            id: sandbox_id("sandbox.id", &wire.id)?,
            state: wire.state,
            template: wire.template,
            created_at: wire
                .created_at
                .as_deref()
                .map(|t| time_in("sandbox.created_at", t))
                .transpose()?,
            expires_at: wire
                .expires_at
                .as_deref()
                .map(|t| time_in("sandbox.expires_at", t))
                .transpose()?,
            provider_ref: wire.provider_ref,
            labels: wire.labels,
            reason: wire.reason,
        })
    }
}

/// [`Stdin`] on the wire: `{"type": "empty"}`, `{"type": "bytes", "data": "<base64>"}` or
/// `{"type": "streamed"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WireStdin {
    /// No input.
    Empty,
    /// These bytes, then end of input.
    Bytes {
        /// The bytes, base64.
        data: String,
    },
    /// Input sent with `exec/stdin` notifications until `exec/close_stdin`.
    Streamed,
}

/// [`ExecRequest`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireExec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Standard input.
    #[serde(default = "empty_stdin")]
    pub stdin: WireStdin,
}

/// The default stdin of a request that names none.
fn empty_stdin() -> WireStdin {
    WireStdin::Empty
}

impl From<&ExecRequest> for WireExec {
    fn from(request: &ExecRequest) -> Self {
        WireExec {
            argv: request.argv.clone(),
            env: request.env.clone(),
            cwd: request.cwd.clone(),
            timeout_ms: request.timeout.map(millis),
            stdin: match &request.stdin {
                Stdin::Empty => WireStdin::Empty,
                Stdin::Bytes(data) => WireStdin::Bytes { data: b64(data) },
                Stdin::Streamed => WireStdin::Streamed,
            },
        }
    }
}

impl TryFrom<WireExec> for ExecRequest {
    type Error = WireError;

    fn try_from(wire: WireExec) -> Result<Self, WireError> {
        Ok(ExecRequest {
            argv: wire.argv,
            env: wire.env,
            cwd: wire.cwd,
            timeout: wire.timeout_ms.map(Duration::from_millis),
            stdin: match wire.stdin {
                WireStdin::Empty => Stdin::Empty,
                WireStdin::Bytes { data } => Stdin::Bytes(unb64("request.stdin.data", &data)?),
                WireStdin::Streamed => Stdin::Streamed,
            },
        })
    }
}

/// [`ExecOutput`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireOutput {
    /// The exit code.
    pub exit_code: i32,
    /// Standard output, base64.
    pub stdout: String,
    /// Standard error, base64.
    pub stderr: String,
}

impl From<&ExecOutput> for WireOutput {
    fn from(output: &ExecOutput) -> Self {
        WireOutput {
            exit_code: output.exit_code,
            stdout: b64(&output.stdout),
            stderr: b64(&output.stderr),
        }
    }
}

impl TryFrom<WireOutput> for ExecOutput {
    type Error = WireError;

    fn try_from(wire: WireOutput) -> Result<Self, WireError> {
        Ok(ExecOutput {
            exit_code: wire.exit_code,
            stdout: unb64("output.stdout", &wire.stdout)?,
            stderr: unb64("output.stderr", &wire.stderr)?,
        })
    }
}

/// [`FileInfo`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireFileInfo {
    /// The absolute path.
    pub path: String,
    /// The last component.
    pub name: String,
    /// What it is.
    pub kind: FileKind,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Modification time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
}

impl From<&FileInfo> for WireFileInfo {
    fn from(info: &FileInfo) -> Self {
        WireFileInfo {
            path: info.path.clone(),
            name: info.name.clone(),
            kind: info.kind,
            size: info.size,
            mode: info.mode,
            modified: info.modified.map(time_out),
        }
    }
}

impl TryFrom<WireFileInfo> for FileInfo {
    type Error = WireError;

    fn try_from(wire: WireFileInfo) -> Result<Self, WireError> {
        Ok(FileInfo {
            path: wire.path,
            name: wire.name,
            kind: wire.kind,
            size: wire.size,
            mode: wire.mode,
            modified: wire
                .modified
                .as_deref()
                .map(|t| time_in("file.modified", t))
                .transpose()?,
        })
    }
}

/// [`Snapshot`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireSnapshot {
    /// The template that starts from it.
    pub template: String,
    /// What it holds.
    pub kind: SnapshotKind,
    /// The sandbox it was taken from.
    pub source: String,
}

impl From<&Snapshot> for WireSnapshot {
    fn from(snapshot: &Snapshot) -> Self {
        WireSnapshot {
            template: snapshot.template.clone(),
            kind: snapshot.kind,
            source: snapshot.source.to_string(),
        }
    }
}

impl TryFrom<WireSnapshot> for Snapshot {
    type Error = WireError;

    fn try_from(wire: WireSnapshot) -> Result<Self, WireError> {
        Ok(Snapshot {
            template: wire.template,
            kind: wire.kind,
            source: sandbox_id("snapshot.source", &wire.source)?,
        })
    }
}

/// The contract error inside a JSON-RPC error's `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireErrorData {
    /// The contract's error code.
    pub code: ErrorCode,
    /// For `rate_limited`: how long to wait, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

/// Reads `params[field]` as a string.
pub(crate) fn str_param<'a>(params: &'a Value, field: &str) -> Result<&'a str, WireError> {
    params
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| WireError::new(format!("params.{field}"), "is missing or not a string"))
}

/// Reads `params[field]` as a sandbox id.
pub(crate) fn id_param(params: &Value, field: &str) -> Result<SandboxId, WireError> {
    sandbox_id(&format!("params.{field}"), str_param(params, field)?)
}

/// Decodes `value` (at `field`) as `T`.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    field: &str,
    value: Value,
) -> Result<T, WireError> {
    serde_json::from_value(value).map_err(|e| WireError::new(field, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_sub_millisecond_remainders_up() {
        assert_eq!(millis(Duration::from_millis(1500)), 1500);
        assert_eq!(millis(Duration::from_micros(1)), 1);
        assert_eq!(millis(Duration::from_micros(1001)), 2);
        assert_eq!(millis(Duration::ZERO), 0);
    }

    #[test]
    fn times_round_trip_through_rfc3339() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_800_000_000_123);
        let text = time_out(at);
        assert_eq!(text, "2027-01-15T08:00:00.123Z");
        assert_eq!(time_in("t", &text), Ok(at));
        assert!(time_in("t", "yesterday").is_err());
    }

    #[test]
    fn exec_request_round_trips_with_bytes_stdin() {
        let request = ExecRequest::new(["cat"])
            .with_env("A", "1")
            .with_cwd("/tmp")
            .with_timeout(Duration::from_millis(250))
            .with_stdin(Bytes::from_static(b"\x00\xff"));
        let wire = WireExec::from(&request);
        let json = serde_json::to_value(&wire).unwrap();
        assert_eq!(
            json["stdin"],
            serde_json::json!({"type": "bytes", "data": "AP8="})
        );
        let back = ExecRequest::try_from(decode::<WireExec>("request", json).unwrap()).unwrap();
        assert_eq!(back, request);
    }

    #[test]
    fn unknown_capability_names_are_refused_by_field() {
        let wire = WireInfo {
            name: "x".into(),
            capabilities: vec!["exec".into(), "teleport".into()],
            templates: Vec::new(),
            accepts_unlisted_templates: false,
            limits: WireLimits::default(),
        };
        let error = ProviderInfo::try_from(wire).unwrap_err();
        assert_eq!(error.field, "info.capabilities");
        assert!(error.problem.contains("teleport"), "{error}");
    }

    #[test]
    fn a_bad_sandbox_id_is_an_invalid_request_naming_the_field() {
        let error = Error::from(id_param(&serde_json::json!({"id": "Bad_Id"}), "id").unwrap_err());
        assert!(error.is_invalid_request());
        assert!(error.message().starts_with("params.id:"), "{error}");
    }
}
