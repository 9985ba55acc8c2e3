//! The group-commit decision (Aether §4.1): from what the flush daemon sees, whether a
//! round is due now. A pure function, so its thresholds are tested without threads.

use crate::options::GroupCommit;
use std::time::Duration;

/// What the flush daemon knows when it decides whether to start a round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FlushWants {
    /// Released bytes not yet written (`released - written`).
    pub(crate) pending_bytes: u64,
    /// How long bytes have been pending (zero if none are).
    pub(crate) pending_for: Duration,
    /// Waits outstanding: blocked committers and registered callbacks.
    pub(crate) waiters: usize,
    /// Some inserter waits for ring space.
    pub(crate) space_wanted: bool,
    /// An explicit sync was requested and is not done.
    pub(crate) sync_requested: bool,
    /// The log is closing (it drains what is pending, then stops).
    pub(crate) closing: bool,
}

/// Whether a flush round is due (Aether §4.1): an explicit sync or closing always; with
/// bytes pending, `X` waits outstanding, `L` bytes pending, bytes pending for `T`, or an
/// inserter waiting for ring space, whichever comes first.
///
/// Without pending bytes only a sync or closing calls for a round: an inserter waiting
/// for space would otherwise get an empty sync, repeated until someone releases (the
/// release wakes the daemon), and waiters whose records are already written only need
/// the sync in progress.
pub(crate) fn flush_due(w: &FlushWants, gc: &GroupCommit) -> bool {
    if w.sync_requested || w.closing {
        return true;
    }
    w.pending_bytes > 0
        && (w.space_wanted
            || w.waiters >= gc.max_waiters.max(1)
            || w.pending_bytes >= gc.max_bytes
            || w.pending_for >= gc.max_delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gc() -> GroupCommit {
        GroupCommit {
            max_waiters: 3,
            max_bytes: 1000,
            max_delay: Duration::from_millis(5),
            adaptive: false,
        }
    }

    fn pending() -> FlushWants {
        FlushWants {
            pending_bytes: 10,
            pending_for: Duration::from_millis(1),
            ..FlushWants::default()
        }
    }

    #[test]
    fn nothing_pending_and_nothing_asked_is_not_due() {
        assert!(!flush_due(&FlushWants::default(), &gc()));
        assert!(!flush_due(&pending(), &gc()), "below every threshold");
    }

    #[test]
    fn a_sync_request_or_closing_is_due_even_with_nothing_pending() {
        let sync = FlushWants {
            sync_requested: true,
            ..FlushWants::default()
        };
        let closing = FlushWants {
            closing: true,
            ..FlushWants::default()
        };
        assert!(flush_due(&sync, &gc()));
        assert!(flush_due(&closing, &gc()));
    }

    #[test]
    fn each_threshold_alone_makes_pending_bytes_due() {
        let gc = gc();
        let waiters = FlushWants {
            waiters: 3,
            ..pending()
        };
        let bytes = FlushWants {
            pending_bytes: 1000,
            ..pending()
        };
        let delay = FlushWants {
            pending_for: Duration::from_millis(5),
            ..pending()
        };
        let space = FlushWants {
            space_wanted: true,
            ..pending()
        };
        for (name, w) in [("X", waiters), ("L", bytes), ("T", delay), ("space", space)] {
            assert!(flush_due(&w, &gc), "{name}");
        }
        assert!(!flush_due(
            &FlushWants {
                waiters: 2,
                ..pending()
            },
            &gc
        ));
        assert!(!flush_due(
            &FlushWants {
                pending_bytes: 999,
                ..pending()
            },
            &gc
        ));
    }

    #[test]
    fn waiters_or_space_without_pending_bytes_are_not_due() {
        let w = FlushWants {
            waiters: 100,
            space_wanted: true,
            pending_for: Duration::from_secs(1),
            ..FlushWants::default()
        };
        assert!(!flush_due(&w, &gc()));
    }

    #[test]
    fn zero_waiters_threshold_means_one() {
        let gc = GroupCommit {
            max_waiters: 0,
            ..gc()
        };
        assert!(!flush_due(&pending(), &gc));
        assert!(flush_due(
            &FlushWants {
                waiters: 1,
                ..pending()
            },
            &gc
        ));
    }
}
