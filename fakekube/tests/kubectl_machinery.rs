//! The API machinery through kubectl against the `fakekube` binary: kubectl 1.27 and 1.28
//! `apply` and `explain` with their default validation (they read the protobuf `/openapi/v2`);
//! `kubectl get` printing the server's columns (a CRD's printer columns, the built-in kinds'
//! columns and `-o wide`); `kubectl logs` with its options and `logs -f` streaming until the
//! container exits; `kubectl apply --server-side` conflicts between two managers.
//!
//! A kubectl binary that is not installed makes its tests print `skipping: <path> not
//! installed` and pass.

mod support;

use support::kubectl::{Kubectl, installed};
use support::process::Process;

/// A fakekube process and a kubectl for it.
struct Cluster {
    process: Process,
    k: Kubectl,
}

impl Cluster {
    /// Starts fakekube with `extra` arguments for `kubectl.1.<minor>`; `None` (after printing
    /// why) when that kubectl is not installed.
    fn start(minor: u32, extra: &[&str]) -> Option<Cluster> {
        let bin = installed(minor)?;
        let process = Process::start(extra);
        let k = Kubectl {
            bin,
            kubeconfig: process.kubeconfig.clone(),
        };
        Some(Cluster { process, k })
    }

    /// Writes `contents` into the scratch directory and returns its path.
    fn write(&self, name: &str, contents: &str) -> String {
        let path = self.process.dir().join(name);
        std::fs::write(&path, contents).expect("a manifest is written");
        path.to_string_lossy().into_owned()
    }
}

fn pod_yaml(name: &str, image: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: main\n    image: {image}\n"
    )
}

fn sandbox_yaml(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata:\n  name: {name}\nspec:\n  podTemplate:\n    spec:\n      containers:\n      - name: main\n        image: busybox:1.36\n{extra}"
    )
}

/// kubectl 1.27 and 1.28 fetch and parse the protobuf `/openapi/v2` before they apply or
/// explain anything: with it served, their default validation works (unknown fields are
/// refused by the server) and `explain` describes built-in and custom kinds.
fn old_kubectl_scenario(minor: u32) {
    let Some(c) = Cluster::start(minor, &["--api-only"]) else {
        return;
    };
    let k = &c.k;
    let pod = c.write("pod.yaml", &pod_yaml("web", "nginx:1.25"));
    k.run(&["apply", "-f", &pod])
        .success()
        .stdout_is("pod/web created\n");
    let pod = c.write("pod.yaml", &pod_yaml("web", "nginx:1.26"));
    k.run(&["apply", "-f", &pod])
        .success()
        .stdout_is("pod/web configured\n");
    let sb = c.write("sb.yaml", &sandbox_yaml("box", ""));
    k.run(&["apply", "-f", &sb])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box created\n");
    let bogus = c.write("bogus.yaml", &sandbox_yaml("bogus", "        bogus: 1\n"));
    k.run(&["apply", "-f", &bogus]).failure().stderr_has(
        "strict decoding error: unknown field \"spec.podTemplate.spec.containers[0].bogus\"",
    );
    let explained = k.run(&["explain", "sandbox.spec"]).success();
    assert!(
        explained.stdout.contains("KIND:       Sandbox"),
        "{explained}"
    );
    assert!(explained.stdout.contains("podTemplate"), "{explained}");
    let pods = k.run(&["explain", "pods"]).success();
    assert!(
        pods.stdout
            .contains("Pod is a collection of containers that can run on a host."),
        "{pods}"
    );
    let v2 = k
        .run(&["explain", "pods", "--output", "plaintext-openapiv2"])
        .success();
    assert!(
        v2.stdout.contains("   spec\t") && v2.stdout.contains("The desired state of the object."),
        "{v2}"
    );
}

/// `kubectl get` prints the columns the server's Table carries.
fn columns_scenario(minor: u32) {
    let Some(c) = Cluster::start(minor, &[]) else {
        return;
    };
    let k = &c.k;
    let sb = c.write("sb.yaml", &sandbox_yaml("box", ""));
    k.run(&["apply", "-f", &sb]).success();
    k.run(&[
        "wait",
        "--for=condition=Ready",
        "--timeout=50s",
        "sandbox/box",
    ])
    .success();
    let sandboxes = k.run(&["get", "sandboxes"]).success();
    let mut lines = sandboxes.stdout.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "READY", "REASON", "AGE"], "{sandboxes}");
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[..2], ["box", "True"], "{sandboxes}");
    let wide = k.run(&["get", "pods", "-o", "wide"]).success();
    let header: Vec<&str> = wide
        .stdout
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ],
        "{wide}"
    );
    assert!(
        wide.stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("box ") && l.contains("1/1") && l.contains("Running")),
        "{wide}"
    );
    let ns = k.run(&["get", "namespace", "default"]).success();
    let row: Vec<&str> = ns
        .stdout
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[..2], ["default", "Active"], "{ns}");
}

