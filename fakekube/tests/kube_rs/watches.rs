//! kube-rs's watcher (init events, pages, bookmarks, streaming lists), its reflector, and raw watches with selectors, bookmarks and 410.

use super::*;

/// A watcher event reduced to its variant and object name, for comparing sequences.
pub(super) fn describe<K: Resource>(event: &watcher::Event<K>) -> String {
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
pub(super) async fn next_events<S, K>(stream: &mut S, n: usize) -> Vec<String>
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
pub(super) async fn next_change<S, K>(stream: &mut S) -> WatchEvent<K>
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
pub(super) fn describe_raw<K: Resource>(event: &WatchEvent<K>) -> String {
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
    // A bookmark carries how far the server's event stream has got, other kinds included:
    // the cluster's controllers may have written since the secret, never before it.
    match next_item(&mut stream).await.expect("a watch event") {
        WatchEvent::Bookmark(b) => {
            let at = bookmark_rv(&b);
            assert!(
                at >= rv_of(&made) && at <= kube.resource_version(),
                "the first bookmark is at {at}, not between the watch's start {from} and the latest {}",
                kube.resource_version()
            );
        }
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
            let at = bookmark_rv(&b);
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
