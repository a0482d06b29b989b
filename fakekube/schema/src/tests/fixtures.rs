//! The agent-sandbox CRDs of `fixtures/crds/`, read from their YAML for the tests (the API
//! server embeds the same files at build time).

use serde_json::Value;
use std::path::Path;
use std::sync::OnceLock;

/// One CRD file.
#[derive(Debug)]
pub(crate) struct Fixture {
    /// Its file name in `fixtures/crds/`.
    pub(crate) file: String,
    /// The CRD object.
    pub(crate) crd: Value,
}

/// The agent-sandbox CRDs, in file-name order.
pub(crate) fn agent_sandbox() -> &'static [Fixture] {
    static READ: OnceLock<Vec<Fixture>> = OnceLock::new();
    READ.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/crds");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        files
            .iter()
            .map(|path| {
                let text = std::fs::read_to_string(path)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
                Fixture {
                    file: path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    crd: serde_saphyr::from_str(&text)
                        .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display())),
                }
            })
            .collect()
    })
}
