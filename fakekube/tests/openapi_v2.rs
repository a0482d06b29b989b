//! `/openapi/v2` over a real socket: the Swagger 2.0 document in JSON and in gnostic's
//! protobuf, its ETag, and 406 for what it is not served in. kubectl 1.27 and 1.28 reading it
//! are in `tests/machinery_kubectl.rs`.

mod support;

use fakekube::FakeKube;
use http::{Method, StatusCode};
use support::{Client, Reply};

const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

async fn start() -> (FakeKube, Client) {
    support::start(FakeKube::builder().controllers(false).kubelet(false)).await
}

async fn get(c: &Client, headers: &[(&str, &str)]) -> Reply {
    c.call_with(Method::GET, "/openapi/v2", headers, None, Vec::new())
        .await
}

#[tokio::test]
async fn the_json_document_describes_built_in_and_custom_kinds_with_their_operations() {
    let (kube, c) = start().await;
    let r = get(&c, &[("accept", "application/json")]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["content-type"], "application/json");
    let doc = r.json();
    assert_eq!(doc["swagger"], "2.0");
    assert_eq!(
        doc["definitions"]["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"][0]["kind"],
        "Pod"
    );
    let sandbox = &doc["definitions"]["io.x-k8s.agents.v1beta1.Sandbox"];
    assert_eq!(
        sandbox["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(
        sandbox["properties"]["spec"]["properties"]["podTemplate"].is_object(),
        "{sandbox}"
    );
    let patch = &doc["paths"]["/apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes/{name}"]
        ["patch"];
    assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Sandbox");
    kube.shutdown().await;
}

#[tokio::test]
async fn the_protobuf_document_is_served_with_an_etag_and_304_for_a_cached_copy() {
    let (kube, c) = start().await;
    let r = get(&c, &[("accept", PROTOBUF)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.headers["content-type"],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    // Field 1 (swagger), a string of 3 bytes: "2.0".
    assert_eq!(&r.body[..5], b"\x0a\x032.0");
    let tag = r.headers["etag"].to_str().unwrap_or_default().to_string();
    assert!(tag.starts_with('"'), "{tag}");
    let again = get(&c, &[("accept", PROTOBUF), ("if-none-match", &tag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    let json = get(
        &c,
        &[("accept", "application/json"), ("if-none-match", &tag)],
    )
    .await;
    assert_eq!(
        json.status,
        StatusCode::OK,
        "the JSON document has its own ETag"
    );
    assert_eq!(
        get(&c, &[("accept", "text/html")]).await.status,
        StatusCode::NOT_ACCEPTABLE
    );
    kube.shutdown().await;
}
