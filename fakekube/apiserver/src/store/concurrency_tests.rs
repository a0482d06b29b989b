//! Writes admitted outside the store's lock: readers go on meanwhile, and a write whose
//! revision or name was taken meanwhile is refused as the API server's storage refuses it.

use super::*;
use crate::registry::Mutator;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

/// Long enough for anything that is not stuck.
const PATIENCE: Duration = Duration::from_secs(30);

/// A mutator that stops each Secret labelled `hold` until the test lets it go.
#[derive(Debug)]
struct Gate {
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
}

impl Mutator for Gate {
    fn name(&self) -> &str {
        "gate"
    }

    fn mutate(&self, object: &mut Value, _old: Option<&Value>) -> Result<(), String> {
        if object.pointer("/metadata/labels/hold").is_some() {
            self.entered
                .lock()
                .map_err(|_| "poisoned")?
                .send(())
                .map_err(|e| e.to_string())?;
            self.release
                .lock()
                .map_err(|_| "poisoned")?
                .recv_timeout(PATIENCE)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// A store with namespace `m`, Secret `s` in it, and the [`Gate`]; the channels say when a
/// write reached the gate and let it through.
fn gated_store() -> (Arc<Store>, Arc<ResourceType>, Receiver<()>, Sender<()>) {
    let registry = Arc::new(Registry::new());
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    registry.register_mutator(
        "",
        "Secret",
        Arc::new(Gate {
            entered: Mutex::new(entered_tx),
            release: Mutex::new(release_rx),
        }),
    );
    let store = Arc::new(super::model_tests::store_with_namespace(registry));
    let secrets = store.registry().find("", "v1", "secrets").expect("secrets");
    store
        .create(
            &secrets,
            "m",
            json!({ "metadata": { "name": "s" } }),
            WriteOptions::default(),
        )
        .expect("secret");
    (store, secrets, entered, release)
}

/// Lets the held write through and returns its refusal, a 409 whose message says `why`.
fn refusal(held: std::thread::JoinHandle<Written>, release: &Sender<()>, why: &str) -> ApiError {
    release.send(()).expect("release");
    let refused = held
        .join()
        .expect("joins")
        .expect_err("the held write is refused");
    assert_eq!(refused.code, 409, "{}", refused.message);
    assert!(refused.message.contains(why), "{}", refused.message);
    refused
}

/// What a store write answers.
type Written = Result<(Arc<Value>, Vec<String>), ApiError>;

/// Writes `body` to Secret `s` (an update) on a thread of its own.
fn update_on_a_thread(
    store: &Arc<Store>,
    rt: &Arc<ResourceType>,
    body: Value,
) -> std::thread::JoinHandle<Written> {
    let (store, rt) = (Arc::clone(store), Arc::clone(rt));
    std::thread::spawn(move || {
        store.update(&rt, "m", "s", body, Part::Main, WriteOptions::default())
    })
}

/// A gated store with an update of Secret `s` (labelled `hold`) stopped in admission: the
/// store, the kind, the writing thread, the gate's release, and the resourceVersion it names.
fn an_update_held_in_admission() -> (
    Arc<Store>,
    Arc<ResourceType>,
    std::thread::JoinHandle<Written>,
    Sender<()>,
    String,
) {
    let (store, secrets, entered, release) = gated_store();
    let rv0 = rv(&store, &secrets);
    let held = update_on_a_thread(
        &store,
        &secrets,
        json!({ "metadata": { "name": "s", "resourceVersion": rv0, "labels": { "hold": "1" } } }),
    );
    entered
        .recv_timeout(PATIENCE)
        .expect("the held write reaches admission");
    (store, secrets, held, release, rv0)
}

fn rv(store: &Store, rt: &Arc<ResourceType>) -> String {
    let s = store.get(rt, "m", "s").expect("secret");
    meta_str(&s, "resourceVersion").unwrap_or("").to_string()
}

#[test]
fn reads_and_other_writes_go_on_while_a_write_is_admitted() {
    let (store, secrets, held, release, _) = an_update_held_in_admission();
    // Were admission made under the lock, these would wait for the gate, which only opens
    // once they are done.
    let (done_tx, done) = mpsc::channel();
    let (reader, rt) = (Arc::clone(&store), Arc::clone(&secrets));
    std::thread::spawn(move || {
        let read = reader.get(&rt, "m", "s").is_ok();
        let wrote = reader
            .create(
                &rt,
                "m",
                json!({ "metadata": { "name": "t" } }),
                WriteOptions::default(),
            )
            .is_ok();
        let _ = done_tx.send(read && wrote);
    });
    let went_on = done.recv_timeout(PATIENCE);
    release.send(()).expect("release");
    assert_eq!(
        went_on,
        Ok(true),
        "a read and a create while a write was admitted"
    );
    let (stored, _) = held
        .join()
        .expect("joins")
        .expect("the held write is stored");
    assert_eq!(stored.pointer("/metadata/labels/hold"), Some(&json!("1")));
}

#[test]
fn an_update_whose_revision_was_replaced_during_its_admission_is_refused_as_stale() {
    let (store, secrets, held, release, rv0) = an_update_held_in_admission();
    let body =
        json!({ "metadata": { "name": "s", "resourceVersion": rv0, "labels": { "by": "other" } } });
    store
        .update(
            &secrets,
            "m",
            "s",
            body,
            Part::Main,
            WriteOptions::default(),
        )
        .expect("the other write, made meanwhile, is stored");
    refusal(held, &release, "the object has been modified");
    let now = store.get(&secrets, "m", "s").expect("secret");
    assert_eq!(
        now.pointer("/metadata/labels"),
        Some(&json!({ "by": "other" }))
    );
}

#[test]
fn a_create_whose_name_was_taken_during_its_admission_is_refused_as_existing() {
    let (store, secrets, entered, release) = gated_store();
    let (creator, rt) = (Arc::clone(&store), Arc::clone(&secrets));
    let held = std::thread::spawn(move || {
        let body = json!({ "metadata": { "name": "n", "labels": { "hold": "1" } } });
        creator.create(&rt, "m", body, WriteOptions::default())
    });
    entered
        .recv_timeout(PATIENCE)
        .expect("the held create reaches admission");
    store
        .create(
            &secrets,
            "m",
            json!({ "metadata": { "name": "n" } }),
            WriteOptions::default(),
        )
        .expect("the other create, made meanwhile, is stored");
    refusal(held, &release, "already exists");
    let now = store.get(&secrets, "m", "n").expect("secret");
    assert_eq!(now.pointer("/metadata/labels/hold"), None);
}
