//! `--pods-ignore-sigterm`: the embedded fakekube's pods run a main process that ignores
//! SIGTERM, as when a mutating admission webhook or a policy engine on a cluster rewrites the
//! command the adapter asked for. Every stop then waits out the pod's grace period (skipped on
//! the fake's clock, which jumps to the next deadline when the store is quiet), and a start
//! after a stop must wait for the old pod. Each pod is watched until it goes, to count those
//! that outlived their grace period (killed by the kubelet at its end).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fakekube::{FakeKube, Mutator};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::{mpsc, watch};

/// A loop that does not trap SIGTERM: as pid 1 it ignores the signal, and only SIGKILL at the
/// end of the grace period ends it.
const IGNORES_SIGTERM: [&str; 3] = ["/bin/sh", "-c", "while true; do sleep 3600 & wait; done"];

/// How long the store must be quiet before the fake's clock jumps to the next deadline: far
/// under the 30 s grace period, long enough that a trial's own steps do not see time jump.
pub(crate) const QUIET: Duration = Duration::from_millis(200);

/// The Pod mutator: replaces each container's command with [`IGNORES_SIGTERM`] and hands the
/// name of each pod created to the watch.
#[derive(Debug)]
pub(crate) struct IgnoreSigterm {
    created: mpsc::UnboundedSender<String>,
}

impl Mutator for IgnoreSigterm {
    fn name(&self) -> &str {
        "ignore-sigterm.conformance.invalid"
    }

    fn mutate(&self, object: &mut Value, old: Option<&Value>) -> Result<(), String> {
        // A pod without containers is left for validation to refuse.
        let Some(containers) = object
            .pointer_mut("/spec/containers")
            .and_then(Value::as_array_mut)
        else {
            return Ok(());
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            c.insert("command".to_owned(), json!(IGNORES_SIGTERM));
        }
        if old.is_none()
            && let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str)
        {
            // The receiver lives as long as the run; a send after it is a pod nobody counts.
            let _ = self.created.send(name.to_owned());
        }
        Ok(())
    }
}

/// What the watch saw: pods created, pods gone, and those that outlived their grace period.
#[derive(Debug, Clone)]
pub(crate) struct Watched {
    created: Arc<AtomicUsize>,
    killed: Arc<AtomicUsize>,
    gone: watch::Receiver<usize>,
}

impl Watched {
    /// Waits (at most `timeout`) until every pod created has gone, then prints the counts.
    pub(crate) async fn report(mut self, timeout: Duration) -> (usize, usize) {
        let created = self.created.load(Ordering::SeqCst);
        let _ = tokio::time::timeout(timeout, self.gone.wait_for(|n| *n >= created)).await;
        let killed = self.killed.load(Ordering::SeqCst);
        println!(
            "pods ignoring SIGTERM: {created} created, {killed} deleted and killed only when their grace period ran out"
        );
        (created, killed)
    }
}

/// Registers the mutator on `kube` (before any pod is made); [`watch`] then follows the pods.
pub(crate) fn register(kube: &FakeKube) -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    kube.register_mutator("", "Pod", Arc::new(IgnoreSigterm { created: tx }));
    rx
}

/// Follows each pod in `namespace` named on `created` until it goes, counting those that
/// outlived their grace period once deleted (on the cluster's clock): pods whose main process
/// ignored SIGTERM until the kubelet's SIGKILL. Runs on the current runtime.
pub(crate) fn watch(
    kube: Arc<FakeKube>,
    namespace: &'static str,
    mut created: mpsc::UnboundedReceiver<String>,
) -> Watched {
    let (gone_tx, gone) = watch::channel(0usize);
    let gone_tx = Arc::new(gone_tx);
    let watched = Watched {
        created: Arc::new(AtomicUsize::new(0)),
        killed: Arc::new(AtomicUsize::new(0)),
        gone,
    };
    let (count, killed) = (watched.created.clone(), watched.killed.clone());
    tokio::spawn(async move {
        while let Some(name) = created.recv().await {
            count.fetch_add(1, Ordering::SeqCst);
            let (kube, killed, gone_tx) = (kube.clone(), killed.clone(), gone_tx.clone());
            tokio::spawn(async move {
                if held_until_grace_deadline(&kube, namespace, &name).await {
                    killed.fetch_add(1, Ordering::SeqCst);
                }
                gone_tx.send_modify(|n| *n += 1);
            });
        }
    });
    watched
}

/// Longer than any run: a watch ends when its pod goes.
const FOREVER: Duration = Duration::from_secs(24 * 3600);

/// Waits until pod `name` is deleted and gone; whether it went no earlier than its
/// `deletionTimestamp` (the time its grace period runs out; whole seconds, hence a second's
/// slack) on the cluster's clock. A pod whose main process ends on SIGTERM goes within
/// milliseconds of its deletion, its grace period ahead.
async fn held_until_grace_deadline(kube: &FakeKube, namespace: &str, name: &str) -> bool {
    let deleted = kube
        .wait_for("pods", namespace, name, FOREVER, |p| {
            p.is_none_or(|p| p.pointer("/metadata/deletionTimestamp").is_some())
        })
        .await;
    let Ok(Some(pod)) = deleted else {
        return false;
    };
    let Some(deadline) = pod
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
    else {
        return false;
    };
    if kube
        .wait_for("pods", namespace, name, FOREVER, |p| p.is_none())
        .await
        .is_err()
    {
        return false;
    }
    OffsetDateTime::from(kube.now()) + Duration::from_secs(1) >= deadline
}
