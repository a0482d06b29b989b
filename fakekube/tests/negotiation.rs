//! Content negotiation over a real socket: the field order of answers, `PartialObjectMetadata`
//! and `PartialObjectMetadataList`, `Table` (built-in and CRD printer columns, `includeObject`,
//! watch), YAML, and 406 for what is not offered.

mod support;

use fakekube::FakeKube;
use http::Method;
use serde_json::{Value, json};
use support::{Client, Reply, read_lines, sandbox, sandboxes};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

async fn start() -> (FakeKube, Client) {
    support::start_api_server().await
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "labels": { "app": "web" } },
        "spec": { "containers": [ { "name": "c", "image": "busybox" } ] },
    })
}

async fn get(c: &Client, path: &str, accept: &str) -> Reply {
    c.call_with(Method::GET, path, &[("accept", accept)], None, Vec::new())
        .await
}

fn text(r: &Reply) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

#[tokio::test]
async fn built_in_objects_start_with_kind_and_custom_ones_are_sorted_as_go_writes_maps() {
    let (kube, c) = start().await;
    let pods = "/api/v1/namespaces/sb/pods";
    assert_eq!(c.json(Method::POST, pods, &pod("p")).await.status, 201);
    let got = text(&c.get(&format!("{pods}/p")).await);
    assert!(
        got.starts_with(
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"sb","uid":"#
        ),
        "{got}"
    );
    let list = text(&c.get(pods).await);
    assert!(
        list.starts_with(r#"{"kind":"PodList","apiVersion":"v1","metadata":{"#),
        "{list}"
    );
    assert!(
        list.contains(r#""items":[{"kind":"Pod","apiVersion":"v1","#),
        "{list}"
    );
    let missing = text(&c.get(&format!("{pods}/nope")).await);
    assert!(
        missing
            .starts_with(r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure""#),
        "{missing}"
    );
    assert_eq!(
        c.json(Method::POST, &sandboxes("sb"), &sandbox("s"))
            .await
            .status,
        201
    );
    let sb = text(&c.get(&format!("{}/s", sandboxes("sb"))).await);
    assert!(
        sb.starts_with(r#"{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"creationTimestamp":"#),
        "{sb}"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn metadata_clients_get_partial_object_metadata_and_lists_of_it() {
    let (kube, c) = start().await;
    let pods = "/api/v1/namespaces/sb/pods";
    for name in ["a", "b"] {
        assert_eq!(c.json(Method::POST, pods, &pod(name)).await.status, 201);
    }
    let one = get(&c, &format!("{pods}/a"), METADATA).await.json();
    assert_eq!(one["kind"], "PartialObjectMetadata", "{one}");
    assert_eq!(one["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(one["metadata"]["labels"]["app"], "web");
    assert!(one.get("spec").is_none(), "{one}");
    let list = get(&c, &format!("{pods}?limit=1"), METADATA_LIST)
        .await
        .json();
    assert_eq!(list["kind"], "PartialObjectMetadataList", "{list}");
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(list["items"][0]["metadata"]["name"], "a");
    assert!(list["metadata"]["continue"].is_string(), "{list}");
    let wrong = get(&c, pods, METADATA).await;
    assert_eq!(wrong.status.as_u16(), 406);
    assert_eq!(
        wrong.json()["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.PodList)"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn tables_carry_the_printer_columns_of_built_in_and_custom_kinds() {
    let (kube, c) = start().await;
    let pods = "/api/v1/namespaces/sb/pods";
    assert_eq!(c.json(Method::POST, pods, &pod("p")).await.status, 201);
    let t = get(&c, &format!("{pods}?includeObject=Object"), TABLE)
        .await
        .json();
    assert_eq!(t["kind"], "Table", "{t}");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(&names[..5], ["Name", "Ready", "Status", "Restarts", "Age"]);
    assert_eq!(t["rows"][0]["cells"][0], "p");
    assert_eq!(t["rows"][0]["cells"][1], "0/1");
    assert_eq!(t["rows"][0]["object"]["kind"], "Pod");
    let bare = get(&c, &format!("{pods}/p?includeObject=None"), TABLE)
        .await
        .json();
    assert!(bare["rows"][0]["object"].is_null(), "{bare}");
    let bad = get(&c, &format!("{pods}?includeObject=All"), TABLE).await;
    assert_eq!(bad.status.as_u16(), 400, "{}", bad.json());

    let mut s = sandbox("s");
    s["status"] = json!({ "conditions": [{
        "type": "Ready", "status": "False", "reason": "Pending", "message": "not yet",
        "lastTransitionTime": "2026-03-01T12:00:00Z",
    }] });
    assert_eq!(c.json(Method::POST, &sandboxes("sb"), &s).await.status, 201);
    // The status subresource drops status on create; write it through the subresource.
    let mut stored = c.get(&format!("{}/s", sandboxes("sb"))).await.json();
    stored["status"] = s["status"].clone();
    let r = c
        .json(
            Method::PUT,
            &format!("{}/s/status", sandboxes("sb")),
            &stored,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let t = get(&c, &sandboxes("sb"), TABLE).await.json();
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["Name", "Ready", "Reason", "Age"], "{t}");
    let cells = t["rows"][0]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        cells[..3],
        [json!("s"), json!("False"), json!("Pending")],
        "{t}"
    );
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    kube.shutdown().await;
}

#[tokio::test]
async fn yaml_is_offered_and_what_is_not_offered_is_406() {
    let (kube, c) = start().await;
    let pods = "/api/v1/namespaces/sb/pods";
    assert_eq!(c.json(Method::POST, pods, &pod("p")).await.status, 201);
    let y = get(&c, &format!("{pods}/p"), "application/yaml").await;
    assert_eq!(y.headers["content-type"], "application/yaml");
    assert!(
        text(&y).starts_with("apiVersion: v1\nkind: Pod\n"),
        "{}",
        text(&y)
    );
    let proto = get(
        &c,
        &format!("{pods}/p"),
        "application/vnd.kubernetes.protobuf",
    )
    .await;
    assert_eq!(proto.status.as_u16(), 406);
    assert_eq!(
        proto.json()["message"],
        "only the following media types are accepted: application/json, application/yaml"
    );
    // client-go asks for protobuf with JSON as the fallback.
    let typed = get(
        &c,
        &format!("{pods}/p"),
        "application/vnd.kubernetes.protobuf, */*",
    )
    .await;
    assert_eq!(typed.status.as_u16(), 200);
    assert_eq!(typed.headers["content-type"], "application/json");
    kube.shutdown().await;
}

#[tokio::test]
async fn watches_send_converted_objects_with_table_headers_only_first() {
    let (kube, c) = start().await;
    let pods = "/api/v1/namespaces/sb/pods";
    assert_eq!(c.json(Method::POST, pods, &pod("a")).await.status, 201);
    let mut table = c
        .send_with(
            Method::GET,
            &format!("{pods}?watch=1"),
            &[("accept", TABLE)],
            None,
            Vec::new(),
        )
        .await
        .into_body();
    let mut metadata = c
        .send_with(
            Method::GET,
            &format!("{pods}?watch=1"),
            &[("accept", METADATA)],
            None,
            Vec::new(),
        )
        .await
        .into_body();
    let (mut tb, mut mb) = (Vec::new(), Vec::new());
    let first = read_lines(&mut table, 1, &mut tb).await;
    let first_meta = read_lines(&mut metadata, 1, &mut mb).await;
    assert_eq!(c.json(Method::POST, pods, &pod("b")).await.status, 201);
    let second = read_lines(&mut table, 1, &mut tb).await;
    let second_meta = read_lines(&mut metadata, 1, &mut mb).await;
    assert_eq!(first[0]["type"], "ADDED");
    assert_eq!(first[0]["object"]["kind"], "Table");
    assert!(
        first[0]["object"]["columnDefinitions"].is_array(),
        "{}",
        first[0]
    );
    assert_eq!(second[0]["object"]["rows"][0]["cells"][0], "b");
    assert!(
        second[0]["object"]["columnDefinitions"].is_null(),
        "{}",
        second[0]
    );
    assert_eq!(first_meta[0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(second_meta[0]["object"]["metadata"]["name"], "b");
    assert!(second_meta[0]["object"].get("spec").is_none());
    kube.shutdown().await;
}
