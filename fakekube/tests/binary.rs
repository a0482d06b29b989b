//! The `fakekube` binary: its first line, the kubeconfig it writes, `--help`, and a clean exit
//! on SIGTERM and SIGINT.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn spawn(dir: &std::path::Path, extra: &[&str]) -> (std::process::Child, String) {
    let kc = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fakekube"))
        .arg("--kubeconfig")
        .arg(&kc)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fakekube starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("first line");
    (child, first)
}

fn signal(child: &std::process::Child, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill runs");
    assert!(ok.success());
}

#[test]
fn fakekube_prints_its_url_first_writes_a_kubeconfig_and_exits_zero_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, first) = spawn(
        dir.path(),
        &["--token", "abc123", "--namespace", "sandboxes"],
    );
    let url = first
        .trim()
        .strip_prefix("fakekube listening on ")
        .expect("first line names the URL")
        .to_string();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let kc = std::fs::read_to_string(dir.path().join("kubeconfig")).expect("kubeconfig written");
    assert!(kc.contains(&format!("server: {url}")), "{kc}");
    assert!(kc.contains("certificate-authority-data: "));
    assert!(kc.contains("token: abc123"));
    assert!(kc.contains("namespace: default"));
    signal(&child, "TERM");
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn fakekube_exits_zero_on_sigint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, _) = spawn(dir.path(), &[]);
    signal(&child, "INT");
    assert_eq!(child.wait().expect("exits").code(), Some(0));
}

#[test]
fn fakekube_help_documents_every_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_fakekube"))
        .arg("--help")
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--kubeconfig",
        "--port",
        "--address",
        "--token",
        "--kubernetes-minor",
        "--namespace",
        "--compaction-window-secs",
    ] {
        assert!(text.contains(flag), "--help lacks {flag}:\n{text}");
    }
}

#[test]
fn fakekube_fails_clearly_when_its_port_is_taken() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_fakekube"))
        .args(["--port", &port])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("binding 127.0.0.1:") && err.contains("in use"),
        "{err}"
    );
}
