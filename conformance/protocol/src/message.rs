//! JSON-RPC 2.0 envelopes: reading a message into a [`Message`], writing requests,
//! notifications and responses, and the error object with its codes.
//!
//! Everything here works on strings and [`serde_json::Value`]s; no I/O.

use std::time::Duration;

use sandbox_contract::{Error, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::wire::{WireErrorData, millis};

/// The `jsonrpc` member of every message.
pub const JSONRPC_VERSION: &str = "2.0";

/// The protocol versions this crate speaks, newest first.
pub const PROTOCOL_VERSIONS: &[&str] = &["1"];

/// The method names: one per contract operation, plus `initialize`.
pub mod method {
    /// Negotiates the version and returns the provider's info.
    pub const INITIALIZE: &str = "initialize";
    /// [`Provider::info`](sandbox_contract::Provider::info).
    pub const INFO: &str = "info";
    /// [`Provider::health`](sandbox_contract::Provider::health).
    pub const HEALTH: &str = "health";
    /// [`Provider::create`](sandbox_contract::Provider::create).
    pub const CREATE: &str = "create";
    /// [`Provider::get`](sandbox_contract::Provider::get).
    pub const GET: &str = "get";
    /// [`Provider::list`](sandbox_contract::Provider::list).
    pub const LIST: &str = "list";
    /// [`Provider::delete`](sandbox_contract::Provider::delete).
    pub const DELETE: &str = "delete";
    /// [`Provider::exec`](sandbox_contract::Provider::exec).
    pub const EXEC: &str = "exec";
    /// [`Provider::exec_stream`](sandbox_contract::Provider::exec_stream).
    pub const EXEC_STREAM: &str = "exec_stream";
    /// [`Provider::write_file`](sandbox_contract::Provider::write_file).
    pub const WRITE_FILE: &str = "write_file";
    /// [`Provider::read_file`](sandbox_contract::Provider::read_file).
    pub const READ_FILE: &str = "read_file";
    /// [`Provider::list_dir`](sandbox_contract::Provider::list_dir).
    pub const LIST_DIR: &str = "list_dir";
    /// [`Provider::stat`](sandbox_contract::Provider::stat).
    pub const STAT: &str = "stat";
    /// [`Provider::mkdir`](sandbox_contract::Provider::mkdir).
    pub const MKDIR: &str = "mkdir";
    /// [`Provider::stop`](sandbox_contract::Provider::stop).
    pub const STOP: &str = "stop";
    /// [`Provider::start`](sandbox_contract::Provider::start).
    pub const START: &str = "start";
    /// [`Provider::pause`](sandbox_contract::Provider::pause).
    pub const PAUSE: &str = "pause";
    /// [`Provider::resume`](sandbox_contract::Provider::resume).
    pub const RESUME: &str = "resume";
    /// [`Provider::snapshot`](sandbox_contract::Provider::snapshot).
    pub const SNAPSHOT: &str = "snapshot";
    /// [`Provider::fork`](sandbox_contract::Provider::fork).
    pub const FORK: &str = "fork";
    /// [`Provider::expose_port`](sandbox_contract::Provider::expose_port).
    pub const EXPOSE_PORT: &str = "expose_port";
    /// [`Provider::set_ttl`](sandbox_contract::Provider::set_ttl).
    pub const SET_TTL: &str = "set_ttl";

    /// Every request method, `initialize` first.
    pub const ALL: [&str; 22] = [
        INITIALIZE,
        INFO,
        HEALTH,
        CREATE,
        GET,
        LIST,
        DELETE,
        EXEC,
        EXEC_STREAM,
        WRITE_FILE,
        READ_FILE,
        LIST_DIR,
        STAT,
        MKDIR,
        STOP,
        START,
        PAUSE,
        RESUME,
        SNAPSHOT,
        FORK,
        EXPOSE_PORT,
        SET_TTL,
    ];
}

/// The notification names of a streamed command.
pub mod notification {
    /// Provider → runner: a chunk of output.
    pub const OUTPUT: &str = "exec/output";
    /// Provider → runner: the command exited; the session's last notification.
    pub const EXIT: &str = "exec/exit";
    /// Provider → runner: the session failed; the session's last notification.
    pub const ERROR: &str = "exec/error";
    /// Runner → provider: a chunk of standard input.
    pub const STDIN: &str = "exec/stdin";
    /// Runner → provider: end of standard input.
    pub const CLOSE_STDIN: &str = "exec/close_stdin";
    /// Runner → provider: the runner stopped reading the session.
    pub const CANCEL: &str = "exec/cancel";

    /// Every notification.
    pub const ALL: [&str; 6] = [OUTPUT, EXIT, ERROR, STDIN, CLOSE_STDIN, CANCEL];
}

/// JSON-RPC error codes this protocol uses.
pub mod code {
    /// The message is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The message is JSON but no JSON-RPC message.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The peer failed on its own.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The provider answered a contract error; `data.code` says which.
    pub const PROVIDER_ERROR: i64 = -32000;
    /// `initialize` offered no version the provider speaks.
    pub const UNSUPPORTED_VERSION: i64 = -32001;
    /// A method other than `initialize` came first.
    pub const NOT_INITIALIZED: i64 = -32002;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The JSON-RPC code ([`code`]).
    pub code: i64,
    /// A sentence for people.
    pub message: String,
    /// For [`code::PROVIDER_ERROR`]: the contract error ([`WireErrorData`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// Builds an error without data.
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Returns the contract error this error stands for, from a call of `method`.
    ///
    /// `data.code` wins; without it, an unknown method is `unsupported_operation` naming the
    /// method, bad params or an invalid request are `invalid_request`, anything else `internal`.
    pub fn to_contract(&self, method: &str) -> Error {
        let data = self
            .data
            .clone()
            .and_then(|d| serde_json::from_value::<WireErrorData>(d).ok());
        if let Some(data) = data {
            return match data.code {
                ErrorCode::RateLimited => Error::rate_limited(
                    self.message.clone(),
                    data.retry_after_ms.map(Duration::from_millis),
                ),
                code => Error::new(code, self.message.clone()),
            };
        }
        match self.code {
            code::METHOD_NOT_FOUND => Error::unsupported(method),
            code::INVALID_PARAMS | code::INVALID_REQUEST => {
                Error::invalid_request(self.message.clone())
            }
            code => Error::internal(format!(
                "the provider answered JSON-RPC error {code}: {}",
                self.message
            )),
        }
    }
}

impl From<&Error> for RpcError {
    fn from(error: &Error) -> Self {
        let data = WireErrorData {
            code: error.code(),
            retry_after_ms: error.retry_after().map(millis),
        };
        RpcError {
            code: code::PROVIDER_ERROR,
            message: error.message().to_owned(),
            data: serde_json::to_value(data).ok(),
        }
    }
}

/// A message read from the peer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Message {
    /// A call expecting a response.
    Request {
        /// Its id, echoed in the response.
        id: Value,
        /// The method.
        method: String,
        /// The params (`{}` when absent).
        params: Value,
    },
    /// A call expecting nothing.
    Notification {
        /// The method.
        method: String,
        /// The params (`{}` when absent).
        params: Value,
    },
    /// The answer to a request.
    Response {
        /// The request's id.
        id: Value,
        /// The result, or the error.
        outcome: Result<Value, RpcError>,
    },
}

