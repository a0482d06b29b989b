//! The agent-sandbox CRDs of `fixtures/crds/` (the upstream v1beta1 release, byte for byte),
//! embedded at build time (the build script turns them into JSON) and parsed once per
//! process. fakekube installs them at start through the same path as any CRD a client
//! creates; upgrading agent-sandbox is replacing those files.

use serde_json::Value;
use std::sync::OnceLock;

/// The CRDs as the build script wrote them: `[{ "file": ..., "crd": ... }]`.
const EMBEDDED: &str = include_str!(concat!(env!("OUT_DIR"), "/agent-sandbox-crds.json"));

/// One embedded CRD.
#[derive(Debug)]
pub struct Fixture {
    /// Its file name in `fixtures/crds/`.
    pub file: String,
    /// The CRD object.
    pub crd: Value,
}

/// The agent-sandbox CRDs, in file-name order.
pub fn agent_sandbox() -> &'static [Fixture] {
    static PARSED: OnceLock<Vec<Fixture>> = OnceLock::new();
    PARSED.get_or_init(|| match serde_json::from_str::<Vec<Value>>(EMBEDDED) {
        Ok(docs) => docs
            .into_iter()
            .map(|mut d| Fixture {
                file: d
                    .get("file")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                crd: d.get_mut("crd").map(Value::take).unwrap_or_default(),
            })
            .collect(),
        Err(e) => {
            tracing::error!(error = %e, "the embedded agent-sandbox CRDs do not parse");
            Vec::new()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_agent_sandbox_crds_are_embedded() {
        let names: Vec<&str> = agent_sandbox()
            .iter()
            .filter_map(|f| f.crd.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        assert_eq!(
            names,
            [
                "sandboxes.agents.x-k8s.io",
                "sandboxclaims.extensions.agents.x-k8s.io",
                "sandboxtemplates.extensions.agents.x-k8s.io",
                "sandboxwarmpools.extensions.agents.x-k8s.io",
            ]
        );
    }
}
