//! kube-rs (the `kube` crate) against fakekube: paged lists, selectors, every patch type, the
//! runtime watcher and raw watches, tokens and the status subresource, each through the client a
//! Rust controller would use, so fakekube is proven against a real client and not only against
//! its own expectations.

use futures_util::{AsyncBufReadExt, Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, LogParams, ObjectList, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::Status;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Config, Resource, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fmt::Debug;
use std::time::Duration;

/// How long a test waits for one watch event before it fails.
const EVENT_WAIT: Duration = Duration::from_secs(10);

/// A server with the defaults.
async fn start() -> fakekube::FakeKube {
    fakekube::FakeKube::builder()
        .start()
        .await
        .expect("fakekube starts")
}

/// A kube client for `kube`, authenticated with its admin token.
async fn client(kube: &fakekube::FakeKube) -> Client {
    client_with_token(kube, kube.token()).await
}

/// A kube client for `kube` that sends `token`, built from the kubeconfig the server writes.
async fn client_with_token(kube: &fakekube::FakeKube, token: &str) -> Client {
    let kubeconfig =
        Kubeconfig::from_yaml(&kube.kubeconfig_with_token(token)).expect("the kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube accepts the kubeconfig");
    Client::try_from(config).expect("kube builds a client")
}

/// The Sandbox kind, described by hand as a client without discovery would.
fn sandbox_resource() -> ApiResource {
    ApiResource {
        group: "agents.x-k8s.io".into(),
        version: "v1beta1".into(),
        api_version: "agents.x-k8s.io/v1beta1".into(),
        kind: "Sandbox".into(),
        plural: "sandboxes".into(),
    }
}

/// Sandboxes in `default`.
fn sandboxes(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), "default", &sandbox_resource())
}

/// A valid Sandbox named `name` with `labels`.
fn sandbox(name: &str, labels: &[(&str, &str)]) -> DynamicObject {
    let mut obj = DynamicObject::new(name, &sandbox_resource()).data(json!({
        "spec": {
            "podTemplate": {
                "spec": { "containers": [{ "name": "main", "image": "busybox:1.36" }] }
            }
        }
    }));
    obj.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
    );
    obj
}

/// A Pod named `name` with `labels` and one container per name in `containers`.
fn pod(name: &str, labels: &[(&str, &str)], containers: &[&str]) -> Pod {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_string(), json!(v)))
        .collect();
    let containers: Vec<Value> = containers
        .iter()
        .map(|c| json!({ "name": c, "image": "busybox:1.36" }))
        .collect();
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels },
        "spec": { "containers": containers },
    }))
    .expect("a valid Pod")
}

/// A Secret named `name` with `labels`.
fn secret(name: &str, labels: &[(&str, &str)]) -> Secret {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_string(), json!(v)))
        .collect();
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels },
        "stringData": { "k": "v" },
    }))
    .expect("a valid Secret")
}

/// The Status of a request that must fail with an API error.
fn api_error<T: Debug>(result: Result<T, kube::Error>) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error carrying a Status, got {other:?}"),
    }
}

/// The resourceVersion of an object, as a number.
fn rv_of<K: Resource>(obj: &K) -> u64 {
    obj.meta()
        .resource_version
        .as_deref()
        .and_then(|s| s.parse().ok())
        .expect("a numeric resourceVersion")
}

/// The generation of an object.
fn generation_of<K: Resource>(obj: &K) -> i64 {
    obj.meta().generation.expect("a generation")
}

/// The next item of a stream, failing the test when none comes within [`EVENT_WAIT`].
async fn next_item<S: Stream + Unpin>(stream: &mut S) -> S::Item {
    tokio::time::timeout(EVENT_WAIT, stream.next())
        .await
        .expect("an event within the wait")
        .expect("the stream does not end")
}

/// Pages through `api` with `limit` per page until no continue token is left; returns every
/// page's names and remainingItemCount.
async fn page_through<K>(api: &Api<K>, lp: ListParams) -> Vec<(Vec<String>, Option<i64>)>
where
    K: Resource + Clone + Debug + serde::de::DeserializeOwned,
{
    let mut lp = lp;
    let mut pages = Vec::new();
    for _ in 0..100 {
        let page: ObjectList<K> = api.list(&lp).await.expect("a page lists");
        let names = page
            .items
            .iter()
            .map(|o| o.meta().name.clone().unwrap_or_default())
            .collect();
        pages.push((names, page.metadata.remaining_item_count));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => return pages,
        }
    }
    panic!("the list never stopped handing out continue tokens");
}

/// Every name of `pages`, checking that none is listed twice.
fn each_once(pages: &[(Vec<String>, Option<i64>)]) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for name in pages.iter().flat_map(|(names, _)| names) {
        assert!(seen.insert(name.clone()), "{name} listed twice");
    }
    seen
}

#[tokio::test]
async fn typed_pods_are_created_read_and_listed_page_by_page_each_exactly_once() {
    let kube = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client(&kube).await);
    let names = ["p1", "p2", "p3", "p4", "p5"];
    for n in names {
        let created = pods
            .create(&PostParams::default(), &pod(n, &[], &["main"]))
            .await
            .expect("create");
        assert!(created.metadata.uid.is_some(), "a created pod has a uid");
    }
    let got = pods.get("p3").await.expect("get");
    assert_eq!(got.name_any(), "p3");
    assert_eq!(got.namespace().as_deref(), Some("default"));

    let pages = page_through(&pods, ListParams::default().limit(2)).await;
    let sizes: Vec<usize> = pages.iter().map(|(n, _)| n.len()).collect();
    assert_eq!(sizes, [2, 2, 1]);
    let remaining: Vec<Option<i64>> = pages.iter().map(|(_, r)| *r).collect();
    assert_eq!(remaining, [Some(3), Some(1), None]);
    assert_eq!(
        each_once(&pages),
        names.iter().map(|n| (*n).to_string()).collect()
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn dynamic_sandboxes_are_created_read_and_listed_page_by_page_each_exactly_once() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    let names = ["s1", "s2", "s3", "s4"];
    for n in names {
        api.create(&PostParams::default(), &sandbox(n, &[]))
            .await
            .expect("create");
    }
    let got = api.get("s2").await.expect("get");
    assert_eq!(got.name_any(), "s2");
    assert_eq!(got.types.as_ref().map(|t| t.kind.as_str()), Some("Sandbox"));
    assert_eq!(
        got.data["spec"]["podTemplate"]["spec"]["containers"][0]["name"],
        "main"
    );

    let pages = page_through(&api, ListParams::default().limit(2)).await;
    let remaining: Vec<Option<i64>> = pages.iter().map(|(_, r)| *r).collect();
    assert_eq!(remaining, [Some(2), None]);
    assert_eq!(
        each_once(&pages),
        names.iter().map(|n| (*n).to_string()).collect()
    );
    kube.shutdown().await;
}

/// The first page of a two-per-page list and its continue token.
async fn first_page_token<K>(api: &Api<K>) -> String
where
    K: Resource + Clone + Debug + serde::de::DeserializeOwned,
{
    let page = api
        .list(&ListParams::default().limit(2))
        .await
        .expect("first page");
    page.metadata
        .continue_
        .filter(|t| !t.is_empty())
        .expect("a continue token")
}

