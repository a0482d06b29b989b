//! The generator of the compiled-in schemas: each CRD of `fixtures/crds/` (the upstream
//! agent-sandbox CRDs, byte for byte) becomes `fakekube/schemas/<plural>.json`, its `v1beta1`
//! `openAPIV3Schema` without `description`s.
//!
//! It runs as a test, which fails when a compiled-in schema is not what its CRD gives; with
//! `FAKEKUBE_REGENERATE_SCHEMAS=1` it rewrites the files instead:
//!
//! ```text
//! FAKEKUBE_REGENERATE_SCHEMAS=1 cargo test -p fakekube --lib schema::generate
//! ```

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::COMPILED_IN;

/// The CRD version whose schema fakekube serves.
const SERVED_VERSION: &str = "v1beta1";

/// The environment variable that makes the test rewrite `fakekube/schemas/`.
const REGENERATE_ENV: &str = "FAKEKUBE_REGENERATE_SCHEMAS";

/// Why a CRD could not be turned into a schema.
#[derive(Debug, thiserror::Error)]
pub(super) enum CrdError {
    /// The CRD text is not YAML.
    #[error("CRD is not valid YAML")]
    ParseYaml(#[source] serde_saphyr::Error),
    /// The CRD has no `spec.names.plural`.
    #[error("CRD has no spec.names.plural")]
    MissingPlural,
    /// The CRD does not carry the wanted version with an `openAPIV3Schema`.
    #[error("CRD has no version {0:?} with schema.openAPIV3Schema")]
    MissingVersion(&'static str),
}

/// The directory of the project's CRDs, `fixtures/crds/` at the workspace root.
pub(super) fn crd_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/crds")
}

/// Every `*.yaml` of [`crd_dir`] as (file name, text), sorted by name. Panics when the
/// directory cannot be read or holds no CRD: the tests that need the CRDs fail, never skip.
pub(super) fn fixture_crds() -> Vec<(String, String)> {
    let dir = crd_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "reading the CRDs in {}: {e} (the project carries them in fixtures/crds/)",
            dir.display()
        )
    });
    let mut crds: Vec<(String, String)> = entries
        .map(|entry| {
            entry
                .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
                .path()
        })
        .filter(|path| path.extension().is_some_and(|x| x == "yaml"))
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, text)
        })
        .collect();
    crds.sort();
    assert!(!crds.is_empty(), "no *.yaml CRD in {}", dir.display());
    crds
}

/// Reads one CRD YAML and returns its plural and the `v1beta1` `openAPIV3Schema` without
/// `description`s, as the compact-but-diffable JSON kept in `fakekube/schemas/<plural>.json`.
fn crd_to_schema_json(crd_yaml: &str) -> Result<(String, String), CrdError> {
    let crd: Value = serde_saphyr::from_str(crd_yaml).map_err(CrdError::ParseYaml)?;
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .ok_or(CrdError::MissingPlural)?
        .to_string();
    let mut schema = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(SERVED_VERSION))
        })
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
        .filter(|s| s.is_object())
        .cloned()
        .ok_or(CrdError::MissingVersion(SERVED_VERSION))?;
    strip_descriptions(&mut schema);
    Ok((plural, to_diffable_json(&schema)))
}

/// Removes every `description` keyword from a schema and its subschemas. A property that is
/// *named* `description` is kept: only schema objects are visited, never `properties` maps
/// themselves, `default`s, `enum`s or `x-kubernetes-validations`.
fn strip_descriptions(v: &mut Value) {
    let Value::Object(map) = v else { return };
    if map.get("description").is_some_and(Value::is_string) {
        map.remove("description");
    }
    for (k, sub) in map.iter_mut() {
        match k.as_str() {
            "properties" | "patternProperties" | "definitions" | "dependencies" => {
                if let Value::Object(named) = sub {
                    named.values_mut().for_each(strip_descriptions);
                }
            }
            "items" | "anyOf" | "allOf" | "oneOf" => match sub {
                Value::Array(list) => list.iter_mut().for_each(strip_descriptions),
                other => strip_descriptions(other),
            },
            "additionalProperties" | "additionalItems" | "not" => strip_descriptions(sub),
            _ => {}
        }
    }
}

/// Width under which a JSON value is written on one line.
const LINE_WIDTH: usize = 100;

