//! The `ServiceAccount` admission plugin (plugin/pkg/admission/serviceaccount): a pod names a
//! service account (`default` when it names none) that must exist, gets the projected
//! `kube-api-access-XXXXX` volume with its token, the cluster's CA and its namespace mounted
//! read-only at [`MOUNT_PATH`] in every init container and container unless token automounting
//! is off (the pod's `automountServiceAccountToken` first, then the account's), and the
//! account's `imagePullSecrets` when it has none of its own. Mirror pods are left alone.

use super::{Lookup, spec_mut};
use serde_json::{Map, Value, json};

/// Where the token volume is mounted (`DefaultAPITokenMountPath`).
pub(crate) const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the token volume's name (`ServiceAccountVolumeName`).
const VOLUME_PREFIX: &str = "kube-api-access-";
/// The token's lifetime the plugin asks for (`WarnOnlyBoundTokenExpirationSeconds`).
const TOKEN_EXPIRATION_SECONDS: u64 = 3607;
/// The annotation that marks a mirror pod.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The projected volume source the plugin adds (`TokenVolumeSource`), mode 0644 set
/// explicitly as upstream does.
pub(crate) fn token_volume_source() -> Value {
    json!({
        "sources": [
            { "serviceAccountToken": { "expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token" } },
            { "configMap": { "name": "kube-root-ca.crt", "items": [ { "key": "ca.crt", "path": "ca.crt" } ] } },
            { "downwardAPI": { "items": [ {
                "path": "namespace",
                "fieldRef": { "apiVersion": "v1", "fieldPath": "metadata.namespace" },
            } ] } },
        ],
        "defaultMode": 420,
    })
}

/// Admits a new pod in `ns`; the reason for a refusal otherwise.
pub(super) fn admit(cluster: &dyn Lookup, ns: &str, pod: &mut Value) -> Result<(), String> {
    let mirror = pod
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .is_some();
    let Some(spec) = spec_mut(pod) else {
        return Ok(());
    };
    if mirror {
        if spec
            .get("serviceAccountName")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            return Err("a mirror pod may not reference service accounts".into());
        }
        return Ok(());
    }
    // The v1 `serviceAccount` is the deprecated name of `serviceAccountName`, read when the
    // latter is empty.
    let text = |spec: &Map<String, Value>, k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let name = text(spec, "serviceAccountName")
        .or_else(|| text(spec, "serviceAccount"))
        .unwrap_or_else(|| "default".to_string());
    spec.insert("serviceAccountName".into(), json!(name));
    spec.insert("serviceAccount".into(), json!(name));
    let Some(account) = cluster.get("", "serviceaccounts", ns, &name) else {
        return Err(format!(
            "error looking up service account {ns}/{name}: serviceaccount \"{name}\" not found"
        ));
    };
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            account
                .get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true);
    if automount {
        mount_token(spec);
    }
    let has_pull_secrets = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|l| !l.is_empty());
    let account_pull_secrets: Vec<Value> = account
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| json!({ "name": s.get("name").cloned().unwrap_or(json!("")) }))
        .collect();
    if !has_pull_secrets && !account_pull_secrets.is_empty() {
        spec.insert(
            "imagePullSecrets".into(),
            Value::Array(account_pull_secrets),
        );
    }
    Ok(())
}

