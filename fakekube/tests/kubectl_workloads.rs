//! The workload controllers and the cluster's own objects through kubectl against the
//! `fakekube` binary: `kubectl create deployment` then `rollout status`, a rolling update and
//! `rollout undo`, scaling; a Job to completion (`wait --for=condition=complete`, `logs
//! job/NAME`) and one that fails on its back-off limit; StatefulSet ordinals and their claims;
//! a DaemonSet's pod on the node; `get nodes`, `events`, `leases -A`; cordon, a drain held by a
//! PodDisruptionBudget, then completed once the budget is gone, and uncordon.
//!
//! kubectl 1.30 and 1.33 (which sends `create` bodies as protobuf). A kubectl binary that is
//! not installed makes its tests print `skipping: <path> not installed` and pass.

mod support;

use support::kubectl::{Kubectl, installed};
use support::process::Process;

/// A fakekube process and a kubectl for it.
struct Cluster {
    process: Process,
    k: Kubectl,
}

impl Cluster {
    fn start(minor: u32) -> Option<Cluster> {
        let bin = installed(minor)?;
        let process = Process::start(&[]);
        let k = Kubectl {
            bin,
            kubeconfig: process.kubeconfig.clone(),
        };
        Some(Cluster { process, k })
    }

    fn apply(&self, name: &str, manifest: &str) {
        let path = self.process.dir().join(name);
        std::fs::write(&path, manifest).expect("a manifest is written");
        self.k
            .run(&["apply", "-f", &path.to_string_lossy()])
            .success();
    }
}

/// The names of the pods a label selector selects, sorted.
fn pod_names(k: &Kubectl, selector: &str) -> Vec<String> {
    let out = k
        .run(&["get", "pods", "-l", selector, "-o", "name"])
        .success();
    let mut names: Vec<String> = out.stdout.lines().map(str::to_string).collect();
    names.sort();
    names
}

