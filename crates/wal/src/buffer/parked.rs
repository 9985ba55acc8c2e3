//! The threads parked until their release turn (`turns.rs` has the protocol): the list
//! the buffer core keeps, and which a release checks without its lock.

use crate::sync::{AtomicUsize, Mutex, Ordering, Thread};
use crate::Lsn;
use crossbeam_utils::CachePadded;

/// A parked thread waiting for `released` to reach `start`. `end > start`: its filled
/// range, whose turn comes when `released == start`, to be published on its behalf.
/// `end == start`: a plain wait, satisfied once `released ≥ start`.
pub(super) struct Entry {
    pub(super) start: Lsn,
    pub(super) end: Lsn,
    pub(super) thread: Thread,
}

/// Threads parked until their release turn.
pub(crate) struct Turns {
    /// Entries in `parked`, read without the lock on every release (its own cache line:
    /// it is read far more often than written).
    pub(super) count: CachePadded<AtomicUsize>,
    pub(super) parked: Mutex<Vec<Entry>>,
}

impl Turns {
    pub(crate) fn new() -> Turns {
        Turns {
            count: CachePadded::new(AtomicUsize::new(0)),
            parked: Mutex::new(Vec::new()),
        }
    }

    /// True if some thread is (or is about to be) parked. The caller has issued a SeqCst
    /// fence after changing `released`.
    pub(crate) fn anyone_parked(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Wakes every parked thread (the buffer stopped); each re-checks and leaves.
    pub(crate) fn wake_all(&self) {
        let threads: Vec<Thread> = self
            .parked
            .lock()
            .iter()
            .map(|e| e.thread.clone())
            .collect();
        for t in threads {
            t.unpark();
        }
    }
}
