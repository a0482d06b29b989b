//! The sandbox provider contract as a language-neutral protocol: JSON-RPC 2.0 messages over a
//! child process's stdin and stdout (one message per line) or over a WebSocket (one text frame
//! per message), so that providers written in any language can run the conformance suite.
//!
//! `PROTOCOL.md` beside this crate specifies it, and `schema/` holds a
//! JSON Schema for every message. In short: `initialize` negotiates the version and returns
//! the provider's info; then each [`Provider`](sandbox_contract::Provider) operation is one
//! method (`create`, `exec`, `exec_stream`, `read_file`...); a streamed command's output comes
//! as `exec/output` notifications then exactly one `exec/exit` (or `exec/error`), and its stdin
//! goes as `exec/stdin` notifications then `exec/close_stdin`; bytes are base64; errors carry
//! the contract's code in `error.data.code`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use sandbox_contract::Provider;
//! use sandbox_protocol::{ProviderProcess, RemoteProvider};
//!
//! // The runner's end: a provider in Python behind the contract's trait.
//! let (_child, transport) = ProviderProcess::spawn("python3 provider.py --stdio")?;
//! let provider = RemoteProvider::connect(transport, Duration::from_secs(10)).await?;
//! println!("{:?}", provider.info().await?.capabilities);
//! # Ok(()) }
//! ```
//!
//! The other end, for a provider written in Rust: `serve(Arc::new(my_provider),
//! Transport::stdio()).await`.
//!
//! # Layout
//!
//! - `wire`: the message bodies as serde types ([`WireSandbox`], [`WireExec`]...) and their
//!   conversions to and from the contract's types.
//! - `message`: JSON-RPC envelopes, the [`method`] and [`notification`] names, the error
//!   object [`RpcError`] and its [`code`]s. No I/O.
//! - `transport`: [`Transport`], channels of whole messages over lines or a WebSocket, and
//!   [`Transport::filter`] to watch or alter them.
//! - `process`: [`ProviderProcess`], a provider run as a child process.
//! - `client`: [`RemoteProvider`], the contract's trait over a transport.
//! - `server`: [`serve`], any provider over a transport.
//!
//! # Known limitations
//!
//! - Fault injection ([`Faults`](https://docs.rs/sandbox-conformance)) is not part of the
//!   protocol, so the suite's fault trials are skipped for a remote provider unless its
//!   backend is switched some other way.
//! - `wss://` (WebSocket over TLS) is not offered: the runner and the provider are expected on
//!   one machine, on loopback.
//! - A remote provider's `info` is asked for on every call, as the contract allows; nothing is
//!   cached beyond what [`RemoteProvider::negotiated`] keeps from `initialize`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod client;
mod message;
mod process;
mod server;
mod transport;
mod wire;

// The public interface is:
pub use client::{ConnectError, Negotiated, RemoteProvider};
pub use message::{JSONRPC_VERSION, PROTOCOL_VERSIONS, RpcError, code, method, notification};
pub use process::{ProviderProcess, SpawnError, split_command_line};
pub use server::serve;
pub use transport::{Direction, MAX_MESSAGE_BYTES, Transport, TransportError};
pub use wire::{
    WireCreate, WireError, WireErrorData, WireExec, WireFileInfo, WireHealth, WireInfo, WireLimits,
    WireOutput, WireResources, WireSandbox, WireSnapshot, WireStdin, WireTemplate,
};