/// Mounts the token volume in every init container and container that has nothing mounted at
/// [`MOUNT_PATH`], and adds the volume (named anew unless the pod has one of that prefix) when
/// one of them needs it.
fn mount_token(spec: &mut Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(VOLUME_PREFIX))
        .map(str::to_string);
    let has_volume = existing.is_some();
    let volume_name =
        existing.unwrap_or_else(|| format!("{VOLUME_PREFIX}{}", crate::meta::random_suffix()));
    let mount = json!({ "name": volume_name, "readOnly": true, "mountPath": MOUNT_PATH });
    let mut needed = false;
    for key in ["initContainers", "containers"] {
        let Some(Value::Array(list)) = spec.get_mut(key) else {
            continue;
        };
        for c in list.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            if mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH))
            {
                continue;
            }
            mounts.push(mount.clone());
            needed = true;
        }
    }
    if needed && !has_volume {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(list) = volumes.as_array_mut() {
            list.push(json!({ "name": volume_name, "projected": token_volume_source() }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Arc;

    #[derive(Default)]
    struct Accounts(HashMap<String, Value>);

    impl Lookup for Accounts {
        fn get(&self, _: &str, _: &str, _: &str, name: &str) -> Option<Arc<Value>> {
            self.0.get(name).cloned().map(Arc::new)
        }
        fn list(&self, _: &str, _: &str) -> Vec<Arc<Value>> {
            Vec::new()
        }
    }

    fn accounts(list: &[Value]) -> Accounts {
        Accounts(
            list.iter()
                .map(|a| {
                    (
                        a["metadata"]["name"].as_str().unwrap_or("").to_string(),
                        a.clone(),
                    )
                })
                .collect(),
        )
    }

    fn pod(spec: Value) -> Value {
        json!({ "metadata": { "name": "p" }, "spec": spec })
    }

    #[test]
    fn a_pod_gets_the_default_account_and_the_token_volume_in_every_container() {
        let cluster = accounts(&[json!({ "metadata": { "name": "default" } })]);
        let mut p = pod(json!({
            "initContainers": [ { "name": "i", "image": "busybox" } ],
            "containers": [ { "name": "c", "image": "busybox" } ],
        }));
        admit(&cluster, "ns", &mut p).expect("admitted");
        assert_eq!(p["spec"]["serviceAccountName"], "default");
        assert_eq!(p["spec"]["serviceAccount"], "default");
        let volume = &p["spec"]["volumes"][0];
        let name = volume["name"].as_str().expect("named");
        assert_eq!(name.len(), VOLUME_PREFIX.len() + 5, "{name}");
        assert!(name.starts_with(VOLUME_PREFIX));
        assert_eq!(volume["projected"], token_volume_source());
        for path in ["/spec/initContainers/0", "/spec/containers/0"] {
            assert_eq!(
                p.pointer(path).expect("container")["volumeMounts"],
                json!([ { "name": name, "readOnly": true, "mountPath": MOUNT_PATH } ])
            );
        }
    }

    #[test]
    fn automounting_is_the_pods_choice_before_the_accounts() {
        let cluster = accounts(&[
            json!({ "metadata": { "name": "quiet" }, "automountServiceAccountToken": false }),
        ]);
        let mut off =
            pod(json!({ "serviceAccountName": "quiet", "containers": [ { "name": "c" } ] }));
        admit(&cluster, "ns", &mut off).expect("admitted");
        assert!(off["spec"].get("volumes").is_none());
        let mut on = pod(json!({
            "serviceAccountName": "quiet", "automountServiceAccountToken": true,
            "containers": [ { "name": "c" } ],
        }));
        admit(&cluster, "ns", &mut on).expect("admitted");
        assert_eq!(on["spec"]["volumes"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn a_container_with_its_own_mount_at_the_path_keeps_it() {
        let cluster = accounts(&[json!({ "metadata": { "name": "default" } })]);
        let own = json!({ "name": "mine", "mountPath": MOUNT_PATH });
        let mut p = pod(json!({
            "volumes": [ { "name": "mine", "emptyDir": {} } ],
            "containers": [ { "name": "c", "volumeMounts": [ own.clone() ] } ],
        }));
        admit(&cluster, "ns", &mut p).expect("admitted");
        assert_eq!(p["spec"]["containers"][0]["volumeMounts"], json!([own]));
        assert_eq!(p["spec"]["volumes"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn a_missing_account_is_refused_with_the_plugins_reason() {
        let cluster = Accounts::default();
        let mut p = pod(json!({ "serviceAccount": "robot", "containers": [ { "name": "c" } ] }));
        let why = admit(&cluster, "ns", &mut p).expect_err("refused");
        assert_eq!(
            why,
            "error looking up service account ns/robot: serviceaccount \"robot\" not found"
        );
    }

    #[test]
    fn the_accounts_pull_secrets_go_to_a_pod_without_its_own() {
        let cluster = accounts(&[json!({
            "metadata": { "name": "default" },
            "imagePullSecrets": [ { "name": "regcred" } ],
        })]);
        let mut p = pod(json!({ "containers": [ { "name": "c" } ] }));
        admit(&cluster, "ns", &mut p).expect("admitted");
        assert_eq!(
            p["spec"]["imagePullSecrets"],
            json!([ { "name": "regcred" } ])
        );
    }
}
