//! Authentication and RBAC through kube-rs: service-account tokens (TokenRequest and token
//! Secrets) allowed and refused by Roles, by ClusterRoles bound in a namespace and by
//! aggregation; TokenReview; client certificates; impersonation; the RBAC kinds' validation.

use k8s_openapi::api::authentication::v1::{
    SelfSubjectReview, TokenRequest, TokenReview, TokenReviewSpec,
};
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{Pod, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::Status;
use kube::{Client, Config};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt::Debug;
use std::time::Duration;

const NS: &str = "team";

/// A server (API only: no agent-sandbox controller or kubelet) with namespace [`NS`].
async fn start() -> fakekube::FakeKube {
    fakekube::FakeKube::builder()
        .namespace(NS)
        .controllers(false)
        .kubelet(false)
        .start()
        .await
        .expect("fakekube starts")
}

/// A kube client from a kubeconfig the server wrote.
async fn client_from(kubeconfig: &str) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).expect("the kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube accepts the kubeconfig");
    Client::try_from(config).expect("kube builds a client")
}

/// A kube client that sends `token`.
async fn client_with_token(kube: &fakekube::FakeKube, token: &str) -> Client {
    client_from(&kube.kubeconfig_with_token(token)).await
}

/// The admin's client.
async fn admin(kube: &fakekube::FakeKube) -> Client {
    client_with_token(kube, kube.token()).await
}

fn from_json<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

/// The Status of a refused call.
fn api_error<T: Debug>(result: Result<T, kube::Error>) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error carrying a Status, got {other:?}"),
    }
}

/// Creates service account `name` in [`NS`] and returns a TokenRequest token for it.
async fn service_account_token(client: &Client, name: &str) -> String {
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), NS);
    sas.create(
        &PostParams::default(),
        &from_json(json!({ "metadata": { "name": name } })),
    )
    .await
    .expect("the service account is created");
    let request: TokenRequest = from_json(json!({ "spec": {} }));
    sas.create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a token is issued")
        .status
        .and_then(|s| s.token)
        .expect("a token")
}

/// `kubectl create role NAME --verb=... --resource=...` in [`NS`].
async fn create_role(client: &Client, name: &str, verbs: &[&str], group: &str, resources: &[&str]) {
    let roles: Api<Role> = Api::namespaced(client.clone(), NS);
    roles
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": name },
                "rules": [ { "apiGroups": [group], "resources": resources, "verbs": verbs } ],
            })),
        )
        .await
        .expect("the role is created");
}

/// A RoleBinding in `ns` of `kind`/`role` to service account `sa` of [`NS`].
async fn bind(client: &Client, ns: &str, name: &str, kind: &str, role: &str, sa: &str) {
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), ns);
    bindings
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": name },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role },
                "subjects": [ { "kind": "ServiceAccount", "name": sa, "namespace": NS } ],
            })),
        )
        .await
        .expect("the binding is created");
}

