//! agent-sandbox's Python SDK (`k8s-agent-sandbox`, pinned in `ci/python-venv.sh`) against
//! the `fakekube` binary, as its users run it: the router Deployment and Service applied with
//! kubectl and served by the `sandbox-router` image's program, sandboxes of the
//! `python-runtime-sandbox` image from a warm pool of two and from an empty pool (the direct,
//! cold-start path), reached in tunnel mode (the SDK's own `kubectl port-forward
//! svc/sandbox-router-svc`) and in router mode (a direct URL to the router). Gateway mode needs
//! a Gateway API implementation, which fakekube does not have.
//!
//! `tests/python/agent_sandbox_sdk.py` does the client side and prints JSON; this test checks
//! what each of the four runs saw: `run` with its output and exit code, a command that cannot
//! start, a file written, read back, listed and found, and the claim deleted.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod support;

use support::process::Process as Server;

/// The Python of `target/py-venv-sdk`, or a failure telling how to make it.
fn python() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."));
    let bin = workspace
        .join("target")
        .join("py-venv-sdk")
        .join("bin")
        .join("python");
    assert!(
        bin.exists(),
        "{} is missing: run ci/python-venv.sh (ci/test.sh does) to create the SDK's venv",
        bin.display()
    );
    bin
}

#[test]
fn the_agent_sandbox_sdk_runs_commands_and_moves_files_in_tunnel_and_router_modes_from_both_pools()
{
    let python = python();
    let server = Server::start(&[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("python")
        .join("agent_sandbox_sdk.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(&server.kubeconfig)
        .arg("sdk-e2e")
        .env("KUBECONFIG", &server.kubeconfig)
        .stdin(Stdio::null())
        .output()
        .expect("python starts");
    assert!(
        out.status.success(),
        "the SDK script failed: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the script printed no JSON ({e}): {stdout}"));
    for (mode, pool) in [
        ("tunnel", "cold"),
        ("tunnel", "warm"),
        ("router", "cold"),
        ("router", "warm"),
    ] {
        let r = &results[format!("{mode}-{pool}")];
        let content = format!("{mode} {pool}\n");
        assert_eq!(r["hello"], json!(["Hello from SDK\n", "", 0]), "{r:#}");
        assert_eq!(r["failing"], json!(["", "oops\n", 3]), "{r:#}");
        assert_eq!(
            r["missing"],
            json!([
                "",
                "Failed to execute command: [Errno 2] No such file or directory: 'no-such-program'",
                1
            ]),
            "{r:#}"
        );
        assert_eq!(r["read"], content, "{r:#}");
        assert_eq!(r["cat"], content, "{r:#}");
        assert_eq!(
            r["list"],
            json!([["test.txt", content.len(), "file"]]),
            "{r:#}"
        );
        assert_eq!(r["exists"], json!([true, false]), "{r:#}");
        assert_eq!(r["deleted"], true, "{r:#}");
    }
}
