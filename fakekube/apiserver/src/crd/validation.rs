//! The validation of a CRD itself, as apiextensions-apiserver's `validation` package does it,
//! with its field paths and wording: the name, group, scope and names, the versions (one
//! storage version, unique DNS-1035 names, a structural schema each), subresources, printer
//! columns, selectable fields and conversion; on update the immutable fields and the stored
//! versions.
//!
//! Where the API server prints a Go struct as the bad value (`spec.versions`), the versions'
//! names are printed instead.

use super::cause;
use super::names::stored_versions;
use super::spec::{Column, Crd, Version, version_schema};
use crate::schema::{self, go_quote};
use crate::status::Cause;
use serde_json::Value;
use std::collections::BTreeSet;

const REQUIRED: &str = "FieldValueRequired";
const INVALID: &str = "FieldValueInvalid";
const NOT_SUPPORTED: &str = "FieldValueNotSupported";
const FORBIDDEN: &str = "FieldValueForbidden";
const DUPLICATE: &str = "FieldValueDuplicate";
const TOO_MANY: &str = "FieldValueTooMany";

/// The annotation a CRD in a protected group (`*.k8s.io`, `*.kubernetes.io`) must carry.
const API_APPROVAL: &str = "api-approved.kubernetes.io";

/// `field.Required(path, detail)`.
fn required(field: &str, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    cause(REQUIRED, field, message)
}

/// `field.Invalid(path, value, detail)` of a string value.
fn invalid(field: &str, value: &str, detail: &str) -> Cause {
    cause(
        INVALID,
        field,
        format!("Invalid value: {}: {detail}", quote(value)),
    )
}

/// `field.Forbidden(path, detail)`.
fn forbidden(field: &str, detail: &str) -> Cause {
    cause(FORBIDDEN, field, format!("Forbidden: {detail}"))
}

/// `field.NotSupported(path, value, supported)`.
fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
    cause(
        NOT_SUPPORTED,
        field,
        format!(
            "Unsupported value: {}: supported values: {}",
            quote(value),
            list.join(", ")
        ),
    )
}

/// Go's `%q`.
fn quote(s: &str) -> String {
    go_quote(s)
}

/// The messages of `IsDNS1035Label`.
pub(super) fn dns1035_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = v.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_lowercase)
        && b.last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        errs.push("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string());
    }
    errs
}

/// The messages of `IsDNS1123Subdomain`.
fn dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(edge)
            && b.last().is_some_and(edge)
            && b.iter().all(|c| edge(c) || *c == b'-')
    };
    if !v.split('.').all(label_ok) {
        errs.push("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string());
    }
    errs
}

/// Each version's name, served and storage flags, standing in for the Go struct the API
/// server prints.
fn versions_value(versions: &[Version]) -> String {
    let list: Vec<String> = versions
        .iter()
        .map(|v| {
            format!(
                "{{name: {}, served: {}, storage: {}}}",
                quote(&v.name),
                v.served,
                v.storage
            )
        })
        .collect();
    format!("[{}]", list.join(", "))
}

/// `metadata.name`: a DNS subdomain equal to `<plural>.<group>`; protected groups need the
/// approval annotation.
fn validate_meta(obj: &Value, crd: &Crd, out: &mut Vec<Cause>) {
    let name = &crd.name;
    for msg in dns1123_subdomain(name) {
        out.push(invalid("metadata.name", name, &msg));
    }
    if *name != format!("{}.{}", crd.spec.names.plural, crd.spec.group) {
        out.push(invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let group = &crd.spec.group;
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|p| group == p || group.ends_with(&format!(".{p}")));
    let approved = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(API_APPROVAL))
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty());
    if protected && !approved {
        out.push(required(
            &format!("metadata.annotations[{API_APPROVAL}]"),
            &format!("protected groups must have approval annotation \"{API_APPROVAL}\", see https://github.com/kubernetes/enhancements/pull/1111"),
        ));
    }
}