/// Asserts that continuing with `token` is refused as 410 Expired.
async fn assert_expired<K>(api: &Api<K>, token: &str)
where
    K: Resource + Clone + Debug + serde::de::DeserializeOwned,
{
    let status = api_error(
        api.list(&ListParams::default().limit(2).continue_token(token))
            .await,
    );
    assert_eq!(status.code, 410);
    assert_eq!(status.reason, "Expired");
    assert!(
        status.message.contains("continue"),
        "the message speaks of the continue parameter: {}",
        status.message
    );
}

#[tokio::test]
async fn a_continue_token_from_before_compaction_and_later_writes_is_expired() {
    let kube = start().await;
    let c = client(&kube).await;
    let pods: Api<Pod> = Api::default_namespaced(c.clone());
    let sbx = sandboxes(&c);
    for n in ["a", "b", "c"] {
        pods.create(
            &PostParams::default(),
            &pod(&format!("p-{n}"), &[], &["main"]),
        )
        .await
        .expect("create pod");
        sbx.create(&PostParams::default(), &sandbox(&format!("s-{n}"), &[]))
            .await
            .expect("create sandbox");
    }
    let pod_token = first_page_token(&pods).await;
    let sandbox_token = first_page_token(&sbx).await;
    kube.compact();
    pods.create(&PostParams::default(), &pod("p-d", &[], &["main"]))
        .await
        .expect("a write after compaction");
    assert_expired(&pods, &pod_token).await;
    assert_expired(&sbx, &sandbox_token).await;
    // A fresh list still pages (the Sandbox controller's pods are listed too).
    let fresh = each_once(&page_through(&pods, ListParams::default().limit(2)).await);
    for n in ["p-a", "p-b", "p-c", "p-d"] {
        assert!(fresh.contains(n), "{n} is in a fresh paged list");
    }
    kube.shutdown().await;
}

#[tokio::test]
async fn a_continue_token_is_expired_by_compaction_even_when_nothing_was_written_since() {
    let kube = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client(&kube).await);
    for n in ["a", "b", "c"] {
        pods.create(&PostParams::default(), &pod(n, &[], &["main"]))
            .await
            .expect("create pod");
    }
    let token = first_page_token(&pods).await;
    kube.compact();
    assert_expired(&pods, &token).await;
    kube.shutdown().await;
}

#[tokio::test]
async fn label_and_field_selectors_filter_lists() {
    let kube = start().await;
    let c = client(&kube).await;
    let pods: Api<Pod> = Api::default_namespaced(c.clone());
    for (n, app) in [("x", "a"), ("y", "a"), ("z", "b")] {
        pods.create(&PostParams::default(), &pod(n, &[("app", app)], &["main"]))
            .await
            .expect("create");
    }
    let names =
        |l: ObjectList<Pod>| -> Vec<String> { l.items.iter().map(ResourceExt::name_any).collect() };
    let list = |lp: ListParams| {
        let pods = pods.clone();
        async move { pods.list(&lp).await.expect("list") }
    };
    assert_eq!(
        names(list(ListParams::default().labels("app=a")).await),
        ["x", "y"]
    );
    assert_eq!(
        names(list(ListParams::default().labels("app!=a")).await),
        ["z"]
    );
    assert_eq!(
        names(list(ListParams::default().labels("app in (b,c)")).await),
        ["z"]
    );
    assert_eq!(
        names(list(ListParams::default().fields("metadata.name=x")).await),
        ["x"]
    );
    assert_eq!(
        names(list(ListParams::default().fields("metadata.name!=x")).await),
        ["y", "z"]
    );
    assert_eq!(
        names(
            list(
                ListParams::default()
                    .labels("app=a")
                    .fields("metadata.name!=x")
            )
            .await
        ),
        ["y"]
    );
    assert_eq!(
        names(
            list(
                ListParams::default()
                    .fields("spec.serviceAccountName=default")
                    .labels("app=b")
            )
            .await
        ),
        ["z"]
    );
    // A selected list pages too, and omits remainingItemCount as the API server does.
    let pages = page_through(&pods, ListParams::default().labels("app=a").limit(1)).await;
    assert_eq!(
        pages.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        [vec!["x".to_string()], vec!["y".to_string()]]
    );
    assert!(pages.iter().all(|(_, r)| r.is_none()));

    let bad = api_error(
        pods.list(&ListParams::default().fields("spec.hostname=x"))
            .await,
    );
    assert_eq!(bad.code, 400);
    assert_eq!(bad.reason, "BadRequest");

    let sbx = sandboxes(&c);
    sbx.create(&PostParams::default(), &sandbox("s1", &[("tier", "gold")]))
        .await
        .expect("create");
    sbx.create(&PostParams::default(), &sandbox("s2", &[("tier", "tin")]))
        .await
        .expect("create");
    let gold = sbx
        .list(&ListParams::default().labels("tier=gold"))
        .await
        .expect("list");
    assert_eq!(
        gold.items
            .iter()
            .map(ResourceExt::name_any)
            .collect::<Vec<_>>(),
        ["s1"]
    );
    let by_name = sbx
        .list(&ListParams::default().fields("metadata.name=s2"))
        .await
        .expect("list");
    assert_eq!(
        by_name
            .items
            .iter()
            .map(ResourceExt::name_any)
            .collect::<Vec<_>>(),
        ["s2"]
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_merge_patch_bumps_generation_only_when_the_spec_changes() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    let created = api
        .create(&PostParams::default(), &sandbox("m", &[]))
        .await
        .expect("create");
    assert_eq!(generation_of(&created), 1);

    let labelled = api
        .patch(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "k": "v" } } })),
        )
        .await
        .expect("merge patch of labels");
    assert_eq!(labelled.labels().get("k").map(String::as_str), Some("v"));
    assert_eq!(
        generation_of(&labelled),
        1,
        "a metadata change keeps the generation"
    );
    assert!(
        rv_of(&labelled) > rv_of(&created),
        "a change moves the resourceVersion on"
    );

    let spec = Patch::Merge(json!({ "spec": { "shutdownPolicy": "Delete" } }));
    let changed = api
        .patch("m", &PatchParams::default(), &spec)
        .await
        .expect("merge patch of spec");
    assert_eq!(changed.data["spec"]["shutdownPolicy"], "Delete");
    assert_eq!(
        changed.data["spec"]["podTemplate"]["spec"]["containers"][0]["name"], "main",
        "the rest of spec stays"
    );
    assert_eq!(
        generation_of(&changed),
        2,
        "a spec change bumps the generation"
    );
    assert!(rv_of(&changed) > rv_of(&labelled));

    let again = api
        .patch("m", &PatchParams::default(), &spec)
        .await
        .expect("the same patch again");
    assert_eq!(
        generation_of(&again),
        2,
        "a patch that changes nothing keeps the generation"
    );
    assert_eq!(again.data["spec"], changed.data["spec"]);
    kube.shutdown().await;
}

