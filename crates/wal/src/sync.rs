//! Synchronisation primitives, swapped for loom's under `--cfg loom` so the log-buffer
//! protocols can be model-checked with the same code that runs in production.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::thread::{current, park, Thread};
#[cfg(not(loom))]
pub(crate) use std::thread::{current, park, Thread};

/// A hint inside a spin loop. Under loom it yields so the model checker can schedule the
/// thread being waited for.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// A mutex with parking_lot's shape (no poisoning), backed by loom's under `--cfg loom`.
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(
    #[cfg(not(loom))] parking_lot::Mutex<T>,
    #[cfg(loom)] loom::sync::Mutex<T>,
);

#[cfg(not(loom))]
pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;
#[cfg(loom)]
pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

impl<T> Mutex<T> {
    pub(crate) fn new(v: T) -> Self {
        #[cfg(not(loom))]
        return Mutex(parking_lot::Mutex::new(v));
        #[cfg(loom)]
        return Mutex(loom::sync::Mutex::new(v));
    }
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(not(loom))]
        return self.0.lock();
        #[cfg(loom)]
        return self.0.lock().unwrap();
    }
    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        #[cfg(not(loom))]
        return self.0.try_lock();
        #[cfg(loom)]
        return self.0.try_lock().ok();
    }
}

/// A condition variable for [`Mutex`].
#[derive(Debug, Default)]
pub(crate) struct Condvar(
    #[cfg(not(loom))] parking_lot::Condvar,
    #[cfg(loom)] loom::sync::Condvar,
);

impl Condvar {
    pub(crate) fn new() -> Self {
        Self::default()
    }
    /// Blocks until notified (spurious wake-ups possible).
    #[cfg(not(loom))]
    pub(crate) fn wait<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        let mut g = g;
        self.0.wait(&mut g);
        g
    }
    #[cfg(loom)]
    pub(crate) fn wait<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.0.wait(g).unwrap()
    }
    /// Blocks until notified or `timeout` passes. Under loom, time does not exist, so it is
    /// a plain wait.
    #[cfg(not(loom))]
    pub(crate) fn wait_for<'a, T>(
        &self,
        g: MutexGuard<'a, T>,
        timeout: std::time::Duration,
    ) -> MutexGuard<'a, T> {
        let mut g = g;
        self.0.wait_for(&mut g, timeout);
        g
    }
    #[cfg(loom)]
    pub(crate) fn wait_for<'a, T>(
        &self,
        g: MutexGuard<'a, T>,
        _timeout: std::time::Duration,
    ) -> MutexGuard<'a, T> {
        self.0.wait(g).unwrap()
    }
    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}
