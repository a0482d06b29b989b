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
const EVENT_WAIT: Duration = Duration::from_secs(60);

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

/// Runs `attempt` (a read, a change and a write) again while its write is refused with 409
/// Conflict because another writer (a controller) changed the object since the read, as a
/// client of a cluster does (client-go's `retry.RetryOnConflict`); returns what the first
/// write that does not conflict returned, and panics on another error or after a minute of
/// conflicts.
async fn retry_on_conflict<T>(
    what: &str,
    mut attempt: impl AsyncFnMut() -> Result<T, kube::Error>,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match attempt().await {
            Ok(done) => return done,
            Err(kube::Error::Api(s)) if s.code == 409 && tokio::time::Instant::now() < deadline => {
            }
            Err(e) => panic!("{what}: {e}"),
        }
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

/// A bookmark's resourceVersion, as a number (fakekube's are).
fn bookmark_rv(bookmark: &kube::core::watch::Bookmark) -> u64 {
    bookmark
        .metadata
        .resource_version
        .parse()
        .expect("a numeric bookmark resourceVersion")
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

mod lists;
mod objects;
mod patches;
mod rewatches;
mod tokens_and_status;
mod watches;
