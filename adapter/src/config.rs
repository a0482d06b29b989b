//! The pool configuration: the pool fields (`name`, `trust`, `region`, `maxConcurrency`,
//! `credentials`) and the adapter's own keys under `config`, read from YAML or JSON and checked
//! so that every error names the key at fault.
//!
//! The document is read into a JSON value first and each key is then taken out by hand: serde's
//! derived errors do not say which key held a bad value, and an operator fixing a pool needs
//! exactly that.

use std::path::PathBuf;
use std::sync::Arc;

use sandbox_contract::{Capabilities, Capability};
use serde_json::{Map, Value};

/// The adapter's name, as a pool's `adapter` key gives it.
pub const ADAPTER_NAME: &str = "agent-sandbox";

/// The image used when a request names no template.
pub const DEFAULT_IMAGE: &str = "ubuntu:24.04";

/// The namespace used when `config.namespace` is not set.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Where the per-sandbox volume is mounted when `config.volumePath` is not set.
pub const DEFAULT_VOLUME_PATH: &str = "/workspace";

/// A configuration error: the key at fault and what is wrong with it, and the cause when
/// something else failed (a parser, a file read), as its [`source`](std::error::Error::source).
#[derive(Debug, Clone, thiserror::Error)]
#[error("pool config key `{key}`: {message}")]
pub struct ConfigError {
    /// The dotted key, such as `config.volumeSize` or `credentials`.
    pub key: String,
    /// What is wrong, free of secrets (values are never repeated for credential keys).
    pub message: String,
    /// What failed underneath, if anything did.
    #[source]
    cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl ConfigError {
    /// Builds an error for `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            key: key.into(),
            message: message.into(),
            cause: None,
        }
    }

    /// Builds an error for `key` that `cause` explains.
    pub fn caused_by(
        key: impl Into<String>,
        message: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        ConfigError {
            cause: Some(Arc::new(cause)),
            ..ConfigError::new(key, message)
        }
    }
}

/// Who runs the cluster, as the pool declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The operator runs the cluster.
    Private,
    /// Someone else runs it.
    External,
}

/// Where the pool's bearer token comes from when it is not the in-cluster service account's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// An environment variable of the host process, read on every use.
    Env(String),
    /// A file, re-read when it changes (and once more after a 401).
    File(PathBuf),
    /// A secret the host resolves by name (see [`SecretResolver`](crate::SecretResolver)).
    Secret(String),
}

/// Which isolation the pool declares (not checked against the cluster).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Plain containers (runc).
    Container,
    /// MicroVMs (a Kata RuntimeClass).
    Microvm,
}

/// The adapter's keys, under the pool's `config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterConfig {
    /// `namespace`: where Sandboxes or claims are created; `None` means the kubeconfig's
    /// namespace when one is used, else `default`.
    pub namespace: Option<String>,
    /// `image`: the image when the request names no template (direct mode only).
    pub image: String,
    /// `isolation`: declared isolation.
    pub isolation: Option<Isolation>,
    /// `runtimeClassName`: the pod's RuntimeClass (direct mode only).
    pub runtime_class_name: Option<String>,
    /// `volumeSize`: a Kubernetes quantity; a PVC per sandbox when set (direct mode only).
    pub volume_size: Option<String>,
    /// `volumePath`: where the volume is mounted.
    pub volume_path: String,
    /// `storageClassName`: the PVC's storage class (direct mode only).
    pub storage_class_name: Option<String>,
    /// `serviceAccountName`: the sandbox pod's service account (direct mode only).
    pub service_account_name: Option<String>,
    /// `warmPool`: claim from this SandboxWarmPool instead of creating Sandboxes.
    pub warm_pool: Option<String>,
    /// `container`: the container to exec in when the pod has several.
    pub container: Option<String>,
    /// `features`: the capability list replacing the defaults.
    pub features: Option<Capabilities>,
    /// `apiServer`: the Kubernetes API URL.
    pub api_server: Option<String>,
    /// `caFile`: PEM file for the API server's certificate.
    pub ca_file: Option<PathBuf>,
}

