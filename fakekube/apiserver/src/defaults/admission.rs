//! The defaults and validation of `admissionregistration.k8s.io/v1`: webhook configurations,
//! ValidatingAdmissionPolicies and their bindings (pkg/apis/admissionregistration/v1's
//! defaults and pkg/apis/admissionregistration/validation). A policy's CEL expressions are
//! compiled when it is written, so that one that cannot run is refused then, as upstream
//! refuses it.

use super::errs::Errs;
use super::set_default;
use crate::meta;
use crate::status::Cause;
use fakekube_machinery::selector::LabelSelector;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The variables every policy expression may read; `params` only when the policy has a
/// `paramKind`.
pub(crate) const POLICY_VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "variables",
    "params",
];

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| s.as_str().unwrap_or("").to_string())
        .collect()
}

fn text<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// Defaults and checks one of the four kinds; the causes of a 422, empty when admitted.
pub(crate) fn admit(kind: &str, obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let _ = old;
    match kind {
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
            webhook_configuration(obj, kind == "MutatingWebhookConfiguration")
        }
        "ValidatingAdmissionPolicy" => policy(obj),
        "ValidatingAdmissionPolicyBinding" => binding(obj),
        _ => Vec::new(),
    }
}

fn default_rules(rules: Option<&mut Value>) {
    for r in rules
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        set_default(r, "scope", json!("*"));
    }
}

fn default_match_resources(m: &mut Map<String, Value>) {
    set_default(m, "matchPolicy", json!("Equivalent"));
    set_default(m, "namespaceSelector", json!({}));
    set_default(m, "objectSelector", json!({}));
    default_rules(m.get_mut("resourceRules"));
    default_rules(m.get_mut("excludeResourceRules"));
}

fn webhook_configuration(obj: &mut Value, mutating: bool) -> Vec<Cause> {
    let mut e = Errs::default();
    let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return Vec::new();
    };
    let mut names = BTreeSet::new();
    for (i, hook) in hooks.iter_mut().enumerate() {
        let at = format!("webhooks[{i}]");
        let Some(h) = hook.as_object_mut() else {
            e.required(&at, "");
            continue;
        };
        set_default(h, "failurePolicy", json!("Fail"));
        set_default(h, "matchPolicy", json!("Equivalent"));
        set_default(h, "namespaceSelector", json!({}));
        set_default(h, "objectSelector", json!({}));
        set_default(h, "timeoutSeconds", json!(10));
        if mutating {
            set_default(h, "reinvocationPolicy", json!("Never"));
        }
        default_rules(h.get_mut("rules"));
        if let Some(svc) = h
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            set_default(svc, "port", json!(443));
        }
        let hook = &*hook;
        let name = text(hook, "name").unwrap_or("");
        qualified_name(&mut e, &format!("{at}.name"), name);
        if !name.is_empty() && !names.insert(name.to_string()) {
            e.duplicate(&format!("{at}.name"), &json!(name));
        }
        for (j, rule) in hook
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            rule_with_operations(&mut e, rule, &format!("{at}.rules[{j}]"));
        }
        one_of(&mut e, hook, "failurePolicy", &at, &["Fail", "Ignore"]);
        one_of(&mut e, hook, "matchPolicy", &at, &["Equivalent", "Exact"]);
        match hook.get("sideEffects") {
            None | Some(Value::Null) => e.required(
                &format!("{at}.sideEffects"),
                "must specify one of None, NoneOnDryRun",
            ),
            Some(_) => one_of(&mut e, hook, "sideEffects", &at, &["None", "NoneOnDryRun"]),
        }
        if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
            && !(1..=30).contains(&t)
        {
            e.invalid(
                &format!("{at}.timeoutSeconds"),
                &json!(t),
                "the timeout value must be between 1 and 30 seconds",
            );
        }
        selector(
            &mut e,
            hook.get("namespaceSelector"),
            &format!("{at}.namespaceSelector"),
        );
        selector(
            &mut e,
            hook.get("objectSelector"),
            &format!("{at}.objectSelector"),
        );
        if mutating {
            one_of(
                &mut e,
                hook,
                "reinvocationPolicy",
                &at,
                &["IfNeeded", "Never"],
            );
        }
        client_config(
            &mut e,
            hook.get("clientConfig"),
            &format!("{at}.clientConfig"),
        );
        review_versions(&mut e, hook, &format!("{at}.admissionReviewVersions"));
        match_conditions(
            &mut e,
            hook.get("matchConditions"),
            &format!("{at}.matchConditions"),
            false,
        );
    }
    e.0
}

