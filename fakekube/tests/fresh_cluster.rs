//! A fresh cluster as kind's: the `fakekube` binary runs, in `kube-system` and
//! `local-path-storage`, the control plane's mirror pods, CoreDNS with its `kube-dns` Service,
//! the kube-proxy and kindnet DaemonSets and the local-path provisioner, Running and Ready and
//! owned as on kind; `--bare` runs none of them, nor does the in-process builder unless asked.

mod support;

use serde_json::Value;
use std::time::{Duration, Instant};
use support::Client;
use support::process::Process;

/// How long the system pods may take on a loaded machine; the wait ends as soon as they run.
const SETTLE: Duration = Duration::from_secs(60);

fn ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn name(o: &Value) -> &str {
    o["metadata"]["name"].as_str().unwrap_or("")
}

fn owner(o: &Value) -> (String, String) {
    let r = &o["metadata"]["ownerReferences"][0];
    (
        r["kind"].as_str().unwrap_or("").to_string(),
        r["name"].as_str().unwrap_or("").to_string(),
    )
}

async fn items(client: &Client, path: &str) -> Vec<Value> {
    let reply = client.get(path).await;
    reply.json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The pods of `ns` once `want` of them are Running and Ready (after [`SETTLE`], whatever
/// there is, for the assertions to report).
async fn settled_pods(client: &Client, ns: &str, want: usize) -> Vec<Value> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let pods = items(client, &format!("/api/v1/namespaces/{ns}/pods")).await;
        if pods.iter().filter(|p| ready(p)).count() >= want || Instant::now() > deadline {
            return pods;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_binary_runs_kinds_system_pods_running_ready_and_owned_as_on_kind() {
    let process = Process::start(&[]);
    let kc = std::fs::read_to_string(&process.kubeconfig).expect("kubeconfig");
    let client = Client::from_kubeconfig(&kc);
    // etcd, kube-apiserver, kube-controller-manager, kube-scheduler, 2 coredns, kube-proxy,
    // kindnet.
    let pods = settled_pods(&client, "kube-system", 8).await;
    let shown: Vec<(&str, bool)> = pods.iter().map(|p| (name(p), ready(p))).collect();
    assert!(pods.iter().all(ready), "{shown:?}");
    for component in [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    ] {
        let want = format!("{component}-fakekube-node");
        let pod = pods
            .iter()
            .find(|p| name(p) == want)
            .unwrap_or_else(|| panic!("{want} in {shown:?}"));
        assert_eq!(owner(pod), ("Node".into(), "fakekube-node".into()));
        assert!(pod["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string());
        assert_eq!(pod["metadata"]["labels"]["tier"], "control-plane");
    }
    let coredns: Vec<&Value> = pods
        .iter()
        .filter(|p| p["metadata"]["labels"]["k8s-app"] == "kube-dns")
        .collect();
    assert_eq!(coredns.len(), 2, "{shown:?}");
    let (kind, rs) = owner(coredns[0]);
    assert_eq!(kind, "ReplicaSet");
    assert!(rs.starts_with("coredns-"), "{rs}");
    let replica_set = client
        .get(&format!(
            "/apis/apps/v1/namespaces/kube-system/replicasets/{rs}"
        ))
        .await
        .json();
    assert_eq!(owner(&replica_set), ("Deployment".into(), "coredns".into()));
    for ds in ["kube-proxy", "kindnet"] {
        let pod = pods
            .iter()
            .find(|p| owner(p) == ("DaemonSet".into(), ds.into()))
            .unwrap_or_else(|| panic!("a {ds} pod in {shown:?}"));
        assert!(name(pod).starts_with(&format!("{ds}-")));
    }
    let dns = client
        .get("/api/v1/namespaces/kube-system/services/kube-dns")
        .await
        .json();
    assert_eq!(dns["spec"]["clusterIP"], "10.96.0.10");
    let review = serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:kube-system:coredns",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system"],
            "resourceAttributes": { "group": "discovery.k8s.io", "resource": "endpointslices",
                "verb": "watch" },
        },
    });
    let allowed = client
        .json(
            http::Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &review,
        )
        .await;
    assert_eq!(
        allowed.json()["status"]["allowed"],
        true,
        "{}",
        allowed.json()
    );

    let local = settled_pods(&client, "local-path-storage", 1).await;
    assert_eq!(local.len(), 1);
    assert!(ready(&local[0]));
    assert!(name(&local[0]).starts_with("local-path-provisioner-"));
}

#[tokio::test]
async fn a_bare_binary_runs_no_system_pods() {
    let process = Process::start(&["--bare"]);
    let kc = std::fs::read_to_string(&process.kubeconfig).expect("kubeconfig");
    let client = Client::from_kubeconfig(&kc);
    // A pod of the test's own running means the node registered a while ago: kind's objects
    // would have been made by then.
    let pod = serde_json::json!({ "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "probe" },
        "spec": { "containers": [{ "name": "main", "image": "busybox" }] } });
    let made = client
        .json(http::Method::POST, "/api/v1/namespaces/default/pods", &pod)
        .await;
    assert_eq!(made.status, http::StatusCode::CREATED);
    let running = settled_pods(&client, "default", 1).await;
    assert!(running.iter().all(ready));
    assert!(
        items(&client, "/api/v1/namespaces/kube-system/pods")
            .await
            .is_empty()
    );
    let ns = client.get("/api/v1/namespaces/local-path-storage").await;
    assert_eq!(ns.status, http::StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_builder_runs_them_only_when_asked_and_the_leak_check_ignores_them() {
    let kube = fakekube::FakeKube::builder()
        .agent_sandbox_crds(false)
        .kind_system(true)
        .start()
        .await
        .expect("fakekube starts");
    let running = kube
        .wait_for(
            "pods",
            "kube-system",
            "kube-scheduler-fakekube-node",
            SETTLE,
            |p| p.is_some_and(ready),
        )
        .await;
    assert!(running.is_ok(), "{running:?}");
    assert_eq!(kube.leaks(), Vec::<String>::new());
    kube.shutdown().await;

    let plain = fakekube::FakeKube::builder()
        .agent_sandbox_crds(false)
        .namespace("sb")
        .start()
        .await
        .expect("fakekube starts");
    let client = Client::new(&plain);
    let pod = serde_json::json!({ "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "probe" },
        "spec": { "containers": [{ "name": "main", "image": "busybox" }] } });
    client
        .json(http::Method::POST, "/api/v1/namespaces/sb/pods", &pod)
        .await;
    let running = settled_pods(&client, "sb", 1).await;
    assert!(running.iter().all(ready));
    assert!(
        items(&client, "/api/v1/namespaces/kube-system/pods")
            .await
            .is_empty()
    );
    plain.shutdown().await;
}

/// A CRD of a kind no server starts with.
fn widget_crd() -> Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": "widgets.example.com" },
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": { "plural": "widgets", "singular": "widget", "kind": "Widget" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                } },
            }],
        },
    })
}

