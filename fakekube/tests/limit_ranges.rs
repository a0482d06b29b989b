//! Core LimitRanges through the HTTP API: their defaults and validation, and the
//! `LimitRanger` admission plugin on a pod's create (default requests and limits set and
//! annotated, min/max/ratio refused with 403) and on a claim's; a pod's own resource
//! defaults (a limit without a request requests the limit) and its 422 for a request above
//! its limit.

mod support;

use http::{Method, StatusCode};
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/sb/pods";
const RANGES: &str = "/api/v1/namespaces/sb/limitranges";

fn pod(name: &str, resources: Value) -> Value {
    json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": name },
        "spec": { "containers": [ { "name": "c", "image": "busybox", "resources": resources } ] } })
}

fn range(name: &str, limits: Value) -> Value {
    json!({ "apiVersion": "v1", "kind": "LimitRange", "metadata": { "name": name },
        "spec": { "limits": limits } })
}

async fn create_range(client: &support::Client, limits: Value) {
    let reply = client
        .json(Method::POST, RANGES, &range("limits", limits))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
}

#[tokio::test]
async fn a_pod_without_requests_gets_the_limit_ranges_default_request_and_limit() {
    let (_kube, client) = support::start_api_server().await;
    create_range(
        &client,
        json!([ { "type": "Container",
            "default": { "cpu": "500m", "memory": "128Mi" },
            "defaultRequest": { "cpu": "250m" } } ]),
    )
    .await;
    let reply = client.json(Method::POST, PODS, &pod("p", json!({}))).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    let pod = reply.json();
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        json!({ "limits": { "cpu": "500m", "memory": "128Mi" },
                "requests": { "cpu": "250m", "memory": "128Mi" } })
    );
    assert_eq!(
        pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
    );
    assert_eq!(pod["status"]["qosClass"], "Burstable");
}

#[tokio::test]
async fn a_limit_range_item_is_defaulted_from_its_max_and_min() {
    let (_kube, client) = support::start_api_server().await;
    create_range(
        &client,
        json!([ { "type": "Container", "max": { "cpu": "2" }, "min": { "memory": "64Mi" } } ]),
    )
    .await;
    let stored = client.get(&format!("{RANGES}/limits")).await.json();
    let item = &stored["spec"]["limits"][0];
    assert_eq!(item["default"], json!({ "cpu": "2" }));
    assert_eq!(
        item["defaultRequest"],
        json!({ "cpu": "2", "memory": "64Mi" })
    );
}

#[tokio::test]
async fn a_container_over_the_max_is_forbidden_with_the_limit_rangers_message() {
    let (_kube, client) = support::start_api_server().await;
    create_range(
        &client,
        json!([ { "type": "Container", "max": { "cpu": "1" } } ]),
    )
    .await;
    let reply = client
        .json(
            Method::POST,
            PODS,
            &pod("big", json!({ "limits": { "cpu": "2" } })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.json());
    assert_eq!(
        reply.json()["message"],
        "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
    );
    assert!(
        client.get(&format!("{PODS}/big")).await.status == StatusCode::NOT_FOUND,
        "a refused pod is not stored"
    );
}

#[tokio::test]
async fn min_and_ratio_violations_are_all_listed_in_one_403() {
    let (_kube, client) = support::start_api_server().await;
    create_range(
        &client,
        json!([ { "type": "Container", "min": { "memory": "64Mi" },
                  "maxLimitRequestRatio": { "cpu": "2" } } ]),
    )
    .await;
    let reply = client
        .json(
            Method::POST,
            PODS,
            &pod(
                "p",
                json!({ "requests": { "cpu": "100m", "memory": "32Mi" }, "limits": { "cpu": "1" } }),
            ),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.json());
    assert_eq!(
        reply.json()["message"],
        "pods \"p\" is forbidden: [minimum memory usage per Container is 64Mi, but request is 32Mi, cpu max limit to request ratio per Container is 2, but provided ratio is 10.000000]"
    );
}

#[tokio::test]
async fn a_pod_over_the_pod_maximum_is_forbidden_for_its_total() {
    let (_kube, client) = support::start_api_server().await;
    create_range(
        &client,
        json!([ { "type": "Pod", "max": { "memory": "1Gi" } } ]),
    )
    .await;
    let mut body = pod("two", json!({ "limits": { "memory": "768Mi" } }));
    body["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
        .push(json!({ "name": "d", "image": "busybox", "resources": { "limits": { "memory": "512Mi" } } }));
    let reply = client.json(Method::POST, PODS, &body).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.json());
    assert_eq!(
        reply.json()["message"],
        "pods \"two\" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1280Mi"
    );
}

#[tokio::test]
async fn a_limit_without_a_request_requests_the_limit_and_a_request_above_its_limit_is_422() {
    let (_kube, client) = support::start_api_server().await;
    let reply = client
        .json(
            Method::POST,
            PODS,
            &pod(
                "only-limit",
                json!({ "limits": { "cpu": "1", "memory": "1Gi" } }),
            ),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    let pod_json = reply.json();
    assert_eq!(
        pod_json["spec"]["containers"][0]["resources"]["requests"],
        json!({ "cpu": "1", "memory": "1Gi" })
    );
    assert_eq!(pod_json["status"]["qosClass"], "Guaranteed");

    let reply = client
        .json(
            Method::POST,
            PODS,
            &pod(
                "inverted",
                json!({ "requests": { "cpu": "2" }, "limits": { "cpu": "1" } }),
            ),
        )
        .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let status = reply.json();
    assert_eq!(
        status["details"]["causes"][0],
        json!({ "reason": "FieldValueInvalid",
                "message": "Invalid value: \"2\": must be less than or equal to cpu limit of 1",
                "field": "spec.containers[0].resources.requests[cpu]" })
    );
}

#[tokio::test]
async fn a_limit_range_whose_min_exceeds_its_max_is_invalid() {
    let (_kube, client) = support::start_api_server().await;
    let reply = client
        .json(
            Method::POST,
            RANGES,
            &range(
                "bad",
                json!([ { "type": "Container", "min": { "cpu": "2" }, "max": { "cpu": "1" } },
                        { "type": "Pod", "default": { "cpu": "1" } } ]),
            ),
        )
        .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<Value> = reply.json()["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| c["field"].clone())
        .collect();
    assert!(
        fields.contains(&json!("spec.limits[0].min[cpu]"))
            && fields.contains(&json!("spec.limits[1].default")),
        "{fields:?}"
    );
}

#[tokio::test]
async fn a_claim_over_the_storage_maximum_is_forbidden() {
    let (_kube, client) = support::start_api_server().await;
    create_range(
        &client,
        json!([ { "type": "PersistentVolumeClaim", "max": { "storage": "1Gi" } } ]),
    )
    .await;
    let claim = json!({ "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": { "name": "big" },
        "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "2Gi" } } } });
    let reply = client
        .json(
            Method::POST,
            "/api/v1/namespaces/sb/persistentvolumeclaims",
            &claim,
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.json());
    assert_eq!(
        reply.json()["message"],
        "persistentvolumeclaims \"big\" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi"
    );
}
