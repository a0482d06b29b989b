//! Core ResourceQuotas through the HTTP API: their validation, the usage the store's quota
//! controller writes into `status` (pods, requests and limits, object counts, services,
//! claims) as objects come and go, the `ResourceQuota` admission's 403s (`exceeded quota`,
//! `failed quota: ... must specify`), scopes, and a charge made atomically with the create so
//! that concurrent creates cannot both take the last unit.

mod support;

use http::{Method, StatusCode};
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/sb/pods";
const QUOTAS: &str = "/api/v1/namespaces/sb/resourcequotas";

fn pod(name: &str, resources: Value) -> Value {
    json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": name },
        "spec": { "containers": [ { "name": "c", "image": "busybox", "resources": resources } ] } })
}

async fn create_quota(client: &support::Client, name: &str, spec: Value) {
    let body = json!({ "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": { "name": name }, "spec": spec });
    let reply = client.json(Method::POST, QUOTAS, &body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
}

async fn status(client: &support::Client, name: &str) -> Value {
    client.get(&format!("{QUOTAS}/{name}")).await.json()["status"].clone()
}

#[tokio::test]
async fn a_quota_reports_what_the_namespace_uses_as_pods_come_and_go() {
    let (_kube, client) = support::start_api_server().await;
    create_quota(
        &client,
        "compute",
        json!({ "hard": { "pods": "10", "requests.cpu": "2", "limits.memory": "1Gi", "count/configmaps": "5" } }),
    )
    .await;
    assert_eq!(
        status(&client, "compute").await["used"],
        // kube-root-ca.crt is the namespace's first config map.
        json!({ "pods": "0", "requests.cpu": "0", "limits.memory": "0", "count/configmaps": "1" })
    );
    for (name, cpu) in [("a", "250m"), ("b", "500m")] {
        let reply = client
            .json(
                Method::POST,
                PODS,
                &pod(name, json!({ "requests": { "cpu": cpu }, "limits": { "cpu": "1", "memory": "128Mi" } })),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    }
    let s = status(&client, "compute").await;
    assert_eq!(
        s["hard"],
        json!({ "pods": "10", "requests.cpu": "2", "limits.memory": "1Gi", "count/configmaps": "5" })
    );
    assert_eq!(
        s["used"],
        json!({ "pods": "2", "requests.cpu": "750m", "limits.memory": "256Mi", "count/configmaps": "1" })
    );
    let reply = client
        .call(
            Method::DELETE,
            &format!("{PODS}/a?gracePeriodSeconds=0"),
            None,
            Vec::new(),
        )
        .await;
    assert!(reply.status.is_success(), "{}", reply.json());
    assert_eq!(
        status(&client, "compute").await["used"]["requests.cpu"],
        "500m"
    );
    assert_eq!(status(&client, "compute").await["used"]["pods"], "1");
}

#[tokio::test]
async fn a_pod_beyond_the_quota_is_forbidden_with_what_it_requested_and_what_is_used() {
    let (_kube, client) = support::start_api_server().await;
    create_quota(
        &client,
        "q",
        json!({ "hard": { "requests.cpu": "1", "requests.memory": "1Gi" } }),
    )
    .await;
    let ok = pod(
        "a",
        json!({ "requests": { "cpu": "600m", "memory": "512Mi" } }),
    );
    assert_eq!(
        client.json(Method::POST, PODS, &ok).await.status,
        StatusCode::CREATED
    );
    let reply = client
        .json(
            Method::POST,
            PODS,
            &pod(
                "b",
                json!({ "requests": { "cpu": "600m", "memory": "256Mi" } }),
            ),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.json());
    assert_eq!(
        reply.json()["message"],
        "pods \"b\" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"
    );
    assert_eq!(status(&client, "q").await["used"]["requests.cpu"], "600m");
}

#[tokio::test]
async fn a_pod_that_omits_a_tracked_resource_fails_the_quota() {
    let (_kube, client) = support::start_api_server().await;
    create_quota(
        &client,
        "q",
        json!({ "hard": { "limits.cpu": "4", "requests.memory": "1Gi" } }),
    )
    .await;
    let reply = client
        .json(Method::POST, PODS, &pod("bare", json!({})))
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.json());
    assert_eq!(
        reply.json()["message"],
        "pods \"bare\" is forbidden: failed quota: q: must specify limits.cpu for: c; requests.memory for: c"
    );
}

#[tokio::test]
async fn object_counts_refuse_the_object_past_the_limit() {
    let (_kube, client) = support::start_api_server().await;
    create_quota(
        &client,
        "objects",
        json!({ "hard": { "secrets": "1", "count/services": "0" } }),
    )
    .await;
    let secret =
        |name: &str| json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": name } });
    let path = "/api/v1/namespaces/sb/secrets";
    assert_eq!(
        client.json(Method::POST, path, &secret("one")).await.status,
        StatusCode::CREATED
    );
    let reply = client.json(Method::POST, path, &secret("two")).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(
        reply.json()["message"],
        "secrets \"two\" is forbidden: exceeded quota: objects, requested: secrets=1, used: secrets=1, limited: secrets=1"
    );
    let svc = json!({ "apiVersion": "v1", "kind": "Service", "metadata": { "name": "s" },
        "spec": { "ports": [ { "port": 80 } ] } });
    let reply = client
        .json(Method::POST, "/api/v1/namespaces/sb/services", &svc)
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(
        reply.json()["message"],
        "services \"s\" is forbidden: exceeded quota: objects, requested: count/services=1, used: count/services=0, limited: count/services=0"
    );
}

#[tokio::test]
async fn a_best_effort_scoped_quota_counts_only_best_effort_pods() {
    let (_kube, client) = support::start_api_server().await;
    create_quota(
        &client,
        "be",
        json!({ "hard": { "pods": "1" }, "scopes": ["BestEffort"] }),
    )
    .await;
    let burstable = pod("sized", json!({ "requests": { "cpu": "100m" } }));
    for name in ["sized", "sized2"] {
        let mut p = burstable.clone();
        p["metadata"]["name"] = json!(name);
        assert_eq!(
            client.json(Method::POST, PODS, &p).await.status,
            StatusCode::CREATED
        );
    }
    assert_eq!(
        client
            .json(Method::POST, PODS, &pod("free", json!({})))
            .await
            .status,
        StatusCode::CREATED
    );
    let reply = client
        .json(Method::POST, PODS, &pod("free2", json!({})))
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.json());
    assert_eq!(status(&client, "be").await["used"]["pods"], "1");
}

