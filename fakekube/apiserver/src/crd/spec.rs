//! The parsed view of a CRD's `spec` (schemas stay in the object, read by index), and the
//! defaults the API server writes into a CRD (`apiextensions.k8s.io/v1` defaulting).

use serde::Deserialize;
use serde_json::{Value, json};

/// `spec.names` (or `status.acceptedNames`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Names {
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) kind: String,
    pub(crate) list_kind: String,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
}

/// `subresources.scale` of a version.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Scale {
    pub(crate) spec_replicas_path: String,
    pub(crate) status_replicas_path: String,
    pub(crate) label_selector_path: Option<String>,
}

/// `subresources` of a version.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Subresources {
    /// `status: {}` when the status subresource is on.
    pub(crate) status: Option<Value>,
    pub(crate) scale: Option<Scale>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Column {
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) type_name: String,
    pub(crate) format: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) priority: i64,
    pub(crate) json_path: String,
}

/// One `selectableFields` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct SelectableField {
    pub(crate) json_path: String,
}

/// One entry of `spec.versions`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Version {
    pub(crate) name: String,
    pub(crate) served: bool,
    pub(crate) storage: bool,
    pub(crate) deprecated: bool,
    pub(crate) deprecation_warning: Option<String>,
    pub(crate) subresources: Option<Subresources>,
    pub(crate) additional_printer_columns: Vec<Column>,
    pub(crate) selectable_fields: Vec<SelectableField>,
}

/// `service` of a webhook's `clientConfig`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Service {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) path: Option<String>,
    pub(crate) port: Option<i64>,
}

/// `clientConfig` of a conversion webhook.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ClientConfig {
    pub(crate) url: Option<String>,
    pub(crate) service: Option<Service>,
    pub(crate) ca_bundle: Option<String>,
}

/// `conversion.webhook`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Webhook {
    pub(crate) client_config: Option<ClientConfig>,
    pub(crate) conversion_review_versions: Vec<String>,
}

/// `spec.conversion`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Conversion {
    pub(crate) strategy: String,
    pub(crate) webhook: Option<Webhook>,
}

/// `spec`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Spec {
    pub(crate) group: String,
    pub(crate) names: Names,
    pub(crate) scope: String,
    pub(crate) versions: Vec<Version>,
    pub(crate) conversion: Option<Conversion>,
    pub(crate) preserve_unknown_fields: bool,
}

/// `status`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Status {
    pub(crate) accepted_names: Names,
    pub(crate) stored_versions: Vec<String>,
}

/// A CRD, parsed: its name, spec and status.
#[derive(Debug, Clone, Default)]
pub(crate) struct Crd {
    /// `metadata.name`.
    pub(crate) name: String,
    pub(crate) spec: Spec,
    pub(crate) status: Status,
}

impl Crd {
    /// Parses the fields of a CRD object that fakekube reads (the schemas stay in it).
    pub(crate) fn parse(obj: &Value) -> Result<Crd, serde_json::Error> {
        let name = crate::meta::meta_str(obj, "name").unwrap_or("").to_string();
        let spec = match obj.get("spec") {
            Some(s) => Spec::deserialize(s)?,
            None => Spec::default(),
        };
        let status = match obj.get("status") {
            Some(s) if !s.is_null() => Status::deserialize(s)?,
            _ => Status::default(),
        };
        Ok(Crd { name, spec, status })
    }

    /// The storage version's name, when exactly one version is the storage version.
    pub(crate) fn storage_version(&self) -> Option<&str> {
        let mut storage = self.spec.versions.iter().filter(|v| v.storage);
        match (storage.next(), storage.next()) {
            (Some(v), None) => Some(&v.name),
            _ => None,
        }
    }
}

/// The `openAPIV3Schema` of the `index`th version of the CRD object.
pub(crate) fn version_schema(obj: &Value, index: usize) -> Option<&Value> {
    obj.get("spec")?
        .get("versions")?
        .get(index)?
        .get("schema")?
        .get("openAPIV3Schema")
}

/// Writes the API server's defaults into a CRD: `conversion.strategy: None`, the singular
/// and list kind derived from the kind, and port 443 of a webhook service.
pub(crate) fn apply_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({ "strategy": "None" }));
    }
    if let Some(service) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut)
        && !service.contains_key("port")
    {
        service.insert("port".into(), json!(443));
    }
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !kind.is_empty() {
            if names
                .get("singular")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                names.insert("singular".into(), json!(kind.to_lowercase()));
            }
            if names
                .get("listKind")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                names.insert("listKind".into(), json!(format!("{kind}List")));
            }
        }
    }
}
