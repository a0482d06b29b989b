//! The Job controller: pods from the template until `completions` of them succeeded (or, with
//! no `completions`, until one did and none is running), at most `parallelism` at once; a
//! failed pod (or a restarted container under `OnFailure`) counts toward `backoffLimit` and
//! its replacement waits an exponential back-off; `activeDeadlineSeconds` ends the Job; an
//! Indexed Job gives each pod its completion index. Finished Jobs carry the conditions of a
//! 1.31+ controller (SuccessCriteriaMet then Complete, FailureTarget then Failed) and are
//! deleted `ttlSecondsAfterFinished` later. `suspend` stops the pods and the clock.

use super::write_status;
use super::{Ctx, Requeue, condition_true, create_pod, delete_pod, int_at, pods};
use crate::client::Kind;
use crate::events::EventType;
use crate::meta::meta_str;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

const COMPONENT: &str = "job-controller";
const INDEX_KEY: &str = "batch.kubernetes.io/job-completion-index";

/// What the controller keeps between passes, by Job namespace and name (with the uid, so a
/// Job made again under the same name starts afresh): the failures seen and when the next pod
/// may be made. An entry goes when its Job finishes or is deleted.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    backoff: HashMap<(String, String), (String, i64, SystemTime)>,
}

pub(crate) fn reconcile(ctx: &mut Ctx<'_>, ns: &str, name: &str) -> Requeue {
    let rt = Kind::Job;
    let key = (ns.to_string(), name.to_string());
    let Some(job) = ctx.api.get(rt, ns, name) else {
        ctx.jobs.backoff.remove(&key);
        return None;
    };
    let uid = meta_str(&job, "uid").unwrap_or("").to_string();
    if super::deleting(&job) {
        ctx.jobs.backoff.remove(&key);
        return None;
    }
    let mut status = job.get("status").cloned().unwrap_or(json!({}));
    if !status.is_object() {
        status = json!({});
    }
    if condition_true(&job, "Complete") || condition_true(&job, "Failed") {
        ctx.jobs.backoff.remove(&key);
        return ttl(ctx, &job);
    }
    let owned = pods::owned(ctx, &job);
    let indexed = job.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
    let completions = job.pointer("/spec/completions").and_then(Value::as_i64);
    let parallelism = int_at(&job, "/spec/parallelism").max(0);
    let backoff_limit = job
        .pointer("/spec/backoffLimit")
        .and_then(Value::as_i64)
        .unwrap_or(6);
    let on_failure = job
        .pointer("/spec/template/spec/restartPolicy")
        .and_then(Value::as_str)
        == Some("OnFailure");
    let mut active: Vec<&Arc<Value>> = owned.iter().filter(|p| pods::active(p)).collect();
    let succeeded_pods: Vec<&Arc<Value>> = owned
        .iter()
        .filter(|p| pods::phase(p) == "Succeeded")
        .collect();
    let failed_now = owned.iter().filter(|p| pods::phase(p) == "Failed").count();
    let succeeded =
        int_at(&job, "/status/succeeded").max(i64::try_from(succeeded_pods.len()).unwrap_or(0));
    let failed = int_at(&job, "/status/failed").max(i64::try_from(failed_now).unwrap_or(0));
    let restarts: i64 = if on_failure {
        active
            .iter()
            .flat_map(|p| {
                p.pointer("/status/containerStatuses")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            })
            .map(|c| c.get("restartCount").and_then(Value::as_i64).unwrap_or(0))
            .sum()
    } else {
        0
    };
    let done_indexes: BTreeSet<i64> = succeeded_pods.iter().filter_map(|p| index_of(p)).collect();
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let mut requeue = None;
    let now = ctx.api.clock().now_rfc3339();

    // Suspended: no pods and no clock.
    if suspended {
        for p in active.drain(..) {
            delete_pod(ctx, &job, p, COMPONENT);
        }
        set_condition(
            &mut conditions,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            &now,
        );
        if let Some(m) = status.as_object_mut() {
            m.remove("startTime");
        }
    } else {
        if job_condition(&conditions, "Suspended") == Some("True") {
            set_condition(
                &mut conditions,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
                &now,
            );
        }
        if status.get("startTime").is_none_or(Value::is_null) {
            status["startTime"] = json!(now);
        }
    }

    let complete = match completions {
        Some(n) if indexed => i64::try_from(done_indexes.len()).unwrap_or(0) >= n,
        Some(n) => succeeded >= n,
        None => succeeded > 0 && active.is_empty(),
    };
    let deadline = job
        .pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64);
    let running_for = status
        .get("startTime")
        .and_then(Value::as_str)
        .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
        .map(|t| ctx.api.clock().now_utc() - t);
    let failure = if failed + restarts > backoff_limit {
        Some((
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit".to_string(),
        ))
    } else if let (Some(d), Some(ran), false) = (deadline, running_for, suspended) {
        let left = time::Duration::seconds(d) - ran;
        if left <= time::Duration::ZERO {
            Some((
                "DeadlineExceeded",
                "Job was active longer than specified deadline".to_string(),
            ))
        } else {
            requeue = Duration::try_from(left).ok();
            None
        }
    } else {
        None
    };

    if let Some((reason, message)) = &failure {
        for p in active.drain(..) {
            delete_pod(ctx, &job, p, COMPONENT);
        }
        set_condition(
            &mut conditions,
            "FailureTarget",
            "True",
            reason,
            message,
            &now,
        );
        set_condition(&mut conditions, "Failed", "True", reason, message, &now);
        ctx.events.record(
            ctx.api,
            &job,
            EventType::Warning,
            reason,
            message,
            COMPONENT,
        );
        requeue = None;
    } else if complete && !suspended {
        for p in active.drain(..) {
            delete_pod(ctx, &job, p, COMPONENT);
        }
        let message = "Reached expected number of succeeded pods";
        set_condition(
            &mut conditions,
            "SuccessCriteriaMet",
            "True",
            "CompletionsReached",
            message,
            &now,
        );
        set_condition(
            &mut conditions,
            "Complete",
            "True",
            "CompletionsReached",
            message,
            &now,
        );
        status["completionTime"] = json!(now);
        ctx.events.record(
            ctx.api,
            &job,
            EventType::Normal,
            "Completed",
            "Job completed",
            COMPONENT,
        );
        requeue = None;
    } else if !suspended {
        let want = match completions {
            Some(n) if indexed => {
                (n - i64::try_from(done_indexes.len()).unwrap_or(0)).min(parallelism)
            }
            Some(n) => (n - succeeded).min(parallelism),
            None if succeeded > 0 => 0,
            None => parallelism,
        }
        .max(0);
        let have = i64::try_from(active.len()).unwrap_or(0);
        let failures = failed + restarts;
        let (seen, not_before) = ctx
            .jobs
            .backoff
            .get(&key)
            .filter(|(u, _, _)| *u == uid)
            .map_or((0, ctx.api.clock().now()), |(_, seen, at)| (*seen, *at));
        let not_before = if failures > seen {
            let exp = u32::try_from((failures - 1).clamp(0, 16)).unwrap_or(16);
            let wait = ctx
                .config
                .job_backoff
                .saturating_mul(2u32.saturating_pow(exp))
                .min(ctx.config.job_backoff.saturating_mul(36));
            let at = ctx.api.clock().now() + wait;
            ctx.jobs
                .backoff
                .insert(key.clone(), (uid.clone(), failures, at));
            at
        } else {
            not_before
        };
        if have < want {
            let clock_now = ctx.api.clock().now();
            if let Ok(wait) = not_before.duration_since(clock_now)
                && !wait.is_zero()
            {
                requeue = Some(requeue.map_or(wait, |r: Duration| r.min(wait)));
            } else {
                let taken: BTreeSet<i64> = active.iter().filter_map(|p| index_of(p)).collect();
                let mut free = (0..completions.unwrap_or(0))
                    .filter(|i| !done_indexes.contains(i) && !taken.contains(i));
                for _ in have..want {
                    let index = if indexed { free.next() } else { None };
                    if indexed && index.is_none() {
                        break;
                    }
                    make_pod(ctx, &job, index);
                }
            }
        } else if have > want {
            for p in active.iter().skip(usize::try_from(want).unwrap_or(0)) {
                delete_pod(ctx, &job, p, COMPONENT);
            }
        }
    }

    let owned = pods::owned(ctx, &job);
    let active_now: Vec<&Arc<Value>> = owned.iter().filter(|p| pods::active(p)).collect();
    status["active"] = json!(active_now.len());
    status["ready"] = json!(active_now.iter().filter(|p| pods::ready(p)).count());
    status["succeeded"] = json!(succeeded);
    status["failed"] = json!(failed);
    status["terminating"] = json!(
        owned
            .iter()
            .filter(|p| super::deleting(p) && !pods::finished(p))
            .count()
    );
    status["uncountedTerminatedPods"] = json!({});
    if indexed {
        status["completedIndexes"] = json!(ranges(&done_indexes));
    }
    if let Some(m) = status.as_object_mut() {
        m.retain(|k, v| !matches!(k.as_str(), "active" | "succeeded" | "failed") || v != &json!(0));
        if conditions.is_empty() {
            m.remove("conditions");
        } else {
            m.insert("conditions".into(), json!(conditions));
        }
    }
    write_status(ctx.api, rt, ns, name, status);
    if failure.is_some() || complete {
        return ttl(ctx, &job);
    }
    requeue
}

