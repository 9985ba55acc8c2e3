//! `bench log-insert-sweep`: the log-insert microbenchmark swept over one parameter, for
//! the figures of Aether §6.3 and appendix A:
//!
//! * `threads` — throughput vs threads (1…64) at 120-byte records, every variant (Fig. 8
//!   left);
//! * `size` — throughput vs record size (48 B…12 KiB) at the most threads, every variant
//!   (Fig. 8 right);
//! * `outlier` — throughput vs outlier size in the bimodal mix, hybrid vs delegated
//!   (Fig. 11);
//! * `slots` — throughput of the hybrid vs consolidation-array slots, one line per thread
//!   count (Fig. 12, drawn as lines instead of a contour map).
//!
//! A sweep runs in [`SweepConfig::repeat`] rounds ([`crate::experiments::noise`]): round
//! r runs every point of the figure once, so drift in the machine's state hits every
//! variant alike; the table and the figure show each point's median over the rounds with
//! the min–max spread (error bars), the CSV and the JSON every round.
//!
//! The limit (private-ring copies) depends only on the threads and the records, so a
//! round measures it once per distinct pair and shares it between that round's
//! variants; the figures whose x axis moves it (threads, record size, outlier size) draw
//! it as a line of its own.

mod output;

pub use output::{
    notes, panel, points, summary_table, table, write_outputs, Point, PointKey, LIMIT_LABEL,
};

use super::log_insert::{self, LogInsertConfig, LogInsertResult, RecordMix};
use super::noise::{check_repeat, rounds, DEFAULT_REPEAT};
use crate::knobs::{in_range, named_values};
use serde::Serialize;
use sluice_wal::{InsertVariant, WalError};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::ops::Bound::{Excluded, Included};
use std::time::Duration;

/// Which figure to sweep for; its name (`--figure`) is the stem of the output files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Figure {
    /// Throughput vs threads.
    Threads,
    /// Throughput vs record size.
    Size,
    /// Throughput vs outlier size, hybrid vs delegated.
    Outlier,
    /// Throughput vs consolidation slots and threads.
    Slots,
}

named_values!(Figure, "figure", serialize);

/// Record sizes of the `size` figure (Aether: 48 B, the smallest Shore-MT record, to
/// 12 KiB, its largest).
pub const SIZES: [usize; 9] = [48, 120, 256, 512, 1024, 2048, 4096, 8192, 12288];
/// Outlier sizes of the `outlier` figure.
pub const OUTLIERS: [usize; 9] = [
    256,
    1 << 10,
    4 << 10,
    8 << 10,
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    256 << 10,
];
/// Slot counts of the `slots` figure.
pub const SLOTS: [usize; 6] = [1, 2, 3, 4, 6, 8];
/// The record size of the `threads` figure (Aether's average record).
pub const THREADS_RECORD_BYTES: usize = 120;

/// A sweep to run.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// The figure.
    pub figure: Figure,
    /// Seconds per point (insert phase; the limit runs as long, once per thread count and
    /// record mix).
    pub per_point: Duration,
    /// The largest thread count (thread counts double from 1 up to it).
    pub max_threads: usize,
    /// Rounds: each point runs once per round (at least 1).
    pub repeat: usize,
}

/// The longest a point may run, seconds (a typo must not start a day-long sweep).
const MAX_SECONDS_PER_POINT: f64 = 3_600.0;

impl SweepConfig {
    /// The paper's sweep: up to 64 threads, 0.5 s per point, 3 rounds (a minute and a
    /// half to two minutes).
    pub fn new(figure: Figure) -> Self {
        SweepConfig {
            figure,
            per_point: Duration::from_millis(500),
            max_threads: 64,
            repeat: DEFAULT_REPEAT,
        }
    }

    /// Checks the knobs; the message names the offending one.
    pub fn validate(&self) -> Result<(), String> {
        check_repeat(self.repeat)?;
        in_range("threads", self.max_threads, 1..=log_insert::MAX_THREADS)?;
        in_range(
            "seconds",
            self.per_point.as_secs_f64(),
            (Excluded(0.0), Included(MAX_SECONDS_PER_POINT)),
        )?;
        Ok(())
    }

    fn thread_counts(&self) -> Vec<usize> {
        let mut v: Vec<usize> = std::iter::successors(Some(1usize), |t| Some(t * 2))
            .take_while(|&t| t <= self.max_threads)
            .collect();
        if v.last() != Some(&self.max_threads) {
            v.push(self.max_threads);
        }
        v
    }

    /// The runs, in order: [`SweepConfig::repeat`] rounds of [`SweepConfig::round`].
    pub fn plan(&self) -> Vec<Planned> {
        rounds(&self.round(), self.repeat)
            .into_iter()
            .map(|(repeat, run)| Planned { repeat, run })
            .collect()
    }

