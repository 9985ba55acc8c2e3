//! Spin-then-park waiting.
//!
//! Our benchmark machines run more threads than cores, so a waiter that only spins can
//! starve the very thread it waits for. Every wait in the log spins for about a
//! microsecond (long enough to catch a predecessor that is mid-copy on another core) and
//! then parks on a condition variable until a notifier advances the state.

use crate::sync::{fence, AtomicUsize, Condvar, Mutex, Ordering};
use std::time::Duration;

/// Spin iterations before parking. A `pause` instruction costs 10–140 cycles depending on
/// the processor, so 64 of them are roughly a microsecond. Under loom every spin is a
/// scheduling point, so the models spin once: enough to cover the spin path, without
/// multiplying the interleavings to explore.
pub(crate) const SPINS: u32 = if cfg!(loom) { 1 } else { 64 };

/// A place where threads wait for a condition that other threads make true.
///
/// Protocol (no lost wake-ups): a waiter announces itself in `waiters`, issues a SeqCst
/// fence, then re-checks the condition under the mutex before sleeping; a notifier changes
/// the state first, issues a SeqCst fence, then, if anyone announced itself, takes and
/// drops the mutex before `notify_all`. The two fences order the waiter's announcement
/// and the notifier's state change (a store-buffering pattern that acquire/release alone
/// does not order): either the notifier sees the waiter counted, or the waiter's re-check
/// sees the new state. If it sees the waiter, the mutex makes sure the waiter is either
/// before its re-check or already asleep when the notification comes.
#[derive(Debug, Default)]
pub(crate) struct Parker {
    waiters: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Parker {
    pub(crate) fn new() -> Self {
        Parker {
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Returns once `ready()` is true.
    pub(crate) fn wait_until(&self, mut ready: impl FnMut() -> bool) {
        for _ in 0..SPINS {
            if ready() {
                return;
            }
            crate::sync::spin_hint();
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let mut g = self.lock.lock();
        while !ready() {
            g = self.cv.wait(g);
        }
        drop(g);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Parks once until notified or `timeout` passes, unless `ready()` already holds.
    /// Returns `ready()`'s last value. No spinning: used by the flush daemon, which has
    /// nothing better to do than sleep.
    pub(crate) fn park_timeout(&self, timeout: Duration, mut ready: impl FnMut() -> bool) -> bool {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let mut g = self.lock.lock();
        let mut ok = ready();
        if !ok {
            g = self.cv.wait_for(g, timeout);
            ok = ready();
        }
        drop(g);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        ok
    }

    /// Parks once until notified, unless `ready()` already holds.
    pub(crate) fn park(&self, mut ready: impl FnMut() -> bool) -> bool {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let mut g = self.lock.lock();
        let mut ok = ready();
        if !ok {
            g = self.cv.wait(g);
            ok = ready();
        }
        drop(g);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        ok
    }

    /// Wakes every parked waiter. Call after changing the state they wait on. Cheap (a
    /// fence and one atomic load) when nobody is parked.
    pub(crate) fn notify_all(&self) {
        // Pairs with the waiter's fence: see the type's protocol.
        fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            drop(self.lock.lock());
            self.cv.notify_all();
        }
    }

    /// How many threads are parked or about to park.
    pub(crate) fn parked(&self) -> usize {
        self.waiters.load(Ordering::SeqCst)
    }
}