#[tokio::test]
async fn a_token_bound_by_a_role_may_do_what_the_role_grants_and_nothing_else() {
    let kube = start().await;
    let admin = admin(&kube).await;
    create_role(&admin, "pod-reader", &["get", "list"], "", &["pods"]).await;
    let token = service_account_token(&admin, "reader").await;
    let sa = client_with_token(&kube, &token).await;
    let pods: Api<Pod> = Api::namespaced(sa.clone(), NS);
    let before = api_error(pods.list(&ListParams::default()).await);
    assert_eq!(
        before.message,
        "pods is forbidden: User \"system:serviceaccount:team:reader\" cannot list resource \"pods\" in API group \"\" in the namespace \"team\""
    );

    bind(&admin, NS, "reader-pods", "Role", "pod-reader", "reader").await;
    pods.list(&ListParams::default())
        .await
        .expect("the binding takes effect on the next request");
    let secrets: Api<Secret> = Api::namespaced(sa.clone(), NS);
    let denied = api_error(secrets.list(&ListParams::default()).await);
    assert_eq!((denied.code, denied.reason.as_str()), (403, "Forbidden"));
    let elsewhere: Api<Pod> = Api::namespaced(sa, "default");
    assert_eq!(
        api_error(elsewhere.list(&ListParams::default()).await).code,
        403
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_cluster_role_bound_by_a_role_binding_grants_only_in_that_namespace() {
    let kube = start().await;
    let admin = admin(&kube).await;
    let token = service_account_token(&admin, "viewer").await;
    bind(&admin, NS, "viewer-view", "ClusterRole", "view", "viewer").await;
    let sa = client_with_token(&kube, &token).await;
    Api::<Pod>::namespaced(sa.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("view lets it list pods in its namespace");
    let secrets = api_error(
        Api::<Secret>::namespaced(sa.clone(), NS)
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(secrets.code, 403, "view grants no secrets");
    let other = api_error(
        Api::<Pod>::namespaced(sa.clone(), "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(other.code, 403);
    let cluster = api_error(Api::<Pod>::all(sa).list(&ListParams::default()).await);
    assert_eq!(
        cluster.message,
        "pods is forbidden: User \"system:serviceaccount:team:viewer\" cannot list resource \"pods\" in API group \"\" at the cluster scope"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_cluster_role_labelled_to_aggregate_into_view_reaches_every_view_binding() {
    let kube = start().await;
    let admin = admin(&kube).await;
    let token = service_account_token(&admin, "watcher").await;
    bind(&admin, NS, "watcher-view", "ClusterRole", "view", "watcher").await;
    let sandboxes = kube::api::ApiResource {
        group: "agents.x-k8s.io".into(),
        version: "v1beta1".into(),
        api_version: "agents.x-k8s.io/v1beta1".into(),
        kind: "Sandbox".into(),
        plural: "sandboxes".into(),
    };
    let sa = client_with_token(&kube, &token).await;
    let theirs: Api<kube::api::DynamicObject> = Api::namespaced_with(sa, NS, &sandboxes);
    assert_eq!(
        api_error(theirs.list(&ListParams::default()).await).code,
        403
    );

    let cluster_roles: Api<ClusterRole> = Api::all(admin.clone());
    cluster_roles
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {
                    "name": "sandbox-viewer",
                    "labels": { "rbac.authorization.k8s.io/aggregate-to-view": "true" },
                },
                "rules": [ { "apiGroups": ["agents.x-k8s.io"], "resources": ["sandboxes"], "verbs": ["get", "list"] } ],
            })),
        )
        .await
        .expect("the aggregated role is created");
    let has_sandboxes = |role: Option<&Value>| {
        role.and_then(|r| r.get("rules"))
            .and_then(Value::as_array)
            .is_some_and(|rules| rules.iter().any(|r| r["resources"] == json!(["sandboxes"])))
    };
    for aggregated in ["view", "edit", "admin"] {
        kube.wait_for(
            "clusterroles",
            "",
            aggregated,
            Duration::from_secs(60),
            has_sandboxes,
        )
        .await
        .unwrap_or_else(|e| panic!("{aggregated} gathers the rule: {e}"));
    }
    theirs
        .list(&ListParams::default())
        .await
        .expect("the aggregated rule reaches the view binding");
    kube.shutdown().await;
}

#[tokio::test]
async fn the_default_cluster_roles_and_bindings_exist_with_aggregated_rules() {
    let kube = start().await;
    let roles: Api<ClusterRole> = Api::all(admin(&kube).await);
    for name in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
    ] {
        let role = roles.get(name).await.expect("a default cluster role");
        assert_eq!(
            role.metadata.labels.unwrap_or_default()["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
    }
    let view = roles.get("view").await.expect("view");
    let rules = view.rules.expect("view's rules are aggregated at start");
    assert!(rules.iter().any(|r| {
        r.resources
            .as_deref()
            .is_some_and(|res| res.contains(&"pods".to_string()))
    }));
    let edit = roles.get("edit").await.expect("edit").rules.expect("rules");
    assert!(edit.len() > rules.len(), "edit holds view's rules and more");
    let masters: Api<ClusterRoleBinding> = Api::all(admin(&kube).await);
    let binding = masters
        .get("cluster-admin")
        .await
        .expect("the masters binding");
    assert_eq!(
        binding.subjects.expect("subjects")[0].name,
        "system:masters"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn token_review_authenticates_issued_tokens_for_their_audiences_only() {
    let kube = start().await;
    let admin = admin(&kube).await;
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), NS);
    sas.create(
        &PostParams::default(),
        &from_json(json!({ "metadata": { "name": "api-user" } })),
    )
    .await
    .expect("created");
    let request: TokenRequest = from_json(json!({ "spec": { "audiences": ["vault"] } }));
    let token = sas
        .create_token_request("api-user", &PostParams::default(), &request)
        .await
        .expect("issued")
        .status
        .and_then(|s| s.token)
        .expect("a token");
    let reviews: Api<TokenReview> = Api::all(admin.clone());
    let review = |token: String, audiences: Option<Vec<String>>| {
        let reviews = reviews.clone();
        async move {
            reviews
                .create(
                    &PostParams::default(),
                    &TokenReview {
                        spec: TokenReviewSpec { audiences, token },
                        ..TokenReview::default()
                    },
                )
                .await
                .expect("a review")
                .status
                .expect("a status")
        }
    };
    let ok = review(token.clone(), Some(vec!["vault".into()])).await;
    assert_eq!(ok.authenticated, Some(true));
    assert_eq!(ok.audiences, Some(vec!["vault".to_string()]));
    let user = ok.user.expect("a user");
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:team:api-user")
    );
    assert!(
        user.groups
            .unwrap_or_default()
            .contains(&"system:serviceaccounts:team".to_string())
    );

    // Not for the API server: its audience is the issuer.
    let for_api = review(token.clone(), None).await;
    assert_ne!(for_api.authenticated, Some(true));
    assert!(for_api.error.is_some());
    let refused = api_error(
        Api::<Pod>::namespaced(client_with_token(&kube, &token).await, NS)
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(refused.code, 401);

    let mut forged = token.clone();
    forged.pop();
    let bad = review(forged, Some(vec!["vault".into()])).await;
    assert_ne!(bad.authenticated, Some(true));
    kube.shutdown().await;
}

#[tokio::test]
async fn tokens_stop_working_when_their_service_account_is_deleted() {
    let kube = start().await;
    let admin = admin(&kube).await;
    let token = service_account_token(&admin, "short-lived").await;
    let whoami: Api<SelfSubjectReview> = Api::all(client_with_token(&kube, &token).await);
    let me = whoami
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("whoami")
        .status
        .expect("status")
        .user_info
        .expect("user info");
    assert_eq!(
        me.username.as_deref(),
        Some("system:serviceaccount:team:short-lived")
    );
    Api::<ServiceAccount>::namespaced(admin, NS)
        .delete("short-lived", &DeleteParams::default())
        .await
        .expect("deleted");
    let gone = api_error(
        whoami
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await,
    );
    assert_eq!(gone.code, 401);
    kube.shutdown().await;
}

#[tokio::test]
async fn a_legacy_token_secret_is_filled_works_as_its_account_and_is_revoked_with_it() {
    let kube = start().await;
    let admin = admin(&kube).await;
    create_role(&admin, "pod-lister", &["list"], "", &["pods"]).await;
    Api::<ServiceAccount>::namespaced(admin.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "runner" } })),
        )
        .await
        .expect("created");
    bind(&admin, NS, "runner", "Role", "pod-lister", "runner").await;
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), NS);
    secrets
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {
                    "name": "runner-token",
                    "annotations": { "kubernetes.io/service-account.name": "runner" },
                },
                "type": "kubernetes.io/service-account-token",
            })),
        )
        .await
        .expect("created");
    let filled = kube
        .wait_for(
            "secrets",
            NS,
            "runner-token",
            Duration::from_secs(60),
            |s| s.is_some_and(|s| s.pointer("/data/token").is_some()),
        )
        .await
        .expect("the token controller fills the Secret")
        .expect("present");
    let secret: Secret = from_json(filled);
    let data = secret.data.expect("data");
    assert_eq!(data["namespace"].0, NS.as_bytes());
    assert_eq!(data["ca.crt"].0, kube.ca_pem().as_bytes());
    let annotations = secret.metadata.annotations.expect("annotations");
    assert!(annotations.contains_key("kubernetes.io/service-account.uid"));
    let token = String::from_utf8(data["token"].0.clone()).expect("a text token");

    let runner = client_with_token(&kube, &token).await;
    Api::<Pod>::namespaced(runner.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("the Role lets the token list pods");
    let denied = api_error(
        Api::<Secret>::namespaced(runner.clone(), NS)
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        denied.message,
        "secrets is forbidden: User \"system:serviceaccount:team:runner\" cannot list resource \"secrets\" in API group \"\" in the namespace \"team\""
    );
    secrets
        .delete("runner-token", &DeleteParams::default())
        .await
        .expect("deleted");
    let revoked = api_error(
        Api::<Pod>::namespaced(runner, NS)
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(revoked.code, 401);
    kube.shutdown().await;
}

#[tokio::test]
async fn a_token_secret_of_a_missing_service_account_is_deleted() {
    let kube = start().await;
    let secrets: Api<Secret> = Api::namespaced(admin(&kube).await, NS);
    secrets
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {
                    "name": "orphan-token",
                    "annotations": { "kubernetes.io/service-account.name": "nobody" },
                },
                "type": "kubernetes.io/service-account-token",
            })),
        )
        .await
        .expect("created");
    kube.wait_for(
        "secrets",
        NS,
        "orphan-token",
        Duration::from_secs(60),
        |s| s.is_none(),
    )
    .await
    .expect("the token controller deletes it");
    kube.shutdown().await;
}

