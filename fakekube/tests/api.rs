//! The API server over a real TLS socket: authentication, bad input, object semantics,
//! subresources, watches, HTTP/2 and shutdown.

mod support;

use fakekube::{FakeKube, Rule, Token};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};
use support::{Client, Proto, read_lines, sandbox, sandboxes};

async fn start() -> (FakeKube, Client) {
    support::start_api_server().await
}

fn assert_status(reply: &support::Reply, code: u16, reason: &str) {
    let body = reply.json();
    assert_eq!(reply.status.as_u16(), code, "body: {body}");
    assert_eq!(body["kind"], "Status", "body: {body}");
    assert_eq!(body["reason"], reason, "body: {body}");
    assert_eq!(body["code"], code, "body: {body}");
}

async fn count_sandboxes(c: &Client) -> usize {
    c.get(&sandboxes("sb")).await.json()["items"]
        .as_array()
        .map_or(0, Vec::len)
}

#[tokio::test]
async fn requests_without_a_valid_token_are_unauthorized_but_health_and_version_are_public() {
    let (kube, c) = start().await;
    let anon = c.with_token(None);
    assert_status(&anon.get("/api/v1/namespaces").await, 401, "Unauthorized");
    assert_status(
        &c.with_token(Some("wrong")).get("/api").await,
        401,
        "Unauthorized",
    );
    assert_eq!(anon.get("/healthz").await.status, StatusCode::OK);
    assert_eq!(anon.get("/readyz").await.status, StatusCode::OK);
    assert_eq!(anon.get("/version").await.json()["minor"], "33");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_rotated_token_overlaps_then_the_old_one_is_refused() {
    let (kube, c) = start().await;
    kube.add_token(Token::new("old-token", "svc"));
    let old = c.with_token(Some("old-token"));
    assert_eq!(old.get("/api/v1/namespaces").await.status, StatusCode::OK);
    kube.add_token(Token::new("new-token", "svc"));
    let new = c.with_token(Some("new-token"));
    assert_eq!(
        old.get("/api/v1/namespaces").await.status,
        StatusCode::OK,
        "old still valid during the overlap"
    );
    assert_eq!(new.get("/api/v1/namespaces").await.status, StatusCode::OK);
    assert!(kube.revoke_token("old-token"));
    assert_status(&old.get("/api/v1/namespaces").await, 401, "Unauthorized");
    assert_eq!(new.get("/api/v1/namespaces").await.status, StatusCode::OK);
    assert!(kube.set_token_expiry(
        "new-token",
        Some(SystemTime::now() - Duration::from_secs(1))
    ));
    assert_status(&new.get("/api/v1/namespaces").await, 401, "Unauthorized");
    kube.shutdown().await;
}

/// The Role of the seed's provider page, as rules.
fn seed_role(ns: &str) -> Vec<Rule> {
    vec![
        Rule::new(
            ["agents.x-k8s.io"],
            ["sandboxes"],
            ["get", "list", "create", "patch", "delete"],
        )
        .in_namespaces([ns]),
        Rule::new(
            ["extensions.agents.x-k8s.io"],
            ["sandboxclaims"],
            ["get", "list", "create", "patch", "delete"],
        )
        .in_namespaces([ns]),
        Rule::new(
            ["extensions.agents.x-k8s.io"],
            ["sandboxwarmpools"],
            ["get"],
        )
        .in_namespaces([ns]),
        Rule::new([""], ["pods"], ["get"]).in_namespaces([ns]),
        Rule::new([""], ["pods/exec"], ["get", "create"]).in_namespaces([ns]),
    ]
}

#[tokio::test]
async fn a_token_limited_to_the_seed_role_gets_exactly_its_verbs() {
    let (kube, c) = start().await;
    kube.add_token(
        Token::new("role-token", "system:serviceaccount:sb:differently")
            .with_rules(seed_role("sb")),
    );
    let r = c.with_token(Some("role-token"));
    assert_eq!(
        r.json(Method::POST, &sandboxes("sb"), &sandbox("a"))
            .await
            .status,
        StatusCode::CREATED
    );
    assert_eq!(r.get(&sandboxes("sb")).await.status, StatusCode::OK);
    let patch = json!({ "metadata": { "labels": { "x": "y" } } });
    assert_eq!(
        r.patch(
            &format!("{}/a", sandboxes("sb")),
            "application/merge-patch+json",
            &patch
        )
        .await
        .status,
        StatusCode::OK
    );
    // Not in the Role: update (PUT), watch, the default namespace, and secrets.
    let current = r.get(&format!("{}/a", sandboxes("sb"))).await.json();
    let put = r
        .json(Method::PUT, &format!("{}/a", sandboxes("sb")), &current)
        .await;
    assert_status(&put, 403, "Forbidden");
    assert_eq!(
        put.json()["message"],
        "sandboxes.agents.x-k8s.io \"a\" is forbidden: User \"system:serviceaccount:sb:differently\" cannot update resource \"sandboxes\" in API group \"agents.x-k8s.io\" in the namespace \"sb\""
    );
    assert_status(&r.get(&sandboxes("default")).await, 403, "Forbidden");
    assert_status(
        &r.get("/api/v1/namespaces/sb/secrets").await,
        403,
        "Forbidden",
    );
    let del = r
        .call(
            Method::DELETE,
            &format!("{}/a", sandboxes("sb")),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(del.status, StatusCode::OK);
    kube.shutdown().await;
}

#[tokio::test]
async fn token_request_mints_a_token_with_the_service_accounts_rules() {
    let (kube, c) = start().await;
    kube.bind_service_account("sb", "default", vec![Rule::new([""], ["pods"], ["list"])])
        .expect("the binding objects are created");
    let reply = c
        .json(
            Method::POST,
            "/api/v1/namespaces/sb/serviceaccounts/default/token",
            &json!({ "spec": {} }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let token = reply.json()["status"]["token"]
        .as_str()
        .expect("token")
        .to_string();
    let sa = c.with_token(Some(&token));
    assert_eq!(
        sa.get("/api/v1/namespaces/sb/pods").await.status,
        StatusCode::OK
    );
    let denied = sa.get("/api/v1/namespaces/sb/secrets").await;
    assert_status(&denied, 403, "Forbidden");
    assert!(
        denied.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("User \"system:serviceaccount:sb:default\""))
    );
    let missing = c
        .json(
            Method::POST,
            "/api/v1/namespaces/sb/serviceaccounts/nobody/token",
            &json!({}),
        )
        .await;
    assert_status(&missing, 404, "NotFound");
    kube.shutdown().await;
}

#[tokio::test]
async fn malformed_and_mismatched_bodies_are_bad_requests_and_change_nothing() {
    let (kube, c) = start().await;
    let path = sandboxes("sb");
    assert_status(
        &c.call(
            Method::POST,
            &path,
            Some("application/json"),
            b"{not json".to_vec(),
        )
        .await,
        400,
        "BadRequest",
    );
    assert_status(
        &c.call(
            Method::POST,
            &path,
            Some("application/yaml"),
            b"a: [".to_vec(),
        )
        .await,
        400,
        "BadRequest",
    );
    assert_status(
        &c.call(
            Method::POST,
            &path,
            Some("application/json"),
            b"[1,2]".to_vec(),
        )
        .await,
        400,
        "BadRequest",
    );
    assert_status(
        &c.call(Method::POST, &path, Some("application/json"), Vec::new())
            .await,
        400,
        "BadRequest",
    );
    let mut wrong_kind = sandbox("a");
    wrong_kind["kind"] = json!("SandboxClaim");
    assert_status(
        &c.json(Method::POST, &path, &wrong_kind).await,
        400,
        "BadRequest",
    );
    let mut wrong_version = sandbox("a");
    wrong_version["apiVersion"] = json!("agents.x-k8s.io/v1alpha1");
    assert_status(
        &c.json(Method::POST, &path, &wrong_version).await,
        400,
        "BadRequest",
    );
    let mut wrong_ns = sandbox("a");
    wrong_ns["metadata"]["namespace"] = json!("default");
    let r = c.json(Method::POST, &path, &wrong_ns).await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.json()["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    assert_eq!(count_sandboxes(&c).await, 0);
    // A YAML body is read as the API server reads one.
    let yaml = "apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata: {name: from-yaml}\nspec:\n  podTemplate:\n    spec:\n      containers: [{name: c, image: busybox}]\n";
    assert_eq!(
        c.call(
            Method::POST,
            &path,
            Some("application/yaml"),
            yaml.as_bytes().to_vec()
        )
        .await
        .status,
        StatusCode::CREATED
    );
    let mut renamed = c.get(&format!("{path}/from-yaml")).await.json();
    renamed["metadata"]["name"] = json!("other");
    assert_status(
        &c.json(Method::PUT, &format!("{path}/from-yaml"), &renamed)
            .await,
        400,
        "BadRequest",
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn an_oversized_body_is_refused_with_413() {
    let (kube, c) = start().await;
    let mut big = sandbox("big");
    big["metadata"]["annotations"] = json!({ "x": "a".repeat(4 * 1024 * 1024) });
    assert_status(
        &c.json(Method::POST, &sandboxes("sb"), &big).await,
        413,
        "RequestEntityTooLarge",
    );
    assert_eq!(count_sandboxes(&c).await, 0);
    kube.shutdown().await;
}

#[tokio::test]
async fn unknown_paths_and_verbs_get_statuses() {
    let (kube, c) = start().await;
    assert_status(
        &c.get("/apis/nope.example.com/v1/widgets").await,
        404,
        "NotFound",
    );
    assert_status(&c.get("/no/such/path").await, 404, "NotFound");
    assert_status(
        &c.get("/api/v1/namespaces/sb/widgets").await,
        404,
        "NotFound",
    );
    assert_status(
        &c.json(Method::PUT, &sandboxes("sb"), &sandbox("a")).await,
        405,
        "MethodNotAllowed",
    );
    assert_status(
        &c.json(Method::POST, "/api", &json!({})).await,
        405,
        "MethodNotAllowed",
    );
    assert_status(
        &c.get(&format!("{}/missing", sandboxes("sb"))).await,
        404,
        "NotFound",
    );
    assert_status(
        &c.json(Method::POST, &sandboxes("no-such-ns"), &sandbox("a"))
            .await,
        404,
        "NotFound",
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_half_sent_request_changes_nothing_and_the_server_keeps_serving() {
    use tokio::io::AsyncWriteExt;
    let (kube, c) = start().await;
    let (mut tls, _) = c.connect().await;
    let body = serde_json::to_vec(&sandbox("half")).expect("json");
    let head = format!(
        "POST {} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        sandboxes("sb"),
        kube.token(),
        body.len()
    );
    tls.write_all(head.as_bytes()).await.expect("write head");
    tls.write_all(&body[..body.len() / 2])
        .await
        .expect("write half");
    tls.shutdown().await.expect("close");
    drop(tls);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(count_sandboxes(&c).await, 0);
    assert_eq!(c.get("/api").await.status, StatusCode::OK);
    kube.shutdown().await;
}

#[tokio::test]
async fn crd_schema_violations_are_422_with_one_cause_per_field() {
    let (kube, c) = start().await;
    let mut bad = sandbox("bad");
    bad["spec"]["operatingMode"] = json!("Sleeping");
    bad["spec"]["shutdownPolicy"] = json!("Keep");
    let r = c.json(Method::POST, &sandboxes("sb"), &bad).await;
    assert_status(&r, 422, "Invalid");
    let causes = r.json()["details"]["causes"].clone();
    let fields: Vec<&str> = causes
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert!(
        fields.contains(&"spec.operatingMode") && fields.contains(&"spec.shutdownPolicy"),
        "{causes}"
    );
    assert!(
        causes
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["reason"] == "FieldValueNotSupported")
    );
    let no_template = json!({ "apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": { "name": "x" }, "spec": {} });
    let r = c.json(Method::POST, &sandboxes("sb"), &no_template).await;
    assert_status(&r, 422, "Invalid");
    assert!(
        r.json()["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Sandbox.agents.x-k8s.io \"x\" is invalid: "))
    );
    let pool = json!({ "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool", "metadata": { "name": "p" }, "spec": { "replicas": -1 } });
    let r = c
        .json(
            Method::POST,
            "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/sb/sandboxwarmpools",
            &pool,
        )
        .await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(count_sandboxes(&c).await, 0);
    kube.shutdown().await;
}

#[tokio::test]
async fn defaults_are_stored_and_unknown_fields_follow_field_validation() {
    let (kube, c) = start().await;
    let created = c.json(Method::POST, &sandboxes("sb"), &sandbox("d")).await;
    assert_eq!(created.status, StatusCode::CREATED);
    let obj = created.json();
    assert_eq!(obj["spec"]["operatingMode"], "Running");
    assert_eq!(obj["spec"]["shutdownPolicy"], "Retain");
    assert_eq!(obj["metadata"]["generation"], 1);
    let mut extra = sandbox("e");
    extra["spec"]["bogus"] = json!(1);
    let strict = c
        .json(
            Method::POST,
            &format!("{}?fieldValidation=Strict", sandboxes("sb")),
            &extra,
        )
        .await;
    assert_status(&strict, 400, "BadRequest");
    assert_eq!(
        strict.json()["message"],
        "Sandbox in version \"v1beta1\" cannot be handled as a Sandbox: strict decoding error: unknown field \"spec.bogus\""
    );
    let warned = c.json(Method::POST, &sandboxes("sb"), &extra).await;
    assert_eq!(warned.status, StatusCode::CREATED);
    assert!(
        warned
            .headers
            .get("warning")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|w| w.contains("unknown field"))
    );
    assert!(warned.json()["spec"].get("bogus").is_none(), "pruned");
    kube.shutdown().await;
}

#[tokio::test]
async fn generation_moves_with_spec_and_resource_version_with_every_write() {
    let (kube, c) = start().await;
    let path = format!("{}/g", sandboxes("sb"));
    let v1 = c
        .json(Method::POST, &sandboxes("sb"), &sandbox("g"))
        .await
        .json();
    let label = json!({ "metadata": { "labels": { "a": "b" } } });
    let v2 = c
        .patch(&path, "application/merge-patch+json", &label)
        .await
        .json();
    assert_eq!(v2["metadata"]["generation"], 1);
    let rv = |v: &Value| {
        v["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    };
    assert!(rv(&v2) > rv(&v1));
    let spec = json!({ "spec": { "operatingMode": "Suspended" } });
    let v3 = c
        .patch(&path, "application/merge-patch+json", &spec)
        .await
        .json();
    assert_eq!(v3["metadata"]["generation"], 2);
    // The same patch again changes nothing: same resourceVersion.
    let v4 = c
        .patch(&path, "application/merge-patch+json", &spec)
        .await
        .json();
    assert_eq!(rv(&v4), rv(&v3));
    // A stale update is a conflict.
    let stale = c.json(Method::PUT, &path, &v1).await;
    assert_status(&stale, 409, "Conflict");
    assert_eq!(
        stale.json()["message"],
        "Operation cannot be fulfilled on sandboxes.agents.x-k8s.io \"g\": the object has been modified; please apply your changes to the latest version and try again"
    );
    // A resourceVersion in a merge patch is a precondition.
    let pre = json!({ "metadata": { "resourceVersion": v1["metadata"]["resourceVersion"] }, "spec": { "operatingMode": "Running" } });
    assert_status(
        &c.patch(&path, "application/merge-patch+json", &pre).await,
        409,
        "Conflict",
    );
    // An update without a resourceVersion is refused.
    let mut no_rv = v4.clone();
    no_rv["metadata"]
        .as_object_mut()
        .map(|m| m.remove("resourceVersion"));
    assert_status(&c.json(Method::PUT, &path, &no_rv).await, 422, "Invalid");
    kube.shutdown().await;
}

#[tokio::test]
async fn status_writes_ignore_spec_and_main_writes_ignore_status() {
    let (kube, c) = start().await;
    let path = format!("{}/s", sandboxes("sb"));
    c.json(Method::POST, &sandboxes("sb"), &sandbox("s")).await;
    let with_status =
        json!({ "spec": { "operatingMode": "Suspended" }, "status": { "service": "s" } });
    let r = c
        .patch(
            &format!("{path}/status"),
            "application/merge-patch+json",
            &with_status,
        )
        .await
        .json();
    assert_eq!(r["status"]["service"], "s");
    assert_eq!(r["spec"]["operatingMode"], "Running");
    assert_eq!(r["metadata"]["generation"], 1);
    let main =
        json!({ "spec": { "operatingMode": "Suspended" }, "status": { "service": "other" } });
    let r = c
        .patch(&path, "application/merge-patch+json", &main)
        .await
        .json();
    assert_eq!(r["status"]["service"], "s");
    assert_eq!(r["spec"]["operatingMode"], "Suspended");
    // A create drops status for kinds with a status subresource.
    let mut born = sandbox("born");
    born["status"] = json!({ "service": "x" });
    assert!(
        c.json(Method::POST, &sandboxes("sb"), &born)
            .await
            .json()
            .get("status")
            .is_none()
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn volume_claim_templates_are_immutable() {
    let (kube, c) = start().await;
    let path = format!("{}/v", sandboxes("sb"));
    c.json(Method::POST, &sandboxes("sb"), &sandbox("v")).await;
    let add = json!({ "spec": { "volumeClaimTemplates": [ { "metadata": { "name": "w" }, "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } } ] } });
    let r = c.patch(&path, "application/merge-patch+json", &add).await;
    assert_status(&r, 422, "Invalid");
    assert!(
        r.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("volumeClaimTemplates is immutable")),
        "{}",
        r.json()
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn json_patch_strategic_merge_and_server_side_apply_work_where_the_api_server_takes_them() {
    let (kube, c) = start().await;
    let pod = json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "p" }, "spec": { "containers": [ { "name": "a", "image": "busybox" }, { "name": "b", "image": "busybox" } ] } });
    c.json(Method::POST, "/api/v1/namespaces/sb/pods", &pod)
        .await;
    let smp = json!({ "spec": { "containers": [ { "name": "b", "image": "busybox:2" } ] } });
    let r = c
        .patch(
            "/api/v1/namespaces/sb/pods/p",
            "application/strategic-merge-patch+json",
            &smp,
        )
        .await
        .json();
    assert_eq!(
        r["spec"]["containers"].as_array().map(Vec::len),
        Some(2),
        "merged by name: {r}"
    );
    assert_eq!(r["spec"]["containers"][1]["image"], "busybox:2");
    c.json(Method::POST, &sandboxes("sb"), &sandbox("j")).await;
    let jp = json!([{ "op": "add", "path": "/metadata/labels", "value": { "k": "v" } }]);
    let r = c
        .patch(
            &format!("{}/j", sandboxes("sb")),
            "application/json-patch+json",
            &jp,
        )
        .await;
    assert_eq!(r.json()["metadata"]["labels"]["k"], "v");
    let failing = json!([{ "op": "test", "path": "/metadata/name", "value": "nope" }]);
    assert_status(
        &c.patch(
            &format!("{}/j", sandboxes("sb")),
            "application/json-patch+json",
            &failing,
        )
        .await,
        422,
        "Invalid",
    );
    let smp_on_crd = c
        .patch(
            &format!("{}/j", sandboxes("sb")),
            "application/strategic-merge-patch+json",
            &json!({}),
        )
        .await;
    assert_status(&smp_on_crd, 415, "UnsupportedMediaType");
    let apply = serde_json::to_vec(&sandbox("applied")).expect("json");
    let created = c
        .call(
            Method::PATCH,
            &format!("{}/applied?fieldManager=test", sandboxes("sb")),
            Some("application/apply-patch+yaml"),
            apply,
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let mut again = sandbox("applied");
    again["metadata"]["labels"] = json!({ "x": "1" });
    let updated = c
        .call(
            Method::PATCH,
            &format!("{}/applied?fieldManager=test", sandboxes("sb")),
            Some("application/apply-patch+yaml"),
            serde_json::to_vec(&again).expect("json"),
        )
        .await;
    assert_eq!(updated.status, StatusCode::OK);
    assert_eq!(updated.json()["metadata"]["labels"]["x"], "1");
    kube.shutdown().await;
}

#[tokio::test]
async fn finalizers_hold_a_deletion_until_they_are_removed() {
    let (kube, c) = start().await;
    let mut s = sandbox("f");
    s["metadata"]["finalizers"] = json!(["example.com/hold"]);
    c.json(Method::POST, &sandboxes("sb"), &s).await;
    let path = format!("{}/f", sandboxes("sb"));
    let del = c.call(Method::DELETE, &path, None, Vec::new()).await;
    // 200 with the object as marked: the API server answers 202 only to `orphanDependents:
    // false` (below).
    assert_eq!(del.status, StatusCode::OK);
    assert!(del.json()["metadata"]["deletionTimestamp"].is_string());
    assert!(c.get(&path).await.status.is_success());
    let add = json!({ "metadata": { "finalizers": ["example.com/hold", "example.com/new"] } });
    assert_status(
        &c.patch(&path, "application/merge-patch+json", &add).await,
        422,
        "Invalid",
    );
    let release = json!({ "metadata": { "finalizers": null } });
    assert_eq!(
        c.patch(&path, "application/merge-patch+json", &release)
            .await
            .status,
        StatusCode::OK
    );
    assert_status(&c.get(&path).await, 404, "NotFound");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_held_deletion_with_orphan_dependents_false_is_answered_202() {
    let (kube, c) = start().await;
    let mut s = sandbox("held");
    s["metadata"]["finalizers"] = json!(["example.com/hold"]);
    c.json(Method::POST, &sandboxes("sb"), &s).await;
    let path = format!("{}/held", sandboxes("sb"));
    let body = json!({ "kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": false });
    let del = c
        .call(
            Method::DELETE,
            &path,
            Some("application/json"),
            serde_json::to_vec(&body).expect("json"),
        )
        .await;
    assert_eq!(del.status, StatusCode::ACCEPTED);
    assert!(del.json()["metadata"]["deletionTimestamp"].is_string());
    // Removed at once, the same option is answered 200 (a Status for a custom kind).
    c.json(Method::POST, &sandboxes("sb"), &sandbox("quick"))
        .await;
    let del = c
        .call(
            Method::DELETE,
            &format!("{}/quick", sandboxes("sb")),
            Some("application/json"),
            serde_json::to_vec(&body).expect("json"),
        )
        .await;
    assert_eq!(del.status, StatusCode::OK);
    assert_eq!(del.json()["kind"], "Status");
    kube.shutdown().await;
}

#[tokio::test]
async fn deleting_an_owner_collects_its_dependents_in_the_background_and_foreground() {
    let (kube, c) = start().await;
    for policy in ["Background", "Foreground"] {
        let owner = c
            .json(Method::POST, &sandboxes("sb"), &sandbox("owner"))
            .await
            .json();
        let refs = json!([{ "apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "name": "owner", "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true }]);
        let pod = json!({ "metadata": { "name": "dep", "ownerReferences": refs }, "spec": { "containers": [ { "name": "c", "image": "busybox" } ] } });
        assert_eq!(
            c.json(Method::POST, "/api/v1/namespaces/sb/pods", &pod)
                .await
                .status,
            StatusCode::CREATED
        );
        let body =
            json!({ "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy });
        c.json(Method::DELETE, &format!("{}/owner", sandboxes("sb")), &body)
            .await;
        assert_status(
            &c.get("/api/v1/namespaces/sb/pods/dep").await,
            404,
            "NotFound",
        );
        assert_status(
            &c.get(&format!("{}/owner", sandboxes("sb"))).await,
            404,
            "NotFound",
        );
    }
    kube.shutdown().await;
}

#[tokio::test]
async fn lists_select_by_labels_and_fields_and_page_with_continue() {
    let (kube, c) = start().await;
    for (name, app) in [("a", "x"), ("b", "y"), ("c", "x"), ("d", "z")] {
        let mut s = sandbox(name);
        s["metadata"]["labels"] = json!({ "app": app });
        c.json(Method::POST, &sandboxes("sb"), &s).await;
    }
    let names = |v: Value| -> Vec<String> {
        v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(
        names(
            c.get(&format!("{}?labelSelector=app%3Dx", sandboxes("sb")))
                .await
                .json()
        ),
        ["a", "c"]
    );
    assert_eq!(
        names(
            c.get(&format!(
                "{}?labelSelector=app+notin+(x,y)",
                sandboxes("sb")
            ))
            .await
            .json()
        ),
        ["d"]
    );
    assert_eq!(
        names(
            c.get(&format!("{}?labelSelector=app!%3Dx", sandboxes("sb")))
                .await
                .json()
        ),
        ["b", "d"]
    );
    assert_eq!(
        names(
            c.get(&format!(
                "{}?fieldSelector=metadata.name%3Db",
                sandboxes("sb")
            ))
            .await
            .json()
        ),
        ["b"]
    );
    assert_status(
        &c.get(&format!("{}?fieldSelector=spec.foo%3Db", sandboxes("sb")))
            .await,
        400,
        "BadRequest",
    );
    assert_status(
        &c.get(&format!("{}?labelSelector=a+in+", sandboxes("sb")))
            .await,
        400,
        "BadRequest",
    );
    let first = c.get(&format!("{}?limit=3", sandboxes("sb"))).await.json();
    assert_eq!(first["metadata"]["remainingItemCount"], 1);
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_string();
    let second = c
        .get(&format!("{}?limit=3&continue={token}", sandboxes("sb")))
        .await
        .json();
    assert_eq!(names(second.clone()), ["d"]);
    assert!(second["metadata"].get("continue").is_none());
    // Across namespaces: a list of every namespace.
    assert_eq!(
        names(
            c.get("/apis/agents.x-k8s.io/v1beta1/sandboxes")
                .await
                .json()
        )
        .len(),
        4
    );
    kube.compact();
    let expired = c
        .get(&format!("{}?limit=3&continue={token}", sandboxes("sb")))
        .await;
    assert_status(&expired, 410, "Expired");
    // deletecollection with a selector.
    c.call(
        Method::DELETE,
        &format!("{}?labelSelector=app%3Dx", sandboxes("sb")),
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(names(c.get(&sandboxes("sb")).await.json()), ["b", "d"]);
    kube.shutdown().await;
}

#[tokio::test]
async fn a_failing_list_page_fault_fails_only_continued_pages() {
    let (kube, c) = start().await;
    for n in ["a", "b"] {
        c.json(Method::POST, &sandboxes("sb"), &sandbox(n)).await;
    }
    kube.faults().fail_continued_lists(true);
    let first = c.get(&format!("{}?limit=1", sandboxes("sb"))).await.json();
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_string();
    assert_status(
        &c.get(&format!("{}?limit=1&continue={token}", sandboxes("sb")))
            .await,
        500,
        "InternalError",
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn throttling_answers_429_with_retry_after() {
    let (kube, c) = start().await;
    kube.faults().throttle_one_in(1, 7);
    let r = c.get(&sandboxes("sb")).await;
    assert_status(&r, 429, "TooManyRequests");
    assert_eq!(
        r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("7")
    );
    kube.faults().throttle_one_in(0, 0);
    assert_eq!(c.get(&sandboxes("sb")).await.status, StatusCode::OK);
    kube.shutdown().await;
}

#[tokio::test]
async fn dry_run_creates_nothing() {
    let (kube, c) = start().await;
    let r = c
        .json(
            Method::POST,
            &format!("{}?dryRun=All", sandboxes("sb")),
            &sandbox("dry"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.json()["spec"]["operatingMode"], "Running");
    assert_eq!(count_sandboxes(&c).await, 0);
    kube.shutdown().await;
}

#[tokio::test]
async fn the_warm_pool_scale_subresource_reads_and_writes_replicas() {
    let (kube, c) = start().await;
    let pools = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/sb/sandboxwarmpools";
    let pool = json!({ "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool", "metadata": { "name": "p" }, "spec": { "sandboxTemplateRef": { "name": "t" } } });
    let created = c.json(Method::POST, pools, &pool).await.json();
    assert_eq!(created["spec"]["replicas"], 1, "defaulted: {created}");
    let scale = c.get(&format!("{pools}/p/scale")).await.json();
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64()),
        (Some("Scale"), Some(1))
    );
    let r = c
        .patch(
            &format!("{pools}/p/scale"),
            "application/merge-patch+json",
            &json!({ "spec": { "replicas": 3 } }),
        )
        .await;
    assert_eq!(r.json()["spec"]["replicas"], 3);
    assert_eq!(
        c.get(&format!("{pools}/p")).await.json()["spec"]["replicas"],
        3
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_watch_streams_changes_from_a_resource_version_with_bookmarks() {
    let kube = FakeKube::builder()
        .namespace("sb")
        .controllers(false)
        .kubelet(false)
        .bookmark_interval(Duration::from_millis(50))
        .start()
        .await
        .expect("start");
    let c = Client::new(&kube);
    let first = c
        .json(Method::POST, &sandboxes("sb"), &sandbox("w1"))
        .await
        .json();
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    let resp = c
        .send(
            Method::GET,
            &format!(
                "{}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true",
                sandboxes("sb")
            ),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    c.json(Method::POST, &sandboxes("sb"), &sandbox("w2")).await;
    c.patch(
        &format!("{}/w2", sandboxes("sb")),
        "application/merge-patch+json",
        &json!({ "metadata": { "labels": { "a": "b" } } }),
    )
    .await;
    c.call(
        Method::DELETE,
        &format!("{}/w2", sandboxes("sb")),
        None,
        Vec::new(),
    )
    .await;
    let mut kinds = Vec::new();
    while kinds.len() < 3 {
        let lines = read_lines(&mut body, 1, &mut buf).await;
        let Some(line) = lines.first() else { break };
        match line["type"].as_str() {
            Some("BOOKMARK") => assert!(line["object"]["metadata"]["resourceVersion"].is_string()),
            Some(t) => {
                assert_eq!(line["object"]["metadata"]["name"], "w2");
                kinds.push(t.to_string());
            }
            None => panic!("event without type: {line}"),
        }
    }
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    // Bookmarks keep coming while idle.
    let more = read_lines(&mut body, 1, &mut buf).await;
    assert_eq!(
        more.first().and_then(|l| l["type"].as_str()),
        Some("BOOKMARK")
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_watch_without_a_resource_version_starts_with_the_current_objects_and_honours_timeout() {
    let (kube, c) = start().await;
    c.json(Method::POST, &sandboxes("sb"), &sandbox("x")).await;
    let resp = c
        .send(
            Method::GET,
            &format!("{}?watch=true&timeoutSeconds=1", sandboxes("sb")),
            None,
            Vec::new(),
        )
        .await;
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let lines = read_lines(&mut body, 10, &mut buf).await;
    assert_eq!(
        lines.len(),
        1,
        "one ADDED, then the stream ends at the timeout: {lines:?}"
    );
    assert_eq!(lines[0]["type"], "ADDED");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_watch_from_a_compacted_resource_version_gets_a_410_error_event() {
    let kube = FakeKube::builder()
        .namespace("sb")
        .controllers(false)
        .kubelet(false)
        .event_log_capacity(2)
        .start()
        .await
        .expect("start");
    let c = Client::new(&kube);
    for n in ["a", "b", "c", "d"] {
        c.json(Method::POST, &sandboxes("sb"), &sandbox(n)).await;
    }
    let resp = c
        .send(
            Method::GET,
            &format!("{}?watch=1&resourceVersion=1", sandboxes("sb")),
            None,
            Vec::new(),
        )
        .await;
    let mut body = resp.into_body();
    let lines = read_lines(&mut body, 1, &mut Vec::new()).await;
    assert_eq!(lines[0]["type"], "ERROR");
    assert_eq!(lines[0]["object"]["code"], 410);
    assert_eq!(lines[0]["object"]["reason"], "Expired");
    kube.shutdown().await;
}

#[tokio::test]
async fn http2_is_negotiated_through_alpn_and_serves_the_same_api() {
    let (kube, c) = start().await;
    let h2 = c.h2(kube.ca_pem());
    let (_, proto) = h2.connect().await;
    assert_eq!(proto, Proto::H2);
    assert_eq!(
        h2.json(Method::POST, &sandboxes("sb"), &sandbox("h"))
            .await
            .status,
        StatusCode::CREATED
    );
    assert_eq!(
        h2.get(&sandboxes("sb")).await.json()["items"][0]["metadata"]["name"],
        "h"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_open_watches_and_returns() {
    let (kube, c) = start().await;
    let resp = c
        .send(
            Method::GET,
            &format!("{}?watch=1", sandboxes("sb")),
            None,
            Vec::new(),
        )
        .await;
    let mut body = resp.into_body();
    let done = tokio::time::timeout(Duration::from_secs(60), kube.shutdown()).await;
    assert!(done.is_ok(), "shutdown waited on an open watch");
    assert!(read_lines(&mut body, 1, &mut Vec::new()).await.is_empty());
}

#[tokio::test]
async fn discovery_lists_the_agent_sandbox_kinds_and_openapi_serves_their_patch_operations() {
    let (kube, c) = start().await;
    let groups = c.get("/apis").await.json();
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(
        names.contains(&"agents.x-k8s.io") && names.contains(&"extensions.agents.x-k8s.io"),
        "{names:?}"
    );
    let core = c.get("/api/v1").await.json();
    assert!(
        core["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["name"] == "pods/exec")
    );
    let root = c.get("/openapi/v3").await.json();
    let url = root["paths"]["apis/agents.x-k8s.io/v1beta1"]["serverRelativeURL"]
        .as_str()
        .expect("url")
        .to_string();
    let doc = c.get(&url).await.json();
    assert!(doc["paths"].as_object().is_some_and(|p| !p.is_empty()));
    kube.shutdown().await;
}

#[tokio::test]
async fn generate_name_keeps_58_characters_of_its_prefix() {
    let (kube, c) = start().await;
    let prefix = "p".repeat(70);
    let body = json!({ "apiVersion": "v1", "kind": "Secret",
        "metadata": { "generateName": prefix } });
    let r = c
        .json(Method::POST, "/api/v1/namespaces/default/secrets", &body)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let name = r.json()["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_eq!(name.len(), 63, "{name}");
    assert!(name.starts_with(&"p".repeat(58)));
    kube.shutdown().await;
}