/// A DNS subdomain with at least three segments, as `IsFullyQualifiedName` wants.
fn qualified_name(e: &mut Errs, field: &str, name: &str) {
    if name.is_empty() {
        e.required(field, "");
        return;
    }
    if let Some(mut c) = meta::validate_name(name, false) {
        c.field = Some(field.into());
        e.0.push(c);
        return;
    }
    if name.split('.').count() < 3 {
        e.invalid(
            field,
            &json!(name),
            "should be a domain with at least three segments separated by dots",
        );
    }
}

fn one_of(e: &mut Errs, obj: &Value, key: &str, at: &str, supported: &[&str]) {
    match obj.get(key) {
        None | Some(Value::Null) => {}
        Some(v) if v.as_str().is_some_and(|s| supported.contains(&s)) => {}
        Some(v) => e.not_supported(&format!("{at}.{key}"), v, supported),
    }
}

fn selector(e: &mut Errs, s: Option<&Value>, field: &str) {
    if let Some(s) = s.filter(|s| !s.is_null())
        && let Err(why) = LabelSelector::from_object(s)
    {
        e.invalid(field, s, &why);
    }
}

fn client_config(e: &mut Errs, cc: Option<&Value>, at: &str) {
    let url = cc.and_then(|c| c.get("url")).filter(|u| !u.is_null());
    let service = cc.and_then(|c| c.get("service")).filter(|s| !s.is_null());
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => {
            e.required(at, "exactly one of url or service is required");
        }
        (Some(url), None) => {
            let u = url.as_str().unwrap_or("");
            let field = format!("{at}.url");
            if u.contains('#') {
                e.invalid(&field, url, "fragments are not permitted in the URL");
            }
            match u.split('#').next().unwrap_or("").parse::<http::Uri>() {
                Err(err) => e.invalid(&field, url, &format!("host must be specified: {err}")),
                Ok(parsed) => {
                    if parsed.scheme_str() != Some("https") {
                        e.invalid(&field, url, "'https' is the only allowed URL scheme");
                    }
                    if parsed.host().is_none_or(str::is_empty) {
                        e.invalid(&field, url, "host must be specified");
                    }
                    if parsed.authority().is_some_and(|a| a.as_str().contains('@')) {
                        e.invalid(&field, url, "user information is not permitted in the URL");
                    }
                    if parsed.query().is_some() {
                        e.invalid(&field, url, "query parameters are not permitted in the URL");
                    }
                }
            }
        }
        (None, Some(svc)) => {
            let field = format!("{at}.service");
            for k in ["name", "namespace"] {
                if text(svc, k).is_none_or(str::is_empty) {
                    e.required(&format!("{field}.{k}"), &format!("service {k} is required"));
                }
            }
            if let Some(path) = text(svc, "path")
                && !path.starts_with('/')
            {
                e.invalid(
                    &format!("{field}.path"),
                    &json!(path),
                    "must start with a '/'",
                );
            }
            if let Some(port) = svc.get("port").and_then(Value::as_i64)
                && !(1..=65535).contains(&port)
            {
                e.invalid(
                    &format!("{field}.port"),
                    &json!(port),
                    "port is not valid: must be between 1 and 65535, inclusive",
                );
            }
        }
    }
}

fn review_versions(e: &mut Errs, hook: &Value, field: &str) {
    let versions = strings(hook.get("admissionReviewVersions"));
    if versions.is_empty() {
        e.required(field, "must specify one of v1, v1beta1");
        return;
    }
    let mut seen = BTreeSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.clone()) {
            e.invalid(&format!("{field}[{i}]"), &json!(v), "duplicate version");
        }
    }
    if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        e.invalid(
            field,
            &json!(versions),
            "must include at least one of v1, v1beta1",
        );
    }
}

