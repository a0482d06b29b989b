//! The defaults and validation of HorizontalPodAutoscalers (pkg/apis/autoscaling/v1 and v2
//! defaults, pkg/apis/autoscaling/validation): `minReplicas` 1; in `v2`, a CPU utilization
//! target of 80% when no metric is given and the scaling rules a given `behavior` leaves
//! out; a target with a kind and a name, `maxReplicas` at least 1 and at least `minReplicas`,
//! metrics whose source matches their type.

use crate::status::Cause;
use serde_json::{Map, Value, json};

fn invalid(field: &str, value: &str, why: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {value}: {why}"),
        field: Some(field.into()),
    }
}

fn required(field: &str, why: &str) -> Cause {
    Cause {
        reason: "FieldValueRequired".into(),
        message: if why.is_empty() {
            "Required value".into()
        } else {
            format!("Required value: {why}")
        },
        field: Some(field.into()),
    }
}

/// The scale-up rules a `behavior` without them gets (`GenerateHPAScaleUpRules`).
fn scale_up(rules: Option<&Value>) -> Value {
    let mut r = rules.cloned().filter(Value::is_object).unwrap_or(json!({}));
    if let Some(o) = r.as_object_mut() {
        o.entry("stabilizationWindowSeconds").or_insert(json!(0));
        o.entry("selectPolicy").or_insert(json!("Max"));
        o.entry("policies").or_insert(json!([
            { "type": "Pods", "value": 4, "periodSeconds": 15 },
            { "type": "Percent", "value": 100, "periodSeconds": 15 },
        ]));
    }
    r
}

/// The scale-down rules a `behavior` without them gets (`GenerateHPAScaleDownRules`).
fn scale_down(rules: Option<&Value>) -> Value {
    let mut r = rules.cloned().filter(Value::is_object).unwrap_or(json!({}));
    if let Some(o) = r.as_object_mut() {
        o.entry("selectPolicy").or_insert(json!("Max"));
        o.entry("policies").or_insert(json!([
            { "type": "Percent", "value": 100, "periodSeconds": 15 },
        ]));
    }
    r
}

fn defaults(version: &str, spec: &mut Map<String, Value>) {
    spec.entry("minReplicas").or_insert(json!(1));
    if version != "v2" {
        return;
    }
    if spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert(
            "metrics".into(),
            json!([ { "type": "Resource", "resource": { "name": "cpu",
                "target": { "type": "Utilization", "averageUtilization": 80 } } } ]),
        );
    }
    if let Some(b) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = scale_up(b.get("scaleUp"));
        let down = scale_down(b.get("scaleDown"));
        b.insert("scaleUp".into(), up);
        b.insert("scaleDown".into(), down);
    }
}

const METRIC_TYPES: &[(&str, &str)] = &[
    ("Object", "object"),
    ("Pods", "pods"),
    ("Resource", "resource"),
    ("ContainerResource", "containerResource"),
    ("External", "external"),
];

/// Defaults and checks an HPA written at `version` (`v1` or `v2`).
pub(super) fn hpa(version: &str, obj: &mut Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        causes.push(required("spec.scaleTargetRef.kind", ""));
        return causes;
    };
    defaults(version, spec);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let target = spec.get("scaleTargetRef").cloned().unwrap_or(Value::Null);
    if text(target.get("kind")).is_empty() {
        causes.push(required("spec.scaleTargetRef.kind", ""));
    }
    let name = text(target.get("name"));
    if name.is_empty() {
        causes.push(required("spec.scaleTargetRef.name", ""));
    } else if name.contains('/') || name.contains('%') || name == "." || name == ".." {
        causes.push(invalid(
            "spec.scaleTargetRef.name",
            &format!("\"{name}\""),
            "may not contain '/' or '%'",
        ));
    }
    let min = spec.get("minReplicas").and_then(Value::as_i64).unwrap_or(1);
    let max = spec.get("maxReplicas").and_then(Value::as_i64);
    if min < 1 {
        causes.push(invalid(
            "spec.minReplicas",
            &min.to_string(),
            "must be greater than or equal to 1",
        ));
    }
    match max {
        None => causes.push(required("spec.maxReplicas", "")),
        Some(m) if m < 1 => causes.push(invalid(
            "spec.maxReplicas",
            &m.to_string(),
            "must be greater than or equal to 1",
        )),
        Some(m) if m < min => causes.push(invalid(
            "spec.maxReplicas",
            &m.to_string(),
            "must be greater than or equal to `minReplicas`",
        )),
        Some(_) => {}
    }
    if let Some(cpu) = spec
        .get("targetCPUUtilizationPercentage")
        .and_then(Value::as_i64)
        && cpu < 1
    {
        causes.push(invalid(
            "spec.targetCPUUtilizationPercentage",
            &cpu.to_string(),
            "must be greater than or equal to 1",
        ));
    }
    for (i, m) in spec
        .get("metrics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("spec.metrics[{i}]");
        let kind = text(m.get("type"));
        match METRIC_TYPES.iter().find(|(t, _)| *t == kind) {
            None if kind.is_empty() => causes.push(required(&format!("{at}.type"), "must specify a metric source type")),
            None => causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: \"{kind}\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\""
                ),
                field: Some(format!("{at}.type")),
            }),
            Some((_, field)) => {
                if m.get(*field).is_none_or(Value::is_null) {
                    causes.push(required(
                        &format!("{at}.{field}"),
                        &format!("must populate information for the given metric source (type {kind})"),
                    ));
                }
                for (_, other) in METRIC_TYPES.iter().filter(|(_, f)| f != field) {
                    if m.get(*other).is_some_and(|v| !v.is_null()) {
                        causes.push(Cause {
                            reason: "FieldValueForbidden".into(),
                            message: "Forbidden: must populate the given metric source only".into(),
                            field: Some(format!("{at}.{other}")),
                        });
                    }
                }
            }
        }
    }
    causes
}
