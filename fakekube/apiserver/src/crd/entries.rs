//! The registry entries of an established CRD: one per served version, and one for the
//! storage version even when it is not served (the store keeps objects in it).

use super::spec::{Crd, Version, version_schema};
use crate::registry::{ALL_VERBS, Conversion, PrinterColumn, ResourceType, ScalePaths, version};
use crate::resources::StatusMode;
use crate::schema;
use serde_json::Value;

/// The default deprecation warning of a version: the newest served, non-deprecated version of
/// a greater priority is recommended when there is one.
fn default_deprecation_warning(crd: &Crd, deprecated: &str) -> String {
    let spec = &crd.spec;
    let kind = &crd.status.accepted_names.kind;
    let mut msg = format!("{}/{deprecated} {kind} is deprecated", spec.group);
    let mut newer: Vec<String> = spec
        .versions
        .iter()
        .filter(|v| {
            v.served
                && !v.deprecated
                && version::compare(deprecated, &v.name) == std::cmp::Ordering::Less
        })
        .map(|v| v.name.clone())
        .collect();
    version::sort_by_priority(&mut newer);
    if let Some(best) = newer.first() {
        msg.push_str(&format!("; use {}/{best} {kind}", spec.group));
    }
    msg
}

/// How objects of the CRD convert between versions.
fn conversion(crd: &Crd) -> Conversion {
    let Some(c) = crd
        .spec
        .conversion
        .as_ref()
        .filter(|c| c.strategy == "Webhook")
    else {
        return Conversion::None;
    };
    let config = c.webhook.as_ref().and_then(|w| w.client_config.as_ref());
    match (
        config.and_then(|c| c.service.as_ref()),
        config.and_then(|c| c.url.clone()),
    ) {
        (Some(s), _) => Conversion::Webhook {
            url: format!(
                "https://{}.{}.svc:{}{}",
                s.name,
                s.namespace,
                s.port.unwrap_or(443),
                s.path.as_deref().unwrap_or("")
            ),
            service: Some(s.name.clone()),
        },
        (None, url) => Conversion::Webhook {
            url: url.unwrap_or_default(),
            service: None,
        },
    }
}

/// The entry of one version.
fn entry(crd: &Crd, obj: &Value, index: usize, v: &Version, storage: &str) -> ResourceType {
    let names = &crd.status.accepted_names;
    let spec = &crd.spec;
    let mut e = ResourceType::absent(&spec.group, &v.name, &names.plural, &names.kind);
    e.list_kind = names.list_kind.clone();
    e.singular = names.singular.clone();
    e.namespaced = spec.scope == "Namespaced";
    e.short_names = names.short_names.clone();
    e.categories = names.categories.clone();
    let subs = v.subresources.as_ref();
    e.status = if subs.is_some_and(|s| s.status.is_some()) {
        StatusMode::Subresource
    } else {
        StatusMode::Plain
    };
    e.scale = subs.and_then(|s| s.scale.as_ref()).map(|s| ScalePaths {
        spec_replicas: s.spec_replicas_path.clone(),
        status_replicas: s.status_replicas_path.clone(),
        label_selector: s.label_selector_path.clone(),
    });
    e.selectable_fields = v
        .selectable_fields
        .iter()
        .map(|f| f.json_path.trim_start_matches('.').to_string())
        .collect();
    e.verbs = ALL_VERBS;
    e.served = v.served;
    e.storage_version = storage.to_string();
    e.schema = version_schema(obj, index).and_then(|s| schema::compile(s).ok());
    e.printer_columns = v
        .additional_printer_columns
        .iter()
        .map(|c| PrinterColumn {
            name: c.name.clone(),
            type_name: c.type_name.clone(),
            format: c.format.clone(),
            description: c.description.clone(),
            priority: c.priority,
            json_path: c.json_path.clone(),
        })
        .collect();
    e.deprecation_warning = v.deprecated.then(|| {
        v.deprecation_warning
            .clone()
            .unwrap_or_else(|| default_deprecation_warning(crd, &v.name))
    });
    e.conversion = conversion(crd);
    e.defined_by = Some(crd.name.clone());
    e
}

/// The registry entries of the CRD object `obj`: its served versions and its storage version.
/// Empty for a CRD with no single storage version.
pub(crate) fn entries(obj: &Value) -> Vec<ResourceType> {
    let Ok(crd) = Crd::parse(obj) else {
        return Vec::new();
    };
    let Some(storage) = crd.storage_version().map(str::to_string) else {
        return Vec::new();
    };
    crd.spec
        .versions
        .iter()
        .enumerate()
        .filter(|(_, v)| v.served || v.storage)
        .map(|(i, v)| entry(&crd, obj, i, v, &storage))
        .collect()
}
