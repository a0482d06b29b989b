//! The registry: built-in kinds, lookups, and CRD-defined entries installed and removed.

use super::*;
use serde_json::Value;

/// An entry as a CRD would define it.
fn crd_entry(version: &str, storage: &str) -> ResourceType {
    let mut e = ResourceType::absent("stable.example.com", version, "widgets", "Widget");
    e.served = true;
    e.storage_version = storage.to_string();
    e.verbs = ALL_VERBS;
    e.defined_by = Some("widgets.stable.example.com".into());
    e
}

#[test]
fn built_in_kinds_are_found_by_group_version_plural_kind_and_plural() {
    let r = Registry::new();
    let pods = r.find("", "v1", "pods").expect("pods are built in");
    assert_eq!(pods.kind, "Pod");
    assert_eq!(pods.list_kind, "PodList");
    assert!(pods.is_storage_version());
    assert!(r.find("", "v2", "pods").is_none());
    assert_eq!(
        r.by_kind("apps/v1", "Deployment").map(|d| d.plural.clone()),
        Some("deployments".to_string())
    );
    assert_eq!(
        r.by_plural("networkpolicies").map(|d| d.group.clone()),
        Some("networking.k8s.io".to_string())
    );
}

#[test]
fn installing_a_crd_serves_its_versions_and_removing_it_retires_them() {
    let r = Registry::new();
    let before = r.generation();
    r.install(
        "widgets.stable.example.com",
        vec![crd_entry("v1", "v1"), crd_entry("v2", "v1")],
    );
    assert!(r.generation() > before);
    let v1 = r
        .find("stable.example.com", "v1", "widgets")
        .expect("v1 served");
    let v2 = r
        .find("stable.example.com", "v2", "widgets")
        .expect("v2 served");
    assert_eq!(
        r.by_plural("widgets").map(|w| w.version.clone()),
        Some("v2".into())
    );
    assert_eq!(
        r.storage("stable.example.com", "widgets")
            .map(|w| w.version.clone()),
        Some("v1".into())
    );
    r.install("widgets.stable.example.com", vec![crd_entry("v1", "v1")]);
    assert!(
        !v1.retired.is_cancelled(),
        "an unchanged version keeps its watches"
    );
    assert!(
        v2.retired.is_cancelled(),
        "a version no longer served ends its watches"
    );
    assert!(r.find("stable.example.com", "v2", "widgets").is_none());
    r.remove("widgets.stable.example.com");
    assert!(v1.retired.is_cancelled());
    assert!(r.find("stable.example.com", "v1", "widgets").is_none());
    assert!(r.storage("stable.example.com", "widgets").is_none());
}

#[test]
fn converting_with_strategy_none_rewrites_only_the_api_version() {
    let r = Registry::new();
    let v2 = crd_entry("v2", "v1");
    let stored = serde_json::json!({ "apiVersion": "stable.example.com/v1", "kind": "Widget", "spec": { "a": 1 } });
    let out = r
        .convert(&v2, &stored, "v2")
        .expect("converts")
        .expect("changed");
    assert_eq!(out["apiVersion"], "stable.example.com/v2");
    assert_eq!(out["spec"], stored["spec"]);
    assert!(r.convert(&v2, &stored, "v1").expect("converts").is_none());
}

#[test]
fn a_webhook_without_a_converter_fails_as_an_unreachable_webhook_does() {
    let r = Registry::new();
    let mut v2 = crd_entry("v2", "v1");
    v2.conversion = Conversion::Webhook {
        url: "https://conv.system.svc:443/convert".into(),
        service: Some("conv".into()),
    };
    let stored = serde_json::json!({ "apiVersion": "stable.example.com/v1", "kind": "Widget" });
    let e = r.convert(&v2, &stored, "v2").expect_err("no converter");
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        "conversion webhook for stable.example.com/v1, Kind=Widget failed: Post \"https://conv.system.svc:443/convert?timeout=30s\": service \"conv\" not found"
    );

    #[derive(Debug)]
    struct Renamer;
    impl Converter for Renamer {
        fn convert(&self, object: &Value, api_version: &str) -> Result<Value, String> {
            let mut o = object.clone();
            o["apiVersion"] = serde_json::json!(api_version);
            o["converted"] = serde_json::json!(true);
            Ok(o)
        }
    }
    r.register_converter("stable.example.com", "Widget", Arc::new(Renamer));
    let out = r
        .convert(&v2, &stored, "v2")
        .expect("converts")
        .expect("changed");
    assert_eq!(out["converted"], true);
}

#[test]
fn a_conversion_prunes_what_the_target_version_does_not_know() {
    let r = Registry::new();
    let mut v1 = crd_entry("v1", "v1");
    v1.schema = crate::schema::compile(&serde_json::json!({
        "type": "object",
        "properties": { "spec": { "type": "object", "properties": { "name": { "type": "string" } } } },
    }))
    .ok();
    let v2 = crd_entry("v2", "v1");
    r.install("widgets.stable.example.com", vec![v1, v2]);
    let v2 = r
        .find("stable.example.com", "v2", "widgets")
        .expect("v2 served");
    let sent = serde_json::json!({ "apiVersion": "stable.example.com/v2", "kind": "Widget",
        "metadata": { "name": "w" }, "spec": { "name": "n", "extra": "x" } });
    let stored = r
        .convert(&v2, &sent, "v1")
        .expect("converts")
        .expect("changed");
    assert_eq!(stored["spec"], serde_json::json!({ "name": "n" }));
    assert_eq!(stored["metadata"]["name"], "w");
}