/// Deletes a finished Job `ttlSecondsAfterFinished` after it finished.
fn ttl(ctx: &Ctx<'_>, job: &Value) -> Requeue {
    let secs = job
        .pointer("/spec/ttlSecondsAfterFinished")
        .and_then(Value::as_i64)?;
    let ns = meta_str(job, "namespace").unwrap_or("");
    let name = meta_str(job, "name").unwrap_or("");
    let stored = ctx.api.get(Kind::Job, ns, name)?;
    let finished_at = stored
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .filter(|c| {
            matches!(
                c.get("type").and_then(Value::as_str),
                Some("Complete" | "Failed")
            )
        })
        .filter_map(|c| c.get("lastTransitionTime").and_then(Value::as_str))
        .filter_map(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
        .next()?;
    let left = time::Duration::seconds(secs) - (ctx.api.clock().now_utc() - finished_at);
    if left <= time::Duration::ZERO {
        let opts = crate::client::Delete {
            uid: meta_str(&stored, "uid").map(str::to_string),
            propagation: Some(crate::client::Propagation::Background),
            ..crate::client::Delete::default()
        };
        let _ = ctx.api.delete(Kind::Job, ns, name, &opts);
        return None;
    }
    Duration::try_from(left).ok()
}

/// The completion index of an Indexed Job's pod.
fn index_of(p: &Value) -> Option<i64> {
    p.pointer(&format!(
        "/metadata/annotations/{}",
        INDEX_KEY.replace('/', "~1")
    ))
    .and_then(Value::as_str)
    .and_then(|s| s.parse().ok())
}

/// Indexes as the API writes them: `1,3-5,7`.
fn ranges(set: &BTreeSet<i64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut it = set.iter().copied().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while it.peek() == Some(&(end + 1)) {
            end += 1;
            it.next();
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out.join(",")
}

fn job_condition<'a>(conditions: &'a [Value], ty: &str) -> Option<&'a str> {
    conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
}

