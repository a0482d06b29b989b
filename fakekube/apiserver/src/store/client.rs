//! The store as a [`Client`]: the in-process API of the embedded fake's kubelet. It lives with
//! the store (the API server's side), so that the kubelet has no path to the store but this
//! interface. Its writes are the store's own writes (admission, resourceVersions, the change
//! log), its change feed is the store's change log.

use super::{DeleteOptions, EventType, Store, WriteOptions};
use crate::client::{Change, ChangeType, Client, Delete, Gone, Kind, Part, PodTokenRequest};
use crate::clock::Clock;
use crate::patch::PatchKind;
use crate::registry::ResourceType;
use crate::status::ApiError;
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};
use tokio::sync::watch;

/// The resource type of each built-in [`Kind`], found in the registry at first use (the core
/// kinds never change). Custom kinds are looked up at each call: their CRDs come and go.
#[derive(Debug, Default)]
pub(super) struct Kinds([OnceLock<Option<Arc<ResourceType>>>; Kind::ALL.len()]);

impl Store {
    /// The resource type `kind` is stored as, if it is served now.
    fn served_kind(&self, kind: Kind) -> Option<Arc<ResourceType>> {
        let find = || {
            self.registry
                .find(kind.group(), kind.version(), kind.resource())
                .filter(|rt| rt.served)
        };
        if kind.is_custom() {
            return find();
        }
        let index = Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        self.client_kinds.0[index].get_or_init(find).clone()
    }

    /// The resource type `kind` is stored as, or the API server's 404 when it is not served.
    fn client_kind(&self, kind: Kind) -> Result<Arc<ResourceType>, ApiError> {
        self.served_kind(kind).ok_or_else(ApiError::path_not_found)
    }

    /// The [`Kind`] of a stored type, if the client serves it.
    fn kind_of(&self, rt: &ResourceType) -> Option<Kind> {
        let kind = Kind::of(&rt.group, &rt.plural)?;
        self.served_kind(kind)
            .filter(|served| served.same_resource(rt))
            .map(|_| kind)
    }
}

/// Issues the bound tokens a kubelet asks for (the API server's `serviceaccounts/token`).
pub trait TokenIssuer: Send + Sync + std::fmt::Debug {
    /// A token for `request`, or the API server's error (404 for a missing account or pod).
    fn pod_token(&self, request: &PodTokenRequest<'_>) -> Result<String, ApiError>;
}

impl Client for Store {
    fn pod_token(&self, request: &PodTokenRequest<'_>) -> Result<String, ApiError> {
        let issuer = self
            .token_issuer
            .get()
            .and_then(std::sync::Weak::upgrade)
            .ok_or_else(ApiError::path_not_found)?;
        issuer.pod_token(request)
    }

    fn served(&self, kind: Kind) -> bool {
        self.served_kind(kind).is_some()
    }

    fn get(&self, kind: Kind, ns: &str, name: &str) -> Option<Arc<Value>> {
        let rt = self.served_kind(kind)?;
        self.get_opt(&rt, ns, name)
    }

    fn list(&self, kind: Kind, ns: Option<&str>) -> Vec<Arc<Value>> {
        match self.served_kind(kind) {
            Some(rt) => self.list_all(&rt, ns),
            None => Vec::new(),
        }
    }

    fn create(&self, kind: Kind, ns: &str, obj: Value) -> Result<Arc<Value>, ApiError> {
        let rt = self.client_kind(kind)?;
        Store::create(self, &rt, ns, obj, WriteOptions::default()).map(|(o, _)| o)
    }

    fn update(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        obj: Value,
        part: Part,
    ) -> Result<Arc<Value>, ApiError> {
        let rt = self.client_kind(kind)?;
        Store::update(self, &rt, ns, name, obj, part, WriteOptions::default()).map(|(o, _)| o)
    }

    fn merge_patch(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        patch: &Value,
        part: Part,
    ) -> Result<Arc<Value>, ApiError> {
        let rt = self.client_kind(kind)?;
        Store::patch(
            self,
            &rt,
            ns,
            name,
            PatchKind::Merge,
            patch,
            part,
            WriteOptions::default(),
        )
        .map(|(o, _)| o)
    }

    fn bind(&self, ns: &str, name: &str, node: &str) -> Result<(), ApiError> {
        let rt = self.client_kind(Kind::Pod)?;
        let body = json!({ "spec": { "nodeName": node } });
        let opts = WriteOptions {
            binding: true,
            ..WriteOptions::default()
        };
        Store::patch(
            self,
            &rt,
            ns,
            name,
            PatchKind::Merge,
            &body,
            Part::Main,
            opts,
        )
        .map(|_| ())
    }

    fn delete(&self, kind: Kind, ns: &str, name: &str, opts: &Delete) -> Result<(), ApiError> {
        let rt = self.client_kind(kind)?;
        let opts = DeleteOptions {
            grace_period: opts.grace_period,
            uid: opts.uid.clone(),
            propagation: opts.propagation,
            ..DeleteOptions::default()
        };
        Store::delete(self, &rt, ns, name, &opts).map(|_| ())
    }

    fn position(&self) -> u64 {
        self.resource_version()
    }

    fn changes_since(&self, position: u64) -> Result<(Vec<Change>, u64), Gone> {
        let events = self.events_since(position).map_err(|_| Gone)?;
        let reached = events.last().map_or(position, |e| e.rv.max(position));
        let changes = events
            .into_iter()
            .filter_map(|e| {
                let kind = self.kind_of(&e.rt)?;
                Some(Change {
                    position: e.rv,
                    kind,
                    change: match e.kind {
                        EventType::Added => ChangeType::Added,
                        EventType::Modified => ChangeType::Modified,
                        EventType::Deleted => ChangeType::Deleted,
                    },
                    object: e.object,
                    prev: e.prev,
                })
            })
            .collect();
        Ok((changes, reached))
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        Store::subscribe(self)
    }

    fn clock(&self) -> &Clock {
        Store::clock(self)
    }
}
