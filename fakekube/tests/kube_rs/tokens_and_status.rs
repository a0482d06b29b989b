//! Revoked, expired and limited tokens; the status subresource through replace and patch.

use super::*;

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
    let replaced = retry_on_conflict("replace_status", async || {
        let mut body = api.get_status("st").await?;
        body.data["status"] = ready_status("ByReplace");
        body.data["spec"]["shutdownPolicy"] = json!("Delete");
        api.replace_status("st", &PostParams::default(), &body)
            .await
    })
    .await;
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
