//! Sandboxes: their ids, the request that creates one, what a provider reports about one, and
//! snapshots.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Error;

/// The longest [`SandboxId`], in characters: the length of a DNS label.
pub const MAX_SANDBOX_ID_LEN: usize = 63;

/// The longest label key or value, in characters.
pub const MAX_LABEL_LEN: usize = 63;

/// The longest template name, in bytes.
pub const MAX_TEMPLATE_LEN: usize = 512;

/// The host's name for a sandbox, chosen before create and used as the idempotency key.
///
/// The host picks the id (typically from its request id) and every operation names the sandbox
/// by it. Creating twice with the same id yields one sandbox. The provider keeps its own name in
/// [`Sandbox::provider_ref`].
///
/// The rule is the one for a DNS label that Kubernetes applies to Service names (RFC 1035), so
/// that every provider can use the id as a resource name and host name:
///
/// - 1 to 63 characters;
/// - only lowercase ASCII letters `a-z`, digits `0-9` and `-`;
/// - the first character is a letter, the last a letter or a digit.
///
/// So `sb-7f3a` and `a` are valid; `7f3a` (starts with a digit), `Sb-1`, `sb_1`, `sb-` and the
/// empty string are not. A host that uses UUIDs prefixes them with a letter (`sb-<uuid>` fits).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SandboxId(String);

impl SandboxId {
    /// Checks `id` against the rule above and wraps it.
    pub fn new(id: impl Into<String>) -> Result<Self, InvalidSandboxId> {
        let id = id.into();
        check_dns_label(&id)?;
        Ok(SandboxId(id))
    }

    /// Returns the id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Returns the id as a `String`.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// Checks the RFC 1035 label rule that [`SandboxId`] documents.
fn check_dns_label(id: &str) -> Result<(), InvalidSandboxId> {
    let mut chars = id.chars().enumerate().peekable();
    let Some((_, first)) = chars.peek().copied() else {
        return Err(InvalidSandboxId::Empty);
    };
    let len = id.chars().count();
    if len > MAX_SANDBOX_ID_LEN {
        return Err(InvalidSandboxId::TooLong { len });
    }
    for (index, ch) in chars {
        if !matches!(ch, 'a'..='z' | '0'..='9' | '-') {
            return Err(InvalidSandboxId::InvalidCharacter { ch, index });
        }
    }
    if !first.is_ascii_lowercase() {
        return Err(InvalidSandboxId::BadFirstCharacter { ch: first });
    }
    if id.ends_with('-') {
        return Err(InvalidSandboxId::EndsWithHyphen);
    }
    Ok(())
}

impl fmt::Display for SandboxId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for SandboxId {
    type Err = InvalidSandboxId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SandboxId::new(s)
    }
}

impl TryFrom<String> for SandboxId {
    type Error = InvalidSandboxId;

    fn try_from(id: String) -> Result<Self, Self::Error> {
        SandboxId::new(id)
    }
}

impl TryFrom<&str> for SandboxId {
    type Error = InvalidSandboxId;

    fn try_from(id: &str) -> Result<Self, Self::Error> {
        SandboxId::new(id)
    }
}

impl AsRef<str> for SandboxId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for SandboxId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SandboxId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        SandboxId::new(id).map_err(serde::de::Error::custom)
    }
}

/// Why a string is not a valid [`SandboxId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidSandboxId {
    /// The id is empty.
    #[error("sandbox id is empty")]
    Empty,
    /// The id has more than 63 characters.
    #[error("sandbox id has {len} characters, more than 63")]
    TooLong {
        /// How many characters it has.
        len: usize,
    },
    /// The id holds a character other than `a-z`, `0-9` and `-`.
    #[error(
        "sandbox id has {ch:?} at character {index}; only lowercase letters, digits and '-' are allowed"
    )]
    InvalidCharacter {
        /// The refused character.
        ch: char,
        /// Its position, counted in characters from 0.
        index: usize,
    },
    /// The id starts with something other than a lowercase letter.
    #[error("sandbox id starts with {ch:?}; it must start with a lowercase letter")]
    BadFirstCharacter {
        /// The refused first character.
        ch: char,
    },
    /// The id ends with `-`.
    #[error("sandbox id ends with '-'; it must end with a letter or a digit")]
    EndsWithHyphen,
}