impl Default for AdapterConfig {
    fn default() -> Self {
        AdapterConfig {
            namespace: None,
            image: DEFAULT_IMAGE.to_owned(),
            isolation: None,
            runtime_class_name: None,
            volume_size: None,
            volume_path: DEFAULT_VOLUME_PATH.to_owned(),
            storage_class_name: None,
            service_account_name: None,
            warm_pool: None,
            container: None,
            features: None,
            api_server: None,
            ca_file: None,
        }
    }
}

impl AdapterConfig {
    /// Returns whether the pool claims from a warm pool.
    pub fn is_warm_pool(&self) -> bool {
        self.warm_pool.is_some()
    }

    /// Returns the capabilities the pool declares: the `features` list when given, else the
    /// defaults (exec, exec.stream, files; lifecycle.stop-start and persistence.disk with a
    /// volume; the isolation capability from `isolation`).
    pub fn capabilities(&self) -> Capabilities {
        if let Some(features) = &self.features {
            return features.clone();
        }
        let mut caps: Capabilities = [Capability::Exec, Capability::ExecStream, Capability::Files]
            .into_iter()
            .collect();
        if self.volume_size.is_some() {
            caps.insert(Capability::LifecycleStopStart);
            caps.insert(Capability::PersistenceDisk);
        }
        match self.isolation {
            Some(Isolation::Container) => {
                caps.insert(Capability::IsolationContainer);
            }
            Some(Isolation::Microvm) => {
                caps.insert(Capability::IsolationMicrovm);
            }
            None => {}
        }
        caps
    }
}

/// One pool of the server config, with its adapter keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// `name`: the pool's name; it labels every object the pool creates.
    pub name: String,
    /// `trust`: required.
    pub trust: Trust,
    /// `region`: free text for the host.
    pub region: Option<String>,
    /// `maxConcurrency`: how many sandboxes the host runs at once in this pool.
    pub max_concurrency: Option<u32>,
    /// `credentials`: where the token comes from, when not in-cluster or from a kubeconfig.
    pub credentials: Option<CredentialSource>,
    /// `config`: the adapter's keys.
    pub config: AdapterConfig,
}

impl PoolConfig {
    /// Returns a pool with `name` and `trust` and the adapter's defaults for everything else.
    pub fn new(name: impl Into<String>, trust: Trust) -> Self {
        PoolConfig {
            name: name.into(),
            trust,
            region: None,
            max_concurrency: None,
            credentials: None,
            config: AdapterConfig::default(),
        }
    }

