//! What a log-insert sweep prints and writes: the table (each point's median and
//! min–max over the rounds), the CSV and the JSON (every round), the summary CSV and the
//! figure (medians with min–max error bars, the private-copy limit as a line of its own,
//! notes under the plot).

use super::{Figure, SweepConfig, SweepRow, SLOTS, THREADS_RECORD_BYTES};
use crate::experiments::log_insert::LogInsertResult;
use crate::experiments::noise;
use crate::metrics::cores;
use crate::output::{
    json_array, spread_line, thousands, write_texts, Chart, Csv, Panel, Spread, Table,
};
use std::path::{Path, PathBuf};

/// The legend label of the limit's line.
pub const LIMIT_LABEL: &str = "limit (private copies)";

fn mb(bytes_per_sec: f64) -> f64 {
    bytes_per_sec / 1e6
}

fn record_cell(mix: &str, record_bytes: usize) -> String {
    match mix {
        "outlier" => format!("48+{record_bytes}"),
        _ => record_bytes.to_string(),
    }
}

/// The columns of a run or a point, in the tables of `bench log-insert` and the sweep.
const COLUMNS: [&str; 8] = [
    "variant",
    "threads",
    "record B",
    "slots",
    "inserts/s",
    "MB/s",
    "limit MB/s",
    "% of limit",
];

/// Single runs as a text table (`bench log-insert`).
pub fn table(results: &[LogInsertResult]) -> Table {
    let mut t = Table::new(COLUMNS);
    for r in results {
        t.row([
            r.variant.clone(),
            r.threads.to_string(),
            record_cell(&r.mix, r.record_bytes),
            r.slots.to_string(),
            thousands(r.inserts_per_sec),
            format!("{:.1}", mb(r.bytes_per_sec)),
            format!("{:.1}", mb(r.limit_bytes_per_sec)),
            format!("{:.1}", 100.0 * r.ratio_to_limit),
        ]);
    }
    t
}

/// What makes two rows repeats of one point: everything but the round.
#[derive(Debug, Clone, PartialEq)]
pub struct PointKey {
    /// The insertion algorithm.
    pub variant: String,
    /// Inserting threads.
    pub threads: usize,
    /// `fixed` or `outlier`.
    pub mix: String,
    /// The record size (fixed mix) or the outlier size.
    pub record_bytes: usize,
    /// Consolidation-array slots.
    pub slots: usize,
}

impl PointKey {
    fn of(r: &LogInsertResult) -> PointKey {
        PointKey {
            variant: r.variant.clone(),
            threads: r.threads,
            mix: r.mix.clone(),
            record_bytes: r.record_bytes,
            slots: r.slots,
        }
    }

    /// The figure's x value of the point.
    fn x(&self, figure: Figure) -> f64 {
        match figure {
            Figure::Threads => self.threads as f64,
            Figure::Size | Figure::Outlier => self.record_bytes as f64,
            Figure::Slots => self.slots as f64,
        }
    }
}

/// One point of a figure: its rounds' spreads.
#[derive(Debug, Clone)]
pub struct Point {
    /// The point.
    pub key: PointKey,
    /// Records inserted per second.
    pub inserts_per_sec: Spread,
    /// Payload bytes inserted per second.
    pub bytes_per_sec: Spread,
    /// The limit of each round (private copies), bytes per second.
    pub limit_bytes_per_sec: Spread,
    /// Bytes per second ÷ the round's limit.
    pub ratio_to_limit: Spread,
}