impl From<InvalidSandboxId> for Error {
    fn from(error: InvalidSandboxId) -> Self {
        Error::invalid_request(error.to_string())
    }
}

/// Compute resources a request asks for. Each is optional; `None` means the provider's default.
///
/// A provider applies what it can and ignores what it cannot (a warm pool's pods are already
/// sized); it never answers an error for a resource it ignores. A zero value is refused as
/// `invalid_request`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in thousandths of a core: 1000 is one core, 500 half of one.
    pub cpu_millis: Option<u32>,
    /// Memory in MiB.
    pub memory_mib: Option<u64>,
    /// Disk in GiB for the sandbox's own writes (outside any persistent volume).
    pub disk_gib: Option<u64>,
}

impl Resources {
    /// Checks that no value is zero; answers `invalid_request` naming the first one that is.
    pub fn validate(&self) -> Result<(), Error> {
        if self.cpu_millis == Some(0) {
            return Err(Error::invalid_request(
                "resources.cpu_millis must be positive",
            ));
        }
        if self.memory_mib == Some(0) {
            return Err(Error::invalid_request(
                "resources.memory_mib must be positive",
            ));
        }
        if self.disk_gib == Some(0) {
            return Err(Error::invalid_request(
                "resources.disk_gib must be positive",
            ));
        }
        Ok(())
    }
}

/// What [`Provider::create`](crate::Provider::create) is asked to make.
///
/// Build one with [`CreateRequest::new`] and the `with_*` methods, or with a struct literal.
/// `Debug` prints environment variable names but not their values, which may be credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct CreateRequest {
    /// The sandbox's id and the idempotency key: a second create with the same id returns the
    /// sandbox the first one made.
    pub id: SandboxId,
    /// A template the provider offers (see [`ProviderInfo::templates`](crate::ProviderInfo)),
    /// or `None` for the provider's default. Some providers accept names they do not list, such
    /// as container images.
    pub template: Option<String>,
    /// Environment variables for every command run in the sandbox. Names follow
    /// [`validate_env`]; values may be anything without a NUL byte.
    pub env: BTreeMap<String, String>,
    /// The compute resources asked for.
    pub resources: Resources,
    /// How long the sandbox may live, from now. Providers with the `ttl` capability delete it
    /// when this runs out (a backstop; the host enforces TTLs too); others ignore it.
    pub ttl: Option<Duration>,
    /// Host metadata the provider stores and returns in [`Sandbox::labels`]. Keys and values
    /// follow [`validate_labels`].
    pub labels: BTreeMap<String, String>,
}

impl CreateRequest {
    /// Returns a request for sandbox `id` with the provider's defaults for everything else.
    pub fn new(id: SandboxId) -> Self {
        CreateRequest {
            id,
            template: None,
            env: BTreeMap::new(),
            resources: Resources::default(),
            ttl: None,
            labels: BTreeMap::new(),
        }
    }

    /// Sets the template.
    pub fn with_template(mut self, template: impl Into<String>) -> Self {
        self.template = Some(template.into());
        self
    }

    /// Adds one environment variable.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Sets the resources.
    pub fn with_resources(mut self, resources: Resources) -> Self {
        self.resources = resources;
        self
    }

    /// Sets the time to live.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Adds one label.
    pub fn with_label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Checks the request's shape; answers `invalid_request` naming the first problem.
    ///
    /// A template must be 1 to 512 bytes without whitespace or control characters; env follows
    /// [`validate_env`], labels [`validate_labels`], resources [`Resources::validate`]; a TTL
    /// must not be zero. Whether the template exists is for the provider to say.
    pub fn validate(&self) -> Result<(), Error> {
        if let Some(template) = &self.template {
            validate_template(template)?;
        }
        validate_env(&self.env)?;
        self.resources.validate()?;
        if self.ttl == Some(Duration::ZERO) {
            return Err(Error::invalid_request("ttl must be positive"));
        }
        validate_labels(&self.labels)
    }
}

