use super::*;
use serde_json::json;

const ALPHA: &str = "agents.x-k8s.io/v1alpha1";
const BETA: &str = "agents.x-k8s.io/v1beta1";
const EXT_ALPHA: &str = "extensions.agents.x-k8s.io/v1alpha1";
const EXT_BETA: &str = "extensions.agents.x-k8s.io/v1beta1";

fn convert(kind: Kind, object: &Value, to: &str) -> Value {
    Upstream(kind).convert(object, to).expect("converts")
}

fn sandbox(replicas: Option<i64>, status_replicas: i64) -> Value {
    let mut s = json!({
        "apiVersion": ALPHA, "kind": "Sandbox",
        "metadata": { "name": "s", "namespace": "default", "labels": { "foo": "bar" },
            "annotations": { "baz": "qux", "api.agents.x-k8s.io/v1alpha1-sandbox-state": "some-old-state" } },
        "spec": {
            "podTemplate": { "spec": { "containers": [{ "name": "c", "image": "agent-image:latest" }] } },
            "volumeClaimTemplates": [{ "metadata": { "name": "workspace" }, "spec": {} }],
            "shutdownPolicy": "Delete",
        },
        "status": { "replicas": status_replicas, "nodeName": "dropped" },
    });
    if let Some(r) = replicas {
        s["spec"]["replicas"] = json!(r);
    }
    s
}

#[test]
fn sandbox_replicas_become_the_operating_mode_and_come_back_unchanged() {
    for (replicas, mode, status_replicas) in [
        (None, "Running", 1),
        (Some(1), "Running", 1),
        (Some(0), "Suspended", 0),
    ] {
        let src = sandbox(replicas, status_replicas);
        let hub = convert(Kind::Sandbox, &src, BETA);
        assert_eq!(hub["apiVersion"], BETA);
        assert_eq!(hub["spec"]["operatingMode"], mode, "{replicas:?}");
        assert!(hub["spec"].get("replicas").is_none());
        assert_eq!(hub["spec"]["shutdownPolicy"], "Delete");
        assert_eq!(
            hub["spec"]["volumeClaimTemplates"][0]["metadata"]["name"],
            "workspace"
        );
        assert_eq!(hub["metadata"]["annotations"]["baz"], "qux");
        let state: Value = serde_json::from_str(
            hub["metadata"]["annotations"]["api.agents.x-k8s.io/v1alpha1-sandbox-state"]
                .as_str()
                .expect("the state is kept"),
        )
        .expect("the state is JSON");
        assert!(
            state["metadata"]["annotations"]
                .get("api.agents.x-k8s.io/v1alpha1-sandbox-state")
                .is_none(),
            "the state does not nest"
        );
        let back = convert(Kind::Sandbox, &hub, ALPHA);
        assert_eq!(back["spec"].get("replicas"), src["spec"].get("replicas"));
        assert_eq!(
            back["status"].get("replicas").and_then(Value::as_i64),
            Some(status_replicas).filter(|r| *r != 0)
        );
        assert_eq!(back["metadata"]["annotations"], json!({ "baz": "qux" }));
        assert_eq!(
            back["spec"]["podTemplate"],
            json!({ "spec": src["spec"]["podTemplate"]["spec"], "metadata": {} }),
            "Go's PodMetadata struct is always there"
        );
    }
}

#[test]
fn a_hub_sandbox_without_state_gets_replicas_from_its_mode() {
    for (mode, replicas) in [("Running", 1), ("Suspended", 0), ("", 1)] {
        let hub = json!({ "apiVersion": BETA, "kind": "Sandbox", "metadata": { "name": "s" },
            "spec": { "podTemplate": { "spec": {} }, "operatingMode": mode },
            "status": { "nodeName": "n", "podIPs": ["10.0.0.1"] } });
        let alpha = convert(Kind::Sandbox, &hub, ALPHA);
        assert_eq!(alpha["spec"]["replicas"], replicas, "{mode}");
        assert_eq!(
            alpha["status"].get("replicas").and_then(Value::as_i64),
            Some(replicas).filter(|r| *r != 0)
        );
        assert!(alpha["status"].get("nodeName").is_none());
        assert_eq!(alpha["status"]["podIPs"], json!(["10.0.0.1"]));
    }
}

