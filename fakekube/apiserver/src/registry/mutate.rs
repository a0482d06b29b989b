//! In-process mutating admission webhooks: a [`Mutator`] registered for a kind rewrites each
//! object of that kind written (created or replaced) before it is admitted, as an API server
//! calls a mutating webhook whose rules match the kind.

use super::Registry;
use serde_json::Value;
use std::sync::Arc;

/// An in-process mutating admission webhook for one kind, registered with
/// [`FakeKube::register_mutator`](crate::FakeKube::register_mutator): fakekube calls it on
/// every create and update of the kind's main resource (not its status), whoever writes (a
/// client, a controller, the kubelet), before the object is defaulted and validated. It stands
/// in for the policy engines and webhooks that rewrite objects on a cluster, so a test can meet
/// objects that are not what their writer sent.
pub trait Mutator: Send + Sync + std::fmt::Debug {
    /// The webhook's name, as a denial names it (`admission webhook "<name>" denied the
    /// request: ...`).
    fn name(&self) -> &str;

    /// Changes `object` in place; `old` is the stored object on an update. An `Err` denies the write: it fails with a 400 Status whose
    /// message names the webhook and carries the reason, and nothing is stored.
    fn mutate(&self, object: &mut Value, old: Option<&Value>) -> Result<(), String>;
}

impl Registry {
    /// Calls `group`'s `kind`'s mutator from now on when an object of it is written.
    /// Registering again replaces the mutator.
    pub fn register_mutator(&self, group: &str, kind: &str, mutator: Arc<dyn Mutator>) {
        self.mutators
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert((group.to_string(), kind.to_string()), mutator);
    }

    /// The mutator of `group`'s `kind`, if one is registered.
    pub(crate) fn mutator(&self, group: &str, kind: &str) -> Option<Arc<dyn Mutator>> {
        self.mutators
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(group.to_string(), kind.to_string()))
            .cloned()
    }
}