/// Reads one message; the error is what to answer (with a `null` id) when it is no message.
pub(crate) fn parse(text: &str) -> Result<Message, RpcError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| RpcError::new(code::PARSE_ERROR, format!("not JSON: {e}")))?;
    let Some(object) = value.as_object() else {
        return Err(RpcError::new(
            code::INVALID_REQUEST,
            "a message must be a JSON object (batches are not used)",
        ));
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some(JSONRPC_VERSION) {
        return Err(RpcError::new(
            code::INVALID_REQUEST,
            "the message lacks \"jsonrpc\": \"2.0\"",
        ));
    }
    let params = || object.get("params").cloned().unwrap_or_else(|| json!({}));
    match (object.get("method"), object.get("id")) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request {
            id: id.clone(),
            method: method.clone(),
            params: params(),
        }),
        (Some(Value::String(method)), None) => Ok(Message::Notification {
            method: method.clone(),
            params: params(),
        }),
        (Some(_), _) => Err(RpcError::new(
            code::INVALID_REQUEST,
            "\"method\" must be a string",
        )),
        (None, Some(id)) => {
            let outcome = match (object.get("result"), object.get("error")) {
                (Some(result), None) => Ok(result.clone()),
                (None, Some(error)) => Err(serde_json::from_value(error.clone()).map_err(|e| {
                    RpcError::new(code::INVALID_REQUEST, format!("a malformed error: {e}"))
                })?),
                _ => {
                    return Err(RpcError::new(
                        code::INVALID_REQUEST,
                        "a response holds exactly one of \"result\" and \"error\"",
                    ));
                }
            };
            Ok(Message::Response {
                id: id.clone(),
                outcome,
            })
        }
        (None, None) => Err(RpcError::new(
            code::INVALID_REQUEST,
            "the message has neither \"method\" nor \"id\"",
        )),
    }
}