    /// Reads one pool from YAML (JSON is YAML too) and checks it.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let value: Value = serde_saphyr::from_str(text)
            .map_err(|e| ConfigError::caused_by("(document)", "not valid YAML", e))?;
        PoolConfig::from_value(&value)
    }

    /// Reads one pool from JSON and checks it.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ConfigError::caused_by("(document)", "not valid JSON", e))?;
        PoolConfig::from_value(&value)
    }

    /// Reads one pool from an already parsed document and checks it.
    pub fn from_value(value: &Value) -> Result<Self, ConfigError> {
        let map = value
            .as_object()
            .ok_or_else(|| ConfigError::new("(document)", "a pool must be a mapping"))?;
        check_keys(
            map,
            "",
            &[
                "name",
                "adapter",
                "trust",
                "region",
                "maxConcurrency",
                "credentials",
                "config",
            ],
        )?;
        let name = required_string(map, "", "name")?;
        check_label_value("name", &name)?;
        if let Some(adapter) = optional_string(map, "", "adapter")?
            && adapter != ADAPTER_NAME
        {
            return Err(ConfigError::new(
                "adapter",
                format!("this is the `{ADAPTER_NAME}` adapter, not `{adapter}`"),
            ));
        }
        let trust = match required_string(map, "", "trust")?.as_str() {
            "private" => Trust::Private,
            "external" => Trust::External,
            other => {
                return Err(ConfigError::new(
                    "trust",
                    format!("`{other}` is neither `private` nor `external`"),
                ));
            }
        };
        let region = optional_string(map, "", "region")?;
        let max_concurrency = match map.get("maxConcurrency") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .filter(|n| *n > 0)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        ConfigError::new("maxConcurrency", "must be a positive whole number")
                    })?,
            ),
        };
        let credentials = match map.get("credentials") {
            None | Some(Value::Null) => None,
            Some(v) => Some(credential_source(v)?),
        };
        let config = match map.get("config") {
            None | Some(Value::Null) => AdapterConfig::default(),
            Some(Value::Object(config)) => adapter_config(config)?,
            Some(_) => return Err(ConfigError::new("config", "must be a mapping")),
        };
        let pool = PoolConfig {
            name,
            trust,
            region,
            max_concurrency,
            credentials,
            config,
        };
        pool.validate()?;
        Ok(pool)
    }

    /// Checks the rules between keys: warm-pool mode refuses the keys its template fixes, and
    /// `features` may name only what this mode can offer.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_label_value("name", &self.name)?;
        let config = &self.config;
        if let Some(namespace) = &config.namespace {
            check_dns_label("config.namespace", namespace)?;
        }
        if config.image.is_empty() {
            return Err(ConfigError::new("config.image", "must not be empty"));
        }
        if !config.volume_path.starts_with('/') {
            return Err(ConfigError::new(
                "config.volumePath",
                "must be an absolute path",
            ));
        }
        if let Some(size) = &config.volume_size {
            check_quantity("config.volumeSize", size)?;
        }
        if let Some(pool) = &config.warm_pool {
            check_dns_subdomain("config.warmPool", pool)?;
            let fixed: [(&str, bool); 5] = [
                ("image", config.image != DEFAULT_IMAGE),
                ("runtimeClassName", config.runtime_class_name.is_some()),
                ("volumeSize", config.volume_size.is_some()),
                ("storageClassName", config.storage_class_name.is_some()),
                ("serviceAccountName", config.service_account_name.is_some()),
            ];
            if let Some((key, _)) = fixed.iter().find(|(_, set)| *set) {
                return Err(ConfigError::new(
                    format!("config.{key}"),
                    "not allowed with warmPool: the SandboxTemplate fixes it",
                ));
            }
        }
        if let Some(features) = &config.features {
            for capability in features.iter() {
                if let Some(why) = refusal(config, capability) {
                    return Err(ConfigError::new(
                        "config.features",
                        format!("`{capability}` cannot be offered: {why}"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Returns why `capability` cannot be offered with `config`, or `None` if it can.
fn refusal(config: &AdapterConfig, capability: Capability) -> Option<&'static str> {
    match capability {
        Capability::Exec
        | Capability::ExecStream
        | Capability::Files
        | Capability::Stdin
        | Capability::PortsExpose
        | Capability::Ttl
        | Capability::IsolationContainer
        | Capability::IsolationMicrovm => None,
        Capability::LifecycleStopStart | Capability::PersistenceDisk => {
            if config.is_warm_pool() {
                Some("a warm pool's sandboxes cannot be suspended")
            } else if config.volume_size.is_none() {
                Some("it needs volumeSize")
            } else {
                None
            }
        }
        Capability::LifecyclePauseResume => Some("Kubernetes has no memory-keeping pause"),
        Capability::SnapshotsDisk | Capability::SnapshotsMemory => {
            Some("agent-sandbox takes no snapshots")
        }
        Capability::Fork => Some("agent-sandbox cannot fork a sandbox"),
    }
}

/// Reads `config`'s keys.
fn adapter_config(map: &Map<String, Value>) -> Result<AdapterConfig, ConfigError> {
    const PREFIX: &str = "config.";
    check_keys(
        map,
        PREFIX,
        &[
            "namespace",
            "image",
            "isolation",
            "runtimeClassName",
            "volumeSize",
            "volumePath",
            "storageClassName",
            "serviceAccountName",
            "warmPool",
            "container",
            "features",
            "apiServer",
            "caFile",
        ],
    )?;
    let defaults = AdapterConfig::default();
    let isolation = match optional_string(map, PREFIX, "isolation")?.as_deref() {
        None => None,
        Some("container") => Some(Isolation::Container),
        Some("microvm") => Some(Isolation::Microvm),
        Some(other) => {
            return Err(ConfigError::new(
                "config.isolation",
                format!("`{other}` is neither `container` nor `microvm`"),
            ));
        }
    };
    let features = match optional_string(map, PREFIX, "features")? {
        None => None,
        Some(list) => Some(parse_features(&list)?),
    };
    let volume_size = match map.get("volumeSize") {
        // A bare number in YAML is a quantity of bytes.
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => optional_string(map, PREFIX, "volumeSize")?,
    };
    let api_server = optional_string(map, PREFIX, "apiServer")?;
    if let Some(url) = &api_server
        && !url.starts_with("https://")
    {
        return Err(ConfigError::new(
            "config.apiServer",
            "must be an https:// URL (TLS is always verified)",
        ));
    }
    Ok(AdapterConfig {
        namespace: optional_string(map, PREFIX, "namespace")?,
        image: optional_string(map, PREFIX, "image")?.unwrap_or(defaults.image),
        isolation,
        runtime_class_name: optional_string(map, PREFIX, "runtimeClassName")?,
        volume_size,
        volume_path: optional_string(map, PREFIX, "volumePath")?.unwrap_or(defaults.volume_path),
        storage_class_name: optional_string(map, PREFIX, "storageClassName")?,
        service_account_name: optional_string(map, PREFIX, "serviceAccountName")?,
        warm_pool: optional_string(map, PREFIX, "warmPool")?,
        container: optional_string(map, PREFIX, "container")?,
        features,
        api_server,
        ca_file: optional_string(map, PREFIX, "caFile")?.map(PathBuf::from),
    })
}

/// Parses `features`: a comma-separated list of capability names.
fn parse_features(list: &str) -> Result<Capabilities, ConfigError> {
    let mut caps = Capabilities::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let capability: Capability = name.parse().map_err(|_| {
            ConfigError::new(
                "config.features",
                format!("`{}` is not a capability name", cut(name)),
            )
        })?;
        caps.insert(capability);
    }
    Ok(caps)
}

/// Reads `credentials`: a mapping with exactly one of `env`, `file` or `secret`.
fn credential_source(value: &Value) -> Result<CredentialSource, ConfigError> {
    let map = value.as_object().ok_or_else(|| {
        ConfigError::new(
            "credentials",
            "must be a mapping with one of `env`, `file` or `secret`",
        )
    })?;
    check_keys(map, "credentials.", &["env", "file", "secret"])?;
    if map.len() != 1 {
        return Err(ConfigError::new(
            "credentials",
            "give exactly one of `env`, `file` or `secret`",
        ));
    }
    if let Some(var) = optional_string(map, "credentials.", "env")? {
        return Ok(CredentialSource::Env(var));
    }
    if let Some(path) = optional_string(map, "credentials.", "file")? {
        return Ok(CredentialSource::File(PathBuf::from(path)));
    }
    if let Some(name) = optional_string(map, "credentials.", "secret")? {
        return Ok(CredentialSource::Secret(name));
    }
    Err(ConfigError::new(
        "credentials",
        "give exactly one of `env`, `file` or `secret`",
    ))
}

/// Refuses keys not in `known`, naming the first unknown one.
fn check_keys(map: &Map<String, Value>, prefix: &str, known: &[&str]) -> Result<(), ConfigError> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(ConfigError::new(
            format!("{prefix}{}", cut(unknown)),
            format!("unknown key; expected one of {}", known.join(", ")),
        )),
        None => Ok(()),
    }
}

/// Returns the string at `key`, or `None` when absent or null; other types are errors.
fn optional_string(
    map: &Map<String, Value>,
    prefix: &str,
    key: &str,
) -> Result<Option<String>, ConfigError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Err(ConfigError::new(
            format!("{prefix}{key}"),
            "must not be empty",
        )),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ConfigError::new(
            format!("{prefix}{key}"),
            "must be a string",
        )),
    }
}