#[tokio::test]
async fn patches_that_change_nothing_keep_the_resource_version() {
    // Secrets: no controller writes them, so a resourceVersion that moves is the patch's doing.
    let kube = start().await;
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    let created = secrets
        .create(&PostParams::default(), &secret("same", &[("k", "v")]))
        .await
        .expect("create");
    let merge = Patch::Merge(json!({ "metadata": { "labels": { "k": "v" } } }));
    let merged = secrets
        .patch("same", &PatchParams::default(), &merge)
        .await
        .expect("merge patch");
    assert_eq!(rv_of(&merged), rv_of(&created), "a no-op merge patch");
    let json_patch = Patch::Json::<()>(
        serde_json::from_value(json!([
            { "op": "replace", "path": "/metadata/labels/k", "value": "v" },
        ]))
        .expect("a JSON patch"),
    );
    let patched = secrets
        .patch("same", &PatchParams::default(), &json_patch)
        .await
        .expect("JSON patch");
    assert_eq!(rv_of(&patched), rv_of(&created), "a no-op JSON patch");
    let applied = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": { "name": "same", "labels": { "k": "v" } },
    });
    // The first apply records its manager in managedFields, which is a change; applying the
    // same fields again is not.
    let first = secrets
        .patch("same", &PatchParams::apply("test"), &Patch::Apply(&applied))
        .await
        .expect("apply");
    assert!(rv_of(&first) > rv_of(&created), "a new manager is recorded");
    let applied = secrets
        .patch("same", &PatchParams::apply("test"), &Patch::Apply(&applied))
        .await
        .expect("apply again");
    assert_eq!(rv_of(&applied), rv_of(&first), "a no-op apply");
    let changed = secrets
        .patch(
            "same",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "k": "w" } } })),
        )
        .await
        .expect("merge patch");
    assert!(
        rv_of(&changed) > rv_of(&created),
        "a real change moves it on"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_json_patch_applies_and_a_failing_test_op_is_an_api_error() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    let created = api
        .create(&PostParams::default(), &sandbox("j", &[("app", "a")]))
        .await
        .expect("create");

    let ok = Patch::Json::<()>(
        serde_json::from_value(json!([
            { "op": "test", "path": "/metadata/labels/app", "value": "a" },
            { "op": "replace", "path": "/metadata/labels/app", "value": "b" },
        ]))
        .expect("a JSON patch"),
    );
    let patched = api
        .patch("j", &PatchParams::default(), &ok)
        .await
        .expect("a JSON patch whose test holds");
    assert_eq!(patched.labels().get("app").map(String::as_str), Some("b"));
    assert!(rv_of(&patched) > rv_of(&created));

    let failing = Patch::Json::<()>(
        serde_json::from_value(json!([
            { "op": "test", "path": "/metadata/labels/app", "value": "a" },
            { "op": "replace", "path": "/metadata/labels/app", "value": "c" },
        ]))
        .expect("a JSON patch"),
    );
    let status = api_error(api.patch("j", &PatchParams::default(), &failing).await);
    assert_eq!(
        status.code, 422,
        "a failed test op is unprocessable: {status:?}"
    );
    assert!(!status.message.is_empty());
    let after = api.get("j").await.expect("get");
    assert_eq!(
        after.labels().get("app").map(String::as_str),
        Some("b"),
        "a failed patch changes nothing"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_strategic_merge_patch_on_a_pod_merges_containers_by_name() {
    let kube = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client(&kube).await);
    pods.create(&PostParams::default(), &pod("sm", &[], &["a", "b"]))
        .await
        .expect("create");
    let patch = Patch::Strategic(json!({
        "metadata": { "labels": { "patched": "yes" } },
        "spec": { "containers": [{ "name": "b", "image": "busybox:1.37" }] },
    }));
    let patched = pods
        .patch("sm", &PatchParams::default(), &patch)
        .await
        .expect("strategic merge patch");
    let containers = patched
        .spec
        .as_ref()
        .map(|s| s.containers.clone())
        .unwrap_or_default();
    let got: Vec<(String, Option<String>)> =
        containers.into_iter().map(|c| (c.name, c.image)).collect();
    assert_eq!(
        got,
        [
            ("a".to_string(), Some("busybox:1.36".to_string())),
            ("b".to_string(), Some("busybox:1.37".to_string()))
        ]
    );
    assert_eq!(
        patched.labels().get("patched").map(String::as_str),
        Some("yes")
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_strategic_merge_patch_on_a_sandbox_is_unsupported_media_type() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    api.create(&PostParams::default(), &sandbox("smx", &[]))
        .await
        .expect("create");
    let status = api_error(
        api.patch(
            "smx",
            &PatchParams::default(),
            &Patch::Strategic(json!({ "metadata": { "labels": { "a": "b" } } })),
        )
        .await,
    );
    assert_eq!(status.code, 415);
    assert_eq!(status.reason, "UnsupportedMediaType");
    kube.shutdown().await;
}

#[tokio::test]
async fn server_side_apply_creates_then_updates_with_generation_following_the_spec() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    let params = PatchParams::apply("test");
    let applied = |policy: &str, label: &str| {
        json!({
            "apiVersion": "agents.x-k8s.io/v1beta1",
            "kind": "Sandbox",
            "metadata": { "name": "ssa", "labels": { "l": label } },
            "spec": {
                "shutdownPolicy": policy,
                "podTemplate": { "spec": { "containers": [{ "name": "main", "image": "busybox:1.36" }] } },
            },
        })
    };
    let created = api
        .patch("ssa", &params, &Patch::Apply(applied("Retain", "1")))
        .await
        .expect("apply creates");
    assert_eq!(generation_of(&created), 1);
    assert!(created.metadata.uid.is_some());
    assert_eq!(
        api.get("ssa").await.expect("get").data["spec"]["shutdownPolicy"],
        "Retain"
    );

    let relabelled = api
        .patch("ssa", &params, &Patch::Apply(applied("Retain", "2")))
        .await
        .expect("apply labels");
    assert_eq!(relabelled.labels().get("l").map(String::as_str), Some("2"));
    assert_eq!(
        generation_of(&relabelled),
        1,
        "a label change keeps the generation"
    );
    assert_eq!(
        relabelled.metadata.uid, created.metadata.uid,
        "apply updates the same object"
    );
    assert!(rv_of(&relabelled) > rv_of(&created));

    let respecced = api
        .patch("ssa", &params, &Patch::Apply(applied("Delete", "2")))
        .await
        .expect("apply spec");
    assert_eq!(respecced.data["spec"]["shutdownPolicy"], "Delete");
    assert_eq!(
        generation_of(&respecced),
        2,
        "a spec change bumps the generation"
    );
    assert!(rv_of(&respecced) > rv_of(&relabelled));

    let same = api
        .patch("ssa", &params, &Patch::Apply(applied("Delete", "2")))
        .await
        .expect("apply again");
    assert_eq!(
        generation_of(&same),
        2,
        "applying the same object again keeps the generation"
    );
    assert_eq!(same.data["spec"], respecced.data["spec"]);
    kube.shutdown().await;
}

#[tokio::test]
async fn server_side_apply_records_managers_and_refuses_another_managers_field_unless_forced() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    let applied = |labels: Value| {
        json!({
            "apiVersion": "agents.x-k8s.io/v1beta1",
            "kind": "Sandbox",
            "metadata": { "name": "owned", "labels": labels },
            "spec": {
                "podTemplate": { "spec": { "containers": [{ "name": "main", "image": "busybox:1.36" }] } },
            },
        })
    };
    let created = api
        .patch(
            "owned",
            &PatchParams::apply("alice"),
            &Patch::Apply(applied(json!({"team": "a"}))),
        )
        .await
        .expect("alice applies");
    let entries = created.managed_fields();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].manager.as_deref(), Some("alice"));
    assert_eq!(entries[0].operation.as_deref(), Some("Apply"));
    assert_eq!(
        entries[0].api_version.as_deref(),
        Some("agents.x-k8s.io/v1beta1")
    );
    assert!(entries[0].time.is_some());
    let fields = &entries[0].fields_v1.as_ref().expect("fieldsV1").0;
    assert_eq!(fields["f:metadata"], json!({"f:labels": {"f:team": {}}}));
    assert_eq!(
        fields["f:spec"]["f:podTemplate"]["f:spec"],
        json!({"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:image": {}, "f:name": {}}}}),
        "the CRD's list-map-keys key the containers"
    );

    let status = api_error(
        api.patch(
            "owned",
            &PatchParams::apply("bob"),
            &Patch::Apply(applied(json!({"team": "b"}))),
        )
        .await,
    );
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"alice\": .metadata.labels.team"
    );
    assert_eq!(
        api.get("owned").await.expect("get").labels()["team"],
        "a",
        "the refused apply changed nothing"
    );

    let forced = api
        .patch(
            "owned",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(applied(json!({"team": "b"}))),
        )
        .await
        .expect("bob forces");
    assert_eq!(forced.labels()["team"], "b");
    let owners: Vec<(String, Value)> = forced
        .managed_fields()
        .iter()
        .map(|e| {
            let fields = e.fields_v1.as_ref().expect("fieldsV1").0.clone();
            (
                e.manager.clone().unwrap_or_default(),
                fields["f:metadata"].clone(),
            )
        })
        .collect();
    assert_eq!(
        owners,
        [
            ("alice".to_string(), Value::Null),
            ("bob".to_string(), json!({"f:labels": {"f:team": {}}})),
        ],
        "the forced label moved to bob; alice keeps the spec they share"
    );

    let mut edited = api.get("owned").await.expect("get");
    edited.labels_mut().insert("team".into(), "c".into());
    edited.metadata.managed_fields = None;
    let params = PostParams {
        field_manager: Some("editor".into()),
        ..PostParams::default()
    };
    let replaced = api
        .replace("owned", &params, &edited)
        .await
        .expect("replace");
    let editor = replaced
        .managed_fields()
        .iter()
        .find(|e| e.manager.as_deref() == Some("editor"))
        .expect("the replace is recorded");
    assert_eq!(editor.operation.as_deref(), Some("Update"));
    assert_eq!(
        editor.fields_v1.as_ref().expect("fieldsV1").0,
        json!({"f:metadata": {"f:labels": {"f:team": {}}}}),
        "the updater owns what it changed"
    );
    let status = api_error(
        api.patch(
            "owned",
            &PatchParams::apply("bob"),
            &Patch::Apply(applied(json!({"team": "b"}))),
        )
        .await,
    );
    assert_eq!(status.code, 409, "the updater now owns the label");
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"editor\" using agents.x-k8s.io/v1beta1: .metadata.labels.team"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn an_apply_to_the_status_is_recorded_under_the_status_subresource() {
    let kube = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client(&kube).await);
    pods.create(&PostParams::default(), &pod("st", &[], &["main"]))
        .await
        .expect("create");
    let applied = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "st" },
        "status": { "conditions": [{ "type": "example.com/Checked", "status": "True" }] },
    });
    let patched = pods
        .patch_status("st", &PatchParams::apply("checker"), &Patch::Apply(applied))
        .await
        .expect("apply to the status");
    let entry = patched
        .managed_fields()
        .iter()
        .find(|e| e.manager.as_deref() == Some("checker"))
        .expect("the status apply is recorded");
    assert_eq!(entry.operation.as_deref(), Some("Apply"));
    assert_eq!(entry.subresource.as_deref(), Some("status"));
    assert_eq!(
        entry.fields_v1.as_ref().expect("fieldsV1").0,
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"example.com/Checked\"}": {
            ".": {}, "f:status": {}, "f:type": {}}}}})
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_replace_with_a_stale_resource_version_is_a_conflict() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    api.create(&PostParams::default(), &sandbox("r", &[]))
        .await
        .expect("create");
    let first = api.get("r").await.expect("get");

    // The Sandbox controller writes too, so the fresh replace is a read-modify-write loop.
    let replaced = read_modify_replace(&api, "r", |o| {
        o.labels_mut().insert("round".into(), "1".into());
    })
    .await;
    assert!(rv_of(&replaced) > rv_of(&first));
    assert_eq!(generation_of(&replaced), 1);

    let mut stale = first.clone();
    stale.labels_mut().insert("round".into(), "2".into());
    let status = api_error(api.replace("r", &PostParams::default(), &stale).await);
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on sandboxes.agents.x-k8s.io \"r\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let now = api.get("r").await.expect("get");
    assert_eq!(
        now.labels().get("round").map(String::as_str),
        Some("1"),
        "the stale write was not stored"
    );
    kube.shutdown().await;
}

