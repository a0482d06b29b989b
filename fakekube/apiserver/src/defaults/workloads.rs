//! Defaults and the checks clients depend on of the workload kinds: `apps/v1` Deployments,
//! ReplicaSets, StatefulSets and DaemonSets, core ReplicationControllers, `batch/v1` Jobs and
//! CronJobs, `policy/v1` PodDisruptionBudgets and `discovery.k8s.io/v1` EndpointSlices, as the
//! API server's defaulting and validation give them: the defaults `kubectl get -o yaml` shows,
//! the pod template's defaults, a selector that must select the template's labels, the
//! restart policies each kind allows, and a Job's generated selector.

use super::{pod_spec, required, set_default};
use crate::meta::meta_str;
use crate::registry::ResourceType;
use crate::selector::LabelSelector;
use crate::status::Cause;
use serde_json::{Map, Value, json};

/// The label a Job's pods and generated selector carry: the Job's uid.
pub(crate) const JOB_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
/// The label a Job's pods carry: the Job's name.
pub(crate) const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The older spellings of the two, still set.
const LEGACY_JOB_UID_LABEL: &str = "controller-uid";
const LEGACY_JOB_NAME_LABEL: &str = "job-name";

/// Defaults and validates a workload object; the causes of a 422, empty when admitted.
pub(crate) fn admit(rt: &ResourceType, obj: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let uid = meta_str(obj, "uid").unwrap_or("").to_string();
    let name = meta_str(obj, "name").unwrap_or("").to_string();
    let Some(o) = obj.as_object_mut() else {
        return causes;
    };
    let kind = rt.kind.as_str();
    if kind == "EndpointSlice" {
        if o.get("addressType")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(required("addressType"));
        }
        return causes;
    }
    let spec = o.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    let Some(spec) = spec.as_object_mut() else {
        return causes;
    };
    match kind {
        "Deployment" => {
            set_default(spec, "replicas", json!(1));
            let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
            if let Some(st) = strategy.as_object_mut() {
                set_default(st, "type", json!("RollingUpdate"));
                if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
                    if let Some(ru) = ru.as_object_mut() {
                        set_default(ru, "maxUnavailable", json!("25%"));
                        set_default(ru, "maxSurge", json!("25%"));
                    }
                } else if st.get("rollingUpdate").is_some_and(|r| !r.is_null()) {
                    causes.push(Cause {
                        reason: "FieldValueForbidden".into(),
                        message:
                            "Forbidden: may not be specified when strategy `type` is 'Recreate'"
                                .into(),
                        field: Some("spec.strategy.rollingUpdate".into()),
                    });
                }
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(spec, "progressDeadlineSeconds", json!(600));
            templated(spec, old, &["Always"], &mut causes);
        }
        "ReplicaSet" => {
            set_default(spec, "replicas", json!(1));
            templated(spec, old, &["Always"], &mut causes);
        }
        "ReplicationController" => {
            set_default(spec, "replicas", json!(1));
            replication_controller_selector(spec);
            template_defaults(spec, &["Always"], &mut causes);
        }
        "StatefulSet" => {
            set_default(spec, "replicas", json!(1));
            set_default(spec, "podManagementPolicy", json!("OrderedReady"));
            let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
            if let Some(st) = strategy.as_object_mut() {
                set_default(st, "type", json!("RollingUpdate"));
                if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
                    if let Some(ru) = ru.as_object_mut() {
                        set_default(ru, "partition", json!(0));
                    }
                }
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                json!({ "whenDeleted": "Retain", "whenScaled": "Retain" }),
            );
            if let Some(Value::Array(claims)) = spec.get_mut("volumeClaimTemplates") {
                for c in claims.iter_mut().filter_map(Value::as_object_mut) {
                    set_default(c, "apiVersion", json!("v1"));
                    set_default(c, "kind", json!("PersistentVolumeClaim"));
                    if let Some(s) = c.get_mut("spec").and_then(Value::as_object_mut) {
                        set_default(s, "volumeMode", json!("Filesystem"));
                    }
                    set_default(c, "status", json!({ "phase": "Pending" }));
                }
            }
            templated(spec, old, &["Always"], &mut causes);
        }
        "DaemonSet" => {
            let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
            if let Some(st) = strategy.as_object_mut() {
                set_default(st, "type", json!("RollingUpdate"));
                if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
                    if let Some(ru) = ru.as_object_mut() {
                        set_default(ru, "maxUnavailable", json!(1));
                        set_default(ru, "maxSurge", json!(0));
                    }
                }
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            templated(spec, old, &["Always"], &mut causes);
        }
        "Job" => job(spec, &uid, &name, old, &mut causes),
        "CronJob" => {
            set_default(spec, "concurrencyPolicy", json!("Allow"));
            set_default(spec, "suspend", json!(false));
            set_default(spec, "successfulJobsHistoryLimit", json!(3));
            set_default(spec, "failedJobsHistoryLimit", json!(1));
            if spec
                .get("schedule")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                causes.push(required("spec.schedule"));
            }
            let job_spec = spec
                .get_mut("jobTemplate")
                .and_then(|t| t.get_mut("spec"))
                .and_then(Value::as_object_mut);
            match job_spec {
                Some(js) => {
                    set_default(js, "backoffLimit", json!(6));
                    set_default(js, "completionMode", json!("NonIndexed"));
                    set_default(js, "suspend", json!(false));
                    template_at(js, "spec.jobTemplate.spec.template", &mut causes);
                    check_restart_policy(
                        js,
                        "spec.jobTemplate.spec.template",
                        &["OnFailure", "Never"],
                        &mut causes,
                    );
                }
                None => causes.push(required("spec.jobTemplate.spec.template")),
            }
        }
        "PodDisruptionBudget"
            if spec.get("minAvailable").is_some() && spec.get("maxUnavailable").is_some() =>
        {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: \"\": minAvailable and maxUnavailable cannot be both set"
                    .into(),
                field: Some("spec".into()),
            });
        }
        _ => {}
    }
    causes
}

