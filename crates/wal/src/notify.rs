//! Durable-LSN notification: blocking waits, callbacks and futures.

use crate::error::{Result, WalError};
use crate::sync::{current, park, Thread};
use crate::sync::{AtomicUsize, Mutex, Ordering};
use crate::Lsn;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A function run once a position is durable (or the log failed). It runs on the flush
/// daemon's thread, so it must be short: hand work to another thread, don't do it there.
pub type DurableCallback = Box<dyn FnOnce(Result<Lsn>) + Send + 'static>;

/// Threads and callbacks waiting for the durable position.
///
/// Blocking waiters register their thread and park; after each sync the daemon unparks
/// exactly the satisfied ones. (A shared condition variable would make every woken thread
/// queue for its mutex and run one after another — on a 2-core machine that serialised
/// wake-up alone cost a group commit half its group.)
pub(crate) struct Waiters {
    /// Parked threads and the position each waits for.
    blocked: Mutex<Vec<(Lsn, Thread)>>,
    /// Registered callbacks by the position they wait for.
    callbacks: Mutex<BTreeMap<Lsn, Vec<DurableCallback>>>,
    /// Waits outstanding (blocking and registered): the group-commit policy's `X`.
    pub(crate) outstanding: AtomicUsize,
}

impl Waiters {
    pub(crate) fn new() -> Self {
        Waiters {
            blocked: Mutex::new(Vec::new()),
            callbacks: Mutex::new(BTreeMap::new()),
            outstanding: AtomicUsize::new(0),
        }
    }

    /// Blocks the calling thread until `done()` holds, spinning about a microsecond first.
    /// `done` must become true once the durable position reaches `lsn` or the log fails.
    pub(crate) fn block_until(&self, lsn: Lsn, mut done: impl FnMut() -> bool) {
        for _ in 0..crate::wait::SPINS {
            if done() {
                return;
            }
            crate::sync::spin_hint();
        }
        self.blocked.lock().push((lsn, current()));
        // Registered before the re-check: a daemon that publishes after this point sees
        // the entry and unparks us; one that published before is caught by `done()`.
        while !done() {
            park();
        }
    }

    /// Threads that are (or are about to be) parked.
    pub(crate) fn parked(&self) -> usize {
        self.blocked.lock().len()
    }

    fn wake(&self, durable: Option<Lsn>) {
        let ready: Vec<Thread> = {
            let mut b = self.blocked.lock();
            match durable {
                Some(d) => {
                    let mut ready = Vec::new();
                    b.retain(|(lsn, t)| {
                        if *lsn <= d {
                            ready.push(t.clone());
                            false
                        } else {
                            true
                        }
                    });
                    ready
                }
                None => b.drain(..).map(|(_, t)| t).collect(),
            }
        };
        for t in ready {
            t.unpark();
        }
    }

    pub(crate) fn register(&self, lsn: Lsn, cb: DurableCallback) {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        self.callbacks.lock().entry(lsn).or_default().push(cb);
    }

    /// Removes the callbacks satisfied by `durable` (all of them if `durable` is `None`,
    /// the failure case) so the daemon can run them without holding the lock.
    pub(crate) fn take_due(&self, durable: Option<Lsn>) -> Vec<DurableCallback> {
        let mut map = self.callbacks.lock();
        let due = match durable {
            Some(d) => {
                let rest = map.split_off(&d.add(1));
                std::mem::replace(&mut *map, rest)
            }
            None => std::mem::take(&mut *map),
        };
        drop(map);
        let due: Vec<_> = due.into_values().flatten().collect();
        self.outstanding.fetch_sub(due.len(), Ordering::SeqCst);
        due
    }

    /// Notifies blocking waiters and runs due callbacks; returns how many callbacks ran.
    pub(crate) fn on_durable(&self, durable: Lsn) -> usize {
        self.wake(Some(durable));
        let due = self.take_due(Some(durable));
        let n = due.len();
        for cb in due {
            cb(Ok(durable));
        }
        n
    }

    /// Fails every callback with `err` and wakes every blocking waiter (each re-checks and
    /// sees the poison or the closed log).
    pub(crate) fn fail_all(&self, err: &WalError) {
        self.wake(None);
        for cb in self.take_due(None) {
            cb(Err(err.clone()));
        }
    }
}

struct FutureState {
    result: Option<Result<Lsn>>,
    waker: Option<Waker>,
}

/// A future that resolves once the log is durable up to a position, with the durable LSN
/// (or the log's error). Returned by [`crate::Log::durable_future`].
pub struct DurableFuture {
    state: Arc<Mutex<FutureState>>,
}

impl DurableFuture {
    pub(crate) fn ready(r: Result<Lsn>) -> Self {
        DurableFuture {
            state: Arc::new(Mutex::new(FutureState {
                result: Some(r),
                waker: None,
            })),
        }
    }

    /// A pending future and the callback that completes it.
    pub(crate) fn pending() -> (Self, DurableCallback) {
        let state = Arc::new(Mutex::new(FutureState {
            result: None,
            waker: None,
        }));
        let s2 = state.clone();
        let cb: DurableCallback = Box::new(move |r| {
            let w = {
                let mut g = s2.lock();
                g.result = Some(r);
                g.waker.take()
            };
            if let Some(w) = w {
                w.wake();
            }
        });
        (DurableFuture { state }, cb)
    }
}

impl Future for DurableFuture {
    type Output = Result<Lsn>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Lsn>> {
        let mut g = self.state.lock();
        match g.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                g.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
