//! Core PodTemplates through the HTTP API: stored with the pod spec defaults the API server
//! applies to a template, and refused with 422 as an invalid pod spec is.

mod support;

use http::{Method, StatusCode};
use serde_json::json;

const TEMPLATES: &str = "/api/v1/namespaces/sb/podtemplates";

#[tokio::test]
async fn a_pod_template_is_stored_with_its_pod_spec_defaulted() {
    let (_kube, client) = support::start_api_server().await;
    let body = json!({ "apiVersion": "v1", "kind": "PodTemplate", "metadata": { "name": "t" },
        "template": { "metadata": { "labels": { "app": "web" } },
            "spec": { "containers": [ { "name": "c", "image": "nginx:1.27" } ] } } });
    let reply = client.json(Method::POST, TEMPLATES, &body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    let stored = client.get(&format!("{TEMPLATES}/t")).await.json();
    let spec = &stored["template"]["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(stored["template"]["metadata"]["labels"]["app"], "web");
    let list = client.get(TEMPLATES).await.json();
    assert_eq!(list["kind"], "PodTemplateList");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn a_pod_template_without_containers_or_with_a_request_above_its_limit_is_invalid() {
    let (_kube, client) = support::start_api_server().await;
    let body = json!({ "apiVersion": "v1", "kind": "PodTemplate", "metadata": { "name": "t" },
        "template": { "spec": { "containers": [] } } });
    let reply = client.json(Method::POST, TEMPLATES, &body).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        reply.json()["details"]["causes"][0]["field"],
        "template.spec.containers"
    );
    let body = json!({ "apiVersion": "v1", "kind": "PodTemplate", "metadata": { "name": "t" },
        "template": { "spec": { "containers": [ { "name": "c", "image": "busybox",
            "resources": { "requests": { "memory": "2Gi" }, "limits": { "memory": "1Gi" } } } ] } } });
    let reply = client.json(Method::POST, TEMPLATES, &body).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        reply.json()["details"]["causes"][0]["field"],
        "template.spec.containers[0].resources.requests[memory]"
    );
}
