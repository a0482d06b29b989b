//! `flowcontrol.apiserver.k8s.io/v1` (API Priority and Fairness): the defaults and validation
//! of FlowSchemas and PriorityLevelConfigurations (pkg/apis/flowcontrol/v1's defaults and
//! pkg/apis/flowcontrol/validation), and the mandatory and suggested objects the API server
//! creates at start (apiserver's flowcontrol `bootstrap` package). Requests are not
//! throttled by them: fakekube only stores them.

use super::errs::Errs;
use super::set_default;
use crate::status::Cause;
use serde_json::{Map, Value, json};

/// The annotation the API server's configuration producer puts on the objects it keeps.
const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

/// Defaults and checks a FlowSchema or PriorityLevelConfiguration.
pub(super) fn admit(kind: &str, obj: &mut Value) -> Vec<Cause> {
    match kind {
        "FlowSchema" => flow_schema(obj),
        "PriorityLevelConfiguration" => priority_level(obj),
        _ => Vec::new(),
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn list<'a>(v: &'a Value, key: &str) -> Vec<&'a Value> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|l| l.iter().collect())
        .unwrap_or_default()
}

/// Checks a list of names: required, and `*` alone.
fn names(e: &mut Errs, v: &Value, key: &str, at: &str, what: &str) {
    let l: Vec<&str> = list(v, key).into_iter().filter_map(Value::as_str).collect();
    if l.is_empty() {
        e.required(
            &format!("{at}.{key}"),
            &format!("{what} must contain at least one value"),
        );
    } else if l.len() > 1 && l.contains(&"*") {
        e.invalid(
            &format!("{at}.{key}"),
            &json!(l),
            &format!("if '*' is present, must not specify other {what}"),
        );
    }
}

fn flow_schema(obj: &mut Value) -> Vec<Cause> {
    let mut e = Errs::default();
    let Some(spec) = obj.get("spec").cloned() else {
        e.required(
            "spec.priorityLevelConfiguration.name",
            "must reference a priority level",
        );
        return e.0;
    };
    let precedence = spec.get("matchingPrecedence").and_then(Value::as_i64);
    match precedence {
        None => {
            if let Some(s) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                s.insert("matchingPrecedence".into(), json!(1000));
            }
        }
        Some(p) if p <= 0 => {
            e.invalid(
                "spec.matchingPrecedence",
                &json!(p),
                "must be a positive value",
            );
        }
        Some(p) if p > 10000 => {
            e.invalid(
                "spec.matchingPrecedence",
                &json!(p),
                "must not be greater than 10000",
            );
        }
        Some(_) => {}
    }
    if text(&spec, "/priorityLevelConfiguration/name").is_none_or(str::is_empty) {
        e.required(
            "spec.priorityLevelConfiguration.name",
            "must reference a priority level",
        );
    }
    if let Some(t) = spec.pointer("/distinguisherMethod/type")
        && !t
            .as_str()
            .is_some_and(|t| t == "ByUser" || t == "ByNamespace")
    {
        e.not_supported(
            "spec.distinguisherMethod.type",
            t,
            &["ByNamespace", "ByUser"],
        );
    }
    for (i, rule) in list(&spec, "rules").into_iter().enumerate() {
        let at = format!("spec.rules[{i}]");
        let subjects = list(rule, "subjects");
        if subjects.is_empty() {
            e.required(
                &format!("{at}.subjects"),
                "subjects must contain at least one value",
            );
        }
        for (j, s) in subjects.into_iter().enumerate() {
            let sat = format!("{at}.subjects[{j}]");
            let (member, needs) = match text(s, "/kind") {
                Some("User") => ("user", vec!["name"]),
                Some("Group") => ("group", vec!["name"]),
                Some("ServiceAccount") => ("serviceAccount", vec!["name", "namespace"]),
                other => {
                    e.not_supported(
                        &format!("{sat}.kind"),
                        &json!(other.unwrap_or("")),
                        &["Group", "ServiceAccount", "User"],
                    );
                    continue;
                }
            };
            match s.get(member).filter(|m| m.is_object()) {
                None => e.required(
                    &format!("{sat}.{member}"),
                    &format!(
                        "{member} is required when subject kind is '{}'",
                        text(s, "/kind").unwrap_or("")
                    ),
                ),
                Some(m) => {
                    for k in needs {
                        if text(m, &format!("/{k}")).is_none_or(str::is_empty) {
                            e.required(&format!("{sat}.{member}.{k}"), &format!("{k} is required"));
                        }
                    }
                }
            }
        }
        let resource_rules = list(rule, "resourceRules");
        let non_resource = list(rule, "nonResourceRules");
        if resource_rules.is_empty() && non_resource.is_empty() {
            e.required(
                &at,
                "at least one of resourceRules and nonResourceRules has to be non-empty",
            );
        }
        for (j, r) in resource_rules.into_iter().enumerate() {
            let rat = format!("{at}.resourceRules[{j}]");
            names(&mut e, r, "verbs", &rat, "verbs");
            names(&mut e, r, "apiGroups", &rat, "api groups");
            names(&mut e, r, "resources", &rat, "resources");
            let cluster = r
                .get("clusterScope")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if list(r, "namespaces").is_empty() && !cluster {
                e.required(
                    &format!("{rat}.namespaces"),
                    "resource rules that are not cluster scoped must supply at least one namespace",
                );
            }
        }
        for (j, r) in non_resource.into_iter().enumerate() {
            let nat = format!("{at}.nonResourceRules[{j}]");
            names(&mut e, r, "verbs", &nat, "verbs");
            names(&mut e, r, "nonResourceURLs", &nat, "nonResourceURLs");
        }
    }
    fixed_spec(&mut e, obj, "flowschemas");
    e.0
}