/// Gets `name`, changes it with `change` and replaces it, again while the replace conflicts
/// with another writer (the Sandbox controller).
async fn read_modify_replace(
    api: &Api<DynamicObject>,
    name: &str,
    change: impl Fn(&mut DynamicObject),
) -> DynamicObject {
    for _ in 0..20 {
        let mut obj = api.get(name).await.expect("get");
        change(&mut obj);
        match api.replace(name, &PostParams::default(), &obj).await {
            Ok(done) => return done,
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => panic!("replace: {e}"),
        }
    }
    panic!("20 conflicts in a row replacing {name}");
}

/// A watcher event reduced to its variant and object name, for comparing sequences.
fn describe<K: Resource>(event: &watcher::Event<K>) -> String {
    let name = |o: &K| o.meta().name.clone().unwrap_or_default();
    match event {
        watcher::Event::Init => "Init".into(),
        watcher::Event::InitApply(o) => format!("InitApply {}", name(o)),
        watcher::Event::InitDone => "InitDone".into(),
        watcher::Event::Apply(o) => format!("Apply {}", name(o)),
        watcher::Event::Delete(o) => format!("Delete {}", name(o)),
    }
}

/// The next `n` watcher events, described.
async fn next_events<S, K>(stream: &mut S, n: usize) -> Vec<String>
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
    K: Resource,
{
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(describe(
            &next_item(stream)
                .await
                .expect("a watcher event, not an error"),
        ));
    }
    out
}

/// Runs a watcher with `config` over secrets labelled `test=w`, with three made before it
/// starts, and checks it sees them at init, then a create, a change and a delete as they happen.
async fn watcher_sees_init_then_changes(config: watcher::Config) {
    let kube = fakekube::FakeKube::builder()
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .expect("fakekube starts");
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    for n in ["a", "b", "c"] {
        secrets
            .create(&PostParams::default(), &secret(n, &[("test", "w")]))
            .await
            .expect("create");
    }
    secrets
        .create(&PostParams::default(), &secret("other", &[("test", "no")]))
        .await
        .expect("create");
    let mut stream = watcher(secrets.clone(), config.labels("test=w")).boxed();
    assert_eq!(
        next_events(&mut stream, 5).await,
        [
            "Init",
            "InitApply a",
            "InitApply b",
            "InitApply c",
            "InitDone"
        ]
    );

    secrets
        .create(&PostParams::default(), &secret("d", &[("test", "w")]))
        .await
        .expect("create");
    secrets
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "round": "2" } } })),
        )
        .await
        .expect("patch");
    secrets
        .create(
            &PostParams::default(),
            &secret("ignored", &[("test", "no")]),
        )
        .await
        .expect("create");
    secrets
        .delete("d", &DeleteParams::default())
        .await
        .expect("delete");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let event = next_item(&mut stream).await.expect("a watcher event");
        if let watcher::Event::Apply(s) = &event
            && seen.len() == 1
        {
            assert_eq!(
                s.labels().get("round").map(String::as_str),
                Some("2"),
                "the second Apply carries the change"
            );
        }
        seen.push(describe(&event));
    }
    assert_eq!(seen, ["Apply d", "Apply d", "Delete d"]);
    kube.shutdown().await;
}