impl fmt::Debug for CreateRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateRequest")
            .field("id", &self.id)
            .field("template", &self.template)
            .field("env", &RedactedEnv(&self.env))
            .field("resources", &self.resources)
            .field("ttl", &self.ttl)
            .field("labels", &self.labels)
            .finish()
    }
}

/// Prints an environment as its names, each mapped to `[REDACTED]`.
pub(crate) struct RedactedEnv<'a>(pub(crate) &'a BTreeMap<String, String>);

impl fmt::Debug for RedactedEnv<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|name| (name, "[REDACTED]")))
            .finish()
    }
}

/// Checks a template name: 1 to 512 bytes, no whitespace, no control characters.
fn validate_template(template: &str) -> Result<(), Error> {
    if template.is_empty() {
        return Err(Error::invalid_request("template is empty"));
    }
    if template.len() > MAX_TEMPLATE_LEN {
        return Err(Error::invalid_request(format!(
            "template is {} bytes, more than {MAX_TEMPLATE_LEN}",
            template.len()
        )));
    }
    if template
        .chars()
        .any(|ch| ch.is_whitespace() || ch.is_control())
    {
        return Err(Error::invalid_request(
            "template holds whitespace or a control character",
        ));
    }
    Ok(())
}

/// Checks environment variables; answers `invalid_request` naming the first bad one.
///
/// A name is a portable shell name: an ASCII letter or `_`, then ASCII letters, digits or `_`
/// (`PATH`, `_x1`). A value may be anything but must not hold a NUL byte. The error names the
/// variable but never repeats its value.
pub fn validate_env(env: &BTreeMap<String, String>) -> Result<(), Error> {
    for (name, value) in env {
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|ch| ch.is_ascii_alphabetic() || ch == '_');
        if !first_ok || !chars.all(|ch| ch.is_ascii_alphanumeric() || ch == '_') {
            return Err(Error::invalid_request(format!(
                "environment variable name {:?} is not a letter or '_' followed by letters, digits or '_'",
                cut(name)
            )));
        }
        if value.contains('\0') {
            return Err(Error::invalid_request(format!(
                "environment variable {name} has a NUL byte in its value"
            )));
        }
    }
    Ok(())
}

/// Checks labels; answers `invalid_request` naming the first bad key or value.
///
/// A key has 1 to 63 characters, a value 0 to 63; both use only ASCII letters, digits, `-`, `_`
/// and `.`, and a non-empty one starts and ends with a letter or digit (the Kubernetes label
/// rule without a prefix, so every provider can store them).
pub fn validate_labels(labels: &BTreeMap<String, String>) -> Result<(), Error> {
    for (key, value) in labels {
        if key.is_empty() || !is_label_text(key) {
            return Err(Error::invalid_request(format!(
                "label key {:?} is not 1 to 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric",
                cut(key)
            )));
        }
        if !is_label_text(value) {
            return Err(Error::invalid_request(format!(
                "label {key} has value {:?}, which is not up to 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric",
                cut(value)
            )));
        }
    }
    Ok(())
}

/// Returns whether `text` is empty or a valid label key or value.
fn is_label_text(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return true;
    };
    bytes.len() <= MAX_LABEL_LEN
        && first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Cuts text repeated in an error message to 64 characters.
pub(crate) fn cut(text: &str) -> String {
    text.chars().take(64).collect()
}

/// Where a sandbox is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    /// Being created or provisioned; not yet ready for exec.
    Creating,
    /// Ready: exec and files work.
    Running,
    /// Being stopped.
    Stopping,
    /// Stopped: no processes; only persistent files are kept. Exec answers `invalid_state`.
    Stopped,
    /// Being started again after a stop.
    Starting,
    /// Paused with its memory kept. Exec answers `invalid_state`.
    Paused,
    /// Broken (for example a crash loop); operations answer `sandbox_failed`. Delete still works.
    Failed,
    /// Being deleted; it will soon answer `not_found`.
    Deleting,
}