fn default_limited(l: &mut Map<String, Value>) {
    set_default(l, "nominalConcurrencyShares", json!(30));
    set_default(l, "lendablePercent", json!(0));
    if let Some(resp) = l.get_mut("limitResponse").and_then(Value::as_object_mut)
        && resp.get("type").and_then(Value::as_str) == Some("Queue")
    {
        set_default(resp, "queuing", json!({}));
        if let Some(q) = resp.get_mut("queuing").and_then(Value::as_object_mut) {
            set_default(q, "queues", json!(64));
            set_default(q, "handSize", json!(8));
            set_default(q, "queueLengthLimit", json!(50));
        }
    }
}

fn priority_level(obj: &mut Value) -> Vec<Cause> {
    let mut e = Errs::default();
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(l) = spec.get_mut("limited").and_then(Value::as_object_mut) {
            default_limited(l);
        }
        if spec.get("type").and_then(Value::as_str) == Some("Exempt") {
            set_default(spec, "exempt", json!({}));
        }
        if let Some(x) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
            set_default(x, "nominalConcurrencyShares", json!(0));
            set_default(x, "lendablePercent", json!(0));
        }
    }
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let ty = text(&spec, "/type").unwrap_or("");
    match ty {
        "" => e.required("spec.type", "must be one of Exempt, Limited"),
        "Limited" | "Exempt" => {}
        other => e.not_supported("spec.type", &json!(other), &["Exempt", "Limited"]),
    }
    let limited = spec.get("limited").filter(|l| !l.is_null());
    if ty == "Limited" && limited.is_none() {
        e.required("spec.limited", "must not be empty when type is Limited");
    }
    if ty == "Exempt" && limited.is_some() {
        e.forbidden("spec.limited", "must be nil if the type is not Limited");
    }
    if ty == "Limited" && spec.get("exempt").is_some_and(|x| !x.is_null()) {
        e.forbidden("spec.exempt", "must be nil if the type is Limited");
    }
    if let Some(l) = limited {
        if let Some(n) = l.get("nominalConcurrencyShares").and_then(Value::as_i64)
            && n < 0
        {
            e.invalid(
                "spec.limited.nominalConcurrencyShares",
                &json!(n),
                "must be a non-negative integer",
            );
        }
        percent(&mut e, l, "lendablePercent", "spec.limited", true);
        percent(&mut e, l, "borrowingLimitPercent", "spec.limited", false);
        let resp = l.get("limitResponse").unwrap_or(&Value::Null);
        match text(resp, "/type") {
            Some("Queue") => {
                if let Some(q) = resp.get("queuing") {
                    queuing(&mut e, q);
                }
            }
            Some("Reject") => {
                if resp.get("queuing").is_some_and(|q| !q.is_null()) {
                    e.forbidden(
                        "spec.limited.limitResponse.queuing",
                        "must be nil if limited.limitResponse.type is not Limited",
                    );
                }
            }
            Some(other) => e.not_supported(
                "spec.limited.limitResponse.type",
                &json!(other),
                &["Queue", "Reject"],
            ),
            None => e.required(
                "spec.limited.limitResponse.type",
                "must be one of Queue, Reject",
            ),
        }
    }
    fixed_spec(&mut e, obj, "prioritylevelconfigurations");
    e.0
}

