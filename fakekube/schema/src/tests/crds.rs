//! Every `pattern` and `x-kubernetes-validations` rule of the CRDs in `fixtures/crds/` (every
//! version) is enforced: it compiles, the validator refuses a value that breaks it at the node
//! that carries it, and accepts one that keeps it. A pattern or rule this test has no example
//! for fails it, so that a new upstream CRD brings its examples along.

use serde_json::{Value, json};

use super::fixtures;
use super::{
    CONDITION_REASON_PATTERN, CONDITION_TYPE_PATTERN, QUANTITY_PATTERN, VCT_IMMUTABLE_RULE,
};
use crate::node::{self, items, str_of};
use crate::validate::validate_node;
use crate::{cel, pattern, rules};

/// What a CRD asks of the value at one node of its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Constraint {
    /// A `pattern`.
    Pattern(String),
    /// The `rule` of an `x-kubernetes-validations` entry.
    Rule(String),
}

/// One constraint found in a CRD, with where it is and the node that carries it.
struct Found {
    /// The CRD's file name in `fixtures/crds/`.
    crd: String,
    /// The version whose schema carries it.
    version: String,
    /// The JSON path of the node in objects of the kind (`.spec.containers[*].name`; `.*` for
    /// the values of a map).
    path: String,
    /// The constraint.
    constraint: Constraint,
    /// The schema node.
    node: Value,
}

/// A text that `pattern` accepts and one it refuses.
fn pattern_examples(pattern: &str) -> Option<(&'static str, &'static str)> {
    match pattern {
        QUANTITY_PATTERN => Some(("500m", "5 cores")),
        CONDITION_REASON_PATTERN => Some(("PodReady", "pod ready")),
        CONDITION_TYPE_PATTERN => Some(("example.com/Ready", "Example.com/Ready")),
        _ => None,
    }
}

/// An update (`oldSelf`, `self`) of the value at the rule's node that keeps the rule, and
/// one that breaks it.
fn rule_examples(rule: &str) -> Option<((Value, Value), (Value, Value))> {
    let vct = json!({"volumeClaimTemplates": [{"metadata": {"name": "data"}}]});
    match rule {
        VCT_IMMUTABLE_RULE => Some(((vct.clone(), vct.clone()), (json!({}), vct))),
        _ => None,
    }
}

/// Collects the constraints of `node` and the nodes below it.
fn collect(node: &Value, path: &str, out: &mut Vec<(String, Constraint, Value)>) {
    if let Some(pattern) = str_of(node, "pattern") {
        out.push((
            path.into(),
            Constraint::Pattern(pattern.into()),
            node.clone(),
        ));
    }
    for rule in node
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = str_of(rule, "rule").unwrap_or_default();
        out.push((path.into(), Constraint::Rule(text.into()), node.clone()));
    }
    for (name, sub) in node
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        collect(sub, &format!("{path}.{name}"), out);
    }
    if let Some(sub) = node.get("additionalProperties").filter(|a| a.is_object()) {
        collect(sub, &format!("{path}.*"), out);
    }
    if let Some(sub) = items(node) {
        collect(sub, &format!("{path}[*]"), out);
    }
    for key in ["anyOf", "allOf", "oneOf"] {
        for branch in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect(branch, path, out);
        }
    }
    if let Some(sub) = node.get("not") {
        collect(sub, path, out);
    }
}

/// Every constraint in every version's schema of `crds` (file name, CRD).
fn constraints(crds: &[(String, Value)]) -> Vec<Found> {
    let mut found = Vec::new();
    for (crd, doc) in crds {
        for version in doc
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = str_of(version, "name").unwrap_or("?");
            let Some(schema) = version.pointer("/schema/openAPIV3Schema") else {
                continue;
            };
            let mut here = Vec::new();
            collect(schema, "", &mut here);
            found.extend(here.into_iter().map(|(path, constraint, node)| Found {
                crd: crd.clone(),
                version: name.into(),
                path: if path.is_empty() { ".".into() } else { path },
                constraint,
                node,
            }));
        }
    }
    found
}

