//! How long a thread has waited inside log-buffer inserts: for its mutex, for its turn to
//! release, for a consolidation group's leader, or for ring space the flush side has not
//! freed yet — the log-buffer *contention* of Aether §5 and Fig. 7, as opposed to the
//! insert's own work (reserving, copying, releasing).
//!
//! Off unless a thread asks ([`time_insert_waits`]): the engine's agents switch it on
//! when their pool records where their time goes, and read [`insert_waited`] around each
//! insert. Only a wait is timed, and only once it is one: a lock is tried first and the
//! clock read only if the try fails, a spin-then-park wait starts the clock only after its
//! first check failed. An uncontended insert reads no clock, and a thread that did not
//! switch timing on pays one thread-local read per wait.

#[cfg(not(loom))]
mod imp {
    use std::cell::Cell;
    use std::time::{Duration, Instant};

    thread_local! {
        static ON: Cell<bool> = const { Cell::new(false) };
        static WAITED_NS: Cell<u64> = const { Cell::new(0) };
    }

    pub fn time_insert_waits(on: bool) {
        ON.with(|o| o.set(on));
    }

    pub fn insert_waited() -> Duration {
        Duration::from_nanos(WAITED_NS.with(Cell::get))
    }

    /// A wait under way; its time is added to this thread's total when it is dropped.
    pub(crate) struct Waiting(Option<Instant>);

    impl Waiting {
        pub(crate) fn begin() -> Waiting {
            Waiting(ON.with(Cell::get).then(Instant::now))
        }

        /// A wait that starts now unless `ready()` holds already (not even asked when
        /// timing is off).
        pub(crate) fn unless(ready: impl FnOnce() -> bool) -> Waiting {
            Waiting((ON.with(Cell::get) && !ready()).then(Instant::now))
        }
    }

    impl Drop for Waiting {
        fn drop(&mut self) {
            if let Some(t) = self.0 {
                let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
                WAITED_NS.with(|w| w.set(w.get().saturating_add(ns)));
            }
        }
    }
}

/// Under loom there is no time to measure (and model threads are no OS threads).
#[cfg(loom)]
mod imp {
    use std::time::Duration;

    pub fn time_insert_waits(_on: bool) {}

    pub fn insert_waited() -> Duration {
        Duration::ZERO
    }

    pub(crate) struct Waiting;

    impl Waiting {
        pub(crate) fn begin() -> Waiting {
            Waiting
        }

        pub(crate) fn unless(_ready: impl FnOnce() -> bool) -> Waiting {
            Waiting
        }
    }
}

use crate::sync::{Mutex, MutexGuard};

/// Switches the timing of this thread's log-buffer waits on or off (off when a thread
/// starts).
pub fn time_insert_waits(on: bool) {
    imp::time_insert_waits(on)
}

/// The time this thread has waited inside log-buffer inserts while timing was on, in
/// all (it only grows; take differences).
pub fn insert_waited() -> std::time::Duration {
    imp::insert_waited()
}

pub(crate) use imp::Waiting;

/// Takes `m`, timing the wait if it is held by another thread.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Under loom the try would only add interleavings to explore: nothing is timed there.
    #[cfg(loom)]
    return m.lock();
    #[cfg(not(loom))]
    if let Some(g) = m.try_lock() {
        return g;
    }
    let _waiting = Waiting::begin();
    m.lock()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_a_contended_lock_with_timing_on_is_counted() {
        let m = Mutex::new(0u32);
        time_insert_waits(true);
        let before = insert_waited();
        drop(lock(&m));
        assert_eq!(insert_waited(), before, "a free lock reads no clock");
        std::thread::scope(|s| {
            let g = m.lock();
            let waiter = s.spawn(|| {
                time_insert_waits(true);
                let w0 = insert_waited();
                drop(lock(&m));
                insert_waited() - w0
            });
            std::thread::sleep(Duration::from_millis(30));
            drop(g);
            let waited = waiter.join().unwrap();
            assert!(waited >= Duration::from_millis(20), "{waited:?}");
        });
        std::thread::scope(|s| {
            let g = m.lock();
            let waiter = s.spawn(|| {
                // Timing off: nothing counted however long the wait.
                drop(lock(&m));
                insert_waited()
            });
            std::thread::sleep(Duration::from_millis(5));
            drop(g);
            assert_eq!(waiter.join().unwrap(), Duration::ZERO);
        });
        time_insert_waits(false);
    }
}
