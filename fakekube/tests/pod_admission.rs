//! What kube-apiserver's admission plugins add to a pod or refuse, and what the kubelet makes
//! of it: the ServiceAccount plugin's account and `kube-api-access-*` volume (whose `token`,
//! `ca.crt` and `namespace` a container reads, the token one the API server accepts),
//! DefaultTolerationSeconds' tolerations, the RuntimeClass plugin's 403, overhead and
//! scheduling, and the Priority plugin with the system PriorityClasses.

mod support;

use http::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;

const PODS: &str = "/api/v1/namespaces/sb/pods";
const RUNTIME_CLASSES: &str = "/apis/node.k8s.io/v1/runtimeclasses";
const PRIORITY_CLASSES: &str = "/apis/scheduling.k8s.io/v1/priorityclasses";
const MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([ { "name": "c", "image": "busybox" } ]);
    }
    json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": name }, "spec": spec })
}

#[tokio::test]
async fn a_new_pod_gets_its_service_account_token_volume_and_default_tolerations() {
    let (_kube, client) = support::start_api_server().await;
    let reply = client.json(Method::POST, PODS, &pod("p", json!({}))).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    let spec = &reply.json()["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["serviceAccount"], "default");
    let volume = &spec["volumes"][0];
    let name = volume["name"].as_str().expect("a volume");
    assert!(
        name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5,
        "{name}"
    );
    assert_eq!(
        volume["projected"],
        json!({
            "sources": [
                { "serviceAccountToken": { "expirationSeconds": 3607, "path": "token" } },
                { "configMap": { "name": "kube-root-ca.crt", "items": [ { "key": "ca.crt", "path": "ca.crt" } ] } },
                { "downwardAPI": { "items": [ { "path": "namespace", "fieldRef": { "apiVersion": "v1", "fieldPath": "metadata.namespace" } } ] } },
            ],
            "defaultMode": 420,
        })
    );
    assert_eq!(
        spec["containers"][0]["volumeMounts"],
        json!([ { "name": name, "readOnly": true, "mountPath": MOUNT } ])
    );
    assert_eq!(
        spec["tolerations"],
        json!([
            { "key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 },
            { "key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 },
        ])
    );
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(spec["enableServiceLinks"], true);
}

#[tokio::test]
async fn a_pod_naming_a_missing_service_account_is_refused_with_403() {
    let (_kube, client) = support::start_api_server().await;
    let reply = client
        .json(
            Method::POST,
            PODS,
            &pod("p", json!({ "serviceAccountName": "robot" })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    let status = reply.json();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "pods \"p\" is forbidden: error looking up service account sb/robot: serviceaccount \"robot\" not found"
    );
    assert_eq!(status["details"], json!({ "name": "p", "kind": "pods" }));
}

#[tokio::test]
async fn a_pod_without_automounting_gets_no_token_volume() {
    let (_kube, client) = support::start_api_server().await;
    let reply = client
        .json(
            Method::POST,
            PODS,
            &pod("p", json!({ "automountServiceAccountToken": false })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert!(reply.json()["spec"].get("volumes").is_none());
    assert!(
        reply.json()["spec"]["containers"][0]
            .get("volumeMounts")
            .is_none_or(|m| m == &json!([]))
    );
}

#[tokio::test]
async fn a_container_reads_its_namespace_ca_and_a_token_the_api_server_accepts() {
    let (kube, client) = support::start(fakekube::FakeKube::builder().namespace("sb")).await;
    let script = format!(
        "cat {MOUNT}/namespace; echo; echo @@@; cat {MOUNT}/ca.crt; echo @@@; cat {MOUNT}/token"
    );
    let body = pod(
        "reader",
        json!({
            "restartPolicy": "Never",
            "containers": [ { "name": "c", "image": "busybox", "command": ["sh", "-c", script] } ],
        }),
    );
    let reply = client.json(Method::POST, PODS, &body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    kube.wait_for("pods", "sb", "reader", Duration::from_secs(20), |p| {
        p.and_then(|p| p.pointer("/status/phase"))
            .and_then(Value::as_str)
            == Some("Succeeded")
    })
    .await
    .expect("the pod ends");
    let log = kube.container_log("sb", "reader", "c").expect("a log");
    let parts: Vec<&str> = log.split("@@@\n").collect();
    assert_eq!(parts.len(), 3, "{log}");
    assert_eq!(parts[0].trim(), "sb");
    assert_eq!(parts[1].trim(), kube.ca_pem().trim());
    let token = parts[2].trim();
    assert!(!token.is_empty(), "{log}");
    let review = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
    });
    let whoami = client
        .with_token(Some(token))
        .json(
            Method::POST,
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &review,
        )
        .await;
    assert_eq!(whoami.status, StatusCode::CREATED, "{}", whoami.json());
    let user = &whoami.json()["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:sb:default");
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["reader"])
    );
}

fn kata(overhead: bool) -> Value {
    let mut class = json!({
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": { "name": "kata" },
        "handler": "kata",
        "scheduling": {
            "nodeSelector": { "katacontainers.io/kata-runtime": "true" },
            "tolerations": [ { "key": "kata", "operator": "Exists", "effect": "NoSchedule" } ],
        },
    });
    if overhead {
        class["overhead"] = json!({ "podFixed": { "cpu": "250m", "memory": "160Mi" } });
    }
    class
}

#[tokio::test]
async fn a_pod_naming_a_missing_runtime_class_is_refused_with_403() {
    let (_kube, client) = support::start_api_server().await;
    let reply = client
        .json(
            Method::POST,
            PODS,
            &pod("p", json!({ "runtimeClassName": "kata" })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(
        reply.json()["message"],
        "pods \"p\" is forbidden: pod rejected: RuntimeClass \"kata\" not found"
    );
    let generated = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "generateName": "sandbox-" },
        "spec": { "runtimeClassName": "kata", "containers": [ { "name": "c", "image": "busybox" } ] },
    });
    let reply = client.json(Method::POST, PODS, &generated).await;
    assert_eq!(
        reply.json()["message"],
        "pods \"sandbox-\" is forbidden: pod rejected: RuntimeClass \"kata\" not found"
    );
}

#[tokio::test]
async fn a_runtime_class_gives_a_pod_its_overhead_node_selector_and_tolerations() {
    let (_kube, client) = support::start_api_server().await;
    let created = client
        .json(Method::POST, RUNTIME_CLASSES, &kata(true))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json());
    let reply = client
        .json(
            Method::POST,
            PODS,
            &pod("p", json!({ "runtimeClassName": "kata" })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    let spec = &reply.json()["spec"];
    assert_eq!(
        spec["overhead"],
        json!({ "cpu": "250m", "memory": "160Mi" })
    );
    assert_eq!(
        spec["nodeSelector"],
        json!({ "katacontainers.io/kata-runtime": "true" })
    );
    let keys: Vec<&str> = spec["tolerations"]
        .as_array()
        .expect("tolerations")
        .iter()
        .filter_map(|t| t["key"].as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
            "kata"
        ]
    );
    let other = client
        .json(
            Method::POST,
            PODS,
            &pod(
                "q",
                json!({ "runtimeClassName": "kata", "overhead": { "cpu": "1" } }),
            ),
        )
        .await;
    assert_eq!(other.status, StatusCode::FORBIDDEN);
    assert_eq!(
        other.json()["message"],
        "pods \"q\" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
    );
    let conflict = client
        .json(
            Method::POST,
            PODS,
            &pod(
                "r",
                json!({ "runtimeClassName": "kata", "nodeSelector": { "katacontainers.io/kata-runtime": "false" } }),
            ),
        )
        .await;
    assert_eq!(conflict.status, StatusCode::FORBIDDEN);
    assert_eq!(
        conflict.json()["message"],
        "pods \"r\" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[katacontainers.io/kata-runtime] = true; pod.spec.nodeSelector[katacontainers.io/kata-runtime] = false"
    );
}

#[tokio::test]
async fn a_runtime_class_needs_a_handler_that_is_a_dns_label_and_never_changes() {
    let (_kube, client) = support::start_api_server().await;
    let mut bad = kata(false);
    bad["handler"] = json!("Kata_QEMU");
    let reply = client.json(Method::POST, RUNTIME_CLASSES, &bad).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(reply.json()["details"]["causes"][0]["field"], "handler");
    let created = client
        .json(Method::POST, RUNTIME_CLASSES, &kata(false))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let changed = client
        .patch(
            &format!("{RUNTIME_CLASSES}/kata"),
            "application/merge-patch+json",
            &json!({ "handler": "runc" }),
        )
        .await;
    assert_eq!(changed.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        changed.json()["message"],
        "RuntimeClass.node.k8s.io \"kata\" is invalid: handler: Invalid value: \"runc\": field is immutable"
    );
}

#[tokio::test]
async fn runtime_classes_and_priority_classes_are_in_discovery() {
    let (_kube, client) = support::start_api_server().await;
    let node = client.get("/apis/node.k8s.io/v1").await;
    assert_eq!(node.status, StatusCode::OK);
    assert!(
        node.json()["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .any(|r| r["name"] == "runtimeclasses" && r["namespaced"] == false)
    );
    let scheduling = client.get("/apis/scheduling.k8s.io/v1").await;
    assert!(
        scheduling.json()["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .any(|r| r["name"] == "priorityclasses" && r["shortNames"] == json!(["pc"]))
    );
}

#[tokio::test]
async fn a_fresh_cluster_has_the_two_system_priority_classes() {
    let (_kube, client) = support::start_api_server().await;
    for (name, value) in [
        ("system-cluster-critical", 2_000_000_000),
        ("system-node-critical", 2_000_001_000),
    ] {
        let reply = client.get(&format!("{PRIORITY_CLASSES}/{name}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{name}");
        assert_eq!(reply.json()["value"], value);
        assert_eq!(reply.json()["preemptionPolicy"], "PreemptLowerPriority");
    }
}

#[tokio::test]
async fn a_pods_priority_comes_from_its_class_and_a_missing_class_is_refused() {
    let (_kube, client) = support::start_api_server().await;
    let critical = client
        .json(
            Method::POST,
            PODS,
            &pod(
                "c",
                json!({ "priorityClassName": "system-cluster-critical" }),
            ),
        )
        .await;
    assert_eq!(critical.status, StatusCode::CREATED, "{}", critical.json());
    assert_eq!(critical.json()["spec"]["priority"], 2_000_000_000);
    let missing = client
        .json(
            Method::POST,
            PODS,
            &pod("m", json!({ "priorityClassName": "high" })),
        )
        .await;
    assert_eq!(missing.status, StatusCode::FORBIDDEN);
    assert_eq!(
        missing.json()["message"],
        "pods \"m\" is forbidden: no PriorityClass with name high was found"
    );
    let default = json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": { "name": "low" }, "value": 5, "globalDefault": true,
    });
    let reply = client.json(Method::POST, PRIORITY_CLASSES, &default).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    let mut second = default.clone();
    second["metadata"]["name"] = json!("lower");
    let reply = client.json(Method::POST, PRIORITY_CLASSES, &second).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(
        reply.json()["message"],
        "priorityclasses.scheduling.k8s.io \"lower\" is forbidden: PriorityClass low is already marked as default. Only one default can exist"
    );
    let plain = client.json(Method::POST, PODS, &pod("d", json!({}))).await;
    assert_eq!(plain.json()["spec"]["priorityClassName"], "low");
    assert_eq!(plain.json()["spec"]["priority"], 5);
}

#[tokio::test]
async fn runtime_and_priority_classes_print_kubectls_columns() {
    let (_kube, client) = support::start_api_server().await;
    let created = client
        .json(Method::POST, RUNTIME_CLASSES, &kata(false))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    for (path, columns, first_row) in [
        (
            RUNTIME_CLASSES,
            vec!["Name", "Handler", "Age"],
            json!(["kata", "kata"]),
        ),
        (
            PRIORITY_CLASSES,
            vec!["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
            json!(["system-cluster-critical", 2_000_000_000, false]),
        ),
    ] {
        let table = client
            .call_with(
                Method::GET,
                path,
                &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
                None,
                Vec::new(),
            )
            .await;
        assert_eq!(table.status, StatusCode::OK);
        let table = table.json();
        let names: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(names, columns);
        let cells = &table["rows"][0]["cells"];
        let wanted = first_row.as_array().expect("cells");
        assert_eq!(
            &cells.as_array().expect("cells")[..wanted.len()],
            &wanted[..]
        );
    }
}