/// Sets a Job condition (with `lastProbeTime`, as the Job controller writes them) at `now`.
fn set_condition(
    conditions: &mut Vec<Value>,
    ty: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) {
    if super::set_condition(conditions, ty, status, reason, message, false, now)
        && let Some(c) = conditions
            .iter_mut()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
    {
        c["lastProbeTime"] = json!(now);
    }
}

fn make_pod(ctx: &Ctx<'_>, job: &Value, index: Option<i64>) {
    let ns = meta_str(job, "namespace").unwrap_or("");
    let name = meta_str(job, "name").unwrap_or("");
    let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let index_text = index.map(|i| i.to_string()).unwrap_or_default();
    let extra: Vec<(&str, &str)> = if index.is_some() {
        vec![(INDEX_KEY, index_text.as_str())]
    } else {
        Vec::new()
    };
    let generate = match index {
        Some(i) => format!("{name}-{i}-"),
        None => format!("{name}-"),
    };
    let mut pod = pods::from_template(&template, Kind::Job, job, "", &generate, &extra);
    if index.is_some() {
        pod["metadata"]["annotations"][INDEX_KEY] = json!(index_text);
        pod["spec"]["hostname"] = json!(format!("{name}-{index_text}"));
        if let Some(Value::Array(cs)) = pod.pointer_mut("/spec/containers") {
            for c in cs.iter_mut() {
                let env = c
                    .as_object_mut()
                    .map(|m| m.entry("env").or_insert_with(|| json!([])));
                if let Some(Value::Array(env)) = env {
                    env.push(json!({ "name": "JOB_COMPLETION_INDEX", "value": index_text }));
                }
            }
        }
    }
    create_pod(ctx, job, ns, pod, COMPONENT);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_are_written_as_ranges() {
        let set: BTreeSet<i64> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(ranges(&set), "0-2,4,6-7");
        assert_eq!(ranges(&BTreeSet::new()), "");
    }
}
