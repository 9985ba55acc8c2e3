//! The flush daemon: one thread that moves released bytes to disk.
//!
//! Each round: copy `[written, released)` out of the ring (freeing the space at once, so
//! inserters keep going while the disk works), write it to the segment file(s), sync, then
//! publish the new durable LSN and wake waiters. The daemon never holds an insertion lock,
//! so no sync ever runs under one. The first failed write or sync poisons the log.
//!
//! Group commit (Aether §4.1): a round starts when `X` waits are outstanding, `L` bytes are
//! pending, `T` has passed since bytes became pending, an inserter needs ring space, a sync
//! was requested, or the log is closing — whichever comes first. With the defaults
//! (`X = 1`) a waiter never waits for more than the sync in progress plus its own: the
//! commits that arrive during one sync share the next.

use super::due::{flush_due, FlushWants};
use super::gather::{GatherTuner, FIXED_BUDGET};
use crate::error::WalError;
use crate::segments::segment;
use crate::shared::Shared;
use crate::sync::Ordering;
use crate::Lsn;
use sluice_storage::FileHandle;
use std::time::{Duration, Instant};

pub(crate) struct FlushDaemon {
    shared: std::sync::Arc<Shared>,
    staging: Vec<u8>,
    /// The segment being appended to.
    current: Option<(Lsn, Box<dyn FileHandle>)>,
    /// A finished segment written this round that still needs its sync.
    previous: Option<(Lsn, Box<dyn FileHandle>)>,
    pending_since: Option<Instant>,
    /// Waiters (blocked threads and callbacks) the last round completed: most of them come
    /// straight back with their next commit.
    woken_last_round: usize,
    /// The gather budget's tuner, if the group commit is adaptive.
    tuner: Option<GatherTuner>,
}

impl FlushDaemon {
    pub(crate) fn new(shared: std::sync::Arc<Shared>) -> Self {
        FlushDaemon {
            shared,
            staging: Vec::with_capacity(1 << 20),
            current: None,
            previous: None,
            pending_since: None,
            woken_last_round: 0,
            tuner: None,
        }
    }

    pub(crate) fn run(mut self) {
        if self.shared.options.group_commit.adaptive {
            self.tuner = Some(GatherTuner::new(Instant::now()));
        }
        self.publish_budget();
        loop {
            let s = &*self.shared;
            if s.health.is_poisoned() {
                return;
            }
            let closing = s.closing.load(Ordering::Acquire);
            let released = s.buffer.released();
            let written = s.buffer.written();
            let sync_wanted = s.sync_requested.load(Ordering::Acquire);
            let sync_done = s.sync_done.load(Ordering::Acquire);
            let pending = released > written;
            if closing && !pending && sync_wanted == sync_done {
                return;
            }
            let gc = &s.options.group_commit;
            let now = Instant::now();
            if pending && self.pending_since.is_none() {
                self.pending_since = Some(now);
            }
            let due = flush_due(
                &FlushWants {
                    pending_bytes: released.0 - written.0,
                    pending_for: self.pending_since.map_or(Duration::ZERO, |t| now - t),
                    waiters: s.waiters.outstanding.load(Ordering::SeqCst),
                    space_wanted: s.buffer.core.space_wanted(),
                    sync_requested: sync_wanted != sync_done,
                    closing,
                },
                gc,
            );
            if !due {
                if pending {
                    let left = gc
                        .max_delay
                        .saturating_sub(now.duration_since(self.pending_since.unwrap()));
                    s.buffer.core.flush.park_timeout(left, || self.wanted());
                } else {
                    // Nothing pending: sleep until an insert, a wait or a request wakes us.
                    s.buffer.core.flush.park_idle(|| {
                        s.buffer.released() > written
                            || s.sync_requested.load(Ordering::Acquire) != sync_done
                            || s.closing.load(Ordering::Acquire)
                    });
                }
                continue;
            }
            self.pending_since = None;
            let released = if sync_wanted == sync_done && !closing {
                self.gather(released)
            } else {
                released
            };
            if let Err(e) = self.round(written, released) {
                self.shared.poison(e);
                return;
            }
            if let Some(t) = &mut self.tuner {
                t.on_round(self.woken_last_round, Instant::now());
                self.publish_budget();
            }
            self.shared.sync_done.store(sync_wanted, Ordering::Release);
            self.shared.sync_done_parker.notify_all();
        }
    }

