//! Stopping containers as the kubelet does: the `Killing` Event, SIGTERM to the main process
//! (through the container's process table: a process that traps it ends as it likes, pid 1
//! without a trap ignores it), SIGKILL when the grace period runs out on the cluster's clock
//! (at least 2 s, the kubelet's minimum). A pod being deleted is stopped this way, all its
//! containers at once; once none runs, its last status is written (a terminal phase) and the
//! kubelet deletes it from the API with grace period 0.

use crate::events::EventType;
use crate::kubelet::Kubelet;
use crate::pod::PodRun;
use crate::run::Pass;
use fakekube_runtime::Signal;
use std::time::Duration;

/// The shortest grace period the kubelet gives a container (`minimumGracePeriodInSeconds`).
const MINIMUM_GRACE: i64 = 2;

impl Kubelet {
    /// Starts or hurries the stop of a pod being deleted with `grace` seconds.
    pub(super) fn terminate(&self, pass: &mut Pass<'_>, run: &mut PodRun, grace: i64) {
        let now = self.api.clock().now();
        let deadline = now + Duration::from_secs(grace.max(MINIMUM_GRACE).unsigned_abs());
        if run.deleting {
            for c in &mut run.containers {
                if let Some(r) = c.running_mut() {
                    r.kill_at = Some(r.kill_at.map_or(deadline, |at| at.min(deadline)));
                }
            }
        } else {
            run.deleting = true;
            run.start_at = None;
            for idx in 0..run.containers.len() {
                if run.containers.get(idx).is_some_and(|c| c.is_running()) {
                    let name = run
                        .containers
                        .get(idx)
                        .map(|c| c.name.clone())
                        .unwrap_or_default();
                    self.signal_stop(run, idx, deadline, &format!("Stopping container {name}"));
                }
            }
        }
        pass.dirty.insert(run.uid.clone());
        self.check_stopped(pass, run);
    }

    /// Stops container `idx` for a restart (a failed liveness or startup probe), giving it
    /// `grace` seconds.
    pub(super) fn stop_container(&self, run: &mut PodRun, idx: usize, grace: i64, message: &str) {
        let now = self.api.clock().now();
        let deadline = now + Duration::from_secs(grace.max(MINIMUM_GRACE).unsigned_abs());
        self.signal_stop(run, idx, deadline, message);
    }

    /// The `Killing` Event and SIGTERM to container `idx`, SIGKILL due at `deadline`.
    fn signal_stop(
        &self,
        run: &mut PodRun,
        idx: usize,
        deadline: std::time::SystemTime,
        message: &str,
    ) {
        let Some(c) = run.containers.get(idx) else {
            return;
        };
        let (name, init) = (c.name.clone(), c.init);
        self.container_event(run, &name, init, EventType::Normal, "Killing", message);
        let Some(r) = run.containers.get_mut(idx).and_then(|c| c.running_mut()) else {
            return;
        };
        if r.kill_at.is_some() {
            r.kill_at = r.kill_at.map(|at| at.min(deadline));
            return;
        }
        r.kill_at = Some(deadline);
        for p in &mut r.probes {
            p.stop();
        }
        if let Err(e) = r.processes.signal_main(Signal::Term) {
            tracing::debug!(container = %name, error = %e, "SIGTERM to a container");
        }
    }

    /// A pod being deleted whose containers have all stopped: it ends (a terminal phase) and is
    /// deleted from the API once that status is written.
    pub(super) fn check_stopped(&self, pass: &mut Pass<'_>, run: &mut PodRun) {
        if !run.deleting || run.any_running() || run.removed {
            return;
        }
        if !run.terminal {
            run.terminal = true;
            run.cancel.cancel();
        }
        pass.dirty.insert(run.uid.clone());
        pass.remove.insert(run.uid.clone());
    }
}
