//! SPDY/3.1, as far as Kubernetes' streaming (exec, attach, port-forward) uses it, written from
//! the draft: streams opened by the client, each answered and carried both ways until each side
//! finishes it; compressed name/value headers; PING, GOAWAY and flow control. Kubernetes picks
//! what runs on top with `X-Stream-Protocol-Version` at the upgrade and names each stream's role
//! in its headers (`streamtype`).
//!
//! # Layout
//!
//! - [`frame`]: the frames, parsed from and encoded into buffers (pure);
//! - [`dictionary`]: the preset zlib dictionary of header compression;
//! - [`headers`]: name/value blocks and their per-direction zlib contexts (pure);
//! - [`conn`]: the server end of a connection over any byte stream: [`Connection`],
//!   [`Stream`], flow control.
//!
//! # Known limitations
//!
//! - Server side only: this end never opens a stream (no server push), never sends PING, and
//!   takes no notice of priorities or CREDENTIAL.
//! - A client that ignores flow control is slowed by not reading its socket, not reset.

pub mod conn;
pub mod dictionary;
pub mod frame;
pub mod headers;
#[cfg(test)]
pub(crate) mod testing;

pub use conn::{Connection, Stream, StreamReader, StreamWriter};
pub use frame::GoAwayStatus;