#[tokio::test]
async fn the_watcher_sees_init_events_then_applies_and_deletes() {
    watcher_sees_init_then_changes(watcher::Config::default()).await;
}

#[tokio::test]
async fn the_watcher_with_one_object_per_page_sees_the_whole_initial_list() {
    watcher_sees_init_then_changes(watcher::Config::default().page_size(1)).await;
}

#[tokio::test]
async fn the_watcher_without_bookmarks_sees_init_events_then_applies_and_deletes() {
    watcher_sees_init_then_changes(watcher::Config::default().disable_bookmarks()).await;
}

#[tokio::test]
async fn the_watcher_with_streaming_lists_ends_init_on_the_initial_events_bookmark() {
    watcher_sees_init_then_changes(watcher::Config::default().streaming_lists()).await;
}

#[tokio::test]
async fn a_reflector_store_follows_the_server() {
    let kube = start().await;
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    secrets
        .create(&PostParams::default(), &secret("before", &[]))
        .await
        .expect("create");
    let (reader, writer) = reflector::store::<Secret>();
    let stream = reflector::reflector(writer, watcher(secrets.clone(), watcher::Config::default()))
        .applied_objects();
    let drain = tokio::spawn(stream.for_each(|_| async {}));
    tokio::time::timeout(EVENT_WAIT, reader.wait_until_ready())
        .await
        .expect("ready in time")
        .expect("ready");
    assert!(
        reader
            .get(&ObjectRef::new("before").within("default"))
            .is_some()
    );

    secrets
        .create(&PostParams::default(), &secret("after", &[]))
        .await
        .expect("create");
    secrets
        .delete("before", &DeleteParams::default())
        .await
        .expect("delete");
    let deadline = tokio::time::Instant::now() + EVENT_WAIT;
    loop {
        let mut names: Vec<String> = reader.state().iter().map(|s| s.name_any()).collect();
        names.sort();
        if names == ["after"] {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the store still holds {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drain.abort();
    kube.shutdown().await;
}

/// The next watch event that is not a bookmark.
async fn next_change<S, K>(stream: &mut S) -> WatchEvent<K>
where
    S: Stream<Item = Result<WatchEvent<K>, kube::Error>> + Unpin,
{
    loop {
        match next_item(stream)
            .await
            .expect("a watch event, not a client error")
        {
            WatchEvent::Bookmark(_) => continue,
            other => return other,
        }
    }
}

/// A raw watch event reduced to its type and object name.
fn describe_raw<K: Resource>(event: &WatchEvent<K>) -> String {
    let name = |o: &K| o.meta().name.clone().unwrap_or_default();
    match event {
        WatchEvent::Added(o) => format!("ADDED {}", name(o)),
        WatchEvent::Modified(o) => format!("MODIFIED {}", name(o)),
        WatchEvent::Deleted(o) => format!("DELETED {}", name(o)),
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(s) => format!("ERROR {} {}", s.code, s.reason),
    }
}

#[tokio::test]
async fn a_raw_watch_with_a_label_selector_sees_an_object_that_stops_matching_as_deleted() {
    let kube = start().await;
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    secrets
        .create(&PostParams::default(), &secret("s", &[("app", "a")]))
        .await
        .expect("create");
    secrets
        .create(&PostParams::default(), &secret("t", &[("app", "b")]))
        .await
        .expect("create");
    let mut stream = secrets
        .watch(&WatchParams::default().labels("app=a"), "0")
        .await
        .expect("watch")
        .boxed();
    assert_eq!(describe_raw(&next_change(&mut stream).await), "ADDED s");

    let relabel = |app: &str| Patch::Merge(json!({ "metadata": { "labels": { "app": app } } }));
    secrets
        .patch("s", &PatchParams::default(), &relabel("b"))
        .await
        .expect("patch");
    let left = next_change(&mut stream).await;
    assert_eq!(describe_raw(&left), "DELETED s");
    if let WatchEvent::Deleted(s) = &left {
        assert_eq!(
            s.labels().get("app").map(String::as_str),
            Some("b"),
            "the DELETED object is its new state"
        );
    }
    secrets
        .patch("t", &PatchParams::default(), &relabel("a"))
        .await
        .expect("patch");
    assert_eq!(describe_raw(&next_change(&mut stream).await), "ADDED t");
    secrets
        .patch(
            "t",
            &PatchParams::default(),
            &Patch::Merge(json!({ "stringData": { "k": "w" } })),
        )
        .await
        .expect("patch");
    assert_eq!(describe_raw(&next_change(&mut stream).await), "MODIFIED t");
    secrets
        .delete("s", &DeleteParams::default())
        .await
        .expect("delete");
    secrets
        .delete("t", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(
        describe_raw(&next_change(&mut stream).await),
        "DELETED t",
        "s, deleted off-selector, is not seen"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_raw_watch_with_bookmarks_gets_bookmarks_at_the_latest_resource_version() {
    let kube = fakekube::FakeKube::builder()
        .bookmark_interval(Duration::from_millis(100))
        .start()
        .await
        .expect("fakekube starts");
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    let made = secrets
        .create(&PostParams::default(), &secret("b", &[]))
        .await
        .expect("create");
    let from = made.resource_version().expect("a resourceVersion");
    let mut stream = secrets
        .watch(&WatchParams::default(), &from)
        .await
        .expect("watch")
        .boxed();
    match next_item(&mut stream).await.expect("a watch event") {
        WatchEvent::Bookmark(b) => assert_eq!(b.metadata.resource_version, from),
        other => panic!("expected a bookmark, got {}", describe_raw(&other)),
    }
    let changed = secrets
        .patch(
            "b",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "x": "y" } } })),
        )
        .await
        .expect("patch");
    assert_eq!(describe_raw(&next_change(&mut stream).await), "MODIFIED b");
    loop {
        if let WatchEvent::Bookmark(b) = next_item(&mut stream).await.expect("a watch event") {
            let at: u64 = b
                .metadata
                .resource_version
                .parse()
                .expect("a numeric bookmark resourceVersion");
            assert!(
                at >= rv_of(&changed),
                "a later bookmark is at or after the change"
            );
            break;
        }
    }
    kube.shutdown().await;
}

#[tokio::test]
async fn a_raw_watch_from_before_the_event_log_gets_a_410_error_event() {
    let kube = fakekube::FakeKube::builder()
        .event_log_capacity(2)
        .start()
        .await
        .expect("fakekube starts");
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    let first = secrets
        .create(&PostParams::default(), &secret("old", &[]))
        .await
        .expect("create");
    for i in 0..5 {
        secrets
            .create(&PostParams::default(), &secret(&format!("n{i}"), &[]))
            .await
            .expect("create");
    }
    let from = first.resource_version().expect("a resourceVersion");
    let mut stream = secrets
        .watch(&WatchParams::default(), &from)
        .await
        .expect("the watch opens")
        .boxed();
    match next_item(&mut stream).await.expect("a watch event") {
        WatchEvent::Error(status) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
            assert!(
                status.message.starts_with("too old resource version"),
                "{}",
                status.message
            );
        }
        other => panic!("expected a 410 ERROR event, got {}", describe_raw(&other)),
    }
    // A watch from the current position still works.
    let now = kube.resource_version().to_string();
    let mut fresh = secrets
        .watch(&WatchParams::default(), &now)
        .await
        .expect("watch")
        .boxed();
    secrets
        .create(&PostParams::default(), &secret("new", &[]))
        .await
        .expect("create");
    assert_eq!(describe_raw(&next_change(&mut fresh).await), "ADDED new");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_revoked_or_expired_token_gets_401() {
    let kube = start().await;
    kube.add_token(fakekube::Token::new("bob-secret", "bob"));
    kube.add_token(fakekube::Token::new("carol-secret", "carol"));
    let bob: Api<Pod> = Api::default_namespaced(client_with_token(&kube, "bob-secret").await);
    let carol: Api<Pod> = Api::default_namespaced(client_with_token(&kube, "carol-secret").await);
    bob.list(&ListParams::default())
        .await
        .expect("bob may list before revocation");
    carol
        .list(&ListParams::default())
        .await
        .expect("carol may list before expiry");

    assert!(kube.revoke_token("bob-secret"));
    let status = api_error(bob.list(&ListParams::default()).await);
    assert_eq!(status.code, 401);
    assert_eq!(status.reason, "Unauthorized");
    assert_eq!(status.message, "Unauthorized");

    let past = std::time::SystemTime::now() - Duration::from_secs(1);
    assert!(kube.set_token_expiry("carol-secret", Some(past)));
    assert_eq!(
        api_error(carol.list(&ListParams::default()).await).code,
        401
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_token_limited_to_reading_pods_may_list_but_gets_403_on_create() {
    let kube = start().await;
    kube.add_token(
        fakekube::Token::new("alice-pod-reader-token", "alice")
            .with_rules(vec![fakekube::Rule::new([""], ["pods"], ["get", "list"])]),
    );
    let admin: Api<Pod> = Api::default_namespaced(client(&kube).await);
    admin
        .create(&PostParams::default(), &pod("seen", &[], &["main"]))
        .await
        .expect("admin creates");

    let c = client_with_token(&kube, "alice-pod-reader-token").await;
    let pods: Api<Pod> = Api::default_namespaced(c.clone());
    let listed = pods
        .list(&ListParams::default())
        .await
        .expect("alice may list pods");
    assert_eq!(
        listed
            .items
            .iter()
            .map(ResourceExt::name_any)
            .collect::<Vec<_>>(),
        ["seen"]
    );
    pods.get("seen").await.expect("alice may get a pod");

    let status = api_error(
        pods.create(&PostParams::default(), &pod("mine", &[], &["main"]))
            .await,
    );
    assert_eq!(status.code, 403);
    assert_eq!(status.reason, "Forbidden");
    assert_eq!(
        status.message,
        "pods is forbidden: User \"alice\" cannot create resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(
        status.details.as_ref().map(|d| d.kind.as_str()),
        Some("pods")
    );

    let status = api_error(pods.delete("seen", &DeleteParams::default()).await);
    assert_eq!(
        status.message,
        "pods \"seen\" is forbidden: User \"alice\" cannot delete resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    let status = api_error(sandboxes(&c).list(&ListParams::default()).await);
    assert_eq!(
        status.message,
        "sandboxes.agents.x-k8s.io is forbidden: User \"alice\" cannot list resource \"sandboxes\" in API group \"agents.x-k8s.io\" in the namespace \"default\""
    );
    kube.shutdown().await;
}

/// A Sandbox status with one Ready condition.
fn ready_status(reason: &str) -> Value {
    json!({
        "service": "st",
        "serviceFQDN": "st.default.svc.cluster.local",
        "conditions": [{
            "type": "Ready",
            "status": "True",
            "reason": reason,
            "message": "set by the test",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 1,
        }],
    })
}

#[tokio::test]
async fn replace_status_changes_the_status_and_not_the_spec() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    let created = api
        .create(&PostParams::default(), &sandbox("st", &[]))
        .await
        .expect("create");
    let spec_before = created.data["spec"].clone();

    // The Sandbox controller writes status too: retry on its conflicts as a controller would.
    let mut replaced = None;
    for _ in 0..20 {
        let mut body = api.get_status("st").await.expect("get_status");
        body.data["status"] = ready_status("ByReplace");
        body.data["spec"]["shutdownPolicy"] = json!("Delete");
        match api
            .replace_status("st", &PostParams::default(), &body)
            .await
        {
            Ok(done) => {
                replaced = Some(done);
                break;
            }
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => panic!("replace_status: {e}"),
        }
    }
    let replaced = replaced.expect("replace_status succeeds within 20 tries");
    assert_eq!(
        replaced.data["status"]["conditions"][0]["reason"],
        "ByReplace"
    );
    assert_eq!(
        replaced.data["spec"], spec_before,
        "a status write leaves spec alone"
    );
    assert_eq!(generation_of(&replaced), 1);
    assert!(rv_of(&replaced) > rv_of(&created));
    assert_eq!(
        replaced.data["status"]["serviceFQDN"],
        "st.default.svc.cluster.local"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn patch_status_changes_the_status_and_a_main_patch_does_not() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    let created = api
        .create(&PostParams::default(), &sandbox("st", &[]))
        .await
        .expect("create");
    let spec_before = created.data["spec"].clone();

    let status_patch = Patch::Merge(json!({
        "status": ready_status("ByPatch"),
        "spec": { "shutdownPolicy": "Delete" },
    }));
    let patched = api
        .patch_status("st", &PatchParams::default(), &status_patch)
        .await
        .expect("patch_status");
    assert_eq!(patched.data["status"]["conditions"][0]["reason"], "ByPatch");
    assert_eq!(
        patched.data["spec"], spec_before,
        "a status patch leaves spec alone"
    );
    assert_eq!(generation_of(&patched), 1);

    let main_patch = Patch::Merge(json!({
        "status": { "serviceFQDN": "elsewhere" },
        "spec": { "shutdownPolicy": "Delete" },
    }));
    let main = api
        .patch("st", &PatchParams::default(), &main_patch)
        .await
        .expect("main patch");
    assert_eq!(
        main.data["spec"]["shutdownPolicy"], "Delete",
        "a main patch changes spec"
    );
    assert_ne!(
        main.data["status"]["serviceFQDN"], "elsewhere",
        "a main patch leaves status alone"
    );
    assert!(main.data["status"].is_object(), "the status is kept");
    assert_eq!(generation_of(&main), 2);
    kube.shutdown().await;
}

#[tokio::test]
async fn the_watcher_relists_after_a_410_in_the_middle_of_its_watch() {
    let kube = fakekube::FakeKube::builder()
        .event_log_capacity(1)
        .start()
        .await
        .expect("fakekube starts");
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    for n in ["a", "b", "c"] {
        secrets
            .create(&PostParams::default(), &secret(n, &[("test", "w")]))
            .await
            .expect("create");
    }
    let mut stream = watcher(secrets.clone(), watcher::Config::default().labels("test=w")).boxed();
    assert_eq!(
        next_events(&mut stream, 5).await,
        [
            "Init",
            "InitApply a",
            "InitApply b",
            "InitApply c",
            "InitDone"
        ]
    );
    // Three deletes in one store transaction: the one-event log keeps only the last, so the
    // watch's position falls out of it.
    secrets
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("test=w,x notin (y)"),
        )
        .await
        .expect("delete collection");
    match next_item(&mut stream).await {
        Err(watcher::Error::WatchError(status)) => assert_eq!(status.code, 410),
        Err(other) => panic!("expected a 410 watch error, got {other:?}"),
        Ok(event) => panic!("expected a 410 watch error, got {}", describe(&event)),
    }
    assert_eq!(
        next_events(&mut stream, 2).await,
        ["Init", "InitDone"],
        "the re-list finds nothing left"
    );
    secrets
        .create(&PostParams::default(), &secret("d", &[("test", "w")]))
        .await
        .expect("create");
    assert_eq!(
        next_events(&mut stream, 1).await,
        ["Apply d"],
        "the watch goes on after the re-list"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn the_watcher_rewatches_without_a_relist_when_the_server_ends_a_watch_on_its_timeout() {
    let kube = fakekube::FakeKube::builder()
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .expect("fakekube starts");
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    secrets
        .create(&PostParams::default(), &secret("a", &[]))
        .await
        .expect("create");
    let mut stream = watcher(secrets.clone(), watcher::Config::default().timeout(1)).boxed();
    assert_eq!(
        next_events(&mut stream, 3).await,
        ["Init", "InitApply a", "InitDone"]
    );
    // Outlive one server-side watch timeout, then change things.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    secrets
        .create(&PostParams::default(), &secret("b", &[]))
        .await
        .expect("create");
    secrets
        .delete("a", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(next_events(&mut stream, 2).await, ["Apply b", "Delete a"]);
    kube.shutdown().await;
}

#[tokio::test]
async fn a_raw_watch_with_a_field_selector_sees_only_the_named_object() {
    let kube = start().await;
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    let made = secrets
        .create(&PostParams::default(), &secret("other", &[]))
        .await
        .expect("create");
    let from = made.resource_version().expect("a resourceVersion");
    let mut stream = secrets
        .watch(
            &WatchParams::default().fields("metadata.name=target"),
            &from,
        )
        .await
        .expect("watch")
        .boxed();
    secrets
        .create(&PostParams::default(), &secret("noise", &[]))
        .await
        .expect("create");
    secrets
        .create(&PostParams::default(), &secret("target", &[]))
        .await
        .expect("create");
    secrets
        .delete("other", &DeleteParams::default())
        .await
        .expect("delete");
    secrets
        .delete("target", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(
        describe_raw(&next_change(&mut stream).await),
        "ADDED target"
    );
    assert_eq!(
        describe_raw(&next_change(&mut stream).await),
        "DELETED target"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn kube_discovery_finds_the_sandbox_kind_and_its_status_subresource() {
    let kube = start().await;
    let c = client(&kube).await;
    let gvk = kube::api::GroupVersionKind::gvk("agents.x-k8s.io", "v1beta1", "Sandbox");
    let discovery = kube::discovery::Discovery::new(c.clone())
        .run()
        .await
        .expect("discovery runs");
    let (ar, caps) = discovery.resolve_gvk(&gvk).expect("Sandbox is discovered");
    assert_eq!(ar, sandbox_resource());
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    assert!(caps.supports_operation(kube::discovery::verbs::WATCH));
    assert!(
        caps.subresources
            .iter()
            .any(|(sub, _)| sub.plural == "status")
    );
    let pods = discovery
        .resolve_gvk(&kube::api::GroupVersionKind::gvk("", "v1", "Pod"))
        .expect("Pod is discovered");
    assert_eq!(pods.0.plural, "pods");

    let (pinned, _) = kube::discovery::pinned_kind(&c, &gvk)
        .await
        .expect("pinned_kind");
    assert_eq!(pinned, sandbox_resource());
    kube.shutdown().await;
}

#[tokio::test]

async fn kube_aggregated_discovery_finds_the_sandbox_kind() {
    let kube = start().await;
    let discovery = kube::discovery::Discovery::new(client(&kube).await)
        .run_aggregated()
        .await
        .expect("discovery runs");
    let gvk = kube::api::GroupVersionKind::gvk("agents.x-k8s.io", "v1beta1", "Sandbox");
    assert!(
        discovery.resolve_gvk(&gvk).is_some(),
        "Sandbox is discovered"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn missing_and_duplicate_objects_answer_404_and_409_as_kube_expects() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    assert!(
        api.get_opt("nope").await.expect("get_opt").is_none(),
        "get_opt turns a 404 into None"
    );
    let missing = api_error(api.get("nope").await);
    assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));
    assert_eq!(
        missing.message,
        "sandboxes.agents.x-k8s.io \"nope\" not found"
    );

    api.create(&PostParams::default(), &sandbox("dup", &[]))
        .await
        .expect("create");
    let dup = api_error(
        api.create(&PostParams::default(), &sandbox("dup", &[]))
            .await,
    );
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(
        dup.message,
        "sandboxes.agents.x-k8s.io \"dup\" already exists"
    );

    let dry = api
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &sandbox("dry", &[]),
        )
        .await
        .expect("a dry-run create");
    assert_eq!(dry.name_any(), "dry");
    assert!(
        api.get_opt("dry").await.expect("get_opt").is_none(),
        "a dry-run create stores nothing"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_finalizer_holds_a_deleted_object_until_a_patch_removes_it() {
    let kube = start().await;
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    let mut held = secret("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    secrets
        .create(&PostParams::default(), &held)
        .await
        .expect("create");
    let mut stream = watcher(secrets.clone(), watcher::Config::default()).boxed();
    assert_eq!(
        next_events(&mut stream, 3).await,
        ["Init", "InitApply held", "InitDone"]
    );

    let deleted = secrets
        .delete("held", &DeleteParams::default())
        .await
        .expect("delete");
    let marked = deleted
        .left()
        .expect("a finalized object comes back, not a Status");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert!(
        secrets.get_opt("held").await.expect("get_opt").is_some(),
        "the finalizer holds it"
    );
    assert_eq!(
        next_events(&mut stream, 1).await,
        ["Apply held"],
        "marking is a change"
    );

    secrets
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "finalizers": null } })),
        )
        .await
        .expect("remove the finalizer");
    assert!(
        secrets.get_opt("held").await.expect("get_opt").is_none(),
        "gone once the finalizer is"
    );
    assert_eq!(next_events(&mut stream, 1).await, ["Delete held"]);
    kube.shutdown().await;
}

#[tokio::test]
async fn metadata_lists_and_cluster_wide_pages_work_through_kube() {
    let kube = fakekube::FakeKube::builder()
        .namespace("other")
        .start()
        .await
        .expect("fakekube starts");
    let c = client(&kube).await;
    for ns in ["default", "other"] {
        let pods: Api<Pod> = Api::namespaced(c.clone(), ns);
        for n in ["m", "n"] {
            pods.create(&PostParams::default(), &pod(n, &[], &["main"]))
                .await
                .expect("create");
        }
    }
    let all: Api<Pod> = Api::all(c.clone());
    let pages = page_through(&all, ListParams::default().limit(3)).await;
    let per_page: Vec<Vec<String>> = pages.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(per_page, [vec!["m", "n", "m"], vec!["n"]]);
    assert_eq!(pages[0].1, Some(1));

    let meta = Api::<Pod>::namespaced(c.clone(), "other")
        .list_metadata(&ListParams::default())
        .await
        .expect("list_metadata");
    let names: Vec<String> = meta.items.iter().map(ResourceExt::name_any).collect();
    assert_eq!(names, ["m", "n"]);
    let one = Api::<Pod>::namespaced(c, "other")
        .get_metadata("n")
        .await
        .expect("get_metadata");
    assert_eq!(one.metadata.namespace.as_deref(), Some("other"));
    kube.shutdown().await;
}

#[tokio::test]
async fn pod_logs_are_read_and_streamed_through_kube() {
    let kube = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client(&kube).await);
    let mut talker = pod("talker", &[], &["main"]);
    if let Some(spec) = talker.spec.as_mut() {
        spec.restart_policy = Some("Never".into());
        spec.containers[0].command = Some(vec![
            "sh".into(),
            "-c".into(),
            "echo one; echo two; echo three".into(),
        ]);
    }
    pods.create(&PostParams::default(), &talker)
        .await
        .expect("create");
    kube.wait_for("pods", "default", "talker", EVENT_WAIT, |p| {
        p.is_some_and(|p| p["status"]["phase"] == "Succeeded")
    })
    .await
    .expect("the pod completes");
    let all = pods
        .logs("talker", &LogParams::default())
        .await
        .expect("logs");
    assert_eq!(all, "one\ntwo\nthree\n");
    let tail = pods
        .logs(
            "talker",
            &LogParams {
                tail_lines: Some(2),
                container: Some("main".into()),
                ..LogParams::default()
            },
        )
        .await
        .expect("logs with tailLines");
    assert_eq!(tail, "two\nthree\n");
    let lines: Vec<String> = pods
        .log_stream(
            "talker",
            &LogParams {
                follow: true,
                ..LogParams::default()
            },
        )
        .await
        .expect("log_stream")
        .lines()
        .try_collect()
        .await
        .expect("the stream ends with the finished container");
    assert_eq!(lines, ["one", "two", "three"]);
    let status = api_error(
        pods.logs(
            "talker",
            &LogParams {
                container: Some("nope".into()),
                ..LogParams::default()
            },
        )
        .await,
    );
    assert_eq!(status.code, 400);
    assert_eq!(status.message, "container nope is not valid for pod talker");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_metadata_watcher_sees_partial_objects_of_pods() {
    let kube = start().await;
    let c = client(&kube).await;
    let pods: Api<Pod> = Api::default_namespaced(c.clone());
    pods.create(
        &PostParams::default(),
        &pod("before", &[("app", "x")], &["main"]),
    )
    .await
    .expect("create");
    // kube asks for PartialObjectMetadata whenever the Api is of PartialObjectMeta.
    let metadata: Api<kube::core::PartialObjectMeta<Pod>> = Api::default_namespaced(c);
    let mut stream =
        std::pin::pin!(watcher(metadata, watcher::Config::default()).applied_objects());
    let first = tokio::time::timeout(EVENT_WAIT, stream.next())
        .await
        .expect("an event in time")
        .expect("the stream goes on")
        .expect("no watch error");
    assert_eq!(first.name_any(), "before");
    assert_eq!(first.labels().get("app").map(String::as_str), Some("x"));
    assert_eq!(
        first.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    pods.create(&PostParams::default(), &pod("after", &[], &["main"]))
        .await
        .expect("create");
    let names = tokio::time::timeout(EVENT_WAIT, async {
        loop {
            let next = stream
                .next()
                .await
                .expect("the stream goes on")
                .expect("no watch error");
            if next.name_any() == "after" {
                return next;
            }
        }
    })
    .await
    .expect("the new pod is seen");
    assert_eq!(names.metadata.namespace.as_deref(), Some("default"));
    kube.shutdown().await;
}

#[tokio::test]
async fn the_entry_api_creates_then_updates_an_object() {
    let kube = start().await;
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    let mut entry = secrets
        .entry("ent")
        .await
        .expect("entry")
        .or_insert(|| secret("ent", &[]));
    entry
        .get_mut()
        .labels_mut()
        .insert("round".into(), "1".into());
    entry
        .commit(&PostParams::default())
        .await
        .expect("commit creates");
    let created = secrets.get("ent").await.expect("get");
    assert_eq!(created.labels().get("round").map(String::as_str), Some("1"));

    let entry = secrets.entry("ent").await.expect("entry").and_modify(|s| {
        s.labels_mut().insert("round".into(), "2".into());
    });
    let kube::api::entry::Entry::Occupied(mut occupied) = entry else {
        panic!("the entry exists")
    };
    occupied
        .commit(&PostParams::default())
        .await
        .expect("commit replaces");
    let updated = secrets.get("ent").await.expect("get");
    assert_eq!(updated.labels().get("round").map(String::as_str), Some("2"));
    assert!(rv_of(&updated) > rv_of(&created));
    kube.shutdown().await;
}

#[tokio::test]

async fn a_replace_of_a_core_object_without_a_resource_version_is_unconditional() {
    let kube = start().await;
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    secrets
        .create(&PostParams::default(), &secret("u", &[]))
        .await
        .expect("create");
    let replaced = secrets
        .replace("u", &PostParams::default(), &secret("u", &[("a", "b")]))
        .await
        .expect("an unconditional replace");
    assert_eq!(replaced.labels().get("a").map(String::as_str), Some("b"));
    kube.shutdown().await;
}

#[tokio::test]
async fn a_replace_of_a_sandbox_without_a_resource_version_is_invalid() {
    let kube = start().await;
    let api = sandboxes(&client(&kube).await);
    api.create(&PostParams::default(), &sandbox("u", &[]))
        .await
        .expect("create");
    let status = api_error(
        api.replace("u", &PostParams::default(), &sandbox("u", &[("a", "b")]))
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status.message.contains("metadata.resourceVersion"),
        "{}",
        status.message
    );
    assert!(
        status.message.contains("must be specified for an update"),
        "{}",
        status.message
    );
    kube.shutdown().await;
}

#[tokio::test]

async fn a_raw_watch_gets_bookmarks_while_other_kinds_keep_changing() {
    let kube = fakekube::FakeKube::builder()
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .expect("fakekube starts");
    let c = client(&kube).await;
    let secrets: Api<Secret> = Api::default_namespaced(c.clone());
    let made = secrets
        .create(&PostParams::default(), &secret("quiet", &[]))
        .await
        .expect("create");
    let from = made.resource_version().expect("a resourceVersion");
    let mut stream = secrets
        .watch(&WatchParams::default(), &from)
        .await
        .expect("watch")
        .boxed();
    // Pods change every 50 ms, more often than the bookmark interval; the secrets watch has no
    // events of its own but must still get bookmarks.
    let pods: Api<Pod> = Api::default_namespaced(c);
    pods.create(&PostParams::default(), &pod("busy", &[], &["main"]))
        .await
        .expect("create");
    let churn = tokio::spawn(async move {
        for i in 0..200u32 {
            let patch = Patch::Merge(json!({ "metadata": { "labels": { "i": i.to_string() } } }));
            if pods
                .patch("busy", &PatchParams::default(), &patch)
                .await
                .is_err()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let first = tokio::time::timeout(Duration::from_secs(3), stream.next()).await;
    churn.abort();
    match first {
        Ok(Some(Ok(WatchEvent::Bookmark(_)))) => {}
        Ok(other) => panic!(
            "expected a bookmark, got {:?}",
            other.map(|r| r.map(|e| describe_raw(&e)))
        ),
        Err(_) => panic!("no bookmark within 3 s while another kind kept changing"),
    }
    kube.shutdown().await;
}
