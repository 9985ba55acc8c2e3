//! `atomic`: beyond the paper (the direction InnoDB 8.0 took). Reservation is one
//! fetch-add on the reserved position — no lock, no consolidation; the copy runs in
//! parallel; the release goes through the delegation queue (`queue`) and never waits, so
//! no inserting thread ever waits for another (only for ring space). Whoever holds the
//! release turn publishes every filled range that follows it.
//!
//! A fetch-add cannot look before it leaps: a reservation that turns out to cross a
//! segment end is filled with padding frames (up to the boundary, and from it to the
//! reservation's end), released like any range, and the insert reserves again — this time
//! with a compare-and-swap that places the frame first, so it cannot cross again. That
//! happens about once per segment.

use super::queue::ReleaseQueue;
use super::{BufferCore, InsertAlgorithm, Placement, Record};
use crate::error::Result;
use crate::sync::{AtomicU64, Ordering};
use crate::Lsn;
use crossbeam_utils::CachePadded;

pub(crate) struct AtomicInsert {
    /// The reserved position.
    reserved: CachePadded<AtomicU64>,
    queue: ReleaseQueue,
}

impl AtomicInsert {
    pub(crate) fn new(core: &BufferCore, start: Lsn) -> Self {
        AtomicInsert {
            reserved: CachePadded::new(AtomicU64::new(start.0)),
            queue: ReleaseQueue::new(core, start),
        }
    }
}

impl AtomicInsert {
    /// Reserves `len` bytes with padding in front if they would cross a segment end: a
    /// compare-and-swap loop that places before it reserves. Used only after a fetch-add
    /// reservation crossed a boundary: a frame close to a segment's size could otherwise
    /// cross again on every retry (each fetch-add lands at the same offset).
    fn reserve_placed(&self, core: &BufferCore, len: u64) -> Placement {
        let mut cur = self.reserved.load(Ordering::Relaxed);
        loop {
            let p = core.place(Lsn(cur), len);
            match self.reserved.compare_exchange_weak(
                cur,
                p.end.0,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return p,
                Err(now) => cur = now,
            }
        }
    }
}

impl InsertAlgorithm for AtomicInsert {
    fn insert(&self, core: &BufferCore, rec: &Record<'_>) -> Result<Lsn> {
        let len = rec.frame_len;
        // Relaxed: the reservation publishes nothing; the filled bytes reach the flush side
        // through the queue and `released`.
        let at = Lsn(self.reserved.fetch_add(len, Ordering::Relaxed));
        let end = at.add(len);
        let mut p = core.place(at, len);
        if p.base > at {
            // Crosses a segment end: pad what we got on both sides of the boundary,
            // release it like any range, and reserve again, placed.
            let boundary = p.base;
            // SAFETY: the fetch-add gave us `[at, end)` alone; `prepare` waits for its
            // space and pads `[at, boundary)`; it is not released before `finish`.
            unsafe {
                core.prepare(Placement {
                    start: at,
                    base: boundary,
                    end,
                })?;
                core.fill_padding(boundary, end.0 - boundary.0);
            }
            self.queue.finish(core, at, end);
            p = self.reserve_placed(core, len);
        }
        // SAFETY: `[p.start, p.end)` is ours alone (fetch-add or CAS); `prepare` waits for
        // its space and writes any padding; it is not released before `finish`.
        unsafe {
            core.prepare(p)?;
            core.fill_record(p.base, rec);
        }
        self.queue.finish(core, p.start, p.end);
        Ok(p.base)
    }

    fn wake_all(&self) {
        // Nothing parks here: the only wait is for ring space, which the core's `stop`
        // ends.
    }
}
