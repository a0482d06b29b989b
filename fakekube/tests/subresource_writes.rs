//! Subresources that rewrite their object (`pods/<name>/ephemeralcontainers`, `.../scale`)
//! while another writer keeps changing it (as the kubelet and the controllers do with status):
//! a PUT or PATCH that names no resourceVersion applies to the object as it is when it is made,
//! as the API server's storage does; one that names a stale resourceVersion is refused with
//! 409.

mod support;

use http::Method;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use support::Client;

const PODS: &str = "/api/v1/namespaces/sb/pods";

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name },
        "spec": { "containers": [{ "name": "c", "image": "busybox" }] },
    })
}

fn ephemeral(name: &str) -> Value {
    json!({ "name": name, "image": "busybox", "command": ["sh", "-c", "sleep 2"] })
}

/// Another writer: the object's labels change as fast as the server takes them.
struct Writer {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<u64>,
}

impl Writer {
    fn start(c: &Client, path: String) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let task = {
            let (c, stop) = (c.clone(), stop.clone());
            tokio::spawn(async move {
                let mut writes = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let reply = c
                        .patch(
                            &path,
                            "application/merge-patch+json",
                            &json!({ "metadata": { "labels": { "tick": writes.to_string() } } }),
                        )
                        .await;
                    assert_eq!(reply.status, 200, "{:?}", reply.json());
                    writes += 1;
                }
                writes
            })
        };
        Writer { stop, task }
    }

    /// Stops it; it must have written.
    async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let writes = self.task.await.expect("the writer ends");
        assert!(writes > 0, "the other writer wrote nothing");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_that_name_no_resource_version_land_while_another_writer_changes_the_pod() {
    let (kube, c) = support::start_api_server().await;
    let created = c.json(Method::POST, PODS, &pod("busy")).await;
    assert_eq!(created.status, 201, "{:?}", created.json());
    let stale_rv = created.json()["metadata"]["resourceVersion"].clone();

    let writer = Writer::start(&c, format!("{PODS}/busy"));
    let path = format!("{PODS}/busy/ephemeralcontainers");
    for i in 0..10 {
        let name = format!("debug-{i}");
        let reply = if i % 2 == 0 {
            let mut body = pod("busy");
            let mut all: Vec<Value> = (0..i).map(|j| ephemeral(&format!("debug-{j}"))).collect();
            all.push(ephemeral(&name));
            body["spec"]["ephemeralContainers"] = json!(all);
            c.json(Method::PUT, &path, &body).await
        } else {
            c.patch(
                &path,
                "application/strategic-merge-patch+json",
                &json!({ "spec": { "ephemeralContainers": [ephemeral(&name)] } }),
            )
            .await
        };
        assert_eq!(reply.status, 200, "write {i}: {:?}", reply.json());
        let names: Vec<Value> = reply.json()["spec"]["ephemeralContainers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| e["name"].clone())
            .collect();
        assert_eq!(names.len(), i + 1, "write {i}: {names:?}");
    }

    // A write that names the pod's first revision is a conflict, as on any cluster.
    let mut pinned = pod("busy");
    pinned["metadata"]["resourceVersion"] = stale_rv;
    pinned["spec"]["ephemeralContainers"] = json!([ephemeral("late")]);
    let refused = c.json(Method::PUT, &path, &pinned).await;
    assert_eq!(refused.status, 409, "{:?}", refused.json());

    writer.stop().await;
    kube.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_writes_that_name_no_resource_version_land_while_another_writer_changes_the_object() {
    let (kube, c) = support::start_api_server().await;
    let deployments = "/apis/apps/v1/namespaces/sb/deployments";
    let created = c
        .json(
            Method::POST,
            deployments,
            &json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": { "name": "web" },
                "spec": {
                    "replicas": 1,
                    "selector": { "matchLabels": { "app": "web" } },
                    "template": {
                        "metadata": { "labels": { "app": "web" } },
                        "spec": { "containers": [{ "name": "c", "image": "busybox" }] },
                    },
                },
            }),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.json());
    let stale_rv = created.json()["metadata"]["resourceVersion"].clone();
    let writer = Writer::start(&c, format!("{deployments}/web"));

    let path = format!("{deployments}/web/scale");
    for replicas in 2..12 {
        let reply = if replicas % 2 == 0 {
            let scale = json!({
                "apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": { "name": "web", "namespace": "sb" },
                "spec": { "replicas": replicas },
            });
            c.json(Method::PUT, &path, &scale).await
        } else {
            c.patch(
                &path,
                "application/merge-patch+json",
                &json!({ "spec": { "replicas": replicas } }),
            )
            .await
        };
        assert_eq!(reply.status, 200, "replicas {replicas}: {:?}", reply.json());
        assert_eq!(reply.json()["spec"]["replicas"], replicas);
    }

    let pinned = json!({
        "apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": { "name": "web", "namespace": "sb", "resourceVersion": stale_rv },
        "spec": { "replicas": 20 },
    });
    let refused = c.json(Method::PUT, &path, &pinned).await;
    assert_eq!(refused.status, 409, "{:?}", refused.json());

    writer.stop().await;
    kube.shutdown().await;
}
