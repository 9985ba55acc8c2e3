//! What a vertical-partitioning sweep prints and writes: the table of Tandem's Tables 2–4
//! (each point's median and, over more than one round, its min–max), the CSV and the
//! JSON (every run), the summary CSV and Fig. 6 (medians with min–max error bars, notes
//! under the plot on how it was measured and what it shows).

use super::{SweepConfig, SweepRow};
use crate::experiments::noise;
use crate::metrics::cores;
use crate::output::{
    by_point, json_array, spread_line, write_texts, Chart, Csv, Panel, Series, Spread, Table,
};
use std::path::{Path, PathBuf};

/// The stem of the sweep's files: `tandem-fig6.csv`, `tandem-fig6.png`, ….
pub const STEM: &str = "tandem-fig6";

/// The Tandem paper's machine: a 16-CPU NonStop Himalaya K20000 (§6).
const PAPER_CPUS: usize = 16;

/// Process CPU at which the note says this machine's cores, not only the log devices,
/// may have limited a run (a share of its hardware threads).
const BUSY_CPU_SHARE: f64 = 0.8;

/// Zero-filled share of the devices' writes from which the figure says so: the devices
/// carry those bytes, L does not count them.
const NOTABLE_ZERO_FILL: f64 = 0.05;

/// One point of the figure (log managers, inserts per transaction): its rounds' spreads.
#[derive(Debug, Clone)]
pub struct Point {
    /// Log managers.
    pub log_managers: usize,
    /// Rows each transaction inserted.
    pub inserts_per_txn: usize,
    /// L / R = Σ G_i + c: log bytes per transaction, the figure's x.
    pub log_bytes_per_txn: Spread,
    /// The median of each generator's G_i over the rounds.
    pub generator_bytes_per_txn: Vec<f64>,
    /// The median of each log's L_i over the rounds, MB/s.
    pub log_mb_per_s_each: Vec<f64>,
    /// c: bytes of a commit record in the coordinator's log.
    pub commit_record_bytes: Spread,
    /// R: transactions per second.
    pub tps: Spread,
    /// L: the aggregate log rate, MB/s, the figure's y.
    pub log_mb_per_s: Spread,
    /// Process CPU per transaction, µs.
    pub cpu_us_per_txn: Spread,
    /// Process CPU ÷ wall time: the cores' worth the run kept busy.
    pub cpu_cores: Spread,
    /// Response time, median and 99th percentile, µs.
    pub p50_us: Spread,
    /// See `p50_us`.
    pub p99_us: Spread,
    /// Zero-filled bytes ÷ bytes the logs wrote.
    pub zero_filled_share: Spread,
}

/// The point's measures, by name (the summary CSV's columns).
type Measure = fn(&Point) -> Spread;
const MEASURES: [(&str, Measure); 9] = [
    ("log_bytes_per_txn", |p| p.log_bytes_per_txn),
    ("commit_record_bytes", |p| p.commit_record_bytes),
    ("tps", |p| p.tps),
    ("log_mb_per_s", |p| p.log_mb_per_s),
    ("cpu_us_per_txn", |p| p.cpu_us_per_txn),
    ("cpu_cores", |p| p.cpu_cores),
    ("p50_us", |p| p.p50_us),
    ("p99_us", |p| p.p99_us),
    ("zero_filled_share", |p| p.zero_filled_share),
];

/// The element-wise medians of the rounds' vectors (one per generator or log).
fn medians(runs: &[&SweepRow], each: fn(&SweepRow) -> &[f64]) -> Vec<f64> {
    let n = runs.first().map_or(0, |r| each(r).len());
    (0..n)
        .map(|i| Spread::of(runs.iter().map(|r| each(r)[i])).map_or(f64::NAN, |s| s.median))
        .collect()
}