/// A ReplicationController's selector defaults to its template's labels.
fn replication_controller_selector(spec: &mut Map<String, Value>) {
    let template_labels = spec
        .get("template")
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .cloned();
    if spec
        .get("selector")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
        && let Some(l) = template_labels
    {
        spec.insert("selector".into(), l);
    }
}

/// The pod template at `spec.template` defaulted, its restart policy checked against `allowed`.
fn template_defaults(spec: &mut Map<String, Value>, allowed: &[&str], causes: &mut Vec<Cause>) {
    template_at(spec, "spec.template", causes);
    check_restart_policy(spec, "spec.template", allowed, causes);
}

/// Defaults the pod template `spec.template` found at field path `at`.
fn template_at(spec: &mut Map<String, Value>, at: &str, causes: &mut Vec<Cause>) {
    let Some(template) = spec.get_mut("template").and_then(Value::as_object_mut) else {
        causes.push(required(&format!("{at}.spec.containers")));
        return;
    };
    let pod = template.entry("spec").or_insert_with(|| json!({}));
    if !pod.is_object() {
        *pod = json!({});
    }
    if let Some(pod) = pod.as_object_mut() {
        pod_spec(pod, &format!("{at}.spec"), causes);
    }
}

/// Refuses a template restart policy outside `allowed`, as the API server words it.
fn check_restart_policy(
    spec: &Map<String, Value>,
    at: &str,
    allowed: &[&str],
    causes: &mut Vec<Cause>,
) {
    let policy = spec
        .get("template")
        .and_then(|t| t.get("spec"))
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if !allowed.contains(&policy) {
        let quoted: Vec<String> = allowed.iter().map(|p| format!("\"{p}\"")).collect();
        causes.push(Cause {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: \"{policy}\": supported values: {}",
                quoted.join(", ")
            ),
            field: Some(format!("{at}.spec.restartPolicy")),
        });
    }
}

