//! `admissionregistration.k8s.io/v1` through the HTTP API: webhook configurations validated
//! and defaulted as kube-apiserver does (and stored, never called), and
//! ValidatingAdmissionPolicies enforced on the writes their bindings match: `Deny`, `Warn`,
//! parameters, match conditions, variables, `messageExpression` and `failurePolicy`.

mod support;

use http::{Method, StatusCode};
use serde_json::{Value, json};
use support::Client;

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const WEBHOOKS: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const CONFIGMAPS: &str = "/api/v1/namespaces/sb/configmaps";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/sb/deployments";

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name, "labels": { "app": name } },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "main", "image": "nginx:1.25" }] },
            },
        },
    })
}

fn replica_policy(name: &str, extra: Value) -> Value {
    let mut p = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": { "name": name },
        "spec": {
            "matchConstraints": {
                "resourceRules": [{
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["deployments"],
                }],
            },
            "validations": [{ "expression": "object.spec.replicas <= 5" }],
        },
    });
    if let (Some(spec), Some(extra)) = (p["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    p
}

fn binding(name: &str, policy: &str, actions: &[&str], extra: Value) -> Value {
    let mut b = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": { "name": name },
        "spec": { "policyName": policy, "validationActions": actions },
    });
    if let (Some(spec), Some(extra)) = (b["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    b
}

async fn create(client: &Client, path: &str, body: &Value) -> Value {
    let reply = client.json(Method::POST, path, body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    reply.json()
}

#[tokio::test]
async fn a_denying_binding_refuses_a_write_its_policy_fails_with_422_naming_policy_and_binding() {
    let (_kube, client) = support::start_api_server().await;
    let policy = create(
        &client,
        POLICIES,
        &replica_policy("max-replicas", json!({})),
    )
    .await;
    assert_eq!(policy["spec"]["failurePolicy"], "Fail");
    assert_eq!(
        policy["spec"]["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    assert_eq!(
        policy["spec"]["matchConstraints"]["namespaceSelector"],
        json!({})
    );
    assert_eq!(
        policy["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
        "*"
    );
    create(
        &client,
        BINDINGS,
        &binding("max-replicas-deny", "max-replicas", &["Deny"], json!({})),
    )
    .await;

    let small = client
        .json(Method::POST, DEPLOYMENTS, &deployment("small", 3))
        .await;
    assert_eq!(small.status, StatusCode::CREATED, "{}", small.json());
    let big = client
        .json(Method::POST, DEPLOYMENTS, &deployment("big", 6))
        .await;
    assert_eq!(big.status, StatusCode::UNPROCESSABLE_ENTITY);
    let status = big.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-deny' denied request: failed expression: object.spec.replicas <= 5"
    );
    assert_eq!(status["details"]["group"], "apps");
    assert_eq!(status["details"]["kind"], "deployments");
    assert_eq!(
        client.get(&format!("{DEPLOYMENTS}/big")).await.status,
        StatusCode::NOT_FOUND
    );

    // An update is checked too (its oldObject bound), and other kinds are not.
    let mut grown = small.json();
    grown["spec"]["replicas"] = json!(9);
    let put = client
        .json(Method::PUT, &format!("{DEPLOYMENTS}/small"), &grown)
        .await;
    assert_eq!(
        put.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        put.json()
    );
    let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c" } });
    assert_eq!(
        client.json(Method::POST, CONFIGMAPS, &cm).await.status,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn a_warning_binding_admits_the_write_with_a_warning_header() {
    let (_kube, client) = support::start_api_server().await;
    let policy = replica_policy(
        "max-replicas",
        json!({ "validations": [{
            "expression": "object.spec.replicas <= 5",
            "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > 5'",
        }] }),
    );
    create(&client, POLICIES, &policy).await;
    create(
        &client,
        BINDINGS,
        &binding("warn", "max-replicas", &["Warn", "Audit"], json!({})),
    )
    .await;
    let reply = client
        .json(Method::POST, DEPLOYMENTS, &deployment("big", 8))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    let warnings: Vec<&str> = reply
        .headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains(
            "Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'warn': replicas 8 > 5"
        )),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn a_policy_without_a_binding_or_outside_the_bindings_namespaces_admits_everything() {
    let (_kube, client) = support::start_api_server().await;
    create(
        &client,
        POLICIES,
        &replica_policy("max-replicas", json!({})),
    )
    .await;
    let unbound = client
        .json(Method::POST, DEPLOYMENTS, &deployment("a", 9))
        .await;
    assert_eq!(unbound.status, StatusCode::CREATED);
    let scoped = binding(
        "prod-only",
        "max-replicas",
        &["Deny"],
        json!({ "matchResources": { "namespaceSelector": { "matchLabels": { "env": "prod" } } } }),
    );
    let made = create(&client, BINDINGS, &scoped).await;
    assert_eq!(made["spec"]["matchResources"]["matchPolicy"], "Equivalent");
    let outside = client
        .json(Method::POST, DEPLOYMENTS, &deployment("b", 9))
        .await;
    assert_eq!(outside.status, StatusCode::CREATED, "{}", outside.json());
    let prod = json!({ "apiVersion": "v1", "kind": "Namespace",
        "metadata": { "name": "prod", "labels": { "env": "prod" } } });
    create(&client, "/api/v1/namespaces", &prod).await;
    let inside = client
        .json(
            Method::POST,
            "/apis/apps/v1/namespaces/prod/deployments",
            &deployment("c", 9),
        )
        .await;
    assert_eq!(
        inside.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        inside.json()
    );
}

#[tokio::test]
async fn parameters_variables_and_match_conditions_are_bound_as_upstream_binds_them() {
    let (_kube, client) = support::start_api_server().await;
    let policy = replica_policy(
        "limits",
        json!({
            "paramKind": { "apiVersion": "v1", "kind": "ConfigMap" },
            "matchConditions": [{ "name": "not-exempt",
                "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)" }],
            "variables": [{ "name": "limit", "expression": "int(params.data.max)" }],
            "validations": [{
                "expression": "object.spec.replicas <= variables.limit",
                "message": "too many replicas",
                "reason": "Forbidden",
            }],
        }),
    );
    create(&client, POLICIES, &policy).await;
    let by_name = binding(
        "limits-from-config",
        "limits",
        &["Deny"],
        json!({ "paramRef": { "name": "limits", "parameterNotFoundAction": "Deny" } }),
    );
    create(&client, BINDINGS, &by_name).await;

    // No parameter object yet: the binding's Deny, through the policy's failurePolicy Fail.
    let missing = client
        .json(Method::POST, DEPLOYMENTS, &deployment("a", 1))
        .await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        missing.json()["message"].as_str().unwrap_or("").ends_with(
            "denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{}",
        missing.json()
    );
    let params = json!({ "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "limits" }, "data": { "max": "2" } });
    create(&client, CONFIGMAPS, &params).await;
    let ok = client
        .json(Method::POST, DEPLOYMENTS, &deployment("b", 2))
        .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.json());
    let over = client
        .json(Method::POST, DEPLOYMENTS, &deployment("c", 3))
        .await;
    assert_eq!(over.status, StatusCode::FORBIDDEN, "{}", over.json());
    assert_eq!(over.json()["reason"], "Forbidden");
    assert!(
        over.json()["message"]
            .as_str()
            .unwrap_or("")
            .ends_with("denied request: too many replicas")
    );
    let mut exempt = deployment("d", 3);
    exempt["metadata"]["labels"]["exempt"] = json!("yes");
    let skipped = client.json(Method::POST, DEPLOYMENTS, &exempt).await;
    assert_eq!(skipped.status, StatusCode::CREATED, "{}", skipped.json());
}

#[tokio::test]
async fn an_expression_that_fails_to_run_follows_the_failure_policy() {
    let (_kube, client) = support::start_api_server().await;
    for (name, failure) in [("strict", "Fail"), ("lenient", "Ignore")] {
        let policy = replica_policy(
            name,
            json!({ "failurePolicy": failure,
                "validations": [{ "expression": "object.spec.paused == false" }] }),
        );
        create(&client, POLICIES, &policy).await;
        create(
            &client,
            BINDINGS,
            &binding(name, name, &["Deny"], json!({})),
        )
        .await;
    }
    let reply = client
        .json(Method::POST, DEPLOYMENTS, &deployment("a", 1))
        .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let message = reply.json()["message"].as_str().unwrap_or("").to_string();
    assert!(
        message.contains("ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: expression 'object.spec.paused == false' resulted in error: no such key: paused"),
        "{message}"
    );
}

#[tokio::test]
async fn deletes_are_checked_when_the_rules_name_delete() {
    let (_kube, client) = support::start_api_server().await;
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": { "name": "keep-protected" },
        "spec": {
            "matchConstraints": { "resourceRules": [{ "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"] }] },
            "validations": [{ "expression": "oldObject.metadata.name != 'protected' && object == null",
                "message": "protected" }],
        },
    });
    create(&client, POLICIES, &policy).await;
    create(
        &client,
        BINDINGS,
        &binding("keep", "keep-protected", &["Deny"], json!({})),
    )
    .await;
    for name in ["protected", "other"] {
        let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": name } });
        create(&client, CONFIGMAPS, &cm).await;
    }
    let refused = client
        .call(
            Method::DELETE,
            &format!("{CONFIGMAPS}/protected"),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let gone = client
        .call(
            Method::DELETE,
            &format!("{CONFIGMAPS}/other"),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(gone.status, StatusCode::OK);
}

fn causes(reply: &Value) -> Vec<(String, String)> {
    reply["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or("").to_string(),
                c["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn bad_policies_and_bindings_are_refused_with_upstreams_causes() {
    let (_kube, client) = support::start_api_server().await;
    let bad = replica_policy(
        "bad",
        json!({ "failurePolicy": "Sometimes",
            "validations": [{ "expression": "object.spec.replicas <= limit", "reason": "Teapot" }] }),
    );
    let reply = client.json(Method::POST, POLICIES, &bad).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let got = causes(&reply.json());
    let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.failurePolicy",
            "spec.validations[0].expression",
            "spec.validations[0].reason"
        ],
        "{got:?}"
    );
    assert!(
        got[1]
            .1
            .contains("compilation failed: ERROR: <input>:1:25: undeclared reference to 'limit'"),
        "{got:?}"
    );
    assert_eq!(
        got[2].1,
        "Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\""
    );
    let authz = replica_policy(
        "authz",
        json!({ "validations": [{ "expression": "authorizer.requestResource.check('get').allowed()" }] }),
    );
    let reply = client.json(Method::POST, POLICIES, &authz).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        causes(&reply.json())[0]
            .1
            .contains("fakekube does not implement the CEL variable 'authorizer'"),
        "{}",
        reply.json()
    );
    let empty = json!({ "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": { "name": "empty" }, "spec": {} });
    let reply = client.json(Method::POST, POLICIES, &empty).await;
    let fields: Vec<String> = causes(&reply.json()).into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        fields,
        [
            "spec.matchConstraints",
            "spec.validations",
            "spec.auditAnnotations"
        ]
    );

    let both = binding(
        "both",
        "p",
        &["Deny", "Warn"],
        json!({ "paramRef": { "name": "x" } }),
    );
    let reply = client.json(Method::POST, BINDINGS, &both).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let got = causes(&reply.json());
    let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.paramRef.parameterNotFoundAction",
            "spec.validationActions"
        ],
        "{got:?}"
    );
    assert!(got[1].1.ends_with("must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"));
}

fn webhook_configuration(kind: &str, hook: Value) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": { "name": "hooks" },
        "webhooks": [hook],
    })
}