#[test]
fn a_sandbox_suspended_at_v1beta1_reads_as_zero_replicas_at_v1alpha1() {
    let hub = convert(Kind::Sandbox, &sandbox(Some(1), 1), BETA);
    let mut suspended = hub.clone();
    suspended["spec"]["operatingMode"] = json!("Suspended");
    let alpha = convert(Kind::Sandbox, &suspended, ALPHA);
    assert_eq!(alpha["spec"]["replicas"], 0);
    let hub0 = convert(Kind::Sandbox, &sandbox(Some(0), 0), BETA);
    let mut resumed = hub0.clone();
    resumed["spec"]["operatingMode"] = json!("Running");
    assert_eq!(
        convert(Kind::Sandbox, &resumed, ALPHA)["spec"]["replicas"],
        1,
        "an original 0 resumes as 1"
    );
}

#[test]
fn a_broken_state_annotation_fails_the_conversion() {
    let hub = json!({ "apiVersion": BETA, "kind": "Sandbox",
        "metadata": { "name": "s", "annotations": { "api.agents.x-k8s.io/v1alpha1-sandbox-state": "{" } },
        "spec": { "podTemplate": { "spec": {} }, "operatingMode": "Running" } });
    let e = Upstream(Kind::Sandbox)
        .convert(&hub, ALPHA)
        .expect_err("not JSON");
    assert!(
        e.starts_with("failed to unmarshal v1alpha1 Sandbox state: "),
        "{e}"
    );
}

fn claim(warm_pool: Option<&str>, sandbox: &str) -> Value {
    let mut c = json!({
        "apiVersion": EXT_ALPHA, "kind": "SandboxClaim",
        "metadata": { "name": "my-claim", "namespace": "default",
            "annotations": { "api.agents.x-k8s.io/v1alpha1-sandboxclaim-state": "some-old-state" } },
        "spec": { "sandboxTemplateRef": { "name": "my-template" } },
    });
    if let Some(p) = warm_pool {
        c["spec"]["warmpool"] = json!(p);
    }
    if !sandbox.is_empty() {
        c["status"] = json!({ "sandbox": { "name": sandbox } });
    }
    c
}

#[test]
fn a_claim_points_at_its_pool_its_members_pool_or_a_shadow_pool_and_round_trips() {
    for (policy, sandbox, pool) in [
        (Some("my-pool"), "my-claim", "my-pool"),
        (Some("none"), "my-claim", "shadow-pool-my-template"),
        (Some("default"), "my-claim", "shadow-pool-my-template"),
        (Some("my-pool"), "my-pool-abcde", "my-pool"),
        (Some("default"), "my-pool-abcde", "my-pool"),
        (Some("my-pool"), "", "my-pool"),
        (None, "", "shadow-pool-my-template"),
    ] {
        let src = claim(policy, sandbox);
        let hub = convert(Kind::SandboxClaim, &src, EXT_BETA);
        assert_eq!(
            hub["spec"]["warmPoolRef"]["name"], pool,
            "{policy:?} {sandbox}"
        );
        assert_eq!(hub["spec"]["additionalPodMetadata"], json!({}));
        let back = convert(Kind::SandboxClaim, &hub, EXT_ALPHA);
        assert_eq!(
            back["spec"]["sandboxTemplateRef"],
            src["spec"]["sandboxTemplateRef"]
        );
        assert_eq!(back["spec"].get("warmpool"), src["spec"].get("warmpool"));
        assert!(back["metadata"].get("annotations").is_none());
    }
}

#[test]
fn a_claim_whose_pool_changed_at_v1beta1_reads_that_pool_at_v1alpha1() {
    let mut hub = convert(Kind::SandboxClaim, &claim(Some("my-pool"), ""), EXT_BETA);
    hub["spec"]["warmPoolRef"]["name"] = json!("other-pool");
    let alpha = convert(Kind::SandboxClaim, &hub, EXT_ALPHA);
    assert_eq!(alpha["spec"]["warmpool"], "other-pool");
    assert_eq!(alpha["spec"]["sandboxTemplateRef"]["name"], "my-template");
}