/// Servers of one process start from one start state (made once); each must change apart.
#[tokio::test]
async fn servers_of_one_process_start_alike_and_what_one_changes_no_other_sees() {
    let first = fakekube::FakeKube::builder()
        .namespace("team-a")
        .start()
        .await
        .expect("first server");
    first.create(widget_crd()).expect("the CRD is created");
    first
        .create(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "only-first" },
        }))
        .expect("a namespace is created");
    first
        .delete("clusterroles", "", "view")
        .expect("a bootstrap ClusterRole is deleted");
    first
        .delete("customresourcedefinitions", "", "sandboxes.agents.x-k8s.io")
        .expect("an agent-sandbox CRD is deleted");

    let second = fakekube::FakeKube::builder()
        .start()
        .await
        .expect("second server");
    // (what, (resource, namespace, name), whether the second server has it)
    for (what, (resource, ns, name), present) in [
        (
            "the start namespace",
            ("namespaces", "", "kube-system"),
            true,
        ),
        (
            "the bootstrap ClusterRole",
            ("clusterroles", "", "view"),
            true,
        ),
        (
            "the agent-sandbox CRD",
            ("customresourcedefinitions", "", "sandboxes.agents.x-k8s.io"),
            true,
        ),
        (
            "the default StorageClass",
            ("storageclasses", "", "standard"),
            true,
        ),
        (
            "the kubernetes Service",
            ("services", "default", "kubernetes"),
            true,
        ),
        (
            "the first's namespace",
            ("namespaces", "", "only-first"),
            false,
        ),
        (
            "the first's builder namespace",
            ("namespaces", "", "team-a"),
            false,
        ),
        (
            "the first's CRD",
            ("customresourcedefinitions", "", "widgets.example.com"),
            false,
        ),
    ] {
        assert_eq!(
            second.get(resource, ns, name).is_some(),
            present,
            "the second server has {what}: expected {present}"
        );
    }
    let widget = serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": { "name": "w" },
    });
    let refused = second
        .create(widget.clone())
        .expect_err("the second server serves no widgets");
    assert_eq!(refused.code, 404);
    first.create(widget).expect("the first serves widgets");

    // Each server's Endpoints name its own address.
    for kube in [&first, &second] {
        let endpoints = kube
            .get("endpoints", "default", "kubernetes")
            .expect("the kubernetes Endpoints");
        assert_eq!(
            endpoints["subsets"][0]["ports"][0]["port"],
            kube.addr().port()
        );
    }
    first.shutdown().await;
    second.shutdown().await;
}