/// The points of `rows`, in the order of their first round.
pub fn points(rows: &[SweepRow]) -> Vec<Point> {
    by_point(rows, |r| (r.result.log_managers, r.result.inserts_per_txn))
        .into_iter()
        .filter_map(|((log_managers, inserts_per_txn), runs)| {
            let of = |f: fn(&SweepRow) -> f64| Spread::of(runs.iter().map(|r| f(r)));
            Some(Point {
                log_managers,
                inserts_per_txn,
                log_bytes_per_txn: of(|r| r.result.log_bytes_per_txn)?,
                generator_bytes_per_txn: medians(&runs, |r| &r.result.log_bytes_per_txn_each),
                log_mb_per_s_each: medians(&runs, |r| &r.result.log_mb_per_s_each),
                commit_record_bytes: of(|r| r.result.commit_record_bytes)?,
                tps: of(|r| r.result.tps)?,
                log_mb_per_s: of(|r| r.result.log_mb_per_s)?,
                cpu_us_per_txn: of(|r| r.result.cpu_us_per_txn)?,
                cpu_cores: of(|r| r.result.cpu_us_per_txn * r.result.tps / 1e6)?,
                p50_us: of(|r| r.result.latency.p50_us as f64)?,
                p99_us: of(|r| r.result.latency.p99_us as f64)?,
                zero_filled_share: of(|r| r.result.zero_filled_share)?,
            })
        })
        .collect()
}