impl SandboxState {
    /// Returns the state's snake-case name, as serde writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            SandboxState::Creating => "creating",
            SandboxState::Running => "running",
            SandboxState::Stopping => "stopping",
            SandboxState::Stopped => "stopped",
            SandboxState::Starting => "starting",
            SandboxState::Paused => "paused",
            SandboxState::Failed => "failed",
            SandboxState::Deleting => "deleting",
        }
    }
}

impl fmt::Display for SandboxState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a provider reports about one sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The host's id, as given to create.
    pub id: SandboxId,
    /// Where the sandbox is in its life.
    pub state: SandboxState,
    /// The template it was created from, if the request named one.
    pub template: Option<String>,
    /// When the provider created it, if the provider knows.
    pub created_at: Option<SystemTime>,
    /// When the provider will delete it on its own (the `ttl` backstop), if ever.
    pub expires_at: Option<SystemTime>,
    /// The provider's own name for it (a Kubernetes object name, a VM id), for operators and logs.
    pub provider_ref: String,
    /// The labels given at create.
    pub labels: BTreeMap<String, String>,
    /// Why the sandbox is in its state, when that needs saying (`CrashLoopBackOff`). Free of
    /// credentials, like error messages.
    pub reason: Option<String>,
}

/// Which kind of snapshot to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotKind {
    /// The filesystem only; needs the `snapshots.disk` capability.
    Disk,
    /// Memory and processes as well as the filesystem; needs `snapshots.memory`.
    Memory,
}

impl SnapshotKind {
    /// Returns the capability a provider must declare to take this kind of snapshot.
    pub const fn capability(self) -> crate::Capability {
        match self {
            SnapshotKind::Disk => crate::Capability::SnapshotsDisk,
            SnapshotKind::Memory => crate::Capability::SnapshotsMemory,
        }
    }
}

