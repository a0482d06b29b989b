//! The two views of one stored HorizontalPodAutoscaler: `autoscaling/v2` (as stored) and
//! `autoscaling/v1`, which has only a CPU utilization target. As the API server converts
//! them, what `v1` cannot hold rides in annotations of the `v1` object and comes back from
//! them when it is written: the other metrics (`autoscaling.alpha.kubernetes.io/metrics`, in
//! `v1`'s metric shape), the current metrics, the conditions and the behavior.

use serde_json::{Map, Value, json};

/// The `autoscaling/v1` API version.
const V1: &str = "autoscaling/v1";
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// `object` (an HPA in either view) in the view of `want` (`autoscaling/v1` or `/v2`).
pub(super) fn convert(object: &Value, want: &str) -> Value {
    let mut out = object.clone();
    if let Some(o) = out.as_object_mut() {
        o.insert("apiVersion".into(), json!(want));
    }
    if want == V1 {
        to_v1(object, &mut out);
    } else {
        to_v2(object, &mut out);
    }
    out
}

fn annotations_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let md = obj
        .as_object_mut()?
        .entry("metadata")
        .or_insert_with(|| json!({}));
    let a = md
        .as_object_mut()?
        .entry("annotations")
        .or_insert_with(|| json!({}));
    if !a.is_object() {
        *a = json!({});
    }
    a.as_object_mut()
}

/// Whether a v2 metric is the CPU utilization target `v1` holds in its own field.
fn is_cpu_utilization(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && m.pointer("/resource/target/averageUtilization").is_some()
}

/// A v2 metric in `v1`'s shape (`targetAverageUtilization`, `targetValue`...).
fn metric_to_v1(m: &Value) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    let target = |src: &Value| src.get("target").cloned().unwrap_or(Value::Null);
    let mut out = json!({ "type": kind });
    match kind {
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let src = m.get(key).cloned().unwrap_or(Value::Null);
            let t = target(&src);
            let mut r = json!({ "name": src.get("name") });
            if let Some(c) = src.get("container") {
                r["container"] = c.clone();
            }
            if let Some(u) = t.get("averageUtilization") {
                r["targetAverageUtilization"] = u.clone();
            }
            if let Some(v) = t.get("averageValue") {
                r["targetAverageValue"] = v.clone();
            }
            out[key] = r;
        }
        "Pods" => {
            let src = m.get("pods").cloned().unwrap_or(Value::Null);
            let mut p = json!({ "metricName": src.pointer("/metric/name"),
                "targetAverageValue": target(&src).get("averageValue") });
            if let Some(s) = src.pointer("/metric/selector") {
                p["selector"] = s.clone();
            }
            out["pods"] = p;
        }
        "Object" => {
            let src = m.get("object").cloned().unwrap_or(Value::Null);
            let t = target(&src);
            let mut o = json!({ "target": src.get("describedObject"),
                "metricName": src.pointer("/metric/name"),
                "targetValue": t.get("value") });
            if let Some(a) = t.get("averageValue") {
                o["averageValue"] = a.clone();
            }
            if let Some(s) = src.pointer("/metric/selector") {
                o["selector"] = s.clone();
            }
            out["object"] = o;
        }
        "External" => {
            let src = m.get("external").cloned().unwrap_or(Value::Null);
            let t = target(&src);
            let mut e = json!({ "metricName": src.pointer("/metric/name") });
            if let Some(s) = src.pointer("/metric/selector") {
                e["metricSelector"] = s.clone();
            }
            if let Some(v) = t.get("value") {
                e["targetValue"] = v.clone();
            }
            if let Some(v) = t.get("averageValue") {
                e["targetAverageValue"] = v.clone();
            }
            out["external"] = e;
        }
        _ => {}
    }
    out
}

/// A `v1`-shaped metric back in v2's shape.
fn metric_to_v2(m: &Value) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    let mut out = json!({ "type": kind });
    match kind {
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let src = m.get(key).cloned().unwrap_or(Value::Null);
            let target = match (
                src.get("targetAverageUtilization"),
                src.get("targetAverageValue"),
            ) {
                (Some(u), _) => json!({ "type": "Utilization", "averageUtilization": u }),
                (None, Some(v)) => json!({ "type": "AverageValue", "averageValue": v }),
                (None, None) => json!({}),
            };
            let mut r = json!({ "name": src.get("name"), "target": target });
            if let Some(c) = src.get("container") {
                r["container"] = c.clone();
            }
            out[key] = r;
        }
        "Pods" => {
            let src = m.get("pods").cloned().unwrap_or(Value::Null);
            let mut metric = json!({ "name": src.get("metricName") });
            if let Some(s) = src.get("selector") {
                metric["selector"] = s.clone();
            }
            out["pods"] = json!({ "metric": metric,
                "target": { "type": "AverageValue", "averageValue": src.get("targetAverageValue") } });
        }
        "Object" => {
            let src = m.get("object").cloned().unwrap_or(Value::Null);
            let mut metric = json!({ "name": src.get("metricName") });
            if let Some(s) = src.get("selector") {
                metric["selector"] = s.clone();
            }
            let target = match src.get("averageValue") {
                Some(a) => json!({ "type": "AverageValue", "averageValue": a }),
                None => json!({ "type": "Value", "value": src.get("targetValue") }),
            };
            out["object"] =
                json!({ "describedObject": src.get("target"), "metric": metric, "target": target });
        }
        "External" => {
            let src = m.get("external").cloned().unwrap_or(Value::Null);
            let mut metric = json!({ "name": src.get("metricName") });
            if let Some(s) = src.get("metricSelector") {
                metric["selector"] = s.clone();
            }
            let target = match src.get("targetAverageValue") {
                Some(a) => json!({ "type": "AverageValue", "averageValue": a }),
                None => json!({ "type": "Value", "value": src.get("targetValue") }),
            };
            out["external"] = json!({ "metric": metric, "target": target });
        }
        _ => {}
    }
    out
}

