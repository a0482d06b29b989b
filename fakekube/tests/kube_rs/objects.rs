//! Discovery (legacy and aggregated), 404 and 409, finalizers, metadata lists and watches, pod logs, the entry API, unconditional replace, bookmarks while other kinds change.

use super::watches::{describe_raw, next_events};
use super::*;

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
        // Until the test has its bookmark and stops it.
        for i in 0u64.. {
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
    let first = tokio::time::timeout(EVENT_WAIT, stream.next()).await;
    churn.abort();
    match first {
        Ok(Some(Ok(WatchEvent::Bookmark(_)))) => {}
        Ok(other) => panic!(
            "expected a bookmark, got {:?}",
            other.map(|r| r.map(|e| describe_raw(&e)))
        ),
        Err(_) => panic!("no bookmark within {EVENT_WAIT:?} while another kind kept changing"),
    }
    kube.shutdown().await;
}
