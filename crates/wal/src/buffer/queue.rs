//! The delegated-release queue (Aether Algorithm 4, appendix A.3), shared by `delegated`
//! and `atomic`.
//!
//! Reservations are totally ordered by LSN and tile the stream, so the queue needs no
//! links: the node of the range starting at `p` is the entry of the 8-byte block at `p`
//! (one `AtomicU64` per block of the ring), and its successor's node is the entry at the
//! range's end. At any time exactly one thread holds the *release turn* — the right to
//! publish the range starting at `released`:
//!
//! * A thread that has filled `[p, e)` tries to CAS its entry from "nothing" to
//!   `DELEGATED | e` and, on success, returns at once: whoever gets the turn at `p` will
//!   publish its range (Scott's abortable queue: the waiting node is abandoned).
//! * The CAS fails only if the entry says `HEAD | p`: the turn was handed to `p` before
//!   the owner finished. The owner then publishes `e` itself and hands the turn on.
//! * Handing the turn on at position `q` (after publishing `released = q`): if `q`'s entry
//!   is `DELEGATED | e`, publish `e` and continue at `e`; otherwise CAS the entry to
//!   `HEAD | q` and stop — `q`'s owner is still copying (or has not reserved yet) and
//!   will find the mark.
//!
//! No thread ever waits for its predecessor here. To keep one thread from publishing for
//! others forever (the "treadmill"), `delegated` makes about 1 in 32 ranges keep their own
//! release: such an owner waits for its turn instead of delegating, and the turn holder's
//! hand-off stops at its unmarked entry.
//!
//! Entries are reused every lap of the ring, so each value carries the LSN it is about:
//! `DELEGATED | e` belongs to the range at `p` iff `p < e ≤ p + capacity`, `HEAD | q` iff
//! `q == p`. Anything older is "nothing". A value from a *later* lap can meet a slow turn
//! holder that published `p`, was descheduled, and comes back after the ring moved on
//! (possible only if `p`'s owner released without the mark, i.e. it kept its release):
//! such a value proves the turn at `p` was long since used, and the hand-off stops.

use super::BufferCore;
use crate::frame;
use crate::sync::{AtomicU64, Ordering};
use crate::Lsn;

const DELEGATED: u64 = 1 << 62;
const HEAD: u64 = 1 << 63;
const LSN_MASK: u64 = DELEGATED - 1;

pub(crate) struct ReleaseQueue {
    /// One entry per 8-byte block of the ring.
    entries: Box<[AtomicU64]>,
    /// Ring bytes (the lap length).
    capacity: u64,
}

impl ReleaseQueue {
    /// A queue for `core`'s ring whose first range starts at `start` (and so holds the
    /// turn from the outset).
    pub(crate) fn new(core: &BufferCore, start: Lsn) -> ReleaseQueue {
        let capacity = core.capacity();
        let blocks = (capacity / frame::ALIGN) as usize;
        let entries: Box<[AtomicU64]> = (0..blocks).map(|_| AtomicU64::new(0)).collect();
        let q = ReleaseQueue { entries, capacity };
        q.entry(start).store(HEAD | start.0, Ordering::Relaxed);
        q
    }

    fn entry(&self, at: Lsn) -> &AtomicU64 {
        debug_assert!(at.0.is_multiple_of(frame::ALIGN));
        let i = (at.0 / frame::ALIGN) as usize & (self.entries.len() - 1);
        &self.entries[i]
    }

    /// The filled range `[start, end)` is ready: delegate its release, or, if the turn is
    /// already at `start`, publish it and hand the turn on. Never waits.
    pub(crate) fn finish(&self, core: &BufferCore, start: Lsn, end: Lsn) {
        assert!(start < end && end.0 - start.0 <= self.capacity && end.0 <= LSN_MASK);
        let entry = self.entry(start);
        let mut cur = entry.load(Ordering::Acquire);
        loop {
            if cur == HEAD | start.0 {
                // The turn came to us before we finished: the release is ours.
                return self.release_from(core, start, end);
            }
            debug_assert!(
                !self.is_delegated_at(cur, start),
                "range at {start} finished twice"
            );
            // Release ordering: whoever reads `DELEGATED | end` and publishes it must see
            // our filled bytes.
            match entry.compare_exchange(
                cur,
                DELEGATED | end.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(now) => cur = now,
            }
        }
    }

    /// The caller holds the turn at `start` (it waited for `released == start`, or found
    /// the head mark): publishes `[start, end)` together with the delegated ranges that
    /// follow it, and hands the turn on.
    pub(crate) fn release_from(&self, core: &BufferCore, mut start: Lsn, mut end: Lsn) {
        loop {
            // Collect the run of delegated successors first and publish once: one store
            // and fence for the run instead of one per range. (They lie above `released`,
            // so their entries cannot have been reused for a later lap.)
            while let Some(next) = self.delegated_end(end) {
                end = next;
            }
            core.publish_released(start, end);
            match self.hand_off(end) {
                None => return,
                // Its owner delegated between our look and the hand-off: ours to publish.
                Some(next) => (start, end) = (end, next),
            }
        }
    }

    /// The end of the range at `at` if its owner has delegated its release.
    fn delegated_end(&self, at: Lsn) -> Option<Lsn> {
        let v = self.entry(at).load(Ordering::Acquire);
        self.is_delegated_at(v, at).then_some(Lsn(v & LSN_MASK))
    }

    /// Hands the turn to the range at `at` (whose start `released` has just reached):
    /// marks its entry `HEAD` so its owner releases itself when it finishes. Returns the
    /// range's end instead if its owner has already delegated it (the turn stays ours).
    fn hand_off(&self, at: Lsn) -> Option<Lsn> {
        let entry = self.entry(at);
        let mut cur = entry.load(Ordering::Acquire);
        loop {
            if self.is_delegated_at(cur, at) {
                return Some(Lsn(cur & LSN_MASK));
            }
            if self.is_later_than(cur, at) {
                // The turn at `at` was taken and used without the mark (its owner kept its
                // release and the ring moved on): nothing is left for us.
                return None;
            }
            // Release ordering pairs with the owner's failed CAS: it must see `released`
            // at `at` before it publishes its own end.
            match entry.compare_exchange(cur, HEAD | at.0, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return None,
                Err(now) => cur = now,
            }
        }
    }

    /// True if `v` is the delegation mark of the range starting at `at`.
    fn is_delegated_at(&self, v: u64, at: Lsn) -> bool {
        let lsn = v & LSN_MASK;
        v & !LSN_MASK == DELEGATED && lsn > at.0 && lsn <= at.0 + self.capacity
    }

    /// True if `v` was written for a range at or after `at`'s next lap, or is `at`'s own
    /// head mark: either way the turn at `at` needs nothing more.
    fn is_later_than(&self, v: u64, at: Lsn) -> bool {
        let lsn = v & LSN_MASK;
        match v & !LSN_MASK {
            HEAD => lsn >= at.0,
            DELEGATED => lsn > at.0 + self.capacity,
            _ => false,
        }
    }
}
