//! HorizontalPodAutoscalers through the HTTP API: served as `autoscaling/v2` and
//! `autoscaling/v1` from one stored object (`v2` preferred in discovery), converted as the API
//! server converts them (a `v1` object's CPU target is a `v2` Resource metric; what `v1` cannot
//! hold rides in its annotations and survives a `v1` round trip), `v2`'s defaults, validation
//! and the `status` subresource. Nothing scales: fakekube runs no autoscaling controller.

mod support;

use http::{Method, StatusCode};
use serde_json::{Value, json};

const V2: &str = "/apis/autoscaling/v2/namespaces/sb/horizontalpodautoscalers";
const V1: &str = "/apis/autoscaling/v1/namespaces/sb/horizontalpodautoscalers";

fn hpa_v2(name: &str, spec_extra: Value) -> Value {
    let mut spec = json!({ "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" },
        "maxReplicas": 5 });
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    json!({ "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": { "name": name }, "spec": spec })
}

#[tokio::test]
async fn a_v2_autoscaler_gets_its_defaults_and_reads_back_as_v1() {
    let (_kube, client) = support::start_api_server().await;
    let reply = client
        .json(Method::POST, V2, &hpa_v2("web", json!({})))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    let spec = &reply.json()["spec"];
    assert_eq!(spec["minReplicas"], 1);
    assert_eq!(
        spec["metrics"],
        json!([ { "type": "Resource", "resource": { "name": "cpu",
            "target": { "type": "Utilization", "averageUtilization": 80 } } } ])
    );
    let v1 = client.get(&format!("{V1}/web")).await.json();
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 80);
    assert!(v1["spec"].get("metrics").is_none());
    assert_eq!(v1["metadata"]["uid"], reply.json()["metadata"]["uid"]);
}

#[tokio::test]
async fn a_v1_autoscaler_is_one_object_with_its_v2_view() {
    let (_kube, client) = support::start_api_server().await;
    let body = json!({ "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": { "name": "web" },
        "spec": { "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" },
            "maxReplicas": 3, "targetCPUUtilizationPercentage": 50 } });
    let reply = client.json(Method::POST, V1, &body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    assert_eq!(reply.json()["spec"]["minReplicas"], 1);
    let v2 = client.get(V2).await.json();
    let items = v2["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1);
    assert_eq!(
        items[0]["spec"]["metrics"],
        json!([ { "type": "Resource", "resource": { "name": "cpu",
            "target": { "type": "Utilization", "averageUtilization": 50 } } } ])
    );
}

#[tokio::test]
async fn what_v1_cannot_hold_survives_a_v1_round_trip_in_annotations() {
    let (_kube, client) = support::start_api_server().await;
    let extra = json!({
        "metrics": [
            { "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 60 } } },
            { "type": "Resource", "resource": { "name": "memory", "target": { "type": "AverageValue", "averageValue": "100Mi" } } } ],
        "behavior": { "scaleDown": { "stabilizationWindowSeconds": 60 } } });
    let created = client
        .json(Method::POST, V2, &hpa_v2("web", extra))
        .await
        .json();
    assert_eq!(
        created["spec"]["behavior"]["scaleUp"]["policies"],
        json!([ { "type": "Pods", "value": 4, "periodSeconds": 15 },
                { "type": "Percent", "value": 100, "periodSeconds": 15 } ])
    );
    let v1 = client.get(&format!("{V1}/web")).await.json();
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    let metrics: Value = serde_json::from_str(
        v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .unwrap_or("null"),
    )
    .unwrap_or(Value::Null);
    assert_eq!(
        metrics,
        json!([ { "type": "Resource", "resource": { "name": "memory", "targetAverageValue": "100Mi" } } ])
    );
    // A v1 client writes back what it read, with a new maximum.
    let reply = client
        .read_modify_put(&format!("{V1}/web"), &format!("{V1}/web"), |h| {
            h["spec"]["maxReplicas"] = json!(7);
        })
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json());
    let v2 = client.get(&format!("{V2}/web")).await.json();
    assert_eq!(v2["spec"]["maxReplicas"], 7);
    assert_eq!(v2["spec"]["metrics"], created["spec"]["metrics"]);
    assert_eq!(v2["spec"]["behavior"], created["spec"]["behavior"]);
    assert!(
        v2["metadata"].get("annotations").is_none(),
        "{}",
        v2["metadata"]
    );
}

#[tokio::test]
async fn an_autoscaler_with_max_below_min_or_no_target_kind_is_invalid() {
    let (_kube, client) = support::start_api_server().await;
    let mut bad = hpa_v2("bad", json!({ "minReplicas": 4, "maxReplicas": 2 }));
    bad["spec"]["scaleTargetRef"]["kind"] = json!("");
    let reply = client.json(Method::POST, V2, &bad).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<String> = reply.json()["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["field"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(fields, vec!["spec.scaleTargetRef.kind", "spec.maxReplicas"]);
}

#[tokio::test]
async fn an_autoscalers_status_is_written_through_its_subresource() {
    let (_kube, client) = support::start_api_server().await;
    client
        .json(Method::POST, V2, &hpa_v2("web", json!({})))
        .await;
    let path = format!("{V2}/web");
    let reply = client
        .read_modify_put(&path, &format!("{path}/status"), |h| {
            h["status"] = json!({ "currentReplicas": 2, "desiredReplicas": 2 });
        })
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json());
    let v1 = client.get(&format!("{V1}/web")).await.json();
    assert_eq!(v1["status"]["currentReplicas"], 2);
    let reply = client
        .read_modify_put(&path, &path, |h| {
            h["status"] = json!({ "currentReplicas": 9 })
        })
        .await;
    assert_eq!(reply.json()["status"]["currentReplicas"], 2);
}

#[tokio::test]
async fn discovery_serves_both_versions_and_prefers_v2() {
    let (_kube, client) = support::start_api_server().await;
    let group = client.get("/apis/autoscaling").await.json();
    assert_eq!(group["preferredVersion"]["version"], "v2");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, vec!["v2", "v1"]);
    let v1 = client.get("/apis/autoscaling/v1").await.json();
    assert_eq!(v1["resources"][0]["name"], "horizontalpodautoscalers");
    assert_eq!(v1["resources"][0]["shortNames"], json!(["hpa"]));
}
