//! The pod `status` the kubelet writes for a pod it runs, worded as a real kubelet words it:
//! phase, the conditions (`PodReadyToStartContainers`, `Initialized`, `Ready`,
//! `ContainersReady`, `PodScheduled`, each with its `lastTransitionTime`), `hostIP(s)`,
//! `podIP(s)`, `startTime`, `initContainerStatuses`, `containerStatuses` and `qosClass`.

use crate::pod::{Container, PodRun, qos_class};
use serde_json::{Value, json};

impl PodRun {
    /// A condition entry, keeping its `lastTransitionTime` while its status holds.
    fn condition(
        &mut self,
        ty: &'static str,
        status: bool,
        reason: Option<&str>,
        message: Option<String>,
        now: &str,
    ) -> Value {
        let mem = self
            .conds
            .entry(ty)
            .or_insert_with(|| (status, now.to_string()));
        if mem.0 != status {
            *mem = (status, now.to_string());
        }
        let mut c = json!({
            "type": ty,
            "status": if status { "True" } else { "False" },
            "lastProbeTime": null,
            "lastTransitionTime": mem.1,
        });
        if let Some(r) = reason {
            c["reason"] = json!(r);
        }
        if let Some(m) = message {
            c["message"] = json!(m);
        }
        c
    }

    /// The pod's `status`, as a kubelet writes it.
    pub fn status(&mut self, now: &str, host_ip: &str) -> Value {
        let phase = self.phase();
        let completed = matches!(phase, "Succeeded" | "Failed");
        let initialized = self.initialized();
        let names = |pred: &dyn Fn(&Container) -> bool| -> Vec<String> {
            self.containers
                .iter()
                .filter(|c| pred(c))
                .map(|c| c.name.clone())
                .collect()
        };
        let incomplete = names(&|c| c.init && !c.init_done());
        let unready = names(&|c| (!c.init || c.sidecar) && !c.ready());
        let has_main = self.containers.iter().any(|c| !c.init);
        let all_ready = unready.is_empty() && has_main;
        let (init_reason, init_message) = if completed && initialized {
            (Some("PodCompleted"), None)
        } else if initialized {
            (None, None)
        } else {
            (
                Some("ContainersNotInitialized"),
                Some(format!(
                    "containers with incomplete status: [{}]",
                    incomplete.join(" ")
                )),
            )
        };
        let (ready_reason, ready_message) = if all_ready {
            (None, None)
        } else if completed {
            (Some("PodCompleted"), None)
        } else {
            (
                Some("ContainersNotReady"),
                Some(format!(
                    "containers with unready status: [{}]",
                    unready.join(" ")
                )),
            )
        };
        let sandbox = self.ip.is_some() && !self.terminal && !completed;
        let conditions = vec![
            self.condition("PodReadyToStartContainers", sandbox, None, None, now),
            self.condition("Initialized", initialized, init_reason, init_message, now),
            self.condition("Ready", all_ready, ready_reason, ready_message.clone(), now),
            self.condition(
                "ContainersReady",
                all_ready,
                ready_reason,
                ready_message,
                now,
            ),
            self.condition("PodScheduled", true, None, None, now),
        ];
        let mut status = json!({
            "phase": phase,
            "conditions": conditions,
            "hostIP": host_ip,
            "hostIPs": [ { "ip": host_ip } ],
        });
        if let Some(ip) = &self.ip {
            status["podIP"] = json!(ip);
            status["podIPs"] = json!([{ "ip": ip }]);
        }
        status["startTime"] = json!(self.start_time);
        let initializing = !initialized;
        let inits: Vec<Value> = self
            .containers
            .iter()
            .filter(|c| c.init)
            .map(|c| c.status(initializing))
            .collect();
        if !inits.is_empty() {
            status["initContainerStatuses"] = json!(inits);
        }
        status["containerStatuses"] = json!(
            self.containers
                .iter()
                .filter(|c| !c.init)
                .map(|c| c.status(initializing))
                .collect::<Vec<_>>()
        );
        status["qosClass"] = json!(qos_class(&self.pod));
        if let Some(message) = &self.evicted {
            status["reason"] = json!("Evicted");
            status["message"] = json!(message);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use crate::pod::tests::running;
    use crate::pod::tests::term;
    use crate::pod::{CState, PodRun, pod_ip};
    use serde_json::{Value, json};
    use std::sync::Arc;
    use std::time::SystemTime;
    use tokio_util::sync::CancellationToken;

    fn cond(s: &Value, ty: &str) -> Value {
        s["conditions"]
            .as_array()
            .and_then(|l| l.iter().find(|c| c["type"] == ty).cloned())
            .unwrap_or(Value::Null)
    }

    #[test]
    fn conditions_keep_their_transition_time_until_they_change() {
        let pod = json!({
            "metadata": { "name": "p", "namespace": "n", "uid": "u" },
            "spec": { "containers": [ { "name": "c", "image": "busybox" } ] },
        });
        let mut run = PodRun::new(
            &Arc::new(pod),
            SystemTime::UNIX_EPOCH,
            CancellationToken::new(),
            "t0",
        );
        let s0 = run.status("t0", crate::pod::HOST_IP);
        assert_eq!(s0["phase"], "Pending");
        assert_eq!(cond(&s0, "Ready")["status"], "False");
        assert_eq!(cond(&s0, "Ready")["reason"], "ContainersNotReady");
        assert_eq!(
            cond(&s0, "Ready")["message"],
            "containers with unready status: [c]"
        );
        assert!(s0.get("podIP").is_none());
        run.ip = Some(pod_ip(0));
        if let Some(c) = run.containers.first_mut() {
            c.state = running();
        }
        let s1 = run.status("t1", crate::pod::HOST_IP);
        assert_eq!(s1["phase"], "Running");
        assert_eq!(s1["podIP"], "10.244.0.2");
        assert_eq!(cond(&s1, "Ready")["status"], "True");
        assert_eq!(cond(&s1, "Ready")["lastTransitionTime"], "t1");
        assert_eq!(cond(&s1, "PodScheduled")["lastTransitionTime"], "t0");
        assert_eq!(cond(&s1, "PodReadyToStartContainers")["status"], "True");
        let s2 = run.status("t2", crate::pod::HOST_IP);
        assert_eq!(s1, s2);
    }

    #[test]
    fn an_initializing_pod_names_its_incomplete_init_containers() {
        let pod = json!({
            "metadata": { "name": "p", "namespace": "n", "uid": "u" },
            "spec": {
                "initContainers": [ { "name": "a", "image": "busybox" }, { "name": "b", "image": "busybox" } ],
                "containers": [ { "name": "c", "image": "busybox" } ],
            },
        });
        let mut run = PodRun::new(
            &Arc::new(pod),
            SystemTime::UNIX_EPOCH,
            CancellationToken::new(),
            "t0",
        );
        run.ip = Some(pod_ip(0));
        if let Some(a) = run.containers.first_mut() {
            a.state = CState::Terminated(term(0));
        }
        if let Some(b) = run.containers.get_mut(1) {
            b.state = running();
        }
        let s = run.status("t1", crate::pod::HOST_IP);
        assert_eq!(s["phase"], "Pending");
        assert_eq!(cond(&s, "Initialized")["status"], "False");
        assert_eq!(
            cond(&s, "Initialized")["reason"],
            "ContainersNotInitialized"
        );
        assert_eq!(
            cond(&s, "Initialized")["message"],
            "containers with incomplete status: [b]"
        );
        assert_eq!(
            s["containerStatuses"][0]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        assert_eq!(s["initContainerStatuses"][0]["ready"], true);
        assert_eq!(
            s["initContainerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed"
        );
        assert_eq!(
            s["initContainerStatuses"][1]["state"]["running"]["startedAt"],
            "t0"
        );
    }
}
