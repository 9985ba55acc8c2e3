//! `bench partition --log-managers K[,K…] --inserts-per-txn N[,N…]` in rounds, and Tandem
//! Fig. 6 from them: the aggregate log rate L against the log bytes per transaction, one
//! line per number of log managers.
//!
//! Every point (log managers, inserts per transaction) is one [`vertical::run`]; a sweep
//! runs [`SweepConfig::repeat`] rounds, each running every point once in the same order
//! ([`crate::experiments::noise`]: why rounds), so the drift of a shared machine falls on
//! one and two log managers alike. The table and the figure show each point's median over
//! the rounds with its min–max; the CSV and the JSON keep every run.

mod output;

pub use output::{notes, panel, points, table, write_outputs, Point, STEM};

use super::vertical::{self, VerticalConfig, VerticalResult};
use crate::experiments::noise::{check_repeat, rounds, DEFAULT_REPEAT};
use crate::knobs::in_range;
use serde::Serialize;
use std::time::Duration;

/// The inserts per transaction of the figure: the paper's T1 (10), T2 (100) and T3 (200)
/// and two sizes between, so that the x axis has five points from the case the commit
/// coordinator limits to the one the log devices do.
pub const FIGURE_INSERTS_PER_TXN: [usize; 5] = [10, 20, 50, 100, 200];

/// The inserts per transaction of the table alone: the paper's T1, T2 and T3.
pub const TABLE_INSERTS_PER_TXN: [usize; 3] = [10, 100, 200];

/// Measured seconds per run of the figure (after [`VerticalConfig`]'s warm-up): its 30
/// runs take about three minutes.
pub const FIGURE_SECONDS: f64 = 2.0;

/// A sweep: every (log managers, inserts per transaction) point, in rounds.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// Log manager counts: one line of the figure each.
    pub log_managers: Vec<usize>,
    /// Rows each transaction inserts: each a point of every line.
    pub inserts_per_txn: Vec<usize>,
    /// Rounds: each point runs once per round (at least 1).
    pub repeat: usize,
    /// The rest of every run (clients, device cap, warm-up, measured time, row size);
    /// its `log_managers` and `inserts_per_txn` are set per point.
    pub run: VerticalConfig,
}

impl SweepConfig {
    /// Tandem Fig. 6 as sluice draws it by default: one and two log managers at
    /// [`FIGURE_INSERTS_PER_TXN`], [`FIGURE_SECONDS`] per run, [`DEFAULT_REPEAT`] rounds,
    /// the rest [`VerticalConfig::default`] (16 clients, a 4 MB/s device per log).
    pub fn figure() -> SweepConfig {
        SweepConfig {
            log_managers: vec![1, 2],
            inserts_per_txn: FIGURE_INSERTS_PER_TXN.to_vec(),
            repeat: DEFAULT_REPEAT,
            run: VerticalConfig {
                duration: Duration::from_secs_f64(FIGURE_SECONDS),
                ..VerticalConfig::default()
            },
        }
    }

    /// Checks the knobs; the message names the offending one as its flag does, without
    /// the dashes ("log-managers must be …").
    pub fn validate(&self) -> Result<(), String> {
        check_repeat(self.repeat)?;
        for (name, list, most) in [
            ("log-managers", &self.log_managers, sluice::MAX_LOG_MANAGERS),
            ("inserts-per-txn", &self.inserts_per_txn, 10_000),
        ] {
            if list.is_empty() {
                return Err(format!("{name} needs a value"));
            }
            for (i, &v) in list.iter().enumerate() {
                in_range(name, v, 1..=most)?;
                // Twice in a round would make one point of two runs a round.
                if list[..i].contains(&v) {
                    return Err(format!("{name} lists {v} twice"));
                }
            }
        }
        in_range("clients", self.run.clients, 1..=4096)?;
        Ok(())
    }

    /// One round: every point once, the log manager counts compared at one size next to
    /// each other.
    pub fn round(&self) -> Vec<VerticalConfig> {
        self.inserts_per_txn
            .iter()
            .flat_map(|&n| {
                self.log_managers.iter().map(move |&k| VerticalConfig {
                    log_managers: k,
                    inserts_per_txn: n,
                    ..self.run.clone()
                })
            })
            .collect()
    }

