//! Deletion: preconditions, graceful deletion of pods (`deletionTimestamp` and
//! `deletionGracePeriodSeconds`, as `rest.BeforeDelete` sets them), finalizers, propagation to
//! dependents (orphan, background, foreground) and the garbage collector; and the
//! `kubernetes.io/pvc-protection` finalizer a claim gets at creation.
//!
//! A pod is deleted gracefully: a delete marks it with a deadline (`deletionTimestamp` = now +
//! the grace period: the request's `gracePeriodSeconds`, else the pod's
//! `terminationGracePeriodSeconds`; 0 for a pod never scheduled or already finished) and the
//! object stays until the kubelet has stopped its containers and deletes it again with grace
//! period 0. A later delete may only shorten the period (`--grace-period`, or 0 with `--force`);
//! a delete with period 0 removes the pod at once, after a last change that watchers see, as
//! on a cluster. Every other kind goes at once unless finalizers hold it.

use super::references::StoreKey;
use super::{
    DeleteOptions, Deleted, EventType, Inner, Propagation, TypeKey, crds, revision, target,
    type_key,
};
use crate::clock::add_secs;
use crate::meta::{self, finalizers, meta_str, owner_uids};
use crate::registry::ResourceType;
use crate::status::ApiError;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;
use time::OffsetDateTime;

pub(crate) use crate::meta::PVC_PROTECTION;

/// Whether `rt` is core/v1 pods (the one kind deleted gracefully).
fn is_pod(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "pods"
}

/// Whether `rt` is core/v1 persistentvolumeclaims.
fn is_pvc(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "persistentvolumeclaims"
}

/// The `StorageObjectInUseProtection` admission plugin: a new claim gets the protection
/// finalizer.
pub(super) fn protect_in_use(rt: &ResourceType, obj: &mut Value) {
    if !is_pvc(rt) {
        return;
    }
    let mut fins = finalizers(obj);
    if fins.iter().any(|f| f == PVC_PROTECTION) {
        return;
    }
    fins.push(PVC_PROTECTION.to_string());
    if let Some(md) = meta::metadata_mut(obj) {
        md.insert("finalizers".into(), json!(fins));
    }
}

/// An object's `deletionTimestamp`.
fn deletion_timestamp(obj: &Value) -> Option<SystemTime> {
    let s = obj.get("metadata")?.get("deletionTimestamp")?.as_str()?;
    let t = OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some(SystemTime::from(t))
}

/// An object's `deletionGracePeriodSeconds`.
pub(super) fn grace_seconds(obj: &Value) -> Option<i64> {
    obj.get("metadata")?
        .get("deletionGracePeriodSeconds")?
        .as_i64()
}

/// Whether a marked object may go now: no finalizers, and no grace period running.
pub(super) fn ready_to_remove(obj: &Value) -> bool {
    finalizers(obj).is_empty() && grace_seconds(obj).unwrap_or(0) == 0
}

/// What `rest.BeforeDelete` decides for a pod.
enum Graceful {
    /// Mark the pod with this grace period.
    Set(i64),
    /// Already terminating with a period this delete does not shorten: nothing changes.
    Pending,
    /// Not graceful (the pod was marked with period 0, for its finalizers).
    No,
}

/// The grace period of a delete of `pod` asking for `requested` seconds (`None`: the
/// default), as the pod strategy and `rest.BeforeDelete` compute it.
fn graceful_period(pod: &Value, requested: Option<i64>) -> Graceful {
    let requested = requested.map(|p| if p < 0 { 1 } else { p });
    if deletion_timestamp(pod).is_some() {
        let Some(current) = grace_seconds(pod).filter(|g| *g > 0) else {
            return Graceful::No;
        };
        return match requested {
            Some(p) if p < current => Graceful::Set(p),
            _ => Graceful::Pending,
        };
    }
    let spec = pod.get("spec");
    let mut period = requested.unwrap_or_else(|| {
        spec.and_then(|s| s.get("terminationGracePeriodSeconds"))
            .and_then(Value::as_i64)
            .unwrap_or(30)
    });
    let scheduled = spec
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let phase = pod
        .get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str);
    if !scheduled || matches!(phase, Some("Succeeded" | "Failed")) {
        period = 0;
    }
    Graceful::Set(period.max(0))
}