fn rule_with_operations(e: &mut Errs, rule: &Value, at: &str) {
    let ops = strings(rule.get("operations"));
    if ops.is_empty() {
        e.required(&format!("{at}.operations"), "");
    }
    if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        e.invalid(
            &format!("{at}.operations"),
            &json!(ops),
            "if '*' is present, must not specify other operations",
        );
    }
    for (i, o) in ops.iter().enumerate() {
        let supported = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
        if !supported.contains(&o.as_str()) {
            e.not_supported(&format!("{at}.operations[{i}]"), &json!(o), &supported);
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let list = strings(rule.get(key));
        if list.is_empty() {
            e.required(&format!("{at}.{key}"), "");
        }
        if list.len() > 1 && list.iter().any(|g| g == "*") {
            e.invalid(
                &format!("{at}.{key}"),
                &json!(list),
                &format!("if '*' is present, must not specify other {what}"),
            );
        }
        if key == "apiVersions" {
            for (i, v) in list.iter().enumerate().filter(|(_, v)| v.is_empty()) {
                let _ = v;
                e.required(&format!("{at}.apiVersions[{i}]"), "");
            }
        }
    }
    resources(
        e,
        &strings(rule.get("resources")),
        &format!("{at}.resources"),
    );
    one_of(e, rule, "scope", at, &["*", "Cluster", "Namespaced"]);
}

fn resources(e: &mut Errs, list: &[String], field: &str) {
    if list.is_empty() {
        e.required(field, "");
    }
    let mut wildcard_sub = BTreeSet::new();
    let mut wildcard_res = BTreeSet::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, r) in list.iter().enumerate() {
        if r.is_empty() {
            e.required(&format!("{field}[{i}]"), "");
            continue;
        }
        double |= r == "*/*";
        single |= r == "*";
        let Some((res, sub)) = r.split_once('/') else {
            plain = r != "*";
            continue;
        };
        if wildcard_sub.contains(res) {
            e.invalid(
                &format!("{field}[{i}]"),
                &json!(r),
                &format!("if '{res}/*' is present, must not specify {r}"),
            );
        }
        if wildcard_res.contains(sub) {
            e.invalid(
                &format!("{field}[{i}]"),
                &json!(r),
                &format!("if '*/{sub}' is present, must not specify {r}"),
            );
        }
        if sub == "*" {
            wildcard_sub.insert(res.to_string());
        }
        if res == "*" {
            wildcard_res.insert(sub.to_string());
        }
    }
    if list.len() > 1 && double {
        e.invalid(
            field,
            &json!(list),
            "if '*/*' is present, must not specify other resources",
        );
    }
    if single && plain {
        e.invalid(
            field,
            &json!(list),
            "if '*' is present, must not specify other resources without subresources",
        );
    }
}

/// Compiles `source` with the policy's variables; a failure is the cause upstream gives.
fn expression(e: &mut Errs, field: &str, source: &str, params: bool) {
    let declared: Vec<&str> = POLICY_VARIABLES
        .iter()
        .copied()
        .filter(|v| params || *v != "params")
        .collect();
    // The API server declares `authorizer`; fakekube does not evaluate it, and says so.
    if reads_authorizer(source) {
        e.invalid(
            field,
            &json!(source),
            "compilation failed: fakekube does not implement the CEL variable 'authorizer', so it cannot evaluate this expression",
        );
        return;
    }
    if let Err(why) = fakekube_schema::compile_expression(source, &declared) {
        e.invalid(field, &json!(source), &format!("compilation failed: {why}"));
    }
}

/// Whether `source` names the identifier `authorizer` (outside a longer identifier).
fn reads_authorizer(source: &str) -> bool {
    let ident = |c: char| c == '_' || c.is_ascii_alphanumeric();
    source.match_indices("authorizer").any(|(i, m)| {
        let before = source[..i].chars().next_back();
        let after = source[i + m.len()..].chars().next();
        !before.is_some_and(|c| ident(c) || c == '.' || c == '\'' || c == '"')
            && !after.is_some_and(ident)
    })
}

