//! The `fakekube` binary: its first line, the kubeconfig it writes, `--help`, and a clean exit
//! on SIGTERM and SIGINT.

mod support;

use std::process::Command;

use support::process::{self, signal};

/// Starts the binary with a kubeconfig written in `dir` and `extra` arguments.
fn spawn(dir: &std::path::Path, extra: &[&str]) -> (std::process::Child, String) {
    let kubeconfig = dir.join("kubeconfig");
    let mut args = vec!["--kubeconfig", kubeconfig.to_str().expect("a UTF-8 path")];
    args.extend_from_slice(extra);
    process::spawn(&args)
}

#[test]
fn fakekube_prints_its_url_first_writes_a_kubeconfig_and_exits_zero_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, first) = spawn(
        dir.path(),
        &[
            "--token",
            "binary-test-admin-token",
            "--namespace",
            "sandboxes",
        ],
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
    assert!(kc.contains("token: binary-test-admin-token"));
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
        "--chaos-seed",
        "--chaos-rate",
        "--chaos-user",
        "--chaos-faults",
        "--chaos-paused",
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

#[test]
fn a_role_token_gets_exactly_the_roles_rules_and_missing_images_are_marked() {
    let kubectl = std::path::Path::new("/usr/lib/google-cloud-sdk/bin/kubectl.1.33");
    if !kubectl.exists() {
        println!("skipping: {} not installed", kubectl.display());
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let role = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/rbac/differently-sandboxes-role.yaml"
    );
    let role_kc = dir.path().join("role.kubeconfig");
    let (mut child, _) = spawn(
        dir.path(),
        &[
            "--role-token",
            &format!("role-secret={role}"),
            "--role-kubeconfig",
            role_kc.to_str().expect("utf-8 path"),
            "--missing-image",
            "registry.invalid/nope:0",
        ],
    );
    let can_i = |args: &[&str]| {
        let out = Command::new(kubectl)
            .arg("--kubeconfig")
            .arg(&role_kc)
            .args(["auth", "can-i"])
            .args(args)
            .env("HOME", dir.path())
            .output()
            .expect("kubectl runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(
        can_i(&["create", "sandboxes.agents.x-k8s.io", "-n", "sandboxes"]),
        "yes"
    );
    assert_eq!(
        can_i(&["create", "pods", "--subresource=exec", "-n", "sandboxes"]),
        "yes"
    );
    assert_eq!(can_i(&["list", "services", "-n", "sandboxes"]), "no");
    assert_eq!(
        can_i(&["create", "sandboxes.agents.x-k8s.io", "-n", "default"]),
        "no"
    );
    let role_text = std::fs::read_to_string(&role_kc).expect("role kubeconfig written");
    assert!(role_text.contains("token: role-secret"));
    signal(&child, "TERM");
    assert_eq!(child.wait().expect("exits").code(), Some(0));
}
