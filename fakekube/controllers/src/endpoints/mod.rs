//! The endpoints controllers of kube-controller-manager, emulated: every Service with a
//! selector has an Endpoints object of its own name and an EndpointSlice (named
//! `<service>-<suffix>`, owned by the Service) listing the pods it selects, their readiness
//! following the pods' Ready condition. A Service without a selector is left to whoever
//! writes its endpoints (the API server writes those of `default/kubernetes`).
//!
//! One task follows the API's change feed. It keeps its own index, built from the log, of
//! Service selectors and pod labels by `(namespace, key, value)`, so that a pod's change
//! finds the Services that select it, and a Service's change its pods, without scanning
//! every pod or Service: Service selectors are label equalities, and a pod matches only the
//! Services indexed under one of its labels. Writes are made only when something changed.
//!
//! Left out: one slice per Service (a real controller splits at 100 endpoints and by port
//! set; the slice's ports are those of its first endpoint), topology hints, dual-stack, and
//! mirroring of selector-less Endpoints into slices.

mod build;

use crate::client::{Change, ChangeType, Client, Delete, Kind, Part};
use crate::meta::meta_str;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A namespace and a name.
type Key = (String, String);
/// A namespace, a label key and a label value.
type Pair = (String, String, String);

/// The labels of an object as owned pairs.
fn label_pairs(obj: &Value) -> Vec<(String, String)> {
    crate::meta::labels(obj)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// A Service's selector as pairs; empty for a Service without one.
fn selector_pairs(service: &Value) -> Vec<(String, String)> {
    service
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn key_of(obj: &Value) -> Key {
    (
        meta_str(obj, "namespace").unwrap_or("").to_string(),
        meta_str(obj, "name").unwrap_or("").to_string(),
    )
}

/// Service selectors and pod labels, indexed by label pair.
#[derive(Debug, Default)]
struct Index {
    /// The selector of each Service that has one.
    selectors: HashMap<Key, Vec<(String, String)>>,
    /// Services by a pair of their selector.
    services_by_pair: HashMap<Pair, BTreeSet<String>>,
    /// The labels of each pod.
    pod_labels: HashMap<Key, Vec<(String, String)>>,
    /// Pods by one of their labels.
    pods_by_pair: HashMap<Pair, BTreeSet<String>>,
    /// The slice this controller keeps for each Service.
    slices: HashMap<Key, String>,
}

fn unindex(
    map: &mut HashMap<Pair, BTreeSet<String>>,
    ns: &str,
    pairs: &[(String, String)],
    name: &str,
) {
    for (k, v) in pairs {
        let pair = (ns.to_string(), k.clone(), v.clone());
        if let Some(set) = map.get_mut(&pair) {
            set.remove(name);
            if set.is_empty() {
                map.remove(&pair);
            }
        }
    }
}

fn index(
    map: &mut HashMap<Pair, BTreeSet<String>>,
    ns: &str,
    pairs: &[(String, String)],
    name: &str,
) {
    for (k, v) in pairs {
        map.entry((ns.to_string(), k.clone(), v.clone()))
            .or_default()
            .insert(name.to_string());
    }
}

impl Index {
    fn set_service(&mut self, key: &Key, selector: Vec<(String, String)>) {
        if let Some(old) = self.selectors.remove(key) {
            unindex(&mut self.services_by_pair, &key.0, &old, &key.1);
        }
        if !selector.is_empty() {
            index(&mut self.services_by_pair, &key.0, &selector, &key.1);
            self.selectors.insert(key.clone(), selector);
        }
    }

    /// Records a pod's labels (`None`: gone); returns its labels before and after.
    fn set_pod(
        &mut self,
        key: &Key,
        labels: Option<Vec<(String, String)>>,
    ) -> Vec<(String, String)> {
        let old = self.pod_labels.remove(key).unwrap_or_default();
        unindex(&mut self.pods_by_pair, &key.0, &old, &key.1);
        if let Some(labels) = labels {
            index(&mut self.pods_by_pair, &key.0, &labels, &key.1);
            self.pod_labels.insert(key.clone(), labels);
        }
        old
    }

    /// The Services of `ns` whose selector these labels match.
    fn services_selecting(&self, ns: &str, labels: &[(String, String)], out: &mut BTreeSet<Key>) {
        for (k, v) in labels {
            let pair = (ns.to_string(), k.clone(), v.clone());
            for svc in self.services_by_pair.get(&pair).into_iter().flatten() {
                let key = (ns.to_string(), svc.clone());
                let selects = self
                    .selectors
                    .get(&key)
                    .is_some_and(|sel| sel.iter().all(|p| labels.contains(p)));
                if selects {
                    out.insert(key);
                }
            }
        }
    }

    /// The pods of `ns` a selector matches, by name.
    fn pods_selected(&self, ns: &str, selector: &[(String, String)]) -> Vec<String> {
        let smallest = selector
            .iter()
            .map(|(k, v)| {
                self.pods_by_pair
                    .get(&(ns.to_string(), k.clone(), v.clone()))
            })
            .min_by_key(|set| set.map_or(0, BTreeSet::len));
        let Some(Some(candidates)) = smallest else {
            return Vec::new();
        };
        candidates
            .iter()
            .filter(|name| {
                self.pod_labels
                    .get(&(ns.to_string(), (*name).clone()))
                    .is_some_and(|labels| selector.iter().all(|p| labels.contains(p)))
            })
            .cloned()
            .collect()
    }
}

/// Whether a slice is one this controller keeps; the Service it belongs to.
fn managed_slice_service(slice: &Value) -> Option<&str> {
    let labels = crate::meta::labels(slice)?;
    if labels.get(build::MANAGED_BY_LABEL).and_then(Value::as_str) != Some(build::MANAGED_BY) {
        return None;
    }
    labels
        .get(build::SERVICE_NAME_LABEL)
        .and_then(Value::as_str)
}

/// The controllers' state between passes.
struct Controller {
    api: Arc<dyn Client>,
    index: Index,
}

impl Controller {
    /// Builds the index from the API; every Service with a selector is to be looked at.
    fn resync(&mut self) -> BTreeSet<Key> {
        self.index = Index::default();
        for p in self.api.list(Kind::Pod, None) {
            self.index.set_pod(&key_of(&p), Some(label_pairs(&p)));
        }
        for s in self.api.list(Kind::EndpointSlice, None) {
            if let Some(svc) = managed_slice_service(&s) {
                let (ns, name) = key_of(&s);
                self.index.slices.insert((ns, svc.to_string()), name);
            }
        }
        let mut out = BTreeSet::new();
        for s in self.api.list(Kind::Service, None) {
            let key = key_of(&s);
            self.index.set_service(&key, selector_pairs(&s));
            out.insert(key);
        }
        out
    }

    /// What one change means for the index, and the Services to look at again.
    fn on_event(&mut self, e: &Change, out: &mut BTreeSet<Key>) {
        let key = key_of(&e.object);
        let gone = e.change == ChangeType::Deleted;
        if e.kind == Kind::Pod {
            let now = (!gone).then(|| label_pairs(&e.object));
            let before = self.index.set_pod(&key, now.clone());
            self.index.services_selecting(&key.0, &before, out);
            if let Some(now) = now {
                self.index.services_selecting(&key.0, &now, out);
            }
        } else if e.kind == Kind::Service {
            let selector = if gone {
                Vec::new()
            } else {
                selector_pairs(&e.object)
            };
            self.index.set_service(&key, selector);
            out.insert(key);
        } else if e.kind == Kind::EndpointSlice {
            if let Some(svc) = managed_slice_service(&e.object) {
                let svc_key = (key.0.clone(), svc.to_string());
                if gone {
                    if self.index.slices.get(&svc_key) == Some(&key.1) {
                        self.index.slices.remove(&svc_key);
                    }
                } else {
                    self.index.slices.insert(svc_key.clone(), key.1.clone());
                }
                out.insert(svc_key);
            }
        } else if e.kind == Kind::Endpoints && self.index.selectors.contains_key(&key) {
            out.insert(key);
        }
    }

    /// Brings the endpoints of Service `ns/name` in line with its pods.
    fn reconcile(&mut self, (ns, name): &Key) {
        let Some(service) = self.api.get(Kind::Service, ns, name) else {
            // The Service is gone: its Endpoints go with it (its slice is collected as garbage).
            if let Some(ep) = self.api.get(Kind::Endpoints, ns, name) {
                let opts = Delete {
                    uid: meta_str(&ep, "uid").map(str::to_string),
                    ..Delete::default()
                };
                if let Err(e) = self.api.delete(Kind::Endpoints, ns, name, &opts)
                    && e.code != 404
                {
                    tracing::debug!(service = name, error = %e.message, "deleting Endpoints");
                }
            }
            return;
        };
        let selector = selector_pairs(&service);
        if selector.is_empty() {
            return;
        }
        let mut pods = self.index.pods_selected(ns, &selector);
        pods.sort();
        let endpoints: Vec<build::Endpoint> = pods
            .iter()
            .filter_map(|p| self.api.get(Kind::Pod, ns, p))
            .filter_map(|p| build::endpoint(&service, &p))
            .collect();
        self.write_endpoints(ns, name, build::endpoints(&service, &endpoints));
        self.write_slice(
            ns,
            name,
            &service,
            build::endpoint_slice(&service, &endpoints),
        );
    }

    fn write_endpoints(&self, ns: &str, name: &str, wanted: Value) {
        let rt = Kind::Endpoints;
        let result = match self.api.get(rt, ns, name) {
            None => self.api.create(rt, ns, wanted).map(drop),
            Some(current) => {
                let mut next = Value::clone(&current);
                next["metadata"]["labels"] = wanted["metadata"]["labels"].clone();
                match wanted.get("subsets") {
                    Some(s) => next["subsets"] = s.clone(),
                    None => {
                        if let Some(o) = next.as_object_mut() {
                            o.remove("subsets");
                        }
                    }
                }
                if next == *current {
                    return;
                }
                self.api.update(rt, ns, name, next, Part::Main).map(drop)
            }
        };
        if let Err(e) = result
            && e.code != 409
        {
            tracing::debug!(service = name, error = %e.message, "writing Endpoints");
        }
    }

    fn write_slice(&mut self, ns: &str, service_name: &str, service: &Value, mut wanted: Value) {
        let rt = Kind::EndpointSlice;
        let key = (ns.to_string(), service_name.to_string());
        let current = self
            .index
            .slices
            .get(&key)
            .and_then(|slice| self.api.get(rt, ns, slice));
        let result = match current {
            None => {
                wanted["metadata"]["ownerReferences"] = json!([ {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "name": service_name,
                    "uid": meta_str(service, "uid").unwrap_or(""),
                    "controller": true,
                    "blockOwnerDeletion": true,
                } ]);
                self.api.create(rt, ns, wanted).map(|created| {
                    if let Some(n) = meta_str(&created, "name") {
                        self.index.slices.insert(key, n.to_string());
                    }
                })
            }
            Some(current) => {
                let mut next = Value::clone(&current);
                for field in ["endpoints", "ports", "addressType"] {
                    next[field] = wanted[field].clone();
                }
                next["metadata"]["labels"] = wanted["metadata"]["labels"].clone();
                if next == *current {
                    return;
                }
                let name = meta_str(&current, "name").unwrap_or("").to_string();
                self.api.update(rt, ns, &name, next, Part::Main).map(drop)
            }
        };
        if let Err(e) = result
            && e.code != 409
        {
            tracing::debug!(service = service_name, error = %e.message, "writing an EndpointSlice");
        }
    }
}

/// Starts the controllers as one task that runs until `shutdown`.
pub fn spawn(api: Arc<dyn Client>, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = api.subscribe();
        changes.borrow_and_update();
        let mut last = api.position();
        let mut c = Controller {
            api: api.clone(),
            index: Index::default(),
        };
        let mut queue = c.resync();
        loop {
            changes.borrow_and_update();
            match api.changes_since(last) {
                Ok((events, reached)) => {
                    last = last.max(reached);
                    for e in &events {
                        c.on_event(e, &mut queue);
                    }
                }
                Err(_) => {
                    last = api.position();
                    queue = c.resync();
                }
            }
            for key in std::mem::take(&mut queue) {
                c.reconcile(&key);
            }
            if changes.has_changed().unwrap_or(false) {
                continue;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                r = changes.changed() => if r.is_err() { return },
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn the_index_finds_services_for_a_pod_and_pods_for_a_service() {
        let mut index = Index::default();
        let ns = "default".to_string();
        index.set_service(&(ns.clone(), "web".into()), pairs(&[("app", "web")]));
        index.set_service(
            &(ns.clone(), "canary".into()),
            pairs(&[("app", "web"), ("track", "canary")]),
        );
        index.set_pod(&(ns.clone(), "p1".into()), Some(pairs(&[("app", "web")])));
        index.set_pod(
            &(ns.clone(), "p2".into()),
            Some(pairs(&[("app", "web"), ("track", "canary")])),
        );
        index.set_pod(
            &("other".into(), "p3".into()),
            Some(pairs(&[("app", "web")])),
        );
        let mut found = BTreeSet::new();
        index.services_selecting(&ns, &pairs(&[("app", "web")]), &mut found);
        assert_eq!(found, BTreeSet::from([(ns.clone(), "web".to_string())]));
        assert_eq!(
            index.pods_selected(&ns, &pairs(&[("app", "web")])),
            ["p1", "p2"]
        );
        assert_eq!(
            index.pods_selected(&ns, &pairs(&[("app", "web"), ("track", "canary")])),
            ["p2"]
        );
        let before = index.set_pod(&(ns.clone(), "p2".into()), None);
        assert_eq!(before.len(), 2);
        assert_eq!(
            index.pods_selected(&ns, &pairs(&[("track", "canary")])),
            Vec::<String>::new()
        );
        index.set_service(&(ns.clone(), "web".into()), Vec::new());
        let mut none = BTreeSet::new();
        index.services_selecting(&ns, &pairs(&[("app", "web")]), &mut none);
        assert!(none.is_empty());
    }
}
