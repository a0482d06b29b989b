//! The controllers' passes against an API server without a kubelet: pod states are written by the
//! tests, and each test runs the passes a change would cause.

use super::*;
use crate::client::Kind;

struct World {
    api: Arc<dyn Client>,
    config: Config,
    recorders: Recorders,
    index: Index,
    jobs: job::Memory,
    last: u64,
    /// The API server whose store `api` is; its own tasks never run (the runtime is only
    /// driven to start it), so the tests' passes are the only writers.
    _kube: fakekube::FakeKube,
    _runtime: tokio::runtime::Runtime,
}

impl World {
    fn new() -> World {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let kube = runtime
            .block_on(
                fakekube::FakeKube::builder()
                    .controllers(false)
                    .kubelet(false)
                    .start(),
            )
            .expect("fakekube starts");
        let api = kube.client();
        api.create(Kind::Namespace, "", json!({ "metadata": { "name": "d" } }))
            .expect("namespace d");
        World {
            last: api.position(),
            api,
            config: Config {
                job_backoff: Duration::ZERO,
            },
            recorders: Recorders::default(),
            index: Index::default(),
            jobs: job::Memory::default(),
            _kube: kube,
            _runtime: runtime,
        }
    }

    /// Runs the passes the changes since the last call cause, until nothing changes.
    fn settle(&mut self) {
        for _ in 0..20 {
            let (events, reached) = self
                .api
                .changes_since(self.last)
                .expect("the log reaches back");
            self.last = self.last.max(reached);
            if events.is_empty() {
                return;
            }
            let mut queue = BTreeSet::new();
            for e in &events {
                on_event(self.api.as_ref(), &mut self.index, e, &mut queue);
            }
            for key in queue {
                let mut ctx = Ctx {
                    api: self.api.as_ref(),
                    events: &self.recorders,
                    config: &self.config,
                    index: &self.index,
                    jobs: &mut self.jobs,
                };
                reconcile(&mut ctx, &key);
            }
        }
        panic!("the controllers did not settle");
    }

    fn create(&self, rt: Kind, obj: Value) -> Arc<Value> {
        create(self.api.as_ref(), rt, "d", obj).expect("created")
    }

    fn pods(&self) -> Vec<Arc<Value>> {
        self.api.list(Kind::Pod, Some("d"))
    }

    /// Writes every pod's phase (and Ready when Running), as the kubelet would.
    fn pods_reach(&self, phase: &str) {
        for p in self.pods() {
            let name = meta_str(&p, "name").unwrap_or("");
            let ready = if phase == "Running" { "True" } else { "False" };
            write_status(
                self.api.as_ref(),
                Kind::Pod,
                "d",
                name,
                json!({ "phase": phase, "conditions": [ { "type": "Ready", "status": ready } ] }),
            );
        }
    }

    fn get(&self, rt: Kind, name: &str) -> Arc<Value> {
        self.api.get(rt, "d", name).expect("stored")
    }
}

fn template(app: &str, restart: &str) -> Value {
    json!({
        "metadata": { "labels": { "app": app } },
        "spec": { "restartPolicy": restart, "containers": [ { "name": "c", "image": "busybox" } ] },
    })
}

