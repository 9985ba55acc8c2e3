//! Whether the log can still take work. The first failed write or sync — of the flush
//! daemon or of the segment preparer — *poisons* the log for good: after a failed fsync
//! the kernel may have dropped the dirty pages, so a later "successful" sync would not
//! mean the data is durable. Every thread asks here, and every call that fails because of
//! it reports the first failure, the cause.

use crate::error::WalError;
use crate::sync::{AtomicBool, Mutex, Ordering};
use std::io;
use std::sync::Arc;

/// See the module docs.
pub(crate) struct Health {
    poisoned: AtomicBool,
    /// The first failure.
    cause: Mutex<Option<Arc<io::Error>>>,
}

impl Health {
    pub(crate) fn new() -> Health {
        Health {
            poisoned: AtomicBool::new(false),
            cause: Mutex::new(None),
        }
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// The error a call returns once the log is poisoned: its first failure.
    pub(crate) fn error(&self) -> Option<WalError> {
        if self.is_poisoned() {
            self.cause.lock().clone().map(WalError::Poisoned)
        } else {
            None
        }
    }

    /// Marks the log poisoned by `e`, which becomes the cause if it is the first failure
    /// (later failures are ignored: the first one is the cause). Returns `e` as an I/O
    /// error, for those waiting now. Stopping what runs is the caller's
    /// (`Shared::poison`).
    pub(crate) fn poison(&self, e: WalError) -> Arc<io::Error> {
        let err = match e {
            WalError::Io(e) | WalError::Poisoned(e) => e,
            other => Arc::new(io::Error::other(other.to_string())),
        };
        {
            let mut cause = self.cause.lock();
            if cause.is_none() {
                *cause = Some(err.clone());
            }
        }
        self.poisoned.store(true, Ordering::Release);
        err
    }
}
