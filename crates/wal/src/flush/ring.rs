//! The flush path without a flush thread: rounds submitted to an [`IoRing`] (io_uring)
//! by the threads that commit, and reaped by them between transactions.
//!
//! Whoever finds a round due — an agent that has just registered a commit, a thread
//! that waits for the log, an agent between two transactions — takes the driver's lock
//! without waiting (`try_lock`), copies the released bytes out of the buffer, and
//! submits the round's steps (`steps.rs`: the same writes, failure points and syncs as
//! the daemon's round) as one linked chain; the submission does not wait for the device.
//! One round is in flight at a time, as on the daemon's path: the commits that arrive
//! during a round's sync share the next. Whoever next holds the lock and finds the
//! chain complete settles its syncs through the segments' fence, publishes the durable
//! LSN and, after letting go of the lock, runs the callbacks it satisfied; then starts
//! the next round if one is due. A committer sleeps on the log only when it has nothing
//! else to do: a thread blocked in [`Log::wait_durable`](crate::Log::wait_durable) waits
//! in the kernel for the round in flight, and an agent about to park waits there
//! instead, unless another thread already does.
//!
//! A request that arrives while another thread holds the lock is not lost: it sets
//! `wanted` before it tries, and the holder looks again after letting go while
//! `wanted` is set.
//!
//! The flush daemon stays as a backstop (`daemon.rs`, [`FlushDaemon::run_backstop`]):
//! it takes explicit syncs, a full buffer, closing, and any round that nobody has
//! driven for the group-commit delay `T` (bytes nobody waits for, a chain nobody
//! reaps). Its timer is the only wake-up it costs while the agents drive.
//!
//! [`FlushDaemon::run_backstop`]: super::FlushDaemon

use super::due::{flush_due, FlushWants};
use super::steps::{self, SegmentWriter, Step};
use crate::error::{Result, WalError};
use crate::segments::segment;
use crate::shared::Shared;
use crate::sync::Ordering;
use crate::Lsn;
use parking_lot::{Mutex, MutexGuard};
use sluice_storage::{IoRing, RingOp};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Segments one round writes at most: a round's chain has a write and a sync per
/// segment (the failure points submit nothing), well inside the ring's queue; the rest
/// of the released bytes go in the next round.
pub(crate) const MAX_ROUND_SEGMENTS: u64 = 8;

/// How a caller drives the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drive {
    /// Never block: if another thread holds the driver, leave it to that thread.
    Poll,
    /// If no other thread holds the driver, block until the round in flight completes.
    ReapIfFree,
    /// Take the driver (waiting for it), and block until the round in flight completes.
    Wait,
}

/// A round submitted and not yet settled.
struct Round {
    tag: u64,
    from: Lsn,
    to: Lsn,
    /// `sync_requested` when the round started: every sync asked for before is served.
    sync_ticket: u64,
    steps: Vec<Step>,
}

struct DriverState {
    ring: Box<dyn IoRing>,
    writer: SegmentWriter,
    round: Option<Round>,
    /// The bytes of the round in flight (reused once the ring lets go of them).
    staging: Arc<Vec<u8>>,
    /// When the driver first saw bytes pending that no round took yet.
    pending_since: Option<Instant>,
    next_tag: u64,
    /// Set by the backstop as the log closes: no round starts after it.
    stopped: bool,
}

/// See the module docs.
pub(crate) struct RingDriver {
    state: Mutex<DriverState>,
    /// Someone asked for a look while the lock was held.
    wanted: AtomicBool,
    /// A round is in flight (readable without the lock).
    busy: AtomicBool,
    /// What the ring is, for [`crate::Log::flush_path`].
    pub(crate) describe: String,
}

impl RingDriver {
    pub(crate) fn new(ring: Box<dyn IoRing>) -> RingDriver {
        let describe = ring.describe();
        RingDriver {
            state: Mutex::new(DriverState {
                ring,
                writer: SegmentWriter::default(),
                round: None,
                staging: Arc::new(Vec::with_capacity(1 << 20)),
                pending_since: None,
                next_tag: 0,
                stopped: false,
            }),
            wanted: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            describe,
        }
    }

    /// True while a round is in flight.
    pub(crate) fn busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    /// Reaps the round in flight if it is complete (with [`Drive::Wait`] or
    /// [`Drive::ReapIfFree`], waits for it), then starts the next if one is due.
    /// Returns true if a round completed.
    pub(crate) fn drive(&self, s: &Shared, how: Drive) -> bool {
        self.wanted.store(true, Ordering::SeqCst);
        let mut completed = false;
        loop {
            let guard = match how {
                Drive::Wait => Some(self.state.lock()),
                Drive::Poll | Drive::ReapIfFree => self.state.try_lock(),
            };
            let Some(mut st) = guard else {
                return completed;
            };
            self.wanted.store(false, Ordering::SeqCst);
            // Wait in the kernel only for a round this call has not already seen end.
            let wait = how != Drive::Poll && !completed;
            // Only a caller that waits anyway may wait for the segment preparer: a poll
            // (an agent between transactions, a callback's registration) never does.
            let outcome = self.step(s, &mut st, wait, how == Drive::Wait);
            drop(st);
            match outcome {
                Ok(Some(to)) => {
                    completed = true;
                    // Outside the lock: a callback may append, commit or close the log.
                    let _ = s.waiters.on_durable(to);
                    s.sync_done_parker.notify_all();
                }
                Ok(None) => {}
                Err(e) => {
                    s.poison(e);
                    return true;
                }
            }
            if !self.wanted.load(Ordering::SeqCst) {
                return completed;
            }
        }
    }

