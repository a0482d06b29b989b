//! Records a Kubernetes client's exchanges with an API server into a cassette, and replays
//! them offline, exec streams included.
//!
//! A **recording proxy** ([`Proxy`]) serves TLS on loopback with its own CA, writes a
//! kubeconfig for its client, forwards every request to the cluster a kubeconfig names (with
//! that kubeconfig's token or client certificate; HTTP/2 or HTTP/1.1), and records each
//! exchange through a [`Recorder`]: the request (method, path, query, the headers that matter,
//! body) and the response (status, headers, body) with their times; watches event by event;
//! upgraded connections (exec, attach, port-forward over WebSocket; SPDY as raw chunks) frame
//! by frame with channel, direction and time. Secrets never reach the cassette (the
//! [`Redactor`]). Several proxies may share one recorder, one per identity (the live runs
//! record the adapter's and the observer's), each under its client name.
//!
//! A **replay** ([`Replay`]) serves the cassette back with a kubeconfig per recorded client.
//! Each request is matched by method, path, normalized query and body, in order per
//! resource, with the generated names and times of the recording mapped to this run's; the
//! first request that matches nothing stops the replay with a message that shows it beside the
//! nearest recorded one.
//!
//! The format is versioned JSON Lines, documented in `CASSETTE.md` with the JSON Schema
//! `cassette.schema.json` beside this crate. The `fakekube` binary runs both as
//! `fakekube record` and `fakekube replay` ([`cli`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use fakekube_cassette::{Cassette, Kubeconfig, Proxy, Recorder, Replay, ReplayOptions};
//!
//! let recorder = Recorder::create("run.jsonl")?;
//! let upstream = Kubeconfig::from_path("/path/to/kubeconfig")?;
//! let proxy = Proxy::start(&upstream, &recorder, "default", "127.0.0.1:0".parse()?).await?;
//! std::fs::write("proxy.kubeconfig", proxy.kubeconfig())?;
//! // ... run the client with proxy.kubeconfig ...
//! proxy.shutdown().await;
//! println!("{}", recorder.finish()?);
//!
//! let replay = Replay::start(&Cassette::load("run.jsonl")?, ReplayOptions::default()).await?;
//! std::fs::write("replay.kubeconfig", replay.kubeconfig("default").unwrap_or_default())?;
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! - `format`: the cassette's records, and reading a cassette back ([`Cassette`]).
//! - `redact`: what never reaches a cassette ([`Redactor`]).
//! - `kubeconfig`: reading the recorded cluster's kubeconfig, writing the clients'.
//! - `tls`: the loopback CA and serving certificate; the client TLS to the cluster.
//! - `front`: the loopback TLS listener both servers use.
//! - `recorder`: the cassette writer ([`Recorder`]).
//! - `upstream`: the proxy's client to the cluster.
//! - `relay`: upgraded connections through the proxy, recorded frame by frame.
//! - `proxy`: the recording proxy ([`Proxy`]).
//! - `normalize`: the normalization map of a replay (generated names, times).
//! - `listing`: what a recorded list answer shows, and how it fits a replay's objects.
//! - `book`: which recorded exchange answers a request.
//! - `sidebyside`: the message a replay stops with.
//! - `player`: what a replay's handlers share (the book, the pacing, the stop signal).
//! - `replay`: the replaying server ([`Replay`]).
//! - `upgraded`: upgraded connections during a replay.
//! - `cli`: the `record` and `replay` subcommands.
//!
//! # Known limitations
//!
//! - A replay follows the recording's order per resource, as far as the recorded times show
//!   one exchange waited for another; requests in flight at once may come in any order. It
//!   cannot tell apart identical requests of independent parts of a client: such reads get the
//!   freshest answer, and list requests the answer that fits the objects made so far. A run
//!   whose parts list what other parts change at the same moment may see other answers than
//!   it recorded (the conformance suite runs its trials that list the pool alone), and a run
//!   must name what it makes alike each time (the suite numbers each trial's ids on its own).
//! - SPDY/3.1 upgrades are relayed and recorded as raw chunks; a replay sends the server's
//!   chunks and reads as many bytes as the client sent, without comparing them.
//! - Streamed bodies are recorded line by line; a replay ends each event with a newline.
//! - The proxy authenticates upstream with one kubeconfig's identity; record several
//!   identities with one proxy each. Exec-plugin and auth-provider kubeconfigs are refused.
//! - Request bodies are read whole (up to 64 MiB) before they are forwarded.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod book;
pub mod cli;
pub mod format;
mod front;
mod kubeconfig;
mod listing;
mod normalize;
mod player;
mod proxy;
mod recorder;
mod redact;
mod relay;
mod replay;
mod sidebyside;
mod tls;
mod upgraded;
mod upstream;

// The public interface is:
pub use book::Progress;
pub use format::{Cassette, CassetteError};
pub use front::ListenError;
pub use kubeconfig::{Kubeconfig, KubeconfigError};
pub use player::Pacing;
pub use proxy::{Proxy, ProxyError};
pub use recorder::{RecordError, RecordSummary, Recorder};
pub use redact::{REDACTED, REDACTED_BASE64, Redactor};
pub use replay::{Replay, ReplayError, ReplayOptions, ReplaySummary};
pub use tls::TlsError;
pub use upstream::{Upstream, UpstreamError};
