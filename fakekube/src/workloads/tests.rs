//! The controllers' passes against a store without a kubelet: pod states are written by the
//! tests, and each test runs the passes a change would cause.

use super::*;
use crate::store::StoreSettings;

struct World {
    store: Store,
    kinds: Kinds,
    config: Config,
    index: Index,
    jobs: job::Memory,
    last: u64,
}

impl World {
    fn new() -> World {
        let store = Store::new(StoreSettings::default(), Arc::new(Registry::new()));
        let kinds = Kinds::resolve(store.registry()).expect("the workload kinds are served");
        let ns = store
            .registry()
            .find("", "v1", "namespaces")
            .expect("namespaces");
        store
            .create(
                &ns,
                "",
                json!({ "metadata": { "name": "d" } }),
                WriteOptions::default(),
            )
            .expect("namespace d");
        World {
            store,
            kinds,
            config: Config {
                job_backoff: Duration::ZERO,
            },
            index: Index::default(),
            jobs: job::Memory::default(),
            last: 0,
        }
    }

    /// Runs the passes the changes since the last call cause, until nothing changes.
    fn settle(&mut self) {
        for _ in 0..20 {
            let events = self
                .store
                .events_since(self.last)
                .expect("the log reaches back");
            if events.is_empty() {
                return;
            }
            let mut queue = BTreeSet::new();
            for e in &events {
                self.last = self.last.max(e.rv);
                on_event(&self.store, &self.kinds, &mut self.index, e, &mut queue);
            }
            for key in queue {
                let mut ctx = Ctx {
                    store: &self.store,
                    kinds: &self.kinds,
                    config: &self.config,
                    index: &self.index,
                    jobs: &mut self.jobs,
                };
                reconcile(&mut ctx, &key);
            }
        }
        panic!("the controllers did not settle");
    }

    fn create(&self, rt: &Arc<ResourceType>, obj: Value) -> Arc<Value> {
        create(&self.store, rt, "d", obj).expect("created")
    }

    fn pods(&self) -> Vec<Arc<Value>> {
        self.store.list_all(&self.kinds.pods, Some("d"))
    }

    /// Writes every pod's phase (and Ready when Running), as the kubelet would.
    fn pods_reach(&self, phase: &str) {
        for p in self.pods() {
            let name = meta_str(&p, "name").unwrap_or("");
            let ready = if phase == "Running" { "True" } else { "False" };
            write_status(
                &self.store,
                &self.kinds.pods,
                "d",
                name,
                json!({ "phase": phase, "conditions": [ { "type": "Ready", "status": ready } ] }),
            );
        }
    }

    fn get(&self, rt: &Arc<ResourceType>, name: &str) -> Arc<Value> {
        self.store.get_opt(rt, "d", name).expect("stored")
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
    w.create(&w.kinds.deployments.clone(), d);
    w.settle();
    let sets = w.store.list_all(&w.kinds.replicasets, Some("d"));
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
    let d = w.get(&w.kinds.deployments, "web");
    assert_eq!(
        condition(&d, "Available").map(|c| c["status"].clone()),
        Some(json!("False"))
    );

    w.pods_reach("Running");
    w.settle();
    let d = w.get(&w.kinds.deployments, "web");
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
    w.create(&w.kinds.replicasets.clone(), rs);
    w.settle();
    assert_eq!(w.pods().len(), 3);
    // Two pods run; the third stays pending.
    for p in w.pods().iter().take(2) {
        write_status(
            &w.store,
            &w.kinds.pods,
            "d",
            meta_str(p, "name").unwrap_or(""),
            json!({ "phase": "Running", "conditions": [ { "type": "Ready", "status": "True" } ] }),
        );
    }
    w.settle();
    modify(&w.store, &w.kinds.replicasets, "d", "r", |o| {
        o["spec"]["replicas"] = json!(2)
    });
    w.settle();
    let left = w.pods();
    assert_eq!(left.len(), 2);
    assert!(
        left.iter().all(|p| condition_true(p, "Ready")),
        "the pending pod went first"
    );
    let rs = w.get(&w.kinds.replicasets, "r");
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
    w.create(&w.kinds.statefulsets.clone(), set);
    w.settle();
    let names = |w: &World| {
        w.pods()
            .iter()
            .map(|p| meta_str(p, "name").unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&w), ["db-0"], "db-1 waits for db-0 to be ready");
    assert!(w.store.get_opt(&w.kinds.pvcs, "d", "data-db-0").is_some());
    w.pods_reach("Running");
    w.settle();
    assert_eq!(names(&w), ["db-0", "db-1"]);
    let claim = w.get(&w.kinds.pods, "db-1");
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
    w.create(&w.kinds.jobs.clone(), job);
    w.settle();
    assert_eq!(w.pods().len(), 1);
    w.pods_reach("Failed");
    w.settle();
    assert_eq!(w.pods().len(), 2, "one replacement");
    w.pods_reach("Failed");
    w.settle();
    let j = w.get(&w.kinds.jobs, "j");
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
    w.create(&w.kinds.jobs.clone(), job);
    w.settle();
    assert_eq!(w.pods().len(), 2);
    w.pods_reach("Succeeded");
    w.settle();
    let j = w.get(&w.kinds.jobs, "j");
    assert_eq!(j["status"]["succeeded"], 2);
    assert!(condition_true(&j, "Complete"), "{j}");
    assert!(condition_true(&j, "SuccessCriteriaMet"));
    assert!(j["status"]["completionTime"].is_string());
    let events = w.store.registry().find("", "v1", "events").expect("events");
    let reasons: Vec<String> = w
        .store
        .list_all(&events, Some("d"))
        .iter()
        .map(|e| e["reason"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(reasons.contains(&"Completed".to_string()), "{reasons:?}");
}

#[test]
fn a_jobs_times_and_conditions_are_the_clusters_clock_not_the_wall_clock() {
    let mut w = World::new();
    w.store.clock().advance(Duration::from_secs(86_400));
    let job = json!({
        "metadata": { "name": "later" },
        "spec": { "completions": 1, "parallelism": 1, "template": template("later", "Never") },
    });
    w.create(&w.kinds.jobs.clone(), job);
    w.settle();
    w.pods_reach("Succeeded");
    w.settle();
    let j = w.get(&w.kinds.jobs, "later");
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