#[tokio::test]
async fn webhook_configurations_are_defaulted_and_validated_and_never_called() {
    let (_kube, client) = support::start_api_server().await;
    let hook = json!({
        "name": "check.example.com",
        "clientConfig": { "service": { "name": "hook", "namespace": "sb" } },
        "rules": [{ "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"] }],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    let made = create(
        &client,
        WEBHOOKS,
        &webhook_configuration("ValidatingWebhookConfiguration", hook.clone()),
    )
    .await;
    let h = &made["webhooks"][0];
    assert_eq!(h["failurePolicy"], "Fail");
    assert_eq!(h["matchPolicy"], "Equivalent");
    assert_eq!(h["timeoutSeconds"], 10);
    assert_eq!(h["namespaceSelector"], json!({}));
    assert_eq!(h["clientConfig"]["service"]["port"], 443);
    assert_eq!(h["rules"][0]["scope"], "*");
    let m = create(
        &client,
        MUTATING,
        &webhook_configuration("MutatingWebhookConfiguration", hook.clone()),
    )
    .await;
    assert_eq!(m["webhooks"][0]["reinvocationPolicy"], "Never");
    // The webhook is not called: its service does not exist, and with failurePolicy Fail a
    // called webhook would refuse the write.
    let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c" } });
    assert_eq!(
        client.json(Method::POST, CONFIGMAPS, &cm).await.status,
        StatusCode::CREATED
    );

    let mut bad = hook;
    bad["name"] = json!("check");
    bad["sideEffects"] = json!("Some");
    bad["timeoutSeconds"] = json!(31);
    bad["admissionReviewVersions"] = json!(["v2"]);
    bad["clientConfig"] = json!({ "url": "http://hooks.example.com/check" });
    let reply = client
        .json(
            Method::POST,
            WEBHOOKS,
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": { "name": "bad" },
                "webhooks": [bad],
            }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let got = causes(&reply.json());
    let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "webhooks[0].name",
            "webhooks[0].sideEffects",
            "webhooks[0].timeoutSeconds",
            "webhooks[0].clientConfig.url",
            "webhooks[0].admissionReviewVersions",
        ],
        "{got:?}"
    );
    assert_eq!(
        got[1].1,
        "Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""
    );
    assert_eq!(
        got[2].1,
        "Invalid value: 31: the timeout value must be between 1 and 30 seconds"
    );
}