fn to_v1(v2: &Value, out: &mut Value) {
    let metrics: Vec<Value> = v2
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let cpu = metrics
        .iter()
        .find(|m| is_cpu_utilization(m))
        .and_then(|m| m.pointer("/resource/target/averageUtilization").cloned());
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(metric_to_v1)
        .collect();
    let behavior = v2
        .pointer("/spec/behavior")
        .filter(|b| !b.is_null())
        .cloned();
    let current: Vec<Value> = v2
        .pointer("/status/currentMetrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let current_cpu = current
        .iter()
        .find(|m| {
            m.get("type").and_then(Value::as_str) == Some("Resource")
                && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        })
        .and_then(|m| m.pointer("/resource/current/averageUtilization").cloned());
    let conditions = v2
        .pointer("/status/conditions")
        .filter(|c| c.is_array())
        .cloned();
    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("metrics");
        spec.remove("behavior");
        if let Some(cpu) = cpu {
            spec.insert("targetCPUUtilizationPercentage".into(), cpu);
        }
    }
    if let Some(status) = out.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("currentMetrics");
        status.remove("conditions");
        if let Some(c) = current_cpu {
            status.insert("currentCPUUtilizationPercentage".into(), c);
        }
    }
    let Some(a) = annotations_mut(out) else {
        return;
    };
    for key in [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR] {
        a.remove(key);
    }
    let text = |v: &Value| json!(serde_json::to_string(v).unwrap_or_default());
    if !others.is_empty() {
        a.insert(METRICS.into(), text(&json!(others)));
    }
    if !current.is_empty() {
        a.insert(CURRENT_METRICS.into(), text(&json!(current)));
    }
    if let Some(c) = conditions {
        a.insert(CONDITIONS.into(), text(&c));
    }
    if let Some(b) = behavior {
        a.insert(BEHAVIOR.into(), text(&b));
    }
    if a.is_empty()
        && let Some(md) = out.get_mut("metadata").and_then(Value::as_object_mut)
    {
        md.remove("annotations");
    }
}

fn to_v2(v1: &Value, out: &mut Value) {
    let annotation = |key: &str| {
        v1.pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
    };
    let mut metrics: Vec<Value> = Vec::new();
    if let Some(cpu) = v1
        .pointer("/spec/targetCPUUtilizationPercentage")
        .filter(|c| !c.is_null())
    {
        metrics.push(json!({ "type": "Resource", "resource": { "name": "cpu",
            "target": { "type": "Utilization", "averageUtilization": cpu } } }));
    }
    if let Some(Value::Array(others)) = annotation(METRICS) {
        metrics.extend(others.iter().map(metric_to_v2));
    }
    let behavior = annotation(BEHAVIOR);
    let current = annotation(CURRENT_METRICS);
    let conditions = annotation(CONDITIONS);
    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("targetCPUUtilizationPercentage");
        if !metrics.is_empty() {
            spec.insert("metrics".into(), json!(metrics));
        }
        if let Some(b) = behavior {
            spec.insert("behavior".into(), b);
        }
    }
    if let Some(status) = out.get_mut("status").and_then(Value::as_object_mut) {
        let cpu = status.remove("currentCPUUtilizationPercentage");
        match current {
            Some(c) => {
                status.insert("currentMetrics".into(), c);
            }
            None => {
                if let Some(cpu) = cpu {
                    status.insert(
                        "currentMetrics".into(),
                        json!([ { "type": "Resource", "resource": { "name": "cpu",
                            "current": { "averageUtilization": cpu } } } ]),
                    );
                }
            }
        }
        if let Some(c) = conditions {
            status.insert("conditions".into(), c);
        }
    }
    if let Some(a) = annotations_mut(out) {
        for key in [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR] {
            a.remove(key);
        }
        if a.is_empty()
            && let Some(md) = out.get_mut("metadata").and_then(Value::as_object_mut)
        {
            md.remove("annotations");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v2_autoscaler_round_trips_through_v1_and_its_annotations() {
        let v2 = json!({ "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": { "name": "h" },
            "spec": { "scaleTargetRef": { "kind": "Deployment", "name": "web", "apiVersion": "apps/v1" },
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    { "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 60 } } },
                    { "type": "Resource", "resource": { "name": "memory", "target": { "type": "AverageValue", "averageValue": "100Mi" } } } ],
                "behavior": { "scaleDown": { "stabilizationWindowSeconds": 60 } } } });
        let v1 = convert(&v2, "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert!(v1["spec"].get("metrics").is_none());
        let metrics: Value = serde_json::from_str(
            v1["metadata"]["annotations"][METRICS]
                .as_str()
                .unwrap_or(""),
        )
        .unwrap_or(Value::Null);
        assert_eq!(
            metrics,
            json!([ { "type": "Resource", "resource": { "name": "memory", "targetAverageValue": "100Mi" } } ])
        );
        assert_eq!(convert(&v1, "autoscaling/v2"), v2);
    }
}
