//! The `ValidatingAdmissionPolicy` admission plugin: every write a policy's binding matches
//! is checked by the policy's CEL validations, as kube-apiserver's validating admission
//! policy plugin checks it, after the kind's own validation and before it is stored.
//!
//! For each binding whose policy exists: the policy's `matchConstraints`, then the
//! binding's `matchResources`, then its parameters (`paramRef`: one object by name or every
//! object a selector picks, `parameterNotFoundAction`), then the `matchConditions`, the
//! `variables` and the `validations`, each with `object`, `oldObject`, `request`, `params`,
//! `namespaceObject` and `variables` bound. A failed validation does what the binding's
//! `validationActions` say: `Deny` refuses the request (`422 Invalid` unless the validation
//! names another `reason`: `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy
//! '<policy>' with binding '<binding>' denied request: <message>`), `Warn` adds a `Warning`
//! header, `Audit` records nothing (fakekube keeps no audit log). An expression that fails to
//! run, or parameters that cannot be found, follow the policy's `failurePolicy`.
//!
//! Not done: the `authorizer` variable, `auditAnnotations` (evaluated by nothing), and the
//! type checking that fills `status.typeChecking`.

mod matching;

use super::Lookup;
use crate::registry::ResourceType;
use crate::status::ApiError;
use crate::user::UserInfo;
use fakekube_machinery::selector::LabelSelector;
use fakekube_schema::{Activation, Outcome, compile_expression};
use http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

const GROUP: &str = "admissionregistration.k8s.io";

/// What the plugin knows of a write.
#[derive(Debug)]
pub(crate) struct Attributes<'a> {
    /// The kind written.
    pub(crate) rt: &'a ResourceType,
    /// `status` for a status write, empty for the main resource.
    pub(crate) subresource: &'a str,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub(crate) operation: &'a str,
    /// The object's namespace (empty for cluster-scoped kinds).
    pub(crate) namespace: &'a str,
    /// The object's name.
    pub(crate) name: &'a str,
    /// The object written (none on a delete).
    pub(crate) object: Option<&'a Value>,
    /// The object it replaces (none on a create).
    pub(crate) old: Option<&'a Value>,
    /// Who writes it (none for fakekube's own controllers).
    pub(crate) user: Option<&'a UserInfo>,
    /// Whether the write is a dry run.
    pub(crate) dry_run: bool,
}

/// One failed validation, to deny or to warn about.
struct Failure {
    policy: String,
    binding: String,
    message: String,
    reason: &'static str,
}

/// Runs every binding that matches the write; returns the `Warn` actions' warnings, or the
/// first `Deny`'s refusal.
pub(crate) fn validate(cluster: &dyn Lookup, a: &Attributes<'_>) -> Result<Vec<String>, ApiError> {
    // The policies and bindings themselves are never subject to policies.
    if a.rt.group == GROUP
        && matches!(
            a.rt.plural.as_str(),
            "validatingadmissionpolicies" | "validatingadmissionpolicybindings"
        )
    {
        return Ok(Vec::new());
    }
    let bindings = cluster.list(GROUP, "validatingadmissionpolicybindings");
    if bindings.is_empty() {
        return Ok(Vec::new());
    }
    let namespace = (a.rt.namespaced && !a.namespace.is_empty())
        .then(|| cluster.get("", "namespaces", "", a.namespace))
        .flatten();
    let mut denied: Vec<Failure> = Vec::new();
    let mut warnings = Vec::new();
    let mut sorted: Vec<&Arc<Value>> = bindings.iter().collect();
    sorted.sort_by(|x, y| name_of(x).cmp(name_of(y)));
    for binding in sorted {
        let spec = binding.get("spec").unwrap_or(&Value::Null);
        let policy_name = spec.get("policyName").and_then(Value::as_str).unwrap_or("");
        let Some(policy) = cluster.get(GROUP, "validatingadmissionpolicies", "", policy_name)
        else {
            continue;
        };
        let run = Run {
            cluster,
            a,
            namespace: namespace.as_deref(),
            policy: &policy,
            binding,
        };
        let Some(failures) = run.evaluate() else {
            continue;
        };
        let actions: Vec<&str> = spec
            .get("validationActions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for f in failures {
            if actions.contains(&"Warn") {
                warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                    f.policy, f.binding, f.message
                ));
            }
            if actions.contains(&"Deny") {
                denied.push(f);
            }
        }
    }
    match denied.into_iter().next() {
        Some(f) => Err(refusal(a, &f)),
        None => Ok(warnings),
    }
}

fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The refusal of a denied request: admission's Forbidden message, with the validation's
/// reason and its code.
fn refusal(a: &Attributes<'_>, f: &Failure) -> ApiError {
    let message = format!(
        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
        f.policy, f.binding, f.message
    );
    let resource = if a.rt.group.is_empty() {
        a.rt.plural.clone()
    } else {
        format!("{}.{}", a.rt.plural, a.rt.group)
    };
    let code = match f.reason {
        "Forbidden" => StatusCode::FORBIDDEN,
        "Unauthorized" => StatusCode::UNAUTHORIZED,
        "RequestEntityTooLarge" => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    };
    let mut e = ApiError::new(
        code,
        f.reason,
        format!("{resource} \"{}\" is forbidden: {message}", a.name),
    );
    let mut details = json!({ "name": a.name });
    if !a.rt.group.is_empty() {
        details["group"] = json!(a.rt.group);
    }
    details["kind"] = json!(a.rt.plural);
    details["causes"] = json!([{ "message": message }]);
    e.details = Some(Box::new(details));
    e
}

/// One binding of one policy against one request.
struct Run<'a> {
    cluster: &'a dyn Lookup,
    a: &'a Attributes<'a>,
    namespace: Option<&'a Value>,
    policy: &'a Value,
    binding: &'a Value,
}

