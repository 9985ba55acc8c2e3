//! What a propagation sweep prints and writes: the table, CSV, JSON and the figure.

use super::{Planned, Spread, SweepConfig, SweepFigure, SweepResult, SweepRow};
use crate::experiments::propagation::{
    self, DeviceBandwidth, PropagationResult, Summary, Throughput,
};
use crate::output::{
    create_dir, json_line, thousands, write_file, write_grid, Bar, BarChart, Chart, Csv, Reference,
    Series, Table,
};
use serde::Serialize;
use std::path::{Path, PathBuf};

impl SweepResult {
    /// The text table. Bandwidth: one row per variant, the medians of its repeats, the
    /// figure's measure first with its range, then the device. Backlog: one row per run.
    pub fn table(&self) -> Table {
        let mib = |b: u64| format!("{:.1}", b as f64 / (1u64 << 20) as f64);
        match self.figure {
            SweepFigure::Bandwidth => self.bandwidth_table(),
            SweepFigure::Backlog => {
                let header = [
                    "strategy",
                    "throughput",
                    "round",
                    "tps",
                    "dirty mean",
                    "dirty max",
                    "REDO MiB max",
                    "first third",
                    "last third",
                    "write MB/s",
                    "restart ms",
                    "redone",
                    "consistent",
                ];
                let n = header.len();
                let mut t = Table::new(header);
                for r in &self.rows {
                    let mut row = vec![
                        r.label.clone(),
                        r.throughput.to_string(),
                        r.round.to_string(),
                    ];
                    match &r.result {
                        Some(x) => {
                            let s = &x.summary;
                            row.extend([
                                thousands(s.tps),
                                format!("{:.0}", s.dirty_pages_mean),
                                s.dirty_pages_max.to_string(),
                                mib(s.redo_bytes_max),
                                mib(s.redo_first_third_max),
                                mib(s.redo_last_third_max),
                                format!("{:.2}", s.write_mb_per_s),
                                format!("{:.0}", s.restart_ms),
                                s.redo_records.to_string(),
                                s.consistent.to_string(),
                            ]);
                        }
                        None => {
                            row.resize(n, String::new());
                            row[n - 1] = failed_cell(r.error.as_deref());
                        }
                    }
                    t.row(row);
                }
                t
            }
        }
    }

    /// Fig. 3's table: per variant the medians over its repeats.
    fn bandwidth_table(&self) -> Table {
        let header = [
            "strategy",
            "as --strategy",
            "runs",
            "MB/s propagating",
            "min–max",
            "busy %",
            "MB/s over run",
            "MB/s in I/O",
            "tps",
            "KiB/write",
            "dirty mean",
            "REDO MiB max",
            "restart ms",
            "consistent",
        ];
        let n = header.len();
        let mut t = Table::new(header);
        for p in &self.plan {
            let runs = self.runs_of(p);
            let attempted = self
                .rows
                .iter()
                .filter(|r| r.label == p.label && r.throughput == p.throughput)
                .count();
            let mut row = vec![
                p.label.clone(),
                p.strategy.to_string(),
                format!("{}/{attempted}", runs.len()),
            ];
            let Some(bw) = self.bandwidth_of(p) else {
                row.resize(n, String::new());
                let e = self
                    .rows
                    .iter()
                    .find(|r| r.label == p.label && r.error.is_some())
                    .and_then(|r| r.error.as_deref());
                row[n - 1] = failed_cell(e);
                t.row(row);
                continue;
            };
            let med = |f: &dyn Fn(&Summary) -> f64| {
                Spread::of(runs.iter().map(|x| f(&x.summary))).map_or(0.0, |s| s.median)
            };
            row.extend([
                format!("{:.1}", bw.median),
                format!("{:.1}–{:.1}", bw.min, bw.max),
                format!("{:.0}", med(&|s| s.busy_fraction * 100.0)),
                format!("{:.2}", med(&|s| s.write_mb_per_s)),
                format!("{:.1}", med(&|s| s.io_write_mb_per_s)),
                thousands(med(&|s| s.tps)),
                format!("{:.1}", med(&|s| s.bytes_per_write / 1024.0)),
                format!("{:.0}", med(&|s| s.dirty_pages_mean)),
                format!(
                    "{:.1}",
                    med(&|s| s.redo_bytes_max as f64 / (1u64 << 20) as f64)
                ),
                format!("{:.0}", med(&|s| s.restart_ms)),
                if runs.len() == attempted {
                    runs.iter().all(|x| x.summary.consistent).to_string()
                } else {
                    format!(
                        "{} (failed: {})",
                        runs.iter().all(|x| x.summary.consistent),
                        attempted - runs.len()
                    )
                },
            ]);
            t.row(row);
        }
        if let Some(d) = &self.device {
            let mut row = vec!["device (sequential)".to_string(), String::new(), "1".into()];
            row.extend([
                format!("{:.1}", d.mb_per_s),
                String::new(),
                "100".into(),
                format!("{:.2}", d.mb_per_s),
                format!("{:.1}", d.mb_per_s),
                String::new(),
                "1024.0".into(),
            ]);
            row.resize(n, String::new());
            t.row(row);
        }
        t
    }
}