/// A templated kind with a required `metav1.LabelSelector` that must select the template's
/// labels and may not change.
fn templated(
    spec: &mut Map<String, Value>,
    old: Option<&Value>,
    restart: &[&str],
    causes: &mut Vec<Cause>,
) {
    template_defaults(spec, restart, causes);
    check_selector(spec, causes);
    if let Some(old) = old {
        let before = old.get("spec").and_then(|s| s.get("selector"));
        if before.is_some() && spec.get("selector") != before {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {}: field is immutable",
                    go_selector(spec.get("selector"))
                ),
                field: Some("spec.selector".into()),
            });
        }
    }
}

/// Go's `%v` of a `metav1.LabelSelector`, as the immutability message prints it.
fn go_selector(s: Option<&Value>) -> String {
    let labels = s
        .and_then(|s| s.get("matchLabels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}:{}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    format!(
        "v1.LabelSelector{{MatchLabels:map[string]string{{{labels}}}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}"
    )
}

/// The selector must be there, non-empty, and select the template's labels.
fn check_selector(spec: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) else {
        causes.push(required("spec.selector"));
        return;
    };
    let parsed = match LabelSelector::from_object(sel) {
        Ok(p) => p,
        Err(why) => {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {sel}: {why}"),
                field: Some("spec.selector".into()),
            });
            return;
        }
    };
    if parsed.is_empty() {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {}: empty selector is invalid for deployment",
                go_selector(Some(sel))
            ),
            field: Some("spec.selector".into()),
        });
        return;
    }
    let labels = spec
        .get("template")
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    if !parsed.matches(labels) {
        let shown = labels
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("\"{k}\":\"{}\"", v.as_str().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: map[string]string{{{shown}}}: `selector` does not match template `labels`"
            ),
            field: Some("spec.template.metadata.labels".into()),
        });
    }
}

