//! [`crate::Database::transaction`]'s loop: a closure run in a transaction, committed,
//! and run again after a jittered, growing pause while it loses lock conflicts, within a
//! [`Retry`] budget; the application's own error passed through unchanged.

use super::transaction::Transaction;
use crate::error::Error;
use crate::inner::Inner;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long [`Database::transaction_with`](crate::Database::transaction_with) keeps
/// running a transaction again while it fails with a retryable error
/// ([`Error::is_retryable`]: a deadlock victim or a lock timeout): a number of attempts,
/// a time, or both (whichever runs out first). Between attempts it pauses for a random
/// time around a doubling step (first 1 ms, at most 64 ms; each pause drawn uniformly
/// from half to one and a half times the step, so that the victims of one conflict do not
/// meet again in step).
///
/// [`Retry::default`] (what [`Database::transaction`](crate::Database::transaction) uses)
/// retries for up to 30 seconds, with no limit on attempts. A retried attempt keeps its
/// *seniority* (how many attempts it lost): in a deadlock, the waiter that lost fewest
/// attempts is the victim, so a transaction that keeps losing ends up the one that
/// wins, and a workload that can make progress always does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    attempts: Option<u32>,
    time: Option<Duration>,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry::for_time(Duration::from_secs(30))
    }
}

impl Retry {
    /// The first pause between attempts (then doubled, up to [`Retry::MAX_PAUSE`]).
    pub const FIRST_PAUSE: Duration = Duration::from_millis(1);
    /// The longest pause between attempts.
    pub const MAX_PAUSE: Duration = Duration::from_millis(64);

    /// At most `n` attempts in all (`n` = 1: no retry; 0 counts as 1), however long.
    pub fn attempts(n: u32) -> Retry {
        Retry {
            attempts: Some(n.max(1)),
            time: None,
        }
    }

    /// Attempts begun within `limit` of the first one, however many.
    pub fn for_time(limit: Duration) -> Retry {
        Retry {
            attempts: None,
            time: Some(limit),
        }
    }

    /// No retry: one attempt.
    pub fn never() -> Retry {
        Retry::attempts(1)
    }

    /// This budget, also limited to `n` attempts.
    pub fn with_attempts(self, n: u32) -> Retry {
        Retry {
            attempts: Some(n.max(1)),
            ..self
        }
    }

    /// This budget, also limited to attempts begun within `limit` of the first one.
    pub fn with_time(self, limit: Duration) -> Retry {
        Retry {
            time: Some(limit),
            ..self
        }
    }

    /// True if an attempt after `done` of them, `pause` from now, is within the budget.
    fn allows(&self, done: u32, started: Instant, pause: Duration) -> bool {
        self.attempts.is_none_or(|n| done < n)
            && self.time.is_none_or(|t| started.elapsed() + pause <= t)
    }
}

/// Runs `body` in transactions of `db` until one commits, the body or the commit fails
/// with an error that is not a lost lock conflict, or `retry` runs out.
///
/// Whether an attempt lost a conflict is read from the transaction, not from the error
/// the body returns: any failed operation fails its transaction
/// ([`Transaction::failure`]), so an application error type that wraps (or replaces) a
/// deadlock is still seen to be retryable, and a body that returns its own error with
/// no failed operation is the application's abort: rolled back, and its error returned
/// as it is.
pub(crate) fn run<T, E: From<Error>>(
    db: &Arc<Inner>,
    retry: Retry,
    mut body: impl FnMut(&mut Transaction) -> Result<T, E>,
) -> Result<T, E> {
    let started = Instant::now();
    let mut step = Retry::FIRST_PAUSE;
    let mut lost: u32 = 0;
    loop {
        let mut tx = Transaction::new(db.clone());
        tx.seniority = lost;
        let (r, retryable) = match body(&mut tx) {
            Ok(v) => match tx.commit() {
                Ok(()) => return Ok(v),
                Err(e) => {
                    let retryable = e.is_retryable();
                    (E::from(e), retryable)
                }
            },
            Err(e) => {
                let retryable = tx.failure().is_some_and(Error::is_retryable);
                // A rollback that cannot finish stops the database: that is the news.
                tx.rollback()?;
                (e, retryable)
            }
        };
        let pause = step.mul_f64(rand::Rng::gen_range(&mut rand::thread_rng(), 0.5..1.5));
        lost = lost.saturating_add(1);
        if !retryable || !retry.allows(lost, started, pause) {
            return Err(r);
        }
        std::thread::sleep(pause);
        step = (step * 2).min(Retry::MAX_PAUSE);
    }
}
