//! The order of the API server's checks on writes (its create, update, patch and delete
//! handlers): options, then the body's kind, namespace and name against the URL, then
//! admission (the namespace must exist), then validation, then storage (a taken name, a stale
//! resourceVersion). A request wrong in two ways gets the error of the earlier check.

mod support;

use fakekube::FakeKube;
use http::Method;
use serde_json::{Value, json};
use support::{Client, Reply, sandbox, sandboxes};

async fn start() -> (FakeKube, Client) {
    support::start_api_server().await
}

#[track_caller]
fn assert_status(reply: &Reply, code: u16, reason: &str, message: &str) {
    let body = reply.json();
    assert_eq!(reply.status.as_u16(), code, "body: {body}");
    assert_eq!(body["reason"], reason, "body: {body}");
    assert_eq!(body["message"], message, "body: {body}");
}

/// A Sandbox whose spec its schema refuses (no container list).
fn invalid_sandbox(name: &str) -> Value {
    json!({
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": { "name": name },
        "spec": { "podTemplate": { "spec": {} } },
    })
}

#[tokio::test]
async fn a_put_naming_another_object_is_a_bad_request_before_any_resource_version_check() {
    let (kube, c) = start().await;
    let path = sandboxes("sb");
    assert_eq!(c.json(Method::POST, &path, &sandbox("a")).await.status, 201);
    // No resourceVersion: a custom resource's update would be 422 for it, but the name comes
    // first.
    let renamed = sandbox("b");
    assert_status(
        &c.json(Method::PUT, &format!("{path}/a"), &renamed).await,
        400,
        "BadRequest",
        "the name of the object (b) does not match the name on the URL (a)",
    );
    let mut nameless = sandbox("a");
    nameless["metadata"] = json!({});
    assert_status(
        &c.json(Method::PUT, &format!("{path}/a"), &nameless).await,
        400,
        "BadRequest",
        "the name of the object () does not match the name on the URL (a)",
    );
    let mut elsewhere = c.get(&format!("{path}/a")).await.json();
    elsewhere["metadata"]["namespace"] = json!("default");
    assert_status(
        &c.json(Method::PUT, &format!("{path}/a"), &elsewhere).await,
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
    );
    // A PUT to an object that does not exist is 404 only once the body is known good.
    assert_status(
        &c.json(Method::PUT, &format!("{path}/zz"), &sandbox("zz"))
            .await,
        404,
        "NotFound",
        "sandboxes.agents.x-k8s.io \"zz\" not found",
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_patch_renaming_its_object_is_a_bad_request_before_a_stale_version_conflicts() {
    let (kube, c) = start().await;
    let path = sandboxes("sb");
    assert_eq!(c.json(Method::POST, &path, &sandbox("a")).await.status, 201);
    let stale = json!({ "metadata": { "name": "b", "resourceVersion": "1" } });
    assert_status(
        &c.patch(&format!("{path}/a"), "application/merge-patch+json", &stale)
            .await,
        400,
        "BadRequest",
        "the name of the object (b) does not match the name on the URL (a)",
    );
    let stale_only = json!({ "metadata": { "resourceVersion": "1", "labels": { "x": "y" } } });
    let r = c
        .patch(
            &format!("{path}/a"),
            "application/merge-patch+json",
            &stale_only,
        )
        .await;
    assert_eq!(r.status.as_u16(), 409, "{}", r.json());
    // An unknown patch type is refused before the object is even looked up.
    let r = c
        .patch(&format!("{path}/missing"), "text/plain", &json!({}))
        .await;
    assert_eq!(r.status.as_u16(), 415, "{}", r.json());
    kube.shutdown().await;
}

#[tokio::test]
async fn a_create_is_admitted_then_validated_then_stored() {
    let (kube, c) = start().await;
    let path = sandboxes("sb");
    assert_eq!(c.json(Method::POST, &path, &sandbox("a")).await.status, 201);
    // Taken name and invalid spec: validation answers before storage.
    let r = c.json(Method::POST, &path, &invalid_sandbox("a")).await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.json());
    assert_eq!(r.json()["reason"], "Invalid");
    // Missing namespace and invalid spec: admission answers before validation.
    let r = c
        .json(Method::POST, &sandboxes("nowhere"), &invalid_sandbox("a"))
        .await;
    assert_status(&r, 404, "NotFound", "namespaces \"nowhere\" not found");
    // A valid body with a taken name is 409, dry run or not.
    for query in ["", "?dryRun=All"] {
        let r = c
            .json(Method::POST, &format!("{path}{query}"), &sandbox("a"))
            .await;
        assert_eq!(r.status.as_u16(), 409, "{query}: {}", r.json());
    }
    kube.shutdown().await;
}

#[tokio::test]
async fn write_options_the_api_server_does_not_take_are_invalid_options() {
    let (kube, c) = start().await;
    let path = sandboxes("sb");
    assert_status(
        &c.json(
            Method::POST,
            &format!("{path}?fieldValidation=bogus"),
            &sandbox("a"),
        )
        .await,
        422,
        "Invalid",
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
    );
    assert_status(
        &c.json(Method::POST, &format!("{path}?dryRun=Some"), &sandbox("a"))
            .await,
        422,
        "Invalid",
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"Some\"}: supported values: \"All\"",
    );
    assert_status(
        &c.patch(
            &format!("{path}/a"),
            "application/apply-patch+yaml",
            &sandbox("a"),
        )
        .await,
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
    );
    assert_status(
        &c.patch(
            &format!("{path}/a?force=true"),
            "application/merge-patch+json",
            &json!({}),
        )
        .await,
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn delete_options_come_from_the_body_when_it_has_one_and_are_validated() {
    let (kube, c) = start().await;
    let path = sandboxes("sb");
    assert_eq!(c.json(Method::POST, &path, &sandbox("a")).await.status, 201);
    assert_status(
        &c.call(
            Method::DELETE,
            &format!("{path}/a?propagationPolicy=Sideways"),
            None,
            Vec::new(),
        )
        .await,
        422,
        "Invalid",
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
    );
    // With a body, the query is not read: its bad policy does not matter, the body's dry run
    // does.
    let body = json!({ "kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"] });
    let r = c
        .json(
            Method::DELETE,
            &format!("{path}/a?propagationPolicy=Sideways"),
            &body,
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    assert_eq!(c.get(&format!("{path}/a")).await.status.as_u16(), 200);
    kube.shutdown().await;
}
