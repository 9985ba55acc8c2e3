//! A background thread that runs one job when woken or when its period passes: the
//! checkpointer, the page cleaner and the sorter. It parks on a condition variable between rounds (never
//! polls), holds its owner only weakly (so it never keeps a database open), and is
//! stopped and joined when the database closes.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a worker runs each round.
pub(crate) trait Job: Send + Sync {
    /// One round of work.
    fn round(&self);
    /// Where the period before the next timed round starts counting, if not from the
    /// end of this round: the checkpointer counts from the last checkpoint, so a
    /// notified round that found nothing due does not push the timer back.
    fn period_from(&self) -> Option<Instant> {
        None
    }
}

#[derive(Default)]
struct Signal {
    requested: AtomicBool,
    stopping: Mutex<bool>,
    cv: Condvar,
}

/// One background thread.
#[derive(Default)]
pub(crate) struct Worker {
    signal: Arc<Signal>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Worker {
    /// Starts the thread `name`, running `job` when notified and at least every `period`
    /// (zero: only when notified).
    pub(crate) fn start(
        &self,
        name: &str,
        job: Weak<dyn Job>,
        period: Duration,
    ) -> std::io::Result<()> {
        let signal = self.signal.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(&signal, &job, period))?;
        let old = self.thread.lock().replace(handle);
        assert!(old.is_none(), "worker {name} started twice");
        Ok(())
    }

    /// Asks for a round soon. Cheap when one is already pending.
    pub(crate) fn notify(&self) {
        if !self.signal.requested.swap(true, Ordering::AcqRel) {
            let _g = self.signal.stopping.lock();
            self.signal.cv.notify_one();
        }
    }

    /// Stops the thread and joins it (unless called on it). Idempotent.
    pub(crate) fn stop(&self) {
        *self.signal.stopping.lock() = true;
        self.signal.cv.notify_all();
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}

/// Runs rounds until stopped. A zero `period` means no timer: rounds only when notified
/// (never a loop that wakes itself at once).
fn run(signal: &Signal, job: &Weak<dyn Job>, period: Duration) {
    // The timer fires at `since + period`; a timed wake restarts it from then.
    let mut since = Instant::now();
    loop {
        {
            let mut stopping = signal.stopping.lock();
            loop {
                if *stopping {
                    return;
                }
                if signal.requested.swap(false, Ordering::AcqRel) {
                    break;
                }
                if period.is_zero() {
                    signal.cv.wait(&mut stopping);
                } else if signal
                    .cv
                    .wait_until(&mut stopping, since + period)
                    .timed_out()
                {
                    since = Instant::now();
                    break;
                }
            }
        }
        let Some(job) = job.upgrade() else {
            return;
        };
        job.round();
        since = since.max(job.period_from().unwrap_or_else(Instant::now));
        drop(job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    struct Count(AtomicU64);
    impl Job for Count {
        fn round(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A zero period runs rounds only when notified: it must not wake itself in a loop
    /// (on a 2-core machine that would starve the threads doing the work).
    #[test]
    fn a_zero_period_waits_for_notifications() {
        let job = Arc::new(Count(AtomicU64::new(0)));
        let w = Worker::default();
        let weak: Weak<dyn Job> = Arc::downgrade(&(job.clone() as Arc<dyn Job>));
        w.start("test-worker", weak, Duration::ZERO).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            job.0.load(Ordering::SeqCst),
            0,
            "rounds without a notification"
        );
        w.notify();
        let deadline = Instant::now() + Duration::from_secs(10);
        while job.0.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "a notification ran no round");
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            job.0.load(Ordering::SeqCst),
            1,
            "one notification, one round"
        );
        w.stop();
    }

    /// A period runs rounds by itself.
    #[test]
    fn a_period_runs_rounds_without_notifications() {
        let job = Arc::new(Count(AtomicU64::new(0)));
        let w = Worker::default();
        let weak: Weak<dyn Job> = Arc::downgrade(&(job.clone() as Arc<dyn Job>));
        w.start("test-worker", weak, Duration::from_millis(2))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while job.0.load(Ordering::SeqCst) < 3 {
            assert!(Instant::now() < deadline, "the period ran no rounds");
            std::thread::sleep(Duration::from_millis(1));
        }
        w.stop();
    }
}
