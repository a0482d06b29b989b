//! `--chaos` through a kubeconfig: the `conformance` binary as its own process against a
//! fakekube that injects faults the runner neither controls nor sees; the run counts its calls,
//! explains each failure by its code, reconciles, and exits 0 only when nothing is left.

mod support;

use std::path::Path;

use fakekube::{Chaos, ChaosRates, FakeKube};

/// One direct pool in `sandboxes`, as the fixtures' direct pool without the volume (so fewer
/// trials and objects).
const POOLS: &str = "pools:
  - name: direct
    adapter: agent-sandbox
    trust: private
    config:
      namespace: sandboxes
      image: debian:bookworm-slim
      features: exec,files,ttl
";

/// Writes `text` to `name` in `dir` and returns its path.
fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the file is written");
    path
}

#[test]
fn chaos_through_a_kubeconfig_explains_every_failure_by_its_code_and_leaves_nothing() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kube = rt.block_on(async {
        FakeKube::builder()
            .namespace("sandboxes")
            .start()
            .await
            .expect("fakekube starts")
    });
    let kubeconfig = write(dir.path(), "kubeconfig", &kube.kubeconfig());
    let pools = write(dir.path(), "pools.yaml", POOLS);
    // Faults that fail a call at once (no Retry-After to wait out), often enough that some
    // trials fail with them.
    let rates = ChaosRates::uniform(0.0)
        .with("internal", 0.08)
        .and_then(|r| r.with("reset", 0.08))
        .expect("fault kinds");
    kube.faults().chaos(Some(Chaos { seed: 11, rates }));
    let output = support::run(&[
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--pools",
        pools.to_str().unwrap(),
        "--fast",
        "--chaos",
        "core::",
    ]);
    let injected: u64 = kube.faults().chaos_injected().values().sum();
    kube.faults().chaos(None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let context = format!("{stdout}\n{stderr}");
    assert_eq!(output.status.code(), Some(0), "{context}");
    assert!(injected > 0, "no fault was injected: {context}");
    assert!(
        stdout.contains("chaos: the cluster injects faults this run neither controls nor sees"),
        "{context}"
    );
    let trials = stdout
        .lines()
        .find(|l| l.starts_with("chaos: trials: "))
        .unwrap_or_else(|| panic!("no verdicts line: {context}"));
    assert!(trials.ends_with(", 0 unexplained"), "{trials}");
    let passed: usize = trials
        .trim_start_matches("chaos: trials: ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed > 0, "no trial ran: {context}");
    assert!(stdout.contains("chaos: the reconcile deleted"), "{context}");
    assert!(
        stdout.contains("leak check: the pools left nothing behind"),
        "{context}"
    );
    rt.block_on(kube.shutdown());
}
