//! kube-rs against a bare fakekube (no CRD installed, as envtest): a kind of the test's own,
//! defined with kube's `CustomResource` derive, installed from `Gizmo::crd()`, waited for with
//! `is_crd_established`, then used as an operator would: create, defaults, a CEL rule refusing
//! a write, the status and scale subresources, another version, a watch that ends when the
//! CRD goes, and the CRD's deletion taking its objects.

use futures_util::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, Config, CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;

/// How long a test waits for a condition or an event.
const WAIT: Duration = Duration::from_secs(60);

/// The spec of a Gizmo: a size that a CEL rule keeps within its limit, and a defaulted mode.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "kubers.example.com",
    version = "v1",
    kind = "Gizmo",
    namespaced,
    status = "GizmoStatus",
    shortname = "gz",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas"
    ),
    printcolumn = r#"{"name":"Size", "type":"integer", "jsonPath":".spec.size"}"#
)]
#[schemars(extend("x-kubernetes-validations" = [{ "rule": "self.size <= self.limit", "message": "size must not exceed limit" }]))]
pub struct GizmoSpec {
    /// How big the gizmo is.
    pub size: i32,
    /// The largest size allowed.
    pub limit: i32,
    /// How many copies run.
    #[serde(default)]
    pub replicas: i32,
    /// How it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "fast", "enum" = ["fast", "slow"]))]
    pub mode: Option<String>,
}

/// What the gizmo reports.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct GizmoStatus {
    /// How many copies run now.
    pub replicas: i32,
    /// How it goes.
    pub phase: Option<String>,
}

/// A bare server and a client for it.
async fn bare() -> (fakekube::FakeKube, Client) {
    let kube = fakekube::FakeKube::builder()
        .agent_sandbox_crds(false)
        .controllers(false)
        .kubelet(false)
        .start()
        .await
        .expect("fakekube starts");
    let kubeconfig = Kubeconfig::from_yaml(&kube.kubeconfig()).expect("the kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube accepts the kubeconfig");
    let client = Client::try_from(config).expect("kube builds a client");
    (kube, client)
}

/// The derived CRD with a second, deprecated version served beside `v1`.
fn gizmo_crd() -> CustomResourceDefinition {
    let mut crd = Gizmo::crd();
    let mut v1beta1 = crd.spec.versions[0].clone();
    v1beta1.name = "v1beta1".into();
    v1beta1.storage = false;
    v1beta1.deprecated = Some(true);
    crd.spec.versions.push(v1beta1);
    crd
}

/// Installs the CRD and waits until it is established.
async fn install(client: &Client) -> Api<CustomResourceDefinition> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &gizmo_crd())
        .await
        .expect("the derived CRD is accepted");
    tokio::time::timeout(
        WAIT,
        await_condition(
            crds.clone(),
            "gizmos.kubers.example.com",
            conditions::is_crd_established(),
        ),
    )
    .await
    .expect("established in time")
    .expect("the wait works");
    crds
}

/// A Gizmo named `name`.
fn gizmo(name: &str, size: i32, limit: i32) -> Gizmo {
    Gizmo::new(
        name,
        GizmoSpec {
            size,
            limit,
            replicas: 1,
            mode: None,
        },
    )
}

#[tokio::test]
async fn a_derived_custom_resource_is_served_defaulted_and_validated() {
    let (_kube, client) = bare().await;
    install(&client).await;
    let gizmos: Api<Gizmo> = Api::default_namespaced(client.clone());
    let created = gizmos
        .create(&PostParams::default(), &gizmo("g1", 2, 5))
        .await
        .expect("created");
    assert_eq!(created.spec.mode.as_deref(), Some("fast"), "defaulted");
    let refused = gizmos
        .create(&PostParams::default(), &gizmo("g2", 9, 5))
        .await
        .expect_err("the CEL rule refuses it");
    let kube::Error::Api(status) = refused else {
        panic!("a Status, not {refused:?}");
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "Gizmo.kubers.example.com \"g2\" is invalid: spec: Invalid value: \"object\": size must not exceed limit"
    );
    let mut bad_mode = gizmo("g3", 1, 5);
    bad_mode.spec.mode = Some("warp".into());
    let refused = gizmos
        .create(&PostParams::default(), &bad_mode)
        .await
        .expect_err("not in the enum");
    assert!(
        refused.to_string().contains(
            "spec.mode: Unsupported value: \"warp\": supported values: \"fast\", \"slow\""
        ),
        "{refused}"
    );
}

