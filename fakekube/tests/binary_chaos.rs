//! The `fakekube` binary under chaos: `--chaos-user` scopes the faults to one identity (the
//! admin's requests are never struck), `--chaos-paused` holds them until SIGUSR1, and the
//! faults injected are counted by kind in a line on stdout when it stops.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use support::process::{self, kube_client, signal, terminate};

/// The role token's user: `--role-token` binds the service account `role-token` in the Role's
/// namespace.
const ROLE_USER: &str = "system:serviceaccount:sandboxes:role-token";

/// How many requests each identity sends.
const REQUESTS: usize = 12;

/// Starts fakekube with an admin kubeconfig, a role kubeconfig and `chaos`: every chaos flag
/// but the seed, which is fixed. Returns it once it serves.
fn spawn(dir: &Path, chaos: &[&str]) -> Child {
    let role = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/rbac/differently-sandboxes-role.yaml"
    );
    let admin = dir.join("admin.kubeconfig");
    let role_kubeconfig = dir.join("role.kubeconfig");
    let role_token = format!("binary-chaos-role-token={role}");
    let mut args = vec![
        "--kubeconfig",
        admin.to_str().expect("a UTF-8 path"),
        "--token",
        "binary-chaos-admin-token",
        "--role-token",
        &role_token,
        "--role-kubeconfig",
        role_kubeconfig.to_str().expect("a UTF-8 path"),
        "--chaos-seed",
        "7",
    ];
    args.extend_from_slice(chaos);
    let (child, first) = process::spawn(&args);
    assert!(first.starts_with("fakekube listening on "), "{first}");
    child
}

/// Pods in `sandboxes` through `kubeconfig` (the Role may get them).
async fn pods(kubeconfig: &Path) -> Api<Pod> {
    Api::namespaced(kube_client(kubeconfig).await, "sandboxes")
}

/// The HTTP status of `REQUESTS` gets of a pod that does not exist: 404 when served, the
/// fault's code when struck.
async fn statuses(api: &Api<Pod>) -> Vec<u16> {
    let mut codes = Vec::new();
    for _ in 0..REQUESTS {
        codes.push(match api.get("absent").await {
            Ok(_) => 200,
            Err(kube::Error::Api(status)) => status.code,
            Err(e) => panic!("not an API answer: {e}"),
        });
    }
    codes
}

/// The counts of the `fakekube chaos injected N faults: kind=n ...` line, by kind, with the
/// total under `total`.
fn injected(stdout: &str) -> std::collections::BTreeMap<String, u64> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("fakekube chaos injected "))
        .unwrap_or_else(|| panic!("no chaos line in {stdout:?}"));
    let (total, kinds) = line.split_once(" faults: ").expect("the line's shape");
    let mut counts: std::collections::BTreeMap<String, u64> = kinds
        .split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("kind=count");
            (k.to_owned(), v.parse().expect("a count"))
        })
        .collect();
    counts.insert("total".to_owned(), total.parse().expect("a total"));
    counts
}

#[tokio::test]
async fn chaos_for_one_user_strikes_only_its_requests_and_the_counts_are_printed_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let child = spawn(
        dir.path(),
        &[
            "--chaos-rate",
            "1",
            "--chaos-faults",
            "internal",
            "--chaos-user",
            ROLE_USER,
        ],
    );
    let admin = statuses(&pods(&dir.path().join("admin.kubeconfig")).await).await;
    let role = statuses(&pods(&dir.path().join("role.kubeconfig")).await).await;
    let (code, stdout, _) = terminate(child);
    assert_eq!(admin, vec![404; REQUESTS], "the admin was struck");
    assert_eq!(role, vec![500; REQUESTS], "the role's requests were spared");
    assert_eq!(code, Some(0));
    let counts = injected(&stdout);
    assert_eq!(counts["internal"], REQUESTS as u64, "{stdout}");
    assert_eq!(counts["total"], REQUESTS as u64, "{stdout}");
    for kind in ["reset", "throttle", "unavailable", "slow", "pod_delete"] {
        assert_eq!(counts[kind], 0, "{kind} was not asked for: {stdout}");
    }
}

#[tokio::test]
async fn paused_chaos_spares_every_request_until_sigusr1_resumes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = spawn(
        dir.path(),
        &[
            "--chaos-rate",
            "1",
            "--chaos-faults",
            "internal",
            "--chaos-paused",
        ],
    );
    let role = pods(&dir.path().join("role.kubeconfig")).await;
    let before = statuses(&role).await;
    signal(&child, "USR1");
    let mut stderr = BufReader::new(child.stderr.as_mut().expect("stderr"));
    let mut said = Vec::new();
    loop {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).expect("stderr read");
        assert!(read > 0, "no `chaos resumed` on stderr: {said:?}");
        if line.starts_with("fakekube: chaos resumed") {
            break;
        }
        said.push(line);
    }
    let after = statuses(&role).await;
    let (code, stdout, _) = terminate(child);
    assert_eq!(before, vec![404; REQUESTS], "struck while paused");
    assert_eq!(after, vec![500; REQUESTS], "spared once resumed");
    assert_eq!(code, Some(0));
    assert_eq!(injected(&stdout)["internal"], REQUESTS as u64, "{stdout}");
}