/// A snapshot a provider took of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The snapshot's name. It is a template: pass it as [`CreateRequest::template`] to create a
    /// sandbox that starts from the snapshot.
    pub template: String,
    /// What the snapshot holds.
    pub kind: SnapshotKind,
    /// The sandbox it was taken from.
    pub source: SandboxId,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sandbox_id_accepts_dns_labels() {
        for id in [
            "a",
            "sb-1",
            "sb-7f3a9c",
            "a1",
            &format!("a{}", "b".repeat(62)),
        ] {
            assert_eq!(SandboxId::new(id).unwrap().as_str(), id);
        }
    }

    #[test]
    fn sandbox_id_refuses_empty_long_and_badly_formed_ids() {
        let cases = [
            ("", InvalidSandboxId::Empty),
            (&*"a".repeat(64), InvalidSandboxId::TooLong { len: 64 }),
            (
                "Sb-1",
                InvalidSandboxId::InvalidCharacter { ch: 'S', index: 0 },
            ),
            (
                "sb_1",
                InvalidSandboxId::InvalidCharacter { ch: '_', index: 2 },
            ),
            (
                "sb.1",
                InvalidSandboxId::InvalidCharacter { ch: '.', index: 2 },
            ),
            (
                "sb 1",
                InvalidSandboxId::InvalidCharacter { ch: ' ', index: 2 },
            ),
            (
                "sbé",
                InvalidSandboxId::InvalidCharacter { ch: 'é', index: 2 },
            ),
            ("7f3a", InvalidSandboxId::BadFirstCharacter { ch: '7' }),
            ("-sb", InvalidSandboxId::BadFirstCharacter { ch: '-' }),
            ("sb-", InvalidSandboxId::EndsWithHyphen),
        ];
        for (id, expected) in cases {
            assert_eq!(SandboxId::new(id), Err(expected), "{id:?}");
        }
    }

    #[test]
    fn sandbox_id_length_counts_characters_not_bytes() {
        let error = SandboxId::new("é".repeat(70)).unwrap_err();
        assert_eq!(error, InvalidSandboxId::TooLong { len: 70 });
    }

    #[test]
    fn invalid_sandbox_id_becomes_invalid_request() {
        let error: Error = SandboxId::new("Bad").unwrap_err().into();
        assert!(error.is_invalid_request());
        assert!(error.message().contains("'B'"), "{error}");
    }

    #[test]
    fn sandbox_id_serde_validates() {
        let id = SandboxId::new("sb-1").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"sb-1\"");
        assert_eq!(serde_json::from_str::<SandboxId>("\"sb-1\"").unwrap(), id);
        assert!(serde_json::from_str::<SandboxId>("\"SB\"").is_err());
    }

    #[test]
    fn create_request_debug_hides_env_values() {
        let request = CreateRequest::new(SandboxId::new("sb-1").unwrap())
            .with_env("API_TOKEN", "s3cr3t-value");
        let debug = format!("{request:?}");
        assert!(debug.contains("API_TOKEN"), "{debug}");
        assert!(debug.contains("[REDACTED]"), "{debug}");
        assert!(!debug.contains("s3cr3t-value"), "{debug}");
    }

    #[test]
    fn create_request_validation_accepts_a_full_request() {
        let request = CreateRequest::new(SandboxId::new("sb-1").unwrap())
            .with_template("ghcr.io/org/image:1.2@sha256:abc")
            .with_env("_PATH2", "a=b c")
            .with_resources(Resources {
                cpu_millis: Some(500),
                memory_mib: Some(512),
                disk_gib: Some(1),
            })
            .with_ttl(Duration::from_secs(60))
            .with_label("tenant", "t-1")
            .with_label("empty", "");
        assert_eq!(request.validate(), Ok(()));
    }

    #[test]
    fn create_request_validation_refuses_each_bad_field() {
        let base = CreateRequest::new(SandboxId::new("sb-1").unwrap());
        let bad = [
            base.clone().with_template(""),
            base.clone().with_template("two words"),
            base.clone().with_template("x".repeat(513)),
            base.clone().with_env("1ABC", "v"),
            base.clone().with_env("A-B", "v"),
            base.clone().with_env("", "v"),
            base.clone().with_env("A", "nul\0byte"),
            base.clone().with_resources(Resources {
                cpu_millis: Some(0),
                ..Resources::default()
            }),
            base.clone().with_resources(Resources {
                memory_mib: Some(0),
                ..Resources::default()
            }),
            base.clone().with_resources(Resources {
                disk_gib: Some(0),
                ..Resources::default()
            }),
            base.clone().with_ttl(Duration::ZERO),
            base.clone().with_label("", "v"),
            base.clone().with_label("-k", "v"),
            base.clone().with_label("k", "v-"),
            base.clone().with_label("k", "a/b"),
            base.clone().with_label("k".repeat(64), "v"),
        ];
        for request in bad {
            let error = request.validate().unwrap_err();
            assert!(error.is_invalid_request(), "{request:?}: {error}");
        }
    }

    #[test]
    fn env_error_does_not_repeat_the_value() {
        let env = BTreeMap::from([("TOKEN".to_owned(), "s3cr3t\0".to_owned())]);
        let error = validate_env(&env).unwrap_err();
        assert!(error.message().contains("TOKEN"), "{error}");
        assert!(!error.message().contains("s3cr3t"), "{error}");
    }

    #[test]
    fn snapshot_kind_names_its_capability() {
        assert_eq!(
            SnapshotKind::Disk.capability(),
            crate::Capability::SnapshotsDisk
        );
        assert_eq!(
            SnapshotKind::Memory.capability(),
            crate::Capability::SnapshotsMemory
        );
    }

    #[test]
    fn sandbox_state_serializes_as_its_snake_name() {
        let json = serde_json::to_string(&SandboxState::Running).unwrap();
        assert_eq!(json, format!("\"{}\"", SandboxState::Running.as_str()));
    }

    proptest! {
        #[test]
        fn sandbox_id_check_never_panics_and_accepts_only_the_rule(id in "\\PC{0,70}") {
            let accepted = SandboxId::new(id.clone()).is_ok();
            let by_rule = !id.is_empty()
                && id.chars().count() <= 63
                && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && id.starts_with(|c: char| c.is_ascii_lowercase())
                && !id.ends_with('-');
            prop_assert_eq!(accepted, by_rule);
        }

        #[test]
        fn generated_dns_labels_are_accepted(id in "[a-z]([a-z0-9-]{0,61}[a-z0-9])?") {
            prop_assert!(SandboxId::new(id).is_ok());
        }
    }
}
