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
use super::ring::{Drive, RingDriver};
use super::steps::{self, SegmentWriter};
use crate::error::WalError;
use crate::shared::Shared;
use crate::sync::Ordering;
use crate::Lsn;
use std::time::{Duration, Instant};

pub(crate) struct FlushDaemon {
    shared: std::sync::Arc<Shared>,
    /// The ring the committing threads drive, on the io_uring path: the daemon is then
    /// their backstop.
    ring: Option<std::sync::Arc<RingDriver>>,
    staging: Vec<u8>,
    /// The segment being appended to.
    writer: SegmentWriter,
    pending_since: Option<Instant>,
    /// Waiters (blocked threads and callbacks) the last round completed: most of them come
    /// straight back with their next commit.
    woken_last_round: usize,
    /// The gather budget's tuner, if the group commit is adaptive.
    tuner: Option<GatherTuner>,
}

impl FlushDaemon {
    pub(crate) fn new(
        shared: std::sync::Arc<Shared>,
        ring: Option<std::sync::Arc<RingDriver>>,
    ) -> Self {
        FlushDaemon {
            shared,
            ring,
            staging: Vec::with_capacity(1 << 20),
            writer: SegmentWriter::default(),
            pending_since: None,
            woken_last_round: 0,
            tuner: None,
        }
    }

    pub(crate) fn run(mut self) {
        if let Some(ring) = self.ring.clone() {
            return self.run_backstop(&ring);
        }
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
        let steps = self
            .writer
            .plan(&s, from, to, true)?
            .expect("a plan that may wait is always made");
        steps::run(&s, &steps, &self.staging)?;
        steps::finish(&s, &steps, from, to);
        let parked = s.waiters.parked();
        // Blocked committers and completed callbacks alike tend to come straight back
        // (a pipelined agent registers its next commit soon after the hand-back).
        self.woken_last_round = parked + s.waiters.on_durable(to);
        Ok(())
    }

    /// The daemon on the ring path (`ring.rs`): a backstop that drives the ring only for
    /// what no committer drives — an explicit sync, an inserter waiting for buffer
    /// space, closing, and a round nobody has driven for the group-commit delay `T`
    /// (bytes nobody waits for, or a chain nobody reaps). While the committers drive,
    /// its timer is all it costs.
    fn run_backstop(self, ring: &RingDriver) {
        let s = &*self.shared;
        let period = s
            .options
            .group_commit
            .max_delay
            .max(Duration::from_micros(100));
        let urgent = || {
            s.sync_requested.load(Ordering::Acquire) != s.sync_done.load(Ordering::Acquire)
                || s.closing.load(Ordering::Acquire)
                || s.buffer.core.space_wanted()
        };
        loop {
            if s.health.is_poisoned() {
                ring.stop_if_drained(s);
                return;
            }
            if s.closing.load(Ordering::Acquire) && ring.stop_if_drained(s) {
                return;
            }
            if urgent() {
                if !ring.drive(s, Drive::Wait) && !ring.busy() {
                    // Nothing to drive for it yet (an inserter wants space while nothing
                    // is released): wait for a release, or a period.
                    let written = s.buffer.written();
                    s.buffer.core.flush.park_timeout(period, || {
                        s.buffer.released() > written || s.health.is_poisoned()
                    });
                }
                continue;
            }
            let pending = s.buffer.released() > s.buffer.written();
            if pending || ring.busy() {
                let mark = (s.buffer.written(), s.buffer.durable());
                s.buffer.core.flush.park_timeout(period, urgent);
                if (s.buffer.written(), s.buffer.durable()) == mark && !urgent() {
                    // Nobody drove for a whole period: the backstop does.
                    ring.drive(s, Drive::Wait);
                }
                continue;
            }
            let written = s.buffer.written();
            s.buffer
                .core
                .flush
                .park_idle(|| s.buffer.released() > written || ring.busy() || urgent());
        }
    }
}
