//! The watcher's relist after a 410 and rewatch after a timeout, and a raw watch by field selector.

use super::watches::{describe, describe_raw, next_change, next_events};
use super::*;

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