#[tokio::test]
async fn the_four_kinds_are_in_discovery_with_their_category() {
    let (_kube, client) = support::start_api_server().await;
    let reply = client.get("/apis/admissionregistration.k8s.io/v1").await;
    assert_eq!(reply.status, StatusCode::OK);
    let list = reply.json();
    let names: Vec<&str> = list["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for want in [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicies/status",
        "validatingadmissionpolicybindings",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
}

#[tokio::test]
async fn dry_run_creates_and_updates_are_checked_as_writes_are() {
    let (_kube, client) = support::start_api_server().await;
    create(&client, DEPLOYMENTS, &deployment("small", 1)).await;
    create(
        &client,
        POLICIES,
        &replica_policy("max-replicas", json!({})),
    )
    .await;
    create(
        &client,
        BINDINGS,
        &binding("deny", "max-replicas", &["Deny"], json!({})),
    )
    .await;
    let created = client
        .json(
            Method::POST,
            &format!("{DEPLOYMENTS}?dryRun=All"),
            &deployment("big", 9),
        )
        .await;
    assert_eq!(created.status, StatusCode::UNPROCESSABLE_ENTITY);
    let mut grown = client.get(&format!("{DEPLOYMENTS}/small")).await.json();
    grown["spec"]["replicas"] = json!(9);
    let updated = client
        .json(
            Method::PUT,
            &format!("{DEPLOYMENTS}/small?dryRun=All"),
            &grown,
        )
        .await;
    assert_eq!(
        updated.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        updated.json()
    );
    let patched = client
        .patch(
            &format!("{DEPLOYMENTS}/small?dryRun=All"),
            "application/merge-patch+json",
            &json!({ "spec": { "replicas": 8 } }),
        )
        .await;
    assert_eq!(patched.status, StatusCode::UNPROCESSABLE_ENTITY);
}