#[test]
fn a_hub_claim_without_state_reads_its_pool_as_template_and_policy() {
    let shadow = json!({ "apiVersion": EXT_BETA, "kind": "SandboxClaim", "metadata": { "name": "c" },
        "spec": { "warmPoolRef": { "name": "shadow-pool-t" }, "volumeClaimTemplates": [{}] } });
    let alpha = convert(Kind::SandboxClaim, &shadow, EXT_ALPHA);
    assert_eq!(
        alpha["spec"],
        json!({ "sandboxTemplateRef": { "name": "t" }, "warmpool": "default", "additionalPodMetadata": {} })
    );
    let named = json!({ "apiVersion": EXT_BETA, "kind": "SandboxClaim", "metadata": { "name": "c" },
        "spec": { "warmPoolRef": { "name": "p" }, "env": [{ "name": "A", "value": "" }],
            "lifecycle": { "shutdownPolicy": "Retain" } },
        "status": { "sandbox": {} } });
    let alpha = convert(Kind::SandboxClaim, &named, EXT_ALPHA);
    assert_eq!(alpha["spec"]["sandboxTemplateRef"], json!({ "name": "p" }));
    assert_eq!(alpha["spec"]["warmpool"], "p");
    assert_eq!(alpha["spec"]["env"], json!([{ "name": "A", "value": "" }]));
    assert_eq!(
        alpha["spec"]["lifecycle"],
        json!({ "shutdownPolicy": "Retain" })
    );
    assert!(alpha.get("status").is_none(), "an empty status is left out");
}

#[test]
fn a_template_carries_its_volume_claim_templates_policy_in_an_annotation() {
    let hub = json!({ "apiVersion": EXT_BETA, "kind": "SandboxTemplate", "metadata": { "name": "t" },
        "spec": { "podTemplate": { "spec": { "containers": [] } }, "volumeClaimTemplatesPolicy": "Overrides",
            "envVarsInjectionPolicy": "Allowed" } });
    let alpha = convert(Kind::SandboxTemplate, &hub, EXT_ALPHA);
    assert_eq!(
        alpha["metadata"]["annotations"],
        json!({ "api.agents.x-k8s.io/v1beta1-volume-claim-templates-policy": "Overrides" })
    );
    assert!(alpha["spec"].get("volumeClaimTemplatesPolicy").is_none());
    let back = convert(Kind::SandboxTemplate, &alpha, EXT_BETA);
    assert_eq!(back["spec"]["volumeClaimTemplatesPolicy"], "Overrides");
    assert_eq!(back["spec"]["envVarsInjectionPolicy"], "Allowed");
    let annotations = back["metadata"]["annotations"]
        .as_object()
        .expect("annotations");
    assert_eq!(
        annotations.keys().collect::<Vec<_>>(),
        ["api.agents.x-k8s.io/v1alpha1-sandboxtemplate-state"]
    );
    let mut bad = alpha.clone();
    bad["metadata"]["annotations"]["api.agents.x-k8s.io/v1beta1-volume-claim-templates-policy"] =
        json!("Sometimes");
    let e = Upstream(Kind::SandboxTemplate)
        .convert(&bad, EXT_BETA)
        .expect_err("not a policy");
    assert_eq!(
        e,
        "invalid VolumeClaimTemplatesPolicy annotation value: \"Sometimes\""
    );
}

#[test]
fn a_warm_pool_without_replicas_at_v1beta1_has_one_at_v1alpha1() {
    let hub = json!({ "apiVersion": EXT_BETA, "kind": "SandboxWarmPool", "metadata": { "name": "p" },
        "spec": { "sandboxTemplateRef": { "name": "t" } },
        "status": { "replicas": 2, "observedGeneration": 3 } });
    let alpha = convert(Kind::SandboxWarmPool, &hub, EXT_ALPHA);
    assert_eq!(
        alpha["spec"],
        json!({ "replicas": 1, "sandboxTemplateRef": { "name": "t" } })
    );
    assert_eq!(alpha["status"], json!({ "replicas": 2 }));
    let back = convert(Kind::SandboxWarmPool, &alpha, EXT_BETA);
    assert_eq!(back["spec"]["replicas"], 1);
    assert!(
        back["metadata"]["annotations"]
            .get("api.agents.x-k8s.io/v1alpha1-sandboxwarmpool-state")
            .is_some()
    );
}

#[test]
fn an_unknown_version_is_refused() {
    let s = sandbox(None, 0);
    let e = Upstream(Kind::Sandbox)
        .convert(&s, "agents.x-k8s.io/v2")
        .expect_err("no v2");
    assert_eq!(
        e,
        "conversion from agents.x-k8s.io/v1alpha1 to agents.x-k8s.io/v2 is not supported for Sandbox"
    );
    let same = convert(Kind::Sandbox, &s, ALPHA);
    assert_eq!(same, s, "the same version is left alone");
}