/// The last cell of a run that failed: why, in short.
fn failed_cell(error: Option<&str>) -> String {
    let e = error.unwrap_or("no result");
    let short: String = e.lines().next().unwrap_or("").chars().take(60).collect();
    format!("failed: {short}")
}

/// Bandwidth: one line per run (its summary) and the device. Backlog: the time series,
/// one line per run and second.
pub(super) fn csv(r: &SweepResult) -> String {
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    match r.figure {
        SweepFigure::Bandwidth => {
            let mut csv = Csv::new([
                "label",
                "round",
                "strategy",
                "heap_pct",
                "throughput",
                "tps",
                "write_mb_per_s",
                "busy_write_mb_per_s",
                "io_write_mb_per_s",
                "busy_fraction",
                "propagated_bytes",
                "propagation_writes",
                "bytes_per_write",
                "dirty_pages_mean",
                "redo_bytes_max",
                "eviction_writes",
                "restart_ms",
                "redo_records",
                "device_seq_write_mb_per_s",
                "consistent",
                "error",
            ]);
            for row in &r.rows {
                let mut cells = vec![
                    row.label.clone(),
                    row.round.to_string(),
                    row.strategy.clone(),
                    row.heap_pct.map_or(String::new(), |p| p.to_string()),
                    row.throughput.to_string(),
                ];
                match &row.result {
                    Some(x) => {
                        let m = &x.summary;
                        cells.extend([
                            format!("{:.1}", m.tps),
                            format!("{:.4}", m.write_mb_per_s),
                            format!("{:.4}", m.busy_write_mb_per_s),
                            format!("{:.4}", m.io_write_mb_per_s),
                            format!("{:.4}", m.busy_fraction),
                            m.propagated_bytes.to_string(),
                            m.propagation_writes.to_string(),
                            format!("{:.1}", m.bytes_per_write),
                            format!("{:.1}", m.dirty_pages_mean),
                            m.redo_bytes_max.to_string(),
                            m.eviction_writes.to_string(),
                            format!("{:.1}", m.restart_ms),
                            m.redo_records.to_string(),
                            opt(m.device_seq_write_mb_per_s),
                            m.consistent.to_string(),
                            m.violations.join("; "),
                        ]);
                    }
                    None => {
                        cells.extend(std::iter::repeat_n(String::new(), 13));
                        cells.push(opt(r.device.map(|d| d.mb_per_s)));
                        cells.push("false".into());
                        cells.push(row.error.clone().unwrap_or_default());
                    }
                }
                csv.row(cells);
            }
            if let Some(d) = &r.device {
                let mut cells = vec![
                    "device (sequential)".to_string(),
                    String::new(),
                    "device".into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    format!("{:.4}", d.mb_per_s),
                    format!("{:.4}", d.mb_per_s),
                    format!("{:.4}", d.mb_per_s),
                    "1.0".into(),
                    d.bytes.to_string(),
                    (d.bytes >> 20).to_string(),
                    (1u64 << 20).to_string(),
                ];
                cells.extend(std::iter::repeat_n(String::new(), 5));
                cells.push(format!("{:.3}", d.mb_per_s));
                cells.extend([String::new(), String::new()]);
                csv.row(cells);
            }
            csv.finish()
        }
        SweepFigure::Backlog => {
            let mut csv = Csv::new([
                "label",
                "round",
                "strategy",
                "throughput",
                "t_s",
                "tps",
                "dirty_pages",
                "redo_bytes",
                "write_mb_per_s",
            ]);
            for row in &r.rows {
                let Some(x) = &row.result else { continue };
                for p in &x.series {
                    csv.row([
                        row.label.clone(),
                        row.round.to_string(),
                        row.strategy.clone(),
                        row.throughput.to_string(),
                        format!("{:.3}", p.t_s),
                        format!("{:.1}", p.tps),
                        p.dirty_pages.to_string(),
                        p.redo_bytes.to_string(),
                        format!("{:.4}", p.write_mb_per_s),
                    ]);
                }
            }
            csv.finish()
        }
    }
}

