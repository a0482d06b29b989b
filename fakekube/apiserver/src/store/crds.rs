//! The store's side of CustomResourceDefinitions: admission of CRD writes (through
//! [`crate::crd`]), serving what a written CRD defines, and deleting a CRD as the API server
//! does: the delete adds the `customresourcecleanup.apiextensions.k8s.io` finalizer and a
//! `Terminating` condition; the cleanup ([`Store::clean_up_crds`], which the CRD finalizer
//! task runs right after) deletes its objects, then the CRD goes and its kind is no longer
//! served. When a CRD goes, the other CRDs of its group whose names were refused are looked
//! at again.

use super::{DeleteOptions, Deleted, EventType, Inner, Part, Store, target, type_key};
use crate::crd::{self, CLEANUP_FINALIZER, Others, condition_is_true, set_condition};
use crate::meta::{self, finalizers, meta_str};
use crate::registry::ResourceType;
use crate::status::ApiError;
use serde_json::{Value, json};
use std::sync::Arc;

/// Whether `rt` is the CRD kind itself.
pub(super) fn is_crd_kind(rt: &ResourceType) -> bool {
    rt.group == crd::GROUP && rt.plural == crd::PLURAL
}

impl Inner {
    /// The CRD kind, as the registry serves it.
    fn crd_kind(&self) -> Option<Arc<ResourceType>> {
        self.registry.find(crd::GROUP, "v1", crd::PLURAL)
    }

    /// Every stored CRD but `except`.
    fn other_crds(&self, except: &str) -> Vec<Arc<Value>> {
        self.objects
            .all(&format!("{}.{}", crd::PLURAL, crd::GROUP))
            .filter(|r| r.key.1 != except)
            .map(|r| r.object)
            .collect()
    }

    /// Admits a write of a CRD (its main resource or its status).
    pub(super) fn admit_crd(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
    ) -> Result<(), ApiError> {
        let name = meta_str(obj, "name").unwrap_or("").to_string();
        let others = self.other_crds(&name);
        let refs: Vec<&Value> = others.iter().map(|v| v.as_ref()).collect();
        let others = Others {
            crds: &refs,
            registry: &self.registry,
        };
        let now = self.clock.now_rfc3339();
        match (part, old) {
            (Part::Status, Some(old)) => crd::admit_status(obj, old, others, &now),
            _ => crd::admit(obj, old, others, &now),
        }
    }

    /// After a CRD was written: serves what it defines while it is established, stops
    /// serving it otherwise.
    pub(super) fn crd_written(&mut self, obj: &Value) {
        let name = meta_str(obj, "name").unwrap_or("");
        if condition_is_true(obj, "Established") && condition_is_true(obj, "NamesAccepted") {
            self.registry.install(name, crd::entries(obj));
        } else if !condition_is_true(obj, "Established") {
            self.registry.remove(name);
        }
    }

    /// Whether the CRD `name` is being deleted (its kind then takes no new objects).
    pub(super) fn crd_terminating(&self, name: &str) -> bool {
        self.crd_kind()
            .and_then(|k| self.get(&k, "", name))
            .is_some_and(|c| c.pointer("/metadata/deletionTimestamp").is_some())
    }

    /// The 405 a create of a kind whose CRD is being deleted gets.
    pub(super) fn refuse_while_terminating(rt: &ResourceType) -> ApiError {
        ApiError::new(
            http::StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!(
                "create not allowed while custom resource definition is terminating ({})",
                rt.group_resource()
            ),
        )
    }

    /// Writes a new state of a stored CRD, with the next resourceVersion and an event.
    fn rewrite_crd(
        &mut self,
        rt: &Arc<ResourceType>,
        old: Arc<Value>,
        mut next: Value,
    ) -> Arc<Value> {
        let name = meta_str(&old, "name").unwrap_or("").to_string();
        let rv = self.next_rv();
        if let Some(md) = meta::metadata_mut(&mut next) {
            md.insert("resourceVersion".into(), json!(rv.to_string()));
        }
        let next = Arc::new(next);
        self.put(rt, "", &name, next.clone());
        self.record(rt, EventType::Modified, next.clone(), Some(old));
        next
    }

