//! The ReplicaSet and ReplicationController controller: as many active pods as
//! `spec.replicas`, made from the template and deleted in the order the real controller picks
//! (unscheduled, pending, not ready, newest first), and the counts of `status`.

use super::{
    Ctx, Requeue, Workload, create_pod, delete_pod, generation, int_at, pods, write_status,
};
use serde_json::{Value, json};
use std::time::Duration;

/// The component name on the Events.
const COMPONENT: &str = "replicaset-controller";
const RC_COMPONENT: &str = "replication-controller";

pub(crate) fn reconcile(ctx: &mut Ctx<'_>, c: Workload, ns: &str, name: &str) -> Requeue {
    let rt = c.kind();
    let obj = ctx.api.get(rt, ns, name)?;
    if super::deleting(&obj) {
        return None;
    }
    let component = if c == Workload::ReplicationController {
        RC_COMPONENT
    } else {
        COMPONENT
    };
    let want = int_at(&obj, "/spec/replicas").max(0);
    let min_ready = int_at(&obj, "/spec/minReadySeconds");
    let now = ctx.api.clock().now_utc();
    let mut active: Vec<_> = pods::owned(ctx, &obj)
        .into_iter()
        .filter(|p| pods::active(p))
        .collect();
    let have = i64::try_from(active.len()).unwrap_or(i64::MAX);
    if have < want {
        let template = obj.pointer("/spec/template").cloned().unwrap_or(json!({}));
        for _ in have..want {
            let pod = pods::from_template(&template, rt, &obj, "", &format!("{name}-"), &[]);
            match create_pod(ctx, &obj, ns, pod, component) {
                Some(p) => active.push(p),
                None => break,
            }
        }
    } else if have > want {
        active.sort_by_key(|p| pods::deletion_rank(p));
        let surplus = usize::try_from(have - want).unwrap_or(0);
        let doomed: Vec<_> = active.drain(..surplus).collect();
        for p in doomed {
            delete_pod(ctx, &obj, &p, component);
        }
    }
    let count = |f: &dyn Fn(&Value) -> bool| active.iter().filter(|p| f(p)).count();
    let ready = count(&|p| pods::ready(p));
    let available = count(&|p| pods::available(p, min_ready, now));
    let wait = active
        .iter()
        .filter_map(|p| pods::until_available(p, min_ready, now))
        .filter(|d| !d.is_zero())
        .min();
    let mut status = json!({
        "replicas": active.len(),
        "fullyLabeledReplicas": active.len(),
        "readyReplicas": ready,
        "availableReplicas": available,
        "observedGeneration": generation(&obj),
    });
    // The API server drops zero counts from the wire form, as the real status omits them.
    if let Some(m) = status.as_object_mut() {
        m.retain(|k, v| k == "replicas" || k == "observedGeneration" || v != &json!(0));
    }
    write_status(ctx.api, rt, ns, name, status);
    wait.map(|d| d + Duration::from_millis(10))
}