    /// How many runs [`run`] makes: the plan's, and one limit run per round and distinct
    /// pair of thread count and records.
    pub fn runs(&self) -> usize {
        let plan = self.plan();
        plan.len() + limit_runs(&plan)
    }

    /// One round: every point of the figure once. The variants compared at one x run
    /// next to each other.
    pub fn round(&self) -> Vec<LogInsertConfig> {
        let point = |variant, threads, mix, slots| {
            let mut c = LogInsertConfig::new(variant, threads, mix);
            c.slots = slots;
            c.duration = self.per_point;
            c
        };
        let mut plan = Vec::new();
        match self.figure {
            Figure::Threads => {
                for t in self.thread_counts() {
                    for &v in InsertVariant::ALL {
                        plan.push(point(v, t, RecordMix::Fixed(THREADS_RECORD_BYTES), 4));
                    }
                }
            }
            Figure::Size => {
                for b in SIZES {
                    for &v in InsertVariant::ALL {
                        plan.push(point(v, self.max_threads, RecordMix::Fixed(b), 4));
                    }
                }
            }
            Figure::Outlier => {
                for b in OUTLIERS {
                    for v in [InsertVariant::Hybrid, InsertVariant::Delegated] {
                        plan.push(point(v, self.max_threads, RecordMix::Outlier(b), 4));
                    }
                }
            }
            Figure::Slots => {
                for t in self.thread_counts() {
                    for k in SLOTS {
                        plan.push(point(
                            InsertVariant::Hybrid,
                            t,
                            RecordMix::Fixed(THREADS_RECORD_BYTES),
                            k,
                        ));
                    }
                }
            }
        }
        plan
    }
}

/// One planned run.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The round (0-based): every point runs once per round.
    pub repeat: usize,
    /// The run.
    pub run: LogInsertConfig,
}

/// The limit runs a plan needs: one per round and distinct (threads, records).
fn limit_runs(plan: &[Planned]) -> usize {
    plan.iter()
        .map(|p| (p.repeat, p.run.threads, p.run.mix))
        .collect::<HashSet<_>>()
        .len()
}

/// One row of a sweep: a run's result and the round it ran in.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// The figure.
    pub figure: Figure,
    /// The round it ran in (0-based).
    pub repeat: usize,
    /// The run (with its round's limit).
    #[serde(flatten)]
    pub result: LogInsertResult,
}