    /// `DELETE` of a CRD: marks it (deletion timestamp, cleanup finalizer, `Terminating`); the
    /// cleanup comes after, as the API server's finalizer controller's does.
    pub(super) fn delete_crd(
        &mut self,
        rt: &Arc<ResourceType>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let obj = self
            .get(rt, "", name)
            .ok_or_else(|| ApiError::not_found(target(rt, name)))?;
        self.check_preconditions(rt, name, &obj, opts)?;
        if opts.dry_run {
            return Ok(Deleted::Gone(obj));
        }
        if obj.pointer("/metadata/deletionTimestamp").is_none() {
            let mut next = Value::clone(&obj);
            let now = self.clock.now_rfc3339();
            if let Some(md) = meta::metadata_mut(&mut next) {
                md.insert("deletionTimestamp".into(), json!(now));
                md.insert("deletionGracePeriodSeconds".into(), json!(0));
                let mut fins = finalizers(&obj);
                if !fins.iter().any(|f| f == CLEANUP_FINALIZER) {
                    fins.push(CLEANUP_FINALIZER.to_string());
                }
                md.insert("finalizers".into(), json!(fins));
            }
            set_condition(
                &mut next,
                crd::terminating(
                    "InstanceDeletionPending",
                    "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
                    true,
                ),
                &now,
            );
            return Ok(Deleted::Pending(self.rewrite_crd(rt, obj, next)));
        }
        Ok(Deleted::Pending(obj))
    }

    /// The names of the CRDs being deleted that still hold the cleanup finalizer.
    fn terminating_crds(&self) -> Vec<String> {
        self.objects
            .all(&format!("{}.{}", crd::PLURAL, crd::GROUP))
            .filter(|r| {
                r.object.pointer("/metadata/deletionTimestamp").is_some()
                    && finalizers(&r.object).iter().any(|f| f == CLEANUP_FINALIZER)
            })
            .map(|r| r.key.1.clone())
            .collect()
    }

    /// The CRD cleanup controller, run at once: deletes the CRD's objects; once none is left,
    /// drops the cleanup finalizer (and so the CRD, whose last state it returns). Objects held
    /// by their own finalizers keep the CRD `Terminating` until they go.
    fn clean_up_crd(&mut self, name: &str) -> Option<Arc<Value>> {
        let kind = self.crd_kind()?;
        let obj = self.get(&kind, "", name)?;
        if obj.pointer("/metadata/deletionTimestamp").is_none()
            || !finalizers(&obj).iter().any(|f| f == CLEANUP_FINALIZER)
        {
            return None;
        }
        let group = obj
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let plural = obj
            .pointer("/status/acceptedNames/plural")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut next = Value::clone(&obj);
        let now = self.clock.now_rfc3339();
        let storage = self.registry.storage(&group, &plural);
        let done = match (&storage, condition_is_true(&obj, "Established")) {
            (Some(storage), true) => {
                let keys: Vec<(String, String)> = self.objects.keys(&type_key(storage), ..);
                for (ns, n) in keys {
                    if let Err(e) = self.delete(storage, &ns, &n, &DeleteOptions::default()) {
                        tracing::debug!(error = %e.message, "deleting an object of a deleted CRD");
                    }
                }
                let left = self.objects.count(&type_key(storage));
                if left == 0 {
                    set_condition(
                        &mut next,
                        crd::terminating(
                            "InstanceDeletionCompleted",
                            "removed all instances",
                            false,
                        ),
                        &now,
                    );
                    true
                } else {
                    set_condition(
                        &mut next,
                        crd::terminating(
                            "InstanceDeletionInProgress",
                            "CustomResource deletion is in progress",
                            true,
                        ),
                        &now,
                    );
                    false
                }
            }
            _ => {
                set_condition(
                    &mut next,
                    crd::terminating("NeverEstablished", "resource was never established", false),
                    &now,
                );
                true
            }
        };
        let mut gone = None;
        if done {
            let mut rest = finalizers(&obj);
            rest.retain(|f| f != CLEANUP_FINALIZER);
            if rest.is_empty() {
                let last = self.rewrite_crd(&kind, obj, next);
                gone = Some(self.remove_now(&kind, "", name, last));
            } else if let Some(md) = meta::metadata_mut(&mut next) {
                md.insert("finalizers".into(), json!(rest));
                self.rewrite_crd(&kind, obj, next);
            }
        } else if next != *obj {
            self.rewrite_crd(&kind, obj, next);
        }
        gone
    }

