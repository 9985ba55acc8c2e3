//! The background checkpointer: one thread per database takes the checkpoints that log
//! volume, time and log-space pressure call for, so that no commit ever runs one (a
//! checkpoint inside a commit made that transaction wait for page writes and a data-file
//! sync while holding its locks, and its errors had nowhere to go).
//!
//! Triggers (checked by `Inner::checkpoint_due`):
//! * **volume**: `checkpoint_log_bytes` of log since the last checkpoint began;
//! * **pressure**: the log kept on disk (from its start LSN to its end) exceeds four
//!   times `checkpoint_log_bytes` plus two segments, and a quarter of
//!   `checkpoint_log_bytes` was written since the last checkpoint — something (a long
//!   transaction, a page dirty for long) holds the log, and truncation should follow soon
//!   after it lets go, without checkpointing in a loop while it does not;
//! * **time**: `checkpoint_interval` since the last checkpoint, with log written since.
//!
//! Committing threads call `Inner::maybe_checkpoint`: a few atomic loads, and a wake-up
//! of the checkpointer when a trigger holds. The thread parks on a condition variable
//! (with the interval as timeout when the timer is on); it never polls. It holds only a
//! weak reference to the database, so it never keeps it alive; it is stopped and joined
//! when the database closes. A failed checkpoint poisons the database ("checkpoint
//! failed: …"): every later operation returns that error, and nothing retries it.

use crate::options::Options;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why a checkpoint is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// Log volume since the last checkpoint.
    Volume,
    /// The log kept on disk is past its bound.
    Pressure,
    /// Time since the last checkpoint, with log written.
    Interval,
}

/// Where the log stands, for [`due`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogState {
    /// The end of the log (released LSN).
    pub(crate) end: u64,
    /// The first LSN still on disk.
    pub(crate) start: u64,
    /// Where the last checkpoint began.
    pub(crate) last_begin: u64,
    /// Where the last checkpoint's end record ended.
    pub(crate) last_end: u64,
    /// LSN bytes per segment.
    pub(crate) segment_bytes: u64,
}

/// The policy: which trigger, if any, calls for a checkpoint. `elapsed` is the time
/// since the last checkpoint, if the caller looked at the clock (committers do not).
pub(crate) fn due(options: &Options, log: LogState, elapsed: Option<Duration>) -> Option<Trigger> {
    let every = options.checkpoint_log_bytes;
    let since = log.end.saturating_sub(log.last_begin);
    if every > 0 {
        if since >= every {
            return Some(Trigger::Volume);
        }
        let kept = log.end.saturating_sub(log.start);
        let bound = every
            .saturating_mul(4)
            .saturating_add(log.segment_bytes.saturating_mul(2));
        if kept > bound && since >= every / 4 {
            return Some(Trigger::Pressure);
        }
    }
    let interval = options.checkpoint_interval;
    match elapsed {
        Some(e) if !interval.is_zero() && e >= interval && log.end > log.last_end => {
            Some(Trigger::Interval)
        }
        _ => None,
    }
}

#[derive(Default)]
struct Signal {
    /// A committer saw a trigger hold (set without the mutex, so a commit costs one
    /// atomic swap while a checkpoint is due but has not begun).
    requested: AtomicBool,
    stopping: Mutex<bool>,
    cv: Condvar,
}

/// The checkpointer of one database.
/// What the thread works for: the database, which knows whether a checkpoint is due and
/// how to take one. The thread holds it weakly, so it never keeps a database open.
pub(crate) trait Background: Send + Sync {
    /// A checkpoint, if one is due and the database is healthy.
    fn checkpoint_if_due(&self);
    /// When the last checkpoint completed.
    fn last_checkpoint_time(&self) -> Instant;
}

