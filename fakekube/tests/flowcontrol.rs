//! `flowcontrol.apiserver.k8s.io/v1` through the HTTP API: the mandatory and suggested
//! FlowSchemas and PriorityLevelConfigurations present at start as kube-apiserver creates
//! them, their validation and defaults, and their status subresource.

mod support;

use http::{Method, StatusCode};
use serde_json::{Value, json};

const SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .collect()
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
async fn the_bootstrap_flow_schemas_and_priority_levels_are_present_at_start() {
    let (_kube, client) = support::start_api_server().await;
    let mut levels = names(&client.get(LEVELS).await.json());
    levels.sort();
    assert_eq!(
        levels,
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low",
        ]
    );
    let mut schemas = names(&client.get(SCHEMAS).await.json());
    schemas.sort();
    assert_eq!(
        schemas,
        [
            "catch-all",
            "endpoint-controller",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes",
            "workload-leader-election",
        ]
    );
    let exempt = client.get(&format!("{SCHEMAS}/exempt")).await.json();
    assert_eq!(exempt["spec"]["matchingPrecedence"], 1);
    assert_eq!(
        exempt["spec"]["rules"][0]["subjects"][0]["group"]["name"],
        "system:masters"
    );
    assert_eq!(
        exempt["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
    assert_eq!(exempt["status"]["conditions"][0]["type"], "Dangling");
    assert_eq!(exempt["status"]["conditions"][0]["status"], "False");
    let workload_low = client.get(&format!("{LEVELS}/workload-low")).await.json();
    assert_eq!(
        workload_low["spec"]["limited"]["nominalConcurrencyShares"],
        100
    );
    assert_eq!(workload_low["spec"]["limited"]["lendablePercent"], 90);
    assert_eq!(
        workload_low["spec"]["limited"]["limitResponse"]["queuing"]["queues"],
        128
    );
    let catch_all = client.get(&format!("{LEVELS}/catch-all")).await.json();
    assert_eq!(
        catch_all["spec"]["limited"]["limitResponse"]["type"],
        "Reject"
    );
}

#[tokio::test]
async fn a_new_priority_level_is_defaulted_and_a_bad_one_refused() {
    let (_kube, client) = support::start_api_server().await;
    let level = json!({ "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration", "metadata": { "name": "mine" },
        "spec": { "type": "Limited", "limited": { "limitResponse": { "type": "Queue" } } } });
    let made = client.json(Method::POST, LEVELS, &level).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json());
    let limited = made.json()["spec"]["limited"].clone();
    assert_eq!(limited["nominalConcurrencyShares"], 30);
    assert_eq!(limited["lendablePercent"], 0);
    assert_eq!(
        limited["limitResponse"]["queuing"],
        json!({ "queues": 64, "handSize": 8, "queueLengthLimit": 50 })
    );
    let bad = json!({ "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration", "metadata": { "name": "bad" },
        "spec": { "type": "Limited", "limited": { "lendablePercent": 101,
            "limitResponse": { "type": "Queue",
                "queuing": { "queues": 4, "handSize": 8, "queueLengthLimit": 10 } } } } });
    let reply = client.json(Method::POST, LEVELS, &bad).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        causes(&reply.json()),
        [
            (
                "spec.limited.lendablePercent".to_string(),
                "Invalid value: 101: must be between 0 and 100, inclusive".to_string()
            ),
            (
                "spec.limited.limitResponse.queuing.handSize".to_string(),
                "Invalid value: 8: should not be greater than queues (4)".to_string()
            ),
        ]
    );
}

#[tokio::test]
async fn a_flow_schema_is_validated_and_the_mandatory_ones_keep_their_spec() {
    let (_kube, client) = support::start_api_server().await;
    let schema = json!({ "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": { "name": "mine" },
        "spec": { "priorityLevelConfiguration": { "name": "workload-low" },
            "matchingPrecedence": 20000,
            "distinguisherMethod": { "type": "ByColour" },
            "rules": [{ "subjects": [{ "kind": "User" }],
                "resourceRules": [{ "verbs": ["get"], "apiGroups": [""], "resources": ["pods"] }] }] } });
    let reply = client.json(Method::POST, SCHEMAS, &schema).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<String> = causes(&reply.json()).into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        fields,
        [
            "spec.matchingPrecedence",
            "spec.distinguisherMethod.type",
            "spec.rules[0].subjects[0].user",
            "spec.rules[0].resourceRules[0].namespaces",
        ]
    );

    let mut exempt = client.get(&format!("{SCHEMAS}/exempt")).await.json();
    exempt["spec"]["matchingPrecedence"] = json!(5);
    let put = client
        .json(Method::PUT, &format!("{SCHEMAS}/exempt"), &exempt)
        .await;
    assert_eq!(put.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        causes(&put.json())[0]
            .1
            .ends_with("spec of 'exempt' must equal the fixed value"),
        "{}",
        put.json()
    );
}

#[tokio::test]
async fn status_is_written_through_the_status_subresource_only() {
    let (_kube, client) = support::start_api_server().await;
    let schema = json!({ "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": { "name": "mine" },
        "spec": { "priorityLevelConfiguration": { "name": "missing" },
        } });
    let made = client.json(Method::POST, SCHEMAS, &schema).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json());
    assert_eq!(made.json()["spec"]["matchingPrecedence"], 1000);
    let mut obj = made.json();
    obj["status"] = json!({ "conditions": [{ "type": "Dangling", "status": "True",
        "reason": "NotFound", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z" }] });
    let main = client
        .json(Method::PUT, &format!("{SCHEMAS}/mine"), &obj)
        .await;
    assert!(
        main.json()["status"]["conditions"][0].is_null(),
        "{}",
        main.json()
    );
    let mut obj = main.json();
    obj["status"] = json!({ "conditions": [{ "type": "Dangling", "status": "True",
        "reason": "NotFound", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z" }] });
    let status = client
        .json(Method::PUT, &format!("{SCHEMAS}/mine/status"), &obj)
        .await;
    assert_eq!(status.status, StatusCode::OK, "{}", status.json());
    assert_eq!(status.json()["status"]["conditions"][0]["status"], "True");
}
