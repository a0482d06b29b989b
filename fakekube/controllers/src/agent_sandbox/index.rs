//! What the agent-sandbox controllers look up without scanning a namespace, kept from the
//! change log with the shared indexes of [`crate::index`]: a Sandbox's Pods, a pool's members
//! (by label and by controller) and the claims still waiting for a Sandbox.

use super::{
    EXTENSIONS_GROUP, WARM_POOL_LABEL, controller_of, owner_group, owner_kind, owner_name, str_at,
};
use crate::client::{Change, ChangeType, Client, Kind};
use crate::index::{Grouped, Labeled, ObjKey, Owned, key_of};
use serde_json::Value;

/// The controllers' indexes.
#[derive(Debug)]
pub(crate) struct Index {
    /// Pods by the uid of their controller: a Sandbox's Pods.
    pods: Owned,
    /// Sandboxes by the warm pool label (the pool's name hash): what a pool counts as its
    /// members.
    warm_labeled: Labeled,
    /// Sandboxes controlled by a SandboxWarmPool, by its namespace and name: what a claim may
    /// adopt.
    warm_owned: Grouped<ObjKey>,
    /// Claims not bound to a Sandbox (no `status.sandbox.name`), by namespace.
    unbound_claims: Grouped<String>,
}

impl Default for Index {
    fn default() -> Self {
        Index {
            pods: Owned::default(),
            warm_labeled: Labeled::new(WARM_POOL_LABEL),
            warm_owned: Grouped::default(),
            unbound_claims: Grouped::default(),
        }
    }
}

impl Index {
    /// An index of what the API holds now.
    pub(crate) fn build(api: &dyn Client) -> Self {
        let mut index = Index::default();
        for p in api.list(Kind::Pod, None) {
            index.pods.set(&p, false);
        }
        for sb in api.list(Kind::Sandbox, None) {
            index.set_sandbox(&sb, false);
        }
        for c in api.list(Kind::SandboxClaim, None) {
            index.set_claim(&c, false);
        }
        index
    }

    /// Follows one change.
    pub(crate) fn on_event(&mut self, e: &Change) {
        let gone = e.change == ChangeType::Deleted;
        if e.kind == Kind::Pod {
            self.pods.set(&e.object, gone);
        } else if e.kind == Kind::Sandbox {
            self.set_sandbox(&e.object, gone);
        } else if e.kind == Kind::SandboxClaim {
            self.set_claim(&e.object, gone);
        }
    }

    fn set_sandbox(&mut self, sb: &Value, gone: bool) {
        self.warm_labeled.set(sb, gone);
        let (ns, name) = key_of(sb);
        let pool = (!gone)
            .then(|| controller_of(sb))
            .flatten()
            .filter(|r| owner_group(r) == EXTENSIONS_GROUP && owner_kind(r) == "SandboxWarmPool")
            .map(|r| (ns.clone(), owner_name(r).to_string()));
        self.warm_owned.set((ns, name), pool);
    }

    fn set_claim(&mut self, claim: &Value, gone: bool) {
        let (ns, name) = key_of(claim);
        let bound = str_at(claim, &["status", "sandbox", "name"]).is_some_and(|n| !n.is_empty());
        let group = (!gone && !bound).then(|| ns.clone());
        self.unbound_claims.set((ns, name), group);
    }

    /// The Pods whose controller has uid `owner`.
    pub(crate) fn pods_of<'a>(&'a self, owner: &str) -> impl Iterator<Item = &'a ObjKey> + use<'a> {
        self.pods.of(owner)
    }

    /// The Sandboxes of namespace `ns` labelled as members of the pool whose name hashes to
    /// `hash`.
    pub(crate) fn labeled_members<'a>(
        &'a self,
        ns: &str,
        hash: &str,
    ) -> impl Iterator<Item = &'a ObjKey> + use<'a> {
        self.warm_labeled.of(ns, hash)
    }

    /// The Sandboxes controlled by the pool `ns`/`pool`.
    pub(crate) fn owned_members<'a>(
        &'a self,
        ns: &str,
        pool: &str,
    ) -> impl Iterator<Item = &'a ObjKey> + use<'a> {
        self.warm_owned.of(&(ns.to_string(), pool.to_string()))
    }

    /// The claims of namespace `ns` not bound to a Sandbox.
    pub(crate) fn unbound_claims<'a>(
        &'a self,
        ns: &str,
    ) -> impl Iterator<Item = &'a ObjKey> + use<'a> {
        self.unbound_claims.of(&ns.to_string())
    }
}