/// The points of `rows`, in the order of their first round.
pub fn points(rows: &[SweepRow]) -> Vec<Point> {
    let mut keys: Vec<PointKey> = Vec::new();
    for r in rows {
        let k = PointKey::of(&r.result);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .filter_map(|key| {
            let mine: Vec<&LogInsertResult> = rows
                .iter()
                .map(|r| &r.result)
                .filter(|r| PointKey::of(r) == key)
                .collect();
            let of = |f: fn(&LogInsertResult) -> f64| Spread::of(mine.iter().map(|r| f(r)));
            Some(Point {
                inserts_per_sec: of(|r| r.inserts_per_sec)?,
                bytes_per_sec: of(|r| r.bytes_per_sec)?,
                limit_bytes_per_sec: of(|r| r.limit_bytes_per_sec)?,
                ratio_to_limit: of(|r| r.ratio_to_limit)?,
                key,
            })
        })
        .collect()
}

/// The points as a text table: the medians over the rounds and, with more than one
/// round, the min–max of the throughput, the limit and the share of it.
pub fn summary_table(rows: &[SweepRow]) -> Table {
    let mut t = Table::new(COLUMNS.into_iter().chain(["rounds"]));
    for p in points(rows) {
        let k = &p.key;
        t.row([
            k.variant.clone(),
            k.threads.to_string(),
            record_cell(&k.mix, k.record_bytes),
            k.slots.to_string(),
            thousands(p.inserts_per_sec.median),
            p.bytes_per_sec.map(mb).cell(1),
            p.limit_bytes_per_sec.map(mb).cell(1),
            p.ratio_to_limit.map(|r| 100.0 * r).cell(1),
            p.bytes_per_sec.n.to_string(),
        ]);
    }
    t
}

/// Every row as CSV, with the round it ran in.
fn csv(rows: &[SweepRow]) -> String {
    let mut csv = Csv::new([
        "figure",
        "repeat",
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
    for row in rows {
        let r = &row.result;
        csv.row([
            row.figure.to_string(),
            row.repeat.to_string(),
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

/// A measure of a point.
type Measure = fn(&Point) -> Spread;

/// The measures of the summary CSV: name and value of a point.
const MEASURES: [(&str, Measure); 4] = [
    ("inserts_per_sec", |p| p.inserts_per_sec),
    ("bytes_per_sec", |p| p.bytes_per_sec),
    ("limit_bytes_per_sec", |p| p.limit_bytes_per_sec),
    ("ratio_to_limit", |p| p.ratio_to_limit),
];

/// One row per point: its key, the number of rounds, and each measure's median, min and
/// max over them.
fn summary_csv(rows: &[SweepRow]) -> String {
    let mut header: Vec<String> = ["variant", "threads", "mix", "record_bytes", "slots"]
        .map(String::from)
        .to_vec();
    header.push("repeats".into());
    for (m, _) in MEASURES {
        header.extend(["median", "min", "max"].map(|s| format!("{m}_{s}")));
    }
    let mut csv = Csv::new(header);
    for p in points(rows) {
        let k = &p.key;
        let mut cells = vec![
            k.variant.clone(),
            k.threads.to_string(),
            k.mix.clone(),
            k.record_bytes.to_string(),
            k.slots.to_string(),
            p.bytes_per_sec.n.to_string(),
        ];
        for (_, f) in MEASURES {
            let s = f(&p);
            cells.extend([s.median, s.min, s.max].map(|v| format!("{v:.4}")));
        }
        csv.row(cells);
    }
    csv.finish()
}

/// The figure's limit line: whether it has one (its x axis moves the limit; on the
/// slots figure the limit is flat per thread count, so it stays in the table).
fn draws_limit(figure: Figure) -> bool {
    figure != Figure::Slots
}

/// What the figure says under its plot, and the command prints: how it was measured,
/// what the limit is, and what this machine cannot show.
pub fn notes(cfg: &SweepConfig) -> Vec<String> {
    notes_for(cfg, cores())
}

fn notes_for(cfg: &SweepConfig, hardware_threads: usize) -> Vec<String> {
    let mut notes = vec![match cfg.repeat {
        1 => format!(
            "one round, {:?} per point: no spread (--repeat 2 or more draws one)",
            cfg.per_point
        ),
        n => format!(
            "median of {n} interleaved rounds, {:?} per point; bars: min–max",
            cfg.per_point
        ),
    }];
    notes.push(if draws_limit(cfg.figure) {
        format!("{LIMIT_LABEL}: the same threads copying the same records into private rings, no sharing (measured in every round)")
    } else {
        "the limit (private copies) depends on the thread count only: see the table and the CSV"
            .to_string()
    });
    notes.extend(noise::hardware_note(
        hardware_threads,
        cfg.max_threads,
        "threads the inserting threads share cores",
        "the figure cannot show the paper's scaling there",
    ));
    notes
}

/// The figure: one line per variant (per thread count for `slots`), the median of the
/// rounds with min–max error bars, the limit's line where the x axis moves it, and
/// [`notes`].
pub fn panel(cfg: &SweepConfig, rows: &[SweepRow]) -> Panel {
    panel_for(cfg, rows, notes(cfg))
}

fn panel_for(cfg: &SweepConfig, rows: &[SweepRow], notes: Vec<String>) -> Panel {
    let figure = cfg.figure;
    let pts = points(rows);
    let (title, x_label, log_x, log_y) = match figure {
        Figure::Threads => (
            format!(
                "Log inserts of {THREADS_RECORD_BYTES} B records vs threads (Aether Fig. 8 left)"
            ),
            "threads",
            true,
            true,
        ),
        Figure::Size => (
            format!(
                "Log inserts vs record size, {} threads (Aether Fig. 8 right)",
                cfg.max_threads
            ),
            "record size (bytes)",
            true,
            true,
        ),
        Figure::Outlier => (
            format!(
                "60 records of 48 B, then one outlier: {} threads (Aether Fig. 11)",
                cfg.max_threads
            ),
            "outlier size (bytes)",
            true,
            true,
        ),
        Figure::Slots => (
            format!(
                "Hybrid: {THREADS_RECORD_BYTES} B records vs consolidation slots (Aether Fig. 12)"
            ),
            "slots",
            false,
            false,
        ),
    };
    // One line per variant (per thread count for slots), in the order of first sight.
    let mut lines: Vec<(String, Vec<(f64, Spread)>)> = Vec::new();
    for p in &pts {
        let label = match figure {
            Figure::Slots if p.key.threads == 1 => "1 thread".to_string(),
            Figure::Slots => format!("{} threads", p.key.threads),
            _ => p.key.variant.clone(),
        };
        let point = (p.key.x(figure), p.bytes_per_sec.map(mb));
        match lines.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v.push(point),
            None => lines.push((label, vec![point])),
        }
    }
    if draws_limit(figure) {
        // Every variant at one x shares its round's limit: take it from the first.
        let mut limit: Vec<(f64, Spread)> = Vec::new();
        for p in &pts {
            let x = p.key.x(figure);
            if !limit.iter().any(|(lx, _)| *lx == x) {
                limit.push((x, p.limit_bytes_per_sec.map(mb)));
            }
        }
        lines.push((LIMIT_LABEL.to_string(), limit));
    }
    let mut series = Vec::new();
    let mut bars = Vec::new();
    for (label, pts) in lines {
        let (s, b) = spread_line(label, &pts, log_y);
        series.push(s);
        bars.push(b);
    }
    let x_ticks = match figure {
        Figure::Threads => cfg.thread_counts().into_iter().map(|t| t as f64).collect(),
        Figure::Slots => SLOTS.iter().map(|&s| s as f64).collect(),
        Figure::Size | Figure::Outlier => Vec::new(),
    };
    Panel {
        chart: Chart {
            title,
            x_label: x_label.into(),
            y_label: "MB/s inserted".into(),
            log_x,
            log_y,
            series,
        },
        bars,
        notes,
        x_ticks,
    }
}

/// Writes `<figure>.csv` and `<figure>.json` (every round), `<figure>-summary.csv`
/// (median, min, max per point) and the figure as `<figure>.png` and `<figure>.svg`
/// under `dir`; returns their paths.
pub fn write_outputs(
    dir: &Path,
    cfg: &SweepConfig,
    rows: &[SweepRow],
) -> Result<Vec<PathBuf>, String> {
    let stem = cfg.figure.to_string();
    let mut files = write_texts(
        dir,
        &stem,
        &[
            (".csv", csv(rows)),
            (".json", json_array(rows)),
            ("-summary.csv", summary_csv(rows)),
        ],
    )?;
    panel(cfg, rows).write(dir, &stem)?;
    files.push(dir.join(format!("{stem}.png")));
    files.push(dir.join(format!("{stem}.svg")));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A row of round `repeat`: `variant` at `threads` threads, 120 B records, inserting
    /// `mb_s` MB/s against a limit of `limit_mb_s`.
    fn row(repeat: usize, variant: &str, threads: usize, mb_s: f64, limit_mb_s: f64) -> SweepRow {
        SweepRow {
            figure: Figure::Threads,
            repeat,
            result: LogInsertResult {
                variant: variant.into(),
                threads,
                mix: "fixed".into(),
                record_bytes: 120,
                mean_record_bytes: 120.0,
                slots: 4,
                seconds: 0.5,
                inserts: 1000,
                inserts_per_sec: mb_s * 1e6 / 120.0,
                bytes_per_sec: mb_s * 1e6,
                limit_bytes_per_sec: limit_mb_s * 1e6,
                ratio_to_limit: mb_s / limit_mb_s,
            },
        }
    }

    fn rows() -> Vec<SweepRow> {
        vec![
            row(0, "mutex", 1, 100.0, 1000.0),
            row(0, "atomic", 1, 300.0, 1000.0),
            row(0, "mutex", 2, 150.0, 2000.0),
            row(0, "atomic", 2, 500.0, 2000.0),
            row(1, "mutex", 1, 120.0, 1200.0),
            row(1, "atomic", 1, 200.0, 1200.0),
            row(1, "mutex", 2, 130.0, 1800.0),
            row(1, "atomic", 2, 450.0, 1800.0),
            row(2, "mutex", 1, 90.0, 800.0),
            row(2, "atomic", 1, 330.0, 800.0),
            row(2, "mutex", 2, 140.0, 2200.0),
            row(2, "atomic", 2, 400.0, 2200.0),
        ]
    }

    fn cfg() -> SweepConfig {
        SweepConfig {
            max_threads: 2,
            per_point: Duration::from_millis(20),
            ..SweepConfig::new(Figure::Threads)
        }
    }

    #[test]
    fn points_gather_their_rounds_into_median_min_max() {
        let p = points(&rows());
        assert_eq!(p.len(), 4, "two variants at two thread counts");
        assert_eq!((p[0].key.variant.as_str(), p[0].key.threads), ("mutex", 1));
        let b = p[0].bytes_per_sec.map(mb);
        assert_eq!((b.median, b.min, b.max, b.n), (100.0, 90.0, 120.0, 3));
        let l = p[3].limit_bytes_per_sec.map(mb);
        assert_eq!((l.median, l.min, l.max), (2000.0, 1800.0, 2200.0));
        let t = summary_table(&rows()).render();
        let atomic_1 = t
            .lines()
            .find(|l| l.starts_with("atomic") && l.contains(" 1 "))
            .unwrap();
        assert!(atomic_1.contains("300.0 (200.0–330.0)"), "{t}");
        assert!(atomic_1.contains("1000.0 (800.0–1200.0)"), "{t}");
        assert!(atomic_1.trim_end().ends_with('3'), "3 rounds: {t}");
    }

    #[test]
    fn the_figure_draws_medians_bars_and_the_limit() {
        let p = panel_for(&cfg(), &rows(), Vec::new());
        let labels: Vec<&str> = p.chart.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["mutex", "atomic", LIMIT_LABEL]);
        assert_eq!(p.chart.series[1].points, [(1.0, 300.0), (2.0, 450.0)]);
        let bar = p.bars[1][0];
        assert_eq!((bar.x, bar.low, bar.high), (1.0, 200.0, 330.0));
        // The limit: one point per thread count, each the spread of its rounds.
        assert_eq!(p.chart.series[2].points, [(1.0, 1000.0), (2.0, 2000.0)]);
        assert_eq!((p.bars[2][1].low, p.bars[2][1].high), (1800.0, 2200.0));
        assert_eq!(p.x_ticks, [1.0, 2.0]);
        // The slots figure has no limit line (it is flat per thread count).
        let slots = SweepConfig {
            figure: Figure::Slots,
            ..cfg()
        };
        let p = panel_for(&slots, &rows(), Vec::new());
        assert!(p.chart.series.iter().all(|s| s.label != LIMIT_LABEL));
    }

    #[test]
    fn the_notes_say_how_and_what_this_machine_cannot_show() {
        let c = cfg();
        let n = notes_for(&c, 1);
        assert!(n[0].starts_with("median of 3 interleaved rounds"), "{n:?}");
        assert!(n[1].starts_with(LIMIT_LABEL), "{n:?}");
        assert!(
            n[2].starts_with("1 hardware threads here") && n[2].contains("scaling"),
            "{n:?}"
        );
        assert_eq!(
            notes_for(&c, 2).len(),
            2,
            "as many hardware threads as threads"
        );
    }

    #[test]
    fn the_size_figure_labels_its_axis_below_a_gigabyte_per_second() {
        // The size figure's log axis once had no label below 1000 MB/s.
        let sized = |repeat, variant: &str, bytes: usize, mb_s: f64| {
            let mut r = row(repeat, variant, 64, mb_s, 10.0 * mb_s);
            r.figure = Figure::Size;
            r.result.record_bytes = bytes;
            r
        };
        let rows = [
            sized(0, "mutex", 48, 0.3),
            sized(0, "mutex", 1024, 40.0),
            sized(0, "mutex", 12288, 900.0),
        ];
        let c = SweepConfig {
            figure: Figure::Size,
            repeat: 1,
            ..cfg()
        };
        let dir = tempfile::tempdir().unwrap();
        write_outputs(dir.path(), &c, &rows).unwrap();
        let svg = std::fs::read_to_string(dir.path().join("size.svg")).unwrap();
        let labels: Vec<&str> = svg
            .split("</text>")
            .filter_map(|t| t.rsplit('>').next().map(str::trim))
            .collect();
        // The x axis starts at 48: these are the y axis' labels.
        for tick in ["0.5", "1", "2", "5", "10", "20"] {
            assert!(labels.contains(&tick), "no y label {tick}: {labels:?}");
        }
    }
}
