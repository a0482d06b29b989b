//! The `DefaultIngressClass` admission plugin (plugin/pkg/admission/network/defaultingressclass):
//! a new Ingress that names no class (no `spec.ingressClassName` and no
//! `kubernetes.io/ingress.class` annotation) gets the IngressClass annotated
//! `ingressclass.kubernetes.io/is-default-class: "true"`, the newest when several are.

use super::Lookup;
use serde_json::{Value, json};

/// The annotation that marks the default class.
const IS_DEFAULT: &str = "ingressclass.kubernetes.io/is-default-class";
/// The annotation older Ingresses name their class with.
const LEGACY_CLASS: &str = "kubernetes.io/ingress.class";

/// Sets a new Ingress's class to the default one, when it names none.
pub(super) fn admit(cluster: &dyn Lookup, ingress: &mut Value) {
    let names_class = ingress
        .pointer("/spec/ingressClassName")
        .is_some_and(|c| !c.is_null())
        || ingress
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(LEGACY_CLASS))
            .is_some();
    if names_class {
        return;
    }
    let created = |c: &Value| {
        c.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let newest = cluster
        .list("networking.k8s.io", "ingressclasses")
        .into_iter()
        .filter(|c| {
            c.pointer("/metadata/annotations")
                .and_then(|a| a.get(IS_DEFAULT))
                .and_then(Value::as_str)
                == Some("true")
        })
        .max_by(|a, b| created(a).cmp(&created(b)));
    let Some(name) = newest
        .as_deref()
        .and_then(|c| c.pointer("/metadata/name"))
        .and_then(Value::as_str)
    else {
        return;
    };
    if let Some(o) = ingress.as_object_mut() {
        let spec = o.entry("spec").or_insert_with(|| json!({}));
        if let Some(spec) = spec.as_object_mut() {
            spec.insert("ingressClassName".into(), json!(name));
        }
    }
}
