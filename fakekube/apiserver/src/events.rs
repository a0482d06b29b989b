//! The Events' TTL (kube-apiserver's `--event-ttl`, one hour): Events are deleted when it runs
//! out. The Event recorders every component writes with (the legacy `tools/record` one and the
//! `events.k8s.io` one) are clients of the API and live in `fakekube-machinery`'s `events`.

use crate::store::Store;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Starts the Event TTL as one task that runs until `shutdown`: it waits on the cluster's clock
/// for the next Event's TTL to run out and deletes what did ([`Store::expire_events`]); with
/// no Event stored, it waits for a write. Its waits are not timers the auto-advancing clock
/// jumps to: expiry is housekeeping, not work the cluster waits on.
pub fn spawn_expiry(store: Arc<Store>, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = store.subscribe();
        loop {
            changes.borrow_and_update();
            match store.next_event_expiry() {
                Some(at) => tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = store.clock().sleep_until_unlisted(at) => {
                        store.expire_events();
                    }
                },
                None => tokio::select! {
                    () = shutdown.cancelled() => return,
                    r = changes.changed() => if r.is_err() { return },
                },
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ClockMode};
    use crate::meta::meta_str;
    use crate::registry::ResourceType;
    use crate::store::{StoreSettings, WriteOptions};
    use fakekube_machinery::events::{Emitter, EventType, Recorder, SPAM_REFILL};
    use serde_json::Value;
    use serde_json::json;
    use std::time::Duration;

    fn events_kind(store: &Store) -> Option<Arc<ResourceType>> {
        store.registry().find("", "v1", "events")
    }

    fn store() -> Store {
        store_with(StoreSettings::default())
    }

    fn store_with(settings: StoreSettings) -> Store {
        let store = Store::with_clock(settings, Arc::default(), Clock::new(ClockMode::Manual));
        let ns = store
            .registry()
            .find("", "v1", "namespaces")
            .expect("namespaces are served");
        store
            .create(
                &ns,
                "",
                json!({ "metadata": { "name": "default" } }),
                WriteOptions::default(),
            )
            .expect("the namespace is created");
        store
    }

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "7" },
        })
    }

    fn events(store: &Store) -> Vec<Arc<Value>> {
        let rt = events_kind(store).expect("events are served");
        store.list_all(&rt, Some("default"))
    }

    #[test]
    fn a_repeated_event_is_counted_on_the_first_one() {
        let store = store();
        let kubelet = Recorder::new("kubelet", "node-1");
        for _ in 0..3 {
            kubelet.record(
                &store,
                &pod(),
                Some("spec.containers{c}"),
                EventType::Normal,
                "Pulled",
                "pulled",
            );
            store.clock().advance(Duration::from_secs(1));
        }
        let all = events(&store);
        assert_eq!(all.len(), 1);
        let ev = &all[0];
        assert_eq!(ev["count"], 3);
        assert_ne!(ev["firstTimestamp"], ev["lastTimestamp"]);
        assert_eq!(
            ev["source"],
            json!({ "component": "kubelet", "host": "node-1" })
        );
        assert_eq!(ev["involvedObject"]["fieldPath"], "spec.containers{c}");
        assert_eq!(ev["involvedObject"]["resourceVersion"], "7");
        assert_eq!(ev["reportingInstance"], "node-1");
        let name = meta_str(ev, "name").unwrap_or("");
        assert!(name.starts_with("p."), "{name}");
    }

    #[test]
    fn the_spam_filter_stops_a_source_after_25_events_about_one_object() {
        let store = store();
        let kubelet = Recorder::new("kubelet", "n");
        for i in 0..30 {
            kubelet.record(
                &store,
                &pod(),
                None,
                EventType::Warning,
                "Unhealthy",
                &format!("probe {i}"),
            );
        }
        assert_eq!(events(&store).len(), 25);
        store.clock().advance(SPAM_REFILL);
        kubelet.record(
            &store,
            &pod(),
            None,
            EventType::Warning,
            "Unhealthy",
            "later",
        );
        assert_eq!(events(&store).len(), 26);
    }

    #[test]
    fn an_emitted_repeat_becomes_a_series() {
        let store = store();
        let ctl = Emitter::new("sandbox-controller", "pod-0");
        for _ in 0..3 {
            ctl.emit(
                &store,
                &pod(),
                EventType::Warning,
                "MultiplePods",
                "Reconciling",
                "two pods",
            );
        }
        let all = events(&store);
        assert_eq!(all.len(), 1);
        let ev = &all[0];
        assert_eq!(ev["series"]["count"], 2);
        assert_eq!(ev["action"], "Reconciling");
        assert_eq!(ev["reportingComponent"], "sandbox-controller");
        assert_eq!(ev["reportingInstance"], "sandbox-controller-pod-0");
        assert_eq!(ev["source"], json!({}));
        assert!(ev["eventTime"].as_str().is_some_and(|t| t.contains('.')));
    }

    fn short_ttl() -> StoreSettings {
        StoreSettings {
            event_ttl: Duration::from_secs(60),
            ..StoreSettings::default()
        }
    }

    #[test]
    fn an_event_expires_its_ttl_after_its_last_write_on_the_clusters_clock() {
        let store = store_with(short_ttl());
        let kubelet = Recorder::new("kubelet", "n");
        let pulled = |store: &Store| {
            kubelet.record(store, &pod(), None, EventType::Normal, "Pulled", "pulled");
        };
        pulled(&store);
        store.clock().advance(Duration::from_secs(40));
        assert_eq!(store.expire_events(), 0);
        // The repeat is a write of the same Event: its TTL starts again.
        pulled(&store);
        store.clock().advance(Duration::from_secs(40));
        assert_eq!(
            store.expire_events(),
            0,
            "the repeat renewed the Event's TTL"
        );
        assert_eq!(events(&store).len(), 1);
        store.clock().advance(Duration::from_secs(20));
        let rv = store.resource_version();
        assert_eq!(store.expire_events(), 1);
        assert!(events(&store).is_empty());
        let log = store.events_since(rv).expect("the log reaches back");
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].kind, crate::store::EventType::Deleted);
        assert_eq!(store.next_event_expiry(), None);
    }

    #[test]
    fn an_event_deleted_and_written_again_under_its_name_lives_its_own_ttl() {
        let store = store_with(short_ttl());
        let rt = events_kind(&store).expect("events are served");
        let ev = |reason: &str| {
            json!({
                "metadata": { "name": "e", "namespace": "default" },
                "involvedObject": { "kind": "Pod", "name": "p", "namespace": "default" },
                "reason": reason,
            })
        };
        store
            .create(&rt, "default", ev("First"), WriteOptions::default())
            .expect("created");
        store
            .delete(&rt, "default", "e", &crate::store::DeleteOptions::default())
            .expect("deleted");
        store.clock().advance(Duration::from_secs(30));
        store
            .create(&rt, "default", ev("Second"), WriteOptions::default())
            .expect("created again");
        store.clock().advance(Duration::from_secs(40));
        assert_eq!(
            store.expire_events(),
            0,
            "the first lease was the old Event's"
        );
        assert_eq!(events(&store).len(), 1);
        store.clock().advance(Duration::from_secs(20));
        assert_eq!(store.expire_events(), 1);
    }

    #[tokio::test]
    async fn the_expiry_task_deletes_an_event_once_the_clock_passes_its_ttl() {
        let store = Arc::new(store_with(short_ttl()));
        let shutdown = CancellationToken::new();
        let task = spawn_expiry(store.clone(), shutdown.clone());
        let mut changes = store.subscribe();
        Recorder::new("some-controller", "").record(
            store.as_ref(),
            &pod(),
            None,
            EventType::Warning,
            "Failed",
            "no",
        );
        assert_eq!(events(&store).len(), 1);
        store.clock().advance(Duration::from_secs(61));
        let gone = async {
            while !events(&store).is_empty() {
                changes.changed().await.expect("the store is alive");
            }
        };
        tokio::time::timeout(Duration::from_secs(60), gone)
            .await
            .expect("the expired Event is deleted");
        assert_eq!(
            store.clock().next_deadline(),
            None,
            "an Event's TTL is no timer the auto-advancing clock jumps to"
        );
        shutdown.cancel();
        task.await.expect("the task ends");
    }
}