fn match_conditions(e: &mut Errs, list: Option<&Value>, at: &str, params: bool) {
    let Some(list) = list.and_then(Value::as_array) else {
        return;
    };
    if list.len() > 64 {
        e.0.push(Cause {
            reason: "FieldValueTooMany".into(),
            message: format!("Too many: {}: must have at most 64 items", list.len()),
            field: Some(at.into()),
        });
    }
    let mut names = BTreeSet::new();
    for (i, c) in list.iter().enumerate() {
        let field = format!("{at}[{i}]");
        let expr = text(c, "expression").unwrap_or("").trim();
        if expr.is_empty() {
            e.required(&format!("{field}.expression"), "");
        } else {
            expression(e, &format!("{field}.expression"), expr, params);
        }
        let name = text(c, "name").unwrap_or("");
        if name.is_empty() {
            e.required(&format!("{field}.name"), "");
        } else if !names.insert(name.to_string()) {
            e.duplicate(&format!("{field}.name"), &json!(name));
        }
    }
}

fn match_resources(e: &mut Errs, m: &Value, at: &str) {
    one_of(e, m, "matchPolicy", at, &["Equivalent", "Exact"]);
    selector(
        e,
        m.get("namespaceSelector"),
        &format!("{at}.namespaceSelector"),
    );
    selector(e, m.get("objectSelector"), &format!("{at}.objectSelector"));
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in m
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let field = format!("{at}.{key}[{i}]");
            let mut names = BTreeSet::new();
            for (j, n) in strings(rule.get("resourceNames")).iter().enumerate() {
                if !names.insert(n.clone()) {
                    e.duplicate(&format!("{field}.resourceNames[{j}]"), &json!(n));
                }
            }
            rule_with_operations(e, rule, &field);
        }
    }
}

fn policy(obj: &mut Value) -> Vec<Cause> {
    let mut e = Errs::default();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        e.required("spec.failurePolicy", "");
        e.required("spec.matchConstraints", "");
        e.required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        );
        return e.0;
    };
    set_default(spec, "failurePolicy", json!("Fail"));
    if let Some(m) = spec
        .get_mut("matchConstraints")
        .and_then(Value::as_object_mut)
    {
        default_match_resources(m);
    }
    let spec = Value::Object(spec.clone());
    one_of(&mut e, &spec, "failurePolicy", "spec", &["Fail", "Ignore"]);
    let params = spec.get("paramKind").is_some_and(|p| !p.is_null());
    if let Some(pk) = spec.get("paramKind").filter(|p| !p.is_null()) {
        if text(pk, "apiVersion").is_none_or(str::is_empty) {
            e.required("spec.paramKind.apiVersion", "");
        }
        if text(pk, "kind").is_none_or(str::is_empty) {
            e.required("spec.paramKind.kind", "");
        }
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => e.required("spec.matchConstraints", ""),
        Some(m) => {
            match_resources(&mut e, m, "spec.matchConstraints");
            if m.get("resourceRules")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
            {
                e.required("spec.matchConstraints.resourceRules", "");
            }
        }
    }
    match_conditions(
        &mut e,
        spec.get("matchConditions"),
        "spec.matchConditions",
        params,
    );
    for (i, v) in spec
        .get("variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("spec.variables[{i}]");
        let name = text(v, "name").unwrap_or("");
        if name.trim().is_empty() {
            e.required(&format!("{at}.name"), "name is not specified");
        } else if !is_cel_identifier(name) {
            e.invalid(
                &format!("{at}.name"),
                &json!(name),
                "name is not a valid CEL identifier",
            );
        }
        let expr = text(v, "expression").unwrap_or("");
        if expr.trim().is_empty() {
            e.required(&format!("{at}.expression"), "expression is not specified");
        } else {
            expression(&mut e, &format!("{at}.expression"), expr, params);
        }
    }
    let validations = spec.get("validations").and_then(Value::as_array);
    let audits = spec.get("auditAnnotations").and_then(Value::as_array);
    if validations.is_none_or(Vec::is_empty) && audits.is_none_or(Vec::is_empty) {
        let why = "validations or auditAnnotations must contain at least one item";
        e.required("spec.validations", why);
        e.required("spec.auditAnnotations", why);
    }
    for (i, v) in validations.into_iter().flatten().enumerate() {
        let at = format!("spec.validations[{i}]");
        let expr = text(v, "expression").unwrap_or("");
        if expr.trim().is_empty() {
            e.required(&format!("{at}.expression"), "expression is not specified");
        } else {
            expression(&mut e, &format!("{at}.expression"), expr, params);
        }
        if let Some(me) = text(v, "messageExpression") {
            if !me.is_empty() && me.trim().is_empty() {
                e.invalid(
                    &format!("{at}.messageExpression"),
                    &json!(me),
                    "must be non-empty if specified",
                );
            } else if !me.is_empty() {
                expression(&mut e, &format!("{at}.messageExpression"), me, params);
            }
        }
        if let Some(msg) = text(v, "message") {
            if !msg.is_empty() && msg.trim().is_empty() {
                e.invalid(
                    &format!("{at}.message"),
                    &json!(msg),
                    "message must be non-empty if specified",
                );
            } else if msg.trim().contains(['\n', '\r']) {
                e.invalid(
                    &format!("{at}.message"),
                    &json!(msg),
                    "message must not contain line breaks",
                );
            }
        }
        one_of(
            &mut e,
            v,
            "reason",
            &at,
            &["Forbidden", "Invalid", "RequestEntityTooLarge"],
        );
    }
    let mut keys = BTreeSet::new();
    for (i, a) in audits.into_iter().flatten().enumerate() {
        let at = format!("spec.auditAnnotations[{i}]");
        let key = text(a, "key").unwrap_or("");
        if !keys.insert(key.to_string()) {
            e.duplicate(&format!("{at}.key"), &json!(key));
        }
        let expr = text(a, "valueExpression").unwrap_or("").trim();
        if expr.is_empty() {
            e.required(
                &format!("{at}.valueExpression"),
                "valueExpression is not specified",
            );
        } else {
            expression(&mut e, &format!("{at}.valueExpression"), expr, params);
        }
    }
    e.0
}

