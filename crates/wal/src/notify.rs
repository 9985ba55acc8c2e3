//! Durable-LSN notification: blocking waits, callbacks and futures.

use crate::error::{Result, WalError};
use crate::sync::{AtomicUsize, Mutex, Ordering};
use crate::wait::Parker;
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
pub(crate) struct Waiters {
    /// Blocking waiters park here; the daemon notifies after each sync.
    pub(crate) parker: Parker,
    /// Registered callbacks by the position they wait for.
    callbacks: Mutex<BTreeMap<Lsn, Vec<DurableCallback>>>,
    /// Waits outstanding (blocking and registered): the group-commit policy's `X`.
    pub(crate) outstanding: AtomicUsize,
}

impl Waiters {
    pub(crate) fn new() -> Self {
        Waiters {
            parker: Parker::new(),
            callbacks: Mutex::new(BTreeMap::new()),
            outstanding: AtomicUsize::new(0),
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

    /// Notifies blocking waiters and runs due callbacks.
    pub(crate) fn on_durable(&self, durable: Lsn) {
        self.parker.notify_all();
        for cb in self.take_due(Some(durable)) {
            cb(Ok(durable));
        }
    }

    /// Fails every callback with `err` and wakes blocking waiters (who see the poison).
    pub(crate) fn fail_all(&self, err: &WalError) {
        self.parker.notify_all();
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