#[tokio::test]
async fn status_and_scale_subresources_work_through_kube() {
    let (_kube, client) = bare().await;
    install(&client).await;
    let gizmos: Api<Gizmo> = Api::default_namespaced(client.clone());
    gizmos
        .create(&PostParams::default(), &gizmo("g", 1, 5))
        .await
        .expect("created");
    let status = json!({ "status": { "replicas": 1, "phase": "Running" } });
    let patched = gizmos
        .patch_status("g", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status patched");
    assert_eq!(
        patched.status.and_then(|s| s.phase).as_deref(),
        Some("Running")
    );
    let scale = gizmos
        .patch_scale(
            "g",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "spec": { "replicas": 3 } })),
        )
        .await
        .expect("scaled");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(3));
    let now = gizmos.get("g").await.expect("there");
    assert_eq!(now.spec.replicas, 3);
    let scale = gizmos.get_scale("g").await.expect("scale read");
    assert_eq!(scale.status.map(|s| s.replicas), Some(1));
}

#[tokio::test]
async fn another_version_serves_the_same_objects_rewritten() {
    let (_kube, client) = bare().await;
    install(&client).await;
    let gizmos: Api<Gizmo> = Api::default_namespaced(client.clone());
    gizmos
        .create(&PostParams::default(), &gizmo("g", 1, 5))
        .await
        .expect("created");
    let beta = ApiResource {
        group: "kubers.example.com".into(),
        version: "v1beta1".into(),
        api_version: "kubers.example.com/v1beta1".into(),
        kind: "Gizmo".into(),
        plural: "gizmos".into(),
    };
    let old: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &beta);
    let g = old.get("g").await.expect("served in v1beta1 too");
    assert_eq!(
        g.types.map(|t| t.api_version).as_deref(),
        Some("kubers.example.com/v1beta1")
    );
    assert_eq!(g.data["spec"]["size"], 1);
}

#[tokio::test]
async fn deleting_the_crd_ends_watches_and_deletes_its_objects() {
    let (_kube, client) = bare().await;
    let crds = install(&client).await;
    let gizmos: Api<Gizmo> = Api::default_namespaced(client.clone());
    gizmos
        .create(&PostParams::default(), &gizmo("g", 1, 5))
        .await
        .expect("created");
    let mut events = gizmos
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watching")
        .boxed();
    crds.delete("gizmos.kubers.example.com", &DeleteParams::default())
        .await
        .expect("deleted");
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, events.next()).await {
            Ok(Some(Ok(WatchEvent::Added(g) | WatchEvent::Deleted(g)))) => {
                seen.push(g.metadata.name.unwrap_or_default());
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(_) => panic!("the watch did not end after the CRD went; saw {seen:?}"),
        }
    }
    assert_eq!(seen, ["g", "g"], "added, then deleted with its CRD");
    let gone = gizmos
        .list(&Default::default())
        .await
        .expect_err("the kind is gone");
    assert!(
        matches!(gone, kube::Error::Api(ref s) if s.code == 404),
        "{gone:?}"
    );
}

/// Renames an object's `apiVersion`: the smallest converter there is.
#[derive(Debug)]
struct Renamer;

impl fakekube::Converter for Renamer {
    fn convert(
        &self,
        object: &serde_json::Value,
        api_version: &str,
    ) -> Result<serde_json::Value, String> {
        let mut out = object.clone();
        out["apiVersion"] = json!(api_version);
        Ok(out)
    }
}

#[tokio::test]
async fn a_version_behind_a_conversion_webhook_fails_until_a_converter_is_registered() {
    let kube = fakekube::FakeKube::builder()
        .controllers(false)
        .kubelet(false)
        .start()
        .await
        .expect("fakekube starts");
    kube.create(json!({
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": { "name": "s", "namespace": "default" },
        "spec": { "podTemplate": { "spec": { "containers": [{ "name": "c", "image": "busybox" }] } } },
    }))
    .expect("a Sandbox in the stored version");
    let kubeconfig = Kubeconfig::from_yaml(&kube.kubeconfig()).expect("the kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube accepts the kubeconfig");
    let client = Client::try_from(config).expect("kube builds a client");
    let alpha = ApiResource {
        group: "agents.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "agents.x-k8s.io/v1alpha1".into(),
        kind: "Sandbox".into(),
        plural: "sandboxes".into(),
    };
    let sandboxes: Api<DynamicObject> = Api::default_namespaced_with(client, &alpha);
    let failed = sandboxes.get("s").await.expect_err("no webhook to call");
    let kube::Error::Api(status) = failed else {
        panic!("a Status, not {failed:?}");
    };
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        "conversion webhook for agents.x-k8s.io/v1beta1, Kind=Sandbox failed: Post \"https://agent-sandbox-webhook-service.agent-sandbox-system.svc:443/convert?timeout=30s\": service \"agent-sandbox-webhook-service\" not found"
    );
    kube.register_converter("agents.x-k8s.io", "Sandbox", std::sync::Arc::new(Renamer));
    let s = sandboxes.get("s").await.expect("converted in process");
    assert_eq!(
        s.types.map(|t| t.api_version).as_deref(),
        Some("agents.x-k8s.io/v1alpha1")
    );
}

