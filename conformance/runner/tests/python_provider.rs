//! The Python example provider (`conformance/examples/python-provider/`) passes the suite for
//! what it declares through the runner, started with `--provider-cmd` (stdio) and reached with
//! `--provider-url` (WebSocket); `--markdown` writes its capability table.

mod support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The example's entry point.
fn provider_py() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/python-provider/provider.py")
        .canonicalize()
        .expect("the Python example exists")
}

/// Asserts that a run passed with no failure and a clean leak check.
fn assert_passed(output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    assert!(
        stdout.contains("leak check: the provider lists no sandbox"),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "provider python-example (protocol version 1) declares exec,exec.stream,files,stdin,ttl"
        ),
        "{stderr}"
    );
}

#[test]
fn python_example_passes_through_provider_cmd_and_writes_its_table() {
    let root = tempfile::tempdir().unwrap();
    let markdown = root.path().join("capabilities.md");
    let sandboxes = root.path().join("sandboxes");
    let command = format!(
        "python3 '{}' --root '{}'",
        provider_py().display(),
        sandboxes.display()
    );
    let output = support::run(&[
        "--provider-cmd",
        &command,
        "--markdown",
        markdown.to_str().unwrap(),
    ]);
    assert_passed(&output);
    let table = std::fs::read_to_string(&markdown).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "| Capability | python-example |", "{table}");
    let row = |name: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .map(|l| (*l).to_owned())
            .unwrap_or_default()
    };
    assert!(row("exec").starts_with("| exec | yes: "), "{table}");
    assert!(row("stdin").contains("passed"), "{table}");
    assert!(
        row("fork").starts_with("| fork | no: coherence 1/1 passed"),
        "{table}"
    );
    assert!(!row("exec").contains("FAILED"), "{table}");
    assert_eq!(
        std::fs::read_dir(&sandboxes).unwrap().count(),
        0,
        "sandboxes left"
    );
}

#[test]
fn python_example_passes_through_provider_url() {
    let root = tempfile::tempdir().unwrap();
    let mut provider = Command::new("python3")
        .arg(provider_py())
        .args(["--listen", "127.0.0.1:0", "--root"])
        .arg(root.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(provider.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let output = support::run(&["--provider-url", url.trim()]);
    provider.kill().unwrap();
    provider.wait().unwrap();
    assert_passed(&output);
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "sandboxes left"
    );
}

#[test]
fn a_provider_command_that_does_not_start_is_exit_2() {
    let output = support::run(&["--provider-cmd", "/nonexistent/provider --stdio"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "starting the provider: starting the provider command `/nonexistent/provider`"
        ),
        "{stderr}"
    );
}
