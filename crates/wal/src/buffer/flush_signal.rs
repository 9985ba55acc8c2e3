//! The flush side's one signal: everything that wants a flush wakes the flush daemon
//! here, and only the daemon (or, for a bare [`crate::LogBuffer`], whatever drives its
//! flush side) sleeps on it.
//!
//! Three kinds of event ring it: a request the daemon must act on now (a durable wait, an
//! explicit sync, an inserter waiting for ring space, closing, a stop) — [`FlushSignal::request`];
//! and a release, which is the hot path and rings only when it matters
//! ([`FlushSignal::released`]): when the daemon sleeps with nothing pending, or when the
//! group-commit byte threshold `L` is reached. The daemon's state (what is pending, who
//! waits) stays in the atomics it reads; this only makes sure it looks.

use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::wait::Parker;
use crossbeam_utils::CachePadded;
use std::time::Duration;

/// See the module docs.
#[derive(Debug)]
pub(crate) struct FlushSignal {
    parker: Parker,
    /// True while the flush side sleeps without a deadline, so releases must wake it.
    idle: CachePadded<AtomicBool>,
    /// A release that leaves this many bytes not yet durable wakes the flush side
    /// (group-commit `L`); `u64::MAX` for never.
    wake_bytes: AtomicU64,
}

impl FlushSignal {
    pub(crate) fn new() -> Self {
        FlushSignal {
            parker: Parker::new(),
            idle: CachePadded::new(AtomicBool::new(false)),
            wake_bytes: AtomicU64::new(u64::MAX),
        }
    }

    /// Sets the byte threshold at which a release wakes the flush side.
    pub(crate) fn set_wake_bytes(&self, bytes: u64) {
        self.wake_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Wakes the flush side: call after changing what it decides on (a wait counted, a
    /// sync requested, space wanted, closing or stopped). Cheap when it is not parked.
    pub(crate) fn request(&self) {
        self.parker.notify_all();
    }

    /// A release moved `released` to `end` with `durable` below it. Wakes the flush side
    /// only if it sleeps with nothing pending, or if the byte threshold is reached;
    /// otherwise it finds the bytes on its own schedule and the insert path stays cheap.
    /// The caller has issued a SeqCst fence after publishing `end`, so a flush side that
    /// set `idle` and then found nothing released is seen here.
    ///
    /// `end` and `durable` are two loads, not one snapshot: between them later releases
    /// and a flush can carry `durable` past `end` (a swarm run found it), so that case
    /// counts as nothing pending.
    pub(crate) fn released(&self, end: u64, durable: u64) {
        let wake_bytes = self.wake_bytes.load(Ordering::Relaxed);
        if self.idle.load(Ordering::SeqCst)
            || (wake_bytes != u64::MAX && end.saturating_sub(durable) >= wake_bytes)
        {
            self.parker.notify_all();
        }
    }

    /// Wakes the flush side if it sleeps without a deadline (a round was submitted by a
    /// committing thread on the ring path: the backstop must keep a timer while it is in
    /// flight). One load when it is awake.
    pub(crate) fn wake_if_idle(&self) {
        if self.idle.load(Ordering::SeqCst) {
            self.parker.notify_all();
        }
    }

    /// The flush side sleeps with nothing pending until rung, unless `ready()` holds;
    /// releases wake it meanwhile.
    pub(crate) fn park_idle(&self, ready: impl FnMut() -> bool) -> bool {
        self.idle.store(true, Ordering::SeqCst);
        let ok = self.parker.park(ready);
        self.idle.store(false, Ordering::SeqCst);
        ok
    }

    /// Like [`FlushSignal::park_idle`], but for at most `timeout`.
    pub(crate) fn park_idle_timeout(&self, timeout: Duration, ready: impl FnMut() -> bool) -> bool {
        self.idle.store(true, Ordering::SeqCst);
        let ok = self.parker.park_timeout(timeout, ready);
        self.idle.store(false, Ordering::SeqCst);
        ok
    }

    /// The flush side sleeps until rung or `timeout` passes (bytes are pending, so only
    /// requests and the byte threshold wake it), unless `ready()` holds.
    pub(crate) fn park_timeout(&self, timeout: Duration, ready: impl FnMut() -> bool) -> bool {
        self.parker.park_timeout(timeout, ready)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::FlushSignal;

    #[test]
    fn a_durable_position_read_past_the_release_is_nothing_pending() {
        let s = FlushSignal::new();
        s.set_wake_bytes(1);
        // `durable` loaded after later releases and a flush moved it past `end`.
        s.released(100, 4096);
        s.released(4096, 100);
    }
}