/// `spec.names` (or `status.acceptedNames`) at `path`.
fn validate_names(names: &super::spec::Names, path: &str, out: &mut Vec<Cause>) {
    let label = |field: &str, v: &str, out: &mut Vec<Cause>, mixed: bool| {
        if v.is_empty() {
            return;
        }
        let errs = dns1035_label(&if mixed {
            v.to_lowercase()
        } else {
            v.to_string()
        });
        if !errs.is_empty() {
            let detail = if mixed {
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    errs.join(",")
                )
            } else {
                errs.join(",")
            };
            out.push(invalid(&format!("{path}.{field}"), v, &detail));
        }
    };
    label("plural", &names.plural, out, false);
    label("singular", &names.singular, out, false);
    label("kind", &names.kind, out, true);
    label("listKind", &names.list_kind, out, true);
    for (i, s) in names.short_names.iter().enumerate() {
        let errs = dns1035_label(s);
        if !errs.is_empty() {
            out.push(invalid(
                &format!("{path}.shortNames[{i}]"),
                s,
                &errs.join(","),
            ));
        }
    }
    if !names.kind.is_empty() && names.kind == names.list_kind {
        out.push(invalid(
            &format!("{path}.listKind"),
            &names.list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in names.categories.iter().enumerate() {
        let errs = dns1035_label(c);
        if !errs.is_empty() {
            out.push(invalid(
                &format!("{path}.categories[{i}]"),
                c,
                &errs.join(","),
            ));
        }
    }
}

/// `validateSimpleJSONPath`.
fn simple_json_path(s: &str, field: &str, out: &mut Vec<Cause>) -> bool {
    let err = if s.is_empty() {
        Some("must not be empty")
    } else if !s.starts_with('.') {
        Some("must be a simple json path starting with .")
    } else if s != "." && s[1..].split('.').any(str::is_empty) {
        Some("must be a json path in the dot notation")
    } else {
        None
    };
    match err {
        Some(e) => {
            out.push(invalid(field, s, e));
            false
        }
        None => true,
    }
}

/// One printer column.
fn validate_column(c: &Column, path: &str, out: &mut Vec<Cause>) {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
    if c.name.is_empty() {
        out.push(required(&format!("{path}.name"), ""));
    }
    if c.type_name.is_empty() {
        out.push(required(
            &format!("{path}.type"),
            &format!("must be one of {TYPES}"),
        ));
    } else if !TYPES.split(',').any(|t| t == c.type_name) {
        out.push(invalid(
            &format!("{path}.type"),
            &c.type_name,
            &format!("must be one of {TYPES}"),
        ));
    }
    if let Some(f) = c.format.as_deref().filter(|f| !f.is_empty())
        && !FORMATS.split(',').any(|x| x == f)
    {
        out.push(invalid(
            &format!("{path}.format"),
            f,
            &format!("must be one of {FORMATS}"),
        ));
    }
    if c.json_path.is_empty() {
        out.push(required(&format!("{path}.jsonPath"), ""));
    } else {
        simple_json_path(&c.json_path, &format!("{path}.jsonPath"), out);
    }
}

/// The schema node a simple JSON path leads to.
fn schema_at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .try_fold(root, |node, key| node.get("properties")?.get(key))
}

/// One version's subresources, printer columns and selectable fields.
fn validate_version(obj: &Value, index: usize, v: &Version, out: &mut Vec<Cause>) {
    let path = format!("spec.versions[{index}]");
    for e in dns1035_label(&v.name) {
        out.push(invalid(&format!("{path}.name"), &v.name, &e));
    }
    let schema_root = version_schema(obj, index);
    match schema_root {
        None => out.push(required(
            &format!("{path}.schema.openAPIV3Schema"),
            "schemas are required",
        )),
        Some(root) => {
            for e in schema::compile_errors(root) {
                out.push(Cause {
                    reason: e.reason.to_string(),
                    message: e.message,
                    field: Some(join(&format!("{path}.schema.openAPIV3Schema"), &e.field)),
                });
            }
        }
    }
    if let Some(scale) = v.subresources.as_ref().and_then(|s| s.scale.as_ref()) {
        let sub = format!("{path}.subresources.scale");
        let under =
            |p: &str, prefixes: &[&str], field: &str, detail: &str, out: &mut Vec<Cause>| {
                if p.is_empty() {
                    out.push(required(&format!("{sub}.{field}"), ""));
                } else if simple_json_path(p, &format!("{sub}.{field}"), out)
                    && !prefixes.iter().any(|x| p.starts_with(x))
                {
                    out.push(invalid(&format!("{sub}.{field}"), p, detail));
                }
            };
        under(
            &scale.spec_replicas_path,
            &[".spec."],
            "specReplicasPath",
            "should be a json path under .spec",
            out,
        );
        under(
            &scale.status_replicas_path,
            &[".status."],
            "statusReplicasPath",
            "should be a json path under .status",
            out,
        );
        if let Some(p) = scale
            .label_selector_path
            .as_deref()
            .filter(|p| !p.is_empty())
        {
            under(
                p,
                &[".spec.", ".status."],
                "labelSelectorPath",
                "should be a json path under either .spec or .status",
                out,
            );
        }
    }
    for (i, c) in v.additional_printer_columns.iter().enumerate() {
        validate_column(c, &format!("{path}.additionalPrinterColumns[{i}]"), out);
    }
    let fields = &v.selectable_fields;
    let fpath = format!("{path}.selectableFields");
    if fields.len() > 8 {
        out.push(cause(
            TOO_MANY,
            &fpath,
            format!("Too many: {}: must have at most 8 items", fields.len()),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, f) in fields.iter().enumerate() {
        let jp = format!("{fpath}[{i}].jsonPath");
        if f.json_path.is_empty() {
            out.push(required(&jp, ""));
            continue;
        }
        if !simple_json_path(&f.json_path, &jp, out) {
            continue;
        }
        if !seen.insert(f.json_path.clone()) {
            out.push(cause(
                DUPLICATE,
                &jp,
                format!("Duplicate value: {}", quote(&f.json_path)),
            ));
        }
        if let Some(root) = schema_root {
            match schema_at(root, &f.json_path) {
                None => out.push(invalid(&jp, &f.json_path, "is an invalid path")),
                Some(node) => {
                    let t = node.get("type").and_then(Value::as_str).unwrap_or("");
                    if !matches!(t, "string" | "integer" | "boolean") {
                        out.push(invalid(
                            &jp,
                            &f.json_path,
                            "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
                        ));
                    }
                }
            }
        }
    }
}

/// `parent.child`, or `parent` when the child path is empty.
fn join(parent: &str, child: &str) -> String {
    if child.is_empty() || child == "<nil>" {
        parent.to_string()
    } else if child.starts_with('[') {
        format!("{parent}{child}")
    } else {
        format!("{parent}.{child}")
    }
}

/// `spec.conversion`.
fn validate_conversion(crd: &Crd, out: &mut Vec<Cause>) {
    let Some(c) = &crd.spec.conversion else {
        return;
    };
    match c.strategy.as_str() {
        "None" => {
            if c.webhook.is_some() {
                out.push(forbidden(
                    "spec.conversion.webhook",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        "Webhook" => {
            if crd.spec.preserve_unknown_fields {
                out.push(invalid(
                    "spec.conversion.strategy",
                    "Webhook",
                    "must be None if spec.preserveUnknownFields is true",
                ));
            }
            let Some(w) = &c.webhook else {
                out.push(required(
                    "spec.conversion.webhook",
                    "required when strategy is set to Webhook",
                ));
                return;
            };
            match &w.client_config {
                None => out.push(required(
                    "spec.conversion.webhook.clientConfig",
                    "required when strategy is set to Webhook",
                )),
                Some(cc) => match (&cc.url, &cc.service) {
                    (Some(_), Some(_)) | (None, None) => out.push(required(
                        "spec.conversion.webhook.clientConfig",
                        "exactly one of url or service is required",
                    )),
                    (None, Some(s)) => {
                        if s.name.is_empty() {
                            out.push(required(
                                "spec.conversion.webhook.clientConfig.service.name",
                                "service name is required",
                            ));
                        }
                        if s.namespace.is_empty() {
                            out.push(required(
                                "spec.conversion.webhook.clientConfig.service.namespace",
                                "service namespace is required",
                            ));
                        }
                    }
                    (Some(url), None) => {
                        if !url.starts_with("https://") {
                            out.push(invalid(
                                "spec.conversion.webhook.clientConfig.url",
                                url,
                                "'https' is the only allowed URL scheme",
                            ));
                        }
                    }
                },
            }
            if !w
                .conversion_review_versions
                .iter()
                .any(|v| v == "v1" || v == "v1beta1")
            {
                out.push(required(
                    "spec.conversion.webhook.conversionReviewVersions",
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
        other => out.push(not_supported(
            "spec.conversion.strategy",
            other,
            &["None", "Webhook"],
        )),
    }
}

/// The validation of a CRD on create (and the part of it an update repeats).
pub(super) fn validate(obj: &Value, crd: &Crd) -> Vec<Cause> {
    let mut out = Vec::new();
    validate_meta(obj, crd, &mut out);
    let spec = &crd.spec;
    if spec.group.is_empty() {
        out.push(required("spec.group", ""));
    } else {
        let errs = dns1123_subdomain(&spec.group);
        if !errs.is_empty() {
            out.push(invalid("spec.group", &spec.group, &errs.join(",")));
        } else if !spec.group.contains('.') {
            out.push(invalid(
                "spec.group",
                &spec.group,
                "should be a domain with at least one dot",
            ));
        }
    }
    match spec.scope.as_str() {
        "" => out.push(required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => out.push(not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    let mut names = BTreeSet::new();
    let unique = spec.versions.iter().all(|v| names.insert(v.name.as_str()));
    if !unique {
        out.push(cause(
            INVALID,
            "spec.versions",
            format!(
                "Invalid value: {}: must contain unique version names",
                versions_value(&spec.versions)
            ),
        ));
    }
    if spec.versions.iter().filter(|v| v.storage).count() != 1 {
        out.push(cause(
            INVALID,
            "spec.versions",
            format!(
                "Invalid value: {}: must have exactly one version marked as storage version",
                versions_value(&spec.versions)
            ),
        ));
    }
    for (i, v) in spec.versions.iter().enumerate() {
        validate_version(obj, i, v, &mut out);
    }
    if spec.names.plural.is_empty() {
        out.push(required("spec.names.plural", ""));
    }
    if spec.names.singular.is_empty() {
        out.push(required("spec.names.singular", ""));
    }
    if spec.names.kind.is_empty() {
        out.push(required("spec.names.kind", ""));
    }
    if spec.names.list_kind.is_empty() {
        out.push(required("spec.names.listKind", ""));
    }
    validate_names(&spec.names, "spec.names", &mut out);
    if spec.preserve_unknown_fields {
        out.push(cause(
            INVALID,
            "spec.preserveUnknownFields",
            "Invalid value: true: must be false".to_string(),
        ));
    }
    validate_conversion(crd, &mut out);
    out
}

/// What an update adds: the group and plural never change; scope and kind not once the CRD
/// is established; versions still in `status.storedVersions` stay in `spec.versions`.
pub(super) fn validate_update(crd: &Crd, old: &Crd, old_obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let immutable = |field: &str, new: &str, old: &str, out: &mut Vec<Cause>| {
        if new != old {
            out.push(invalid(field, new, "field is immutable"));
        }
    };
    if super::names::condition_is_true(old_obj, "Established") {
        immutable("spec.scope", &crd.spec.scope, &old.spec.scope, &mut out);
        immutable(
            "spec.names.kind",
            &crd.spec.names.kind,
            &old.spec.names.kind,
            &mut out,
        );
    }
    immutable("spec.group", &crd.spec.group, &old.spec.group, &mut out);
    immutable(
        "spec.names.plural",
        &crd.spec.names.plural,
        &old.spec.names.plural,
        &mut out,
    );
    for (i, v) in stored_versions(old_obj).iter().enumerate() {
        if !crd.spec.versions.iter().any(|x| x.name == *v) {
            out.push(invalid(
                &format!("status.storedVersions[{i}]"),
                v,
                &format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and {v} is removed from status.storedVersions"),
            ));
        }
    }
    out
}

/// The validation of a write of the status subresource: accepted names and stored versions.
pub(super) fn validate_status(obj: &Value, crd: &Crd) -> Vec<Cause> {
    let mut out = Vec::new();
    validate_names(&crd.status.accepted_names, "status.acceptedNames", &mut out);
    let stored = &crd.status.stored_versions;
    if obj.pointer("/status/storedVersions").is_some() {
        if stored.is_empty() {
            out.push(cause(
                INVALID,
                "status.storedVersions",
                "Invalid value: []string{}: must have at least one stored version".to_string(),
            ));
        }
        for v in crd.spec.versions.iter().filter(|v| v.storage) {
            if !stored.contains(&v.name) && !stored.is_empty() {
                out.push(cause(
                    INVALID,
                    "status.storedVersions",
                    format!(
                        "Invalid value: {}: must have the storage version {}",
                        quote(&v.name),
                        v.name
                    ),
                ));
            }
        }
        for (i, s) in stored.iter().enumerate() {
            if !crd.spec.versions.iter().any(|v| v.name == *s) {
                out.push(invalid(
                    &format!("status.storedVersions[{i}]"),
                    s,
                    "must appear in spec.versions",
                ));
            }
        }
    }
    out
}