/// Why `found` is not enforced, or `None` when it is.
fn not_enforced(found: &Found) -> Option<String> {
    match &found.constraint {
        Constraint::Pattern(p) => {
            if let Err(e) = pattern::compile(p) {
                return Some(format!("it does not compile: {e}"));
            }
            let Some((good, bad)) = pattern_examples(p) else {
                return Some("this test has no example texts for it".into());
            };
            let refuses = |text: &str| {
                let mut errs = Vec::new();
                validate_node(&json!(text), &found.node, "value", &mut errs);
                errs.iter().any(|e| e.message.contains("should match"))
            };
            match (refuses(good), refuses(bad)) {
                (false, true) => None,
                (true, _) => Some(format!("{good:?} is refused at this node")),
                (false, false) => Some(format!("{bad:?} is accepted at this node")),
            }
        }
        Constraint::Rule(rule) => {
            if let Err(e) = cel::compile(rule) {
                return Some(format!("it does not compile: {e}"));
            }
            let Some(((keep_old, keep_new), (break_old, break_new))) = rule_examples(rule) else {
                return Some("this test has no example updates for it".into());
            };
            let refuses = |old: &Value, new: &Value| {
                let mut errs = Vec::new();
                let mut ruled = std::collections::HashSet::new();
                node::collect_ruled(&found.node, &mut ruled);
                let walk = rules::Walk {
                    ruled: &ruled,
                    old_passed: false,
                };
                walk.rules_node(new, Some(old), &found.node, "value", false, &mut errs);
                !errs.is_empty()
            };
            match (
                refuses(&keep_old, &keep_new),
                refuses(&break_old, &break_new),
            ) {
                (false, true) => None,
                (true, _) => Some(format!("the update {keep_old} -> {keep_new} is refused")),
                (false, false) => {
                    Some(format!("the update {break_old} -> {break_new} is accepted"))
                }
            }
        }
    }
}

/// One line per constraint of `crds` that is not enforced, naming the CRD, the version, the
/// JSON path and the pattern or rule.
fn unenforced(crds: &[(String, Value)]) -> Vec<String> {
    constraints(crds)
        .iter()
        .filter_map(|found| {
            let why = not_enforced(found)?;
            let what = match &found.constraint {
                Constraint::Pattern(p) => format!("pattern '{p}'"),
                Constraint::Rule(r) => format!("rule '{r}'"),
            };
            Some(format!(
                "fixtures/crds/{} ({}) at {}: {what} is not enforced: {why}",
                found.crd, found.version, found.path
            ))
        })
        .collect()
}

#[test]
fn every_pattern_and_rule_of_the_fixture_crds_is_enforced() {
    let crds: Vec<(String, Value)> = fixtures::agent_sandbox()
        .iter()
        .map(|f| (f.file.clone(), f.crd.clone()))
        .collect();
    assert_eq!(crds.len(), 4, "the four agent-sandbox CRDs are embedded");
    let found = constraints(&crds);
    let rules = found
        .iter()
        .filter(|f| matches!(f.constraint, Constraint::Rule(_)))
        .count();
    assert!(
        rules > 0 && found.len() > rules,
        "the walk found {rules} rules among {} constraints: it should find patterns and rules",
        found.len()
    );
    let missing = unenforced(&crds);
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn a_pattern_or_rule_without_an_example_or_that_does_not_compile_is_named_with_its_crd_and_path() {
    let crd = r#"
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.size > 0
            properties:
              names:
                type: array
                items:
                  type: string
                  pattern: ^[a-z]+$
              size:
                type: integer
                pattern: (?=x)
"#;
    let crd: Value = serde_saphyr::from_str(crd).expect("YAML");
    let missing = unenforced(&[("things.yaml".into(), crd)]);
    assert_eq!(
        missing,
        [
            "fixtures/crds/things.yaml (v1) at .spec: rule 'self.size > 0' is not enforced: \
             this test has no example updates for it",
            "fixtures/crds/things.yaml (v1) at .spec.names[*]: pattern '^[a-z]+$' is not \
             enforced: this test has no example texts for it",
            "fixtures/crds/things.yaml (v1) at .spec.size: pattern '(?=x)' is not enforced: it \
             does not compile: error parsing regexp: look-around, including look-ahead and \
             look-behind, is not supported",
        ]
    );
}