/// A Job's defaults, its generated selector and pod labels, and its restart policy.
fn job(
    spec: &mut Map<String, Value>,
    uid: &str,
    name: &str,
    old: Option<&Value>,
    causes: &mut Vec<Cause>,
) {
    if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    set_default(spec, "backoffLimit", json!(6));
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    template_defaults(spec, &["OnFailure", "Never"], causes);
    if old.is_some() {
        return;
    }
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if manual {
        check_selector(spec, causes);
        return;
    }
    if spec.get("selector").is_some_and(|s| !s.is_null()) {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: \"\": `selector` will be auto-generated".into(),
            field: Some("spec.selector".into()),
        });
        return;
    }
    spec.insert(
        "selector".into(),
        json!({ "matchLabels": { JOB_UID_LABEL: uid } }),
    );
    if let Some(template) = spec.get_mut("template").and_then(Value::as_object_mut) {
        let md = template.entry("metadata").or_insert_with(|| json!({}));
        if !md.is_object() {
            *md = json!({});
        }
        if let Some(md) = md.as_object_mut() {
            let labels = md.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert(JOB_UID_LABEL.into(), json!(uid));
                l.insert(JOB_NAME_LABEL.into(), json!(name));
                l.insert(LEGACY_JOB_UID_LABEL.into(), json!(uid));
                l.insert(LEGACY_JOB_NAME_LABEL.into(), json!(name));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use std::sync::Arc;

    fn kind(group: &str, plural: &str) -> Arc<ResourceType> {
        Registry::new()
            .find(group, "v1", plural)
            .unwrap_or_else(|| panic!("{plural} served"))
    }

    fn deployment(selector: Value, labels: Value) -> Value {
        json!({
            "metadata": { "name": "web" },
            "spec": {
                "selector": selector,
                "template": {
                    "metadata": { "labels": labels },
                    "spec": { "containers": [ { "name": "c", "image": "nginx:1.27" } ] },
                },
            },
        })
    }

    #[test]
    fn a_deployment_gets_the_rolling_update_defaults_and_a_defaulted_template() {
        let rt = kind("apps", "deployments");
        let mut d = deployment(
            json!({ "matchLabels": { "app": "web" } }),
            json!({ "app": "web" }),
        );
        assert!(admit(&rt, &mut d, None).is_empty());
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert!(pod.get("priority").is_none());
    }

    #[test]
    fn a_selector_that_misses_the_template_labels_is_refused() {
        let rt = kind("apps", "deployments");
        let mut d = deployment(
            json!({ "matchLabels": { "app": "web" } }),
            json!({ "app": "api" }),
        );
        let causes = admit(&rt, &mut d, None);
        assert_eq!(
            causes[0].field.as_deref(),
            Some("spec.template.metadata.labels")
        );
        assert!(
            causes[0]
                .message
                .ends_with("`selector` does not match template `labels`")
        );
        let mut none = deployment(Value::Null, json!({ "app": "web" }));
        assert_eq!(
            admit(&rt, &mut none, None)[0].field.as_deref(),
            Some("spec.selector")
        );
    }

    #[test]
    fn a_deployment_selector_may_not_change() {
        let rt = kind("apps", "deployments");
        let mut old = deployment(
            json!({ "matchLabels": { "app": "web" } }),
            json!({ "app": "web", "v": "2" }),
        );
        assert!(admit(&rt, &mut old, None).is_empty());
        let mut new = deployment(
            json!({ "matchLabels": { "v": "2" } }),
            json!({ "app": "web", "v": "2" }),
        );
        let causes = admit(&rt, &mut new, Some(&old));
        assert!(
            causes[0].message.ends_with("field is immutable"),
            "{causes:?}"
        );
    }

    #[test]
    fn a_job_gets_a_generated_selector_and_labelled_pods() {
        let rt = kind("batch", "jobs");
        let mut j = json!({
            "metadata": { "name": "pi", "uid": "u-1" },
            "spec": { "template": { "spec": {
                "restartPolicy": "Never",
                "containers": [ { "name": "c", "image": "busybox" } ],
            } } },
        });
        assert!(admit(&rt, &mut j, None).is_empty());
        assert_eq!(j["spec"]["completions"], 1);
        assert_eq!(j["spec"]["parallelism"], 1);
        assert_eq!(j["spec"]["backoffLimit"], 6);
        assert_eq!(j["spec"]["selector"]["matchLabels"][JOB_UID_LABEL], "u-1");
        let labels = &j["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels[JOB_NAME_LABEL], "pi");
        assert_eq!(labels["job-name"], "pi");
        assert_eq!(labels["controller-uid"], "u-1");
    }

    #[test]
    fn a_job_that_restarts_always_is_refused() {
        let rt = kind("batch", "jobs");
        let mut j = json!({
            "metadata": { "name": "pi", "uid": "u-1" },
            "spec": { "template": { "spec": { "containers": [ { "name": "c", "image": "busybox" } ] } } },
        });
        let causes = admit(&rt, &mut j, None);
        assert_eq!(
            causes[0].field.as_deref(),
            Some("spec.template.spec.restartPolicy")
        );
        assert_eq!(
            causes[0].message,
            "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
        );
    }

    #[test]
    fn a_stateful_set_defaults_its_claim_templates() {
        let rt = kind("apps", "statefulsets");
        let mut s = json!({
            "metadata": { "name": "db" },
            "spec": {
                "selector": { "matchLabels": { "app": "db" } },
                "template": { "metadata": { "labels": { "app": "db" } },
                    "spec": { "containers": [ { "name": "c", "image": "busybox" } ] } },
                "volumeClaimTemplates": [ { "metadata": { "name": "data" },
                    "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } } ],
            },
        });
        assert!(admit(&rt, &mut s, None).is_empty());
        assert_eq!(s["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(s["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 0);
        assert_eq!(
            s["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"],
            "Filesystem"
        );
    }

    #[test]
    fn a_replication_controller_selects_its_template_labels_by_default() {
        let rt = kind("", "replicationcontrollers");
        let mut rc = json!({
            "metadata": { "name": "fe" },
            "spec": { "template": { "metadata": { "labels": { "name": "fe" } },
                "spec": { "containers": [ { "name": "c", "image": "nginx" } ] } } },
        });
        assert!(admit(&rt, &mut rc, None).is_empty());
        assert_eq!(rc["spec"]["selector"], json!({ "name": "fe" }));
        assert_eq!(rc["spec"]["replicas"], 1);
    }
}
