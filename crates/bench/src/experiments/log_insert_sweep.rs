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
//! The limit (private-ring copies) depends only on the threads and the records, so a
//! sweep measures it once per distinct pair and shares it between the variants.

use super::log_insert::{self, LogInsertConfig, LogInsertResult, RecordMix};
use crate::knobs::named_values;
use crate::output::{create_dir, thousands, write_file, Chart, Csv, Series, Table};
use sluice_wal::{InsertVariant, WalError};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

/// Which figure to sweep for; its name (`--figure`) is the stem of the output files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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

named_values!(Figure, "figure");

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
}

impl SweepConfig {
    /// The paper's sweep: up to 64 threads, 0.5 s per point (about half a minute).
    pub fn new(figure: Figure) -> Self {
        SweepConfig {
            figure,
            per_point: Duration::from_millis(500),
            max_threads: 64,
        }
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

    /// The runs, in order.
    pub fn plan(&self) -> Vec<LogInsertConfig> {
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

/// Runs the sweep. `progress(done, total)` is called after each run (limit runs count as
/// runs too).
pub fn run(
    cfg: &SweepConfig,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<LogInsertResult>, WalError> {
    let plan = cfg.plan();
    let mut limits: HashMap<(usize, RecordMix), f64> = HashMap::new();
    let distinct = plan
        .iter()
        .map(|c| (c.threads, c.mix))
        .collect::<HashSet<_>>()
        .len();
    let total = plan.len() + distinct;
    let mut done = 0;
    let mut out = Vec::with_capacity(plan.len());
    for c in &plan {
        let limit = match limits.entry((c.threads, c.mix)) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let limit = *e.insert(log_insert::measure_limit(c, |_| {}));
                done += 1;
                progress(done, total);
                limit
            }
        };
        let r = log_insert::run_inserts(c, |_| {})?;
        out.push(log_insert::with_limit(r, limit));
        done += 1;
        progress(done, total);
    }
    Ok(out)
}

/// The figure's x value of a result.
fn x_of(figure: Figure, r: &LogInsertResult) -> f64 {
    match figure {
        Figure::Threads => r.threads as f64,
        Figure::Size | Figure::Outlier => r.record_bytes as f64,
        Figure::Slots => r.slots as f64,
    }
}

fn mb(bytes_per_sec: f64) -> f64 {
    bytes_per_sec / 1e6
}

/// The results as a text table.
pub fn table(results: &[LogInsertResult]) -> Table {
    let mut t = Table::new([
        "variant",
        "threads",
        "record B",
        "slots",
        "inserts/s",
        "MB/s",
        "limit MB/s",
        "% of limit",
    ]);
    for r in results {
        let record = match r.mix.as_str() {
            "outlier" => format!("48+{}", r.record_bytes),
            _ => r.record_bytes.to_string(),
        };
        t.row([
            r.variant.clone(),
            r.threads.to_string(),
            record,
            r.slots.to_string(),
            thousands(r.inserts_per_sec),
            format!("{:.1}", mb(r.bytes_per_sec)),
            format!("{:.1}", mb(r.limit_bytes_per_sec)),
            format!("{:.1}", 100.0 * r.ratio_to_limit),
        ]);
    }
    t
}

/// The results as CSV (one header line, one line per result).
pub fn csv(figure: Figure, results: &[LogInsertResult]) -> String {
    let mut csv = Csv::new([
        "figure",
        "variant",
        "threads",
        "mix",
        "record_bytes",
        "mean_record_bytes",
        "slots",
        "seconds",
        "inserts",
        "inserts_per_sec",
        "bytes_per_sec",
        "limit_bytes_per_sec",
        "ratio_to_limit",
    ]);
    for r in results {
        csv.row([
            figure.to_string(),
            r.variant.clone(),
            r.threads.to_string(),
            r.mix.clone(),
            r.record_bytes.to_string(),
            r.mean_record_bytes.to_string(),
            r.slots.to_string(),
            format!("{:.3}", r.seconds),
            r.inserts.to_string(),
            format!("{:.1}", r.inserts_per_sec),
            format!("{:.1}", r.bytes_per_sec),
            format!("{:.1}", r.limit_bytes_per_sec),
            format!("{:.4}", r.ratio_to_limit),
        ]);
    }
    csv.finish()
}

/// The figure: one line per variant (per thread count for `slots`).
pub fn chart(figure: Figure, results: &[LogInsertResult]) -> Chart {
    let mut series: Vec<Series> = Vec::new();
    for r in results {
        let label = match figure {
            Figure::Slots if r.threads == 1 => "1 thread".to_string(),
            Figure::Slots => format!("{} threads", r.threads),
            _ => r.variant.clone(),
        };
        let point = (x_of(figure, r), mb(r.bytes_per_sec));
        match series.iter_mut().find(|s| s.label == label) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                label,
                points: vec![point],
            }),
        }
    }
    let threads = results.iter().map(|r| r.threads).max().unwrap_or(0);
    let (title, x_label, log_x, log_y) = match figure {
        Figure::Threads => (
            format!("Log inserts of {THREADS_RECORD_BYTES} B records vs threads"),
            "threads",
            true,
            false,
        ),
        Figure::Size => (
            format!("Log inserts vs record size, {threads} threads"),
            "record size (bytes)",
            true,
            true,
        ),
        Figure::Outlier => (
            format!("60 records of 48 B, then one outlier: {threads} threads"),
            "outlier size (bytes)",
            true,
            false,
        ),
        Figure::Slots => (
            format!("Hybrid: {THREADS_RECORD_BYTES} B records vs consolidation slots"),
            "slots",
            false,
            false,
        ),
    };
    Chart {
        title,
        x_label: x_label.into(),
        y_label: "MB/s inserted".into(),
        log_x,
        log_y,
        series,
    }
}