#[tokio::test]
async fn a_quota_with_conflicting_scopes_or_an_unknown_resource_is_invalid() {
    let (_kube, client) = support::start_api_server().await;
    let body = json!({ "apiVersion": "v1", "kind": "ResourceQuota", "metadata": { "name": "bad" },
        "spec": { "hard": { "pods": "1", "widgets": "2" }, "scopes": ["Terminating", "NotTerminating"] } });
    let reply = client.json(Method::POST, QUOTAS, &body).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let messages: Vec<String> = reply.json()["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert!(
        messages.contains(&"spec.hard[widgets]: Invalid value: \"widgets\": must be a standard resource for quota".to_string())
            && messages.iter().any(|m| m.contains("conflicting scopes")),
        "{messages:?}"
    );
}

#[tokio::test]
async fn concurrent_creates_cannot_both_take_the_last_pod_of_a_quota() {
    let (_kube, client) = support::start_api_server().await;
    create_quota(&client, "one", json!({ "hard": { "count/pods": "1" } })).await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            client
                .json(Method::POST, PODS, &pod(&format!("p{i}"), json!({})))
                .await
                .status
        }));
    }
    let mut created = 0;
    for t in tasks {
        let status = t.await.expect("the task runs");
        if status == StatusCode::CREATED {
            created += 1;
        } else {
            assert_eq!(status, StatusCode::FORBIDDEN);
        }
    }
    assert_eq!(created, 1);
    assert_eq!(status(&client, "one").await["used"]["count/pods"], "1");
}
