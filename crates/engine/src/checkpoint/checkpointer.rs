//! The background checkpointer: one thread per database takes the checkpoints that log
//! volume, time and log-space pressure call for, so that no commit ever runs one (a
//! checkpoint inside a commit made that transaction wait for page writes and a data-file
//! sync while holding its locks, and its errors had nowhere to go).
//!
//! Triggers (checked by [`Checkpointing::due`]):
//! * **volume**: `checkpoint_log_bytes` of log since the last checkpoint began;
//! * **pressure**: the log kept on disk (from its start LSN to its end) exceeds four
//!   times `checkpoint_log_bytes` plus two segments, and a quarter of
//!   `checkpoint_log_bytes` was written since the last checkpoint — something (a long
//!   transaction, a page dirty for long) holds the log, and truncation should follow soon
//!   after it lets go, without checkpointing in a loop while it does not;
//! * **time**: `checkpoint_interval` since the last checkpoint, with log written since.
//!
//! Committing threads call [`Checkpointing::wake_if_due`] (through
//! `Inner::maybe_checkpoint`): a few atomic loads, and a wake-up of the checkpointer when
//! a trigger holds. The thread parks on a condition variable
//! (with the interval as timeout when the timer is on); it never polls. It holds only a
//! weak reference to the database, so it never keeps it alive; it is stopped and joined
//! when the database closes. A failed checkpoint, wherever it ran, poisons the database
//! ("checkpoint failed: …", [`Checkpointing::now`]): every later operation returns that
//! error, and nothing retries it.

use super::fuzzy::{self, Scope};
use crate::error::Result;
use crate::health::Health;
use crate::options::Options;
use crate::propagation::{Background, Occasion};
pub(crate) use crate::worker::Worker;
use std::sync::atomic::Ordering;
use std::time::Duration;

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

/// The checkpointer of one database: a [`Worker`] thread named `sluice-checkpoint`, waking
/// every `checkpoint_interval` counted from the last checkpoint (zero: only when
/// notified), whose job is [`Checkpointing::round`] (`Inner` implements
/// [`Job`](crate::worker::Job)). It holds the database weakly, so it never keeps it open.
pub(crate) type Checkpointer = Worker;

/// What triggering and taking checkpoints works on: a checkpoint's [`Scope`], the options
/// that set the triggers, the checkpointer to wake, and the health a failed checkpoint
/// poisons.
pub(crate) struct Checkpointing<'a> {
    pub(crate) scope: Scope<'a>,
    /// The triggers (`checkpoint_log_bytes`, `checkpoint_interval`), and `read_only`.
    pub(crate) options: &'a Options,
    /// LSN bytes per log segment (the pressure trigger's bound).
    pub(crate) segment_bytes: u64,
    pub(crate) checkpointer: &'a Checkpointer,
    /// The database's: a failed checkpoint poisons it.
    pub(crate) health: &'a Health,
}

impl Checkpointing<'_> {
    /// Which trigger, if any, calls for a checkpoint now ([`due`]). Without
    /// `with_timer`, a few atomic loads: what a committing thread pays.
    pub(crate) fn due(&self, with_timer: bool) -> Option<Trigger> {
        let (store, state) = (self.scope.store, self.scope.state);
        let log = LogState {
            end: store.log.released_lsn().0,
            start: store.log.start_lsn().0,
            last_begin: state.last_begin.load(Ordering::Acquire),
            last_end: state.last_end.load(Ordering::Acquire),
            segment_bytes: self.segment_bytes,
        };
        let elapsed = with_timer.then(|| state.last_at.lock().elapsed());
        due(self.options, log, elapsed)
    }

    /// Called by committing threads: wakes the background checkpointer if a checkpoint
    /// is due. Never runs one on the calling thread.
    ///
    /// Log-space pressure also wakes the page cleaner, if the strategy runs one: only
    /// written pages let the log be truncated, and its checkpoints write none.
    pub(crate) fn wake_if_due(&self) {
        if self.options.read_only {
            return;
        }
        if let Some(trigger) = self.due(false) {
            let propagation = self.scope.propagation;
            if trigger == Trigger::Pressure
                && matches!(
                    propagation.strategy.background(),
                    Background::PageCleaner(_)
                )
            {
                propagation.cleaner.notify();
            }
            self.checkpointer.notify();
        }
    }

    /// A checkpoint now, on this thread, taken on `occasion` (what it writes is the
    /// propagation strategy's choice for it); a failure poisons the database and is
    /// returned.
    pub(crate) fn now(&self, occasion: Occasion) -> Result<()> {
        let guard = self.scope.state.lock.lock();
        fuzzy::run(&self.scope, occasion, &guard).inspect_err(|e| self.failed(e))
    }

    /// The background checkpointer's round, on a database that takes work: a checkpoint
    /// if one is due. A failure, or a panic, poisons the database.
    pub(crate) fn round(&self) {
        if self.due(true).is_none() {
            return;
        }
        // A checkpoint someone asked for is running: it resets the triggers.
        let Some(guard) = self.scope.state.lock.try_lock() else {
            return;
        };
        // A panic (a broken invariant) must not kill the thread silently and leave the
        // database running without checkpoints: it is a failed checkpoint like any other.
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            fuzzy::run(&self.scope, Occasion::Routine, &guard)
        }));
        match run {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.failed(&e),
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic".into());
                self.failed(&format!("panic: {msg}"));
            }
        }
    }

    /// Records a failed checkpoint: every later operation fails with it.
    fn failed(&self, cause: &dyn std::fmt::Display) {
        self.health
            .poison(format_args!("checkpoint failed: {cause}"));
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