/// A GET through kube's client with the given headers; the status, ETag and body.
async fn raw_get(
    client: &Client,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Option<String>, serde_json::Value) {
    let mut req = http::Request::get(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(kube::client::Body::empty()).expect("a request");
    let resp = client.send(req).await.expect("an answer");
    let status = resp.status().as_u16();
    let etag = resp
        .headers()
        .get(http::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("a body")
        .to_bytes();
    (
        status,
        etag,
        serde_json::from_slice(&body).unwrap_or_default(),
    )
}

#[tokio::test]
async fn discovery_and_openapi_change_when_a_crd_is_installed() {
    let (_kube, client) = bare().await;
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let (status, etag, _) = raw_get(&client, "/apis", &[("accept", aggregated)]).await;
    assert_eq!(status, 200);
    let etag = etag.expect("aggregated discovery has an ETag");
    let (status, _, _) = raw_get(
        &client,
        "/apis",
        &[("accept", aggregated), ("if-none-match", &etag)],
    )
    .await;
    assert_eq!(status, 304, "unchanged");
    let (_, _, root_before) = raw_get(&client, "/openapi/v3", &[]).await;
    install(&client).await;
    let (status, _, doc) = raw_get(
        &client,
        "/apis",
        &[("accept", aggregated), ("if-none-match", &etag)],
    )
    .await;
    assert_eq!(status, 200, "changed by the CRD");
    let group = doc["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["metadata"]["name"] == "kubers.example.com")
        .cloned()
        .expect("the CRD's group is discovered");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, ["v1", "v1beta1"], "by priority");
    assert_eq!(
        group["versions"][0]["resources"][0]["shortNames"],
        json!(["gz"])
    );
    let (_, _, root_after) = raw_get(&client, "/openapi/v3", &[]).await;
    let url = |root: &serde_json::Value, key: &str| {
        root["paths"][key]["serverRelativeURL"]
            .as_str()
            .map(str::to_string)
    };
    assert_eq!(
        url(&root_before, "api/v1"),
        url(&root_after, "api/v1"),
        "the core document is the same"
    );
    let gizmo_url = url(&root_after, "apis/kubers.example.com/v1").expect("a document for the CRD");
    let (_, _, openapi) = raw_get(&client, &gizmo_url, &[]).await;
    let schema = &openapi["components"]["schemas"]["com.example.kubers.v1.Gizmo"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["description"],
        "How big the gizmo is."
    );
}

#[tokio::test]
async fn the_agent_sandbox_controllers_pick_up_a_sandbox_crd_installed_later() {
    let kube = fakekube::FakeKube::builder()
        .agent_sandbox_crds(false)
        .start()
        .await
        .expect("fakekube starts with the controllers and no CRD");
    let yaml = include_str!("../../fixtures/crds/agents.x-k8s.io_sandboxes.yaml");
    let crd: serde_json::Value = serde_saphyr::from_str(yaml).expect("the fixture is YAML");
    kube.create(crd).expect("the Sandbox CRD is accepted");
    kube.create(json!({
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": { "name": "late", "namespace": "default" },
        "spec": { "podTemplate": { "spec": { "containers": [{ "name": "c", "image": "busybox" }] } } },
    }))
    .expect("a Sandbox of the new kind");
    let pod = kube
        .wait_for("pods", "default", "late", WAIT, |p| p.is_some())
        .await
        .expect("the Sandbox controller makes its pod");
    assert_eq!(
        pod.and_then(|p| p["metadata"]["ownerReferences"][0]["kind"]
            .as_str()
            .map(str::to_string))
            .as_deref(),
        Some("Sandbox")
    );
}
