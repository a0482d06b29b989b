//! Where the main job aims: the embedded fakekube whatever `KUBECONFIG` says, and a cluster
//! only after a preflight that stops with one clear message per problem and exit status 2.

mod support;

use std::path::Path;
use std::process::Output;

use fakekube::{FakeKube, Rule, Token};

/// Runs the `conformance` binary with `args` and `KUBECONFIG` set to `kubeconfig` (or unset).
fn conformance(args: &[&str], kubeconfig: Option<&Path>) -> Output {
    let mut command = support::command(args);
    if let Some(path) = kubeconfig {
        command.env("KUBECONFIG", path);
    }
    command.output().expect("the conformance binary runs")
}

/// The preflight lines of a run's stderr.
fn preflight_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| l.starts_with("conformance: preflight: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn kubeconfig_in_the_environment_does_not_aim_the_main_job() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("unreachable.kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: far\n  cluster: {server: 'https://127.0.0.1:1', certificate-authority-data: UEVN}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: far\n  context: {cluster: far, user: u, namespace: sandboxes}\ncurrent-context: far\n",
    )
    .unwrap();
    let output = conformance(&["core::health_reports_healthy"], Some(&kubeconfig));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{stdout}");
    assert!(
        stderr.contains("fakekube at https://127.0.0.1:"),
        "{stderr}"
    );
    assert!(stdout.contains("2 passed, 0 failed"), "{stdout}");
}

/// A fakekube with namespace `sandboxes` and a kubeconfig for `token` written into `dir`.
fn cluster(
    rt: &tokio::runtime::Runtime,
    dir: &Path,
    token: Option<Token>,
) -> (FakeKube, std::path::PathBuf) {
    let kube = rt.block_on(async {
        let mut builder = FakeKube::builder().namespace("sandboxes");
        if let Some(token) = &token {
            builder = builder.token(token.clone());
        }
        builder.start().await.expect("fakekube starts")
    });
    let text = match &token {
        Some(token) => kube.kubeconfig_with_token(token.secret()),
        None => kube.kubeconfig(),
    };
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).expect("the kubeconfig is written");
    (kube, path)
}

/// Writes a pools file of one pool with `config` and returns its path.
fn pools_file(dir: &Path, config: &str) -> std::path::PathBuf {
    let path = dir.join("pools.yaml");
    std::fs::write(
        &path,
        format!("pools:\n  - name: mine\n    adapter: agent-sandbox\n    trust: private\n    config: {config}\n"),
    )
    .expect("the pools file is written");
    path
}

#[test]
fn a_missing_namespace_stops_the_run_with_one_message_and_exit_2() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (kube, kubeconfig) = cluster(&rt, dir.path(), None);
    let pools = pools_file(dir.path(), "{namespace: absent}");
    let output = conformance(
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--pools",
            pools.to_str().unwrap(),
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        preflight_lines(&output),
        ["conformance: preflight: pool mine: namespace absent does not exist"],
        "{stderr}"
    );
    assert!(
        stderr.contains("fix: create it (kubectl create namespace absent)"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("passed"));
    rt.block_on(kube.shutdown());
}

#[test]
fn a_missing_warm_pool_stops_the_run_with_one_message_and_exit_2() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (kube, kubeconfig) = cluster(&rt, dir.path(), None);
    let pools = pools_file(dir.path(), "{namespace: sandboxes, warmPool: py-warm}");
    let output = conformance(
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--pools",
            pools.to_str().unwrap(),
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        preflight_lines(&output),
        [
            "conformance: preflight: pool mine: SandboxWarmPool py-warm does not exist in namespace sandboxes"
        ],
        "{stderr}"
    );
    assert!(
        stderr.contains("fix: create a SandboxTemplate and a SandboxWarmPool named py-warm"),
        "{stderr}"
    );
    rt.block_on(kube.shutdown());
}

#[test]
fn a_missing_permission_stops_the_run_with_one_message_and_exit_2() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The provider page's Role, without `create` on pods/exec.
    let rules = vec![
        Rule::new(
            ["agents.x-k8s.io"],
            ["sandboxes"],
            ["get", "list", "create", "patch", "delete"],
        ),
        Rule::new(
            ["extensions.agents.x-k8s.io"],
            ["sandboxclaims"],
            ["get", "list", "create", "patch", "delete"],
        ),
        Rule::new(
            ["extensions.agents.x-k8s.io"],
            ["sandboxwarmpools"],
            ["get"],
        ),
        Rule::new([""], ["pods"], ["get"]),
        Rule::new([""], ["pods/exec"], ["get"]),
    ]
    .into_iter()
    .map(|r| r.in_namespaces(["sandboxes"]))
    .collect();
    let token = Token::new("limited-s3cr3t", "limited").with_rules(rules);
    let (kube, kubeconfig) = cluster(&rt, dir.path(), Some(token));
    let pools = pools_file(dir.path(), "{namespace: sandboxes}");
    let output = conformance(
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--pools",
            pools.to_str().unwrap(),
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        preflight_lines(&output),
        [
            "conformance: preflight: pool mine: the credentials may not create pods/exec in namespace sandboxes"
        ],
        "{stderr}"
    );
    assert!(
        stderr.contains("kubectl auth can-i create pods/exec -n sandboxes"),
        "{stderr}"
    );
    assert!(!stderr.contains("limited-s3cr3t"), "{stderr}");
    rt.block_on(kube.shutdown());
}
