//! The adaptive part of group commit: how long the flush daemon lets a round's waiters
//! re-join before it starts the next sync, tuned while the log runs.
//!
//! Aether §4.1 starts a flush when `X` transactions wait, `L` bytes are pending or `T`
//! has passed, and leaves the three to the administrator; the best `X` depends on the
//! device's sync latency, the number of clients, the cores, and what else the machine
//! runs. Here the daemon gathers a group by yielding its core while fewer waits are
//! outstanding than the last round woke (`FlushDaemon::gather`), at most *budget* times;
//! the budget is `X` in time rather than in transactions. With
//! [`GroupCommit::adaptive`](crate::GroupCommit::adaptive) it is tuned by *perturb and
//! observe*: over each window the daemon counts the waits it completed per second; after
//! each window it steps the budget one rung along a ladder (0, 1, 2, 4, … 64 yields),
//! and reverses direction when the rate fell. It settles oscillating within a rung of
//! the best budget for the load of the moment and follows the load when it changes. No
//! timer is added: a yield is not a sleep, and a round never waits for more than the
//! budget's yields.

use std::time::{Duration, Instant};

/// The budgets the tuner steps between (scheduler yields per gather).
pub(crate) const LADDER: [usize; 8] = [0, 1, 2, 4, 8, 16, 32, 64];

/// The fixed budget of a non-adaptive log, and where the tuner starts.
pub(crate) const FIXED_BUDGET: usize = 8;

/// A window ends after at least this long and [`MIN_ROUNDS`] rounds.
pub(crate) const WINDOW: Duration = Duration::from_millis(100);

/// A window ends after at least this many rounds and [`WINDOW`].
pub(crate) const MIN_ROUNDS: u32 = 32;

/// The tuner's state (owned by the flush daemon's thread).
#[derive(Debug, Clone)]
pub(crate) struct GatherTuner {
    rung: usize,
    up: bool,
    start: Instant,
    rounds: u32,
    completed: u64,
    last_rate: Option<f64>,
}

impl GatherTuner {
    pub(crate) fn new(now: Instant) -> GatherTuner {
        GatherTuner {
            rung: LADDER
                .iter()
                .position(|&b| b == FIXED_BUDGET)
                .expect("the fixed budget is a rung"),
            up: true,
            start: now,
            rounds: 0,
            completed: 0,
            last_rate: None,
        }
    }

    /// Yields the next gather may spend.
    pub(crate) fn budget(&self) -> usize {
        LADDER[self.rung]
    }

    /// Records a round that completed `completed` waits at `now`; at the end of a
    /// window, moves the budget.
    pub(crate) fn on_round(&mut self, completed: usize, now: Instant) {
        self.rounds += 1;
        self.completed += completed as u64;
        let elapsed = now.saturating_duration_since(self.start);
        if elapsed < WINDOW || self.rounds < MIN_ROUNDS {
            return;
        }
        self.end_window(self.completed as f64 / elapsed.as_secs_f64());
        self.start = now;
        self.rounds = 0;
        self.completed = 0;
    }

    /// Perturb and observe: keep going while the rate does not fall, turn when it does,
    /// and bounce off the ends of the ladder.
    fn end_window(&mut self, rate: f64) {
        if self.last_rate.is_some_and(|last| rate < last) {
            self.up = !self.up;
        }
        self.last_rate = Some(rate);
        if self.up && self.rung + 1 == LADDER.len() {
            self.up = false;
        } else if !self.up && self.rung == 0 {
            self.up = true;
        }
        if self.up {
            self.rung += 1;
        } else {
            self.rung -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds the tuner windows whose rate is `rate(budget)`; returns the budgets it
    /// chose, window by window.
    fn drive(rate: impl Fn(usize) -> f64, windows: usize) -> Vec<usize> {
        let mut now = Instant::now();
        let mut t = GatherTuner::new(now);
        let mut chosen = Vec::new();
        for _ in 0..windows {
            let per_round = rate(t.budget()) * WINDOW.as_secs_f64() / MIN_ROUNDS as f64;
            for _ in 0..MIN_ROUNDS {
                now += WINDOW / MIN_ROUNDS;
                t.on_round(per_round.round() as usize, now);
            }
            chosen.push(t.budget());
        }
        chosen
    }

    #[test]
    fn it_climbs_to_the_best_budget_and_stays_within_a_rung() {
        for (best, &best_budget) in LADDER.iter().enumerate() {
            // A single peak at `best`, falling off on both sides.
            let rate = |b: usize| {
                let r = LADDER.iter().position(|&x| x == b).unwrap() as f64;
                100_000.0 - 10_000.0 * (r - best as f64).abs()
            };
            let chosen = drive(rate, 60);
            for &b in &chosen[20..] {
                let r = LADDER.iter().position(|&x| x == b).unwrap();
                assert!(
                    r.abs_diff(best) <= 1,
                    "best rung {best}: settled at {b} ({chosen:?})"
                );
            }
            assert!(
                chosen[20..].contains(&best_budget),
                "best rung {best} never chosen ({chosen:?})"
            );
        }
    }

    #[test]
    fn it_follows_the_load_when_the_best_budget_moves() {
        let mut now = Instant::now();
        let mut t = GatherTuner::new(now);
        let mut run = |t: &mut GatherTuner, best: f64| {
            let mut last = 0;
            for _ in 0..40 {
                let r = LADDER.iter().position(|&x| x == t.budget()).unwrap() as f64;
                let rate = 50_000.0 - 5_000.0 * (r - best).abs();
                for _ in 0..MIN_ROUNDS {
                    now += WINDOW / MIN_ROUNDS;
                    t.on_round((rate * 0.0025).round() as usize, now);
                }
                last = t.budget();
            }
            last
        };
        let low = run(&mut t, 1.0);
        assert!(low <= LADDER[2], "settled at {low} for a best of rung 1");
        let high = run(&mut t, 6.0);
        assert!(high >= LADDER[5], "settled at {high} for a best of rung 6");
    }

    #[test]
    fn a_window_needs_both_its_time_and_its_rounds() {
        let start = Instant::now();
        let mut t = GatherTuner::new(start);
        let b0 = t.budget();
        // Many rounds in less than a window: no step.
        for i in 1..=100 {
            t.on_round(5, start + WINDOW * i / 200);
        }
        assert_eq!(t.budget(), b0);
        // A long time but too few rounds: no step either.
        let mut t = GatherTuner::new(start);
        for i in 1..MIN_ROUNDS {
            t.on_round(5, start + WINDOW * 10 * i);
        }
        assert_eq!(t.budget(), b0);
        t.on_round(5, start + WINDOW * 10 * MIN_ROUNDS);
        assert_ne!(t.budget(), b0, "a full window steps");
    }
}