    /// After an object was removed from the store: a CRD stops being served (and frees its
    /// names for the other CRDs of its group); the last object of a kind whose CRD is being
    /// deleted lets the CRD go.
    pub(super) fn removed(&mut self, rt: &ResourceType, obj: &Value) {
        if is_crd_kind(rt) {
            let name = meta_str(obj, "name").unwrap_or("");
            self.registry.remove(name);
            let group = obj
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or("");
            self.reaccept_names(group, name);
        } else if let Some(crd_name) = rt.defined_by.clone()
            && self.crd_terminating(&crd_name)
        {
            self.clean_up_crd(&crd_name);
        }
    }

    /// Looks again at the CRDs of `group` whose names were refused, now that `gone` freed its
    /// own.
    fn reaccept_names(&mut self, group: &str, gone: &str) {
        let Some(kind) = self.crd_kind() else {
            return;
        };
        let waiting: Vec<Arc<Value>> = self
            .other_crds(gone)
            .into_iter()
            .filter(|c| {
                c.pointer("/spec/group").and_then(Value::as_str) == Some(group)
                    && !condition_is_true(c, "NamesAccepted")
            })
            .collect();
        for old in waiting {
            let mut next = Value::clone(&old);
            if self.admit_crd(&mut next, Some(&old), Part::Status).is_err() || next == *old {
                continue;
            }
            let written = self.rewrite_crd(&kind, old, next);
            self.crd_written(&written);
        }
    }
}

impl Store {
    /// Whether a deleted CRD waits for its cleanup.
    pub(crate) fn crds_terminating(&self) -> bool {
        self.lock().is_ok_and(|i| !i.terminating_crds().is_empty())
    }

    /// The cleanup of every deleted CRD, as the API server's CRD finalizer does it: deletes
    /// its objects, and once none is left drops the finalizer, so that the CRD goes and its
    /// kind is no longer served. A CRD whose objects are held by their own finalizers stays
    /// `Terminating` until they go.
    pub(crate) fn clean_up_crds(&self) {
        let Ok(mut inner) = self.lock() else {
            return;
        };
        for name in inner.terminating_crds() {
            inner.clean_up_crd(&name);
        }
        self.notify(&inner);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Store, StoreSettings, WriteOptions};
    use super::*;