/// `kubectl logs`: the options, then `-f` streaming a running container's lines as it prints
/// them and ending when it exits.
fn logs_scenario(minor: u32) {
    let Some(c) = Cluster::start(minor, &[]) else {
        return;
    };
    let k = &c.k;
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: talker\nspec:\n  restartPolicy: Never\n  containers:\n  - name: main\n    image: busybox\n    command: [\"sh\", \"-c\", \"echo one; echo two; while [ ! -f /tmp/go ]; do sleep 0.05; done; echo three\"]\n";
    k.run_input(manifest, &["apply", "-f", "-"]).success();
    k.run(&[
        "wait",
        "--for=condition=Ready",
        "--timeout=50s",
        "pod/talker",
    ])
    .success();
    let mut follow = k.spawn(&["logs", "-f", "talker"]);
    assert_eq!(follow.next_line(), "one");
    assert_eq!(follow.next_line(), "two");
    k.run(&["logs", "talker", "--tail=1"])
        .success()
        .stdout_is("two\n");
    let stamped = k
        .run(&["logs", "talker", "--timestamps", "--tail=1"])
        .success();
    assert!(stamped.stdout.ends_with("Z two\n"), "{stamped}");
    k.run(&["exec", "talker", "--", "touch", "/tmp/go"])
        .success();
    assert_eq!(follow.next_line(), "three");
    let (code, rest) = follow.finish();
    assert_eq!(
        (code, rest),
        (Some(0), Vec::<String>::new()),
        "logs -f ends with the container"
    );
    k.run(&["logs", "talker", "-c", "nope"])
        .failure()
        .stderr_has("container nope is not valid for pod talker");
}

/// `kubectl apply --server-side` by two field managers: the second one's change to a field the
/// first owns is refused with the conflict listed, `--force-conflicts` takes the field over,
/// and `--show-managed-fields` shows who owns what; a client-side apply moves to server-side
/// apply without a conflict.
fn server_side_apply_scenario(minor: u32) {
    let Some(c) = Cluster::start(minor, &["--api-only"]) else {
        return;
    };
    let k = &c.k;
    let labelled = |team: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: shared\n  labels:\n    team: {team}\nspec:\n  containers:\n  - name: main\n    image: nginx:1.25\n"
        )
    };
    k.run_input(
        &labelled("a"),
        &["apply", "--server-side", "--field-manager=alice", "-f", "-"],
    )
    .success()
    .stdout_is("pod/shared serverside-applied\n");
    k.run_input(
        &labelled("b"),
        &["apply", "--server-side", "--field-manager=bob", "-f", "-"],
    )
    .failure()
    .stderr_has("Apply failed with 1 conflict: conflict with \"alice\": .metadata.labels.team");
    k.run(&[
        "get",
        "pod",
        "shared",
        "-o",
        "jsonpath={.metadata.labels.team}",
    ])
    .success()
    .stdout_is("a");
    k.run_input(
        &labelled("b"),
        &[
            "apply",
            "--server-side",
            "--field-manager=bob",
            "--force-conflicts",
            "-f",
            "-",
        ],
    )
    .success()
    .stdout_is("pod/shared serverside-applied\n");
    let pod = k
        .run(&[
            "get",
            "pod",
            "shared",
            "-o",
            "json",
            "--show-managed-fields",
        ])
        .success()
        .json();
    assert_eq!(pod["metadata"]["labels"]["team"], "b");
    let entries = pod["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields");
    let owner_of_team: Vec<&str> = entries
        .iter()
        .filter(|e| !e["fieldsV1"]["f:metadata"]["f:labels"]["f:team"].is_null())
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(owner_of_team, ["bob"], "{entries:?}");
    assert!(
        entries
            .iter()
            .any(|e| e["manager"] == "alice" && e["operation"] == "Apply"),
        "alice still owns the container: {entries:?}"
    );
    // Moving from client-side to server-side apply needs no --force-conflicts.
    let migrated = |team: &str| labelled(team).replace("name: shared", "name: migrated");
    k.run_input(&migrated("a"), &["apply", "-f", "-"])
        .success()
        .stdout_is("pod/migrated created\n");
    k.run_input(&migrated("b"), &["apply", "--server-side", "-f", "-"])
        .success()
        .stdout_is("pod/migrated serverside-applied\n");
    k.run(&[
        "get",
        "pod",
        "migrated",
        "-o",
        "jsonpath={.metadata.labels.team}",
    ])
    .success()
    .stdout_is("b");
    // kubectl's own writes are recorded under its managers, as Updates.
    k.run(&["label", "pod", "shared", "extra=1"]).success();
    let pod = k
        .run(&[
            "get",
            "pod",
            "shared",
            "-o",
            "json",
            "--show-managed-fields",
        ])
        .success()
        .json();
    let label = pod["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .find(|e| e["manager"] == "kubectl-label")
        .expect("kubectl label is recorded");
    assert_eq!(label["operation"], "Update");
    assert_eq!(
        label["fieldsV1"],
        serde_json::json!({"f:metadata": {"f:labels": {"f:extra": {}}}})
    );
}

macro_rules! old_tests {
    ($minor:expr) => {
        #[test]
        fn apply_and_explain_work_with_default_validation() {
            crate::old_kubectl_scenario($minor);
        }
    };
}

macro_rules! new_tests {
    ($minor:expr) => {
        #[test]
        fn get_prints_the_printer_columns_of_the_server() {
            crate::columns_scenario($minor);
        }

        #[test]
        fn logs_take_their_options_and_follow_until_the_container_exits() {
            crate::logs_scenario($minor);
        }

        #[test]
        fn server_side_apply_conflicts_between_two_managers_until_forced() {
            crate::server_side_apply_scenario($minor);
        }
    };
}

mod kubectl_1_27 {
    old_tests!(27);
}

mod kubectl_1_28 {
    old_tests!(28);
}

mod kubectl_1_30 {
    new_tests!(30);
}

mod kubectl_1_33 {
    new_tests!(33);
}