    /// Under the lock: settle a complete round, start a due one. Returns the durable
    /// LSN a settled round published.
    fn step(
        &self,
        s: &Shared,
        st: &mut MutexGuard<'_, DriverState>,
        wait: bool,
        may_wait: bool,
    ) -> Result<Option<Lsn>> {
        if s.health.is_poisoned() {
            return Ok(None);
        }
        let mut durable = None;
        if st.round.is_some() {
            if let Some(done) = st.ring.complete(wait)? {
                let round = st.round.take().expect("a round is in flight");
                assert_eq!(done.tag, round.tag, "one round in flight at a time");
                self.busy.store(false, Ordering::SeqCst);
                steps::settle(s, &round.steps, done.succeeded, done.result)?;
                steps::finish(s, &round.steps, round.from, round.to);
                s.sync_done.fetch_max(round.sync_ticket, Ordering::AcqRel);
                durable = Some(round.to);
            }
        }
        if st.round.is_none() && !st.stopped && self.due(s, st) {
            self.start(s, st, may_wait)?;
        }
        Ok(durable)
    }

    /// Whether a round is due (the group-commit rule the daemon follows, `due.rs`).
    fn due(&self, s: &Shared, st: &mut DriverState) -> bool {
        let released = s.buffer.released();
        let written = s.buffer.written();
        let pending = released > written;
        let now = Instant::now();
        if !pending {
            st.pending_since = None;
        } else if st.pending_since.is_none() {
            st.pending_since = Some(now);
        }
        flush_due(
            &FlushWants {
                pending_bytes: released.0 - written.0,
                pending_for: st.pending_since.map_or(Duration::ZERO, |t| now - t),
                waiters: s.waiters.outstanding.load(Ordering::SeqCst),
                space_wanted: s.buffer.core.space_wanted(),
                sync_requested: s.sync_requested.load(Ordering::Acquire)
                    != s.sync_done.load(Ordering::Acquire),
                // Closing drains what is pending; it needs no round of its own (every
                // round syncs what it wrote), and one per look would never end.
                closing: pending && s.closing.load(Ordering::Acquire),
            },
            &s.options.group_commit,
        )
    }

    /// Plans the round of the released bytes (at most [`MAX_ROUND_SEGMENTS`] segments'
    /// worth), copies them out and submits it. `wait`: the caller may wait for the
    /// segment preparer; if it may not and would have to, nothing starts (the backstop,
    /// which may, is asked to) and this returns `Ok(false)`.
    fn start(&self, s: &Shared, st: &mut DriverState, wait: bool) -> Result<bool> {
        // Before the bytes: every sync asked for so far is served by a round that takes
        // every byte released now.
        let ticket = s.sync_requested.load(Ordering::Acquire);
        let from = s.buffer.written();
        let released = s.buffer.released();
        let seg_bytes = s.segments.segment_bytes;
        let cap = segment::segment_start(from, seg_bytes).add(MAX_ROUND_SEGMENTS * seg_bytes);
        let to = released.min(cap);
        let sync_ticket = if to == released { ticket } else { 0 };
        // Planned before the bytes are taken: a plan that would wait leaves them pending.
        let Some(steps) = st.writer.plan(s, from, to, wait)? else {
            s.request_flush();
            return Ok(false);
        };
        let staging = Arc::get_mut(&mut st.staging).expect("no round holds the staging");
        staging.clear();
        s.buffer.copy_out(from, to, staging);
        s.buffer.mark_written(to);
        st.pending_since = None;
        let tag = st.next_tag;
        st.next_tag += 1;
        if steps.is_empty() {
            // A sync of a log that has no segment yet: nothing to write or sync.
            steps::finish(s, &steps, from, to);
            s.sync_done.fetch_max(sync_ticket, Ordering::AcqRel);
            return Ok(true);
        }
        let ops: Vec<RingOp> = steps.iter().map(|p| p.ring_op(&st.staging)).collect();
        st.ring.submit(tag, ops).map_err(WalError::from)?;
        st.round = Some(Round {
            tag,
            from,
            to,
            sync_ticket,
            steps,
        });
        self.busy.store(true, Ordering::SeqCst);
        // A backstop asleep without a timer must take a timer now: the thread that
        // submitted may never reap (a callback's owner that does not poll).
        s.buffer.core.flush.wake_if_idle();
        Ok(true)
    }

    /// The backstop's last look as the log closes: if nothing is pending, in flight or
    /// asked for, no round starts any more and it returns true.
    pub(crate) fn stop_if_drained(&self, s: &Shared) -> bool {
        let mut st = self.state.lock();
        let drained = st.round.is_none()
            && s.buffer.released() == s.buffer.written()
            && s.sync_requested.load(Ordering::Acquire) == s.sync_done.load(Ordering::Acquire);
        if drained || s.health.is_poisoned() {
            st.stopped = true;
        }
        st.stopped
    }

    /// True once the backstop stopped the driver.
    pub(crate) fn stopped(&self) -> bool {
        self.state.lock().stopped
    }
}
