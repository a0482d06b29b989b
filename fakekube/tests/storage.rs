//! `storage.k8s.io` StorageClasses and the DefaultStorageClass admission, as on kind: a fresh
//! cluster has the default class `standard`, and a claim that names no class gets the default.

mod support;

use http::{Method, StatusCode};
use serde_json::{Value, json};

fn claim(name: &str, class: Option<&str>) -> Value {
    let mut pvc = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": { "name": name },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": { "requests": { "storage": "1Gi" } },
        },
    });
    if let Some(class) = class {
        pvc["spec"]["storageClassName"] = json!(class);
    }
    pvc
}

const CLAIMS: &str = "/api/v1/namespaces/sb/persistentvolumeclaims";
const CLASSES: &str = "/apis/storage.k8s.io/v1/storageclasses";

#[tokio::test]
async fn a_fresh_cluster_has_kinds_default_storage_class_standard() {
    let (_kube, client) = support::start_api_server().await;
    let reply = client.get(&format!("{CLASSES}/standard")).await;
    assert_eq!(reply.status, StatusCode::OK);
    let sc = reply.json();
    assert_eq!(
        sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"],
        "true"
    );
    assert_eq!(sc["provisioner"], "rancher.io/local-path");
    assert_eq!(sc["volumeBindingMode"], "WaitForFirstConsumer");
}

#[tokio::test]
async fn a_claim_naming_no_class_gets_the_default_and_an_empty_class_stays_empty() {
    let (_kube, client) = support::start_api_server().await;
    let none = client
        .json(Method::POST, CLAIMS, &claim("none", None))
        .await;
    assert_eq!(none.status, StatusCode::CREATED, "{}", none.json());
    assert_eq!(none.json()["spec"]["storageClassName"], "standard");
    let empty = client
        .json(Method::POST, CLAIMS, &claim("empty", Some("")))
        .await;
    assert_eq!(empty.status, StatusCode::CREATED);
    assert_eq!(empty.json()["spec"]["storageClassName"], "");
    let named = client
        .json(Method::POST, CLAIMS, &claim("named", Some("fast")))
        .await;
    assert_eq!(named.json()["spec"]["storageClassName"], "fast");
}

#[tokio::test]
async fn the_newest_of_two_default_classes_wins_and_no_default_leaves_the_class_unset() {
    let (kube, client) = support::start_api_server().await;
    let newer = json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "newer",
            "annotations": { "storageclass.kubernetes.io/is-default-class": "true" },
        },
        "provisioner": "example.com/fast",
    });
    // Creation times have a second's resolution: the newer class is made a second later.
    kube.advance_clock(std::time::Duration::from_secs(2));
    let made = client.json(Method::POST, CLASSES, &newer).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json());
    let pvc = client.json(Method::POST, CLAIMS, &claim("a", None)).await;
    assert_eq!(pvc.json()["spec"]["storageClassName"], "newer");

    for name in ["newer", "standard"] {
        let gone = client
            .call(
                Method::DELETE,
                &format!("{CLASSES}/{name}"),
                None,
                Vec::new(),
            )
            .await;
        assert_eq!(gone.status, StatusCode::OK);
    }
    let pvc = client.json(Method::POST, CLAIMS, &claim("b", None)).await;
    assert_eq!(pvc.status, StatusCode::CREATED);
    assert!(pvc.json()["spec"].get("storageClassName").is_none());
}

#[tokio::test]
async fn kubectl_get_storageclass_shows_the_default_class_and_the_apis_defaults() {
    let (_kube, client) = support::start_api_server().await;
    let fast = json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": { "name": "fast" },
        "provisioner": "example.com/fast",
    });
    let made = client.json(Method::POST, CLASSES, &fast).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json());
    let table = client
        .call_with(
            Method::GET,
            CLASSES,
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
    assert_eq!(
        names,
        [
            "Name",
            "Provisioner",
            "ReclaimPolicy",
            "VolumeBindingMode",
            "AllowVolumeExpansion",
            "Age"
        ]
    );
    let rows: Vec<Value> = table["rows"]
        .as_array()
        .map(|r| {
            r.iter()
                .map(|r| json!(r["cells"].as_array().map(|c| c[..5].to_vec())))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        rows,
        [
            json!(["fast", "example.com/fast", "Delete", "Immediate", false]),
            json!([
                "standard (default)",
                "rancher.io/local-path",
                "Delete",
                "WaitForFirstConsumer",
                false
            ]),
        ]
    );
}
