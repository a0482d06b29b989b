//! A model test of the store: random sequences of creates, fresh and stale updates, patches,
//! deletes and paged lists, checked against a plain map.

use super::*;
use crate::patch::PatchKind;
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Op {
    Create(u8, u8),
    UpdateFresh(u8, u8),
    UpdateStale(u8, u8),
    Patch(u8, u8),
    Delete(u8),
    List(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let name = 0u8..8;
    prop_oneof![
        (name.clone(), any::<u8>()).prop_map(|(n, v)| Op::Create(n, v)),
        (name.clone(), any::<u8>()).prop_map(|(n, v)| Op::UpdateFresh(n, v)),
        (name.clone(), any::<u8>()).prop_map(|(n, v)| Op::UpdateStale(n, v)),
        (name.clone(), any::<u8>()).prop_map(|(n, v)| Op::Patch(n, v)),
        name.prop_map(Op::Delete),
        (1u8..5).prop_map(Op::List),
    ]
}

fn secrets() -> Arc<ResourceType> {
    core("secrets")
}

/// A built-in core kind.
fn core(plural: &str) -> Arc<ResourceType> {
    Registry::new()
        .find("", "v1", plural)
        .unwrap_or_else(|| panic!("{plural} are served"))
}

fn fresh_store() -> Store {
    store_with_namespace(Arc::default())
}

/// A store serving `registry`'s kinds, with namespace `m`.
pub(super) fn store_with_namespace(registry: Arc<Registry>) -> Store {
    let store = Store::new(StoreSettings::default(), registry);
    let ns = core("namespaces");
    store
        .create(
            &ns,
            "",
            json!({ "metadata": { "name": "m" } }),
            WriteOptions::default(),
        )
        .expect("namespace");
    store
}

fn rv_of(v: &Value) -> u64 {
    meta_str(v, "resourceVersion")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn label_of(v: &Value) -> Option<String> {
    v.get("metadata")?
        .get("labels")?
        .get("v")?
        .as_str()
        .map(str::to_string)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Secrets are kept as trees, Events packed: both behave the same.
    #[test]
    fn store_agrees_with_a_plain_map(
        plural in prop::sample::select(vec!["secrets", "events"]),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let store = fresh_store();
        let rt = &core(plural);
        // name -> (label value, resourceVersion)
        let mut model: BTreeMap<String, (String, u64)> = BTreeMap::new();
        let mut last_rv = store.resource_version();
        for op in ops {
            match op {
                Op::Create(n, v) => {
                    let name = format!("s{n}");
                    let body = json!({ "metadata": { "name": name, "labels": { "v": v.to_string() } } });
                    let r = store.create(rt, "m", body, WriteOptions::default());
                    match model.entry(name) {
                        std::collections::btree_map::Entry::Occupied(_) => {
                            prop_assert_eq!(r.map(|_| ()).map_err(|e| e.reason), Err("AlreadyExists"));
                        }
                        std::collections::btree_map::Entry::Vacant(slot) => {
                            let (obj, _) = r.map_err(|e| TestCaseError::fail(e.message))?;
                            let rv = rv_of(&obj);
                            prop_assert!(rv > last_rv, "create rv {} after {}", rv, last_rv);
                            last_rv = rv;
                            slot.insert((v.to_string(), rv));
                        }
                    }
                }
                Op::UpdateFresh(n, v) | Op::UpdateStale(n, v) => {
                    let stale = matches!(op, Op::UpdateStale(..));
                    let name = format!("s{n}");
                    let rv_sent = match (model.get(&name), stale) {
                        (Some((_, rv)), false) => rv.to_string(),
                        (Some((_, rv)), true) => rv.saturating_sub(1).max(1).to_string(),
                        (None, _) => "1".to_string(),
                    };
                    let body = json!({ "metadata": { "name": name, "resourceVersion": rv_sent, "labels": { "v": v.to_string() } } });
                    let r = store.update(rt, "m", &name, body, Part::Main, WriteOptions::default());
                    match model.get_mut(&name) {
                        None => prop_assert_eq!(r.map(|_| ()).map_err(|e| e.reason), Err("NotFound")),
                        Some(_) if stale => prop_assert_eq!(r.map(|_| ()).map_err(|e| e.reason), Err("Conflict")),
                        Some(entry) => {
                            let (obj, _) = r.map_err(|e| TestCaseError::fail(e.message))?;
                            let rv = rv_of(&obj);
                            if entry.0 == v.to_string() {
                                prop_assert_eq!(rv, entry.1, "a no-op update keeps the resourceVersion");
                            } else {
                                prop_assert!(rv > last_rv);
                                last_rv = rv;
                            }
                            *entry = (v.to_string(), rv);
                        }
                    }
                }
                Op::Patch(n, v) => {
                    let name = format!("s{n}");
                    let patch = json!({ "metadata": { "labels": { "v": v.to_string() } } });
                    let r = store.patch(rt, "m", &name, PatchKind::Merge, &patch, Part::Main, WriteOptions::default());
                    match model.get_mut(&name) {
                        None => prop_assert_eq!(r.map(|_| ()).map_err(|e| e.reason), Err("NotFound")),
                        Some(entry) => {
                            let (obj, _) = r.map_err(|e| TestCaseError::fail(e.message))?;
                            let rv = rv_of(&obj);
                            prop_assert!(rv >= entry.1);
                            if rv != entry.1 {
                                prop_assert!(rv > last_rv);
                                last_rv = rv;
                            }
                            *entry = (v.to_string(), rv);
                        }
                    }
                }
                Op::Delete(n) => {
                    let name = format!("s{n}");
                    let r = store.delete(rt, "m", &name, &DeleteOptions::default());
                    if model.remove(&name).is_some() {
                        prop_assert!(matches!(r, Ok(Deleted::Gone(_))));
                        last_rv = store.resource_version();
                    } else {
                        prop_assert_eq!(r.map(|_| ()).map_err(|e| e.reason), Err("NotFound"));
                    }
                }
                Op::List(limit) => {
                    let mut seen = Vec::new();
                    let mut token = None;
                    loop {
                        let q = ListQuery { limit: usize::from(limit), continue_token: token.take(), ..Default::default() };
                        let page = store.list(rt, Some("m"), &q).map_err(|e| TestCaseError::fail(e.message))?.to_value();
                        let items = page["items"].as_array().cloned().unwrap_or_default();
                        prop_assert!(items.len() <= usize::from(limit));
                        for it in &items {
                            let name = meta_str(it, "name").unwrap_or("").to_string();
                            let (label, rv) = model.get(&name).cloned().unwrap_or_default();
                            prop_assert_eq!(label_of(it), Some(label));
                            prop_assert_eq!(rv_of(it), rv);
                            seen.push(name);
                        }
                        match page["metadata"]["continue"].as_str() {
                            Some(t) => token = Some(t.to_string()),
                            None => break,
                        }
                    }
                    let want: Vec<String> = model.keys().cloned().collect();
                    prop_assert_eq!(seen, want, "paging returns every object exactly once, in order");
                }
            }
        }
    }
}

#[test]
fn a_continue_token_after_compaction_is_expired() {
    let store = fresh_store();
    let rt = &secrets();
    for i in 0..3 {
        store
            .create(
                rt,
                "m",
                json!({ "metadata": { "name": format!("s{i}") } }),
                WriteOptions::default(),
            )
            .expect("create");
    }
    let page = store
        .list(
            rt,
            Some("m"),
            &ListQuery {
                limit: 1,
                ..Default::default()
            },
        )
        .expect("list")
        .to_value();
    assert_eq!(page["metadata"]["remainingItemCount"], 2);
    let token = page["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_string();
    store.compact();
    let err = store
        .list(
            rt,
            Some("m"),
            &ListQuery {
                limit: 1,
                continue_token: Some(token),
                ..Default::default()
            },
        )
        .expect_err("expired");
    assert_eq!((err.code.as_u16(), err.reason), (410, "Expired"));
}

#[test]
fn a_garbled_continue_token_is_a_bad_request() {
    let store = fresh_store();
    let q = ListQuery {
        limit: 1,
        continue_token: Some("%%%".into()),
        ..Default::default()
    };
    assert_eq!(
        store
            .list(&secrets(), Some("m"), &q)
            .expect_err("bad")
            .reason,
        "BadRequest"
    );
}

#[test]
fn a_watch_position_older_than_the_log_is_expired() {
    let store = Store::new(
        StoreSettings {
            event_log_capacity: 2,
            ..Default::default()
        },
        Arc::default(),
    );
    let ns = core("namespaces");
    for i in 0..5 {
        store
            .create(
                &ns,
                "",
                json!({ "metadata": { "name": format!("n{i}") } }),
                WriteOptions::default(),
            )
            .expect("create");
    }
    assert_eq!(
        store.events_since(1).expect_err("too old").code.as_u16(),
        410
    );
    assert!(
        store
            .events_since(store.resource_version())
            .expect("recent")
            .is_empty()
    );
}

fn sandbox_owner_chain(store: &Store) -> (String, String) {
    let rt = &secrets();
    let (owner, _) = store
        .create(
            rt,
            "m",
            json!({ "metadata": { "name": "owner" } }),
            WriteOptions::default(),
        )
        .expect("owner");
    let uid = meta_str(&owner, "uid").unwrap_or("").to_string();
    let refs = json!([{ "apiVersion": "v1", "kind": "Secret", "name": "owner", "uid": uid, "blockOwnerDeletion": true, "controller": true }]);
    store
        .create(
            rt,
            "m",
            json!({ "metadata": { "name": "dep", "ownerReferences": refs } }),
            WriteOptions::default(),
        )
        .expect("dep");
    (uid, "dep".into())
}

#[test]
fn an_object_created_after_its_owner_was_deleted_is_collected() {
    let store = fresh_store();
    let refs =
        json!([{ "apiVersion": "v1", "kind": "Secret", "name": "gone", "uid": "no-such-uid" }]);
    store
        .create(
            &secrets(),
            "m",
            json!({ "metadata": { "name": "orphan", "ownerReferences": refs } }),
            WriteOptions::default(),
        )
        .expect("create answers as the API server does");
    assert!(store.get_opt(&secrets(), "m", "orphan").is_none());
}

#[test]
fn an_update_that_points_every_owner_at_a_deleted_object_collects_it() {
    let store = fresh_store();
    store
        .create(
            &secrets(),
            "m",
            json!({ "metadata": { "name": "adopted" } }),
            WriteOptions::default(),
        )
        .expect("create");
    let refs = json!({ "metadata": { "ownerReferences": [{ "apiVersion": "v1", "kind": "Secret", "name": "gone", "uid": "no-such-uid" }] } });
    store
        .patch(
            &secrets(),
            "m",
            "adopted",
            PatchKind::Merge,
            &refs,
            Part::Main,
            WriteOptions::default(),
        )
        .expect("patch answers as the API server does");
    assert!(store.get_opt(&secrets(), "m", "adopted").is_none());
}

#[test]
fn background_deletion_collects_dependents() {
    let store = fresh_store();
    sandbox_owner_chain(&store);
    store
        .delete(&secrets(), "m", "owner", &DeleteOptions::default())
        .expect("delete");
    assert!(store.get_opt(&secrets(), "m", "dep").is_none());
}

#[test]
fn orphan_deletion_keeps_dependents_without_the_reference() {
    let store = fresh_store();
    sandbox_owner_chain(&store);
    let opts = DeleteOptions {
        propagation: Some(Propagation::Orphan),
        ..Default::default()
    };
    store
        .delete(&secrets(), "m", "owner", &opts)
        .expect("delete");
    let dep = store.get_opt(&secrets(), "m", "dep").expect("kept");
    assert!(owner_uids(&dep).is_empty());
}

#[test]
fn foreground_deletion_waits_for_a_finalized_dependent() {
    let store = fresh_store();
    let rt = &secrets();
    sandbox_owner_chain(&store);
    let patch = json!({ "metadata": { "finalizers": ["test/hold"] } });
    store
        .patch(
            rt,
            "m",
            "dep",
            PatchKind::Merge,
            &patch,
            Part::Main,
            WriteOptions::default(),
        )
        .expect("finalizer");
    let opts = DeleteOptions {
        propagation: Some(Propagation::Foreground),
        ..Default::default()
    };
    assert!(matches!(
        store.delete(rt, "m", "owner", &opts),
        Ok(Deleted::Pending(_))
    ));
    let owner = store.get_opt(rt, "m", "owner").expect("owner waits");
    assert!(finalizers(&owner).contains(&"foregroundDeletion".to_string()));
    let dep = store.get_opt(rt, "m", "dep").expect("dep marked");
    assert!(dep["metadata"]["deletionTimestamp"].is_string());
    let release = json!({ "metadata": { "finalizers": null } });
    store
        .patch(
            rt,
            "m",
            "dep",
            PatchKind::Merge,
            &release,
            Part::Main,
            WriteOptions::default(),
        )
        .expect("release");
    assert!(store.get_opt(rt, "m", "dep").is_none());
    assert!(
        store.get_opt(rt, "m", "owner").is_none(),
        "the owner goes once its dependent is gone"
    );
}

#[test]
fn deleting_a_namespace_deletes_its_objects() {
    let store = fresh_store();
    store
        .create(
            &secrets(),
            "m",
            json!({ "metadata": { "name": "x" } }),
            WriteOptions::default(),
        )
        .expect("create");
    let ns = core("namespaces");
    store
        .delete(&ns, "", "m", &DeleteOptions::default())
        .expect("delete ns");
    assert!(store.get_opt(&secrets(), "m", "x").is_none());
    let err = store
        .create(
            &secrets(),
            "m",
            json!({ "metadata": { "name": "y" } }),
            WriteOptions::default(),
        )
        .expect_err("no ns");
    assert_eq!(err.message, "namespaces \"m\" not found");
}

#[test]
fn create_in_a_missing_namespace_is_not_found_and_generate_name_appends_a_suffix() {
    let store = fresh_store();
    let (obj, _) = store
        .create(
            &secrets(),
            "m",
            json!({ "metadata": { "generateName": "pool-" } }),
            WriteOptions::default(),
        )
        .expect("create");
    let name = meta_str(&obj, "name").unwrap_or("");
    assert!(
        name.starts_with("pool-") && name.len() == "pool-".len() + 5,
        "{name}"
    );
    assert_eq!(
        store
            .create(
                &secrets(),
                "nope",
                json!({ "metadata": { "name": "a" } }),
                WriteOptions::default()
            )
            .expect_err("404")
            .code
            .as_u16(),
        404
    );
}