#[derive(Default)]
pub(crate) struct Checkpointer {
    signal: Arc<Signal>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Checkpointer {
    /// Starts the thread for `db` (which owns this checkpointer), waking at least every
    /// `interval` (zero: only when notified).
    pub(crate) fn start(
        &self,
        db: Weak<dyn Background>,
        interval: Duration,
    ) -> std::io::Result<()> {
        let signal = self.signal.clone();
        let weak = db;
        let handle = std::thread::Builder::new()
            .name("sluice-checkpoint".into())
            .spawn(move || run(&signal, &weak, interval))?;
        let old = self.thread.lock().replace(handle);
        assert!(old.is_none(), "checkpointer started twice");
        Ok(())
    }

    /// Wakes the thread to look at the triggers. Cheap when a wake-up is already pending.
    pub(crate) fn notify(&self) {
        if !self.signal.requested.swap(true, Ordering::AcqRel) {
            // Taking the mutex orders this with the thread's check-then-wait.
            let _g = self.signal.stopping.lock();
            self.signal.cv.notify_one();
        }
    }

    /// Stops the thread and joins it (unless this is that thread: the database can be
    /// dropped on it, when it held the last reference for a moment; it then exits by
    /// itself). Idempotent.
    pub(crate) fn stop(&self) {
        *self.signal.stopping.lock() = true;
        self.signal.cv.notify_all();
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                // A panic on the thread was reported there; close goes on.
                let _ = h.join();
            }
        }
    }
}

fn run(signal: &Signal, db: &Weak<dyn Background>, interval: Duration) {
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
                if interval.is_zero() {
                    signal.cv.wait(&mut stopping);
                } else {
                    let deadline = since + interval;
                    if signal.cv.wait_until(&mut stopping, deadline).timed_out() {
                        since = Instant::now();
                        break;
                    }
                }
            }
        }
        let Some(inner) = db.upgrade() else {
            return;
        };
        inner.checkpoint_if_due();
        since = since.max(inner.last_checkpoint_time());
        drop(inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(every: u64, interval_s: u64) -> Options {
        Options {
            checkpoint_log_bytes: every,
            checkpoint_interval: Duration::from_secs(interval_s),
            ..Options::default()
        }
    }

    /// A log 1000 bytes past a checkpoint that began at 10,000 and ended at 10,100.
    fn state() -> LogState {
        LogState {
            end: 11_000,
            start: 8_192,
            last_begin: 10_000,
            last_end: 10_100,
            segment_bytes: 4096,
        }
    }

    #[test]
    fn volume_triggers_at_checkpoint_log_bytes() {
        assert_eq!(due(&options(1000, 0), state(), None), Some(Trigger::Volume));
        assert_eq!(due(&options(1001, 0), state(), None), None);
        assert_eq!(due(&options(0, 0), state(), None), None, "0 disables");
    }

    #[test]
    fn pressure_triggers_sooner_while_the_kept_log_is_past_its_bound() {
        // Kept: 100,000 bytes; bound: 4 × 4000 + 2 × 4096 = 24,192.
        let held = LogState {
            start: 0,
            end: 100_000,
            last_begin: 99_000,
            last_end: 99_100,
            ..state()
        };
        assert_eq!(due(&options(4000, 0), held, None), Some(Trigger::Pressure));
        // Not before a quarter of the volume was written since the last checkpoint, so
        // a log that truncation cannot shorten does not make checkpoints back to back.
        let just_done = LogState {
            last_begin: 99_500,
            ..held
        };
        assert_eq!(due(&options(4000, 0), just_done, None), None);
        // Within the bound, only the volume counts.
        let short = LogState {
            start: 80_000,
            ..held
        };
        assert_eq!(due(&options(4000, 0), short, None), None);
    }

    #[test]
    fn the_timer_needs_log_written_since_the_last_checkpoint() {
        let o = options(0, 30);
        assert_eq!(
            due(&o, state(), Some(Duration::from_secs(31))),
            Some(Trigger::Interval)
        );
        assert_eq!(due(&o, state(), Some(Duration::from_secs(29))), None);
        assert_eq!(
            due(&o, state(), None),
            None,
            "committers do not look at the clock"
        );
        let quiet = LogState {
            end: 10_100,
            ..state()
        };
        assert_eq!(due(&o, quiet, Some(Duration::from_secs(600))), None);
        assert_eq!(
            due(&options(0, 0), state(), Some(Duration::from_secs(600))),
            None
        );
    }
}
