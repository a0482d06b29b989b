//! What the protocol's integration tests share: a recorded conversation, the JSON Schemas of
//! `schema/`, and the check of every recorded message against them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sandbox_protocol::{Direction, Transport, method, notification};
use serde_json::{Value, json};

/// Where the schemas live.
pub fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema")
}

/// The base URI of every schema's `$id`.
const BASE: &str = "https://sandbox-protocol.invalid/1/";

/// Every message that went through a tapped transport, in order, as the runner saw it.
#[derive(Clone, Default)]
pub struct Conversation(Arc<Mutex<Vec<(Direction, String)>>>);

impl Conversation {
    /// Returns `transport` recording every message into this conversation.
    pub fn tap(&self, transport: Transport) -> Transport {
        let log = self.0.clone();
        transport.filter(move |direction, text| {
            if let Ok(mut log) = log.lock() {
                log.push((direction, text.clone()));
            }
            Some(text)
        })
    }

    /// Returns the messages recorded so far.
    pub fn messages(&self) -> Vec<(Direction, String)> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// The schemas, compiled: the envelope, each method's params and result, each notification's
/// params.
pub struct Schemas {
    validators: HashMap<String, jsonschema::Validator>,
}

/// Reads a schema file as JSON.
fn read(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

impl Schemas {
    /// Loads and compiles every schema file.
    pub fn load() -> Schemas {
        let dir = schema_dir();
        let mut files = vec![
            ("common.json".to_owned(), read(&dir.join("common.json"))),
            ("envelope.json".to_owned(), read(&dir.join("envelope.json"))),
        ];
        for name in method::ALL {
            let rel = format!("methods/{name}.json");
            files.push((rel.clone(), read(&dir.join(&rel))));
        }
        for name in notification::ALL {
            let rel = format!("notifications/{}.json", name.replace('/', "."));
            files.push((rel.clone(), read(&dir.join(&rel))));
        }
        for (rel, doc) in &files {
            assert_eq!(
                doc["$id"].as_str(),
                Some(format!("{BASE}{rel}").as_str()),
                "{rel} has the wrong $id"
            );
        }
        let registry = jsonschema::Registry::new()
            .extend(
                files
                    .iter()
                    .map(|(rel, doc)| (format!("{BASE}{rel}"), doc.clone())),
            )
            .and_then(|b| b.prepare())
            .unwrap_or_else(|e| panic!("the schemas do not load: {e}"));
        let build = |uri: String| {
            jsonschema::options()
                .with_registry(&registry)
                .build(&json!({"$ref": uri}))
                .unwrap_or_else(|e| panic!("the schema {uri} does not compile: {e}"))
        };
        let mut validators = HashMap::new();
        validators.insert("envelope".to_owned(), build(format!("{BASE}envelope.json")));
        for name in method::ALL {
            for part in ["params", "result"] {
                validators.insert(
                    format!("{name}.{part}"),
                    build(format!("{BASE}methods/{name}.json#/$defs/{part}")),
                );
            }
        }
        for name in notification::ALL {
            validators.insert(
                name.to_owned(),
                build(format!(
                    "{BASE}notifications/{}.json#/$defs/params",
                    name.replace('/', ".")
                )),
            );
        }
        Schemas { validators }
    }

    /// Validates `value` against the schema `key`; the error lists what is wrong.
    pub fn validate(&self, key: &str, value: &Value) -> Result<(), String> {
        let validator = self
            .validators
            .get(key)
            .ok_or_else(|| format!("no schema {key}"))?;
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }

    /// Checks every message of a conversation: its envelope, and its params or result against
    /// its method's schema (responses are matched to their request by id). Returns one line
    /// per problem and how many messages were checked.
    pub fn check(&self, conversation: &[(Direction, String)]) -> (Vec<String>, usize) {
        let mut problems = Vec::new();
        let mut requests: HashMap<(bool, String), String> = HashMap::new();
        for (index, (direction, text)) in conversation.iter().enumerate() {
            let from_runner = *direction == Direction::Sent;
            let who = if from_runner { "runner" } else { "provider" };
            let mut fail = |what: String| {
                problems.push(format!(
                    "message {index} from the {who}: {what}\n  {}",
                    cut(text)
                ))
            };
            let Ok(value) = serde_json::from_str::<Value>(text) else {
                fail("not JSON".to_owned());
                continue;
            };
            if let Err(e) = self.validate("envelope", &value) {
                fail(format!("envelope: {e}"));
                continue;
            }
            let id = value.get("id").map(Value::to_string);
            match (value.get("method").and_then(Value::as_str), id) {
                (Some(name), Some(id)) => {
                    requests.insert((from_runner, id), name.to_owned());
                    if !from_runner {
                        fail(format!("the provider sent a request ({name})"));
                    } else if let Err(e) =
                        self.validate(&format!("{name}.params"), &value["params"])
                    {
                        fail(format!("{name} params: {e}"));
                    }
                }
                (Some(name), None) => {
                    let expected_from_runner = matches!(
                        name,
                        notification::STDIN | notification::CLOSE_STDIN | notification::CANCEL
                    );
                    if expected_from_runner != from_runner {
                        fail(format!("{name} goes the other way"));
                    } else if let Err(e) = self.validate(name, &value["params"]) {
                        fail(format!("{name} params: {e}"));
                    }
                }
                (None, Some(id)) => {
                    let Some(name) = requests.get(&(!from_runner, id.clone())) else {
                        if id != "null" {
                            fail(format!("a response to unknown request {id}"));
                        }
                        continue;
                    };
                    if let Some(result) = value.get("result")
                        && let Err(e) = self.validate(&format!("{name}.result"), result)
                    {
                        fail(format!("{name} result: {e}"));
                    }
                }
                (None, None) => fail("neither method nor id".to_owned()),
            }
        }
        (problems, conversation.len())
    }
}

/// Cuts a message for a failure report.
fn cut(text: &str) -> String {
    text.chars().take(300).collect()
}
