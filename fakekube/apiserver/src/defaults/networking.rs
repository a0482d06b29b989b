//! The validation of `networking.k8s.io/v1` Ingresses and IngressClasses
//! (pkg/apis/networking/validation): an Ingress needs rules or a default backend, each
//! backend exactly one of a service (with a port name or number) or a resource, each path a
//! supported `pathType` and an absolute path for `Exact` and `Prefix`, hosts DNS names
//! (a leading `*.` allowed); an IngressClass a domain-prefixed `controller` that never
//! changes and well-formed `parameters`.

use crate::meta;
use crate::status::Cause;
use serde_json::{Value, json};

fn invalid(field: String, value: &str, why: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: \"{value}\": {why}"),
        field: Some(field),
    }
}

fn required(field: String, why: &str) -> Cause {
    Cause {
        reason: "FieldValueRequired".into(),
        message: if why.is_empty() {
            "Required value".into()
        } else {
            format!("Required value: {why}")
        },
        field: Some(field),
    }
}

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The name check of `value` (a DNS-1123 subdomain or label) reported at `field`.
fn name_at(value: &str, label: bool, field: String, causes: &mut Vec<Cause>) {
    if let Some(mut c) = meta::validate_name(value, label) {
        c.field = Some(field);
        causes.push(c);
    }
}

const PATH_TYPES: &[&str] = &["Exact", "Prefix", "ImplementationSpecific"];

/// Checks one backend at `at`.
fn backend(b: &Value, at: &str, causes: &mut Vec<Cause>) {
    let service = b.get("service").filter(|s| !s.is_null());
    let resource = b.get("resource").filter(|s| !s.is_null());
    match (service, resource) {
        (Some(_), Some(_)) => causes.push(invalid(
            at.into(),
            "",
            "cannot set both service and resource backends",
        )),
        (None, None) => causes.push(invalid(
            at.into(),
            "",
            "resource or service backend is required",
        )),
        (Some(s), None) => {
            name_at(text(s, "name"), true, format!("{at}.service.name"), causes);
            let port = s.get("port").cloned().unwrap_or(Value::Null);
            let name = text(&port, "name");
            let number = port.get("number").and_then(Value::as_i64);
            match (name.is_empty(), number) {
                (false, Some(_)) => causes.push(invalid(
                    format!("{at}.service.port"),
                    "",
                    "cannot set both port name & port number",
                )),
                (true, None) => causes.push(required(
                    format!("{at}.service.port"),
                    "port name or number is required",
                )),
                (true, Some(n)) if !(1..=65535).contains(&n) => causes.push(invalid(
                    format!("{at}.service.port.number"),
                    &n.to_string(),
                    "must be between 1 and 65535, inclusive",
                )),
                _ => {}
            }
        }
        (None, Some(r)) => {
            if text(r, "kind").is_empty() {
                causes.push(required(format!("{at}.resource.kind"), ""));
            }
            if text(r, "name").is_empty() {
                causes.push(required(format!("{at}.resource.name"), ""));
            }
        }
    }
}

/// Checks a rule's host.
fn host(h: &str, at: String, causes: &mut Vec<Cause>) {
    if h.parse::<std::net::IpAddr>().is_ok() {
        causes.push(invalid(at, h, "must be a DNS name, not an IP address"));
        return;
    }
    let name = h.strip_prefix("*.").unwrap_or(h);
    if name.contains('*') || meta::validate_name(name, false).is_some() {
        causes.push(invalid(
            at,
            h,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ));
    }
}