fn joined(values: &[f64], digits: usize) -> String {
    values
        .iter()
        .map(|v| format!("{v:.digits$}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The points as the paper's table: each column the median over the rounds and, for R,
/// L, CPU and the median response time, its min–max; a `rounds` column when there was
/// more than one.
pub fn table(rows: &[SweepRow]) -> Table {
    let pts = points(rows);
    let repeated = pts.iter().any(|p| p.tps.n > 1);
    let mut t = Table::new(
        [
            "log managers",
            "inserts/txn",
            "G_i B/txn",
            "R (tps)",
            "L_i MB/s",
            "c B (framed)",
            "L MB/s",
            "CPU µs/txn",
            "p50 ms",
            "p99 ms",
        ]
        .into_iter()
        .chain(repeated.then_some("rounds")),
    );
    let ms = |s: Spread| s.map(|us| us / 1e3);
    for p in &pts {
        t.row(
            [
                p.log_managers.to_string(),
                p.inserts_per_txn.to_string(),
                joined(&p.generator_bytes_per_txn, 0),
                p.tps.cell(0),
                joined(&p.log_mb_per_s_each, 2),
                format!("{:.0}", p.commit_record_bytes.median),
                p.log_mb_per_s.cell(2),
                p.cpu_us_per_txn.cell(0),
                ms(p.p50_us).cell(1),
                format!("{:.1}", p.p99_us.median / 1e3),
            ]
            .into_iter()
            .chain(repeated.then(|| p.tps.n.to_string())),
        );
    }
    t
}

/// A column of the CSV of every run: its name and its cell of a run.
type Column = (&'static str, fn(&SweepRow) -> String);

/// The CSV's columns, header and cells from one list.
const CSV_COLUMNS: [Column; 17] = [
    ("repeat", |r| r.repeat.to_string()),
    ("log_managers", |r| r.result.log_managers.to_string()),
    ("inserts_per_txn", |r| r.result.inserts_per_txn.to_string()),
    ("clients", |r| r.result.clients.to_string()),
    ("device_mb_per_s", |r| {
        r.result
            .device_mb_per_s
            .map_or(String::new(), |m| m.to_string())
    }),
    ("log_bytes_per_txn", |r| {
        format!("{:.1}", r.result.log_bytes_per_txn)
    }),
    ("generator_bytes_per_txn", |r| {
        joined(&r.result.log_bytes_per_txn_each, 1)
    }),
    ("commit_record_bytes", |r| {
        format!("{:.1}", r.result.commit_record_bytes)
    }),
    ("tps", |r| format!("{:.2}", r.result.tps)),
    ("log_bytes_per_sec", |r| {
        format!("{:.0}", r.result.log_mb_per_s * 1e6)
    }),
    ("log_mb_per_s_each", |r| {
        joined(&r.result.log_mb_per_s_each, 4)
    }),
    ("coordinated_share", |r| {
        format!("{:.4}", r.result.coordinated_share)
    }),
    ("cpu_us_per_txn", |r| {
        format!("{:.1}", r.result.cpu_us_per_txn)
    }),
    ("p50_us", |r| r.result.latency.p50_us.to_string()),
    ("p99_us", |r| r.result.latency.p99_us.to_string()),
    ("zero_filled_share", |r| {
        format!("{:.4}", r.result.zero_filled_share)
    }),
    ("segments_recycled", |r| {
        r.result.segments_recycled.to_string()
    }),
];

/// Every run as CSV, with the round it ran in.
fn csv(rows: &[SweepRow]) -> String {
    let mut csv = Csv::new(CSV_COLUMNS.map(|(name, _)| name));
    for r in rows {
        csv.row(CSV_COLUMNS.iter().map(|(_, cell)| cell(r)));
    }
    csv.finish()
}

/// One row per point: its key, the number of rounds, and each measure's median, min and
/// max over them.
fn summary_csv(rows: &[SweepRow]) -> String {
    let header = ["log_managers", "inserts_per_txn", "repeats"]
        .map(String::from)
        .into_iter()
        .chain(MEASURES.iter().flat_map(|(m, _)| Spread::csv_header(m)));
    let mut csv = Csv::new(header);
    for p in points(rows) {
        let key = [p.log_managers, p.inserts_per_txn, p.tps.n].map(|v| v.to_string());
        csv.row(
            key.into_iter()
                .chain(MEASURES.iter().flat_map(|(_, f)| f(&p).csv_cells())),
        );
    }
    csv.finish()
}

/// "1 log manager", "2 log managers".
fn log_managers(k: usize) -> String {
    match k {
        1 => "1 log manager".into(),
        k => format!("{k} log managers"),
    }
}

/// The log managers of `pts`, in the order of first sight.
fn managers(pts: &[Point]) -> Vec<usize> {
    by_point(pts, |p| p.log_managers)
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

/// What the figure shows, in two lines per log-manager count past the fewest: the ratio
/// of the medians of L at each size, and where the min–max ranges are apart.
fn effect_notes(pts: &[Point]) -> Vec<String> {
    let ks = managers(pts);
    let Some(&base) = ks.first() else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    for &k in &ks[1..] {
        let pairs: Vec<(usize, &Point, &Point)> = pts
            .iter()
            .filter(|p| p.log_managers == k)
            .filter_map(|p| {
                let b = pts
                    .iter()
                    .find(|b| b.log_managers == base && b.inserts_per_txn == p.inserts_per_txn)?;
                Some((p.inserts_per_txn, b, p))
            })
            .collect();
        let Some(&(first, ..)) = pairs.first() else {
            continue;
        };
        let ratios: Vec<String> = pairs
            .iter()
            .map(|(n, b, p)| {
                let at = if *n == first {
                    format!("{n} inserts/txn")
                } else {
                    n.to_string()
                };
                format!(
                    "{:.2}× at {at}",
                    p.log_mb_per_s.median / b.log_mb_per_s.median
                )
            })
            .collect();
        notes.push(format!(
            "L of {k} log managers ÷ L of {base} (medians): {}",
            ratios.join(", ")
        ));
        if pairs.iter().any(|(_, _, p)| p.log_mb_per_s.n > 1) {
            let sizes = |keep: &dyn Fn(&Point, &Point) -> bool| -> String {
                let v: Vec<String> = pairs
                    .iter()
                    .filter(|(_, b, p)| keep(b, p))
                    .map(|(n, ..)| n.to_string())
                    .collect();
                if v.is_empty() {
                    "none".into()
                } else {
                    v.join(", ")
                }
            };
            let above = |b: &Point, p: &Point| {
                !b.log_mb_per_s.overlaps(&p.log_mb_per_s)
                    && p.log_mb_per_s.median > b.log_mb_per_s.median
            };
            notes.push(format!(
                "min–max of L apart, {k} above {base}, at inserts/txn: {}; overlapping at: {}",
                sizes(&above),
                sizes(&|b, p| b.log_mb_per_s.overlaps(&p.log_mb_per_s)),
            ));
        }
    }
    notes
}

/// What the figure says under its plot and the command prints: how it was measured,
/// what it shows (from the points), how busy this machine's cores were and how much of
/// the devices' writes were zero-filling.
pub fn notes(cfg: &SweepConfig, rows: &[SweepRow]) -> Vec<String> {
    notes_for(cfg, &points(rows), cores())
}

fn notes_for(cfg: &SweepConfig, pts: &[Point], hw: usize) -> Vec<String> {
    let run = &cfg.run;
    let mut notes = vec![match cfg.repeat {
        1 => format!(
            "one round, {:?} measured per run after {:?} of warm-up: no spread (--repeat 2 or more draws one)",
            run.duration, run.warmup
        ),
        n => format!(
            "median of {n} interleaved rounds, {:?} measured per run after {:?} of warm-up; bars: min–max",
            run.duration, run.warmup
        ),
    }];
    let device = match run.device_bytes_per_sec {
        Some(b) => format!("an emulated device of {} MB/s", b as f64 / 1e6),
        None => "an uncapped device".into(),
    };
    notes.push(format!(
        "each log on {device}, files in memory; {} clients, rows of {} B, row j of a transaction to log j mod K",
        run.clients, run.row_bytes
    ));
    notes.extend(effect_notes(pts));
    let busiest = pts
        .iter()
        .max_by(|a, b| a.cpu_cores.median.total_cmp(&b.cpu_cores.median));
    if let Some(p) = busiest {
        let share = p.cpu_cores.median / hw as f64;
        notes.push(format!(
            "process CPU at most {:.0} % of this machine's {hw} hardware threads ({}, {} inserts/txn)",
            100.0 * share,
            log_managers(p.log_managers),
            p.inserts_per_txn
        ));
        if share >= BUSY_CPU_SHARE {
            notes.extend(noise::hardware_note_against(
                PAPER_CPUS,
                hw,
                run.clients,
                "clients share the cores with the log managers and the commit coordinator",
                "where the CPU was busy, the cores and not only the log devices limit L",
            ));
        }
    }
    let most_zeros = pts.iter().max_by(|a, b| {
        a.zero_filled_share
            .median
            .total_cmp(&b.zero_filled_share.median)
    });
    if let Some(p) = most_zeros.filter(|p| p.zero_filled_share.median >= NOTABLE_ZERO_FILL) {
        notes.push(format!(
            "zero-filling new log segments: up to {:.0} % of the bytes the logs wrote ({}, {} inserts/txn), device load that L does not count",
            100.0 * p.zero_filled_share.median,
            log_managers(p.log_managers),
            p.inserts_per_txn
        ));
    }
    notes
}

/// Fig. 6: L (MB/s) against the log bytes per transaction (the median of Σ G_i + c), one
/// line per number of log managers with min–max error bars, each line's device ceiling
/// (K × the cap) as a reference, and [`notes`].
pub fn panel(cfg: &SweepConfig, rows: &[SweepRow]) -> Panel {
    let pts = points(rows);
    panel_for(cfg, &pts, notes_for(cfg, &pts, cores()))
}

fn panel_for(cfg: &SweepConfig, pts: &[Point], notes: Vec<String>) -> Panel {
    let mut series = Vec::new();
    let mut bars = Vec::new();
    let ks = managers(pts);
    for &k in &ks {
        let line: Vec<(f64, Spread)> = pts
            .iter()
            .filter(|p| p.log_managers == k)
            .map(|p| (p.log_bytes_per_txn.median, p.log_mb_per_s))
            .collect();
        let (s, b) = spread_line(log_managers(k), &line, false);
        series.push(s);
        bars.push(b);
    }
    // The ceilings: what K devices at the cap carry, drawn across the measured x range.
    let xs = pts.iter().map(|p| p.log_bytes_per_txn.median);
    let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if let Some(cap) = cfg.run.device_bytes_per_sec.filter(|_| x0 <= x1) {
        for &k in &ks {
            let y = k as f64 * cap as f64 / 1e6;
            series.push(Series {
                label: format!("{k} × device cap ({y} MB/s)"),
                points: vec![(x0, y), (x1, y)],
            });
        }
    }
    Panel {
        chart: Chart {
            title: "Aggregate log throughput vs log bytes per transaction (Tandem Fig. 6)".into(),
            x_label: "log bytes per transaction (Σ G_i + c, measured)".into(),
            y_label: "aggregate log throughput L (MB/s)".into(),
            log_x: true,
            log_y: false,
            series,
        },
        bars,
        notes,
        x_ticks: Vec::new(),
    }
}

/// Writes `tandem-fig6.csv` and `.json` (every run), `tandem-fig6-summary.csv` (median,
/// min, max per point) and the figure as `tandem-fig6.png` and `.svg` under `dir`;
/// returns their paths.
pub fn write_outputs(
    dir: &Path,
    cfg: &SweepConfig,
    rows: &[SweepRow],
) -> Result<Vec<PathBuf>, String> {
    let mut files = write_texts(
        dir,
        STEM,
        &[
            (".csv", csv(rows)),
            (".json", json_array(rows)),
            ("-summary.csv", summary_csv(rows)),
        ],
    )?;
    panel(cfg, rows).write(dir, STEM)?;
    files.extend(["png", "svg"].map(|e| dir.join(format!("{STEM}.{e}"))));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::partition::vertical::VerticalResult;
    use crate::metrics::Latency;

    /// A run of round `repeat`: `k` log managers, `n` inserts per transaction, `mb_s`
    /// MB/s of log at 100 B per insert.
    fn row(repeat: usize, k: usize, n: usize, mb_s: f64) -> SweepRow {
        let per_txn = 100.0 * n as f64 + 32.0;
        let tps = mb_s * 1e6 / per_txn;
        SweepRow {
            repeat,
            result: VerticalResult {
                log_managers: k,
                inserts_per_txn: n,
                generators: k,
                log_bytes_per_txn_each: vec![100.0 * n as f64 / k as f64; k],
                log_bytes_per_txn: per_txn,
                clients: 16,
                tps,
                log_mb_per_s: mb_s,
                log_mb_per_s_each: vec![mb_s / k as f64; k],
                commit_record_bytes: 32.0,
                coordinated_share: if k == 1 { 0.0 } else { 1.0 },
                cpu_us_per_txn: 100.0,
                latency: Latency {
                    p50_us: 1000,
                    p99_us: 2000,
                },
                device_mb_per_s: Some(4.0),
                zero_filled_share: 0.01 * n as f64,
                segments_recycled: 0,
                log_start_mib: vec![0.0; k],
            },
        }
    }

    /// Three rounds at 10 and 100 inserts: at 10 the two lines overlap, at 100 two log
    /// managers carry about twice one's.
    fn rows() -> Vec<SweepRow> {
        let mut v = Vec::new();
        for (r, (a, b, c, d)) in [
            (3.0, 3.5, 3.6, 7.0),
            (3.4, 3.2, 3.7, 7.4),
            (3.2, 3.9, 3.5, 6.8),
        ]
        .into_iter()
        .enumerate()
        {
            v.extend([
                row(r, 1, 10, a),
                row(r, 2, 10, b),
                row(r, 1, 100, c),
                row(r, 2, 100, d),
            ]);
        }
        v
    }

    fn cfg() -> SweepConfig {
        SweepConfig {
            inserts_per_txn: vec![10, 100],
            ..SweepConfig::figure()
        }
    }

    #[test]
    fn points_gather_their_rounds_into_median_min_max() {
        let p = points(&rows());
        let keys: Vec<(usize, usize)> = p
            .iter()
            .map(|p| (p.log_managers, p.inserts_per_txn))
            .collect();
        assert_eq!(keys, [(1, 10), (2, 10), (1, 100), (2, 100)]);
        let l = p[3].log_mb_per_s;
        assert_eq!((l.median, l.min, l.max, l.n), (7.0, 6.8, 7.4, 3));
        assert_eq!(p[3].log_mb_per_s_each, [3.5, 3.5]);
        assert_eq!(p[3].generator_bytes_per_txn, [5000.0, 5000.0]);
        // CPU per transaction × transactions per second: the cores' worth busy.
        let c = p[0].cpu_cores;
        assert!((c.median - 100e-6 * 3.2e6 / 1032.0).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn the_table_shows_spreads_and_rounds_only_when_repeated() {
        let t = table(&rows()).render();
        let two_at_100 = t
            .lines()
            .find(|l| l.split_whitespace().take(2).eq(["2", "100"]))
            .unwrap();
        assert!(two_at_100.contains("7.00 (6.80–7.40)"), "{t}");
        assert!(two_at_100.contains("3.50 3.50"), "each log's L_i: {t}");
        assert!(
            t.contains("rounds") && two_at_100.trim_end().ends_with('3'),
            "{t}"
        );
        // One round: the table as a single run prints it, no spreads, no rounds.
        let one: Vec<SweepRow> = rows().into_iter().filter(|r| r.repeat == 0).collect();
        let t = table(&one).render();
        assert!(!t.contains("rounds") && !t.contains('–'), "{t}");
        assert!(t.contains("7.00"), "{t}");
    }

    #[test]
    fn the_summary_csv_has_a_line_per_point_with_median_inside_min_max() {
        let s = summary_csv(&rows());
        let mut lines = s.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let (med, lo, hi) = (
            col("log_mb_per_s_median"),
            col("log_mb_per_s_min"),
            col("log_mb_per_s_max"),
        );
        let body: Vec<Vec<f64>> = lines
            .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
            .collect();
        assert_eq!(body.len(), 4);
        for r in &body {
            assert_eq!(r[col("repeats")], 3.0);
            assert!(r[lo] <= r[med] && r[med] <= r[hi], "{r:?}");
        }
        let csv = csv(&rows());
        assert_eq!(csv.lines().count(), 1 + 12, "every run");
        assert!(
            csv.starts_with("repeat,log_managers,inserts_per_txn"),
            "{csv}"
        );
    }

    #[test]
    fn the_notes_say_how_it_was_measured_and_what_it_shows() {
        let n = notes_for(&cfg(), &points(&rows()), 2);
        assert!(n[0].starts_with("median of 3 interleaved rounds"), "{n:?}");
        assert!(
            n[1].contains("emulated device of 4 MB/s") && n[1].contains("16 clients"),
            "{n:?}"
        );
        assert!(
            n[2].starts_with(
                "L of 2 log managers ÷ L of 1 (medians): 1.09× at 10 inserts/txn, 1.94× at 100"
            ),
            "{n:?}"
        );
        assert_eq!(
            n[3],
            "min–max of L apart, 2 above 1, at inserts/txn: 100; overlapping at: 10"
        );
        // 100 µs per transaction at 3,392 tps (2 log managers, 10 inserts): a third of a
        // core, 17 % of two hardware threads, no machine note.
        assert_eq!(n[4], "process CPU at most 17 % of this machine's 2 hardware threads (2 log managers, 10 inserts/txn)");
        assert!(
            n[5].starts_with("zero-filling new log segments: up to 100 %"),
            "{n:?}"
        );
        assert_eq!(n.len(), 6, "{n:?}");
        // A busy machine says that its cores may limit.
        let mut busy = rows();
        busy.iter_mut()
            .for_each(|r| r.result.cpu_us_per_txn = 1_000.0);
        let n = notes_for(&cfg(), &points(&busy), 2);
        assert!(
            n.iter()
                .any(|l| l.starts_with("2 hardware threads here, 16 in the paper")),
            "{n:?}"
        );
    }

    #[test]
    fn the_figure_is_l_against_bytes_per_transaction_with_bars_and_ceilings() {
        let p = panel_for(&cfg(), &points(&rows()), Vec::new());
        let labels: Vec<&str> = p.chart.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "1 log manager",
                "2 log managers",
                "1 × device cap (4 MB/s)",
                "2 × device cap (8 MB/s)"
            ]
        );
        assert_eq!(p.chart.series[1].points, [(1032.0, 3.5), (10032.0, 7.0)]);
        assert_eq!((p.bars[1][1].low, p.bars[1][1].high), (6.8, 7.4));
        assert_eq!(p.bars.len(), 2, "the ceilings have no bars");
        assert_eq!(p.chart.series[3].points, [(1032.0, 8.0), (10032.0, 8.0)]);
        let dir = tempfile::tempdir().unwrap();
        let files = write_outputs(dir.path(), &cfg(), &rows()).unwrap();
        assert_eq!(files.len(), 5);
        assert!(files.iter().all(|f| f.exists()), "{files:?}");
        let svg = std::fs::read_to_string(dir.path().join(format!("{STEM}.svg"))).unwrap();
        assert!(svg.contains("Tandem Fig. 6") && svg.contains("median of 3 interleaved rounds"));
    }
}