    /// The runs, in order, each with its round (0-based): [`SweepConfig::repeat`] rounds
    /// of [`SweepConfig::round`].
    pub fn plan(&self) -> Vec<(usize, VerticalConfig)> {
        rounds(&self.round(), self.repeat)
    }
}

/// One run of a sweep: its result and the round it ran in.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// The round (0-based).
    pub repeat: usize,
    /// The run.
    #[serde(flatten)]
    pub result: VerticalResult,
}

/// Runs the sweep, one row per planned run (every round); `progress` gets the fraction
/// of the sweep done, never falling. Check [`SweepConfig::validate`] first.
pub fn run(cfg: &SweepConfig, mut progress: impl FnMut(f64)) -> Result<Vec<SweepRow>, String> {
    let plan = cfg.plan();
    let total = plan.len() as f64;
    let mut rows = Vec::with_capacity(plan.len());
    for (i, (repeat, run)) in plan.into_iter().enumerate() {
        // A run's last tick can pass 1 (it ticks after each sleep): clamped, so that the
        // sweep's fraction never moves back when the next run starts.
        let result = vertical::run(&run, |f| progress((i as f64 + f.min(1.0)) / total))?;
        rows.push(SweepRow { repeat, result });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_runs_every_point_once_in_the_same_order() {
        let mut c = SweepConfig::figure();
        c.repeat = 3;
        let plan = c.plan();
        let per_round = FIGURE_INSERTS_PER_TXN.len() * 2;
        assert_eq!(plan.len(), 3 * per_round);
        let key = |c: &VerticalConfig| (c.log_managers, c.inserts_per_txn);
        for (r, chunk) in plan.chunks(per_round).enumerate() {
            assert!(chunk.iter().all(|(k, _)| *k == r), "round {r} marked");
            for ((_, a), b) in chunk.iter().zip(c.round()) {
                assert_eq!(key(a), key(&b), "round {r} in order");
            }
        }
        // One and two log managers at a size run next to each other.
        assert_eq!(key(&plan[0].1), (1, 10));
        assert_eq!(key(&plan[1].1), (2, 10));
        // The rest of every run is the sweep's.
        assert!(plan
            .iter()
            .all(|(_, r)| r.duration == c.run.duration && r.clients == c.run.clients));
    }

    #[test]
    fn the_figures_defaults_have_at_least_four_sizes_and_take_minutes_not_hours() {
        let c = SweepConfig::figure();
        c.validate().unwrap();
        assert!(c.inserts_per_txn.len() >= 4);
        let per_run = c.run.warmup + c.run.duration;
        let secs = per_run.as_secs_f64() * c.plan().len() as f64;
        assert!(secs <= 200.0, "{secs} s of runs");
    }

    #[test]
    fn validation_names_the_bad_knob() {
        let bad = |edit: fn(&mut SweepConfig), mentions: &str| {
            let mut c = SweepConfig::figure();
            edit(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(mentions), "{e:?} lacks {mentions:?}");
        };
        bad(|c| c.repeat = 0, "repeat");
        bad(|c| c.log_managers = vec![], "log-managers needs a value");
        bad(|c| c.log_managers = vec![0], "log-managers");
        bad(
            |c| c.log_managers = vec![1, 2, 1],
            "log-managers lists 1 twice",
        );
        bad(|c| c.inserts_per_txn = vec![10_001], "inserts-per-txn");
        bad(|c| c.run.clients = 0, "clients");
    }

    #[test]
    fn a_small_sweep_has_a_row_per_run_and_reports_progress() {
        let cfg = SweepConfig {
            log_managers: vec![1, 2],
            inserts_per_txn: vec![5],
            repeat: 2,
            run: VerticalConfig {
                clients: 2,
                warmup: Duration::from_millis(20),
                duration: Duration::from_millis(100),
                device_bytes_per_sec: Some(50_000_000),
                ..VerticalConfig::default()
            },
        };
        let mut last = 0.0;
        let rows = run(&cfg, |f| {
            assert!((last..=1.0).contains(&f), "{last} then {f}");
            last = f;
        })
        .unwrap();
        assert_eq!(rows.len(), 4);
        let seen: Vec<(usize, usize)> = rows
            .iter()
            .map(|r| (r.repeat, r.result.log_managers))
            .collect();
        assert_eq!(seen, [(0, 1), (0, 2), (1, 1), (1, 2)]);
        assert!(rows.iter().all(|r| r.result.log_mb_per_s > 0.0));
    }
}