fn percent(e: &mut Errs, l: &Value, key: &str, at: &str, capped: bool) {
    if let Some(p) = l.get(key).and_then(Value::as_i64) {
        if capped && !(0..=100).contains(&p) {
            e.invalid(
                &format!("{at}.{key}"),
                &json!(p),
                "must be between 0 and 100, inclusive",
            );
        } else if !capped && p < 0 {
            e.invalid(
                &format!("{at}.{key}"),
                &json!(p),
                "if specified, must be a non-negative integer",
            );
        }
    }
}

fn queuing(e: &mut Errs, q: &Value) {
    let at = "spec.limited.limitResponse.queuing";
    let get = |k: &str| q.get(k).and_then(Value::as_i64).unwrap_or(0);
    let (queues, hand, length) = (get("queues"), get("handSize"), get("queueLengthLimit"));
    if queues <= 0 {
        e.invalid(&format!("{at}.queues"), &json!(queues), "must be positive");
    }
    if length <= 0 {
        e.invalid(
            &format!("{at}.queueLengthLimit"),
            &json!(length),
            "must be positive",
        );
    }
    if hand <= 0 {
        e.invalid(&format!("{at}.handSize"), &json!(hand), "must be positive");
    } else if queues > 0 && hand > queues {
        e.invalid(
            &format!("{at}.handSize"),
            &json!(hand),
            &format!("should not be greater than queues ({queues})"),
        );
    }
}

/// The mandatory objects (`exempt`, `catch-all`) keep their fixed spec.
fn fixed_spec(e: &mut Errs, obj: &Value, plural: &str) {
    let name = text(obj, "/metadata/name").unwrap_or("");
    if name != "exempt" && name != "catch-all" {
        return;
    }
    let (levels, schemas) = bootstrap();
    let fixed = if plural == "flowschemas" {
        schemas
    } else {
        levels
    };
    if let Some(want) = fixed
        .iter()
        .find(|o| text(o, "/metadata/name") == Some(name))
        && want.get("spec") != obj.get("spec")
    {
        e.invalid(
            "spec",
            obj.get("spec").unwrap_or(&Value::Null),
            &format!("spec of '{name}' must equal the fixed value"),
        );
    }
}

fn meta(name: &str) -> Value {
    json!({ "name": name, "annotations": { AUTOUPDATE: "true" } })
}

fn level(name: &str, shares: i64, lendable: i64, queuing: Option<(i64, i64, i64)>) -> Value {
    let response = match queuing {
        Some((queues, hand, length)) => json!({ "type": "Queue",
            "queuing": { "queues": queues, "handSize": hand, "queueLengthLimit": length } }),
        None => json!({ "type": "Reject" }),
    };
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": meta(name),
        "spec": { "type": "Limited", "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": lendable,
            "limitResponse": response,
        } },
    })
}

fn group(name: &str) -> Value {
    json!({ "kind": "Group", "group": { "name": name } })
}

fn user(name: &str) -> Value {
    json!({ "kind": "User", "user": { "name": name } })
}

fn kube_system_account(name: &str) -> Value {
    json!({ "kind": "ServiceAccount",
        "serviceAccount": { "name": name, "namespace": "kube-system" } })
}

fn resource_rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    namespaces: &[&str],
) -> Value {
    let mut r = json!({ "verbs": verbs, "apiGroups": groups, "resources": resources });
    if namespaces.is_empty() {
        r["clusterScope"] = json!(true);
    } else {
        r["namespaces"] = json!(namespaces);
    }
    r
}