#[tokio::test]
async fn a_client_certificate_authenticates_as_its_common_name_in_its_organizations() {
    let kube = start().await;
    let cert = kube.client_certificate("jane", &["devs"]);
    let jane = client_from(&kube.kubeconfig_with_client_certificate(&cert)).await;
    let me = Api::<SelfSubjectReview>::all(jane.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("whoami")
        .status
        .expect("status")
        .user_info
        .expect("user info");
    assert_eq!(me.username.as_deref(), Some("jane"));
    assert_eq!(
        me.groups,
        Some(vec!["devs".to_string(), "system:authenticated".to_string()])
    );
    let denied = api_error(
        Api::<Pod>::namespaced(jane.clone(), NS)
            .list(&ListParams::default())
            .await,
    );
    assert!(
        denied.message.contains("User \"jane\" cannot list"),
        "{}",
        denied.message
    );

    let bindings: Api<ClusterRoleBinding> = Api::all(admin(&kube).await);
    bindings
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "devs-view" },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view" },
                "subjects": [ { "kind": "Group", "name": "devs" } ],
            })),
        )
        .await
        .expect("created");
    Api::<Pod>::namespaced(jane, NS)
        .list(&ListParams::default())
        .await
        .expect("the group binding applies");

    let masters = kube.client_certificate("kubernetes-admin", &["system:masters"]);
    let root = client_from(&kube.kubeconfig_with_client_certificate(&masters)).await;
    Api::<Secret>::all(root)
        .list(&ListParams::default())
        .await
        .expect("system:masters may do anything");
    kube.shutdown().await;
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_and_acts_as_the_user() {
    let kube = start().await;
    let admin_client = admin(&kube).await;
    create_role(&admin_client, "pod-reader", &["list"], "", &["pods"]).await;
    let bindings: Api<RoleBinding> = Api::namespaced(admin_client.clone(), NS);
    bindings
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "bob-reads" },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader" },
                "subjects": [ { "kind": "User", "name": "bob" } ],
            })),
        )
        .await
        .expect("created");
    let as_user = |token: String, user: &str| {
        let mut kc = kube.kubeconfig_with_token(&token);
        kc = kc.replace("    token:", &format!("    as: {user}\n    token:"));
        kc
    };
    let bob = client_from(&as_user(kube.token().to_string(), "bob")).await;
    let review: SelfSubjectAccessReview = from_json(json!({
        "spec": { "resourceAttributes": { "namespace": NS, "verb": "list", "resource": "pods" } }
    }));
    let allowed = Api::<SelfSubjectAccessReview>::all(bob.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("a review")
        .status
        .expect("status");
    assert!(allowed.allowed);
    assert_eq!(
        allowed.reason.as_deref(),
        Some(
            "RBAC: allowed by RoleBinding \"bob-reads/team\" of Role \"pod-reader\" to User \"bob\""
        )
    );
    let denied = api_error(
        Api::<Secret>::namespaced(bob, NS)
            .list(&ListParams::default())
            .await,
    );
    assert!(
        denied.message.contains("User \"bob\" cannot list"),
        "{}",
        denied.message
    );

    let token = service_account_token(&admin_client, "plain").await;
    let plain_as_bob = client_from(&as_user(token, "bob")).await;
    let refused = api_error(
        Api::<Pod>::namespaced(plain_as_bob, NS)
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        refused.message,
        "users \"bob\" is forbidden: User \"system:serviceaccount:team:plain\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_binding_to_a_missing_role_is_denied_with_the_reason_and_its_role_ref_cannot_change() {
    let kube = start().await;
    let admin = admin(&kube).await;
    let token = service_account_token(&admin, "hopeful").await;
    bind(&admin, NS, "hope", "Role", "not-yet", "hopeful").await;
    let denied = api_error(
        Api::<Pod>::namespaced(client_with_token(&kube, &token).await, NS)
            .list(&ListParams::default())
            .await,
    );
    assert!(
        denied.message.ends_with(
            "in the namespace \"team\": RBAC: role.rbac.authorization.k8s.io \"not-yet\" not found"
        ),
        "{}",
        denied.message
    );
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), NS);
    let mut b = bindings.get("hope").await.expect("the binding");
    b.role_ref.name = "other".into();
    let invalid = api_error(bindings.replace("hope", &PostParams::default(), &b).await);
    assert_eq!(invalid.code, 422);
    assert_eq!(
        invalid.message,
        "RoleBinding.rbac.authorization.k8s.io \"hope\" is invalid: roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"Role\",\"Name\":\"other\"}: cannot change roleRef"
    );
    let roles: Api<Role> = Api::namespaced(admin, NS);
    let bad = api_error(
        roles
            .create(
                &PostParams::default(),
                &from_json(json!({ "metadata": { "name": "empty-rule" }, "rules": [ { "apiGroups": [""], "resources": ["pods"] } ] })),
            )
            .await,
    );
    assert_eq!(
        bad.message,
        "Role.rbac.authorization.k8s.io \"empty-rule\" is invalid: rules[0].verbs: Required value: verbs must contain at least one value"
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn bind_service_account_writes_rbac_objects_that_authorize_its_tokens() {
    let kube = start().await;
    let admin = admin(&kube).await;
    let token = service_account_token(&admin, "bound").await;
    kube.bind_service_account(
        NS,
        "bound",
        vec![fakekube::Rule::new([""], ["pods"], ["list"]).in_namespaces([NS])],
    )
    .expect("bound");
    let role = kube
        .get("roles", NS, "fakekube:sa:team:bound")
        .expect("a Role is written");
    assert_eq!(role["rules"][0]["resources"], json!(["pods"]));
    let sa = client_with_token(&kube, &token).await;
    Api::<Pod>::namespaced(sa.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("allowed");
    kube.bind_service_account(NS, "bound", Vec::new())
        .expect("rebound to nothing");
    assert!(kube.get("roles", NS, "fakekube:sa:team:bound").is_none());
    assert_eq!(
        api_error(
            Api::<Pod>::namespaced(sa, NS)
                .list(&ListParams::default())
                .await
        )
        .code,
        403
    );
    let missing = kube
        .bind_service_account(
            "nowhere",
            "x",
            vec![fakekube::Rule::new([""], ["pods"], ["list"]).in_namespaces(["nowhere"])],
        )
        .expect_err("the namespace does not exist");
    assert_eq!(missing.code, 404);
    kube.shutdown().await;
}

#[tokio::test]
async fn subject_access_reviews_answer_for_the_user_they_name() {
    use k8s_openapi::api::authorization::v1::{LocalSubjectAccessReview, SubjectAccessReview};
    let kube = start().await;
    let admin = admin(&kube).await;
    create_role(&admin, "pod-reader", &["get"], "", &["pods"]).await;
    Api::<RoleBinding>::namespaced(admin.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "devs-read" },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader" },
                "subjects": [ { "kind": "Group", "name": "devs" } ],
            })),
        )
        .await
        .expect("created");
    let sars: Api<SubjectAccessReview> = Api::all(admin.clone());
    let ask = |groups: Value, namespace: &str| -> SubjectAccessReview {
        from_json(json!({ "spec": {
            "user": "dana", "groups": groups,
            "resourceAttributes": { "namespace": namespace, "verb": "get", "resource": "pods", "name": "p" },
        } }))
    };
    let yes = sars
        .create(&PostParams::default(), &ask(json!(["devs"]), NS))
        .await
        .expect("a review")
        .status
        .expect("status");
    assert!(yes.allowed);
    assert_eq!(
        yes.reason.as_deref(),
        Some(
            "RBAC: allowed by RoleBinding \"devs-read/team\" of Role \"pod-reader\" to Group \"devs\""
        )
    );
    let no = sars
        .create(&PostParams::default(), &ask(json!([]), NS))
        .await
        .expect("a review")
        .status
        .expect("status");
    assert!(!no.allowed);
    let nobody: SubjectAccessReview = from_json(
        json!({ "spec": { "resourceAttributes": { "verb": "get", "resource": "pods" } } }),
    );
    let invalid = api_error(sars.create(&PostParams::default(), &nobody).await);
    assert_eq!(invalid.code, 422);
    assert!(
        invalid
            .message
            .contains("at least one of user or group must be specified"),
        "{}",
        invalid.message
    );

    let local: Api<LocalSubjectAccessReview> = Api::namespaced(admin, NS);
    let in_ns: LocalSubjectAccessReview = from_json(json!({ "spec": {
        "user": "dana", "groups": ["devs"],
        "resourceAttributes": { "verb": "get", "resource": "pods" },
    } }));
    let answered = local
        .create(&PostParams::default(), &in_ns)
        .await
        .expect("a local review");
    assert!(
        answered.status.expect("status").allowed,
        "the path's namespace applies"
    );
    let elsewhere: LocalSubjectAccessReview = from_json(json!({ "spec": {
        "user": "dana",
        "resourceAttributes": { "namespace": "default", "verb": "get", "resource": "pods" },
    } }));
    let mismatch = api_error(local.create(&PostParams::default(), &elsewhere).await);
    assert_eq!(
        (mismatch.code, mismatch.message.as_str()),
        (
            400,
            "spec.resourceAttributes.namespace must match namespace: team"
        )
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn impersonating_groups_needs_the_impersonate_verb_on_each_group() {
    let kube = start().await;
    let admin = admin(&kube).await;
    Api::<ClusterRole>::all(admin.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "impersonate-bob" },
                "rules": [ { "apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"] } ],
            })),
        )
        .await
        .expect("created");
    let token = service_account_token(&admin, "helper").await;
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "helper-impersonates" },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-bob" },
                "subjects": [ { "kind": "ServiceAccount", "name": "helper", "namespace": NS } ],
            })),
        )
        .await
        .expect("created");
    let kubeconfig = |groups: &str| {
        kube.kubeconfig_with_token(&token)
            .replace("    token:", &format!("    as: bob\n{groups}    token:"))
    };
    let whoami = |client: Client| async move {
        Api::<SelfSubjectReview>::all(client)
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
    };
    let me = whoami(client_from(&kubeconfig("")).await)
        .await
        .expect("the helper may act as bob")
        .status
        .and_then(|s| s.user_info)
        .expect("user info");
    assert_eq!(me.username.as_deref(), Some("bob"));
    assert_eq!(me.groups, Some(vec!["system:authenticated".to_string()]));
    let with_group = client_from(&kubeconfig("    as-groups: [devs]\n")).await;
    let refused = api_error(whoami(with_group).await);
    assert_eq!(
        refused.message,
        "groups \"devs\" is forbidden: User \"system:serviceaccount:team:helper\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope"
    );
    let not_alice = client_from(
        &kube
            .kubeconfig_with_token(&token)
            .replace("    token:", "    as: alice\n    token:"),
    )
    .await;
    assert_eq!(api_error(whoami(not_alice).await).code, 403);
    kube.shutdown().await;
}