/// Runs the sweep, one row per planned run (every round). `progress(done, total)` is
/// called after each run (limit runs count as runs too). Check
/// [`SweepConfig::validate`] first: a `repeat` of 0 runs nothing.
pub fn run(
    cfg: &SweepConfig,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<SweepRow>, WalError> {
    let plan = cfg.plan();
    let mut limits: HashMap<(usize, usize, RecordMix), f64> = HashMap::new();
    let total = plan.len() + limit_runs(&plan);
    let mut done = 0;
    let mut out = Vec::with_capacity(plan.len());
    for p in &plan {
        let c = &p.run;
        // Measured in every round, like the variants, so that its spread is the
        // machine's too.
        let limit = match limits.entry((p.repeat, c.threads, c.mix)) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let limit = *e.insert(log_insert::measure_limit(c, |_| {}));
                done += 1;
                progress(done, total);
                limit
            }
        };
        let r = log_insert::run_inserts(c, |_| {})?;
        out.push(SweepRow {
            figure: cfg.figure,
            repeat: p.repeat,
            result: log_insert::with_limit(r, limit),
        });
        done += 1;
        progress(done, total);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn rounds_have_the_papers_shape() {
        let threads = SweepConfig::new(Figure::Threads).round();
        assert_eq!(threads.len(), 7 * 6);
        assert_eq!(threads.last().unwrap().threads, 64);
        let size = SweepConfig::new(Figure::Size).round();
        assert_eq!(size.len(), SIZES.len() * 6);
        assert!(size.iter().all(|c| c.threads == 64 && c.validate().is_ok()));
        let outlier = SweepConfig::new(Figure::Outlier).round();
        assert!(outlier.iter().all(|c| c.validate().is_ok()));
        assert_eq!(outlier.len(), OUTLIERS.len() * 2);
        let slots = SweepConfig::new(Figure::Slots).round();
        assert_eq!(slots.len(), 7 * SLOTS.len());
        // The defaults (3 rounds, limits included) finish in about two minutes.
        for &f in Figure::value_variants() {
            let c = SweepConfig::new(f);
            c.validate().unwrap();
            let secs = c.runs() as f64 * c.per_point.as_secs_f64();
            assert!(secs <= 120.0, "{f}: {secs} s");
        }
    }

    #[test]
    fn each_round_runs_every_point_once_in_the_same_order() {
        for &f in Figure::value_variants() {
            let mut c = SweepConfig::new(f);
            c.repeat = 3;
            let round = c.round();
            let plan = c.plan();
            assert_eq!(plan.len(), 3 * round.len(), "{f}");
            for (r, chunk) in plan.chunks(round.len()).enumerate() {
                assert!(chunk.iter().all(|p| p.repeat == r), "{f}: round {r} marked");
                for (p, c) in chunk.iter().zip(&round) {
                    let key = |c: &LogInsertConfig| (c.variant, c.threads, c.mix, c.slots);
                    assert_eq!(key(&p.run), key(c), "{f}: round {r} in order");
                }
            }
            // Interleaved: the second run is another point, not a repeat of the first.
            assert_eq!(plan[1].repeat, 0, "{f}");
            assert_ne!(
                (plan[1].run.variant, plan[1].run.threads, plan[1].run.slots),
                (plan[0].run.variant, plan[0].run.threads, plan[0].run.slots),
                "{f}"
            );
        }
        // The variants compared at one x run next to each other.
        let c = SweepConfig::new(Figure::Threads);
        let first: Vec<_> = c.round()[..InsertVariant::ALL.len()]
            .iter()
            .map(|r| (r.variant, r.threads))
            .collect();
        let want: Vec<_> = InsertVariant::ALL.iter().map(|&v| (v, 1)).collect();
        assert_eq!(first, want);
    }

    #[test]
    fn limits_are_counted_once_per_round_and_pair() {
        let mut c = SweepConfig::new(Figure::Threads);
        c.repeat = 2;
        // 7 thread counts × 6 variants per round, and one limit per thread count.
        assert_eq!(c.runs(), 2 * (7 * 6 + 7));
        let mut s = SweepConfig::new(Figure::Slots);
        s.repeat = 1;
        assert_eq!(
            s.runs(),
            7 * SLOTS.len() + 7,
            "slots share their thread's limit"
        );
    }

    #[test]
    fn validation_names_the_bad_knob() {
        let bad = |edit: fn(&mut SweepConfig), mentions: &str| {
            let mut c = SweepConfig::new(Figure::Size);
            edit(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(mentions), "{e:?} lacks {mentions:?}");
        };
        bad(|c| c.repeat = 0, "repeat");
        bad(|c| c.repeat = 101, "repeat");
        bad(|c| c.max_threads = 0, "threads");
        bad(|c| c.per_point = Duration::ZERO, "seconds");
    }

    #[test]
    fn a_small_sweep_writes_every_round_and_the_figure() {
        let cfg = SweepConfig {
            figure: Figure::Threads,
            per_point: Duration::from_millis(20),
            max_threads: 2,
            repeat: 2,
        };
        let mut calls = 0;
        let rows = run(&cfg, |done, total| {
            calls += 1;
            assert!(done <= total);
        })
        .unwrap();
        let per_round = 2 * InsertVariant::ALL.len();
        assert_eq!(rows.len(), 2 * per_round);
        assert_eq!(calls, cfg.runs(), "every run reports, limits too");
        assert_eq!(
            calls,
            rows.len() + 2 * 2,
            "a limit per thread count per round"
        );
        for r in 0..2 {
            assert_eq!(rows.iter().filter(|x| x.repeat == r).count(), per_round);
        }
        assert!(rows.iter().all(|r| r.result.limit_bytes_per_sec > 0.0));
        // Within a round the variants share the limit; rounds measure their own.
        let limits = |r: usize, t: usize| {
            rows.iter()
                .filter(|x| x.repeat == r && x.result.threads == t)
                .map(|x| x.result.limit_bytes_per_sec.to_bits())
                .collect::<HashSet<_>>()
                .len()
        };
        assert_eq!((limits(0, 1), limits(1, 2)), (1, 1));
        let rendered = summary_table(&rows).render();
        assert!(rendered.contains("delegated") && rendered.contains("% of limit"));
        let dir = tempfile::tempdir().unwrap();
        let files = write_outputs(dir.path(), &cfg, &rows).unwrap();
        assert!(files.iter().all(|f| f.exists()), "{files:?}");
        let csv = std::fs::read_to_string(dir.path().join("threads.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + rows.len());
        assert!(csv.starts_with("figure,repeat,variant"), "{csv}");
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("threads.json")).unwrap(),
        )
        .unwrap();
        let json = json.as_array().unwrap();
        assert_eq!(json.len(), rows.len());
        assert_eq!(json[per_round]["repeat"], 1);
        assert_eq!(json[0]["figure"], "threads");
        let summary = std::fs::read_to_string(dir.path().join("threads-summary.csv")).unwrap();
        assert_eq!(summary.lines().count(), 1 + per_round, "a line per point");
        let svg = std::fs::read_to_string(dir.path().join("threads.svg")).unwrap();
        assert!(svg.contains("atomic") && svg.contains(LIMIT_LABEL));
        assert!(svg.contains("median of 2 interleaved rounds"));
        assert!(dir.path().join("threads.png").exists());
    }
}
