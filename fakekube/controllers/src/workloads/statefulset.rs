//! The StatefulSet controller: pods `NAME-0` .. `NAME-(n-1)`, each with its claims
//! `TEMPLATE-NAME-i` from `volumeClaimTemplates`; with `OrderedReady` a pod is made only when
//! every lower ordinal is Running and Ready, and surplus pods go highest ordinal first, one at a
//! time; `Parallel` does both at once. A RollingUpdate replaces pods of an older revision from
//! the highest ordinal down to `partition`, one at a time; OnDelete leaves them. Claims are
//! retained (the default `persistentVolumeClaimRetentionPolicy`).

use super::hash::template_hash;
use super::{Ctx, Requeue, create, delete, generation, int_at, pods, write_status};
use crate::client::Kind;
use crate::events::EventType;
use crate::meta::meta_str;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

const COMPONENT: &str = "statefulset-controller";
const REVISION_LABEL: &str = "controller-revision-hash";
const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

pub(crate) fn reconcile(ctx: &mut Ctx<'_>, ns: &str, name: &str) -> Requeue {
    let rt = Kind::StatefulSet;
    let set = ctx.api.get(rt, ns, name)?;
    if super::deleting(&set) {
        return None;
    }
    let replicas = int_at(&set, "/spec/replicas").max(0);
    let template = set.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let update_revision = format!(
        "{name}-{}",
        template_hash(&template, int_at(&set, "/status/collisionCount"))
    );
    let parallel = set
        .pointer("/spec/podManagementPolicy")
        .and_then(Value::as_str)
        == Some("Parallel");
    let mut by_ordinal: BTreeMap<i64, Arc<Value>> = BTreeMap::new();
    for p in pods::owned(ctx, &set) {
        if let Some(i) = ordinal(name, meta_str(&p, "name").unwrap_or("")) {
            by_ordinal.insert(i, p);
        }
    }
    // Failed pods are replaced; finished ones of a set with a restart policy Always too.
    for p in by_ordinal.values() {
        if pods::finished(p) && !super::deleting(p) {
            delete_pod(ctx, &set, p);
        }
    }
    let mut busy = false;
    for i in 0..replicas {
        match by_ordinal.get(&i) {
            Some(p) => {
                if !(pods::phase(p) == "Running" && pods::ready(p)) || super::deleting(p) {
                    busy = true;
                }
            }
            None => {
                if busy && !parallel {
                    break;
                }
                make_pod(ctx, &set, &template, &update_revision, i);
                busy = true;
            }
        }
        if busy && !parallel {
            break;
        }
    }
    // Scale down: highest ordinal first.
    let surplus: Vec<&Arc<Value>> = by_ordinal
        .range(replicas..)
        .rev()
        .map(|(_, p)| p)
        .filter(|p| !super::deleting(p))
        .collect();
    let condemned_terminating = by_ordinal
        .range(replicas..)
        .any(|(_, p)| super::deleting(p));
    if !condemned_terminating || parallel {
        for p in surplus {
            delete_pod(ctx, &set, p);
            if !parallel {
                break;
            }
        }
    }
    // Rolling update: the highest outdated ordinal at or above the partition, once the rest is
    // Running and Ready.
    let rolling = set
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        != Some("OnDelete");
    let partition = int_at(&set, "/spec/updateStrategy/rollingUpdate/partition");
    let all_ready = (0..replicas).all(|i| {
        by_ordinal
            .get(&i)
            .is_some_and(|p| pods::ready(p) && !super::deleting(p))
    });
    if rolling
        && all_ready
        && let Some(p) = (partition.max(0)..replicas)
            .rev()
            .filter_map(|i| by_ordinal.get(&i))
            .find(|p| pod_revision(p) != update_revision)
    {
        delete_pod(ctx, &set, p);
    }
    // Status, from the pods as they are now.
    let now: Vec<Arc<Value>> = pods::owned(ctx, &set)
        .into_iter()
        .filter(|p| ordinal(name, meta_str(p, "name").unwrap_or("")).is_some())
        .collect();
    let live: Vec<&Arc<Value>> = now.iter().filter(|p| !pods::finished(p)).collect();
    let current_revision = set
        .pointer("/status/currentRevision")
        .and_then(Value::as_str)
        .unwrap_or(&update_revision)
        .to_string();
    let count = |f: &dyn Fn(&Value) -> bool| live.iter().filter(|p| f(p)).count();
    let min_ready = int_at(&set, "/spec/minReadySeconds");
    let now = ctx.api.clock().now_utc();
    let ready = count(&|p| pods::ready(p));
    let available = count(&|p| pods::available(p, min_ready, now));
    let updated = count(&|p| pod_revision(p) == update_revision);
    let done = i64::try_from(updated).unwrap_or(0) == replicas
        && i64::try_from(live.len()).unwrap_or(0) == replicas;
    let (current_revision, current) = if done {
        (update_revision.clone(), updated)
    } else {
        let c = count(&|p| pod_revision(p) == current_revision);
        (current_revision, c)
    };
    let mut status = json!({
        "observedGeneration": generation(&set),
        "replicas": live.len(),
        "readyReplicas": ready,
        "currentReplicas": current,
        "updatedReplicas": updated,
        "currentRevision": current_revision,
        "updateRevision": update_revision,
        "collisionCount": int_at(&set, "/status/collisionCount"),
        "availableReplicas": available,
    });
    if let Some(m) = status.as_object_mut() {
        m.retain(|k, v| {
            !matches!(
                k.as_str(),
                "readyReplicas" | "currentReplicas" | "updatedReplicas"
            ) || v != &json!(0)
        });
    }
    write_status(ctx.api, rt, ns, name, status);
    None
}