/// Writes `<figure>.csv`, `<figure>.json`, `<figure>.png` and `<figure>.svg` under `dir`.
pub fn write_outputs(
    dir: &Path,
    figure: Figure,
    results: &[LogInsertResult],
) -> Result<(), String> {
    create_dir(dir)?;
    let stem = figure.to_string();
    write_file(&dir.join(format!("{stem}.csv")), &csv(figure, results))?;
    let json = serde_json::to_string_pretty(results).expect("results serialise");
    write_file(&dir.join(format!("{stem}.json")), &json)?;
    chart(figure, results).write(dir, &stem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn plans_have_the_papers_shape() {
        let threads = SweepConfig::new(Figure::Threads).plan();
        assert_eq!(threads.len(), 7 * 6);
        assert_eq!(threads.last().unwrap().threads, 64);
        let size = SweepConfig::new(Figure::Size).plan();
        assert_eq!(size.len(), SIZES.len() * 6);
        assert!(size.iter().all(|c| c.threads == 64 && c.validate().is_ok()));
        let outlier = SweepConfig::new(Figure::Outlier).plan();
        assert!(outlier.iter().all(|c| c.validate().is_ok()));
        assert_eq!(outlier.len(), OUTLIERS.len() * 2);
        let slots = SweepConfig::new(Figure::Slots).plan();
        assert_eq!(slots.len(), 7 * SLOTS.len());
        // The defaults finish in about a minute.
        for &f in Figure::value_variants() {
            let c = SweepConfig::new(f);
            let secs = c.plan().len() as f64 * c.per_point.as_secs_f64();
            assert!(secs <= 40.0, "{f}: {secs} s");
        }
    }

    #[test]
    fn a_small_sweep_writes_table_csv_json_and_figures() {
        let cfg = SweepConfig {
            figure: Figure::Threads,
            per_point: Duration::from_millis(20),
            max_threads: 2,
        };
        let mut calls = 0;
        let results = run(&cfg, |done, total| {
            calls += 1;
            assert!(done <= total);
        })
        .unwrap();
        assert_eq!(results.len(), 2 * InsertVariant::ALL.len());
        assert_eq!(calls, results.len() + 2, "one limit run per thread count");
        assert!(results.iter().all(|r| r.limit_bytes_per_sec > 0.0));
        let rendered = table(&results).render();
        assert!(rendered.contains("delegated") && rendered.contains("% of limit"));
        let dir = tempfile::tempdir().unwrap();
        write_outputs(dir.path(), Figure::Threads, &results).unwrap();
        let csv = std::fs::read_to_string(dir.path().join("threads.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + results.len());
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("threads.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(json.as_array().unwrap().len(), results.len());
        let svg = std::fs::read_to_string(dir.path().join("threads.svg")).unwrap();
        assert!(svg.contains("atomic") && svg.contains("threads"));
        assert!(dir.path().join("threads.png").exists());
    }
}