impl Run<'_> {
    fn policy_name(&self) -> String {
        name_of(self.policy).to_string()
    }

    fn binding_name(&self) -> String {
        name_of(self.binding).to_string()
    }

    /// Whether failures the policy cannot evaluate deny (`failurePolicy: Fail`, the default).
    fn fails_closed(&self) -> bool {
        self.policy
            .pointer("/spec/failurePolicy")
            .and_then(Value::as_str)
            != Some("Ignore")
    }

    /// A failure the policy could not evaluate, as its failure policy treats it.
    fn config_error(&self, message: String) -> Vec<Failure> {
        if !self.fails_closed() {
            return Vec::new();
        }
        vec![Failure {
            policy: self.policy_name(),
            binding: self.binding_name(),
            message,
            reason: "Invalid",
        }]
    }

    /// The failed validations of this binding, `None` when it does not apply.
    fn evaluate(&self) -> Option<Vec<Failure>> {
        let a = self.a;
        let constraints = self.policy.pointer("/spec/matchConstraints")?;
        if !matching::matches(constraints, a, self.namespace) {
            return None;
        }
        if let Some(m) = self
            .binding
            .pointer("/spec/matchResources")
            .filter(|m| !m.is_null())
            && !matching::matches(m, a, self.namespace)
        {
            return None;
        }
        let params = match self.params() {
            Ok(Some(p)) => p,
            Ok(None) => return None,
            Err(why) => {
                return Some(self.config_error(format!("failed to configure binding: {why}")));
            }
        };
        let mut failures = Vec::new();
        for param in params {
            failures.extend(self.evaluate_with(param.as_deref())?);
        }
        Some(failures)
    }

    /// The parameter objects to evaluate with: `[None]` for a policy without `paramKind`;
    /// `Ok(None)` when none is found and the binding allows that.
    fn params(&self) -> Result<Option<Vec<Option<Arc<Value>>>>, String> {
        let Some(kind) = self
            .policy
            .pointer("/spec/paramKind")
            .filter(|k| !k.is_null())
        else {
            return Ok(Some(vec![None]));
        };
        let api_version = kind.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind_name = kind.get("kind").and_then(Value::as_str).unwrap_or("");
        let Some(pref) = self
            .binding
            .pointer("/spec/paramRef")
            .filter(|p| !p.is_null())
        else {
            return Err(format!(
                "paramKind kind `{kind_name}.{api_version}` is set but paramRef is nil"
            ));
        };
        let Some((namespaced, objects)) = self.cluster.of_kind(api_version, kind_name) else {
            return Err(format!(
                "failed to find resource referenced by paramKind: '{api_version}, Kind={kind_name}'"
            ));
        };
        let ns = if namespaced {
            match pref.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() => ns.to_string(),
                _ if self.a.namespace.is_empty() => {
                    return Err(
                        "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                            .into(),
                    );
                }
                _ => self.a.namespace.to_string(),
            }
        } else {
            String::new()
        };
        let in_ns = |o: &Value| {
            !namespaced
                || o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns.as_str())
        };
        let found: Vec<Option<Arc<Value>>> = match pref.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => objects
                .into_iter()
                .filter(|o| in_ns(o) && name_of(o) == name)
                .map(Some)
                .collect(),
            _ => {
                let sel = pref.get("selector").cloned().unwrap_or(json!({}));
                let sel = LabelSelector::from_object(&sel).map_err(|e| e.to_string())?;
                objects
                    .into_iter()
                    .filter(|o| {
                        in_ns(o)
                            && sel.matches(o.pointer("/metadata/labels").and_then(Value::as_object))
                    })
                    .map(Some)
                    .collect()
            }
        };
        if !found.is_empty() {
            return Ok(Some(found));
        }
        match pref.get("parameterNotFoundAction").and_then(Value::as_str) {
            Some("Allow") => Ok(None),
            _ => {
                Err("no params found for policy binding with `Deny` parameterNotFoundAction".into())
            }
        }
    }

    /// The failures of the validations with one parameter object; `None` when a match
    /// condition excludes the request.
    fn evaluate_with(&self, param: Option<&Value>) -> Option<Vec<Failure>> {
        let spec = self.policy.get("spec")?;
        let has_params = spec.get("paramKind").is_some_and(|k| !k.is_null());
        let declared: Vec<&str> = crate::defaults::admission::POLICY_VARIABLES
            .iter()
            .copied()
            .filter(|v| has_params || *v != "params")
            .collect();
        let mut act = Activation::new();
        act.bind("object", self.a.object.unwrap_or(&Value::Null));
        act.bind("oldObject", self.a.old.unwrap_or(&Value::Null));
        act.bind("request", &self.request());
        act.bind("namespaceObject", self.namespace.unwrap_or(&Value::Null));
        if has_params {
            act.bind("params", param.unwrap_or(&Value::Null));
        }
        let list = |k: &str| -> Vec<Value> {
            spec.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        // Variables first (match conditions may read them), each able to read those before.
        for v in list("variables") {
            let name = v.get("name").and_then(Value::as_str).unwrap_or("");
            let src = v.get("expression").and_then(Value::as_str).unwrap_or("");
            if let Ok(e) = compile_expression(src, &declared) {
                act.define_variable(name, &e);
            }
        }
        for c in list("matchConditions") {
            let src = c.get("expression").and_then(Value::as_str).unwrap_or("");
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            let outcome = compile_expression(src, &declared).and_then(|e| act.evaluate(&e));
            match outcome {
                Ok(Outcome::Bool(true)) => {}
                Ok(Outcome::Bool(false)) => return None,
                Ok(_) => {
                    return Some(self.config_error(format!(
                        "failed to evaluate match condition '{name}': must evaluate to bool"
                    )));
                }
                Err(why) => {
                    return Some(self.config_error(format!(
                        "failed to evaluate match condition '{name}': {why}"
                    )));
                }
            }
        }
        let mut failures = Vec::new();
        for v in list("validations") {
            let src = v.get("expression").and_then(Value::as_str).unwrap_or("");
            let outcome = compile_expression(src, &declared).and_then(|e| act.evaluate(&e));
            let message = match outcome {
                Ok(Outcome::Bool(true)) => continue,
                Ok(Outcome::Bool(false)) => self.message(&v, &act, &declared),
                Ok(Outcome::Other(t)) => {
                    if !self.fails_closed() {
                        continue;
                    }
                    format!("expression '{src}' resulted in error: must evaluate to bool, not {t}")
                }
                Ok(Outcome::String(_)) => {
                    if !self.fails_closed() {
                        continue;
                    }
                    format!(
                        "expression '{src}' resulted in error: must evaluate to bool, not string"
                    )
                }
                Err(why) => {
                    if !self.fails_closed() {
                        continue;
                    }
                    format!("expression '{src}' resulted in error: {why}")
                }
            };
            let reason = match v.get("reason").and_then(Value::as_str) {
                Some("Forbidden") => "Forbidden",
                Some("Unauthorized") => "Unauthorized",
                Some("RequestEntityTooLarge") => "RequestEntityTooLarge",
                _ => "Invalid",
            };
            failures.push(Failure {
                policy: self.policy_name(),
                binding: self.binding_name(),
                message,
                reason,
            });
        }
        Some(failures)
    }

    /// A failed validation's message: its `messageExpression`'s string when that is a
    /// non-empty single line, else its `message`, else `failed expression: <expression>`.
    fn message(&self, v: &Value, act: &Activation, declared: &[&str]) -> String {
        if let Some(src) = v
            .get("messageExpression")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            && let Ok(Outcome::String(s)) =
                compile_expression(src, declared).and_then(|e| act.evaluate(&e))
        {
            let s = s.trim();
            if !s.is_empty() && !s.contains(['\n', '\r']) {
                return s.to_string();
            }
        }
        if let Some(m) = v
            .get("message")
            .and_then(Value::as_str)
            .filter(|m| !m.trim().is_empty())
        {
            return m.to_string();
        }
        let src = v.get("expression").and_then(Value::as_str).unwrap_or("");
        format!("failed expression: {}", src.trim())
    }

    /// The `request` variable: the admission request's attributes.
    fn request(&self) -> Value {
        let a = self.a;
        let kind = json!({ "group": a.rt.group, "version": a.rt.version, "kind": a.rt.kind });
        let resource =
            json!({ "group": a.rt.group, "version": a.rt.version, "resource": a.rt.plural });
        let user = match a.user {
            Some(u) => json!({
                "username": u.name,
                "uid": u.uid,
                "groups": u.groups,
                "extra": u.extra,
            }),
            None => json!({ "username": "", "groups": [] }),
        };
        json!({
            "kind": kind,
            "resource": resource,
            "subResource": a.subresource,
            "requestKind": kind,
            "requestResource": resource,
            "requestSubResource": a.subresource,
            "name": a.name,
            "namespace": a.namespace,
            "operation": a.operation,
            "userInfo": user,
            "dryRun": a.dry_run,
        })
    }
}