/// Checks an Ingress.
pub(super) fn ingress(obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if old.is_none()
        && let Some(o) = obj.as_object_mut()
    {
        o.insert("status".into(), json!({ "loadBalancer": {} }));
    }
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let rules = spec
        .get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let default_backend = spec.get("defaultBackend").filter(|b| !b.is_null());
    if rules.is_empty() && default_backend.is_none() {
        causes.push(invalid(
            "spec".into(),
            "",
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = default_backend {
        backend(b, "spec.defaultBackend", &mut causes);
    }
    let class = text(&spec, "ingressClassName");
    if spec.get("ingressClassName").is_some_and(Value::is_string) {
        name_at(class, false, "spec.ingressClassName".into(), &mut causes);
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("spec.rules[{i}]");
        let h = text(rule, "host");
        if !h.is_empty() {
            host(h, format!("{at}.host"), &mut causes);
        }
        let Some(http) = rule.get("http").filter(|h| !h.is_null()) else {
            continue;
        };
        let paths = http
            .get("paths")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if paths.is_empty() {
            causes.push(required(format!("{at}.http.paths"), ""));
        }
        for (j, p) in paths.iter().enumerate() {
            let pat = format!("{at}.http.paths[{j}]");
            let path = text(p, "path");
            match p.get("pathType").and_then(Value::as_str) {
                None => causes.push(required(
                    format!("{pat}.pathType"),
                    "pathType must be specified",
                )),
                Some(t) if !PATH_TYPES.contains(&t) => causes.push(Cause {
                    reason: "FieldValueNotSupported".into(),
                    message: format!(
                        "Unsupported value: \"{t}\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""
                    ),
                    field: Some(format!("{pat}.pathType")),
                }),
                Some("Exact" | "Prefix") => {
                    if !path.starts_with('/') {
                        causes.push(invalid(
                            format!("{pat}.path"),
                            path,
                            "must be an absolute path",
                        ));
                    }
                    for bad in ["//", "/./", "/../", "%2f", "%2F"] {
                        if path.contains(bad) {
                            causes.push(invalid(
                                format!("{pat}.path"),
                                path,
                                &format!("must not contain '{bad}'"),
                            ));
                        }
                    }
                }
                Some(_) => {
                    if !path.is_empty() && !path.starts_with('/') {
                        causes.push(invalid(
                            format!("{pat}.path"),
                            path,
                            "must be an absolute path",
                        ));
                    }
                }
            }
            backend(
                p.get("backend").unwrap_or(&Value::Null),
                &format!("{pat}.backend"),
                &mut causes,
            );
        }
    }
    for (i, tls) in spec
        .get("tls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (j, h) in tls
            .get("hosts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            host(
                h.as_str().unwrap_or(""),
                format!("spec.tls[{i}].hosts[{j}]"),
                &mut causes,
            );
        }
    }
    causes
}

/// Checks an IngressClass (and, on update, its immutable `controller`).
pub(super) fn ingress_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let controller = text(&spec, "controller");
    if controller.is_empty() {
        causes.push(required("spec.controller".into(), ""));
    } else {
        let domain_prefixed = controller.split_once('/').is_some_and(|(domain, path)| {
            meta::validate_name(domain, false).is_none() && !path.is_empty()
        });
        if !domain_prefixed {
            causes.push(invalid(
                "spec.controller".into(),
                controller,
                "must be a domain-prefixed path (such as \"acme.io/foo\")",
            ));
        }
        if controller.len() > 250 {
            causes.push(Cause {
                reason: "FieldValueTooLong".into(),
                message: "Too long: may not be more than 250 bytes".into(),
                field: Some("spec.controller".into()),
            });
        }
    }
    if let Some(old) = old {
        let before = old
            .pointer("/spec/controller")
            .and_then(Value::as_str)
            .unwrap_or("");
        if before != controller {
            causes.push(invalid(
                "spec.controller".into(),
                controller,
                "field is immutable",
            ));
        }
    }
    if let Some(p) = spec.get("parameters").filter(|p| !p.is_null()) {
        if text(p, "kind").is_empty() {
            causes.push(required("spec.parameters.kind".into(), ""));
        }
        if text(p, "name").is_empty() {
            causes.push(required("spec.parameters.name".into(), ""));
        }
        let scope = p.get("scope").and_then(Value::as_str).unwrap_or("Cluster");
        let namespace = text(p, "namespace");
        match scope {
            "Cluster" if !namespace.is_empty() => causes.push(Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: `parameters.scope` is set to 'Cluster'".into(),
                field: Some("spec.parameters.namespace".into()),
            }),
            "Namespace" if namespace.is_empty() => causes.push(required(
                "spec.parameters.namespace".into(),
                "`parameters.scope` is set to 'Namespace'",
            )),
            "Cluster" | "Namespace" => {}
            other => causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: \"{other}\": supported values: \"Cluster\", \"Namespace\""
                ),
                field: Some("spec.parameters.scope".into()),
            }),
        }
    }
    causes
}