    /// Lets the waiters woken by the last round re-join before the next sync starts.
    ///
    /// With more threads than cores, a round's waiters do not all run at once when woken:
    /// starting the next sync as soon as the first of them has appended would leave the
    /// rest to wait a whole extra sync. So while fewer waits are outstanding than the last
    /// round woke, the daemon yields its core (never sleeps: no timed delay is added), at
    /// most [`FlushDaemon::budget`] times. With one client this is a no-op.
    fn gather(&self, released: Lsn) -> Lsn {
        let s = &*self.shared;
        let mut seen = s.waiters.outstanding.load(Ordering::SeqCst);
        for _ in 0..self.budget() {
            if seen >= self.woken_last_round || s.buffer.core.space_wanted() {
                break;
            }
            std::thread::yield_now();
            seen = s.waiters.outstanding.load(Ordering::SeqCst);
        }
        s.buffer.released().max(released)
    }

    /// Yields a gather may spend: the tuner's budget, or a fixed 8.
    fn budget(&self) -> usize {
        self.tuner
            .as_ref()
            .map_or(FIXED_BUDGET, GatherTuner::budget)
    }

    fn publish_budget(&self) {
        self.shared
            .stats
            .gather_budget
            .store(self.budget() as u64, Ordering::Relaxed);
    }

    /// True if a timed park should end early: a flush is due (the deadline itself ends
    /// the park, so time is left out).
    fn wanted(&self) -> bool {
        let s = &*self.shared;
        flush_due(
            &FlushWants {
                pending_bytes: s.buffer.released().0 - s.buffer.written().0,
                pending_for: Duration::ZERO,
                waiters: s.waiters.outstanding.load(Ordering::SeqCst),
                space_wanted: s.buffer.core.space_wanted(),
                sync_requested: s.sync_requested.load(Ordering::Acquire)
                    != s.sync_done.load(Ordering::Acquire),
                closing: s.closing.load(Ordering::Acquire),
            },
            &s.options.group_commit,
        )
    }

    /// Writes and syncs `[from, to)`; syncs even when the range is empty (an explicit
    /// sync must reach the disk whatever is buffered).
    fn round(&mut self, from: Lsn, to: Lsn) -> Result<(), WalError> {
        let s = self.shared.clone();
        // The daemon alone moves `written`, so a round starts exactly where the last one
        // ended; `copy_out` and the mark_* calls assert the rest of the order
        // (released ≥ written ≥ durable, none moving back). (Debug only: the commit path.)
        debug_assert_eq!(
            s.buffer.written(),
            from,
            "log positions: a flush round must start at the written position"
        );
        self.staging.clear();
        s.buffer.copy_out(from, to, &mut self.staging);
        s.buffer.mark_written(to);
        let seg_bytes = s.segments.segment_bytes;
        let mut at = from;
        let mut off = 0usize;
        while at < to {
            let seg = segment::segment_start(at, seg_bytes);
            if self.current.as_ref().map(|c| c.0) != Some(seg) {
                let next = s.preparer.obtain(s.prepare_context(), seg)?;
                if let Some(old) = self.current.replace((seg, next)) {
                    if let Some((start, unsynced)) = self.previous.replace(old) {
                        s.segments.sync(start, &*unsynced)?;
                    }
                }
            }
            let piece = (seg.0 + seg_bytes).min(to.0) - at.0;
            // Never write past the file's allocated, synced extent (the preparer's).
            s.preparer
                .reserve(s.prepare_context(), seg, at.0 + piece - seg.0)?;
            let file = &self.current.as_ref().unwrap().1;
            file.write_at(
                &self.staging[off..off + piece as usize],
                segment::SEGMENT_HEADER_BYTES + (at.0 - seg.0),
            )?;
            file.failpoint(sluice_storage::failpoint::LOG_WRITTEN)?;
            s.stats.bytes_written.fetch_add(piece, Ordering::Relaxed);
            at = at.add(piece);
            off += piece as usize;
        }
        if let Some((start, prev)) = self.previous.take() {
            s.segments.sync(start, &*prev)?;
            s.stats.syncs.fetch_add(1, Ordering::Relaxed);
        }
        if self.current.is_none() {
            // An explicit sync before anything was ever written: sync the newest segment
            // if there is one, so the request still reaches the disk.
            if let Some(seg) = s.segments.newest_segment() {
                let dir = s.segments.dir_of(seg);
                self.current = Some((seg, segment::open(&*s.segments.storage, dir, seg)?));
            }
        }
        if let Some((start, f)) = &self.current {
            s.segments.sync(*start, &**f)?;
            s.stats.syncs.fetch_add(1, Ordering::Relaxed);
        }
        s.stats.flushes.fetch_add(1, Ordering::Relaxed);
        s.buffer.mark_durable(to);
        if let Some(a) = &s.archiver {
            if to.0 / seg_bytes > from.0 / seg_bytes {
                a.notify(); // a segment is finished: it may be archived
            }
        }
        let parked = s.waiters.parked();
        // Blocked committers and completed callbacks alike tend to come straight back
        // (a pipelined agent registers its next commit soon after the hand-back).
        self.woken_last_round = parked + s.waiters.on_durable(to);
        Ok(())
    }
}
