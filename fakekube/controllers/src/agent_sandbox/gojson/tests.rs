//! The expected bytes below were written by hand from the Go structs (agent-sandbox
//! `api/v1beta1/sandbox_types.go` at 2fd412d5, k8s.io/api v0.36.3 `core/v1/types.go`) and Go's
//! encoding/json rules, not produced by this module: `PodTemplate` writes `spec` before
//! `metadata`; `PodSpec` writes `containers` (not `omitempty`) and, of the rest, only what is
//! set and non-zero; a `Container` always writes `resources` (a struct), `{}` when empty; a
//! `*bool` set to false is written; map keys are sorted; `<` and `&` become `\u003c` and
//! `\u0026`. The hashes are FNV-1a 32 of those bytes (`NameHash`), computed separately with a
//! few lines of Python's integer arithmetic.

use super::*;
use serde_json::json;

/// FNV-1a 32, 8 hex digits (upstream's `NameHash`).
fn name_hash(s: &str) -> String {
    let h = s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("{h:08x}")
}

#[test]
fn a_minimal_blueprint_is_written_in_go_field_order_with_the_container_resources() {
    let spec = json!({
        "podTemplate": {
            "metadata": { "labels": { "role": "agent" } },
            "spec": { "containers": [ {
                "env": [ { "value": "1", "name": "BASE" } ],
                "image": "busybox",
                "name": "main",
            } ] },
        },
    });
    let blueprint = marshal(SANDBOX_BLUEPRINT, &spec);
    assert_eq!(
        blueprint,
        r#"{"podTemplate":{"spec":{"containers":[{"name":"main","image":"busybox","env":[{"name":"BASE","value":"1"}],"resources":{}}]},"metadata":{"labels":{"role":"agent"}}}}"#
    );
    assert_eq!(name_hash(&blueprint), "aa03a9d3");
    let pod_template = marshal(POD_TEMPLATE, &spec["podTemplate"]);
    assert_eq!(
        pod_template,
        r#"{"spec":{"containers":[{"name":"main","image":"busybox","env":[{"name":"BASE","value":"1"}],"resources":{}}]},"metadata":{"labels":{"role":"agent"}}}"#
    );
    assert_eq!(name_hash(&pod_template), "0ecad490");
}

#[test]
fn zero_values_unknown_fields_and_html_characters_are_written_as_go_writes_them() {
    let spec = json!({
        "unknown": 1,
        "service": false,
        "volumeClaimTemplates": [ {
            "spec": {
                "resources": { "requests": { "storage": "1Gi" } },
                "accessModes": ["ReadWriteOnce"],
            },
            "metadata": { "name": "data" },
        } ],
        "podTemplate": {
            "spec": {
                "hostNetwork": false,
                "restartPolicy": "Never",
                "containers": [ {
                    "image": "busybox",
                    "name": "main",
                    "command": ["sh", "-c", "echo a<b && true"],
                    "ports": [ { "containerPort": 8888 } ],
                    "tty": false,
                } ],
                "automountServiceAccountToken": false,
                "nodeSelector": {},
            },
            "metadata": { "annotations": { "z": "1", "a": "2" } },
        },
    });
    let blueprint = marshal(SANDBOX_BLUEPRINT, &spec);
    assert_eq!(
        blueprint,
        concat!(
            r#"{"podTemplate":{"spec":{"containers":[{"name":"main","image":"busybox","#,
            r#""command":["sh","-c","echo a\u003cb \u0026\u0026 true"],"#,
            r#""ports":[{"containerPort":8888}],"resources":{}}],"restartPolicy":"Never","#,
            r#""automountServiceAccountToken":false},"metadata":{"annotations":{"a":"2","z":"1"}}},"#,
            r#""volumeClaimTemplates":[{"metadata":{"name":"data"},"#,
            r#""spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}],"#,
            r#""service":false}"#,
        )
    );
    assert_eq!(name_hash(&blueprint), "c1864bcb");
}

#[test]
fn absent_fields_that_are_not_omitempty_are_written_as_go_zero_values() {
    // No containers: `containers` is a nil slice (`null`), `metadata` an empty struct.
    assert_eq!(
        marshal(POD_TEMPLATE, &json!({})),
        r#"{"spec":{"containers":null},"metadata":{}}"#
    );
}

#[test]
fn every_struct_the_roots_reach_is_in_the_table() {
    fn reach(ty: &Ty, seen: &mut Vec<&'static str>) {
        match ty {
            Ty::Ptr(t) | Ty::Slice(t) | Ty::Map(t) => reach(t, seen),
            Ty::Struct(name) if !seen.contains(name) => {
                seen.push(name);
                let fields = structs().get(name);
                assert!(fields.is_some(), "{name} is not in go_types.txt");
                for f in fields.into_iter().flatten() {
                    reach(&f.ty, seen);
                }
            }
            _ => {}
        }
    }
    let mut seen = Vec::new();
    reach(&Ty::Struct(SANDBOX_BLUEPRINT), &mut seen);
    assert!(seen.contains(&"core.Container"));
    assert_eq!(seen.len(), structs().len());
}

#[test]
fn a_whole_number_written_with_a_fraction_is_written_as_go_writes_it() {
    // The API server decodes a custom resource's `8888.0` as a float64, accepts it for an
    // integer field, and stores `8888`; the controller reads that into an int32.
    let spec = json!({
        "podTemplate": { "spec": { "containers": [ {
            "name": "main", "image": "busybox", "ports": [ { "containerPort": 8888.0 } ],
        } ] } },
    });
    let blueprint = marshal(SANDBOX_BLUEPRINT, &spec);
    assert!(
        blueprint.contains(r#""ports":[{"containerPort":8888}]"#),
        "{blueprint}"
    );
}
