//! Every patch type, server-side apply with managers and conflicts, replace with stale and missing resourceVersions.

use super::*;

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

    let params = PostParams {
        field_manager: Some("editor".into()),
        ..PostParams::default()
    };
    // The agent-sandbox controller writes the Sandbox's status too: a replace from a stale read
    // is a 409, and the editor reads again and retries, as a client of a cluster does.
    let replaced = retry_on_conflict("the editor's replace", async || {
        let mut edited = api.get("owned").await?;
        edited.labels_mut().insert("team".into(), "c".into());
        edited.metadata.managed_fields = None;
        api.replace("owned", &params, &edited).await
    })
    .await;
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
    let replaced = retry_on_conflict("the fresh replace", async || {
        let mut fresh = api.get("r").await?;
        fresh.labels_mut().insert("round".into(), "1".into());
        api.replace("r", &PostParams::default(), &fresh).await
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
