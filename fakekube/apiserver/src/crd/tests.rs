//! CRD admission: defaults, the CRD's own validation, names and conditions, and the registry
//! entries it becomes.

use super::*;
use crate::registry::Conversion;
use serde_json::json;

/// A valid CRD of the tests' own kind, `widgets.stable.example.com`.
fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": "widgets.stable.example.com" },
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": { "plural": "widgets", "kind": "Widget", "shortNames": ["wd"] },
            "versions": [
                { "name": "v1", "served": true, "storage": true,
                  "schema": { "openAPIV3Schema": { "type": "object" } } },
                { "name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                  "schema": { "openAPIV3Schema": { "type": "object" } } },
            ],
        },
    })
}

/// Admits `crd` as a create next to `others`.
fn admit_with(crd: &mut Value, others: &[&Value]) -> Result<(), ApiError> {
    let registry = Registry::new();
    admit(
        crd,
        None,
        Others {
            crds: others,
            registry: &registry,
        },
        NOW,
    )
}

/// The cluster's time the tests admit at.
const NOW: &str = "2026-01-02T03:04:05Z";

/// The causes of a refused CRD as `field: message`.
fn causes(e: &ApiError) -> Vec<String> {
    e.details
        .as_ref()
        .and_then(|d| d["causes"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// The condition `type_name` of a CRD as (status, reason, message).
fn condition(crd: &Value, type_name: &str) -> (String, String, String) {
    let c = crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_name)
        .cloned()
        .unwrap_or_default();
    let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
    (s("status"), s("reason"), s("message"))
}

#[test]
fn an_admitted_crd_is_defaulted_established_and_records_its_storage_version() {
    let mut crd = widget_crd();
    admit_with(&mut crd, &[]).expect("admitted");
    assert_eq!(crd["spec"]["conversion"], json!({ "strategy": "None" }));
    assert_eq!(crd["spec"]["names"]["singular"], "widget");
    assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(crd["status"]["acceptedNames"]["shortNames"], json!(["wd"]));
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(
        condition(&crd, "NamesAccepted"),
        (
            "True".into(),
            "NoConflicts".into(),
            "no conflicts found".into()
        )
    );
    assert_eq!(
        condition(&crd, "Established"),
        (
            "True".into(),
            "InitialNamesAccepted".into(),
            "the initial names have been accepted".into()
        )
    );
    let stamps: Vec<&Value> = crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| &c["lastTransitionTime"])
        .collect();
    assert_eq!(stamps, [&json!(NOW), &json!(NOW)], "the cluster's time");
}

#[test]
fn a_bad_crd_is_invalid_with_a_cause_naming_each_field() {
    let mut crd = widget_crd();
    crd["metadata"]["name"] = json!("gadgets.stable.example.com");
    crd["spec"]["scope"] = json!("Galaxy");
    crd["spec"]["group"] = json!("nodot");
    crd["spec"]["names"]["kind"] = json!("Bad Kind");
    crd["spec"]["versions"][1]["storage"] = json!(true);
    crd["spec"]["versions"][0]["name"] = json!("V1");
    let e = admit_with(&mut crd, &[]).expect_err("refused");
    assert_eq!(e.code, 422);
    assert!(e.message.starts_with("CustomResourceDefinition.apiextensions.k8s.io \"gadgets.stable.example.com\" is invalid: ["), "{}", e.message);
    let got = causes(&e);
    for want in [
        "metadata.name: Invalid value: \"gadgets.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
        "spec.group: Invalid value: \"nodot\": should be a domain with at least one dot",
        "spec.scope: Unsupported value: \"Galaxy\": supported values: \"Cluster\", \"Namespaced\"",
        "spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    ] {
        assert!(
            got.iter().any(|g| g == want),
            "missing {want:?} in {got:#?}"
        );
    }
    assert!(
        got.iter()
            .any(|g| g.starts_with("spec.versions: Invalid value: ")
                && g.ends_with(": must have exactly one version marked as storage version")),
        "{got:#?}"
    );
    assert!(got.iter().any(|g| g.starts_with("spec.names.kind: Invalid value: \"Bad Kind\": may have mixed case, but should otherwise match: a DNS-1035 label")), "{got:#?}");
}

#[test]
fn a_version_without_a_schema_or_with_a_bad_scale_path_is_refused() {
    let mut crd = widget_crd();
    crd["spec"]["versions"][1]
        .as_object_mut()
        .map(|v| v.remove("schema"));
    crd["spec"]["versions"][0]["subresources"] =
        json!({ "scale": { "specReplicasPath": ".status.replicas", "statusReplicasPath": "" } });
    let got = causes(&admit_with(&mut crd, &[]).expect_err("refused"));
    assert_eq!(
        got,
        [
            "spec.versions[0].subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
            "spec.versions[0].subresources.scale.statusReplicasPath: Required value",
            "spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required",
        ]
    );
}

#[test]
fn webhook_conversion_needs_a_client_config_and_review_versions() {
    let mut crd = widget_crd();
    crd["spec"]["conversion"] = json!({ "strategy": "Webhook", "webhook": {} });
    let got = causes(&admit_with(&mut crd, &[]).expect_err("refused"));
    assert_eq!(
        got,
        [
            "spec.conversion.webhook.clientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.webhook.conversionReviewVersions: Required value: must include at least one of v1, v1beta1",
        ]
    );
    let mut ok = widget_crd();
    ok["spec"]["conversion"] = json!({ "strategy": "Webhook", "webhook": {
        "clientConfig": { "service": { "name": "conv", "namespace": "sys", "path": "/convert" } },
        "conversionReviewVersions": ["v1"],
    } });
    admit_with(&mut ok, &[]).expect("admitted");
    assert_eq!(
        ok["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
        443
    );
    let v1 = entries(&ok)
        .into_iter()
        .find(|e| e.version == "v1")
        .expect("v1");
    assert_eq!(
        v1.conversion,
        Conversion::Webhook {
            url: "https://conv.sys.svc:443/convert".into(),
            service: Some("conv".into()),
        }
    );
}

#[test]
fn a_name_another_crd_of_the_group_accepted_is_refused_and_the_crd_not_established() {
    let mut first = widget_crd();
    admit_with(&mut first, &[]).expect("admitted");
    let mut second = widget_crd();
    second["metadata"]["name"] = json!("gizmos.stable.example.com");
    second["spec"]["names"] = json!({ "plural": "gizmos", "kind": "Widget", "listKind": "GizmoList", "shortNames": ["gz"] });
    admit_with(&mut second, &[&first]).expect("a conflict is not a refusal");
    assert_eq!(
        condition(&second, "NamesAccepted"),
        (
            "False".into(),
            "KindConflict".into(),
            "\"Widget\" is already in use".into()
        )
    );
    assert_eq!(
        condition(&second, "Established"),
        (
            "False".into(),
            "NotAccepted".into(),
            "not all names are accepted".into()
        )
    );
    let mut third = widget_crd();
    third["metadata"]["name"] = json!("things.stable.example.com");
    third["spec"]["names"] = json!({ "plural": "things", "kind": "Thing", "shortNames": ["wd"] });
    admit_with(&mut third, &[&first]).expect("admitted");
    assert_eq!(
        condition(&third, "NamesAccepted"),
        (
            "False".into(),
            "ShortNamesConflict".into(),
            "\"wd\" is already in use".into()
        )
    );
}

#[test]
fn a_name_a_built_in_kind_serves_in_the_group_is_refused() {
    let mut crd = widget_crd();
    crd["metadata"] = json!({ "name": "networkpolicies.networking.k8s.io",
        "annotations": { "api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111" } });
    crd["spec"]["group"] = json!("networking.k8s.io");
    crd["spec"]["names"] = json!({ "plural": "networkpolicies", "kind": "CustomPolicy" });
    admit_with(&mut crd, &[]).expect("admitted");
    assert_eq!(
        condition(&crd, "NamesAccepted"),
        (
            "False".into(),
            "PluralConflict".into(),
            "\"networkpolicies\" is already in use".into()
        )
    );
    let mut unapproved = crd.clone();
    unapproved["metadata"]
        .as_object_mut()
        .map(|m| m.remove("annotations"));
    unapproved.as_object_mut().map(|o| o.remove("status"));
    let got = causes(&admit_with(&mut unapproved, &[]).expect_err("refused"));
    assert_eq!(
        got,
        [
            "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        ]
    );
}

#[test]
fn an_update_may_not_change_the_group_plural_or_established_kind() {
    let registry = Registry::new();
    let others = Others {
        crds: &[],
        registry: &registry,
    };
    let mut old = widget_crd();
    admit(&mut old, None, others, NOW).expect("admitted");
    let mut new = old.clone();
    new["spec"]["names"]["kind"] = json!("Gadget");
    new["spec"]["names"]["listKind"] = json!("GadgetList");
    let got = causes(&admit(&mut new, Some(&old), others, NOW).expect_err("refused"));
    assert_eq!(
        got,
        ["spec.names.kind: Invalid value: \"Gadget\": field is immutable"]
    );
    let mut dropped = old.clone();
    dropped["spec"]["versions"] = json!([
        { "name": "v2", "served": true, "storage": true, "schema": { "openAPIV3Schema": { "type": "object" } } },
    ]);
    let got = causes(&admit(&mut dropped, Some(&old), others, NOW).expect_err("refused"));
    assert_eq!(
        got,
        [
            "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and v1 is removed from status.storedVersions"
        ]
    );
}

#[test]
fn each_version_becomes_an_entry_and_a_deprecated_one_recommends_a_newer_one() {
    let mut crd = widget_crd();
    admit_with(&mut crd, &[]).expect("admitted");
    let entries = entries(&crd);
    assert_eq!(entries.len(), 2);
    let beta = entries
        .iter()
        .find(|e| e.version == "v1beta1")
        .expect("v1beta1");
    assert_eq!(beta.storage_version, "v1");
    assert_eq!(
        beta.deprecation_warning.as_deref(),
        Some("stable.example.com/v1beta1 Widget is deprecated; use stable.example.com/v1 Widget")
    );
    assert_eq!(
        beta.defined_by.as_deref(),
        Some("widgets.stable.example.com")
    );
    assert!(beta.namespaced);
    assert_eq!(beta.short_names, ["wd"]);
}
