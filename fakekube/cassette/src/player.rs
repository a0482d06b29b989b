//! What a replay's handlers share: the book of recorded exchanges, the clients' tokens, the
//! pacing, and the stop signal with the message of the failure that fired it.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::book::Book;
use crate::format;

/// When recorded streams and frames are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pacing {
    /// At the recorded offsets from the start of their stream or connection (a command that
    /// printed a line, waited two seconds and printed another does so again).
    #[default]
    Recorded,
    /// As fast as the client reads.
    Immediate,
}

/// What the request handlers share.
pub(crate) struct Shared {
    /// The recorded exchanges and the normalization map.
    pub(crate) book: Mutex<Book>,
    /// Each client kubeconfig's token, and the client it makes.
    pub(crate) tokens: HashMap<String, String>,
    /// When streams and frames are sent.
    pub(crate) pacing: Pacing,
    /// Fires when the replay stops.
    pub(crate) stop: CancellationToken,
    /// The message of the first failure.
    pub(crate) failure: watch::Sender<Option<Arc<str>>>,
    /// How many requests arrived.
    pub(crate) requests: AtomicU64,
}

impl Shared {
    /// The book, locked (never across an await).
    pub(crate) fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops the replay with `message` (the first failure wins).
    pub(crate) fn fail(&self, message: String) {
        self.failure.send_if_modified(|failure| {
            if failure.is_some() {
                return false;
            }
            *failure = Some(message.into());
            true
        });
        self.stop.cancel();
    }

    /// Waits until `offset` seconds after `origin` when pacing by the recording; false when
    /// the replay stopped meanwhile.
    pub(crate) async fn pace(&self, origin: Instant, offset: f64) -> bool {
        if self.pacing == Pacing::Recorded {
            let due = origin + format::duration(offset);
            tokio::select! {
                () = tokio::time::sleep_until(due) => {}
                () = self.stop.cancelled() => return false,
            }
        }
        !self.stop.is_cancelled()
    }
}
