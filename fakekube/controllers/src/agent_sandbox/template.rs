//! The SandboxTemplate controller (`extensions/controllers/sandboxtemplate_controller.go`
//! upstream).
//!
//! It labels each template with `agents.x-k8s.io/sandbox-template-ref-hash=NameHash(name)` and,
//! while `networkPolicyManagement` is `Managed` (the default), keeps a NetworkPolicy named
//! `<template>-network-policy` controlled by the template: its podSelector is the ref-hash
//! label, its rules the template's `networkPolicy`, or a secure default (ingress only from the
//! sandbox router, egress to the public internet only). `Unmanaged` deletes the owned policy.
//! A NetworkPolicy of that name controlled by something else is left alone.

use super::{
    Cluster, Requeue, TEMPLATE_REF_HASH_LABEL, at, controlled_by, controller_ref, create, delete,
    deleting, label, modify, name_hash, set_map_key, str_at,
};
use crate::client::{Delete, Kind, Part};
use serde_json::{Value, json};

/// Reconciles one SandboxTemplate.
pub(crate) fn reconcile(cluster: Cluster<'_>, ns: &str, name: &str) -> Requeue {
    let tpl = cluster.api.get(Kind::SandboxTemplate, ns, name)?;
    if deleting(&tpl) {
        return None;
    }
    let hash = name_hash(name);
    let tpl = if label(&tpl, TEMPLATE_REF_HASH_LABEL) == Some(hash.as_str()) {
        tpl
    } else {
        match modify(cluster, Kind::SandboxTemplate, ns, name, Part::Main, |v| {
            set_map_key(
                v,
                &["metadata", "labels"],
                TEMPLATE_REF_HASH_LABEL,
                Some(&hash),
            );
        }) {
            Ok(Some(t)) => t,
            Ok(None) => return None,
            Err(e) => {
                tracing::debug!(template = name, error = %e, "labelling a template");
                return e.is_conflict().then_some(super::CONFLICT_RETRY);
            }
        }
    };
    let np_name = format!("{name}-network-policy");
    let existing = cluster.api.get(Kind::NetworkPolicy, ns, &np_name);
    if str_at(&tpl, &["spec", "networkPolicyManagement"]) == Some("Unmanaged") {
        if let Some(np) = existing
            && controlled_by(&np, &tpl)
            && let Err(e) = delete(
                cluster,
                Kind::NetworkPolicy,
                ns,
                &np_name,
                &Delete::default(),
            )
        {
            tracing::debug!(template = name, error = %e.message, "deleting a network policy");
        }
        return None;
    }
    let desired = desired_spec(&tpl, &hash);
    match existing {
        Some(np) => {
            if !controlled_by(&np, &tpl) {
                tracing::debug!(
                    template = name,
                    "refusing to update NetworkPolicy {np_name:?} as it is not controlled by SandboxTemplate {name:?}"
                );
                return None;
            }
            if np.get("spec") == Some(&desired) {
                return None;
            }
            if let Err(e) = modify(
                cluster,
                Kind::NetworkPolicy,
                ns,
                &np_name,
                Part::Main,
                |v| {
                    if let Some(o) = v.as_object_mut() {
                        o.insert("spec".into(), desired.clone());
                    }
                },
            ) {
                tracing::debug!(template = name, error = %e, "updating a network policy");
                return e.is_conflict().then_some(super::CONFLICT_RETRY);
            }
        }
        None => {
            let body = json!({
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {
                    "name": np_name,
                    "namespace": ns,
                    "ownerReferences": [controller_ref(Kind::SandboxTemplate, &tpl)],
                },
                "spec": desired,
            });
            if let Err(e) = create(cluster, Kind::NetworkPolicy, ns, body) {
                tracing::debug!(template = name, error = %e.message, "creating a network policy");
            }
        }
    }
    None
}

/// The policy a template asks for: its own rules, or the secure default.
fn desired_spec(tpl: &Value, hash: &str) -> Value {
    let selector = json!({ "matchLabels": { TEMPLATE_REF_HASH_LABEL: hash } });
    let Some(np) = at(tpl, &["spec", "networkPolicy"]).filter(|v| !v.is_null()) else {
        return default_spec(selector);
    };
    let mut spec = json!({
        "podSelector": selector,
        "policyTypes": ["Ingress", "Egress"],
    });
    for key in ["ingress", "egress"] {
        if let Some(rules) = np.get(key).filter(|v| !v.is_null()) {
            spec[key] = rules.clone();
        }
    }
    spec
}

/// Ingress only from the sandbox router; egress anywhere but private and link-local ranges.
fn default_spec(selector: Value) -> Value {
    json!({
        "podSelector": selector,
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [ { "from": [ {
            "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": "agent-sandbox-system" } },
            "podSelector": { "matchLabels": { "app": "sandbox-router" } },
        } ] } ],
        "egress": [ { "to": [
            { "ipBlock": { "cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"] } },
            { "ipBlock": { "cidr": "::/0", "except": ["fc00::/7", "fe80::/10"] } },
        ] } ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_without_rules_gets_the_secure_default_policy() {
        let tpl = json!({ "metadata": { "name": "t" }, "spec": {} });
        let spec = desired_spec(&tpl, "abc");
        assert_eq!(
            spec["podSelector"]["matchLabels"][TEMPLATE_REF_HASH_LABEL],
            "abc"
        );
        assert_eq!(
            spec["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app"],
            "sandbox-router"
        );
        assert_eq!(spec["egress"][0]["to"][1]["ipBlock"]["cidr"], "::/0");
    }

    #[test]
    fn template_rules_replace_the_default_and_absent_lists_stay_absent() {
        let tpl = json!({ "metadata": { "name": "t" }, "spec": { "networkPolicy": { "egress": [ {} ] } } });
        let spec = desired_spec(&tpl, "abc");
        assert_eq!(spec["egress"], json!([{}]));
        assert!(spec.get("ingress").is_none());
        assert_eq!(spec["policyTypes"], json!(["Ingress", "Egress"]));
    }
}
