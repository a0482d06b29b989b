//! What a new server's store holds before its first request: the start namespaces, the
//! bootstrap RBAC policy (aggregated), the default StorageClass, the agent-sandbox CRDs and the
//! objects every cluster keeps from its start (the `kubernetes` Service, ComponentStatuses,
//! PriorityClasses, the flow-control configuration, the APIServices).
//!
//! Making them is most of a start's work (the CRDs' schemas are compiled and their objects
//! admitted, each bootstrap object passes admission), and it is the same for every server of
//! one store configuration. So each configuration's start state is made once per process, and
//! every server starts from a copy of it that shares the objects ([`Store::from_snapshot`]):
//! a test suite that starts one server per test pays for it once.
//!
//! What a client could tell: the objects made at start carry the uids and creation times they
//! got in the first server of their configuration that the process started, in every later one
//! too (a real cluster's were made when it started, and they are older than anything a client
//! wrote there, as here). What a server writes after its start is its own.

use crate::{Error, control_plane, fixtures, kube_controllers, registration};
use fakekube_apiserver::cluster_objects;
use fakekube_apiserver::crd;
use fakekube_apiserver::registry::Registry;
use fakekube_apiserver::store::{Snapshot, Store, StoreSettings, WriteOptions};
use fakekube_machinery::clock::{Clock, ClockMode};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The namespaces every server has.
const START_NAMESPACES: [&str; 4] = [
    "default",
    "kube-system",
    "kube-public",
    registration::NODE_LEASE_NAMESPACE,
];

/// What a start state depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    /// The store's settings (the watch history's length is part of the state).
    pub(crate) settings: StoreSettings,
    /// Whether the agent-sandbox CRDs are installed.
    pub(crate) agent_sandbox_crds: bool,
}

/// The start states made so far in this process, one per configuration, newest last.
static MADE: Mutex<Vec<(Config, Arc<Snapshot>)>> = Mutex::new(Vec::new());

/// How many configurations' start states are kept (a process that starts servers of more
/// configurations than this makes the oldest ones again when it needs them).
const KEPT: usize = 8;

/// A new store in its start state for `config`, on `clock`.
pub(crate) fn store(config: &Config, clock: Clock) -> Result<Store, Error> {
    let snapshot = snapshot(config)?;
    Ok(Store::from_snapshot(&snapshot, clock))
}

/// The start state of `config`: the one made earlier in this process, or a new one.
fn snapshot(config: &Config) -> Result<Arc<Snapshot>, Error> {
    // Held while a state is made, so that servers starting at once make it once.
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, snapshot)) = made.iter().find(|(c, _)| c == config) {
        return Ok(snapshot.clone());
    }
    let snapshot = Arc::new(make(config)?);
    if made.len() >= KEPT {
        made.remove(0);
    }
    made.push((config.clone(), snapshot.clone()));
    Ok(snapshot)
}

/// Makes the start state of `config` in a new store.
fn make(config: &Config) -> Result<Snapshot, Error> {
    let store = Store::with_clock(
        config.settings.clone(),
        Arc::new(Registry::new()),
        Clock::new(ClockMode::Real),
    );
    // The CRDs' schemas are most of the work: two threads compile them (the compiled schemas
    // are kept by content for the process) while this one installs the policy.
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        if config.agent_sandbox_crds {
            for _ in 0..SCHEMA_THREADS {
                scope.spawn(|| compile_crd_schemas(&next));
            }
        }
        control_plane::install_bootstrap_policy(&store);
        kube_controllers::aggregate(&store);
        create_namespaces(&store, START_NAMESPACES);
        control_plane::install_default_storage_class(&store);
    });
    if config.agent_sandbox_crds {
        install_agent_sandbox_crds(&store)?;
    }
    cluster_objects::install(&store);
    Ok(store.into_snapshot())
}

/// How many threads compile the agent-sandbox CRDs' schemas at a first start.
const SCHEMA_THREADS: usize = 2;

/// Compiles the version schemas of the agent-sandbox CRDs, one CRD at a time, the next one
/// `next` names, until none is left; what a schema's check finds is the CRD create's to report.
fn compile_crd_schemas(next: &AtomicUsize) {
    let crds = fixtures::agent_sandbox();
    while let Some(fixture) = crds.get(next.fetch_add(1, Ordering::Relaxed)) {
        let versions = fixture
            .crd
            .pointer("/spec/versions")
            .and_then(Value::as_array);
        for version in versions.into_iter().flatten() {
            if let Some(schema) = version.pointer("/schema/openAPIV3Schema") {
                let _ = fakekube_schema::compile(schema);
            }
        }
    }
}

/// Creates the namespaces called `names` (one that exists is kept).
pub(crate) fn create_namespaces<S: AsRef<str>>(store: &Store, names: impl IntoIterator<Item = S>) {
    let Some(namespaces) = store.registry().find("", "v1", "namespaces") else {
        return;
    };
    for name in names {
        let name = name.as_ref();
        let body = serde_json::json!({ "metadata": { "name": name } });
        if let Err(e) = store.create(&namespaces, "", body, WriteOptions::default())
            && e.code != 409
        {
            tracing::warn!(namespace = %name, error = %e.message, "creating a start namespace");
        }
    }
}

/// Creates the agent-sandbox CRDs, as `kubectl apply -f fixtures/crds/` would.
fn install_agent_sandbox_crds(store: &Store) -> Result<(), Error> {
    let Some(crds) = store.registry().find(crd::GROUP, "v1", crd::PLURAL) else {
        return Ok(());
    };
    for fixture in fixtures::agent_sandbox() {
        store
            .create(&crds, "", fixture.crd.clone(), WriteOptions::default())
            .map_err(|e| Error::InstallCrd {
                file: fixture.file.clone(),
                source: e.into(),
            })?;
    }
    Ok(())
}
