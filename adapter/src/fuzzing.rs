//! Entry points for the fuzz targets of `adapter/fuzz/` (cargo-fuzz), compiled only with the
//! `fuzzing` feature (never a default) and in this crate's tests, which replay the committed
//! corpus through the same functions. Each takes arbitrary bytes, drives one decoder of what
//! the cluster or the user hands the adapter, and must return without panicking whatever the
//! bytes are.
//!
//! Not an API: the functions and their input layouts may change with the fuzz targets.

use crate::client::status_error;
use crate::config::PoolConfig;
use crate::exec::{self, Frame};
use crate::kubeconfig::Kubeconfig;
use crate::manifest::{self, ClaimView, PodView, SandboxView};
use http::{HeaderMap, HeaderValue, StatusCode, header};

/// A fuzz target: its name and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// The fuzz targets, by name: what `adapter/fuzz/fuzz_targets/<name>.rs` calls and what the
/// corpus directories `adapter/fuzz/{seeds,regressions}/<name>/` are named for.
pub const TARGETS: &[Target] = &[
    ("exec_messages", exec_messages),
    ("status", status),
    ("objects", objects),
    ("kubeconfig", kubeconfig),
    ("pool_config", pool_config),
];

/// One message of an exec WebSocket as the server sends it: its channel decoded, a status on
/// the error channel parsed, a failure's message read for an exit code.
pub fn exec_messages(data: &[u8]) {
    if let Frame::Data {
        channel: 3,
        payload,
    } = exec::decode(data)
        && let Ok(exec::ExitStatus::Failure(message)) = exec::parse_status(payload)
    {
        let _ = exec::exit_from_failure(&message);
    }
    let _ = exec::exit_from_failure(&String::from_utf8_lossy(data));
}

/// An error answer: the status code from the first two bytes, `Retry-After` from the third,
/// the rest as the body the client maps to an error.
pub fn status(data: &[u8]) {
    let (head, body) = data.split_at(data.len().min(3));
    let code = match head {
        [a, b, ..] => 400 + (u16::from_be_bytes([*a, *b]) % 200),
        _ => 500,
    };
    let Ok(status) = StatusCode::from_u16(code) else {
        return;
    };
    let mut headers = HeaderMap::new();
    if let Some(retry) = head.get(2) {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(u16::from(*retry)));
    }
    let error = status_error(status, &headers, body);
    let _ = error.to_string();
    let _ = error.code();
}

/// A JSON object read back as a Sandbox, a claim and a pod, and the contract state made of
/// them.
pub fn objects(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let sandbox: SandboxView = serde_json::from_value(value.clone()).unwrap_or_default();
    let claim: ClaimView = serde_json::from_value(value.clone()).unwrap_or_default();
    let pod: PodView = serde_json::from_value(value).unwrap_or_default();
    let _ = manifest::sandbox_state(&sandbox, Some(&pod));
    let _ = manifest::sandbox_state(&sandbox, None);
    let _ = manifest::claim_readiness(&claim);
    let _ = manifest::pod_problem(&pod);
}

/// Kubeconfig text, read for its current context and for a context named `fuzz`.
pub fn kubeconfig(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = Kubeconfig::parse(&text, "fuzz", None, None);
    let _ = Kubeconfig::parse(&text, "fuzz", None, Some("fuzz"));
}

/// A pool config as YAML and as JSON, validated when it parses.
pub fn pool_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(config) = PoolConfig::from_yaml(&text) {
        let _ = config.validate();
    }
    if let Ok(config) = PoolConfig::from_json(&text) {
        let _ = config.validate();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every file under `fuzz/seeds/<target>/` and `fuzz/regressions/<target>/`.
    fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut out = Vec::new();
        for dir in ["seeds", "regressions"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
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

    #[test]
    fn every_fuzz_target_survives_its_committed_seeds_and_regressions() {
        for (name, run) in TARGETS {
            let files = corpus(name);
            assert!(!files.is_empty(), "fuzz/seeds/{name}/ holds no input");
            for (path, bytes) in files {
                let outcome = std::panic::catch_unwind(|| run(&bytes));
                assert!(outcome.is_ok(), "{name} panicked on {path}");
            }
        }
    }

    #[test]
    fn every_fuzz_target_has_a_cargo_fuzz_binary() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
        for (name, _) in TARGETS {
            assert!(
                dir.join(format!("{name}.rs")).is_file(),
                "fuzz/fuzz_targets/{name}.rs is missing"
            );
        }
    }
}
