//! Entry points for the fuzz targets of `fakekube/runtime/fuzz/` (cargo-fuzz), compiled only
//! with the `fuzzing` feature (never a default) and in this crate's tests, which replay the
//! committed corpus through the same functions. The shell run with the programs of an image is
//! fuzzed by `fakekube-programs`, which has them. Each takes arbitrary bytes and must return
//! without panicking whatever they are.
//!
//! Not an API: the functions and their input layouts may change with the fuzz targets.

use std::path::Path;

use crate::shell::parser;

/// A fuzz target: its name and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// The fuzz targets, by name: what `fakekube/runtime/fuzz/fuzz_targets/<name>.rs` calls and
/// what the corpus directories `fakekube/runtime/fuzz/{seeds,regressions}/<name>/` are named
/// for.
pub const TARGETS: &[Target] = &[("shell_parse", shell_parse)];

/// A script parsed whole and as the incremental parser of an interactive shell reads it: each
/// complete command line taken off the front until the input is used up, needs more or fails;
/// a command line must take at least a byte (a streaming shell would loop forever otherwise).
pub fn shell_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = parser::parse(&text);
    let mut rest: &str = &text;
    while !rest.is_empty()
        && let Ok(parser::Next::Complete(_, used)) = parser::parse_next(rest, true)
    {
        assert!(
            used > 0 && used <= rest.len(),
            "a command line took {used} bytes"
        );
        let Some(next) = rest.get(used..) else {
            panic!("a command line ended inside a character at {used}");
        };
        rest = next;
    }
}

/// Every file under `<fuzz_dir>/seeds/<target>/` and `<fuzz_dir>/regressions/<target>/`,
/// sorted by path.
fn corpus(fuzz_dir: &Path, target: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["seeds", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz_dir.join(dir).join(target)) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_file() {
                let bytes = std::fs::read(&path).expect("a corpus file reads");
                out.push((path.display().to_string(), bytes));
            }
        }
    }
    out.sort();
    out
}

/// What a crate's tests check of its fuzz targets (`fuzz_dir` is its `fuzz/`): each has a
/// cargo-fuzz binary in `fuzz_targets/` and committed seeds, and survives every seed and
/// regression. Panics, as a failing test does, naming the target and the input.
pub fn check_targets(fuzz_dir: &Path, targets: &[Target]) {
    for (name, run) in targets {
        assert!(
            fuzz_dir
                .join("fuzz_targets")
                .join(format!("{name}.rs"))
                .is_file(),
            "fuzz/fuzz_targets/{name}.rs is missing"
        );
        let files = corpus(fuzz_dir, name);
        assert!(!files.is_empty(), "fuzz/seeds/{name}/ holds no input");
        for (path, bytes) in files {
            let outcome = std::panic::catch_unwind(|| run(&bytes));
            assert!(outcome.is_ok(), "{name} panicked on {path}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fuzz_target_has_a_binary_and_survives_its_committed_seeds_and_regressions() {
        check_targets(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"), TARGETS);
    }
}
