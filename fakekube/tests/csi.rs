//! The CSI kinds of `storage.k8s.io/v1` through the HTTP API: CSIDriver, CSINode,
//! CSIStorageCapacity and VolumeAttachment (with its status subresource), defaulted and
//! validated as kube-apiserver does; a kind cluster's node has its CSINode.

mod support;

use http::{Method, StatusCode};
use serde_json::{Value, json};

const DRIVERS: &str = "/apis/storage.k8s.io/v1/csidrivers";
const NODES: &str = "/apis/storage.k8s.io/v1/csinodes";
const CAPACITIES: &str = "/apis/storage.k8s.io/v1/namespaces/sb/csistoragecapacities";
const ATTACHMENTS: &str = "/apis/storage.k8s.io/v1/volumeattachments";

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
async fn a_csi_driver_is_defaulted_and_its_attach_required_is_immutable() {
    let (_kube, client) = support::start_api_server().await;
    let driver = json!({ "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": { "name": "hostpath.csi.k8s.io" }, "spec": {} });
    let made = client.json(Method::POST, DRIVERS, &driver).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json());
    let spec = made.json()["spec"].clone();
    assert_eq!(spec["attachRequired"], true);
    assert_eq!(spec["podInfoOnMount"], false);
    assert_eq!(spec["storageCapacity"], false);
    assert_eq!(spec["requiresRepublish"], false);
    assert_eq!(spec["fsGroupPolicy"], "ReadWriteOnceWithFSType");
    assert_eq!(spec["volumeLifecycleModes"], json!(["Persistent"]));

    let mut changed = made.json();
    changed["spec"]["attachRequired"] = json!(false);
    let put = client
        .json(
            Method::PUT,
            &format!("{DRIVERS}/hostpath.csi.k8s.io"),
            &changed,
        )
        .await;
    assert_eq!(put.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        causes(&put.json()),
        [(
            "spec.attachedRequired".to_string(),
            "Invalid value: false: field is immutable".to_string()
        )]
    );

    let bad = json!({ "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": { "name": "bad.csi.k8s.io" },
        "spec": { "fsGroupPolicy": "Sometimes", "volumeLifecycleModes": ["Forever"],
            "tokenRequests": [{ "audience": "a", "expirationSeconds": 60 }, { "audience": "a" }] } });
    let reply = client.json(Method::POST, DRIVERS, &bad).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<String> = causes(&reply.json()).into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        fields,
        [
            "spec.fsGroupPolicy",
            "spec.tokenRequests[0].expirationSeconds",
            "spec.tokenRequests[1].audience",
            "spec.volumeLifecycleModes",
        ]
    );
}

#[tokio::test]
async fn a_csi_node_refuses_duplicate_drivers_and_a_missing_node_id() {
    let (_kube, client) = support::start_api_server().await;
    let node = json!({ "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
        "metadata": { "name": "n1" },
        "spec": { "drivers": [
            { "name": "a.csi.k8s.io", "nodeID": "n1" },
            { "name": "a.csi.k8s.io", "nodeID": "" },
        ] } });
    let reply = client.json(Method::POST, NODES, &node).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<String> = causes(&reply.json()).into_iter().map(|(f, _)| f).collect();
    assert_eq!(fields, ["spec.drivers[1].nodeID", "spec.drivers[1].name"]);
    let ok = json!({ "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
        "metadata": { "name": "n1" },
        "spec": { "drivers": [{ "name": "a.csi.k8s.io", "nodeID": "n1",
            "allocatable": { "count": 10 } }] } });
    let made = client.json(Method::POST, NODES, &ok).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json());
}

#[tokio::test]
async fn a_storage_capacity_keeps_its_class_and_refuses_a_negative_capacity() {
    let (_kube, client) = support::start_api_server().await;
    let cap = json!({ "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
        "metadata": { "name": "c1" }, "storageClassName": "standard", "capacity": "10Gi" });
    let made = client.json(Method::POST, CAPACITIES, &cap).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json());
    let mut changed = made.json();
    changed["storageClassName"] = json!("fast");
    changed["capacity"] = json!("20Gi");
    let put = client
        .json(Method::PUT, &format!("{CAPACITIES}/c1"), &changed)
        .await;
    assert_eq!(put.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        causes(&put.json()),
        [(
            "storageClassName".to_string(),
            "Invalid value: \"fast\": field is immutable".to_string()
        )]
    );
    let negative = json!({ "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
        "metadata": { "name": "c2" }, "storageClassName": "standard", "capacity": "-1Gi" });
    let reply = client.json(Method::POST, CAPACITIES, &negative).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(causes(&reply.json())[0].0, "capacity");
}

#[tokio::test]
async fn a_volume_attachments_spec_is_immutable_and_its_status_written_through_the_subresource() {
    let (_kube, client) = support::start_api_server().await;
    let va = json!({ "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
        "metadata": { "name": "va1" },
        "spec": { "attacher": "a.csi.k8s.io", "nodeName": "fakekube-node",
            "source": { "persistentVolumeName": "pv1" } },
        "status": { "attached": true } });
    let made = client.json(Method::POST, ATTACHMENTS, &va).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json());
    assert!(
        made.json()
            .get("status")
            .is_none_or(|s| s.get("attached").is_none())
    );

    let mut status = made.json();
    status["status"] =
        json!({ "attached": true, "attachmentMetadata": { "devicePath": "/dev/x" } });
    let put = client
        .json(Method::PUT, &format!("{ATTACHMENTS}/va1/status"), &status)
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.json());
    assert_eq!(put.json()["status"]["attached"], true);

    let mut moved = put.json();
    moved["spec"]["nodeName"] = json!("elsewhere");
    let refused = client
        .json(Method::PUT, &format!("{ATTACHMENTS}/va1"), &moved)
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(causes(&refused.json())[0].0, "spec");

    let neither = json!({ "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
        "metadata": { "name": "va2" },
        "spec": { "attacher": "a.csi.k8s.io", "nodeName": "n", "source": {} } });
    let reply = client.json(Method::POST, ATTACHMENTS, &neither).await;
    assert_eq!(
        causes(&reply.json()),
        [(
            "spec.source".to_string(),
            "Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"
                .to_string()
        )]
    );
}

#[tokio::test]
async fn a_kind_clusters_node_has_its_csi_node_owned_by_the_node() {
    let (kube, client) = support::start(
        fakekube::FakeKube::builder()
            .agent_sandbox_crds(false)
            .kind_system(true),
    )
    .await;
    let found = kube
        .wait_for(
            "csinodes",
            "",
            "fakekube-node",
            std::time::Duration::from_secs(60),
            |n| n.is_some(),
        )
        .await;
    assert!(found.is_ok(), "{found:?}");
    let node = client.get(&format!("{NODES}/fakekube-node")).await.json();
    assert_eq!(node["spec"]["drivers"], json!([]));
    assert_eq!(node["metadata"]["ownerReferences"][0]["kind"], "Node");
}
