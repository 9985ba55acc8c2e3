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
pub(crate) use crate::worker::Worker;
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
/// notified), whose job is the database's `checkpoint_if_due` (`Inner` implements
/// [`Job`](crate::worker::Job)). It holds the database weakly, so it never keeps it open.
pub(crate) type Checkpointer = Worker;

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
