//! The cassette writer that recording proxies share: the header, then each record as one line
//! as soon as it is known, every body and payload through the [`Redactor`] first.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::format::{self, Body, Header, Payload, Record};
use crate::redact::{REDACTED, Redactor};

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The cassette file could not be created.
    #[error("creating {path}")]
    Create {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Writing to the cassette failed; the records after the failure are lost.
    #[error("writing {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What a finished recording holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSummary {
    /// The cassette file.
    pub path: PathBuf,
    /// How many exchanges it records.
    pub exchanges: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

impl std::fmt::Display for RecordSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} exchanges in {} ({:.1} KiB)",
            self.exchanges,
            self.path.display(),
            self.bytes as f64 / 1024.0
        )
    }
}

/// Writes one cassette. Cheap to clone; clones write to the same file.
#[derive(Clone, Debug)]
pub struct Recorder {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    out: Mutex<Option<BufWriter<File>>>,
    started: Instant,
    next_id: AtomicU64,
    exchanges: AtomicU64,
    redactor: Redactor,
    failure: Mutex<Option<std::io::Error>>,
}

impl Recorder {
    /// Creates (or truncates) the cassette at `path` and writes its header.
    pub fn create(path: impl AsRef<Path>) -> Result<Recorder, RecordError> {
        let path = path.as_ref().to_path_buf();
        let create = |source| RecordError::Create {
            path: path.clone(),
            source,
        };
        let file = File::create(&path).map_err(create)?;
        let mut out = BufWriter::new(file);
        let header = Header {
            format: format::FORMAT.to_owned(),
            version: format::VERSION,
            recorded_at: OffsetDateTime::now_utc()
                .format(&Rfc3339)
                .unwrap_or_default(),
        };
        let line = serde_json::to_string(&header).unwrap_or_default();
        writeln!(out, "{line}").map_err(create)?;
        Ok(Recorder {
            inner: Arc::new(Inner {
                path,
                out: Mutex::new(Some(out)),
                started: Instant::now(),
                next_id: AtomicU64::new(1),
                exchanges: AtomicU64::new(0),
                redactor: Redactor::default(),
                failure: Mutex::new(None),
            }),
        })
    }

    /// The redactor every record goes through; add credentials to it before they can appear.
    pub fn redactor(&self) -> &Redactor {
        &self.inner.redactor
    }

    /// The cassette's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The next exchange id.
    pub(crate) fn next_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Seconds since the recording started.
    pub(crate) fn now(&self) -> f64 {
        format::seconds(self.inner.started.elapsed())
    }

    /// Writes `record` as one line (dropped after [`Recorder::finish`] or a write failure).
    pub(crate) fn write(&self, record: &Record) {
        let line = match serde_json::to_string(record) {
            Ok(line) => line,
            Err(e) => {
                tracing::warn!(error = %e, "a record could not be encoded");
                return;
            }
        };
        let mut out = self
            .inner
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(writer) = out.as_mut() else {
            return;
        };
        if let Err(e) = writeln!(writer, "{line}") {
            *out = None;
            *self
                .inner
                .failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(e);
            return;
        }
        if matches!(record, Record::Exchange(_)) {
            self.inner.exchanges.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A body sent to or from `path`, redacted: JSON field by field, other bodies of secret
    /// resources dropped whole, known credentials everywhere.
    pub(crate) fn body(&self, path: &str, bytes: &[u8], content_type: Option<&str>) -> Body {
        let redactor = &self.inner.redactor;
        let mut body = Body::from_bytes(bytes, content_type);
        if let Some(value) = body.body.as_mut() {
            redactor.json(path, value);
        } else if !body.is_empty() && Redactor::drops_non_json(path) {
            body.payload = Payload::from_bytes(REDACTED.as_bytes());
        } else {
            body.payload = self.payload(&body.payload.to_bytes());
        }
        body
    }

    /// A payload, redacted of known credentials.
    pub(crate) fn payload(&self, bytes: &[u8]) -> Payload {
        Payload::from_bytes(&self.inner.redactor.bytes(bytes))
    }

    /// Flushes and closes the cassette; later records are dropped. Reports a write failure,
    /// if one happened during the recording.
    pub fn finish(&self) -> Result<RecordSummary, RecordError> {
        let path = self.inner.path.clone();
        let write_error = |source| RecordError::Write {
            path: path.clone(),
            source,
        };
        let taken = self
            .inner
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut writer) = taken {
            writer.flush().map_err(write_error)?;
        }
        if let Some(e) = self
            .inner
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            return Err(write_error(e));
        }
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        Ok(RecordSummary {
            path,
            exchanges: self.inner.exchanges.load(Ordering::Relaxed),
            bytes,
        })
    }
}