/// Returns the string at `key`, which must be present.
fn required_string(
    map: &Map<String, Value>,
    prefix: &str,
    key: &str,
) -> Result<String, ConfigError> {
    optional_string(map, prefix, key)?
        .ok_or_else(|| ConfigError::new(format!("{prefix}{key}"), "is required"))
}

/// Checks a Kubernetes label value (the pool name is one on every object it creates).
fn check_label_value(key: &str, value: &str) -> Result<(), ConfigError> {
    let bytes = value.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            format!(
                "`{}` is not 1 to 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric",
                cut(value)
            ),
        ))
    }
}

/// Checks an RFC 1123 label (a namespace name).
fn check_dns_label(key: &str, value: &str) -> Result<(), ConfigError> {
    let bytes = value.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .first()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            format!(
                "`{}` is not a DNS label (lowercase letters, digits and '-')",
                cut(value)
            ),
        ))
    }
}

/// Checks an RFC 1123 subdomain (an object name).
fn check_dns_subdomain(key: &str, value: &str) -> Result<(), ConfigError> {
    if value.len() > 253
        || value
            .split('.')
            .any(|part| check_dns_label(key, part).is_err())
    {
        return Err(ConfigError::new(
            key,
            format!("`{}` is not a valid object name", cut(value)),
        ));
    }
    Ok(())
}

