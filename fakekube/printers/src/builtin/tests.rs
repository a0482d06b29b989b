use super::*;
use time::format_description::well_known::Rfc3339;

fn now() -> OffsetDateTime {
    OffsetDateTime::parse("2026-03-01T12:00:00Z", &Rfc3339).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

fn cells(group: &str, kind: &str, obj: &Value) -> Vec<Value> {
    let r = row(group, kind, obj, now());
    assert_eq!(
        r.cells.len(),
        columns(group, kind).len(),
        "one cell per column for {kind}"
    );
    r.cells
}

fn running_pod() -> Value {
    json!({
        "metadata": { "name": "web", "creationTimestamp": "2026-03-01T11:55:00Z" },
        "spec": { "nodeName": "fakekube-node", "containers": [{ "name": "a" }, { "name": "b" }] },
        "status": {
            "phase": "Running",
            "podIPs": [{ "ip": "10.244.0.5" }],
            "conditions": [{ "type": "Ready", "status": "False" }],
            "containerStatuses": [
                { "name": "a", "ready": true, "restartCount": 0, "state": { "running": {} } },
                { "name": "b", "ready": false, "restartCount": 3,
                  "state": { "waiting": { "reason": "CrashLoopBackOff" } },
                  "lastState": { "terminated": { "exitCode": 1, "finishedAt": "2026-03-01T11:59:00Z" } } },
            ],
        },
    })
}

#[test]
fn a_pod_shows_ready_containers_the_waiting_reason_and_recent_restarts() {
    let c = cells("", "Pod", &running_pod());
    assert_eq!(
        c,
        vec![
            json!("web"),
            json!("1/2"),
            json!("CrashLoopBackOff"),
            json!("3 (60s ago)"),
            json!("5m"),
            json!("10.244.0.5"),
            json!("fakekube-node"),
            json!("<none>"),
            json!("<none>"),
        ]
    );
}

#[test]
fn a_finished_pod_is_completed_and_a_deleted_one_terminating() {
    let done = json!({
        "metadata": { "name": "job-x", "creationTimestamp": "2026-03-01T11:00:00Z" },
        "spec": { "containers": [{ "name": "a" }] },
        "status": {
            "phase": "Succeeded",
            "containerStatuses": [{ "name": "a", "ready": false, "restartCount": 0,
                "state": { "terminated": { "exitCode": 0, "reason": "Completed" } } }],
        },
    });
    let r = row("", "Pod", &done, now());
    assert_eq!(r.cells[1], json!("0/1"));
    assert_eq!(r.cells[2], json!("Completed"));
    assert_eq!(r.cells[5], json!("<none>"));
    assert_eq!(
        r.conditions.as_ref().map(|c| c[0]["reason"].clone()),
        Some(json!("Succeeded"))
    );
    let mut deleting = running_pod();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-03-01T11:59:59Z");
    assert_eq!(cells("", "Pod", &deleting)[2], json!("Terminating"));
    let pending = json!({ "metadata": { "name": "p" }, "spec": { "containers": [{ "name": "a" }] },
        "status": { "phase": "Pending" } });
    assert_eq!(
        cells("", "Pod", &pending)[..5].to_vec(),
        vec![
            json!("p"),
            json!("0/1"),
            json!("Pending"),
            json!("0"),
            json!("<unknown>")
        ]
    );
}

#[test]
fn an_init_container_that_runs_shows_its_progress() {
    let pod = json!({
        "metadata": { "name": "p" },
        "spec": { "initContainers": [{ "name": "i1" }, { "name": "i2" }], "containers": [{ "name": "a" }] },
        "status": {
            "phase": "Pending",
            "initContainerStatuses": [
                { "name": "i1", "state": { "terminated": { "exitCode": 0 } } },
                { "name": "i2", "state": { "running": {} } },
            ],
        },
    });
    assert_eq!(cells("", "Pod", &pod)[2], json!("Init:1/2"));
}

#[test]
fn a_service_shows_its_type_addresses_and_ports() {
    let svc = json!({
        "metadata": { "name": "web", "creationTimestamp": "2026-03-01T11:59:30Z" },
        "spec": { "type": "NodePort", "clusterIPs": ["10.96.0.10"],
            "ports": [{ "port": 80, "protocol": "TCP", "nodePort": 30080 }, { "port": 53, "protocol": "UDP" }],
            "selector": { "tier": "front", "app": "web" } },
    });
    assert_eq!(
        cells("", "Service", &svc),
        vec![
            json!("web"),
            json!("NodePort"),
            json!("10.96.0.10"),
            json!("<none>"),
            json!("80:30080/TCP,53/UDP"),
            json!("30s"),
            json!("app=web,tier=front"),
        ]
    );
    let headless = json!({ "metadata": { "name": "h" }, "spec": { "type": "ClusterIP", "clusterIPs": ["None"] } });
    assert_eq!(cells("", "Service", &headless)[4], json!("<none>"));
}

#[test]
fn a_deployment_shows_ready_over_desired_and_its_selector() {
    let d = json!({
        "metadata": { "name": "web", "creationTimestamp": "2026-03-01T10:00:00Z" },
        "spec": { "replicas": 2,
            "selector": { "matchLabels": { "app": "web" },
                "matchExpressions": [{ "key": "tier", "operator": "In", "values": ["b", "a"] }] },
            "template": { "spec": { "containers": [{ "name": "nginx", "image": "nginx:1.25" }] } } },
        "status": { "readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1 },
    });
    assert_eq!(
        cells("apps", "Deployment", &d),
        vec![
            json!("web"),
            json!("1/2"),
            json!(2),
            json!(1),
            json!("120m"),
            json!("nginx"),
            json!("nginx:1.25"),
            json!("app=web,tier in (a,b)"),
        ]
    );
}

#[test]
fn a_job_shows_its_status_completions_and_duration() {
    let j = json!({
        "metadata": { "name": "pi" },
        "spec": { "completions": 1, "template": { "spec": { "containers": [{ "name": "pi", "image": "perl" }] } } },
        "status": { "succeeded": 1, "startTime": "2026-03-01T11:00:00Z", "completionTime": "2026-03-01T11:00:07Z",
            "conditions": [{ "type": "Complete", "status": "True" }] },
    });
    let c = cells("batch", "Job", &j);
    assert_eq!(
        c[1..4].to_vec(),
        vec![json!("Complete"), json!("1/1"), json!("7s")]
    );
}

#[test]
fn a_node_shows_readiness_roles_and_addresses() {
    let n = json!({
        "metadata": { "name": "fakekube-node", "labels": { "node-role.kubernetes.io/control-plane": "" } },
        "spec": { "unschedulable": true },
        "status": { "conditions": [{ "type": "Ready", "status": "True" }],
            "addresses": [{ "type": "InternalIP", "address": "172.18.0.2" }],
            "nodeInfo": { "kubeletVersion": "v1.33.1", "osImage": "fakekube" } },
    });
    let c = cells("", "Node", &n);
    assert_eq!(c[1], json!("Ready,SchedulingDisabled"));
    assert_eq!(c[2], json!("control-plane"));
    assert_eq!(c[4], json!("v1.33.1"));
    assert_eq!(c[5], json!("172.18.0.2"));
    assert_eq!(c[6], json!("<none>"));
    assert_eq!(c[8], json!("<unknown>"));
}

#[test]
fn events_of_both_api_groups_show_the_object_and_source() {
    let core = json!({
        "metadata": { "name": "web.1" },
        "involvedObject": { "kind": "Pod", "name": "web" },
        "type": "Normal", "reason": "Started", "message": " Started container a ",
        "source": { "component": "kubelet", "host": "fakekube-node" },
        "firstTimestamp": "2026-03-01T11:59:00Z", "lastTimestamp": "2026-03-01T11:59:50Z", "count": 2,
    });
    let c = cells("", "Event", &core);
    assert_eq!(c[0], json!("10s"));
    assert_eq!(c[3], json!("pod/web"));
    assert_eq!(c[5], json!("kubelet, fakekube-node"));
    assert_eq!(c[6], json!("Started container a"));
    assert_eq!(c[8], json!(2));
    let new = json!({
        "metadata": { "name": "web.2" },
        "regarding": { "kind": "Pod", "name": "web" },
        "type": "Normal", "reason": "Pulled", "note": "pulled",
        "reportingController": "kubelet", "eventTime": "2026-03-01T11:59:58.000000Z",
    });
    let c = cells("events.k8s.io", "Event", &new);
    assert_eq!(c[0], json!("2s"));
    assert_eq!(c[5], json!("kubelet"));
    assert_eq!(c[8], json!(1));
}

#[test]
fn kinds_without_printers_show_name_and_creation_time() {
    let role =
        json!({ "metadata": { "name": "admin", "creationTimestamp": "2026-03-01T00:00:00Z" } });
    assert_eq!(
        cells("rbac.authorization.k8s.io", "ClusterRole", &role),
        vec![json!("admin"), json!("2026-03-01T00:00:00Z")]
    );
}

#[test]
fn claims_and_bindings_show_their_references() {
    let pvc = json!({
        "metadata": { "name": "data" },
        "spec": { "volumeName": "pvc-1", "storageClassName": "standard" },
        "status": { "phase": "Bound", "capacity": { "storage": "1Gi" }, "accessModes": ["ReadWriteMany", "ReadWriteOnce"] },
    });
    let c = cells("", "PersistentVolumeClaim", &pvc);
    assert_eq!(
        c[1..7].to_vec(),
        vec![
            json!("Bound"),
            json!("pvc-1"),
            json!("1Gi"),
            json!("RWO,RWX"),
            json!("standard"),
            json!("<unset>")
        ]
    );
    let rb = json!({
        "metadata": { "name": "b" }, "roleRef": { "kind": "ClusterRole", "name": "view" },
        "subjects": [{ "kind": "User", "name": "u" }, { "kind": "ServiceAccount", "namespace": "ns", "name": "sa" }],
    });
    let c = cells("rbac.authorization.k8s.io", "RoleBinding", &rb);
    assert_eq!(c[1], json!("ClusterRole/view"));
    assert_eq!(c[3], json!("u"));
    assert_eq!(c[5], json!("ns/sa"));
}
