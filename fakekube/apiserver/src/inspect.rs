//! Reading the store in-process, for [`FakeKube`](crate::FakeKube)'s handle and the tests that
//! watch the controllers and the kubelet work: one object by plural name, waiting for one to
//! reach a state (driven by the store's change notifications, never by fixed sleeps), and the
//! leak check.

use crate::meta;
use crate::registry::ResourceType;
use crate::store::Store;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A [`FakeKube::wait_for`](crate::FakeKube::wait_for) whose condition did not hold in time.
#[derive(Debug, Clone, thiserror::Error)]
#[error("timed out after {timeout:?} waiting for {resource}/{namespace}/{name}")]
pub struct WaitTimeout {
    /// The resource waited on (plural, e.g. `sandboxes`).
    pub resource: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// How long the wait lasted.
    pub timeout: Duration,
    /// The object as last seen (`None`: absent, or an unknown resource).
    pub last: Option<Value>,
}

/// The served resource with this plural name (the first group that serves it, in its
/// preferred version).
fn by_plural(store: &Store, plural: &str) -> Option<Arc<ResourceType>> {
    store.registry().by_plural(plural)
}

/// The namespaces whose objects are the cluster's own, never a run's leak.
pub const SYSTEM_NAMESPACES: [&str; 2] = ["kube-system", "local-path-storage"];

/// One object by plural resource name, namespace and name.
pub fn get(store: &Store, resource: &str, namespace: &str, name: &str) -> Option<Value> {
    let rt = by_plural(store, resource)?;
    let ns = if rt.namespaced { namespace } else { "" };
    store.get_opt(&rt, ns, name).map(|v| Value::clone(&v))
}

/// Waits until `pred` holds for the object (or its absence), re-checking after every change.
pub async fn wait_for(
    store: &Store,
    resource: &str,
    namespace: &str,
    name: &str,
    timeout: Duration,
    pred: impl Fn(Option<&Value>) -> bool,
) -> Result<Option<Value>, WaitTimeout> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut changes = store.subscribe();
    loop {
        changes.borrow_and_update();
        let current = get(store, resource, namespace, name);
        if by_plural(store, resource).is_some() && pred(current.as_ref()) {
            return Ok(current);
        }
        let timed_out = tokio::select! {
            r = changes.changed() => r.is_err(),
            _ = tokio::time::sleep_until(deadline) => true,
        };
        if timed_out {
            let last = get(store, resource, namespace, name);
            if by_plural(store, resource).is_some() && pred(last.as_ref()) {
                return Ok(last);
            }
            return Err(WaitTimeout {
                resource: resource.to_string(),
                namespace: namespace.to_string(),
                name: name.to_string(),
                timeout,
                last,
            });
        }
    }
}

/// Waits until a core/v1 Event in `namespace` about the object named `involved` has reason
/// `reason`, re-checking after every change; returns the Event.
pub async fn wait_for_event(
    store: &Store,
    namespace: &str,
    involved: &str,
    reason: &str,
    timeout: Duration,
) -> Result<Value, WaitTimeout> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut changes = store.subscribe();
    let find = || {
        let rt = store.registry().find("", "v1", "events")?;
        store
            .list_all(&rt, Some(namespace))
            .into_iter()
            .find(|e| {
                e.get("reason").and_then(Value::as_str) == Some(reason)
                    && e.pointer("/involvedObject/name").and_then(Value::as_str) == Some(involved)
            })
            .map(|e| Value::clone(&e))
    };
    loop {
        changes.borrow_and_update();
        if let Some(ev) = find() {
            return Ok(ev);
        }
        let timed_out = tokio::select! {
            r = changes.changed() => r.is_err(),
            _ = tokio::time::sleep_until(deadline) => true,
        };
        if timed_out {
            return find().ok_or_else(|| WaitTimeout {
                resource: "events".into(),
                namespace: namespace.to_string(),
                name: format!("{involved} ({reason})"),
                timeout,
                last: None,
            });
        }
    }
}

/// Every Sandbox, SandboxClaim, Pod, Service and PVC still present, as `plural/ns/name`,
/// but for the API server's own `default/kubernetes` Service.
pub fn leaks(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for plural in [
        "sandboxes",
        "sandboxclaims",
        "pods",
        "services",
        "persistentvolumeclaims",
    ] {
        let Some(rt) = by_plural(store, plural) else {
            continue;
        };
        for obj in store.list_all(&rt, None) {
            let ns = meta::meta_str(&obj, "namespace").unwrap_or("");
            let name = meta::meta_str(&obj, "name").unwrap_or("");
            // The API server's own Service is the cluster's, not a run's, and so is what runs
            // in the system namespaces (kind's CoreDNS, kube-proxy, the control plane's mirror
            // pods, the local-path provisioner).
            if (plural, ns, name) == ("services", "default", "kubernetes")
                || SYSTEM_NAMESPACES.contains(&ns)
            {
                continue;
            }
            out.push(format!("{plural}/{ns}/{name}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{StoreSettings, WriteOptions};
    use serde_json::json;

    fn store() -> Arc<Store> {
        let s = Arc::new(Store::new(StoreSettings::default(), Arc::default()));
        if let Some(ns) = s.registry().find("", "v1", "namespaces") {
            s.create(
                &ns,
                "",
                json!({ "metadata": { "name": "default" } }),
                WriteOptions::default(),
            )
            .expect("namespace created");
        }
        s
    }

    #[test]
    fn leaks_list_every_tracked_kind_and_nothing_else() {
        let s = store();
        let pods = s.registry().find("", "v1", "pods").expect("pods served");
        let secrets = s
            .registry()
            .find("", "v1", "secrets")
            .expect("secrets served");
        let pod = json!({ "metadata": { "name": "p" }, "spec": { "containers": [ { "name": "c", "image": "i" } ] } });
        s.create(&pods, "default", pod, WriteOptions::default())
            .expect("pod created");
        s.create(
            &secrets,
            "default",
            json!({ "metadata": { "name": "s" } }),
            WriteOptions::default(),
        )
        .expect("secret created");
        assert_eq!(leaks(&s), ["pods/default/p"]);
    }

    #[tokio::test]
    async fn wait_for_wakes_on_a_change_and_times_out_with_the_last_state() {
        let s = store();
        let pods = s.registry().find("", "v1", "pods").expect("pods served");
        let waiter = {
            let s = s.clone();
            tokio::spawn(async move {
                wait_for(&s, "pods", "default", "p", Duration::from_secs(60), |o| {
                    o.is_some()
                })
                .await
            })
        };
        tokio::task::yield_now().await;
        let pod = json!({ "metadata": { "name": "p" }, "spec": { "containers": [ { "name": "c", "image": "i" } ] } });
        s.create(&pods, "default", pod, WriteOptions::default())
            .expect("pod created");
        let got = waiter.await.expect("task").expect("condition met");
        assert_eq!(
            got.as_ref().and_then(|p| p["metadata"]["name"].as_str()),
            Some("p")
        );
        let e = wait_for(&s, "pods", "default", "p", Duration::from_millis(20), |o| {
            o.is_none()
        })
        .await
        .expect_err("the pod stays");
        assert!(e.last.is_some());
    }
}