#[tokio::test]
async fn resource_names_limit_a_rule_to_named_gets_and_watches() {
    use futures_util::StreamExt;
    let kube = start().await;
    let admin = admin(&kube).await;
    let admin_pods: Api<Pod> = Api::namespaced(admin.clone(), NS);
    for name in ["mine", "theirs"] {
        admin_pods
            .create(
                &PostParams::default(),
                &from_json(json!({
                    "metadata": { "name": name },
                    "spec": { "containers": [ { "name": "c", "image": "busybox:1.36" } ] },
                })),
            )
            .await
            .expect("created");
    }
    Api::<Role>::namespaced(admin.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "one-pod" },
                "rules": [ { "apiGroups": [""], "resources": ["pods"], "resourceNames": ["mine"], "verbs": ["get", "list", "watch"] } ],
            })),
        )
        .await
        .expect("created");
    let token = service_account_token(&admin, "narrow").await;
    bind(&admin, NS, "narrow", "Role", "one-pod", "narrow").await;
    let pods: Api<Pod> = Api::namespaced(client_with_token(&kube, &token).await, NS);
    pods.get("mine").await.expect("the named pod");
    assert_eq!(api_error(pods.get("theirs").await).code, 403);
    assert_eq!(api_error(pods.list(&ListParams::default()).await).code, 403);
    let one = kube::api::WatchParams::default().fields("metadata.name=mine");
    let mut events = pods
        .watch(&one, "0")
        .await
        .expect("a watch pinned to the named pod")
        .boxed();
    let first = events
        .next()
        .await
        .expect("an event")
        .expect("not an error");
    assert!(
        matches!(first, kube::api::WatchEvent::Added(p) if p.metadata.name.as_deref() == Some("mine"))
    );
    let all = kube::api::WatchParams::default();
    match pods.watch(&all, "0").await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403),
        Err(other) => panic!("expected a 403 Status, got {other}"),
        Ok(_) => panic!("an unpinned watch is refused"),
    }
    kube.shutdown().await;
}

