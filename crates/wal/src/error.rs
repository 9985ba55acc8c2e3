//! Errors of the log manager.

use crate::Lsn;
use std::io;
use std::sync::Arc;

/// Everything that can go wrong in the log.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WalError {
    /// A disk operation failed. The log is poisoned from then on: every later call returns
    /// [`WalError::Poisoned`] carrying this first error.
    #[error("log I/O error: {0}")]
    Io(Arc<io::Error>),
    /// An earlier write or sync failed; nothing after the last successful sync is
    /// acknowledged, and the log refuses further work until it is reopened.
    #[error("log is poisoned by an earlier I/O error: {0}")]
    Poisoned(Arc<io::Error>),
    /// The log holds a frame that does not verify *inside* its durable region (valid frames
    /// follow it), or a damaged segment header. Recovery refuses to guess.
    #[error("log corruption at LSN {lsn}: {reason}")]
    Corruption {
        /// Where the damage starts.
        lsn: Lsn,
        /// What is wrong there.
        reason: String,
    },
    /// The log directory is held by another process or another open log.
    #[error("log directory {0} is in use by another process")]
    Locked(String),
    /// A caller passed something the log cannot take (for example an oversized record).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The log was closed.
    #[error("log is closed")]
    Closed,
    /// The log was opened with [`crate::Log::open_read_only`]: it takes no records and
    /// syncs, truncates and waits for nothing.
    #[error("the log is open read-only")]
    ReadOnly,
}

impl WalError {
    /// True if the error came from the disk (directly or through poisoning).
    pub fn is_io(&self) -> bool {
        matches!(self, WalError::Io(_) | WalError::Poisoned(_))
    }
    /// The underlying I/O error kind, if any (for telling ENOSPC from EIO).
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            WalError::Io(e) | WalError::Poisoned(e) => Some(e.kind()),
            _ => None,
        }
    }
}

impl From<io::Error> for WalError {
    fn from(e: io::Error) -> Self {
        WalError::Io(Arc::new(e))
    }
}

/// What the log was doing when an I/O error happened, in front of the error itself (which
/// names its file). The source chain is kept, so `sluice_storage::raw_os_error` still
/// finds the OS error number.
#[derive(Debug)]
struct IoContext {
    doing: &'static str,
    source: io::Error,
}

impl std::fmt::Display for IoContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.doing, self.source)
    }
}

impl std::error::Error for IoContext {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// An I/O error of the log, saying what the log was doing; the kind is kept.
pub(crate) fn io_context(doing: &'static str, source: io::Error) -> WalError {
    let kind = source.kind();
    WalError::Io(Arc::new(io::Error::new(kind, IoContext { doing, source })))
}

/// Result with [`WalError`].
pub type Result<T, E = WalError> = std::result::Result<T, E>;
