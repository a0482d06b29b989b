//! Properties of the validator over arbitrary JSON.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// Arbitrary JSON, with keys the schemas know so the walks go deep.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "Running",
            "500m",
            "1Gi",
            "2026-11-29T10:00:00Z",
            "main",
            "TCP"
        ])
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        let keys = prop::sample::select(vec![
            "spec",
            "podTemplate",
            "containers",
            "name",
            "image",
            "ports",
            "containerPort",
            "protocol",
            "resources",
            "limits",
            "cpu",
            "volumeClaimTemplates",
            "replicas",
            "lifecycle",
            "status",
            "conditions",
            "type",
            "reason",
            "metadata",
            "x",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((keys, inner), 0..5).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #[test]
    fn arbitrary_json_never_panics(old in arb_json(), new in arb_json()) {
        for plural in PLURALS {
            let schema = schema_of(plural);
            for v in [&old, &new, &json!({"spec": new.clone()}), &json!({"spec": {"podTemplate": {"spec": new.clone()}}})] {
                let mut v = v.clone();
                let _ = schema.validate(&v, None);
                schema.prune(&mut v);
                schema.apply_defaults(&mut v);
                let errs = schema.validate(&v, None);
                prop_assert!(errs.iter().all(|e| !e.field.is_empty() && !e.message.is_empty()));
                let _ = schema.validate(&v, Some(&old));
            }
        }
    }
}