/// Reads `read` until it gives `want`, for up to a minute, as one waits for controllers to
/// settle (pods of a scaled-down ReplicaSet still terminating, replacements not yet made);
/// panics with the last reading if it never does.
#[track_caller]
fn settles_at<T: PartialEq + std::fmt::Debug>(what: &str, want: T, read: impl Fn() -> T) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let got = read();
        if got == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: still {got:?}, not {want:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn deployment_scenario(minor: u32) {
    let Some(c) = Cluster::start(minor) else {
        return;
    };
    let k = &c.k;
    k.run(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ])
    .success();
    k.run(&["rollout", "status", "deployment/web", "--timeout=50s"])
        .success()
        .stdout_is("deployment \"web\" successfully rolled out\n");
    let d = k
        .run(&["get", "deployment", "web", "-o", "json"])
        .success()
        .json();
    assert_eq!(d["status"]["readyReplicas"], 2, "{d}");
    assert_eq!(
        d["status"]["observedGeneration"],
        d["metadata"]["generation"]
    );
    assert_eq!(
        d["status"]["conditions"][0]["reason"],
        "MinimumReplicasAvailable"
    );
    assert_eq!(
        d["status"]["conditions"][1]["reason"],
        "NewReplicaSetAvailable"
    );

    k.run(&["set", "image", "deployment/web", "nginx=nginx:1.28"])
        .success();
    k.run(&["rollout", "status", "deployment/web", "--timeout=50s"])
        .success();
    let rs = k.run(&["get", "rs", "-o", "json"]).success().json();
    let mut sets: Vec<(String, i64)> = rs["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|r| {
            (
                r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                r["spec"]["replicas"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    sets.sort();
    assert_eq!(sets, [("1".to_string(), 0), ("2".to_string(), 2)]);

    k.run(&["rollout", "undo", "deployment/web"]).success();
    k.run(&["rollout", "status", "deployment/web", "--timeout=50s"])
        .success();
    let image = k
        .run(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ])
        .success();
    assert_eq!(image.stdout, "nginx:1.27");

    k.run(&["scale", "deployment/web", "--replicas=3"])
        .success();
    k.run(&["rollout", "status", "deployment/web", "--timeout=50s"])
        .success();
    // A rollout is done while the old ReplicaSet's pods may still be terminating.
    settles_at("the pods of app=web", 3, || pod_names(k, "app=web").len());
    let events = k
        .run(&[
            "get",
            "events",
            "--field-selector",
            "reason=ScalingReplicaSet",
            "-o",
            "name",
        ])
        .success();
    assert!(events.stdout.lines().count() >= 4, "{events}");
}

fn job_scenario(minor: u32) {
    let Some(c) = Cluster::start(minor) else {
        return;
    };
    let k = &c.k;
    k.run(&[
        "create",
        "job",
        "hello",
        "--image=busybox",
        "--",
        "echo",
        "hello from a job",
    ])
    .success();
    k.run(&[
        "wait",
        "--for=condition=complete",
        "job/hello",
        "--timeout=50s",
    ])
    .success()
    .stdout_is("job.batch/hello condition met\n");
    k.run(&["logs", "job/hello"])
        .success()
        .stdout_is("hello from a job\n");
    c.apply(
        "failing.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: failing\nspec:\n  backoffLimit: 1\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n        command: [sh, -c, 'exit 3']\n",
    );
    k.run(&[
        "wait",
        "--for=condition=failed",
        "job/failing",
        "--timeout=50s",
    ])
    .success();
    let j = k
        .run(&["get", "job", "failing", "-o", "json"])
        .success()
        .json();
    assert_eq!(j["status"]["failed"], 2, "{j}");
    let failed = j["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "Failed")
        .cloned()
        .unwrap_or_default();
    assert_eq!(failed["reason"], "BackoffLimitExceeded", "{j}");
    assert_eq!(pod_names(k, "job-name=failing").len(), 2);
}

fn stateful_and_daemon_scenario(minor: u32) {
    let Some(c) = Cluster::start(minor) else {
        return;
    };
    let k = &c.k;
    c.apply(
        "sts.yaml",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  replicas: 3\n  serviceName: db\n  selector:\n    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: c\n        image: busybox\n        command: [sleep, '3600']\n  volumeClaimTemplates:\n  - metadata:\n      name: data\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources:\n        requests: {storage: 1Gi}\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    matchLabels: {app: agent}\n  template:\n    metadata:\n      labels: {app: agent}\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: c\n        image: busybox\n        command: [sleep, '3600']\n",
    );
    k.run(&["rollout", "status", "statefulset/db", "--timeout=50s"])
        .success();
    assert_eq!(pod_names(k, "app=db"), ["pod/db-0", "pod/db-1", "pod/db-2"]);
    let claims = k.run(&["get", "pvc", "-o", "name"]).success();
    assert_eq!(
        claims.stdout,
        "persistentvolumeclaim/data-db-0\npersistentvolumeclaim/data-db-1\npersistentvolumeclaim/data-db-2\n"
    );
    k.run(&["scale", "statefulset/db", "--replicas=1"])
        .success();
    k.run(&["rollout", "status", "statefulset/db", "--timeout=50s"])
        .success();
    k.run(&[
        "wait",
        "--for=delete",
        "pod/db-2",
        "pod/db-1",
        "--timeout=50s",
    ])
    .success();
    assert_eq!(pod_names(k, "app=db"), ["pod/db-0"]);
    k.run(&["rollout", "status", "daemonset/agent", "--timeout=50s"])
        .success();
    let node = k
        .run(&[
            "get",
            "pods",
            "-l",
            "app=agent",
            "-o",
            "jsonpath={.items[*].spec.nodeName}",
        ])
        .success();
    assert_eq!(node.stdout, "fakekube-node");
}

fn cluster_objects_and_drain_scenario(minor: u32) {
    let Some(c) = Cluster::start(minor) else {
        return;
    };
    let k = &c.k;
    let nodes = k.run(&["get", "nodes", "-o", "name"]).success();
    assert_eq!(nodes.stdout, "node/fakekube-node\n");
    let leases = k.run(&["get", "leases", "-A", "-o", "name"]).success();
    assert!(
        leases
            .stdout
            .contains("lease.coordination.k8s.io/fakekube-node"),
        "{leases}"
    );
    k.run(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ])
    .success();
    k.run(&["rollout", "status", "deployment/web", "--timeout=50s"])
        .success();
    k.run(&["get", "events"]).success();
    k.run(&[
        "create",
        "pdb",
        "web",
        "--selector=app=web",
        "--min-available=2",
    ])
    .success();
    k.run(&["cordon", "fakekube-node"]).success();
    let held = k.run(&[
        "drain",
        "fakekube-node",
        "--pod-selector=app=web",
        "--timeout=3s",
    ]);
    assert_ne!(held.code, Some(0), "the budget holds the drain: {held}");
    assert!(
        held.stderr.contains("global timeout reached") || held.stdout.contains("disruption budget"),
        "{held}"
    );
    assert_eq!(pod_names(k, "app=web").len(), 2, "nothing was evicted");
    k.run(&["delete", "pdb", "web"]).success();
    k.run(&[
        "drain",
        "fakekube-node",
        "--pod-selector=app=web",
        "--timeout=50s",
    ])
    .success();
    // The replacements wait on the cordoned node, then run once it is uncordoned. The drain
    // ends once the evicted pods are gone, which may be before the ReplicaSet has made both.
    settles_at(
        "the replacements' first condition",
        "Unschedulable Unschedulable".to_string(),
        || {
            k.run(&[
                "get",
                "pods",
                "-l",
                "app=web",
                "-o",
                "jsonpath={.items[*].status.conditions[0].reason}",
            ])
            .success()
            .stdout
        },
    );
    k.run(&["uncordon", "fakekube-node"]).success();
    k.run(&["rollout", "status", "deployment/web", "--timeout=50s"])
        .success();
}

macro_rules! tests {
    ($minor:expr) => {
        #[test]
        fn a_deployment_rolls_out_updates_rolls_back_and_scales() {
            crate::deployment_scenario($minor);
        }

        #[test]
        fn jobs_complete_with_their_logs_or_fail_on_their_backoff_limit() {
            crate::job_scenario($minor);
        }

        #[test]
        fn statefulset_ordinals_and_claims_and_a_daemonset_pod_on_the_node() {
            crate::stateful_and_daemon_scenario($minor);
        }

        #[test]
        fn the_node_and_its_lease_are_listed_and_a_drain_honours_a_budget() {
            crate::cluster_objects_and_drain_scenario($minor);
        }
    };
}

mod kubectl_1_30 {
    tests!(30);
}

mod kubectl_1_33 {
    tests!(33);
}
