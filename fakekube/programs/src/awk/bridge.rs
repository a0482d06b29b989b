//! awk runs on a thread of its own, synchronously, with a large stack: its interpreter
//! recurses (function calls, nested expressions) much deeper than a chain of futures polled
//! on a runtime worker's stack could, and a long computation does not hold a worker. What it
//! needs from the async world (reading an input, writing an output, running a command) it asks
//! the program's future for through [`Bridge`], which does it on the runtime and answers.

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use fakekube_runtime::io::{Input, Output, WriteError};
use fakekube_runtime::process::Process;

/// Stack of the interpreter's thread: room for [`super::interp`]'s call depth and the
/// parser's nesting, in debug builds too. Reserved, not committed, until used.
pub(super) const STACK: usize = 64 * 1024 * 1024;

/// What the interpreter asks the async side to do.
pub(super) enum Request {
    /// Read the next chunk of an input.
    Read(Input, oneshot::Sender<Option<Bytes>>),
    /// Write to an output.
    Write(Output, Bytes, oneshot::Sender<Result<(), WriteError>>),
    /// Run a prepared child process (`sh -c …`) to its end; its exit status.
    Run(Box<Process>, oneshot::Sender<i32>),
}

/// The interpreter's end of the bridge.
pub(super) struct Bridge {
    tx: mpsc::Sender<Request>,
}

impl Bridge {
    /// Both ends: the bridge for the thread, the receiver for the async side.
    pub(super) fn new() -> (Bridge, mpsc::Receiver<Request>) {
        let (tx, rx) = mpsc::channel(1);
        (Bridge { tx }, rx)
    }

    /// Sends a request and waits for its answer; `None` when the async side is gone (the
    /// program was killed).
    fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request) -> Option<T> {
        let (reply, answer) = oneshot::channel();
        self.tx.blocking_send(make(reply)).ok()?;
        answer.blocking_recv().ok()
    }

    /// The next chunk of an input (`None` at its end, or when the program was killed).
    pub(super) fn read(&self, input: &Input) -> Option<Bytes> {
        self.ask(|r| Request::Read(input.clone(), r)).flatten()
    }

    /// Writes to an output.
    pub(super) fn write(&self, out: &Output, data: Bytes) -> Result<(), WriteError> {
        self.ask(|r| Request::Write(out.clone(), data, r))
            .unwrap_or(Err(WriteError::BrokenPipe))
    }

    /// Runs a child process; its status (137 when the program was killed meanwhile).
    pub(super) fn run(&self, child: Process) -> i32 {
        self.ask(|r| Request::Run(Box::new(child), r))
            .unwrap_or(137)
    }

    /// Whether the async side has gone.
    pub(super) fn closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Serves the interpreter's requests until it drops its bridge.
pub(super) async fn serve(mut rx: mpsc::Receiver<Request>) {
    while let Some(req) = rx.recv().await {
        match req {
            Request::Read(input, reply) => {
                let _ = reply.send(input.read().await);
            }
            Request::Write(out, data, reply) => {
                let _ = reply.send(out.write(data).await);
            }
            Request::Run(child, reply) => {
                let _ = reply.send(child.spawn_as("awk: ").await);
            }
        }
    }
}