impl Inner {
    /// The `preconditions` of a delete: the object's uid and resourceVersion.
    pub(super) fn check_preconditions(
        &self,
        rt: &ResourceType,
        name: &str,
        obj: &Value,
        opts: &DeleteOptions,
    ) -> Result<(), ApiError> {
        let uid = meta_str(obj, "uid").unwrap_or("");
        if let Some(want) = &opts.uid
            && want != uid
        {
            return Err(ApiError::conflict(
                target(rt, name),
                &format!(
                    "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
                ),
            ));
        }
        if let Some(want) = &opts.resource_version
            && Some(want.as_str()) != meta_str(obj, "resourceVersion")
        {
            return Err(ApiError::conflict(
                target(rt, name),
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {}",
                    meta_str(obj, "resourceVersion").unwrap_or("")
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn delete(
        &mut self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        if crds::is_crd_kind(rt) {
            return self.delete_crd(rt, name, opts);
        }
        let obj = self
            .get(rt, ns, name)
            .ok_or_else(|| ApiError::not_found(target(rt, name)))?;
        self.check_preconditions(rt, name, &obj, opts)?;
        self.admit_policies(&super::PolicyWrite {
            rt,
            subresource: "",
            operation: "DELETE",
            namespace: ns,
            name,
            object: None,
            old: Some(&obj),
            user: opts.user.as_deref(),
            dry_run: opts.dry_run,
        })?;
        let already = deletion_timestamp(&obj).is_some();
        // Graceful deletion (pods only): the grace period this delete sets, if it sets one.
        let grace = if is_pod(rt) {
            match graceful_period(&obj, opts.grace_period) {
                Graceful::Set(p) => Some(p),
                Graceful::Pending => return Ok(Deleted::Pending(obj)),
                Graceful::No => None,
            }
        } else {
            None
        };
        if opts.dry_run {
            return Ok(Deleted::Gone(obj));
        }
        let uid = meta_str(&obj, "uid").unwrap_or("").to_string();
        let propagation = opts.propagation.unwrap_or(Propagation::Background);
        if propagation == Propagation::Orphan {
            self.orphan_dependents(&uid);
        }
        let mut fins = finalizers(&obj);
        if propagation == Propagation::Foreground && !fins.iter().any(|f| f == "foregroundDeletion")
        {
            fins.push("foregroundDeletion".into());
        }
        if fins.is_empty() && grace.is_none() {
            let last = self.remove_now(rt, ns, name, obj);
            return Ok(Deleted::Gone(last));
        }
        // Mark for deletion: a deadline for the kubelet, or at once for the finalizers.
        let now = self.clock.now();
        let mut marked = Value::clone(&obj);
        if let Some(md) = meta::metadata_mut(&mut marked) {
            let deadline = match grace {
                Some(p) => match (deletion_timestamp(&obj), grace_seconds(&obj)) {
                    (Some(at), Some(old)) => add_secs(at, p - old),
                    _ => add_secs(now, p),
                },
                None => deletion_timestamp(&obj)
                    .filter(|at| *at <= now)
                    .unwrap_or(now),
            };
            md.insert(
                "deletionTimestamp".into(),
                json!(meta::format_time(OffsetDateTime::from(deadline))),
            );
            md.insert(
                "deletionGracePeriodSeconds".into(),
                json!(grace.unwrap_or(0)),
            );
            if fins.is_empty() {
                md.remove("finalizers");
            } else {
                md.insert("finalizers".into(), json!(fins));
            }
            if rt.has_spec && !already {
                let g = md.get("generation").and_then(Value::as_i64).unwrap_or(0);
                md.insert("generation".into(), json!(g + 1));
            }
        }
        let marked = if marked == *obj {
            obj
        } else {
            let rv = self.next_rv();
            if let Some(md) = meta::metadata_mut(&mut marked) {
                md.insert("resourceVersion".into(), json!(rv.to_string()));
            }
            let marked = revision(marked);
            self.put(rt, ns, name, marked.clone());
            self.record(rt, EventType::Modified, marked.clone(), Some(obj));
            marked
        };
        if ready_to_remove(&marked) {
            // A graceless delete (grace period 0, no finalizers): gone now.
            let last = self.remove_now(rt, ns, name, marked);
            return Ok(Deleted::Gone(last));
        }
        if propagation == Propagation::Foreground {
            for (drt, dns, dname) in self.dependents(&uid) {
                let dopts = DeleteOptions {
                    propagation: Some(Propagation::Foreground),
                    ..Default::default()
                };
                if let Err(e) = self.delete(&drt, &dns, &dname, &dopts) {
                    tracing::debug!(error = %e.message, "foreground delete of a dependent");
                }
            }
            self.finish_foreground();
            if let Some(now) = self.get(rt, ns, name) {
                return Ok(Deleted::Pending(now));
            }
            return Ok(Deleted::Gone(marked));
        }
        Ok(Deleted::Pending(marked))
    }

    /// Removes an object at once, records the event, and collects its garbage.
    pub(super) fn remove_now(
        &mut self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        obj: Arc<Value>,
    ) -> Arc<Value> {
        self.remove(rt, ns, name);
        let rv = self.next_rv();
        let mut last = Value::clone(&obj);
        if let Some(md) = meta::metadata_mut(&mut last) {
            md.insert("resourceVersion".into(), json!(rv.to_string()));
        }
        let last = revision(last);
        self.record(rt, EventType::Deleted, last.clone(), Some(obj));
        if rt.group.is_empty() && rt.plural == "namespaces" {
            self.empty_namespace(name);
        }
        self.collect_garbage(&last);
        self.removed(rt, &last);
        last
    }

    pub(super) fn empty_namespace(&mut self, ns: &str) {
        for rt in self.registry.storage_kinds() {
            if !rt.namespaced {
                continue;
            }
            let rt = &rt;
            let names: Vec<String> = self
                .objects
                .keys(&type_key(rt), super::objects::namespace_range(ns))
                .into_iter()
                .map(|(_, n)| n)
                .collect();
            for n in names {
                if let Some(obj) = self.get(rt, ns, &n) {
                    self.remove_now(rt, ns, &n, obj);
                }
            }
        }
    }

    /// Objects with an ownerReference to `uid`, kind by kind in the registry's order, then by
    /// namespace and name.
    pub(super) fn dependents(&self, uid: &str) -> Vec<(Arc<ResourceType>, String, String)> {
        self.in_kind_order(self.references.dependents_of(uid))
    }

    /// The objects of `keys` of the storage kinds, kind by kind in the registry's order, then
    /// by namespace and name.
    fn in_kind_order<'a>(
        &self,
        keys: impl Iterator<Item = &'a StoreKey>,
    ) -> Vec<(Arc<ResourceType>, String, String)> {
        let mut keys: Vec<&StoreKey> = keys.collect();
        if keys.is_empty() {
            return Vec::new();
        }
        let kinds = self.registry.storage_kinds();
        let order: HashMap<TypeKey, usize> = kinds
            .iter()
            .enumerate()
            .map(|(i, rt)| (type_key(rt), i))
            .collect();
        keys.retain(|(tk, _)| order.contains_key(tk));
        keys.sort_by(|a, b| (order.get(&a.0), &a.1).cmp(&(order.get(&b.0), &b.1)));
        keys.into_iter()
            .filter_map(|(tk, (ns, name))| {
                let rt = &kinds[*order.get(tk)?];
                Some((rt.clone(), ns.clone(), name.clone()))
            })
            .collect()
    }

    pub(super) fn uid_exists(&self, uid: &str) -> bool {
        self.references.uid_exists(uid)
    }

    /// Drops ownerReferences to `uid` from its dependents.
    pub(super) fn orphan_dependents(&mut self, uid: &str) {
        for (rt, ns, name) in self.dependents(uid) {
            self.drop_owner_ref(&rt, &ns, &name, uid);
        }
    }

    pub(super) fn drop_owner_ref(
        &mut self,
        rt: &Arc<ResourceType>,
        ns: &str,
        name: &str,
        uid: &str,
    ) {
        let Some(old) = self.get(rt, ns, name) else {
            return;
        };
        let mut obj = Value::clone(&old);
        if let Some(md) = meta::metadata_mut(&mut obj)
            && let Some(Value::Array(refs)) = md.get_mut("ownerReferences")
        {
            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
            if refs.is_empty() {
                md.remove("ownerReferences");
            }
        }
        let rv = self.next_rv();
        if let Some(md) = meta::metadata_mut(&mut obj) {
            md.insert("resourceVersion".into(), json!(rv.to_string()));
        }
        let obj = revision(obj);
        self.put(rt, ns, name, obj.clone());
        self.record(rt, EventType::Modified, obj, Some(old));
    }

    /// After `gone` was removed: delete dependents whose owners are all gone (background), drop
    /// the dangling reference from the others, and finish foreground deletions that waited.
    pub(super) fn collect_garbage(&mut self, gone: &Value) {
        let Some(uid) = meta_str(gone, "uid").map(str::to_string) else {
            return;
        };
        for (rt, ns, name) in self.dependents(&uid) {
            let Some(dep) = self.get(&rt, &ns, &name) else {
                continue;
            };
            let others_alive = owner_uids(&dep)
                .iter()
                .any(|u| *u != uid && self.uid_exists(u));
            if others_alive {
                self.drop_owner_ref(&rt, &ns, &name, &uid);
            } else if let Err(e) = self.delete(&rt, &ns, &name, &DeleteOptions::default()) {
                tracing::debug!(error = %e.message, "garbage collection");
            }
        }
        self.finish_foreground();
    }

    /// Removes the `foregroundDeletion` finalizer from owners whose blocking dependents are gone.
    pub(super) fn finish_foreground(&mut self) {
        loop {
            let mut progressed = false;
            let waiting: Vec<(Arc<ResourceType>, String, String, Arc<Value>)> = self
                .in_kind_order(self.references.in_foreground())
                .into_iter()
                .filter_map(|(rt, ns, n)| {
                    let v = self.get(&rt, &ns, &n)?;
                    Some((rt, ns, n, v))
                })
                .collect();
            for (rt, ns, name, obj) in waiting {
                let uid = meta_str(&obj, "uid").unwrap_or("").to_string();
                let blocking = self.dependents(&uid).into_iter().any(|(drt, dns, dname)| {
                    self.get(&drt, &dns, &dname).is_some_and(|d| {
                        d.get("metadata")
                            .and_then(|m| m.get("ownerReferences"))
                            .and_then(Value::as_array)
                            .is_some_and(|refs| {
                                refs.iter().any(|r| {
                                    r.get("uid").and_then(Value::as_str) == Some(uid.as_str())
                                        && r.get("blockOwnerDeletion").and_then(Value::as_bool)
                                            == Some(true)
                                })
                            })
                    })
                });
                if blocking {
                    continue;
                }
                let mut next = Value::clone(&obj);
                let mut rest = finalizers(&obj);
                rest.retain(|f| f != "foregroundDeletion");
                let rt = &rt;
                if rest.is_empty() && grace_seconds(&obj).unwrap_or(0) == 0 {
                    self.remove_now(rt, &ns, &name, obj);
                } else if let Some(md) = meta::metadata_mut(&mut next) {
                    if rest.is_empty() {
                        md.remove("finalizers");
                    } else {
                        md.insert("finalizers".into(), json!(rest));
                    }
                    let rv = self.next_rv();
                    md.insert("resourceVersion".into(), json!(rv.to_string()));
                    let next = revision(next);
                    self.put(rt, &ns, &name, next.clone());
                    self.record(rt, EventType::Modified, next, Some(obj));
                }
                progressed = true;
            }
            if !progressed {
                break;
            }
        }
    }
}