#[derive(Serialize)]
struct JsonFile<'a> {
    figure: SweepFigure,
    device: Option<DeviceBandwidth>,
    notes: &'a [String],
    runs: &'a [SweepRow],
}

/// Writes `<figure>.csv`, `<figure>.json`, `<figure>.png` and `<figure>.svg` under
/// `out`; returns their paths.
pub(super) fn write(
    cfg: &SweepConfig,
    out: &Path,
    r: &SweepResult,
) -> Result<Vec<PathBuf>, String> {
    create_dir(out)?;
    let stem = cfg.figure.to_string();
    let mut files = Vec::new();
    let csv_path = out.join(format!("{stem}.csv"));
    write_file(&csv_path, &csv(r))?;
    files.push(csv_path);
    let json_path = out.join(format!("{stem}.json"));
    let json = json_line(&JsonFile {
        figure: cfg.figure,
        device: r.device,
        notes: &r.notes,
        runs: &r.rows,
    });
    write_file(&json_path, &(json + "\n"))?;
    files.push(json_path);
    match cfg.figure {
        SweepFigure::Bandwidth => bandwidth_chart(cfg, r).write(out, &stem)?,
        SweepFigure::Backlog => {
            let (title, panels) = backlog_panels(cfg, r);
            write_grid(&title, &panels, 2, out, &stem)?
        }
    }
    files.push(out.join(format!("{stem}.png")));
    files.push(out.join(format!("{stem}.svg")));
    Ok(files)
}

fn bandwidth_chart(cfg: &SweepConfig, r: &SweepResult) -> BarChart {
    let bars = r
        .plan
        .iter()
        .map(|p| match r.bandwidth_of(p) {
            Some(s) => Bar {
                label: p.label.clone(),
                value: s.median,
                note: format!("{:.1}", s.median),
                spread: (r.runs_of(p).len() > 1).then_some((s.min, s.max)),
            },
            None => Bar {
                label: p.label.clone(),
                value: 0.0,
                note: "failed".into(),
                spread: None,
            },
        })
        .collect();
    BarChart {
        title: format!(
            "TPC-B SF {}, full speed, {} s per run, median of {}: write bandwidth of update propagation, bytes written / time spent propagating (Fig. 3)",
            cfg.scale,
            cfg.seconds.as_secs_f64(),
            cfg.repeat
        ),
        y_label: "MB/s while propagating (log scale)".into(),
        bars,
        log_y: true,
        reference: r.device.map(|d| Reference {
            label: format!("device sequential write {:.0} MB/s", d.mb_per_s),
            value: d.mb_per_s,
        }),
    }
}

/// The run whose mean dirty pages is the median of `runs` (the lower middle one of an
/// even count).
fn median_run<'a>(runs: &[&'a PropagationResult]) -> Option<&'a PropagationResult> {
    let mut v = runs.to_vec();
    v.sort_by(|a, b| {
        a.summary
            .dirty_pages_mean
            .total_cmp(&b.summary.dirty_pages_mean)
    });
    v.get(v.len().saturating_sub(1) / 2).copied()
}

