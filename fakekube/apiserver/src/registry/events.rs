//! The two views of one stored Event: core `v1` (as stored) and `events.k8s.io/v1`, which names
//! the same fields differently (`regarding` for `involvedObject`, `note` for `message`,
//! `reportingController` for `reportingComponent`, and the older counters as `deprecated*`).
//! Fields both views share (`reason`, `type`, `eventTime`, `series`, `action`, `related`,
//! `reportingInstance`, metadata) pass through unchanged.

use serde_json::{Map, Value, json};

/// Core field name, `events.k8s.io/v1` field name.
const RENAMED: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// The `events.k8s.io` API version.
const EVENTS_V1: &str = "events.k8s.io/v1";

/// `object` (an Event in either view) in the view of `want` (`v1` or `events.k8s.io/v1`).
pub(super) fn convert(object: &Value, want: &str) -> Value {
    let to_events = want == EVENTS_V1;
    let Some(fields) = object.as_object() else {
        return object.clone();
    };
    let mut out = Map::with_capacity(fields.len());
    for (k, v) in fields {
        let renamed = RENAMED.iter().find_map(|(core, events)| {
            if to_events && k == core {
                Some(*events)
            } else if !to_events && k == events {
                Some(*core)
            } else {
                None
            }
        });
        out.insert(renamed.unwrap_or(k).to_string(), v.clone());
    }
    out.insert("apiVersion".into(), json!(want));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_event_reads_as_events_v1_and_converts_back_unchanged() {
        let core = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": { "name": "e", "namespace": "default" },
            "involvedObject": { "kind": "Pod", "name": "p" },
            "reason": "Started", "message": "Started container c", "type": "Normal",
            "source": { "component": "kubelet" }, "reportingComponent": "kubelet",
            "count": 2, "firstTimestamp": "2024-01-01T00:00:00Z",
            "lastTimestamp": "2024-01-01T00:00:01Z",
            "series": { "count": 2, "lastObservedTime": "2024-01-01T00:00:01.000000Z" },
        });
        let v1 = convert(&core, EVENTS_V1);
        assert_eq!(v1["apiVersion"], EVENTS_V1);
        assert_eq!(v1["regarding"]["name"], "p");
        assert_eq!(v1["note"], "Started container c");
        assert_eq!(v1["reportingController"], "kubelet");
        assert_eq!(v1["deprecatedSource"]["component"], "kubelet");
        assert_eq!(v1["deprecatedCount"], 2);
        assert_eq!(v1["series"]["count"], 2);
        assert!(v1.get("involvedObject").is_none() && v1.get("message").is_none());
        assert_eq!(convert(&v1, "v1"), core);
    }
}