/// Rules that match every request of `subjects`.
fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
            "clusterScope": true, "namespaces": ["*"] }],
        "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
    })
}

fn schema(name: &str, level: &str, precedence: i64, by: Option<&str>, rules: Vec<Value>) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": { "name": level },
        "matchingPrecedence": precedence,
        "rules": rules,
    });
    if let Some(by) = by {
        spec["distinguisherMethod"] = json!({ "type": by });
    }
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": meta(name),
        "spec": spec,
    })
}

/// The mandatory and suggested PriorityLevelConfigurations and FlowSchemas kube-apiserver
/// creates at start, in its order.
pub(crate) fn bootstrap() -> (Vec<Value>, Vec<Value>) {
    let get_create_update = ["get", "create", "update"];
    let mut exempt = level("exempt", 0, 0, None);
    exempt["spec"] = json!({ "type": "Exempt",
        "exempt": { "nominalConcurrencyShares": 0, "lendablePercent": 0 } });
    let levels = vec![
        exempt,
        level("catch-all", 5, 0, None),
        level("system", 30, 33, Some((64, 6, 50))),
        level("node-high", 40, 25, Some((64, 6, 50))),
        level("leader-election", 10, 0, Some((16, 4, 50))),
        level("workload-high", 40, 50, Some((128, 6, 50))),
        level("workload-low", 100, 90, Some((128, 6, 50))),
        level("global-default", 20, 50, Some((128, 6, 50))),
    ];
    let everyone = || {
        vec![
            group("system:unauthenticated"),
            group("system:authenticated"),
        ]
    };
    let leader_rules = |namespace: &str| {
        vec![
            resource_rule(
                &get_create_update,
                &[""],
                &["endpoints", "configmaps"],
                &[namespace],
            ),
            resource_rule(
                &get_create_update,
                &["coordination.k8s.io"],
                &["leases"],
                &["*"],
            ),
        ]
    };
    let with = |subjects: Vec<Value>, resource: Vec<Value>| json!({ "subjects": subjects, "resourceRules": resource });
    let schemas = vec![
        schema(
            "exempt",
            "exempt",
            1,
            None,
            vec![everything(vec![group("system:masters")])],
        ),
        schema(
            "probes",
            "exempt",
            2,
            None,
            vec![
                json!({ "subjects": everyone(), "nonResourceRules": [{ "verbs": ["get"],
                "nonResourceURLs": ["/healthz", "/readyz", "/livez"] }] }),
            ],
        ),
        schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            vec![with(
                vec![
                    user("system:kube-controller-manager"),
                    user("system:kube-scheduler"),
                    kube_system_account("*"),
                ],
                leader_rules("kube-system"),
            )],
        ),
        schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some("ByUser"),
            vec![with(
                vec![
                    user("system:kube-controller-manager"),
                    kube_system_account("endpoint-controller"),
                    kube_system_account("endpointslicemirroring-controller"),
                ],
                vec![resource_rule(
                    &["get", "create", "update", "delete"],
                    &[""],
                    &["endpoints"],
                    &["*"],
                )],
            )],
        ),
        schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some("ByUser"),
            vec![with(vec![kube_system_account("*")], leader_rules("*"))],
        ),
        schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            vec![with(
                vec![group("system:nodes")],
                vec![
                    resource_rule(&["*"], &[""], &["nodes", "nodes/status"], &[]),
                    resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], &["*"]),
                ],
            )],
        ),
        schema(
            "system-nodes",
            "system",
            500,
            Some("ByUser"),
            vec![everything(vec![group("system:nodes")])],
        ),
        schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            vec![everything(vec![user("system:kube-controller-manager")])],
        ),
        schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            vec![everything(vec![user("system:kube-scheduler")])],
        ),
        schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            vec![everything(vec![kube_system_account("*")])],
        ),
        schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            vec![everything(vec![group("system:serviceaccounts")])],
        ),
        schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            vec![everything(everyone())],
        ),
        schema(
            "catch-all",
            "catch-all",
            10000,
            Some("ByUser"),
            vec![everything(everyone())],
        ),
    ];
    (levels, schemas)
}
