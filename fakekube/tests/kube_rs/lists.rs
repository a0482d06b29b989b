//! Paged lists (each object exactly once), continue tokens expired by compaction, label and field selectors.

use super::*;

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