    /// A store with namespace `default` and the CRD of `widgets.stable.example.com`.
    fn store_with_widgets() -> (Store, Arc<ResourceType>) {
        let store = Store::new(StoreSettings::default(), Arc::default());
        let reg = store.registry().clone();
        let ns = reg.find("", "v1", "namespaces").expect("namespaces");
        store
            .create(
                &ns,
                "",
                json!({ "metadata": { "name": "default" } }),
                WriteOptions::default(),
            )
            .expect("namespace");
        let crds = reg
            .find(crd::GROUP, "v1", crd::PLURAL)
            .expect("CRDs are built in");
        let crd = json!({
            "metadata": { "name": "widgets.stable.example.com" },
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": { "plural": "widgets", "kind": "Widget" },
                "versions": [ { "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } } ],
            },
        });
        store
            .create(&crds, "", crd, WriteOptions::default())
            .expect("CRD created");
        (store, crds)
    }

    #[test]
    fn a_created_crd_is_served_at_once_and_its_deletion_takes_its_objects() {
        let (store, crds) = store_with_widgets();
        let widgets = store
            .registry()
            .find("stable.example.com", "v1", "widgets")
            .expect("served right after the create");
        let w = json!({ "metadata": { "name": "w" }, "spec": { "a": 1 } });
        store
            .create(&widgets, "default", w, WriteOptions::default())
            .expect("widget");
        let deleted = store
            .delete(
                &crds,
                "",
                "widgets.stable.example.com",
                &DeleteOptions::default(),
            )
            .expect("CRD deleted");
        assert!(
            matches!(deleted, Deleted::Pending(_)),
            "the cleanup comes after"
        );
        assert!(store.crds_terminating());
        store.clean_up_crds();
        assert!(!store.crds_terminating());
        assert!(
            store
                .get_opt(&crds, "", "widgets.stable.example.com")
                .is_none()
        );
        assert!(
            store
                .registry()
                .find("stable.example.com", "v1", "widgets")
                .is_none()
        );
        assert!(widgets.retired.is_cancelled(), "its watches end");
        assert!(store.list_all(&widgets, None).is_empty());
    }

    #[test]
    fn without_a_status_subresource_a_status_change_bumps_the_generation() {
        let (store, _) = store_with_widgets();
        let widgets = store
            .registry()
            .find("stable.example.com", "v1", "widgets")
            .expect("served");
        let (w, _) = store
            .create(
                &widgets,
                "default",
                json!({ "metadata": { "name": "w" }, "spec": { "a": 1 } }),
                WriteOptions::default(),
            )
            .expect("widget");
        let mut next = Value::clone(&w);
        next["status"] = json!({ "phase": "Ready" });
        let (updated, _) = store
            .update(
                &widgets,
                "default",
                "w",
                next,
                Part::Main,
                WriteOptions::default(),
            )
            .expect("updated");
        assert_eq!(updated["metadata"]["generation"], 2);
    }

    #[test]
    fn an_object_with_a_finalizer_keeps_its_crd_terminating_until_it_goes() {
        let (store, crds) = store_with_widgets();
        let widgets = store
            .registry()
            .find("stable.example.com", "v1", "widgets")
            .expect("served");
        let w = json!({ "metadata": { "name": "w", "finalizers": ["example.com/hold"] } });
        store
            .create(&widgets, "default", w, WriteOptions::default())
            .expect("widget");
        let pending = store
            .delete(
                &crds,
                "",
                "widgets.stable.example.com",
                &DeleteOptions::default(),
            )
            .expect("CRD marked");
        assert!(matches!(pending, Deleted::Pending(_)));
        store.clean_up_crds();
        let crd = store
            .get(&crds, "", "widgets.stable.example.com")
            .expect("the CRD waits for its object");
        let terminating = crd["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Terminating")
            .cloned()
            .unwrap_or_default();
        assert_eq!(terminating["reason"], "InstanceDeletionInProgress");
        assert_eq!(crd["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
        let refused = store
            .create(
                &widgets,
                "default",
                json!({ "metadata": { "name": "w2" } }),
                WriteOptions::default(),
            )
            .expect_err("no creates while terminating");
        assert_eq!(refused.code, 405);
        let held = store.get(&widgets, "default", "w").expect("still there");
        let mut released = Value::clone(&held);
        released["metadata"]["finalizers"] = json!([]);
        store
            .update(
                &widgets,
                "default",
                "w",
                released,
                Part::Main,
                WriteOptions::default(),
            )
            .expect("finalizer removed");
        store.clean_up_crds();
        assert!(
            store
                .get_opt(&crds, "", "widgets.stable.example.com")
                .is_none()
        );
        assert!(
            store
                .registry()
                .find("stable.example.com", "v1", "widgets")
                .is_none()
        );
    }

    #[test]
    fn deleting_the_crd_holding_a_name_lets_the_waiting_one_be_established() {
        let (store, crds) = store_with_widgets();
        let rival = json!({
            "metadata": { "name": "gadgets.stable.example.com" },
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": { "plural": "gadgets", "kind": "Widget", "listKind": "GadgetList" },
                "versions": [ { "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object" } } } ],
            },
        });
        let (created, _) = store
            .create(&crds, "", rival, WriteOptions::default())
            .expect("created");
        assert!(!condition_is_true(&created, "Established"));
        assert!(
            store
                .registry()
                .find("stable.example.com", "v1", "gadgets")
                .is_none()
        );
        store
            .delete(
                &crds,
                "",
                "widgets.stable.example.com",
                &DeleteOptions::default(),
            )
            .expect("deleted");
        store.clean_up_crds();
        let now = store
            .get(&crds, "", "gadgets.stable.example.com")
            .expect("there");
        assert!(condition_is_true(&now, "NamesAccepted"));
        assert!(condition_is_true(&now, "Established"));
        assert!(
            store
                .registry()
                .find("stable.example.com", "v1", "gadgets")
                .is_some()
        );
    }
}
