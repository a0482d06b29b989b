//! The ClusterRoles and ClusterRoleBindings a server starts with, read from `bootstrap.yaml`
//! (compiled in, as the JSON the build script writes): `cluster-admin` bound to
//! `system:masters`; `admin`, `edit` and `view`, filled by aggregation; discovery, the self
//! reviews and the public health paths for every authenticated user (health and version for
//! anonymous ones too).

use super::validation::GROUP;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// The label every bootstrap object carries.
const BOOTSTRAP_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// The annotation that lets the API server reconcile a bootstrap object at start.
const AUTOUPDATE: (&str, &str) = ("rbac.authorization.kubernetes.io/autoupdate", "true");

/// The bootstrap objects, each with its kind (`ClusterRole` or `ClusterRoleBinding`), roles
/// first.
pub fn objects() -> &'static [(&'static str, Value)] {
    static OBJECTS: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    OBJECTS.get_or_init(|| match build() {
        Ok(list) => list,
        Err(e) => {
            tracing::error!(error = %e, "the compiled-in RBAC bootstrap policy does not parse");
            Vec::new()
        }
    })
}

fn build() -> Result<Vec<(&'static str, Value)>, String> {
    let doc: Value = serde_json::from_str(include_str!(concat!(
        env!("OUT_DIR"),
        "/rbac-bootstrap.json"
    )))
    .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for role in doc
        .get("clusterRoles")
        .and_then(Value::as_array)
        .ok_or("no clusterRoles")?
    {
        let mut role = role.clone();
        if let Some(o) = role.as_object_mut() {
            o.insert("apiVersion".into(), json!(format!("{GROUP}/v1")));
            o.insert("kind".into(), json!("ClusterRole"));
        }
        mark(&mut role);
        out.push(("ClusterRole", role));
    }
    for b in doc
        .get("clusterRoleBindings")
        .and_then(Value::as_array)
        .ok_or("no clusterRoleBindings")?
    {
        let name = b
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a binding without a name")?;
        let subjects: Vec<Value> = b
            .get("subjects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| {
                let mut s = s.clone();
                s["apiGroup"] = json!(GROUP);
                s
            })
            .collect();
        let mut binding = json!({
            "apiVersion": format!("{GROUP}/v1"),
            "kind": "ClusterRoleBinding",
            "metadata": { "name": name },
            "roleRef": { "apiGroup": GROUP, "kind": "ClusterRole", "name": name },
            "subjects": subjects,
        });
        mark(&mut binding);
        out.push(("ClusterRoleBinding", binding));
    }
    Ok(out)
}

/// Adds the bootstrap label and the autoupdate annotation.
fn mark(obj: &mut Value) {
    let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for (key, (k, v)) in [("labels", BOOTSTRAP_LABEL), ("annotations", AUTOUPDATE)] {
        let map = md.entry(key).or_insert_with(|| json!({}));
        if let Some(m) = map.as_object_mut() {
            m.insert(k.into(), json!(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::meta_str;

    #[test]
    fn the_policy_parses_with_the_roles_and_bindings_every_cluster_has() {
        let objects = objects();
        let names = |kind: &str| -> Vec<&str> {
            objects
                .iter()
                .filter(|(k, _)| *k == kind)
                .filter_map(|(_, o)| meta_str(o, "name"))
                .collect()
        };
        let roles = names("ClusterRole");
        for want in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
        ] {
            assert!(roles.contains(&want), "{want} missing from {roles:?}");
        }
        let bindings = names("ClusterRoleBinding");
        for want in [
            "cluster-admin",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
        ] {
            assert!(bindings.contains(&want), "{want} missing from {bindings:?}");
        }
        for (kind, o) in objects {
            assert_eq!(
                o["metadata"]["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
            let mut copy = o.clone();
            let causes = crate::rbac::validation::admit(kind, &mut copy, None);
            assert!(causes.is_empty(), "{kind} {o}: {causes:?}");
        }
    }
}