/// Checks a Kubernetes quantity such as `10Gi`, `512Mi` or `1.5G`.
fn check_quantity(key: &str, value: &str) -> Result<(), ConfigError> {
    const SUFFIXES: [&str; 13] = [
        "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E",
    ];
    let digits_end = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (number, suffix) = value.split_at(digits_end);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && number.chars().any(|c| c.is_ascii_digit());
    if number_ok && SUFFIXES.contains(&suffix) {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            format!("`{}` is not a Kubernetes quantity such as 10Gi", cut(value)),
        ))
    }
}

/// Cuts text repeated in an error to 64 characters.
fn cut(text: &str) -> String {
    text.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(yaml: &str) -> ConfigError {
        PoolConfig::from_yaml(yaml).unwrap_err()
    }

    #[test]
    fn a_document_that_does_not_parse_keeps_the_parser_error_as_its_source() {
        let e = err("name: [unclosed\n");
        assert_eq!(e.key, "(document)");
        assert_eq!(
            e.to_string(),
            "pool config key `(document)`: not valid YAML"
        );
        assert!(std::error::Error::source(&e).is_some(), "{e:?}");
        let e = PoolConfig::from_json("{").unwrap_err();
        assert_eq!(e.message, "not valid JSON");
        assert!(std::error::Error::source(&e).is_some(), "{e:?}");
        assert!(std::error::Error::source(&err("trust: maybe\n")).is_none());
    }

    #[test]
    fn seed_example_pool_reads_with_its_values() {
        let pool = PoolConfig::from_yaml(
            "name: k8s\nadapter: agent-sandbox\ntrust: private\nregion: dc1\nmaxConcurrency: 50\n\
             config:\n  namespace: sandboxes\n  image: ubuntu:24.04\n  isolation: container\n  \
             volumeSize: 10Gi\n  volumePath: /workspace\n  storageClassName: fast\n  \
             serviceAccountName: sandbox\n  features: exec,exec.stream,files,ports.expose\n",
        )
        .unwrap();
        assert_eq!(pool.name, "k8s");
        assert_eq!(pool.trust, Trust::Private);
        assert_eq!(pool.region.as_deref(), Some("dc1"));
        assert_eq!(pool.max_concurrency, Some(50));
        assert_eq!(pool.config.namespace.as_deref(), Some("sandboxes"));
        assert_eq!(pool.config.volume_size.as_deref(), Some("10Gi"));
        assert_eq!(pool.config.storage_class_name.as_deref(), Some("fast"));
        assert_eq!(
            pool.config.capabilities().to_string(),
            "exec,exec.stream,files,ports.expose"
        );
    }

    #[test]
    fn missing_keys_take_the_seed_defaults() {
        let pool = PoolConfig::from_yaml("name: p\ntrust: external\n").unwrap();
        assert_eq!(pool.config, AdapterConfig::default());
        assert_eq!(pool.config.image, "ubuntu:24.04");
        assert_eq!(pool.config.volume_path, "/workspace");
        assert_eq!(pool.config.namespace, None);
        assert_eq!(pool.credentials, None);
    }

    #[test]
    fn json_documents_read_like_yaml() {
        let pool = PoolConfig::from_json(
            r#"{"name":"p","trust":"private","credentials":{"file":"/t"},"config":{"warmPool":"python-warm","container":"main"}}"#,
        )
        .unwrap();
        assert_eq!(
            pool.credentials,
            Some(CredentialSource::File(PathBuf::from("/t")))
        );
        assert_eq!(pool.config.warm_pool.as_deref(), Some("python-warm"));
        assert_eq!(pool.config.container.as_deref(), Some("main"));
    }

    #[test]
    fn default_features_follow_volume_and_isolation() {
        let mut config = AdapterConfig::default();
        assert_eq!(config.capabilities().to_string(), "exec,exec.stream,files");
        config.volume_size = Some("1Gi".into());
        config.isolation = Some(Isolation::Microvm);
        let caps = config.capabilities();
        for cap in [
            Capability::LifecycleStopStart,
            Capability::PersistenceDisk,
            Capability::IsolationMicrovm,
        ] {
            assert!(caps.contains(cap), "{cap} missing from {caps}");
        }
        assert!(!caps.contains(Capability::IsolationContainer));
        assert!(!caps.contains(Capability::Stdin));
        assert!(!caps.contains(Capability::Ttl));
    }

    #[test]
    fn features_replace_the_defaults_entirely() {
        let pool = PoolConfig::from_yaml(
            "name: p\ntrust: private\nconfig:\n  volumeSize: 1Gi\n  isolation: container\n  features: exec, stdin ,ttl\n",
        )
        .unwrap();
        assert_eq!(pool.config.capabilities().to_string(), "exec,stdin,ttl");
    }

    #[test]
    fn trust_is_required_and_named() {
        let e = err("name: p\n");
        assert_eq!(e.key, "trust");
        assert!(e.to_string().contains("`trust`"), "{e}");
        assert_eq!(err("name: p\ntrust: maybe\n").key, "trust");
    }

    #[test]
    fn unknown_keys_are_named_with_their_path() {
        assert_eq!(err("name: p\ntrust: private\nnmae: x\n").key, "nmae");
        assert_eq!(
            err("name: p\ntrust: private\nconfig:\n  volumesize: 1Gi\n").key,
            "config.volumesize"
        );
        assert_eq!(
            err("name: p\ntrust: private\ncredentials: {token: abc}\n").key,
            "credentials.token"
        );
    }

    #[test]
    fn wrong_types_name_the_key() {
        assert_eq!(
            err("name: p\ntrust: private\nconfig:\n  image: [a]\n").key,
            "config.image"
        );
        assert_eq!(
            err("name: p\ntrust: private\nmaxConcurrency: -1\n").key,
            "maxConcurrency"
        );
        assert_eq!(err("name: p\ntrust: private\nconfig: 3\n").key, "config");
    }

    #[test]
    fn warm_pool_refuses_every_key_its_template_fixes() {
        for (key, value) in [
            ("image", "python:3"),
            ("runtimeClassName", "gvisor"),
            ("volumeSize", "1Gi"),
            ("storageClassName", "fast"),
            ("serviceAccountName", "sa"),
        ] {
            let e = err(&format!(
                "name: p\ntrust: private\nconfig:\n  warmPool: w\n  {key}: {value}\n"
            ));
            assert_eq!(e.key, format!("config.{key}"), "{e}");
            assert!(e.message.contains("warmPool"), "{e}");
        }
    }

    #[test]
    fn features_refuse_what_the_mode_cannot_offer() {
        for (extra, features) in [
            ("", "exec,lifecycle.stop-start"),
            ("", "persistence.disk"),
            ("  warmPool: w\n", "lifecycle.stop-start"),
            ("", "snapshots.disk"),
            ("", "fork"),
            ("", "lifecycle.pause-resume"),
            ("", "exec,telepathy"),
        ] {
            let e = err(&format!(
                "name: p\ntrust: private\nconfig:\n{extra}  features: {features}\n"
            ));
            assert_eq!(e.key, "config.features", "{features}: {e}");
        }
    }

    #[test]
    fn credentials_take_exactly_one_source() {
        assert_eq!(
            err("name: p\ntrust: private\ncredentials: {env: A, file: /b}\n").key,
            "credentials"
        );
        assert_eq!(
            err("name: p\ntrust: private\ncredentials: {}\n").key,
            "credentials"
        );
        let pool =
            PoolConfig::from_yaml("name: p\ntrust: private\ncredentials: {secret: k8s-token}\n")
                .unwrap();
        assert_eq!(
            pool.credentials,
            Some(CredentialSource::Secret("k8s-token".into()))
        );
    }

    #[test]
    fn bad_values_name_their_keys() {
        for (yaml, key) in [
            ("name: Not Valid\ntrust: private\n", "name"),
            ("name: p\nadapter: e2b\ntrust: private\n", "adapter"),
            (
                "name: p\ntrust: private\nconfig:\n  namespace: Bad_NS\n",
                "config.namespace",
            ),
            (
                "name: p\ntrust: private\nconfig:\n  volumeSize: ten\n",
                "config.volumeSize",
            ),
            (
                "name: p\ntrust: private\nconfig:\n  volumePath: work\n",
                "config.volumePath",
            ),
            (
                "name: p\ntrust: private\nconfig:\n  isolation: vm\n",
                "config.isolation",
            ),
            (
                "name: p\ntrust: private\nconfig:\n  apiServer: http://k8s:80\n",
                "config.apiServer",
            ),
        ] {
            assert_eq!(err(yaml).key, key, "{yaml}");
        }
    }

    #[test]
    fn quantities_accept_kubernetes_forms() {
        for q in ["10Gi", "1", "512Mi", "1.5G", "100k", "3"] {
            assert!(check_quantity("k", q).is_ok(), "{q}");
        }
        for q in ["", "Gi", "10GB", "1..5Gi", "-1Gi", "1 Gi"] {
            assert!(check_quantity("k", q).is_err(), "{q}");
        }
    }

    #[test]
    fn the_pool_fixtures_read_as_documented() {
        let direct =
            PoolConfig::from_yaml(include_str!("../../fixtures/pools/direct.yaml")).unwrap();
        assert!(
            direct
                .config
                .capabilities()
                .contains(Capability::LifecycleStopStart)
        );
        let warm = PoolConfig::from_yaml(include_str!("../../fixtures/pools/warm.yaml")).unwrap();
        assert_eq!(warm.config.warm_pool.as_deref(), Some("python-warm"));
        let remote =
            PoolConfig::from_yaml(include_str!("../../fixtures/pools/remote.yaml")).unwrap();
        assert_eq!(
            remote.credentials,
            Some(CredentialSource::Env("DIFFERENTLY_K8S_TOKEN".into()))
        );
        assert_eq!(remote.trust, Trust::External);
        let minimal =
            PoolConfig::from_json(include_str!("../../fixtures/pools/minimal.json")).unwrap();
        assert_eq!(minimal.config.namespace.as_deref(), Some("sandboxes"));
    }

    #[test]
    fn invalid_yaml_is_an_error_not_a_panic() {
        assert_eq!(err("name: [unclosed\n").key, "(document)");
        assert_eq!(err("- a\n- b\n").key, "(document)");
    }
}