fn backlog_panels(cfg: &SweepConfig, r: &SweepResult) -> (String, Vec<Chart>) {
    let mut panels = Vec::new();
    for t in [Throughput::Low, Throughput::High] {
        // Of each variant's repeats, the median run by mean dirty pages (a line per
        // repeat would bury the figure).
        let runs: Vec<(&Planned, &PropagationResult)> = r
            .plan
            .iter()
            .filter(|p| p.throughput == t)
            .filter_map(|p| median_run(&r.runs_of(p)).map(|x| (p, x)))
            .collect();
        let series = |y: &dyn Fn(&propagation::Sample) -> f64| -> Vec<Series> {
            runs.iter()
                .map(|(p, x)| Series {
                    label: p.label.clone(),
                    points: x.series.iter().map(|p| (p.t_s, y(p))).collect(),
                })
                .collect()
        };
        let which = match t {
            Throughput::Low => format!("low throughput ({} tps)", thousands(cfg.rate)),
            Throughput::High => "high throughput (full speed)".to_string(),
        };
        panels.push(Chart {
            title: format!("dirty pages, {which}"),
            x_label: "seconds".into(),
            y_label: "dirty pages".into(),
            log_x: false,
            log_y: false,
            series: series(&|p| p.dirty_pages as f64),
        });
        panels.push(Chart {
            title: format!("REDO length, {which}"),
            x_label: "seconds".into(),
            y_label: "REDO MiB".into(),
            log_x: false,
            log_y: false,
            series: series(&|p| p.redo_bytes as f64 / (1u64 << 20) as f64),
        });
    }
    (
        format!(
            "TPC-B SF {}: backlog of update propagation over time (Fig. 4)",
            cfg.scale
        ),
        panels,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::propagation::Throughput;

    /// A finished run of `label` in `round` whose strategy wrote 100 MB in a 10 s run,
    /// `busy_s` of it spent propagating and 1 s of that in writes and syncs.
    fn run(p: &Planned, round: usize, busy_s: f64) -> SweepRow {
        let mb = 100.0;
        let summary = Summary {
            strategy: p.strategy.to_string(),
            throughput: Throughput::High,
            target_tps: None,
            commit: "elr-pipelined".into(),
            clients: 64,
            scale: 10,
            pool_pages: 1000,
            data_pages: 500,
            seconds: 10.0,
            committed: 1000,
            tps: 100.0,
            write_mb_per_s: mb / 10.0,
            busy_write_mb_per_s: mb / busy_s,
            io_write_mb_per_s: mb / 1.0,
            busy_fraction: busy_s / 10.0,
            propagated_bytes: 100_000_000,
            propagation_writes: 10,
            bytes_per_write: 1e7,
            device_seq_write_mb_per_s: None,
            dirty_pages_mean: 10.0,
            dirty_pages_max: 20,
            redo_bytes_max: 0,
            redo_bytes_final: 0,
            redo_first_third_max: 0,
            redo_last_third_max: 0,
            eviction_writes: 0,
            restart_ms: 1.0,
            redo_records: 0,
            recovery_log_records: 0,
            consistent: true,
            violations: Vec::new(),
        };
        SweepRow {
            figure: SweepFigure::Bandwidth,
            label: p.label.clone(),
            round,
            strategy: p.strategy.to_string(),
            heap_pct: p.heap_pct,
            throughput: p.throughput,
            result: Some(PropagationResult {
                summary,
                series: Vec::new(),
                notes: Vec::new(),
            }),
            error: None,
        }
    }

    #[test]
    fn the_bars_and_the_table_show_bytes_per_second_spent_propagating() {
        let cfg = SweepConfig {
            repeat: 3,
            ..SweepConfig::new(SweepFigure::Bandwidth)
        };
        let plan: Vec<Planned> = cfg.plan().into_iter().rev().take(2).collect();
        // "log" busy 2, 4 and 5 s of its 10 (50, 25, 20 MB/s: median 25); "mixed" busy
        // 10 s in every repeat (10 MB/s). Both wrote in 1 s of I/O (100 MB/s), so the
        // I/O measure cannot tell them apart; the time spent propagating does.
        let (log, mixed) = (&plan[0], &plan[1]);
        assert_eq!(log.label, "log");
        let rows = vec![
            run(log, 1, 2.0),
            run(mixed, 1, 10.0),
            run(mixed, 2, 10.0),
            run(log, 2, 4.0),
            run(log, 3, 5.0),
            run(mixed, 3, 10.0),
        ];
        let r = SweepResult {
            figure: SweepFigure::Bandwidth,
            device: None,
            rows,
            plan: plan.clone(),
            files: Vec::new(),
            notes: Vec::new(),
        };
        let chart = bandwidth_chart(&cfg, &r);
        assert_eq!(chart.bars[0].label, "log");
        assert_eq!(chart.bars[0].value, 25.0);
        assert_eq!(chart.bars[0].spread, Some((20.0, 50.0)));
        assert_eq!(chart.bars[1].value, 10.0);
        let table = r.table().render();
        let log_line = table.lines().find(|l| l.starts_with("log")).unwrap();
        let cells: Vec<&str> = log_line.split_whitespace().collect();
        // strategy, as --strategy, runs, MB/s propagating, min–max, busy %, …
        assert_eq!(
            &cells[..6],
            ["log", "log", "3/3", "25.0", "20.0–50.0", "40"]
        );
        assert!(table.lines().next().unwrap().contains("MB/s propagating"));
    }
}