#[tokio::test]
async fn paths_are_authorized_by_non_resource_rules() {
    let kube = start().await;
    let admin = admin(&kube).await;
    let token = service_account_token(&admin, "prober").await;
    let prober = client_with_token(&kube, &token).await;
    let get = |client: Client, path: &'static str| async move {
        let req = http::Request::get(path)
            .body(Vec::new())
            .expect("a request");
        client.request_text(req).await
    };
    get(prober.clone(), "/apis")
        .await
        .expect("system:discovery lets every authenticated user discover");
    get(prober.clone(), "/healthz")
        .await
        .expect("system:public-info-viewer");
    let refused = api_error(get(prober.clone(), "/metrics").await);
    assert_eq!(
        (refused.code, refused.message.as_str()),
        (
            403,
            "forbidden: User \"system:serviceaccount:team:prober\" cannot get path \"/metrics\""
        )
    );
    Api::<ClusterRoleBinding>::all(admin)
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "prober-monitoring" },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:monitoring" },
                "subjects": [ { "kind": "ServiceAccount", "name": "prober", "namespace": NS } ],
            })),
        )
        .await
        .expect("created");
    let allowed_but_absent = api_error(get(prober, "/metrics").await);
    assert_eq!(
        allowed_but_absent.code, 404,
        "authorized, and fakekube serves no metrics"
    );
    kube.shutdown().await;
}
