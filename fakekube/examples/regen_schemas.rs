//! Regenerates `fakekube/schemas/<plural>.json` from the agent-sandbox CRD YAML files.
//!
//! ```text
//! cargo run -p fakekube --example regen_schemas -- <crd dir> <out dir>
//! ```
//!
//! Every `*.yaml` in `<crd dir>` is read; its `v1beta1` `openAPIV3Schema`, without
//! `description`s, is written to `<out dir>/<plural>.json`. The conversion lives in fakekube's
//! `schema` module, whose tests check the committed files against the same conversion.

use std::path::PathBuf;
use std::process::ExitCode;

#[allow(dead_code)] // only the generator half of the module is used here
#[path = "../src/schema.rs"]
mod schema;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [crd_dir, out_dir] = args.as_slice() else {
        eprintln!("usage: regen_schemas <crd dir> <out dir>");
        return ExitCode::from(2);
    };
    match run(PathBuf::from(crd_dir), PathBuf::from(out_dir)) {
        Ok(0) => {
            eprintln!("no *.yaml files in {crd_dir}");
            ExitCode::FAILURE
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("regen_schemas: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Converts every CRD in `crd_dir`, returning how many files were written.
fn run(crd_dir: PathBuf, out_dir: PathBuf) -> Result<usize, String> {
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&crd_dir)
        .map_err(|e| format!("reading {}: {e}", crd_dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    inputs.sort();
    for input in &inputs {
        let yaml = std::fs::read_to_string(input)
            .map_err(|e| format!("reading {}: {e}", input.display()))?;
        let (plural, json) = schema::crd_to_schema_json(&yaml)
            .map_err(|e| format!("converting {}: {e}", input.display()))?;
        let out = out_dir.join(format!("{plural}.json"));
        std::fs::write(&out, json).map_err(|e| format!("writing {}: {e}", out.display()))?;
        println!("{} -> {}", input.display(), out.display());
    }
    Ok(inputs.len())
}
