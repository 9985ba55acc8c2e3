//! Whether a database (or its buffer pool) still takes work: the one rule every poisoning
//! follows. The first failure that may have lost data or left the disk in doubt — a
//! failed write or sync of the data file, a failed checkpoint, a failed background job,
//! a commit whose outcome is unknown — is recorded as the cause, and from then on every
//! operation is refused with [`Error::Poisoned`] and that cause. The first cause wins:
//! later failures are consequences of it and would hide it. Nothing is retried (after a
//! failed fsync the kernel may have dropped the pages; a retry that succeeds proves
//! nothing) and nothing clears it: reopening the database runs restart recovery.
//!
//! The database keeps one [`Health`] (its checkpoints, background jobs and commits), the
//! buffer pool another (its data-file writes and syncs); `Inner::check` asks both, then
//! the log (which keeps its own in the log crate).

use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};

/// Healthy until [`poison`](Health::poison)ed, then refusing everything with the first
/// cause.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// Set once `cause` is: every operation of every transaction asks, and a load of a
    /// flag nobody writes stays in each core's cache where locking the mutex would move
    /// its line between cores on every call.
    poisoned: AtomicBool,
    /// The first cause; never replaced.
    cause: Mutex<Option<String>>,
}

impl Health {
    /// Refuses work from now on, for `cause` — unless already poisoned, in which case
    /// the first cause stays.
    pub(crate) fn poison(&self, cause: impl Display) {
        let mut first = self.cause.lock();
        if first.is_none() {
            *first = Some(cause.to_string());
        }
        // Stored under the mutex, after the cause: whoever sees the flag finds a cause.
        self.poisoned.store(true, Ordering::Release);
        debug_assert!(first.is_some(), "poisoned without a cause");
    }

    /// The first cause, if poisoned.
    pub(crate) fn cause(&self) -> Option<String> {
        if !self.poisoned.load(Ordering::Acquire) {
            return None;
        }
        let cause = self.cause.lock().clone();
        assert!(cause.is_some(), "poisoned with a cause");
        cause
    }

    /// `Ok` while healthy; then [`Error::Poisoned`] with the first cause.
    pub(crate) fn check(&self) -> Result<()> {
        match self.cause() {
            Some(cause) => Err(Error::Poisoned(cause)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_cause_wins_and_everything_is_refused_from_then_on() {
        let h = Health::default();
        assert!(h.check().is_ok());
        assert_eq!(h.cause(), None);
        h.poison(format_args!("checkpoint failed: {}", "disk full"));
        h.poison("page cleaner failed: later");
        assert_eq!(h.cause().as_deref(), Some("checkpoint failed: disk full"));
        for _ in 0..2 {
            match h.check() {
                Err(Error::Poisoned(cause)) => assert_eq!(cause, "checkpoint failed: disk full"),
                other => panic!("{other:?}"),
            }
        }
    }
}