fn is_cel_identifier(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !RESERVED.contains(&name)
}

fn binding(obj: &mut Value) -> Vec<Cause> {
    let mut e = Errs::default();
    if let Some(m) = obj
        .pointer_mut("/spec/matchResources")
        .and_then(Value::as_object_mut)
    {
        default_match_resources(m);
    }
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let policy = text(&spec, "policyName").unwrap_or("");
    if policy.is_empty() {
        e.required("spec.policyName", "");
    } else if let Some(mut c) = meta::validate_name(policy, false) {
        c.field = Some("spec.policyName".into());
        e.0.push(c);
    }
    if let Some(pr) = spec.get("paramRef").filter(|p| !p.is_null()) {
        let name = text(pr, "name").unwrap_or("");
        let sel = pr.get("selector").filter(|s| !s.is_null());
        if !name.is_empty() && sel.is_some() {
            e.forbidden(
                "spec.paramRef.name",
                "name and selector are mutually exclusive",
            );
        }
        if let Some(s) = sel {
            selector(&mut e, Some(s), "spec.paramRef.selector");
            if !name.is_empty() {
                e.forbidden(
                    "spec.paramRef.selector",
                    "name and selector are mutually exclusive",
                );
            }
        }
        if name.is_empty() && sel.is_none() {
            e.required("spec.paramRef", "one of name or selector must be specified");
        }
        match text(pr, "parameterNotFoundAction") {
            None | Some("") => e.required("spec.paramRef.parameterNotFoundAction", ""),
            Some("Allow" | "Deny") => {}
            Some(other) => e.not_supported(
                "spec.paramRef.parameterNotFoundAction",
                &json!(other),
                &["Deny", "Allow"],
            ),
        }
    }
    if let Some(m) = spec.get("matchResources").filter(|m| !m.is_null()) {
        // Upstream's field path has this spelling.
        match_resources(&mut e, m, "spec.matchResouces");
    }
    let actions = strings(spec.get("validationActions"));
    let mut seen = BTreeSet::new();
    for (i, a) in actions.iter().enumerate() {
        let field = format!("spec.validationActions[{i}]");
        if !["Deny", "Warn", "Audit"].contains(&a.as_str()) {
            e.not_supported(&field, &json!(a), &["Audit", "Deny", "Warn"]);
        }
        if !seen.insert(a.as_str()) {
            e.duplicate(&field, &json!(a));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        e.invalid(
            "spec.validationActions",
            &json!(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        );
    }
    if seen.is_empty() {
        e.required(
            "spec.validationActions",
            "at least one validation action is required",
        );
    }
    e.0
}