/// JSON with every value that fits in [`LINE_WIDTH`] on one line and larger ones split one
/// member per line, so diffs of regenerated schemas stay readable.
fn to_diffable_json(v: &Value) -> String {
    let mut out = String::new();
    write_diffable(v, 0, 0, &mut out);
    out.push('\n');
    out
}

/// Appends `v` at `indent`, `prefix` being the width of the `"key": ` before it.
fn write_diffable(v: &Value, indent: usize, prefix: usize, out: &mut String) {
    let compact = v.to_string();
    let fits = indent + prefix + compact.len() <= LINE_WIDTH;
    let pad = " ".repeat(indent + 2);
    match v {
        Value::Object(map) if !fits && !map.is_empty() => {
            out.push_str("{\n");
            for (i, (k, x)) in map.iter().enumerate() {
                let key = Value::String(k.clone()).to_string();
                out.push_str(&pad);
                out.push_str(&key);
                out.push_str(": ");
                write_diffable(x, indent + 2, key.len() + 2, out);
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push('}');
        }
        Value::Array(list) if !fits && !list.is_empty() => {
            out.push_str("[\n");
            for (i, x) in list.iter().enumerate() {
                out.push_str(&pad);
                write_diffable(x, indent + 2, 0, out);
                out.push_str(if i + 1 < list.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
        _ => out.push_str(&compact),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compiled_in_schemas_match_the_fixture_crds() {
        let regenerate = std::env::var_os(REGENERATE_ENV).is_some();
        let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
        let mut seen = Vec::new();
        let mut stale = Vec::new();
        for (file, yaml) in fixture_crds() {
            let (plural, json) =
                crd_to_schema_json(&yaml).unwrap_or_else(|e| panic!("fixtures/crds/{file}: {e}"));
            if regenerate {
                let out = out_dir.join(format!("{plural}.json"));
                std::fs::write(&out, &json)
                    .unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
            } else if COMPILED_IN
                .iter()
                .find(|(p, _)| *p == plural)
                .map(|(_, j)| *j)
                != Some(json.as_str())
            {
                stale.push(format!("schemas/{plural}.json (from fixtures/crds/{file})"));
            }
            seen.push(plural);
        }
        assert!(
            stale.is_empty(),
            "stale compiled-in schemas: {}; run {REGENERATE_ENV}=1 cargo test -p fakekube --lib \
             schema::generate",
            stale.join(", ")
        );
        seen.sort();
        let mut compiled: Vec<&str> = COMPILED_IN.iter().map(|(p, _)| *p).collect();
        compiled.sort_unstable();
        assert_eq!(
            seen, compiled,
            "one CRD in fixtures/crds/ per compiled-in schema"
        );
    }

    #[test]
    fn a_crd_without_the_served_version_is_refused() {
        let crd = "spec:\n  names:\n    plural: things\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema: {type: object}\n";
        assert!(matches!(
            crd_to_schema_json(crd),
            Err(CrdError::MissingVersion(SERVED_VERSION))
        ));
    }

    #[test]
    fn strip_descriptions_keeps_a_property_named_description() {
        let mut s = json!({
            "description": "the object",
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "a field named description"},
                "list": {"type": "array", "items": {"description": "item", "type": "string"}},
                "either": {"anyOf": [{"description": "x", "type": "integer"}]},
                "map": {"type": "object", "additionalProperties": {"description": "v", "type": "string"}}
            },
            "default": {"description": "kept: data, not a schema"}
        });
        strip_descriptions(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "list": {"type": "array", "items": {"type": "string"}},
                    "either": {"anyOf": [{"type": "integer"}]},
                    "map": {"type": "object", "additionalProperties": {"type": "string"}}
                },
                "default": {"description": "kept: data, not a schema"}
            })
        );
    }

    #[test]
    fn diffable_json_splits_only_what_does_not_fit_on_a_line() {
        let v = json!({"short": {"type": "string"}, "long": {"enum": ["a".repeat(60), "b".repeat(60)]}});
        let text = to_diffable_json(&v);
        assert!(text.contains("\"short\": {\"type\":\"string\"}"), "{text}");
        assert!(text.contains("\"enum\": [\n"), "{text}");
        let back: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, v);
    }
}