#[test]
fn a_deployment_makes_a_replicaset_whose_pods_make_it_available() {
    let mut w = World::new();
    let d = json!({
        "metadata": { "name": "web" },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": "web" } },
            "template": template("web", "Always"),
        },
    });
    w.create(Kind::Deployment, d);
    w.settle();
    let sets = w.api.list(Kind::ReplicaSet, Some("d"));
    assert_eq!(sets.len(), 1);
    let rs_name = meta_str(&sets[0], "name").unwrap_or("").to_string();
    let hash = sets[0]["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_eq!(rs_name, format!("web-{hash}"));
    assert_eq!(
        sets[0]["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    let pods = w.pods();
    assert_eq!(pods.len(), 2);
    assert!(
        pods.iter()
            .all(|p| p["metadata"]["labels"]["pod-template-hash"] == hash)
    );
    let d = w.get(Kind::Deployment, "web");
    assert_eq!(
        condition(&d, "Available").map(|c| c["status"].clone()),
        Some(json!("False"))
    );

    w.pods_reach("Running");
    w.settle();
    let d = w.get(Kind::Deployment, "web");
    assert_eq!(d["status"]["availableReplicas"], 2, "{d}");
    assert_eq!(d["status"]["updatedReplicas"], 2);
    assert_eq!(d["status"]["observedGeneration"], 1);
    assert_eq!(
        condition(&d, "Available").map(|c| c["reason"].clone()),
        Some(json!("MinimumReplicasAvailable"))
    );
    assert_eq!(
        condition(&d, "Progressing").map(|c| c["reason"].clone()),
        Some(json!("NewReplicaSetAvailable"))
    );
}

#[test]
fn a_replicaset_deletes_its_surplus_pods_not_ready_first() {
    let mut w = World::new();
    let rs = json!({
        "metadata": { "name": "r" },
        "spec": { "replicas": 3, "selector": { "matchLabels": { "app": "r" } }, "template": template("r", "Always") },
    });
    w.create(Kind::ReplicaSet, rs);
    w.settle();
    assert_eq!(w.pods().len(), 3);
    // Two pods run; the third stays pending.
    for p in w.pods().iter().take(2) {
        write_status(
            w.api.as_ref(),
            Kind::Pod,
            "d",
            meta_str(p, "name").unwrap_or(""),
            json!({ "phase": "Running", "conditions": [ { "type": "Ready", "status": "True" } ] }),
        );
    }
    w.settle();
    modify(w.api.as_ref(), Kind::ReplicaSet, "d", "r", |o| {
        o["spec"]["replicas"] = json!(2)
    });
    w.settle();
    let left = w.pods();
    assert_eq!(left.len(), 2);
    assert!(
        left.iter().all(|p| condition_true(p, "Ready")),
        "the pending pod went first"
    );
    let rs = w.get(Kind::ReplicaSet, "r");
    assert_eq!(rs["status"]["readyReplicas"], 2);
}

#[test]
fn a_statefulset_makes_its_ordinals_in_order_with_their_claims() {
    let mut w = World::new();
    let set = json!({
        "metadata": { "name": "db" },
        "spec": {
            "replicas": 2,
            "podManagementPolicy": "OrderedReady",
            "selector": { "matchLabels": { "app": "db" } },
            "template": template("db", "Always"),
            "volumeClaimTemplates": [ { "metadata": { "name": "data" }, "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } } ],
        },
    });
    w.create(Kind::StatefulSet, set);
    w.settle();
    let names = |w: &World| {
        w.pods()
            .iter()
            .map(|p| meta_str(p, "name").unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&w), ["db-0"], "db-1 waits for db-0 to be ready");
    assert!(
        w.api
            .get(Kind::PersistentVolumeClaim, "d", "data-db-0")
            .is_some()
    );
    w.pods_reach("Running");
    w.settle();
    assert_eq!(names(&w), ["db-0", "db-1"]);
    let claim = w.get(Kind::Pod, "db-1");
    assert_eq!(
        claim["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "data-db-1"
    );
}

#[test]
fn a_job_replaces_failed_pods_until_its_backoff_limit_then_fails() {
    let mut w = World::new();
    let job = json!({
        "metadata": { "name": "j", "uid": "ignored" },
        "spec": { "backoffLimit": 1, "template": template("j", "Never") },
    });
    w.create(Kind::Job, job);
    w.settle();
    assert_eq!(w.pods().len(), 1);
    w.pods_reach("Failed");
    w.settle();
    assert_eq!(w.pods().len(), 2, "one replacement");
    w.pods_reach("Failed");
    w.settle();
    let j = w.get(Kind::Job, "j");
    assert_eq!(j["status"]["failed"], 2);
    assert!(condition_true(&j, "Failed"), "{j}");
    assert_eq!(
        condition(&j, "Failed").map(|c| c["reason"].clone()),
        Some(json!("BackoffLimitExceeded"))
    );
}

#[test]
fn a_job_completes_when_its_completions_succeed() {
    let mut w = World::new();
    let job = json!({
        "metadata": { "name": "j" },
        "spec": { "completions": 2, "parallelism": 2, "template": template("j", "Never") },
    });
    w.create(Kind::Job, job);
    w.settle();
    assert_eq!(w.pods().len(), 2);
    w.pods_reach("Succeeded");
    w.settle();
    let j = w.get(Kind::Job, "j");
    assert_eq!(j["status"]["succeeded"], 2);
    assert!(condition_true(&j, "Complete"), "{j}");
    assert!(condition_true(&j, "SuccessCriteriaMet"));
    assert!(j["status"]["completionTime"].is_string());
    let reasons: Vec<String> = w
        .api
        .list(Kind::Event, Some("d"))
        .iter()
        .map(|e| e["reason"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(reasons.contains(&"Completed".to_string()), "{reasons:?}");
}

#[test]
fn a_jobs_times_and_conditions_are_the_clusters_clock_not_the_wall_clock() {
    let mut w = World::new();
    w.api.clock().advance(Duration::from_secs(86_400));
    let job = json!({
        "metadata": { "name": "later" },
        "spec": { "completions": 1, "parallelism": 1, "template": template("later", "Never") },
    });
    w.create(Kind::Job, job);
    w.settle();
    w.pods_reach("Succeeded");
    w.settle();
    let j = w.get(Kind::Job, "later");
    let wall = time::OffsetDateTime::now_utc();
    let ahead = |t: &Value| {
        t.as_str()
            .and_then(|t| {
                time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
            })
            .is_some_and(|t| t - wall > time::Duration::hours(23))
    };
    assert!(ahead(&j["status"]["startTime"]), "{j}");
    assert!(ahead(&j["status"]["completionTime"]), "{j}");
    let complete = j["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == "Complete"))
        .cloned()
        .unwrap_or_default();
    assert!(ahead(&complete["lastTransitionTime"]), "{j}");
    assert!(ahead(&complete["lastProbeTime"]), "{j}");
}