/// The ordinal of a pod of set `set` (`set-3` is 3).
fn ordinal(set: &str, pod: &str) -> Option<i64> {
    let rest = pod.strip_prefix(set)?.strip_prefix('-')?;
    if rest.is_empty() || (rest.len() > 1 && rest.starts_with('0')) {
        return None;
    }
    rest.parse().ok()
}

fn pod_revision(p: &Value) -> &str {
    p.pointer(&format!("/metadata/labels/{REVISION_LABEL}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Makes pod `i` (and its missing claims first).
fn make_pod(ctx: &Ctx<'_>, set: &Value, template: &Value, revision: &str, i: i64) {
    let ns = meta_str(set, "namespace").unwrap_or("");
    let name = meta_str(set, "name").unwrap_or("");
    let pod_name = format!("{name}-{i}");
    let index = i.to_string();
    let mut pod = pods::from_template(
        template,
        Kind::StatefulSet,
        set,
        &pod_name,
        "",
        &[
            (REVISION_LABEL, revision),
            (POD_NAME_LABEL, &pod_name),
            (POD_INDEX_LABEL, &index),
        ],
    );
    pod["spec"]["hostname"] = json!(pod_name);
    if let Some(svc) = set
        .pointer("/spec/serviceName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        pod["spec"]["subdomain"] = json!(svc);
    }
    let claims = set
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in &claims {
        let tmpl = meta_str(c, "name").unwrap_or("");
        let claim_name = format!("{tmpl}-{pod_name}");
        if ctx
            .api
            .get(Kind::PersistentVolumeClaim, ns, &claim_name)
            .is_none()
        {
            let mut pvc = json!({
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim_name,
                    "labels": set.pointer("/spec/selector/matchLabels").cloned().unwrap_or(json!({})),
                },
                "spec": c.get("spec").cloned().unwrap_or(json!({})),
            });
            if let Some(a) = c.pointer("/metadata/annotations") {
                pvc["metadata"]["annotations"] = a.clone();
            }
            match create(ctx.api, Kind::PersistentVolumeClaim, ns, pvc) {
                Ok(_) => ctx.events.record(
                    ctx.api,
                    set,
                    EventType::Normal,
                    "SuccessfulCreate",
                    &format!(
                        "create Claim {claim_name} Pod {pod_name} in StatefulSet {name} success"
                    ),
                    COMPONENT,
                ),
                Err(e) => {
                    ctx.events.record(ctx.api,
                        set,
                        EventType::Warning,
                        "FailedCreate",
                        &format!(
                            "create Claim {claim_name} for Pod {pod_name} in StatefulSet {name} failed error: {}",
                            e.message
                        ),
                        COMPONENT,
                    );
                    return;
                }
            }
        }
        let volumes = pod["spec"]
            .as_object_mut()
            .map(|s| s.entry("volumes").or_insert_with(|| json!([])));
        if let Some(Value::Array(vs)) = volumes {
            vs.retain(|v| v.get("name").and_then(Value::as_str) != Some(tmpl));
            vs.push(json!({ "name": tmpl, "persistentVolumeClaim": { "claimName": claim_name } }));
        }
    }
    match create(ctx.api, Kind::Pod, ns, pod) {
        Ok(_) => ctx.events.record(
            ctx.api,
            set,
            EventType::Normal,
            "SuccessfulCreate",
            &format!("create Pod {pod_name} in StatefulSet {name} successful"),
            COMPONENT,
        ),
        Err(e) if e.code == 409 => {}
        Err(e) => ctx.events.record(
            ctx.api,
            set,
            EventType::Warning,
            "FailedCreate",
            &format!(
                "create Pod {pod_name} in StatefulSet {name} failed error: {}",
                e.message
            ),
            COMPONENT,
        ),
    }
}

fn delete_pod(ctx: &Ctx<'_>, set: &Value, p: &Value) {
    if delete(ctx.api, Kind::Pod, p).is_ok() {
        ctx.events.record(
            ctx.api,
            set,
            EventType::Normal,
            "SuccessfulDelete",
            &format!(
                "delete Pod {} in StatefulSet {} successful",
                meta_str(p, "name").unwrap_or(""),
                meta_str(set, "name").unwrap_or("")
            ),
            COMPONENT,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_are_the_decimal_suffix_of_the_set_name() {
        assert_eq!(ordinal("web", "web-0"), Some(0));
        assert_eq!(ordinal("web", "web-12"), Some(12));
        assert_eq!(ordinal("web", "web-01"), None);
        assert_eq!(ordinal("web", "web-x"), None);
        assert_eq!(ordinal("web", "webx-1"), None);
        assert_eq!(ordinal("web", "web-"), None);
    }
}
