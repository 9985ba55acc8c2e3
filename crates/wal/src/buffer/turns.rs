//! Release in LSN order: waiting for one's turn, and handing a parked thread's release to
//! its predecessor.
//!
//! In the variants that release in order (decoupled, hybrid, and the serial groups of
//! consolidated), a thread whose range is filled waits until `released` reaches its start
//! (Aether Algorithm 3, "wait my turn"), then publishes its end. The wait spins about a
//! microsecond and then parks. Parked waiters raise a problem the paper did not have (its
//! machine had a hardware thread per software thread): if each parked thread had to be
//! woken to publish its own end, a run of `n` parked successors would cost `n` wake-ups in
//! series, each a trip through the scheduler — with more threads than cores that chain
//! is the whole throughput. So a parked waiter leaves its range with its entry, and the
//! thread that publishes `released = start` publishes that range's end too, then the
//! next parked range's, and wakes them all at once. A woken thread finds its range
//! released and returns. Nothing returns before its record is released, and releases stay
//! in LSN order; only who performs the store changes.
//!
//! Who may publish a range is decided under the `parked` lock: the range's owner while its
//! entry is not in the list (it is spinning, or it re-checks and takes its entry back), or
//! the thread that finds the entry there with `released` at its start (the entry is
//! removed in the same critical section). Exactly one of them does.
//!
//! The same list holds plain waits for a position (`wait_turn`): the consolidated
//! variant's next leader waiting for the previous group's release.

use super::parked::Entry;
use super::BufferCore;
use crate::error::{Result, WalError};
use crate::sync::{current, fence, park, spin_hint, Ordering};
use crate::wait::SPINS;
use crate::Lsn;

impl BufferCore {
    /// Releases the filled range `[start, end)` in LSN order: waits until `released`
    /// reaches `start`, then publishes `end` — or, once parked, lets the thread that
    /// publishes `start` publish `end` on its behalf. Returns once `released ≥ end`.
    /// Fails only if the buffer stopped first.
    pub(crate) fn release_in_order(&self, start: Lsn, end: Lsn) -> Result<()> {
        assert!(start < end, "empty release [{start}, {end})");
        self.take_turn(start, end)
    }

    /// Waits until `released ≥ at`, without releasing anything. Fails only if the buffer
    /// stopped first.
    pub(crate) fn wait_turn(&self, at: Lsn) -> Result<()> {
        self.take_turn(at, at)
    }

    /// Spins about a microsecond for `released` to reach `start`; true if it did (the
    /// release turn at `start` is then the caller's, if it owns the range there).
    pub(crate) fn spin_for_turn(&self, start: Lsn) -> bool {
        for _ in 0..SPINS {
            if self.released.load(Ordering::Acquire) == start.0 {
                return true;
            }
            spin_hint();
        }
        false
    }

    fn take_turn(&self, start: Lsn, end: Lsn) -> Result<()> {
        let plain = end == start;
        let reached = |released: u64| {
            if plain {
                released >= start.0
            } else {
                // A range's turn: `released` cannot pass it before it is published.
                assert!(
                    released <= start.0,
                    "turn at {start} passed: released is {released}"
                );
                released == start.0
            }
        };
        // Timed from here only if the turn has not come yet (log-buffer contention).
        let _waiting =
            crate::insert_wait::Waiting::unless(|| reached(self.released.load(Ordering::Acquire)));
        for _ in 0..SPINS {
            if reached(self.released.load(Ordering::Acquire)) {
                return self.publish_own(start, end);
            }
            spin_hint();
        }
        let me = current();
        {
            let mut parked = self.turns.parked.lock();
            // One load: `released` moves outside this lock.
            if reached(self.released.load(Ordering::Acquire)) {
                drop(parked);
                return self.publish_own(start, end);
            }
            assert!(
                plain || parked.iter().all(|e| e.start != start || e.end == e.start),
                "two ranges parked at {start}"
            );
            parked.push(Entry {
                start,
                end,
                thread: me.clone(),
            });
            self.turns.count.store(parked.len(), Ordering::Relaxed);
        }
        // Pairs with the fence in `publish_released`: either the publisher of `start` sees
        // us counted and takes our entry, or our re-check below sees `released` there.
        fence(Ordering::SeqCst);
        loop {
            {
                let mut parked = self.turns.parked.lock();
                match parked.iter().position(|e| e.thread.id() == me.id()) {
                    None => {
                        // The publisher of `start` removed our entry (under this lock, after
                        // publishing our range if we have one).
                        let released = self.released.load(Ordering::Acquire);
                        assert!(released >= end.0, "entry taken but {end} not released");
                        return Ok(());
                    }
                    Some(i) if reached(self.released.load(Ordering::Acquire)) => {
                        parked.swap_remove(i);
                        self.turns.count.store(parked.len(), Ordering::Relaxed);
                        drop(parked);
                        return self.publish_own(start, end);
                    }
                    Some(i) if self.is_stopped() => {
                        parked.swap_remove(i);
                        self.turns.count.store(parked.len(), Ordering::Relaxed);
                        return Err(WalError::Closed);
                    }
                    Some(_) => {}
                }
            }
            park();
        }
    }

    /// Our turn has come and nobody else will publish our range.
    fn publish_own(&self, start: Lsn, end: Lsn) -> Result<()> {
        if end > start {
            self.publish_released(start, end);
        }
        Ok(())
    }

    /// Called after `released` moved (and a SeqCst fence) when threads are parked: wakes
    /// the plain waits it satisfies, and takes every parked range whose turn has come,
    /// publishing it and waking its thread.
    pub(super) fn hand_over(&self) {
        let mut woken = Vec::new();
        {
            let mut parked = self.turns.parked.lock();
            loop {
                let at = Lsn(self.released.load(Ordering::Acquire));
                parked.retain(|e| {
                    let satisfied = e.end == e.start && e.start <= at;
                    if satisfied {
                        woken.push(e.thread.clone());
                    }
                    !satisfied
                });
                let Some(i) = parked.iter().position(|e| e.start == at && e.end > e.start) else {
                    break;
                };
                let e = parked.swap_remove(i);
                // The entry's range is filled (it was parked after filling) and its turn
                // is ours to give: publish it, still under the lock, so its owner finds the
                // entry gone only once its range is released.
                self.store_released(e.start, e.end);
                woken.push(e.thread);
            }
            self.turns.count.store(parked.len(), Ordering::Relaxed);
        }
        for t in woken {
            t.unpark();
        }
    }
}