/// Writes a request.
pub(crate) fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": JSONRPC_VERSION, "id": id, "method": method, "params": params}).to_string()
}

/// Writes a notification.
pub(crate) fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": JSONRPC_VERSION, "method": method, "params": params}).to_string()
}

/// Writes a response: the result, or the error.
pub(crate) fn response(id: Value, outcome: Result<Value, RpcError>) -> String {
    match outcome {
        Ok(result) => json!({"jsonrpc": JSONRPC_VERSION, "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": JSONRPC_VERSION, "id": id, "error": error}),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_classified_by_method_and_id() {
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":"a"}}"#),
            Ok(Message::Request {
                id: json!(1),
                method: "get".into(),
                params: json!({"id": "a"})
            })
        );
        assert_eq!(
            parse(
                r#"{"jsonrpc":"2.0","method":"exec/exit","params":{"session":"s","exit_code":0}}"#
            )
            .map(|m| matches!(m, Message::Notification { .. })),
            Ok(true)
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#),
            Ok(Message::Response {
                id: json!("x"),
                outcome: Ok(json!({}))
            })
        );
    }

    #[test]
    fn malformed_messages_get_the_json_rpc_codes() {
        let code_of = |text: &str| parse(text).unwrap_err().code;
        assert_eq!(code_of("{"), code::PARSE_ERROR);
        assert_eq!(code_of("[]"), code::INVALID_REQUEST);
        assert_eq!(code_of(r#"{"id":1,"method":"get"}"#), code::INVALID_REQUEST);
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#),
            code::INVALID_REQUEST
        );
    }

    #[test]
    fn contract_errors_round_trip_through_the_error_object() {
        for error in [
            Error::not_found("sandbox a does not exist"),
            Error::rate_limited("slow down", Some(Duration::from_millis(1500))),
            Error::unsupported("fork"),
        ] {
            let rpc = RpcError::from(&error);
            assert_eq!(rpc.code, code::PROVIDER_ERROR);
            assert_eq!(rpc.to_contract("fork"), error);
        }
    }

    #[test]
    fn errors_without_data_map_by_json_rpc_code() {
        let unknown = RpcError::new(code::METHOD_NOT_FOUND, "no such method");
        assert_eq!(unknown.to_contract("fork"), Error::unsupported("fork"));
        let params = RpcError::new(code::INVALID_PARAMS, "params.id: missing");
        assert!(params.to_contract("get").is_invalid_request());
        assert!(
            RpcError::new(code::INTERNAL_ERROR, "boom")
                .to_contract("get")
                .is_internal()
        );
    }
}
